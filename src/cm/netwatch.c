// SPDX-License-Identifier: MIT
/*
 * The CM's view of host network changes: one rtnetlink subscription (neighbours, links,
 * addresses, routes; netdev/sr_netwatch.h) on librdmacm's engine thread, opened the first
 * time an id resolves an address. It passes neighbour updates to the next-hop waits
 * (resolve.c, through the watcher it registered: this file calls none above it) and tells ids
 * when what they were resolved against no longer holds:
 *
 *   RDMA_CM_EVENT_ADDR_CHANGE, a notice that changes no state (a connection whose path
 *   still works keeps moving data), to an id when
 *     - the address it is bound to (its source address) is removed from its interface;
 *     - a route change sends its destination out of another interface, or leaves none
 *       (and again when a route comes back);
 *     - its next hop's link-layer address changes (a new MAC in a neighbour update).
 *   The kernel's CM raises ADDR_CHANGE only on bonding failover; we raise it on every change
 *   that invalidates the id's address or next hop. Route and next-hop changes are followed
 *   for ids that resolved a destination (the active side); every id with an address hears
 *   of its removal.
 *
 *   RDMA_CM_EVENT_DEVICE_REMOVAL, once, to every id bound to the device of an interface
 *   that was removed; its QP then goes to the error state, which flushes its posted work
 *   requests. The application destroys the QP and the id as usual.
 *
 * Everything here runs on the engine thread; ids and their fields under sr_cm_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"
#include "netdev/sr_netwatch.h"
#include "netdev/sr_route.h"

static struct sr_netwatch *sr_cm_nw;
/* Who hears of neighbour updates (resolve.c's next-hop waits); under sr_cm_lock. */
static const struct sr_cm_neigh_watcher *sr_cm_nw_watcher;
static struct sr_engine_handler sr_cm_nw_h = { .fd = -1 };

/* Ids to tell about a removed device, gathered under the lock, told after it. */
struct sr_cm_removed {
	struct sr_cm_id **ids;
	size_t n, cap;
};

static bool sr_cm_has_path(const struct sr_cm_id *id)
{
	switch (id->state) {
	case SR_CM_ADDR_RESOLVED:
	case SR_CM_ROUTE_RESOLVED:
	case SR_CM_CONNECTING:
	case SR_CM_RESPONDED:
	case SR_CM_ESTABLISHED:
		return id->path.oif != 0 && !id->dev_removed;
	default:
		return false;
	}
}

static void sr_cm_addr_change_locked(struct sr_cm_id *id, const char *why)
{
	sr_cm_assert_locked();
	sr_dbg("id %p: ADDR_CHANGE (%s)", (void *)id, why);
	sr_cm_post(id, RDMA_CM_EVENT_ADDR_CHANGE, 0, NULL);
}

static void sr_cm_nw_neigh(const struct sr_neigh *n)
{
	struct sr_list *p, *q;

	if (sr_cm_nw_watcher)
		sr_cm_nw_watcher->neigh(n);
	if (n->deleted || n->state != SR_NEIGH_VALID || !n->lladdr_len)
		return;
	sr_list_for_each_safe(p, q, &sr_cm_ids) {
		struct sr_cm_id *id = sr_list_entry(p, struct sr_cm_id, node);

		if (!sr_cm_has_path(id) || id->path.oif != n->ifindex || !id->path.mac_len ||
		    !sr_addr_same_ip((struct sockaddr *)&id->path.nh,
				     (const struct sockaddr *)&n->addr))
			continue;
		if (id->path.mac_len == n->lladdr_len &&
		    memcmp(id->path.mac, n->lladdr, n->lladdr_len) == 0)
			continue;
		id->path.mac_len = SR_MIN(n->lladdr_len, sizeof(id->path.mac));
		memcpy(id->path.mac, n->lladdr, id->path.mac_len);
		sr_cm_addr_change_locked(id, "next hop MAC");
	}
}

static void sr_cm_nw_addr_del(const struct sockaddr *addr)
{
	struct sr_list *p, *q;

	sr_list_for_each_safe(p, q, &sr_cm_ids) {
		struct sr_cm_id *id = sr_list_entry(p, struct sr_cm_id, node);
		const struct sockaddr *src = &id->id.route.addr.src_addr;

		if (id->state == SR_CM_IDLE || id->state == SR_CM_DESTROYING || id->dev_removed ||
		    !sr_addr_len(src) || !sr_addr_same_ip(src, addr))
			continue;
		sr_cm_addr_change_locked(id, "source address removed");
	}
}

