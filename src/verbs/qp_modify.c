// SPDX-License-Identifier: MIT
/*
 * ibv_modify_qp: the IB QP state machine (IB spec 10.3.1, the same table the kernel's
 * ib_modify_qp_is_ok uses) with iWARP's leniency about attributes: like siw, any transition
 * takes any subset of the attributes that mean something here, and the IB path attributes
 * (address vector, PSNs, timeouts, retries, MTU, QKey, migration) are accepted and ignored.
 */
#include <errno.h>

#include "verbs/sr_obj.h"

/* legal[cur] has bit `new` set */
static const unsigned int sr_qp_legal[] = {
	[IBV_QPS_RESET] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_INIT | 1u << IBV_QPS_ERR,
	[IBV_QPS_INIT] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_INIT | 1u << IBV_QPS_RTR |
			 1u << IBV_QPS_ERR,
	[IBV_QPS_RTR] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_RTS | 1u << IBV_QPS_ERR,
	[IBV_QPS_RTS] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_RTS | 1u << IBV_QPS_SQD |
			1u << IBV_QPS_ERR,
	[IBV_QPS_SQD] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_RTS | 1u << IBV_QPS_SQD |
			1u << IBV_QPS_ERR,
	[IBV_QPS_SQE] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_RTS | 1u << IBV_QPS_ERR,
	[IBV_QPS_ERR] = 1u << IBV_QPS_RESET | 1u << IBV_QPS_ERR,
};

#define SR_QP_IB_PATH_ATTRS                                                                \
	(IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |   \
	 IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_ALT_PATH | IBV_QP_MIN_RNR_TIMER |       \
	 IBV_QP_SQ_PSN | IBV_QP_PATH_MIG_STATE | IBV_QP_DEST_QPN)
#define SR_QP_ATTRS_OK                                                                     \
	(SR_QP_IB_PATH_ATTRS | IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY | \
	 IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_MAX_QP_RD_ATOMIC |   \
	 IBV_QP_MAX_DEST_RD_ATOMIC)
/* Remote atomic is accepted on a QP (applications set it habitually); no atomic can come. */
#define SR_QP_ACCESS_OK                                                                    \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |       \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

static bool sr_qp_state_valid(unsigned int s)
{
	return s < SR_ARRAY_SIZE(sr_qp_legal) && s != IBV_QPS_UNKNOWN;
}

/*
 * qp->lock held. A QP may go to RTS once the CM claimed it, or claims a grant the CM gave its
 * context for a connection whose QP the application moves (rping -q). Lock order: qp->lock,
 * then the context's lock (as for async events).
 */
static bool sr_qp_llp_take_locked(struct sr_qp *qp)
{
	struct sr_context *ctx = to_sr_ctx(qp->ibqp.context);

	sr_assert_held(&qp->lock);
	if (qp->llp == SR_QP_LLP_CM)
		return true;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->llp_grants > 0) {
		ctx->llp_grants--;
		qp->llp = SR_QP_LLP_CM;
	}
	pthread_mutex_unlock(&ctx->lock);
	return qp->llp == SR_QP_LLP_CM;
}

void sr_qp_llp_claim(struct ibv_qp *ibqp)
{
	struct sr_qp *qp = to_sr_qp(ibqp);

	pthread_mutex_lock(&qp->lock);
	qp->llp = SR_QP_LLP_CM;
	pthread_mutex_unlock(&qp->lock);
}

void sr_qp_llp_grant(struct ibv_context *ibctx)
{
	struct sr_context *ctx = to_sr_ctx(ibctx);

	pthread_mutex_lock(&ctx->lock);
	ctx->llp_grants++;
	pthread_mutex_unlock(&ctx->lock);
}

/* qp->lock held. Checks everything before anything changes (modify is all or nothing). */
static int sr_qp_check_modify(struct sr_qp *qp, const struct ibv_qp_attr *attr, int mask,
			      enum ibv_qp_state *new_state)
{
	enum ibv_qp_state cur = qp->state;

