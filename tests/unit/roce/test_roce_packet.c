// SPDX-License-Identifier: MIT
/*
 * RoCE v2 packets: the opcode table against the header sizes of docs/WIRE.md, build -> parse
 * round trips of every opcode with random field values and payload sizes, every drop reason,
 * the boundary lengths around each opcode's minimum, and the encoder's refusals.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "roce/icrc.h"
#include "roce/packet.h"
#include "roce_test.h"

/* Every opcode we know and its BTH + extension header bytes (docs/WIRE.md §R3). */
static const struct {
	uint8_t opcode, hdr_len;
} known[] = {
	{ 0x00, 12 }, { 0x01, 12 }, { 0x02, 12 }, { 0x03, 16 }, { 0x04, 12 }, { 0x05, 16 },
	{ 0x06, 28 }, { 0x07, 12 }, { 0x08, 12 }, { 0x09, 16 }, { 0x0a, 28 }, { 0x0b, 32 },
	{ 0x0c, 28 }, { 0x0d, 16 }, { 0x0e, 12 }, { 0x0f, 16 }, { 0x10, 16 }, { 0x11, 16 },
	{ 0x12, 24 }, { 0x13, 40 }, { 0x14, 40 }, { 0x16, 16 }, { 0x17, 16 }, { 0x1c, 32 },
	{ 0x1d, 28 },
	{ 0x20, 12 }, { 0x21, 12 }, { 0x22, 12 }, { 0x23, 16 }, { 0x24, 12 }, { 0x25, 16 },
	{ 0x26, 28 }, { 0x27, 12 }, { 0x28, 12 }, { 0x29, 16 }, { 0x2a, 28 }, { 0x2b, 32 },
	{ 0x64, 20 }, { 0x65, 24 },
};
#define NKNOWN (sizeof(known) / sizeof(known[0]))

static void test_table(void **state)
{
	int n = 0;

	for (unsigned int oc = 0; oc < 256; oc++) {
		const struct sr_roce_opinfo *op = sr_roce_opinfo((uint8_t)oc);
		int want = -1;

		for (size_t i = 0; i < NKNOWN; i++)
			if (known[i].opcode == oc)
				want = known[i].hdr_len;
		if (want < 0) {
			assert_null(op);
			continue;
		}
		n++;
		assert_non_null(op);
		assert_int_equal(op->opcode, oc);
		assert_int_equal(op->hdr_len, want);
		assert_true(op->hdr_len <= SR_ROCE_HDR_MAX);
		/* exactly one of first/middle/last-ish shapes, one of request/response */
		assert_true(!!(op->flags & SR_ROCE_F_REQ) + !!(op->flags & SR_ROCE_F_RESP) == 1);
		assert_true(!(op->flags & SR_ROCE_F_MIDDLE) ||
			    !(op->flags & (SR_ROCE_F_FIRST | SR_ROCE_F_LAST)));
		assert_true(op->flags & (SR_ROCE_F_FIRST | SR_ROCE_F_MIDDLE | SR_ROCE_F_LAST));
		/* UD is DETH; nothing else is */
		assert_int_equal(!!(op->hdrs & SR_ROCE_H_DETH), (oc & 0xe0) == SR_ROCE_UD);
	}
	assert_int_equal(n, NKNOWN);

	/* a few spot checks of offsets and kinds */
	{
		const struct sr_roce_opinfo *op = sr_roce_opinfo(0x0b);

		assert_int_equal(op->off_reth, 12);
		assert_int_equal(op->off_immdt, 28);
		assert_int_equal(op->kind, SR_ROCE_K_WRITE);
		assert_int_equal(op->flags & SR_ROCE_F_ONLY, SR_ROCE_F_ONLY);
		op = sr_roce_opinfo(0x65);
		assert_int_equal(op->off_deth, 12);
		assert_int_equal(op->off_immdt, 20);
		op = sr_roce_opinfo(0x12);
		assert_int_equal(op->off_aeth, 12);
		assert_int_equal(op->off_atomic_ack, 16);
		assert_false(op->flags & SR_ROCE_F_PAYLOAD);
		op = sr_roce_opinfo(0x1c);
		assert_int_equal(op->off_feth, 12);
		assert_int_equal(op->off_reth, 16);
		op = sr_roce_opinfo(0x0e);
		assert_int_equal(op->flags, SR_ROCE_F_MIDDLE | SR_ROCE_F_RESP | SR_ROCE_F_PAYLOAD);
		assert_string_equal(sr_roce_opinfo(0x04)->name, "RC_SEND_ONLY");
		assert_string_equal(sr_roce_opinfo(0x64)->name, "UD_SEND_ONLY");
	}
}

