// SPDX-License-Identifier: MIT
/*
 * RC responder (roce/rc_resp.h). A request is new when its PSN is the expected one, a
 * duplicate when it is behind (in the 2^23 PSNs before), out of sequence when ahead.
 * Responses wait in a small ring in PSN order; plain ACKs merge into an ACK at the ring's
 * tail. Facts from IBTA vol 1 ch. 9 and Linux rxe (docs/WIRE.md §R5,
 * §R10).
 */
#include "roce/rc_resp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "roce/psn.h"

/* Responses queued beyond the saved READ/atomic requests: the ACK/NAK and slack. */
#define OUT_EXTRA 4

int sr_rc_resp_init(struct sr_rc_resp *s, const struct sr_rc_resp_attr *attr,
		    const struct sr_rc_resp_ops *ops, void *ctx)
{
	uint32_t m = attr->mtu;

	memset(s, 0, sizeof(*s));
	if ((m != 256 && m != 512 && m != 1024 && m != 2048 && m != 4096) ||
	    attr->dqpn > SR_PSN_MASK || attr->rq_psn > SR_PSN_MASK || attr->min_rnr_timer > 31 ||
	    !ops || !ops->recv_begin || !ops->recv_data || !ops->recv_done ||
	    !ops->rkey_check || !ops->write_data || !ops->atomic)
		return -EINVAL;
	s->out_cap = attr->max_dest_rd_atomic + OUT_EXTRA;
	s->out = calloc(s->out_cap, sizeof(*s->out));
	s->res = calloc(attr->max_dest_rd_atomic ? attr->max_dest_rd_atomic : 1, sizeof(*s->res));
	if (!s->out || !s->res) {
		free(s->out);
		free(s->res);
		return -ENOMEM;
	}
	s->attr = *attr;
	s->ops = ops;
	s->ctx = ctx;
	s->epsn = attr->rq_psn;
	s->msg = SR_RC_MSG_NONE;
	return 0;
}

void sr_rc_resp_fini(struct sr_rc_resp *s)
{
	free(s->out);
	free(s->res);
	s->out = NULL;
	s->res = NULL;
}

static uint32_t out_len(const struct sr_rc_resp *s)
{
	return s->out_tail - s->out_head;
}

static struct sr_rc_out *out_push(struct sr_rc_resp *s)
{
	struct sr_rc_out *o = &s->out[s->out_tail++ % s->out_cap];

	memset(o, 0, sizeof(*o));
	return o;
}

static void queue_aeth(struct sr_rc_resp *s, uint8_t syndrome, uint32_t psn)
{
	struct sr_rc_out *o = out_push(s);

	o->kind = SR_ROCE_K_ACK;
	o->syndrome = syndrome;
	o->psn = psn;
	o->msn = s->msn;
}

/* Acknowledge everything up to @psn; merges with a plain ACK still waiting at the tail. */
static void queue_ack(struct sr_rc_resp *s, uint32_t psn)
{
	if (out_len(s)) {
		struct sr_rc_out *t = &s->out[(s->out_tail - 1) % s->out_cap];

		if (t->kind == SR_ROCE_K_ACK && t->syndrome == SR_AETH_ACK_NO_CREDIT) {
			if (sr_psn_diff(psn, t->psn) > 0)
				t->psn = psn;
			t->msn = s->msn;
			s->unacked = 0;
			return;
		}
	}
	queue_aeth(s, SR_AETH_ACK_NO_CREDIT, psn);
	s->stats.acks++;
	s->unacked = 0;
}

static void queue_read(struct sr_rc_resp *s, uint32_t psn, uint64_t va, uint32_t rkey,
		       uint32_t len, uint32_t msn)
{
	struct sr_rc_out *o = out_push(s);

	o->kind = SR_ROCE_K_READ_RESP;
	o->psn = psn;
	o->va = va;
	o->rkey = rkey;
	o->len = len;
	o->msn = msn;
}

