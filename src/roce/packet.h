/* SPDX-License-Identifier: MIT */
/*
 * RoCE v2 packets: the opcode table, a parser for received UDP payloads and an
 * encoder for the headers of packets to send. Socket-free and copy-free: the
 * parser points into the caller's datagram, the encoder writes only the header
 * bytes, and the payload travels by iovec.
 *
 * Transmit, per packet:
 *   hlen = sr_roce_build(hdr, sizeof(hdr), &pkt, payload_len)
 *   sr_icrc_begin(&c, &flow, hlen + payload_len + sr_roce_pad(payload_len) + 4)
 *   sr_icrc_hdrs(&c, hdr, hlen); sr_icrc_data(&c, payload, payload_len)
 *   tlen = sr_roce_put_trailer(trl, payload_len, &c)
 *   sendmsg({hdr, hlen}, {payload...}, {trl, tlen})
 *
 * Receive:
 *   r = sr_roce_parse(dgram, len, SR_ROCE_CLASSES_ALL, &pkt)  (drop and count r if not 0)
 *   find the QP by pkt.dqpn; sr_roce_icrc_verify(&flow, dgram, len) where the flow is
 *   known (roce/icrc.h); then act on pkt.
 */
#ifndef SR_ROCE_PACKET_H
#define SR_ROCE_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "roce/wire.h"

/* Which extension headers an opcode carries (struct sr_roce_opinfo.hdrs). */
enum {
	SR_ROCE_H_DETH = 1 << 0,
	SR_ROCE_H_FETH = 1 << 1,
	SR_ROCE_H_RETH = 1 << 2,
	SR_ROCE_H_ATOMIC = 1 << 3,
	SR_ROCE_H_AETH = 1 << 4,
	SR_ROCE_H_ATOMIC_ACK = 1 << 5,
	SR_ROCE_H_IMMDT = 1 << 6,
	SR_ROCE_H_IETH = 1 << 7,
};

/* What an opcode is (struct sr_roce_opinfo.flags). ONLY is FIRST | LAST. */
enum {
	SR_ROCE_F_FIRST = 1 << 0,	/* first packet of a message (or its only one) */
	SR_ROCE_F_MIDDLE = 1 << 1,
	SR_ROCE_F_LAST = 1 << 2,	/* last packet of a message (or its only one) */
	SR_ROCE_F_REQ = 1 << 3,		/* sent by the requester */
	SR_ROCE_F_RESP = 1 << 4,	/* sent by the responder */
	SR_ROCE_F_PAYLOAD = 1 << 5,	/* may carry payload (0 bytes allowed) */
	SR_ROCE_F_ONLY = SR_ROCE_F_FIRST | SR_ROCE_F_LAST,
};

/* The message an opcode belongs to. */
enum sr_roce_kind {
	SR_ROCE_K_SEND,
	SR_ROCE_K_WRITE,
	SR_ROCE_K_READ_REQ,
	SR_ROCE_K_READ_RESP,
	SR_ROCE_K_ACK,
	SR_ROCE_K_ATOMIC,	/* CmpSwap, FetchAdd */
	SR_ROCE_K_ATOMIC_ACK,
	SR_ROCE_K_FLUSH,
	SR_ROCE_K_ATOMIC_WRITE,
};

/*
 * One opcode. Offsets count from the BTH; 0 means the header is absent (the BTH is at 0).
 */
struct sr_roce_opinfo {
	const char *name;	/* as in IBTA / ib_pack.h, e.g. "RC_SEND_ONLY" */
	uint8_t opcode;
	uint8_t kind;		/* enum sr_roce_kind */
	uint8_t hdrs;		/* SR_ROCE_H_* */
	uint8_t flags;		/* SR_ROCE_F_* */
	uint8_t hdr_len;	/* BTH + extension headers */
	uint8_t payload_fixed;	/* payload must be exactly this long (ATOMIC WRITE: 8), else 0 */
	uint8_t off_deth, off_feth, off_reth, off_atomic, off_aeth, off_atomic_ack, off_immdt,
		off_ieth;
};

/*
 * The opcode's entry, or NULL when it is not one of the RC, UC or UD opcodes rxe knows
 * (reserved operations, RD, CNP, XRC and the manufacturer range).
 */
const struct sr_roce_opinfo *sr_roce_opinfo(uint8_t opcode);

/* Transport classes a parse accepts (the @classes argument). */
enum {
	SR_ROCE_CLASS_RC = 1 << 0,
	SR_ROCE_CLASS_UC = 1 << 1,
	SR_ROCE_CLASS_UD = 1 << 2,
	SR_ROCE_CLASSES_ALL = SR_ROCE_CLASS_RC | SR_ROCE_CLASS_UC | SR_ROCE_CLASS_UD,
};

