/* SPDX-License-Identifier: MIT */
/*
 * The progress engine: one epoll thread per process, started on first use. Everything that
 * must happen while the application sleeps or computes runs here: netlink notifications,
 * (later) incoming FPDUs, RDMA READ responses, CM timers and handshakes.
 *
 * Handlers are registered by fd. Callbacks run on the engine thread, one at a time.
 * sr_engine_del() returns only when the handler's callback is not running and never will
 * again, so the caller may free it right after (unless called from that very callback).
 */
#ifndef SR_ENGINE_H
#define SR_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/sr_list.h"

struct sr_engine_handler;
typedef void (*sr_engine_cb)(struct sr_engine_handler *h, uint32_t events);

struct sr_engine_handler {
	int fd;
	sr_engine_cb cb;
	/* private to the engine */
	uint32_t slot;
	uint32_t gen;
	bool registered;
};

/* Register h->fd for EPOLL* events. Returns 0 or a negative errno. */
int sr_engine_add(struct sr_engine_handler *h, uint32_t events);
int sr_engine_mod(struct sr_engine_handler *h, uint32_t events);
void sr_engine_del(struct sr_engine_handler *h);

/* True when called from the engine thread. */
bool sr_engine_in_thread(void);

/*
 * One-shot timers whose callbacks run on the engine thread. They cost no file descriptor and,
 * armed in deadline order (the usual case: one timeout per kind), no system call: all timers
 * of an engine share one timerfd, programmed for the earliest deadline.
 */
struct sr_engine_timer;
typedef void (*sr_engine_timer_cb)(struct sr_engine_timer *t);

struct sr_engine_timer {
	sr_engine_timer_cb cb;
	/* private to the engine */
	uint64_t deadline;     /* CLOCK_MONOTONIC, ns */
	struct sr_list node;   /* the engine's timers, by deadline */
	bool armed;
};

/* (Re)arm t to fire once, ms from now; any thread. Returns 0 or a negative errno. */
int sr_engine_timer_arm(struct sr_engine_timer *t, unsigned int ms);
/*
 * Disarm t (armed or not). Like sr_engine_del(), returns only when t's callback is not
 * running and will not run, unless called from that very callback.
 */
void sr_engine_timer_cancel(struct sr_engine_timer *t);

#endif