static void queue_atomic(struct sr_rc_resp *s, uint32_t psn, uint64_t orig, uint32_t msn)
{
	struct sr_rc_out *o = out_push(s);

	o->kind = SR_ROCE_K_ATOMIC_ACK;
	o->syndrome = SR_AETH_ACK_NO_CREDIT;
	o->psn = psn;
	o->orig = orig;
	o->msn = msn;
}

/* A fatal NAK for the request at @psn: the QP stops; a receive taken fails with @st. */
static void fatal(struct sr_rc_resp *s, uint8_t code, uint32_t psn, enum ibv_wc_status st)
{
	queue_aeth(s, SR_AETH_SYN_NAK(code), psn);
	s->stats.fatal_naks++;
	s->state = SR_RC_RESP_ERROR;
	if (s->have_recv) {
		struct sr_rc_recv_info info = { .status = st, .byte_len = s->msg_off };

		s->have_recv = false;
		s->ops->recv_done(s->ctx, &info);
	}
}

/* NAK code of an owner's error. */
static uint8_t nak_code(int err, bool access)
{
	if (err == -EINVAL || err == -EMSGSIZE)
		return SR_AETH_NAK_INV_REQ;
	return access ? SR_AETH_NAK_REM_ACCESS : SR_AETH_NAK_REM_OP;
}

static enum ibv_wc_status recv_status(int err)
{
	return err == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_QP_OP_ERR;
}

static struct sr_rc_res *res_save(struct sr_rc_resp *s)
{
	struct sr_rc_res *r = &s->res[s->res_next++ % s->attr.max_dest_rd_atomic];

	memset(r, 0, sizeof(*r));
	return r;
}

static void duplicate(struct sr_rc_resp *s, const struct sr_roce_pkt *pkt)
{
	uint8_t kind = pkt->op->kind;

	s->stats.dups++;
	if (kind == SR_ROCE_K_SEND || kind == SR_ROCE_K_WRITE) {
		/* already executed: acknowledge what we have, without executing again */
		queue_ack(s, sr_psn_add(s->epsn, SR_PSN_MASK));
		return;
	}
	for (uint32_t i = 0; i < s->attr.max_dest_rd_atomic; i++) {
		const struct sr_rc_res *r = &s->res[i];

		if (kind == SR_ROCE_K_READ_REQ && r->kind == SR_ROCE_K_READ_REQ &&
		    sr_psn_in(pkt->psn, r->psn, r->npsn) && pkt->rkey == r->rkey &&
		    pkt->va >= r->va && pkt->va - r->va <= r->len &&
		    pkt->dma_len <= r->len - (pkt->va - r->va) &&
		    pkt->va - r->va == (uint64_t)((pkt->psn - r->psn) & SR_PSN_MASK) * s->attr.mtu) {
			/* the same READ, or its tail: read the memory again */
			s->stats.dup_reads++;
			queue_read(s, pkt->psn, pkt->va, pkt->rkey, pkt->dma_len, r->msn);
			return;
		}
		if (kind == SR_ROCE_K_ATOMIC && r->kind == SR_ROCE_K_ATOMIC &&
		    r->psn == pkt->psn) {
			/* never execute an atomic twice: send the saved result */
			s->stats.dup_atomics++;
			queue_atomic(s, r->psn, r->orig, r->msn);
			return;
		}
	}
	s->stats.dups--;
	s->stats.dropped++;	/* no saved request covers it (overwritten): drop */
}

/* The payload size rules of IBTA: FIRST and MIDDLE carry exactly one MTU, LAST 1..MTU,
 * ONLY 0..MTU. */
static bool size_ok(const struct sr_rc_resp *s, const struct sr_roce_pkt *pkt)
{
	uint8_t f = pkt->op->flags;

	if (!(f & SR_ROCE_F_LAST))
		return pkt->payload_len == s->attr.mtu;
	if (!(f & SR_ROCE_F_FIRST) && pkt->payload_len == 0)
		return false;
	return pkt->payload_len <= s->attr.mtu;
}

static bool imm_op(uint8_t opcode)
{
	uint8_t o = opcode & SR_ROCE_OPER_MASK;

	return o == SR_ROCE_WRITE_LAST_IMM || o == SR_ROCE_WRITE_ONLY_IMM;
}

