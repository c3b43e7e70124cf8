// SPDX-License-Identifier: MIT
/*
 * The provider interface (IBVERBS_PRIVATE_34). softrdma has no loadable providers, but
 * Debian's perftest links libmlx5.so.1 and libefa.so.1 directly; those are built with
 * BIND_NOW and resolve these names when they load, and their constructors register a
 * driver. So: registration is accepted and ignored (their devices never match ours, there
 * being no kernel uverbs devices), logging is dropped, and every command entry point, which
 * only a provider's own device code can reach, fails with EOPNOTSUPP without touching its
 * arguments.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/sr_common.h"

SR_EXPORT bool verbs_allow_disassociate_destroy;

struct verbs_device_ops;

SR_EXPORT void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	(void)ops;
}

SR_EXPORT void __verbs_log(void *ctx, int level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

/* Unreachable without a provider device; arguments are deliberately not declared. */
#define SR_PROVIDER_ONLY_PTR(name)        \
	SR_EXPORT void *name(void);       \
	SR_EXPORT void *name(void)        \
	{                                 \
		errno = EOPNOTSUPP;       \
		return NULL;              \
	}

#define SR_PROVIDER_ONLY(name)            \
	SR_EXPORT int name(void);         \
	SR_EXPORT int name(void)          \
	{                                 \
		return EOPNOTSUPP;        \
	}

SR_PROVIDER_ONLY(__ioctl_final_num_attrs)
SR_PROVIDER_ONLY_PTR(_verbs_init_and_alloc_context)
SR_PROVIDER_ONLY(execute_ioctl)
SR_PROVIDER_ONLY(ibv_cmd_advise_mr)
SR_PROVIDER_ONLY(ibv_cmd_alloc_dm)
SR_PROVIDER_ONLY(ibv_cmd_alloc_mw)
SR_PROVIDER_ONLY(ibv_cmd_alloc_pd)
SR_PROVIDER_ONLY(ibv_cmd_attach_mcast)
SR_PROVIDER_ONLY(ibv_cmd_close_xrcd)
SR_PROVIDER_ONLY(ibv_cmd_create_ah)
SR_PROVIDER_ONLY(ibv_cmd_create_counters)
SR_PROVIDER_ONLY(ibv_cmd_create_cq)
SR_PROVIDER_ONLY(ibv_cmd_create_cq_ex)
SR_PROVIDER_ONLY(ibv_cmd_create_flow)
SR_PROVIDER_ONLY(ibv_cmd_create_flow_action_esp)
SR_PROVIDER_ONLY(ibv_cmd_create_qp)
SR_PROVIDER_ONLY(ibv_cmd_create_qp_ex)
SR_PROVIDER_ONLY(ibv_cmd_create_qp_ex2)
SR_PROVIDER_ONLY(ibv_cmd_create_rwq_ind_table)
SR_PROVIDER_ONLY(ibv_cmd_create_srq)
SR_PROVIDER_ONLY(ibv_cmd_create_srq_ex)
SR_PROVIDER_ONLY(ibv_cmd_create_wq)
SR_PROVIDER_ONLY(ibv_cmd_dealloc_mw)
SR_PROVIDER_ONLY(ibv_cmd_dealloc_pd)
SR_PROVIDER_ONLY(ibv_cmd_dereg_mr)
SR_PROVIDER_ONLY(ibv_cmd_destroy_ah)
SR_PROVIDER_ONLY(ibv_cmd_destroy_counters)
SR_PROVIDER_ONLY(ibv_cmd_destroy_cq)
SR_PROVIDER_ONLY(ibv_cmd_destroy_flow)
SR_PROVIDER_ONLY(ibv_cmd_destroy_flow_action)
SR_PROVIDER_ONLY(ibv_cmd_destroy_qp)
SR_PROVIDER_ONLY(ibv_cmd_destroy_rwq_ind_table)
SR_PROVIDER_ONLY(ibv_cmd_destroy_srq)
SR_PROVIDER_ONLY(ibv_cmd_destroy_wq)
SR_PROVIDER_ONLY(ibv_cmd_detach_mcast)
SR_PROVIDER_ONLY(ibv_cmd_free_dm)
SR_PROVIDER_ONLY(ibv_cmd_get_context)
SR_PROVIDER_ONLY(ibv_cmd_modify_cq)
SR_PROVIDER_ONLY(ibv_cmd_modify_flow_action_esp)
SR_PROVIDER_ONLY(ibv_cmd_modify_qp)
SR_PROVIDER_ONLY(ibv_cmd_modify_qp_ex)
SR_PROVIDER_ONLY(ibv_cmd_modify_srq)
SR_PROVIDER_ONLY(ibv_cmd_modify_wq)
SR_PROVIDER_ONLY(ibv_cmd_open_qp)
SR_PROVIDER_ONLY(ibv_cmd_open_xrcd)
SR_PROVIDER_ONLY(ibv_cmd_poll_cq)
SR_PROVIDER_ONLY(ibv_cmd_post_recv)
SR_PROVIDER_ONLY(ibv_cmd_post_send)
SR_PROVIDER_ONLY(ibv_cmd_post_srq_recv)
SR_PROVIDER_ONLY(ibv_cmd_query_context)
SR_PROVIDER_ONLY(ibv_cmd_query_device_any)
SR_PROVIDER_ONLY(ibv_cmd_query_mr)
SR_PROVIDER_ONLY(ibv_cmd_query_port)
SR_PROVIDER_ONLY(ibv_cmd_query_qp)
SR_PROVIDER_ONLY(ibv_cmd_query_srq)
SR_PROVIDER_ONLY(ibv_cmd_read_counters)
SR_PROVIDER_ONLY(ibv_cmd_reg_dm_mr)
SR_PROVIDER_ONLY(ibv_cmd_reg_dmabuf_mr)
SR_PROVIDER_ONLY(ibv_cmd_reg_mr)
SR_PROVIDER_ONLY(ibv_cmd_req_notify_cq)
SR_PROVIDER_ONLY(ibv_cmd_rereg_mr)
SR_PROVIDER_ONLY(ibv_cmd_resize_cq)
SR_PROVIDER_ONLY(ibv_read_ibdev_sysfs_file)
SR_PROVIDER_ONLY(verbs_init_cq)
SR_PROVIDER_ONLY_PTR(verbs_open_device)
SR_PROVIDER_ONLY(verbs_set_ops)
SR_PROVIDER_ONLY(verbs_uninit_context)
