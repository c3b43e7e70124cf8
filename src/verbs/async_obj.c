// SPDX-License-Identifier: MIT
/*
 * Affiliated asynchronous events (about one CQ, QP or SRQ). Destroying such an object must
 * not leave an event behind that names freed memory, and must not return while the
 * application still holds one it has not acked (ibv_get_async_event(3)). Events still queued
 * are dropped at destroy time; their eventfd counts stay behind and ibv_get_async_event skips
 * them (one count with an empty queue means "an event that was withdrawn").
 */
#include <stdlib.h>

#include "verbs/sr_obj.h"

enum sr_async_kind sr_async_kind(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return SR_ASYNC_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return SR_ASYNC_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return SR_ASYNC_SRQ;
	default:
		return SR_ASYNC_NONE;
	}
}

static void *sr_async_obj(const struct ibv_async_event *ev)
{
	switch (sr_async_kind(ev->event_type)) {
	case SR_ASYNC_CQ:
		return ev->element.cq;
	case SR_ASYNC_QP:
		return ev->element.qp;
	case SR_ASYNC_SRQ:
		return ev->element.srq;
	default:
		return NULL;
	}
}

void sr_async_post_obj(struct ibv_context *ctx, enum ibv_event_type type, void *obj,
		       atomic_int *posted)
{
	struct ibv_async_event ev = { .event_type = type };

	switch (sr_async_kind(type)) {
	case SR_ASYNC_CQ:
		ev.element.cq = obj;
		break;
	case SR_ASYNC_QP:
		ev.element.qp = obj;
		break;
	case SR_ASYNC_SRQ:
		ev.element.srq = obj;
		break;
	default:
		return;
	}
	/* Count first: an ack racing ahead of the count must not look like a surplus. */
	atomic_fetch_add(posted, 1);
	sr_async_post(to_sr_ctx(ctx), &ev);
}

void sr_async_drain_obj(struct ibv_context *ctx, void *obj, atomic_int *posted,
			pthread_mutex_t *mutex, pthread_cond_t *cond, uint32_t *acked)
{
	struct sr_context *c = to_sr_ctx(ctx);
	struct sr_list *pos, *tmp;
	uint32_t dropped = 0, fetched;

	pthread_mutex_lock(&c->lock);
	sr_list_for_each_safe(pos, tmp, &c->async_events) {
		struct sr_async_event *e = sr_list_entry(pos, struct sr_async_event, node);

		if (sr_async_obj(&e->ev) == obj) {
			sr_list_del(&e->node);
			free(e);
			dropped++;
		}
	}
	pthread_mutex_unlock(&c->lock);

	fetched = (uint32_t)atomic_load(posted) - dropped;
	pthread_mutex_lock(mutex);
	while (*acked < fetched)
		pthread_cond_wait(cond, mutex);
	pthread_mutex_unlock(mutex);
}
