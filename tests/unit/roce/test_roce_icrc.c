// SPDX-License-Identifier: MIT
/*
 * CRC-32 and the RoCE v2 ICRC: the worked IPv4 example of docs/WIRE.md §R6 byte for byte (packet
 * built by the codec, ICRC computed whole, incrementally and over iovecs), the same packet
 * over IPv6, zlib equivalence on pseudo-random buffers, a bit-at-a-time reference on every
 * length and alignment, and invariance under any split of the payload.
 */
#include <arpa/inet.h>
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

/* Bit-at-a-time CRC-32, same finished-value convention as sr_crc32(). */
static uint32_t ref_crc32(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void test_vectors(void **state)
{
	uint8_t z[32] = { 0 };

	assert_int_equal(sr_crc32(0, "123456789", 9), 0xCBF43926u);
	assert_int_equal(sr_crc32(0, NULL, 0), 0);
	assert_int_equal(sr_crc32(0, z, 32), ref_crc32(0, z, 32));
	assert_int_equal(sr_crc32(sr_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
}

/*
 * Expected values from zlib: the buffers are the next n bytes (rnd() >> 56, one call per
 * byte) of roce_rnd() started from its seed, lengths taken in this order, produced offline by
 *   python3 -c 'import zlib; M=2**64-1; s=0x9E3779B97F4A7C15
 *   def r():
 *     global s; s^=s>>12; s^=(s<<25)&M; s^=s>>27; return (s*0x2545F4914F6CDD1D)&M
 *   [print(n, hex(zlib.crc32(bytes(r()>>56 for _ in range(n))))) for n in
 *    (1,3,7,8,15,64,255,1024,4093,9000)]'
 */
static void test_zlib(void **state)
{
	static const struct {
		size_t n;
		uint32_t crc;
	} v[] = {
		{ 1, 0xacb39330 },    { 3, 0xdc9e641e },   { 7, 0x63cc39d4 },
		{ 8, 0x2009633a },    { 15, 0x0a860918 },  { 64, 0x9ca96f63 },
		{ 255, 0x709fffd3 },  { 1024, 0xcad30254 }, { 4093, 0xaf98c64c },
		{ 9000, 0x30e62cb5 },
	};

	roce_rnd_seed();
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint8_t *b = roce_rnd_buf(v[i].n);

		assert_int_equal(sr_crc32(0, b, v[i].n), v[i].crc);
		free(b);
	}
}

/* Every length up to 300 at every alignment of 8 against the bit-wise reference. */
static void test_reference(void **state)
{
	uint8_t *b;

	roce_rnd_seed();
	b = roce_rnd_buf(320);
	for (size_t a = 0; a < 8; a++)
		for (size_t n = 0; n <= 300; n++)
			assert_int_equal(sr_crc32(0, b + a, n), ref_crc32(0, b + a, n));
	free(b);
}

/* The worked example's flow: 192.0.2.1 -> .2 (ID 0, DF) or 2001:db8::1 -> ::2, 55410 -> 4791. */
/*
 * The folding path (when the CPU has it) against the table on every length to 1100 at 16
 * alignments, which covers the 4-lane loop, the single-lane loop and every tail, and
 * against the bit-wise reference on long buffers; chained calls agree with one call.
 */
static void test_paths(void **state)
{
	size_t big = 70000;
	uint8_t *b;

	printf("sr_crc32 path: %s\n", sr_crc32_folding() ? "pclmul folding" : "table");
	roce_rnd_seed();
	b = roce_rnd_buf(big + 16);
	for (size_t a = 0; a < 16; a++)
		for (size_t n = 0; n <= 1100; n++)
			assert_int_equal(sr_crc32(0, b + a, n), sr_crc32_table(0, b + a, n));
	for (size_t n = big - 40; n <= big; n += 7)
		assert_int_equal(sr_crc32(0, b + 3, n), ref_crc32(0, b + 3, n));
	assert_int_equal(sr_crc32(sr_crc32(0, b, 1000), b + 1000, big - 1000),
			 sr_crc32(0, b, big));
	assert_int_equal(sr_crc32(0x12345678, b, 4096), sr_crc32_table(0x12345678, b, 4096));
	free(b);
}

static void flow_example(struct sr_icrc_flow *f, bool v6)
{
	int af = v6 ? AF_INET6 : AF_INET;

	memset(f, 0, sizeof(*f));
	f->family = (sa_family_t)af;
	assert_int_equal(inet_pton(af, v6 ? "2001:db8::1" : "192.0.2.1", f->src), 1);
	assert_int_equal(inet_pton(af, v6 ? "2001:db8::2" : "192.0.2.2", f->dst), 1);
	f->sport = 55410;
	f->dport = SR_ROCE_UDP_PORT;
	f->ipv4_df = !v6;
}

/* RC SEND Only to QP 0x11, AckReq, PSN 0x123456, "hello": the whole UDP payload. */
static size_t build_hello(const struct sr_icrc_flow *f, uint8_t *dg)
{
	struct sr_roce_pkt p = { .opcode = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_SEND_ONLY),
				 .pkey = SR_ROCE_PKEY_DEFAULT, .dqpn = 0x11, .ackreq = true,
				 .psn = 0x123456 };
	struct sr_icrc c;
	ssize_t h = sr_roce_build(dg, 64, &p, 5);
	size_t len;

	assert_int_equal(h, SR_BTH_LEN);
	memcpy(dg + h, "hello", 5);
	len = (size_t)h + 5 + sr_roce_pad(5) + SR_ROCE_ICRC_LEN;
	sr_icrc_begin(&c, f, len);
	sr_icrc_hdrs(&c, dg, (size_t)h);
	sr_icrc_data(&c, dg + h, 5);
	assert_int_equal(sr_roce_put_trailer(dg + h + 5, 5, &c), 7);
	return len;
}

static void test_worked_ipv4(void **state)
{
	struct sr_icrc_flow f;
	uint8_t dg[64], want[64];
	size_t len, wlen;

	flow_example(&f, false);
	len = build_hello(&f, dg);
	wlen = roce_hex("04 30 ff ff 00 00 00 11 80 12 34 56 68 65 6c 6c 6f 00 00 00"
			"60 7a a8 cb", want, sizeof(want));
	assert_int_equal(len, wlen);
	assert_memory_equal(dg, want, len);
	assert_int_equal(sr_roce_icrc(&f, dg, len), 0xCBA87A60u);
	assert_true(sr_roce_icrc_verify(&f, dg, len));

	/* Only masked fields may change without changing the ICRC. */
	dg[4] = 0xc0; /* FECN, BECN */
	assert_true(sr_roce_icrc_verify(&f, dg, len));
	dg[4] = 0;
	f.ipv4_id = 1;
	assert_false(sr_roce_icrc_verify(&f, dg, len));
	f.ipv4_id = 0;
	f.ipv4_df = false;
	assert_false(sr_roce_icrc_verify(&f, dg, len));
	f.ipv4_df = true;
	f.sport++;
	assert_false(sr_roce_icrc_verify(&f, dg, len));
	f.sport--;
	dg[1] ^= 0x80; /* SE is covered */
	assert_false(sr_roce_icrc_verify(&f, dg, len));
	dg[1] ^= 0x80;
	dg[len - 1] ^= 1;
	assert_false(sr_roce_icrc_verify(&f, dg, len));
	dg[len - 1] ^= 1;
	assert_true(sr_roce_icrc_verify(&f, dg, len));
	assert_false(sr_roce_icrc_verify(&f, dg, 15));
}

/* The CRC input of docs/WIRE.md, written out, through the plain CRC-32. */
static void test_worked_input(void **state)
{
	uint8_t in[128];
	size_t n = roce_hex("ff ff ff ff ff ff ff ff"
			    "45 ff 00 34 00 00 40 00 ff 11 ff ff c0 00 02 01 c0 00 02 02"
			    "d8 72 12 b7 00 20 ff ff"
			    "04 30 ff ff ff 00 00 11 80 12 34 56"
			    "68 65 6c 6c 6f 00 00 00",
			    in, sizeof(in));

	assert_int_equal(sr_crc32(0, in, n), 0xCBA87A60u);
}

/* Same packet over IPv6: b4 1a 91 08 (docs/WIRE.md; zlib over the masked input agrees). */
static void test_worked_ipv6(void **state)
{
	struct sr_icrc_flow f;
	uint8_t dg[64];
	size_t len;

	flow_example(&f, true);
	len = build_hello(&f, dg);
	assert_int_equal(len, 24);
	assert_int_equal(dg[20], 0xb4);
	assert_int_equal(dg[21], 0x1a);
	assert_int_equal(dg[22], 0x91);
	assert_int_equal(dg[23], 0x08);
	assert_true(sr_roce_icrc_verify(&f, dg, len));
	/* IPv6 has no ID or DF: the fields are not used. */
	f.ipv4_id = 77;
	f.ipv4_df = true;
	assert_true(sr_roce_icrc_verify(&f, dg, len));
}

/*
 * A 4 KiB WRITE Only payload given as 1..5 iovecs cut at pseudo-random points: the same ICRC
 * as one buffer, and as sr_roce_icrc() over the assembled datagram.
 */
static void test_iovec_split(void **state)
{
	struct sr_roce_pkt p = { .opcode = SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_WRITE_ONLY),
				 .pkey = SR_ROCE_PKEY_DEFAULT, .dqpn = 0x1234, .psn = 7,
				 .va = 0x1000, .rkey = 0x55, .dma_len = 4093 };
	const size_t plen = 4093;
	uint8_t hdr[SR_ROCE_HDR_MAX], trl[SR_ROCE_TRAILER_MAX], *dg, *pl;
	struct sr_icrc_flow f;
	size_t len, tl;
	ssize_t h;
	struct sr_icrc c;
	uint32_t whole;

	roce_rnd_seed();
	pl = roce_rnd_buf(plen);
	flow_example(&f, true);
	h = sr_roce_build(hdr, sizeof(hdr), &p, plen);
	assert_int_equal(h, 28);
	len = (size_t)h + plen + sr_roce_pad(plen) + SR_ROCE_ICRC_LEN;
	sr_icrc_begin(&c, &f, len);
	sr_icrc_hdrs(&c, hdr, (size_t)h);
	sr_icrc_data(&c, pl, plen);
	tl = sr_roce_put_trailer(trl, plen, &c);
	assert_int_equal(tl, 3 + 4);
	whole = sr_icrc_get(trl + 3);

	dg = malloc(len);
	assert_non_null(dg);
	memcpy(dg, hdr, (size_t)h);
	memcpy(dg + h, pl, plen);
	memcpy(dg + h + plen, trl, tl);
	assert_int_equal(sr_roce_icrc(&f, dg, len), whole);

	for (int round = 0; round < 200; round++) {
		struct iovec iov[5];
		size_t cuts[6], n = 1 + roce_rnd() % 5;

		cuts[0] = 0;
		for (size_t i = 1; i < n; i++)
			cuts[i] = roce_rnd() % (plen + 1);
		cuts[n] = plen;
		/* sort the inner cuts */
		for (size_t i = 1; i < n; i++)
			for (size_t j = i + 1; j < n; j++)
				if (cuts[j] < cuts[i]) {
					size_t t = cuts[i];

					cuts[i] = cuts[j];
					cuts[j] = t;
				}
		for (size_t i = 0; i < n; i++) {
			iov[i].iov_base = pl + cuts[i];
			iov[i].iov_len = cuts[i + 1] - cuts[i];
		}
		sr_icrc_begin(&c, &f, len);
		/* the headers in two pieces too: the BTH mask must not depend on the split */
		sr_icrc_hdrs(&c, hdr, SR_BTH_LEN);
		sr_icrc_data(&c, hdr + SR_BTH_LEN, (size_t)h - SR_BTH_LEN);
		sr_icrc_datav(&c, iov, n);
		assert_int_equal(sr_roce_put_trailer(trl, plen, &c), tl);
		assert_int_equal(sr_icrc_get(trl + 3), whole);
	}
	free(dg);
	free(pl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),     cmocka_unit_test(test_zlib),
		cmocka_unit_test(test_reference),   cmocka_unit_test(test_paths),
		cmocka_unit_test(test_worked_ipv4),
		cmocka_unit_test(test_worked_input), cmocka_unit_test(test_worked_ipv6),
		cmocka_unit_test(test_iovec_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
