// SPDX-License-Identifier: MIT
/*
 * Receive: drive the FPDU parser from the socket. One recvmsg() fills a staging buffer with
 * as many FPDUs as the socket holds; the parser takes them from there, headers into its own
 * small buffers and payload copied to its destination (the MR named by a tagged STag, the
 * posted receive buffer, or the sink of our Read Request) once the header has been checked
 * against the STag, bounds, access rights and protection domain. The rest of a large payload
 * is received straight into its destination instead, no copy. Runs on the engine thread or in a
 * thread polling a CQ of the QP (iwarp_poll.c), under rx_lock: one caller at a time.
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include "common/sr_dma.h"
#include "common/sr_log.h"
#include "transport/iwarp.h"

/* Per call, so that one busy connection cannot starve the others. */
#define SR_IW_RX_BUDGET (4u << 20)
/*
 * Staging buffer: one recvmsg() reads this much at most (docs/PERFORMANCE.md, "Staged
 * receive"). A payload remainder of at least SR_IW_RX_DIRECT_MIN bytes skips it and is
 * received in place: there a second copy would cost more than the recvmsg() it saves.
 */
#define SR_IW_RX_STAGE      65536u
#define SR_IW_RX_DIRECT_MIN 16384u
/* Staged behind a direct read besides the trailer and the shortest header: the rest of an
 * untagged header, so a large Send's next FPDU needs no read of its own for it. */
#define SR_IW_RX_LA_EXTRA (SR_FPDU_HDR_UNTAGGED - SR_FPDU_HDR_MIN)

static enum sr_iw_err sr_iw_tagged_err(enum sr_access_result r)
{
	switch (r) {
	case SR_ACC_BOUNDS:
		return SR_IW_ERR_DDP_T_BOUNDS;
	case SR_ACC_PD:
		return SR_IW_ERR_DDP_T_NOT_ASSOC;
	case SR_ACC_RIGHTS:
		return SR_IW_ERR_RDMAP_ACCESS;
	default:
		return SR_IW_ERR_DDP_T_STAG;
	}
}

static enum sr_iw_err sr_iw_rdmap_err(enum sr_access_result r)
{
	switch (r) {
	case SR_ACC_BOUNDS:
		return SR_IW_ERR_RDMAP_BOUNDS;
	case SR_ACC_PD:
		return SR_IW_ERR_RDMAP_NOT_ASSOC;
	case SR_ACC_RIGHTS:
		return SR_IW_ERR_RDMAP_ACCESS;
	default:
		return SR_IW_ERR_RDMAP_STAG;
	}
}

/* Internal result of the header checks: the Send waits for a receive (receiver not ready). */
#define SR_IW_RX_HOLD 3

#ifndef NDEBUG
/* The transitions of enum sr_iw_rx_state (iwarp.h). */
static bool sr_iw_rx_state_legal(enum sr_iw_rx_state from, enum sr_iw_rx_state to)
{
	switch (from) {
	case SR_IW_RXS_READING:
		return to == SR_IW_RXS_HELD || to == SR_IW_RXS_TERMINATING;
	case SR_IW_RXS_HELD:
		return to == SR_IW_RXS_READING;
	default:
		return false;
	}
}
#endif

void sr_iw_rx_state_set_locked(struct sr_iw_conn *c, enum sr_iw_rx_state to)
{
	sr_assert_held(&c->tx_lock);
	assert(sr_iw_rx_state_legal(c->rx_state, to));
	c->rx_state = to;
}

/* Enter or leave the held state and tell the engine what we want from the socket. */
static void sr_iw_rx_set_state(struct sr_iw_conn *c, enum sr_iw_rx_state st)
{
	pthread_mutex_lock(&c->tx_lock);
	sr_iw_rx_state_set_locked(c, st);
	sr_iw_interest_sync_locked(c);
	pthread_mutex_unlock(&c->tx_lock);
}

