// SPDX-License-Identifier: MIT
/*
 * The QP side of a connection: the attributes of its QP's moves (rdma_init_qp_attr) and the
 * moves to RTS and to error around the handshake, the hand-over of an established stream
 * to its QP's transport (priv_ops->attach), and the link that outlives the id for the
 * transport's closed callback. Above the id and conn.c; QP-less connections are stream.c's.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"

/* ------------------------------------------------------- the QP moves -- */

/* rdma_init_qp_attr (qp.c) for the id, under the lock. */
int sr_cm_qp_attr(struct sr_cm_id *s, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	struct rdma_cm_id *id = &s->id;
	struct sr_mpa_params rep;
	struct sr_mpa_local loc;
	struct sr_mpa_conn mpa;
	bool have = true;
	int err = 0;

	pthread_mutex_lock(&sr_cm_lock);
	if (!id->verbs) {
		err = EINVAL;
		goto out;
	}
	/* IRD/ORD: negotiated, else what accept(NULL) / our Request would give */
	if (s->have_mpa) {
		mpa = s->mpa;
	} else if (s->have_peer && s->state == SR_CM_CONN_RECV) {
		sr_cm_local_params(s, NULL, &loc);
		if (sr_mpa_respond(&s->peer, &loc, &rep, &mpa) < 0)
			have = false;
	} else if (s->state == SR_CM_CONNECTING) {
		mpa.ird = s->req.ird;
		mpa.ord = s->req.ord;
	} else {
		have = false;
	}

	switch (qp_attr->qp_state) {
	case IBV_QPS_INIT:
		qp_attr->pkey_index = 0;
		qp_attr->port_num = id->port_num ? id->port_num : 1;
		/* iWARP peers write into us even for the RTR; reads need REMOTE_READ */
		qp_attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS;
		break;
	case IBV_QPS_RTR:
		if (!have) {
			err = EINVAL;
			break;
		}
		qp_attr->max_dest_rd_atomic = (uint8_t)SR_MIN(mpa.ird, 255);
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC;
		break;
	case IBV_QPS_RTS:
		if (!have) {
			err = EINVAL;
			break;
		}
		/* The application moves a QP of its own for this connection (rping -q): the
		 * next QP of the device it takes to RTS is the connection's. */
		if (!id->qp) {
			const struct sr_priv_ops *ops = sr_cm_priv_ops(id->verbs);

			if (ops && ops->llp_grant)
				ops->llp_grant(id->verbs);
		}
		qp_attr->max_rd_atomic = (uint8_t)SR_MIN(mpa.ord, 255);
		qp_attr->rnr_retry = s->rnr_retry;
		*qp_attr_mask = IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RNR_RETRY;
		/* as the kernel CM: a set ACK_TIMEOUT becomes the QP's timeout attribute */
		if (s->ack_timeout >= 0) {
			qp_attr->timeout = (uint8_t)s->ack_timeout;
			*qp_attr_mask |= IBV_QP_TIMEOUT;
		}
		break;
	default:
		err = EINVAL;
		break;
	}
out:
	pthread_mutex_unlock(&sr_cm_lock);
	return err;
}

/* RTR then RTS with what rdma_init_qp_attr gives for the negotiated connection. */
int sr_cm_qp_to_rts(struct sr_cm_id *id, struct ibv_qp *qp)
{
	const struct sr_priv_ops *ops = sr_cm_priv_ops(qp->context);

	/* the connection is ours: verbs lets the QP go to RTS (verbs/qp_modify.c) */
	if (ops && ops->llp_claim)
		ops->llp_claim(qp);
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr attr = { .qp_state = i ? IBV_QPS_RTS : IBV_QPS_RTR };
		int mask, err = sr_cm_qp_attr(id, &attr, &mask);

		if (!err)
			err = ibv_modify_qp(qp, &attr, mask);
		if (err)
			return -err;
	}
	return 0;
}

