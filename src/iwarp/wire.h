/* SPDX-License-Identifier: MIT */
/*
 * On-the-wire layouts of iWARP: MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and
 * RDMAP (RFC 5040). Every multi-byte field is big-endian; the one exception,
 * the MPA CRC, lives in iwarp/crc32c.h.
 *
 * The structs below document the layouts and give field offsets (offsetof);
 * code never casts a byte buffer to them. Fields are read and written through
 * sr_get_be*()/sr_put_be*() on byte pointers, which keeps the codec free of
 * alignment and strict-aliasing traps. There are no bitfields: sub-byte fields
 * are described by mask and shift constants.
 *
 * Section numbers are cited as recalled: the RFC bodies were not readable when
 * this was written, so every value was cross-checked against
 * docs/WIRE.md (sources listed there: RFCs, Linux siw, Wireshark, tshark captures).
 */
#ifndef SR_IWARP_WIRE_H
#define SR_IWARP_WIRE_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Big-endian wire types: a plain integer holding the bytes as they travel. */
typedef uint16_t sr_be16;
typedef uint32_t sr_be32;
typedef uint64_t sr_be64;

#define SR_WIRE_PACKED __attribute__((packed))

static inline uint16_t sr_get_be16(const uint8_t *p)
{
	sr_be16 v;

	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static inline uint32_t sr_get_be32(const uint8_t *p)
{
	sr_be32 v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static inline uint64_t sr_get_be64(const uint8_t *p)
{
	sr_be64 v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static inline void sr_put_be16(uint8_t *p, uint16_t v)
{
	sr_be16 w = htobe16(v);

	memcpy(p, &w, sizeof(w));
}

static inline void sr_put_be32(uint8_t *p, uint32_t v)
{
	sr_be32 w = htobe32(v);

	memcpy(p, &w, sizeof(w));
}

static inline void sr_put_be64(uint8_t *p, uint64_t v)
{
	sr_be64 w = htobe64(v);

	memcpy(p, &w, sizeof(w));
}

/* Offset of a field inside one of the wire structs below. */
#define SR_WOFF(type, field) offsetof(struct type, field)

/* ------------------------------------------------------------------ */
/* MPA Request/Reply frame (RFC 5044 §7.1, RFC 6581), docs/WIRE.md §1.1    */
/* ------------------------------------------------------------------ */

/*
 * | off | size | field                                   |
 * |   0 |   16 | key, ASCII, no NUL                      |
 * |  16 |    1 | flags: M C R (+ rev 2 enhanced bit)      |
 * |  17 |    1 | revision                                |
 * |  18 |    2 | PD_Length (private data bytes following) |
 */
struct sr_mpa_rr_hdr {
	uint8_t key[16];
	uint8_t flags;
	uint8_t rev;
	sr_be16 pd_len;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_mpa_rr_hdr) == 20,
	       "MPA req/rep header is 20 bytes");

#define SR_MPA_RR_HDR_LEN 20
#define SR_MPA_KEY_LEN 16
#define SR_MPA_KEY_REQ "MPA ID Req Frame"
#define SR_MPA_KEY_REP "MPA ID Rep Frame"

enum {
	/* Sender of this frame wants to receive markers (we never do). */
	SR_MPA_FLAG_MARKERS = 0x80,
	/* CRC requested; on for the connection if either frame sets it. */
	SR_MPA_FLAG_CRC = 0x40,
	/* Reply only: connection refused. */
	SR_MPA_FLAG_REJECT = 0x20,
	/* Rev 2 only: the 4-byte IRD/ORD block opens the private data. */
	SR_MPA_FLAG_ENHANCED = 0x10,
	/* Rev 1 reserved bits: sent as 0, ignored on receipt. */
	SR_MPA_FLAG_RSVD_V1 = 0x1f,
};

#define SR_MPA_REV1 1
#define SR_MPA_REV2 2

/* RFC 5044: PD_Length above 512 makes the frame invalid. */
#define SR_MPA_PD_MAX 512
/*
 * siw (and RDMA_MAX_PRIVATE_DATA) refuse a PD_Length above 256, v2 block
 * included; we never send more than that, whatever the RFC allows.
 */
#define SR_MPA_PD_SEND_MAX 256

/* RFC 6581 enhanced connection establishment block, frame bytes 20..23. */
struct sr_mpa_v2_block {
	sr_be16 ird;	/* P2P | zero-length Send RTR | 14-bit IRD */
	sr_be16 ord;	/* zero-length Write RTR | Read RTR | 14-bit ORD */
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_mpa_v2_block) == 4,
	       "MPA v2 block is 4 bytes");

#define SR_MPA_V2_BLOCK_LEN 4

enum {
	/* in the IRD word */
	SR_MPA_V2_P2P = 0x8000,
	SR_MPA_V2_RTR_SEND = 0x4000,
	/* in the ORD word */
	SR_MPA_V2_RTR_WRITE = 0x8000,
	SR_MPA_V2_RTR_READ = 0x4000,
	/* both words */
	SR_MPA_V2_IRD_ORD_MASK = 0x3fff,
};

/* Intel RNICs send IRD = ORD = 0x3FFF meaning "no IRD/ORD limit given". */
#define SR_MPA_V2_IRD_ORD_UNSPEC 0x3fff

/* ------------------------------------------------------------------ */
/* MPA FPDU framing (RFC 5044), docs/WIRE.md §1.5                          */
/* ------------------------------------------------------------------ */

/* | ULPDU_Length (2) | ULPDU (N) | PAD (0..3) | CRC32c (4) | */
#define SR_MPA_LEN_SIZE 2
#define SR_MPA_CRC_SIZE 4
#define SR_MPA_PAD_MAX 3
#define SR_MPA_ULPDU_MAX 65535

/* ------------------------------------------------------------------ */
/* DDP (RFC 5041 §4), docs/WIRE.md §2                                      */
/* ------------------------------------------------------------------ */

/* DDP control byte, ULPDU byte 0 (RFC 5041 §4.1). */
enum {
	SR_DDP_FLAG_TAGGED = 0x80,
	SR_DDP_FLAG_LAST = 0x40,
	SR_DDP_RSVD_MASK = 0x3c,	/* 0 on send, ignored on receipt */
	SR_DDP_DV_MASK = 0x03,
};

#define SR_DDP_VERSION 1

/*
 * Tagged buffer model header (RFC 5041 §4.2), 14 bytes:
 * | 0 ctrl | 1 RDMAP ctrl | 2 STag (4) | 6 TO (8) |
 */
struct sr_ddp_tagged_hdr {
	uint8_t ddp_ctrl;
	uint8_t rdmap_ctrl;
	sr_be32 stag;
	sr_be64 to;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_ddp_tagged_hdr) == 14,
	       "DDP tagged header is 14 bytes");

