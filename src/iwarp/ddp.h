/* SPDX-License-Identifier: MIT */
/*
 * DDP + RDMAP segment headers inside MPA FPDUs: encoders for the transmit
 * side, a segmenter, and a resumable receive parser. Socket-free and
 * copy-free: payload never passes through these functions' buffers.
 *
 * Transmit, per segment:
 *   hlen = sr_fpdu_put_tagged/untagged/rreq(hdr, ...)      header + length
 *   crc  = sr_crc32c(sr_crc32c(0, hdr, hlen), payload, len)  if CRC is on
 *   tlen = sr_fpdu_put_trailer(trl, hlen - 2 + len, crc, crc_on)
 *   sendmsg({hdr, hlen}, {payload, len}, {trl, tlen})
 *
 * Receive: see struct sr_fpdu_rx below.
 */
#ifndef SR_IWARP_DDP_H
#define SR_IWARP_DDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "iwarp/term.h"
#include "iwarp/wire.h"

/* True for the opcodes of the tagged model: RDMA Write, Read Response. */
bool sr_rdmap_op_tagged(unsigned int opcode);

/* Untagged queue number of @opcode, or -EINVAL for tagged/unknown ones. */
int sr_rdmap_op_qn(unsigned int opcode);

/* Read Request body (RFC 5040 §4.4), host order. */
struct sr_rdmap_rreq {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};

/* One DDP segment's header, decoded (host order). */
struct sr_ddp_seg {
	uint8_t opcode;		/* enum sr_rdmap_op */
	bool tagged;
	bool last;		/* DDP L flag */
	bool first;		/* first segment of its message (rx only) */
	uint16_t ulpdu_len;	/* MPA ULPDU_Length */
	uint16_t hdr_len;	/* FPDU header bytes, ULPDU_Length included */
	uint32_t payload_len;	/* payload bytes following the header */
	/* tagged model */
	uint32_t stag;
	uint64_t to;		/* tagged offset of this segment's first byte */
	/* untagged model */
	uint32_t qn;
	uint32_t msn;
	uint32_t mo;		/* message offset of the first payload byte */
	uint32_t inval_stag;	/* Send with Invalidate variants only */
	struct sr_rdmap_rreq rreq;	/* opcode == READ_REQ */
	struct sr_term_info term;	/* opcode == TERMINATE */
};

/* ---------------------------- transmit ---------------------------- */

/**
 * sr_fpdu_put_tagged - write ULPDU_Length + tagged DDP/RDMAP header.
 * @opcode: SR_RDMAP_OP_WRITE or SR_RDMAP_OP_READ_RESP.
 * @to: tagged offset of this segment's first payload byte.
 * @payload_len: payload bytes that will follow in this FPDU.
 * Returns: SR_FPDU_HDR_TAGGED, -EINVAL (wrong opcode), -EMSGSIZE (ULPDU
 *	over 65535), -ENOSPC (@cap too small).
 */
ssize_t sr_fpdu_put_tagged(uint8_t *out, size_t cap, unsigned int opcode,
			   bool last, uint32_t stag, uint64_t to,
			   size_t payload_len);

/**
 * sr_fpdu_put_untagged - write ULPDU_Length + untagged DDP/RDMAP header.
 * @opcode: a Send variant or Terminate (whose body counts as payload);
 *	the QN follows from the opcode.
 * @inval_stag: STag to invalidate for SEND_INV/SEND_SE_INV; must be 0
 *	for the other opcodes (the field is reserved there).
 * Returns: SR_FPDU_HDR_UNTAGGED or -EINVAL/-EMSGSIZE/-ENOSPC.
 */
ssize_t sr_fpdu_put_untagged(uint8_t *out, size_t cap, unsigned int opcode,
			     bool last, uint32_t msn, uint32_t mo,
			     uint32_t inval_stag, size_t payload_len);

/**
 * sr_fpdu_put_rreq - write a whole Read Request FPDU header (QN 1, MO 0,
 * L set, 28-byte body). No payload follows; the trailer does.
 * Returns: SR_FPDU_HDR_RREQ or -ENOSPC.
 */
ssize_t sr_fpdu_put_rreq(uint8_t *out, size_t cap, uint32_t msn,
			 const struct sr_rdmap_rreq *rr);

/**
 * sr_fpdu_put_trailer - write PAD and CRC for an FPDU whose ULPDU is
 * @ulpdu_len bytes.
 * @crc: sr_crc32c() over the ULPDU_Length field and the whole ULPDU so far
 *	(ignored when !@crc_on). The pad bytes are folded in here.
 * @crc_on: when false the CRC slot is zero, as siw sends it.
 * Returns: bytes written (pad + 4).
 */
