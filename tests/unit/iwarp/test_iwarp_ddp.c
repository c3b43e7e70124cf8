// SPDX-License-Identifier: MIT
/*
 * DDP/RDMAP over MPA: byte-exact FPDUs from docs/WIRE.md §1.3/§3.3, encoder ->
 * streaming parser round trips under every chunking, several FPDUs per
 * buffer, segmentation arithmetic, and corrupted streams, each of which must
 * fail with the right Terminate cause before any payload byte is placed.
 */
#include "iw_test.h"

#include "common/sr_common.h"
#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"

/* ---------------------------- stream builder ---------------------------- */

struct stream {
	uint8_t buf[1 << 20];
	size_t len;
	bool crc;
};

static struct stream st;
static struct iw_drv drv;

static void st_reset(bool crc)
{
	st.len = 0;
	st.crc = crc;
}

/* Header (from an encoder), payload and trailer, the way a sender would. */
static void st_fpdu(const uint8_t *hdr, ssize_t hlen, const void *pl,
		    size_t plen)
{
	uint32_t crc = 0;
	uint8_t *o = st.buf + st.len;

	assert_true(hlen > 0);
	assert_true(st.len + (size_t)hlen + plen + SR_FPDU_TRAILER_MAX <=
		    sizeof(st.buf));
	memcpy(o, hdr, (size_t)hlen);
	if (plen)
		memcpy(o + hlen, pl, plen);
	if (st.crc)
		crc = sr_crc32c(sr_crc32c(0, hdr, (size_t)hlen), pl, plen);
	st.len += (size_t)hlen + plen +
		  sr_fpdu_put_trailer(o + hlen + plen, (size_t)hlen - 2 + plen,
				      crc, st.crc);
}

static int st_tagged(unsigned int op, uint32_t stag, uint64_t to,
		     const uint8_t *msg, uint32_t len, uint32_t mulpdu)
{
	struct sr_ddp_segmenter sg;
	struct sr_ddp_chunk c;
	uint8_t hdr[SR_FPDU_HDR_MAX];
	int n = 0;

	assert_int_equal(
		sr_ddp_segmenter_init(&sg, len, mulpdu, SR_DDP_TAGGED_HDR_LEN),
		0);
	while (sr_ddp_segmenter_next(&sg, &c)) {
		st_fpdu(hdr,
			sr_fpdu_put_tagged(hdr, sizeof(hdr), op, c.last, stag,
					   to + c.off, c.len),
			msg ? msg + c.off : NULL, c.len);
		n++;
	}
	return n;
}

static int st_send(unsigned int op, uint32_t msn, uint32_t inval,
		   const uint8_t *msg, uint32_t len, uint32_t mulpdu)
{
	struct sr_ddp_segmenter sg;
	struct sr_ddp_chunk c;
	uint8_t hdr[SR_FPDU_HDR_MAX];
	int n = 0;

	assert_int_equal(sr_ddp_segmenter_init(&sg, len, mulpdu,
					       SR_DDP_UNTAGGED_HDR_LEN),
			 0);
	while (sr_ddp_segmenter_next(&sg, &c)) {
		st_fpdu(hdr,
			sr_fpdu_put_untagged(hdr, sizeof(hdr), op, c.last, msn,
					     c.off, inval, c.len),
			msg ? msg + c.off : NULL, c.len);
		n++;
	}
	return n;
}

static void st_rreq(uint32_t msn, const struct sr_rdmap_rreq *rr)
{
	uint8_t hdr[SR_FPDU_HDR_MAX];

	st_fpdu(hdr, sr_fpdu_put_rreq(hdr, sizeof(hdr), msn, rr), NULL, 0);
}

static void drv_done(void)
{
	iw_drv_fini(&drv);
	drv.mem = NULL;
}

static int teardown_drv(void **state)
{
	if (drv.mem)
		iw_drv_fini(&drv);
	drv.mem = NULL;
	return 0;
}

/* ---------------------------- byte-exact FPDUs ---------------------------- */

static void expect_stream(const char *hex)
{
	uint8_t want[128];
	size_t n = iw_hex(hex, want, sizeof(want));

	assert_int_equal(st.len, n);
	assert_memory_equal(st.buf, want, n);
}

static void test_worked_send(void **state)
{
	uint8_t hdr[SR_FPDU_HDR_MAX];

	st_reset(true);
	st_fpdu(hdr,
		sr_fpdu_put_untagged(hdr, sizeof(hdr), SR_RDMAP_OP_SEND, true,
				     1, 0, 0, 5),
		"abcde", 5);
	expect_stream("00 17 41 43 00000000 00000000 00000001 00000000"
		      "61 62 63 64 65 00 00 00 89 f6 58 70");

	iw_drv_init(&drv, true, 0);
	assert_int_equal(iw_drv_feed(&drv, st.buf, st.len, 0), 0);
	assert_int_equal(drv.nseg, 1);
	assert_int_equal(drv.segs[0].opcode, SR_RDMAP_OP_SEND);
	assert_int_equal(drv.segs[0].payload_len, 5);
	assert_true(drv.segs[0].last && drv.segs[0].first);
	assert_memory_equal(drv.arena + 1 * IW_SEND_SLOT, "abcde", 5);
	drv_done();

	/* CRC off: zeros in the slot (siw style), not checked on receipt. */
	st_reset(false);
	st_fpdu(hdr,
		sr_fpdu_put_untagged(hdr, sizeof(hdr), SR_RDMAP_OP_SEND, true,
				     1, 0, 0, 5),
		"abcde", 5);
	expect_stream("00 17 41 43 00000000 00000000 00000001 00000000"
		      "61 62 63 64 65 00 00 00 00 00 00 00");
	st.buf[st.len - 1] = 0x99;
	iw_drv_init(&drv, false, 0);
	assert_int_equal(iw_drv_feed(&drv, st.buf, st.len, 1), 0);
	assert_int_equal(drv.nseg, 1);
	drv_done();
}

