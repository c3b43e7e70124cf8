/* SPDX-License-Identifier: MIT */
/*
 * IP route and address queries over rtnetlink, in the caller's network namespace. The
 * connection manager uses them to pick the source address of a connection and the interface
 * (= soft iWARP device) it leaves through, as the kernel's rdma_resolve_ip() does.
 */
#ifndef SR_ROUTE_H
#define SR_ROUTE_H

#include <stdbool.h>
#include <sys/socket.h>

#include "common/sr_sockaddr.h"

/* The kernel gives lo this index in every network namespace (its LOOPBACK_IFINDEX). */
#define SR_LOOPBACK_IFINDEX 1

struct sr_route {
	int oif;                     /* egress interface the kernel chose (lo for local) */
	/*
	 * The interface whose device serves the connection: for a local destination (one of
	 * our own addresses) the interface owning that address, as the kernel CM does, else
	 * the egress interface. Loopback addresses resolve to lo.
	 */
	int dev_ifindex;
	bool local;                  /* destination is an address of this host */
	struct sockaddr_storage src; /* source address (port 0) */
	/* Next hop whose link-layer address frames go to: the gateway, or the destination
	 * itself on a directly connected network (port 0; IPv6 link-local carries oif). */
	struct sockaddr_storage nexthop;
	bool has_gateway;
	unsigned int mtu;            /* the route's MTU metric, 0 when it has none */
};

/*
 * Route from @src (may be NULL or a wildcard) to @dst (AF_INET or AF_INET6), optionally
 * forced out of @oif (0 = any; IPv6 link-local destinations use their scope id when 0).
 * Returns 0 or a negative errno: -ENETUNREACH/-EHOSTUNREACH (no route), -EINVAL (bad
 * family or a link-local destination without an interface), -EIO (netlink failure).
 */
int sr_route_lookup(const struct sockaddr *dst, const struct sockaddr *src, int oif,
		    struct sr_route *out);

/*
 * Interface that owns @addr (exact address match; for IPv6 link-local addresses with a
 * scope id, on that interface). Returns the ifindex, -EADDRNOTAVAIL when no interface has
 * it, or another negative errno.
 */
int sr_addr_owner(const struct sockaddr *addr);

#endif
