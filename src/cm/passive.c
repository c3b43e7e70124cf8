// SPDX-License-Identifier: MIT
/*
 * The passive side: rdma_listen (a listening TCP socket on the engine), reading each
 * connection's MPA Request on the engine, CONNECT_REQUEST with a new id, and
 * rdma_accept / rdma_reject on that id.
 *
 * A half-open connection (accepted, Request not complete) belongs to its listener; one
 * that misbehaves (bad frame, bytes after the Request, timeout, close) is simply dropped:
 * the application never hears of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"
#include "netdev/sr_route.h"

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

/* Drop a half-open connection (lock held, c live; returns unlocked). */
static void sr_cm_passive_drop(struct sr_cm_conn *c, const struct sr_mpa_params *reject)
{
	sr_cm_conn_claim(c);
	pthread_mutex_unlock(&sr_cm_lock);
	if (reject)
		sr_cm_send_reject(c->sock.fd, reject, NULL, 0);
	sr_cm_conn_destroy(c);
}

/*
 * The device of an accepted connection's local address (lock held, c live). Opening a
 * device is not done under the CM lock (devices.c): when it is not open yet, the lock is
 * let go for the open. c stays allocated meanwhile (whoever claims it destroys it only
 * after this callback of the listener's or of c's own returns), but may be claimed: NULL
 * with c->dead then, and nothing else of c's or its listener's may be touched.
 */
static struct sr_cm_dev *sr_cm_passive_dev(struct sr_cm_conn *c, const struct sockaddr *local)
{
	struct sr_cm_dev *dev;
	int ifindex = sr_cm_dev_ifindex_for_local(local);

	if (ifindex <= 0)
		return NULL;
	dev = sr_cm_dev_find(ifindex);
	if (dev)
		return dev;
	pthread_mutex_unlock(&sr_cm_lock);
	dev = sr_cm_dev_by_ifindex(ifindex);
	pthread_mutex_lock(&sr_cm_lock);
	return c->dead ? NULL : dev;
}

/* A complete, well-formed Request (lock held; returns unlocked). */
static void sr_cm_passive_request(struct sr_cm_conn *c)
{
	struct sr_cm_id *l = c->listener;
	struct sockaddr_storage local, peer;
	socklen_t llen = sizeof(local);
	struct sr_mpa_params req, rep;
	struct sr_mpa_local loc;
	struct sr_mpa_conn mpa;
	struct sr_cm_evparam p;
	const uint8_t *ulp;
	struct sr_cm_dev *dev;
	struct sr_cm_id *id;
	size_t ulp_len;
	int err;

	err = sr_cm_conn_check_quiet(c);
	if (!err)
		err = sr_cm_conn_parse(c, &req, &ulp, &ulp_len);
	if (err) {
		sr_dbg("bad MPA Request: %d", err);
		sr_cm_passive_drop(c, NULL);
		return;
	}
	/*
	 * What we could never accept (markers, no usable RTR) is refused right away. The device
	 * is not known yet; any IRD admits the Read RTR (accept grants it its slot), so one
	 * stands for the device's limits here.
	 */
	memset(&loc, 0, sizeof(loc));
	loc.ird = 1;
	loc.ord = 1;
	if (sr_mpa_respond(&req, &loc, &rep, &mpa) < 0) {
		sr_cm_passive_drop(c, &req);
		return;
	}
	/* accept4 gave the peer; a listener on a specific address is our side (one system
	 * call less per connection), only a wildcard one needs to ask. */
	memcpy(&peer, &c->peer, sizeof(peer));
	if (!sr_addr_is_any(&l->id.route.addr.src_addr))
		sr_addr_store(&local, &l->id.route.addr.src_addr);
	else if (getsockname(c->sock.fd, (struct sockaddr *)&local, &llen) < 0) {
		sr_cm_passive_drop(c, NULL);
		return;
	}
	dev = sr_cm_passive_dev(c, (struct sockaddr *)&local);
	if (!dev) {
		if (c->dead) {
			pthread_mutex_unlock(&sr_cm_lock); /* its claimer tears it down */
			return;
		}
		sr_warn("no device for an accepted connection (errno %d)", errno);
		sr_cm_passive_drop(c, &req);
		return;
	}
	l = c->listener;
	/* iWARP: requests over the backlog are rejected (the peer's TCP is already up). */
	if (l->queued_reqs >= (unsigned int)l->backlog) {
		sr_dbg("listener %p: backlog %d full", (void *)l, l->backlog);
		sr_cm_passive_drop(c, &req);
		return;
	}
	/* A synchronous listener's requests get their own synchronous channels. */
	id = sr_cm_id_new_locked(l->sync ? NULL : l->chan, l->id.context, l->id.ps,
				 l->id.qp_type);
	if (!id) {
		sr_cm_passive_drop(c, &req);
		return;
	}
	sr_cm_id_set_dev(id, dev);
	sr_addr_store(&id->id.route.addr.src_storage, (struct sockaddr *)&local);
	sr_addr_store(&id->id.route.addr.dst_storage, (struct sockaddr *)&peer);
	id->tos = l->tos;
	id->user_timeout_ms = l->user_timeout_ms;
	id->ack_timeout = l->ack_timeout;
	sr_cm_apply_sockopts(id, c->sock.fd);
	sr_cm_state_set(id, SR_CM_CONN_RECV);
	id->peer = req;
	id->have_peer = true;

	/* the socket moves from the listener to the new id; nobody reads it until accept */
	sr_cm_conn_hand_over(c, id);
	sr_cm_conn_phase_set(c, SR_CONN_HELD);
	sr_cm_conn_quiesce(c);
	/* not for ever (an engine timer: no system call, no descriptor) */
	sr_cm_conn_arm_timer(c, sr_cm_accept_timeout_ms());

	sr_cm_peer_evparam(id, &req, ulp, ulp_len, &p);
	if (sr_cm_post_request(l, id, &p)) {
		pthread_mutex_unlock(&sr_cm_lock);
		sr_cm_id_free_unseen(id);
		return;
	}
	pthread_mutex_unlock(&sr_cm_lock);
}

