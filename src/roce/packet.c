// SPDX-License-Identifier: MIT
/*
 * The RoCE v2 opcode table, the receive parser and the header encoder. The table is
 * indexed by the OpCode byte; the extension header offsets of each entry are computed at
 * compile time from its header set, in the order IBTA fixes (DETH, FETH, RETH, AtomicETH,
 * AETH, AtomicAckETH, ImmDt, IETH).
 */
#include "roce/packet.h"

#include <errno.h>
#include <string.h>

#include "roce/icrc.h"

/* Bytes of the headers in @h that come before the named one. */
#define HL(h, bit, n) (((h) & (bit)) ? (n) : 0)
#define B_FETH(h) HL(h, SR_ROCE_H_DETH, SR_DETH_LEN)
#define B_RETH(h) (B_FETH(h) + HL(h, SR_ROCE_H_FETH, SR_FETH_LEN))
#define B_ATOMIC(h) (B_RETH(h) + HL(h, SR_ROCE_H_RETH, SR_RETH_LEN))
#define B_AETH(h) (B_ATOMIC(h) + HL(h, SR_ROCE_H_ATOMIC, SR_ATOMIC_ETH_LEN))
#define B_AACK(h) (B_AETH(h) + HL(h, SR_ROCE_H_AETH, SR_AETH_LEN))
#define B_IMMDT(h) (B_AACK(h) + HL(h, SR_ROCE_H_ATOMIC_ACK, SR_ATOMIC_ACK_ETH_LEN))
#define B_IETH(h) (B_IMMDT(h) + HL(h, SR_ROCE_H_IMMDT, SR_IMMDT_LEN))
#define B_END(h) (B_IETH(h) + HL(h, SR_ROCE_H_IETH, SR_IETH_LEN))
#define OFF(h, bit, before) (((h) & (bit)) ? SR_BTH_LEN + (before) : 0)

#define OPX(cls, oper, nm, k, h, f, fixed)                                                 \
	[SR_ROCE_OP(cls, oper)] = {                                                        \
		.name = nm,                                                                \
		.opcode = SR_ROCE_OP(cls, oper),                                           \
		.kind = k,                                                                 \
		.hdrs = (h),                                                               \
		.flags = (f),                                                              \
		.hdr_len = SR_BTH_LEN + B_END(h),                                          \
		.payload_fixed = fixed,                                                    \
		.off_deth = OFF(h, SR_ROCE_H_DETH, 0),                                     \
		.off_feth = OFF(h, SR_ROCE_H_FETH, B_FETH(h)),                             \
		.off_reth = OFF(h, SR_ROCE_H_RETH, B_RETH(h)),                             \
		.off_atomic = OFF(h, SR_ROCE_H_ATOMIC, B_ATOMIC(h)),                       \
		.off_aeth = OFF(h, SR_ROCE_H_AETH, B_AETH(h)),                             \
		.off_atomic_ack = OFF(h, SR_ROCE_H_ATOMIC_ACK, B_AACK(h)),                 \
		.off_immdt = OFF(h, SR_ROCE_H_IMMDT, B_IMMDT(h)),                          \
		.off_ieth = OFF(h, SR_ROCE_H_IETH, B_IETH(h)),                             \
	}
#define OP(cls, oper, nm, k, h, f) OPX(cls, oper, nm, k, h, f, 0)

#define REQ_P (SR_ROCE_F_REQ | SR_ROCE_F_PAYLOAD)
#define RESP_P (SR_ROCE_F_RESP | SR_ROCE_F_PAYLOAD)