static void test_worked_rtr(void **state)
{
	struct sr_rdmap_rreq rr = { .src_stag = 1 };
	uint8_t hdr[SR_FPDU_HDR_MAX];

	/* docs/WIRE.md §1.3 (bytes in §3.3): zero-length Write RTR, STag 1, TO 0, with CRC. */
	st_reset(true);
	st_fpdu(hdr,
		sr_fpdu_put_tagged(hdr, sizeof(hdr), SR_RDMAP_OP_WRITE, true, 1,
				   0, 0),
		NULL, 0);
	expect_stream("00 0e c1 40 00000001 0000000000000000 eb d3 4c 5f");

	st_reset(true);
	st_fpdu(hdr,
		sr_fpdu_put_tagged(hdr, sizeof(hdr), SR_RDMAP_OP_READ_RESP,
				   true, 0, 0, 0),
		NULL, 0);
	expect_stream("00 0e c1 42 00000000 0000000000000000 69 75 d6 ca");

	st_reset(true);
	st_rreq(1, &rr);
	expect_stream("00 2e 41 41 00000000 00000001 00000001 00000000"
		      "00000000 0000000000000000 00000000 00000001"
		      "0000000000000000 ba 10 e3 c9");

	/* The three back to back, parsed a byte at a time. */
	st_reset(true);
	st_fpdu(hdr,
		sr_fpdu_put_tagged(hdr, sizeof(hdr), SR_RDMAP_OP_WRITE, true, 1,
				   0, 0),
		NULL, 0);
	st_rreq(1, &rr);
	st_fpdu(hdr,
		sr_fpdu_put_tagged(hdr, sizeof(hdr), SR_RDMAP_OP_READ_RESP,
				   true, 0, 0, 0),
		NULL, 0);
	iw_drv_init(&drv, true, 0);
	assert_int_equal(iw_drv_feed(&drv, st.buf, st.len, 1), 0);
	assert_int_equal(drv.nseg, 3);
	assert_int_equal(drv.segs[0].opcode, SR_RDMAP_OP_WRITE);
	assert_int_equal(drv.segs[0].stag, 1);
	assert_int_equal(drv.segs[0].payload_len, 0);
	assert_int_equal(drv.segs[1].opcode, SR_RDMAP_OP_READ_REQ);
	assert_int_equal(drv.segs[1].qn, 1);
	assert_int_equal(drv.segs[1].msn, 1);
	assert_int_equal(drv.segs[1].rreq.src_stag, 1);
	assert_int_equal(drv.segs[1].rreq.size, 0);
	assert_int_equal(drv.segs[2].opcode, SR_RDMAP_OP_READ_RESP);
	drv_done();
}

/* ------------------------- round trips ------------------------- */

#define WR_LEN 20000
#define SEND_LEN 9000
#define RR_LEN 777
#define TAG_BASE 0x7f0000000000ull
#define WR_OFF 131072
#define RR_OFF 200000

/* send_msg is larger than SEND_LEN: test_caller_reject sends one slot + 1. */
static uint8_t wr_msg[WR_LEN], send_msg[IW_SEND_SLOT + 1], rr_msg[RR_LEN];

/* A mixed conversation with CRC @crc, segmented for @mss. */
static int build_mix(bool crc, uint32_t mss)
{
	uint32_t mulpdu = sr_mpa_mulpdu(mss);
	struct sr_rdmap_rreq rr = { .sink_stag = 0x77,
				    .sink_to = TAG_BASE + RR_OFF,
				    .size = RR_LEN,
				    .src_stag = 0x1234500,
				    .src_to = 0x1000 };
	int n = 0;

	for (int i = 0; i < WR_LEN; i++)
		wr_msg[i] = (uint8_t)(i * 13 + 1);
	for (int i = 0; i < SEND_LEN; i++)
		send_msg[i] = (uint8_t)(i * 7 + 5);
	for (int i = 0; i < RR_LEN; i++)
		rr_msg[i] = (uint8_t)(i ^ 0x5a);

	st_reset(crc);
	n += st_tagged(SR_RDMAP_OP_WRITE, 0xabcd00, TAG_BASE + WR_OFF, wr_msg,
		       WR_LEN, mulpdu);
	n += st_send(SR_RDMAP_OP_SEND, 1, 0, send_msg, SEND_LEN, mulpdu);
	st_rreq(1, &rr);
	n++;
	n += st_tagged(SR_RDMAP_OP_READ_RESP, 0x77, TAG_BASE + RR_OFF, rr_msg,
		       RR_LEN, mulpdu);
	n += st_send(SR_RDMAP_OP_SEND_SE, 2, 0, NULL, 0, mulpdu);
	n += st_send(SR_RDMAP_OP_SEND_INV, 3, 0xfeed01, send_msg, 10, mulpdu);
	n += st_send(SR_RDMAP_OP_SEND_SE_INV, 4, 0xfeed02, send_msg + 10, 3,
		     mulpdu);
	return n;
}

