/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the iWARP unit tests: hex strings to bytes, and a
 * receive driver that pushes a byte buffer through struct sr_fpdu_rx the way
 * a socket reader would, in recv()-sized chunks, placing payload into a
 * guarded arena and checking that the parser never asks for a byte outside
 * the segment it validated.
 */
#ifndef SR_TESTS_IW_TEST_H
#define SR_TESTS_IW_TEST_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "iwarp/ddp.h"

/* "00 0e c1 40" (spaces optional) into @out; returns the byte count. */
static inline size_t iw_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (*s) {
		unsigned int v;

		if (*s == ' ' || *s == '\n') {
			s++;
			continue;
		}
		assert_true(sscanf(s, "%2x", &v) == 1);
		assert_true(n < cap);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

#define IW_GUARD 64
#define IW_ARENA 262144
#define IW_MAX_SEGS 512

/*
 * Payload placement model: tagged segments land at arena + (TO - tag_base)
 * whatever the STag; Sends at arena + (MSN % 8) * IW_SEND_SLOT + MO, i.e.
 * eight receive buffers of IW_SEND_SLOT bytes. Read Requests and
 * Terminates carry no payload.
 */
#define IW_SEND_SLOT 16384
struct iw_drv {
	struct sr_fpdu_rx rx;
	uint8_t *mem; /* guard | arena | guard */
	uint8_t *arena;
	uint64_t tag_base;
	uint8_t *dst; /* current segment's destination */
	int nseg;
	struct sr_ddp_seg segs[IW_MAX_SEGS];
	int hdr_events;
	int rc; /* first negative return, 0 if none */
};

static inline void iw_drv_init(struct iw_drv *d, bool crc_on, uint64_t tag_base)
{
	memset(d, 0, sizeof(*d));
	sr_fpdu_rx_init(&d->rx, crc_on);
	d->mem = malloc(IW_ARENA + 2 * IW_GUARD);
	assert_non_null(d->mem);
	memset(d->mem, 0xA5, IW_ARENA + 2 * IW_GUARD);
	d->arena = d->mem + IW_GUARD;
	memset(d->arena, 0, IW_ARENA);
	d->tag_base = tag_base;
}

static inline void iw_drv_check_guards(const struct iw_drv *d)
{
	for (size_t i = 0; i < IW_GUARD; i++) {
		assert_int_equal(d->mem[i], 0xA5);
		assert_int_equal(d->mem[IW_GUARD + IW_ARENA + i], 0xA5);
	}
}

static inline void iw_drv_fini(struct iw_drv *d)
{
	iw_drv_check_guards(d);
	free(d->mem);
}

/* Where the just-validated segment's payload goes; fails the rx if outside. */
static inline int iw_drv_place(struct iw_drv *d)
{
	const struct sr_ddp_seg *s = &d->rx.seg;
	uint64_t off;

	if (s->tagged) {
		if (s->to < d->tag_base)
			return sr_fpdu_rx_fail(&d->rx, SR_IW_ERR_DDP_T_BOUNDS);
		off = s->to - d->tag_base;
	} else {
		if (s->payload_len &&
		    (uint64_t)s->mo + s->payload_len > IW_SEND_SLOT)
			return sr_fpdu_rx_fail(&d->rx,
					       SR_IW_ERR_DDP_U_TOO_LONG);
		off = (uint64_t)(s->msn % 8) * IW_SEND_SLOT + s->mo;
	}
	if (off > IW_ARENA || s->payload_len > IW_ARENA - off)
		return sr_fpdu_rx_fail(&d->rx, SR_IW_ERR_DDP_T_BOUNDS);
	d->dst = d->arena + off;
	return 0;
}

/* Feed @len bytes, @chunk at a time (0 = all at once). Returns d->rc. */
static inline int iw_drv_feed(struct iw_drv *d, const uint8_t *in, size_t len,
			      size_t chunk)
{
	size_t pos = 0;

	if (!chunk)
		chunk = len ? len : 1;
	while (pos < len && !d->rc) {
		size_t take = len - pos < chunk ? len - pos : chunk;
		size_t used = 0;

		/* One "recv" of @take bytes, spread over the stages. */
		while (used < take && !d->rc) {
			struct sr_fpdu_rx_need need;
			size_t n;
			int r;

			sr_fpdu_rx_need(&d->rx, &need);
			if (need.stage == SR_FPDU_RX_FAILED) {
				d->rc = d->rx.ret;
				break;
			}
			assert_true(need.len > 0);
			n = take - used < need.len ? take - used : need.len;
			if (need.stage == SR_FPDU_RX_PAYLOAD) {
				uint8_t *p = d->dst + need.seg_off;

				assert_true(need.seg_off + n <=
					    d->rx.seg.payload_len);
				assert_true(p >= d->arena &&
					    p + n <= d->arena + IW_ARENA);
				memcpy(p, in + pos + used, n);
				r = sr_fpdu_rx_advance(&d->rx, n, p);
			} else {
				assert_non_null(need.buf);
				memcpy(need.buf, in + pos + used, n);
				r = sr_fpdu_rx_advance(&d->rx, n, NULL);
			}
			used += n;
			if (r < 0) {
				d->rc = r;
			} else if (r == SR_FPDU_RX_HDR_DONE) {
				d->hdr_events++;
				d->rc = iw_drv_place(d);
			} else if (r == SR_FPDU_RX_SEG_DONE) {
				assert_true(d->nseg < IW_MAX_SEGS);
				d->segs[d->nseg++] = d->rx.seg;
			}
		}
		pos += take;
	}
	iw_drv_check_guards(d);
	return d->rc;
}

#endif
