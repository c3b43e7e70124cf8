/* SPDX-License-Identifier: MIT */
/* softrdma-roced internals: one process, one thread, one epoll loop (roced.c). */
#ifndef SR_ROCED_H
#define SR_ROCED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "rdx_proto.h"

struct roced_client {
	int ctl;            /* control connection; its EOF ends the client */
	int data;           /* our end of the data channel; -1 until HELLO */
	bool gsi;           /* receives DestQP 1 (RDX_GSI_JOIN) */
	unsigned int nblocks;
};

struct roced {
	int ep;             /* epoll */
	int listener;       /* abstract unix name: registration */
	bool listener_paused; /* out of descriptors: not in the epoll set */
	int udp[2];         /* IPv4, IPv6 (-1: none) */
	unsigned int port;
	uid_t uid;
	/* clients by slot; owner[block] = slot + 1, 0 = free */
	struct roced_client **cl;
	unsigned int ncl_slots;
	unsigned int nclients;
	uint16_t owner[RDX_NBLOCKS];
	unsigned int next_block; /* next-fit: a freed block is handed out again last */
	uint64_t st[RDX_ST_COUNT];
};

/* epoll tags: kind in the high half, client slot in the low */
enum { ROCED_EV_LISTEN = 1, ROCED_EV_UDP, ROCED_EV_CLIENT };
#define ROCED_TAG(kind, n) (((uint64_t)(kind) << 32) | (uint32_t)(n))

/* roced_net.c: bind both wildcards (0 or -errno, with why in text); read and route. */
int roced_net_open(struct roced *d, char *text, size_t textlen);
void roced_net_rx(struct roced *d, int sock);

/* roced_clients.c */
int roced_client_add(struct roced *d, int ctl);
void roced_client_input(struct roced *d, unsigned int slot);
struct roced_client *roced_owner(struct roced *d, uint32_t qpn);

#endif
