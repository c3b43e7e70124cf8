/* SPDX-License-Identifier: MIT */
/*
 * The declarations of every libibverbs export that Debian's libibverbs-dev does not install:
 * rdma-core 44 declares them in its private headers (libibverbs/driver.h, marshall.h,
 * cmd_ioctl.h, cmd_write.h), which only its own providers see. Written here from those
 * headers' v44.0 types, so the compiler can hold our definitions to them.
 *
 * Every source of libibverbs is compiled with this header force-included (src/verbs/
 * CMakeLists.txt), together with all the installed public headers: a definition whose type
 * differs from rdma-core's is a "conflicting types" error, and tools/abi-decl-check makes
 * sure every name in libibverbs.map has a declaration (docs/COMPATIBILITY.md, "Function
 * types").
 *
 * Struct types that only rdma-core's providers complete stay incomplete: only pointers to
 * them cross the interface.
 */
#ifndef SR_RDMA_CORE_PRIVATE_H
#define SR_RDMA_CORE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

/* driver.h: sysfs helpers and the GID type as sysfs spells it. */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
	IBV_GID_TYPE_SYSFS_ROCE_V2,
};

struct verbs_sysfs_dev;

const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...) __attribute__((format(printf, 4, 5)));
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum ibv_gid_type_sysfs *type);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* marshall.h: kernel-ABI struct converters. */
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);

/* The provider interface (IBVERBS_PRIVATE_34): objects only providers complete. */
struct verbs_device_ops;
struct verbs_context_ops;
struct verbs_mr;
struct verbs_cq;
struct verbs_qp;
struct verbs_srq;
struct verbs_xrcd;
struct verbs_dm;
struct verbs_counters;
struct verbs_flow_action;
struct ibv_command_buffer;
struct ibv_query_device_ex_input;
/* kern-abi.h's command structs (generated in rdma-core, never installed). */
struct ibv_get_context;
struct ibv_query_port;
struct ibv_alloc_pd;
struct ibv_open_xrcd;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_alloc_mw;
struct ibv_create_cq;
struct ibv_create_cq_ex;
struct ibv_resize_cq;
struct ibv_modify_cq;
struct ibv_create_srq;
struct ibv_create_xsrq;
struct ibv_modify_srq;
struct ibv_query_srq;
struct ibv_create_qp;
struct ibv_create_qp_ex;
struct ibv_open_qp;
struct ibv_query_qp;
struct ibv_modify_qp;
struct ibv_modify_qp_ex;
struct ibv_create_wq;
struct ibv_modify_wq;

extern bool verbs_allow_disassociate_destroy;

void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...);
void verbs_register_driver_34(const struct verbs_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer *link);

/*
 * The int-returning command entry points, as X(name, parameter list): declared here, and
 * defined from the same list in verbs/provider_abi.c, all failing alike.
 */
