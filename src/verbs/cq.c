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
	if (overflow)
		sr_async_post_obj(cq->ibcq.context, IBV_EVENT_CQ_ERR, &cq->ibcq, &cq->async_events);
}

int sr_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct sr_cq *cq = to_sr_cq(ibcq);
	int got = 0;

	if (n < 0)
		return -EINVAL; /* ibv_poll_cq(3): a negative value on error */
	/*
	 * Applications (libfabric, MPI, perftest) spin on an empty CQ. Taking the lock on every
	 * empty poll makes the engine thread's push wait for the spinner, and on a busy machine
	 * for the spinner's whole time slice when it is preempted holding the lock.
	 */
	if (!atomic_load_explicit(&cq->count, memory_order_relaxed))
		return 0;
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

	pthread_mutex_lock(&cq->lock);
	/* Arming for any completion is the wider request and wins over solicited-only. */
	if (!solicited_only)
		cq->armed = 1;
	else if (!cq->armed)
		cq->armed = 2;
	pthread_mutex_unlock(&cq->lock);
	return 0;
}
