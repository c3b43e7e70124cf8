/* SPDX-License-Identifier: MIT */
/*
 * iWARP error identities and the RDMAP Terminate message.
 *
 * enum sr_iw_err names every protocol failure the iWARP layers can detect,
 * on either side of a connection. Each maps to exactly one Terminate cause
 * (layer, etype, ecode) and to a rule for which of the offending headers the
 * Terminate carries. Parsers record an sr_iw_err; the connection code turns
 * it into a Terminate with sr_term_info_init() + sr_term_build(), sends it
 * best-effort and closes the stream (a Terminate is the last message).
 */
#ifndef SR_IWARP_TERM_H
#define SR_IWARP_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "iwarp/wire.h"

enum sr_iw_err {
	SR_IW_OK = 0,

	/* LLP layer, MPA (RFC 5044 §8, RFC 6581): layer 2, etype 0 */
	SR_IW_ERR_MPA_TCP_LOST,		/* 0x01 */
	SR_IW_ERR_MPA_CRC,		/* 0x02 */
	SR_IW_ERR_MPA_FRAMING,		/* 0x03: ULPDU_Length vs header */
	SR_IW_ERR_MPA_INVALID_RR,	/* 0x04 */
	SR_IW_ERR_MPA_LOCAL_CATA,	/* 0x05 */
	SR_IW_ERR_MPA_IRD,		/* 0x06 */
	SR_IW_ERR_MPA_NO_RTR,		/* 0x07 */

	/* DDP layer (RFC 5041 §7.2): layer 1 */
	SR_IW_ERR_DDP_CATA,		/* etype 0 */
	SR_IW_ERR_DDP_T_STAG,		/* etype 1 (tagged) ecode 0x00 */
	SR_IW_ERR_DDP_T_BOUNDS,		/* 0x01 */
	SR_IW_ERR_DDP_T_NOT_ASSOC,	/* 0x02 */
	SR_IW_ERR_DDP_T_TO_WRAP,	/* 0x03 */
	SR_IW_ERR_DDP_T_VERSION,	/* 0x04 */
	SR_IW_ERR_DDP_U_QN,		/* etype 2 (untagged) ecode 0x01 */
	SR_IW_ERR_DDP_U_MSN_NOBUF,	/* 0x02: no receive posted */
	SR_IW_ERR_DDP_U_MSN_RANGE,	/* 0x03 */
	SR_IW_ERR_DDP_U_MO,		/* 0x04 */
	SR_IW_ERR_DDP_U_TOO_LONG,	/* 0x05 */
	SR_IW_ERR_DDP_U_VERSION,	/* 0x06 */

	/* RDMAP layer (RFC 5040 §4.8): layer 0 */
	SR_IW_ERR_RDMAP_CATA,		/* etype 0 ecode 0x00 */
	SR_IW_ERR_RDMAP_UNSPEC,		/* etype 0 ecode 0xff (siw) */
	SR_IW_ERR_RDMAP_STAG,		/* etype 1 (protection) ecode 0x00 */
	SR_IW_ERR_RDMAP_BOUNDS,		/* 0x01 */
	SR_IW_ERR_RDMAP_ACCESS,		/* 0x02 */
	SR_IW_ERR_RDMAP_NOT_ASSOC,	/* 0x03: PD mismatch */
	SR_IW_ERR_RDMAP_TO_WRAP,	/* 0x04 */
	SR_IW_ERR_RDMAP_INV_PROT,	/* 0x09 */
	SR_IW_ERR_RDMAP_VERSION,	/* etype 2 (operation) ecode 0x05 */
	SR_IW_ERR_RDMAP_OPCODE,		/* 0x06 */
	SR_IW_ERR_RDMAP_CATA_STREAM,	/* 0x07 */
	SR_IW_ERR_RDMAP_CATA_GLOBAL,	/* 0x08 */
	SR_IW_ERR_RDMAP_INV_OP,		/* 0x09 */

	SR_IW_ERR_COUNT
};

/* Terminate cause triple, in wire units. */
struct sr_term_cause {
	uint8_t layer;
	uint8_t etype;
	uint8_t ecode;
};

/**
 * sr_iw_err_cause - Terminate cause of @err.
 * Returns: 0, or -EINVAL for SR_IW_OK and out-of-range values.
 */
int sr_iw_err_cause(enum sr_iw_err err, struct sr_term_cause *out);

/* Short constant description of @err, for logs. Never NULL. */
const char *sr_iw_err_str(enum sr_iw_err err);

/*
 * A Terminate message body, decoded or to be encoded. ddp_hdr/rdmap_hdr are
 * verbatim copies of the offending segment's headers (DDP header with the
 * RDMAP control byte; Read Request header).
 */
struct sr_term_info {
	struct sr_term_cause cause;
	uint16_t hdrct;			/* SR_TERM_HDRCT_M | _D | _R */
	uint16_t ddp_seg_len;		/* valid when M is set */
	uint8_t ddp_hdr_len;		/* 0, 14 or 18 */
	uint8_t rdmap_hdr_len;		/* 0 or 28 */
	uint8_t ddp_hdr[SR_DDP_UNTAGGED_HDR_LEN];
	uint8_t rdmap_hdr[SR_RDMAP_RREQ_HDR_LEN];
};

/* Largest Terminate FPDU sr_term_build() writes, pad and CRC included. */
#define SR_TERM_FPDU_MAX                                                \
	(SR_FPDU_HDR_TERM + 2 + SR_DDP_UNTAGGED_HDR_LEN +               \
	 SR_RDMAP_RREQ_HDR_LEN + SR_FPDU_TRAILER_MAX)

/**
 * sr_term_info_init - describe the Terminate for @err.
 * @ulpdu: the offending segment from its DDP header on (the FPDU minus the
 *	ULPDU_Length field), or NULL if there is none (e.g. CRC errors).
 * @have: valid bytes at @ulpdu.
 * @ulpdu_len: the segment's ULPDU_Length, reported as DDP Segment Length.
 *
 * Headers are attached as the layer requires and only if the layout is
 * known: none for LLP errors, version/opcode errors and catastrophic ones;
 * the DDP header (M, D) for DDP errors and RDMAP operation errors; DDP
 * header plus the Read Request header (M, D, R) for RDMAP protection errors
 * on a Read Request. Everything else is zeroed.
 */
void sr_term_info_init(struct sr_term_info *t, enum sr_iw_err err,
		       const uint8_t *ulpdu, size_t have, uint16_t ulpdu_len);

/**
 * sr_term_build - encode a whole Terminate FPDU (QN 2, MO 0, L set).
 * @msn: Terminate MSN, 1 for the first (and only) Terminate of a stream.
 * @crc_on: compute the MPA CRC; otherwise the CRC slot is zero (as siw).
 * Returns: bytes written, -EINVAL for an inconsistent @t (R without D,
 *	header lengths that disagree with the flags), -ENOSPC if @cap is short.
 */
ssize_t sr_term_build(uint8_t *out, size_t cap, const struct sr_term_info *t,
		      uint32_t msn, bool crc_on);

/**
 * sr_term_parse - decode the Terminate body that follows the untagged DDP
 * header (the ULPDU from byte 18 on).
 *
 * Lenient by design (the stream is going down anyway): optional parts are
 * decoded only when present in full, and hdrct in @t keeps only the bits
 * whose content was decoded (M only with D, since the segment length
 * travels with the DDP header). siw sets R on Send errors without any
 * RDMAP header; that is accepted.
 * Returns: 0, or -EBADMSG when fewer than 4 bytes are given.
 */
int sr_term_parse(const uint8_t *body, size_t len, struct sr_term_info *t);

#endif