static uint32_t rnd24(void)
{
	return (uint32_t)(roce_rnd() & SR_ROCE_24BIT_MASK);
}

static void random_fields(struct sr_roce_pkt *p, uint8_t opcode)
{
	memset(p, 0, sizeof(*p));
	p->opcode = opcode;
	p->se = roce_rnd() & 1;
	p->mig = roce_rnd() & 1;
	p->fecn = roce_rnd() & 1;
	p->becn = roce_rnd() & 1;
	p->ackreq = roce_rnd() & 1;
	p->pkey = (uint16_t)roce_rnd();
	p->dqpn = rnd24() | 1;
	p->psn = rnd24();
	p->qkey = (uint32_t)roce_rnd();
	p->sqpn = rnd24();
	p->flush_sel = roce_rnd() & 3;
	p->flush_plt = roce_rnd() & 15;
	p->va = roce_rnd();
	p->rkey = (uint32_t)roce_rnd();
	p->dma_len = (uint32_t)roce_rnd();
	p->swap_add = roce_rnd();
	p->compare = roce_rnd();
	p->syndrome = roce_rnd() & 0x7f;
	p->msn = rnd24();
	p->orig = roce_rnd();
	p->imm = (uint32_t)roce_rnd();
	p->inv_rkey = (uint32_t)roce_rnd();
}

/* Fields of @a and @b that the opcode carries agree. */
static void assert_same(const struct sr_roce_pkt *a, const struct sr_roce_pkt *b)
{
	const struct sr_roce_opinfo *op = sr_roce_opinfo(a->opcode);

	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->se, b->se);
	assert_int_equal(a->mig, b->mig);
	assert_int_equal(a->fecn, b->fecn);
	assert_int_equal(a->becn, b->becn);
	assert_int_equal(a->ackreq, b->ackreq);
	assert_int_equal(a->pkey, b->pkey);
	assert_int_equal(a->dqpn, b->dqpn);
	assert_int_equal(a->psn, b->psn);
	if (op->hdrs & SR_ROCE_H_DETH) {
		assert_int_equal(a->qkey, b->qkey);
		assert_int_equal(a->sqpn, b->sqpn);
	}
	if (op->hdrs & SR_ROCE_H_FETH) {
		assert_int_equal(a->flush_sel, b->flush_sel);
		assert_int_equal(a->flush_plt, b->flush_plt);
	}
	if (op->hdrs & (SR_ROCE_H_RETH | SR_ROCE_H_ATOMIC)) {
		assert_int_equal(a->va, b->va);
		assert_int_equal(a->rkey, b->rkey);
	}
	if (op->hdrs & SR_ROCE_H_RETH)
		assert_int_equal(a->dma_len, b->dma_len);
	if (op->hdrs & SR_ROCE_H_ATOMIC) {
		assert_int_equal(a->swap_add, b->swap_add);
		assert_int_equal(a->compare, b->compare);
	}
	if (op->hdrs & SR_ROCE_H_AETH) {
		assert_int_equal(a->syndrome, b->syndrome);
		assert_int_equal(a->msn, b->msn);
	}
	if (op->hdrs & SR_ROCE_H_ATOMIC_ACK)
		assert_int_equal(a->orig, b->orig);
	if (op->hdrs & SR_ROCE_H_IMMDT)
		assert_int_equal(a->imm, b->imm);
	if (op->hdrs & SR_ROCE_H_IETH)
		assert_int_equal(a->inv_rkey, b->inv_rkey);
}

