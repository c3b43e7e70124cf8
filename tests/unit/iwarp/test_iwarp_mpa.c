// SPDX-License-Identifier: MIT
/*
 * MPA Request/Reply frames: byte-exact encoding (docs/WIRE.md §1.1), build/parse
 * round trips for rev 1 and rev 2 with every RTR set, private data limits,
 * parse errors and their Terminate code, negotiation in both roles, MULPDU.
 */
#include "iw_test.h"

#include "iwarp/mpa.h"

/* Field by field: struct padding is not guaranteed to match. */
static void assert_params_eq(const struct sr_mpa_params *a,
			     const struct sr_mpa_params *b)
{
	assert_int_equal(a->is_reply, b->is_reply);
	assert_int_equal(a->rev, b->rev);
	assert_int_equal(a->crc, b->crc);
	assert_int_equal(a->markers, b->markers);
	assert_int_equal(a->reject, b->reject);
	assert_int_equal(a->enhanced, b->enhanced);
	assert_int_equal(a->p2p, b->p2p);
	assert_int_equal(a->ird, b->ird);
	assert_int_equal(a->ord, b->ord);
	assert_int_equal(a->rtr, b->rtr);
}

/* Build, then parse back through the header/PD split a reader would use. */
static void roundtrip(const struct sr_mpa_params *p, const void *pd, size_t len,
		      struct sr_mpa_params *out, uint8_t *frame, size_t *flen)
{
	struct sr_mpa_hdr_info hi;
	const uint8_t *ulp;
	size_t ulp_len;
	ssize_t n;
	int rc;

	n = sr_mpa_build_frame(frame, SR_MPA_FRAME_MAX, p, pd, len);
	assert_true(n > 0);
	*flen = (size_t)n;
	rc = sr_mpa_parse_header(frame, p->is_reply, &hi);
	assert_int_equal(rc, n - SR_MPA_RR_HDR_LEN);
	assert_int_equal(sr_mpa_parse_pd(&hi, frame + SR_MPA_RR_HDR_LEN,
					 (size_t)rc, out, &ulp, &ulp_len),
			 0);
	assert_int_equal(ulp_len, len);
	if (len)
		assert_memory_equal(ulp, pd, len);
	else
		assert_null(ulp);
}

static void test_example_frame(void **state)
{
	struct sr_mpa_params p = {
		.rev = 2,
		.crc = true,
		.enhanced = true,
		.p2p = true,
		.ird = 1,
		.ord = 1,
		.rtr = SR_MPA_RTR_WRITE | SR_MPA_RTR_READ,
	};
	uint8_t want[24], got[SR_MPA_FRAME_MAX];
	size_t wl = iw_hex("4d 50 41 20 49 44 20 52 65 71 20 46 72 61 6d 65"
			   "50 02 00 04 80 01 c0 01",
			   want, sizeof(want));
	struct sr_mpa_params back;
	size_t fl;

	assert_int_equal(sr_mpa_build_frame(got, sizeof(got), &p, NULL, 0), 24);
	assert_memory_equal(got, want, wl);

	roundtrip(&p, NULL, 0, &back, got, &fl);
	assert_int_equal(fl, 24);
	assert_params_eq(&back, &p);

	/* A Reply differs only in key byte 9. */
	p.is_reply = true;
	assert_int_equal(sr_mpa_build_frame(got, sizeof(got), &p, NULL, 0), 24);
	want[9] = 0x70;
	assert_memory_equal(got, want, wl);
}

static void test_rev1(void **state)
{
	const char pd[] = "hello rdma_cm";
	struct sr_mpa_params p = { .rev = 1, .crc = true }, back;
	uint8_t frame[SR_MPA_FRAME_MAX];
	size_t fl;

	roundtrip(&p, pd, sizeof(pd), &back, frame, &fl);
	assert_int_equal(fl, 20 + sizeof(pd));
	assert_int_equal(frame[16], 0x40);
	assert_int_equal(frame[17], 1);
	assert_false(back.enhanced);
	assert_true(back.crc);
	assert_false(back.is_reply);

	/* Rev 1 has no block: IRD/ORD/RTR in params are not encoded. */
	p.ird = 5;
	p.rtr = SR_MPA_RTR_READ;
	roundtrip(&p, NULL, 0, &back, frame, &fl);
	assert_int_equal(fl, 20);
	assert_int_equal(back.ird, 0);
	assert_int_equal(back.rtr, 0);

	/* Enhanced needs rev 2. */
	p.enhanced = true;
	assert_int_equal(sr_mpa_build_frame(frame, sizeof(frame), &p, NULL, 0),
			 -EINVAL);
}

