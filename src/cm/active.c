// SPDX-License-Identifier: MIT
/*
 * The active side: rdma_connect (non-blocking TCP connect, MPA Request, Reply) on the
 * engine thread, and rdma_establish for ids without a QP.
 *
 * Failures map as the kernel's iw_cm does for iWARP: a reset or refused TCP connection and
 * an MPA reject are REJECTED (-ECONNREFUSED for "nobody listens" and for a reject,
 * -ECONNRESET when the peer dropped us mid-handshake), a timeout is UNREACHABLE
 * (-ETIMEDOUT), anything else (malformed Reply, negotiation failure) CONNECT_ERROR.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_config.h"
#include "common/sr_log.h"
#include "netdev/sr_route.h"

/*
 * Rev 1 carries no IRD/ORD: a kernel soft-iWARP responder then runs with whatever its server
 * application passed to rdma_accept, often 0, and refuses its peer's first READ
 * (docs/COMPATIBILITY.md, "What else to know about siw"). Say so once per process.
 */
static int sr_cm_mpa_rev(void)
{
	static atomic_bool warned;

	if (sr_config_long("SOFTRDMA_MPA_REV") != 1)
		return SR_MPA_REV2;
	if (!atomic_exchange(&warned, true))
		sr_warn("SOFTRDMA_MPA_REV=1: MPA rev 1 exchanges no IRD/ORD; a peer whose "
			"application leaves them 0 refuses RDMA READs (rev 2 is the default)");
	return SR_MPA_REV1;
}

/* The RTR forms we offer as peer-to-peer initiator (SOFTRDMA_MPA_RTR, docs/CONFIG.md). */
static uint8_t sr_cm_rtr_offer(void)
{
	const char *v = sr_config_str("SOFTRDMA_MPA_RTR");
	int set = sr_mpa_rtr_parse(v);

	if (set < 0) {
		sr_warn("SOFTRDMA_MPA_RTR=\"%s\" is not a list of read, write, send: offering read",
			v ? v : "");
		return SR_MPA_RTR_READ;
	}
	return (uint8_t)set;
}

static enum rdma_cm_event_type sr_cm_fail_type(int err)
{
	switch (err) {
	case -ECONNREFUSED:
	case -ECONNRESET:
		return RDMA_CM_EVENT_REJECTED;
	case -ETIMEDOUT:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
		return RDMA_CM_EVENT_UNREACHABLE;
	default:
		return RDMA_CM_EVENT_CONNECT_ERROR;
	}
}

/*
 * The connection attempt failed (lock held, c live; returns unlocked). The QP, if any,
 * goes to ERR before the event is visible, as upstream's library does on REJECTED, so its
 * posted receives are flushed.
 */
static void sr_cm_active_fail(struct sr_cm_conn *c, enum rdma_cm_event_type type, int status,
			      const struct sr_cm_evparam *p)
{
	struct sr_cm_id *id = c->id;
	struct ibv_qp *qp = id->id.qp;

	sr_dbg("id %p: connect failed: %s %d", (void *)id, rdma_event_str(type), status);
	sr_cm_conn_claim(c);
	sr_cm_state_set(id, SR_CM_FAILED);
	if (!qp || type != RDMA_CM_EVENT_REJECTED) {
		sr_cm_post(id, type, status, p);
		pthread_mutex_unlock(&sr_cm_lock);
		sr_cm_conn_destroy(c);
		return;
	}
	sr_cm_id_hold(id);
	pthread_mutex_unlock(&sr_cm_lock);
	sr_cm_conn_destroy(c);
	sr_cm_qp_to_err(qp);
	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_post(id, type, status, p);
	pthread_mutex_unlock(&sr_cm_lock);
	sr_cm_id_unhold(id);
}

static void sr_cm_update_src(struct sr_cm_id *id, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	/* only a wildcard-bound id learns its source from connect(); others know it */
	if (!sr_addr_is_any(&id->id.route.addr.src_addr))
		return;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		sr_addr_store(&id->id.route.addr.src_storage, (struct sockaddr *)&ss);
}

/*
 * The Request is out: from now on we wait for the Reply (lock held). The wait is checked
 * first after SR_CM_CONNECT_TIMEOUT_MS (sr_cm_reply_check_ms): a Request that the peer's
 * TCP has not acknowledged by then never reached the responder (its accept queue overflowed
 * and its kernel dropped our segments, or the path lost them), and the connect fails as one
 * whose TCP handshake took too long. One the peer's TCP took waits the accept timeout,
 * since the responder's application may take its time (sr_cm_active_wait_on).
 */