/* Whole datagram (headers, payload of @plen bytes of @fill, pad, ICRC) into @dg. */
static size_t assemble(const struct sr_roce_pkt *p, size_t plen, uint8_t fill, uint8_t *dg,
		       size_t cap, const struct sr_icrc_flow *f)
{
	struct sr_icrc c;
	ssize_t h = sr_roce_build(dg, cap, p, plen);
	size_t len;

	assert_true(h >= SR_BTH_LEN);
	assert_true((size_t)h + plen + SR_ROCE_TRAILER_MAX <= cap);
	memset(dg + h, fill, plen);
	len = (size_t)h + plen + sr_roce_pad((uint32_t)plen) + SR_ROCE_ICRC_LEN;
	sr_icrc_begin(&c, f, len);
	sr_icrc_hdrs(&c, dg, (size_t)h);
	sr_icrc_data(&c, dg + h, plen);
	assert_int_equal(sr_roce_put_trailer(dg + h + plen, (uint32_t)plen, &c),
			 sr_roce_pad((uint32_t)plen) + SR_ROCE_ICRC_LEN);
	return len;
}

static const struct sr_icrc_flow flow4 = {
	.family = AF_INET, .src = { 10, 0, 0, 1 }, .dst = { 10, 0, 0, 2 },
	.sport = 0xc132, .dport = SR_ROCE_UDP_PORT, .ipv4_df = true,
};

static void test_round_trip(void **state)
{
	static uint8_t dg[5000];

	roce_rnd_seed();
	for (size_t i = 0; i < NKNOWN; i++) {
		const struct sr_roce_opinfo *op = sr_roce_opinfo(known[i].opcode);
		static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 255, 256, 1023, 4096 };

		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			struct sr_roce_pkt in, out;
			size_t plen = sizes[s], len;

			if (!(op->flags & SR_ROCE_F_PAYLOAD) && plen)
				continue;
			if (op->payload_fixed)
				plen = op->payload_fixed;
			random_fields(&in, known[i].opcode);
			len = assemble(&in, plen, (uint8_t)(0x40 + s), dg, sizeof(dg), &flow4);
			assert_int_equal(len % 4, 0);
			assert_int_equal(sr_roce_parse(dg, len, SR_ROCE_CLASSES_ALL, &out),
					 SR_ROCE_OK);
			assert_ptr_equal(out.op, op);
			assert_same(&in, &out);
			assert_int_equal(out.hdr_len, op->hdr_len);
			assert_int_equal(out.pad, sr_roce_pad((uint32_t)plen));
			assert_int_equal(out.payload_len, plen);
			assert_ptr_equal(out.payload, dg + op->hdr_len);
			assert_ptr_equal(out.icrc, dg + len - 4);
			for (size_t k = 0; k < plen; k++)
				assert_int_equal(out.payload[k], (uint8_t)(0x40 + s));
			/* pad bytes are zero, TVer 0 */
			for (size_t k = plen; k < plen + out.pad; k++)
				assert_int_equal(out.payload[k], 0);
			assert_int_equal(dg[1] & SR_BTH_TVER_MASK, 0);
			assert_true(sr_roce_icrc_verify(&flow4, dg, len));
			if (op->payload_fixed)
				break;
		}
	}
}

/* The worked example's datagram decodes to what was built. */
static void test_parse_worked(void **state)
{
	uint8_t dg[32];
	struct sr_roce_pkt p;
	size_t n = roce_hex("04 30 ff ff 00 00 00 11 80 12 34 56 68 65 6c 6c 6f 00 00 00"
			    "60 7a a8 cb", dg, sizeof(dg));

	assert_int_equal(sr_roce_parse(dg, n, SR_ROCE_CLASS_RC, &p), SR_ROCE_OK);
	assert_int_equal(p.opcode, 0x04);
	assert_int_equal(p.pad, 3);
	assert_int_equal(p.pkey, 0xffff);
	assert_int_equal(p.dqpn, 0x11);
	assert_true(p.ackreq);
	assert_false(p.se);
	assert_int_equal(p.psn, 0x123456);
	assert_int_equal(p.payload_len, 5);
	assert_memory_equal(p.payload, "hello", 5);
	assert_int_equal(sr_icrc_get(p.icrc), 0xCBA87A60u);
}

