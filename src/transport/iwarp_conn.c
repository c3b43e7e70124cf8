// SPDX-License-Identifier: MIT
/*
 * Life cycle of an iWARP stream on a QP: attach after the MPA exchange, orderly disconnect,
 * abort, close, detach. Also the private ops librdmacm calls through the context.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/sr_config.h"
#include "common/sr_drain.h"
#include "common/sr_fork.h"
#include "common/sr_log.h"
#include "transport/iwarp.h"

/*
 * fd validity: the fd is closed on the engine thread (sr_iw_conn_close) or at detach, while
 * abort may come from any thread, even one holding tx_lock. fd_lock guards only that.
 */
static pthread_mutex_t sr_iw_fd_lock = PTHREAD_MUTEX_INITIALIZER;
SR_FORK_SAFE_MUTEX(sr_iw_fd, &sr_iw_fd_lock, NULL)
/*
 * A close on the engine thread unregisters the handler itself, so a later sr_engine_del()
 * in detach no longer waits for that callback. detach waits on this (with sr_iw_fd_lock)
 * until c->life leaves CLOSING instead.
 */
static pthread_cond_t sr_iw_close_cv = PTHREAD_COND_INITIALIZER;

/* sr_iw_fd_lock held: move c->life along enum sr_iw_life (iwarp.h). */
static void sr_iw_life_set_locked(struct sr_iw_conn *c, enum sr_iw_life to)
{
	sr_assert_held(&sr_iw_fd_lock);
	assert((c->life == SR_IW_LIFE_LIVE && to == SR_IW_LIFE_CLOSING) ||
	       (c->life == SR_IW_LIFE_CLOSING &&
		(to == SR_IW_LIFE_CLOSING_FREE || to == SR_IW_LIFE_CLOSED)) ||
	       (c->life == SR_IW_LIFE_CLOSING_FREE && to == SR_IW_LIFE_CLOSED));
	c->life = to;
}

/* sr_iw_fd_lock held: record a disconnect or a cut (enum sr_iw_end_ask, iwarp.h). */
static void sr_iw_ask_end_locked(struct sr_iw_conn *c, bool cut)
{
	static const enum sr_iw_end_ask next[][2] = {
		/*                            disconnect                cut */
		[SR_IW_ASK_NONE] = { SR_IW_ASK_DISCONNECT, SR_IW_ASK_CUT },
		[SR_IW_ASK_DISCONNECT] = { SR_IW_ASK_DISCONNECT, SR_IW_ASK_DISCONNECT_CUT },
		[SR_IW_ASK_CUT] = { SR_IW_ASK_DISCONNECT_CUT, SR_IW_ASK_CUT },
		[SR_IW_ASK_DISCONNECT_CUT] = { SR_IW_ASK_DISCONNECT_CUT, SR_IW_ASK_DISCONNECT_CUT },
	};

	sr_assert_held(&sr_iw_fd_lock);
	c->end_ask = next[c->end_ask][cut];
}

/* sr_iw_fd_lock held: whether the stream was cut (its end is not orderly). */
static bool sr_iw_cut_locked(const struct sr_iw_conn *c)
{
	sr_assert_held(&sr_iw_fd_lock);
	return c->end_ask == SR_IW_ASK_CUT || c->end_ask == SR_IW_ASK_DISCONNECT_CUT;
}

/* sr_iw_fd_lock held: whether the application asked for the end (rdma_disconnect). */
static bool sr_iw_disconnect_asked_locked(const struct sr_iw_conn *c)
{
	sr_assert_held(&sr_iw_fd_lock);
	return c->end_ask == SR_IW_ASK_DISCONNECT || c->end_ask == SR_IW_ASK_DISCONNECT_CUT;
}

/* conn_ops->disconnect_asked */
static bool sr_iw_conn_disconnect_asked(struct sr_iw_conn *c)
{
	bool asked;

	pthread_mutex_lock(&sr_iw_fd_lock);
	asked = sr_iw_disconnect_asked_locked(c);
	pthread_mutex_unlock(&sr_iw_fd_lock);
	return asked;
}

