// SPDX-License-Identifier: MIT
/* rdma_create_id / rdma_destroy_id and the id bookkeeping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"

const char *sr_cm_state_str(enum sr_cm_state s)
{
	static const char *const names[] = {
		[SR_CM_IDLE] = "IDLE",
		[SR_CM_BOUND] = "BOUND",
		[SR_CM_ADDR_QUERY] = "ADDR_QUERY",
		[SR_CM_ADDR_RESOLVED] = "ADDR_RESOLVED",
		[SR_CM_ROUTE_RESOLVED] = "ROUTE_RESOLVED",
		[SR_CM_LISTEN] = "LISTEN",
		[SR_CM_CONNECTING] = "CONNECTING",
		[SR_CM_RESPONDED] = "RESPONDED",
		[SR_CM_CONN_RECV] = "CONN_RECV",
		[SR_CM_ESTABLISHED] = "ESTABLISHED",
		[SR_CM_DISCONNECTING] = "DISCONNECTING",
		[SR_CM_DISCONNECTED] = "DISCONNECTED",
		[SR_CM_FAILED] = "FAILED",
		[SR_CM_DESTROYING] = "DESTROYING",
	};

	return (unsigned int)s < SR_ARRAY_SIZE(names) ? names[s] : "?";
}

struct sr_cm_id *sr_cm_id_new_locked(struct sr_cm_channel *chan, void *context,
				     enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct sr_cm_id *id = calloc(1, sizeof(*id));

	sr_cm_assert_locked();
	if (!id) {
		errno = ENOMEM;
		return NULL;
	}
	if (!chan) {
		chan = sr_cm_channel_new(true);
		if (!chan) {
			free(id);
			return NULL;
		}
		id->sync = true;
	}
	id->chan = chan;
	id->id.channel = &chan->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	id->fd = -1;
	id->afonly = -1;
	id->tos = -1;
	id->user_timeout_ms = -1;
	id->ack_timeout = -1;
	id->listen_h.fd = -1;
	sr_list_init(&id->hs_list);
	sr_list_init(&id->orphan_node);
	sr_list_init(&id->nwait_node);
	sr_list_add_tail(&sr_cm_ids, &id->node);
	return id;
}

struct sr_cm_id *sr_cm_id_new(struct sr_cm_channel *chan, void *context,
			      enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct sr_cm_id *id;

	pthread_mutex_lock(&sr_cm_lock);
	id = sr_cm_id_new_locked(chan, context, ps, qp_type);
	pthread_mutex_unlock(&sr_cm_lock);
	return id;
}

void sr_cm_id_set_dev(struct sr_cm_id *id, struct sr_cm_dev *dev)
{
	id->dev = dev;
	id->id.verbs = dev->verbs;
	id->id.port_num = 1;
	/*
	 * As librdmacm (cma.c, ucma_get_device): an id that has a device has that device's
	 * default PD in id->pd, held until the id is destroyed (sr_cm_id_release), so
	 * rdma_reg_msgs and QP creation on id->pd work. If it cannot be allocated now, QP
	 * creation tries again (qp.c, sr_cm_id_pd).
	 */
	if (!id->id.pd && !id->uses_default_pd) {
		id->id.pd = sr_cm_dev_get_pd(dev);
		id->uses_default_pd = id->id.pd != NULL;
	}
}

void sr_cm_id_hold(struct sr_cm_id *id)
{
	id->busy++;
}

void sr_cm_id_unhold(struct sr_cm_id *id)
{
	pthread_mutex_lock(&sr_cm_lock);
	id->busy--;
	pthread_cond_broadcast(&sr_cm_cond);
	pthread_mutex_unlock(&sr_cm_lock);
}

/* Last step of every id's life (lock NOT held). */
static void sr_cm_id_release(struct sr_cm_id *id)
{
	if (id->fd >= 0)
		close(id->fd);
	if (id->uses_default_pd)
		sr_cm_dev_put_pd(id->dev);
	free(id->ep_attr);
	if (id->sync)
		sr_cm_channel_free(id->chan);
	free(id);
}

void sr_cm_id_free_unseen(struct sr_cm_id *id)
{
	struct sr_cm_conn *c = NULL;

	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_state_set(id, SR_CM_DESTROYING);
	sr_list_del(&id->node);
	sr_cm_port_release_locked(id);
	c = id->conn;
	if (c && !sr_cm_conn_claim(c))
		c = NULL;
	pthread_mutex_unlock(&sr_cm_lock);
	if (c) {
		/* the peer is told no: a destroyed listener's pending requests are rejected */
		sr_cm_send_reject(c->sock.fd, &id->peer, NULL, 0);
		sr_cm_conn_destroy(c);
	}
	sr_cm_id_release(id);
}

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