/* The resume timer: run the receive side as if the socket were readable. */
static void sr_iw_rnr_fire(struct sr_engine_timer *t)
{
	struct sr_iw_conn *c = sr_container_of(t, struct sr_iw_conn, rnr_t);
	bool dead;

	pthread_mutex_lock(&c->tx_lock);
	dead = sr_iw_tx_ended(c) || c->rx_state != SR_IW_RXS_HELD; /* a poller writes it, under tx_lock */
	pthread_mutex_unlock(&c->tx_lock);
	if (!dead)
		c->h.cb(&c->h, EPOLLIN);
}

void sr_iw_rx_init(struct sr_iw_conn *c)
{
	c->rx_state = SR_IW_RXS_READING; /* the first state, not a transition */
	c->rnr_t.cb = sr_iw_rnr_fire;
}

void sr_iw_rx_kick(struct sr_qp *qp)
{
	struct sr_iw_conn *c = qp->xport;

	if (c)
		sr_engine_timer_arm(&c->rnr_t, 0);
}

/*
 * No receive for the Send whose header just came in (or is still held): hold it, or give up
 * when the QP allows no wait or the bound has run out (the parser then sends the Terminate).
 */
static int sr_iw_rx_hold(struct sr_iw_conn *c)
{
	uint64_t now = sr_mono_ns(), left_ms;
	bool disconnecting;

	/*
	 * Once this side disconnects no receive is coming, and the peer's FIN (our way out)
	 * queues behind the held Send: waiting would deadlock both. Give up as at the bound.
	 */
	disconnecting = sr_iw_disconnect_asked(c);
	if (disconnecting) {
		if (c->rx_state == SR_IW_RXS_HELD)
			sr_iw_rx_set_state(c, SR_IW_RXS_READING);
		return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_U_MSN_NOBUF);
	}
	if (c->rx_state != SR_IW_RXS_HELD) {
		uint64_t bound_us = sr_qp_rnr_bound_us(c->qp);

		if (bound_us == 0) /* rnr_retry 0: no wait, as iWARP has always done */
			return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_U_MSN_NOBUF);
		c->rx_rnr_deadline = bound_us == SR_RNR_FOREVER ? UINT64_MAX :
								  now + bound_us * 1000u;
		sr_dbg("qp %u: Send without a posted receive: holding the stream",
		       c->qp->ibqp.qp_num);
		sr_iw_rx_set_state(c, SR_IW_RXS_HELD);
	} else if (now >= c->rx_rnr_deadline) {
		sr_dbg("qp %u: no receive posted within the RNR bound", c->qp->ibqp.qp_num);
		sr_iw_rx_set_state(c, SR_IW_RXS_READING);
		return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_U_MSN_NOBUF);
	}
	/* A post to the own RQ kicks the timer at once (sr_iw_rx_kick); an SRQ is looked at
	 * periodically. Either way the timer also ends the wait at the deadline. */
	left_ms = c->rx_rnr_deadline == UINT64_MAX ? UINT64_MAX :
						    (c->rx_rnr_deadline - now + 999999u) / 1000000u;
	if (c->qp->srq && left_ms > SR_IW_RNR_SRQ_POLL_MS)
		left_ms = SR_IW_RNR_SRQ_POLL_MS;
	if (left_ms != UINT64_MAX)
		sr_engine_timer_arm(&c->rnr_t, (unsigned int)SR_MIN(left_ms, (uint64_t)UINT32_MAX));
	return SR_IW_RX_HOLD;
}

