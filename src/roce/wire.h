/* SPDX-License-Identifier: MIT */
/*
 * On-the-wire layouts of RoCE v2: the InfiniBand transport headers (IBTA vol 1
 * ch. 9) carried in a UDP datagram to port 4791 (IBTA Annex A17), as Linux rxe
 * sends and accepts them. Everything is big-endian except the ICRC (roce/icrc.h).
 * docs/WIRE.md §R1-§R5 describe every field.
 *
 * As in iwarp/wire.h, the structs document the layouts and give offsets; code
 * reads and writes the bytes through sr_get_be*()/sr_put_be*(), never through a
 * cast, and sub-byte fields are mask and shift constants.
 *
 * A UDP payload is: BTH | extension headers (fixed by the opcode) | payload |
 * pad 0..3 | ICRC 4.
 */
#ifndef SR_ROCE_WIRE_H
#define SR_ROCE_WIRE_H

#include <stdint.h>

/* sr_get_be16/32/64, sr_put_be16/32/64, SR_WOFF, SR_WIRE_PACKED, sr_be* */
#include "iwarp/wire.h"

/* UDP destination port of RoCE v2 (IANA; Linux ROCE_V2_UDP_DPORT). */
#define SR_ROCE_UDP_PORT 4791

/* 24-bit fields (DestQP, PSN, MSN, SrcQP) take the low 3 bytes of a word. */
#define SR_ROCE_24BIT_MASK 0xffffffu

static inline uint32_t sr_get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline void sr_put_be24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

/* ------------------------------------------------------------------ */
/* Base Transport Header, 12 bytes                                    */
/* ------------------------------------------------------------------ */

/*
 * | off | field                                                  |
 * |   0 | OpCode: transport class (bits 7..5) | operation (4..0)  |
 * |   1 | SE (7) | M (6) | PadCnt (5..4) | TVer (3..0)           |
 * |   2 | P_Key (16), bit 15 = full member                       |
 * |   4 | FECN (7) | BECN (6) | reserved (5..0)                  |
 * |   5 | DestQP (24)                                            |
 * |   8 | AckReq (7) | reserved (6..0)                           |
 * |   9 | PSN (24)                                               |
 */
struct sr_bth {
	uint8_t opcode;
	uint8_t flags;
	sr_be16 pkey;
	uint8_t fecn_becn;
	uint8_t dqpn[3];
	uint8_t ackreq;
	uint8_t psn[3];
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_bth) == 12, "BTH is 12 bytes");

#define SR_BTH_LEN 12

enum {
	/* byte 1 */
	SR_BTH_SE = 0x80,
	SR_BTH_MIG = 0x40,
	SR_BTH_PAD_MASK = 0x30,
	SR_BTH_PAD_SHIFT = 4,
	SR_BTH_TVER_MASK = 0x0f,
	/* byte 4: masked to 1s for the ICRC (roce/icrc.h) */
	SR_BTH_FECN = 0x80,
	SR_BTH_BECN = 0x40,
	SR_BTH_RESV6A_MASK = 0x3f,
	/* byte 8 */
	SR_BTH_ACKREQ = 0x80,
	SR_BTH_RESV7_MASK = 0x7f,
};

/* Offset of the byte the ICRC masks (FECN, BECN, reserved). */
#define SR_BTH_ICRC_MASKED_OFF SR_WOFF(sr_bth, fecn_becn)

/* The only transport header version. */
#define SR_BTH_TVER 0
/* Default partition, full member; what rxe sends. */
#define SR_ROCE_PKEY_DEFAULT 0xffff
/* Membership bit; the low 15 bits name the partition. */
#define SR_ROCE_PKEY_FULL 0x8000
#define SR_ROCE_PKEY_MASK 0x7fff
/* DestQP of multicast packets. */
#define SR_ROCE_QPN_MULTICAST 0xffffffu
/* The GSI QP (CM MADs). */
#define SR_ROCE_QPN_GSI 1
/* Q_Key of the GSI QP. */
#define SR_ROCE_QKEY_GSI 0x80010000u