/*
 * Take a posted receive for the message pkt starts (a SEND, or a WRITE with immediate).
 * None posted: RNR NAK, the requester retries after min_rnr_timer. Any other failure is
 * fatal with local completion status st. Returns true when there is a receive.
 */
static bool begin_recv(struct sr_rc_resp *s, const struct sr_roce_pkt *pkt,
		       enum ibv_wc_status st)
{
	int err = s->ops->recv_begin(s->ctx);

	if (err == -EAGAIN) {
		queue_aeth(s, SR_AETH_SYN_RNR(s->attr.min_rnr_timer), pkt->psn);
		s->stats.rnr_naks++;
		s->nak_sent = true;
		return false;
	}
	if (err) {
		fatal(s, SR_AETH_NAK_REM_OP, pkt->psn, st);
		return false;
	}
	s->have_recv = true;
	return true;
}

/* Returns true when the request was executed (epsn moves past it). */
static bool exec_send(struct sr_rc_resp *s, const struct sr_roce_pkt *pkt)
{
	uint8_t f = pkt->op->flags;
	int err;

	if (f & SR_ROCE_F_FIRST) {
		if (!begin_recv(s, pkt, IBV_WC_LOC_QP_OP_ERR))
			return false;
		s->msg = SR_ROCE_K_SEND;
		s->msg_off = 0;
	}
	err = s->ops->recv_data(s->ctx, s->msg_off, pkt->payload, pkt->payload_len);
	if (err) {
		fatal(s, nak_code(err, false), pkt->psn, recv_status(err));
		return false;
	}
	s->msg_off += pkt->payload_len;
	if (f & SR_ROCE_F_LAST) {
		struct sr_rc_recv_info info = {
			.status = IBV_WC_SUCCESS,
			.with_imm = !!(pkt->op->hdrs & SR_ROCE_H_IMMDT),
			.with_inv = !!(pkt->op->hdrs & SR_ROCE_H_IETH),
			.imm = pkt->imm,
			.inv_rkey = pkt->inv_rkey,
			.byte_len = s->msg_off,
		};

		s->msg = SR_RC_MSG_NONE;
		s->have_recv = false;
		s->msn = sr_psn_add(s->msn, 1);
		s->ops->recv_done(s->ctx, &info);
	}
	return true;
}

static bool exec_write(struct sr_rc_resp *s, const struct sr_roce_pkt *pkt)
{
	uint8_t f = pkt->op->flags;
	uint32_t off = (f & SR_ROCE_F_FIRST) ? 0 : s->msg_off;
	uint32_t total = (f & SR_ROCE_F_FIRST) ? pkt->dma_len : s->w_len;
	int err;

	if (f & SR_ROCE_F_FIRST) {
		if (pkt->dma_len > (1u << 31)) {
			fatal(s, SR_AETH_NAK_INV_REQ, pkt->psn, IBV_WC_SUCCESS);
			return false;
		}
		if (pkt->dma_len) {
			err = s->ops->rkey_check(s->ctx, pkt->rkey, pkt->va, pkt->dma_len,
						 SR_RC_ACCESS_WRITE);
			if (err) {
				fatal(s, nak_code(err, true), pkt->psn, IBV_WC_SUCCESS);
				return false;
			}
		}
	}
	if (pkt->payload_len > total - off ||
	    ((f & SR_ROCE_F_LAST) && off + pkt->payload_len != total)) {
		fatal(s, SR_AETH_NAK_INV_REQ, pkt->psn, IBV_WC_SUCCESS);
		return false;
	}
	if (imm_op(pkt->opcode) && !begin_recv(s, pkt, IBV_WC_SUCCESS))
		return false;
	if (f & SR_ROCE_F_FIRST) {
		s->w_va = pkt->va;
		s->w_rkey = pkt->rkey;
		s->w_len = pkt->dma_len;
		s->msg_off = 0;
		s->msg = SR_ROCE_K_WRITE;
	}
	if (pkt->payload_len) {
		err = s->ops->write_data(s->ctx, s->w_rkey, s->w_va + off, pkt->payload,
					 pkt->payload_len);
		if (err) {
			fatal(s, nak_code(err, true), pkt->psn, IBV_WC_LOC_PROT_ERR);
			return false;
		}
	}
	s->msg_off = off + pkt->payload_len;
	if (f & SR_ROCE_F_LAST) {
		s->msg = SR_RC_MSG_NONE;
		s->msn = sr_psn_add(s->msn, 1);
		if (s->have_recv) {
			struct sr_rc_recv_info info = {
				.status = IBV_WC_SUCCESS,
				.is_write = true,
				.with_imm = true,
				.imm = pkt->imm,
				.byte_len = s->w_len,
			};

			s->have_recv = false;
			s->ops->recv_done(s->ctx, &info);
		}
	}
	return true;
}

