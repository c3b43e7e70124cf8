/* SPDX-License-Identifier: MIT */
/*
 * Turns compact 8-byte records into a stream of well-formed FPDUs (right lengths, MSNs, MOs
 * and CRCs) aimed at the regions of the connection fixture (fz_conn.h). The placement target
 * mutates records, so nearly every input gets past framing and reaches the STag, bounds,
 * rights and receive-buffer checks; the corpus generator writes seeds with it.
 *
 * Record: kind, target, off (be16), len (be16), flags, fill.
 *   kind % 6: 0 Write, 1 Send (flags bits 4-5 pick SE/Inv variants), 2 Read Request,
 *             3 Terminate, 4 Read Response (nobody asked), 5 raw: `len % 64` bytes of the
 *             input that follow the record go out verbatim.
 *   target % 8: region index (FZ_NREG regions), else a made-up STag (off used as its bits).
 *   off: signed offset from the region's iova (the TO), or the Read Request's source TO.
 *   len: payload length % 4096 (Read Request: size; the sink is region 0).
 *   flags: bit 0 clear last flag, bit 1 reuse the previous MSN, bit 2 skip an MO,
 *          bit 3 corrupt the CRC, bits 4-5 Send variant, bits 6-7 invalidated STag's region.
 */
#ifndef SR_FUZZ_BUILD_H
#define SR_FUZZ_BUILD_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"
#include "iwarp/term.h"

/* The fixture's regions, at fixed iovas so that seeds stay valid across runs. FZ_STAG is the
 * STag a fresh process gives the region today (verbs/mr.c): what the generated stream seeds
 * carry. The placement target names regions by index and takes their real STags. */
#define FZ_NREG 6
#define FZ_REC 8
#define FZ_STAG(i) ((uint32_t)((i) + 1) << 8)
#define FZ_IOVA(i) (0x10000ull * (uint64_t)((i) + 1))

enum fz_kind { FZ_WRITE, FZ_SEND, FZ_RREQ, FZ_TERM, FZ_RRESP, FZ_RAW, FZ_KINDS };

struct fz_builder {
	bool crc;
	uint32_t stag[FZ_NREG];
	uint32_t msn[SR_DDP_QN_COUNT]; /* last MSN used per queue */
	uint32_t send_mo;              /* MO of the Send message in progress */
};

/* stags: the regions' STags, or NULL for FZ_STAG's. */
static inline void fz_builder_init(struct fz_builder *b, bool crc, const uint32_t *stags)
{
	memset(b, 0, sizeof(*b));
	b->crc = crc;
	for (int i = 0; i < FZ_NREG; i++)
		b->stag[i] = stags ? stags[i] : FZ_STAG(i);
}

static inline size_t fz_finish(uint8_t *out, size_t hlen, size_t plen, uint8_t fill, bool crc,
			       bool bad_crc)
{
	uint32_t c = 0;

	memset(out + hlen, fill, plen);
	if (crc)
		c = sr_crc32c(0, out, hlen + plen) ^ (bad_crc ? 1u : 0u);
	return hlen + plen + sr_fpdu_put_trailer(out + hlen + plen, hlen - 2 + plen, c, crc);
}

/*
 * Append the FPDU of one record (rec: FZ_REC bytes; more: the input after it, for FZ_RAW) to
 * out, which has room for cap bytes. Returns the bytes written (0: did not fit) and in
 * *used how many input bytes after the record FZ_RAW consumed.
 */
static inline size_t fz_build(struct fz_builder *b, const uint8_t *rec, const uint8_t *more,
			      size_t more_len, size_t *used, uint8_t *out, size_t cap)
{
	unsigned int kind = rec[0] % FZ_KINDS, target = rec[1] % 8;
	int16_t off = (int16_t)sr_get_be16(rec + 2);
	uint32_t len = sr_get_be16(rec + 4) % 4096;
	uint8_t flags = rec[6], fill = rec[7];
	bool last = !(flags & 1), bad_crc = flags & 8;
	uint32_t stag = target < FZ_NREG ? b->stag[target] : (uint32_t)(uint16_t)off << 8 | rec[7];
	uint64_t to = FZ_IOVA(target < FZ_NREG ? target : 0) + (uint64_t)(int64_t)off;
	ssize_t h;

	*used = 0;
	if (cap < SR_FPDU_HDR_MAX + 4096 + SR_FPDU_TRAILER_MAX)
		return 0;
	switch (kind) {
	case FZ_WRITE:
	case FZ_RRESP:
		h = sr_fpdu_put_tagged(out, cap, kind == FZ_WRITE ? SR_RDMAP_OP_WRITE :
								      SR_RDMAP_OP_READ_RESP,
				       last, stag, to, len);
		return h < 0 ? 0 : fz_finish(out, (size_t)h, len, fill, b->crc, bad_crc);
	case FZ_SEND: {
		static const uint8_t ops[4] = { SR_RDMAP_OP_SEND, SR_RDMAP_OP_SEND_SE,
						SR_RDMAP_OP_SEND_INV, SR_RDMAP_OP_SEND_SE_INV };
		unsigned int op = ops[(flags >> 4) & 3];
		uint32_t inval = op == SR_RDMAP_OP_SEND_INV || op == SR_RDMAP_OP_SEND_SE_INV ?
					 b->stag[(flags >> 6) % FZ_NREG] : 0;

		if (!(flags & 2) && b->send_mo == 0)
			b->msn[SR_DDP_QN_SEND]++;
		if (flags & 4)
			b->send_mo += 1;
		h = sr_fpdu_put_untagged(out, cap, op, last, b->msn[SR_DDP_QN_SEND], b->send_mo,
					 inval, len);
		b->send_mo = last ? 0 : b->send_mo + len;
		return h < 0 ? 0 : fz_finish(out, (size_t)h, len, fill, b->crc, bad_crc);
	}
	case FZ_RREQ: {
		struct sr_rdmap_rreq rr = { .sink_stag = b->stag[0], .sink_to = FZ_IOVA(0),
					    .size = len, .src_stag = stag, .src_to = to };

		if (!(flags & 2))
			b->msn[SR_DDP_QN_READ_REQ]++;
		h = sr_fpdu_put_rreq(out, cap, b->msn[SR_DDP_QN_READ_REQ], &rr);
		return h < 0 ? 0 : fz_finish(out, (size_t)h, 0, 0, b->crc, bad_crc);
	}
	case FZ_TERM: {
		struct sr_term_info t;
		ssize_t n;

		/* A Terminate quoting a made-up segment header: the record's own bytes. */
		sr_term_info_init(&t, (enum sr_iw_err)(fill % 32), rec, FZ_REC, (uint16_t)len);
		n = sr_term_build(out, cap, &t, ++b->msn[SR_DDP_QN_TERMINATE], b->crc);
		return n < 0 ? 0 : (size_t)n;
	}
	default: { /* FZ_RAW */
		size_t n = len % 64;

		if (n > more_len)
			n = more_len;
		memcpy(out, more, n);
		*used = n;
		return n;
	}
	}
}

#endif