	/* IBV_QP_CAP (resizing) and IBV_QP_RATE_LIMIT are not offered. */
	if (mask & ~SR_QP_ATTRS_OK)
		return EINVAL;
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return EINVAL;
	*new_state = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if (!sr_qp_state_valid(*new_state) || !(sr_qp_legal[cur] & 1u << *new_state))
		return EINVAL;
	/* RTS needs a connection, as on siw: without one the send queue would never move. */
	if (*new_state == IBV_QPS_RTS && (cur == IBV_QPS_INIT || cur == IBV_QPS_RTR) &&
	    !sr_qp_llp_take_locked(qp))
		return EINVAL;
	if ((mask & IBV_QP_PORT) && attr->port_num != 1)
		return EINVAL;
	/*
	 * No P_Key table, but index 0 is what rdma_init_qp_attr hands out and what the kernel's
	 * iWARP drivers silently accept; anything else names an entry that cannot exist.
	 */
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~(unsigned int)SR_QP_ACCESS_OK))
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr->max_rd_atomic > SR_MAX_QP_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr->max_dest_rd_atomic > SR_MAX_QP_RD_ATOM)
		return EINVAL;
	/* 3- and 5-bit fields on InfiniBand */
	if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return EINVAL;
	return 0;
}

SR_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	const struct sr_xport_ops *xops;
	enum ibv_qp_state cur, next;
	struct sr_qp *qp;
	bool kick;
	int err;

	if (!ibqp || !attr)
		return EINVAL;
	qp = to_sr_qp(ibqp);
	pthread_mutex_lock(&qp->lock);
	err = sr_qp_check_modify(qp, attr, attr_mask, &next);
	if (err) {
		pthread_mutex_unlock(&qp->lock);
		return err;
	}
	cur = qp->state;
	if (attr_mask & IBV_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (attr_mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	/* Kept for the receiver-not-ready bound (transport/iwarp_rx.c). */
	if (attr_mask & IBV_QP_RNR_RETRY)
		qp->rnr_retry = attr->rnr_retry;
	if (attr_mask & IBV_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = attr->min_rnr_timer;
	/* TCP's own retransmission timing applies; the CM maps ACK_TIMEOUT to the socket. */
	if (attr_mask & IBV_QP_TIMEOUT)
		qp->timeout = attr->timeout;
	qp->state = next;
	qp->ibqp.state = next;
	xops = qp->xops;

	if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
		/* RESET empties the queues without completions. */
		sr_qp_discard_locked(qp);
		pthread_mutex_unlock(&qp->lock);
		if (xops)
			sr_qp_detach_polled(qp, xops);
		return 0;
	}
	if (next == IBV_QPS_ERR) {
		bool entered = cur != IBV_QPS_ERR;

		/* The QP is already in ERR for everyone else (posts flush, the transport gets no
		 * more WQEs). Stop the stream before flushing, so nothing still reads or writes a
		 * buffer whose WR is reported flushed. */
		pthread_mutex_unlock(&qp->lock);
		if (xops && entered)
			xops->stop(qp);
		pthread_mutex_lock(&qp->lock);
		sr_qp_flush_locked(qp);
		/* IB spec 11.6.3: a QP on an SRQ reports its last WQE when it enters Error. */
		if (entered && qp->srq)
			sr_async_post_obj(ibqp->context, IBV_EVENT_QP_LAST_WQE_REACHED, ibqp,
					  &qp->async_events);
		pthread_mutex_unlock(&qp->lock);
		return 0;
	}
	if (next == IBV_QPS_SQD && cur != IBV_QPS_SQD)
		qp->sqd_notify = (attr_mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) && attr->en_sqd_async_notify;
	else if (next != IBV_QPS_SQD)
		qp->sqd_notify = false;
	sr_qp_sqd_check_locked(qp);
	kick = next == IBV_QPS_RTS && xops && qp->sq_started < qp->sq_count;
	pthread_mutex_unlock(&qp->lock);
	/* SQD -> RTS: what was posted while drained goes now. */
	if (kick)
		xops->sq_kick(qp);
	return 0;
}