/* The header of a Send segment is in: find its receive, or hold; check it fits. */
static int sr_iw_on_send_hdr(struct sr_iw_conn *c)
{
	struct sr_ddp_seg *s = &c->rx.seg;
	enum sr_access_result r;

	/*
	 * A receive per message, taken by its first segment. Not "MO == 0": a message may open
	 * with zero-length segments that all sit at MO 0 (the parser tracks where messages
	 * begin), and each would take, and lose, another receive.
	 */
	if (s->first) {
		struct sr_recv_wqe *w = sr_rq_take(c->qp);

		if (!w)
			return sr_iw_rx_hold(c);
		if (c->rx_state == SR_IW_RXS_HELD) {
			sr_engine_timer_cancel(&c->rnr_t);
			sr_iw_rx_set_state(c, SR_IW_RXS_READING);
		}
		c->rx_rwqe = w;
		r = sr_iw_buf_init(&c->rx_rbuf, c->qp->pd, w->sge, w->num_sge,
				   IBV_ACCESS_LOCAL_WRITE);
		if (r != SR_ACC_OK) {
			c->rx_rwqe = NULL;
			sr_rq_complete(c->qp, w, IBV_WC_LOC_PROT_ERR, 0, 0, 0, false);
			return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_CATA);
		}
	}
	if (!c->rx_rwqe)
		return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_U_MO);
	if ((uint64_t)s->mo + s->payload_len > c->rx_rbuf.total)
		return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_U_TOO_LONG);
	return 0;
}

/* The header of a segment is in: decide where its payload goes, or refuse it. */
static int sr_iw_on_hdr(struct sr_iw_conn *c)
{
	struct sr_ddp_seg *s = &c->rx.seg;
	struct sr_mr *mr = NULL;
	enum sr_access_result r;

	c->rx_dst = NULL;
	c->rx_discard = false;
	switch (s->opcode) {
	case SR_RDMAP_OP_WRITE:
		if (!s->payload_len) {
			/* Zero-length Writes (the RTR among them, STag 1) touch no memory. */
			c->rx_discard = true;
			return 0;
		}
		/* The QP must allow remote writes as well as the region (RFC 5040 §6.4). */
		if (!(c->qp->access & IBV_ACCESS_REMOTE_WRITE))
			return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_RDMAP_ACCESS);
		r = sr_mr_resolve(s->stag, c->qp->pd, s->to, s->payload_len,
				  IBV_ACCESS_REMOTE_WRITE, &mr, &c->rx_dst);
		if (r != SR_ACC_OK)
			return sr_fpdu_rx_fail(&c->rx, sr_iw_tagged_err(r));
		/* The region cannot go away while we place into it: the reference is held
		 * until the segment ends (sr_mr_put in sr_iw_on_seg). */
		c->rx_wmr = mr;
		return 0;
	case SR_RDMAP_OP_READ_RESP: {
		struct sr_iw_rreq *q = NULL;
		uint64_t off;

		pthread_mutex_lock(&c->tx_lock);
		if (c->rreq_count)
			q = &c->rreq[c->rreq_head];
		pthread_mutex_unlock(&c->tx_lock);
		if (!q || s->stag != q->sink_stag)
			return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_T_STAG);
		off = s->to - q->sink_to;
		if (s->to < q->sink_to || off > q->len || s->payload_len > q->len - off)
			return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_T_BOUNDS);
		c->rx_read = q;
		return 0;
	}
	case SR_RDMAP_OP_SEND:
	case SR_RDMAP_OP_SEND_INV:
	case SR_RDMAP_OP_SEND_SE:
	case SR_RDMAP_OP_SEND_SE_INV:
		return sr_iw_on_send_hdr(c);
	default:
		return 0; /* Read Request and Terminate carry no payload to place */
	}
}

/* Destination of the next payload bytes of the current segment, how many fit there and the
 * region they belong to. */
static uint8_t *sr_iw_payload_dst(struct sr_iw_conn *c, uint32_t seg_off, uint64_t *contig,
				  struct sr_mr **mr)
{
	struct sr_ddp_seg *s = &c->rx.seg;

	switch (s->opcode) {
	case SR_RDMAP_OP_WRITE:
		*contig = s->payload_len - seg_off;
		*mr = c->rx_wmr;
		return c->rx_dst + seg_off;
	case SR_RDMAP_OP_READ_RESP:
		return sr_iw_buf_at(&c->rx_read->sink, s->to - c->rx_read->sink_to + seg_off, contig,
				    mr);
	default:
		return sr_iw_buf_at(&c->rx_rbuf, (uint64_t)s->mo + seg_off, contig, mr);
	}
}

