// SPDX-License-Identifier: MIT
/*
 * Completion queues: a ring of ibv_wc filled by sr_cq_push (engine or application thread)
 * and drained by ibv_poll_cq. Arming (ibv_req_notify_cq) turns the next matching completion
 * into one event on the CQ's channel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs/sr_obj.h"

static atomic_int sr_cq_count;

/* QPs one empty poll makes progress on at most; the next poll goes on with the next ones. */
#define SR_CQ_POLL_QPS 8
/*
 * Unarmed empty polls in a row before a poll makes progress itself. A thread about to sleep
 * polls once, arms, polls again (armed) and sleeps: taking its connections' input for that
 * one poll would cost two epoll_ctl calls per message for nothing. A spinning thread
 * reaches the second empty poll within nanoseconds.
 */
#define SR_CQ_POLL_AFTER 2

/* Set while this thread runs a poll pass: its completions are counted in cq->polled_wc. */
static __thread bool sr_cq_in_pass;

SR_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
				       struct ibv_comp_channel *channel, int comp_vector)
{
	struct sr_cq *cq;

	if (!context || cqe < 1 || cqe > SR_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors || (channel && channel->context != context)) {
		errno = EINVAL;
		return NULL;
	}
	if (!sr_count_get(&sr_cq_count, SR_MAX_CQ)) {
		errno = ENOMEM;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq)
		cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
	if (!cq || !cq->ring) {
		free(cq);
		atomic_fetch_sub(&sr_cq_count, 1);
		errno = ENOMEM;
		return NULL;
	}
	cq->size = (uint32_t)cqe;
	cq->ibcq.context = context;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	cq->ibcq.cqe = cqe;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	pthread_mutex_init(&cq->lock, NULL);
	pthread_mutex_init(&cq->qps_lock, NULL);
	sr_list_init(&cq->qps);
	cq->chan_ev.cq = cq;
	sr_list_init(&cq->chan_ev.node);
	if (channel) {
		cq->chan = sr_container_of(channel, struct sr_comp_channel, ch);
		atomic_fetch_add(&cq->chan->users, 1);
	}
	return &cq->ibcq;
}

SR_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct sr_cq *cq;

	if (!ibcq)
		return EINVAL;
	cq = to_sr_cq(ibcq);
	if (atomic_load(&cq->users) > 0)
		return EBUSY;
	if (cq->chan) {
		sr_chan_forget(cq->chan, cq);
		/* ibv_get_cq_event(3): wait until every delivered event has been acked. */
		pthread_mutex_lock(&ibcq->mutex);
		while (ibcq->comp_events_completed < cq->comp_events)
			pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
		pthread_mutex_unlock(&ibcq->mutex);
		atomic_fetch_sub(&cq->chan->users, 1);
	}
	sr_async_drain_obj(ibcq->context, ibcq, &cq->async_events, &ibcq->mutex, &ibcq->cond,
			   &ibcq->async_events_completed);
	pthread_mutex_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->qps_lock);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	free(cq->ring);
	free(cq);
	atomic_fetch_sub(&sr_cq_count, 1);
	return 0;
}

SR_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct ibv_wc *ring;
	struct sr_cq *cq;

	if (!ibcq || cqe < 1 || cqe > SR_MAX_CQE)
		return EINVAL;
	cq = to_sr_cq(ibcq);
	ring = calloc((size_t)cqe, sizeof(*ring));
	if (!ring)
		return ENOMEM;
	pthread_mutex_lock(&cq->lock);
	if ((uint32_t)cqe < cq->count) {
		/* ibv_resize_cq(3): cannot drop completions the CQ holds. */
		pthread_mutex_unlock(&cq->lock);
		free(ring);
		return EINVAL;
	}
	for (uint32_t i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->size];
	free(cq->ring);
	cq->ring = ring;
	cq->head = 0;
	cq->size = (uint32_t)cqe;
	ibcq->cqe = cqe;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

void sr_cq_push(struct sr_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	bool overflow = false;

	pthread_mutex_lock(&cq->lock);
	if (cq->count == cq->size) {
		/* The completion is lost; tell the application once, as hardware would. */
		overflow = !cq->overflow;
		cq->overflow = true;
	} else {
		cq->ring[(cq->head + cq->count) % cq->size] = *wc;
		cq->count++;
		/* armed: 1 = any completion, 2 = solicited only (errors always count) */
		if (cq->armed == 1 ||
		    (cq->armed == 2 && (solicited || wc->status != IBV_WC_SUCCESS))) {
			cq->armed = 0;
			if (cq->chan)
				sr_chan_signal(cq->chan, cq);
		}
	}
	pthread_mutex_unlock(&cq->lock);
	if (sr_cq_in_pass)
		atomic_fetch_add_explicit(&cq->polled_wc, 1, memory_order_relaxed);
	if (overflow)
		sr_async_post_obj(cq->ibcq.context, IBV_EVENT_CQ_ERR, &cq->ibcq, &cq->async_events);
}

void sr_cq_add_qp(struct sr_qp *qp)
{
	struct sr_cq *cqs[2] = { qp->scq, qp->rcq };

	for (int i = 0; i < 2; i++) {
		struct sr_qp_cq_link *l = &qp->cq_link[i];

		l->qp = qp;
		l->cq = cqs[i];
		sr_list_init(&l->node);
		if (i == 1 && cqs[1] == cqs[0])
			break;
		pthread_mutex_lock(&l->cq->qps_lock);
		sr_list_add_tail(&l->cq->qps, &l->node);
		pthread_mutex_unlock(&l->cq->qps_lock);
	}
}