/* One rev 2 frame with the block: fields survive, bits land where due. */
static void check_rev2(bool reply, bool p2p, uint8_t rtr)
{
	struct sr_mpa_params p = {
		.is_reply = reply,
		.rev = 2,
		.enhanced = true,
		.p2p = p2p,
		.ird = 0x3fff,
		.ord = 0x1234,
		.rtr = rtr,
		.crc = rtr & 1,
	};
	struct sr_mpa_params back;
	uint8_t frame[SR_MPA_FRAME_MAX], pd[40];
	uint16_t ird_w, ord_w, want;
	size_t fl;

	for (size_t i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)i;
	roundtrip(&p, pd, rtr * 5, &back, frame, &fl);
	assert_params_eq(&back, &p);
	assert_int_equal(frame[16], 0x10 | (p.crc ? 0x40 : 0));

	ird_w = sr_get_be16(frame + 20);
	ord_w = sr_get_be16(frame + 22);
	assert_int_equal(ird_w & 0x3fff, 0x3fff);
	assert_int_equal(ord_w & 0x3fff, 0x1234);
	want = (p2p ? 0x8000 : 0) | (rtr & SR_MPA_RTR_SEND ? 0x4000 : 0);
	assert_int_equal(ird_w & 0xc000, want);
	want = (rtr & SR_MPA_RTR_WRITE ? 0x8000 : 0) |
	       (rtr & SR_MPA_RTR_READ ? 0x4000 : 0);
	assert_int_equal(ord_w & 0xc000, want);
}

static void test_rev2_all_rtr(void **state)
{
	for (int reply = 0; reply < 2; reply++)
		for (int p2p = 0; p2p < 2; p2p++)
			for (uint8_t rtr = 0; rtr <= SR_MPA_RTR_ALL; rtr++)
				check_rev2(reply, p2p, rtr);
}

static void test_reject_with_pd(void **state)
{
	const char why[] = "no such service";
	struct sr_mpa_params p = { .is_reply = true, .rev = 2, .reject = true },
			     back;
	uint8_t frame[SR_MPA_FRAME_MAX];
	size_t fl;

	roundtrip(&p, why, sizeof(why), &back, frame, &fl);
	assert_int_equal(frame[16], 0x20);
	assert_true(back.reject);

	/* R in a Request is refused when building... */
	p.is_reply = false;
	assert_int_equal(sr_mpa_build_frame(frame, sizeof(frame), &p, NULL, 0),
			 -EINVAL);
	/* ...and ignored as a reserved bit when received. */
	p.reject = false;
	roundtrip(&p, NULL, 0, &back, frame, &fl);
	frame[16] |= SR_MPA_FLAG_REJECT | 0x0f;
	{
		struct sr_mpa_hdr_info hi;
		const uint8_t *u;
		size_t ul;

		assert_int_equal(sr_mpa_parse_header(frame, false, &hi), 0);
		assert_int_equal(
			sr_mpa_parse_pd(&hi, frame + 20, 0, &back, &u, &ul), 0);
		assert_false(back.reject);
		assert_false(back.enhanced);
	}
}