static void exec_read(struct sr_rc_resp *s, const struct sr_roce_pkt *pkt)
{
	uint32_t npsn = pkt->dma_len ? (pkt->dma_len + s->attr.mtu - 1) / s->attr.mtu : 1;
	struct sr_rc_res *r;
	int err;

	if (s->attr.max_dest_rd_atomic == 0 || pkt->dma_len > (1u << 31)) {
		fatal(s, SR_AETH_NAK_INV_REQ, pkt->psn, IBV_WC_SUCCESS);
		return;
	}
	if (pkt->dma_len) {
		err = s->ops->rkey_check(s->ctx, pkt->rkey, pkt->va, pkt->dma_len,
					 SR_RC_ACCESS_READ);
		if (err) {
			fatal(s, nak_code(err, true), pkt->psn, IBV_WC_SUCCESS);
			return;
		}
	}
	s->msn = sr_psn_add(s->msn, 1);
	r = res_save(s);
	r->kind = SR_ROCE_K_READ_REQ;
	r->psn = pkt->psn;
	r->npsn = npsn;
	r->va = pkt->va;
	r->rkey = pkt->rkey;
	r->len = pkt->dma_len;
	r->msn = s->msn;
	queue_read(s, pkt->psn, pkt->va, pkt->rkey, pkt->dma_len, s->msn);
	s->epsn = sr_psn_add(s->epsn, npsn);
	s->unacked = 0;		/* the responses acknowledge what came before */
}

static void exec_atomic(struct sr_rc_resp *s, const struct sr_roce_pkt *pkt)
{
	bool cmp = (pkt->opcode & SR_ROCE_OPER_MASK) == SR_ROCE_CMP_SWAP;
	struct sr_rc_res *r;
	uint64_t orig = 0;
	int err;

	if (s->attr.max_dest_rd_atomic == 0 || (pkt->va & 7)) {
		fatal(s, SR_AETH_NAK_INV_REQ, pkt->psn, IBV_WC_SUCCESS);
		return;
	}
	err = s->ops->rkey_check(s->ctx, pkt->rkey, pkt->va, 8, SR_RC_ACCESS_ATOMIC);
	if (err) {
		fatal(s, nak_code(err, true), pkt->psn, IBV_WC_SUCCESS);
		return;
	}
	err = s->ops->atomic(s->ctx, pkt->rkey, pkt->va, cmp, pkt->compare, pkt->swap_add,
			     &orig);
	if (err) {
		fatal(s, nak_code(err, false), pkt->psn, IBV_WC_SUCCESS);
		return;
	}
	s->msn = sr_psn_add(s->msn, 1);
	r = res_save(s);
	r->kind = SR_ROCE_K_ATOMIC;
	r->psn = pkt->psn;
	r->npsn = 1;
	r->orig = orig;
	r->msn = s->msn;
	queue_atomic(s, pkt->psn, orig, s->msn);
	s->epsn = sr_psn_add(s->epsn, 1);
	s->unacked = 0;
}

