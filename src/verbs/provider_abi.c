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
#include "verbs/rdma_core_private.h"

SR_EXPORT bool verbs_allow_disassociate_destroy;

SR_EXPORT void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	(void)ops;
}

SR_EXPORT void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

/*
 * Unreachable without a provider device. The types are rdma-core's (verbs/
 * rdma_core_private.h); the bodies fail without touching their arguments.
 */
SR_EXPORT void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
					      size_t alloc_size,
					      struct verbs_context *context_offset,
					      uint32_t driver_id)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SR_EXPORT struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SR_EXPORT void verbs_uninit_context(struct verbs_context *context)
{
}

SR_EXPORT void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops)
{
}

SR_EXPORT void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
			     struct ibv_comp_channel *channel, void *cq_context)
{
}

SR_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
					       struct ibv_command_buffer *link)
{
	return num_attrs;
}

SR_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
					struct verbs_sysfs_dev *sysfs_dev, const char *fnfmt, ...)
{
	errno = EOPNOTSUPP;
	return -1;
}

/* The command calls return an errno value, as rdma-core's do. */
#define SR_DEFINE_INT_CALL(name, params) \
	SR_EXPORT int name params        \
	{                                \
		return EOPNOTSUPP;       \
	}
SR_PROVIDER_INT_CALLS(SR_DEFINE_INT_CALL)
