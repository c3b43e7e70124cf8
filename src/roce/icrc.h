/* SPDX-License-Identifier: MIT */
/*
 * CRC-32 (IEEE 802.3, zlib's crc32) and the RoCE v2 Invariant CRC built on it
 * (docs/WIRE.md §R6).
 *
 * The ICRC covers 8 bytes of 0xFF standing for the absent LRH, the IP header, the UDP
 * header, the BTH and extension headers, the payload and the pad, with the fields a router
 * may change (IPv4 TOS, TTL, header checksum; IPv6 traffic class, flow label, hop limit;
 * the UDP checksum; BTH byte 4) replaced by 1s. It is stored after the pad, least
 * significant byte first.
 *
 * The IP and UDP headers are rebuilt from what a UDP socket knows (struct sr_icrc_flow):
 * addresses, ports and the datagram length. IPv4 also covers the Identification field
 * and the flags, which a received datagram does not reveal: we send with ID 0 and DF
 * set (unconnected socket, IP_PMTUDISC_DO), and rxe's ID is a hash, so an IPv4 ICRC
 * from rxe cannot be checked from a UDP socket.
 *
 * Incremental use, any split of the bytes gives the same result:
 *   sr_icrc_begin(&c, &flow, udp_payload_len)   IP + UDP pseudo-headers
 *   sr_icrc_hdrs(&c, hdr, hlen)                 BTH (byte 4 masked) + extension headers
 *   sr_icrc_data(&c, p, n) / sr_icrc_datav(...) payload, then pad
 *   crc = sr_icrc_end(&c)                       sr_icrc_put(out, crc) stores it
 */
#ifndef SR_ROCE_ICRC_H
#define SR_ROCE_ICRC_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

/**
 * sr_crc32 - extend a CRC-32 (reflected 0xEDB88320, zlib's crc32) over @len bytes.
 * @crc: finished CRC of the bytes before, 0 to start (sr_crc32(0, "123456789", 9) is
 *	0xCBF43926). Carry-less multiply folding on x86-64 CPUs with PCLMULQDQ, else
 *	slicing-by-8. Context: any thread.
 */
uint32_t sr_crc32(uint32_t crc, const void *buf, size_t len);

/* The slicing-by-8 path alone, for tests and benchmarks. */
uint32_t sr_crc32_table(uint32_t crc, const void *buf, size_t len);

/* True when sr_crc32() folds with PCLMULQDQ. */
bool sr_crc32_folding(void);

/* What a UDP socket knows about a datagram, enough to rebuild its IP and UDP headers. */
struct sr_icrc_flow {
	sa_family_t family;	/* AF_INET or AF_INET6 */
	uint8_t src[16];	/* network order; IPv4 in the first 4 bytes */
	uint8_t dst[16];
	uint16_t sport, dport;	/* host order */
	uint16_t ipv4_id;	/* IPv4 Identification: 0 for what we send */
	bool ipv4_df;		/* IPv4 Don't Fragment: set on what we send */
};

/* Running ICRC: the raw (not inverted) CRC register. */
struct sr_icrc {
	uint32_t reg;
};

/**
 * sr_icrc_begin - start an ICRC with the LRH stand-in and the masked IP and UDP headers.
 * @udp_payload_len: bytes after the UDP header, ICRC included (IPv4 total length and UDP
 *	length follow from it). Must be at most 65507 (IPv4) or 65527 (IPv6).
 */
void sr_icrc_begin(struct sr_icrc *c, const struct sr_icrc_flow *f, size_t udp_payload_len);

/* Add the BTH and extension headers, with BTH byte 4 taken as 0xFF (a piece of 4 bytes or
 * less is the start of a BTH and goes in as it is). */
void sr_icrc_hdrs(struct sr_icrc *c, const uint8_t *hdr, size_t len);

/* Add payload (or pad) bytes. */
void sr_icrc_data(struct sr_icrc *c, const void *p, size_t len);
void sr_icrc_datav(struct sr_icrc *c, const struct iovec *iov, size_t cnt);

/* The finished ICRC value; @c may go on being extended. */
uint32_t sr_icrc_end(const struct sr_icrc *c);

/* The ICRC travels least-significant byte first: 0xCBA87A60 as 60 7a a8 cb. */
static inline void sr_icrc_put(uint8_t out[4], uint32_t crc)
{
	uint32_t le = htole32(crc);

	memcpy(out, &le, sizeof(le));
}

static inline uint32_t sr_icrc_get(const uint8_t in[4])
{
	uint32_t le;

	memcpy(&le, in, sizeof(le));
	return le32toh(le);
}

/**
 * sr_roce_icrc - the ICRC of a whole UDP payload @buf of @len bytes (its last 4 bytes,
 * the ICRC slot, are not covered). Meaningful for @len >= 16 (BTH + ICRC).
 */
uint32_t sr_roce_icrc(const struct sr_icrc_flow *f, const uint8_t *buf, size_t len);

/* True when the last 4 bytes of @buf hold the right ICRC. @len >= 16. */
bool sr_roce_icrc_verify(const struct sr_icrc_flow *f, const uint8_t *buf, size_t len);

#endif