/*
 * The region the current segment's payload goes to was deregistered after its header had
 * been accepted: not another byte goes there. The rest of the payload is never read (the
 * stream ends with the Terminate the parser now owes), and a local buffer's work request
 * completes in error. A Write's target answers as an STag that is no longer valid would
 * have: DDP tagged buffer error, invalid STag. Our own buffer (a receive, a Read sink) going
 * away under a transfer is a local error: DDP local catastrophic.
 */
static void sr_iw_rx_revoked(struct sr_iw_conn *c)
{
	struct sr_ddp_seg *s = &c->rx.seg;

	sr_dbg("qp %u: region deregistered during placement", c->qp->ibqp.qp_num);
	switch (s->opcode) {
	case SR_RDMAP_OP_WRITE:
		sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_T_STAG);
		return;
	case SR_RDMAP_OP_READ_RESP:
		if (c->rx_read->wqe) {
			sr_sq_complete(c->qp, c->rx_read->wqe, IBV_WC_LOC_PROT_ERR);
			c->rx_read->wqe = NULL;
		}
		break;
	default:
		sr_iw_buf_release(&c->rx_rbuf);
		sr_rq_complete(c->qp, c->rx_rwqe, IBV_WC_LOC_PROT_ERR, 0, 0, 0, false);
		c->rx_rwqe = NULL;
		break;
	}
	sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_CATA);
}

static enum ibv_wc_status sr_iw_term_status(const struct sr_term_info *t)
{
	/* RDMAP/DDP protection errors are the peer refusing our access. */
	switch (t->cause.layer) {
	case SR_TERM_LAYER_RDMAP:
		return t->cause.etype == SR_TERM_RDMAP_ETYPE_PROTECTION ? IBV_WC_REM_ACCESS_ERR :
								     IBV_WC_REM_OP_ERR;
	case SR_TERM_LAYER_DDP:
		return t->cause.etype == SR_TERM_DDP_ETYPE_TAGGED ? IBV_WC_REM_ACCESS_ERR :
								     IBV_WC_REM_OP_ERR;
	default:
		return IBV_WC_REM_OP_ERR;
	}
}

/* Bytes read into the staging buffer that the parser has not taken yet. */
static size_t sr_iw_rx_staged(const struct sr_iw_conn *c)
{
	return c->rx_st_len - c->rx_st_pos;
}

/*
 * A Read Request or Response came in: the transmit side has something to do (a Response to
 * send, or a Read that waited for ORD). With more FPDUs staged behind it, that waits until
 * they are parsed (sr_iw_rx_tx_flush): a window of Requests parsed from one recvmsg() then
 * gets its Responses in one batch, and a window of Responses lets the waiting Reads go out
 * together.
 */
static void sr_iw_rx_tx_due(struct sr_iw_conn *c)
{
	if (sr_iw_rx_staged(c))
		c->rx_tx_due = true;
	else
		sr_iw_tx_progress(c);
}

/* What sr_iw_rx_tx_due held back, now that the staged bytes are parsed (or parsing stops). */
static void sr_iw_rx_tx_flush(struct sr_iw_conn *c)
{
	if (c->rx_tx_due) {
		c->rx_tx_due = false;
		sr_iw_tx_progress(c);
	}
}

