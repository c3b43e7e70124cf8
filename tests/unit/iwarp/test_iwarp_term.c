// SPDX-License-Identifier: MIT
/*
 * Terminate messages: the worked example of docs/WIRE.md §3.3, header
 * attachment per layer, encode -> streaming parse round trips, lenient
 * decoding of what siw sends, and the error table.
 */
#include "iw_test.h"

#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/term.h"

/* Parse one whole FPDU with the streaming parser; returns the rx. */
static void parse_one(struct sr_fpdu_rx *rx, const uint8_t *f, size_t len,
		      bool crc)
{
	size_t pos = 0;
	int r = 0;

	sr_fpdu_rx_init(rx, crc);
	while (pos < len) {
		struct sr_fpdu_rx_need need;

		sr_fpdu_rx_need(rx, &need);
		assert_non_null(need.buf); /* Terminates have no payload */
		memcpy(need.buf, f + pos, need.len);
		pos += need.len;
		r = sr_fpdu_rx_advance(rx, need.len, NULL);
		assert_true(r >= 0);
	}
	assert_int_equal(r, SR_FPDU_RX_SEG_DONE);
	assert_int_equal(rx->seg.opcode, SR_RDMAP_OP_TERMINATE);
}

static void test_worked_crc_terminate(void **state)
{
	struct sr_term_info t;
	uint8_t got[SR_TERM_FPDU_MAX], want[64];
	size_t wl = iw_hex("00 16 41 47 00000000 00000002 00000001 00000000"
			   "20 02 00 00 7f e4 25 85",
			   want, sizeof(want));
	struct sr_fpdu_rx rx;

	/* A CRC error attaches nothing even when a header is at hand. */
	sr_term_info_init(&t, SR_IW_ERR_MPA_CRC, want + 2, 18, 22);
	assert_int_equal(t.hdrct, 0);
	assert_int_equal(sr_term_build(got, sizeof(got), &t, 1, true),
			 (ssize_t)wl);
	assert_memory_equal(got, want, wl);

	parse_one(&rx, got, wl, true);
	assert_int_equal(rx.seg.term.cause.layer, 2);
	assert_int_equal(rx.seg.term.cause.etype, 0);
	assert_int_equal(rx.seg.term.cause.ecode, 2);
	assert_int_equal(rx.seg.term.hdrct, 0);
	assert_int_equal(rx.seg.qn, 2);
	assert_int_equal(rx.seg.msn, 1);
	assert_int_equal(rx.seg.payload_len, 0);

	/* CRC off: zero CRC slot. */
	assert_int_equal(sr_term_build(got, sizeof(got), &t, 1, false),
			 (ssize_t)wl);
	assert_memory_equal(got, want, wl - 4);
	assert_int_equal(sr_crc32c_get_wire(got + wl - 4), 0);
}

