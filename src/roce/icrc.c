// SPDX-License-Identifier: MIT
/*
 * CRC-32 by slicing-by-8 and the RoCE v2 ICRC on top of it. The pseudo-headers are built
 * in a 56-byte buffer (8 bytes of LRH stand-in + 40 IPv6 or 20 IPv4 + 8 UDP) and run
 * through the same CRC as the rest.
 */
#include "roce/icrc.h"

#include <pthread.h>
#include <string.h>

#include "roce/wire.h"

#define SR_CRC32_POLY 0xedb88320u

/*
 * slice[0] is the byte-at-a-time table; slice[k][b] is the register contribution of
 * byte b followed by k zero bytes, so one step folds 8 input bytes with 8 lookups.
 */
static uint32_t slice[8][256];
static pthread_once_t slice_once = PTHREAD_ONCE_INIT;

static void slice_build(void)
{
	for (unsigned int b = 0; b < 256; b++) {
		uint32_t r = b;

		for (int bit = 0; bit < 8; bit++)
			r = r & 1 ? (r >> 1) ^ SR_CRC32_POLY : r >> 1;
		slice[0][b] = r;
	}
	for (int k = 1; k < 8; k++)
		for (unsigned int b = 0; b < 256; b++)
			slice[k][b] = (slice[k - 1][b] >> 8) ^ slice[0][slice[k - 1][b] & 0xff];
}

static inline uint32_t le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* On the raw register. */
static uint32_t crc32_raw(uint32_t r, const uint8_t *p, size_t n)
{
	pthread_once(&slice_once, slice_build);
	for (; n && ((uintptr_t)p & 3); n--)
		r = slice[0][(r ^ *p++) & 0xff] ^ (r >> 8);
	for (; n >= 8; n -= 8, p += 8) {
		uint32_t a = r ^ le32_at(p), b = le32_at(p + 4);

		r = slice[7][a & 0xff] ^ slice[6][(a >> 8) & 0xff] ^
		    slice[5][(a >> 16) & 0xff] ^ slice[4][a >> 24] ^ slice[3][b & 0xff] ^
		    slice[2][(b >> 8) & 0xff] ^ slice[1][(b >> 16) & 0xff] ^ slice[0][b >> 24];
	}
	for (; n; n--)
		r = slice[0][(r ^ *p++) & 0xff] ^ (r >> 8);
	return r;
}

uint32_t sr_crc32(uint32_t crc, const void *buf, size_t len)
{
	return ~crc32_raw(~crc, buf, len);
}

/* LRH stand-in (8) + IPv6 (40) + UDP (8), the longest pseudo-header. */
#define PSEUDO_MAX 56
#define IPV4_HLEN 20
#define IPV6_HLEN 40
#define UDP_HLEN 8

void sr_icrc_begin(struct sr_icrc *c, const struct sr_icrc_flow *f, size_t udp_payload_len)
{
	uint8_t h[PSEUDO_MAX], *ip = h + 8, *udp;
	uint16_t udp_len = (uint16_t)(UDP_HLEN + udp_payload_len);

	memset(h, 0xff, 8);
	if (f->family == AF_INET6) {
		/* version 6, traffic class and flow label all 1s */
		ip[0] = 0x6f;
		ip[1] = ip[2] = ip[3] = 0xff;
		sr_put_be16(ip + 4, udp_len);	/* payload length */
		ip[6] = 17;			/* next header: UDP */
		ip[7] = 0xff;			/* hop limit, masked */
		memcpy(ip + 8, f->src, 16);
		memcpy(ip + 24, f->dst, 16);
		udp = ip + IPV6_HLEN;
	} else {
		ip[0] = 0x45;			/* version 4, IHL 5: no options */
		ip[1] = 0xff;			/* TOS, masked */
		sr_put_be16(ip + 2, (uint16_t)(IPV4_HLEN + udp_len));
		sr_put_be16(ip + 4, f->ipv4_id);
		sr_put_be16(ip + 6, f->ipv4_df ? 0x4000 : 0);	/* flags, fragment offset 0 */
		ip[8] = 0xff;			/* TTL, masked */
		ip[9] = 17;			/* protocol: UDP */
		ip[10] = ip[11] = 0xff;		/* header checksum, masked */
		memcpy(ip + 12, f->src, 4);
		memcpy(ip + 16, f->dst, 4);
		udp = ip + IPV4_HLEN;
	}
	sr_put_be16(udp, f->sport);
	sr_put_be16(udp + 2, f->dport);
	sr_put_be16(udp + 4, udp_len);
	udp[6] = udp[7] = 0xff;			/* checksum, masked */
	c->reg = crc32_raw(0xffffffffu, h, (size_t)(udp + UDP_HLEN - h));
}

void sr_icrc_hdrs(struct sr_icrc *c, const uint8_t *hdr, size_t len)
{
	static const uint8_t ones = 0xff;

	c->reg = crc32_raw(c->reg, hdr, SR_BTH_ICRC_MASKED_OFF);
	c->reg = crc32_raw(c->reg, &ones, 1);
	c->reg = crc32_raw(c->reg, hdr + SR_BTH_ICRC_MASKED_OFF + 1,
			   len - SR_BTH_ICRC_MASKED_OFF - 1);
}

void sr_icrc_data(struct sr_icrc *c, const void *p, size_t len)
{
	c->reg = crc32_raw(c->reg, p, len);
}

void sr_icrc_datav(struct sr_icrc *c, const struct iovec *iov, size_t cnt)
{
	for (size_t i = 0; i < cnt; i++)
		c->reg = crc32_raw(c->reg, iov[i].iov_base, iov[i].iov_len);
}

uint32_t sr_icrc_end(const struct sr_icrc *c)
{
	return ~c->reg;
}

uint32_t sr_roce_icrc(const struct sr_icrc_flow *f, const uint8_t *buf, size_t len)
{
	struct sr_icrc c;

	sr_icrc_begin(&c, f, len);
	sr_icrc_hdrs(&c, buf, len - SR_ROCE_ICRC_LEN);
	return sr_icrc_end(&c);
}

bool sr_roce_icrc_verify(const struct sr_icrc_flow *f, const uint8_t *buf, size_t len)
{
	if (len < SR_BTH_LEN + SR_ROCE_ICRC_LEN)
		return false;
	return sr_roce_icrc(f, buf, len) == sr_icrc_get(buf + len - SR_ROCE_ICRC_LEN);
}
