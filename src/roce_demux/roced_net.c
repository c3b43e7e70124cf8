// SPDX-License-Identifier: MIT
/*
 * softrdma-roced: the two UDP sockets of the RoCE v2 port and the route of each datagram
 * to the process owning its DestQP (BTH bytes 5..7, the low 24 bits of bytes 4..7).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "roced.h"
#include "common/sr_log.h"

#ifndef UDP_NO_CHECK6_RX
#define UDP_NO_CHECK6_RX 102
#endif

/*
 * Who holds the port when our bind fails: /proc/net/udp{,6} are this namespace's tables
 * and give the owning uid of every socket. -1 when not found (it may have gone).
 */
static long roced_port_holder(unsigned int port)
{
	static const char *const tables[] = { "/proc/net/udp", "/proc/net/udp6" };
	char line[512];

	for (unsigned int t = 0; t < 2; t++) {
		FILE *f = fopen(tables[t], "re");

		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			char local[64];
			unsigned int p;
			unsigned long uid;
			const char *colon;

			/* sl local rem st tx:rx tr:when retr uid */
			if (sscanf(line, " %*s %63s %*s %*s %*s %*s %*s %lu", local, &uid) != 2)
				continue;
			colon = strrchr(local, ':');
			if (colon && sscanf(colon + 1, "%x", &p) == 1 && p == port) {
				fclose(f);
				return (long)uid;
			}
		}
		fclose(f);
	}
	return -1;
}

static int roced_bind(struct roced *d, int family, char *text, size_t textlen)
{
	int one = 1, rcv = 4 << 20, s, e;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} a = { 0 };
	socklen_t alen;
	struct epoll_event ev = { .events = EPOLLIN };

	s = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/* Never SO_REUSEADDR: between uids the last binder takes every unicast datagram. */
	if (family == AF_INET) {
		a.v4.sin_family = AF_INET;
		a.v4.sin_port = htons((uint16_t)d->port);
		alen = sizeof(a.v4);
		setsockopt(s, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one));
		setsockopt(s, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
		setsockopt(s, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one));
	} else {
		a.v6.sin6_family = AF_INET6;
		a.v6.sin6_port = htons((uint16_t)d->port);
		alen = sizeof(a.v6);
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		/* rxe sends IPv6 with UDP checksum 0, which a plain socket drops */
		setsockopt(s, IPPROTO_UDP, UDP_NO_CHECK6_RX, &one, sizeof(one));
		setsockopt(s, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one));
		setsockopt(s, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one));
		setsockopt(s, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof(one));
	}
	/* bursts wait here while we forward; capped by net.core.rmem_max without privilege */
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	if (bind(s, (struct sockaddr *)&a, alen) < 0) {
		e = -errno;
		close(s);
		if (e == -EADDRINUSE) {
			long uid = roced_port_holder(d->port);

			snprintf(text, textlen,
				 "UDP port %u (%s) of this network namespace is in use by uid %ld, "
				 "not by softrdma-roced (the kernel's rdma_rxe or another program)",
				 d->port, family == AF_INET ? "IPv4" : "IPv6", uid);
		}
		return e;
	}
	ev.data.u64 = ROCED_TAG(ROCED_EV_UDP, family == AF_INET ? 0 : 1);
	if (epoll_ctl(d->ep, EPOLL_CTL_ADD, s, &ev) < 0) {
		e = -errno;
		close(s);
		return e;
	}
	d->udp[family == AF_INET ? 0 : 1] = s;
	return 0;
}

int roced_net_open(struct roced *d, char *text, size_t textlen)
{
	int e = roced_bind(d, AF_INET, text, textlen);

	if (e < 0) {
		if (!text[0])
			snprintf(text, textlen, "cannot bind UDP 0.0.0.0:%u: %s", d->port,
				 strerror(-e));
		return e;
	}
	e = roced_bind(d, AF_INET6, text, textlen);
	/* a namespace without IPv6 serves IPv4 only */
	if (e == -EAFNOSUPPORT || e == -EADDRNOTAVAIL) {
		sr_info("no IPv6: %s", strerror(-e));
		return 0;
	}
	if (e < 0 && !text[0])
		snprintf(text, textlen, "cannot bind UDP [::]:%u: %s", d->port, strerror(-e));
	return e;
}

static void roced_meta(struct rdx_meta *m, const struct msghdr *mh, unsigned int port)
{
	const struct sockaddr_in6 *s6 = mh->msg_name;
	const struct sockaddr_in *s4 = mh->msg_name;
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	memset(m, 0, sizeof(*m));
	m->dst_port = (uint16_t)port;
	m->family = (uint8_t)s4->sin_family;
	if (s4->sin_family == AF_INET) {
		memcpy(m->src, v4mapped, 12);
		memcpy(m->src + 12, &s4->sin_addr, 4);
		memcpy(m->dst, v4mapped, 12);
		m->src_port = ntohs(s4->sin_port);
	} else {
		memcpy(m->src, &s6->sin6_addr, 16);
		m->src_port = ntohs(s6->sin6_port);
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)mh); c;
	     c = CMSG_NXTHDR((struct msghdr *)mh, c)) {
		int v = 0;

		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(m->dst + 12, &pi.ipi_addr, 4);
			m->ifindex = (uint32_t)pi.ipi_ifindex;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			m->tclass = *CMSG_DATA(c); /* one byte */
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			m->hop_limit = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(m->dst, &pi.ipi6_addr, 16);
			m->ifindex = pi.ipi6_ifindex;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			m->tclass = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			m->hop_limit = (uint8_t)v;
		}
	}
}

