// SPDX-License-Identifier: MIT
/*
 * Fuzz the MPA Request/Reply parser and the negotiation on top of it.
 *
 * Input: byte 0 bit 0 selects which key is expected (Reply when set); the
 * rest is what the peer sent, header first. Whatever parses must survive a
 * build -> parse round trip unchanged, and negotiation results must respect
 * RFC 6581 (one RTR, offered; IRD/ORD in 14 bits, ORD within the peer's IRD).
 * Any violation aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../fuzz_util.h"
#include "iwarp/mpa.h"

static bool one_bit(uint8_t v)
{
	return v && !(v & (v - 1));
}

static void roundtrip(const struct sr_mpa_params *p, const uint8_t *ulp,
		      size_t ulp_len)
{
	uint8_t f[SR_MPA_FRAME_MAX];
	struct sr_mpa_hdr_info hi;
	struct sr_mpa_params q;
	const uint8_t *u;
	size_t ul;
	ssize_t n = sr_mpa_build_frame(f, sizeof(f), p, ulp, ulp_len);
	int rc;

	if (n < 0) {
		/* Only our send-side PD limit may refuse a parsed frame. */
		CHECK(n == -EINVAL);
		CHECK(ulp_len > SR_MPA_ULP_PD_MAX_V2);
		return;
	}
	rc = sr_mpa_parse_header(f, p->is_reply, &hi);
	CHECK(rc >= 0 && (size_t)rc + SR_MPA_RR_HDR_LEN == (size_t)n);
	CHECK(sr_mpa_parse_pd(&hi, f + SR_MPA_RR_HDR_LEN, (size_t)rc, &q, &u,
			      &ul) == 0);
	CHECK(q.is_reply == p->is_reply && q.rev == p->rev && q.crc == p->crc);
	CHECK(q.markers == p->markers && q.reject == p->reject);
	CHECK(q.enhanced == p->enhanced && q.p2p == p->p2p);
	CHECK(q.ird == p->ird && q.ord == p->ord && q.rtr == p->rtr);
	CHECK(ul == ulp_len && (!ul || memcmp(u, ulp, ul) == 0));
}

static void negotiate_as_responder(const struct sr_mpa_params *req)
{
	struct sr_mpa_local loc = { .ird = 8, .ord = 8 };
	struct sr_mpa_params rep;
	struct sr_mpa_conn c;
	int rc = sr_mpa_respond(req, &loc, &rep, &c);

	CHECK(rep.is_reply);
	if (rc) {
		CHECK(rc == SR_MPA_EMARKERS || rc == SR_MPA_ENORTR);
		CHECK(rep.reject);
		CHECK(sr_mpa_err_code(rc) != SR_IW_OK);
		return;
	}
	CHECK(!rep.reject && !rep.markers && rep.rev == req->rev);
	CHECK(rep.crc == (req->crc || loc.crc));
	if (req->enhanced) {
		CHECK(rep.ord <= req->ird && rep.ird <= SR_MPA_V2_IRD_ORD_MASK);
		if (req->p2p)
			CHECK(one_bit(rep.rtr) && (rep.rtr & req->rtr));
		else
			CHECK(rep.rtr == 0);
	}
	roundtrip(&rep, NULL, 0);
}

static void negotiate_as_initiator(const struct sr_mpa_params *rep)
{
	struct sr_mpa_local loc = {
		.ird = 4, .ord = 4, .p2p = true, .rtr = SR_MPA_RTR_ALL
	};
	struct sr_mpa_params req;
	struct sr_mpa_conn c;
	int rc;

	sr_mpa_request_params(&loc, &req);
	rc = sr_mpa_check_reply(&req, rep, &loc, &c);
	if (rc) {
		CHECK(rc == SR_MPA_EREJECTED || rc == SR_MPA_EMARKERS ||
		      rc == SR_MPA_EBADREV || rc == SR_MPA_EINVALID ||
		      rc == SR_MPA_ENORTR || rc == SR_MPA_EIRD);
		return;
	}
	CHECK(c.ord <= req.ord && c.ird == req.ird);
	CHECK(c.p2p ? one_bit(c.rtr) && (c.rtr & req.rtr) : c.rtr == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[SR_MPA_RR_HDR_LEN] = { 0 };
	struct sr_mpa_hdr_info hi;
	struct sr_mpa_params p;
	const uint8_t *ulp, *pd;
	size_t ulp_len, pd_len;
	bool reply;
	int rc;

	if (size < 1)
		return 0;
	reply = data[0] & 1;
	data++;
	size--;
	memcpy(hdr, data, size < sizeof(hdr) ? size : sizeof(hdr));

	rc = sr_mpa_parse_header(hdr, reply, &hi);
	if (rc < 0) {
		CHECK(rc == SR_MPA_EBADKEY || rc == SR_MPA_EBADREV ||
		      rc == SR_MPA_ETOOLONG || rc == SR_MPA_ETRUNC);
		CHECK(sr_mpa_err_code(rc) == SR_IW_ERR_MPA_INVALID_RR);
		return 0;
	}
	CHECK(rc <= SR_MPA_PD_MAX && rc == hi.pd_len);

	pd = size > sizeof(hdr) ? data + sizeof(hdr) : NULL;
	pd_len = size > sizeof(hdr) ? size - sizeof(hdr) : 0;
	/* Copy so ASan sees reads past the declared length. */
	{
		uint8_t *copy = malloc(pd_len ? pd_len : 1);

		CHECK(copy);
		if (pd_len)
			memcpy(copy, pd, pd_len);
		rc = sr_mpa_parse_pd(&hi, copy, pd_len, &p, &ulp, &ulp_len);
		if (rc) {
			CHECK(rc == SR_MPA_ETRUNC && pd_len < hi.pd_len);
			free(copy);
			return 0;
		}
		CHECK(ulp_len <= hi.pd_len);
		CHECK(!ulp_len ||
		      (ulp >= copy && ulp + ulp_len <= copy + pd_len));
		CHECK(p.ird <= SR_MPA_V2_IRD_ORD_MASK &&
		      p.ord <= SR_MPA_V2_IRD_ORD_MASK);
		CHECK(!(p.rtr & ~SR_MPA_RTR_ALL));
		roundtrip(&p, ulp, ulp_len);
		if (reply)
			negotiate_as_initiator(&p);
		else
			negotiate_as_responder(&p);
		free(copy);
	}
	return 0;
}