/* A whole segment has arrived and its CRC is good: act on it. */
static int sr_iw_on_seg(struct sr_iw_conn *c)
{
	struct sr_ddp_seg *s = &c->rx.seg;

	if (!c->rx_first_seen) {
		/* The initiator spoke first (we are the responder), or the peer answered our
		 * RTR or sent anything at all: either way it processes FPDUs, we may talk. */
		c->rx_first_seen = true;
		sr_iw_ready_timer_stop(c);
		sr_iw_tx_open_gate(c);
	}
	switch (s->opcode) {
	case SR_RDMAP_OP_WRITE:
		if (c->rx_wmr)
			sr_mr_put(c->rx_wmr);
		c->rx_wmr = NULL;
		return 0;
	case SR_RDMAP_OP_READ_RESP: {
		struct sr_iw_rreq *q = c->rx_read;
		struct sr_send_wqe *w;

		q->placed += s->payload_len;
		if (!s->last)
			return 0;
		if (q->placed != q->len)
			return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_T_BOUNDS);
		w = q->wqe;
		sr_iw_buf_release(&q->sink);
		pthread_mutex_lock(&c->tx_lock);
		c->rreq_head = (c->rreq_head + 1) % c->rreq_cap;
		c->rreq_count--;
		pthread_mutex_unlock(&c->tx_lock);
		c->rx_read = NULL;
		if (w)
			sr_sq_complete(c->qp, w, IBV_WC_SUCCESS);
		sr_iw_rx_tx_due(c); /* an ORD slot freed / a fence may lift */
		return 0;
	}
	case SR_RDMAP_OP_SEND:
	case SR_RDMAP_OP_SEND_INV:
	case SR_RDMAP_OP_SEND_SE:
	case SR_RDMAP_OP_SEND_SE_INV: {
		bool inv = s->opcode == SR_RDMAP_OP_SEND_INV || s->opcode == SR_RDMAP_OP_SEND_SE_INV;
		bool se = s->opcode == SR_RDMAP_OP_SEND_SE || s->opcode == SR_RDMAP_OP_SEND_SE_INV;
		struct sr_recv_wqe *w = c->rx_rwqe;
		uint32_t len = s->mo + s->payload_len;

		if (!s->last)
			return 0;
		sr_iw_buf_release(&c->rx_rbuf);
		c->rx_rwqe = NULL;
		if (inv) {
			/*
			 * Only memory windows and fast-registered MRs may be invalidated by a
			 * peer, and we offer neither: a plain MR stays valid until the
			 * application deregisters it. Refused without looking the STag up, so
			 * the answer says nothing about which STags exist: "STag cannot be
			 * invalidated", remote operation error (siw uses the protection EType
			 * only for a PD mismatch), and the receive completes in error.
			 */
			sr_rq_complete(c->qp, w, IBV_WC_REM_INV_REQ_ERR, len, 0, 0, se);
			return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_RDMAP_INV_OP);
		}
		sr_iw_tx_settle(c); /* our Sends it may answer complete first */
		sr_rq_complete(c->qp, w, IBV_WC_SUCCESS, len, 0, 0, se);
		return 0;
	}
	case SR_RDMAP_OP_READ_REQ: {
		struct sr_iw_rresp resp = {
			.sink_stag = s->rreq.sink_stag,
			.sink_to = s->rreq.sink_to,
			.len = s->rreq.size,
		};
		uint32_t ird = c->mpa.ird ? c->mpa.ird : 1;

		if (resp.len && !(c->qp->access & IBV_ACCESS_REMOTE_READ))
			return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_RDMAP_ACCESS);
		if (resp.len) {
			enum sr_access_result r = sr_mr_resolve(s->rreq.src_stag, c->qp->pd,
								s->rreq.src_to, resp.len,
								IBV_ACCESS_REMOTE_READ, &resp.mr,
								&resp.src);

			if (r != SR_ACC_OK)
				return sr_fpdu_rx_fail(&c->rx, sr_iw_rdmap_err(r));
		}
		pthread_mutex_lock(&c->tx_lock);
		if (!c->resp) {
			c->resp_cap = SR_MIN(ird, (uint32_t)SR_MAX_QP_RD_ATOM);
			c->resp = calloc(c->resp_cap, sizeof(*c->resp));
		}
		if (!c->resp || c->resp_count >= ird || c->resp_count >= c->resp_cap) {
			pthread_mutex_unlock(&c->tx_lock);
			if (resp.mr)
				sr_mr_put(resp.mr);
			/* More Read Requests than our IRD, siw's answer (docs/WIRE.md §3.5);
			 * the same when there is no memory for the ring. */
			return sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_RDMAP_CATA_STREAM);
		}
		c->resp[(c->resp_head + c->resp_count) % c->resp_cap] = resp;
		c->resp_count++;
		pthread_mutex_unlock(&c->tx_lock);
		sr_iw_rx_tx_due(c);
		return 0;
	}
	case SR_RDMAP_OP_TERMINATE: {
		enum ibv_wc_status st = sr_iw_term_status(&s->term);

		sr_dbg("qp %u: peer sent Terminate layer %u etype %u code 0x%x",
		       c->qp->ibqp.qp_num, s->term.cause.layer, s->term.cause.etype,
		       s->term.cause.ecode);
		/*
		 * The oldest request still in flight carries the peer's verdict. A refused Write
		 * or Send has usually completed locally already (iWARP completes them once sent),
		 * so the verdict also goes out as an affiliated async event, as RNICs report it.
		 */
		pthread_mutex_lock(&c->tx_lock);
		sr_iw_tx_kill_locked(c);
		pthread_mutex_unlock(&c->tx_lock);
		sr_sq_fail_oldest(c->qp, st);
		sr_qp_async_event(c->qp, st == IBV_WC_REM_ACCESS_ERR ? IBV_EVENT_QP_ACCESS_ERR :
								     IBV_EVENT_QP_FATAL);
		return -ECONNRESET;
	}
	default:
		return 0;
	}
}