static void sr_iw_conn_free(struct sr_iw_conn *c)
{
	sr_engine_timer_cancel(&c->rnr_t); /* a post after the close may have armed it */
	sr_engine_timer_cancel(&c->close_t);
	sr_engine_timer_cancel(&c->lease_t);
	pthread_mutex_destroy(&c->tx_lock);
	pthread_mutex_destroy(&c->rx_lock);
	free(c->fp);
	free(c->rx_st); /* bytes still staged when the stream ended */
	free(c->rreq);
	free(c->resp);
	free(c);
}

static void sr_iw_release_pending(struct sr_iw_conn *c, bool detaching)
{
	/* References held for messages that will now never finish. */
	pthread_mutex_lock(&c->tx_lock);
	if (c->kind == SR_IW_TX_WQE)
		sr_iw_buf_release(&c->src);
	/* A Read Response being sent is still at the head of the ring: put below. */
	c->kind = SR_IW_TX_IDLE;
	c->wqe = NULL; /* the flush completes it */
	while (c->resp_count) {
		if (c->resp[c->resp_head].mr)
			sr_mr_put(c->resp[c->resp_head].mr);
		c->resp_head = (c->resp_head + 1) % c->resp_cap;
		c->resp_count--;
	}
	while (c->rreq_count) {
		sr_iw_buf_release(&c->rreq[c->rreq_head].sink);
		c->rreq_head = (c->rreq_head + 1) % c->rreq_cap;
		c->rreq_count--;
	}
	sr_iw_tx_kill_locked(c);
	c->fp_busy = false;
	pthread_mutex_unlock(&c->tx_lock);
	if (c->rx_rwqe) {
		/* A receive half filled: flushed like the rest, or just dropped when the QP is
		 * going away (detach). */
		sr_iw_buf_release(&c->rx_rbuf);
		if (detaching)
			sr_rq_release(c->rx_rwqe);
		else
			sr_rq_complete(c->qp, c->rx_rwqe, IBV_WC_WR_FLUSH_ERR, 0, 0, 0, false);
		c->rx_rwqe = NULL;
	}
	if (c->rx_wmr) {
		sr_mr_put(c->rx_wmr); /* a Write segment in progress */
		c->rx_wmr = NULL;
	}
}

/*
 * The stream is over. detaching: the QP is being destroyed or reset, so it is neither
 * flushed nor is the CM called back (detach, which has stopped the engine callbacks).
 */
