/* SPDX-License-Identifier: MIT */
/*
 * What the RoCE demultiplexer (softrdma-roced) and its clients say to each other
 * (docs/ARCHITECTURE.md, "Soft RoCE: one UDP port for many processes"). Both ends are
 * built from one tree and checked by version, so the layout is native, not a wire format.
 *
 * Two unix SOCK_SEQPACKET channels per client:
 *  - control: the connection to the abstract name rdx_name(port). Requests and replies are
 *    one struct rdx_msg each, strictly one reply per request. Its EOF tells the daemon the
 *    client is gone, and the client the daemon is gone.
 *  - data: a socketpair the daemon makes at HELLO and passes with SCM_RIGHTS. The daemon
 *    only writes (struct rdx_meta, then the UDP payload, one datagram a message); the
 *    client only reads. SEQPACKET, not DGRAM: the peer's close reads as EOF (POLLHUP).
 */
#ifndef SR_RDX_PROTO_H
#define SR_RDX_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#define RDX_VERSION 1
#define RDX_ROCE_PORT 4791

/*
 * QPNs are handed out in blocks: QPN = block << 8 | index. The daemon routes by block
 * (one array lookup a packet, 64 Ki entries), a client picks QPNs inside its blocks
 * without asking. Block 0 holds QP0/QP1 and the QPNs 2..255 that rxe never uses for a
 * general QP (it starts at 16); block 0xFFFF holds the multicast DestQP 0xFFFFFF.
 */
#define RDX_BLOCK_SHIFT 8
#define RDX_BLOCK_QPNS (1u << RDX_BLOCK_SHIFT)
#define RDX_NBLOCKS (1u << (24 - RDX_BLOCK_SHIFT))
#define RDX_BLOCK_FIRST 1u
#define RDX_BLOCK_LAST (RDX_NBLOCKS - 2)
#define RDX_QPN_GSI 1u
#define RDX_QPN_MCAST 0xFFFFFFu
#define RDX_BTH_LEN 12

enum rdx_op {
	RDX_HELLO = 1,      /* arg: RDX_VERSION. Reply: data fd; vals[0] daemon uid, [1] pid */
	RDX_BLOCK_ALLOC,    /* reply arg: the block */
	RDX_BLOCK_FREE,     /* arg: a block of ours */
	RDX_GSI_JOIN,       /* DestQP 1 datagrams come to this client too */
	RDX_GSI_LEAVE,
	RDX_STATS,          /* reply vals: enum rdx_stat */
	/* daemon -> starter only, instead of a HELLO reply (spawn.c) */
	RDX_START_LOST,     /* another daemon holds the name: connect to it */
	RDX_START_FAILED,   /* status: -errno; arg: uid holding the port or -1; text: why */
};

enum rdx_stat {
	RDX_ST_RX,          /* datagrams read from the UDP sockets */
	RDX_ST_DELIVERED,   /* copies written to a client's data channel */
	RDX_ST_NO_OWNER,    /* DestQP in no client's block (or 0, or QP1 with no GSI client) */
	RDX_ST_SHORT,       /* shorter than a BTH, or truncated */
	RDX_ST_FULL,        /* the client's channel was full: dropped, as a NIC would */
	RDX_ST_MCAST,       /* DestQP 0xFFFFFF: not delivered yet (roced_net.c, TODO) */
	RDX_ST_COUNT
};

struct rdx_msg {
	uint32_t op;
	int32_t status;     /* 0 or -errno */
	uint32_t arg;
	uint32_t pad;
	uint64_t vals[RDX_ST_COUNT];
	char text[160];     /* RDX_START_FAILED / refusals: a sentence for the user */
};

/*
 * In front of every datagram on the data channel. Addresses in GID form: an IPv4 address
 * as ::ffff:a.b.c.d, as RoCE v2 GIDs and rxe's AVs write them. dst, tclass and hop_limit
 * are what the ICRC (IPv6) and the GRH of a UD receive buffer need; an IPv4 datagram's
 * IP ID and flags are not visible to a UDP socket (docs/roce-wire §4).
 */
struct rdx_meta {
	uint8_t family;     /* AF_INET or AF_INET6 */
	uint8_t tclass;     /* IPv4 TOS / IPv6 traffic class */
	uint8_t hop_limit;  /* IPv4 TTL / IPv6 hop limit */
	uint8_t pad;
	uint16_t src_port;  /* host order */
	uint16_t dst_port;  /* host order: the demultiplexer's port */
	uint32_t ifindex;   /* the interface it arrived on */
	uint32_t len;       /* UDP payload bytes that follow */
	uint8_t src[16];
	uint8_t dst[16];
};

/* The abstract unix name of the daemon of UDP port `port` in this network namespace. */
socklen_t rdx_name(struct sockaddr_un *sa, unsigned int port);
/* One message with an optional fd (SCM_RIGHTS); MSG_NOSIGNAL. 0 or -errno. */
int rdx_send(int sock, const struct rdx_msg *m, int fd);
/* One message, and the fd it carries (else *fd = -1; fd may be NULL to refuse any). Waits at
 * most timeout_ms (-1: no bound). 0, -EPIPE at EOF, -ETIMEDOUT, -EPROTO, or -errno. */
int rdx_recv(int sock, struct rdx_msg *m, int *fd, int timeout_ms);

#endif