static void sr_cm_request_sent(struct sr_cm_conn *c)
{
	c->accepted_ns = sr_mono_ns();
	sr_cm_update_src(c->id, c->sock.fd);
	/* the Request is out; we send nothing more until the Reply is in */
	sr_cm_conn_phase_set(c, SR_CONN_READ_REPLY);
	c->off = 0;
	c->len = SR_MPA_RR_HDR_LEN;
	c->hdr_done = false;
}

/* When the Reply's wait is checked first (the timer armed once the Request is out). */
static unsigned int sr_cm_reply_check_ms(void)
{
	return SR_MIN(sr_cm_accept_timeout_ms(), SR_CM_CONNECT_TIMEOUT_MS);
}

/*
 * The Reply's timer expired without a Reply (lock held, phase SR_CONN_READ_REPLY), before
 * the accept timeout. If the peer's TCP has acknowledged the whole Request, wait for the
 * rest of the accept timeout (re-armed; returns true). If not, but TCP has not resent it
 * yet either (its retransmission timer, from the path's round trip, is longer: a path that
 * queues packets for seconds), the Request may still be on its way: look again
 * SR_CM_CONNECT_TIMEOUT_MS later (re-armed; true). Without that, 45 of 50 handshakes queued
 * for over 10 s on a slow link failed while the server got all their Requests. Otherwise,
 * unacknowledged although resent, the peer's stack is not taking it: the connect has
 * failed (false). A Request nobody took is not left to TCP: the socket is closed at once
 * with a reset, as one still connecting is closed (sr_cm_conn_destroy), so that a responder
 * whose queue drains later cannot get it and report to its application a connection we
 * reported UNREACHABLE (a FIN behind the Request made all ten ESTABLISHED there in
 * cm_overflow's setting).
 */
static bool sr_cm_active_wait_on(struct sr_cm_conn *c)
{
	uint64_t waited_ms = (sr_mono_ns() - c->accepted_ns) / 1000000u;
	unsigned int accept_ms = sr_cm_accept_timeout_ms();
	struct tcp_info ti;
	int unacked = 0;

	if (waited_ms >= accept_ms)
		return false;
	/* SIOCOUTQ: bytes in the send queue, sent but unacknowledged or not yet sent */
	if (ioctl(c->sock.fd, SIOCOUTQ, &unacked) < 0 || unacked > 0) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		socklen_t tlen = sizeof(ti);

		if (unacked > 0 &&
		    getsockopt(c->sock.fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) == 0 &&
		    !ti.tcpi_retransmits)
			return sr_cm_conn_arm_timer(c, SR_MIN(SR_CM_CONNECT_TIMEOUT_MS,
							      accept_ms - (unsigned int)waited_ms)) == 0;

		sr_dbg("id %p: the peer's TCP has not acknowledged our Request after %llu ms "
		       "(%d bytes outstanding, resent)", (void *)c->id,
		       (unsigned long long)waited_ms, unacked);
		setsockopt(c->sock.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		sr_cm_conn_phase_set(c, SR_CONN_ABORT); /* sr_cm_conn_destroy: a reset, no FIN */
		return false;
	}
	return sr_cm_conn_arm_timer(c, accept_ms - (unsigned int)waited_ms) == 0;
}

