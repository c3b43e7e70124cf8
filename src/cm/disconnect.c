// SPDX-License-Identifier: MIT
/*
 * rdma_disconnect: each side of a connection gets exactly one DISCONNECTED, whoever closes
 * first. With a transport attached it comes from the transport's closed callback, after
 * the QP was flushed; for a QP-less connection from the CM's own watch of the stream.
 */
#include <errno.h>
#include <stdlib.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"

SR_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	const struct sr_priv_ops *ops;
	struct sr_cm_conn *held = NULL;
	struct ibv_qp *qp = NULL;
	bool attached = false, sync;
	struct sr_cm_id *s;
	int err = 0;

	if (sr_cm_id_inherited(id))
		return sr_cm_fail(EIO); /* the parent's id (fork) */
	if (!id)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	sync = s->sync; /* an async id may be destroyed as soon as DISCONNECTED is out */
	pthread_mutex_lock(&sr_cm_lock);
	switch (s->state) {
	case SR_CM_ESTABLISHED:
		sr_cm_state_set(s, SR_CM_DISCONNECTING);
		if (s->link) {
			attached = true;
		} else if (s->conn) {
			err = sr_cm_stream_shutdown(s->conn);
			if (err)
				sr_warn("disconnect timer: %d", err);
			err = 0;
		}
		break;
	case SR_CM_RESPONDED:
		/* CONNECT_RESPONSE seen but never established: just drop the stream */
		held = s->conn;
		if (held && !sr_cm_conn_claim(held))
			held = NULL;
		sr_cm_state_set(s, SR_CM_DISCONNECTED);
		sr_cm_post(s, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		break;
	case SR_CM_DISCONNECTING:
	case SR_CM_DISCONNECTED:
		break;
	default:
		err = -EINVAL;
		break;
	}
	if (attached)
		sr_cm_id_hold(s);
	pthread_mutex_unlock(&sr_cm_lock);
	if (err)
		return sr_cm_fail(-err);
	if (held)
		sr_cm_conn_destroy(held);
	if (attached) {
		qp = sr_cm_link_live_qp(s);
		/* graceful: queued sends finish, then FIN; the closed callback follows */
		ops = qp ? sr_cm_priv_ops(qp->context) : NULL;
		if (ops && ops->disconnect)
			ops->disconnect(qp);
		else if (qp)
			sr_cm_qp_to_err(qp);
		sr_cm_id_unhold(s);
	}
	/* A synchronous id waits for its DISCONNECTED, unless it already has it. */
	if (sync && !s->disc_fetched)
		return sr_cm_sync_wait(s);
	return 0;
}

SR_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	enum sr_cm_state st;

	if (!id)
		return sr_cm_fail(EINVAL);
	pthread_mutex_lock(&sr_cm_lock);
	st = to_sr_id(id)->state;
	pthread_mutex_unlock(&sr_cm_lock);
	/*
	 * The kernel answers EINVAL until the id has a connection-level CM id (listen,
	 * connect or a request) and then 0 on iWARP: there is no RTU to stand in for.
	 */
	switch (st) {
	case SR_CM_IDLE:
	case SR_CM_BOUND:
	case SR_CM_ADDR_RESOLVED:
	case SR_CM_ROUTE_RESOLVED:
		return sr_cm_fail(EINVAL);
	default:
		return 0;
	}
}