void sr_rc_resp_recv(struct sr_rc_resp *s, const struct sr_roce_pkt *pkt)
{
	const struct sr_roce_opinfo *op = pkt->op;
	int32_t d;
	bool done;

	if (s->state != SR_RC_RESP_RUN || !op || !(op->flags & SR_ROCE_F_REQ) ||
	    (op->opcode & SR_ROCE_CLASS_MASK) != SR_ROCE_RC || out_len(s) >= s->out_cap) {
		s->stats.dropped++;
		return;
	}
	d = sr_psn_diff(pkt->psn, s->epsn);
	if (d > 0) {
		/* a gap: NAK once, then wait for the expected PSN */
		if (!s->nak_sent) {
			queue_aeth(s, SR_AETH_SYN_NAK(SR_AETH_NAK_PSN_SEQ), s->epsn);
			s->stats.seq_naks++;
			s->nak_sent = true;
		} else {
			s->stats.dropped++;
		}
		return;
	}
	if (d < 0) {
		duplicate(s, pkt);
		return;
	}
	s->nak_sent = false;
	/* FIRST/ONLY starts a message, MIDDLE/LAST continues the one in progress */
	if ((op->flags & SR_ROCE_F_FIRST) ? s->msg != SR_RC_MSG_NONE : s->msg != op->kind) {
		fatal(s, SR_AETH_NAK_INV_REQ, pkt->psn, IBV_WC_LOC_QP_OP_ERR);
		return;
	}
	switch (op->kind) {
	case SR_ROCE_K_SEND:
	case SR_ROCE_K_WRITE:
		if (!size_ok(s, pkt)) {
			fatal(s, SR_AETH_NAK_INV_REQ, pkt->psn, IBV_WC_LOC_LEN_ERR);
			return;
		}
		done = op->kind == SR_ROCE_K_SEND ? exec_send(s, pkt) : exec_write(s, pkt);
		if (!done)
			return;
		break;
	case SR_ROCE_K_READ_REQ:
		s->stats.reqs++;
		exec_read(s, pkt);
		return;
	case SR_ROCE_K_ATOMIC:
		s->stats.reqs++;
		exec_atomic(s, pkt);
		return;
	default:	/* FLUSH, ATOMIC WRITE: not supported */
		fatal(s, SR_AETH_NAK_INV_REQ, pkt->psn, IBV_WC_SUCCESS);
		return;
	}
	s->stats.reqs++;
	s->epsn = sr_psn_add(s->epsn, 1);
	s->unacked++;
	if (pkt->ackreq || (s->attr.ack_every && s->unacked >= s->attr.ack_every))
		queue_ack(s, pkt->psn);
}

int sr_rc_resp_next(struct sr_rc_resp *s, struct sr_rc_resp_tx *tx)
{
	struct sr_rc_out *o;
	struct sr_roce_pkt *h = &tx->hdr;

	if (!out_len(s))
		return 0;
	o = &s->out[s->out_head % s->out_cap];
	memset(tx, 0, sizeof(*tx));
	h->dqpn = s->attr.dqpn;
	h->pkey = s->attr.pkey;
	h->syndrome = o->syndrome;
	h->msn = o->msn;
	h->psn = o->psn;
	switch (o->kind) {
	case SR_ROCE_K_ACK:
		h->opcode = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_ACK);
		s->out_head++;
		break;
	case SR_ROCE_K_ATOMIC_ACK:
		h->opcode = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_ATOMIC_ACK);
		h->orig = o->orig;
		s->out_head++;
		break;
	default: {
		uint32_t left = o->len - o->off, mtu = s->attr.mtu;
		uint32_t len = left < mtu ? left : mtu;
		bool first = o->off == 0, last = len == left;
		uint8_t oper = first && last ? SR_ROCE_READ_RESP_ONLY :
			       first	     ? SR_ROCE_READ_RESP_FIRST :
			       last	     ? SR_ROCE_READ_RESP_LAST :
					       SR_ROCE_READ_RESP_MIDDLE;

		h->opcode = SR_ROCE_OP(SR_ROCE_RC, oper);
		h->psn = sr_psn_add(o->psn, o->off / mtu);
		h->syndrome = SR_AETH_ACK_NO_CREDIT;
		tx->va = o->va + o->off;
		tx->rkey = o->rkey;
		tx->len = len;
		o->off += len;
		if (last)
			s->out_head++;
		break;
	}
	}
	return 1;
}
