/* SPDX-License-Identifier: MIT */
/*
 * Shared by the fuzz harnesses: the abort-on-violation check, memory surrounded by guard
 * pages, and the CRC repair that lets a mutated FPDU stream get past the MPA CRC check.
 */
#ifndef SR_FUZZ_UTIL_H
#define SR_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"

/* A broken invariant is a finding: libFuzzer and the replay driver both stop on abort(). */
#define CHECK(c)                                                                          \
	do {                                                                              \
		if (!(c)) {                                                               \
			fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__,        \
				__LINE__, #c);                                            \
			abort();                                                          \
		}                                                                         \
	} while (0)

static inline uint64_t fz_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * A blocking TCP socket connected to @sa. Thousands of connections a second to one port leave
 * old 4-tuples in TIME_WAIT; now and then the kernel picks a local port whose old tuple still
 * is, and the connect fails: another local port does it. Only a hundred failures in a row
 * are a finding.
 */
static inline int fz_connect(const struct sockaddr *sa, socklen_t len)
{
	for (int tries = 0;; tries++) {
		int s = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		CHECK(s >= 0);
		if (connect(s, sa, len) == 0)
			return s;
		if (tries == 100) {
			perror("fuzz: connect to the harness's listener");
			abort();
		}
		close(s);
	}
}

/*
 * @len bytes (rounded up to pages) with an inaccessible page on each side, so that a read or
 * write just outside faults at once, in the library's code or in the kernel (EFAULT), with or
 * without ASan. Never freed: harnesses allocate their regions once.
 */
static inline uint8_t *fz_guarded(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t body = (len + pg - 1) / pg * pg;
	uint8_t *p = mmap(NULL, body + 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	CHECK(mprotect(p + pg, body, PROT_READ | PROT_WRITE) == 0);
	return p + pg;
}

/*
 * Give every whole FPDU of the stream @s a correct MPA CRC (pad bytes zeroed), walking the
 * ULPDU_Length fields from the start. Random mutation almost never gets a CRC right, so
 * without this the fuzzer would stay in the CRC check; a trailing partial FPDU is left alone.
 */
static inline void fz_fix_crcs(uint8_t *s, size_t len)
{
	size_t pos = 0;

	while (len - pos >= SR_MPA_LEN_SIZE) {
		uint16_t ulpdu = sr_get_be16(s + pos);
		size_t whole = sr_mpa_fpdu_len(ulpdu);
		uint32_t crc;

		if (whole > len - pos)
			return;
		crc = sr_crc32c(0, s + pos, SR_MPA_LEN_SIZE + (size_t)ulpdu);
		sr_fpdu_put_trailer(s + pos + SR_MPA_LEN_SIZE + ulpdu, ulpdu, crc, true);
		pos += whole;
	}
}

#endif
