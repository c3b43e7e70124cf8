// SPDX-License-Identifier: MIT
/* Opening and closing a device: the context, its async fd and its op tables. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/sr_log.h"
#include "verbs/sr_obj.h"
#include "verbs/sr_ops.h"
#include "verbs/sr_verbs.h"

/*
 * The private ops of each transport kind, filled by the transports' registrations before
 * any thread runs and only read afterwards. qp_by_num is the verbs layer's own; the NONE
 * entry serves devices whose transport is not linked in (no attach: EOPNOTSUPP in the CM).
 */
static struct sr_priv_ops sr_priv_ops_by_kind[SR_XPORT_KINDS] = {
	[SR_XPORT_NONE] = { .qp_by_num = sr_qp_by_num, .llp_claim = sr_qp_llp_claim,
			    .llp_grant = sr_qp_llp_grant },
};

void sr_xport_register(const struct sr_xport_desc *d)
{
	if (d->kind <= SR_XPORT_NONE || d->kind >= SR_XPORT_KINDS ||
	    sr_priv_ops_by_kind[d->kind].attach) {
		sr_err("transport kind %d: not registered", d->kind);
		return;
	}
	sr_priv_ops_by_kind[d->kind] = (struct sr_priv_ops){
		.kind = d->kind,
		.attach = d->attach,
		.disconnect = d->disconnect,
		.qp_by_num = sr_qp_by_num,
		.llp_claim = sr_qp_llp_claim,
		.llp_grant = sr_qp_llp_grant,
	};
}

static const struct sr_priv_ops *sr_priv_ops_for(enum sr_xport_kind kind)
{
	if (kind > SR_XPORT_NONE && kind < SR_XPORT_KINDS && sr_priv_ops_by_kind[kind].attach)
		return &sr_priv_ops_by_kind[kind];
	return &sr_priv_ops_by_kind[SR_XPORT_NONE];
}

int sr_query_port_ex(struct ibv_context *context, uint8_t port_num,
		     struct ibv_port_attr *port_attr, size_t port_attr_len);
int sr_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size);

/* Every slot gets a function; the not-supported ones answer EOPNOTSUPP. */
void sr_context_fill_ops(struct sr_context *ctx)
{
	struct ibv_context_ops *o = &ctx->vctx.context.ops;
	struct verbs_context *v = &ctx->vctx;

	o->_compat_query_device = ibv_query_device;
	o->_compat_query_port = ibv_query_port;
	o->_compat_alloc_pd = sr_nosup_compat;
	o->_compat_dealloc_pd = sr_nosup_compat;
	o->_compat_reg_mr = sr_nosup_compat;
	o->_compat_rereg_mr = sr_nosup_compat;
	o->_compat_dereg_mr = sr_nosup_compat;
	o->alloc_mw = sr_nosup_alloc_mw;
	o->bind_mw = sr_nosup_bind_mw;
	o->dealloc_mw = sr_nosup_dealloc_mw;
	o->_compat_create_cq = sr_nosup_compat;
	o->poll_cq = sr_poll_cq;
	o->req_notify_cq = sr_req_notify_cq;
	o->_compat_cq_event = sr_nosup_compat;
	o->_compat_resize_cq = sr_nosup_compat;
	o->_compat_destroy_cq = sr_nosup_compat;
	o->_compat_create_srq = sr_nosup_compat;
	o->_compat_modify_srq = sr_nosup_compat;
	o->_compat_query_srq = sr_nosup_compat;
	o->_compat_destroy_srq = sr_nosup_compat;
	o->post_srq_recv = sr_post_srq_recv;
	o->_compat_create_qp = sr_nosup_compat;
	o->_compat_query_qp = sr_nosup_compat;
	o->_compat_modify_qp = sr_nosup_compat;
	o->_compat_destroy_qp = sr_nosup_compat;
	o->post_send = sr_post_send;
	o->post_recv = sr_post_recv;
	o->_compat_create_ah = sr_nosup_compat;
	o->_compat_destroy_ah = sr_nosup_compat;
	o->_compat_attach_mcast = sr_nosup_compat;
	o->_compat_detach_mcast = sr_nosup_compat;
	o->_compat_async_event = sr_nosup_compat;

	v->query_port = sr_query_port_ex;
	v->advise_mr = sr_nosup_advise_mr;
	v->alloc_null_mr = sr_nosup_alloc_null_mr;
	v->read_counters = sr_nosup_read_counters;
	v->attach_counters_point_flow = sr_nosup_attach_counters_point_flow;
	v->create_counters = sr_nosup_create_counters;
	v->destroy_counters = sr_nosup_destroy_counters;
	v->reg_dm_mr = sr_nosup_reg_dm_mr;
	v->alloc_dm = sr_nosup_alloc_dm;
	v->free_dm = sr_nosup_free_dm;
	v->modify_flow_action_esp = sr_nosup_modify_flow_action_esp;
	v->destroy_flow_action = sr_nosup_destroy_flow_action;
	v->create_flow_action_esp = sr_nosup_create_flow_action_esp;
	v->modify_qp_rate_limit = sr_nosup_modify_qp_rate_limit;
	v->alloc_parent_domain = sr_nosup_alloc_parent_domain;
	v->dealloc_td = sr_nosup_dealloc_td;
	v->alloc_td = sr_nosup_alloc_td;
	v->modify_cq = sr_nosup_modify_cq;
	v->post_srq_ops = sr_nosup_post_srq_ops;
	v->destroy_rwq_ind_table = sr_nosup_destroy_rwq_ind_table;
	v->create_rwq_ind_table = sr_nosup_create_rwq_ind_table;
	v->destroy_wq = sr_nosup_destroy_wq;
	v->modify_wq = sr_nosup_modify_wq;
	v->create_wq = sr_nosup_create_wq;
	v->query_rt_values = sr_nosup_query_rt_values;
	v->create_cq_ex = sr_nosup_create_cq_ex;
	v->priv = NULL;
	v->query_device_ex = sr_query_device_ex;
	v->ibv_destroy_flow = sr_nosup_destroy_flow;
	v->ABI_placeholder2 = (void (*)(void))sr_nosup_compat;
	v->ibv_create_flow = sr_nosup_create_flow;
	v->ABI_placeholder1 = (void (*)(void))sr_nosup_compat;
	v->open_qp = sr_nosup_open_qp;
	v->create_qp_ex = sr_create_qp_ex;
	v->get_srq_num = sr_nosup_get_srq_num;
	v->create_srq_ex = sr_nosup_create_srq_ex;
	v->open_xrcd = sr_nosup_open_xrcd;
	v->close_xrcd = sr_nosup_close_xrcd;
	v->sz = sizeof(*v);
}

