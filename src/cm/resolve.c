// SPDX-License-Identifier: MIT
/*
 * rdma_resolve_addr's wait for the route's next hop, as the kernel's rdma_resolve_ip()
 * does it: look the neighbour entry up; if it is not valid, make the kernel resolve it
 * (sr_neigh_trigger: the neighbour subsystem then sends its ARP / ND probes, at its own
 * pace: net.ipv4.neigh.<if>.retrans_time_ms apart, mcast_solicit of them, 3 x 1 s by
 * default) and wait for the RTNLGRP_NEIGH update that says it is valid (ADDR_RESOLVED) or
 * failed (ADDR_ERROR -EHOSTUNREACH), or for the caller's timeout_ms (ADDR_ERROR
 * -ETIMEDOUT). Nothing here sniffs packets or polls.
 *
 * Ids that wait for the same next hop on the same interface share one wait (struct
 * sr_cm_nwait) and one trigger; all waits share the CM's rtnetlink subscription
 * (netwatch.c, which passes updates up through the watcher registered here) and one engine timer armed for the earliest deadline, both on librdmacm's
 * engine thread, so a waiting id costs no file descriptor of its own.
 *
 * The subscription is open before the entry is looked up, so an update cannot fall
 * between the look and the wait. Everything runs under sr_cm_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"
#include "netdev/sr_neigh.h"

struct sr_cm_nwait {
	int ifindex;
	struct sockaddr_storage nh;
	struct sr_list ids;  /* struct sr_cm_id, through nwait_node */
	struct sr_list node; /* sr_cm_nwaits */
};

static struct sr_list sr_cm_nwaits = SR_LIST_INIT(sr_cm_nwaits);
static struct sr_engine_timer sr_cm_resolve_timer;

/* Remember the next hop's link-layer address, to notice when it changes (netwatch.c). */
static void sr_cm_path_set_mac(struct sr_cm_id *id, const struct sr_neigh *n)
{
	id->path.mac_len = SR_MIN(n->lladdr_len, sizeof(id->path.mac));
	memcpy(id->path.mac, n->lladdr, id->path.mac_len);
}

/*
 * The id's resolution ends (lock held): ADDR_RESOLVED for status 0 (n: the valid entry),
 * else ADDR_ERROR.
 */