static void roced_deliver(struct roced *d, struct roced_client *c, struct iovec *iov)
{
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	if (c->data < 0) {
		d->st[RDX_ST_NO_OWNER]++;
		return;
	}
	/* never wait for one client: a full channel drops, as a full receive ring would */
	if (sendmsg(c->data, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		d->st[RDX_ST_FULL]++;
	else
		d->st[RDX_ST_DELIVERED]++;
}

/*
 * DestQP 1 (GSI, the CM's MADs): a copy to every client that joined. All of them are the
 * same user, so nobody sees another user's traffic. When rdma_cm over RoCE arrives, this
 * is where a MAD is routed by its service ID (REQ, SIDR REQ) or communication ID (the rest)
 * to the one process it belongs to.
 */
static void roced_route_gsi(struct roced *d, struct iovec *iov)
{
	bool any = false;

	for (unsigned int s = 0; s < d->ncl_slots; s++)
		if (d->cl[s] && d->cl[s]->gsi) {
			roced_deliver(d, d->cl[s], iov);
			any = true;
		}
	if (!any)
		d->st[RDX_ST_NO_OWNER]++;
}

/*
 * TODO(multicast): DestQP 0xFFFFFF is routed by the destination IP (the MGID) to every QP
 * attached to the group (docs/roce-wire §6). The hook: clients will register (group, QPN)
 * pairs, the daemon joins the group on its UDP socket (IP_ADD_MEMBERSHIP), and this sends a
 * copy to each client with an attached QP. Until then they are counted and dropped.
 */
static void roced_route_mcast(struct roced *d, struct iovec *iov)
{
	(void)iov;
	d->st[RDX_ST_MCAST]++;
}

static void roced_route(struct roced *d, struct iovec *iov)
{
	const uint8_t *bth = iov[1].iov_base;
	uint32_t qpn = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
	struct roced_client *c;

	if (qpn == RDX_QPN_MCAST) {
		roced_route_mcast(d, iov);
		return;
	}
	if (qpn == RDX_QPN_GSI) {
		roced_route_gsi(d, iov);
		return;
	}
	c = roced_owner(d, qpn);
	if (!c || qpn == 0)
		d->st[RDX_ST_NO_OWNER]++;
	else
		roced_deliver(d, c, iov);
}

/*
 * One recvmmsg takes what waits (up to RX_BATCH) and never costs a call that finds the
 * socket empty, as a recvmsg loop until EAGAIN does on every wakeup of a ping-pong. Level-
 * triggered epoll brings us back for the rest, after registrations and deaths had a turn.
 */
enum { RX_BATCH = 16, RX_MAX = 9216 /* jumbo frame payload; longer is truncated */ };

void roced_net_rx(struct roced *d, int sock)
{
	static uint8_t buf[RX_BATCH][RX_MAX];
	static union {
		struct cmsghdr h;
		char b[256];
	} ctl[RX_BATCH];
	static struct sockaddr_in6 from[RX_BATCH];
	struct iovec in[RX_BATCH];
	struct mmsghdr mm[RX_BATCH];
	struct rdx_meta meta;
	struct iovec out[2] = { { &meta, sizeof(meta) }, { NULL, 0 } };
	int n;

	for (int i = 0; i < RX_BATCH; i++) {
		in[i] = (struct iovec){ buf[i], RX_MAX };
		mm[i].msg_hdr = (struct msghdr){ .msg_name = &from[i], .msg_namelen = sizeof(from[i]),
						 .msg_iov = &in[i], .msg_iovlen = 1,
						 .msg_control = ctl[i].b,
						 .msg_controllen = sizeof(ctl[i].b) };
	}
	n = recvmmsg(sock, mm, RX_BATCH, MSG_DONTWAIT, NULL);
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		sr_warn("recvmmsg: %s", strerror(errno));
	for (int i = 0; i < n; i++) {
		unsigned int len = mm[i].msg_len;

		d->st[RDX_ST_RX]++;
		if (len < RDX_BTH_LEN || (mm[i].msg_hdr.msg_flags & MSG_TRUNC)) {
			d->st[RDX_ST_SHORT]++;
			continue;
		}
		roced_meta(&meta, &mm[i].msg_hdr, d->port);
		meta.len = len;
		out[1] = (struct iovec){ buf[i], len };
		roced_route(d, out);
	}
}