#define SR_PROVIDER_INT_CALLS(X)                                                                \
	X(execute_ioctl, (struct ibv_context *context, struct ibv_command_buffer *cmd))          \
	X(ibv_cmd_get_context, (struct verbs_context *context, struct ibv_get_context *cmd,      \
				size_t cmd_size, struct ib_uverbs_get_context_resp *resp,          \
				size_t resp_size))                                                 \
	X(ibv_cmd_query_context, (struct ibv_context *ctx, struct ibv_command_buffer *driver))   \
	X(ibv_cmd_create_flow_action_esp, (struct ibv_context *ctx,                              \
					   struct ibv_flow_action_esp_attr *attr,                  \
					   struct verbs_flow_action *flow_action,                  \
					   struct ibv_command_buffer *driver))                     \
	X(ibv_cmd_modify_flow_action_esp, (struct verbs_flow_action *flow_action,                \
					   struct ibv_flow_action_esp_attr *attr,                  \
					   struct ibv_command_buffer *driver))                     \
	X(ibv_cmd_query_device_any, (struct ibv_context *context,                                \
				     const struct ibv_query_device_ex_input *input,                \
				     struct ibv_device_attr_ex *attr, size_t attr_size,            \
				     struct ib_uverbs_ex_query_device_resp *resp,                  \
				     size_t *resp_size))                                           \
	X(ibv_cmd_query_port, (struct ibv_context *context, uint8_t port_num,                    \
			       struct ibv_port_attr *port_attr, struct ibv_query_port *cmd,        \
			       size_t cmd_size))                                                   \
	X(ibv_cmd_alloc_pd, (struct ibv_context *context, struct ibv_pd *pd,                     \
			     struct ibv_alloc_pd *cmd, size_t cmd_size,                            \
			     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size))              \
	X(ibv_cmd_dealloc_pd, (struct ibv_pd *pd))                                               \
	X(ibv_cmd_open_xrcd, (struct ibv_context *context, struct verbs_xrcd *xrcd,              \
			      int vxrcd_size, struct ibv_xrcd_init_attr *attr,                     \
			      struct ibv_open_xrcd *cmd, size_t cmd_size,                          \
			      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size))            \
	X(ibv_cmd_close_xrcd, (struct verbs_xrcd *xrcd))                                         \
	X(ibv_cmd_reg_mr, (struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,        \
			   int access, struct verbs_mr *vmr, struct ibv_reg_mr *cmd,               \
			   size_t cmd_size, struct ib_uverbs_reg_mr_resp *resp,                    \
			   size_t resp_size))                                                      \
	X(ibv_cmd_rereg_mr, (struct verbs_mr *vmr, uint32_t flags, void *addr, size_t length,    \
			     uint64_t hca_va, int access, struct ibv_pd *pd,                       \
			     struct ibv_rereg_mr *cmd, size_t cmd_sz,                              \
			     struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz))                \
	X(ibv_cmd_dereg_mr, (struct verbs_mr *vmr))                                              \
	X(ibv_cmd_query_mr, (struct ibv_pd *pd, struct verbs_mr *vmr, uint32_t mr_handle))       \
	X(ibv_cmd_advise_mr, (struct ibv_pd *pd, enum ibv_advise_mr_advice advice,              \
			      uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge))          \
	X(ibv_cmd_reg_dmabuf_mr, (struct ibv_pd *pd, uint64_t offset, size_t length,             \
				  uint64_t iova, int fd, int access, struct verbs_mr *vmr))        \
	X(ibv_cmd_alloc_mw, (struct ibv_pd *pd, enum ibv_mw_type type, struct ibv_mw *mw,        \
			     struct ibv_alloc_mw *cmd, size_t cmd_size,                            \
			     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size))              \
	X(ibv_cmd_dealloc_mw, (struct ibv_mw *mw))                                               \
	X(ibv_cmd_create_cq, (struct ibv_context *context, int cqe,                              \
			      struct ibv_comp_channel *channel, int comp_vector,                   \
			      struct ibv_cq *cq, struct ibv_create_cq *cmd, size_t cmd_size,       \
			      struct ib_uverbs_create_cq_resp *resp, size_t resp_size))            \
	X(ibv_cmd_create_cq_ex, (struct ibv_context *context,                                    \
				 const struct ibv_cq_init_attr_ex *cq_attr, struct verbs_cq *cq,  \
				 struct ibv_create_cq_ex *cmd, size_t cmd_size,                    \
				 struct ib_uverbs_ex_create_cq_resp *resp, size_t resp_size,       \
				 uint32_t cmd_flags))                                              \
	X(ibv_cmd_poll_cq, (struct ibv_cq *cq, int ne, struct ibv_wc *wc))                       \
	X(ibv_cmd_req_notify_cq, (struct ibv_cq *cq, int solicited_only))                        \
	X(ibv_cmd_resize_cq, (struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,            \
			      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,              \
			      size_t resp_size))                                                   \
	X(ibv_cmd_destroy_cq, (struct ibv_cq *cq))                                               \
	X(ibv_cmd_modify_cq, (struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,               \
			      struct ibv_modify_cq *cmd, size_t cmd_size))                         \
	X(ibv_cmd_create_srq, (struct ibv_pd *pd, struct ibv_srq *srq,                           \
			       struct ibv_srq_init_attr *attr, struct ibv_create_srq *cmd,         \
			       size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,            \
			       size_t resp_size))                                                  \
	X(ibv_cmd_create_srq_ex, (struct ibv_context *context, struct verbs_srq *srq,            \
				  struct ibv_srq_init_attr_ex *attr_ex,                            \
				  struct ibv_create_xsrq *cmd, size_t cmd_size,                    \
				  struct ib_uverbs_create_srq_resp *resp, size_t resp_size))       \
	X(ibv_cmd_modify_srq, (struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,               \
			       int srq_attr_mask, struct ibv_modify_srq *cmd, size_t cmd_size))    \
	X(ibv_cmd_query_srq, (struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,                \
			      struct ibv_query_srq *cmd, size_t cmd_size))                         \
	X(ibv_cmd_destroy_srq, (struct ibv_srq *srq))                                            \
	X(ibv_cmd_create_qp, (struct ibv_pd *pd, struct ibv_qp *qp,                              \
			      struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,            \
			      size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,              \
			      size_t resp_size))                                                   \
	X(ibv_cmd_create_qp_ex, (struct ibv_context *context, struct verbs_qp *qp,               \
				 struct ibv_qp_init_attr_ex *attr_ex, struct ibv_create_qp *cmd,   \
				 size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,           \
				 size_t resp_size))                                                \
	X(ibv_cmd_create_qp_ex2, (struct ibv_context *context, struct verbs_qp *qp,              \
				  struct ibv_qp_init_attr_ex *qp_attr,                             \
				  struct ibv_create_qp_ex *cmd, size_t cmd_size,                   \
				  struct ib_uverbs_ex_create_qp_resp *resp, size_t resp_size))     \
	X(ibv_cmd_open_qp, (struct ibv_context *context, struct verbs_qp *qp, int vqp_sz,        \
			    struct ibv_qp_open_attr *attr, struct ibv_open_qp *cmd,                \
			    size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,                \
			    size_t resp_size))                                                     \
	X(ibv_cmd_query_qp, (struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask,      \
			     struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd,      \
			     size_t cmd_size))                                                     \
	X(ibv_cmd_modify_qp, (struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,        \
			      struct ibv_modify_qp *cmd, size_t cmd_size))                         \
	X(ibv_cmd_modify_qp_ex, (struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,     \
				 struct ibv_modify_qp_ex *cmd, size_t cmd_size,                    \
				 struct ib_uverbs_ex_modify_qp_resp *resp, size_t resp_size))      \
	X(ibv_cmd_destroy_qp, (struct ibv_qp *qp))                                               \
	X(ibv_cmd_post_send, (struct ibv_qp *ibqp, struct ibv_send_wr *wr,                       \
			      struct ibv_send_wr **bad_wr))                                        \
	X(ibv_cmd_post_recv, (struct ibv_qp *ibqp, struct ibv_recv_wr *wr,                       \
			      struct ibv_recv_wr **bad_wr))                                        \
	X(ibv_cmd_post_srq_recv, (struct ibv_srq *srq, struct ibv_recv_wr *wr,                   \
				  struct ibv_recv_wr **bad_wr))                                    \
	X(ibv_cmd_create_ah, (struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,    \
			      struct ib_uverbs_create_ah_resp *resp, size_t resp_size))            \
	X(ibv_cmd_destroy_ah, (struct ibv_ah *ah))                                               \
	X(ibv_cmd_attach_mcast, (struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid))     \
	X(ibv_cmd_detach_mcast, (struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid))     \
	X(ibv_cmd_create_flow, (struct ibv_qp *qp, struct ibv_flow *flow_id,                     \
				struct ibv_flow_attr *flow_attr, void *ucmd, size_t ucmd_size))    \
	X(ibv_cmd_destroy_flow, (struct ibv_flow *flow_id))                                      \
	X(ibv_cmd_create_wq, (struct ibv_context *context, struct ibv_wq_init_attr *wq_init_attr, \
			      struct ibv_wq *wq, struct ibv_create_wq *cmd, size_t cmd_size,       \
			      struct ib_uverbs_ex_create_wq_resp *resp, size_t resp_size))         \
	X(ibv_cmd_destroy_flow_action, (struct verbs_flow_action *action))                       \
	X(ibv_cmd_modify_wq, (struct ibv_wq *wq, struct ibv_wq_attr *attr,                       \
			      struct ibv_modify_wq *cmd, size_t cmd_size))                         \
	X(ibv_cmd_destroy_wq, (struct ibv_wq *wq))                                               \
	X(ibv_cmd_create_rwq_ind_table, (struct ibv_context *context,                            \
					 struct ibv_rwq_ind_table_init_attr *init_attr,            \
					 struct ibv_rwq_ind_table *rwq_ind_table,                  \
					 struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,      \
					 size_t resp_size))                                        \
	X(ibv_cmd_destroy_rwq_ind_table, (struct ibv_rwq_ind_table *rwq_ind_table))              \
	X(ibv_cmd_create_counters, (struct ibv_context *context,                                 \
				    struct ibv_counters_init_attr *init_attr,                      \
				    struct verbs_counters *vcounters,                              \
				    struct ibv_command_buffer *link))                              \
	X(ibv_cmd_destroy_counters, (struct verbs_counters *vcounters))                          \
	X(ibv_cmd_read_counters, (struct verbs_counters *vcounters, uint64_t *counters_value,    \
				  uint32_t ncounters, uint32_t flags,                              \
				  struct ibv_command_buffer *link))                                \
	X(ibv_cmd_alloc_dm, (struct ibv_context *ctx, const struct ibv_alloc_dm_attr *dm_attr,   \
			     struct verbs_dm *dm, struct ibv_command_buffer *link))                \
	X(ibv_cmd_free_dm, (struct verbs_dm *dm))                                                \
	X(ibv_cmd_reg_dm_mr, (struct ibv_pd *pd, struct verbs_dm *dm, uint64_t offset,           \
			      size_t length, unsigned int access, struct verbs_mr *vmr,            \
			      struct ibv_command_buffer *link))

#define SR_DECLARE_INT_CALL(name, params) int name params;
SR_PROVIDER_INT_CALLS(SR_DECLARE_INT_CALL)
#undef SR_DECLARE_INT_CALL

#endif
