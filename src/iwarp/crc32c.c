// SPDX-License-Identifier: MIT
/*
 * CRC-32C for MPA FPDUs. Three implementations of the same function: the x86
 * crc32 instruction (SSE4.2) in several independent streams whose partial
 * CRCs are combined with PCLMULQDQ; the crc32 instruction in a single chain
 * (SSE4.2 without PCLMULQDQ); and a portable slicing-by-8 table walk that
 * handles 8 input bytes per step with eight 1 KiB tables. The choice is made
 * once, on first use, from CPUID; all produce identical results and the
 * unit tests compare them with each other and with a bitwise reference.
 */
#include "iwarp/crc32c.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* Reflected form of the Castagnoli polynomial 0x1EDC6F41. */
#define SR_CRC32C_POLY_REFLECTED 0x82f63b78u

/*
 * sr_crc32c_tab[0] is the classic byte-at-a-time table; table k gives the
 * contribution of a byte that still has k more bytes to travel through the
 * register, so eight lookups fold eight bytes at once.
 */
static uint32_t sr_crc32c_tab[8][256];
static pthread_once_t sr_crc32c_once = PTHREAD_ONCE_INIT;

typedef uint32_t (*sr_crc32c_fn)(uint32_t crc, const uint8_t *p, size_t len);
static _Atomic(sr_crc32c_fn) sr_crc32c_impl;

static void sr_crc32c_tab_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int b = 0; b < 8; b++)
			c = (c >> 1) ^ ((c & 1) ? SR_CRC32C_POLY_REFLECTED : 0);
		sr_crc32c_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = sr_crc32c_tab[0][i];

		for (int k = 1; k < 8; k++) {
			c = (c >> 8) ^ sr_crc32c_tab[0][c & 0xff];
			sr_crc32c_tab[k][i] = c;
		}
	}
}

/* Works on the raw (inverted) register; callers handle the inversion. */
static uint32_t sr_crc32c_sw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
	const uint32_t(*t)[256] = (const uint32_t(*)[256])sr_crc32c_tab;

	while (len && ((uintptr_t)p & 7)) {
		crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		/* Byte-wise assembly keeps this correct on big-endian hosts. */
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				     (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);

		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
		      t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
		      t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
/*
 * Hardware path. The crc32 instruction has a latency of about 3 cycles but
 * the CPU can start one (Intel) or two (recent AMD) per cycle, so a single
 * dependency chain leaves most of it idle. For long buffers we therefore run
 * several independent chains over adjacent blocks of a stripe: stream 0
 * continues the caller's CRC over block 0, streams 1..n-1 start from a zero
 * register over blocks 1..n-1. The raw register is linear in the data, so
 * the register for the whole stripe is
 *
 *   R = shift(r0, (n-1)*B) ^ shift(r1, (n-2)*B) ^ ... ^ r(n-1),
 *
 * where shift(r, m) is the register after m zero bytes: r(x) * x^(8m) mod P.
 * With PCLMULQDQ that is one carry-less multiply by the constant
 * K = x^(8m-33) mod P and one crc32q of the 64-bit product: the product of
 * two reflected 32-bit values is a reflected 63-bit value, i.e. r*K*x as a
 * 64-bit crc32 operand, and crc32q(0, v) computes v(x) * x^32 mod P; together
 * r * x^(8m-33) * x * x^32 = r * x^(8m). The products of all streams are
 * XORed before the single crc32q. Stripe sizes are fixed (three tiers, see
 * below), so only a handful of K constants are needed; they are computed at
 * init.
 */
#include <immintrin.h>

#define SR_CRC_HW_TARGET __attribute__((target("sse4.2")))
#define SR_CRC_CLMUL_TARGET __attribute__((target("sse4.2,pclmul")))

/*
 * Stripe tiers: streams x block bytes (block sizes are multiples of 8). Six
 * streams keep two crc32 units busy (AMD Zen issues two per cycle; on Intel,
 * one per cycle, three would do and six cost nothing extra). Long buffers go
 * through 6 KiB stripes, the rest through 768-byte and then 96-byte ones;
 * what is left (< 96 bytes) takes the single chain. Tuned with
 * bench/crcbench on an AMD EPYC.
 */
#define SR_CRC_T1_N 6
#define SR_CRC_T1_B 1024
#define SR_CRC_T2_N 6
#define SR_CRC_T2_B 128
#define SR_CRC_T3_N 3
#define SR_CRC_T3_B 32
/* sr_crc_kT[j] shifts a register over j blocks of tier T, j = 1..N-1. */
static uint64_t sr_crc_k1[SR_CRC_T1_N];
static uint64_t sr_crc_k2[SR_CRC_T2_N];
static uint64_t sr_crc_k3[SR_CRC_T3_N];

/* x^e mod P as a reflected 32-bit value (bit 31 - i holds x^i). */
static uint32_t sr_crc32c_xpow(uint64_t e)
{
	uint32_t r = 0x80000000u; /* x^0 */

	while (e--)
		r = (r >> 1) ^ ((r & 1) ? SR_CRC32C_POLY_REFLECTED : 0);
	return r;
}

static void sr_crc32c_k_init(uint64_t *k, int n, uint64_t block)
{
	for (int j = 1; j < n; j++)
		k[j] = sr_crc32c_xpow(8 * block * (uint64_t)j - 33);
	k[0] = 0;
}

SR_CRC_HW_TARGET static inline uint32_t sr_crc32c_hw_small(uint32_t c,
							   const uint8_t *p,
							   size_t len)
{
	uint64_t c64 = c;

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, sizeof(v));
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		len -= 8;
	}
	c = (uint32_t)c64;
	if (len & 4) {
		uint32_t v;

		memcpy(&v, p, sizeof(v));
		c = __builtin_ia32_crc32si(c, v);
		p += 4;
	}
	if (len & 2) {
		uint16_t v;

		memcpy(&v, p, sizeof(v));
		c = __builtin_ia32_crc32hi(c, v);
		p += 2;
	}
	if (len & 1)
		c = __builtin_ia32_crc32qi(c, *p);
	return c;
}

