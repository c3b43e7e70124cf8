/* SPDX-License-Identifier: MIT */
/*
 * CRC-32C (Castagnoli) as MPA uses it for the FPDU trailer (RFC 5044, the
 * iSCSI/SCTP CRC): polynomial 0x1EDC6F41 (reflected 0x82F63B78), reflected
 * input and output, initial value and final XOR 0xFFFFFFFF.
 *
 * Convention: sr_crc32c() takes and returns *finished* CRC values, like
 * zlib's crc32(). Start with 0 (the CRC of no bytes) and feed the result of
 * one call into the next; the pre/post inversion happens inside. So
 *   sr_crc32c(sr_crc32c(0, a, la), b, lb) == sr_crc32c(0, a||b, la + lb)
 * and sr_crc32c(0, "123456789", 9) == 0xE3069283.
 *
 * On x86-64 CPUs with SSE4.2 the crc32 instruction is used (chosen once,
 * at first use); elsewhere a slicing-by-8 table.
 */
#ifndef SR_IWARP_CRC32C_H
#define SR_IWARP_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * sr_crc32c - extend a CRC-32C over @len bytes at @buf.
 * @crc: CRC of the bytes before @buf, 0 to start.
 * Returns: CRC of all bytes so far. Context: any thread.
 */
uint32_t sr_crc32c(uint32_t crc, const void *buf, size_t len);

/* Table-only version, for tests and for comparing against the fast path. */
uint32_t sr_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* True when sr_crc32c() uses the CPU's crc32 instruction. */
bool sr_crc32c_hw(void);

/*
 * MPA stores the CRC least-significant byte first (docs/WIRE.md §1.6): the CRC of
 * 32 zero bytes, 0x8A9136AA, travels as aa 36 91 8a.
 */
static inline void sr_crc32c_put_wire(uint8_t out[4], uint32_t crc)
{
	out[0] = (uint8_t)crc;
	out[1] = (uint8_t)(crc >> 8);
	out[2] = (uint8_t)(crc >> 16);
	out[3] = (uint8_t)(crc >> 24);
}

static inline uint32_t sr_crc32c_get_wire(const uint8_t in[4])
{
	return (uint32_t)in[0] | (uint32_t)in[1] << 8 |
	       (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
}

#endif
