// SPDX-License-Identifier: MIT
/*
 * rdma_create_id and rdma_destroy_id: the public lifetime calls. On top of the CM's layers:
 * destroying an id ends whatever the layers below hang on it (its address wait, its port,
 * its queued events, its connection, a listener's handshakes and unseen requests, its link).
 */
#include <errno.h>
#include <stdlib.h>

#include "cm/cm_priv.h"

SR_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
			     void *context, enum rdma_port_space ps)
{
	struct sr_cm_id *s;
	int err = sr_cm_init();

	if (err)
		return sr_cm_fail(-err);
	if (!id)
		return sr_cm_fail(EINVAL);
	switch (ps) {
	case RDMA_PS_TCP:
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
	case RDMA_PS_IB:
		/* iWARP has no UD QPs and no IB port space */
		return sr_cm_fail(EOPNOTSUPP);
	default:
		return sr_cm_fail(EINVAL);
	}
	s = sr_cm_id_new(channel ? to_sr_chan(channel) : NULL, context, ps, IBV_QPT_RC);
	if (!s)
		return -1;
	*id = &s->id;
	return 0;
}

SR_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct sr_list orphans, claimed, *pos, *tmp;
	struct sr_cm_conn *c = NULL;
	enum sr_cm_state prev;
	struct sr_cm_id *s;

	if (sr_cm_id_inherited(id))
		return 0; /* the parent's (fork): nothing of it is ours to close */
	if (!id)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	sr_list_init(&orphans);
	sr_list_init(&claimed);

	pthread_mutex_lock(&sr_cm_lock);
	prev = s->state;
	sr_cm_state_set(s, SR_CM_DESTROYING);
	sr_list_del(&s->node);
	sr_cm_resolve_cancel_locked(s);
	sr_cm_port_release_locked(s);
	/* events not yet fetched go away; requests of a listener among them are rejected */
	sr_cm_chan_take(s->chan, s, NULL, &orphans);
	c = s->conn;
	if (c && !sr_cm_conn_claim(c))
		c = NULL;
	if (prev == SR_CM_LISTEN)
		sr_cm_listen_stop(s, &claimed);
	sr_cm_link_release(s);
	pthread_mutex_unlock(&sr_cm_lock);

	/* Unlocked: engine callbacks we wait for in sr_engine_del() may need the lock. */
	if (prev == SR_CM_LISTEN) {
		sr_engine_timer_cancel(&s->accept_pause);
		sr_engine_del(&s->listen_h);
	}
	if (c) {
		if (prev == SR_CM_CONN_RECV)
			sr_cm_send_reject(c->sock.fd, &s->peer, NULL, 0);
		sr_cm_conn_destroy(c);
	}
	sr_list_for_each_safe(pos, tmp, &claimed) {
		sr_list_del(pos);
		sr_cm_conn_destroy(sr_list_entry(pos, struct sr_cm_conn, node));
	}
	sr_list_for_each_safe(pos, tmp, &orphans) {
		sr_list_del(pos);
		sr_cm_id_free_unseen(sr_list_entry(pos, struct sr_cm_id, orphan_node));
	}

	/* Every event the application fetched must be acked; in-flight calls must end. */
	pthread_mutex_lock(&sr_cm_lock);
	while (s->reported != s->acked || s->busy)
		pthread_cond_wait(&sr_cm_cond, &sr_cm_lock);
	pthread_mutex_unlock(&sr_cm_lock);
	sr_cm_id_release(s);
	return 0;
}
