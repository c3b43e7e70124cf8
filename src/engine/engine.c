// SPDX-License-Identifier: MIT
/*
 * epoll loop. The epoll data carries (generation, slot) rather than a pointer, so an event
 * that was already fetched for a handler that has since been deleted (and maybe freed) is
 * recognised as stale and dropped without touching the handler.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/sr_log.h"
#include "engine/sr_engine.h"

struct sr_engine_slot {
	struct sr_engine_handler *h; /* NULL when free */
	uint32_t gen;
	uint32_t next_free;          /* free list link while free */
};

/* End of the free list. Free slots are kept on a list so that registering costs the same
 * with a hundred thousand handlers (one per connection) as with ten. */
#define SR_ENGINE_NO_SLOT UINT32_MAX

static struct {
	pthread_mutex_t mu;
	pthread_cond_t idle;
	pthread_once_t once;
	int epfd;
	int start_err;
	pthread_t thread;
	struct sr_engine_slot *slots;
	uint32_t nslots;
	uint32_t free_head;
	uint32_t running; /* slot whose callback is running, or UINT32_MAX */
} eng = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.once = PTHREAD_ONCE_INIT,
	.epfd = -1,
	.free_head = SR_ENGINE_NO_SLOT,
	.running = UINT32_MAX,
};

static __thread bool sr_engine_self;

bool sr_engine_in_thread(void)
{
	return sr_engine_self;
}

static void *sr_engine_main(void *unused)
{
	struct epoll_event evs[64];

	sr_engine_self = true;
	for (;;) {
		int n = epoll_wait(eng.epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])), -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			sr_err("epoll_wait: %m");
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)evs[i].data.u64;
			uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
			struct sr_engine_handler *h = NULL;

			pthread_mutex_lock(&eng.mu);
			if (slot < eng.nslots && eng.slots[slot].h && eng.slots[slot].gen == gen) {
				h = eng.slots[slot].h;
				eng.running = slot;
			}
			pthread_mutex_unlock(&eng.mu);
			if (!h)
				continue;
			h->cb(h, evs[i].events);
			pthread_mutex_lock(&eng.mu);
			eng.running = UINT32_MAX;
			pthread_cond_broadcast(&eng.idle);
			pthread_mutex_unlock(&eng.mu);
		}
	}
	return NULL;
}

static void sr_engine_start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;

	eng.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (eng.epfd < 0) {
		eng.start_err = -errno;
		return;
	}
	/* The engine must never take the application's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	eng.start_err = -pthread_create(&eng.thread, &attr, sr_engine_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!eng.start_err)
		pthread_setname_np(eng.thread, "softrdma-engine");
}

int sr_engine_add(struct sr_engine_handler *h, uint32_t events)
{
	struct epoll_event ev = { .events = events };
	uint32_t slot;

	pthread_once(&eng.once, sr_engine_start);
	if (eng.start_err)
		return eng.start_err;
	pthread_mutex_lock(&eng.mu);
	if (eng.free_head == SR_ENGINE_NO_SLOT) {
		uint32_t nn = eng.nslots ? eng.nslots * 2 : 64;
		struct sr_engine_slot *ns = realloc(eng.slots, nn * sizeof(*ns));

		if (!ns) {
			pthread_mutex_unlock(&eng.mu);
			return -ENOMEM;
		}
		memset(ns + eng.nslots, 0, (nn - eng.nslots) * sizeof(*ns));
		for (uint32_t i = eng.nslots; i < nn; i++)
			ns[i].next_free = i + 1 < nn ? i + 1 : SR_ENGINE_NO_SLOT;
		eng.free_head = eng.nslots;
		eng.slots = ns;
		eng.nslots = nn;
	}
	slot = eng.free_head;
	eng.free_head = eng.slots[slot].next_free;
	eng.slots[slot].h = h;
	eng.slots[slot].gen++;
	h->slot = slot;
	h->gen = eng.slots[slot].gen;
	ev.data.u64 = ((uint64_t)h->gen << 32) | slot;
	if (epoll_ctl(eng.epfd, EPOLL_CTL_ADD, h->fd, &ev) < 0) {
		int err = -errno;

		eng.slots[slot].h = NULL;
		eng.slots[slot].next_free = eng.free_head;
		eng.free_head = slot;
		pthread_mutex_unlock(&eng.mu);
		return err;
	}
	h->registered = true;
	pthread_mutex_unlock(&eng.mu);
	return 0;
}

int sr_engine_mod(struct sr_engine_handler *h, uint32_t events)
{
	struct epoll_event ev = { .events = events };

	ev.data.u64 = ((uint64_t)h->gen << 32) | h->slot;
	return epoll_ctl(eng.epfd, EPOLL_CTL_MOD, h->fd, &ev) < 0 ? -errno : 0;
}

void sr_engine_del(struct sr_engine_handler *h)
{
	pthread_mutex_lock(&eng.mu);
	if (!h->registered) {
		pthread_mutex_unlock(&eng.mu);
		return;
	}
	epoll_ctl(eng.epfd, EPOLL_CTL_DEL, h->fd, NULL);
	eng.slots[h->slot].h = NULL;
	eng.slots[h->slot].gen++;
	eng.slots[h->slot].next_free = eng.free_head;
	eng.free_head = h->slot;
	h->registered = false;
	while (eng.running == h->slot && !sr_engine_self)
		pthread_cond_wait(&eng.idle, &eng.mu);
	pthread_mutex_unlock(&eng.mu);
}
