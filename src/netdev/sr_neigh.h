/* SPDX-License-Identifier: MIT */
/*
 * Neighbour (ARP / IPv6 ND) entries of the caller's network namespace over rtnetlink: ask
 * for one, ask the kernel to resolve one (updates arrive through sr_netwatch.h). The
 * connection manager uses them to resolve a route's next hop the way the kernel's
 * rdma_resolve_ip() does: look, trigger, then wait for the update event.
 */
#ifndef SR_NEIGH_H
#define SR_NEIGH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

enum sr_neigh_state {
	SR_NEIGH_NONE,       /* no entry, or one being resolved (NUD_NONE / INCOMPLETE) */
	SR_NEIGH_VALID,      /* usable: REACHABLE, STALE, DELAY, PROBE, PERMANENT, NOARP */
	SR_NEIGH_FAILED,     /* resolution gave up (NUD_FAILED) */
};

struct sr_neigh {
	int ifindex;
	struct sockaddr_storage addr; /* port 0 */
	enum sr_neigh_state state;
	uint8_t lladdr[32];
	unsigned int lladdr_len;
	bool deleted;                 /* an RTM_DELNEIGH notification */
};

/* The kernel's entry for addr on ifindex: 0 (out filled), -ENOENT, or a negative errno. */
int sr_neigh_get(int ifindex, const struct sockaddr *addr, struct sr_neigh *out);

/*
 * Start resolving addr on ifindex as the kernel's own stack does when it has a packet for
 * it: an RTM_NEWNEIGH with NTF_USE (what `ip neigh replace ADDR dev DEV use` sends; it
 * needs CAP_NET_ADMIN in the namespace). Without that capability, one empty UDP datagram
 * to the discard port (9) of addr has the same effect on the neighbour table. Returns 0 or
 * a negative errno.
 */
int sr_neigh_trigger(int ifindex, const struct sockaddr *addr);

struct nlmsghdr;
/* One RTM_NEWNEIGH / RTM_DELNEIGH message into n; false if it is not one we can read. */
bool sr_neigh_parse(const struct nlmsghdr *h, struct sr_neigh *n);

#endif
