// SPDX-License-Identifier: MIT
/*
 * Fuzz the RoCE v2 datagram parser and the encoder behind it.
 *
 * Input: see fz_roce.h (control byte, then one UDP payload). The datagram is copied to the
 * very end of a guarded region, so a read one byte past it faults at once. The harness
 * aborts unless: every drop has a named reason; an accepted packet's header, payload, pad
 * and ICRC add up to the datagram and lie inside it, with 24-bit fields in range and the
 * class one the caller allowed; encoding the parsed fields again gives the same header
 * bytes (reserved bits aside), or a refusal only for an AETH with its reserved bit set;
 * and the ICRC computed whole equals the one computed in two pieces, and verifies after
 * a repair.
 */
#include <stdint.h>
#include <string.h>

#include "../fuzz_util.h"
#include "fz_roce.h"
#include "roce/packet.h"

#define REGION 65536

static uint8_t *region;

/* Input header bytes with the bits the encoder always writes as 0 cleared. */
static void clear_reserved(uint8_t *h, const struct sr_roce_opinfo *op)
{
	h[SR_WOFF(sr_bth, fecn_becn)] &= (uint8_t)~SR_BTH_RESV6A_MASK;
	h[SR_WOFF(sr_bth, ackreq)] &= (uint8_t)~SR_BTH_RESV7_MASK;
	if (op->off_deth)
		h[op->off_deth + SR_WOFF(sr_deth, resv)] = 0;
	if (op->off_feth) {
		h[op->off_feth] = h[op->off_feth + 1] = h[op->off_feth + 2] = 0;
		h[op->off_feth + 3] &= SR_FETH_SEL_MASK | SR_FETH_PLT_MASK;
	}
}

static void check_ok(const uint8_t *dg, size_t len, unsigned int classes,
		     const struct sr_roce_pkt *p)
{
	const struct sr_roce_opinfo *op = p->op;
	uint8_t again[SR_ROCE_HDR_MAX], orig[SR_ROCE_HDR_MAX];
	ssize_t n;

	CHECK(op && op == sr_roce_opinfo(dg[0]) && op->opcode == p->opcode);
	CHECK(p->hdr_len == op->hdr_len && p->hdr_len <= SR_ROCE_HDR_MAX);
	CHECK((size_t)p->hdr_len + p->payload_len + p->pad + SR_ROCE_ICRC_LEN == len);
	CHECK(p->payload == dg + p->hdr_len && p->icrc == dg + len - SR_ROCE_ICRC_LEN);
	CHECK((p->payload_len + p->pad) % 4 == 0);
	CHECK((op->flags & SR_ROCE_F_PAYLOAD) || p->payload_len + p->pad == 0);
	CHECK(p->dqpn && p->dqpn <= SR_ROCE_24BIT_MASK && p->psn <= SR_ROCE_24BIT_MASK);
	CHECK(p->msn <= SR_ROCE_24BIT_MASK && p->sqpn <= SR_ROCE_24BIT_MASK);
	switch (p->opcode & SR_ROCE_CLASS_MASK) {
	case SR_ROCE_RC:
		CHECK(classes & SR_ROCE_CLASS_RC);
		break;
	case SR_ROCE_UC:
		CHECK(classes & SR_ROCE_CLASS_UC);
		break;
	case SR_ROCE_UD:
		CHECK(classes & SR_ROCE_CLASS_UD);
		break;
	default:
		CHECK(!"class outside RC/UC/UD accepted");
	}

	n = sr_roce_build(again, sizeof(again), p, p->payload_len);
	if (op->off_aeth && (p->syndrome & SR_AETH_RESV_BIT)) {
		CHECK(n == -EINVAL);
		return;
	}
	CHECK(n == p->hdr_len);
	memcpy(orig, dg, (size_t)n);
	clear_reserved(orig, op);
	CHECK(memcmp(orig, again, (size_t)n) == 0);
}

/* ICRC whole == in two pieces at @cut; after writing it, it verifies. */
static void check_icrc(uint8_t *dg, size_t len, const struct sr_icrc_flow *f, size_t cut,
		       bool fix)
{
	size_t body = len - SR_ROCE_ICRC_LEN;
	uint32_t whole = sr_roce_icrc(f, dg, len);
	struct sr_icrc c;

	cut = SR_BTH_LEN + cut % (body - SR_BTH_LEN + 1);
	sr_icrc_begin(&c, f, len);
	sr_icrc_hdrs(&c, dg, cut);
	sr_icrc_data(&c, dg + cut, body - cut);
	CHECK(sr_icrc_end(&c) == whole);
	if (fix) {
		sr_icrc_put(dg + body, whole);
		CHECK(sr_roce_icrc_verify(f, dg, len));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct sr_icrc_flow *f;
	struct sr_roce_pkt p;
	enum sr_roce_drop r;
	unsigned int classes;
	uint8_t *dg;
	size_t len;

	if (size < 1 || size - 1 > REGION)
		return 0;
	if (!region)
		region = fz_guarded(REGION);
	len = size - 1;
	dg = region + REGION - len;
	memcpy(dg, data + 1, len);
	f = data[0] & FZ_ROCE_IPV6 ? &fz_roce_flow6 : &fz_roce_flow4;
	classes = (data[0] & FZ_ROCE_CLASS_MASK) >> FZ_ROCE_CLASS_SHIFT;
	if (!classes)
		classes = SR_ROCE_CLASSES_ALL;

	if (len >= SR_BTH_LEN + SR_ROCE_ICRC_LEN)
		check_icrc(dg, len, f, len > 20 ? data[20] : 0, data[0] & FZ_ROCE_FIX_ICRC);
	else
		CHECK(!sr_roce_icrc_verify(f, dg, len));

	r = sr_roce_parse(dg, len, classes, &p);
	CHECK((unsigned int)r < SR_ROCE_DROP_COUNT);
	CHECK(strcmp(sr_roce_drop_name(r), "?") != 0);
	if (r == SR_ROCE_OK)
		check_ok(dg, len, classes, &p);
	return 0;
}