/* SEND and RDMA WRITE exist in RC and UC with the same headers. */
#define SEND_WRITE(cls, p)                                                                 \
	OP(cls, SR_ROCE_SEND_FIRST, p "SEND_FIRST", SR_ROCE_K_SEND, 0,                     \
	   SR_ROCE_F_FIRST | REQ_P),                                                       \
	OP(cls, SR_ROCE_SEND_MIDDLE, p "SEND_MIDDLE", SR_ROCE_K_SEND, 0,                   \
	   SR_ROCE_F_MIDDLE | REQ_P),                                                      \
	OP(cls, SR_ROCE_SEND_LAST, p "SEND_LAST", SR_ROCE_K_SEND, 0, SR_ROCE_F_LAST | REQ_P), \
	OP(cls, SR_ROCE_SEND_LAST_IMM, p "SEND_LAST_WITH_IMMEDIATE", SR_ROCE_K_SEND,      \
	   SR_ROCE_H_IMMDT, SR_ROCE_F_LAST | REQ_P),                                       \
	OP(cls, SR_ROCE_SEND_ONLY, p "SEND_ONLY", SR_ROCE_K_SEND, 0, SR_ROCE_F_ONLY | REQ_P), \
	OP(cls, SR_ROCE_SEND_ONLY_IMM, p "SEND_ONLY_WITH_IMMEDIATE", SR_ROCE_K_SEND,      \
	   SR_ROCE_H_IMMDT, SR_ROCE_F_ONLY | REQ_P),                                       \
	OP(cls, SR_ROCE_WRITE_FIRST, p "RDMA_WRITE_FIRST", SR_ROCE_K_WRITE, SR_ROCE_H_RETH, \
	   SR_ROCE_F_FIRST | REQ_P),                                                       \
	OP(cls, SR_ROCE_WRITE_MIDDLE, p "RDMA_WRITE_MIDDLE", SR_ROCE_K_WRITE, 0,           \
	   SR_ROCE_F_MIDDLE | REQ_P),                                                      \
	OP(cls, SR_ROCE_WRITE_LAST, p "RDMA_WRITE_LAST", SR_ROCE_K_WRITE, 0,               \
	   SR_ROCE_F_LAST | REQ_P),                                                        \
	OP(cls, SR_ROCE_WRITE_LAST_IMM, p "RDMA_WRITE_LAST_WITH_IMMEDIATE",                \
	   SR_ROCE_K_WRITE, SR_ROCE_H_IMMDT, SR_ROCE_F_LAST | REQ_P),                      \
	OP(cls, SR_ROCE_WRITE_ONLY, p "RDMA_WRITE_ONLY", SR_ROCE_K_WRITE, SR_ROCE_H_RETH,  \
	   SR_ROCE_F_ONLY | REQ_P),                                                        \
	OP(cls, SR_ROCE_WRITE_ONLY_IMM, p "RDMA_WRITE_ONLY_WITH_IMMEDIATE",                \
	   SR_ROCE_K_WRITE, SR_ROCE_H_RETH | SR_ROCE_H_IMMDT, SR_ROCE_F_ONLY | REQ_P)

static const struct sr_roce_opinfo optab[256] = {
	SEND_WRITE(SR_ROCE_RC, "RC_"),
	OP(SR_ROCE_RC, SR_ROCE_READ_REQ, "RC_RDMA_READ_REQUEST", SR_ROCE_K_READ_REQ,
	   SR_ROCE_H_RETH, SR_ROCE_F_ONLY | SR_ROCE_F_REQ),
	OP(SR_ROCE_RC, SR_ROCE_READ_RESP_FIRST, "RC_RDMA_READ_RESPONSE_FIRST",
	   SR_ROCE_K_READ_RESP, SR_ROCE_H_AETH, SR_ROCE_F_FIRST | RESP_P),
	OP(SR_ROCE_RC, SR_ROCE_READ_RESP_MIDDLE, "RC_RDMA_READ_RESPONSE_MIDDLE",
	   SR_ROCE_K_READ_RESP, 0, SR_ROCE_F_MIDDLE | RESP_P),
	OP(SR_ROCE_RC, SR_ROCE_READ_RESP_LAST, "RC_RDMA_READ_RESPONSE_LAST",
	   SR_ROCE_K_READ_RESP, SR_ROCE_H_AETH, SR_ROCE_F_LAST | RESP_P),
	OP(SR_ROCE_RC, SR_ROCE_READ_RESP_ONLY, "RC_RDMA_READ_RESPONSE_ONLY",
	   SR_ROCE_K_READ_RESP, SR_ROCE_H_AETH, SR_ROCE_F_ONLY | RESP_P),
	OP(SR_ROCE_RC, SR_ROCE_ACK, "RC_ACKNOWLEDGE", SR_ROCE_K_ACK, SR_ROCE_H_AETH,
	   SR_ROCE_F_ONLY | SR_ROCE_F_RESP),
	OP(SR_ROCE_RC, SR_ROCE_ATOMIC_ACK, "RC_ATOMIC_ACKNOWLEDGE", SR_ROCE_K_ATOMIC_ACK,
	   SR_ROCE_H_AETH | SR_ROCE_H_ATOMIC_ACK, SR_ROCE_F_ONLY | SR_ROCE_F_RESP),
	OP(SR_ROCE_RC, SR_ROCE_CMP_SWAP, "RC_COMPARE_SWAP", SR_ROCE_K_ATOMIC, SR_ROCE_H_ATOMIC,
	   SR_ROCE_F_ONLY | SR_ROCE_F_REQ),
	OP(SR_ROCE_RC, SR_ROCE_FETCH_ADD, "RC_FETCH_ADD", SR_ROCE_K_ATOMIC, SR_ROCE_H_ATOMIC,
	   SR_ROCE_F_ONLY | SR_ROCE_F_REQ),
	OP(SR_ROCE_RC, SR_ROCE_SEND_LAST_INV, "RC_SEND_LAST_WITH_INVALIDATE", SR_ROCE_K_SEND,
	   SR_ROCE_H_IETH, SR_ROCE_F_LAST | REQ_P),
	OP(SR_ROCE_RC, SR_ROCE_SEND_ONLY_INV, "RC_SEND_ONLY_WITH_INVALIDATE", SR_ROCE_K_SEND,
	   SR_ROCE_H_IETH, SR_ROCE_F_ONLY | REQ_P),
	OP(SR_ROCE_RC, SR_ROCE_FLUSH, "RC_FLUSH", SR_ROCE_K_FLUSH,
	   SR_ROCE_H_FETH | SR_ROCE_H_RETH, SR_ROCE_F_ONLY | SR_ROCE_F_REQ),
	/* The 8 bytes to write are the payload. */
	OPX(SR_ROCE_RC, SR_ROCE_ATOMIC_WRITE, "RC_ATOMIC_WRITE", SR_ROCE_K_ATOMIC_WRITE,
	    SR_ROCE_H_RETH, SR_ROCE_F_ONLY | REQ_P, 8),
	SEND_WRITE(SR_ROCE_UC, "UC_"),
	OP(SR_ROCE_UD, SR_ROCE_SEND_ONLY, "UD_SEND_ONLY", SR_ROCE_K_SEND, SR_ROCE_H_DETH,
	   SR_ROCE_F_ONLY | REQ_P),
	OP(SR_ROCE_UD, SR_ROCE_SEND_ONLY_IMM, "UD_SEND_ONLY_WITH_IMMEDIATE", SR_ROCE_K_SEND,
	   SR_ROCE_H_DETH | SR_ROCE_H_IMMDT, SR_ROCE_F_ONLY | REQ_P),
};

