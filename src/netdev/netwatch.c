// SPDX-License-Identifier: MIT
/* The connection manager's rtnetlink subscription (see sr_netwatch.h). */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "netdev/sr_netwatch.h"

struct sr_netwatch {
	int fd;
	sr_netwatch_cb cb;
	void *arg;
};

struct sr_netwatch *sr_netwatch_open(sr_netwatch_cb cb, void *arg)
{
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_NEIGH | RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR |
			     RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE,
	};
	struct sr_netwatch *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
	w->cb = cb;
	w->arg = arg;
	w->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (w->fd < 0 || bind(w->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		if (w->fd >= 0)
			close(w->fd);
		free(w);
		errno = err;
		return NULL;
	}
	return w;
}

int sr_netwatch_fd(const struct sr_netwatch *w)
{
	return w->fd;
}

/* RTM_DELADDR: the interface and the address (IFA_LOCAL, else IFA_ADDRESS). */
static bool sr_netwatch_addr(const struct nlmsghdr *h, struct sr_netwatch_event *ev)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	const struct rtattr *rta, *use = NULL;
	unsigned int want;
	int len;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)) ||
	    (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6))
		return false;
	want = ifa->ifa_family == AF_INET ? 4 : 16;
	len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*ifa));
	for (rta = IFA_RTA(ifa); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (RTA_PAYLOAD(rta) != want)
			continue;
		if (rta->rta_type == IFA_LOCAL || (rta->rta_type == IFA_ADDRESS && !use))
			use = rta;
	}
	if (!use)
		return false;
	ev->ifindex = (int)ifa->ifa_index;
	ev->addr.ss_family = ifa->ifa_family;
	if (ifa->ifa_family == AF_INET) {
		memcpy(&((struct sockaddr_in *)&ev->addr)->sin_addr, RTA_DATA(use), 4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ev->addr;

		memcpy(&s6->sin6_addr, RTA_DATA(use), 16);
		if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
			s6->sin6_scope_id = ifa->ifa_index;
	}
	return true;
}

static bool sr_netwatch_parse(const struct nlmsghdr *h, struct sr_netwatch_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	switch (h->nlmsg_type) {
	case RTM_NEWNEIGH:
	case RTM_DELNEIGH:
		ev->kind = SR_NETWATCH_NEIGH;
		if (!sr_neigh_parse(h, &ev->neigh))
			return false;
		ev->ifindex = ev->neigh.ifindex;
		return true;
	case RTM_DELLINK: {
		const struct ifinfomsg *ifi = NLMSG_DATA(h);

		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
			return false;
		ev->kind = SR_NETWATCH_LINK_DEL;
		ev->ifindex = ifi->ifi_index;
		return true;
	}
	case RTM_DELADDR:
		ev->kind = SR_NETWATCH_ADDR_DEL;
		return sr_netwatch_addr(h, ev);
	case RTM_NEWROUTE:
	case RTM_DELROUTE:
		ev->kind = SR_NETWATCH_ROUTE;
		return true;
	default:
		return false;
	}
}

int sr_netwatch_process(struct sr_netwatch *w)
{
	union {
		char buf[16384];
		struct nlmsghdr align;
	} u;
	int lost = 0;

	for (;;) {
		int n = (int)recv(w->fd, u.buf, sizeof(u.buf), 0);
		struct nlmsghdr *h;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				lost = -ENOBUFS; /* overrun: read on, then the caller re-checks */
				continue;
			}
			return errno == EAGAIN ? lost : -errno;
		}
		for (h = &u.align; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			struct sr_netwatch_event ev;

			if (sr_netwatch_parse(h, &ev))
				w->cb(w->arg, &ev);
		}
	}
}

void sr_netwatch_close(struct sr_netwatch *w)
{
	if (!w)
		return;
	close(w->fd);
	free(w);
}