void sr_cm_qp_to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (qp)
		ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

/* ------------------------------------------------------- the attachment -- */

/*
 * The link's state; every change through sr_cm_link_set() (the table is at the end of
 * this file, asserted in debug builds):
 *
 *   ATTACHING -attach returns 0-> LIVE -the stream ended-> CLOSED
 *   ATTACHING -the stream ended-> ATTACHING_CLOSED -attach returns 0-> CLOSED
 *   ATTACHING|ATTACHING_CLOSED -attach fails-> FAILED (the link is dropped)
 *
 * "The stream ended": the transport's closed callback ran, or the QP is gone (destroyed
 * through rdma_destroy_qp, or by the application with ibv_destroy_qp), whose detach ends
 * the stream without calling back.
 */
enum sr_cm_link_state {
	SR_CM_LINK_ATTACHING,        /* priv_ops->attach() has not returned yet */
	SR_CM_LINK_ATTACHING_CLOSED, /* ... and the stream ended meanwhile: the attacher
				      * reports it after ESTABLISHED */
	SR_CM_LINK_LIVE,             /* attached: the transport runs the stream */
	SR_CM_LINK_CLOSED,           /* the stream ended */
	SR_CM_LINK_FAILED,           /* the attach failed: the transport never had it */
};

/*
 * The transport's reference (taken by a successful attach, dropped by its closed callback)
 * and the id's (dropped at destroy) keep the link alive; the transport may call back after
 * the id is gone, so it never points at the id directly.
 */
struct sr_cm_link {
	struct sr_cm_id *id;   /* NULL once the id is destroyed */
	struct ibv_qp *qp;
	struct ibv_context *verbs; /* qp->context and qp->qp_num, readable after qp is gone */
	uint32_t qpn;
	int refs;
	enum sr_cm_link_state state; /* calloc: ATTACHING */
};

static void sr_cm_link_set(struct sr_cm_link *l, enum sr_cm_link_state to);
static bool sr_cm_link_attaching(const struct sr_cm_link *l);
static bool sr_cm_link_is_closed(const struct sr_cm_link *l);
static void sr_cm_link_mark_closed(struct sr_cm_link *l);

static void sr_cm_link_put(struct sr_cm_link *l)
{
	if (--l->refs == 0)
		free(l);
}