/* Read what there is of c's Request (lock held). Returns 1 when it was handled (unlocked),
 * 0 when more is to come (still locked). */
static int sr_cm_passive_read_locked(struct sr_cm_conn *c)
{
	int r;

	sr_cm_assert_locked();
	if (!c->listener || c->listener->state != SR_CM_LISTEN) {
		sr_cm_passive_drop(c, NULL);
		return 1;
	}
	r = sr_cm_conn_read_frame(c, false);
	if (r == 0)
		return 0;
	if (r < 0) {
		sr_dbg("MPA Request read: %d", r);
		sr_cm_passive_drop(c, NULL);
		return 1;
	}
	sr_cm_passive_request(c); /* unlocks */
	return 1;
}

void sr_cm_passive_io(struct sr_cm_conn *c, uint32_t events)
{
	pthread_mutex_lock(&sr_cm_lock);
	if (c->dead || c->phase != SR_CONN_READ_REQ) {
		pthread_mutex_unlock(&sr_cm_lock);
		return;
	}
	if (!sr_cm_passive_read_locked(c))
		pthread_mutex_unlock(&sr_cm_lock);
}

/* No complete Request in time (engine). */
static void sr_cm_passive_request_timeout(struct sr_cm_conn *c)
{
	pthread_mutex_lock(&sr_cm_lock);
	if (c->dead || c->phase != SR_CONN_READ_REQ) {
		pthread_mutex_unlock(&sr_cm_lock);
		return;
	}
	/* SR_CM_REQUEST_TIMEOUT_MS, or SR_CM_HANDSHAKE_SLOW_MS over its source's bound */
	sr_dbg("no complete MPA Request in time");
	sr_cm_passive_drop(c, NULL);
}

/*
 * The application held a request past sr_cm_accept_timeout_ms(). The kernel's iWARP CM
 * holds it for ever, and its initiator gives up after its own Reply timeout (UNREACHABLE);
 * we let the socket go instead of keeping it, with an MPA Reject for an initiator that still
 * waits (REJECTED). The request id gets no event, as an unanswered kernel request gets none;
 * rdma_accept and rdma_reject on it then fail with ECONNRESET, as siw's do on a connection
 * that is gone, and rdma_destroy_id works as always.
 */