/* OpCode bits 7..5: transport class. */
enum sr_roce_class {
	SR_ROCE_RC = 0x00,
	SR_ROCE_UC = 0x20,
	SR_ROCE_RD = 0x40,
	SR_ROCE_UD = 0x60,
	SR_ROCE_CNP = 0x80,
	SR_ROCE_XRC = 0xa0,
};

#define SR_ROCE_CLASS_MASK 0xe0
#define SR_ROCE_OPER_MASK 0x1f

/* OpCode bits 4..0: the operation, meaning the same in every class that has it. */
enum sr_roce_oper {
	SR_ROCE_SEND_FIRST = 0x00,
	SR_ROCE_SEND_MIDDLE = 0x01,
	SR_ROCE_SEND_LAST = 0x02,
	SR_ROCE_SEND_LAST_IMM = 0x03,
	SR_ROCE_SEND_ONLY = 0x04,
	SR_ROCE_SEND_ONLY_IMM = 0x05,
	SR_ROCE_WRITE_FIRST = 0x06,
	SR_ROCE_WRITE_MIDDLE = 0x07,
	SR_ROCE_WRITE_LAST = 0x08,
	SR_ROCE_WRITE_LAST_IMM = 0x09,
	SR_ROCE_WRITE_ONLY = 0x0a,
	SR_ROCE_WRITE_ONLY_IMM = 0x0b,
	SR_ROCE_READ_REQ = 0x0c,
	SR_ROCE_READ_RESP_FIRST = 0x0d,
	SR_ROCE_READ_RESP_MIDDLE = 0x0e,
	SR_ROCE_READ_RESP_LAST = 0x0f,
	SR_ROCE_READ_RESP_ONLY = 0x10,
	SR_ROCE_ACK = 0x11,
	SR_ROCE_ATOMIC_ACK = 0x12,
	SR_ROCE_CMP_SWAP = 0x13,
	SR_ROCE_FETCH_ADD = 0x14,
	/* 0x15 reserved */
	SR_ROCE_SEND_LAST_INV = 0x16,
	SR_ROCE_SEND_ONLY_INV = 0x17,
	/* 0x18..0x1b reserved */
	SR_ROCE_FLUSH = 0x1c,		/* Linux 6.2+ */
	SR_ROCE_ATOMIC_WRITE = 0x1d,	/* Linux 6.2+ */
};

/* The full OpCode byte: SR_ROCE_OP(SR_ROCE_UD, SR_ROCE_SEND_ONLY) == 0x64. */
#define SR_ROCE_OP(cls, oper) ((uint8_t)((cls) | (oper)))

/* ------------------------------------------------------------------ */
/* Extension headers, in the order they follow the BTH               */
/* ------------------------------------------------------------------ */

/* Datagram ETH, 8 bytes: | Q_Key (32) | reserved (8) | SrcQP (24) |. UD only. */
struct sr_deth {
	sr_be32 qkey;
	uint8_t resv;
	uint8_t sqpn[3];
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_deth) == 8, "DETH is 8 bytes");

/* Flush ETH, 4 bytes: reserved (26) | selectivity level (2) | placement type (4). */
struct sr_feth {
	sr_be32 bits;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_feth) == 4, "FETH is 4 bytes");

enum {
	SR_FETH_PLT_MASK = 0x0f,
	SR_FETH_SEL_MASK = 0x30,
	SR_FETH_SEL_SHIFT = 4,
};

/* RDMA ETH, 16 bytes: | VA (64) | R_Key (32) | DMA length (32) |. */
struct sr_reth {
	sr_be64 va;
	sr_be32 rkey;
	sr_be32 len;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_reth) == 16, "RETH is 16 bytes");

/* Atomic ETH, 28 bytes: | VA (64) | R_Key (32) | Swap/Add (64) | Compare (64) |. */
struct sr_atomic_eth {
	sr_be64 va;
	sr_be32 rkey;
	sr_be64 swap_add;
	sr_be64 compare;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_atomic_eth) == 28, "AtomicETH is 28 bytes");

/* ACK ETH, 4 bytes: | Syndrome (8) | MSN (24) |. */
struct sr_aeth {
	uint8_t syndrome;
	uint8_t msn[3];
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_aeth) == 4, "AETH is 4 bytes");

