// SPDX-License-Identifier: MIT
/*
 * CRC-32C for MPA FPDUs. Two implementations of the same function: the x86
 * crc32 instruction (SSE4.2), and a portable slicing-by-8 table walk that
 * handles 8 input bytes per step with eight 1 KiB tables. The choice is made
 * once, on first use, from CPUID; both produce identical results and the
 * unit tests compare them.
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
__attribute__((target("sse4.2"))) static uint32_t
sr_crc32c_hw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, sizeof(v));
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}

static bool sr_crc32c_cpu_has_sse42(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return false;
	return (c & bit_SSE4_2) != 0;
}
#endif

static void sr_crc32c_init(void)
{
	sr_crc32c_fn fn = sr_crc32c_sw_raw;

	sr_crc32c_tab_init();
#if defined(__x86_64__)
	if (sr_crc32c_cpu_has_sse42())
		fn = sr_crc32c_hw_raw;
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
