// SPDX-License-Identifier: MIT
/*
 * Transmit: cut Sends, RDMA Writes, Read Requests and Read Responses into FPDUs no larger
 * than the socket's current MSS allows, and write them with sendmsg() whose iovecs point at
 * the headers, the registered memory and the trailers (several FPDUs of one message per
 * call, or several small messages copied into the batch). Non-blocking: when the socket
 * is full the engine resumes on EPOLLOUT. Also here: the gate (enum sr_iw_tx_gate), with the
 * timers that bound it, and the socket's epoll interest, which both sides change.
 */
#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "common/sr_dma.h"
#include "common/sr_log.h"
#include "iwarp/crc32c.h"
#include "transport/iwarp.h"

/* Work done per call before yielding, so one connection cannot starve the others. */
#define SR_IW_TX_BUDGET 256

#ifndef NDEBUG
/* The transitions of enum sr_iw_tx_end (iwarp.h), one row per state. */
static bool sr_iw_tx_end_legal(enum sr_iw_tx_end from, enum sr_iw_tx_end to)
{
	if (to == SR_IW_TXE_DEAD)
		return true;
	switch (from) {
	case SR_IW_TXE_OPEN:
		return to == SR_IW_TXE_FIN_QUEUED || to == SR_IW_TXE_FIN_SENT ||
		       to == SR_IW_TXE_TERM_QUEUED;
	case SR_IW_TXE_FIN_QUEUED:
		return to == SR_IW_TXE_FIN_SENT || to == SR_IW_TXE_TERM_QUEUED;
	case SR_IW_TXE_TERM_QUEUED:
		return to == SR_IW_TXE_TERM_SENT || to == SR_IW_TXE_FIN_SENT;
	case SR_IW_TXE_TERM_SENT:
		return to == SR_IW_TXE_TERM_FIN;
	default:
		return false;
	}
}
#endif

void sr_iw_tx_end_set(struct sr_iw_conn *c, enum sr_iw_tx_end to)
{
	assert(sr_iw_tx_end_legal(c->tx_end, to));
	c->tx_end = to;
}

#ifndef NDEBUG
/* The transitions of enum sr_iw_tx_gate (iwarp.h). */
static bool sr_iw_tx_gate_legal(enum sr_iw_tx_gate from, enum sr_iw_tx_gate to)
{
	switch (from) {
	case SR_IW_GATE_RTR:
		return to == SR_IW_GATE_PEER_READY;
	case SR_IW_GATE_PEER_READY:
	case SR_IW_GATE_PEER_FIRST:
		return to == SR_IW_GATE_OPEN;
	default:
		return false;
	}
}
#endif

/* tx_lock held: move tx_gate. */
static void sr_iw_tx_gate_set(struct sr_iw_conn *c, enum sr_iw_tx_gate to)
{
	assert(sr_iw_tx_gate_legal(c->tx_gate, to));
	c->tx_gate = to;
}

/* The events the engine is to wait for on the socket (tx_lock held). */
static uint32_t sr_iw_sock_events(const struct sr_iw_conn *c)
{
	/* A poller owns the input (or nobody reads any more): the engine is not woken for it. */
	bool engine = c->rx_owner == SR_IW_RXO_ENGINE || c->rx_owner == SR_IW_RXO_HANDBACK;
	uint32_t ev = c->rx_state == SR_IW_RXS_READING && engine ? EPOLLIN | EPOLLRDHUP : 0;

	return ev | (c->tx_want_out ? EPOLLOUT : 0);
}

void sr_iw_interest_sync_locked(struct sr_iw_conn *c)
{
	sr_assert_held(&c->tx_lock);
	if (!sr_iw_tx_ended(c) && c->h.registered)
		sr_engine_mod(&c->h, sr_iw_sock_events(c));
}

/* Arm or disarm interest in writability (tx_lock held). */
static void sr_iw_want_out(struct sr_iw_conn *c, bool on)
{
	if (c->tx_want_out == on || c->fd < 0 || !c->h.registered)
		return;
	c->tx_want_out = on;
	sr_engine_mod(&c->h, sr_iw_sock_events(c));
}

void sr_iw_tx_await_room_locked(struct sr_iw_conn *c)
{
	sr_assert_held(&c->tx_lock);
	c->tx_want_out = true;
	sr_engine_mod(&c->h, sr_iw_sock_events(c));
}

void sr_iw_tx_kill_locked(struct sr_iw_conn *c)
{
	sr_assert_held(&c->tx_lock);
	sr_iw_tx_end_set(c, SR_IW_TXE_DEAD);
}

void sr_iw_tx_fin_locked(struct sr_iw_conn *c)
{
	sr_assert_held(&c->tx_lock);
	shutdown(c->fd, SHUT_WR);
	if (c->tx_end == SR_IW_TXE_TERM_SENT)
		sr_iw_tx_end_set(c, SR_IW_TXE_TERM_FIN);
	else if (c->tx_end != SR_IW_TXE_DEAD)
		sr_iw_tx_end_set(c, SR_IW_TXE_FIN_SENT);
}

/*
 * FPDUs follow the connection's current MSS, which shrinks when the path MTU does. It is read
 * (one getsockopt) before every message that spans more than one FPDU, where the call is
 * spread over the FPDUs, and before every 64th small one, which only the old size would
 * split: after a shrink, at most 63 single-FPDU messages go out sized for the old MSS (TCP
 * splits them; nothing is lost).
 */
static void sr_iw_refresh_mss(struct sr_iw_conn *c, uint32_t msg_len)
{
	int mss = 0;
	socklen_t len = sizeof(mss);

	if (c->mulpdu && msg_len <= c->mulpdu && ++c->mss_age < 64)
		return;
	c->mss_age = 0;
	if (getsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) < 0 || mss <= 0)
		mss = 536; /* RFC 879 default: always safe */
	c->mulpdu = sr_mpa_mulpdu((uint32_t)mss);
}