/* Send the Terminate the parser's failure calls for. */
static void sr_iw_rx_terminate(struct sr_iw_conn *c)
{
	struct sr_term_info t;

	sr_fpdu_rx_term(&c->rx, &t);
	sr_dbg("qp %u: stream error %s: sending Terminate", c->qp->ibqp.qp_num,
	       sr_iw_err_str(c->rx.err));
	sr_iw_queue_terminate(c, &t);
}

/*
 * Copy staged payload to its destination with the last byte stored last. An application may
 * poll the last byte of a Write's target for its arrival (ib_write_lat, the eager-RDMA
 * protocols of MPI libraries) and then read the rest; NICs place a message in address order.
 * memcpy() does not: for a few KiB glibc stores the head of the buffer after its tail.
 * Chunks are placed one after another, so each chunk's last byte being last makes the
 * message's last byte last (docs/ARCHITECTURE.md, "Placement order").
 */
static void sr_iw_rx_place(uint8_t *to, const uint8_t *from, size_t n)
{
	if (!n)
		return;
	memcpy(to, from, n - 1);
	atomic_thread_fence(memory_order_release);
	*(volatile uint8_t *)(to + n - 1) = from[n - 1];
}

/*
 * One recvmsg(): straight into `dst` (at most `len` bytes, the rest of a large payload) with
 * up to `st_len` bytes after it into the staging buffer, or with `dst` NULL only into the
 * staging buffer. Only called with nothing staged. Returns what recvmsg() returned; bytes
 * beyond `len` are left staged. *drained: it returned less than asked, the socket is empty.
 */
static ssize_t sr_iw_rx_recv(struct sr_iw_conn *c, void *dst, size_t len, size_t st_len,
			     bool *drained)
{
	struct iovec iov[2], *st = iov;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 1 };
	ssize_t n;

	if (!c->rx_st && !(c->rx_st = malloc(SR_IW_RX_STAGE))) {
		errno = ENOMEM;
		return -1;
	}
	if (dst) {
		iov[0] = (struct iovec){ .iov_base = dst, .iov_len = len };
		st = &iov[1];
		m.msg_iovlen = st_len ? 2 : 1;
	} else {
		len = 0;
	}
	*st = (struct iovec){ .iov_base = c->rx_st, .iov_len = SR_MIN(st_len, SR_IW_RX_STAGE) };
	n = recvmsg(c->fd, &m, MSG_DONTWAIT);
	*drained = n >= 0 && (size_t)n < len + st->iov_len;
	c->rx_st_pos = 0;
	c->rx_st_len = n > (ssize_t)len ? (uint32_t)((size_t)n - len) : 0;
	c->rx_after_direct = dst != NULL;
	return n;
}

