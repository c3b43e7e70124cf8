/* SPDX-License-Identifier: MIT */
/*
 * The progress engine: one epoll thread per process, started on first use. Everything that
 * must happen while the application sleeps or computes runs here: netlink notifications,
 * (later) incoming FPDUs, RDMA READ responses, CM timers and handshakes.
 *
 * Handlers are registered by fd. Callbacks run on the engine thread, or on a thread helping
 * it (sr_engine_help), one at a time.
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
	uint32_t epoch;   /* the engine's epoch at sr_engine_add (fork: see below) */
	/* Atomic: an owner may look at it from a callback the engine is running while another
	 * thread's sr_engine_del clears it (sr_engine_del then waits for that callback). */
	_Atomic bool registered;
};

/* Register h->fd for EPOLL* events. Returns 0 or a negative errno. */
int sr_engine_add(struct sr_engine_handler *h, uint32_t events);
int sr_engine_mod(struct sr_engine_handler *h, uint32_t events);
void sr_engine_del(struct sr_engine_handler *h);

/*
 * fork(): the child gets no engine thread, so the engine it inherited is not its own. A
 * child handler (pthread_atfork) closes the child's copies of the engine's fds (the epoll
 * set stays the parent's: nothing the child registers may enter it), forgets the parent's
 * handlers and timers, and starts a new epoch: the child's next sr_engine_add or timer
 * starts a fresh engine (new epoll set, new thread). A handler registered before the fork
 * belongs to the parent's engine: sr_engine_del leaves it alone and sr_engine_mod fails
 * with -EIO. The objects of the layers remember the epoch they were created in, to tell
 * that they were inherited and must not touch what they own (a parent's socket).
 */
/* The current epoch. */
uint32_t sr_engine_epoch(void);

/* True when called from the engine thread, or from a callback a helper runs. */
bool sr_engine_in_thread(void);

/*
 * Wait until fd is readable, doing the engine's work meanwhile: the calling thread waits in
 * the engine's epoll set (fd added to it) and runs the callbacks that become due, one at a
 * time with any other dispatch, while the engine thread stands aside. done(arg), asked
 * once the fd is in the set and after each batch, may end the wait without the fd.
 * For a thread that would otherwise sleep until work done on the engine reaches it: the
 * socket wakes this thread directly instead of the engine thread, which then wakes this one.
 * No lock of the caller's may be held (callbacks take theirs). Returns 0 when fd is
 * readable or done, -EINTR on a signal, -EBUSY when the engine has not started or another
 * thread helps already (then wait as usual), another negative errno on failure.
 */
int sr_engine_help(int fd, bool (*done)(void *arg), void *arg);

/*
 * Let threads help (sr_engine_help). Takes effect only when called before the engine
 * starts: the engine thread then sleeps in a second epoll set (one more epoll_wait per
 * batch) so that a helper can switch its wake-ups off. Both engines do: librdmacm's
 * is helped by rdma_get_cm_event, libibverbs' by a blocking ibv_get_cq_event.
 */
void sr_engine_allow_helpers(void);
/* Whether a thread is helping right now (tests wait for it before they make an event). */
bool sr_engine_helper_active(void);

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
/* The same in microseconds, for bounds shorter than a millisecond's granularity allows. */
int sr_engine_timer_arm_us(struct sr_engine_timer *t, uint64_t us);
/*
 * Disarm t (armed or not). Like sr_engine_del(), returns only when t's callback is not
 * running and will not run, unless called from that very callback.
 */
void sr_engine_timer_cancel(struct sr_engine_timer *t);

#endif
