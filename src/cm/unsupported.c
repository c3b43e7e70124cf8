// SPDX-License-Identifier: MIT
/*
 * rdma_cm calls that are not implemented yet: each fails the documented way for librdmacm
 * (-1 with errno = ENOSYS, or NULL with errno = ENOSYS), never crashes, never pretends.
 * The RC connection work replaces these one by one; docs/COMPATIBILITY.md tracks them.
 */
#include <errno.h>
#include <rdma/rdma_cma.h>

#include "common/sr_common.h"

#define SR_ENOSYS()             \
	do {                    \
		errno = ENOSYS; \
		return -1;      \
	} while (0)

SR_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	errno = ENOSYS;
	return NULL;
}

SR_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
}

SR_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			     void *context, enum rdma_port_space ps)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			     struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	SR_ENOSYS();
}

SR_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
}

SR_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *qp_init_attr)
{
	SR_ENOSYS();
}

SR_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
}

SR_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	SR_ENOSYS();
}

SR_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
}

SR_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc,
				     void *context)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	SR_ENOSYS();
}

SR_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return 0;
}

SR_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return 0;
}

SR_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	errno = ENOSYS;
	return NULL;
}

SR_EXPORT void rdma_free_devices(struct ibv_context **list)
{
}

SR_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
			      size_t optlen)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	SR_ENOSYS();
}

SR_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
}

SR_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				int *qp_attr_mask)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	SR_ENOSYS();
}

SR_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	SR_ENOSYS();
}