_Static_assert(SR_BTH_LEN + B_END(SR_ROCE_H_ATOMIC) == SR_ROCE_HDR_MAX,
	       "AtomicETH makes the longest header");

const struct sr_roce_opinfo *sr_roce_opinfo(uint8_t opcode)
{
	const struct sr_roce_opinfo *op = &optab[opcode];

	return op->name ? op : NULL;
}

static const char *const drop_names[SR_ROCE_DROP_COUNT] = {
	[SR_ROCE_OK] = "ok",
	[SR_ROCE_DROP_SHORT] = "short",
	[SR_ROCE_DROP_TVER] = "tver",
	[SR_ROCE_DROP_CLASS] = "class",
	[SR_ROCE_DROP_OPCODE] = "opcode",
	[SR_ROCE_DROP_HDR_LEN] = "hdr_len",
	[SR_ROCE_DROP_PAD] = "pad",
	[SR_ROCE_DROP_PAYLOAD] = "payload",
	[SR_ROCE_DROP_QPN] = "qpn",
};

const char *sr_roce_drop_name(enum sr_roce_drop r)
{
	return (unsigned int)r < SR_ROCE_DROP_COUNT ? drop_names[r] : "?";
}

/* SR_ROCE_CLASS_* bit of an OpCode, 0 for the classes we never take. */
static unsigned int class_bit(uint8_t opcode)
{
	switch (opcode & SR_ROCE_CLASS_MASK) {
	case SR_ROCE_RC:
		return SR_ROCE_CLASS_RC;
	case SR_ROCE_UC:
		return SR_ROCE_CLASS_UC;
	case SR_ROCE_UD:
		return SR_ROCE_CLASS_UD;
	default:
		return 0;
	}
}

