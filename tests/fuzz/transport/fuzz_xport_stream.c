// SPDX-License-Identifier: MIT
/*
 * Stateful target: an arbitrary byte stream from the peer of a whole connection (a real QP,
 * its receive side on the engine thread, regions between guard pages; see fz_conn.h).
 *
 * Input: byte 0: bit 0 CRC negotiated, bit 1 repair every whole FPDU's CRC before sending
 * (so that mutations reach what lies behind the CRC check), bits 2-3 our IRD (0-3); the rest
 * is the stream. Findings: a crash or sanitizer report in the library, a byte changed in a
 * region the peer may not write, a secret region's bytes on the wire, a connection that does
 * not end after the peer's FIN, a receive completion longer than its buffer.
 */
#include "fz_conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	uint8_t *s;

	if (!ready) {
		fz_conn_init();
		ready = true;
	}
	if (size < 1)
		return 0;
	s = malloc(size);
	CHECK(s);
	memcpy(s, data + 1, size - 1);
	if (data[0] & 2)
		fz_fix_crcs(s, size - 1);
	fz_conn_run(s, size - 1, data[0] & 1, (data[0] >> 2) & 3);
	free(s);
	return 0;
}