static void sr_cm_passive_held_timeout(struct sr_cm_conn *c)
{
	struct sr_mpa_params peer;
	struct sr_cm_id *id;

	pthread_mutex_lock(&sr_cm_lock);
	id = c->id;
	if (c->dead || c->phase != SR_CONN_HELD || !id || id->state != SR_CM_CONN_RECV) {
		pthread_mutex_unlock(&sr_cm_lock);
		return;
	}
	if (id->busy) {
		/* rdma_accept/rdma_reject is working on it right now: it decides */
		sr_cm_conn_arm_timer(c, sr_cm_accept_timeout_ms());
		pthread_mutex_unlock(&sr_cm_lock);
		return;
	}
	sr_dbg("request id %p not answered in %u ms: rejecting it", (void *)id,
	       sr_cm_accept_timeout_ms());
	peer = id->peer;
	sr_cm_passive_drop(c, &peer); /* unlocks */
}

void sr_cm_passive_timeout(struct sr_cm_conn *c)
{
	enum sr_cm_conn_phase phase;

	pthread_mutex_lock(&sr_cm_lock);
	phase = c->phase;
	pthread_mutex_unlock(&sr_cm_lock);
	/* a request held for the application is the only thing after the Request that arms
	 * one (an accepted QP-less stream's owner is stream.c) */
	if (phase == SR_CONN_HELD)
		sr_cm_passive_held_timeout(c);
	else
		sr_cm_passive_request_timeout(c);
}

/* What our connections call of us (conn.c). */
static const struct sr_cm_conn_ops sr_cm_passive_ops = {
	.io = sr_cm_passive_io,
	.timeout = sr_cm_passive_timeout,
};

/*
 * Room for half-open handshakes (the one admission rule; each holds one descriptor, its
 * socket). Real clients send their Request right after connecting, so a handshake whose
 * Request is not complete SR_CM_HANDSHAKE_SLOW_MS after its accept is "slow", whatever it has
 * sent (one byte of a Request held a socket as long as none did), and slow ones give way:
 *   - a source holds SR_CM_MAX_HANDSHAKES_PER_SOURCE; a newcomer beyond makes its source's
 *     oldest handshake, if slow, make room. If none is slow (a real client's connect storm),
 *     the newcomer is admitted over the bound, with SR_CM_HANDSHAKE_SLOW_MS instead of
 *     SR_CM_REQUEST_TIMEOUT_MS for its Request, so a source is back within its bound that
 *     long after a burst; and never beyond SR_CM_MAX_HANDSHAKES_PER_SOURCE_BURST: there, the
 *     source's oldest goes, slow or not;
 *   - a listener holds SR_CM_MAX_HANDSHAKES; beyond, the oldest slow handshake of any source
 *     is dropped for the newcomer, and with none slow the newcomer is refused.
 */
enum sr_cm_admission {
	SR_HS_REFUSE,     /* no room: the newcomer's socket is closed */
	SR_HS_ADMIT,      /* within the bounds: SR_CM_REQUEST_TIMEOUT_MS for its Request */
	SR_HS_ADMIT_OVER, /* over its source's bound: SR_CM_HANDSHAKE_SLOW_MS for its Request */
};

static bool sr_cm_hs_slow(const struct sr_cm_conn *c, uint64_t now)
{
	return now - c->accepted_ns >= (uint64_t)SR_CM_HANDSHAKE_SLOW_MS * 1000000u;
}

/*
 * The oldest handshake of l from source, and how many there are from it. hs_list is in
 * accept order, so the first one found is the oldest.
 */
static struct sr_cm_conn *sr_cm_oldest_of(struct sr_cm_id *l, const struct sockaddr *source,
					  unsigned int *count)
{
	struct sr_cm_conn *oldest = NULL;
	struct sr_list *pos, *tmp;

	*count = 0;
	sr_list_for_each_safe(pos, tmp, &l->hs_list) {
		struct sr_cm_conn *c = sr_list_entry(pos, struct sr_cm_conn, node);

		if (!sr_addr_same_ip((struct sockaddr *)&c->peer, source))
			continue;
		if (!oldest)
			oldest = c;
		++*count;
	}
	return oldest;
}

