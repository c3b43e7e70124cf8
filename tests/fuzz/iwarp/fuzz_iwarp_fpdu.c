// SPDX-License-Identifier: MIT
/*
 * Fuzz the FPDU receive parser with arbitrary byte streams.
 *
 * Input: byte 0: bit 0 CRC on, bit 1 repair every whole FPDU's CRC first
 * (so that mutated frames reach the checks behind the CRC), bits 1..7 seed
 * the chunking (how many bytes each simulated recv() returns); the rest is
 * the stream. Payload goes into
 * a fixed 64 KiB buffer at the segment offset the parser names. The harness
 * aborts if the parser ever asks for bytes beyond what it validated: past
 * need.len, past the segment's payload, outside its internal buffers, or
 * with a header that disagrees with ULPDU_Length. Every failure is turned
 * into a Terminate, which must encode and decode; now and then the harness
 * itself rejects a segment, as the connection code would.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../fuzz_util.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"

#define DEST_LEN 65536

static uint8_t dest[DEST_LEN];

static void check_seg(const struct sr_fpdu_rx *rx)
{
	const struct sr_ddp_seg *s = &rx->seg;

	CHECK(s->hdr_len >= SR_FPDU_HDR_MIN && s->hdr_len <= SR_FPDU_RX_HDRBUF);
	CHECK((uint32_t)s->ulpdu_len + SR_MPA_LEN_SIZE ==
	      s->hdr_len + s->payload_len);
	CHECK(s->payload_len <= DEST_LEN);
	CHECK(s->opcode < SR_RDMAP_OP_COUNT);
	CHECK(s->tagged == sr_rdmap_op_tagged(s->opcode));
	if (s->tagged) {
		CHECK(s->hdr_len == SR_FPDU_HDR_TAGGED);
		CHECK(!s->payload_len ||
		      s->to <= UINT64_MAX - (s->payload_len - 1));
		return;
	}
	CHECK((int)s->qn == sr_rdmap_op_qn(s->opcode));
	CHECK(s->msn >= 1);
	CHECK((uint64_t)s->mo + s->payload_len <= UINT32_MAX);
	if (s->opcode == SR_RDMAP_OP_READ_REQ)
		CHECK(s->hdr_len == SR_FPDU_HDR_RREQ && !s->payload_len &&
		      s->last);
	else if (s->opcode == SR_RDMAP_OP_TERMINATE)
		CHECK(!s->payload_len && s->last && s->mo == 0);
	else
		CHECK(s->hdr_len == SR_FPDU_HDR_UNTAGGED);
}

static void terminate(const struct sr_fpdu_rx *rx, bool crc)
{
	struct sr_term_info t, back;
	uint8_t f[SR_TERM_FPDU_MAX];
	ssize_t n;

	CHECK(rx->err != SR_IW_OK);
	sr_fpdu_rx_term(rx, &t);
	n = sr_term_build(f, sizeof(f), &t, 1, crc);
	CHECK(n >= SR_FPDU_HDR_TERM + SR_MPA_CRC_SIZE && n % 4 == 0);
	CHECK(sr_term_parse(f + SR_FPDU_HDR_UNTAGGED,
			    sr_get_be16(f) - SR_DDP_UNTAGGED_HDR_LEN,
			    &back) == 0);
	CHECK(back.hdrct == t.hdrct && back.ddp_hdr_len == t.ddp_hdr_len &&
	      back.rdmap_hdr_len == t.rdmap_hdr_len);
	CHECK(back.cause.layer == t.cause.layer &&
	      back.cause.ecode == t.cause.ecode);
}

static void run(const uint8_t *data, size_t size, bool crc, uint32_t seed);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;

	if (size < 1)
		return 0;
	if (!(data[0] & 2)) {
		run(data + 1, size - 1, data[0] & 1, data[0] | 0x100);
		return 0;
	}
	fixed = malloc(size);
	CHECK(fixed);
	memcpy(fixed, data + 1, size - 1);
	fz_fix_crcs(fixed, size - 1);
	run(fixed, size - 1, data[0] & 1, data[0] | 0x100);
	free(fixed);
	return 0;
}

static void run(const uint8_t *data, size_t size, bool crc, uint32_t seed)
{
	struct sr_fpdu_rx rx;
	size_t pos = 0;

	sr_fpdu_rx_init(&rx, crc);

	while (pos < size) {
		size_t take, used = 0;

		seed = seed * 1103515245u + 12345u;
		take = (seed >> 16) % 9 ? 1 + (seed >> 8) % 23 : size - pos;
		if (take > size - pos)
			take = size - pos;

		while (used < take) {
			struct sr_fpdu_rx_need need;
			size_t n;
			int r;

			sr_fpdu_rx_need(&rx, &need);
			if (need.stage == SR_FPDU_RX_FAILED) {
				terminate(&rx, crc);
				return;
			}
			CHECK(need.len > 0);
			n = take - used < need.len ? take - used : need.len;
			if (need.stage == SR_FPDU_RX_PAYLOAD) {
				CHECK(!need.buf);
				CHECK((size_t)need.seg_off + need.len ==
				      rx.seg.payload_len);
				CHECK(need.seg_off + n <= DEST_LEN);
				memcpy(dest + need.seg_off, data + pos + used,
				       n);
				r = sr_fpdu_rx_advance(&rx, n,
						       dest + need.seg_off);
			} else {
				const uint8_t *lo =
					need.stage == SR_FPDU_RX_HDR
						? rx.hdrbuf[rx.hdr_cur]
						: rx.trailer;
				size_t cap = need.stage == SR_FPDU_RX_HDR
						     ? SR_FPDU_RX_HDRBUF
						     : sizeof(rx.trailer);

				CHECK(need.buf >= lo &&
				      need.buf + need.len <= lo + cap);
				memcpy(need.buf, data + pos + used, n);
				r = sr_fpdu_rx_advance(&rx, n, NULL);
			}
			used += n;
			if (r < 0) {
				CHECK(r == -EPROTO || r == -EBADMSG);
				CHECK(rx.stage == SR_FPDU_RX_FAILED);
				terminate(&rx, crc);
				return;
			}
			if (r == SR_FPDU_RX_HDR_DONE) {
				check_seg(&rx);
				/* Connection code refusing a buffer. */
				if ((seed & 0xff) == 0x5a) {
					CHECK(sr_fpdu_rx_fail(
						      &rx,
						      SR_IW_ERR_DDP_T_STAG) ==
					      -EPROTO);
					terminate(&rx, crc);
					return;
				}
			}
			if (r == SR_FPDU_RX_SEG_DONE) {
				CHECK(rx.stage == SR_FPDU_RX_HDR);
				/* ...or refusing a complete message. */
				if ((seed & 0xff) == 0xa5) {
					sr_fpdu_rx_fail(&rx,
							SR_IW_ERR_RDMAP_ACCESS);
					terminate(&rx, crc);
					return;
				}
			}
		}
		pos += take;
	}
}
