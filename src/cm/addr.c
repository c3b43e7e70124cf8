// SPDX-License-Identifier: MIT
/*
 * Addresses: rdma_bind_addr, rdma_resolve_addr, rdma_resolve_route and the port getters.
 *
 * Our port space is the host's TCP port space: binding an id binds a real TCP socket, so
 * EADDRINUSE, EACCES and friends come from the kernel exactly as for any TCP server, and an
 * RDMA listener and a TCP listener can never share a port. On top of that the process
 * remembers its own explicit binds, because we set SO_REUSEADDR (so that a restarted server
 * is not locked out by TIME_WAIT connections) and that alone would let two ids of ours bind
 * the same port without listening.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"
#include "netdev/sr_route.h"

void sr_cm_set_addr(struct sockaddr_storage *slot, const struct sockaddr *sa)
{
	memset(slot, 0, sizeof(*slot));
	if (sr_addr_is_v4mapped(sa)) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		struct sockaddr_in *s4 = (struct sockaddr_in *)slot;

		s4->sin_family = AF_INET;
		s4->sin_port = s6->sin6_port;
		memcpy(&s4->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		return;
	}
	memcpy(slot, sa, sr_addr_len(sa));
}

static uint16_t sr_port_of(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

static void sr_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

static bool sr_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
}

/* The kernel CM's rule for explicit ports (cma_check_port), within this process. */
static int sr_cm_port_conflict(const struct sr_cm_id *id, const struct sockaddr *addr)
{
	uint16_t port = sr_port_of(addr);
	struct sr_list *pos, *tmp;

	sr_list_for_each_safe(pos, tmp, &sr_cm_ids) {
		const struct sr_cm_id *o = sr_list_entry(pos, struct sr_cm_id, node);
		const struct sockaddr *oa = &o->id.route.addr.src_addr;

		if (o == id || o->fd < 0 || o->state == SR_CM_DESTROYING)
			continue;
		if (oa->sa_family != addr->sa_family || sr_port_of(oa) != port)
			continue;
		if (id->reuseaddr && o->reuseaddr && o->state != SR_CM_LISTEN)
			continue;
		if (sr_addr_is_any(oa) || sr_addr_is_any(addr))
			return -EADDRNOTAVAIL;
		if (sr_same_ip(oa, addr))
			return -EADDRINUSE;
	}
	return 0;
}

int sr_cm_bind_locked(struct sr_cm_id *id, const struct sockaddr *addr, bool explicit)
{
	struct sockaddr_storage got;
	socklen_t len = sizeof(got);
	unsigned int alen = sr_addr_len(addr);
	int fd, one = 1, err;

	if (!alen)
		return -EAFNOSUPPORT;
	if (addr->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)addr)->sin6_addr) &&
	    !((const struct sockaddr_in6 *)addr)->sin6_scope_id)
		return -EINVAL;
	explicit = explicit && sr_port_of(addr) != 0;
	if (explicit) {
		err = sr_cm_port_conflict(id, addr);
		if (err)
			return err;
	}
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (addr->sa_family == AF_INET6 && id->afonly >= 0)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &id->afonly, sizeof(id->afonly));
	/* a restarted server must not be locked out by its old TIME_WAIT connections */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sr_cm_apply_sockopts(id, fd);
	if (bind(fd, addr, alen) < 0 || getsockname(fd, (struct sockaddr *)&got, &len) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	/* keep the scope id of a link-local address (getsockname reports it too) */
	sr_cm_set_addr(&id->id.route.addr.src_storage, (struct sockaddr *)&got);
	id->fd = fd;
	id->state = SR_CM_BOUND;

	/* A specific address picks its device now; wildcard and loopback wait (kernel CM). */
	if (!id->dev && !sr_addr_is_any(addr) && !sr_addr_is_loopback(addr)) {
		struct sr_cm_dev *dev = sr_cm_dev_for_local(addr);

		if (dev)
			sr_cm_id_set_dev(id, dev);
		else
			sr_warn("no device for a bound address (errno %d)", errno);
	}
	return 0;
}

