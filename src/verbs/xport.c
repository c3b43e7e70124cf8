// SPDX-License-Identifier: MIT
/*
 * The entry points the transport calls (transport/sr_xport_contract.h documents the
 * contract). None is called with a verbs lock held, and none calls back into the transport
 * while holding one.
 */
#include <stdlib.h>
#include <string.h>

#include "verbs/sr_obj.h"

struct sr_send_wqe *sr_sq_next(struct sr_qp *qp)
{
	struct sr_send_wqe *w = NULL;

	pthread_mutex_lock(&qp->lock);
	if (qp->state == IBV_QPS_RTS && qp->sq_started < qp->sq_count) {
		struct sr_send_wqe *c = sr_sq_slot(qp, qp->sq_head + qp->sq_started);

		/* A WQE that failed at post time is never handed out; it waits for the head. */
		if (!c->done) {
			w = c;
			qp->sq_started++;
		}
	}
	pthread_mutex_unlock(&qp->lock);
	return w;
}

/* qp->lock held. Is wqe one of the WQEs handed to the transport and not yet reaped? */
static bool sr_sq_is_started(const struct sr_qp *qp, const struct sr_send_wqe *wqe)
{
	size_t off = (size_t)((const char *)wqe - (const char *)qp->sq_slots);
	uint32_t idx, pos;

	if ((const char *)wqe < (const char *)qp->sq_slots || off % qp->sq_slot_size)
		return false;
	idx = (uint32_t)(off / qp->sq_slot_size);
	if (idx >= qp->cap.max_send_wr)
		return false;
	pos = (idx + qp->cap.max_send_wr - qp->sq_head) % qp->cap.max_send_wr;
	return pos < qp->sq_started;
}

void sr_sq_complete(struct sr_qp *qp, struct sr_send_wqe *wqe, enum ibv_wc_status status)
{
	const struct sr_xport_ops *xops;
	bool abort = false;

	pthread_mutex_lock(&qp->lock);
	if (!sr_sq_is_started(qp, wqe) || wqe->done) {
		/* Flushed (ERR) or dropped (RESET) while the transport held it, or already
		 * given the peer's verdict by sr_sq_fail_oldest(). */
		pthread_mutex_unlock(&qp->lock);
		return;
	}
	wqe->done = true;
	wqe->status = status;
	abort = sr_sq_reap_locked(qp);
	/* An error ends the stream even if an earlier READ still holds the head: that READ will
	 * never complete now, so flush it (in order) instead of waiting for it. */
	if (status != IBV_WC_SUCCESS && qp->state != IBV_QPS_ERR)
		sr_qp_error_locked(qp);
	xops = qp->xops;
	pthread_mutex_unlock(&qp->lock);
	if (abort && xops)
		xops->abort(qp);
}

bool sr_sq_fail_oldest(struct sr_qp *qp, enum ibv_wc_status status)
{
	bool found = false;

	pthread_mutex_lock(&qp->lock);
	for (uint32_t i = 0; i < qp->sq_started; i++) {
		struct sr_send_wqe *w = sr_sq_slot(qp, qp->sq_head + i);

		if (!w->done) {
			w->done = true;
			w->status = status;
			found = true;
			break;
		}
	}
	sr_sq_reap_locked(qp);
	if (qp->state != IBV_QPS_ERR)
		sr_qp_error_locked(qp);
	pthread_mutex_unlock(&qp->lock);
	return found;
}

static bool sr_rq_state_ok(enum ibv_qp_state s)
{
	return s == IBV_QPS_RTR || s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE;
}

/* qp->lock held. The copy is the transport's; the QP keeps track of it until completed. */
static struct sr_recv_wqe *sr_recv_copy(struct sr_qp *qp, const struct sr_recv_wqe *w)
{
	struct sr_recv_wqe *c = malloc(sizeof(*c) + w->num_sge * sizeof(struct ibv_sge));

	if (!c)
		return NULL;
	*c = *w;
	c->sge = (struct ibv_sge *)(c + 1);
	if (w->num_sge)
		memcpy(c->sge, w->sge, w->num_sge * sizeof(struct ibv_sge));
	atomic_store(&c->owner, qp);
	c->flushed = false;
	sr_list_add_tail(&qp->rq_taken, &c->node);
	return c;
}

struct sr_recv_wqe *sr_rq_take(struct sr_qp *qp)
{
	struct sr_recv_wqe *c = NULL;
	struct sr_srq *srq = qp->srq;
	bool limit = false;

