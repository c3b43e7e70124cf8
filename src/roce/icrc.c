// SPDX-License-Identifier: MIT
/*
 * CRC-32 and the RoCE v2 ICRC on top of it. Two implementations of the same CRC: a
 * slicing-by-8 table walk everywhere, and on x86-64 CPUs with PCLMULQDQ a folding loop
 * that multiplies 16-byte blocks forward (carry-less) instead of feeding them bit by bit,
 * chosen once at first use. The pseudo-headers are built in a 56-byte buffer (8 bytes of
 * LRH stand-in + 40 IPv6 or 20 IPv4 + 8 UDP) and run through the same CRC as the rest.
 */
#include "roce/icrc.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "roce/wire.h"

#define SR_CRC32_POLY 0xedb88320u

/*
 * slice[0] is the byte-at-a-time table; slice[k][b] is the register contribution of
 * byte b followed by k zero bytes, so one step folds 8 input bytes with 8 lookups.
 */
static uint32_t slice[8][256];
static pthread_once_t slice_once = PTHREAD_ONCE_INIT; /* tables and the choice of path */

static void slice_build(void)
{
	for (unsigned int b = 0; b < 256; b++) {
		uint32_t r = b;

		for (int bit = 0; bit < 8; bit++)
			r = r & 1 ? (r >> 1) ^ SR_CRC32_POLY : r >> 1;
		slice[0][b] = r;
	}
	for (int k = 1; k < 8; k++)
		for (unsigned int b = 0; b < 256; b++)
			slice[k][b] = (slice[k - 1][b] >> 8) ^ slice[0][slice[k - 1][b] & 0xff];
}

static inline uint32_t le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* On the raw register; the tables are built. */
static uint32_t crc32_table(uint32_t r, const uint8_t *p, size_t n)
{
	for (; n && ((uintptr_t)p & 3); n--)
		r = slice[0][(r ^ *p++) & 0xff] ^ (r >> 8);
	for (; n >= 8; n -= 8, p += 8) {
		uint32_t a = r ^ le32_at(p), b = le32_at(p + 4);

		r = slice[7][a & 0xff] ^ slice[6][(a >> 8) & 0xff] ^
		    slice[5][(a >> 16) & 0xff] ^ slice[4][a >> 24] ^ slice[3][b & 0xff] ^
		    slice[2][(b >> 8) & 0xff] ^ slice[1][(b >> 16) & 0xff] ^ slice[0][b >> 24];
	}
	for (; n; n--)
		r = slice[0][(r ^ *p++) & 0xff] ^ (r >> 8);
	return r;
}

#if defined(__x86_64__)
/*
 * Folding. Load 16 message bytes little-endian into a 128-bit lane: bit j (j = 0 is the
 * first bit on the wire, the LSB of byte 0) is the coefficient of x^(127-j), so the low
 * qword A and the high qword B of a lane stand for A(x)·x^64 + B(x), each 64-bit half
 * "reflected" (bit i holds x^(63-i)). A carry-less product of two such reflected halves,
 * read in the lane's convention, is their polynomial product times x. Moving a lane D
 * bits further down the message multiplies it by x^D, and modulo P that is
 *   A·x^(64+D) + B·x^D  ==  A·K1·x + B·K2·x   with K1 = x^(D+63) mod P, K2 = x^(D-1) mod P,
 * two products of degree < 96 that are XORed into the lane D bits on. The CRC register
 * after a message is (message)·x^32 mod P, so once everything is folded into the last
 * full lane, the table CRC of those 16 bytes from a zero register gives the register for
 * all of it; the table finishes the tail. Four lanes run side by side (D = 512), then fold
 * into one (D = 128).
 */
#define FOLD_TARGET __attribute__((target("sse2,pclmul")))

/* K for a distance of D bits: lo qword x^(D+63) mod P, hi qword x^(D-1) mod P. */
static __m128i fold_k128, fold_k512;

/* x^e mod P in the high half of a reflected qword (bit 63 - d holds x^d). */
static uint64_t xpow_hi(unsigned int e)
{
	uint32_t r = 0x80000000u; /* x^0, bit 31 - d holds x^d */

	while (e--)
		r = r & 1 ? (r >> 1) ^ SR_CRC32_POLY : r >> 1;
	return (uint64_t)r << 32;
}

static void fold_init(void)
{
	fold_k128 = _mm_set_epi64x((long long)xpow_hi(127), (long long)xpow_hi(191));
	fold_k512 = _mm_set_epi64x((long long)xpow_hi(511), (long long)xpow_hi(575));
}

FOLD_TARGET static inline __m128i fold(__m128i v, __m128i k, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(v, k, 0x00),
					   _mm_clmulepi64_si128(v, k, 0x11)),
			     next);
}

FOLD_TARGET static uint32_t crc32_fold(uint32_t r, const uint8_t *p, size_t n)
{
	const __m128i *q = (const __m128i *)p;
	__m128i a, b, c, d;
	uint8_t last[16];

	if (n < 64)
		return crc32_table(r, p, n);
	a = _mm_xor_si128(_mm_loadu_si128(q), _mm_cvtsi32_si128((int)r));
	b = _mm_loadu_si128(q + 1);
	c = _mm_loadu_si128(q + 2);
	d = _mm_loadu_si128(q + 3);
	for (q += 4, n -= 64; n >= 64; q += 4, n -= 64) {
		a = fold(a, fold_k512, _mm_loadu_si128(q));
		b = fold(b, fold_k512, _mm_loadu_si128(q + 1));
		c = fold(c, fold_k512, _mm_loadu_si128(q + 2));
		d = fold(d, fold_k512, _mm_loadu_si128(q + 3));
	}
	b = fold(a, fold_k128, b);
	c = fold(b, fold_k128, c);
	d = fold(c, fold_k128, d);
	for (; n >= 16; q++, n -= 16)
		d = fold(d, fold_k128, _mm_loadu_si128(q));
	_mm_storeu_si128((__m128i *)last, d);
	return crc32_table(crc32_table(0, last, sizeof(last)), (const uint8_t *)q, n);
}

