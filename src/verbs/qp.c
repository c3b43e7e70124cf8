// SPDX-License-Identifier: MIT
/* Queue pairs (RC only): creation with capability checks, query, destroy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sr_fork.h"
#include "verbs/sr_obj.h"

/*
 * Process-wide QP numbers: qpn = generation << 18 | slot. The slot bounds the number of live
 * QPs (SR_MAX_QP); the generation (1..63) makes a reused slot a new number and keeps every
 * qpn non-zero and below 2^24. Slots come first from the never used ones, then from a FIFO
 * of freed ones (linked through the table), so a just-freed number is the last to come back
 * and allocation costs the same at 10 QPs and at SR_MAX_QP.
 */
#define SR_QPN_SLOT_BITS 18
#define SR_QPN_GEN_MAX   ((1u << (24 - SR_QPN_SLOT_BITS)) - 1)
#define SR_QPN_NONE      UINT32_MAX
_Static_assert(SR_MAX_QP <= (1 << SR_QPN_SLOT_BITS), "QP slots must fit the QPN");

static pthread_mutex_t sr_qpn_lock = PTHREAD_MUTEX_INITIALIZER;
SR_FORK_SAFE_MUTEX(sr_qpn, &sr_qpn_lock, NULL)
static struct {
	struct sr_qp *qp;
	uint32_t next_free; /* FIFO link while free (SR_QPN_NONE: end) */
	uint8_t gen;
} sr_qpn_tab[SR_MAX_QP];
static uint32_t sr_qpn_never_used;
static uint32_t sr_qpn_free_head = SR_QPN_NONE, sr_qpn_free_tail = SR_QPN_NONE;

static int sr_qpn_alloc(struct sr_qp *qp)
{
	uint32_t i;

	pthread_mutex_lock(&sr_qpn_lock);
	if (sr_qpn_never_used < SR_MAX_QP) {
		i = sr_qpn_never_used++;
	} else if (sr_qpn_free_head != SR_QPN_NONE) {
		i = sr_qpn_free_head;
		sr_qpn_free_head = sr_qpn_tab[i].next_free;
		if (sr_qpn_free_head == SR_QPN_NONE)
			sr_qpn_free_tail = SR_QPN_NONE;
	} else {
		pthread_mutex_unlock(&sr_qpn_lock);
		return ENOMEM; /* SR_MAX_QP per process */
	}
	sr_qpn_tab[i].gen = (uint8_t)(sr_qpn_tab[i].gen % SR_QPN_GEN_MAX + 1);
	sr_qpn_tab[i].qp = qp;
	qp->qpn_index = i;
	qp->ibqp.qp_num = (uint32_t)sr_qpn_tab[i].gen << SR_QPN_SLOT_BITS | i;
	pthread_mutex_unlock(&sr_qpn_lock);
	return 0;
}

static void sr_qpn_free(struct sr_qp *qp)
{
	uint32_t i = qp->qpn_index;

	pthread_mutex_lock(&sr_qpn_lock);
	sr_qpn_tab[i].qp = NULL;
	sr_qpn_tab[i].next_free = SR_QPN_NONE;
	if (sr_qpn_free_tail != SR_QPN_NONE)
		sr_qpn_tab[sr_qpn_free_tail].next_free = i;
	else
		sr_qpn_free_head = i;
	sr_qpn_free_tail = i;
	pthread_mutex_unlock(&sr_qpn_lock);
}

static int sr_qp_check_attr(struct ibv_pd *pd, const struct ibv_qp_init_attr *a)
{
	struct ibv_context *ctx = pd->context;

	if (a->qp_type != IBV_QPT_RC)
		return EOPNOTSUPP; /* iWARP is connected, reliable, and nothing else */
	if (!a->send_cq || !a->recv_cq || a->send_cq->context != ctx ||
	    a->recv_cq->context != ctx || (a->srq && a->srq->context != ctx))
		return EINVAL;
	if (a->cap.max_send_wr > SR_MAX_QP_WR || a->cap.max_send_sge > SR_MAX_SGE ||
	    a->cap.max_inline_data > SR_MAX_INLINE)
		return EINVAL;
	if (!a->srq && (a->cap.max_recv_wr > SR_MAX_QP_WR || a->cap.max_recv_sge > SR_MAX_SGE))
		return EINVAL;
	return 0;
}