static void sr_iw_conn_end(struct sr_iw_conn *c, int err, bool detaching)
{
	struct sr_conn_cb cb;
	bool disconnecting, free_it;

	/* Written only by this function and detach, which never run at once for c. */
	if (c->life != SR_IW_LIFE_LIVE)
		return;
	c->close_err = err;
	/* No poller reads from here on (it needs ENGINE or POLLED under rx_lock). */
	pthread_mutex_lock(&c->rx_lock);
	sr_iw_rx_owner_set_locked(c, SR_IW_RXO_ENDED);
	pthread_mutex_unlock(&c->rx_lock);
	pthread_mutex_lock(&sr_iw_fd_lock);
	/* before sr_engine_del: detach must see it once that returns */
	sr_iw_life_set_locked(c, SR_IW_LIFE_CLOSING);
	disconnecting = sr_iw_disconnect_asked_locked(c);
	pthread_mutex_unlock(&sr_iw_fd_lock);
	/*
	 * Stop the transmit side before the engine registration and the fd go away: a thread
	 * in sr_iw_tx_progress() then finds tx_end DEAD and touches neither (sr_iw_want_out reads
	 * both without any lock of theirs).
	 */
	pthread_mutex_lock(&c->tx_lock);
	sr_iw_tx_kill_locked(c);
	c->fp_busy = false;
	c->tx_want_out = false;
	pthread_mutex_unlock(&c->tx_lock);
	sr_engine_del(&c->h);
	sr_iw_ready_timer_stop(c);
	sr_engine_timer_cancel(&c->rnr_t);
	sr_engine_timer_cancel(&c->close_t); /* also from its own callback: allowed */
	sr_engine_timer_cancel(&c->lease_t); /* not under rx_lock, which its callback takes */
	sr_iw_release_pending(c, detaching);
	/* A plain close: a Terminate we queued must still reach the peer. */
	pthread_mutex_lock(&sr_iw_fd_lock);
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
	pthread_mutex_unlock(&sr_iw_fd_lock);
	sr_dbg("qp %u: stream closed (%d)", c->qp->ibqp.qp_num, err);
	/* Flush before telling the CM, so DISCONNECTED follows the flush completions. */
	if (!detaching)
		sr_qp_to_error(c->qp, err != 0 && !disconnecting);
	pthread_mutex_lock(&sr_iw_fd_lock);
	cb = c->cb;
	pthread_mutex_unlock(&sr_iw_fd_lock);
	if (cb.closed)
		cb.closed(cb.arg, err);
	/* The callback may have destroyed the QP (detach then left c for us to free). */
	pthread_mutex_lock(&sr_iw_fd_lock);
	free_it = c->life == SR_IW_LIFE_CLOSING_FREE;
	sr_iw_life_set_locked(c, SR_IW_LIFE_CLOSED);
	pthread_cond_broadcast(&sr_iw_close_cv);
	pthread_mutex_unlock(&sr_iw_fd_lock);
	if (free_it)
		sr_iw_conn_free(c);
}

/* The stream is over (err 0 = orderly). Engine thread or detach only. */
static void sr_iw_conn_close(struct sr_iw_conn *c, int err)
{
	sr_iw_conn_end(c, err, false);
}

/*
 * Drop the input nobody will read (SR_DRAIN_MAX at most: a peer that keeps sending gets the
 * reset it asks for): with unread bytes, close() sends a reset, which also throws away what
 * we queued before it, a Terminate included. fd_lock held.
 */
static void sr_iw_drop_input_locked(struct sr_iw_conn *c)
{
	sr_assert_held(&sr_iw_fd_lock);
	if (c->fd >= 0)
		sr_drain(c->fd);
}

/*
 * The bound of an orderly close or of a Terminate's way out ran out (close_t): abort. A reset
 * frees both ends at once, queued bytes and all; but a peer-to-peer initiator never resets
 * before its RTR is wholly out (Linux siw's CM has crashed its host on that, docs/WIRE.md):
 * then the unread input is dropped (unread bytes at close would draw the reset) and the close
 * sends a FIN behind whatever is still queued.
 */
static void sr_iw_close_expired(struct sr_engine_timer *t)
{
	struct sr_iw_conn *c = sr_container_of(t, struct sr_iw_conn, close_t);
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	bool terminating, reset;

	if (c->life != SR_IW_LIFE_LIVE)
		return;
	pthread_mutex_lock(&c->tx_lock);
	terminating = c->rx_state == SR_IW_RXS_TERMINATING; /* a poller may hold a Send */
	reset = !(c->initiator && c->mpa.p2p) || c->tx_first_out;
	sr_iw_tx_kill_locked(c); /* nothing more enters the socket */
	pthread_mutex_unlock(&c->tx_lock);
	sr_dbg("qp %u: %s not done within its bound: aborting the stream with a %s",
	       c->qp->ibqp.qp_num, terminating ? "Terminate" : "orderly close",
	       reset ? "reset" : "FIN");
	pthread_mutex_lock(&sr_iw_fd_lock);
	sr_iw_ask_end_locked(c, true);
	if (c->fd >= 0) {
		if (reset)
			setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		else
			sr_iw_drop_input_locked(c);
	}
	pthread_mutex_unlock(&sr_iw_fd_lock);
	sr_iw_conn_close(c, terminating ? -ECONNABORTED : -ETIMEDOUT);
}

