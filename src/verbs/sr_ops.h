/* SPDX-License-Identifier: MIT */
/* Default op-table entries (ops_unsupported.c). */
#ifndef SR_OPS_H
#define SR_OPS_H

#include <infiniband/verbs.h>

void *sr_nosup_compat(void);
struct ibv_mw *sr_nosup_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int sr_nosup_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *b);
int sr_nosup_dealloc_mw(struct ibv_mw *mw);
int sr_nosup_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		       struct ibv_sge *sg_list, uint32_t num_sges);
struct ibv_mr *sr_nosup_alloc_null_mr(struct ibv_pd *pd);
int sr_nosup_read_counters(struct ibv_counters *c, uint64_t *v, uint32_t n, uint32_t flags);
int sr_nosup_attach_counters_point_flow(struct ibv_counters *c, struct ibv_counter_attach_attr *a,
					struct ibv_flow *f);
struct ibv_counters *sr_nosup_create_counters(struct ibv_context *ctx, struct ibv_counters_init_attr *a);
int sr_nosup_destroy_counters(struct ibv_counters *c);
struct ibv_mr *sr_nosup_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t off, size_t len,
			 unsigned int access);
struct ibv_dm *sr_nosup_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *a);
int sr_nosup_free_dm(struct ibv_dm *dm);
int sr_nosup_modify_flow_action_esp(struct ibv_flow_action *a, struct ibv_flow_action_esp_attr *attr);
int sr_nosup_destroy_flow_action(struct ibv_flow_action *a);
struct ibv_flow_action *sr_nosup_create_flow_action_esp(struct ibv_context *ctx, struct ibv_flow_action_esp_attr *a);
int sr_nosup_modify_qp_rate_limit(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *a);
struct ibv_pd *sr_nosup_alloc_parent_domain(struct ibv_context *ctx, struct ibv_parent_domain_init_attr *a);
int sr_nosup_dealloc_td(struct ibv_td *td);
struct ibv_td *sr_nosup_alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *a);
int sr_nosup_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *a);
int sr_nosup_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad);
int sr_nosup_destroy_rwq_ind_table(struct ibv_rwq_ind_table *t);
struct ibv_rwq_ind_table *sr_nosup_create_rwq_ind_table(struct ibv_context *ctx, struct ibv_rwq_ind_table_init_attr *a);
int sr_nosup_destroy_wq(struct ibv_wq *wq);
int sr_nosup_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *a);
struct ibv_wq *sr_nosup_create_wq(struct ibv_context *ctx, struct ibv_wq_init_attr *a);
int sr_nosup_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *v);
struct ibv_cq_ex *sr_nosup_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a);
int sr_nosup_destroy_flow(struct ibv_flow *flow);
struct ibv_flow *sr_nosup_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *a);
struct ibv_qp *sr_nosup_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *a);
int sr_nosup_get_srq_num(struct ibv_srq *srq, uint32_t *num);
struct ibv_srq *sr_nosup_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *a);
struct ibv_xrcd *sr_nosup_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *a);
int sr_nosup_close_xrcd(struct ibv_xrcd *xrcd);

#endif
