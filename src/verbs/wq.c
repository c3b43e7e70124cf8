// SPDX-License-Identifier: MIT
/*
 * Work queue bookkeeping shared by posting, state changes and the transport entry points:
 * ring layout, in-order reaping of the send queue, and flushing.
 *
 * Ring indices: head is kept below the ring size so that (head + k) % size is continuous
 * for any size (rings are not powers of two: they are exactly what the application asked).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "verbs/sr_obj.h"

/*
 * Rings are what the application asked for, up to max_qp_wr / max_srq_wr slots, but most
 * queues never hold more than a few WRs at once. Nothing writes a slot before a WR is
 * posted into it (its SGE and inline pointers are set then, sr_*_wqe_fill), so the pages of
 * a large ring, mapped anonymous and zero, cost memory only once the ring reaches them. Small
 * rings stay on the heap, where a page of their own would cost more than they hold.
 */
#define SR_RING_MMAP_MIN (64u * 1024)

void *sr_ring_alloc(size_t n, size_t slot_size)
{
	size_t bytes = n * slot_size;
	void *p;

	if (bytes < SR_RING_MMAP_MIN)
		return calloc(n, slot_size);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void sr_ring_free(void *ring, size_t n, size_t slot_size)
{
	size_t bytes = n * slot_size;

	if (!ring)
		return;
	if (bytes < SR_RING_MMAP_MIN)
		free(ring);
	else
		munmap(ring, bytes);
}

void *sr_recv_ring_alloc(uint32_t n, uint32_t nsge, size_t *slot_size)
{
	*slot_size = (sizeof(struct sr_recv_wqe) + nsge * sizeof(struct ibv_sge) + 7) & ~(size_t)7;
	return sr_ring_alloc(n, *slot_size);
}

void sr_recv_wqe_fill(struct sr_recv_wqe *w, const struct ibv_recv_wr *wr)
{
	w->wr_id = wr->wr_id;
	w->sge = (struct ibv_sge *)(w + 1);
	w->num_sge = (uint32_t)wr->num_sge;
	w->length = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		w->sge[i] = wr->sg_list[i];
		w->length += wr->sg_list[i].length;
	}
}

static void sr_sq_wc(const struct sr_qp *qp, const struct sr_send_wqe *w,
		     enum ibv_wc_status status, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = w->wr_id;
	wc->status = status;
	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE:
		wc->opcode = IBV_WC_RDMA_WRITE;
		break;
	case IBV_WR_RDMA_READ:
		wc->opcode = IBV_WC_RDMA_READ;
		break;
	default: /* SEND, SEND_WITH_INV */
		wc->opcode = IBV_WC_SEND;
		break;
	}
	/* Only meaningful for READ, but as on hardware it is the message length for all. */
	wc->byte_len = status == IBV_WC_SUCCESS ? (uint32_t)w->length : 0;
	wc->qp_num = qp->ibqp.qp_num;
}

static void sr_rq_flush_wc(const struct sr_qp *qp, const struct sr_recv_wqe *w)
{
	struct ibv_wc wc = {
		.wr_id = w->wr_id,
		.status = IBV_WC_WR_FLUSH_ERR,
		.opcode = IBV_WC_RECV,
		.qp_num = qp->ibqp.qp_num,
	};

	sr_cq_push(qp->rcq, &wc, false);
}

void sr_qp_sqd_check_locked(struct sr_qp *qp)
{
	sr_assert_held(&qp->lock);
	if (qp->state == IBV_QPS_SQD && qp->sqd_notify && qp->sq_started == 0) {
		qp->sqd_notify = false;
		sr_async_post_obj(qp->ibqp.context, IBV_EVENT_SQ_DRAINED, &qp->ibqp,
				  &qp->async_events);
	}
}

