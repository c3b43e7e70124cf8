/* SPDX-License-Identifier: MIT */
/*
 * Error exits shared by the benchmarks. The including file declares
 *	static const char *g_role;
 * (the name printed before every message; a program of several files declares it extern)
 * before including this header.
 */
#ifndef SR_BENCH_UTIL_H
#define SR_BENCH_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", g_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* A call that returns -1 and sets errno (rdma_*, socket calls). */
#define CHECK(call)                                                                          \
	do {                                                                                 \
		if ((call) < 0)                                                              \
			die("%s failed: errno %d (%s)", #call, errno, strerror(errno));      \
	} while (0)

/* A call that returns 0 or an errno value (ibv_post_*, ibv_req_notify_cq, ...). */
#define CHECK_RET(call)                                                                      \
	do {                                                                                 \
		int rc_ = (call);                                                            \
		if (rc_ != 0)                                                                \
			die("%s failed: returned %d (%s), errno %d", #call, rc_,             \
			    strerror(rc_ > 0 ? rc_ : errno), errno);                         \
	} while (0)

/* A call that returns a pointer, NULL with errno on failure. */
#define CHECK_PTR(var, call)                                                                 \
	do {                                                                                 \
		(var) = (call);                                                              \
		if (!(var))                                                                  \
			die("%s failed: errno %d (%s)", #call, errno, strerror(errno));      \
	} while (0)

#endif