void sr_cq_del_qp(struct sr_qp *qp)
{
	for (int i = 0; i < 2; i++) {
		struct sr_qp_cq_link *l = &qp->cq_link[i];

		if (sr_list_empty(&l->node))
			continue;
		pthread_mutex_lock(&l->cq->qps_lock);
		sr_list_del(&l->node);
		sr_list_init(&l->node);
		pthread_mutex_unlock(&l->cq->qps_lock);
	}
	/* A poller that reached the QP before it left the lists finishes with it first. */
	pthread_mutex_lock(&qp->poll_lock);
	pthread_mutex_unlock(&qp->poll_lock);
}

void sr_qp_detach_polled(struct sr_qp *qp, const struct sr_xport_ops *xops)
{
	pthread_mutex_lock(&qp->poll_lock);
	xops->detach(qp);
	pthread_mutex_lock(&qp->lock);
	qp->xops = NULL;
	qp->xport = NULL;
	pthread_mutex_unlock(&qp->lock);
	pthread_mutex_unlock(&qp->poll_lock);
}

/*
 * The CQ is empty and not armed: the application is about to look again rather than sleep.
 * Drive the receive side of the CQ's connections from this thread (at most SR_CQ_POLL_QPS of
 * them per call, round-robin). Every lock that the engine thread or a destroying thread may
 * hold while it waits for something is only try-locked: a busy QP is skipped this time.
 */
static void sr_cq_progress(struct sr_cq *cq)
{
	struct sr_list *pos;
	int n = 0;

	if (pthread_mutex_trylock(&cq->qps_lock))
		return;
	sr_cq_in_pass = true;
	for (pos = cq->qps.next; pos != &cq->qps && n < SR_CQ_POLL_QPS; pos = pos->next, n++) {
		struct sr_qp *qp = sr_list_entry(pos, struct sr_qp_cq_link, node)->qp;
		const struct sr_xport_ops *xops;

		if (pthread_mutex_trylock(&qp->poll_lock))
			continue;
		xops = qp->xops; /* changes only under poll_lock (attach, detach) */
		if (xops && xops->poll && xops->poll(qp))
			atomic_store_explicit(&cq->polled, true, memory_order_relaxed);
		pthread_mutex_unlock(&qp->poll_lock);
	}
	/* Round-robin: the next pass starts where this one stopped. */
	if (n == SR_CQ_POLL_QPS && pos != &cq->qps) {
		while (cq->qps.next != pos) {
			struct sr_list *first = cq->qps.next;

			sr_list_del(first);
			sr_list_add_tail(&cq->qps, first);
		}
	}
	sr_cq_in_pass = false;
	pthread_mutex_unlock(&cq->qps_lock);
}

/* The CQ was armed: the application may sleep on the channel now, so every connection a poll
 * pass took from the engine goes back to it (one whose poller is busy right now goes back at
 * its lease's end, a bound rather than a lost wake-up). */
static void sr_cq_release_polled(struct sr_cq *cq)
{
	struct sr_list *pos;

	if (!atomic_exchange_explicit(&cq->polled, false, memory_order_relaxed))
		return;
	pthread_mutex_lock(&cq->qps_lock);
	for (pos = cq->qps.next; pos != &cq->qps; pos = pos->next) {
		struct sr_qp *qp = sr_list_entry(pos, struct sr_qp_cq_link, node)->qp;
		const struct sr_xport_ops *xops;

		if (pthread_mutex_trylock(&qp->poll_lock))
			continue;
		xops = qp->xops;
		if (xops && xops->poll_release)
			xops->poll_release(qp);
		pthread_mutex_unlock(&qp->poll_lock);
	}
	pthread_mutex_unlock(&cq->qps_lock);
}

int sr_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct sr_cq *cq = to_sr_cq(ibcq);
	int got = 0;

	if (n < 0)
		return -EINVAL; /* ibv_poll_cq(3): a negative value on error */
	if (sr_ctx_inherited(ibcq->context))
		return -EIO; /* the parent's CQ (fork): its progress would read the parent's sockets */
	/*
	 * Applications (libfabric, MPI, perftest) spin on an empty CQ. Taking the lock on every
	 * empty poll makes the engine thread's push wait for the spinner, and on a busy machine
	 * for the spinner's whole time slice when it is preempted holding the lock. An unarmed
	 * empty CQ makes progress here instead of waiting for the engine thread to.
	 */
	if (!atomic_load_explicit(&cq->count, memory_order_relaxed)) {
		if (atomic_load_explicit(&cq->armed, memory_order_relaxed) || !n ||
		    atomic_fetch_add_explicit(&cq->empty_polls, 1, memory_order_relaxed) + 1 <
			    SR_CQ_POLL_AFTER)
			return 0;
		sr_cq_progress(cq);
		if (!atomic_load_explicit(&cq->count, memory_order_relaxed))
			return 0;
	}
	if (atomic_load_explicit(&cq->empty_polls, memory_order_relaxed))
		atomic_store_explicit(&cq->empty_polls, 0, memory_order_relaxed);
	pthread_mutex_lock(&cq->lock);
	while (got < n && cq->count) {
		wc[got++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	pthread_mutex_unlock(&cq->lock);
	return got;
}

int sr_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct sr_cq *cq = to_sr_cq(ibcq);

	if (sr_ctx_inherited(ibcq->context))
		return EIO; /* the parent's CQ (fork) */
	pthread_mutex_lock(&cq->lock);
	/* Arming for any completion is the wider request and wins over solicited-only. */
	if (!solicited_only)
		cq->armed = 1;
	else if (!cq->armed)
		cq->armed = 2;
	pthread_mutex_unlock(&cq->lock);
	atomic_store_explicit(&cq->empty_polls, 0, memory_order_relaxed);
	sr_cq_release_polled(cq);
	return 0;
}