static void parse_ext(const uint8_t *b, const struct sr_roce_opinfo *op,
		      struct sr_roce_pkt *p)
{
	if (op->off_deth) {
		p->qkey = sr_get_be32(b + op->off_deth + SR_WOFF(sr_deth, qkey));
		p->sqpn = sr_get_be24(b + op->off_deth + SR_WOFF(sr_deth, sqpn));
	}
	if (op->off_feth) {
		uint32_t v = sr_get_be32(b + op->off_feth);

		p->flush_sel = (uint8_t)((v & SR_FETH_SEL_MASK) >> SR_FETH_SEL_SHIFT);
		p->flush_plt = (uint8_t)(v & SR_FETH_PLT_MASK);
	}
	if (op->off_reth) {
		p->va = sr_get_be64(b + op->off_reth + SR_WOFF(sr_reth, va));
		p->rkey = sr_get_be32(b + op->off_reth + SR_WOFF(sr_reth, rkey));
		p->dma_len = sr_get_be32(b + op->off_reth + SR_WOFF(sr_reth, len));
	}
	if (op->off_atomic) {
		const uint8_t *a = b + op->off_atomic;

		p->va = sr_get_be64(a + SR_WOFF(sr_atomic_eth, va));
		p->rkey = sr_get_be32(a + SR_WOFF(sr_atomic_eth, rkey));
		p->swap_add = sr_get_be64(a + SR_WOFF(sr_atomic_eth, swap_add));
		p->compare = sr_get_be64(a + SR_WOFF(sr_atomic_eth, compare));
	}
	if (op->off_aeth) {
		p->syndrome = b[op->off_aeth + SR_WOFF(sr_aeth, syndrome)];
		p->msn = sr_get_be24(b + op->off_aeth + SR_WOFF(sr_aeth, msn));
	}
	if (op->off_atomic_ack)
		p->orig = sr_get_be64(b + op->off_atomic_ack);
	if (op->off_immdt)
		p->imm = sr_get_be32(b + op->off_immdt);
	if (op->off_ieth)
		p->inv_rkey = sr_get_be32(b + op->off_ieth);
}

enum sr_roce_drop sr_roce_parse(const uint8_t *buf, size_t len, unsigned int classes,
				struct sr_roce_pkt *p)
{
	const struct sr_roce_opinfo *op;
	size_t rest;
	uint8_t opcode, flags;

	if (len < SR_BTH_LEN + SR_ROCE_ICRC_LEN)
		return SR_ROCE_DROP_SHORT;
	opcode = buf[SR_WOFF(sr_bth, opcode)];
	flags = buf[SR_WOFF(sr_bth, flags)];
	if ((flags & SR_BTH_TVER_MASK) != SR_BTH_TVER)
		return SR_ROCE_DROP_TVER;
	if (!(class_bit(opcode) & classes))
		return SR_ROCE_DROP_CLASS;
	op = sr_roce_opinfo(opcode);
	if (!op)
		return SR_ROCE_DROP_OPCODE;
	if (len < (size_t)op->hdr_len + SR_ROCE_ICRC_LEN)
		return SR_ROCE_DROP_HDR_LEN;

	memset(p, 0, sizeof(*p));
	p->op = op;
	p->opcode = opcode;
	p->pad = (flags & SR_BTH_PAD_MASK) >> SR_BTH_PAD_SHIFT;
	/* Payload and pad fill whole 4-byte words, and the pad is part of them. */
	rest = len - op->hdr_len - SR_ROCE_ICRC_LEN;
	if (rest % 4 || p->pad > rest)
		return SR_ROCE_DROP_PAD;
	p->payload_len = (uint32_t)(rest - p->pad);
	if (!(op->flags & SR_ROCE_F_PAYLOAD) && rest)
		return SR_ROCE_DROP_PAYLOAD;
	if (op->payload_fixed && p->payload_len != op->payload_fixed)
		return SR_ROCE_DROP_PAYLOAD;
	p->dqpn = sr_get_be24(buf + SR_WOFF(sr_bth, dqpn));
	if (!p->dqpn)
		return SR_ROCE_DROP_QPN;

	p->se = flags & SR_BTH_SE;
	p->mig = flags & SR_BTH_MIG;
	p->pkey = sr_get_be16(buf + SR_WOFF(sr_bth, pkey));
	p->fecn = buf[SR_WOFF(sr_bth, fecn_becn)] & SR_BTH_FECN;
	p->becn = buf[SR_WOFF(sr_bth, fecn_becn)] & SR_BTH_BECN;
	p->ackreq = buf[SR_WOFF(sr_bth, ackreq)] & SR_BTH_ACKREQ;
	p->psn = sr_get_be24(buf + SR_WOFF(sr_bth, psn));
	parse_ext(buf, op, p);
	p->hdr_len = op->hdr_len;
	p->payload = buf + op->hdr_len;
	p->icrc = buf + len - SR_ROCE_ICRC_LEN;
	return SR_ROCE_OK;
}

/* Fields wider than their slot on the wire. */
static bool build_fields_fit(const struct sr_roce_opinfo *op, const struct sr_roce_pkt *p)
{
	if (!p->dqpn || p->dqpn > SR_ROCE_24BIT_MASK || p->psn > SR_ROCE_24BIT_MASK)
		return false;
	if (op->off_deth && p->sqpn > SR_ROCE_24BIT_MASK)
		return false;
	if (op->off_feth && (p->flush_sel > SR_FETH_SEL_MASK >> SR_FETH_SEL_SHIFT ||
			     p->flush_plt > SR_FETH_PLT_MASK))
		return false;
	if (op->off_aeth && (p->msn > SR_ROCE_24BIT_MASK || (p->syndrome & SR_AETH_RESV_BIT)))
		return false;
	return true;
}