/*
 * Close an aborted stream whose input nobody reads any more, dropping that input first (a
 * bounded amount): unread bytes at close() would draw a reset, which throws away what is still
 * queued. Two cases. The Terminate waited for room (the peer had stopped reading) and is now
 * in the socket buffer, likely not yet sent: the close sends a FIN behind it. A Terminate that
 * went out at once is closed on plainly, as before: the reset then stops the peer from
 * writing on into a dead stream. And the application moved the QP to ERR: our FIN is out
 * (sr_iw_conn_fail), and what the peer had sent is dropped unread, never placed.
 */
static void sr_iw_close_dropping_input(struct sr_iw_conn *c)
{
	pthread_mutex_lock(&sr_iw_fd_lock);
	sr_iw_drop_input_locked(c);
	pthread_mutex_unlock(&sr_iw_fd_lock);
	sr_iw_conn_close(c, -ECONNABORTED);
}

/* tx_lock held: a Terminate (or an FPDU ahead of it) still waits for room in the socket. */
static bool sr_iw_term_in_flight_locked(const struct sr_iw_conn *c)
{
	sr_assert_held(&c->tx_lock);
	return c->fp_busy || c->tx_end == SR_IW_TXE_TERM_QUEUED;
}

/*
 * Our receive side found a protocol error and queued a Terminate (RFC 5040 wants it sent
 * while that is still possible). If the socket takes it now, close at once: the plain close
 * still delivers what is in the socket buffer. If the socket is full (a peer that does not
 * read), never block the engine thread, which serves every other connection of the process:
 * stop reading, let EPOLLOUT finish the Terminate, and abort at SR_IW_TERM_TIMEOUT_MS.
 * Returns true when the stream is to be closed now.
 */
static bool sr_iw_terminate_out(struct sr_iw_conn *c)
{
	bool pending;

	pthread_mutex_lock(&c->tx_lock);
	sr_iw_tx_progress_locked(c);
	pending = sr_iw_term_in_flight_locked(c);
	if (pending) {
		/* nothing is read any more: EPOLLOUT alone, for the Terminate */
		sr_iw_rx_state_set_locked(c, SR_IW_RXS_TERMINATING);
		sr_iw_tx_await_room_locked(c);
	}
	pthread_mutex_unlock(&c->tx_lock);
	if (pending && sr_engine_timer_arm(&c->close_t, sr_config_ms("SOFTRDMA_TERM_TIMEOUT_MS",
									SR_IW_TERM_TIMEOUT_MS)))
		return true; /* no timer: do not wait */
	if (pending)
		sr_dbg("qp %u: Terminate waits for room in the socket", c->qp->ibqp.qp_num);
	return !pending;
}

/* The socket took more of our Terminate, or failed: close once the Terminate is out. */
static void sr_iw_terminating_ready(struct sr_iw_conn *c, uint32_t events)
{
	bool pending;

	pthread_mutex_lock(&c->tx_lock);
	if (events & EPOLLOUT)
		sr_iw_tx_progress_locked(c);
	pending = sr_iw_term_in_flight_locked(c);
	pthread_mutex_unlock(&c->tx_lock);
	if (events & (EPOLLHUP | EPOLLERR))
		sr_iw_conn_close(c, -ECONNABORTED); /* nothing reaches that peer any more */
	else if (!pending)
		sr_iw_close_dropping_input(c);
}