size_t sr_fpdu_put_trailer(uint8_t out[SR_FPDU_TRAILER_MAX], size_t ulpdu_len,
			   uint32_t crc, bool crc_on);

/*
 * Splits a message into DDP segments that each fit one MULPDU. Every
 * segment but the last carries exactly MULPDU - header bytes, so with a
 * MULPDU from sr_mpa_mulpdu() only the last one needs padding.
 */
struct sr_ddp_segmenter {
	uint32_t msg_len;
	uint32_t off;
	uint32_t max_payload;
	bool done;
};

struct sr_ddp_chunk {
	uint32_t off;	/* message offset: add to the base TO, or the MO */
	uint32_t len;
	bool last;
};

/**
 * sr_ddp_segmenter_init - prepare to cut @msg_len bytes.
 * @mulpdu: largest ULPDU per FPDU (sr_mpa_mulpdu()).
 * @ddp_hdr_len: DDP/RDMAP header bytes inside the ULPDU (14 or 18).
 * Returns: 0, or -EINVAL if no payload byte would fit.
 */
int sr_ddp_segmenter_init(struct sr_ddp_segmenter *s, uint32_t msg_len,
			  uint32_t mulpdu, uint32_t ddp_hdr_len);

/*
 * Next segment into @c; false once the message is exhausted. A zero-length
 * message yields exactly one segment {0, 0, last}.
 */
bool sr_ddp_segmenter_next(struct sr_ddp_segmenter *s, struct sr_ddp_chunk *c);

/* ----------------------------- receive ----------------------------- */

/*
 * Resumable FPDU receive parser. It owns no socket and copies no payload:
 *
 *   for (;;) {
 *	sr_fpdu_rx_need(rx, &need);
 *	switch (need.stage) {
 *	case SR_FPDU_RX_HDR:
 *	case SR_FPDU_RX_TRAILER:
 *		n = recv(fd, need.buf, need.len);	  internal buffers
 *		r = sr_fpdu_rx_advance(rx, n, NULL);
 *		break;
 *	case SR_FPDU_RX_PAYLOAD:
 *		dst = <buffer chosen at HDR_DONE> + need.seg_off;
 *		n = recv(fd, dst, need.len);		  straight to the MR
 *		r = sr_fpdu_rx_advance(rx, n, dst);	  CRC over it in place
 *		break;
 *	case SR_FPDU_RX_FAILED:
 *		sr_fpdu_rx_term(rx, &t); send Terminate; close;
 *	}
 *	if (r == SR_FPDU_RX_HDR_DONE)
 *		validate rx->seg (STag, bounds, posted receive) before a
 *		single payload byte is read; on failure sr_fpdu_rx_fail().
 *	if (r == SR_FPDU_RX_SEG_DONE)
 *		CRC verified: the segment is placed; complete if seg.last.
 *	if (r < 0)
 *		rx->err says why; build the Terminate, close.
 *   }
 *
 * need.len is always the most the parser accepts now, so any split of the
 * byte stream works, from 1-byte reads to many FPDUs in one buffer (copy
 * the bytes to need.buf / the destination in need.len-sized steps).
 *
 * Checked before any payload is accepted: DDP version, RDMAP version,
 * opcode, T flag vs opcode, ULPDU_Length vs the opcode's header (Read
 * Request exactly 46), QN vs opcode, per-queue MSN order (first is 1) and
 * MO continuity, L set on Read Request/Terminate, MO and TO overflow, the
 * Terminate layout. The caller still owns STag/bounds/receive-buffer checks
 * and "no buffer" (SR_IW_ERR_DDP_U_MSN_NOBUF) / "too long"
 * (SR_IW_ERR_DDP_U_TOO_LONG) reports. With CRC on, payload is placed before
 * the CRC is verified (unavoidable without a copy); the segment may only be
 * acted on at SR_FPDU_RX_SEG_DONE.
 *
 * A zero-length RTR Write or Read carries STag 1 or 0 that must not be
 * looked up (docs/WIRE.md §1.3); that is the caller's rule.
 */
enum sr_fpdu_rx_stage {
	SR_FPDU_RX_HDR,		/* header bytes into rx->hdrbuf */
	SR_FPDU_RX_PAYLOAD,	/* payload bytes to the caller's memory */
	SR_FPDU_RX_TRAILER,	/* pad + CRC into rx->trailer */
	SR_FPDU_RX_FAILED,	/* stream unusable; see rx->err */
};

/* Return values of sr_fpdu_rx_advance() besides negative errors. */
enum {
	SR_FPDU_RX_MORE = 0,	/* keep feeding */
	SR_FPDU_RX_HDR_DONE = 1,	/* rx->seg is decoded and validated */
	SR_FPDU_RX_SEG_DONE = 2,	/* trailer (and CRC) good */
};