static void check_mix(int nseg)
{
	int sends = 0;

	assert_int_equal(drv.rc, 0);
	assert_int_equal(drv.nseg, nseg);
	assert_int_equal(drv.hdr_events, nseg);
	assert_memory_equal(drv.arena + WR_OFF, wr_msg, WR_LEN);
	assert_memory_equal(drv.arena + RR_OFF, rr_msg, RR_LEN);
	assert_memory_equal(drv.arena + 1 * IW_SEND_SLOT, send_msg, SEND_LEN);
	assert_memory_equal(drv.arena + 3 * IW_SEND_SLOT, send_msg, 10);
	assert_memory_equal(drv.arena + 4 * IW_SEND_SLOT, send_msg + 10, 3);

	for (int i = 0; i < drv.nseg; i++) {
		const struct sr_ddp_seg *s = &drv.segs[i];

		assert_true(s->ulpdu_len <= SR_MPA_MULPDU_MAX);
		/* first: a message's opening segment, by either model. */
		if (s->tagged)
			assert_int_equal(s->first,
					 s->to == TAG_BASE + WR_OFF ||
						 s->to == TAG_BASE + RR_OFF);
		else
			assert_int_equal(s->first, s->mo == 0);
		if (s->opcode == SR_RDMAP_OP_SEND_INV)
			assert_int_equal(s->inval_stag, 0xfeed01);
		if (s->opcode == SR_RDMAP_OP_SEND_SE_INV)
			assert_int_equal(s->inval_stag, 0xfeed02);
		if (s->opcode == SR_RDMAP_OP_SEND && s->last)
			sends++;
		if (s->opcode == SR_RDMAP_OP_READ_REQ) {
			assert_int_equal(s->rreq.sink_stag, 0x77);
			assert_int_equal(s->rreq.sink_to, TAG_BASE + RR_OFF);
			assert_int_equal(s->rreq.size, RR_LEN);
			assert_int_equal(s->rreq.src_stag, 0x1234500);
			assert_int_equal(s->rreq.src_to, 0x1000);
		}
		if (s->opcode == SR_RDMAP_OP_SEND_SE) {
			assert_int_equal(s->payload_len, 0);
			assert_true(s->first && s->last);
		}
	}
	assert_int_equal(sends, 1);
}

static void test_roundtrip_chunks(void **state)
{
	const size_t chunks[] = { 1, 7, 0, 3, 1460, 4096 };
	const uint32_t msses[] = { 1460, 16344, 65483 };

	for (int c = 0; c < 2; c++)
		for (size_t m = 0; m < SR_ARRAY_SIZE(msses); m++) {
			int n = build_mix(c, msses[m]);

			for (size_t k = 0; k < SR_ARRAY_SIZE(chunks); k++) {
				iw_drv_init(&drv, c, TAG_BASE);
				iw_drv_feed(&drv, st.buf, st.len, chunks[k]);
				check_mix(n);
				/* All consumed, waiting for a header. */
				assert_int_equal(drv.rx.stage, SR_FPDU_RX_HDR);
				drv_done();
			}
		}
}

static void test_many_in_one_buffer(void **state)
{
	uint8_t hdr[SR_FPDU_HDR_MAX];

	st_reset(true);
	for (uint32_t i = 1; i <= 200; i++)
		st_fpdu(hdr,
			sr_fpdu_put_untagged(hdr, sizeof(hdr), SR_RDMAP_OP_SEND,
					     true, i, 0, 0, i % 5),
			"vwxyz", i % 5);
	iw_drv_init(&drv, true, 0);
	assert_int_equal(iw_drv_feed(&drv, st.buf, st.len, 0), 0);
	assert_int_equal(drv.nseg, 200);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(drv.segs[i].msn, (uint32_t)i + 1);
		assert_int_equal(drv.segs[i].payload_len,
				 (uint32_t)(i + 1) % 5);
	}
	drv_done();
}

/* Same bytes, random chunk sizes, through the raw need/advance API. */
static void test_random_chunks(void **state)
{
	uint32_t seed = 99;
	int n = build_mix(true, 1460);

	for (int round = 0; round < 20; round++) {
		size_t pos = 0;

		iw_drv_init(&drv, true, TAG_BASE);
		while (pos < st.len && !drv.rc) {
			size_t c;

			seed = seed * 1664525u + 1013904223u;
			c = 1 + (seed >> 8) % 3000;
			if (c > st.len - pos)
				c = st.len - pos;
			iw_drv_feed(&drv, st.buf + pos, c, c);
			pos += c;
		}
		check_mix(n);
		drv_done();
	}
}

/*
 * A receiver that reads sr_fpdu_rx_lookahead() bytes beyond each need into a buffer of its
 * own (the transport does, to read a whole FPDU with one call) must only ever get framing
 * there: no read-ahead byte may be asked for as payload.
 */
static void test_lookahead(void **state)
{
	int n = build_mix(true, 1460);
	size_t pos = 0, ahead = 0; /* st.buf[pos, ahead) was read ahead */
	int lookaheads = 0;

	iw_drv_init(&drv, true, TAG_BASE);
	while (pos < st.len && !drv.rc) {
		struct sr_fpdu_rx_need need;
		size_t k;

		sr_fpdu_rx_need(&drv.rx, &need);
		assert_int_not_equal(need.stage, SR_FPDU_RX_FAILED);
		if (pos < ahead) {
			assert_int_not_equal(need.stage, SR_FPDU_RX_PAYLOAD);
		} else {
			size_t la = sr_fpdu_rx_lookahead(&drv.rx);

			assert_int_equal(la == 0, need.stage == SR_FPDU_RX_HDR);
			ahead = pos + need.len + la;
			lookaheads += la > 0;
		}
		k = need.len < st.len - pos ? need.len : st.len - pos;
		if (pos < ahead && ahead - pos < k)
			k = ahead - pos;
		iw_drv_feed(&drv, st.buf + pos, k, k);
		pos += k;
	}
	assert_int_equal(lookaheads, n); /* one per FPDU: its payload or trailer read */
	check_mix(n);
	drv_done();
}

/*
 * sr_fpdu_rx_fpdu_rest() (the transport stages only to the next header with it): fed one
 * byte at a time, once an FPDU's length field is in, position + rest is that FPDU's end,
 * the same at every later byte of it, and the next FPDU starts exactly there.
 */