/* The send ring: each slot is the WQE, its SGEs, then its inline bytes (pointers set when a
 * WR is posted into the slot, so an unused part of the ring is never touched). */
static int sr_qp_alloc_sq(struct sr_qp *qp)
{
	size_t sz = sizeof(struct sr_send_wqe) + qp->cap.max_send_sge * sizeof(struct ibv_sge) +
		    qp->cap.max_inline_data;

	sz = (sz + 7) & ~(size_t)7;
	qp->sq_slots = sr_ring_alloc(qp->cap.max_send_wr, sz);
	if (!qp->sq_slots)
		return ENOMEM;
	qp->sq_slot_size = sz;
	return 0;
}

static void sr_qp_free_rings(struct sr_qp *qp)
{
	sr_ring_free(qp->rq_slots, qp->cap.max_recv_wr, qp->rq_slot_size);
	sr_ring_free(qp->sq_slots, qp->cap.max_send_wr, qp->sq_slot_size);
}

static struct ibv_qp *sr_qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	struct sr_qp *qp;
	int err;

	if (!pd || !a) {
		errno = EINVAL;
		return NULL;
	}
	err = sr_qp_check_attr(pd, a);
	if (err) {
		errno = err;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	/* Granted capabilities: at least one of everything, and exactly what was asked
	 * otherwise; reported back as real devices do. */
	qp->cap.max_send_wr = SR_MAX(a->cap.max_send_wr, 1u);
	qp->cap.max_send_sge = SR_MAX(a->cap.max_send_sge, 1u);
	/* Inline room is at least what the SGE array of a slot takes anyway (as rxe does). */
	qp->cap.max_inline_data = SR_MAX(a->cap.max_inline_data,
					 SR_MIN(qp->cap.max_send_sge * (uint32_t)sizeof(struct ibv_sge),
						(uint32_t)SR_MAX_INLINE));
	if (!a->srq) {
		qp->cap.max_recv_wr = SR_MAX(a->cap.max_recv_wr, 1u);
		qp->cap.max_recv_sge = SR_MAX(a->cap.max_recv_sge, 1u);
	}
	err = sr_qp_alloc_sq(qp);
	if (err)
		goto err_free;
	if (!a->srq) {
		qp->rq_slots = sr_recv_ring_alloc(qp->cap.max_recv_wr, qp->cap.max_recv_sge,
						  &qp->rq_slot_size);
		if (!qp->rq_slots) {
			err = ENOMEM;
			goto err_free;
		}
	}
	err = sr_qpn_alloc(qp);
	if (err)
		goto err_free;

	sr_list_init(&qp->rq_taken);
	pthread_mutex_init(&qp->lock, NULL);
	pthread_mutex_init(&qp->poll_lock, NULL);
	pthread_mutex_init(&qp->ibqp.mutex, NULL);
	pthread_cond_init(&qp->ibqp.cond, NULL);
	qp->ibqp.context = pd->context;
	qp->ibqp.qp_context = a->qp_context;
	qp->ibqp.pd = pd;
	qp->ibqp.send_cq = a->send_cq;
	qp->ibqp.recv_cq = a->recv_cq;
	qp->ibqp.srq = a->srq;
	qp->ibqp.handle = qp->ibqp.qp_num;
	/* Born in INIT, as a kernel iWARP QP reports itself to ibv_query_qp (siw's IDLE state
	 * reads as INIT); the usual RESET->INIT move is INIT->INIT, which the state table
	 * allows. The public field starts at RESET, where rdma-core's create sets it. */
	qp->ibqp.state = IBV_QPS_RESET;
	qp->ibqp.qp_type = IBV_QPT_RC;
	qp->state = IBV_QPS_INIT;
	qp->sq_sig_all = a->sq_sig_all != 0;
	qp->pd = to_sr_pd(pd);
	qp->scq = to_sr_cq(a->send_cq);
	qp->rcq = to_sr_cq(a->recv_cq);
	qp->srq = a->srq ? to_sr_srq(a->srq) : NULL;
	atomic_fetch_add(&qp->pd->users, 1);
	atomic_fetch_add(&qp->scq->users, 1);
	atomic_fetch_add(&qp->rcq->users, 1);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->users, 1);
	sr_cq_add_qp(qp);
	a->cap = qp->cap;
	return &qp->ibqp;