/* Where the next FPDU of the batch puts its header. */
#define SR_IW_HDR(c) ((c)->fp->hdr[(c)->fp_n])
#define SR_IW_HDR_SIZE(c) sizeof((c)->fp->hdr[0])

/*
 * Append an FPDU to the batch: its header is in SR_IW_HDR(c)[0..hlen) and its `nio`
 * payload iovecs are already at fp_iov[fp_iovcnt + 1 ...].
 */
static void sr_iw_fpdu_seal(struct sr_iw_conn *c, size_t hlen, int nio, size_t plen)
{
	struct iovec *v = &c->fp->iov[c->fp_iovcnt];
	uint8_t *trl = c->fp->trl[c->fp_n];
	uint32_t crc = 0;
	size_t tlen;

	v[0].iov_base = SR_IW_HDR(c);
	v[0].iov_len = hlen;
	if (c->mpa.crc) {
		crc = sr_crc32c(0, v[0].iov_base, hlen);
		sr_dma_read_begin(); /* the payload: registered memory */
		for (int i = 1; i <= nio; i++)
			crc = sr_crc32c(crc, v[i].iov_base, v[i].iov_len);
		sr_dma_read_end();
	}
	tlen = sr_fpdu_put_trailer(trl, hlen - SR_MPA_LEN_SIZE + plen, crc, c->mpa.crc);
	v[nio + 1].iov_base = trl;
	v[nio + 1].iov_len = tlen;
	c->fp_iovcnt += nio + 2;
	c->fp_n++;
	c->fp_bytes += plen;
	c->fp_busy = true;
}

/*
 * Enter the regions the payload of the message in progress comes from (sr_mr_enter); false
 * when one of them has been deregistered: its bytes must not be read any more.
 */
static bool sr_iw_msg_enter(struct sr_iw_conn *c)
{
	if (c->kind == SR_IW_TX_RRESP)
		return !c->cur_resp.mr || sr_mr_enter(c->cur_resp.mr);
	return sr_iw_buf_enter(&c->src);
}

static void sr_iw_msg_leave(struct sr_iw_conn *c)
{
	if (c->kind != SR_IW_TX_RRESP)
		sr_iw_buf_leave(&c->src);
	else if (c->cur_resp.mr)
		sr_mr_leave(c->cur_resp.mr);
}

/* Internal result of sr_iw_fpdu_write: a source region of the batch was deregistered. */
#define SR_IW_TX_REVOKED 2