/* Every id with a path asks for its route again; one lookup per (source, destination). */
static void sr_cm_nw_routes(void)
{
	struct sockaddr_storage last_src, last_dst;
	struct sr_route rt;
	bool have_last = false;
	int oif = -1;
	struct sr_list *p, *q;

	sr_list_for_each_safe(p, q, &sr_cm_ids) {
		struct sr_cm_id *id = sr_list_entry(p, struct sr_cm_id, node);
		const struct sockaddr *src = &id->id.route.addr.src_addr;
		const struct sockaddr *dst = &id->id.route.addr.dst_addr;

		if (!sr_cm_has_path(id))
			continue;
		if (!have_last || !sr_addr_same_ip((struct sockaddr *)&last_src, src) ||
		    !sr_addr_same_ip((struct sockaddr *)&last_dst, dst)) {
			oif = sr_route_lookup(dst, src, 0, &rt) ? -1 : rt.oif;
			memcpy(&last_src, src, sr_addr_len(src));
			memcpy(&last_dst, dst, sr_addr_len(dst));
			have_last = true;
		}
		if (oif == id->path.oif)
			continue;
		/* from now on the new path is the one watched (-1: none) */
		id->path.oif = oif;
		id->path.mac_len = 0;
		if (oif > 0)
			id->path.nh = rt.nexthop;
		sr_cm_addr_change_locked(id, oif > 0 ? "route moved" : "route gone");
	}
}

static void sr_cm_nw_link_del(int ifindex, struct sr_cm_removed *r)
{
	struct sr_list *p, *q;

	sr_list_for_each_safe(p, q, &sr_cm_ids) {
		struct sr_cm_id *id = sr_list_entry(p, struct sr_cm_id, node);

		if (!id->dev || id->dev->ifindex != ifindex || id->dev_removed ||
		    id->state == SR_CM_DESTROYING)
			continue;
		if (r->n == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 16;
			struct sr_cm_id **ids = realloc(r->ids, cap * sizeof(*ids));

			if (!ids)
				return; /* out of memory: the rest hear of it from their streams */
			r->ids = ids;
			r->cap = cap;
		}
		id->dev_removed = true;
		sr_cm_id_hold(id);
		r->ids[r->n++] = id;
		sr_cm_post(id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0, NULL);
	}
}

/* Ids of removed devices, gathered during one sr_netwatch_process() (engine thread). */
static struct sr_cm_removed sr_cm_nw_removed;

static void sr_cm_nw_event(void *arg, const struct sr_netwatch_event *ev)
{
	(void)arg;
	switch (ev->kind) {
	case SR_NETWATCH_NEIGH:
		sr_cm_nw_neigh(&ev->neigh);
		break;
	case SR_NETWATCH_ADDR_DEL:
		sr_cm_nw_addr_del((const struct sockaddr *)&ev->addr);
		break;
	case SR_NETWATCH_ROUTE:
		sr_cm_nw_routes();
		break;
	case SR_NETWATCH_LINK_DEL:
		sr_cm_nw_link_del(ev->ifindex, &sr_cm_nw_removed);
		break;
	}
}

static void sr_cm_nw_cb(struct sr_engine_handler *h, uint32_t events)
{
	struct sr_cm_removed removed;
	size_t i;

	(void)h;
	(void)events;
	pthread_mutex_lock(&sr_cm_lock);
	if (sr_netwatch_process(sr_cm_nw) == -ENOBUFS) {
		/* lost updates: whatever waits for a next hop asks again, routes are re-read */
		if (sr_cm_nw_watcher)
			sr_cm_nw_watcher->lost();
		sr_cm_nw_routes();
	}
	removed = sr_cm_nw_removed;
	memset(&sr_cm_nw_removed, 0, sizeof(sr_cm_nw_removed));
	pthread_mutex_unlock(&sr_cm_lock);

	/* QPs of a removed device go to error (flushing their work requests), unlocked */
	for (i = 0; i < removed.n; i++) {
		sr_cm_qp_to_err(sr_cm_link_live_qp(removed.ids[i]));
		sr_cm_id_unhold(removed.ids[i]);
	}
	free(removed.ids);
}

void sr_cm_netwatch_set_watcher_locked(const struct sr_cm_neigh_watcher *w)
{
	sr_cm_assert_locked();
	sr_cm_nw_watcher = w;
}

static void sr_cm_netwatch_fork_child(void)
{
	/* the parent's subscription: the child's copy of its socket goes, a new one comes
	 * with the child's first id that needs it */
	if (sr_cm_nw)
		sr_netwatch_close(sr_cm_nw);
	sr_cm_nw = NULL;
	memset(&sr_cm_nw_h, 0, sizeof(sr_cm_nw_h));
	sr_cm_nw_h.fd = -1;
}

int sr_cm_netwatch_start_locked(void)
{
	int err;

	sr_cm_assert_locked();
	if (sr_cm_nw)
		return 0;
	sr_cm_nw = sr_netwatch_open(sr_cm_nw_event, NULL);
	if (!sr_cm_nw)
		return -errno;
	sr_cm_nw_h.fd = sr_netwatch_fd(sr_cm_nw);
	sr_cm_nw_h.cb = sr_cm_nw_cb;
	err = sr_engine_add(&sr_cm_nw_h, EPOLLIN);
	if (err) {
		sr_netwatch_close(sr_cm_nw);
		sr_cm_nw = NULL;
	}
	return err;
}

/* fork(): registered here, not in core.c, so that the core calls no CM file. */
__attribute__((constructor)) static void sr_cm_netwatch_fork_register(void)
{
	pthread_atfork(NULL, NULL, sr_cm_netwatch_fork_child);
}