err_free:
	sr_qp_free_rings(qp);
	free(qp);
	errno = err;
	return NULL;
}

SR_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	return sr_qp_create(pd, qp_init_attr);
}

/* The verbs_context slot behind ibv_create_qp_ex() when comp_mask is more than just PD. */
struct ibv_qp *sr_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *ax)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;

	if (!ax || !(ax->comp_mask & IBV_QP_INIT_ATTR_PD) || !ax->pd || ax->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	/* No XRC, TSO, RSS or ibv_qp_ex send ops; no create flags. */
	if ((ax->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS)) ||
	    ((ax->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && ax->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	a = (struct ibv_qp_init_attr){
		.qp_context = ax->qp_context,
		.send_cq = ax->send_cq,
		.recv_cq = ax->recv_cq,
		.srq = ax->srq,
		.cap = ax->cap,
		.qp_type = ax->qp_type,
		.sq_sig_all = ax->sq_sig_all,
	};
	qp = sr_qp_create(ax->pd, &a);
	if (qp)
		ax->cap = a.cap;
	return qp;
}

SR_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
			   struct ibv_qp_init_attr *init_attr)
{
	struct ibv_port_attr pa;
	struct sr_qp *qp;

	if (!ibqp || !attr || !init_attr)
		return EINVAL;
	qp = to_sr_qp(ibqp);
	/* ibv_query_qp(3): the mask is a hint; filling everything is allowed. */
	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	pthread_mutex_lock(&qp->lock);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mtu = sr_fill_port_attr(to_sr_ctx(ibqp->context)->dev, 1, &pa) ?
				 IBV_MTU_1024 : pa.active_mtu;
	attr->qp_access_flags = qp->access;
	attr->cap = qp->cap;
	attr->pkey_index = 0;
	attr->port_num = 1;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	attr->rnr_retry = qp->rnr_retry;
	attr->timeout = qp->timeout;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->sq_draining = qp->state == IBV_QPS_SQD && qp->sq_started > 0;
	attr->en_sqd_async_notify = qp->sqd_notify;
	init_attr->cap = qp->cap;
	pthread_mutex_unlock(&qp->lock);
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_all = qp->sq_sig_all;
	return 0;
}

SR_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	const struct sr_xport_ops *xops;
	struct sr_qp *qp;

	if (!ibqp)
		return EINVAL;
	qp = to_sr_qp(ibqp);
	pthread_mutex_lock(&qp->lock);
	xops = qp->xops;
	pthread_mutex_unlock(&qp->lock);
	sr_cq_del_qp(qp); /* no poll pass reaches it any more */
	/* After detach the transport never touches the QP again; destroy flushes nothing. */
	if (xops)
		sr_qp_detach_polled(qp, xops);
	/* Receive WQEs the transport did not hand back: their copies are its to free now. */
	pthread_mutex_lock(&qp->lock);
	sr_qp_drop_taken_locked(qp, false);
	pthread_mutex_unlock(&qp->lock);
	sr_async_drain_obj(ibqp->context, ibqp, &qp->async_events, &ibqp->mutex, &ibqp->cond,
			   &ibqp->events_completed);
	sr_qpn_free(qp);
	atomic_fetch_sub(&qp->pd->users, 1);
	atomic_fetch_sub(&qp->scq->users, 1);
	atomic_fetch_sub(&qp->rcq->users, 1);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->users, 1);
	pthread_mutex_destroy(&qp->lock);
	pthread_mutex_destroy(&qp->poll_lock);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	sr_qp_free_rings(qp);
	free(qp);
	return 0;
}

/* For librdmacm (sr_priv_ops.qp_by_num): the QP numbered qpn, if it belongs to ctx. */
struct ibv_qp *sr_qp_by_num(struct ibv_context *ctx, uint32_t qpn)
{
	uint32_t i = qpn & ((1u << SR_QPN_SLOT_BITS) - 1);
	struct ibv_qp *found = NULL;

	if (i >= SR_MAX_QP)
		return NULL;
	pthread_mutex_lock(&sr_qpn_lock);
	if (sr_qpn_tab[i].qp && sr_qpn_tab[i].qp->ibqp.qp_num == qpn &&
	    sr_qpn_tab[i].qp->ibqp.context == ctx)
		found = &sr_qpn_tab[i].qp->ibqp;
	pthread_mutex_unlock(&sr_qpn_lock);
	return found;
}