/* DDP error on a Send: M, D, the 18-byte header, ULPDU length. */
static void test_ddp_error_attach(void **state)
{
	uint8_t send[64], f[SR_TERM_FPDU_MAX];
	struct sr_term_info t;
	struct sr_fpdu_rx rx;
	ssize_t n;

	assert_int_equal(sr_fpdu_put_untagged(send, sizeof(send),
					      SR_RDMAP_OP_SEND, true, 9, 0, 0,
					      100),
			 20);
	sr_term_info_init(&t, SR_IW_ERR_DDP_U_MSN_RANGE, send + 2, 18, 118);
	assert_int_equal(t.hdrct, SR_TERM_HDRCT_M | SR_TERM_HDRCT_D);
	assert_int_equal(t.ddp_hdr_len, 18);
	assert_int_equal(t.ddp_seg_len, 118);
	assert_int_equal(t.rdmap_hdr_len, 0);

	n = sr_term_build(f, sizeof(f), &t, 1, true);
	/* 2 + 18 + 4 + 2 + 18 = 44, no pad, CRC */
	assert_int_equal(n, 48);
	assert_int_equal(sr_get_be16(f), 42);
	assert_int_equal(f[20], 0x12);
	assert_int_equal(f[21], 0x03);
	assert_int_equal(f[22], 0xc0);
	assert_int_equal(f[23], 0x00);
	assert_int_equal(sr_get_be16(f + 24), 118);
	assert_memory_equal(f + 26, send + 2, 18);

	parse_one(&rx, f, (size_t)n, true);
	assert_int_equal(rx.seg.term.cause.layer, 1);
	assert_int_equal(rx.seg.term.cause.etype, 2);
	assert_int_equal(rx.seg.term.cause.ecode, 3);
	assert_int_equal(rx.seg.term.hdrct, SR_TERM_HDRCT_M | SR_TERM_HDRCT_D);
	assert_int_equal(rx.seg.term.ddp_seg_len, 118);
	assert_memory_equal(rx.seg.term.ddp_hdr, send + 2, 18);

	/* Tagged: 14 bytes copied. */
	assert_int_equal(sr_fpdu_put_tagged(send, sizeof(send),
					    SR_RDMAP_OP_WRITE, false, 0x99,
					    0x1000, 10),
			 16);
	sr_term_info_init(&t, SR_IW_ERR_DDP_T_STAG, send + 2, 14, 24);
	assert_int_equal(t.ddp_hdr_len, 14);
	n = sr_term_build(f, sizeof(f), &t, 1, false);
	assert_int_equal(n, 2 + 18 + 4 + 2 + 14 + 0 + 4);
	parse_one(&rx, f, (size_t)n, false);
	assert_int_equal(rx.seg.term.ddp_hdr_len, 14);
	assert_int_equal(rx.seg.term.cause.etype, 1);
	assert_int_equal(rx.seg.term.cause.ecode, 0);

	/* Too few header bytes at hand: nothing attached. */
	sr_term_info_init(&t, SR_IW_ERR_DDP_U_QN, send + 2, 13, 24);
	assert_int_equal(t.hdrct, 0);
	sr_term_info_init(&t, SR_IW_ERR_DDP_U_QN, NULL, 0, 0);
	assert_int_equal(t.hdrct, 0);
	assert_int_equal(t.cause.ecode, 1);
}

/* RDMAP protection error on a Read Request: M, D, R, 70-byte ULPDU. */
static void test_rdmap_protection_attach(void **state)
{
	struct sr_rdmap_rreq rr = { .sink_stag = 1,
				    .sink_to = 2,
				    .size = 3,
				    .src_stag = 4,
				    .src_to = 5 };
	uint8_t rq[SR_FPDU_HDR_MAX], f[SR_TERM_FPDU_MAX];
	struct sr_term_info t;
	struct sr_fpdu_rx rx;
	ssize_t n;

	assert_int_equal(sr_fpdu_put_rreq(rq, sizeof(rq), 3, &rr), 48);
	sr_term_info_init(&t, SR_IW_ERR_RDMAP_ACCESS, rq + 2, 46, 46);
	assert_int_equal(t.hdrct,
			 SR_TERM_HDRCT_M | SR_TERM_HDRCT_D | SR_TERM_HDRCT_R);
	n = sr_term_build(f, sizeof(f), &t, 1, true);
	assert_int_equal(n, 2 + 70 + 0 + 4);
	assert_int_equal(n, SR_TERM_FPDU_MAX - SR_FPDU_TRAILER_MAX + 4);
	assert_int_equal(f[20], 0x01);
	assert_int_equal(f[21], 0x02);
	assert_int_equal(f[22], 0xe0);
	assert_memory_equal(f + 44, rq + 20, 28);

	parse_one(&rx, f, (size_t)n, true);
	assert_int_equal(rx.seg.term.hdrct,
			 SR_TERM_HDRCT_M | SR_TERM_HDRCT_D | SR_TERM_HDRCT_R);
	assert_memory_equal(rx.seg.term.rdmap_hdr, rq + 20, 28);
	assert_memory_equal(rx.seg.term.ddp_hdr, rq + 2, 18);

	/* Same error class on a Send (invalidate failure): no R. */
	assert_int_equal(sr_fpdu_put_untagged(rq, sizeof(rq),
					      SR_RDMAP_OP_SEND_INV, true, 1, 0,
					      0x55, 0),
			 20);
	sr_term_info_init(&t, SR_IW_ERR_RDMAP_INV_PROT, rq + 2, 18, 18);
	assert_int_equal(t.hdrct, SR_TERM_HDRCT_M | SR_TERM_HDRCT_D);
	assert_int_equal(t.cause.ecode, 0x09);

	/* Operation errors attach the DDP header, version errors nothing. */
	sr_term_info_init(&t, SR_IW_ERR_RDMAP_CATA_STREAM, rq + 2, 18, 18);
	assert_int_equal(t.hdrct, SR_TERM_HDRCT_M | SR_TERM_HDRCT_D);
	sr_term_info_init(&t, SR_IW_ERR_RDMAP_VERSION, rq + 2, 18, 18);
	assert_int_equal(t.hdrct, 0);
	sr_term_info_init(&t, SR_IW_ERR_RDMAP_OPCODE, rq + 2, 18, 18);
	assert_int_equal(t.hdrct, 0);
	sr_term_info_init(&t, SR_IW_ERR_DDP_U_VERSION, rq + 2, 18, 18);
	assert_int_equal(t.hdrct, 0);
	sr_term_info_init(&t, SR_IW_ERR_RDMAP_UNSPEC, rq + 2, 18, 18);
	assert_int_equal(t.hdrct, 0);
	assert_int_equal(t.cause.ecode, 0xff);
}

