/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the RoCE wire unit tests: hex text to bytes and a reproducible pseudo-random
 * byte source (xorshift64*, the generator the zlib values of test_roce_icrc.c were made
 * with).
 */
#ifndef SR_TESTS_ROCE_TEST_H
#define SR_TESTS_ROCE_TEST_H

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>

static uint64_t roce_rnd_state;

static inline void roce_rnd_seed(void)
{
	roce_rnd_state = 0x9E3779B97F4A7C15ull;
}

static inline uint64_t roce_rnd(void)
{
	uint64_t x = roce_rnd_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	roce_rnd_state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* @n bytes, each the top byte of one roce_rnd(); free() it. */
static inline uint8_t *roce_rnd_buf(size_t n)
{
	uint8_t *b = malloc(n ? n : 1);

	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(roce_rnd() >> 56);
	return b;
}

/* Pairs of hex digits, anything else skipped: "04 30 ff" gives 3 bytes. */
static inline size_t roce_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int d;

		if (!isxdigit((unsigned char)*s))
			continue;
		d = isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10);
		if (hi < 0) {
			hi = d;
			continue;
		}
		assert_true(n < cap);
		out[n++] = (uint8_t)(hi << 4 | d);
		hi = -1;
	}
	assert_true(hi < 0);
	return n;
}

#endif