static void sr_cm_resolve_done_locked(struct sr_cm_id *id, int status, const struct sr_neigh *n)
{
	sr_cm_assert_locked();
	sr_list_del(&id->nwait_node);
	sr_list_init(&id->nwait_node);
	id->nwait = NULL;
	if (status) {
		/* the kernel CM returns a failed id to ADDR_BOUND: it may resolve again */
		sr_cm_state_set(id, SR_CM_BOUND);
		id->path.oif = 0;
		sr_cm_post(id, RDMA_CM_EVENT_ADDR_ERROR, status, NULL);
	} else {
		if (n)
			sr_cm_path_set_mac(id, n);
		sr_cm_state_set(id, SR_CM_ADDR_RESOLVED);
		sr_cm_post(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	}
}

static void sr_cm_nwait_finish_locked(struct sr_cm_nwait *w, int status, const struct sr_neigh *n)
{
	struct sr_list *pos, *tmp;

	sr_cm_assert_locked();
	sr_list_for_each_safe(pos, tmp, &w->ids)
		sr_cm_resolve_done_locked(sr_list_entry(pos, struct sr_cm_id, nwait_node), status,
					  n);
	sr_list_del(&w->node);
	free(w);
}

/* Arm the timer for the earliest deadline of any waiting id (none: disarm). */
static void sr_cm_resolve_rearm_locked(void)
{
	uint64_t first = 0, now;
	struct sr_list *p, *q;

	sr_cm_assert_locked();
	sr_list_for_each_safe(p, q, &sr_cm_nwaits) {
		struct sr_cm_nwait *w = sr_list_entry(p, struct sr_cm_nwait, node);
		struct sr_list *ip, *iq;

		sr_list_for_each_safe(ip, iq, &w->ids) {
			struct sr_cm_id *id = sr_list_entry(ip, struct sr_cm_id, nwait_node);

			if (!first || id->resolve_deadline < first)
				first = id->resolve_deadline;
		}
	}
	if (!first)
		return; /* an expiry with nothing due does no harm */
	now = sr_mono_ns();
	/* rounded up: firing early would find nothing due and re-arm for 0 ms */
	sr_engine_timer_arm(&sr_cm_resolve_timer,
			    first > now ? (unsigned int)((first - now + 999999u) / 1000000u) : 0);
}

static struct sr_cm_nwait *sr_cm_nwait_find_locked(int ifindex, const struct sockaddr *nh)
{
	struct sr_list *p, *q;

	sr_cm_assert_locked();
	sr_list_for_each_safe(p, q, &sr_cm_nwaits) {
		struct sr_cm_nwait *w = sr_list_entry(p, struct sr_cm_nwait, node);

		if (w->ifindex == ifindex && sr_addr_same_ip((struct sockaddr *)&w->nh, nh))
			return w;
	}
	return NULL;
}

/* A neighbour update (netwatch.c): finishes the waits for that next hop once valid or failed. */
static void sr_cm_resolve_neigh_locked(const struct sr_neigh *n)
{
	struct sr_cm_nwait *w;

	sr_cm_assert_locked();
	if (n->deleted || n->state == SR_NEIGH_NONE)
		return;
	w = sr_cm_nwait_find_locked(n->ifindex, (const struct sockaddr *)&n->addr);
	if (w)
		sr_cm_nwait_finish_locked(w, n->state == SR_NEIGH_VALID ? 0 : -EHOSTUNREACH, n);
	sr_cm_resolve_rearm_locked();
}

/* Updates were lost (netwatch.c): ask the kernel about every next hop still awaited. */
static void sr_cm_resolve_recheck_locked(void)
{
	struct sr_list *p, *q;

	sr_cm_assert_locked();
	sr_list_for_each_safe(p, q, &sr_cm_nwaits) {
		struct sr_cm_nwait *w = sr_list_entry(p, struct sr_cm_nwait, node);
		struct sr_neigh n;

		if (sr_neigh_get(w->ifindex, (struct sockaddr *)&w->nh, &n) == 0)
			sr_cm_resolve_neigh_locked(&n);
	}
}

/* What netwatch.c tells us. */
static const struct sr_cm_neigh_watcher sr_cm_resolve_watcher = {
	.neigh = sr_cm_resolve_neigh_locked,
	.lost = sr_cm_resolve_recheck_locked,
};

static void sr_cm_resolve_timer_cb(struct sr_engine_timer *t)
{
	uint64_t now = sr_mono_ns();
	struct sr_list *p, *q;

	(void)t;
	pthread_mutex_lock(&sr_cm_lock);
	sr_list_for_each_safe(p, q, &sr_cm_nwaits) {
		struct sr_cm_nwait *w = sr_list_entry(p, struct sr_cm_nwait, node);
		struct sr_list *ip, *iq;

		sr_list_for_each_safe(ip, iq, &w->ids) {
			struct sr_cm_id *id = sr_list_entry(ip, struct sr_cm_id, nwait_node);

			if (id->resolve_deadline <= now)
				sr_cm_resolve_done_locked(id, -ETIMEDOUT, NULL);
		}
		if (sr_list_empty(&w->ids)) {
			sr_list_del(&w->node);
			free(w);
		}
	}
	sr_cm_resolve_rearm_locked();
	pthread_mutex_unlock(&sr_cm_lock);
}

int sr_cm_resolve_nexthop_locked(struct sr_cm_id *id, int ifindex, const struct sockaddr *nh,
				 int timeout_ms)
{
	struct sr_cm_nwait *w;
	struct sr_neigh n;
	int err;

	sr_cm_assert_locked();
	/* no wait exists before the first comes here: nobody needs the news before */
	sr_cm_netwatch_set_watcher_locked(&sr_cm_resolve_watcher);
	err = sr_cm_netwatch_start_locked();
	if (err)
		return err;
	sr_cm_resolve_timer.cb = sr_cm_resolve_timer_cb;
	/* subscribed first, so an update cannot slip between this look and the wait */
	if (sr_neigh_get(ifindex, nh, &n) == 0 && n.state == SR_NEIGH_VALID) {
		sr_cm_path_set_mac(id, &n);
		return 1;
	}
	w = sr_cm_nwait_find_locked(ifindex, nh);
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w)
			return -ENOMEM;
		w->ifindex = ifindex;
		memcpy(&w->nh, nh, sr_addr_len(nh));
		sr_list_init(&w->ids);
		err = sr_neigh_trigger(ifindex, nh);
		if (err) {
			free(w);
			return err;
		}
		/* an interface without ARP makes a valid (NOARP) entry at once, silently */
		if (sr_neigh_get(ifindex, nh, &n) == 0 && n.state == SR_NEIGH_VALID) {
			free(w);
			sr_cm_path_set_mac(id, &n);
			return 1;
		}
		sr_list_add_tail(&sr_cm_nwaits, &w->node);
	}
	id->nwait = w;
	id->resolve_deadline = sr_mono_ns() + (uint64_t)SR_MAX(timeout_ms, 0) * 1000000u;
	sr_list_add_tail(&w->ids, &id->nwait_node);
	sr_cm_state_set(id, SR_CM_ADDR_QUERY);
	sr_cm_resolve_rearm_locked();
	return 0;
}

void sr_cm_resolve_cancel_locked(struct sr_cm_id *id)
{
	struct sr_cm_nwait *w = id->nwait;

	sr_cm_assert_locked();
	if (!w)
		return;
	sr_list_del(&id->nwait_node);
	sr_list_init(&id->nwait_node);
	id->nwait = NULL;
	if (sr_list_empty(&w->ids)) {
		sr_list_del(&w->node);
		free(w);
	}
	sr_cm_resolve_rearm_locked();
}