/* Write what the socket takes of the current FPDU. 1: done, 0: would block, <0: error. */
static int sr_iw_fpdu_write(struct sr_iw_conn *c)
{
	while (c->fp_iovpos < c->fp_iovcnt) {
		struct msghdr m = {
			.msg_iov = &c->fp->iov[c->fp_iovpos],
			.msg_iovlen = (size_t)(c->fp_iovcnt - c->fp_iovpos),
		};
		ssize_t n;
		int err;

		/* The kernel copies from the regions during this call and never after it. */
		if (c->fp_data && !sr_iw_msg_enter(c))
			return SR_IW_TX_REVOKED;
		/* before the bytes can reach the peer: its answer may come back at once */
		atomic_store(&c->tx_uncompleted, true);
		sr_dma_read_begin(); /* the payload iovecs point into registered memory */
		n = sendmsg(c->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		err = errno;
		sr_dma_read_end();
		if (c->fp_data)
			sr_iw_msg_leave(c);
		errno = err;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		while (n > 0 && c->fp_iovpos < c->fp_iovcnt) {
			struct iovec *v = &c->fp->iov[c->fp_iovpos];

			if ((size_t)n >= v->iov_len) {
				n -= (ssize_t)v->iov_len;
				c->fp_iovpos++;
			} else {
				v->iov_base = (uint8_t *)v->iov_base + n;
				v->iov_len -= (size_t)n;
				n = 0;
			}
		}
		/* skip empty iovecs (zero-length payload pieces) */
		while (c->fp_iovpos < c->fp_iovcnt && !c->fp->iov[c->fp_iovpos].iov_len)
			c->fp_iovpos++;
	}
	c->fp_busy = false;
	return 1;
}

static unsigned int sr_iw_send_opcode(const struct sr_send_wqe *w)
{
	bool se = w->flags & IBV_SEND_SOLICITED;

	if (w->opcode == IBV_WR_SEND_WITH_INV)
		return se ? SR_RDMAP_OP_SEND_SE_INV : SR_RDMAP_OP_SEND_INV;
	return se ? SR_RDMAP_OP_SEND_SE : SR_RDMAP_OP_SEND;
}

/* The header of the message's chunk ch (the message in c->wqe, or a Read Response). */
static size_t sr_iw_data_hdr(struct sr_iw_conn *c, const struct sr_ddp_chunk *ch, bool rresp)
{
	ssize_t hlen;

	if (rresp) {
		hlen = sr_fpdu_put_tagged(SR_IW_HDR(c), SR_IW_HDR_SIZE(c), SR_RDMAP_OP_READ_RESP,
					  ch->last, c->cur_resp.sink_stag,
					  c->cur_resp.sink_to + ch->off, ch->len);
	} else if (c->wqe->opcode == IBV_WR_RDMA_WRITE) {
		hlen = sr_fpdu_put_tagged(SR_IW_HDR(c), SR_IW_HDR_SIZE(c), SR_RDMAP_OP_WRITE,
					  ch->last, c->wqe->rkey, c->wqe->remote_addr + ch->off,
					  ch->len);
	} else {
		hlen = sr_fpdu_put_untagged(SR_IW_HDR(c), SR_IW_HDR_SIZE(c), sr_iw_send_opcode(c->wqe),
					    ch->last, c->send_msn, ch->off,
					    c->wqe->opcode == IBV_WR_SEND_WITH_INV ?
						    c->wqe->invalidate_rkey : 0,
					    ch->len);
	}
	return (size_t)hlen;
}

/* Next FPDU of the Send/Write/Read Response in progress. */
static void sr_iw_build_data_fpdu(struct sr_iw_conn *c)
{
	struct sr_ddp_chunk ch;
	size_t hlen;
	int nio;

	sr_ddp_segmenter_next(&c->seg, &ch);
	hlen = sr_iw_data_hdr(c, &ch, c->kind == SR_IW_TX_RRESP);
	nio = sr_iw_buf_iov(&c->src, ch.off, ch.len, &c->fp->iov[c->fp_iovcnt + 1], SR_MAX_SGE);
	sr_iw_fpdu_seal(c, hlen, nio, ch.len);
	c->seg_last_sent = ch.last;
}

/* Whether the batch has room for one more copied message of len bytes in one FPDU. */
static bool sr_iw_stage_room(const struct sr_iw_conn *c, uint32_t len)
{
	return len <= SR_IW_STAGE_MSG && c->fp_stage_used + len <= SR_IW_STAGE_BYTES &&
	       c->fp_n < SR_IW_BATCH && c->fp_iovcnt + 3 <= SR_IW_BATCH_IOV;
}

/*
 * The FPDU of a message copied to the free part of fp->stage (len bytes; its header in
 * SR_IW_HDR(c)[0..hlen)) joins the batch.
 */
static void sr_iw_stage_seal(struct sr_iw_conn *c, size_t hlen, uint32_t len)
{
	c->fp->iov[c->fp_iovcnt + 1].iov_base = c->fp->stage + c->fp_stage_used;
	c->fp->iov[c->fp_iovcnt + 1].iov_len = len;
	sr_iw_fpdu_seal(c, hlen, len ? 1 : 0, len);
	c->fp_stage_used += len;
}

/*
 * The Send or Write in c->wqe (its source in c->src, the segmenter set up) joins the batch
 * as a copy when it is small, fits one FPDU and the batch has room and holds no message
 * sent from registered memory. Done: the FPDU is sealed, c->src released, c->wqe queued in
 * fp->staged. False: nothing changed (not small, no room, or a region was deregistered:
 * the normal path then deals with it).
 */
static bool sr_iw_stage(struct sr_iw_conn *c)
{
	struct sr_send_wqe *w = c->wqe;
	uint32_t len = (uint32_t)w->length;
	uint8_t *dst = c->fp->stage + c->fp_stage_used;
	struct iovec v[SR_MAX_SGE];
	struct sr_ddp_chunk ch;
	int n;

	if (!sr_iw_stage_room(c, len) || len > c->seg.max_payload || c->fp_data)
		return false;
	if (!sr_iw_buf_enter(&c->src))
		return false;
	n = sr_iw_buf_iov(&c->src, 0, len, v, SR_MAX_SGE);
	sr_dma_read_begin(); /* registered memory */
	for (int i = 0; i < n; i++) {
		memcpy(dst, v[i].iov_base, v[i].iov_len);
		dst += v[i].iov_len;
	}
	sr_dma_read_end();
	sr_iw_buf_leave(&c->src);
	if (w->opcode != IBV_WR_RDMA_WRITE)
		c->send_msn++;
	sr_ddp_segmenter_next(&c->seg, &ch);
	sr_iw_stage_seal(c, sr_iw_data_hdr(c, &ch, false), len);
	c->fp->staged[c->fp_nstaged++] = w;
	sr_dbg("qp %u: wr %llu copied into the batch", c->qp->ibqp.qp_num,
	       (unsigned long long)w->wr_id);
	sr_iw_buf_release(&c->src);
	c->wqe = NULL;
	c->kind = SR_IW_TX_IDLE;
	return true;
}

/*
 * First FPDU of the message's next batch, then as many more of it as the batch holds. The
 * CRCs read the payload: false, nothing built, when a source region has been deregistered.
 */
static bool sr_iw_build_data_batch(struct sr_iw_conn *c)
{
	if (c->mpa.crc && !sr_iw_msg_enter(c))
		return false;
	do
		sr_iw_build_data_fpdu(c);
	while (!c->seg_last_sent && c->fp_n < SR_IW_BATCH && c->fp_bytes < SR_IW_BATCH_BYTES &&
	       c->fp_iovcnt + SR_MAX_SGE + 2 <= SR_IW_BATCH_IOV);
	if (c->mpa.crc)
		sr_iw_msg_leave(c);
	c->fp_data = true;
	return true;
}

/* tx_lock held: queue a Terminate; it goes before anything else not yet started. */
static void sr_iw_term_locked(struct sr_iw_conn *c, const struct sr_term_info *t)
{
	ssize_t n;

	sr_assert_held(&c->tx_lock);
	/* Once a FIN or a Terminate is on its way nothing can follow it. */
	if (c->tx_end != SR_IW_TXE_OPEN && c->tx_end != SR_IW_TXE_FIN_QUEUED)
		return;
	n = sr_term_build(c->term_buf, sizeof(c->term_buf), t, 1, c->mpa.crc);
	if (n <= 0)
		return;
	c->term_len = (int)n;
	/* It overtakes every held FPDU, but never our RTR (sr_iw_tx_pick). */
	sr_iw_tx_end_set(c, SR_IW_TXE_TERM_QUEUED);
}

static void sr_iw_wqe_fail(struct sr_iw_conn *c, enum ibv_wc_status st)
{
	struct sr_send_wqe *w = c->wqe;
	struct sr_term_info t;

	c->wqe = NULL;
	c->kind = SR_IW_TX_IDLE;
	pthread_mutex_unlock(&c->tx_lock);
	sr_sq_complete(c->qp, w, st);
	pthread_mutex_lock(&c->tx_lock);
	/*
	 * The QP is in ERR now (sr_sq_complete) but nobody else ends the stream: the verbs side
	 * aborts only for WQEs that failed at post time. Tell the peer, as siw does for a local
	 * error, and let the FIN after the Terminate close the connection.
	 */
	sr_term_info_init(&t, SR_IW_ERR_RDMAP_UNSPEC, NULL, 0, 0);
	sr_iw_term_locked(c, &t);
}

/*
 * tx_lock held: the Read Response at the head of the ring (in progress, or copied into the
 * batch just written) is over, sent or cut off; its IRD slot frees.
 */
static void sr_iw_rresp_pop(struct sr_iw_conn *c)
{
	struct sr_mr *mr = c->resp[c->resp_head].mr;

	if (mr)
		sr_mr_put(mr);
	c->resp_head = (c->resp_head + 1) % c->resp_cap;
	c->resp_count--;
	c->kind = SR_IW_TX_IDLE;
}

/* Whether the batch stops between two FPDUs (nothing written, or a header is next whole). */
static bool sr_iw_batch_at_fpdu(const struct sr_iw_conn *c)
{
	uintptr_t p, h0 = (uintptr_t)c->fp->hdr[0];

	if (c->fp_iovpos >= c->fp_iovcnt)
		return true;
	p = (uintptr_t)c->fp->iov[c->fp_iovpos].iov_base;
	return p >= h0 && p < h0 + sizeof(c->fp->hdr) && (p - h0) % sizeof(c->fp->hdr[0]) == 0;
}

/*
 * tx_lock held. A region the message in progress is sent from has been deregistered: not
 * another byte of it goes out, the message ends here and the QP goes to ERR now, without
 * waiting for the peer. Between two FPDUs the peer is told with a Terminate: for a Read
 * Response, that the STag it reads from is not valid (RDMAP remote protection error,
 * invalid STag, what its request would draw a moment later); for our own Send or Write,
 * whose work request completes with a local protection error, the Terminate of a local
 * error (sr_iw_wqe_fail). Inside an FPDU nothing can follow that the peer could parse: the
 * stream is aborted.
 */
static void sr_iw_msg_revoked(struct sr_iw_conn *c)
{
	bool boundary = sr_iw_batch_at_fpdu(c);
	struct sr_term_info t;

	sr_dbg("qp %u: source region deregistered: the message stops %s", c->qp->ibqp.qp_num,
	       boundary ? "between FPDUs" : "inside an FPDU");
	c->fp_busy = false;
	c->fp_data = false;
	c->seg_last_sent = false;
	if (!boundary)
		sr_iw_tx_kill_locked(c); /* nothing more, not even a Terminate */
	if (c->kind == SR_IW_TX_RRESP) {
		sr_iw_rresp_pop(c);
		sr_term_info_init(&t, SR_IW_ERR_RDMAP_STAG, NULL, 0, 0);
		sr_iw_term_locked(c, &t);
		sr_qp_to_error(c->qp, true);
	} else {
		sr_iw_buf_release(&c->src);
		sr_iw_wqe_fail(c, IBV_WC_LOC_PROT_ERR);
	}
	if (!boundary)
		sr_iw_fail_stream(c);
}

/* The Read Request ring, allocated at the first Read (ORD entries). False: no memory. */
static bool sr_iw_rreq_ring(struct sr_iw_conn *c)
{
	if (!c->rreq) {
		uint32_t cap = SR_MIN(SR_MAX(c->mpa.ord, 1u), (uint32_t)SR_MAX_QP_RD_ATOM);

		c->rreq = calloc(cap, sizeof(*c->rreq));
		if (!c->rreq)
			return false;
		c->rreq_cap = cap;
	}
	return true;
}

/*
 * The source of the Send or Write in c->wqe into c->src, and the segmenter set up for it.
 * False, nothing held: an SGE does not resolve.
 */
static bool sr_iw_wqe_source(struct sr_iw_conn *c)
{
	struct sr_send_wqe *w = c->wqe;

	if (w->is_inline)
		sr_iw_buf_inline(&c->src, w->inline_data, w->length);
	else if (sr_iw_buf_init(&c->src, c->qp->pd, w->sge, w->num_sge, 0) != SR_ACC_OK)
		return false;
	sr_iw_refresh_mss(c, (uint32_t)w->length);
	sr_ddp_segmenter_init(&c->seg, (uint32_t)w->length, c->mulpdu,
			      w->opcode == IBV_WR_RDMA_WRITE ? SR_DDP_TAGGED_HDR_LEN :
							      SR_DDP_UNTAGGED_HDR_LEN);
	return true;
}

/*
 * Another WQE (c->wqe, not started) for a batch that holds copied small messages: it joins
 * as a copy too (sr_iw_stage), or stays in c->wqe for the next batch. Nothing here fails
 * a WQE: one that would fail must complete after those already in the batch, so it waits
 * for the next batch, where sr_iw_start_wqe deals with it.
 */
static bool sr_iw_stage_join(struct sr_iw_conn *c)
{
	struct sr_send_wqe *w = c->wqe;

	if (w->opcode != IBV_WR_SEND && w->opcode != IBV_WR_SEND_WITH_INV &&
	    w->opcode != IBV_WR_RDMA_WRITE)
		return false;
	if (w->length > SR_IW_STAGE_MSG || ((w->flags & IBV_SEND_FENCE) && c->rreq_count))
		return false;
	if (!sr_iw_wqe_source(c))
		return false;
	if (sr_iw_stage(c))
		return true;
	sr_iw_buf_release(&c->src);
	return false;
}

/* Results of sr_iw_start_read. */
enum sr_iw_read_step {
	SR_IW_READ_SENT,   /* its Read Request is in the batch */
	SR_IW_READ_WAIT,   /* ORD full, or FENCE with Reads outstanding */
	SR_IW_READ_FAILED, /* completed with an error (never when joining) */
};

/*
 * The Read in c->wqe: its Read Request into the batch. Joining a batch of Read Requests
 * already built, one that would fail is not failed but left in c->wqe (SR_IW_READ_WAIT):
 * the next batch starts and fails it, after the Requests before it have gone.
 */
static enum sr_iw_read_step sr_iw_start_read(struct sr_iw_conn *c, bool joining)
{
	struct sr_send_wqe *w = c->wqe;
	uint32_t ord = c->mpa.ord ? c->mpa.ord : 1;
	struct sr_iw_rreq *q;
	struct sr_rdmap_rreq rr;

	if (!sr_iw_rreq_ring(c)) {
		if (joining)
			return SR_IW_READ_WAIT;
		sr_iw_wqe_fail(c, IBV_WC_LOC_QP_OP_ERR);
		return SR_IW_READ_FAILED;
	}
	if (c->rreq_count >= ord || c->rreq_count >= c->rreq_cap)
		return SR_IW_READ_WAIT;
	if ((w->flags & IBV_SEND_FENCE) && c->rreq_count)
		return SR_IW_READ_WAIT;
	q = &c->rreq[(c->rreq_head + c->rreq_count) % c->rreq_cap];
	if (sr_iw_buf_init(&q->sink, c->qp->pd, w->sge, w->num_sge, IBV_ACCESS_LOCAL_WRITE) !=
	    SR_ACC_OK) {
		if (joining)
			return SR_IW_READ_WAIT;
		sr_iw_wqe_fail(c, IBV_WC_LOC_PROT_ERR);
		return SR_IW_READ_FAILED;
	}
	q->wqe = w;
	q->len = (uint32_t)w->length;
	q->placed = 0;
	/* The sink is named by the first SGE; responses are matched in order and scattered
	 * over all SGEs of the WQE by offset. */
	q->sink_stag = w->num_sge ? w->sge[0].lkey : 0;
	q->sink_to = w->num_sge ? w->sge[0].addr : 0;
	c->rreq_count++;
	rr.sink_stag = q->sink_stag;
	rr.sink_to = q->sink_to;
	rr.size = q->len;
	rr.src_stag = w->rkey;
	rr.src_to = w->remote_addr;
	sr_iw_fpdu_seal(c, (size_t)sr_fpdu_put_rreq(SR_IW_HDR(c), SR_IW_HDR_SIZE(c),
						    ++c->rreq_msn, &rr), 0, 0);
	c->wqe = NULL; /* completes when its response has been placed */
	c->kind = SR_IW_TX_IDLE;
	return SR_IW_READ_SENT;
}

/*
 * Another WQE (c->wqe, not started) for a batch that holds Read Requests: a Read that can
 * start now joins it (Requests are headers only, so a window of Reads goes out with one
 * sendmsg()); anything else stays in c->wqe for the next batch.
 */
static bool sr_iw_rreq_join(struct sr_iw_conn *c)
{
	if (c->wqe->opcode != IBV_WR_RDMA_READ || c->fp_n >= SR_IW_BATCH ||
	    c->fp_iovcnt + 2 > SR_IW_BATCH_IOV)
		return false;
	return sr_iw_start_read(c, true) == SR_IW_READ_SENT;
}

/*
 * Start the WQE in c->wqe. Returns false when it must wait (ORD full, or FENCE with Reads
 * outstanding); it then stays in c->wqe until a Read Response frees a slot.
 */
static bool sr_iw_start_wqe(struct sr_iw_conn *c)
{
	struct sr_send_wqe *w = c->wqe;

	sr_dbg("qp %u: wr %llu opcode %d starts", c->qp->ibqp.qp_num,
	       (unsigned long long)w->wr_id, w->opcode);
	if (w->opcode == IBV_WR_RDMA_READ)
		return sr_iw_start_read(c, false) != SR_IW_READ_WAIT;
	if ((w->flags & IBV_SEND_FENCE) && c->rreq_count)
		return false;
	if (!sr_iw_wqe_source(c)) {
		sr_iw_wqe_fail(c, IBV_WC_LOC_PROT_ERR);
		return true;
	}
	if (sr_iw_stage(c))
		return true;
	if (w->opcode != IBV_WR_RDMA_WRITE)
		c->send_msn++;
	c->kind = SR_IW_TX_WQE;
	if (!sr_iw_build_data_batch(c))
		sr_iw_msg_revoked(c);
	return true;
}

/* The FPDU just written was the last of its message. */
static void sr_iw_message_done(struct sr_iw_conn *c)
{
	if (c->kind == SR_IW_TX_RRESP) {
		sr_iw_rresp_pop(c);
	} else if (c->kind == SR_IW_TX_WQE) {
		struct sr_send_wqe *w = c->wqe;

		sr_dbg("qp %u: wr %llu sent", c->qp->ibqp.qp_num, (unsigned long long)w->wr_id);
		sr_iw_buf_release(&c->src);
		c->wqe = NULL;
		c->kind = SR_IW_TX_IDLE;
		/*
		 * Completed with tx_lock still held: its last byte is on the wire, so the peer
		 * may already have acted on it and closed (perftest's final handshake does).
		 * The close takes tx_lock before the QP is flushed, so it finds this WQE done
		 * instead of reporting a Send the peer received as flushed. sr_sq_complete
		 * takes only verbs locks and may call xops->abort, which is safe here.
		 */
		sr_sq_complete(c->qp, w, IBV_WC_SUCCESS);
	}
}

/*
 * Transmit priority: what goes next when the socket takes a new batch. The first row whose
 * condition holds wins (sr_iw_tx_pick); the batch being written is always finished first,
 * and new FPDUs are built only while tx_end is OPEN, FIN_QUEUED or TERM_QUEUED.
 *
 *   next      condition                         why
 *   RTR       gate RTR                          RFC 6581: the stream's first FPDU, before
 *                                               even a Terminate
 *   TERM      tx_end TERM_QUEUED                an error ends the stream: it overtakes all
 *                                               not yet started (never a started FPDU)
 *   (none)    gate not OPEN                     the peer is not ready (enum sr_iw_tx_gate)
 *   MSG       a message is being cut            its FPDUs go out back to back
 *   RRESP     Read Responses owed               the peer waits on them (IRD)
 *   WQE       always (the send queue may hold   unless ORD is full or a FENCE waits for
 *             one)                              outstanding Reads: then nothing below either
 *   FIN       tx_end FIN_QUEUED, send queue     an orderly close follows all we owe and
 *             empty, no Read of ours pending    what we wait for
 *
 * A responder still waiting for the first FPDU may close although it may not send: its FIN
 * goes at once (sr_iw_tx_progress_locked), the queue is flushed with the QP.
 */
enum sr_iw_tx_next {
	SR_IW_NEXT_NONE,
	SR_IW_NEXT_RTR,
	SR_IW_NEXT_TERM,
	SR_IW_NEXT_MSG,
	SR_IW_NEXT_RRESP,
	SR_IW_NEXT_WQE, /* and, with the send queue empty, the FIN */
};

static enum sr_iw_tx_next sr_iw_tx_pick(const struct sr_iw_conn *c)
{
	if (c->tx_gate == SR_IW_GATE_RTR)
		return SR_IW_NEXT_RTR;
	if (c->tx_end == SR_IW_TXE_TERM_QUEUED)
		return SR_IW_NEXT_TERM;
	if (c->tx_end != SR_IW_TXE_OPEN && c->tx_end != SR_IW_TXE_FIN_QUEUED)
		return SR_IW_NEXT_NONE;
	if (c->tx_gate != SR_IW_GATE_OPEN)
		return SR_IW_NEXT_NONE;
	if (c->kind == SR_IW_TX_RRESP || c->kind == SR_IW_TX_WQE)
		return SR_IW_NEXT_MSG;
	if (c->resp_count)
		return SR_IW_NEXT_RRESP;
	return SR_IW_NEXT_WQE;
}

/* The initiator's RTR (RFC 6581), in the form negotiated. False: the stream ends. */
static bool sr_iw_build_rtr(struct sr_iw_conn *c)
{
	sr_iw_tx_gate_set(c, SR_IW_GATE_PEER_READY);
	if (c->mpa.rtr == SR_MPA_RTR_READ) {
		struct sr_rdmap_rreq rr = { .src_stag = 1 }; /* docs/WIRE.md §1.3 */
		struct sr_iw_rreq *q;

		if (!sr_iw_rreq_ring(c)) {
			sr_iw_fail_stream(c);
			return false;
		}
		q = &c->rreq[(c->rreq_head + c->rreq_count) % c->rreq_cap];
		memset(q, 0, sizeof(*q));
		c->rreq_count++;
		sr_iw_fpdu_seal(c, (size_t)sr_fpdu_put_rreq(SR_IW_HDR(c), SR_IW_HDR_SIZE(c),
							    ++c->rreq_msn, &rr), 0, 0);
	} else if (c->mpa.rtr == SR_MPA_RTR_SEND) {
		sr_iw_fpdu_seal(c, (size_t)sr_fpdu_put_untagged(SR_IW_HDR(c), SR_IW_HDR_SIZE(c),
								SR_RDMAP_OP_SEND, true,
								++c->send_msn, 0, 0, 0),
				0, 0);
	} else {
		/* zero-length Write with STag 1: "some HW treats STag 0 specially" */
		sr_iw_fpdu_seal(c, (size_t)sr_fpdu_put_tagged(SR_IW_HDR(c), SR_IW_HDR_SIZE(c),
							      SR_RDMAP_OP_WRITE, true, 1, 0, 0),
				0, 0);
	}
	return true;
}

/* The queued Terminate: the last FPDU of the stream. */
static void sr_iw_build_term(struct sr_iw_conn *c)
{
	/* term_buf stays untouched from here on: a Terminate is queued once */
	c->fp->iov[0].iov_base = c->term_buf;
	c->fp->iov[0].iov_len = (size_t)c->term_len;
	c->fp_iovcnt = 1;
	c->fp_busy = true;
	sr_iw_tx_end_set(c, SR_IW_TXE_TERM_SENT);
}

/*
 * Small Read Responses at the head of the ring join the batch as copies, as small Sends do
 * (sr_iw_stage): the Responses to a window of pipelined Reads go out with one sendmsg().
 * Each stays in the ring, holding its IRD slot, until the batch is in the socket
 * (sr_iw_staged_done). Stops at the first one that is large, does not fit or whose region
 * has been deregistered: sr_iw_build_rresp deals with it in a batch of its own. True when
 * the batch holds any.
 */
static bool sr_iw_stage_rresps(struct sr_iw_conn *c)
{
	while (c->fp_nrresp < c->resp_count) {
		const struct sr_iw_rresp *r = &c->resp[(c->resp_head + c->fp_nrresp) % c->resp_cap];
		uint8_t *dst = c->fp->stage + c->fp_stage_used;
		ssize_t hlen;

		sr_iw_refresh_mss(c, r->len);
		if (!sr_iw_stage_room(c, r->len) || r->len + SR_DDP_TAGGED_HDR_LEN > c->mulpdu)
			break;
		if (r->len) {
			if (!sr_mr_enter(r->mr))
				break;
			sr_dma_read_begin(); /* registered memory */
			memcpy(dst, r->src, r->len);
			sr_dma_read_end();
			sr_mr_leave(r->mr);
		}
		hlen = sr_fpdu_put_tagged(SR_IW_HDR(c), SR_IW_HDR_SIZE(c), SR_RDMAP_OP_READ_RESP,
					  true, r->sink_stag, r->sink_to, r->len);
		sr_iw_stage_seal(c, (size_t)hlen, r->len);
		c->fp_nrresp++;
	}
	return c->fp_nrresp > 0;
}

/* Start the Read Response at the head of the ring. False: its source region is gone. */
static bool sr_iw_build_rresp(struct sr_iw_conn *c)
{
	/*
	 * The request keeps its IRD slot (and the ring keeps the MR reference) until the last
	 * FPDU of the response is out: the peer counts it against its ORD until then, so
	 * freeing it earlier would let an ORD-violating peer go unnoticed.
	 */
	c->cur_resp = c->resp[c->resp_head];
	sr_iw_refresh_mss(c, c->cur_resp.len);
	sr_ddp_segmenter_init(&c->seg, c->cur_resp.len, c->mulpdu, SR_DDP_TAGGED_HDR_LEN);
	c->kind = SR_IW_TX_RRESP;
	c->src.n = 0;
	if (c->cur_resp.len)
		sr_iw_buf_inline(&c->src, c->cur_resp.src, c->cur_resp.len);
	return sr_iw_build_data_batch(c);
}

/* Results of sr_iw_build_wqe. */
enum sr_iw_wqe_step {
	SR_IW_WQE_BUILT, /* the batch holds the WQE's first FPDUs */
	SR_IW_WQE_WAIT,  /* ORD full or FENCE: nothing goes until a Read Response arrives */
	SR_IW_WQE_EMPTY, /* the send queue has nothing */
	SR_IW_WQE_TERM,  /* a WQE failed locally and completed: its Terminate is queued */
};

static enum sr_iw_wqe_step sr_iw_build_wqe(struct sr_iw_conn *c)
{
	for (;;) {
		if (!c->wqe)
			c->wqe = sr_sq_next(c->qp);
		if (!c->wqe)
			return c->fp_busy ? SR_IW_WQE_BUILT : SR_IW_WQE_EMPTY;
		if (c->fp_nstaged) {
			/* small messages were copied into the batch: more may join */
			if (!sr_iw_stage_join(c))
				return SR_IW_WQE_BUILT;
			continue;
		}
		if (c->fp_busy) {
			/* Read Requests are in the batch: more Reads may join */
			if (!sr_iw_rreq_join(c))
				return SR_IW_WQE_BUILT;
			continue;
		}
		if (!sr_iw_start_wqe(c))
			return SR_IW_WQE_WAIT;
		if (c->fp_nstaged)
			continue; /* copied: look for more to join it */
		if (c->fp_busy && c->kind == SR_IW_TX_IDLE)
			continue; /* a Read Request: look for more Reads to join it */
		if (c->fp_busy)
			return SR_IW_WQE_BUILT;
		if (c->tx_end == SR_IW_TXE_TERM_QUEUED)
			return SR_IW_WQE_TERM;
	}
}

/*
 * The batch is in the socket: its copied WQEs complete, in order, with tx_lock held for the
 * reason sr_iw_message_done gives, and its copied Read Responses leave the ring.
 */
static void sr_iw_staged_done(struct sr_iw_conn *c)
{
	for (int i = 0; i < c->fp_nstaged; i++)
		sr_sq_complete(c->qp, c->fp->staged[i], IBV_WC_SUCCESS);
	c->fp_nstaged = 0;
	for (; c->fp_nrresp; c->fp_nrresp--)
		sr_iw_rresp_pop(c);
}

/* Pick (sr_iw_tx_pick) and build the next batch. False when there is nothing to send now. */
static bool sr_iw_next_fpdu(struct sr_iw_conn *c)
{
	for (;;) {
		c->fp_n = 0;
		c->fp_bytes = 0;
		c->fp_iovcnt = 0;
		c->fp_iovpos = 0;
		c->fp_data = false;
		c->fp_stage_used = 0;
		c->fp_nstaged = 0; /* completed when the last batch was written */
		c->fp_nrresp = 0;  /* popped then */
		switch (sr_iw_tx_pick(c)) {
		case SR_IW_NEXT_NONE:
			return false;
		case SR_IW_NEXT_RTR:
			return sr_iw_build_rtr(c);
		case SR_IW_NEXT_TERM:
			sr_iw_build_term(c);
			return true;
		case SR_IW_NEXT_MSG:
			if (sr_iw_build_data_batch(c))
				return true;
			sr_iw_msg_revoked(c);
			continue; /* its Terminate, if the stream still takes one */
		case SR_IW_NEXT_RRESP:
			if (sr_iw_stage_rresps(c) || sr_iw_build_rresp(c))
				return true;
			sr_iw_msg_revoked(c);
			continue;
		case SR_IW_NEXT_WQE:
			switch (sr_iw_build_wqe(c)) {
			case SR_IW_WQE_BUILT:
				return true;
			case SR_IW_WQE_WAIT:
				return false;
			case SR_IW_WQE_TERM:
				continue;
			case SR_IW_WQE_EMPTY:
				break;
			}
			if (c->tx_end == SR_IW_TXE_FIN_QUEUED && !c->rreq_count)
				sr_iw_tx_fin_locked(c);
			return false;
		}
	}
}

/* tx_lock held: the batch to build into. Without memory for it the stream ends. */
static bool sr_iw_batch_get(struct sr_iw_conn *c)
{
	if (!c->fp) {
		c->fp = malloc(sizeof(*c->fp));
		if (!c->fp) {
			sr_err("qp %u: no memory to transmit: ending the stream", c->qp->ibqp.qp_num);
			sr_iw_tx_kill_locked(c);
			sr_iw_fail_stream(c);
			return false;
		}
	}
	return true;
}

static void sr_iw_tx_run_locked(struct sr_iw_conn *c)
{
	sr_assert_held(&c->tx_lock);
	for (int budget = SR_IW_TX_BUDGET; budget > 0; budget--) {
		int r;

		if (!c->fp_busy) {
			/*
			 * A responder still waiting for the first FPDU may not send one, but it
			 * may close: its SQ is flushed anyway once the stream is over. (An
			 * initiator waiting for its peer to get ready sends its queue first: the
			 * wait is bounded.)
			 */
			if (c->tx_gate == SR_IW_GATE_PEER_FIRST &&
			    c->tx_end == SR_IW_TXE_FIN_QUEUED)
				sr_iw_tx_fin_locked(c);
			if (sr_iw_tx_ended(c) || c->tx_end == SR_IW_TXE_FIN_SENT ||
			    !sr_iw_batch_get(c) || !sr_iw_next_fpdu(c)) {
				/* nothing (more) for the socket: an idle connection holds no batch
				 * (copied WQEs of an abandoned one are flushed with the QP) */
				free(c->fp);
				c->fp = NULL;
				c->fp_nstaged = 0;
				c->fp_nrresp = 0;
				sr_iw_want_out(c, false);
				return;
			}
		}
		r = sr_iw_fpdu_write(c);
		if (r == 0) {
			sr_iw_want_out(c, true);
			return;
		}
		if (r == SR_IW_TX_REVOKED) {
			sr_iw_msg_revoked(c);
			continue;
		}
		if (r < 0) {
			sr_dbg("qp %u: send: %s", c->qp->ibqp.qp_num, strerror(-r));
			/* A failed Terminate stays TERM_SENT: the stream still ended with one. */
			if (c->tx_end != SR_IW_TXE_TERM_SENT)
				sr_iw_tx_kill_locked(c);
			c->fp_busy = false;
			/*
			 * A reset or a broken pipe reaches the receive side too, which closes
			 * the stream. Nothing tells it about the rest (EFAULT: the application
			 * unmapped memory it had registered): end the stream, so that it closes
			 * and the QP goes to ERR instead of staying half alive.
			 */
			if (r != -EPIPE && r != -ECONNRESET)
				sr_iw_fail_stream(c);
			return;
		}
		c->tx_first_out = true; /* an initiator's first batch is its RTR */
		if (c->tx_end == SR_IW_TXE_TERM_SENT) {
			/* The Terminate is out and is the last FPDU: the FIN follows it. */
			sr_iw_tx_fin_locked(c);
			continue;
		}
		if (c->seg_last_sent && c->kind != SR_IW_TX_IDLE) {
			c->seg_last_sent = false;
			sr_iw_message_done(c);
		}
		sr_iw_staged_done(c);
	}
	/* Budget spent: come back through the engine. */
	sr_iw_want_out(c, true);
}

void sr_iw_tx_progress_locked(struct sr_iw_conn *c)
{
	sr_assert_held(&c->tx_lock);
	sr_iw_tx_run_locked(c);
	/* What the socket took is completed (a partly written message cannot be answered
	 * yet): nothing for the receive side to wait for. */
	atomic_store_explicit(&c->tx_uncompleted, false, memory_order_release);
}

void sr_iw_tx_settle(struct sr_iw_conn *c)
{
	/*
	 * Set: a sendmsg() may have put bytes in the socket whose WQEs are not completed yet
	 * (the sender holds tx_lock until they are). The message being completed here may be
	 * the peer's answer to them, and the application must see our completion first, as
	 * on hardware: wait for that sender. Clear: every byte in the socket is completed,
	 * or was sent after the flag was read, so after this message arrived.
	 */
	if (atomic_load(&c->tx_uncompleted)) {
		pthread_mutex_lock(&c->tx_lock);
		pthread_mutex_unlock(&c->tx_lock);
	}
}

void sr_iw_tx_progress(struct sr_iw_conn *c)
{
	pthread_mutex_lock(&c->tx_lock);
	sr_iw_tx_progress_locked(c);
	pthread_mutex_unlock(&c->tx_lock);
}

void sr_iw_tx_open_gate(struct sr_iw_conn *c)
{
	pthread_mutex_lock(&c->tx_lock);
	if (c->tx_gate == SR_IW_GATE_PEER_READY || c->tx_gate == SR_IW_GATE_PEER_FIRST) {
		sr_dbg("qp %u: peer ready, sending", c->qp->ibqp.qp_num);
		sr_iw_tx_gate_set(c, SR_IW_GATE_OPEN);
		sr_iw_tx_progress_locked(c);
	}
	pthread_mutex_unlock(&c->tx_lock);
}

void sr_iw_ready_timer_stop(struct sr_iw_conn *c)
{
	sr_engine_timer_cancel(&c->ready_t);
}

/* The peer said nothing within the bound after our RTR: send what is queued anyway. */
static void sr_iw_ready_expired(struct sr_engine_timer *t)
{
	struct sr_iw_conn *c = sr_container_of(t, struct sr_iw_conn, ready_t);

	sr_dbg("qp %u: no sign from the peer after the RTR: sending anyway",
	       c->qp->ibqp.qp_num);
	sr_iw_tx_open_gate(c);
}

/* A peer-to-peer responder never got the initiator's RTR: end the stream (a FIN). */
static void sr_iw_first_expired(struct sr_engine_timer *t)
{
	struct sr_iw_conn *c = sr_container_of(t, struct sr_iw_conn, ready_t);

	sr_dbg("qp %u: no RTR from the initiator within %d ms: ending the stream",
	       c->qp->ibqp.qp_num, SR_IW_FIRST_FPDU_TIMEOUT_MS);
	sr_iw_fail_stream(c);
}

int sr_iw_tx_gate_init(struct sr_iw_conn *c, unsigned int ready_ms)
{
	/* RFC 6581: with P2P the initiator's RTR is its first FPDU and the responder sends
	 * nothing before the first FPDU arrives. RFC 5044 asks the same of rev 1 responders. */
	if (!c->initiator)
		c->tx_gate = SR_IW_GATE_PEER_FIRST;
	else if (c->mpa.p2p)
		c->tx_gate = SR_IW_GATE_RTR;
	else
		c->tx_gate = SR_IW_GATE_OPEN;
	/* After the RTR the rest waits for the peer, but never longer than this: an engine
	 * timer, so the wait costs no descriptor (a connection holds exactly its socket). */
	if (c->tx_gate == SR_IW_GATE_RTR) {
		if (!ready_ms)
			ready_ms = c->mpa.rtr == SR_MPA_RTR_READ ? SR_IW_READY_READ_MS :
								   SR_IW_READY_OTHER_MS;
		c->ready_t.cb = sr_iw_ready_expired;
		return sr_engine_timer_arm(&c->ready_t, ready_ms);
	}
	if (!c->initiator && c->mpa.p2p) {
		/* the RTR opens the gate and stops this timer (sr_iw_ready_timer_stop) */
		c->ready_t.cb = sr_iw_first_expired;
		return sr_engine_timer_arm(&c->ready_t, SR_IW_FIRST_FPDU_TIMEOUT_MS);
	}
	return 0;
}

void sr_iw_queue_terminate(struct sr_iw_conn *c, const struct sr_term_info *t)
{
	pthread_mutex_lock(&c->tx_lock);
	sr_iw_term_locked(c, t);
	/* An FPDU already being written is finished first; the Terminate follows it. */
	sr_iw_tx_progress_locked(c);
	pthread_mutex_unlock(&c->tx_lock);
}