	pthread_mutex_lock(&qp->lock);
	if (!sr_rq_state_ok(qp->state)) {
		pthread_mutex_unlock(&qp->lock);
		return NULL;
	}
	if (srq) {
		pthread_mutex_lock(&srq->lock);
		if (srq->count) {
			c = sr_recv_copy(qp, sr_srq_slot(srq, srq->head));
			if (c) {
				srq->head = (srq->head + 1) % srq->max_wr;
				srq->count--;
			}
		}
		/* ibv_modify_srq(3): the armed limit fires once, when the queue drops below it. */
		if (srq->limit && srq->count < srq->limit) {
			srq->limit = 0;
			limit = true;
		}
		pthread_mutex_unlock(&srq->lock);
	} else if (qp->rq_count) {
		c = sr_recv_copy(qp, sr_rq_slot(qp, qp->rq_head));
		if (c) {
			qp->rq_head = (qp->rq_head + 1) % qp->cap.max_recv_wr;
			qp->rq_count--;
		}
	} else {
		qp->rq_wanted = true; /* the next sr_post_recv calls xops->rq_kick */
	}
	pthread_mutex_unlock(&qp->lock);
	if (limit)
		sr_async_post_obj(srq->ibsrq.context, IBV_EVENT_SRQ_LIMIT_REACHED, &srq->ibsrq,
				  &srq->async_events);
	return c;
}

void sr_rq_release(struct sr_recv_wqe *wqe)
{
	struct sr_qp *qp = atomic_load(&wqe->owner);

	if (qp) { /* NULL once flushed or dropped: the QP may be gone */
		pthread_mutex_lock(&qp->lock);
		if (!wqe->flushed)
			sr_list_del(&wqe->node);
		pthread_mutex_unlock(&qp->lock);
	}
	free(wqe);
}

void sr_rq_complete(struct sr_qp *qp, struct sr_recv_wqe *wqe, enum ibv_wc_status status,
		    uint32_t byte_len, unsigned int wc_flags, uint32_t invalidated_rkey,
		    bool solicited)
{
	struct ibv_wc wc = {
		.wr_id = wqe->wr_id,
		.status = status,
		.opcode = IBV_WC_RECV,
		.byte_len = byte_len,
		.qp_num = qp->ibqp.qp_num,
		.wc_flags = wc_flags,
	};

	if (wc_flags & IBV_WC_WITH_INV)
		wc.invalidated_rkey = invalidated_rkey;
	/* Under the QP lock so that a concurrent flush cannot overtake this completion. */
	pthread_mutex_lock(&qp->lock);
	if (wqe->flushed) {
		/* The QP went to ERR or RESET while the transport held it: already reported. */
		pthread_mutex_unlock(&qp->lock);
		free(wqe);
		return;
	}
	sr_list_del(&wqe->node);
	sr_cq_push(qp->rcq, &wc, solicited);
	if (status != IBV_WC_SUCCESS && status != IBV_WC_WR_FLUSH_ERR)
		sr_qp_error_locked(qp);
	pthread_mutex_unlock(&qp->lock);
	free(wqe);
}

void sr_qp_to_error(struct sr_qp *qp, bool fatal)
{
	bool entered;

	pthread_mutex_lock(&qp->lock);
	entered = sr_qp_error_locked(qp);
	pthread_mutex_unlock(&qp->lock);
	if (entered && fatal)
		sr_async_post_obj(qp->ibqp.context, IBV_EVENT_QP_FATAL, &qp->ibqp,
				  &qp->async_events);
}

void sr_qp_async_event(struct sr_qp *qp, enum ibv_event_type type)
{
	sr_async_post_obj(qp->ibqp.context, type, &qp->ibqp, &qp->async_events);
}

void sr_qp_attach_xport(struct sr_qp *qp, const struct sr_xport_ops *ops, void *xport)
{
	bool kick;

	pthread_mutex_lock(&qp->poll_lock); /* a poller of the QP's CQs reads xops under it */
	pthread_mutex_lock(&qp->lock);
	qp->xops = ops;
	qp->xport = ops ? xport : NULL;
	kick = ops && qp->state == IBV_QPS_RTS && qp->sq_started < qp->sq_count;
	pthread_mutex_unlock(&qp->lock);
	pthread_mutex_unlock(&qp->poll_lock);
	/* WQEs posted in RTS before the transport arrived start now. */
	if (kick)
		ops->sq_kick(qp);
}

/* The IB encoding of min_rnr_timer (ibv_modify_qp(3)), in microseconds; 0 stands for the
 * longest, 655.36 ms. */
static const uint32_t sr_rnr_timer_us[32] = {
	655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
	480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
	20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint64_t sr_qp_rnr_bound_us(struct sr_qp *qp)
{
	uint8_t retry, timer;

	pthread_mutex_lock(&qp->lock);
	retry = qp->rnr_retry;
	timer = qp->min_rnr_timer;
	pthread_mutex_unlock(&qp->lock);
	if (retry >= 7)
		return SR_RNR_FOREVER;
	return (uint64_t)retry * sr_rnr_timer_us[timer & 31];
}