/*
 * How much a read into staging asks for: all the buffer holds, except right after a large
 * payload was read in place. The stream then likely goes on with large FPDUs (the next
 * message of a large transfer behind the short last segment of this one): read only to
 * the next header, so that the next large payload is read in place too, not copied.
 */
static size_t sr_iw_rx_stage_len(const struct sr_iw_conn *c)
{
	if (!c->rx_after_direct)
		return SR_IW_RX_STAGE;
	return SR_MIN(sr_fpdu_rx_fpdu_rest(&c->rx), (size_t)SR_IW_RX_DIRECT_MIN) +
	       SR_FPDU_HDR_UNTAGGED;
}

/*
 * Leaving sr_iw_rx: transmit what parsing held back, and give the staging buffer back once
 * it holds nothing (an idle connection keeps none).
 */
static int sr_iw_rx_out(struct sr_iw_conn *c, int ret)
{
	sr_iw_rx_tx_flush(c);
	if (c->rx_st && !sr_iw_rx_staged(c)) {
		free(c->rx_st);
		c->rx_st = NULL;
		c->rx_st_pos = c->rx_st_len = 0;
	}
	return ret;
}

/*
 * recvmsg() returned n <= 0 with the parser wanting `need`: -EINTR to try again, 0 to wait
 * for the socket, else sr_iw_rx's answer for the end of the stream.
 */
static int sr_iw_rx_short(struct sr_iw_conn *c, ssize_t n, const struct sr_fpdu_rx_need *need)
{
	bool between = need->stage == SR_FPDU_RX_HDR && c->rx.hdr_have == 0;

	if (n == 0) {
		/* EOF between FPDUs is an orderly close; inside one it is not. */
		if (between)
			return SR_IW_RX_EOF;
		/* The peer only half-closed, maybe: tell it why the stream dies. */
		sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_MPA_TCP_LOST);
		sr_iw_rx_terminate(c);
		return -ECONNRESET;
	}
	if (errno == EINTR)
		return -EINTR;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	/* Everything before the reset was read: the caller decides what it means. */
	if (errno == ECONNRESET && between)
		return SR_IW_RX_RESET;
	return -errno;
}

/*
 * Read the stream, a staging buffer's worth per recvmsg(), and feed it to the parser in the
 * pieces it asks for: headers and trailers into its buffers, payload copied to its
 * destination. Only the rest of a large payload is read straight into its destination, with
 * the next FPDU's framing staged behind it in the same call.
 */