static enum sr_roce_drop parse(const uint8_t *b, size_t n, unsigned int classes)
{
	struct sr_roce_pkt p;

	return sr_roce_parse(b, n, classes, &p);
}

static void test_drops(void **state)
{
	uint8_t dg[256];
	struct sr_roce_pkt p;
	size_t len;

	random_fields(&p, SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_SEND_ONLY));
	len = assemble(&p, 8, 1, dg, sizeof(dg), &flow4);
	assert_int_equal(len, 24);
	assert_int_equal(parse(dg, len, SR_ROCE_CLASSES_ALL), SR_ROCE_OK);

	/* short: less than BTH + ICRC */
	assert_int_equal(parse(dg, 15, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_SHORT);
	assert_int_equal(parse(dg, 0, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_SHORT);

	/* TVer */
	dg[1] |= 1;
	assert_int_equal(parse(dg, len, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_TVER);
	dg[1] &= (uint8_t)~SR_BTH_TVER_MASK;

	/* class: RD, CNP, XRC, the manufacturer range; and a class not asked for */
	for (unsigned int cls = 0x40; cls < 0x100; cls += 0x20) {
		if (cls == SR_ROCE_UD)
			continue;
		dg[0] = (uint8_t)(cls | SR_ROCE_SEND_ONLY);
		assert_int_equal(parse(dg, len, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_CLASS);
	}
	dg[0] = 0x81; /* CNP as rxe sees it */
	assert_int_equal(parse(dg, len, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_CLASS);
	dg[0] = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_SEND_ONLY);
	assert_int_equal(parse(dg, len, SR_ROCE_CLASS_UD | SR_ROCE_CLASS_UC),
			 SR_ROCE_DROP_CLASS);
	assert_int_equal(parse(dg, len, SR_ROCE_CLASS_RC), SR_ROCE_OK);
	dg[0] = SR_ROCE_OP(SR_ROCE_UC, SR_ROCE_SEND_ONLY);
	assert_int_equal(parse(dg, len, SR_ROCE_CLASS_RC), SR_ROCE_DROP_CLASS);
	assert_int_equal(parse(dg, len, SR_ROCE_CLASS_UC), SR_ROCE_OK);

	/* reserved operations of RC/UC/UD */
	{
		static const uint8_t bad[] = { 0x15, 0x18, 0x19, 0x1a, 0x1b, 0x1e, 0x1f,
					       0x2c, 0x31, 0x36, 0x37, 0x3c, 0x3f,
					       0x60, 0x63, 0x66, 0x7f };

		for (size_t i = 0; i < sizeof(bad); i++) {
			dg[0] = bad[i];
			assert_int_equal(parse(dg, len, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_OPCODE);
		}
	}

	/* too short for the opcode's headers: a WRITE Only (28 + 4) in 24 bytes */
	dg[0] = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_WRITE_ONLY);
	dg[1] &= (uint8_t)~SR_BTH_PAD_MASK;
	assert_int_equal(parse(dg, len, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_HDR_LEN);
	assert_int_equal(parse(dg, 31, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_HDR_LEN);
	memset(dg + 24, 0, 8);
	assert_int_equal(parse(dg, 32, SR_ROCE_CLASSES_ALL), SR_ROCE_OK);

	/* pad: payload + pad not whole words, pad bigger than the bytes there */
	dg[0] = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_SEND_ONLY);
	assert_int_equal(parse(dg, 23, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_PAD);
	assert_int_equal(parse(dg, 17, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_PAD);
	dg[1] |= 3 << SR_BTH_PAD_SHIFT;
	assert_int_equal(parse(dg, 16, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_PAD);
	assert_int_equal(parse(dg, 20, SR_ROCE_CLASSES_ALL), SR_ROCE_OK);
	dg[1] &= (uint8_t)~SR_BTH_PAD_MASK;
	assert_int_equal(parse(dg, 16, SR_ROCE_CLASSES_ALL), SR_ROCE_OK);

	/* payload where the opcode has none; ATOMIC WRITE of other than 8 bytes */
	dg[0] = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_ACK);
	assert_int_equal(parse(dg, 20, SR_ROCE_CLASSES_ALL), SR_ROCE_OK);
	assert_int_equal(parse(dg, 24, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_PAYLOAD);
	dg[1] |= 1 << SR_BTH_PAD_SHIFT; /* pad alone is no better */
	assert_int_equal(parse(dg, 24, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_PAYLOAD);
	assert_int_equal(parse(dg, 20, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_PAD);
	dg[1] &= (uint8_t)~SR_BTH_PAD_MASK;
	dg[0] = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_ATOMIC_WRITE);
	assert_int_equal(parse(dg, 28 + 8 + 4, SR_ROCE_CLASSES_ALL), SR_ROCE_OK);
	assert_int_equal(parse(dg, 28 + 4 + 4, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_PAYLOAD);
	assert_int_equal(parse(dg, 28 + 12 + 4, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_PAYLOAD);
	assert_int_equal(parse(dg, 28 + 4, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_PAYLOAD);

	/* DestQP 0 */
	dg[0] = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_SEND_ONLY);
	dg[5] = dg[6] = dg[7] = 0;
	assert_int_equal(parse(dg, 24, SR_ROCE_CLASSES_ALL), SR_ROCE_DROP_QPN);
	dg[7] = 1;
	assert_int_equal(parse(dg, 24, SR_ROCE_CLASSES_ALL), SR_ROCE_OK);

	/* names: one per reason, all different */
	for (int a = 0; a < SR_ROCE_DROP_COUNT; a++) {
		assert_string_not_equal(sr_roce_drop_name(a), "?");
		for (int b = 0; b < a; b++)
			assert_string_not_equal(sr_roce_drop_name(a), sr_roce_drop_name(b));
	}
	assert_string_equal(sr_roce_drop_name(SR_ROCE_DROP_COUNT), "?");
}

/*
 * Every opcode at its minimum length (headers + ICRC) and one word less: accepted and
 * HDR_LEN (or SHORT below 16). The parser reads nothing past @len: the datagram sits at
 * the end of a heap block, so ASan builds catch any overread.
 */
static void test_boundaries(void **state)
{
	for (size_t i = 0; i < NKNOWN; i++) {
		const struct sr_roce_opinfo *op = sr_roce_opinfo(known[i].opcode);
		size_t fixed = op->payload_fixed, min = op->hdr_len + fixed + 4;

		for (size_t len = 0; len <= min; len++) {
			uint8_t *dg = malloc(len ? len : 1);
			enum sr_roce_drop r, want;

			memset(dg, 0, len);
			if (len > 0)
				dg[0] = known[i].opcode;
			if (len > 7)
				dg[7] = 9;
			r = parse(dg, len, SR_ROCE_CLASSES_ALL);
			if (len < 16)
				want = SR_ROCE_DROP_SHORT;
			else if (len < op->hdr_len + 4u)
				want = SR_ROCE_DROP_HDR_LEN;
			else if ((len - op->hdr_len - 4) % 4)
				want = SR_ROCE_DROP_PAD;
			else if (len != min)
				want = SR_ROCE_DROP_PAYLOAD;
			else
				want = SR_ROCE_OK;
			assert_int_equal(r, want);
			free(dg);
		}
	}
}

static void test_build_refusals(void **state)
{
	uint8_t b[64];
	struct sr_roce_pkt p;

	random_fields(&p, SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_SEND_ONLY));
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), 12);
	assert_int_equal(sr_roce_build(b, 11, &p, 0), -ENOSPC);
	assert_int_equal(sr_roce_build(b, 12, &p, 0), 12);
	assert_int_equal(sr_roce_build(b, 12, &p, SR_ROCE_UDP_PAYLOAD_MAX - 12 - 7), 12);
	assert_int_equal(sr_roce_build(b, 12, &p, SR_ROCE_UDP_PAYLOAD_MAX - 12 - 6), -EMSGSIZE);
	p.dqpn = 0;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);
	p.dqpn = 0x1000000;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);
	p.dqpn = SR_ROCE_QPN_MULTICAST;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), 12);
	p.psn = 0x1000000;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);
	p.psn = 0;

	/* unknown opcodes */
	p.opcode = 0x15;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);
	p.opcode = SR_ROCE_OP(SR_ROCE_RD, SR_ROCE_SEND_ONLY);
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);

	/* payload on an opcode without one, ATOMIC WRITE not 8 */
	p.opcode = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_READ_REQ);
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), 28);
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 1), -EINVAL);
	p.opcode = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_ATOMIC_WRITE);
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 8), 28);
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 4), -EINVAL);

	/* AETH: bit 7 of the syndrome, MSN width */
	p.opcode = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_ACK);
	p.syndrome = SR_AETH_SYN_NAK(SR_AETH_NAK_REM_ACCESS);
	assert_int_equal(p.syndrome, 0x62);
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), 16);
	assert_int_equal(b[12], 0x62);
	p.syndrome = 0x80;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);
	p.syndrome = SR_AETH_ACK_NO_CREDIT;
	p.msn = 0x1000000;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);
	p.msn = 0;

	/* DETH source QP width; FETH fields */
	p.opcode = SR_ROCE_OP(SR_ROCE_UD, SR_ROCE_SEND_ONLY);
	p.sqpn = 0x1000000;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);
	p.sqpn = 1;
	p.qkey = SR_ROCE_QKEY_GSI;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), 20);
	assert_int_equal(sr_get_be32(b + 12), 0x80010000u);
	assert_int_equal(b[16], 0);
	assert_int_equal(sr_get_be24(b + 17), 1);
	p.opcode = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_FLUSH);
	p.flush_sel = 4;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);
	p.flush_sel = 1;
	p.flush_plt = 16;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), -EINVAL);
	p.flush_plt = 2;
	assert_int_equal(sr_roce_build(b, sizeof(b), &p, 0), 32);
	assert_int_equal(sr_get_be32(b + 12), 0x12);
}