/* Make room for a newcomer from peer (lock held; may unlock and relock). */
static enum sr_cm_admission sr_cm_make_room_locked(struct sr_cm_id *l,
						   const struct sockaddr *peer)
{
	bool full = l->handshakes >= SR_CM_MAX_HANDSHAKES;
	struct sr_cm_conn *victim = NULL, *oldest;
	uint64_t now = sr_mono_ns();
	unsigned int same;

	sr_cm_assert_locked();
	oldest = sr_cm_oldest_of(l, peer, &same);
	if (same >= SR_CM_MAX_HANDSHAKES_PER_SOURCE &&
	    (sr_cm_hs_slow(oldest, now) || same >= SR_CM_MAX_HANDSHAKES_PER_SOURCE_BURST))
		victim = oldest;
	if (!victim && full) {
		/* anybody's oldest: the head of the list */
		oldest = sr_list_first(&l->hs_list, struct sr_cm_conn, node);
		if (!sr_cm_hs_slow(oldest, now))
			return SR_HS_REFUSE;
		victim = oldest;
	}
	if (victim) {
		sr_dbg("listener %p: half-open handshakes full, dropping the oldest", (void *)l);
		same -= sr_addr_same_ip((struct sockaddr *)&victim->peer, peer);
		sr_cm_passive_drop(victim, NULL); /* unlocks */
		pthread_mutex_lock(&sr_cm_lock);
	}
	return same >= SR_CM_MAX_HANDSHAKES_PER_SOURCE ? SR_HS_ADMIT_OVER : SR_HS_ADMIT;
}

/* The listener rested after running out of descriptors: accept again. */
static void sr_cm_accept_resume(struct sr_engine_timer *t)
{
	struct sr_cm_id *l = sr_container_of(t, struct sr_cm_id, accept_pause);

	pthread_mutex_lock(&sr_cm_lock);
	if (l->state == SR_CM_LISTEN)
		sr_engine_mod(&l->listen_h, EPOLLIN);
	pthread_mutex_unlock(&sr_cm_lock);
}

static void sr_cm_listen_cb(struct sr_engine_handler *h, uint32_t events)
{
	struct sr_cm_id *l = sr_container_of(h, struct sr_cm_id, listen_h);

	/* a bounded batch per wakeup keeps the engine fair to everybody else */
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(h->fd, (struct sockaddr *)&peer, &plen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		enum sr_cm_admission room;
		struct sr_cm_conn *c;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			sr_warn("accept: %m");
			/*
			 * Out of descriptors or memory: the connection stays queued and the
			 * listener readable, and a level-triggered epoll would call us again at
			 * once, forever. Stop watching it for a while instead.
			 */
			pthread_mutex_lock(&sr_cm_lock);
			if (l->state == SR_CM_LISTEN) {
				sr_engine_mod(&l->listen_h, 0);
				l->accept_pause.cb = sr_cm_accept_resume;
				sr_engine_timer_arm(&l->accept_pause, SR_CM_ACCEPT_PAUSE_MS);
			}
			pthread_mutex_unlock(&sr_cm_lock);
			return;
		}
		pthread_mutex_lock(&sr_cm_lock);
		if (l->state != SR_CM_LISTEN) {
			pthread_mutex_unlock(&sr_cm_lock);
			close(fd);
			continue;
		}
		c = NULL;
		room = sr_cm_make_room_locked(l, (struct sockaddr *)&peer);
		if (room != SR_HS_REFUSE && l->state == SR_CM_LISTEN)
			c = sr_cm_conn_new(fd, &sr_cm_passive_ops);
		if (!c) {
			pthread_mutex_unlock(&sr_cm_lock);
			close(fd);
			continue;
		}
		sr_addr_store(&c->peer, (struct sockaddr *)&peer);
		sr_cm_conn_phase_set(c, SR_CONN_READ_REQ);
		c->len = SR_MPA_RR_HDR_LEN;
		c->accepted_ns = sr_mono_ns();
		sr_cm_conn_join_listener(c, l);
		/* An active side sends its Request right after its connect() (active.c), so
		 * it is often here already: taken now, the socket never enters the epoll set
		 * (an epoll_ctl in, one out and a wake-up less per connection). */
		if (sr_cm_passive_read_locked(c))
			continue;
		if (sr_engine_add(&c->sock, EPOLLIN | EPOLLRDHUP) ||
		    sr_cm_conn_arm_timer(c, room == SR_HS_ADMIT ? SR_CM_REQUEST_TIMEOUT_MS :
								   SR_CM_HANDSHAKE_SLOW_MS)) {
			sr_cm_passive_drop(c, NULL); /* unlocks */
			continue;
		}
		pthread_mutex_unlock(&sr_cm_lock);
	}
}

