/* SPDX-License-Identifier: MIT */
/*
 * 24-bit packet sequence numbers (IBTA vol 1 §9.7.1): they count modulo 2^24, and one PSN
 * is before another when it is less than 2^23 steps behind it. Both ends of an RC
 * connection keep far fewer than 2^23 PSNs outstanding, so the comparison is unambiguous.
 * docs/WIRE.md §R10.
 */
#ifndef SR_ROCE_PSN_H
#define SR_ROCE_PSN_H

#include <stdbool.h>
#include <stdint.h>

#define SR_PSN_MASK 0xffffffu
#define SR_PSN_HALF 0x800000u

/* @psn + @n modulo 2^24. */
static inline uint32_t sr_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & SR_PSN_MASK;
}

/* Signed distance from @b to @a in [-2^23, 2^23): > 0 when @a is after @b. */
static inline int32_t sr_psn_diff(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & SR_PSN_MASK;

	return d >= SR_PSN_HALF ? (int32_t)d - (int32_t)(SR_PSN_MASK + 1) : (int32_t)d;
}

static inline bool sr_psn_before(uint32_t a, uint32_t b)
{
	return sr_psn_diff(a, b) < 0;
}

/* True when @psn is one of the @n PSNs starting at @start (wrapping). */
static inline bool sr_psn_in(uint32_t psn, uint32_t start, uint32_t n)
{
	return ((psn - start) & SR_PSN_MASK) < n;
}

#endif