/* Syndrome constants as docs/WIRE.md §R5 gives them. */
static void test_syndromes(void **state)
{
	assert_int_equal(SR_AETH_ACK_NO_CREDIT, 0x1f);
	assert_int_equal(SR_AETH_SYN_ACK(0), 0x00);
	assert_int_equal(SR_AETH_SYN_RNR(0), 0x20);
	assert_int_equal(SR_AETH_SYN_RNR(31), 0x3f);
	assert_int_equal(SR_AETH_SYN_NAK(SR_AETH_NAK_PSN_SEQ), 0x60);
	assert_int_equal(SR_AETH_SYN_NAK(SR_AETH_NAK_INV_REQ), 0x61);
	assert_int_equal(SR_AETH_SYN_NAK(SR_AETH_NAK_REM_ACCESS), 0x62);
	assert_int_equal(SR_AETH_SYN_NAK(SR_AETH_NAK_REM_OP), 0x63);
	assert_int_equal(SR_AETH_SYN_NAK(SR_AETH_NAK_INV_RD_REQ), 0x64);
	assert_int_equal(SR_AETH_SYN_RNR(14) & SR_AETH_TYPE_MASK, SR_AETH_TYPE_RNR_NAK);
	assert_int_equal(SR_AETH_SYN_RNR(14) & SR_AETH_VALUE_MASK, 14);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),        cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_parse_worked), cmocka_unit_test(test_drops),
		cmocka_unit_test(test_boundaries),   cmocka_unit_test(test_build_refusals),
		cmocka_unit_test(test_syndromes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