static void test_fpdu_rest(void **state)
{
	int n = build_mix(true, 1460), ends = 0;
	size_t pos = 0, end = 0;

	(void)state;
	iw_drv_init(&drv, true, TAG_BASE);
	while (pos < st.len && !drv.rc) {
		struct sr_fpdu_rx_need need;
		size_t rest = sr_fpdu_rx_fpdu_rest(&drv.rx);

		sr_fpdu_rx_need(&drv.rx, &need);
		assert_int_not_equal(need.stage, SR_FPDU_RX_FAILED);
		if (need.stage == SR_FPDU_RX_HDR && drv.rx.hdr_have == 0) {
			assert_int_equal(pos, end); /* the previous FPDU ended where it said */
			assert_int_equal(rest, SR_FPDU_HDR_MIN);
			end = 0;
		} else if (need.stage != SR_FPDU_RX_HDR || drv.rx.hdr_have >= SR_MPA_LEN_SIZE) {
			if (!end) {
				end = pos + rest;
				ends++;
			}
			assert_int_equal(pos + rest, end);
		}
		iw_drv_feed(&drv, st.buf + pos, 1, 1);
		pos++;
	}
	assert_int_equal(pos, end);
	assert_int_equal(ends, n);
	check_mix(n);
	drv_done();
}

/* ------------------------- segmentation ------------------------- */

static void check_segs(uint32_t mss, uint32_t hdr, uint32_t len,
		       uint32_t want_n, uint32_t want_last)
{
	uint32_t mulpdu = sr_mpa_mulpdu(mss), n = 0, sum = 0;
	struct sr_ddp_segmenter sg;
	struct sr_ddp_chunk c;

	assert_int_equal(sr_ddp_segmenter_init(&sg, len, mulpdu, hdr), 0);
	while (sr_ddp_segmenter_next(&sg, &c)) {
		assert_int_equal(c.off, sum);
		sum += c.len;
		n++;
		assert_true(hdr + c.len <= mulpdu);
		if (!c.last) {
			/* Full segments: one MSS on the wire, no PAD. */
			assert_int_equal(hdr + c.len, mulpdu);
			assert_int_equal(sr_mpa_pad(hdr + c.len), 0);
			assert_true(sr_mpa_fpdu_len(hdr + c.len) <= mss);
		} else {
			assert_int_equal(c.len, want_last);
		}
	}
	assert_int_equal(n, want_n);
	assert_int_equal(sum, len);
	assert_false(sr_ddp_segmenter_next(&sg, &c));
}

static void test_segmentation(void **state)
{
	/* MSS 1460: MULPDU 1454, tagged 1440 / untagged 1436 per FPDU. */
	check_segs(1460, 14, 10000, 7, 10000 - 6 * 1440);
	check_segs(1460, 18, 10000, 7, 10000 - 6 * 1436);
	check_segs(1460, 14, 1440, 1, 1440);
	check_segs(1460, 14, 1441, 2, 1);
	check_segs(1460, 14, 2880, 2, 1440);
	check_segs(1460, 14, 0, 1, 0);
	check_segs(1460, 18, 0, 1, 0);
	/* MSS 16344: MULPDU 16338. */
	check_segs(16344, 14, 1 << 20, 65, (1 << 20) - 64 * 16324);
	check_segs(16344, 18, 16320, 1, 16320);
	/* Loopback MSS 65483: MULPDU 65474, tagged 65460 per FPDU. */
	check_segs(65483, 14, 1u << 24, 257, (1u << 24) - 256 * 65460);
	check_segs(65483, 18, 65456, 1, 65456);
	check_segs(65483, 18, 65457, 2, 1);

	{
		struct sr_ddp_segmenter sg;

		assert_int_equal(sr_ddp_segmenter_init(&sg, 1, 14, 14),
				 -EINVAL);
		assert_int_equal(sr_ddp_segmenter_init(&sg, 1, 15, 14), 0);
		/* Over 65535 is clamped: a ULPDU cannot be longer. */
		assert_int_equal(sr_ddp_segmenter_init(&sg, 1, 1u << 20, 14),
				 0);
		assert_int_equal(sg.max_payload, 65535 - 14);
	}
}