/*
 * Untagged buffer model header (RFC 5041 §4.3), 18 bytes:
 * | 0 ctrl | 1 RDMAP ctrl | 2 Invalidate STag or 0 (4) |
 * | 6 QN (4) | 10 MSN (4) | 14 MO (4) |
 */
struct sr_ddp_untagged_hdr {
	uint8_t ddp_ctrl;
	uint8_t rdmap_ctrl;
	sr_be32 inval_stag;
	sr_be32 qn;
	sr_be32 msn;
	sr_be32 mo;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_ddp_untagged_hdr) == 18,
	       "DDP untagged header is 18 bytes");

#define SR_DDP_TAGGED_HDR_LEN 14
#define SR_DDP_UNTAGGED_HDR_LEN 18

/* Untagged queue numbers assigned by RDMAP (RFC 5040), docs/WIRE.md §2.4. */
enum {
	SR_DDP_QN_SEND = 0,
	SR_DDP_QN_READ_REQ = 1,
	SR_DDP_QN_TERMINATE = 2,
	SR_DDP_QN_COUNT = 3,
};

/* First message on every queue carries MSN 1 (RFC 5041 §5). */
#define SR_DDP_MSN_FIRST 1

/* ------------------------------------------------------------------ */
/* RDMAP (RFC 5040 §4), docs/WIRE.md §3                                    */
/* ------------------------------------------------------------------ */

