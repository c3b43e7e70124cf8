// SPDX-License-Identifier: MIT
/*
 * Addresses: rdma_bind_addr, rdma_resolve_addr, rdma_resolve_route and the port getters.
 * Which port an id gets, and whom it may share it with, is port_space.c's business.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"
#include "netdev/sr_route.h"

/* Whether binding to addr picks a device (a specific address; wildcard and loopback wait,
 * as in the kernel CM). */
static bool sr_cm_bind_picks_dev(const struct sockaddr *addr)
{
	return !sr_addr_is_any(addr) && !sr_addr_is_loopback(addr);
}

int sr_cm_bind_locked(struct sr_cm_id *id, const struct sockaddr *addr, bool active,
		      struct sr_cm_dev *dev)
{
	int err;

	sr_cm_assert_locked();
	if (!sr_addr_len(addr))
		return -EAFNOSUPPORT;
	if (addr->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)addr)->sin6_addr) &&
	    !((const struct sockaddr_in6 *)addr)->sin6_scope_id)
		return -EINVAL;
	err = active ? sr_cm_port_bind_active_locked(id, addr) : sr_cm_port_bind_locked(id, addr);
	if (err)
		return err;
	/* from now on the id hears of changes to its address and device (netwatch.c) */
	if (sr_cm_netwatch_start_locked())
		sr_warn("no rtnetlink subscription: address changes will go unnoticed");
	sr_cm_state_set(id, SR_CM_BOUND);

	/* A specific address picks its device now (the caller found it). */
	if (!id->dev && dev)
		sr_cm_id_set_dev(id, dev);
	return 0;
}

SR_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct sr_cm_dev *dev = NULL;
	int err, dev_err = 0;
	struct sr_cm_id *s;

	if (!id || !addr)
		return sr_cm_fail(EINVAL);
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return sr_cm_fail(EAFNOSUPPORT);
	s = to_sr_id(id);
	/* the device is opened without the CM lock (devices.c) */
	if (sr_cm_bind_picks_dev(addr)) {
		dev = sr_cm_dev_for_local(addr);
		dev_err = errno;
	}
	pthread_mutex_lock(&sr_cm_lock);
	err = s->state == SR_CM_IDLE ? sr_cm_bind_locked(s, addr, false, dev) : -EINVAL;
	if (!err && !s->dev && sr_cm_bind_picks_dev(addr))
		sr_warn("no device for a bound address (errno %d)", dev_err);
	pthread_mutex_unlock(&sr_cm_lock);
	return err ? sr_cm_fail(-err) : 0;
}

/*
 * Whether rdma_resolve_addr is to let the CM lock go and open the device of ifindex (not open
 * yet, not tried already: a device that failed to open counts as none, as before).
 */
static bool sr_cm_open_first(int ifindex, int *open_if, const int *tried, int ntried)
{
	if (ifindex <= 0 || ntried >= 2 || sr_cm_dev_find(ifindex))
		return false;
	for (int i = 0; i < ntried; i++)
		if (tried[i] == ifindex)
			return false;
	*open_if = ifindex;
	return true;
}

SR_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	int err, src_if, open_if = 0, tried[2], ntried = 0, dev_err = 0;
	struct sr_cm_dev *dev, *src_dev;
	const struct sockaddr *bound;
	struct sockaddr_storage src;
	struct sr_route rt;
	struct sr_cm_id *s;
	bool sync, idle;

	if (sr_cm_id_inherited(id))
		return sr_cm_fail(EIO); /* the parent's id (fork) */
	if (!id || !dst_addr)
		return sr_cm_fail(EINVAL);
	if (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6)
		return sr_cm_fail(EAFNOSUPPORT);
	s = to_sr_id(id);
	bound = &id->route.addr.src_addr;