static void test_encoder_errors(void **state)
{
	uint8_t h[SR_FPDU_HDR_MAX], t[SR_FPDU_TRAILER_MAX];
	struct sr_rdmap_rreq rr = { 0 };

	assert_int_equal(sr_fpdu_put_tagged(h, sizeof(h), SR_RDMAP_OP_SEND,
					    true, 0, 0, 0),
			 -EINVAL);
	assert_int_equal(sr_fpdu_put_tagged(h, sizeof(h), SR_RDMAP_OP_WRITE,
					    true, 0, 0, 65522),
			 -EMSGSIZE);
	assert_int_equal(sr_fpdu_put_tagged(h, sizeof(h), SR_RDMAP_OP_WRITE,
					    true, 0, 0, 65521),
			 16);
	assert_int_equal(sr_get_be16(h), 65535);
	assert_int_equal(
		sr_fpdu_put_tagged(h, 15, SR_RDMAP_OP_WRITE, true, 0, 0, 0),
		-ENOSPC);
	assert_int_equal(sr_fpdu_put_untagged(h, sizeof(h), SR_RDMAP_OP_WRITE,
					      true, 1, 0, 0, 0),
			 -EINVAL);
	assert_int_equal(sr_fpdu_put_untagged(h, sizeof(h),
					      SR_RDMAP_OP_READ_REQ, true, 1, 0,
					      0, 0),
			 -EINVAL);
	assert_int_equal(
		sr_fpdu_put_untagged(h, sizeof(h), 9, true, 1, 0, 0, 0),
		-EINVAL);
	assert_int_equal(sr_fpdu_put_untagged(h, sizeof(h), SR_RDMAP_OP_SEND,
					      true, 1, 0, 5, 0),
			 -EINVAL);
	assert_int_equal(sr_fpdu_put_untagged(h, sizeof(h), SR_RDMAP_OP_SEND,
					      true, 1, 0, 0, 65518),
			 -EMSGSIZE);
	assert_int_equal(
		sr_fpdu_put_untagged(h, 19, SR_RDMAP_OP_SEND, true, 1, 0, 0, 0),
		-ENOSPC);
	assert_int_equal(sr_fpdu_put_rreq(h, 47, 1, &rr), -ENOSPC);

	/* Non-last untagged segment: L clear, QN from the opcode. */
	assert_int_equal(sr_fpdu_put_untagged(h, sizeof(h), SR_RDMAP_OP_SEND_SE,
					      false, 7, 1436, 0, 1436),
			 20);
	assert_int_equal(h[2], 0x01);
	assert_int_equal(h[3], 0x45);
	assert_int_equal(sr_get_be32(h + 8), 0);
	assert_int_equal(sr_get_be32(h + 12), 7);
	assert_int_equal(sr_get_be32(h + 16), 1436);

	/* Trailer sizes: pad + 4. */
	assert_int_equal(sr_fpdu_put_trailer(t, 14, 0, false), 4);
	assert_int_equal(sr_fpdu_put_trailer(t, 15, 0, false), 7);
	assert_int_equal(sr_fpdu_put_trailer(t, 16, 0, false), 6);
	assert_int_equal(sr_fpdu_put_trailer(t, 17, 0, false), 5);

	assert_true(sr_rdmap_op_tagged(SR_RDMAP_OP_WRITE));
	assert_true(sr_rdmap_op_tagged(SR_RDMAP_OP_READ_RESP));
	assert_false(sr_rdmap_op_tagged(SR_RDMAP_OP_SEND));
	assert_int_equal(sr_rdmap_op_qn(SR_RDMAP_OP_SEND_SE_INV), 0);
	assert_int_equal(sr_rdmap_op_qn(SR_RDMAP_OP_READ_REQ), 1);
	assert_int_equal(sr_rdmap_op_qn(SR_RDMAP_OP_TERMINATE), 2);
	assert_int_equal(sr_rdmap_op_qn(SR_RDMAP_OP_WRITE), -EINVAL);
	assert_int_equal(sr_rdmap_op_qn(8), -EINVAL);
}

/* ------------------------- corruption ------------------------- */

static bool arena_untouched(void)
{
	for (size_t i = 0; i < IW_ARENA; i++)
		if (drv.arena[i])
			return false;
	return true;
}

/*
 * Feed @st (after the caller damaged it) and expect @err with the cause
 * triple, the header attachment, and no payload placed when @no_payload.
 */
static void expect_fail(bool crc, size_t chunk, int rc, enum sr_iw_err err,
			uint8_t layer, uint8_t etype, uint8_t ecode,
			uint16_t hdrct, bool no_payload)
{
	struct sr_term_info t;
	uint8_t term[SR_TERM_FPDU_MAX];
	ssize_t tl;

	iw_drv_init(&drv, crc, TAG_BASE);
	assert_int_equal(iw_drv_feed(&drv, st.buf, st.len, chunk), rc);
	assert_int_equal(drv.rx.err, err);
	assert_int_equal(drv.rx.stage, SR_FPDU_RX_FAILED);
	if (no_payload)
		assert_true(arena_untouched());

	sr_fpdu_rx_term(&drv.rx, &t);
	assert_int_equal(t.cause.layer, layer);
	assert_int_equal(t.cause.etype, etype);
	assert_int_equal(t.cause.ecode, ecode);
	assert_int_equal(t.hdrct, hdrct);
	if (hdrct & SR_TERM_HDRCT_D)
		assert_memory_equal(t.ddp_hdr,
				    drv.rx.hdrbuf[drv.rx.fail_buf] + 2,
				    t.ddp_hdr_len);

	/* A failed parser stays failed. */
	{
		struct sr_fpdu_rx_need need;

		sr_fpdu_rx_need(&drv.rx, &need);
		assert_int_equal(need.stage, SR_FPDU_RX_FAILED);
		assert_int_equal(need.len, 0);
		assert_int_equal(sr_fpdu_rx_advance(&drv.rx, 0, NULL), rc);
	}
	/* The Terminate encodes. */
	tl = sr_term_build(term, sizeof(term), &t, 1, crc);
	assert_true(tl >= 28);
	assert_int_equal(tl % 4, 0);
	drv_done();
}

static void one_send(bool crc, uint32_t msn, uint32_t len)
{
	st_reset(crc);
	st_send(SR_RDMAP_OP_SEND, msn, 0, send_msg, len, 1454);
}

static void test_bad_crc(void **state)
{
	const size_t chunks[] = { 1, 7, 0 };

	for (size_t k = 0; k < SR_ARRAY_SIZE(chunks); k++) {
		one_send(true, 1, 100);
		st.buf[20 + 50] ^= 1; /* a payload byte */
		/* Payload lands (in its buffer) before the CRC is known. */
		expect_fail(true, chunks[k], -EBADMSG, SR_IW_ERR_MPA_CRC, 2, 0,
			    0x02, 0, false);
		one_send(true, 1, 100);
		st.buf[st.len - 2] ^= 0x80; /* the CRC itself */
		expect_fail(true, chunks[k], -EBADMSG, SR_IW_ERR_MPA_CRC, 2, 0,
			    0x02, 0, false);
		one_send(true, 1, 1);
		st.buf[st.len - 5] = 1; /* a pad byte */
		expect_fail(true, chunks[k], -EBADMSG, SR_IW_ERR_MPA_CRC, 2, 0,
			    0x02, 0, false);
	}
	/* Second FPDU bad, first one completed. */
	st_reset(true);
	st_send(SR_RDMAP_OP_SEND, 1, 0, send_msg, 10, 1454);
	st_send(SR_RDMAP_OP_SEND, 2, 0, send_msg, 10, 1454);
	st.buf[st.len - 1] ^= 0xff;
	iw_drv_init(&drv, true, 0);
	assert_int_equal(iw_drv_feed(&drv, st.buf, st.len, 0), -EBADMSG);
	assert_int_equal(drv.nseg, 1);
	drv_done();
}