SR_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct sr_device *dev;
	struct sr_context *ctx;
	int err;

	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	dev = to_sr_dev(device);
	err = sr_device_monitor_start();
	if (err)
		sr_warn("rtnetlink monitor unavailable (%d): device state will not follow links", err);

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->magic = SR_CONTEXT_MAGIC;
	ctx->epoch = sr_engine_epoch();
	ctx->priv_ops = sr_priv_ops_for(dev->xport);
	sr_list_init(&ctx->async_events);
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->vctx.context.device = device;
	ctx->vctx.context.num_comp_vectors = 1;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	/* There is no kernel command channel; a real, harmless fd keeps fd-inspecting code happy. */
	ctx->vctx.context.cmd_fd = eventfd(0, EFD_CLOEXEC);
	if (ctx->vctx.context.async_fd < 0 || ctx->vctx.context.cmd_fd < 0) {
		err = errno;
		goto fail;
	}
	sr_context_fill_ops(ctx);

	pthread_mutex_lock(&sr_registry_lock);
	if (dev->removed) {
		pthread_mutex_unlock(&sr_registry_lock);
		err = ENODEV;
		goto fail;
	}
	dev->refcnt++;
	ctx->dev = dev;
	sr_list_add_tail(&dev->contexts, &ctx->dev_node);
	pthread_mutex_unlock(&sr_registry_lock);
	return &ctx->vctx.context;
fail:
	if (ctx->vctx.context.async_fd >= 0)
		close(ctx->vctx.context.async_fd);
	if (ctx->vctx.context.cmd_fd >= 0)
		close(ctx->vctx.context.cmd_fd);
	free(ctx);
	errno = err;
	return NULL;
}

SR_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct sr_context *ctx;
	struct sr_list *pos, *tmp;

	if (!context)
		return EINVAL;
	ctx = to_sr_ctx(context);
	pthread_mutex_lock(&sr_registry_lock);
	sr_list_del(&ctx->dev_node);
	pthread_mutex_unlock(&sr_registry_lock);
	sr_list_for_each_safe(pos, tmp, &ctx->async_events) {
		sr_list_del(pos);
		free(sr_list_entry(pos, struct sr_async_event, node));
	}
	close(context->async_fd);
	close(context->cmd_fd);
	sr_device_put(ctx->dev);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}