static void test_pd_limits(void **state)
{
	uint8_t pd[300], frame[SR_MPA_FRAME_MAX + 64];
	struct sr_mpa_params v2 = { .rev = 2, .enhanced = true };
	struct sr_mpa_params v1 = { .rev = 1 }, back;
	size_t fl;

	memset(pd, 0x5a, sizeof(pd));
	roundtrip(&v2, pd, 252, &back, frame, &fl);
	assert_int_equal(fl, 20 + 256);
	assert_int_equal(sr_get_be16(frame + 18), 256);
	assert_int_equal(sr_mpa_build_frame(frame, sizeof(frame), &v2, pd, 253),
			 -EINVAL);
	roundtrip(&v1, pd, 256, &back, frame, &fl);
	assert_int_equal(fl, 20 + 256);
	assert_int_equal(sr_mpa_build_frame(frame, sizeof(frame), &v1, pd, 257),
			 -EINVAL);
	/* Rev 2 without the block has the rev 1 limit. */
	v1.rev = 2;
	roundtrip(&v1, pd, 256, &back, frame, &fl);

	/* Buffer too small, data pointer missing, IRD over 14 bits. */
	assert_int_equal(sr_mpa_build_frame(frame, 23, &v2, NULL, 0), -ENOSPC);
	assert_int_equal(sr_mpa_build_frame(frame, sizeof(frame), &v2, NULL, 1),
			 -EINVAL);
	v2.ird = 0x4000;
	assert_int_equal(sr_mpa_build_frame(frame, sizeof(frame), &v2, NULL, 0),
			 -EINVAL);
	v2.ird = 0;
	v2.rtr = 0x8;
	assert_int_equal(sr_mpa_build_frame(frame, sizeof(frame), &v2, NULL, 0),
			 -EINVAL);
	v2.rtr = 0;
	v2.rev = 3;
	assert_int_equal(sr_mpa_build_frame(frame, sizeof(frame), &v2, NULL, 0),
			 -EINVAL);
}

static void expect_invalid_rr(int err)
{
	struct sr_term_cause c;

	assert_int_equal(sr_mpa_err_code(err), SR_IW_ERR_MPA_INVALID_RR);
	assert_int_equal(sr_iw_err_cause(sr_mpa_err_code(err), &c), 0);
	assert_int_equal(c.layer, 2);
	assert_int_equal(c.etype, 0);
	assert_int_equal(c.ecode, 0x04);
}

static void test_parse_errors(void **state)
{
	struct sr_mpa_params p = { .rev = 2, .enhanced = true }, back;
	struct sr_mpa_hdr_info hi;
	uint8_t f[SR_MPA_FRAME_MAX];
	const uint8_t *u;
	size_t ul;
	ssize_t n = sr_mpa_build_frame(f, sizeof(f), &p, "abc", 3);

	assert_int_equal(n, 27);
	assert_int_equal(sr_mpa_parse_header(f, false, &hi), 7);

	/* A Request where a Reply is due, and any other key damage. */
	assert_int_equal(sr_mpa_parse_header(f, true, &hi), SR_MPA_EBADKEY);
	f[0] = 'm';
	assert_int_equal(sr_mpa_parse_header(f, false, &hi), SR_MPA_EBADKEY);
	expect_invalid_rr(SR_MPA_EBADKEY);
	f[0] = 'M';

	f[17] = 0;
	assert_int_equal(sr_mpa_parse_header(f, false, &hi), SR_MPA_EBADREV);
	f[17] = 3;
	assert_int_equal(sr_mpa_parse_header(f, false, &hi), SR_MPA_EBADREV);
	expect_invalid_rr(SR_MPA_EBADREV);
	f[17] = 2;

	sr_put_be16(f + 18, 513);
	assert_int_equal(sr_mpa_parse_header(f, false, &hi), SR_MPA_ETOOLONG);
	expect_invalid_rr(SR_MPA_ETOOLONG);
	sr_put_be16(f + 18, 512);
	assert_int_equal(sr_mpa_parse_header(f, false, &hi), 512);
	/* Fewer PD bytes than PD_Length. */
	assert_int_equal(sr_mpa_parse_pd(&hi, f + 20, 7, &back, &u, &ul),
			 SR_MPA_ETRUNC);
	expect_invalid_rr(SR_MPA_ETRUNC);

	/* Enhanced flag with no room for the block. */
	sr_put_be16(f + 18, 3);
	assert_int_equal(sr_mpa_parse_header(f, false, &hi), SR_MPA_ETRUNC);
	/* The same bit in rev 1 is reserved: fine, no block. */
	f[17] = 1;
	assert_int_equal(sr_mpa_parse_header(f, false, &hi), 3);
	assert_int_equal(sr_mpa_parse_pd(&hi, f + 20, 3, &back, &u, &ul), 0);
	assert_false(back.enhanced);
	assert_int_equal(ul, 3);

	/* The four parse errors are distinct. */
	assert_int_not_equal(SR_MPA_EBADKEY, SR_MPA_EBADREV);
	assert_int_not_equal(SR_MPA_EBADKEY, SR_MPA_ETOOLONG);
	assert_int_not_equal(SR_MPA_EBADKEY, SR_MPA_ETRUNC);
	assert_int_not_equal(SR_MPA_EBADREV, SR_MPA_ETOOLONG);
	assert_int_not_equal(SR_MPA_EBADREV, SR_MPA_ETRUNC);
	assert_int_not_equal(SR_MPA_ETOOLONG, SR_MPA_ETRUNC);
}

