// SPDX-License-Identifier: MIT
/*
 * Asynchronous events. Each context owns an eventfd in semaphore mode as its async_fd: one
 * count per queued event, so the fd is pollable, honours O_NONBLOCK set by the application,
 * and a blocking read is exactly "wait for the next event".
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/sr_log.h"
#include "verbs/sr_obj.h"
#include "verbs/sr_verbs.h"

void sr_async_post(struct sr_context *ctx, const struct ibv_async_event *ev)
{
	struct sr_async_event *e = calloc(1, sizeof(*e));
	uint64_t one = 1;

	if (!e) {
		sr_err("dropping async event %d: out of memory", ev->event_type);
		return;
	}
	e->ev = *ev;
	pthread_mutex_lock(&ctx->lock);
	sr_list_add_tail(&ctx->async_events, &e->node);
	if (write(ctx->vctx.context.async_fd, &one, sizeof(one)) != sizeof(one))
		sr_err("async eventfd write: %m");
	pthread_mutex_unlock(&ctx->lock);
}

void sr_async_post_device(struct sr_device *dev, enum ibv_event_type type)
{
	struct ibv_async_event ev = { .event_type = type };
	struct sr_list *pos, *tmp;

	if (type == IBV_EVENT_PORT_ACTIVE || type == IBV_EVENT_PORT_ERR ||
	    type == IBV_EVENT_GID_CHANGE || type == IBV_EVENT_LID_CHANGE)
		ev.element.port_num = 1;
	sr_list_for_each_safe(pos, tmp, &dev->contexts)
		sr_async_post(sr_list_entry(pos, struct sr_context, dev_node), &ev);
}

SR_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sr_context *ctx;
	struct sr_async_event *e;
	uint64_t cnt;

	if (!context || !event) {
		errno = EINVAL;
		return -1;
	}
	ctx = to_sr_ctx(context);
	if (sr_ctx_inherited(context)) {
		errno = EIO; /* the parent's context (fork): its events are the parent's */
		return -1;
	}
again:
	if (read(context->async_fd, &cnt, sizeof(cnt)) != sizeof(cnt))
		return -1; /* errno from read: EAGAIN on a non-blocking fd, EINTR, ... */
	pthread_mutex_lock(&ctx->lock);
	if (sr_list_empty(&ctx->async_events)) {
		/* The count belonged to an event withdrawn when its CQ/QP/SRQ was destroyed
		 * (sr_async_drain_obj): skip it and wait for the next one. */
		pthread_mutex_unlock(&ctx->lock);
		goto again;
	}
	e = sr_list_first(&ctx->async_events, struct sr_async_event, node);
	sr_list_del(&e->node);
	pthread_mutex_unlock(&ctx->lock);
	*event = e->ev;
	free(e);
	return 0;
}

SR_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	pthread_mutex_t *mutex;
	pthread_cond_t *cond;
	uint32_t *acked;

	/* Port and device events hold nothing. Object events count acks so that destroying
	 * the object can wait for them (sr_async_drain_obj). */
	if (!event)
		return;
	switch (sr_async_kind(event->event_type)) {
	case SR_ASYNC_CQ:
		mutex = &event->element.cq->mutex;
		cond = &event->element.cq->cond;
		acked = &event->element.cq->async_events_completed;
		break;
	case SR_ASYNC_QP:
		mutex = &event->element.qp->mutex;
		cond = &event->element.qp->cond;
		acked = &event->element.qp->events_completed;
		break;
	case SR_ASYNC_SRQ:
		mutex = &event->element.srq->mutex;
		cond = &event->element.srq->cond;
		acked = &event->element.srq->events_completed;
		break;
	default:
		return;
	}
	pthread_mutex_lock(mutex);
	++*acked;
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(mutex);
}