/*
 * Who closes first (docs/ARCHITECTURE.md, "Who closes first"). TCP leaves TIME_WAIT, 2 MSL,
 * on the side whose FIN went first, and it holds that connection's 4-tuple. The scarce
 * tuples are the initiator's: a client churning connections to one server has only its
 * ephemeral ports towards that address and port, while a responder's TIME_WAIT tuple is
 * taken over by the next SYN from it (RFC 6191). So a responder whose peer ends the stream
 * first answers that FIN with a reset instead of a FIN of its own, once every byte it sent
 * is acknowledged: the initiator's socket goes from FIN_WAIT_2 straight to CLOSED and
 * neither side keeps TIME_WAIT. Nothing is lost: the peer's FIN followed all its data, which
 * we have read (EOF between FPDUs), and the kernel lets the initiator read what it had
 * received before it reports the reset (sr_iw_ready takes a reset after our own FIN as the
 * orderly answer it is). With bytes still unacknowledged the responder sends a plain FIN
 * and TIME_WAIT stays with the initiator: data first. When the responder ends the stream
 * first, its FIN goes first and TIME_WAIT stays with it; the initiator answers with a FIN.
 *
 * The peer's FIN arrived: end our side. Returns whether the close is orderly.
 */
static bool sr_iw_answer_fin(struct sr_iw_conn *c)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	bool orderly, reset = false;
	int outq = -1;

	pthread_mutex_lock(&c->tx_lock);
	orderly = c->tx_end != SR_IW_TXE_TERM_SENT && c->tx_end != SR_IW_TXE_TERM_FIN;
	if (c->tx_end != SR_IW_TXE_FIN_SENT && c->tx_end != SR_IW_TXE_TERM_FIN) {
		if (!c->initiator && orderly && !c->fp_busy &&
		    ioctl(c->fd, SIOCOUTQ, &outq) == 0 && outq == 0 &&
		    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0) {
			/* The close in sr_iw_conn_close() sends the reset; nothing may enter the
			 * socket before it (a Send completed now would be discarded by it). */
			sr_iw_tx_kill_locked(c);
			reset = true;
		}
		if (!reset)
			sr_iw_tx_fin_locked(c);
		sr_dbg("qp %u: peer's FIN answered with a %s", c->qp->ibqp.qp_num,
		       reset ? "reset" : "FIN");
	}
	pthread_mutex_unlock(&c->tx_lock);
	/* The EOF that follows our own abort or Terminate is no orderly close. */
	pthread_mutex_lock(&sr_iw_fd_lock);
	orderly = orderly && !sr_iw_cut_locked(c);
	pthread_mutex_unlock(&sr_iw_fd_lock);
	return orderly;
}

/* A reset between FPDUs: after our orderly FIN it is the responder's answer to it. */
static bool sr_iw_reset_answers_fin(struct sr_iw_conn *c)
{
	bool answer;

	pthread_mutex_lock(&c->tx_lock);
	answer = c->initiator && c->tx_end == SR_IW_TXE_FIN_SENT;
	pthread_mutex_unlock(&c->tx_lock);
	pthread_mutex_lock(&sr_iw_fd_lock);
	answer = answer && c->end_ask == SR_IW_ASK_DISCONNECT;
	pthread_mutex_unlock(&sr_iw_fd_lock);
	return answer;
}

/*
 * The receive part of the socket callback, under rx_lock (a poller may own the input:
 * iwarp_poll.c). Returns sr_iw_rx's result (or a poller's, carried, or SR_IW_RX_CUT carried
 * by sr_iw_stop), SR_IW_RX_TERMINATING or SR_IW_RX_HUP_HELD; a result that ends the stream
 * leaves the receive side ENDED, so no poller reads between here and the close.
 */