void sr_cm_closed_locked(struct sr_cm_id *id)
{
	sr_cm_assert_locked();
	if (id->state != SR_CM_ESTABLISHED && id->state != SR_CM_DISCONNECTING)
		return;
	sr_cm_state_set(id, SR_CM_DISCONNECTED);
	sr_cm_post(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
}

/*
 * The stream is over: the transport called back, or the QP is gone. DISCONNECTED now,
 * unless the attach is still running: the attacher reports it after ESTABLISHED (or
 * CONNECT_ERROR if the attach fails).
 */
static void sr_cm_link_over_locked(struct sr_cm_link *l)
{
	bool attaching = sr_cm_link_attaching(l);

	sr_cm_assert_locked();
	sr_cm_link_mark_closed(l);
	if (l->id && !attaching)
		sr_cm_closed_locked(l->id);
}

void sr_cm_link_closed(void *arg, int err)
{
	struct sr_cm_link *l = arg;

	pthread_mutex_lock(&sr_cm_lock);
	sr_dbg("link %p closed (%d)", arg, err);
	sr_cm_link_over_locked(l);
	sr_cm_link_put(l);
	pthread_mutex_unlock(&sr_cm_lock);
}

void sr_cm_link_release(struct sr_cm_id *id)
{
	struct sr_cm_link *l = id->link;

	if (!l)
		return;
	id->link = NULL;
	l->id = NULL;
	sr_cm_link_put(l);
}

/*
 * rdma_destroy_qp() on a QP whose stream is attached. The transport's detach ends the
 * stream without calling back (we are the ones destroying it), yet the application may
 * have called rdma_disconnect() just before (cmtime does) and waits for DISCONNECTED: it
 * gets it here. Lock NOT held.
 */
void sr_cm_link_destroy_qp(struct sr_cm_id *id, struct ibv_qp *qp)
{
	struct sr_cm_link *l;

	pthread_mutex_lock(&sr_cm_lock);
	l = id->link;
	if (l && l->qp == qp)
		l->refs++;
	else
		l = NULL;
	pthread_mutex_unlock(&sr_cm_lock);

	ibv_destroy_qp(qp);
	if (!l)
		return;

	/* detach waited for a running closed callback: it either ran or never will */
	pthread_mutex_lock(&sr_cm_lock);
	if (!sr_cm_link_is_closed(l)) {
		sr_cm_link_over_locked(l);
		l->refs--; /* the transport's reference, never to be dropped by it */
	}
	sr_cm_link_put(l); /* ours */
	pthread_mutex_unlock(&sr_cm_lock);
}

/*
 * The attached QP for rdma_disconnect (lock NOT held, id held), or NULL. A QP the
 * application destroyed with ibv_destroy_qp() (its own, rping -q style) ended the stream
 * without a callback: that connection is over, and is reported so, instead of handing a
 * freed QP to the transport.
 */
struct ibv_qp *sr_cm_link_live_qp(struct sr_cm_id *id)
{
	const struct sr_priv_ops *ops;
	struct sr_cm_link *l;
	struct ibv_qp *qp = NULL;

	pthread_mutex_lock(&sr_cm_lock);
	l = id->link;
	if (l && !sr_cm_link_is_closed(l)) {
		l->refs++;
		qp = l->qp;
	}
	pthread_mutex_unlock(&sr_cm_lock);
	if (!qp)
		return NULL;
	ops = sr_cm_priv_ops(l->verbs);
	if (ops && ops->qp_by_num && ops->qp_by_num(l->verbs, l->qpn) != qp)
		qp = NULL;
	pthread_mutex_lock(&sr_cm_lock);
	if (!qp && !sr_cm_link_is_closed(l)) {
		sr_cm_link_over_locked(l);
		l->refs--; /* the transport's */
	}
	sr_cm_link_put(l);
	pthread_mutex_unlock(&sr_cm_lock);
	return qp;
}

/* Caller holds the id (sr_cm_id_hold) and not the lock; qp != NULL. */
int sr_cm_link_attach(struct sr_cm_id *id, struct ibv_qp *qp, bool initiator,
		      bool report_est, const struct sr_cm_evparam *est)
{
	struct sr_xport_attach params;
	const struct sr_priv_ops *ops;
	struct sr_cm_link *l;
	struct sr_cm_conn *c;
	int err, fd;

	pthread_mutex_lock(&sr_cm_lock);
	c = id->conn;
	if (!c || c->dead || id->state == SR_CM_DESTROYING) {
		pthread_mutex_unlock(&sr_cm_lock);
		return -ECONNABORTED;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		pthread_mutex_unlock(&sr_cm_lock);
		return -ENOMEM;
	}
	sr_cm_conn_claim(c);
	l->id = id;
	l->qp = qp;
	l->verbs = qp->context;
	l->qpn = qp->qp_num;
	l->refs = 2;
	id->link = l;
	sr_cm_state_set(id, SR_CM_ESTABLISHED);
	pthread_mutex_unlock(&sr_cm_lock);

	/* The fd leaves the CM: no engine callback of ours may touch it any more. */
	sr_cm_conn_quiesce(c);
	fd = c->sock.fd;
	c->sock.fd = -1;
	sr_cm_conn_destroy(c);

	/* This CM sets up iWARP streams: a device carrying its QPs otherwise refuses them. */
	memset(&params, 0, sizeof(params));
	params.kind = SR_XPORT_IWARP;
	params.u.iwarp.fd = fd;
	params.u.iwarp.initiator = initiator;
	/* port_space.c made every CM socket so (accepted ones inherit) */
	params.u.iwarp.tuned = true;
	params.u.iwarp.mpa = id->mpa;
	params.cb.arg = l;
	params.cb.closed = sr_cm_link_closed;
	ops = sr_cm_priv_ops(qp->context);
	err = ops && ops->attach ? ops->attach(qp, &params) : -EOPNOTSUPP;

	pthread_mutex_lock(&sr_cm_lock);
	if (err) {
		/* The transport never took its reference. A closer that ran meanwhile
		 * (rdma_destroy_qp, rdma_disconnect: ATTACHING_CLOSED) dropped it for the
		 * transport already; dropping it again would free the link under its holder. */
		int drop = l->state == SR_CM_LINK_ATTACHING;

		sr_cm_link_set(l, SR_CM_LINK_FAILED);
		sr_err("transport attach: %d", err);
		if (id->link == l) {
			/* the id's reference, unless destroy took it already */
			id->link = NULL;
			l->id = NULL;
			drop++;
		}
		while (drop--)
			sr_cm_link_put(l);
		if (id->state == SR_CM_ESTABLISHED)
			sr_cm_state_set(id, SR_CM_FAILED);
		if (initiator && report_est)
			sr_cm_post(id, RDMA_CM_EVENT_CONNECT_ERROR, err, NULL);
		pthread_mutex_unlock(&sr_cm_lock);
		close(fd);
		sr_cm_qp_to_err(qp);
		return err;
	}
	sr_cm_link_set(l, sr_cm_link_is_closed(l) ? SR_CM_LINK_CLOSED : SR_CM_LINK_LIVE);
	if (report_est)
		sr_cm_post(id, RDMA_CM_EVENT_ESTABLISHED, 0, est);
	if (sr_cm_link_is_closed(l) && l->id)
		sr_cm_closed_locked(id);
	pthread_mutex_unlock(&sr_cm_lock);
	return 0;
}

/* ------------------------------------------------------ the link's state -- */

#ifndef NDEBUG
/* enum sr_cm_link_state: the states each state may move to. */
static bool sr_cm_link_legal(enum sr_cm_link_state from, enum sr_cm_link_state to)
{
	switch (from) {
	case SR_CM_LINK_ATTACHING:
		return to == SR_CM_LINK_LIVE || to == SR_CM_LINK_ATTACHING_CLOSED ||
		       to == SR_CM_LINK_FAILED;
	case SR_CM_LINK_ATTACHING_CLOSED:
		return to == SR_CM_LINK_CLOSED || to == SR_CM_LINK_FAILED;
	case SR_CM_LINK_LIVE:
		return to == SR_CM_LINK_CLOSED;
	default: /* CLOSED, FAILED: final */
		return false;
	}
}
#endif

static void sr_cm_link_set(struct sr_cm_link *l, enum sr_cm_link_state to)
{
	sr_cm_assert_locked();
	assert(sr_cm_link_legal(l->state, to));
	l->state = to;
}

static bool sr_cm_link_attaching(const struct sr_cm_link *l)
{
	return l->state == SR_CM_LINK_ATTACHING || l->state == SR_CM_LINK_ATTACHING_CLOSED;
}

/* The stream ended (whether or not the attach has returned yet), or never ran (FAILED). */
static bool sr_cm_link_is_closed(const struct sr_cm_link *l)
{
	return l->state == SR_CM_LINK_ATTACHING_CLOSED || l->state == SR_CM_LINK_CLOSED ||
	       l->state == SR_CM_LINK_FAILED;
}

static void sr_cm_link_mark_closed(struct sr_cm_link *l)
{
	sr_cm_link_set(l, sr_cm_link_attaching(l) ? SR_CM_LINK_ATTACHING_CLOSED
						  : SR_CM_LINK_CLOSED);
}
