// SPDX-License-Identifier: MIT
/*
 * Event channels: a FIFO of events plus an eventfd whose count is 1 while the queue holds
 * an event and 0 when it is empty: written when the first event is queued, read when the
 * last is taken, not once per event (two system calls less per event that finds others
 * queued). Both change only together under sr_cm_lock, so a read of the eventfd done under
 * the lock can never block, whatever O_NONBLOCK the application set on it; blocking waits
 * poll() the fd with no lock held. The fd is therefore readable exactly when an event is
 * queued, which is what applications polling channel->fd rely on.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "engine/sr_engine.h"
#include "common/sr_log.h"

struct sr_cm_channel *sr_cm_channel_new(bool sync)
{
	struct sr_cm_channel *ch = calloc(1, sizeof(*ch));

	/* Before the engine starts: every id has a channel, and only ids use the engine. */
	sr_engine_allow_helpers();
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->epoch = sr_engine_epoch();
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ch.fd < 0) {
		int err = errno;

		free(ch);
		errno = err;
		return NULL;
	}
	sr_list_init(&ch->queue);
	ch->sync = sync;
	return ch;
}

void sr_cm_channel_free(struct sr_cm_channel *ch)
{
	struct sr_list *pos, *tmp;
	bool in_use;

	pthread_mutex_lock(&sr_cm_lock);
	sr_list_for_each_safe(pos, tmp, &ch->queue) {
		sr_list_del(pos);
		free(sr_list_entry(pos, struct sr_cm_event, node));
	}
	ch->dead = true;
	in_use = __atomic_load_n(&ch->waiters, __ATOMIC_SEQ_CST) > 0;
	pthread_mutex_unlock(&sr_cm_lock);
	if (in_use) {
		/* A thread is inside rdma_get_cm_event on it (rping's CM thread, when its main
		 * thread tears down first). The kernel keeps a channel's file alive under a
		 * blocked read and that read never returns; freeing here would instead hand
		 * the waiter freed memory or a closed (or reused) fd. Keep both; it waits on. */
		sr_dbg("event channel destroyed with a waiter; kept for it");
		return;
	}
	close(ch->ch.fd);
	free(ch);
}

/*
 * read()/write() are cancellation points, and these run under sr_cm_lock: an application
 * cancelling its CM thread there would leave the global lock held for good.
 */
static void sr_chan_push(struct sr_cm_channel *ch, struct sr_cm_event *e)
{
	bool first = sr_list_empty(&ch->queue);
	uint64_t one = 1;
	int old;

	sr_list_add_tail(&ch->queue, &e->node);
	if (!first)
		return; /* readable already */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	if (write(ch->ch.fd, &one, sizeof(one)) != sizeof(one))
		sr_err("eventfd write: %m");
	pthread_setcancelstate(old, NULL);
}

/* Unlink a queued event; the last one takes the count (never blocks: it is 1 until then). */
static void sr_chan_unlink(struct sr_cm_channel *ch, struct sr_cm_event *e)
{
	uint64_t v;
	int old;

	sr_list_del(&e->node);
	if (!sr_list_empty(&ch->queue))
		return;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	if (read(ch->ch.fd, &v, sizeof(v)) != sizeof(v))
		sr_err("eventfd read: %m");
	pthread_setcancelstate(old, NULL);
}

static struct sr_cm_event *sr_cm_event_new(struct sr_cm_id *id, enum rdma_cm_event_type type,
					   int status, const struct sr_cm_evparam *p)
{
	struct sr_cm_event *e = calloc(1, sizeof(*e));

	if (!e) {
		sr_err("out of memory: %s dropped", rdma_event_str(type));
		return NULL;
	}
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = id;
	if (p) {
		/* private_data_len is a u8: iWARP peers may send up to 512 bytes, we pass 255 */
		size_t len = SR_MIN(p->pd_len, (size_t)255);

		if (len && p->pd) {
			memcpy(e->pd, p->pd, len);
			e->ev.param.conn.private_data = e->pd;
			e->ev.param.conn.private_data_len = (uint8_t)len;
		}
		e->ev.param.conn.responder_resources = p->responder_resources;
		e->ev.param.conn.initiator_depth = p->initiator_depth;
	}
	return e;
}

void sr_cm_post(struct sr_cm_id *id, enum rdma_cm_event_type type, int status,
		const struct sr_cm_evparam *p)
{
	struct sr_cm_event *e;

	if (id->state == SR_CM_DESTROYING)
		return;
	e = sr_cm_event_new(id, type, status, p);
	if (!e)
		return;
	sr_dbg("id %p: %s status %d", (void *)id, rdma_event_str(type), status);
	sr_chan_push(id->chan, e);
}

int sr_cm_post_request(struct sr_cm_id *listener, struct sr_cm_id *req,
		       const struct sr_cm_evparam *p)
{
	struct sr_cm_event *e = sr_cm_event_new(req, RDMA_CM_EVENT_CONNECT_REQUEST, 0, p);

	if (!e)
		return -ENOMEM;
	e->owner = listener;
	e->ev.listen_id = &listener->id;
	req->listener = listener;
	listener->queued_reqs++;
	sr_chan_push(listener->chan, e);
	return 0;
}

void sr_cm_chan_take(struct sr_cm_channel *ch, struct sr_cm_id *owner,
		     struct sr_cm_channel *to, struct sr_list *orphans)
{
	struct sr_list *pos, *tmp;

