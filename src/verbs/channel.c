// SPDX-License-Identifier: MIT
/*
 * Completion channels. ch.fd is an eventfd in semaphore mode with one count per queued CQ
 * event, so it is pollable, honours O_NONBLOCK set by the application, and a blocking read is
 * exactly "wait for the next event". The queue itself is a list of CQs with pending events
 * (struct sr_cq_event, embedded in each CQ).
 *
 * Destroying a CQ withdraws its queued events but cannot take back their eventfd counts
 * without racing a reader blocked in read(); ibv_get_cq_event skips such stale counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/sr_log.h"
#include "engine/sr_engine.h"
#include "verbs/sr_obj.h"

SR_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct sr_comp_channel *chan;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	chan = calloc(1, sizeof(*chan));
	if (!chan) {
		errno = ENOMEM;
		return NULL;
	}
	chan->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (chan->ch.fd < 0) {
		int err = errno;

		free(chan);
		errno = err;
		return NULL;
	}
	chan->ch.context = context;
	pthread_mutex_init(&chan->lock, NULL);
	sr_list_init(&chan->events);
	return &chan->ch;
}

SR_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sr_comp_channel *chan;

	if (!channel)
		return EINVAL;
	chan = sr_container_of(channel, struct sr_comp_channel, ch);
	if (atomic_load(&chan->users) > 0)
		return EBUSY;
	close(chan->ch.fd);
	pthread_mutex_destroy(&chan->lock);
	free(chan);
	return 0;
}

/* The channel this thread waits for in ibv_get_cq_event as the engine's helper, if any. */
static __thread struct sr_comp_channel *sr_chan_helping;

/*
 * chan->lock held. Events a helper made for itself that it does not take now get their
 * eventfd counts after all: the fd is readable while events are queued, for whoever waits
 * on it next (poll(), another thread, this one).
 */
static void sr_chan_count_rest_locked(struct sr_comp_channel *chan)
{
	uint64_t n = chan->uncounted;

	sr_assert_held(&chan->lock);
	if (!n)
		return;
	chan->uncounted = 0;
	if (write(chan->ch.fd, &n, sizeof(n)) != sizeof(n))
		sr_err("completion eventfd write: %m");
}

void sr_chan_signal(struct sr_comp_channel *chan, struct sr_cq *cq)
{
	uint64_t one = 1;

	pthread_mutex_lock(&chan->lock);
	if (cq->chan_ev.pending++ == 0)
		sr_list_add_tail(&chan->events, &cq->chan_ev.node);
	/*
	 * The helper waiting for this channel made the completion itself (it runs the engine's
	 * callbacks) and takes the event on its way out: an eventfd count would only cost it a
	 * write and a read. Every other signal counts, so the fd stays readable for other
	 * waiters.
	 */
	if (sr_chan_helping == chan)
		chan->uncounted++;
	else if (write(chan->ch.fd, &one, sizeof(one)) != sizeof(one))
		sr_err("completion eventfd write: %m");
	pthread_mutex_unlock(&chan->lock);
}

void sr_chan_forget(struct sr_comp_channel *chan, struct sr_cq *cq)
{
	pthread_mutex_lock(&chan->lock);
	if (cq->chan_ev.pending) {
		cq->chan_ev.pending = 0;
		sr_list_del(&cq->chan_ev.node);
	}
	pthread_mutex_unlock(&chan->lock);
}

atomic_ulong sr_chan_helped;

/* A helping waiter is done once an event is queued. */
static bool sr_chan_has_event(void *arg)
{
	struct sr_comp_channel *chan = arg;
	bool ready;

	pthread_mutex_lock(&chan->lock);
	ready = !sr_list_empty(&chan->events);
	pthread_mutex_unlock(&chan->lock);
	return ready;
}

/*
 * A blocking wait for the channel: rather than sleep on the eventfd while the engine thread
 * waits for the socket and then wakes us, wait in the engine's epoll set ourselves and run
 * the callbacks (sr_engine_help): the socket then wakes the thread that wants the
 * completion. Returns -EINTR on a signal; anything else leaves the read to wait as before
 * (another thread helps already, the engine has not started or does not take helpers).
 */
static int sr_chan_help_wait(struct sr_comp_channel *chan)
{
	int fl, err;

	if (sr_chan_has_event(chan))
		return 0;
	fl = fcntl(chan->ch.fd, F_GETFL);
	if (fl < 0 || (fl & O_NONBLOCK))
		return 0; /* the read says EAGAIN by itself */
	sr_chan_helping = chan;
	err = sr_engine_help(chan->ch.fd, sr_chan_has_event, chan);
	sr_chan_helping = NULL;
	if (err == -EINTR) {
		pthread_mutex_lock(&chan->lock);
		sr_chan_count_rest_locked(chan); /* we take none of them now */
		pthread_mutex_unlock(&chan->lock);
	}
	if (!err)
		atomic_fetch_add_explicit(&sr_chan_helped, 1, memory_order_relaxed);
	return err == -EINTR ? -EINTR : 0;
}

SR_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
			       void **cq_context)
{
	struct sr_comp_channel *chan;
	struct sr_cq *c;
	uint64_t cnt;

	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	chan = sr_container_of(channel, struct sr_comp_channel, ch);
	if (sr_ctx_inherited(channel->context)) {
		errno = EIO; /* the parent's channel (fork): its counts are the parent's */
		return -1;
	}
	for (;;) {
		if (sr_chan_help_wait(chan) == -EINTR) {
			errno = EINTR; /* as the interrupted read would say */
			return -1;
		}
		pthread_mutex_lock(&chan->lock);
		if (chan->uncounted) {
			/* ours, made while we helped: no count to read (sr_chan_signal) */
			chan->uncounted--;
			if (!sr_list_empty(&chan->events)) {
				sr_chan_count_rest_locked(chan);
				break;
			}
			chan->uncounted = 0; /* withdrawn with a destroyed CQ */
		}
		pthread_mutex_unlock(&chan->lock);
		if (read(channel->fd, &cnt, sizeof(cnt)) != sizeof(cnt))
			return -1; /* errno from read: EAGAIN when O_NONBLOCK, EINTR, ... */
		pthread_mutex_lock(&chan->lock);
		if (!sr_list_empty(&chan->events))
			break;
		pthread_mutex_unlock(&chan->lock); /* stale count of a destroyed CQ */
	}
	c = sr_list_first(&chan->events, struct sr_cq_event, node)->cq;
	if (--c->chan_ev.pending == 0)
		sr_list_del(&c->chan_ev.node);
	/* Counted before the channel lock drops, so ibv_destroy_cq (which withdraws events
	 * under that lock) always sees this delivery and waits for its ack. */
	pthread_mutex_lock(&c->ibcq.mutex);
	c->comp_events++;
	pthread_mutex_unlock(&c->ibcq.mutex);
	pthread_mutex_unlock(&chan->lock);
	*cq = &c->ibcq;
	*cq_context = c->ibcq.cq_context;
	return 0;
}

SR_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq || !nevents)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
