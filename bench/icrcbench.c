// SPDX-License-Identifier: MIT
/*
 * icrcbench: throughput of the RoCE v2 ICRC (src/roce/icrc.h) next to memcpy. Four cases
 * per size: the CRC-32 as sr_crc32 computes it (PCLMULQDQ folding where the CPU has it),
 * its slicing-by-8 table path alone, a whole packet's ICRC as the transport will compute it
 * (pseudo-headers + 12-byte BTH + payload, sr_icrc_begin/hdrs/data/end), and memcpy of the
 * same bytes. Warm, cache-resident buffers; MB/s is 10^6 payload bytes/s.
 *
 *   cmake --build build --target icrcbench && build/bin/icrcbench [seconds-per-case]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "roce/icrc.h"
#include "roce/wire.h"

static volatile uint32_t keep;

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct sr_icrc_flow flow = {
	.family = AF_INET, .src = { 10, 0, 0, 1 }, .dst = { 10, 0, 0, 2 },
	.sport = 0xc132, .dport = SR_ROCE_UDP_PORT, .ipv4_df = true,
};

static void one_crc32(const uint8_t *src, uint8_t *dst, size_t n)
{
	keep = sr_crc32(keep, src, n);
}

static void one_table(const uint8_t *src, uint8_t *dst, size_t n)
{
	keep = sr_crc32_table(keep, src, n);
}

static void one_icrc(const uint8_t *src, uint8_t *dst, size_t n)
{
	static const uint8_t bth[SR_BTH_LEN] = { 0x04, 0, 0xff, 0xff, 0, 0, 0, 0x11 };
	struct sr_icrc c;

	sr_icrc_begin(&c, &flow, SR_BTH_LEN + n + SR_ROCE_ICRC_LEN);
	sr_icrc_hdrs(&c, bth, sizeof(bth));
	sr_icrc_data(&c, src, n);
	keep = sr_icrc_end(&c);
}

static void one_memcpy(const uint8_t *src, uint8_t *dst, size_t n)
{
	memcpy(dst, src, n);
	__asm__ volatile("" : : "r"(dst) : "memory");
}

/* MB/s of @fn over @n bytes, run for about @secs. */
static double mbps(void (*fn)(const uint8_t *, uint8_t *, size_t), const uint8_t *src,
		   uint8_t *dst, size_t n, double secs)
{
	uint64_t done = 0, step = 16;
	double start = mono(), el;

	do {
		for (uint64_t i = 0; i < step; i++)
			fn(src, dst, n);
		done += step;
		el = mono() - start;
		step += step / 2;
	} while (el < secs);
	return (double)done * (double)n / el / 1e6;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 256, 1024, 4096, 8192, 65536 };
	double secs = argc > 1 ? atof(argv[1]) : 0.3;
	uint8_t *src = aligned_alloc(64, 65536), *dst = aligned_alloc(64, 65536);

	if (!src || !dst || secs <= 0) {
		fprintf(stderr, "usage: icrcbench [seconds-per-case]\n");
		return 1;
	}
	for (size_t i = 0; i < 65536; i++)
		src[i] = (uint8_t)(i * 7 + (i >> 8));
	memset(dst, 0, 65536);
	printf("sr_crc32 path: %s\n", sr_crc32_folding() ? "pclmul folding" : "table");
	printf("%8s %14s %14s %14s %14s\n", "bytes", "sr_crc32", "table only", "packet ICRC",
	       "memcpy");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];

		printf("%8zu %9.0f MB/s %9.0f MB/s %9.0f MB/s %9.0f MB/s\n", n,
		       mbps(one_crc32, src, dst, n, secs), mbps(one_table, src, dst, n, secs),
		       mbps(one_icrc, src, dst, n, secs), mbps(one_memcpy, src, dst, n, secs));
	}
	free(src);
	free(dst);
	return 0;
}
