// SPDX-License-Identifier: MIT
/*
 * Waiting for a TCP socket's state (TCP_INFO), shared by the unit and integration tests: a
 * raw peer learns this way that our side closed or reset the connection, without a sleep.
 */
#ifndef SR_TESTS_TCP_WAIT_H
#define SR_TESTS_TCP_WAIT_H

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* True once fd's TCP state is `state` (e.g. TCP_CLOSE: it got a reset), false after ms. */
static inline bool tcp_reaches(int fd, int state, long ms)
{
	struct timespec ts;
	int64_t end;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
	for (;;) {
		struct tcp_info ti = { 0 };
		socklen_t len = sizeof(ti);

		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
		    ti.tcpi_state == state)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 >= end)
			return false;
		usleep(1000);
	}
}

#endif