/* The Reply is in c->buf (lock held; returns unlocked). */
static void sr_cm_active_reply(struct sr_cm_conn *c)
{
	struct sr_cm_id *id = c->id;
	uint8_t pd[SR_CM_PD_MAX];
	struct sr_mpa_params rep;
	struct sr_cm_evparam p;
	struct sr_mpa_conn mpa;
	const uint8_t *ulp;
	size_t ulp_len;
	struct ibv_qp *qp;
	int err;

	err = sr_cm_conn_check_quiet(c);
	if (!err)
		err = sr_cm_conn_parse(c, &rep, &ulp, &ulp_len);
	if (err) {
		sr_cm_active_fail(c, RDMA_CM_EVENT_CONNECT_ERROR, err, NULL);
		return;
	}
	/* the event outlives c->buf */
	ulp_len = SR_MIN(ulp_len, sizeof(pd));
	if (ulp_len)
		memcpy(pd, ulp, ulp_len);
	sr_cm_peer_evparam(id, &rep, pd, ulp_len, &p);

	err = sr_mpa_check_reply(&id->req, &rep, &id->loc, &mpa);
	if (err == SR_MPA_EREJECTED) {
		sr_cm_active_fail(c, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED, &p);
		return;
	}
	if (err) {
		sr_cm_active_fail(c, RDMA_CM_EVENT_CONNECT_ERROR, err, NULL);
		return;
	}
	id->peer = rep;
	id->have_peer = true;
	id->mpa = mpa;
	id->have_mpa = true;

	qp = id->id.qp;
	if (!qp) {
		/* rping -q: the application moves its QP and calls rdma_establish() */
		sr_cm_conn_phase_set(c, SR_CONN_HELD);
		sr_cm_conn_quiesce(c);
		sr_cm_state_set(id, SR_CM_RESPONDED);
		sr_cm_post(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, &p);
		pthread_mutex_unlock(&sr_cm_lock);
		return;
	}

	/* With a QP the library finishes the job and reports ESTABLISHED itself. */
	sr_cm_id_hold(id);
	pthread_mutex_unlock(&sr_cm_lock);
	err = sr_cm_qp_to_rts(id, qp);
	if (err) {
		pthread_mutex_lock(&sr_cm_lock);
		if (!c->dead) {
			sr_cm_conn_claim(c);
			sr_cm_state_set(id, SR_CM_FAILED);
			pthread_mutex_unlock(&sr_cm_lock);
			sr_cm_conn_destroy(c);
			sr_cm_qp_to_err(qp);
			pthread_mutex_lock(&sr_cm_lock);
			sr_cm_post(id, RDMA_CM_EVENT_CONNECT_ERROR, err, NULL);
		}
		pthread_mutex_unlock(&sr_cm_lock);
	} else {
		sr_cm_start_stream(id, qp, true, true, &p);
	}
	sr_cm_id_unhold(id);
}

/*
 * Read what there is of the Reply (lock held). Returns true when the handshake is over (the
 * Reply taken, or a failure reported): then c may be gone and the lock is released; false
 * when the Reply is not complete yet (still locked).
 */
static bool sr_cm_active_read_reply(struct sr_cm_conn *c)
{
	int r = sr_cm_conn_read_frame(c, true);

	if (r == 0)
		return false;
	if (r == -ECONNRESET || r == -EPIPE) {
		/* the responder dropped us: no listener left, backlog, its timeout */
		sr_cm_active_fail(c, RDMA_CM_EVENT_REJECTED, -ECONNRESET, NULL);
		return true;
	}
	if (r < 0) {
		sr_cm_active_fail(c, RDMA_CM_EVENT_CONNECT_ERROR, r, NULL);
		return true;
	}
	sr_cm_active_reply(c); /* unlocks */
	return true;
}

/*
 * The TCP connect and the Request's sending, given the socket's events (lock held, c live).
 * Returns true when it released the lock (a failure reported, c may be gone), false when
 * it still holds it: then c->phase says how far it got (SR_CONN_READ_REPLY: the Request is
 * out and the accept deadline armed).
 */