static void build_ext(uint8_t *b, const struct sr_roce_opinfo *op, const struct sr_roce_pkt *p)
{
	if (op->off_deth) {
		sr_put_be32(b + op->off_deth + SR_WOFF(sr_deth, qkey), p->qkey);
		b[op->off_deth + SR_WOFF(sr_deth, resv)] = 0;
		sr_put_be24(b + op->off_deth + SR_WOFF(sr_deth, sqpn), p->sqpn);
	}
	if (op->off_feth)
		sr_put_be32(b + op->off_feth,
			    (uint32_t)p->flush_sel << SR_FETH_SEL_SHIFT | p->flush_plt);
	if (op->off_reth) {
		sr_put_be64(b + op->off_reth + SR_WOFF(sr_reth, va), p->va);
		sr_put_be32(b + op->off_reth + SR_WOFF(sr_reth, rkey), p->rkey);
		sr_put_be32(b + op->off_reth + SR_WOFF(sr_reth, len), p->dma_len);
	}
	if (op->off_atomic) {
		uint8_t *a = b + op->off_atomic;

		sr_put_be64(a + SR_WOFF(sr_atomic_eth, va), p->va);
		sr_put_be32(a + SR_WOFF(sr_atomic_eth, rkey), p->rkey);
		sr_put_be64(a + SR_WOFF(sr_atomic_eth, swap_add), p->swap_add);
		sr_put_be64(a + SR_WOFF(sr_atomic_eth, compare), p->compare);
	}
	if (op->off_aeth) {
		b[op->off_aeth + SR_WOFF(sr_aeth, syndrome)] = p->syndrome;
		sr_put_be24(b + op->off_aeth + SR_WOFF(sr_aeth, msn), p->msn);
	}
	if (op->off_atomic_ack)
		sr_put_be64(b + op->off_atomic_ack, p->orig);
	if (op->off_immdt)
		sr_put_be32(b + op->off_immdt, p->imm);
	if (op->off_ieth)
		sr_put_be32(b + op->off_ieth, p->inv_rkey);
}

ssize_t sr_roce_build(uint8_t *out, size_t cap, const struct sr_roce_pkt *p,
		      size_t payload_len)
{
	const struct sr_roce_opinfo *op = sr_roce_opinfo(p->opcode);

	if (!op)
		return -EINVAL;
	if (!(op->flags & SR_ROCE_F_PAYLOAD) && payload_len)
		return -EINVAL;
	if (op->payload_fixed && payload_len != op->payload_fixed)
		return -EINVAL;
	if (!build_fields_fit(op, p))
		return -EINVAL;
	if (payload_len > (size_t)(SR_ROCE_UDP_PAYLOAD_MAX - op->hdr_len - SR_ROCE_TRAILER_MAX))
		return -EMSGSIZE;
	if (cap < op->hdr_len)
		return -ENOSPC;

	out[SR_WOFF(sr_bth, opcode)] = p->opcode;
	out[SR_WOFF(sr_bth, flags)] =
		(uint8_t)((p->se ? SR_BTH_SE : 0) | (p->mig ? SR_BTH_MIG : 0) |
			  sr_roce_pad((uint32_t)payload_len) << SR_BTH_PAD_SHIFT | SR_BTH_TVER);
	sr_put_be16(out + SR_WOFF(sr_bth, pkey), p->pkey);
	out[SR_WOFF(sr_bth, fecn_becn)] =
		(uint8_t)((p->fecn ? SR_BTH_FECN : 0) | (p->becn ? SR_BTH_BECN : 0));
	sr_put_be24(out + SR_WOFF(sr_bth, dqpn), p->dqpn);
	out[SR_WOFF(sr_bth, ackreq)] = p->ackreq ? SR_BTH_ACKREQ : 0;
	sr_put_be24(out + SR_WOFF(sr_bth, psn), p->psn);
	build_ext(out, op, p);
	return op->hdr_len;
}

size_t sr_roce_put_trailer(uint8_t out[SR_ROCE_TRAILER_MAX], uint32_t payload_len,
			   struct sr_icrc *c)
{
	unsigned int pad = sr_roce_pad(payload_len);

	memset(out, 0, pad);
	sr_icrc_data(c, out, pad);
	sr_icrc_put(out + pad, sr_icrc_end(c));
	return pad + SR_ROCE_ICRC_LEN;
}
