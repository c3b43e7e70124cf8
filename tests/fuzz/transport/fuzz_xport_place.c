// SPDX-License-Identifier: MIT
/*
 * DDP placement and RDMAP against registered regions, through the real receive path: the
 * input is a list of records (fz_build.h) that become well-formed FPDUs (lengths, MSNs, MOs,
 * CRCs right unless a record asks otherwise) aimed at the fixture's regions with fuzzed
 * STags, offsets, lengths and opcodes: tagged Writes and unsolicited Read Responses, Sends
 * into the posted receives (message offsets, Invalidate variants), Read Requests against
 * readable and unreadable regions, Terminates. The same invariants as the stream target
 * (fz_conn.h): nothing outside what a region allows changes or leaves, the connection ends.
 *
 * Input: byte 0: bit 0 CRC, bits 2-3 our IRD; then records of FZ_REC bytes.
 */
#include "fz_conn.h"

#define FZ_STREAM_MAX (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint32_t stags[FZ_NREG];
	static uint8_t *out;
	struct fz_builder b;
	size_t pos = 1, len = 0;

	if (!out) {
		fz_conn_init();
		for (int r = 0; r < FZ_NREG; r++)
			stags[r] = fz_reg[r].mr->rkey;
		out = malloc(FZ_STREAM_MAX);
		CHECK(out);
	}
	if (size < 1)
		return 0;
	fz_builder_init(&b, data[0] & 1, stags);
	while (size - pos >= FZ_REC) {
		size_t used, n = fz_build(&b, data + pos, data + pos + FZ_REC,
					  size - pos - FZ_REC, &used, out + len,
					  FZ_STREAM_MAX - len);

		if (!n && !used && data[pos] % FZ_KINDS != FZ_RAW)
			break; /* full */
		len += n;
		pos += FZ_REC + used;
	}
	fz_conn_run(out, len, data[0] & 1, (data[0] >> 2) & 3);
	return 0;
}
