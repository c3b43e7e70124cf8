// SPDX-License-Identifier: MIT
/*
 * Exported verbs that softrdma does not implement (yet). Each fails the documented way for
 * its family: NULL with errno = EOPNOTSUPP for constructors, EOPNOTSUPP as the return value
 * for calls that return an errno, -1 with errno for calls documented to return -1. None
 * crashes and none pretends to succeed. docs/COMPATIBILITY.md tracks this list.
 */
#include <errno.h>

#include "verbs/sr_verbs.h"

#define SR_NULL_EOPNOTSUPP()        \
	do {                        \
		errno = EOPNOTSUPP; \
		return NULL;        \
	} while (0)

/* ---- RC data path extras not offered (the objects live in pd.c, mr.c ... srq.c) ---- */

/*
 * What rdma-core 44 answers for a provider without rereg_mr (siw's): input it rejects
 * itself is IBV_REREG_MR_ERR_INPUT with EINVAL, anything else reaches the provider and
 * comes back IBV_REREG_MR_ERR_CMD with EOPNOTSUPP.
 */
SR_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			   size_t length, int access)
{
	if (!mr || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_CMD;
}

SR_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	SR_NULL_EOPNOTSUPP();
}

SR_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	return 0; /* "not guaranteed in order": the safe answer the man page allows */
}

/* ---- not on iWARP: address handles and multicast belong to UD (RoCE device, later) ---- */

SR_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	SR_NULL_EOPNOTSUPP();
}

SR_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	return EOPNOTSUPP;
}

SR_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				  struct ibv_wc *wc, struct ibv_grh *grh,
				  struct ibv_ah_attr *ah_attr)
{
	errno = EOPNOTSUPP;
	return -1;
}

SR_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					       struct ibv_grh *grh, uint8_t port_num)
{
	SR_NULL_EOPNOTSUPP();
}

SR_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					  uint8_t eth_mac[6], uint16_t *vid)
{
	return EOPNOTSUPP;
}

SR_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

SR_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

/* ---- sharing objects across processes through the kernel: no kernel here ---- */

SR_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	SR_NULL_EOPNOTSUPP();
}

SR_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	SR_NULL_EOPNOTSUPP();
}

SR_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

SR_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	SR_NULL_EOPNOTSUPP();
}

SR_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

SR_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	SR_NULL_EOPNOTSUPP();
}

SR_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

SR_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					   uint64_t iova, int fd, int access)
{
	SR_NULL_EOPNOTSUPP();
}

/* ---- Enhanced Connection Establishment is an IB CM feature ---- */

SR_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

SR_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}