/* RDMAP control byte, ULPDU byte 1 (RFC 5040 §4.1). */
enum {
	SR_RDMAP_RV_MASK = 0xc0,
	SR_RDMAP_RV_SHIFT = 6,
	SR_RDMAP_RSVD_MASK = 0x30,
	SR_RDMAP_OPCODE_MASK = 0x0f,
};

#define SR_RDMAP_VERSION 1

/* RDMAP opcodes (RFC 5040 §4.2). RFC 7306 adds 0x8..0xB, which we refuse. */
enum sr_rdmap_op {
	SR_RDMAP_OP_WRITE = 0x0,
	SR_RDMAP_OP_READ_REQ = 0x1,
	SR_RDMAP_OP_READ_RESP = 0x2,
	SR_RDMAP_OP_SEND = 0x3,
	SR_RDMAP_OP_SEND_INV = 0x4,
	SR_RDMAP_OP_SEND_SE = 0x5,
	SR_RDMAP_OP_SEND_SE_INV = 0x6,
	SR_RDMAP_OP_TERMINATE = 0x7,
	SR_RDMAP_OP_COUNT = 0x8,
};

/*
 * RDMA Read Request header (RFC 5040 §4.4), after the untagged DDP header,
 * 28 bytes. The message is one segment: QN 1, MO 0, L set.
 */
struct sr_rdmap_rreq_hdr {
	sr_be32 sink_stag;	/* where the Read Response lands (requester) */
	sr_be64 sink_to;
	sr_be32 size;		/* RDMA Read message size, 0 allowed */
	sr_be32 src_stag;	/* what is read (responder) */
	sr_be64 src_to;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_rdmap_rreq_hdr) == 28,
	       "Read Request header is 28 bytes");

#define SR_RDMAP_RREQ_HDR_LEN 28

/*
 * Terminate header (RFC 5040 §4.8), after the untagged DDP header (QN 2,
 * MO 0, L set), 4 bytes:
 * | 0 layer (high nibble), etype (low nibble) | 1 ecode |
 * | 2 hdrct: M D R + 13 reserved bits (16) |
 * then, when D is set: DDP Segment Length (2) + the terminated DDP header
 * (14 or 18 bytes, per its T bit); then, when R is set and the terminated
 * message was a Read Request, its 28-byte RDMAP header (docs/WIRE.md §3.4).
 */
struct sr_rdmap_term_hdr {
	uint8_t layer_etype;
	uint8_t ecode;
	sr_be16 hdrct;
} SR_WIRE_PACKED;
_Static_assert(sizeof(struct sr_rdmap_term_hdr) == 4,
	       "Terminate header is 4 bytes");

#define SR_RDMAP_TERM_HDR_LEN 4

enum {
	SR_TERM_LAYER_SHIFT = 4,
	SR_TERM_LAYER_MASK = 0xf0,
	SR_TERM_ETYPE_MASK = 0x0f,
	/* in the 16-bit hdrct word */
	SR_TERM_HDRCT_M = 0x8000,	/* DDP Segment Length valid */
	SR_TERM_HDRCT_D = 0x4000,	/* terminated DDP header included */
	SR_TERM_HDRCT_R = 0x2000,	/* terminated RDMAP header included */
	SR_TERM_HDRCT_RSVD = 0x1fff,
};

/* Terminate Layer nibble. */
enum {
	SR_TERM_LAYER_RDMAP = 0x0,
	SR_TERM_LAYER_DDP = 0x1,
	SR_TERM_LAYER_LLP = 0x2,
};

/* RDMAP EType (layer 0) and ECode (RFC 5040 §4.8, docs/WIRE.md §3.4). */
enum {
	SR_TERM_RDMAP_ETYPE_CATASTROPHIC = 0x0,
	SR_TERM_RDMAP_ETYPE_PROTECTION = 0x1,
	SR_TERM_RDMAP_ETYPE_OPERATION = 0x2,
};

