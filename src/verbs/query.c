// SPDX-License-Identifier: MIT
/* Device, port, GID and P_Key queries: all values come from the interface behind the device. */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "verbs/sr_verbs.h"

#ifndef SR_VERSION_STRING
#define SR_VERSION_STRING "0"
#endif

void sr_fill_device_attr(struct sr_device *dev, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "softrdma %s", SR_VERSION_STRING);
	a->node_guid = dev->node_guid;
	a->sys_image_guid = dev->node_guid;
	a->max_mr_size = SR_MAX_MR_SIZE;
	a->page_size_cap = SR_PAGE_SIZE_CAP;
	a->vendor_id = SR_VENDOR_ID;
	a->vendor_part_id = 1;
	a->hw_ver = 0;
	a->max_qp = SR_MAX_QP;
	a->max_qp_wr = SR_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_CURR_QP_STATE_MOD;
	a->max_sge = SR_MAX_SGE;
	a->max_sge_rd = SR_MAX_SGE_RD;
	a->max_cq = SR_MAX_CQ;
	a->max_cqe = SR_MAX_CQE;
	a->max_mr = SR_MAX_MR;
	a->max_pd = SR_MAX_PD;
	a->max_qp_rd_atom = SR_MAX_QP_RD_ATOM;
	a->max_res_rd_atom = SR_MAX_QP_RD_ATOM * SR_MAX_QP;
	a->max_qp_init_rd_atom = SR_MAX_QP_RD_ATOM;
	a->atomic_cap = IBV_ATOMIC_NONE; /* iWARP (RFC 5040) has no atomics */
	a->max_srq = SR_MAX_SRQ;
	a->max_srq_wr = SR_MAX_SRQ_WR;
	a->max_srq_sge = SR_MAX_SRQ_SGE;
	a->max_pkeys = SR_PKEY_TBL_LEN;
	a->phys_port_cnt = 1;
}

SR_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	if (!context || !device_attr)
		return EINVAL;
	sr_fill_device_attr(to_sr_ctx(context)->dev, device_attr);
	return 0;
}

int sr_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	sr_fill_device_attr(to_sr_ctx(context)->dev, &full.orig_attr);
	full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt; /* as the kernel reports it */
	/* No ODP, TSO, RSS, tag matching, timestamps or device memory: all zero. */
	memcpy(attr, &full, attr_size < sizeof(full) ? attr_size : sizeof(full));
	if (attr_size > sizeof(full))
		memset((char *)attr + sizeof(full), 0, attr_size - sizeof(full));
	return 0;
}

int sr_fill_port_attr(struct sr_device *dev, uint8_t port, struct ibv_port_attr *a)
{
	struct sr_netdev_link link;
	bool removed, up;

	if (port != 1)
		return EINVAL;
	sr_device_link(dev, &link, &removed);
	if (removed)
		return ENODEV;
	up = sr_netdev_link_running(&link);
	memset(a, 0, sizeof(*a));
	a->state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = sr_mtu_to_ib(link.mtu);
	a->gid_tbl_len = SR_GID_TBL_LEN;
	a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_DEVICE_MGMT_SUP; /* as siw */
	a->max_msg_sz = SR_MAX_MSG_SIZE;
	a->pkey_tbl_len = SR_PKEY_TBL_LEN;
	a->max_vl_num = 1;
	a->active_width = 1; /* 1X */
	a->active_speed = 1; /* the interface's speed is not an IB speed; report the lowest */
	a->phys_state = up ? 5 /* LinkUp */ : 3 /* Disabled */;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

int sr_query_port_ex(struct ibv_context *context, uint8_t port_num,
		     struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	struct ibv_port_attr full;
	int ret;

	if (!context || !port_attr)
		return EINVAL;
	ret = sr_fill_port_attr(to_sr_ctx(context)->dev, port_num, &full);
	if (ret)
		return ret;
	memcpy(port_attr, &full, port_attr_len < sizeof(full) ? port_attr_len : sizeof(full));
	return 0;
}

/*
 * The exported symbol takes the old, shorter struct (struct ibv_port_attr up to and
 * including `flags`, before port_cap_flags2 was appended); the header's inline calls
 * verbs_context.query_port with the full size instead.
 */
SR_EXPORT int(ibv_query_port)(struct ibv_context *context, uint8_t port_num,
			      struct _compat_ibv_port_attr *port_attr)
{
	return sr_query_port_ex(context, port_num, (struct ibv_port_attr *)port_attr,
				offsetof(struct ibv_port_attr, port_cap_flags2));
}

static int sr_gid(struct ibv_context *context, uint32_t port_num, int index, union ibv_gid *gid)
{
	struct sr_netdev_link link;
	bool removed;

	if (!context || !gid || port_num != 1 || index < 0 || index >= SR_GID_TBL_LEN)
		return EINVAL;
	sr_device_link(to_sr_ctx(context)->dev, &link, &removed);
	if (removed)
		return ENODEV;
	sr_device_gid_from_link(&link, gid);
	return 0;
}

SR_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			    union ibv_gid *gid)
{
	int ret = sr_gid(context, port_num, index, gid);

	if (ret) {
		errno = ret;
		return -1; /* ibv_query_gid(3): -1 on error */
	}
	return 0;
}

SR_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				uint32_t gid_index, struct ibv_gid_entry *entry, uint32_t flags,
				size_t entry_size)
{
	struct ibv_gid_entry e = { 0 };
	int ret;

	if (flags || !entry || entry_size < sizeof(e))
		return EINVAL;
	if (gid_index > INT32_MAX)
		return EINVAL;
	ret = sr_gid(context, port_num, (int)gid_index, &e.gid);
	if (ret)
		return ret;
	e.gid_index = gid_index;
	e.port_num = port_num;
	e.gid_type = IBV_GID_TYPE_IB; /* iWARP GIDs are plain IB-style identifiers */
	e.ndev_ifindex = (uint32_t)to_sr_ctx(context)->dev->link.ifindex;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

SR_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
				       size_t max_entries, uint32_t flags, size_t entry_size)
{
	int ret;

	if (flags || !entries || entry_size < sizeof(*entries))
		return -EINVAL;
	if (max_entries < SR_GID_TBL_LEN)
		return -EINVAL;
	ret = _ibv_query_gid_ex(context, 1, 0, entries, 0, entry_size);
	return ret ? -ret : SR_GID_TBL_LEN;
}

SR_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				 unsigned int index, enum ibv_gid_type_sysfs *type)
{
	if (!context || !type || port_num != 1 || index >= SR_GID_TBL_LEN)
		return EINVAL;
	*type = IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

/*
 * An iWARP port has no P_Key table: rdma-core reads entries from sysfs
 * (ports/<n>/pkeys/<i>), which the kernel does not create for iWARP ports since Linux 5.9,
 * so both calls fail with the errno of that missing file.
 */
SR_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
			     __be16 *pkey)
{
	(void)port_num;
	(void)index;
	errno = (!context || !pkey) ? EINVAL : ENOENT;
	return -1;
}

SR_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	(void)port_num;
	(void)pkey;
	errno = !context ? EINVAL : ENOENT;
	return -1;
}