static void test_build_errors(void **state)
{
	struct sr_term_info t;
	uint8_t f[SR_TERM_FPDU_MAX];

	memset(&t, 0, sizeof(t));
	t.hdrct = SR_TERM_HDRCT_R;
	assert_int_equal(sr_term_build(f, sizeof(f), &t, 1, true), -EINVAL);
	t.hdrct = SR_TERM_HDRCT_M;
	assert_int_equal(sr_term_build(f, sizeof(f), &t, 1, true), -EINVAL);
	t.hdrct = SR_TERM_HDRCT_D;
	t.ddp_hdr_len = 14; /* but ddp_hdr[0] says untagged */
	assert_int_equal(sr_term_build(f, sizeof(f), &t, 1, true), -EINVAL);
	t.ddp_hdr_len = 18;
	assert_int_equal(sr_term_build(f, sizeof(f), &t, 1, true), 48);
	t.hdrct |= SR_TERM_HDRCT_R;
	assert_int_equal(sr_term_build(f, sizeof(f), &t, 1, true), -EINVAL);
	t.hdrct = 0;
	t.cause.layer = 16;
	assert_int_equal(sr_term_build(f, sizeof(f), &t, 1, true), -EINVAL);
	t.cause.layer = 0;
	assert_int_equal(sr_term_build(f, 27, &t, 1, true), -ENOSPC);
	assert_int_equal(sr_term_build(f, 28, &t, 1, true), 28);
}

/* Incoming Terminates are decoded as far as they make sense. */
static void test_parse_lenient(void **state)
{
	uint8_t b[80];
	struct sr_term_info t;

	memset(b, 0, sizeof(b));
	assert_int_equal(sr_term_parse(b, 3, &t), -EBADMSG);

	/* D set but the header is cut short: only the cause. */
	b[0] = 0x12;
	b[1] = 0x01;
	b[2] = 0xc0;
	assert_int_equal(sr_term_parse(b, 4, &t), 0);
	assert_int_equal(t.hdrct, 0);
	assert_int_equal(t.cause.layer, 1);
	assert_int_equal(t.cause.etype, 2);
	assert_int_equal(sr_term_parse(b, 4 + 2 + 17, &t), 0);
	assert_int_equal(t.hdrct, 0);
	assert_int_equal(sr_term_parse(b, 4 + 2 + 18, &t), 0);
	assert_int_equal(t.hdrct, SR_TERM_HDRCT_M | SR_TERM_HDRCT_D);

	/* siw: R set on a Send error, with no RDMAP header behind. */
	b[2] = 0xe0;
	assert_int_equal(sr_term_parse(b, 4 + 2 + 18, &t), 0);
	assert_int_equal(t.hdrct, SR_TERM_HDRCT_M | SR_TERM_HDRCT_D);
	assert_int_equal(t.rdmap_hdr_len, 0);
	/* Extra bytes after everything are ignored. */
	assert_int_equal(sr_term_parse(b, 4 + 2 + 18 + 28 + 10, &t), 0);
	assert_int_equal(t.rdmap_hdr_len, 28);
	/* Reserved hdrct bits are dropped. */
	b[2] = 0x1f;
	b[3] = 0xff;
	assert_int_equal(sr_term_parse(b, 60, &t), 0);
	assert_int_equal(t.hdrct, 0);
}

