// SPDX-License-Identifier: MIT
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sr_common.h"
#include "sr_config.h"
#include "sr_tunables.h"

/*
 * The one table of tunables. Keep docs/CONFIG.md in step (a test compares them).
 *
 * SR_SECURE marks a tunable that names a path or weakens a check: it is read with
 * secure_getenv, so a set-user-ID or set-group-ID program (or one that gained capabilities)
 * ignores it and uses the default. Otherwise whoever starts such a program, linked against
 * our libraries, would choose a file it appends to with the program's rights, or turn off a
 * check its connections rely on.
 */
#define SR_SECURE true
static const struct sr_tunable sr_tunables[] = {
	{ "SOFTRDMA_LOG_LEVEL", "0",
	  "Library log level: 0 silent, 1 errors, 2 warnings, 3 info, 4 debug.", !SR_SECURE },
	{ "SOFTRDMA_LOG_FILE", "",
	  "Append log lines to this file instead of stderr; a final symbolic link is refused, "
	  "a new file gets mode 0600; ignored in set-user-ID and set-group-ID programs.",
	  SR_SECURE },
	{ "SOFTRDMA_DEVICE_PREFIX", "sriw_",
	  "Prefix of soft iWARP device names; the interface name follows it.", !SR_SECURE },
	{ "SOFTRDMA_MPA_CRC", "1",
	  "Ask for MPA CRC32c on connections we start or accept (1) or not (0). "
	  "CRC is used whenever either side asks for it; ignored in set-user-ID and "
	  "set-group-ID programs.",
	  SR_SECURE },
	{ "SOFTRDMA_MPA_REV", "2",
	  "MPA revision offered by the initiator (2 = RFC 6581 enhanced, 1 = RFC 5044).",
	  !SR_SECURE },
	{ "SOFTRDMA_MPA_RTR", "read",
	  "RTR forms the initiator offers in its peer-to-peer MPA Request: a comma-separated "
	  "list of read, write, send (or all); the responder picks one of them. Only the "
	  "zero-length Read is answered, so only with it does the initiator learn when the "
	  "peer is ready; an invalid list offers read.", !SR_SECURE },
	{ "SOFTRDMA_ACCEPT_TIMEOUT_MS", SR_TUNABLE_STR(SR_DEFAULT_ACCEPT_TIMEOUT_MS),
	  "How long an initiator whose MPA Request is out waits for the Reply, and how long a "
	  "connect request may wait for the application's rdma_accept or rdma_reject; 1 to "
	  "600000.", !SR_SECURE },
	{ "SOFTRDMA_CLOSE_TIMEOUT_MS", SR_TUNABLE_STR(SR_DEFAULT_CLOSE_TIMEOUT_MS),
	  "How long rdma_disconnect's orderly close (queued sends, FIN, the peer's FIN) may take "
	  "before the stream is aborted; 1 to 600000.", !SR_SECURE },
	{ "SOFTRDMA_TERM_TIMEOUT_MS", SR_TUNABLE_STR(SR_DEFAULT_TERM_TIMEOUT_MS),
	  "How long a Terminate may wait for room in a full socket before the stream is "
	  "aborted; 1 to 600000.", !SR_SECURE },
	{ "SOFTRDMA_POLL_LEASE_US", SR_TUNABLE_STR(SR_DEFAULT_POLL_LEASE_US),
	  "How long a connection's input stays with a thread busy-polling a CQ after its last "
	  "poll before the engine thread takes it back; 0 turns progress from ibv_poll_cq off, "
	  "at most 60000000.", !SR_SECURE },
	{ "SOFTRDMA_ROCED", "",
	  "Path of softrdma-roced, the RoCE demultiplexer a process starts when it opens its "
	  "first soft RoCE device (default: next to libibverbs); ignored in set-user-ID and "
	  "set-group-ID programs.", SR_SECURE },
	{ "SOFTRDMA_ROCED_LINGER_MS", "1000",
	  "How long softrdma-roced stays after its last client has gone; 1 to 600000.",
	  !SR_SECURE },
	{ "SOFTRDMA_ROCE_UDP_PORT", "4791",
	  "UDP port of soft RoCE (RoCE v2: 4791); another value is for tests and benchmarks "
	  "and does not interoperate.", !SR_SECURE },
};

const struct sr_tunable *sr_config_table(unsigned int *count)
{
	*count = SR_ARRAY_SIZE(sr_tunables);
	return sr_tunables;
}

const char *sr_config_str(const char *name)
{
	for (unsigned int i = 0; i < SR_ARRAY_SIZE(sr_tunables); i++) {
		if (strcmp(sr_tunables[i].name, name) == 0) {
			const char *v = sr_tunables[i].secure ? secure_getenv(name) : getenv(name);

			return v ? v : sr_tunables[i].def;
		}
	}
	return NULL;
}

bool sr_config_withheld(const char *name)
{
	const char *v = getenv(name);

	return v && *v && !secure_getenv(name);
}

long sr_config_long(const char *name)
{
	const char *v = sr_config_str(name);

	return v && *v ? strtol(v, NULL, 0) : 0;
}

unsigned int sr_config_ms(const char *name, unsigned int def)
{
	long v = sr_config_long(name);

	return v >= 1 && v <= 600000 ? (unsigned int)v : def;
}

bool sr_config_bool(const char *name)
{
	const char *v = sr_config_str(name);

	if (!v || !*v)
		return false;
	return strcmp(v, "0") != 0 && strcasecmp(v, "no") != 0 &&
	       strcasecmp(v, "false") != 0 && strcasecmp(v, "off") != 0;
}
