/* SPDX-License-Identifier: MIT */
/*
 * The host's network interfaces as rtnetlink (libnl-route-3) reports them, in the caller's
 * network namespace. This layer knows nothing of RDMA: verbs/ turns links into devices and
 * cm/ asks it for routes and neighbours.
 */
#ifndef SR_NETDEV_H
#define SR_NETDEV_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sr_netdev_link {
	int ifindex;
	char name[IF_NAMESIZE];
	unsigned int flags;      /* IFF_* */
	unsigned int mtu;
	unsigned int arptype;    /* ARPHRD_* */
	uint8_t addr[6];         /* MAC; zero for links without a 6-byte address */
	bool has_mac;
};

/* True when the link can carry traffic: administratively up and carrier present. */
static inline bool sr_netdev_link_running(const struct sr_netdev_link *l)
{
	return (l->flags & 0x1 /* IFF_UP */) && (l->flags & 0x40 /* IFF_RUNNING */);
}

/* Dump every link. *out is malloc'ed (free() it). Returns 0 or a negative errno. */
int sr_netdev_dump_links(struct sr_netdev_link **out, size_t *count);

/* One link by index. Returns 0, -ENODEV if it does not exist, or another negative errno. */
int sr_netdev_get_link(int ifindex, struct sr_netdev_link *out);

/*
 * A subscription to rtnetlink notifications. The owner polls sr_netdev_monitor_fd() and calls
 * sr_netdev_monitor_process() when it is readable; callbacks run from inside that call.
 */
enum sr_netdev_event {
	SR_NETDEV_LINK_NEW,   /* added or changed (flags, MTU, MAC, name) */
	SR_NETDEV_LINK_DEL,
};

struct sr_netdev_monitor;
typedef void (*sr_netdev_link_cb)(void *arg, enum sr_netdev_event ev,
				  const struct sr_netdev_link *link);

struct sr_netdev_monitor *sr_netdev_monitor_open(sr_netdev_link_cb cb, void *arg);
int sr_netdev_monitor_fd(struct sr_netdev_monitor *m);
/* Drain pending notifications; returns 0 or a negative errno (-ENOBUFS: overrun, re-dump). */
int sr_netdev_monitor_process(struct sr_netdev_monitor *m);
void sr_netdev_monitor_close(struct sr_netdev_monitor *m);

#endif
