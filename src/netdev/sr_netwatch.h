/* SPDX-License-Identifier: MIT */
/*
 * One rtnetlink subscription for what the connection manager must follow: neighbour
 * updates (next hops resolved, failed, or with a new MAC), links removed, addresses removed
 * and routes changed, IPv4 and IPv6. The owner polls sr_netwatch_fd() (non-blocking) and
 * calls sr_netwatch_process() when it is readable; the callback runs inside that call.
 */
#ifndef SR_NETWATCH_H
#define SR_NETWATCH_H

#include <sys/socket.h>

#include "netdev/sr_neigh.h"

enum sr_netwatch_kind {
	SR_NETWATCH_NEIGH,    /* .neigh: a neighbour entry changed or went away */
	SR_NETWATCH_LINK_DEL, /* .ifindex: an interface was removed */
	SR_NETWATCH_ADDR_DEL, /* .ifindex, .addr: an address was removed from an interface */
	SR_NETWATCH_ROUTE,    /* a route was added, changed or removed (no details) */
};

struct sr_netwatch_event {
	enum sr_netwatch_kind kind;
	int ifindex;
	struct sockaddr_storage addr;
	struct sr_neigh neigh;
};

struct sr_netwatch;
typedef void (*sr_netwatch_cb)(void *arg, const struct sr_netwatch_event *ev);

struct sr_netwatch *sr_netwatch_open(sr_netwatch_cb cb, void *arg);
int sr_netwatch_fd(const struct sr_netwatch *w);
/*
 * Read every queued notification, calling cb for each. Returns 0, -ENOBUFS after an
 * overrun (notifications were lost: the caller re-checks whatever it follows), or another
 * negative errno.
 */
int sr_netwatch_process(struct sr_netwatch *w);
void sr_netwatch_close(struct sr_netwatch *w);

#endif