static void test_bad_ddp_version(void **state)
{
	one_send(true, 1, 100);
	st.buf[2] = (st.buf[2] & ~SR_DDP_DV_MASK) | 2;
	expect_fail(true, 1, -EPROTO, SR_IW_ERR_DDP_U_VERSION, 1, 2, 0x06, 0,
		    true);

	st_reset(true);
	st_tagged(SR_RDMAP_OP_WRITE, 5, TAG_BASE, wr_msg, 100, 1454);
	st.buf[2] &= ~SR_DDP_DV_MASK;
	expect_fail(true, 7, -EPROTO, SR_IW_ERR_DDP_T_VERSION, 1, 1, 0x04, 0,
		    true);
}

static void test_bad_rdmap_version(void **state)
{
	one_send(false, 1, 100);
	st.buf[3] = (st.buf[3] & ~SR_RDMAP_RV_MASK) | (2 << SR_RDMAP_RV_SHIFT);
	expect_fail(false, 0, -EPROTO, SR_IW_ERR_RDMAP_VERSION, 0, 2, 0x05, 0,
		    true);
}

static void test_bad_opcode(void **state)
{
	for (uint8_t op = 8; op < 16; op++) {
		one_send(true, 1, 100);
		st.buf[3] = (st.buf[3] & ~SR_RDMAP_OPCODE_MASK) | op;
		expect_fail(true, 1, -EPROTO, SR_IW_ERR_RDMAP_OPCODE, 0, 2,
			    0x06, 0, true);
	}
	/* Tagged flag disagreeing with the opcode, both ways. */
	one_send(true, 1, 100);
	st.buf[2] |= SR_DDP_FLAG_TAGGED;
	expect_fail(true, 0, -EPROTO, SR_IW_ERR_RDMAP_OPCODE, 0, 2, 0x06, 0,
		    true);
	st_reset(true);
	st_tagged(SR_RDMAP_OP_WRITE, 5, TAG_BASE, wr_msg, 100, 1454);
	st.buf[2] &= ~SR_DDP_FLAG_TAGGED;
	expect_fail(true, 0, -EPROTO, SR_IW_ERR_RDMAP_OPCODE, 0, 2, 0x06, 0,
		    true);
}

static void test_bad_qn(void **state)
{
	one_send(true, 1, 100);
	sr_put_be32(st.buf + 2 + 6, 1); /* Send on QN 1 */
	expect_fail(true, 1, -EPROTO, SR_IW_ERR_DDP_U_QN, 1, 2, 0x01,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, true);
	one_send(true, 1, 100);
	sr_put_be32(st.buf + 2 + 6, 0xffffffff);
	expect_fail(true, 0, -EPROTO, SR_IW_ERR_DDP_U_QN, 1, 2, 0x01,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, true);
	/* Read Request on QN 0. */
	{
		struct sr_rdmap_rreq rr = { .size = 1 };

		st_reset(false);
		st_rreq(1, &rr);
		sr_put_be32(st.buf + 2 + 6, 0);
		expect_fail(false, 7, -EPROTO, SR_IW_ERR_DDP_U_QN, 1, 2, 0x01,
			    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, true);
	}
}

static void test_short_ulpdu(void **state)
{
	/* ULPDU_Length below every opcode's header: framing, LLP 0x03. */
	for (uint16_t l = 0; l < 18; l++) {
		one_send(true, 1, 100);
		sr_put_be16(st.buf, l);
		expect_fail(true, 1, -EPROTO, SR_IW_ERR_MPA_FRAMING, 2, 0, 0x03,
			    0, true);
	}
	st_reset(true);
	st_tagged(SR_RDMAP_OP_WRITE, 5, TAG_BASE, wr_msg, 100, 1454);
	sr_put_be16(st.buf, 13);
	expect_fail(true, 0, -EPROTO, SR_IW_ERR_MPA_FRAMING, 2, 0, 0x03, 0,
		    true);

	/* Read Request: exactly 46, neither less nor more. */
	{
		struct sr_rdmap_rreq rr = { .size = 1 };

		st_reset(true);
		st_rreq(1, &rr);
		sr_put_be16(st.buf, 45);
		expect_fail(true, 0, -EPROTO, SR_IW_ERR_MPA_FRAMING, 2, 0, 0x03,
			    0, true);
		st_reset(true);
		st_rreq(1, &rr);
		sr_put_be16(st.buf, 50);
		expect_fail(true, 1, -EPROTO, SR_IW_ERR_MPA_FRAMING, 2, 0, 0x03,
			    0, true);
	}
	/* Terminate: at least 22, at most our buffer. */
	{
		uint8_t h[SR_FPDU_HDR_MAX];

		st_reset(false);
		st_fpdu(h,
			sr_fpdu_put_untagged(h, sizeof(h),
					     SR_RDMAP_OP_TERMINATE, true, 1, 0,
					     0, 4),
			"\x20\x02\x00\x00", 4);
		sr_put_be16(st.buf, 21);
		expect_fail(false, 0, -EPROTO, SR_IW_ERR_MPA_FRAMING, 2, 0,
			    0x03, 0, true);
		sr_put_be16(st.buf, SR_FPDU_RX_HDRBUF - 1);
		expect_fail(false, 0, -EPROTO, SR_IW_ERR_MPA_FRAMING, 2, 0,
			    0x03, 0, true);
	}
}