static void test_respond_flags(void **state)
{
	struct sr_mpa_local loc = { .ird = 16, .ord = 16 };
	struct sr_mpa_params req = { .rev = 1 }, rep;
	struct sr_mpa_conn c;

	/* CRC: on if either side asks. */
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++) {
			req.crc = a;
			loc.crc = b;
			assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c),
					 0);
			assert_int_equal(rep.crc, a || b);
			assert_int_equal(c.crc, a || b);
			assert_int_equal(rep.rev, 1);
			assert_true(rep.is_reply);
			assert_false(rep.enhanced);
			assert_int_equal(c.ird, 16);
			assert_int_equal(c.ord, 16);
		}

	/* Markers: refused with a rejecting Reply, Terminate 0x04 if any. */
	req.markers = true;
	req.rev = 2;
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), SR_MPA_EMARKERS);
	assert_true(rep.reject);
	assert_true(rep.is_reply);
	assert_false(rep.markers);
	assert_int_equal(rep.rev, 2);
	assert_int_equal(sr_mpa_err_code(SR_MPA_EMARKERS),
			 SR_IW_ERR_MPA_INVALID_RR);
}

static void test_respond_rtr_choice(void **state)
{
	struct sr_mpa_params req = { .rev = 2,
				     .enhanced = true,
				     .p2p = true,
				     .ird = 4,
				     .ord = 4 },
			     rep;
	struct sr_mpa_local loc = { .ird = 8, .ord = 8 };
	struct sr_mpa_conn c;

	for (uint8_t off = 0; off <= SR_MPA_RTR_ALL; off++) {
		uint8_t want;

		req.rtr = off;
		want = off & SR_MPA_RTR_READ	? SR_MPA_RTR_READ
		       : off & SR_MPA_RTR_WRITE ? SR_MPA_RTR_WRITE
		       : off & SR_MPA_RTR_SEND	? SR_MPA_RTR_SEND
						: 0;
		if (!want) {
			assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c),
					 SR_MPA_ENORTR);
			assert_true(rep.reject);
			assert_int_equal(sr_mpa_err_code(SR_MPA_ENORTR),
					 SR_IW_ERR_MPA_NO_RTR);
			continue;
		}
		assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), 0);
		assert_true(rep.p2p);
		assert_int_equal(rep.rtr, want);
		assert_int_equal(c.rtr, want);
		assert_true(c.p2p);
		assert_false(rep.reject);
	}

	/* Without IRD we cannot take a Read RTR: fall back to Write. */
	loc.ird = 0;
	req.rtr = SR_MPA_RTR_ALL;
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), 0);
	assert_int_equal(rep.rtr, SR_MPA_RTR_WRITE);
	req.rtr = SR_MPA_RTR_READ;
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), SR_MPA_ENORTR);

	/* Local acceptance mask narrows the choice. */
	loc.ird = 8;
	loc.rtr = SR_MPA_RTR_SEND;
	req.rtr = SR_MPA_RTR_ALL;
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), 0);
	assert_int_equal(rep.rtr, SR_MPA_RTR_SEND);

	/* No P2P asked: no RTR chosen. */
	loc.rtr = 0;
	req.p2p = false;
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), 0);
	assert_false(rep.p2p);
	assert_int_equal(rep.rtr, 0);
	assert_false(c.p2p);
}

