// SPDX-License-Identifier: MIT
/* Bounded reading and dropping of unwanted input (see sr_drain.h). */
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/sr_drain.h"

enum sr_drain_result sr_drain(int fd)
{
	uint8_t scratch[SR_DRAIN_CHUNK];

	/* Every call counts, an interrupted one too: the bound is on system calls as well. */
	for (unsigned int i = 0; i < SR_DRAIN_MAX / SR_DRAIN_CHUNK; i++) {
		ssize_t n = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return SR_DRAIN_EMPTY;
		return SR_DRAIN_END;
	}
	return SR_DRAIN_MORE;
}
