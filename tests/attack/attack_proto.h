/* SPDX-License-Identifier: MIT */
/*
 * What the attacker (attack.c) and the victim server (victim.c) agree on: the private data
 * of the attacker's MPA Request (receives to post, IRD, an action) and of the victim's Reply
 * (the regions' STags, addresses and lengths), all big-endian.
 */
#ifndef SR_ATTACK_PROTO_H
#define SR_ATTACK_PROTO_H

#include <fcntl.h>

/* Request: magic, then nrecv, ird, actions, one spare byte. */
#define AV_REQ_MAGIC "SRAQ"
#define AV_REQ_LEN 8
#define AV_ACT_DISCONNECT 0x01 /* the victim disconnects as soon as it is established */
/* The good client's Request. */
#define AV_GOOD_MAGIC "GOOD"

/* Reply: magic, connection number, 3 spare bytes, then per region STag(4) addr(8) len(4). */
#define AV_REPLY_MAGIC "SRAP"
enum av_region {
	AV_REG_W,  /* REMOTE_WRITE, PD A */
	AV_REG_R,  /* REMOTE_READ only, PD A, AV_R_LEN bytes */
	AV_REG_N,  /* no remote rights, PD A */
	AV_REG_B,  /* all rights, but PD B: the attacker's QP is in PD A */
	AV_REG_RB, /* the receive buffers of attacker connections, PD A, local only */
	AV_NREG
};
#define AV_REPLY_LEN (8 + AV_NREG * 16)
#define AV_RECV_SLOTS 8
/* Big enough that one Read Response cannot fit in loopback socket buffers. */
#define AV_R_LEN (32u << 20)

static inline int fcntl_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

#endif