/* Single chain, for CPUs with SSE4.2 but without PCLMULQDQ. */
SR_CRC_HW_TARGET static uint32_t sr_crc32c_hw_raw(uint32_t crc,
						  const uint8_t *p, size_t len)
{
	return sr_crc32c_hw_small(crc, p, len);
}

static inline uint64_t sr_crc_ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* r * K as a 64-bit crc32 operand (see above). */
SR_CRC_CLMUL_TARGET static inline uint64_t sr_crc_clmul(uint64_t r,
							 uint64_t k)
{
	__m128i a = _mm_cvtsi64_si128((long long)r);
	__m128i b = _mm_cvtsi64_si128((long long)k);

	return (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(a, b, 0x00));
}

/*
 * One stripe of 3 blocks of @B bytes; @B is a compile-time constant after
 * inlining, so the loads use fixed displacements.
 */
SR_CRC_CLMUL_TARGET static inline __attribute__((always_inline)) uint64_t
sr_crc_stripe3(uint64_t c0, const uint8_t *p, size_t B, const uint64_t *k)
{
	uint64_t c1 = 0, c2 = 0;

	for (size_t i = 0; i < B; i += 8) {
		c0 = __builtin_ia32_crc32di(c0, sr_crc_ld64(p + i));
		c1 = __builtin_ia32_crc32di(c1, sr_crc_ld64(p + B + i));
		c2 = __builtin_ia32_crc32di(c2, sr_crc_ld64(p + 2 * B + i));
	}
	return __builtin_ia32_crc32di(0, sr_crc_clmul(c0, k[2]) ^
					       sr_crc_clmul(c1, k[1])) ^
	       c2;
}

SR_CRC_CLMUL_TARGET static inline __attribute__((always_inline)) uint64_t
sr_crc_stripe6(uint64_t c0, const uint8_t *p, size_t B, const uint64_t *k)
{
	uint64_t c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0;

	for (size_t i = 0; i < B; i += 8) {
		c0 = __builtin_ia32_crc32di(c0, sr_crc_ld64(p + i));
		c1 = __builtin_ia32_crc32di(c1, sr_crc_ld64(p + B + i));
		c2 = __builtin_ia32_crc32di(c2, sr_crc_ld64(p + 2 * B + i));
		c3 = __builtin_ia32_crc32di(c3, sr_crc_ld64(p + 3 * B + i));
		c4 = __builtin_ia32_crc32di(c4, sr_crc_ld64(p + 4 * B + i));
		c5 = __builtin_ia32_crc32di(c5, sr_crc_ld64(p + 5 * B + i));
	}
	return __builtin_ia32_crc32di(
		       0, sr_crc_clmul(c0, k[5]) ^ sr_crc_clmul(c1, k[4]) ^
				  sr_crc_clmul(c2, k[3]) ^
				  sr_crc_clmul(c3, k[2]) ^
				  sr_crc_clmul(c4, k[1])) ^
	       c5;
}

/* Tier stream counts are constants, so this folds to one call. */
_Static_assert((SR_CRC_T1_N == 3 || SR_CRC_T1_N == 6) &&
		       (SR_CRC_T2_N == 3 || SR_CRC_T2_N == 6) &&
		       (SR_CRC_T3_N == 3 || SR_CRC_T3_N == 6),
	       "stripes have 3 or 6 streams");
