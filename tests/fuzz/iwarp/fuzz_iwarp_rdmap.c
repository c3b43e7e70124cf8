// SPDX-License-Identifier: MIT
/*
 * RDMAP Read Request and Terminate bodies, behind well-formed DDP headers, through the
 * library's receive parser (sr_fpdu_rx_*) and the Terminate codec (sr_term_*).
 *
 * Input: byte 0: bit 0 Terminate (else Read Request), bit 1 CRC on, bit 2 send the FPDU one
 * byte at a time; the rest is the body (Read Request: its 28 bytes, zero-filled when short;
 * Terminate: everything, up to what an FPDU holds). Asserts: a Read Request decodes to
 * exactly its big-endian fields and is refused only for a wrapping source range; encoding
 * the decoded request gives the same bytes. A Terminate the parser accepts decodes as
 * sr_term_parse does on the body alone (which reads no byte past the body: it gets an exact
 * heap copy), keeps only headers it has in full, and survives build -> parse unchanged.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../fuzz_util.h"
#include "common/sr_common.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"
#include "iwarp/term.h"

#define TERM_BODY_MAX (SR_FPDU_RX_HDRBUF - SR_FPDU_HDR_UNTAGGED)

/* Feed f[0..len) to a fresh parser; returns the last result, the parser state in *rx. */
static int feed(struct sr_fpdu_rx *rx, const uint8_t *f, size_t len, bool crc, bool bytewise,
		bool *hdr_done)
{
	size_t pos = 0;
	int r = 0;

	sr_fpdu_rx_init(rx, crc);
	*hdr_done = false;
	while (pos < len) {
		struct sr_fpdu_rx_need need;
		size_t n;

		sr_fpdu_rx_need(rx, &need);
		if (need.stage == SR_FPDU_RX_FAILED)
			return -EPROTO;
		/* Read Requests and Terminates carry no payload to place. */
		CHECK(need.stage != SR_FPDU_RX_PAYLOAD && need.buf && need.len);
		n = bytewise ? 1 : SR_MIN(need.len, len - pos);
		memcpy(need.buf, f + pos, n);
		pos += n;
		r = sr_fpdu_rx_advance(rx, n, NULL);
		if (r == SR_FPDU_RX_HDR_DONE)
			*hdr_done = true;
		if (r < 0 || r == SR_FPDU_RX_SEG_DONE)
			break;
	}
	return r;
}

static void read_request(const uint8_t *body, bool crc, bool bytewise)
{
	uint8_t f[SR_FPDU_HDR_RREQ + SR_FPDU_TRAILER_MAX], again[SR_FPDU_HDR_RREQ];
	const uint8_t *b = f + SR_FPDU_HDR_UNTAGGED;
	struct sr_rdmap_rreq rr;
	struct sr_fpdu_rx rx;
	bool hdr_done;
	size_t len;
	int r;

	/* A correct header from the encoder, then the fuzzer's body in place of the request. */
	memset(&rr, 0, sizeof(rr));
	CHECK(sr_fpdu_put_rreq(f, sizeof(f), 1, &rr) == SR_FPDU_HDR_RREQ);
	memcpy(f + SR_FPDU_HDR_UNTAGGED, body, SR_RDMAP_RREQ_HDR_LEN);
	len = SR_FPDU_HDR_RREQ + sr_fpdu_put_trailer(f + SR_FPDU_HDR_RREQ, SR_FPDU_HDR_RREQ - 2,
						     sr_crc32c(0, f, SR_FPDU_HDR_RREQ), crc);
	r = feed(&rx, f, len, crc, bytewise, &hdr_done);
	rr = (struct sr_rdmap_rreq){
		.sink_stag = sr_get_be32(b), .sink_to = sr_get_be64(b + 4),
		.size = sr_get_be32(b + 12), .src_stag = sr_get_be32(b + 16),
		.src_to = sr_get_be64(b + 20),
	};
	if (rr.size && rr.src_to > UINT64_MAX - (rr.size - 1)) {
		CHECK(r == -EPROTO && rx.err == SR_IW_ERR_RDMAP_TO_WRAP && !hdr_done);
		return;
	}
	CHECK(r == SR_FPDU_RX_SEG_DONE && hdr_done);
	CHECK(rx.seg.opcode == SR_RDMAP_OP_READ_REQ && rx.seg.last && !rx.seg.payload_len);
	CHECK(memcmp(&rx.seg.rreq, &rr, sizeof(rr)) == 0);
	CHECK(sr_fpdu_put_rreq(again, sizeof(again), 1, &rx.seg.rreq) == SR_FPDU_HDR_RREQ);
	CHECK(memcmp(again, f, SR_FPDU_HDR_RREQ) == 0);
}