static bool cpu_has_pclmul(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_PCLMUL) && (d & bit_SSE2);
}
#endif

typedef uint32_t (*crc32_fn)(uint32_t r, const uint8_t *p, size_t n);
static crc32_fn crc32_best = crc32_table;

static void crc32_setup(void)
{
	slice_build();
#if defined(__x86_64__)
	if (cpu_has_pclmul()) {
		fold_init();
		crc32_best = crc32_fold;
	}
#endif
}

/* On the raw register, fastest path. */
static uint32_t crc32_raw(uint32_t r, const uint8_t *p, size_t n)
{
	pthread_once(&slice_once, crc32_setup);
	return crc32_best(r, p, n);
}

uint32_t sr_crc32(uint32_t crc, const void *buf, size_t len)
{
	return ~crc32_raw(~crc, buf, len);
}

uint32_t sr_crc32_table(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&slice_once, crc32_setup);
	return ~crc32_table(~crc, buf, len);
}

bool sr_crc32_folding(void)
{
	pthread_once(&slice_once, crc32_setup);
	return crc32_best != crc32_table;
}

/* LRH stand-in (8) + IPv6 (40) + UDP (8), the longest pseudo-header. */
#define PSEUDO_MAX 56
#define IPV4_HLEN 20
#define IPV6_HLEN 40
#define UDP_HLEN 8

void sr_icrc_begin(struct sr_icrc *c, const struct sr_icrc_flow *f, size_t udp_payload_len)
{
	uint8_t h[PSEUDO_MAX], *ip = h + 8, *udp;
	uint16_t udp_len = (uint16_t)(UDP_HLEN + udp_payload_len);

	memset(h, 0xff, 8);
	if (f->family == AF_INET6) {
		/* version 6, traffic class and flow label all 1s */
		ip[0] = 0x6f;
		ip[1] = ip[2] = ip[3] = 0xff;
		sr_put_be16(ip + 4, udp_len);	/* payload length */
		ip[6] = 17;			/* next header: UDP */
		ip[7] = 0xff;			/* hop limit, masked */
		memcpy(ip + 8, f->src, 16);
		memcpy(ip + 24, f->dst, 16);
		udp = ip + IPV6_HLEN;
	} else {
		ip[0] = 0x45;			/* version 4, IHL 5: no options */
		ip[1] = 0xff;			/* TOS, masked */
		sr_put_be16(ip + 2, (uint16_t)(IPV4_HLEN + udp_len));
		sr_put_be16(ip + 4, f->ipv4_id);
		sr_put_be16(ip + 6, f->ipv4_df ? 0x4000 : 0);	/* flags, fragment offset 0 */
		ip[8] = 0xff;			/* TTL, masked */
		ip[9] = 17;			/* protocol: UDP */
		ip[10] = ip[11] = 0xff;		/* header checksum, masked */
		memcpy(ip + 12, f->src, 4);
		memcpy(ip + 16, f->dst, 4);
		udp = ip + IPV4_HLEN;
	}
	sr_put_be16(udp, f->sport);
	sr_put_be16(udp + 2, f->dport);
	sr_put_be16(udp + 4, udp_len);
	udp[6] = udp[7] = 0xff;			/* checksum, masked */
	c->reg = crc32_raw(0xffffffffu, h, (size_t)(udp + UDP_HLEN - h));
}

void sr_icrc_hdrs(struct sr_icrc *c, const uint8_t *hdr, size_t len)
{
	static const uint8_t ones = 0xff;
	const size_t m = SR_BTH_ICRC_MASKED_OFF;

	if (len <= m) {
		c->reg = crc32_raw(c->reg, hdr, len);
		return;
	}
	c->reg = crc32_raw(c->reg, hdr, m);
	c->reg = crc32_raw(c->reg, &ones, 1);
	c->reg = crc32_raw(c->reg, hdr + m + 1, len - m - 1);
}

void sr_icrc_data(struct sr_icrc *c, const void *p, size_t len)
{
	c->reg = crc32_raw(c->reg, p, len);
}

void sr_icrc_datav(struct sr_icrc *c, const struct iovec *iov, size_t cnt)
{
	for (size_t i = 0; i < cnt; i++)
		c->reg = crc32_raw(c->reg, iov[i].iov_base, iov[i].iov_len);
}

uint32_t sr_icrc_end(const struct sr_icrc *c)
{
	return ~c->reg;
}

uint32_t sr_roce_icrc(const struct sr_icrc_flow *f, const uint8_t *buf, size_t len)
{
	struct sr_icrc c;

	sr_icrc_begin(&c, f, len);
	sr_icrc_hdrs(&c, buf, len > SR_ROCE_ICRC_LEN ? len - SR_ROCE_ICRC_LEN : 0);
	return sr_icrc_end(&c);
}

bool sr_roce_icrc_verify(const struct sr_icrc_flow *f, const uint8_t *buf, size_t len)
{
	if (len < SR_BTH_LEN + SR_ROCE_ICRC_LEN)
		return false;
	return sr_roce_icrc(f, buf, len) == sr_icrc_get(buf + len - SR_ROCE_ICRC_LEN);
}