void sr_cm_listen_stop(struct sr_cm_id *l, struct sr_list *claimed)
{
	struct sr_list *pos, *tmp;

	sr_list_for_each_safe(pos, tmp, &l->hs_list) {
		struct sr_cm_conn *c = sr_list_entry(pos, struct sr_cm_conn, node);

		sr_cm_conn_claim(c); /* unlinks c->node */
		sr_list_add_tail(claimed, &c->node);
	}
}

SR_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct sockaddr_in any = { .sin_family = AF_INET };
	struct sr_cm_id *s;
	int err = 0;

	if (sr_cm_id_inherited(id))
		return sr_cm_fail(EIO); /* the parent's id (fork) */
	if (!id)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	if (backlog <= 0 || backlog > SR_CM_MAX_BACKLOG)
		backlog = SR_CM_MAX_BACKLOG;

	pthread_mutex_lock(&sr_cm_lock);
	if (s->state == SR_CM_LISTEN) {
		s->backlog = backlog;
		goto out;
	}
	if (s->state == SR_CM_IDLE)
		err = sr_cm_bind_locked(s, (struct sockaddr *)&any, false, NULL);
	if (!err && s->state != SR_CM_BOUND)
		err = -EINVAL;
	if (err)
		goto out;
	err = sr_cm_port_listen_locked(s);
	if (err)
		goto out;
	/*
	 * The application's backlog bounds CONNECT_REQUESTs waiting for it (iWARP: the MPA
	 * layer's, sr_cm_passive_request); the kernel's queue only holds connections until
	 * the engine accepts them. Tied to a small application backlog (rping: 3), a burst of
	 * connects overflowed it and every SYN beyond cost a client a 1 s retransmit, so a
	 * half-open flood kept real clients waiting for seconds. Handshakes are bounded on our side.
	 */
	if (listen(s->fd, SR_CM_MAX_HANDSHAKES) < 0) {
		err = -errno;
		goto out;
	}
	s->backlog = backlog;
	s->listen_h.fd = s->fd;
	s->listen_h.cb = sr_cm_listen_cb;
	sr_cm_state_set(s, SR_CM_LISTEN);
	err = sr_engine_add(&s->listen_h, EPOLLIN);
	if (err)
		sr_cm_state_set(s, SR_CM_BOUND);
out:
	pthread_mutex_unlock(&sr_cm_lock);
	return err ? sr_cm_fail(-err) : 0;
}