enum {
	SR_TERM_RDMAP_INVALID_STAG = 0x00,
	SR_TERM_RDMAP_BASE_BOUNDS = 0x01,
	SR_TERM_RDMAP_ACCESS_RIGHTS = 0x02,
	SR_TERM_RDMAP_STAG_NOT_ASSOC = 0x03,	/* PD mismatch */
	SR_TERM_RDMAP_TO_WRAP = 0x04,
	SR_TERM_RDMAP_INVALID_VERSION = 0x05,
	SR_TERM_RDMAP_UNEXPECTED_OPCODE = 0x06,
	SR_TERM_RDMAP_CATASTROPHIC_STREAM = 0x07,
	SR_TERM_RDMAP_CATASTROPHIC_GLOBAL = 0x08,
	SR_TERM_RDMAP_CANNOT_INVALIDATE = 0x09,
	SR_TERM_RDMAP_UNSPECIFIED = 0xff,
};

/* DDP EType (layer 1) and ECode (RFC 5041 §7.2, docs/WIRE.md §2.6). */
enum {
	SR_TERM_DDP_ETYPE_CATASTROPHIC = 0x0,
	SR_TERM_DDP_ETYPE_TAGGED = 0x1,
	SR_TERM_DDP_ETYPE_UNTAGGED = 0x2,
};

enum {
	SR_TERM_DDP_CATASTROPHIC = 0x00,
	/* tagged buffer errors */
	SR_TERM_DDP_T_INVALID_STAG = 0x00,
	SR_TERM_DDP_T_BASE_BOUNDS = 0x01,
	SR_TERM_DDP_T_STAG_NOT_ASSOC = 0x02,
	SR_TERM_DDP_T_TO_WRAP = 0x03,
	SR_TERM_DDP_T_INVALID_VERSION = 0x04,
	/* untagged buffer errors */
	SR_TERM_DDP_U_INVALID_QN = 0x01,
	SR_TERM_DDP_U_MSN_NO_BUFFER = 0x02,
	SR_TERM_DDP_U_MSN_RANGE = 0x03,
	SR_TERM_DDP_U_INVALID_MO = 0x04,
	SR_TERM_DDP_U_TOO_LONG = 0x05,
	SR_TERM_DDP_U_INVALID_VERSION = 0x06,
};

/* LLP EType (layer 2): only MPA exists. ECodes: RFC 5044 §8, RFC 6581. */
enum {
	SR_TERM_LLP_ETYPE_MPA = 0x0,
};

enum {
	SR_TERM_MPA_TCP_LOST = 0x01,
	SR_TERM_MPA_CRC = 0x02,
	SR_TERM_MPA_MARKER_LEN = 0x03,	/* framing: length disagrees */
	SR_TERM_MPA_INVALID_RR = 0x04,	/* invalid Request/Reply frame */
	SR_TERM_MPA_LOCAL_CATASTROPHIC = 0x05,
	SR_TERM_MPA_INSUFFICIENT_IRD = 0x06,
	SR_TERM_MPA_NO_MATCHING_RTR = 0x07,
};

/* ------------------------------------------------------------------ */
/* Whole FPDU header sizes, ULPDU_Length field included (docs/WIRE.md §3.2) */
/* ------------------------------------------------------------------ */

#define SR_FPDU_HDR_TAGGED (SR_MPA_LEN_SIZE + SR_DDP_TAGGED_HDR_LEN)	/* 16 */
#define SR_FPDU_HDR_UNTAGGED (SR_MPA_LEN_SIZE + SR_DDP_UNTAGGED_HDR_LEN) /*20*/
#define SR_FPDU_HDR_RREQ (SR_FPDU_HDR_UNTAGGED + SR_RDMAP_RREQ_HDR_LEN)	/* 48 */
#define SR_FPDU_HDR_TERM (SR_FPDU_HDR_UNTAGGED + SR_RDMAP_TERM_HDR_LEN)	/* 24 */
/* Largest header our encoders write (a Read Request). */
#define SR_FPDU_HDR_MAX SR_FPDU_HDR_RREQ
/* PAD + CRC */
#define SR_FPDU_TRAILER_MAX (SR_MPA_PAD_MAX + SR_MPA_CRC_SIZE)

/* Every valid FPDU starts with at least this many header bytes. */
#define SR_FPDU_HDR_MIN SR_FPDU_HDR_TAGGED

#endif