static void test_error_table(void **state)
{
	static const struct {
		enum sr_iw_err e;
		uint8_t l, t, c;
	} want[] = {
		{ SR_IW_ERR_MPA_CRC, 2, 0, 0x02 },
		{ SR_IW_ERR_MPA_FRAMING, 2, 0, 0x03 },
		{ SR_IW_ERR_MPA_INVALID_RR, 2, 0, 0x04 },
		{ SR_IW_ERR_MPA_IRD, 2, 0, 0x06 },
		{ SR_IW_ERR_MPA_NO_RTR, 2, 0, 0x07 },
		{ SR_IW_ERR_DDP_T_STAG, 1, 1, 0x00 },
		{ SR_IW_ERR_DDP_T_BOUNDS, 1, 1, 0x01 },
		{ SR_IW_ERR_DDP_T_VERSION, 1, 1, 0x04 },
		{ SR_IW_ERR_DDP_U_QN, 1, 2, 0x01 },
		{ SR_IW_ERR_DDP_U_MSN_NOBUF, 1, 2, 0x02 },
		{ SR_IW_ERR_DDP_U_MSN_RANGE, 1, 2, 0x03 },
		{ SR_IW_ERR_DDP_U_MO, 1, 2, 0x04 },
		{ SR_IW_ERR_DDP_U_TOO_LONG, 1, 2, 0x05 },
		{ SR_IW_ERR_DDP_U_VERSION, 1, 2, 0x06 },
		{ SR_IW_ERR_RDMAP_STAG, 0, 1, 0x00 },
		{ SR_IW_ERR_RDMAP_BOUNDS, 0, 1, 0x01 },
		{ SR_IW_ERR_RDMAP_ACCESS, 0, 1, 0x02 },
		{ SR_IW_ERR_RDMAP_NOT_ASSOC, 0, 1, 0x03 },
		{ SR_IW_ERR_RDMAP_TO_WRAP, 0, 1, 0x04 },
		{ SR_IW_ERR_RDMAP_VERSION, 0, 2, 0x05 },
		{ SR_IW_ERR_RDMAP_OPCODE, 0, 2, 0x06 },
		{ SR_IW_ERR_RDMAP_CATA_STREAM, 0, 2, 0x07 },
		{ SR_IW_ERR_RDMAP_CATA_GLOBAL, 0, 2, 0x08 },
		{ SR_IW_ERR_RDMAP_INV_OP, 0, 2, 0x09 },
	};
	struct sr_term_cause c;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(sr_iw_err_cause(want[i].e, &c), 0);
		assert_int_equal(c.layer, want[i].l);
		assert_int_equal(c.etype, want[i].t);
		assert_int_equal(c.ecode, want[i].c);
	}
	/* Every value has a cause and a description. */
	for (int e = 1; e < SR_IW_ERR_COUNT; e++) {
		assert_int_equal(sr_iw_err_cause(e, &c), 0);
		assert_non_null(sr_iw_err_str(e));
		assert_true(strlen(sr_iw_err_str(e)) > 5);
	}
	assert_int_equal(sr_iw_err_cause(SR_IW_OK, &c), -EINVAL);
	assert_int_equal(sr_iw_err_cause(SR_IW_ERR_COUNT, &c), -EINVAL);
	assert_string_equal(sr_iw_err_str(SR_IW_OK), "no error");
	assert_string_equal(sr_iw_err_str(SR_IW_ERR_COUNT), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worked_crc_terminate),
		cmocka_unit_test(test_ddp_error_attach),
		cmocka_unit_test(test_rdmap_protection_attach),
		cmocka_unit_test(test_build_errors),
		cmocka_unit_test(test_parse_lenient),
		cmocka_unit_test(test_error_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