SR_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	uint8_t frame[SR_MPA_FRAME_MAX];
	const struct sr_priv_ops *ops;
	struct sr_mpa_params rep;
	struct ibv_qp *qp = NULL;
	struct sr_cm_evparam est;
	struct sr_cm_conn *c;
	struct sr_cm_id *s;
	size_t pd_len = 0;
	ssize_t n;
	int err, fd;
	bool sync;

	if (sr_cm_id_inherited(id))
		return sr_cm_fail(EIO); /* the parent's id (fork) */
	if (!id)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	sync = s->sync; /* once ESTABLISHED is out an async id may be destroyed any time */
	if (conn_param && conn_param->private_data)
		pd_len = conn_param->private_data_len;
	ops = sr_cm_priv_ops(id->verbs);
	/* QPs the application created itself are found by number (rping -q) */
	if (id->qp) {
		qp = id->qp;
	} else if (!conn_param) {
		/* nothing says which QP, nor that there is none (v44 dereferences NULL here) */
		return sr_cm_fail(EINVAL);
	} else if (conn_param->qp_num) {
		qp = ops && ops->qp_by_num ? ops->qp_by_num(id->verbs, conn_param->qp_num) : NULL;
		if (!qp)
			return sr_cm_fail(EINVAL);
	}
	if (qp && (!ops || !ops->attach))
		return sr_cm_fail(EOPNOTSUPP);

	pthread_mutex_lock(&sr_cm_lock);
	if (s->state == SR_CM_CONN_RECV && !s->conn && !s->listener) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(ECONNRESET); /* held too long (sr_cm_passive_held_timeout) */
	}
	if (s->state != SR_CM_CONN_RECV || !s->conn || s->listener ||
	    pd_len > sr_cm_pd_max(s->peer.enhanced)) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(EINVAL);
	}
	sr_cm_local_params(s, conn_param, &s->loc);
	/* the QP's receiver-not-ready wait at RTS (IB: RNR retries; 7 = without end) */
	s->rnr_retry = conn_param ? (uint8_t)SR_MIN(conn_param->rnr_retry_count, 7) : 0;
	/* a peer offering only the Read RTR needs one IRD slot for it, whatever was asked */
	if (s->peer.enhanced && s->peer.p2p && s->peer.rtr == SR_MPA_RTR_READ && !s->loc.ird)
		s->loc.ird = 1;
	if (sr_mpa_respond(&s->peer, &s->loc, &rep, &s->mpa) < 0) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(EINVAL); /* refused at request time already; cannot happen */
	}
	s->have_mpa = true;
	n = sr_mpa_build_frame(frame, sizeof(frame), &rep,
			       pd_len ? conn_param->private_data : NULL, pd_len);
	if (n < 0) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(EINVAL);
	}
	sr_cm_id_hold(s);
	pthread_mutex_unlock(&sr_cm_lock);

	/* Upstream moves the QP before its REP: the peer may send the moment it has our Reply. */
	if (id->qp) {
		err = sr_cm_qp_to_rts(s, qp);
		if (err)
			goto fail;
	}

	pthread_mutex_lock(&sr_cm_lock);
	c = s->conn;
	fd = c && !c->dead ? c->sock.fd : -1;
	pthread_mutex_unlock(&sr_cm_lock);
	err = fd < 0 ? -ECONNABORTED : sr_cm_send_frame(fd, frame, (size_t)n);
	if (err) {
		pthread_mutex_lock(&sr_cm_lock);
		c = s->conn;
		if (c && !sr_cm_conn_claim(c))
			c = NULL;
		/* rdma_destroy_id may have begun meanwhile (it waits for our hold): DESTROYING
		 * stays, it is the id's last state */
		if (s->state != SR_CM_DESTROYING)
			sr_cm_state_set(s, SR_CM_FAILED);
		pthread_mutex_unlock(&sr_cm_lock);
		if (c)
			sr_cm_conn_destroy(c);
		sr_cm_qp_to_err(qp);
		goto fail;
	}

	memset(&est, 0, sizeof(est));
	est.initiator_depth = (uint8_t)SR_MIN(s->mpa.ird, 255);
	est.responder_resources = (uint8_t)SR_MIN(s->mpa.ord, 255);
	err = sr_cm_start_stream(s, qp, false, true, &est);
	if (err)
		goto fail;
	sr_cm_id_unhold(s);
	return sync ? sr_cm_sync_wait(s) : 0;
fail:
	sr_cm_id_unhold(s);
	return sr_cm_fail(err == -EPIPE ? ECONNRESET : -err);
}

SR_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len)
{
	struct sr_cm_conn *c;
	struct sr_cm_id *s;
	size_t len = private_data ? private_data_len : 0;

	if (sr_cm_id_inherited(id))
		return sr_cm_fail(EIO); /* the parent's id (fork) */
	if (!id)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	pthread_mutex_lock(&sr_cm_lock);
	c = s->conn;
	if (s->state == SR_CM_CONN_RECV && !c && !s->listener) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(ECONNRESET); /* held too long (sr_cm_passive_held_timeout) */
	}
	if (s->state != SR_CM_CONN_RECV || !c || s->listener ||
	    len > sr_cm_pd_max(s->peer.enhanced) || !sr_cm_conn_claim(c)) {
		pthread_mutex_unlock(&sr_cm_lock);
		return sr_cm_fail(EINVAL);
	}
	sr_cm_state_set(s, SR_CM_FAILED);
	pthread_mutex_unlock(&sr_cm_lock);
	/* No local event; the peer gets REJECTED with this private data. */
	sr_cm_send_reject(c->sock.fd, &s->peer, private_data, len);
	sr_cm_conn_destroy(c);
	return 0;
}

SR_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}