	sr_list_for_each_safe(pos, tmp, &ch->queue) {
		struct sr_cm_event *e = sr_list_entry(pos, struct sr_cm_event, node);
		bool req = e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST;

		if (e->owner != owner)
			continue;
		sr_chan_unlink(ch, e);
		if (to) {
			/* the request ids follow their listener to its new channel */
			if (req && !to_sr_id(e->ev.id)->sync) {
				to_sr_id(e->ev.id)->chan = to;
				e->ev.id->channel = &to->ch;
			}
			sr_chan_push(to, e);
			continue;
		}
		if (req) {
			struct sr_cm_id *r = to_sr_id(e->ev.id);

			owner->queued_reqs--;
			r->listener = NULL;
			if (orphans)
				sr_list_add_tail(orphans, &r->orphan_node);
		}
		free(e);
	}
}

SR_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct sr_cm_channel *ch;
	int err = sr_cm_init();

	if (err) {
		errno = -err;
		return NULL;
	}
	ch = sr_cm_channel_new(false);
	return ch ? &ch->ch : NULL;
}

SR_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (channel)
		sr_cm_channel_free(to_sr_chan(channel));
}

/* Cancellation cleanup of a waiter (poll and pause are cancellation points). */
static void sr_chan_leave(void *arg)
{
	struct sr_cm_channel *ch = arg;

	__atomic_sub_fetch(&ch->waiters, 1, __ATOMIC_SEQ_CST);
}

/* Takes the first queued event: 1 with *event set, 0 when none is queued. Never returns
 * for a channel destroyed under the caller. */
static int sr_chan_next(struct sr_cm_channel *ch, struct rdma_cm_event **event)
{
	struct sr_cm_event *e;
	struct sr_cm_id *id;

	pthread_mutex_lock(&sr_cm_lock);
	if (ch->dead) {
		pthread_mutex_unlock(&sr_cm_lock);
		/* destroyed while we were in here: wait on for good, as a kernel read would */
		for (;;)
			pause();
	}
	if (sr_list_empty(&ch->queue)) {
		pthread_mutex_unlock(&sr_cm_lock);
		return 0;
	}
	e = sr_list_first(&ch->queue, struct sr_cm_event, node);
	id = to_sr_id(e->ev.id);
	sr_chan_unlink(ch, e);
	e->owner->reported++;
	if (e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		e->owner->queued_reqs--;
		id->listener = NULL;
	} else if (e->ev.event == RDMA_CM_EVENT_DISCONNECTED) {
		id->disc_fetched = true;
	}
	pthread_mutex_unlock(&sr_cm_lock);
	*event = &e->ev;
	return 1;
}

/* A helping waiter is done once an event is queued, or the channel was destroyed under it. */
static bool sr_chan_ready(void *arg)
{
	struct sr_cm_channel *ch = arg;
	bool ready;

	pthread_mutex_lock(&sr_cm_lock);
	ready = ch->dead || !sr_list_empty(&ch->queue);
	pthread_mutex_unlock(&sr_cm_lock);
	return ready;
}

SR_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct sr_cm_channel *ch;
	int ret = 0;

	if (!channel || !event)
		return sr_cm_fail(EINVAL);
	ch = to_sr_chan(channel);
	if (sr_cm_chan_inherited(ch))
		return sr_cm_fail(EIO);
	/* Counted before the lock so a concurrent rdma_destroy_event_channel sees us. */
	__atomic_add_fetch(&ch->waiters, 1, __ATOMIC_SEQ_CST);
	pthread_cleanup_push(sr_chan_leave, ch);
	for (;;) {
		struct pollfd pfd = { .fd = ch->ch.fd, .events = POLLIN };
		int flags, err;

		ret = sr_chan_next(ch, event);
		if (ret)
			break;
		flags = fcntl(ch->ch.fd, F_GETFL);
		if (flags >= 0 && (flags & O_NONBLOCK)) {
			errno = EAGAIN;
			ret = -1;
			break;
		}
		/* Wait in the engine's stead when we can (sr_engine_help): the socket that
		 * brings our event then wakes us rather than the engine thread. */
		err = sr_engine_help(ch->ch.fd, sr_chan_ready, ch);
		if (err == -EBUSY)
			err = poll(&pfd, 1, -1) < 0 ? -errno : 0;
		if (err == -EINTR) {
			errno = EINTR;
			ret = -1; /* like an interrupted read of the kernel's channel */
			break;
		}
	}
	pthread_cleanup_pop(1);
	return ret < 0 ? -1 : 0;
}

void sr_cm_ack(struct sr_cm_event *e)
{
	pthread_mutex_lock(&sr_cm_lock);
	e->owner->acked++;
	pthread_cond_broadcast(&sr_cm_cond);
	pthread_mutex_unlock(&sr_cm_lock);
	free(e);
}

SR_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return sr_cm_fail(EINVAL);
	sr_cm_ack(sr_container_of(event, struct sr_cm_event, ev));
	return 0;
}

int sr_cm_sync_wait(struct sr_cm_id *id)
{
	struct rdma_cm_event *ev;

	if (!id->sync)
		return 0;
	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	if (rdma_get_cm_event(id->id.channel, &ev))
		return -1;
	id->id.event = ev;
	if (!ev->status)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return sr_cm_fail(ECONNREFUSED);
	return sr_cm_fail(ev->status < 0 ? -ev->status : ev->status);
}