static void test_sequence_errors(void **state)
{
	/* First Send must be MSN 1. */
	one_send(true, 2, 100);
	expect_fail(true, 7, -EPROTO, SR_IW_ERR_DDP_U_MSN_RANGE, 1, 2, 0x03,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, true);
	/* Repeated MSN. */
	st_reset(true);
	st_send(SR_RDMAP_OP_SEND, 1, 0, send_msg, 10, 1454);
	st_send(SR_RDMAP_OP_SEND, 1, 0, send_msg, 10, 1454);
	expect_fail(true, 0, -EPROTO, SR_IW_ERR_DDP_U_MSN_RANGE, 1, 2, 0x03,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, false);
	/* First segment must start at MO 0. */
	one_send(true, 1, 100);
	sr_put_be32(st.buf + 2 + 14, 4);
	expect_fail(true, 1, -EPROTO, SR_IW_ERR_DDP_U_MO, 1, 2, 0x04,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, true);
	/* A gap between segments of one message. */
	one_send(true, 1, 3000);
	{
		size_t second = sr_mpa_fpdu_len(1454);

		sr_put_be32(st.buf + second + 2 + 14, 1437);
		/* Recompute nothing: the header check fires before the CRC. */
		expect_fail(true, 0, -EPROTO, SR_IW_ERR_DDP_U_MO, 1, 2, 0x04,
			    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, false);
	}
	/* A second Send interleaving an unfinished one (different MSN). */
	one_send(true, 1, 3000);
	sr_put_be32(st.buf + sr_mpa_fpdu_len(1454) + 2 + 10, 2);
	expect_fail(true, 0, -EPROTO, SR_IW_ERR_DDP_U_MSN_RANGE, 1, 2, 0x03,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, false);
	/* Read Request and Terminate must be single segments. */
	{
		struct sr_rdmap_rreq rr = { .size = 1 };

		st_reset(true);
		st_rreq(1, &rr);
		st.buf[2] &= ~SR_DDP_FLAG_LAST;
		expect_fail(false, 0, -EPROTO, SR_IW_ERR_DDP_U_TOO_LONG, 1, 2,
			    0x05, SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, true);
	}
}

static void test_wrap(void **state)
{
	struct sr_rdmap_rreq rr = { .size = 0x100,
				    .src_to = UINT64_MAX - 0xfe };
	struct sr_term_info t;

	/* Tagged: last byte beyond 2^64. */
	st_reset(true);
	st_tagged(SR_RDMAP_OP_WRITE, 5, UINT64_MAX - 10, wr_msg, 12, 1454);
	expect_fail(true, 0, -EPROTO, SR_IW_ERR_DDP_T_TO_WRAP, 1, 1, 0x03,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, true);
	/* Exactly up to the last byte is fine. */
	st_reset(true);
	st_tagged(SR_RDMAP_OP_WRITE, 5, UINT64_MAX - 11, wr_msg, 12, 1454);
	iw_drv_init(&drv, true, UINT64_MAX - 200);
	assert_int_equal(iw_drv_feed(&drv, st.buf, st.len, 0), 0);
	drv_done();

	/* Read Request source range wrapping: RDMAP protection, with both
	 * headers attached. */
	st_reset(true);
	st_rreq(1, &rr);
	expect_fail(true, 0, -EPROTO, SR_IW_ERR_RDMAP_TO_WRAP, 0, 1, 0x04,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D | SR_TERM_HDRCT_R, true);
	iw_drv_init(&drv, true, 0);
	iw_drv_feed(&drv, st.buf, st.len, 0);
	sr_fpdu_rx_term(&drv.rx, &t);
	assert_int_equal(t.ddp_hdr_len, 18);
	assert_int_equal(t.rdmap_hdr_len, 28);
	assert_memory_equal(t.rdmap_hdr, st.buf + 20, 28);
	assert_int_equal(t.ddp_seg_len, 46);
	drv_done();
}

/* The caller rejects a segment after HDR_DONE: Terminate carries it. */
static void test_caller_reject(void **state)
{
	st_reset(true);
	st_tagged(SR_RDMAP_OP_WRITE, 5, TAG_BASE - 4096, wr_msg, 100, 1454);
	expect_fail(true, 1, -EPROTO, SR_IW_ERR_DDP_T_BOUNDS, 1, 1, 0x01,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, true);

	/* Send too long for its receive buffer. */
	one_send(true, 1, IW_SEND_SLOT + 1);
	expect_fail(true, 0, -EPROTO, SR_IW_ERR_DDP_U_TOO_LONG, 1, 2, 0x05,
		    SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, false);
}

/*
 * The connection code judges a Read Request only once it is complete (its
 * source STag), possibly after reading part of the next header: the
 * Terminate must still carry the Read Request's headers (M, D, R).
 */
