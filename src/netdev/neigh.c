// SPDX-License-Identifier: MIT
/*
 * Neighbour entries over plain rtnetlink (see sr_neigh.h). The messages are small and
 * fixed, so they are built and parsed here directly rather than through libnl's caches.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "common/sr_sockaddr.h"
#include "netdev/sr_neigh.h"

static unsigned int sr_neigh_addr_bytes(const struct sockaddr *sa, const void **p)
{
	if (sa->sa_family == AF_INET) {
		*p = &((const struct sockaddr_in *)sa)->sin_addr;
		return 4;
	}
	*p = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	return 16;
}

static enum sr_neigh_state sr_neigh_nud(uint16_t nud)
{
	if (nud & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP))
		return SR_NEIGH_VALID;
	if (nud & NUD_FAILED)
		return SR_NEIGH_FAILED;
	return SR_NEIGH_NONE;
}

bool sr_neigh_parse(const struct nlmsghdr *h, struct sr_neigh *n)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	const struct rtattr *rta;
	int len;

	if ((h->nlmsg_type != RTM_NEWNEIGH && h->nlmsg_type != RTM_DELNEIGH) ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(*nd)) ||
	    (nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6))
		return false;
	memset(n, 0, sizeof(*n));
	n->ifindex = nd->ndm_ifindex;
	n->state = sr_neigh_nud(nd->ndm_state);
	n->deleted = h->nlmsg_type == RTM_DELNEIGH;
	len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*nd));
	for (rta = (const struct rtattr *)((const char *)nd + NLMSG_ALIGN(sizeof(*nd)));
	     RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		unsigned int plen = RTA_PAYLOAD(rta);

		if (rta->rta_type == NDA_DST) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&n->addr;
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&n->addr;

			n->addr.ss_family = nd->ndm_family;
			if (nd->ndm_family == AF_INET && plen == 4)
				memcpy(&s4->sin_addr, RTA_DATA(rta), 4);
			else if (nd->ndm_family == AF_INET6 && plen == 16)
				memcpy(&s6->sin6_addr, RTA_DATA(rta), 16);
			else
				return false;
			if (nd->ndm_family == AF_INET6 &&
			    IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)&n->addr)->sin6_addr))
				((struct sockaddr_in6 *)&n->addr)->sin6_scope_id =
					(uint32_t)nd->ndm_ifindex;
		} else if (rta->rta_type == NDA_LLADDR && plen <= sizeof(n->lladdr)) {
			memcpy(n->lladdr, RTA_DATA(rta), plen);
			n->lladdr_len = plen;
		}
	}
	return n->addr.ss_family != 0;
}

struct sr_neigh_req {
	struct nlmsghdr h;
	struct ndmsg nd;
	char attrs[64];
};

static void sr_neigh_req_init(struct sr_neigh_req *r, uint16_t type, uint16_t flags,
			      int ifindex, const struct sockaddr *addr)
{
	struct rtattr *rta;
	const void *bytes;
	unsigned int blen = sr_neigh_addr_bytes(addr, &bytes);

	memset(r, 0, sizeof(*r));
	r->h.nlmsg_type = type;
	r->h.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
	r->h.nlmsg_seq = 1;
	r->nd.ndm_family = (uint8_t)addr->sa_family;
	r->nd.ndm_ifindex = ifindex;
	rta = (struct rtattr *)r->attrs;
	rta->rta_type = NDA_DST;
	rta->rta_len = (unsigned short)RTA_LENGTH(blen);
	memcpy(RTA_DATA(rta), bytes, blen);
	r->h.nlmsg_len = NLMSG_LENGTH(sizeof(r->nd)) + RTA_ALIGN(rta->rta_len);
}

/* Send r and read the answer into buf; returns its length or a negative errno. */
static int sr_neigh_talk(struct sr_neigh_req *r, char *buf, size_t size)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	int fd, n, err = 0;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendto(fd, r, r->h.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		err = -errno;
	n = err ? -1 : (int)recv(fd, buf, size, 0);
	if (!err && n < 0)
		err = -errno;
	close(fd);
	return err ? err : n;
}

/* The error code of an NLMSG_ERROR answer (0 = ack), or 1 if it is not one. */
static int sr_neigh_nlerr(const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);

	if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
		return 1;
	return e->error;
}

int sr_neigh_get(int ifindex, const struct sockaddr *addr, struct sr_neigh *out)
{
	union {
		char buf[1024];
		struct nlmsghdr align;
	} u;
	struct sr_neigh_req r;
	struct nlmsghdr *h;
	int n, e;

	if (!sr_addr_len(addr))
		return -EINVAL;
	sr_neigh_req_init(&r, RTM_GETNEIGH, 0, ifindex, addr);
	n = sr_neigh_talk(&r, u.buf, sizeof(u.buf));
	if (n < 0)
		return n;
	h = &u.align;
	if (!NLMSG_OK(h, (unsigned int)n))
		return -EIO;
	e = sr_neigh_nlerr(h);
	if (e <= 0)
		return e == 0 ? -EIO : e; /* -ENOENT: no entry */
	return sr_neigh_parse(h, out) ? 0 : -EIO;
}

static int sr_neigh_udp_probe(int ifindex, const struct sockaddr *addr)
{
	struct sockaddr_storage d;
	int fd, err = 0;

	memcpy(&d, addr, sr_addr_len(addr));
	sr_addr_set_port((struct sockaddr *)&d, 9);
	if (d.ss_family == AF_INET6 && !((struct sockaddr_in6 *)&d)->sin6_scope_id)
		((struct sockaddr_in6 *)&d)->sin6_scope_id = (uint32_t)ifindex;
	fd = socket(d.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, "", 0, 0, (struct sockaddr *)&d, sr_addr_len((struct sockaddr *)&d)) < 0 &&
	    errno != EAGAIN)
		err = -errno;
	close(fd);
	return err;
}

int sr_neigh_trigger(int ifindex, const struct sockaddr *addr)
{
	union {
		char buf[512];
		struct nlmsghdr align;
	} u;
	struct sr_neigh_req r;
	int n, e;

	if (!sr_addr_len(addr))
		return -EINVAL;
	sr_neigh_req_init(&r, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_ACK, ifindex, addr);
	r.nd.ndm_flags = NTF_USE;
	r.nd.ndm_state = NUD_NONE;
	n = sr_neigh_talk(&r, u.buf, sizeof(u.buf));
	e = n < 0 ? n : (NLMSG_OK(&u.align, (unsigned int)n) ? sr_neigh_nlerr(&u.align) : -EIO);
	if (e == 0)
		return 0;
	/* no CAP_NET_ADMIN here: a packet for it makes the kernel resolve it all the same */
	return sr_neigh_udp_probe(ifindex, addr);
}
