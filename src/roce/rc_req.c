// SPDX-License-Identifier: MIT
/*
 * RC requester and completer (roce/rc_req.h). The send queue is a ring of work requests
 * with three counters: head (oldest not completed), cur (the one being sent) and tail.
 * PSNs are given to a request when its first packet goes out and never change; going back
 * (NAK, timeout, RNR) moves the cursor to the oldest unacknowledged PSN and sends from
 * there again, mid-message if need be. Facts from IBTA vol 1 ch. 9 and Linux rxe
 * (docs/WIRE.md §R5, §R10).
 */
#include "roce/rc_req.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "roce/psn.h"

uint64_t sr_rc_ack_timeout_ns(uint8_t timeout)
{
	if (timeout == 0)
		return SR_RC_NEVER;
	if (timeout > 31)
		timeout = 31;
	return 4096ull << timeout;
}

/* IBTA RNR timer codes in units of 10 us (code 0 is the longest, 655.36 ms). */
static const uint32_t rnr_10us[32] = {
	65536, 1,    2,    3,    4,    6,    8,    12,   16,    24,    32,
	48,    64,   96,   128,  192,  256,  384,  512,  768,   1024,  1536,
	2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

uint64_t sr_rc_rnr_timer_ns(uint8_t code)
{
	return (uint64_t)rnr_10us[code & 31] * 10000u;
}

static struct sr_rc_wqe *wqe(const struct sr_rc_req *r, uint32_t i)
{
	return &r->q[i % r->attr.sq_depth];
}

static bool is_rdat(uint8_t op)
{
	return op == SR_RC_WR_READ || op == SR_RC_WR_CMP_SWAP || op == SR_RC_WR_FETCH_ADD;
}

static bool is_atomic(uint8_t op)
{
	return op == SR_RC_WR_CMP_SWAP || op == SR_RC_WR_FETCH_ADD;
}

static uint32_t npsn_of(const struct sr_rc_wr *wr, uint32_t mtu)
{
	if (is_atomic(wr->op) || wr->length == 0)
		return 1;
	return (wr->length + mtu - 1) / mtu;
}

/* PSN after the READ response packets received in order. */
static uint32_t read_next_psn(const struct sr_rc_req *r, const struct sr_rc_wqe *w)
{
	return sr_psn_add(w->first_psn, w->rcvd / r->attr.mtu);
}

int sr_rc_req_init(struct sr_rc_req *r, const struct sr_rc_req_attr *attr,
		   const struct sr_rc_req_ops *ops, void *ctx)
{
	uint32_t m = attr->mtu;

	memset(r, 0, sizeof(*r));
	if ((m != 256 && m != 512 && m != 1024 && m != 2048 && m != 4096) ||
	    attr->sq_depth == 0 || attr->retry_cnt > 7 || attr->rnr_retry > 7 ||
	    attr->window > SR_RC_WINDOW_MAX || attr->dqpn > SR_PSN_MASK ||
	    attr->sq_psn > SR_PSN_MASK || !ops || !ops->complete || !ops->read_data ||
	    !ops->atomic_orig)
		return -EINVAL;
	r->q = calloc(attr->sq_depth, sizeof(*r->q));
	if (!r->q)
		return -ENOMEM;
	r->attr = *attr;
	if (r->attr.window == 0)
		r->attr.window = SR_RC_WINDOW_DEFAULT;
	r->ops = ops;
	r->ctx = ctx;
	r->state = SR_RC_REQ_RUN;
	r->snd_psn = r->max_psn = r->sent_psn = r->una = attr->sq_psn;
	r->retry_left = attr->retry_cnt;
	r->rnr_left = attr->rnr_retry;
	r->ack_deadline = r->rnr_deadline = SR_RC_NEVER;
	return 0;
}

void sr_rc_req_fini(struct sr_rc_req *r)
{
	free(r->q);
	r->q = NULL;
}

uint32_t sr_rc_req_inflight(const struct sr_rc_req *r)
{
	return (uint32_t)sr_psn_diff(r->snd_psn, r->una);
}

/* Complete the oldest request; the slot is copied first, as @complete may post. */
static void complete_head(struct sr_rc_req *r, enum ibv_wc_status st)
{
	struct sr_rc_wr wr = wqe(r, r->head)->wr;

	if (r->cur == r->head) {
		r->cur++;
		r->cur_off = 0;
	}
	r->head++;
	r->ops->complete(r->ctx, &wr, st);
}

void sr_rc_req_flush(struct sr_rc_req *r)
{
	r->state = SR_RC_REQ_ERROR;
	r->ack_deadline = r->rnr_deadline = SR_RC_NEVER;
	r->flushing = true;
	while (r->head != r->tail)
		complete_head(r, IBV_WC_WR_FLUSH_ERR);
	r->flushing = false;
}

/* The head request failed with @st: it completes so, the rest flush, the QP is in error.
 * A request posted from the completion callbacks completes after the older ones. */
static void fail(struct sr_rc_req *r, enum ibv_wc_status st)
{
	r->state = SR_RC_REQ_ERROR;
	r->flushing = true;
	if (r->head != r->tail)
		complete_head(r, st);
	sr_rc_req_flush(r);
}

/* Send again from PSN @x: the request holding it, at the packet it starts. */
static void set_cursor(struct sr_rc_req *r, uint32_t x)
{
	uint32_t i;

	for (i = r->head; i != r->tail && wqe(r, i)->psn_set; i++) {
		struct sr_rc_wqe *w = wqe(r, i);

		if (sr_psn_in(x, w->first_psn, w->npsn)) {
			r->cur = i;
			r->cur_off = is_atomic(w->wr.op) ? 0 :
				((x - w->first_psn) & SR_PSN_MASK) * r->attr.mtu;
			r->snd_psn = x;
			r->since_ackreq = 0;
			return;
		}
	}
	r->cur = i;
	r->cur_off = 0;
	r->snd_psn = x;
	r->since_ackreq = 0;
}

/* Everything before @psn is acknowledged: restart the retry counts and the timer. */
static void progress(struct sr_rc_req *r, uint32_t psn, uint64_t now)
{
	if (sr_psn_diff(psn, r->una) <= 0)
		return;
	r->una = psn;
	r->retry_left = r->attr.retry_cnt;
	r->rnr_left = r->attr.rnr_retry;
	r->rewound = false;
	if (sr_psn_diff(r->una, r->snd_psn) > 0)
		set_cursor(r, r->una);	/* acknowledged beyond what we were resending */
	if (r->una == r->snd_psn || r->attr.timeout == 0)
		r->ack_deadline = SR_RC_NEVER;
	else
		r->ack_deadline = now + sr_rc_ack_timeout_ns(r->attr.timeout);
}

/* Go back to una and send again. @forced: a timeout, which always counts; a NAK or a
 * missing response does not go back twice to the same PSN without progress between.
 * Returns true when it went back (or failed for want of retries). */
static bool go_back(struct sr_rc_req *r, bool forced)
{
	if (r->rewound && !forced)
		return false;
	if (r->retry_left == 0) {
		fail(r, IBV_WC_RETRY_EXC_ERR);
		return true;
	}
	r->retry_left--;
	r->rewound = true;
	r->ack_deadline = SR_RC_NEVER;
	set_cursor(r, r->una);
	return true;
}

/*
 * The responder says every PSN before @lim arrived. Requests entirely before it complete,
 * except a READ or atomic whose response is missing: then the response was lost (an
 * implied NAK) and we go back. Returns false in that case.
 */
static bool ack_upto(struct sr_rc_req *r, uint32_t lim, uint64_t now)
{
	while (r->head != r->tail && wqe(r, r->head)->psn_set) {
		struct sr_rc_wqe *w = wqe(r, r->head);
		uint32_t end = sr_psn_add(w->first_psn, w->npsn);

		if (is_rdat(w->wr.op)) {
			uint32_t got = w->wr.op == SR_RC_WR_READ ? read_next_psn(r, w) : w->first_psn;

			if (sr_psn_diff(lim, got) > 0) {
				progress(r, got, now);
				r->stats.implied_naks += go_back(r, false);
				return false;
			}
			break;
		}
		if (sr_psn_diff(end, lim) > 0)
			break;
		progress(r, end, now);
		complete_head(r, IBV_WC_SUCCESS);
	}
	progress(r, lim, now);
	return true;
}

/* The request holding @psn, or NULL. */
static struct sr_rc_wqe *find(const struct sr_rc_req *r, uint32_t psn)
{
	for (uint32_t i = r->head; i != r->tail && wqe(r, i)->psn_set; i++) {
		struct sr_rc_wqe *w = wqe(r, i);

		if (sr_psn_in(psn, w->first_psn, w->npsn))
			return w;
	}
	return NULL;
}

static void recv_aeth(struct sr_rc_req *r, const struct sr_roce_pkt *pkt, uint64_t now)
{
	uint8_t syn = pkt->syndrome, val = syn & SR_AETH_VALUE_MASK;

	switch (syn & SR_AETH_TYPE_MASK) {
	case SR_AETH_TYPE_ACK:
		ack_upto(r, sr_psn_add(pkt->psn, 1), now);
		return;
	case SR_AETH_TYPE_RNR_NAK:
		r->stats.rnr_naks++;
		if (!ack_upto(r, pkt->psn, now) || r->head == r->tail)
			return;
		if (r->rnr_left == 0) {
			fail(r, IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (r->attr.rnr_retry != SR_RC_RNR_RETRY_INFINITE)
			r->rnr_left--;
		r->state = SR_RC_REQ_RNR_WAIT;
		r->ack_deadline = SR_RC_NEVER;
		r->rnr_deadline = now + sr_rc_rnr_timer_ns(val);
		return;
	case SR_AETH_TYPE_NAK:
		if (!ack_upto(r, pkt->psn, now) || r->head == r->tail)
			return;
		switch (val) {
		case SR_AETH_NAK_PSN_SEQ:
			r->stats.seq_naks++;
			go_back(r, false);
			return;
		case SR_AETH_NAK_INV_REQ:
			fail(r, IBV_WC_REM_INV_REQ_ERR);
			return;
		case SR_AETH_NAK_REM_ACCESS:
			fail(r, IBV_WC_REM_ACCESS_ERR);
			return;
		default:	/* remote operational error, invalid RD request, reserved codes */
			fail(r, IBV_WC_REM_OP_ERR);
			return;
		}
	default:
		r->stats.dropped++;
	}
}

static void recv_read_resp(struct sr_rc_req *r, const struct sr_roce_pkt *pkt, uint64_t now)
{
	struct sr_rc_wqe *w = find(r, pkt->psn);
	uint32_t mtu = r->attr.mtu, want, left;
	uint8_t f = pkt->op->flags;
	int32_t d;

	if (!w || w->wr.op != SR_RC_WR_READ) {
		r->stats.dropped++;
		return;
	}
	if (!ack_upto(r, w->first_psn, now))
		return;
	want = read_next_psn(r, w);
	d = sr_psn_diff(pkt->psn, want);
	if (d != 0) {
		r->stats.dropped++;
		if (d > 0)	/* a response before this one was lost */
			r->stats.implied_naks += go_back(r, false);
		return;
	}
	/* After a READ was asked again for its rest, the rest's responses start over with
	 * FIRST (or ONLY); only the very first response must be one. */
	left = w->wr.length - w->rcvd;
	if ((w->rcvd == 0 && !(f & SR_ROCE_F_FIRST)) ||
	    ((f & SR_ROCE_F_LAST) ? pkt->payload_len != left || left > mtu :
				    pkt->payload_len != mtu || left <= mtu) ||
	    ((pkt->op->hdrs & SR_ROCE_H_AETH) &&
	     (pkt->syndrome & SR_AETH_TYPE_MASK) != SR_AETH_TYPE_ACK)) {
		r->stats.dropped++;
		return;
	}
	r->ops->read_data(r->ctx, &w->wr, w->rcvd, pkt->payload, pkt->payload_len);
	w->rcvd += pkt->payload_len;
	progress(r, sr_psn_add(pkt->psn, 1), now);
	if (f & SR_ROCE_F_LAST) {
		progress(r, sr_psn_add(w->first_psn, w->npsn), now);
		complete_head(r, IBV_WC_SUCCESS);
	}
}

static void recv_atomic_ack(struct sr_rc_req *r, const struct sr_roce_pkt *pkt, uint64_t now)
{
	struct sr_rc_wqe *w = find(r, pkt->psn);

	if (!w || !is_atomic(w->wr.op) ||
	    (pkt->syndrome & SR_AETH_TYPE_MASK) != SR_AETH_TYPE_ACK) {
		r->stats.dropped++;
		return;
	}
	if (!ack_upto(r, pkt->psn, now))
		return;
	r->ops->atomic_orig(r->ctx, &w->wr, pkt->orig);
	progress(r, sr_psn_add(pkt->psn, 1), now);
	complete_head(r, IBV_WC_SUCCESS);
}

void sr_rc_req_recv(struct sr_rc_req *r, const struct sr_roce_pkt *pkt, uint64_t now)
{
	const struct sr_roce_opinfo *op = pkt->op;
	uint32_t outstanding = (uint32_t)sr_psn_diff(r->max_psn, r->una);

	if (r->state != SR_RC_REQ_RUN || !op || !(op->flags & SR_ROCE_F_RESP) ||
	    (op->opcode & SR_ROCE_CLASS_MASK) != SR_ROCE_RC ||
	    !sr_psn_in(pkt->psn, r->una, outstanding)) {
		r->stats.dropped++;
		return;
	}
	switch (op->kind) {
	case SR_ROCE_K_ACK:
		recv_aeth(r, pkt, now);
		break;
	case SR_ROCE_K_READ_RESP:
		recv_read_resp(r, pkt, now);
		break;
	case SR_ROCE_K_ATOMIC_ACK:
		recv_atomic_ack(r, pkt, now);
		break;
	default:
		r->stats.dropped++;
	}
}

int sr_rc_req_post(struct sr_rc_req *r, const struct sr_rc_wr *wr)
{
	struct sr_rc_wqe *w;

	if (wr->op > SR_RC_WR_FETCH_ADD || wr->length > (1u << 31) ||
	    (is_atomic(wr->op) && wr->length != 8) ||
	    (is_rdat(wr->op) && r->attr.max_rd_atomic == 0))
		return -EINVAL;
	if (r->state == SR_RC_REQ_ERROR && !r->flushing) {
		r->ops->complete(r->ctx, wr, IBV_WC_WR_FLUSH_ERR);
		return 0;
	}
	if (r->tail - r->head >= r->attr.sq_depth)
		return -ENOMEM;
	w = wqe(r, r->tail);
	memset(w, 0, sizeof(*w));
	w->wr = *wr;
	w->npsn = npsn_of(wr, r->attr.mtu);
	r->tail++;
	return 0;
}

/* READ and atomic requests sent and not completed. */
static uint32_t rdat_outstanding(const struct sr_rc_req *r)
{
	uint32_t n = 0;

	for (uint32_t i = r->head; i != r->cur; i++)
		n += is_rdat(wqe(r, i)->wr.op);
	return n;
}

/* The opcode of a SEND or WRITE packet. */
static uint8_t send_write_opcode(uint8_t op, bool first, bool last)
{
	static const uint8_t tab[5][4] = {
		/* middle, first, last, only */
		[SR_RC_WR_SEND] = { SR_ROCE_SEND_MIDDLE, SR_ROCE_SEND_FIRST, SR_ROCE_SEND_LAST,
				    SR_ROCE_SEND_ONLY },
		[SR_RC_WR_SEND_IMM] = { SR_ROCE_SEND_MIDDLE, SR_ROCE_SEND_FIRST,
					SR_ROCE_SEND_LAST_IMM, SR_ROCE_SEND_ONLY_IMM },
		[SR_RC_WR_SEND_INV] = { SR_ROCE_SEND_MIDDLE, SR_ROCE_SEND_FIRST,
					SR_ROCE_SEND_LAST_INV, SR_ROCE_SEND_ONLY_INV },
		[SR_RC_WR_WRITE] = { SR_ROCE_WRITE_MIDDLE, SR_ROCE_WRITE_FIRST,
				     SR_ROCE_WRITE_LAST, SR_ROCE_WRITE_ONLY },
		[SR_RC_WR_WRITE_IMM] = { SR_ROCE_WRITE_MIDDLE, SR_ROCE_WRITE_FIRST,
					 SR_ROCE_WRITE_LAST_IMM, SR_ROCE_WRITE_ONLY_IMM },
	};

	return SR_ROCE_OP(SR_ROCE_RC, tab[op][(first ? 1 : 0) | (last ? 2 : 0)]);
}

int sr_rc_req_next(struct sr_rc_req *r, uint64_t now, struct sr_rc_req_tx *tx)
{
	struct sr_rc_wqe *w;
	struct sr_roce_pkt *h = &tx->hdr;
	uint32_t mtu = r->attr.mtu, cost, inflight, every;
	bool first, last, retrans;
	uint8_t op;

	if (r->state != SR_RC_REQ_RUN || r->cur == r->tail)
		return 0;
	w = wqe(r, r->cur);
	op = w->wr.op;
	cost = op == SR_RC_WR_READ ? w->npsn - r->cur_off / mtu : 1;
	inflight = sr_rc_req_inflight(r);
	if (inflight > 0 && inflight + cost > r->attr.window)
		return 0;
	if (is_rdat(op) && rdat_outstanding(r) >= r->attr.max_rd_atomic)
		return 0;
	retrans = sr_psn_before(r->snd_psn, r->sent_psn);
	if (!w->psn_set) {
		w->first_psn = r->snd_psn;
		w->psn_set = true;
		r->max_psn = sr_psn_add(r->snd_psn, w->npsn);
	}

	memset(tx, 0, sizeof(*tx));
	tx->wr = &w->wr;
	h->dqpn = r->attr.dqpn;
	h->pkey = r->attr.pkey;
	h->psn = r->snd_psn;
	if (is_rdat(op)) {
		first = last = true;
		h->va = w->wr.remote_addr + r->cur_off;
		h->rkey = w->wr.rkey;
		if (op == SR_RC_WR_READ) {
			h->opcode = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_READ_REQ);
			h->dma_len = w->wr.length - r->cur_off;
		} else {
			h->opcode = SR_ROCE_OP(SR_ROCE_RC, op == SR_RC_WR_CMP_SWAP ?
							       SR_ROCE_CMP_SWAP : SR_ROCE_FETCH_ADD);
			h->swap_add = w->wr.swap_add;
			h->compare = w->wr.compare;
		}
	} else {
		tx->off = r->cur_off;
		tx->len = w->wr.length - r->cur_off < mtu ? w->wr.length - r->cur_off : mtu;
		first = tx->off == 0;
		last = tx->off + tx->len == w->wr.length;
		h->opcode = send_write_opcode(op, first, last);
		if (first && (op == SR_RC_WR_WRITE || op == SR_RC_WR_WRITE_IMM)) {
			h->va = w->wr.remote_addr;
			h->rkey = w->wr.rkey;
			h->dma_len = w->wr.length;
		}
		if (last && (op == SR_RC_WR_SEND_IMM || op == SR_RC_WR_WRITE_IMM))
			h->imm = w->wr.imm;
		if (last && op == SR_RC_WR_SEND_INV)
			h->inv_rkey = w->wr.imm;
		h->se = last && w->wr.solicited && op != SR_RC_WR_WRITE;
	}
	/* AckReq: end of a message, every window/2 packets, and when the window fills, so
	 * that a window full of one long message is acknowledged before the timeout. */
	every = r->attr.window / 2 ? r->attr.window / 2 : 1;
	h->ackreq = last || r->since_ackreq + 1 >= every || inflight + cost >= r->attr.window;
	r->since_ackreq = h->ackreq ? 0 : r->since_ackreq + 1;

	if (last) {
		r->cur++;
		r->cur_off = 0;
	} else {
		r->cur_off += tx->len;
	}
	r->snd_psn = sr_psn_add(r->snd_psn, cost);
	if (sr_psn_before(r->sent_psn, r->snd_psn))
		r->sent_psn = r->snd_psn;
	r->stats.pkts++;
	if (retrans)
		r->stats.retrans_pkts++;
	inflight = sr_rc_req_inflight(r);
	if (inflight > r->stats.max_inflight)
		r->stats.max_inflight = inflight;
	if (r->ack_deadline == SR_RC_NEVER && r->attr.timeout)
		r->ack_deadline = now + sr_rc_ack_timeout_ns(r->attr.timeout);
	return 1;
}

uint64_t sr_rc_req_deadline(const struct sr_rc_req *r)
{
	switch (r->state) {
	case SR_RC_REQ_RUN:
		return r->ack_deadline;
	case SR_RC_REQ_RNR_WAIT:
		return r->rnr_deadline;
	default:
		return SR_RC_NEVER;
	}
}

void sr_rc_req_tick(struct sr_rc_req *r, uint64_t now)
{
	if (r->state == SR_RC_REQ_RNR_WAIT && now >= r->rnr_deadline) {
		r->state = SR_RC_REQ_RUN;
		r->rnr_deadline = SR_RC_NEVER;
		set_cursor(r, r->una);
		return;
	}
	if (r->state == SR_RC_REQ_RUN && now >= r->ack_deadline) {
		r->stats.timeouts++;
		r->ack_deadline = SR_RC_NEVER;
		go_back(r, true);
	}
}