SR_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct sr_cm_id *s;
	int err;

	if (!id || !addr)
		return sr_cm_fail(EINVAL);
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return sr_cm_fail(EAFNOSUPPORT);
	s = to_sr_id(id);
	pthread_mutex_lock(&sr_cm_lock);
	err = s->state == SR_CM_IDLE ? sr_cm_bind_locked(s, addr, true) : -EINVAL;
	pthread_mutex_unlock(&sr_cm_lock);
	return err ? sr_cm_fail(-err) : 0;
}

SR_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	const struct sockaddr *bound;
	struct sockaddr_storage src;
	struct sr_cm_dev *dev;
	struct sr_route rt;
	struct sr_cm_id *s;
	bool sync;
	int err;

	if (!id || !dst_addr)
		return sr_cm_fail(EINVAL);
	if (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6)
		return sr_cm_fail(EAFNOSUPPORT);
	s = to_sr_id(id);
	bound = &id->route.addr.src_addr;

	pthread_mutex_lock(&sr_cm_lock);
	sync = s->sync;
	if (s->state == SR_CM_IDLE) {
		if (src_addr && src_addr->sa_family != dst_addr->sa_family) {
			err = -EINVAL;
			goto out;
		}
		err = sr_route_lookup(dst_addr, src_addr, 0, &rt);
		if (err)
			goto out;
		/* Implicit bind: the route's source (or the given one), a kernel-chosen port. */
		if (src_addr && !sr_addr_is_any(src_addr))
			memcpy(&src, src_addr, sr_addr_len(src_addr));
		else
			src = rt.src;
		sr_set_port((struct sockaddr *)&src, src_addr ? sr_port_of(src_addr) : 0);
		err = sr_cm_bind_locked(s, (struct sockaddr *)&src, true);
		if (err)
			goto out;
	} else if (s->state == SR_CM_BOUND) {
		if (bound->sa_family != dst_addr->sa_family) {
			err = -EINVAL;
			goto out;
		}
		err = sr_route_lookup(dst_addr, sr_addr_is_any(bound) ? NULL : bound, 0, &rt);
		if (err)
			goto out;
		if (sr_addr_is_any(bound)) {
			/* report the source the kernel will use, with our port */
			uint16_t port = sr_port_of(bound);

			sr_cm_set_addr(&id->route.addr.src_storage, (struct sockaddr *)&rt.src);
			sr_set_port(&id->route.addr.src_addr, port);
		}
	} else {
		err = -EINVAL;
		goto out;
	}

	sr_cm_set_addr(&id->route.addr.dst_storage, dst_addr);
	if (!s->dev) {
		dev = sr_cm_dev_by_ifindex(rt.dev_ifindex);
		if (!dev) {
			/* no RDMA device behind the egress interface: the kernel's -ENODEV */
			sr_cm_post(s, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV, NULL);
			goto done;
		}
		sr_cm_id_set_dev(s, dev);
	}
	s->state = SR_CM_ADDR_RESOLVED;
	sr_cm_post(s, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
done:
	pthread_mutex_unlock(&sr_cm_lock);
	/* an async id may be gone already: its event can be fetched and the id destroyed */
	return sync ? sr_cm_sync_wait(s) : 0;
out:
	pthread_mutex_unlock(&sr_cm_lock);
	return sr_cm_fail(-err);
}

SR_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct sr_cm_id *s;
	bool sync;

	if (!id)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	pthread_mutex_lock(&sr_cm_lock);
	sync = s->sync;
	if (s->state != SR_CM_ADDR_RESOLVED) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(EINVAL);
	}
	/* iWARP: the route is the TCP connection's; nothing to ask anyone. */
	s->state = SR_CM_ROUTE_RESOLVED;
	sr_cm_post(s, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
	pthread_mutex_unlock(&sr_cm_lock);
	return sync ? sr_cm_sync_wait(s) : 0;
}

static __be16 sr_cm_port_be(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

SR_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? sr_cm_port_be(&id->route.addr.src_addr) : 0;
}

SR_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? sr_cm_port_be(&id->route.addr.dst_addr) : 0;
}
