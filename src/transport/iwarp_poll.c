// SPDX-License-Identifier: MIT
/*
 * Poll-mode progress: a thread that polls an empty, unarmed CQ runs the receive side of that
 * CQ's connections itself (xops->poll), so a busy-polling ping-pong costs a recvmsg() in the
 * application's thread instead of two thread wake-ups. The engine thread stays the fallback:
 * while a connection is POLLED its EPOLLIN is off in the engine (one epoll_ctl on the way in
 * and one on the way out), and the input goes back to the engine when the poller stops
 * polling for a lease, when the application arms a CQ, or when the stream leaves the fast
 * path. docs/ARCHITECTURE.md, "Progress in the application's thread", has the whole story.
 */
#include <errno.h>
#include <sys/epoll.h>

#include "common/sr_config.h"
#include "common/sr_log.h"
#include "transport/iwarp.h"

_Atomic unsigned long sr_iw_poll_passes;

void sr_iw_rx_owner_set_locked(struct sr_iw_conn *c, enum sr_iw_rx_owner o)
{
	sr_assert_held(&c->rx_lock);
	pthread_mutex_lock(&c->tx_lock);
	c->rx_owner = o;
	/* Level-triggered: input that arrived while EPOLLIN was off wakes the engine at once.
	 * ENDED needs no change: the close removes the handler, a Terminate's way out sets
	 * EPOLLOUT alone (and detach may be removing the handler right now). */
	if (o != SR_IW_RXO_ENDED)
		sr_iw_interest_sync_locked(c);
	pthread_mutex_unlock(&c->tx_lock);
}

/*
 * The lease timer (engine thread). POLLED: the lease is over unless a poll renewed it, then
 * it waits for the rest. HANDBACK: a poller stopped at an event only the engine thread may
 * act on (a close, a Terminate): act on it now, as the socket callback would.
 */
static void sr_iw_lease_fire(struct sr_engine_timer *t)
{
	struct sr_iw_conn *c = sr_container_of(t, struct sr_iw_conn, lease_t);
	enum sr_iw_rx_owner o;

	pthread_mutex_lock(&c->rx_lock);
	o = c->rx_owner;
	if (o == SR_IW_RXO_POLLED) {
		uint64_t idle_ns = sr_mono_ns() - atomic_load_explicit(&c->poll_last_ns,
								       memory_order_relaxed);

		if (idle_ns < c->poll_lease_us * 1000u)
			sr_engine_timer_arm_us(t, c->poll_lease_us - idle_ns / 1000u);
		else
			sr_iw_rx_owner_set_locked(c, SR_IW_RXO_ENGINE);
	}
	pthread_mutex_unlock(&c->rx_lock);
	if (o == SR_IW_RXO_HANDBACK)
		c->h.cb(&c->h, 0); /* takes rx_carried (sr_iw_ready) */
}

void sr_iw_poll_init(struct sr_iw_conn *c)
{
	long v = sr_config_long("SOFTRDMA_POLL_LEASE_US");

	pthread_mutex_init(&c->rx_lock, NULL);
	c->rx_owner = SR_IW_RXO_ENGINE;
	c->lease_t.cb = sr_iw_lease_fire;
	c->poll_lease_us = v >= 0 && v <= 60000000 ? (uint64_t)v : SR_IW_POLL_LEASE_US;
}

/*
 * One receive pass from the polling thread (the caller holds qp->poll_lock, so the
 * connection cannot be detached meanwhile). Only the fast path: a stream past its first
 * segment, reading, not ending. Everything else stays with the engine thread.
 */
bool sr_iw_poll(struct sr_qp *qp)
{
	struct sr_iw_conn *c = qp->xport;
	int r;

	if (!c || !c->poll_lease_us || pthread_mutex_trylock(&c->rx_lock))
		return false;
	if ((c->rx_owner != SR_IW_RXO_ENGINE && c->rx_owner != SR_IW_RXO_POLLED) ||
	    c->rx_state != SR_IW_RXS_READING || !c->rx_first_seen) {
		pthread_mutex_unlock(&c->rx_lock);
		return false;
	}
	atomic_store_explicit(&c->poll_last_ns, sr_mono_ns(), memory_order_relaxed);
	if (c->rx_owner == SR_IW_RXO_ENGINE) {
		sr_iw_rx_owner_set_locked(c, SR_IW_RXO_POLLED);
		/* no timer: no lease, so do not keep the input from the engine */
		if (sr_engine_timer_arm_us(&c->lease_t, c->poll_lease_us))
			sr_iw_rx_owner_set_locked(c, SR_IW_RXO_ENGINE);
	}
	atomic_fetch_add_explicit(&sr_iw_poll_passes, 1, memory_order_relaxed);
	r = sr_iw_rx(c);
	if (r) {
		/* EOF, a reset (reported once by the kernel: carried, not read again), or a
		 * Terminate: the engine thread closes. The timer brings it here at once. */
		c->rx_carried = r;
		sr_iw_rx_owner_set_locked(c, SR_IW_RXO_HANDBACK);
		sr_engine_timer_arm_us(&c->lease_t, 0);
	} else if (c->rx_state != SR_IW_RXS_READING) {
		/* a Send held for its receive: the resume timer and the engine carry on */
		sr_iw_rx_owner_set_locked(c, SR_IW_RXO_ENGINE);
	}
	pthread_mutex_unlock(&c->rx_lock);
	return true;
}

/* A CQ of the QP was armed: the application may sleep now, the engine reads again. */
void sr_iw_poll_release(struct sr_qp *qp)
{
	struct sr_iw_conn *c = qp->xport;

	if (!c)
		return;
	/* Whoever holds rx_lock (the engine callback, the lease timer) waits for no lock of
	 * ours: the close path, which may destroy QPs, runs outside it. */
	pthread_mutex_lock(&c->rx_lock);
	if (c->rx_owner == SR_IW_RXO_POLLED)
		sr_iw_rx_owner_set_locked(c, SR_IW_RXO_ENGINE);
	pthread_mutex_unlock(&c->rx_lock);
}
