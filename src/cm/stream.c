// SPDX-License-Identifier: MIT
/*
 * The established connection: handed to its QP's transport (link.c), or, QP-less, kept by
 * the CM. Then the CM owns the socket after the MPA exchange (this file is the connection's
 * owner, struct sr_cm_conn_ops) and only watches for the stream's end (either side's FIN, an error, or our disconnect timer), reporting one
 * DISCONNECTED. Bytes a peer with a real QP sends (its RTR) are read and dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_drain.h"
#include "common/sr_log.h"

/* What a QP-less connection calls of us once established (conn.c). */
static const struct sr_cm_conn_ops sr_cm_stream_ops = {
	.io = sr_cm_stream_io,
	.timeout = sr_cm_stream_timeout,
};

/* Caller holds the id (sr_cm_id_hold) and not the lock. */
int sr_cm_start_stream(struct sr_cm_id *id, struct ibv_qp *qp, bool initiator,
		       bool report_est, const struct sr_cm_evparam *est)
{
	struct sr_cm_conn *c;
	int err;

	if (qp)
		return sr_cm_link_attach(id, qp, initiator, report_est, est);
	pthread_mutex_lock(&sr_cm_lock);
	c = id->conn;
	if (!c || c->dead || id->state == SR_CM_DESTROYING) {
		pthread_mutex_unlock(&sr_cm_lock);
		return -ECONNABORTED;
	}
	/* QP-less: the CM keeps the socket and watches for the stream's end */
	sr_cm_conn_phase_set(c, SR_CONN_STREAM);
	c->ops = &sr_cm_stream_ops;
	err = c->sock.registered ? sr_engine_mod(&c->sock, EPOLLIN | EPOLLRDHUP)
				 : sr_engine_add(&c->sock, EPOLLIN | EPOLLRDHUP);
	if (err) {
		sr_cm_conn_claim(c);
		sr_cm_state_set(id, SR_CM_FAILED);
		pthread_mutex_unlock(&sr_cm_lock);
		sr_cm_conn_destroy(c);
		return err;
	}
	sr_cm_state_set(id, SR_CM_ESTABLISHED);
	if (report_est)
		sr_cm_post(id, RDMA_CM_EVENT_ESTABLISHED, 0, est);
	pthread_mutex_unlock(&sr_cm_lock);
	return 0;
}

/* -------------------------------------------- QP-less stream: its end -- */

static void sr_cm_stream_end(struct sr_cm_conn *c)
{
	struct sr_cm_id *id = c->id;

	sr_cm_conn_claim(c);
	if (id)
		sr_cm_closed_locked(id);
	pthread_mutex_unlock(&sr_cm_lock);
	sr_cm_conn_destroy(c); /* our FIN goes out now if it had not */
}

void sr_cm_stream_io(struct sr_cm_conn *c, uint32_t events)
{
	bool end = events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP);

	pthread_mutex_lock(&sr_cm_lock);
	if (c->dead) {
		pthread_mutex_unlock(&sr_cm_lock);
		return;
	}
	/* A peer with a real QP may send an RTR or data: nobody here wants it (a bounded
	 * amount per call: the rest when the engine comes back). */
	if (!end)
		end = sr_drain(c->sock.fd) == SR_DRAIN_END;
	if (end) {
		sr_cm_stream_end(c); /* unlocks */
		return;
	}
	pthread_mutex_unlock(&sr_cm_lock);
}

void sr_cm_stream_timeout(struct sr_cm_conn *c)
{
	pthread_mutex_lock(&sr_cm_lock);
	/* Only our disconnect's timer ends the stream; one left from the handshake (a request
	 * held for accept, passive.c) finds it not shut down and has nothing to do. */
	if (c->dead || c->phase != SR_CONN_STREAM_SHUT) {
		pthread_mutex_unlock(&sr_cm_lock);
		return;
	}
	sr_cm_stream_end(c); /* the peer never sent its FIN: give up on it */
}

int sr_cm_stream_shutdown(struct sr_cm_conn *c)
{
	if (c->phase == SR_CONN_STREAM_SHUT)
		return 0;
	sr_cm_conn_phase_set(c, SR_CONN_STREAM_SHUT);
	shutdown(c->sock.fd, SHUT_WR);
	return sr_cm_conn_arm_timer(c, SR_CM_DISCONNECT_TIMEOUT_MS);
}
