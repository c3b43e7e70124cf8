/* SPDX-License-Identifier: MIT */
/*
 * What fuzz_roce_packet and the seed generator (gen_corpus.c) agree on: the input's
 * control byte and the two flows whose ICRC the seeds carry.
 *
 * Input: byte 0, then the UDP payload of one datagram.
 *   bit 0: repair the ICRC for the flow first (mutations then get past the ICRC)
 *   bit 1: the flow is IPv6 (else IPv4)
 *   bits 2..4: SR_ROCE_CLASS_* the parse accepts; 0 means all
 */
#ifndef SR_FZ_ROCE_H
#define SR_FZ_ROCE_H

#include "roce/icrc.h"
#include "roce/wire.h"

enum {
	FZ_ROCE_FIX_ICRC = 1 << 0,
	FZ_ROCE_IPV6 = 1 << 1,
	FZ_ROCE_CLASS_SHIFT = 2,
	FZ_ROCE_CLASS_MASK = 7 << 2,
};

static const struct sr_icrc_flow fz_roce_flow4 = {
	.family = AF_INET, .src = { 192, 0, 2, 1 }, .dst = { 192, 0, 2, 2 },
	.sport = 0xc132, .dport = SR_ROCE_UDP_PORT, .ipv4_df = true,
};

static const struct sr_icrc_flow fz_roce_flow6 = {
	.family = AF_INET6,
	.src = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 },
	.dst = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 },
	.sport = 0xd872, .dport = SR_ROCE_UDP_PORT,
};

#endif
