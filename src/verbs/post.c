// SPDX-License-Identifier: MIT
/*
 * ibv_post_send / ibv_post_recv (the context's op slots). Each WR is checked, then copied
 * into its slot; the first WR that fails stops the list and is returned in *bad_wr, the ones
 * before it stay posted (ibv_post_send(3)).
 *
 * Local keys are checked at post time, as hardware would check them when it fetches the
 * WQE: a bad lkey is not a post error but a WQE that completes with IBV_WC_LOC_PROT_ERR in
 * its turn and moves the QP to ERR (see sr_obj.h).
 */
#include <errno.h>
#include <string.h>

#include "verbs/sr_obj.h"

#define SR_SEND_FLAGS_OK                                                                   \
	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)

/* Shape checks that fail the post (EINVAL), independent of memory registrations. */
static int sr_send_wr_check(const struct sr_qp *qp, const struct ibv_send_wr *wr,
			    uint64_t *total)
{
	uint64_t len = 0;

	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
		break;
	case IBV_WR_RDMA_READ:
		if (wr->send_flags & IBV_SEND_INLINE)
			return EINVAL; /* nothing to inline: READ data flows in */
		break;
	default:
		return EINVAL; /* no immediate data on iWARP, no atomics, no MWs */
	}
	if (wr->send_flags & ~(unsigned int)SR_SEND_FLAGS_OK)
		return EINVAL;
	if (wr->num_sge < 0 || (!(wr->send_flags & IBV_SEND_INLINE) &&
				(uint32_t)wr->num_sge > qp->cap.max_send_sge))
		return EINVAL;
	if (wr->num_sge && !wr->sg_list)
		return EINVAL;
	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > SR_MAX_MSG_SIZE)
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) && len > qp->cap.max_inline_data)
		return EINVAL;
	*total = len;
	return 0;
}

/* Do the local keys of wr's SGEs allow the access the operation makes? */
static bool sr_send_wr_keys_ok(const struct sr_qp *qp, const struct ibv_send_wr *wr)
{
	int need = wr->opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_LOCAL_WRITE : 0;

	for (int i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *s = &wr->sg_list[i];
		struct sr_mr *mr;
		uint8_t *p;

		if (!s->length)
			continue; /* moves nothing; the transport skips it too */
		if (sr_mr_resolve(s->lkey, qp->pd, s->addr, s->length, need, &mr, &p) != SR_ACC_OK)
			return false;
		sr_mr_put(mr);
	}
	return true;
}

static void sr_send_wqe_fill(struct sr_qp *qp, struct sr_send_wqe *w,
			     const struct ibv_send_wr *wr, uint64_t len)
{
	w->wr_id = wr->wr_id;
	w->sge = (struct ibv_sge *)(w + 1);
	w->inline_data = (uint8_t *)(w->sge + qp->cap.max_send_sge);
	w->opcode = wr->opcode;
	w->flags = wr->send_flags;
	w->length = len;
	w->remote_addr = 0;
	w->rkey = 0;
	w->invalidate_rkey = 0;
	if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_READ) {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	} else if (wr->opcode == IBV_WR_SEND_WITH_INV) {
		w->invalidate_rkey = wr->invalidate_rkey;
	}
	w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	w->done = false;
	w->status = IBV_WC_SUCCESS;
	w->is_inline = wr->send_flags & IBV_SEND_INLINE;
	if (w->is_inline) {
		/* ibv_post_send(3): the buffers may be reused as soon as the call returns. */
		uint8_t *d = w->inline_data;

		for (int i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length)
				continue;
			memcpy(d, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			d += wr->sg_list[i].length;
		}
		w->num_sge = 0;
	} else {
		w->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(*w->sge));
		if (qp->state != IBV_QPS_ERR && !sr_send_wr_keys_ok(qp, wr)) {
			/* Fails in its turn: sr_sq_next stops at it, the reaper reports it. */
			w->done = true;
			w->status = IBV_WC_LOC_PROT_ERR;
		}
	}
}

static bool sr_send_state_ok(enum ibv_qp_state s)
{
	/* SQD and SQE queue WRs without starting them; ERR flushes them. */
	return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE || s == IBV_QPS_ERR;
}

int sr_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct sr_qp *qp = to_sr_qp(ibqp);
	const struct sr_xport_ops *xops;
	bool kick = false, abort = false;
	int err = 0;

	if (sr_ctx_inherited(ibqp->context)) {
		*bad = wr;
		return EIO; /* the parent's QP (fork) */
	}
	pthread_mutex_lock(&qp->lock);
	for (; wr; wr = wr->next) {
		struct sr_send_wqe *w;
		uint64_t len;

		if (!sr_send_state_ok(qp->state)) {
			err = EINVAL; /* before RTS there is no connection to send on */
			break;
		}
		err = sr_send_wr_check(qp, wr, &len);
		if (err)
			break;
		if (qp->state != IBV_QPS_ERR && qp->sq_count == qp->cap.max_send_wr) {
			err = ENOMEM;
			break;
		}
		w = sr_sq_slot(qp, qp->sq_head + qp->sq_count);
		sr_send_wqe_fill(qp, w, wr, len);
		qp->sq_count++;
		if (qp->state == IBV_QPS_ERR) {
			/* As hardware does: accepted, and completed at once as flushed. */
			sr_qp_flush_locked(qp);
			continue;
		}
		if (w->done) {
			/* Failed its key check; at the head it fails right now. */
			abort |= sr_sq_reap_locked(qp);
			continue;
		}
		kick = true;
	}
	kick = kick && qp->state == IBV_QPS_RTS;
	xops = qp->xops;
	pthread_mutex_unlock(&qp->lock);
	if (err)
		*bad = wr;
	if (xops && abort)
		xops->stop(qp); /* the failed WR moved the QP to ERR: its WRs are flushed */
	else if (xops && kick)
		xops->sq_kick(qp);
	return err;
}

int sr_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sr_qp *qp = to_sr_qp(ibqp);
	const struct sr_xport_ops *xops = NULL;
	int err = 0;

	if (sr_ctx_inherited(ibqp->context)) {
		*bad = wr;
		return EIO; /* the parent's QP (fork) */
	}
	pthread_mutex_lock(&qp->lock);
	for (; wr; wr = wr->next) {
		if (qp->srq || qp->state == IBV_QPS_RESET) {
			err = EINVAL; /* receives go to the SRQ; a RESET QP takes none */
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			break;
		}
		if (qp->rq_count == qp->cap.max_recv_wr) {
			err = ENOMEM;
			break;
		}
		sr_recv_wqe_fill(sr_rq_slot(qp, qp->rq_head + qp->rq_count), wr);
		qp->rq_count++;
		if (qp->state == IBV_QPS_ERR)
			sr_qp_flush_locked(qp);
	}
	/* The transport holds a Send until a receive is there (receiver not ready). */
	if (qp->rq_wanted && qp->rq_count) {
		qp->rq_wanted = false;
		xops = qp->xops;
	}
	pthread_mutex_unlock(&qp->lock);
	if (err)
		*bad = wr;
	if (xops && xops->rq_kick)
		xops->rq_kick(qp);
	return err;
}