static void test_respond_ird_ord(void **state)
{
	struct sr_mpa_params req = { .rev = 2, .enhanced = true }, rep;
	struct sr_mpa_local loc = { .ird = 8, .ord = 8 };
	struct sr_mpa_conn c;

	/* Our ORD <= peer IRD; our IRD = peer ORD within our limit. */
	req.ird = 2;
	req.ord = 3;
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), 0);
	assert_int_equal(rep.ord, 2);
	assert_int_equal(rep.ird, 3);
	assert_int_equal(c.ord, 2);
	assert_int_equal(c.ird, 3);

	req.ird = 100;
	req.ord = 100;
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), 0);
	assert_int_equal(rep.ord, 8);
	assert_int_equal(rep.ird, 8);

	/* Intel's 0x3FFF "unspecified": our own limits apply. */
	req.ird = req.ord = 0x3fff;
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), 0);
	assert_int_equal(rep.ord, 8);
	assert_int_equal(rep.ird, 8);

	/* Read RTR with a peer ORD of 0 still needs one IRD slot here. */
	req.ird = req.ord = 0;
	req.p2p = true;
	req.rtr = SR_MPA_RTR_READ;
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &c), 0);
	assert_int_equal(rep.ird, 1);
	assert_int_equal(rep.ord, 0);
}

static void test_check_reply(void **state)
{
	struct sr_mpa_local loc = { .ird = 4, .ord = 4, .p2p = true };
	struct sr_mpa_params req, rep;
	struct sr_mpa_conn c;
	struct sr_term_cause tc;

	/* Offering Write as well, so that the checks below can pick either. */
	loc.rtr = SR_MPA_RTR_WRITE | SR_MPA_RTR_READ;
	sr_mpa_request_params(&loc, &req);
	assert_int_equal(req.rev, 2);
	assert_true(req.enhanced);
	assert_true(req.p2p);
	assert_int_equal(req.rtr, SR_MPA_RTR_WRITE | SR_MPA_RTR_READ);

	rep = (struct sr_mpa_params){ .is_reply = true,
				      .rev = 2,
				      .enhanced = true,
				      .p2p = true,
				      .rtr = SR_MPA_RTR_WRITE,
				      .ird = 2,
				      .ord = 4,
				      .crc = true };
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c), 0);
	assert_true(c.crc);
	assert_true(c.p2p);
	assert_int_equal(c.rtr, SR_MPA_RTR_WRITE);
	assert_int_equal(c.ord, 2);
	assert_int_equal(c.ird, 4);

	/* Peer ORD above our IRD: Terminate 0x06. */
	rep.ord = 5;
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c), SR_MPA_EIRD);
	assert_int_equal(sr_iw_err_cause(sr_mpa_err_code(SR_MPA_EIRD), &tc), 0);
	assert_int_equal(tc.layer, 2);
	assert_int_equal(tc.ecode, 0x06);
	rep.ord = SR_MPA_V2_IRD_ORD_UNSPEC;
	rep.ird = SR_MPA_V2_IRD_ORD_UNSPEC;
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c), 0);
	assert_int_equal(c.ord, 4);
	rep.ord = 4;

	/* RTR: two bits, none, or one we never offered -> 0x07. */
	rep.rtr = SR_MPA_RTR_WRITE | SR_MPA_RTR_READ;
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c),
			 SR_MPA_ENORTR);
	rep.rtr = 0;
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c),
			 SR_MPA_ENORTR);
	rep.rtr = SR_MPA_RTR_SEND;
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c),
			 SR_MPA_ENORTR);
	assert_int_equal(sr_iw_err_cause(sr_mpa_err_code(SR_MPA_ENORTR), &tc),
			 0);
	assert_int_equal(tc.ecode, 0x07);
	rep.rtr = SR_MPA_RTR_READ;

	/* Peer declines P2P: fine, no RTR. */
	rep.p2p = false;
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c), 0);
	assert_false(c.p2p);
	assert_int_equal(c.rtr, 0);
	rep.p2p = true;

	/* Rejected, markers, higher revision. */
	rep.reject = true;
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c),
			 SR_MPA_EREJECTED);
	assert_int_equal(sr_mpa_err_code(SR_MPA_EREJECTED), SR_IW_OK);
	rep.reject = false;
	rep.markers = true;
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c),
			 SR_MPA_EMARKERS);
	rep.markers = false;
	rep.rev = 3;
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c),
			 SR_MPA_EBADREV);

	/* Rev 1 Reply: accepted, local limits, no RTR. */
	rep = (struct sr_mpa_params){ .is_reply = true, .rev = 1 };
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c), 0);
	assert_false(c.p2p);
	assert_int_equal(c.ird, 4);
	assert_int_equal(c.ord, 4);

	/* P2P in the Reply without asking for it. */
	loc.p2p = false;
	sr_mpa_request_params(&loc, &req);
	rep = (struct sr_mpa_params){ .is_reply = true,
				      .rev = 2,
				      .enhanced = true,
				      .p2p = true,
				      .rtr = SR_MPA_RTR_WRITE };
	assert_int_equal(sr_mpa_check_reply(&req, &rep, &loc, &c),
			 SR_MPA_EINVALID);
	assert_int_equal(sr_mpa_err_code(SR_MPA_EINVALID),
			 SR_IW_ERR_MPA_INVALID_RR);
}