static void test_reject_after_seg_done(void **state)
{
	struct sr_rdmap_rreq rr = { .sink_stag = 9,
				    .sink_to = 0x40,
				    .size = 64,
				    .src_stag = 0xdead00,
				    .src_to = 0x80 };
	struct sr_fpdu_rx_need need;
	struct sr_term_info t;
	size_t rq_len;

	st_reset(true);
	st_rreq(1, &rr);
	rq_len = st.len;
	st_send(SR_RDMAP_OP_SEND, 1, 0, send_msg, 10, 1454);

	for (size_t extra = 0; extra < 20; extra += 5) {
		iw_drv_init(&drv, true, 0);
		assert_int_equal(iw_drv_feed(&drv, st.buf, rq_len + extra, 0),
				 0);
		assert_int_equal(drv.nseg, 1);
		sr_fpdu_rx_need(&drv.rx, &need);
		assert_int_equal(need.stage, SR_FPDU_RX_HDR);
		assert_int_equal(sr_fpdu_rx_fail(&drv.rx, SR_IW_ERR_RDMAP_STAG),
				 -EPROTO);
		sr_fpdu_rx_term(&drv.rx, &t);
		assert_int_equal(t.cause.layer, 0);
		assert_int_equal(t.cause.etype, 1);
		assert_int_equal(t.cause.ecode, 0);
		assert_int_equal(t.hdrct, SR_TERM_HDRCT_M | SR_TERM_HDRCT_D |
						  SR_TERM_HDRCT_R);
		assert_memory_equal(t.ddp_hdr, st.buf + 2, 18);
		assert_memory_equal(t.rdmap_hdr, st.buf + 20, 28);
		assert_int_equal(t.ddp_seg_len, 46);
		drv_done();
	}

	/* Once the next header is complete, seg (and a reject) is about it. */
	iw_drv_init(&drv, true, 0);
	assert_int_equal(iw_drv_feed(&drv, st.buf, rq_len + 20, 0), 0);
	assert_int_equal(drv.rx.seg.opcode, SR_RDMAP_OP_SEND);
	sr_fpdu_rx_fail(&drv.rx, SR_IW_ERR_DDP_U_MSN_NOBUF);
	sr_fpdu_rx_term(&drv.rx, &t);
	assert_int_equal(t.hdrct, SR_TERM_HDRCT_M | SR_TERM_HDRCT_D);
	assert_memory_equal(t.ddp_hdr, st.buf + rq_len + 2, 18);
	drv_done();
}

static void test_advance_misuse(void **state)
{
	struct sr_fpdu_rx rx;
	struct sr_fpdu_rx_need need;

	one_send(true, 1, 10);
	sr_fpdu_rx_init(&rx, true);
	sr_fpdu_rx_need(&rx, &need);
	assert_int_equal(need.stage, SR_FPDU_RX_HDR);
	assert_int_equal(need.len, 16);
	assert_ptr_equal(need.buf, rx.hdrbuf[0]);
	assert_int_equal(sr_fpdu_rx_advance(&rx, 17, NULL), -EINVAL);
	memcpy(need.buf, st.buf, 16);
	assert_int_equal(sr_fpdu_rx_advance(&rx, 16, NULL), SR_FPDU_RX_MORE);
	sr_fpdu_rx_need(&rx, &need);
	assert_int_equal(need.len, 4);
	memcpy(need.buf, st.buf + 16, 4);
	assert_int_equal(sr_fpdu_rx_advance(&rx, 4, NULL), SR_FPDU_RX_HDR_DONE);
	sr_fpdu_rx_need(&rx, &need);
	assert_int_equal(need.stage, SR_FPDU_RX_PAYLOAD);
	assert_int_equal(need.len, 10);
	assert_null(need.buf);
	/* Too many, or CRC without the bytes: refused, state kept. */
	assert_int_equal(sr_fpdu_rx_advance(&rx, 11, st.buf + 20), -EINVAL);
	assert_int_equal(sr_fpdu_rx_advance(&rx, 3, NULL), -EINVAL);
	assert_int_equal(sr_fpdu_rx_advance(&rx, 10, st.buf + 20),
			 SR_FPDU_RX_MORE);
	sr_fpdu_rx_need(&rx, &need);
	assert_int_equal(need.stage, SR_FPDU_RX_TRAILER);
	assert_int_equal(need.len, 6);
	assert_int_equal(sr_fpdu_rx_advance(&rx, 7, NULL), -EINVAL);
	memcpy(need.buf, st.buf + 30, 6);
	assert_int_equal(sr_fpdu_rx_advance(&rx, 6, NULL), SR_FPDU_RX_SEG_DONE);
	assert_int_equal(rx.seg.payload_len, 10);
	assert_int_equal(rx.err, SR_IW_OK);

	/* Zero-byte advances are harmless everywhere. */
	assert_int_equal(sr_fpdu_rx_advance(&rx, 0, NULL), SR_FPDU_RX_MORE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_worked_send, teardown_drv),
		cmocka_unit_test_teardown(test_worked_rtr, teardown_drv),
		cmocka_unit_test_teardown(test_roundtrip_chunks, teardown_drv),
		cmocka_unit_test_teardown(test_many_in_one_buffer,
					  teardown_drv),
		cmocka_unit_test_teardown(test_random_chunks, teardown_drv),
		cmocka_unit_test_teardown(test_lookahead, teardown_drv),
		cmocka_unit_test_teardown(test_fpdu_rest, teardown_drv),
		cmocka_unit_test(test_segmentation),
		cmocka_unit_test(test_encoder_errors),
		cmocka_unit_test_teardown(test_bad_crc, teardown_drv),
		cmocka_unit_test_teardown(test_bad_ddp_version, teardown_drv),
		cmocka_unit_test_teardown(test_bad_rdmap_version, teardown_drv),
		cmocka_unit_test_teardown(test_bad_opcode, teardown_drv),
		cmocka_unit_test_teardown(test_bad_qn, teardown_drv),
		cmocka_unit_test_teardown(test_short_ulpdu, teardown_drv),
		cmocka_unit_test_teardown(test_sequence_errors, teardown_drv),
		cmocka_unit_test_teardown(test_wrap, teardown_drv),
		cmocka_unit_test_teardown(test_caller_reject, teardown_drv),
		cmocka_unit_test_teardown(test_reject_after_seg_done,
					  teardown_drv),
		cmocka_unit_test(test_advance_misuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