#define SR_IW_RX_HUP_HELD 10
#define SR_IW_RX_TERMINATING 11
#define SR_IW_RX_CUT 12 /* the application moved the QP to ERR: close, read nothing more */
static int sr_iw_ready_rx_locked(struct sr_iw_conn *c, uint32_t events)
{
	int r = 0;

	sr_assert_held(&c->rx_lock);
	if (c->rx_state == SR_IW_RXS_TERMINATING)
		return SR_IW_RX_TERMINATING;
	switch (c->rx_owner) {
	case SR_IW_RXO_ENDED:
		return 0;
	case SR_IW_RXO_HANDBACK:
		r = c->rx_carried; /* a poller's result: the kernel will not say it again */
		c->rx_carried = 0;
		sr_iw_rx_owner_set_locked(c, SR_IW_RXO_ENDED);
		return r;
	default:
		break;
	}
	if (events & EPOLLOUT)
		sr_iw_tx_progress(c);
	if ((events & (EPOLLHUP | EPOLLERR)) && c->rx_state == SR_IW_RXS_HELD) {
		/* A Send waits for a receive but the stream is gone (reset, or shut down both
		 * ways): the Send can never be delivered, and a level-triggered hangup would
		 * keep calling us. */
		sr_iw_rx_owner_set_locked(c, SR_IW_RXO_ENDED);
		return SR_IW_RX_HUP_HELD;
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		/* the engine reads now: a poller's lease ends (a hang-up reaches us anyway) */
		if (c->rx_owner == SR_IW_RXO_POLLED)
			sr_iw_rx_owner_set_locked(c, SR_IW_RXO_ENGINE);
		r = sr_iw_rx(c);
		if (r)
			sr_iw_rx_owner_set_locked(c, SR_IW_RXO_ENDED);
	}
	return r;
}

static void sr_iw_ready(struct sr_engine_handler *h, uint32_t events)
{
	struct sr_iw_conn *c = sr_container_of(h, struct sr_iw_conn, h);
	int r;

	pthread_mutex_lock(&c->rx_lock);
	r = sr_iw_ready_rx_locked(c, events);
	pthread_mutex_unlock(&c->rx_lock);
	/* Closing may destroy the QP (cb.closed), so it runs without rx_lock. */
	if (r == SR_IW_RX_TERMINATING) {
		sr_iw_terminating_ready(c, events);
		return;
	}
	if (r == SR_IW_RX_HUP_HELD) {
		sr_iw_conn_close(c, -ECONNRESET);
		return;
	}
	if (r == SR_IW_RX_CUT) {
		sr_iw_close_dropping_input(c);
		return;
	}
	if (r) {
		if (r == SR_IW_RX_EOF) {
			sr_iw_conn_close(c, sr_iw_answer_fin(c) ? 0 : -ECONNABORTED);
			return;
		}
		if (r == SR_IW_RX_RESET) {
			sr_iw_conn_close(c, sr_iw_reset_answers_fin(c) ? 0 : -ECONNRESET);
			return;
		}
		if (r < 0) {
			/* -EPROTO: we queued a Terminate; it goes out before the close. */
			if (r != -EPROTO || sr_iw_terminate_out(c))
				sr_iw_conn_close(c, r == -EPROTO ? -ECONNABORTED : r);
			return;
		}
	}
}

/*
 * A connection of the parent of a fork(), seen in the child: its socket is shared with the
 * parent, whose engine serves it. The child never writes, reads or shuts it down (that
 * would corrupt or end the parent's stream); the verbs layer refuses the data path on it
 * (sr_ctx_inherited) and these entry points leave it alone.
 */
static bool sr_iw_inherited(const struct sr_iw_conn *c)
{
	return c->epoch != sr_engine_epoch();
}

/* End the stream abortively (conn_ops->fail_stream): the engine sees the end and closes.
 * Any thread, also under tx_lock or rx_lock. */
static void sr_iw_conn_fail(struct sr_iw_conn *c)
{
	if (sr_iw_inherited(c))
		return;
	pthread_mutex_lock(&sr_iw_fd_lock);
	sr_iw_ask_end_locked(c, true);
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR); /* the engine sees the end and closes */
	pthread_mutex_unlock(&sr_iw_fd_lock);
}

static void sr_iw_sq_kick(struct sr_qp *qp)
{
	struct sr_iw_conn *c = qp->xport;

	if (c && !sr_iw_inherited(c))
		sr_iw_tx_progress(c);
}

/* A completion in error moved the QP to ERR: end the stream now. Safe under tx_lock and
 * rx_lock (sr_sq_complete calls it from both sides). */