/* Why a datagram was dropped; sr_roce_parse() checks in this order. */
enum sr_roce_drop {
	SR_ROCE_OK = 0,
	SR_ROCE_DROP_SHORT,	/* shorter than BTH + ICRC */
	SR_ROCE_DROP_TVER,	/* TVer not 0 */
	SR_ROCE_DROP_CLASS,	/* RD, CNP, XRC or a class the caller did not allow */
	SR_ROCE_DROP_OPCODE,	/* reserved operation of an RC/UC/UD class */
	SR_ROCE_DROP_HDR_LEN,	/* too short for the opcode's extension headers + ICRC */
	SR_ROCE_DROP_PAD,	/* payload + pad not a multiple of 4, or more pad than bytes */
	SR_ROCE_DROP_PAYLOAD,	/* payload on an opcode that has none, or the wrong size */
	SR_ROCE_DROP_QPN,	/* DestQP 0 */
	SR_ROCE_DROP_COUNT
};

/* Short fixed name of a drop reason ("tver", "pad"...), for counters and logs. */
const char *sr_roce_drop_name(enum sr_roce_drop r);

/*
 * A packet's headers in host order. Parse fills it; build reads it. Extension header
 * fields are meaningful only when op->hdrs names the header.
 */
struct sr_roce_pkt {
	const struct sr_roce_opinfo *op;	/* parse: set; build: ignored */
	uint8_t opcode;
	/* BTH */
	bool se, mig, fecn, becn, ackreq;
	uint8_t pad;		/* parse: PadCnt; build: ignored (from the payload length) */
	uint16_t pkey;
	uint32_t dqpn;		/* 24 bits */
	uint32_t psn;		/* 24 bits */
	/* extension headers */
	uint32_t qkey, sqpn;			/* DETH */
	uint8_t flush_sel, flush_plt;		/* FETH */
	uint64_t va;				/* RETH or AtomicETH */
	uint32_t rkey;				/* RETH or AtomicETH */
	uint32_t dma_len;			/* RETH */
	uint64_t swap_add, compare;		/* AtomicETH */
	uint8_t syndrome;			/* AETH */
	uint32_t msn;				/* AETH, 24 bits */
	uint64_t orig;				/* AtomicAckETH */
	uint32_t imm;		/* ImmDt read as big-endian: htobe32(imm) is ibv_wc.imm_data */
	uint32_t inv_rkey;			/* IETH */
	/* parse only: where the rest lies in the datagram */
	uint16_t hdr_len;	/* BTH + extension headers */
	const uint8_t *payload;	/* after the headers; pad and ICRC excluded */
	uint32_t payload_len;
	const uint8_t *icrc;	/* the last 4 bytes */
};

/**
 * sr_roce_parse - check and decode one received UDP payload.
 * @buf: the bytes after the UDP header, ICRC included; only [buf, buf + len) is read.
 * @classes: SR_ROCE_CLASS_* the caller accepts.
 * Returns: SR_ROCE_OK with @pkt filled (payload points into @buf), or the drop reason
 *	(@pkt then undefined). The ICRC is not checked here (sr_roce_icrc_verify()), nor
 *	P_Key, Q_Key, PSN or anything that needs the QP.
 */
enum sr_roce_drop sr_roce_parse(const uint8_t *buf, size_t len, unsigned int classes,
				struct sr_roce_pkt *pkt);

/**
 * sr_roce_build - write the BTH and the extension headers of @pkt->opcode.
 * @pkt: header fields; TVer is 0 and PadCnt follows from @payload_len.
 * @payload_len: payload bytes that will follow the headers.
 * Returns: the header length, or -EINVAL (unknown opcode, payload on an opcode without
 *	one, a field wider than its slot, AETH bit 7 set), -ENOSPC (@cap too small).
 */
ssize_t sr_roce_build(uint8_t *out, size_t cap, const struct sr_roce_pkt *pkt,
		      size_t payload_len);

struct sr_icrc;

/**
 * sr_roce_put_trailer - write the pad bytes and the ICRC after @payload_len payload bytes.
 * @c: ICRC over everything before the pad (roce/icrc.h); the pad is added here and @c is
 *	finished.
 * Returns: bytes written, pad + 4.
 */
size_t sr_roce_put_trailer(uint8_t out[SR_ROCE_TRAILER_MAX], uint32_t payload_len,
			   struct sr_icrc *c);

#endif