static bool sr_cm_active_send_req(struct sr_cm_conn *c, uint32_t events)
{
	socklen_t len = sizeof(int);
	int soerr = 0, r;

	if (c->phase == SR_CONN_TCP_CONNECT) {
		if (getsockopt(c->sock.fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			soerr = errno;
		if (!soerr && (events & (EPOLLERR | EPOLLHUP)))
			soerr = ECONNRESET;
		if (soerr) {
			/* RST from a port nobody listens on: ECONNREFUSED, REJECTED */
			sr_cm_active_fail(c, sr_cm_fail_type(-soerr), -soerr, NULL);
			return true;
		}
		if (!(events & EPOLLOUT))
			return false;
		sr_cm_conn_phase_set(c, SR_CONN_SEND_REQ);
	}
	while (c->off < c->len) {
		ssize_t n = send(c->sock.fd, c->buf + c->off, c->len - c->off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			c->off += (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			return false;
		} else if (n < 0 && errno != EINTR) {
			r = -errno;
			sr_cm_active_fail(c, sr_cm_fail_type(r == -EPIPE ? -ECONNRESET : r),
					  r == -EPIPE ? -ECONNRESET : r, NULL);
			return true;
		}
	}
	sr_cm_request_sent(c);
	/* the peer's application may take its time now (SR_CM_ACCEPT_TIMEOUT_MS) */
	r = sr_engine_mod(&c->sock, EPOLLIN | EPOLLRDHUP);
	if (!r)
		r = sr_cm_conn_arm_timer(c, sr_cm_reply_check_ms());
	if (r) {
		sr_cm_active_fail(c, RDMA_CM_EVENT_CONNECT_ERROR, r, NULL);
		return true;
	}
	return false;
}

void sr_cm_active_io(struct sr_cm_conn *c, uint32_t events)
{
	pthread_mutex_lock(&sr_cm_lock);
	if (c->dead) {
		pthread_mutex_unlock(&sr_cm_lock);
		return;
	}
	switch (c->phase) {
	case SR_CONN_TCP_CONNECT:
	case SR_CONN_SEND_REQ:
		if (sr_cm_active_send_req(c, events))
			return;
		break;
	case SR_CONN_READ_REPLY:
		if (sr_cm_active_read_reply(c))
			return;
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&sr_cm_lock);
}

void sr_cm_active_timeout(struct sr_cm_conn *c)
{
	pthread_mutex_lock(&sr_cm_lock);
	if (c->dead || c->phase == SR_CONN_HELD) {
		pthread_mutex_unlock(&sr_cm_lock);
		return;
	}
	/*
	 * The Reply may be in the socket already: when the engine runs late (a loaded host, a
	 * batch of many ready sockets), an expired timer can come before the socket's own
	 * event although the Reply arrived in time. Take it rather than report UNREACHABLE to
	 * us and a connection the responder accepted in time gone to it.
	 */
	if (c->phase == SR_CONN_READ_REPLY) {
		if (sr_cm_active_read_reply(c))
			return;
		if (sr_cm_active_wait_on(c)) {
			pthread_mutex_unlock(&sr_cm_lock);
			return;
		}
	} else {
		/*
		 * The same for the connect's deadline: the TCP connection may be up (or have
		 * failed) and the socket writable with its event not dispatched yet. Go on as
		 * that event would: send the Request and wait for the Reply, or report the
		 * connect's error.
		 */
		struct pollfd p = { .fd = c->sock.fd, .events = POLLOUT };

		if (poll(&p, 1, 0) == 1) {
			/* poll's POLLOUT, POLLERR, POLLHUP are epoll's bits on Linux */
			if (sr_cm_active_send_req(c, (uint32_t)p.revents))
				return;
			if (c->phase == SR_CONN_READ_REPLY) {
				pthread_mutex_unlock(&sr_cm_lock);
				return;
			}
		}
	}
	sr_cm_active_fail(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
}

/* What our connections call of us (conn.c). */
static const struct sr_cm_conn_ops sr_cm_active_ops = {
	.io = sr_cm_active_io,
	.timeout = sr_cm_active_timeout,
};

/*
 * Right after connect() (lock held, c not yet on the engine): on loopback, and wherever the
 * TCP handshake completes within connect(), the socket is already established, and the
 * Request goes out from here. That saves the engine thread a wake-up, an epoll_ctl and a
 * getsockopt on every connection. Otherwise (EAGAIN: handshake in progress, or a partial
 * send) the engine carries on as before. A failure here is the connect's failure: send()
 * reports it (and clears it from the socket), so it is returned for the caller to report.
 * Sets c->phase; returns 0 or a negative errno.
 */
static int sr_cm_send_request_now(struct sr_cm_conn *c)
{
	ssize_t n;

	sr_cm_conn_phase_set(c, SR_CONN_TCP_CONNECT);
	do
		n = send(c->sock.fd, c->buf, c->len, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	c->off = (size_t)n;
	if (c->off < c->len) {
		sr_cm_conn_phase_set(c, SR_CONN_SEND_REQ);
		return 0;
	}
	sr_cm_request_sent(c);
	return 0;
}

SR_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct sr_cm_conn *c;
	struct sr_cm_id *s;
	size_t pd_len = 0;
	int rev, err, rc;
	bool sync;
	ssize_t n;

	if (sr_cm_id_inherited(id))
		return sr_cm_fail(EIO); /* the parent's id (fork) */
	if (!id)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	sync = s->sync; /* after the unlock below an async id may be destroyed any time */
	rev = sr_cm_mpa_rev();
	if (conn_param && conn_param->private_data)
		pd_len = conn_param->private_data_len;

	pthread_mutex_lock(&sr_cm_lock);
	if (s->state != SR_CM_ROUTE_RESOLVED || s->fd < 0 ||
	    (!id->qp && !conn_param) || pd_len > sr_cm_pd_max(rev == SR_MPA_REV2)) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(EINVAL);
	}
	sr_cm_local_params(s, conn_param, &s->loc);
	/* the QP's receiver-not-ready wait at RTS (IB: RNR retries; 7 = without end) */
	s->rnr_retry = conn_param ? (uint8_t)SR_MIN(conn_param->rnr_retry_count, 7) : 0;
	if (rev == SR_MPA_REV2) {
		/* RFC 6581 peer-to-peer: we open the stream with an RTR of a form the peer
		 * picks among those offered (by default only the zero-length Read) */
		s->loc.p2p = true;
		s->loc.rtr = sr_cm_rtr_offer();
	}
	sr_mpa_request_params(&s->loc, &s->req);
	if (rev == SR_MPA_REV1) {
		s->req.rev = SR_MPA_REV1;
		s->req.enhanced = false;
		s->req.p2p = false;
		s->req.rtr = 0;
	}
	c = sr_cm_conn_new(s->fd, &sr_cm_active_ops);
	if (!c) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(ENOMEM);
	}
	n = sr_mpa_build_frame(c->buf, sizeof(c->buf), &s->req,
			       pd_len ? conn_param->private_data : NULL, pd_len);
	if (n < 0) {
		pthread_mutex_unlock(&sr_cm_lock);
		free(c);
		return sr_cm_fail(EINVAL);
	}
	c->len = (size_t)n;
	c->id = s;
	s->qp_num = id->qp ? id->qp->qp_num : (conn_param ? conn_param->qp_num : 0);
	s->fd = -1; /* the conn owns the socket now */
	s->conn = c;
	sr_cm_state_set(s, SR_CM_CONNECTING);

	rc = sr_cm_port_connect_locked(s, &c->sock.fd);
	err = rc == -EINPROGRESS ? 0 : rc;
	if (!err)
		err = sr_cm_send_request_now(c);
	if (!err) {
		err = sr_engine_add(&c->sock, c->phase == SR_CONN_READ_REPLY ? EPOLLIN | EPOLLRDHUP
									 : EPOLLOUT);
		if (!err)
			err = sr_cm_conn_arm_timer(c, c->phase == SR_CONN_READ_REPLY ?
							      sr_cm_reply_check_ms() :
							      SR_CM_CONNECT_TIMEOUT_MS);
	}
	if (err) {
		/* reported as an event, like a failure discovered later */
		sr_cm_active_fail(c, sr_cm_fail_type(err), err, NULL); /* unlocks */
		return sync ? sr_cm_sync_wait(s) : 0;
	}
	pthread_mutex_unlock(&sr_cm_lock);
	return sync ? sr_cm_sync_wait(s) : 0;
}

SR_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	const struct sr_priv_ops *ops;
	struct ibv_qp *qp = NULL;
	struct sr_cm_id *s;
	uint32_t qpn;
	int err;

	if (sr_cm_id_inherited(id))
		return sr_cm_fail(EIO); /* the parent's id (fork) */
	if (!id || id->qp)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	pthread_mutex_lock(&sr_cm_lock);
	if (s->state != SR_CM_RESPONDED || !s->conn) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(EINVAL);
	}
	qpn = s->qp_num;
	sr_cm_id_hold(s);
	pthread_mutex_unlock(&sr_cm_lock);

	if (qpn) {
		ops = sr_cm_priv_ops(id->verbs);
		qp = ops && ops->qp_by_num ? ops->qp_by_num(id->verbs, qpn) : NULL;
		if (!qp) {
			sr_cm_id_unhold(s);
			return sr_cm_fail(EINVAL);
		}
	}
	/* No event on this side: the passive side already reported ESTABLISHED. */
	err = sr_cm_start_stream(s, qp, true, false, NULL);
	sr_cm_id_unhold(s);
	return err ? sr_cm_fail(-err) : 0;
}