static void sr_iw_abort(struct sr_qp *qp)
{
	struct sr_iw_conn *c = qp->xport;

	if (c)
		sr_iw_conn_fail(c);
}

/*
 * The application moved the QP to ERR and is about to flush its receives and Reads: once we
 * return, not a byte more is placed for the QP (docs/ARCHITECTURE.md, "Progress in the
 * application's thread"). A shutdown alone would not do: the socket still holds what the
 * peer sent (megabytes), and a receive pass would go on reading and placing it into buffers
 * whose flush the application has seen. So the input is taken from whoever owns it first,
 * under rx_lock, which also waits for a pass in progress (the engine thread's or a poller's,
 * each bounded by its budget): it is handed back to the engine thread with SR_IW_RX_CUT,
 * which no pass reads past, and the engine closes without another read. Then the stream is
 * cut as by an abort. Never called under the transport's locks (xops->stop).
 */
static void sr_iw_stop(struct sr_qp *qp)
{
	struct sr_iw_conn *c = qp->xport;

	if (!c || sr_iw_inherited(c))
		return;
	pthread_mutex_lock(&c->rx_lock);
	if (c->rx_owner == SR_IW_RXO_ENGINE || c->rx_owner == SR_IW_RXO_POLLED) {
		c->rx_carried = SR_IW_RX_CUT;
		sr_iw_rx_owner_set_locked(c, SR_IW_RXO_HANDBACK);
		sr_engine_timer_arm_us(&c->lease_t, 0); /* the engine takes it now */
	}
	pthread_mutex_unlock(&c->rx_lock);
	sr_iw_conn_fail(c);
}

static void sr_iw_detach(struct sr_qp *qp)
{
	struct sr_iw_conn *c = qp->xport;

	if (!c)
		return;
	if (sr_iw_inherited(c)) {
		/* Only the child's reference to the parent's socket goes; the rest of the copy
		 * (locks perhaps held by the parent's threads at the fork) is left alone. */
		close(c->fd);
		qp->xport = NULL;
		qp->xops = NULL;
		return;
	}
	/*
	 * Destroying a QP with a live stream ends it. The engine callback is stopped first
	 * (sr_engine_del waits for a running one), so only this thread closes. The CM is not
	 * called back from here: it is the one destroying the QP.
	 */
	sr_engine_del(&c->h);
	sr_engine_timer_cancel(&c->rnr_t); /* it would call the handler just removed */
	sr_engine_timer_cancel(&c->close_t); /* it would close what we are about to */
	sr_engine_timer_cancel(&c->lease_t); /* it would call the handler too */
	pthread_mutex_lock(&sr_iw_fd_lock);
	if (c->life == SR_IW_LIFE_CLOSING && sr_engine_in_thread()) {
		/* From inside our own closed callback: the close frees c when it returns. */
		sr_iw_life_set_locked(c, SR_IW_LIFE_CLOSING_FREE);
		pthread_mutex_unlock(&sr_iw_fd_lock);
		qp->xport = NULL;
		qp->xops = NULL;
		return;
	}
	/* The engine thread may be closing the stream by itself: let it finish first. */
	while (c->life == SR_IW_LIFE_CLOSING)
		pthread_cond_wait(&sr_iw_close_cv, &sr_iw_fd_lock);
	c->cb.closed = NULL; /* the CM is the one destroying: no callback from now on */
	pthread_mutex_unlock(&sr_iw_fd_lock);
	sr_iw_conn_end(c, -ECONNABORTED, true); /* nothing if already closed */
	qp->xport = NULL;
	qp->xops = NULL;
	sr_iw_conn_free(c);
}

/* What iwarp_poll.c, iwarp_rx.c and iwarp_tx.c call up for (iwarp.h). */
static const struct sr_iw_conn_ops sr_iw_conn_ops = {
	.fail_stream = sr_iw_conn_fail,
	.disconnect_asked = sr_iw_conn_disconnect_asked,
};