/*
 * What an initiator offers: by default only the zero-length Read (siw picks Write whenever
 * it is offered, and only a Read is answered); named forms pass through unchanged.
 */
static void test_rtr_offer(void **state)
{
	struct sr_mpa_local loc = { .ird = 4, .ord = 0, .p2p = true };
	struct sr_mpa_local rsp = { .ird = 4, .ord = 4 };
	struct sr_mpa_params req, req_rx, rep;
	struct sr_mpa_conn c;
	uint8_t f[SR_MPA_FRAME_MAX];
	size_t fl;

	sr_mpa_request_params(&loc, &req);
	assert_int_equal(req.rtr, SR_MPA_RTR_READ);
	assert_int_equal(req.ord, 1); /* the Read RTR takes an ORD slot */
	/* on the wire: P2P in the IRD word, only the Read bit in the ORD word */
	roundtrip(&req, NULL, 0, &req_rx, f, &fl);
	assert_int_equal(f[20], 0x80);
	assert_int_equal(f[22], 0x40);
	assert_int_equal(req_rx.rtr, SR_MPA_RTR_READ);
	/* a responder taking every form answers with the Read */
	assert_int_equal(sr_mpa_respond(&req_rx, &rsp, &rep, &c), 0);
	assert_int_equal(rep.rtr, SR_MPA_RTR_READ);
	/* one that cannot take a Read refuses cleanly: a rejecting Reply, Terminate 0x07 */
	rsp.rtr = SR_MPA_RTR_WRITE | SR_MPA_RTR_SEND;
	assert_int_equal(sr_mpa_respond(&req_rx, &rsp, &rep, &c), SR_MPA_ENORTR);
	assert_true(rep.reject);

	for (uint8_t off = 1; off <= SR_MPA_RTR_ALL; off++) {
		loc.rtr = off;
		sr_mpa_request_params(&loc, &req);
		assert_int_equal(req.rtr, off);
		assert_int_equal(req.ord, off & SR_MPA_RTR_READ ? 1 : 0);
	}
}

static void test_rtr_parse(void **state)
{
	assert_int_equal(sr_mpa_rtr_parse("read"), SR_MPA_RTR_READ);
	assert_int_equal(sr_mpa_rtr_parse("write"), SR_MPA_RTR_WRITE);
	assert_int_equal(sr_mpa_rtr_parse("send"), SR_MPA_RTR_SEND);
	assert_int_equal(sr_mpa_rtr_parse("all"), SR_MPA_RTR_ALL);
	assert_int_equal(sr_mpa_rtr_parse("Read, WRITE"), SR_MPA_RTR_READ | SR_MPA_RTR_WRITE);
	assert_int_equal(sr_mpa_rtr_parse(" write,send "), SR_MPA_RTR_WRITE | SR_MPA_RTR_SEND);
	assert_int_equal(sr_mpa_rtr_parse("read,read"), SR_MPA_RTR_READ);
	assert_int_equal(sr_mpa_rtr_parse(""), -EINVAL);
	assert_int_equal(sr_mpa_rtr_parse(" "), -EINVAL);
	assert_int_equal(sr_mpa_rtr_parse(NULL), -EINVAL);
	assert_int_equal(sr_mpa_rtr_parse("reads"), -EINVAL);
	assert_int_equal(sr_mpa_rtr_parse("rea"), -EINVAL);
	assert_int_equal(sr_mpa_rtr_parse("read,"), -EINVAL);
	assert_int_equal(sr_mpa_rtr_parse(",read"), -EINVAL);
	assert_int_equal(sr_mpa_rtr_parse("read write"), -EINVAL);
	assert_int_equal(sr_mpa_rtr_parse("read;write"), -EINVAL);
	assert_int_equal(sr_mpa_rtr_parse("0x4"), -EINVAL);
}

