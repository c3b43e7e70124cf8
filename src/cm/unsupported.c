// SPDX-License-Identifier: MIT
/*
 * rdma_cm calls iWARP cannot do: multicast (no UD QPs) and ECE (no vendor options to
 * negotiate over MPA). Each answers as upstream does on a kernel iWARP device, never
 * crashes, never pretends.
 */
#include <errno.h>
#include <rdma/rdma_cma.h>

#include "cm/cm_priv.h"

SR_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	return sr_cm_fail(id && addr ? ENOSYS : EINVAL);
}

SR_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc,
				     void *context)
{
	return sr_cm_fail(id && mc ? ENOSYS : EINVAL);
}

SR_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	/* nothing can have been joined */
	return sr_cm_fail(id && addr ? EADDRNOTAVAIL : EINVAL);
}

/*
 * ECE rides in IB CM messages; MPA has no room for it. Over a kernel iWARP device
 * upstream's library still takes the local wish (checked, then never sent) and reports
 * the peer's as vendor_id 0, "no ECE offered": the same answers here.
 */
SR_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece || id->qp || !ece->vendor_id || ece->comp_mask)
		return sr_cm_fail(EINVAL);
	return 0;
}

SR_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || !ece || id->qp)
		return sr_cm_fail(EINVAL);
	ece->vendor_id = 0;
	ece->options = 0;
	ece->comp_mask = 0;
	return 0;
}