struct sr_fpdu_rx_need {
	enum sr_fpdu_rx_stage stage;
	uint8_t *buf;		/* HDR/TRAILER: where the bytes go; else NULL */
	size_t len;		/* the most bytes the parser takes now */
	uint32_t seg_off;	/* PAYLOAD: next byte's offset in the segment */
};

/* Terminate ULPDUs longer than this are refused (ours are at most 70). */
#define SR_FPDU_RX_HDRBUF 128

/*
 * Parser state. Callers read seg and err; the rest is private. seg is valid
 * from SR_FPDU_RX_HDR_DONE until the next header completes.
 *
 * Two header buffers alternate between FPDUs, so the raw header of the
 * segment in seg stays intact while the next header is being read: a
 * caller that rejects a segment at SR_FPDU_RX_SEG_DONE (a Read Request's
 * source STag, a failed invalidation) still gets it into the Terminate.
 */
struct sr_fpdu_rx {
	struct sr_ddp_seg seg;
	enum sr_iw_err err;

	enum sr_fpdu_rx_stage stage;
	bool crc_on;
	bool seg_valid;			/* seg + hdrbuf[seg_buf] are set */
	uint8_t hdr_cur;		/* hdrbuf being filled */
	uint8_t seg_buf;		/* hdrbuf holding seg's raw header */
	uint8_t fail_buf;		/* hdrbuf for the Terminate (FAILED) */
	uint16_t fail_have;		/* valid bytes there */
	int ret;			/* sticky error return once FAILED */
	uint16_t hdr_have;
	uint16_t hdr_want;
	uint8_t trl_have;
	uint8_t trl_want;
	uint32_t data_done;
	uint32_t crc;
	/* RFC 5041 §5: per-queue MSN and MO sequencing */
	uint32_t next_msn[SR_DDP_QN_COUNT];
	uint32_t next_mo[SR_DDP_QN_COUNT];
	bool in_msg[SR_DDP_QN_COUNT];
	bool tagged_in_msg;
	uint8_t hdrbuf[2][SR_FPDU_RX_HDRBUF];
	uint8_t trailer[SR_FPDU_TRAILER_MAX];
};

/* Start of a stream, right after the MPA Request/Reply exchange. */
void sr_fpdu_rx_init(struct sr_fpdu_rx *rx, bool crc_on);

/* What to read next (see the loop above); need->buf points into @rx. */
void sr_fpdu_rx_need(struct sr_fpdu_rx *rx, struct sr_fpdu_rx_need *need);

/*
 * How many bytes right after what sr_fpdu_rx_need() asks for are certain to be FPDU
 * framing rather than payload: the trailer still to come (PAYLOAD stage) plus the shortest
 * possible next header. A receiver may read that many more into a buffer of its own with
 * the same call (and feed them back through need/advance) without ever taking payload
 * bytes that belong in a caller's memory. 0 in the HDR and FAILED stages.
 */
size_t sr_fpdu_rx_lookahead(const struct sr_fpdu_rx *rx);

/*
 * Bytes from here to the end of the current FPDU: header, payload, pad and CRC still to
 * come. In the HDR stage before the ULPDU_Length field is complete, only the header bytes
 * asked for. 0 once FAILED.
 */
size_t sr_fpdu_rx_fpdu_rest(const struct sr_fpdu_rx *rx);

/**
 * sr_fpdu_rx_advance - account for @n bytes read as sr_fpdu_rx_need() asked.
 * @payload: in the PAYLOAD stage, the @n bytes just placed, for the CRC
 *	(may be NULL when CRC is off); ignored otherwise.
 * Returns: SR_FPDU_RX_MORE, SR_FPDU_RX_HDR_DONE or SR_FPDU_RX_SEG_DONE;
 *	-EBADMSG (CRC mismatch) or -EPROTO (protocol violation) with rx->err
 *	set and the parser FAILED; -EINVAL when @n exceeds need.len or the
 *	CRC needs @payload (caller bug, state unchanged).
 */
int sr_fpdu_rx_advance(struct sr_fpdu_rx *rx, size_t n, const void *payload);

/*
 * The caller rejects the segment in rx->seg (bad STag, no receive buffer,
 * failed invalidation...), at SR_FPDU_RX_HDR_DONE, while its payload is
 * read, or at SR_FPDU_RX_SEG_DONE: the parser becomes FAILED with @err and
 * the Terminate will carry that segment's headers. Returns -EPROTO.
 */
int sr_fpdu_rx_fail(struct sr_fpdu_rx *rx, enum sr_iw_err err);

/* Terminate for rx->err, with the offending headers as sr_term_info_init(). */
void sr_fpdu_rx_term(const struct sr_fpdu_rx *rx, struct sr_term_info *t);

#endif
