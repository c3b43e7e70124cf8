/* SPDX-License-Identifier: MIT */
/* Small helpers shared by every layer. */
#ifndef SR_COMMON_H
#define SR_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/sr_lock.h" /* sr_assert_held() for every _locked function */

/* Marks a function that leaves the shared library; the version script picks the node. */
#define SR_EXPORT __attribute__((visibility("default")))

#define sr_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define SR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define SR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SR_MAX(a, b) ((a) > (b) ? (a) : (b))
#define sr_likely(x) __builtin_expect(!!(x), 1)
#define sr_unlikely(x) __builtin_expect(!!(x), 0)

/* CLOCK_MONOTONIC in nanoseconds: deadlines and ages. */
static inline uint64_t sr_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