int sr_iw_rx(struct sr_iw_conn *c)
{
	size_t budget = SR_IW_RX_BUDGET;
	bool drained = false;

	/* A held Send: has its receive come (or its time run out)? Then go on, first with
	 * what is staged behind it. */
	if (c->rx_state == SR_IW_RXS_HELD && sr_iw_on_send_hdr(c) == SR_IW_RX_HOLD)
		return 0;

	/* Staged bytes are consumed even when the budget is spent: the socket may not become
	 * readable again to bring us back for them. */
	while (budget || sr_iw_rx_staged(c)) {
		struct sr_fpdu_rx_need need;
		uint8_t *dst = NULL, *to, *from;
		struct sr_mr *mr = NULL;
		size_t ask;
		ssize_t n;
		int r, err;

		if (!sr_iw_rx_staged(c))
			sr_iw_rx_tx_flush(c); /* before the next read, or before a Terminate */
		sr_fpdu_rx_need(&c->rx, &need);
		if (need.stage == SR_FPDU_RX_FAILED) {
			sr_iw_rx_terminate(c);
			return sr_iw_rx_out(c, -EPROTO);
		}
		/* A read came back short: the socket has nothing more now. Asking again would
		 * only draw EAGAIN; the level-triggered poll brings us back for what follows. */
		if (drained && !sr_iw_rx_staged(c))
			return sr_iw_rx_out(c, 0);
		ask = need.len;
		to = need.buf;
		if (need.stage == SR_FPDU_RX_PAYLOAD) {
			uint64_t contig = 0;

			dst = sr_iw_payload_dst(c, need.seg_off, &contig, &mr);
			if (!dst || !contig) { /* cannot happen after the header checks */
				sr_fpdu_rx_fail(&c->rx, SR_IW_ERR_DDP_CATA);
				continue;
			}
			if (ask > contig)
				ask = contig;
			to = dst;
		}
		if (!sr_iw_rx_staged(c) && !(dst && ask >= SR_IW_RX_DIRECT_MIN)) {
			n = sr_iw_rx_recv(c, NULL, 0, sr_iw_rx_stage_len(c), &drained);
			if (n <= 0) {
				r = sr_iw_rx_short(c, n, &need);
				if (r == -EINTR)
					continue;
				return sr_iw_rx_out(c, r);
			}
			budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
		}
		/* The region may have been deregistered since the header was checked: hold it
		 * for this one copy or non-blocking read (sr_mr_enter). */
		if (mr && !sr_mr_enter(mr)) {
			sr_iw_rx_revoked(c);
			continue;
		}
		if (dst)
			sr_dma_write_begin(); /* payload into registered memory */
		if (sr_iw_rx_staged(c)) {
			n = (ssize_t)SR_MIN(ask, sr_iw_rx_staged(c));
			from = c->rx_st + c->rx_st_pos;
			sr_iw_rx_place(to, from, (size_t)n);
			c->rx_st_pos += (uint32_t)n;
		} else {
			/* The rest of this payload (not cut short by an SGE boundary) is followed
			 * by its trailer and the next header: stage them with it, and its last
			 * byte too, which the next turn places after the kernel's copy of the
			 * others (sr_iw_rx_place). */
			bool whole = ask == need.len;

			n = sr_iw_rx_recv(c, dst, whole ? ask - 1 : ask,
					  whole ? 1 + sr_fpdu_rx_lookahead(&c->rx) + SR_IW_RX_LA_EXTRA : 0,
					  &drained);
			from = dst;
			if (n > 0)
				budget = (size_t)n >= budget ? 0 : budget - (size_t)n;
			if (n > (ssize_t)ask - whole)
				n = (ssize_t)ask - whole;
		}
		/*
		 * The CRC runs over the bytes as read: in staging, or where they were placed.
		 * Placed in the region, they are read still inside its bracket: once we leave,
		 * ibv_dereg_mr may return and the application unmap the buffer (docs/SECURITY.md).
		 */
		err = errno;
		if (n > 0)
			r = sr_fpdu_rx_advance(&c->rx, (size_t)n, from);
		if (dst)
			sr_dma_write_end();
		if (mr)
			sr_mr_leave(mr);
		errno = err;
		if (n <= 0) {
			r = sr_iw_rx_short(c, n, &need);
			if (r == -EINTR)
				continue;
			return sr_iw_rx_out(c, r);
		}
		if (r == SR_FPDU_RX_HDR_DONE)
			r = sr_iw_on_hdr(c);
		else if (r == SR_FPDU_RX_SEG_DONE)
			r = sr_iw_on_seg(c);
		if (r == SR_IW_RX_HOLD)
			return sr_iw_rx_out(c, 0); /* nothing more until the receive is posted */
		if (r == -ECONNRESET)
			return sr_iw_rx_out(c, r); /* the peer terminated */
		/* other failures leave the parser FAILED: the next turn sends our Terminate */
	}
	return sr_iw_rx_out(c, 0);
}