static void same_term(const struct sr_term_info *a, const struct sr_term_info *b)
{
	CHECK(a->cause.layer == b->cause.layer && a->cause.etype == b->cause.etype &&
	      a->cause.ecode == b->cause.ecode);
	CHECK(a->hdrct == b->hdrct && a->ddp_hdr_len == b->ddp_hdr_len &&
	      a->rdmap_hdr_len == b->rdmap_hdr_len);
	CHECK(memcmp(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len) == 0);
	CHECK(memcmp(a->rdmap_hdr, b->rdmap_hdr, a->rdmap_hdr_len) == 0);
	if (a->hdrct & SR_TERM_HDRCT_M)
		CHECK(a->ddp_seg_len == b->ddp_seg_len);
}

static void terminate(const uint8_t *body, size_t blen, bool crc, bool bytewise)
{
	uint8_t f[SR_FPDU_HDR_UNTAGGED + TERM_BODY_MAX + SR_FPDU_TRAILER_MAX];
	uint8_t out[SR_TERM_FPDU_MAX];
	struct sr_term_info alone, back;
	struct sr_fpdu_rx rx;
	uint8_t *copy;
	bool hdr_done;
	ssize_t h, n;
	size_t len;
	int r;

	h = sr_fpdu_put_untagged(f, sizeof(f), SR_RDMAP_OP_TERMINATE, true, 1, 0, 0, blen);
	CHECK(h == SR_FPDU_HDR_UNTAGGED);
	memcpy(f + h, body, blen);
	len = (size_t)h + blen;
	len += sr_fpdu_put_trailer(f + len, len - 2, sr_crc32c(0, f, len), crc);
	r = feed(&rx, f, len, crc, bytewise, &hdr_done);

	copy = malloc(blen ? blen : 1);
	CHECK(copy);
	memcpy(copy, body, blen);
	if (sr_term_parse(copy, blen, &alone) < 0) {
		CHECK(blen < SR_RDMAP_TERM_HDR_LEN);
		CHECK(r == -EPROTO && rx.err == SR_IW_ERR_MPA_FRAMING);
		free(copy);
		return;
	}
	free(copy);
	CHECK(r == SR_FPDU_RX_SEG_DONE && hdr_done && rx.seg.opcode == SR_RDMAP_OP_TERMINATE);
	same_term(&rx.seg.term, &alone);
	/* Only what came in full is kept. */
	CHECK(alone.ddp_hdr_len == 0 || alone.ddp_hdr_len == SR_DDP_TAGGED_HDR_LEN ||
	      alone.ddp_hdr_len == SR_DDP_UNTAGGED_HDR_LEN);
	CHECK(!(alone.hdrct & SR_TERM_HDRCT_D) == !alone.ddp_hdr_len);
	CHECK(!(alone.hdrct & SR_TERM_HDRCT_M) || (alone.hdrct & SR_TERM_HDRCT_D));
	CHECK(!(alone.hdrct & SR_TERM_HDRCT_R) == !alone.rdmap_hdr_len);
	CHECK(SR_RDMAP_TERM_HDR_LEN + (alone.ddp_hdr_len ? 2u + alone.ddp_hdr_len : 0u) +
		      alone.rdmap_hdr_len <= blen);
	/* What we decode we can say back, as our own Terminate would. */
	n = sr_term_build(out, sizeof(out), &alone, 1, crc);
	if (n == -EINVAL) /* R without D: siw's habit, not something we send */
		return;
	CHECK(n > 0 && (size_t)n <= sizeof(out));
	CHECK(sr_term_parse(out + SR_FPDU_HDR_UNTAGGED, sr_get_be16(out) - SR_DDP_UNTAGGED_HDR_LEN,
			    &back) == 0);
	same_term(&back, &alone);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t body[TERM_BODY_MAX] = { 0 };
	size_t blen;

	if (size < 1)
		return 0;
	blen = SR_MIN(size - 1, sizeof(body));
	memcpy(body, data + 1, blen);
	if (data[0] & 1)
		terminate(body, blen, data[0] & 2, data[0] & 4);
	else
		read_request(body, data[0] & 2, data[0] & 4);
	return 0;
}