static const struct sr_xport_ops sr_iw_xops = {
	.sq_kick = sr_iw_sq_kick,
	.abort = sr_iw_abort,
	.stop = sr_iw_stop,
	.detach = sr_iw_detach,
	.rq_kick = sr_iw_rx_kick,
	.poll = sr_iw_poll,
	.poll_release = sr_iw_poll_release,
};

static int sr_iw_attach(struct ibv_qp *ibqp, const struct sr_xport_attach *a)
{
	const struct sr_iwarp_attach_params *p = &a->u.iwarp;
	struct sr_qp *qp = to_sr_qp(ibqp);
	struct sr_iw_conn *c;
	int one = 1, fl, err;

	if (a->kind != SR_XPORT_IWARP)
		return -EINVAL;
	if (qp->xport)
		return -EBUSY;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->epoch = sr_engine_epoch();
	c->qp = qp;
	c->conn_ops = &sr_iw_conn_ops;
	c->fd = p->fd;
	c->initiator = p->initiator;
	c->mpa = p->mpa;
	c->cb = a->cb;
	c->close_t.cb = sr_iw_close_expired;
	pthread_mutex_init(&c->tx_lock, NULL);
	sr_fpdu_rx_init(&c->rx, p->mpa.crc);
	sr_iw_rx_init(c);
	sr_iw_poll_init(c);
	if (!p->tuned) {
		fl = fcntl(c->fd, F_GETFL);
		fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	c->h.fd = c->fd;
	c->h.cb = sr_iw_ready;
	err = sr_iw_tx_gate_init(c, p->ready_ms);
	if (err) {
		sr_iw_conn_free(c);
		return err;
	}
	sr_qp_attach_xport(qp, &sr_iw_xops, c);
	err = sr_engine_add(&c->h, EPOLLIN | EPOLLRDHUP);
	if (err) {
		sr_qp_attach_xport(qp, NULL, NULL);
		sr_iw_ready_timer_stop(c);
		sr_iw_conn_free(c);
		return err;
	}
	/* The initiator speaks first: its RTR now; what the application already posted once
	 * the peer is ready. */
	sr_iw_tx_progress(c);
	return 0;
}

static void sr_iw_disconnect(struct ibv_qp *ibqp)
{
	struct sr_qp *qp = to_sr_qp(ibqp);
	struct sr_iw_conn *c = qp->xport;

	if (!c || sr_iw_inherited(c))
		return;
	pthread_mutex_lock(&c->tx_lock);
	pthread_mutex_lock(&sr_iw_fd_lock);
	sr_iw_ask_end_locked(c, false);
	pthread_mutex_unlock(&sr_iw_fd_lock);
	if (c->tx_end == SR_IW_TXE_OPEN)
		sr_iw_tx_end_set(c, SR_IW_TXE_FIN_QUEUED);
	sr_iw_tx_progress_locked(c);
	pthread_mutex_unlock(&c->tx_lock);
	/* A Send held for a receive gets none now: let the receive side give up on it. */
	sr_engine_timer_arm(&c->rnr_t, 0);
	/*
	 * Queued sends, our FIN and the peer's FIN, but not for ever: a peer that stops reading
	 * (holding our send queue, as a receiver-not-ready hold does) or never sends its FIN
	 * gets the stream aborted at the bound, and the flush and DISCONNECTED follow.
	 */
	if (sr_engine_timer_arm(&c->close_t, sr_config_ms("SOFTRDMA_CLOSE_TIMEOUT_MS",
							  SR_IW_CLOSE_TIMEOUT_MS)))
		sr_iw_conn_fail(c); /* no timer to bound the wait: end it now */
}

/* Registered at load, before any thread: devices of kind SR_XPORT_IWARP use it. */
__attribute__((constructor)) static void sr_iw_register(void)
{
	static const struct sr_xport_desc d = {
		.kind = SR_XPORT_IWARP,
		.attach = sr_iw_attach,
		.disconnect = sr_iw_disconnect,
	};

	sr_xport_register(&d);
}