void sr_qp_drop_taken_locked(struct sr_qp *qp, bool complete)
{
	struct sr_list *pos, *tmp;

	sr_assert_held(&qp->lock);
	sr_list_for_each_safe(pos, tmp, &qp->rq_taken) {
		struct sr_recv_wqe *w = sr_list_entry(pos, struct sr_recv_wqe, node);

		if (complete)
			sr_rq_flush_wc(qp, w);
		sr_list_del(&w->node);
		w->flushed = true;
		atomic_store(&w->owner, NULL);
	}
}

bool sr_sq_reap_locked(struct sr_qp *qp)
{
	bool local_err = false, err = false;
	struct ibv_wc wc;

	sr_assert_held(&qp->lock);
	while (qp->sq_count) {
		struct sr_send_wqe *w = sr_sq_slot(qp, qp->sq_head);
		/* The started WQEs are a prefix: a WQE popped while none are started failed its
		 * checks at post time and never reached the transport. */
		bool started = qp->sq_started > 0;

		if (!w->done)
			break;
		if (w->signaled || w->status != IBV_WC_SUCCESS) {
			sr_sq_wc(qp, w, w->status, &wc);
			sr_cq_push(qp->scq, &wc, false);
		}
		w->done = false;
		qp->sq_head = (qp->sq_head + 1) % qp->cap.max_send_wr;
		qp->sq_count--;
		if (started)
			qp->sq_started--;
		if (w->status != IBV_WC_SUCCESS) {
			err = true;
			local_err = !started;
			break;
		}
	}
	sr_qp_sqd_check_locked(qp);
	/* The first error completion moves the QP to ERR; everything after it flushes. */
	if (err && sr_qp_error_locked(qp))
		return local_err;
	return false;
}

void sr_qp_flush_locked(struct sr_qp *qp)
{
	struct ibv_wc wc;

	sr_assert_held(&qp->lock);
	while (qp->sq_count) {
		struct sr_send_wqe *w = sr_sq_slot(qp, qp->sq_head);
		/* A WQE that already failed reports its own error, in its place in the order. */
		enum ibv_wc_status st = w->done && w->status != IBV_WC_SUCCESS ?
						w->status : IBV_WC_WR_FLUSH_ERR;

		/* Flushed completions are reported whether or not the WR was signaled. */
		sr_sq_wc(qp, w, st, &wc);
		sr_cq_push(qp->scq, &wc, false);
		w->done = false;
		qp->sq_head = (qp->sq_head + 1) % qp->cap.max_send_wr;
		qp->sq_count--;
	}
	qp->sq_head = 0;
	qp->sq_started = 0;
	qp->sqd_notify = false;
	/* Those the transport holds were dequeued first, so they flush first. */
	sr_qp_drop_taken_locked(qp, true);
	if (qp->srq)
		return; /* WQEs still on the SRQ belong to no QP: they are not flushed */
	while (qp->rq_count) {
		sr_rq_flush_wc(qp, sr_rq_slot(qp, qp->rq_head));
		qp->rq_head = (qp->rq_head + 1) % qp->cap.max_recv_wr;
		qp->rq_count--;
	}
	qp->rq_head = 0;
}

bool sr_qp_error_locked(struct sr_qp *qp)
{
	bool entered = qp->state != IBV_QPS_ERR;

	sr_assert_held(&qp->lock);
	qp->state = IBV_QPS_ERR;
	qp->ibqp.state = IBV_QPS_ERR;
	sr_qp_flush_locked(qp);
	/* IB spec 11.6.3: a QP on an SRQ reports its last WQE when it enters Error. */
	if (entered && qp->srq)
		sr_async_post_obj(qp->ibqp.context, IBV_EVENT_QP_LAST_WQE_REACHED, &qp->ibqp,
				  &qp->async_events);
	return entered;
}

void sr_qp_discard_locked(struct sr_qp *qp)
{
	sr_assert_held(&qp->lock);
	for (uint32_t i = 0; i < qp->sq_count; i++)
		sr_sq_slot(qp, qp->sq_head + i)->done = false;
	qp->sq_head = qp->sq_count = qp->sq_started = 0;
	qp->rq_head = qp->rq_count = 0;
	qp->sqd_notify = false;
	sr_qp_drop_taken_locked(qp, false);
}