again:
	pthread_mutex_lock(&sr_cm_lock);
	sync = s->sync;
	idle = s->state == SR_CM_IDLE;
	if (idle) {
		if (src_addr && src_addr->sa_family != dst_addr->sa_family) {
			err = -EINVAL;
			goto out;
		}
		err = sr_route_lookup(dst_addr, src_addr, 0, &rt);
		if (err)
			goto out;
		/*
		 * Implicit bind: the route's source (or the given one). The destination is
		 * known first, as in the kernel CM, so that a port can be shared with other
		 * active ids whose tuples differ (port_space.c).
		 */
		if (src_addr && !sr_addr_is_any(src_addr))
			memcpy(&src, src_addr, sr_addr_len(src_addr));
		else
			src = rt.src;
		sr_addr_set_port((struct sockaddr *)&src, src_addr ? sr_addr_port(src_addr) : 0);
	} else if (s->state == SR_CM_BOUND) {
		if (bound->sa_family != dst_addr->sa_family) {
			err = -EINVAL;
			goto out;
		}
		err = sr_route_lookup(dst_addr, sr_addr_is_any(bound) ? NULL : bound, 0, &rt);
		if (err)
			goto out;
	} else {
		err = -EINVAL;
		goto out;
	}

	/*
	 * The device this takes: the implicit bind's source address's, else the egress
	 * interface's. One not open yet is opened without the CM lock (devices.c), and all of
	 * the above is looked at again: nothing has changed yet.
	 */
	src_dev = NULL;
	if (idle && sr_cm_bind_picks_dev((struct sockaddr *)&src)) {
		src_if = sr_cm_dev_ifindex_for_local((struct sockaddr *)&src);
		if (src_if <= 0)
			dev_err = errno;
		src_dev = src_if > 0 ? sr_cm_dev_find(src_if) : NULL;
		if (!src_dev && sr_cm_open_first(src_if, &open_if, tried, ntried))
			goto open_first;
	}
	if (!s->dev && !src_dev && sr_cm_open_first(rt.dev_ifindex, &open_if, tried, ntried))
		goto open_first;

	if (idle) {
		sr_addr_store(&id->route.addr.dst_storage, dst_addr);
		err = sr_cm_bind_locked(s, (struct sockaddr *)&src, true, src_dev);
		if (err) {
			memset(&id->route.addr.dst_storage, 0, sizeof(id->route.addr.dst_storage));
			goto out;
		}
		if (!s->dev && sr_cm_bind_picks_dev((struct sockaddr *)&src))
			sr_warn("no device for a bound address (errno %d)", dev_err);
	} else if (sr_addr_is_any(bound)) {
		/* report the source the kernel will use, with our port */
		uint16_t port = sr_addr_port(bound);

		sr_addr_store(&id->route.addr.src_storage, (struct sockaddr *)&rt.src);
		sr_addr_set_port(&id->route.addr.src_addr, port);
	}

	sr_addr_store(&id->route.addr.dst_storage, dst_addr);
	if (!s->dev) {
		dev = sr_cm_dev_find(rt.dev_ifindex);
		if (!dev) {
			/* no RDMA device behind the egress interface: the kernel's -ENODEV */
			sr_cm_post(s, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV, NULL);
			goto done;
		}
		sr_cm_id_set_dev(s, dev);
	}
	/* The host's own addresses need no next hop; others wait for it (resolve.c), and
	 * their path is watched for changes from then on (netwatch.c). */
	s->path.oif = 0;
	s->path.mac_len = 0;
	if (!rt.local && !sr_addr_is_loopback(dst_addr)) {
		s->path.oif = rt.oif;
		s->path.nh = rt.nexthop;
		err = sr_cm_resolve_nexthop_locked(s, rt.oif, (struct sockaddr *)&rt.nexthop,
						   timeout_ms);
		if (err < 0) {
			sr_cm_post(s, RDMA_CM_EVENT_ADDR_ERROR, err, NULL);
			goto done;
		}
		if (err == 0)
			goto done; /* ADDR_QUERY: the event comes from the engine thread */
	}
	sr_cm_state_set(s, SR_CM_ADDR_RESOLVED);
	sr_cm_post(s, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
done:
	pthread_mutex_unlock(&sr_cm_lock);
	/* an async id may be gone already: its event can be fetched and the id destroyed */
	return sync ? sr_cm_sync_wait(s) : 0;
open_first:
	pthread_mutex_unlock(&sr_cm_lock);
	if (!sr_cm_dev_by_ifindex(open_if))
		dev_err = errno;
	tried[ntried++] = open_if;
	goto again;
out:
	pthread_mutex_unlock(&sr_cm_lock);
	return sr_cm_fail(-err);
}

SR_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct sr_cm_id *s;
	bool sync;

	if (sr_cm_id_inherited(id))
		return sr_cm_fail(EIO); /* the parent's id (fork) */
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
	sr_cm_state_set(s, SR_CM_ROUTE_RESOLVED);
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