/* Atomic ACK ETH, 8 bytes: the original value at the target. */
struct sr_atomic_ack_eth {
	sr_be64 orig;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_atomic_ack_eth) == 8, "AtomicAckETH is 8 bytes");

/* ImmDt (immediate data, copied to the work completion as is) and IETH (R_Key to invalidate). */
struct sr_immdt {
	sr_be32 imm;
} SR_WIRE_PACKED;
struct sr_ieth {
	sr_be32 rkey;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_immdt) == 4 && sizeof(struct sr_ieth) == 4,
	       "ImmDt and IETH are 4 bytes");

#define SR_DETH_LEN 8
#define SR_FETH_LEN 4
#define SR_RETH_LEN 16
#define SR_ATOMIC_ETH_LEN 28
#define SR_AETH_LEN 4
#define SR_ATOMIC_ACK_ETH_LEN 8
#define SR_IMMDT_LEN 4
#define SR_IETH_LEN 4

/* ------------------------------------------------------------------ */
/* AETH syndrome                                                      */
/* ------------------------------------------------------------------ */

/*
 * Bit 7 is 0; bits 6..5 say what the packet is; bits 4..0 are a credit count
 * code (ACK), a timer code (RNR NAK) or a NAK code.
 */
enum {
	SR_AETH_RESV_BIT = 0x80,
	SR_AETH_TYPE_MASK = 0x60,
	SR_AETH_VALUE_MASK = 0x1f,
	SR_AETH_TYPE_ACK = 0x00,
	SR_AETH_TYPE_RNR_NAK = 0x20,
	SR_AETH_TYPE_RESERVED = 0x40,
	SR_AETH_TYPE_NAK = 0x60,
};

/* ACK credit code 31: no credit information. rxe sends every ACK with it. */
#define SR_AETH_CREDIT_INVALID 0x1f
#define SR_AETH_ACK_NO_CREDIT (SR_AETH_TYPE_ACK | SR_AETH_CREDIT_INVALID)

/* NAK codes (bits 4..0 when the type is NAK); 5..31 are reserved. */
enum sr_aeth_nak {
	SR_AETH_NAK_PSN_SEQ = 0,	/* PSN sequence error: go back to the PSN */
	SR_AETH_NAK_INV_REQ = 1,	/* invalid request */
	SR_AETH_NAK_REM_ACCESS = 2,	/* remote access error */
	SR_AETH_NAK_REM_OP = 3,		/* remote operational error */
	SR_AETH_NAK_INV_RD_REQ = 4,	/* invalid RD request */
};

/* Whole syndromes. */
#define SR_AETH_SYN_ACK(credit) ((uint8_t)(SR_AETH_TYPE_ACK | ((credit) & SR_AETH_VALUE_MASK)))
#define SR_AETH_SYN_RNR(timer) ((uint8_t)(SR_AETH_TYPE_RNR_NAK | ((timer) & SR_AETH_VALUE_MASK)))
#define SR_AETH_SYN_NAK(code) ((uint8_t)(SR_AETH_TYPE_NAK | ((code) & SR_AETH_VALUE_MASK)))

/* ------------------------------------------------------------------ */
/* Sizes                                                              */
/* ------------------------------------------------------------------ */

#define SR_ROCE_ICRC_LEN 4
/* Largest UDP payload of an IPv4 datagram (65535 - 20 - 8); the encoder's bound. */
#define SR_ROCE_UDP_PAYLOAD_MAX 65507
#define SR_ROCE_PAD_MAX 3
/* Largest BTH + extension headers of any opcode (UD SEND Only with Imm is 24, FLUSH 32,
 * CmpSwap/FetchAdd 40). */
#define SR_ROCE_HDR_MAX (SR_BTH_LEN + SR_ATOMIC_ETH_LEN)
/* Pad + ICRC after the payload. */
#define SR_ROCE_TRAILER_MAX (SR_ROCE_PAD_MAX + SR_ROCE_ICRC_LEN)

/* Zero bytes that bring @payload_len to a multiple of 4. */
static inline unsigned int sr_roce_pad(uint32_t payload_len)
{
	return (0u - payload_len) & 3u;
}

#endif
