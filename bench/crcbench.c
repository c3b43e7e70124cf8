// SPDX-License-Identifier: MIT
/*
 * crcbench: throughput of sr_crc32c() (the dispatched fast path),
 * sr_crc32c_sw() (slicing-by-8 table) and memcpy() for a few buffer sizes.
 * Each (function, size) pair is repeated for about 0.3 s over a warm,
 * cache-resident buffer; the result is printed in GB/s (10^9 bytes/s).
 *
 *   cmake --build build --target crcbench && build/bin/crcbench [seconds]
 */
#include "iwarp/crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Keeps results alive so the compiler cannot drop the work. */
static volatile uint32_t sink;

enum kind { K_HW, K_SW, K_MEMCPY };

static double run(enum kind k, uint8_t *src, uint8_t *dst, size_t len,
		  double secs)
{
	uint64_t iters = 0, batch = 1;
	uint32_t crc = 0;
	double t0 = now_s(), t;

	/* Grow the batch so clock reads stay a small part of the time. */
	for (;;) {
		for (uint64_t i = 0; i < batch; i++) {
			switch (k) {
			case K_HW:
				crc = sr_crc32c(crc, src, len);
				break;
			case K_SW:
				crc = sr_crc32c_sw(crc, src, len);
				break;
			case K_MEMCPY:
				memcpy(dst, src, len);
				__asm__ volatile("" : : "r"(dst) : "memory");
				break;
			}
		}
		iters += batch;
		t = now_s() - t0;
		if (t >= secs)
			break;
		if (t < secs / 16)
			batch *= 2;
	}
	sink = crc;
	return (double)iters * (double)len / t / 1e9;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 1024, 4096, 65536, 1 << 20 };
	double secs = argc > 1 ? atof(argv[1]) : 0.3;
	size_t max = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
	uint8_t *src = aligned_alloc(64, max), *dst = aligned_alloc(64, max);

	if (!src || !dst || secs <= 0) {
		fprintf(stderr, "usage: crcbench [seconds-per-case]\n");
		return 1;
	}
	for (size_t i = 0; i < max; i++)
		src[i] = (uint8_t)(i * 131 + (i >> 9));
	memset(dst, 0, max);

	printf("crc32c path: %s\n", sr_crc32c_hw() ? "hw (sse4.2)" : "table");
	printf("%10s %12s %12s %12s\n", "size", "sr_crc32c", "crc32c_sw",
	       "memcpy");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		double hw = run(K_HW, src, dst, n, secs);
		double sw = run(K_SW, src, dst, n, secs);
		double mc = run(K_MEMCPY, src, dst, n, secs);

		printf("%10zu %9.2f GB/s %7.2f GB/s %7.2f GB/s\n", n, hw, sw,
		       mc);
	}
	free(src);
	free(dst);
	return 0;
}