/* Both roles end to end through the frame codec. */
static void test_handshake(void **state)
{
	struct sr_mpa_local ini = {
		.ird = 8, .ord = 4, .p2p = true, .rtr = SR_MPA_RTR_ALL
	};
	struct sr_mpa_local rsp = { .ird = 2, .ord = 16, .crc = true };
	struct sr_mpa_params req, req_rx, rep, rep_rx;
	struct sr_mpa_conn ci, cr;
	uint8_t f[SR_MPA_FRAME_MAX];
	size_t fl;

	sr_mpa_request_params(&ini, &req);
	roundtrip(&req, "x", 1, &req_rx, f, &fl);
	assert_int_equal(sr_mpa_respond(&req_rx, &rsp, &rep, &cr), 0);
	roundtrip(&rep, NULL, 0, &rep_rx, f, &fl);
	assert_int_equal(sr_mpa_check_reply(&req, &rep_rx, &ini, &ci), 0);

	assert_true(ci.crc && cr.crc);
	assert_true(ci.p2p && cr.p2p);
	assert_int_equal(ci.rtr, SR_MPA_RTR_READ);
	assert_int_equal(cr.rtr, SR_MPA_RTR_READ);
	/* Nobody may issue more Reads than the other side queues. */
	assert_true(ci.ord <= cr.ird);
	assert_true(cr.ord <= ci.ird);
	assert_int_equal(ci.ord, 2);
	assert_int_equal(cr.ord, 8);
}

static void test_mulpdu(void **state)
{
	assert_int_equal(sr_mpa_mulpdu(1460), 1454);
	assert_int_equal(sr_mpa_mulpdu(16344), 16338);
	assert_int_equal(sr_mpa_mulpdu(65483), 65474);
	assert_int_equal(sr_mpa_mulpdu(1461), 1454);
	assert_int_equal(sr_mpa_mulpdu(1462), 1454);
	assert_int_equal(sr_mpa_mulpdu(1463), 1454);
	assert_int_equal(sr_mpa_mulpdu(1464), 1458);
	assert_int_equal(sr_mpa_mulpdu(100000), SR_MPA_MULPDU_MAX);
	assert_int_equal(sr_mpa_mulpdu(0), SR_MPA_MULPDU_MIN);
	assert_int_equal(sr_mpa_mulpdu(100), SR_MPA_MULPDU_MIN);
	/* Full FPDUs need no pad and exactly fill one MSS. */
	for (uint32_t mss = 536; mss < 70000; mss += 37) {
		uint32_t m = sr_mpa_mulpdu(mss);

		assert_int_equal(sr_mpa_pad(m), 0);
		assert_true(sr_mpa_fpdu_len(m) <= mss ||
			    m == SR_MPA_MULPDU_MIN);
		if (m < SR_MPA_MULPDU_MAX)
			assert_true(sr_mpa_fpdu_len(m) > mss - 4);
	}
	assert_int_equal(sr_mpa_pad(14), 0);
	assert_int_equal(sr_mpa_pad(23), 3);
	assert_int_equal(sr_mpa_pad(46), 0);
	assert_int_equal(sr_mpa_fpdu_len(14), 20);
	assert_int_equal(sr_mpa_fpdu_len(23), 32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_frame),
		cmocka_unit_test(test_rev1),
		cmocka_unit_test(test_rev2_all_rtr),
		cmocka_unit_test(test_reject_with_pd),
		cmocka_unit_test(test_pd_limits),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_respond_flags),
		cmocka_unit_test(test_respond_rtr_choice),
		cmocka_unit_test(test_respond_ird_ord),
		cmocka_unit_test(test_check_reply),
		cmocka_unit_test(test_rtr_offer),
		cmocka_unit_test(test_rtr_parse),
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_mulpdu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