_Static_assert(SR_CRC_T1_B % 8 == 0 && SR_CRC_T2_B % 8 == 0 &&
		       SR_CRC_T3_B % 8 == 0 && SR_CRC_T3_B >= 8,
	       "blocks are whole 8-byte words");
#define SR_CRC_STRIPE(n, c, p, b, k)                                        \
	((n) == 6 ? sr_crc_stripe6((c), (p), (b), (k))                     \
		  : sr_crc_stripe3((c), (p), (b), (k)))

/* Below this many bytes a single chain is used; the smallest stripe. */
#define SR_CRC_MULTI_MIN (SR_CRC_T3_N * SR_CRC_T3_B)

SR_CRC_CLMUL_TARGET static uint32_t
sr_crc32c_clmul_raw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c;

	if (len < SR_CRC_MULTI_MIN)
		return sr_crc32c_hw_small(crc, p, len);
	/* Align to 8 with at most three steps. */
	if ((uintptr_t)p & 1) {
		crc = __builtin_ia32_crc32qi(crc, *p);
		p++;
		len--;
	}
	if ((uintptr_t)p & 2) {
		uint16_t v;

		memcpy(&v, p, sizeof(v));
		crc = __builtin_ia32_crc32hi(crc, v);
		p += 2;
		len -= 2;
	}
	if ((uintptr_t)p & 4) {
		uint32_t v;

		memcpy(&v, p, sizeof(v));
		crc = __builtin_ia32_crc32si(crc, v);
		p += 4;
		len -= 4;
	}
	c = crc;
	while (len >= SR_CRC_T1_N * SR_CRC_T1_B) {
		c = SR_CRC_STRIPE(SR_CRC_T1_N, c, p, SR_CRC_T1_B, sr_crc_k1);
		p += SR_CRC_T1_N * SR_CRC_T1_B;
		len -= SR_CRC_T1_N * SR_CRC_T1_B;
	}
	while (len >= SR_CRC_T2_N * SR_CRC_T2_B) {
		c = SR_CRC_STRIPE(SR_CRC_T2_N, c, p, SR_CRC_T2_B, sr_crc_k2);
		p += SR_CRC_T2_N * SR_CRC_T2_B;
		len -= SR_CRC_T2_N * SR_CRC_T2_B;
	}
	while (len >= SR_CRC_T3_N * SR_CRC_T3_B) {
		c = SR_CRC_STRIPE(SR_CRC_T3_N, c, p, SR_CRC_T3_B, sr_crc_k3);
		p += SR_CRC_T3_N * SR_CRC_T3_B;
		len -= SR_CRC_T3_N * SR_CRC_T3_B;
	}
	return sr_crc32c_hw_small((uint32_t)c, p, len);
}

static void sr_crc32c_cpu_features(bool *sse42, bool *pclmul)
{
	unsigned int a, b, c, d;

	*sse42 = *pclmul = false;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return;
	*sse42 = (c & bit_SSE4_2) != 0;
	*pclmul = (c & bit_PCLMUL) != 0;
}
#endif

static void sr_crc32c_init(void)
{
	sr_crc32c_fn fn = sr_crc32c_sw_raw;

	sr_crc32c_tab_init();
#if defined(__x86_64__)
	bool sse42, pclmul;

	sr_crc32c_cpu_features(&sse42, &pclmul);
	if (sse42 && pclmul) {
		sr_crc32c_k_init(sr_crc_k1, SR_CRC_T1_N, SR_CRC_T1_B);
		sr_crc32c_k_init(sr_crc_k2, SR_CRC_T2_N, SR_CRC_T2_B);
		sr_crc32c_k_init(sr_crc_k3, SR_CRC_T3_N, SR_CRC_T3_B);
		fn = sr_crc32c_clmul_raw;
	} else if (sse42) {
		fn = sr_crc32c_hw_raw;
	}
#endif
	atomic_store_explicit(&sr_crc32c_impl, fn, memory_order_release);
}

static sr_crc32c_fn sr_crc32c_get_impl(void)
{
	sr_crc32c_fn fn;

	fn = atomic_load_explicit(&sr_crc32c_impl, memory_order_acquire);
	if (__builtin_expect(fn == NULL, 0)) {
		pthread_once(&sr_crc32c_once, sr_crc32c_init);
		fn = atomic_load_explicit(&sr_crc32c_impl,
					  memory_order_acquire);
	}
	return fn;
}

uint32_t sr_crc32c(uint32_t crc, const void *buf, size_t len)
{
	sr_crc32c_fn fn = sr_crc32c_get_impl();

	return ~fn(~crc, buf, len);
}

uint32_t sr_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&sr_crc32c_once, sr_crc32c_init);
	return ~sr_crc32c_sw_raw(~crc, buf, len);
}

bool sr_crc32c_hw(void)
{
	return sr_crc32c_get_impl() != sr_crc32c_sw_raw;
}
