// SPDX-License-Identifier: MIT
/*
 * A connection's socket while the CM owns it (struct sr_cm_conn): engine registration, its
 * deadline (an engine timer), its graceful close, frame I/O and MPA parameters. Its events
 * go to its owner through the ops table the owner set (struct sr_cm_conn_ops: active.c,
 * passive.c, stream.c), never by name: this file calls no CM file above the id. The QP
 * moves and the hand-over to the transport are link.c's, the QP-less stream's end stream.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_config.h"
#include "common/sr_drain.h"
#include "common/sr_log.h"

/* ---------------------------------------------------------- dispatch -- */

/* The owner's ops, read under the CM lock; NULL once the connection is dead. */
static const struct sr_cm_conn_ops *sr_cm_conn_live_ops(struct sr_cm_conn *c)
{
	const struct sr_cm_conn_ops *ops;

	pthread_mutex_lock(&sr_cm_lock);
	ops = c->dead ? NULL : c->ops;
	pthread_mutex_unlock(&sr_cm_lock);
	return ops;
}

static void sr_cm_conn_sock_cb(struct sr_engine_handler *h, uint32_t events)
{
	struct sr_cm_conn *c = sr_container_of(h, struct sr_cm_conn, sock);
	const struct sr_cm_conn_ops *ops = sr_cm_conn_live_ops(c);

	if (ops)
		ops->io(c, events);
}

static void sr_cm_conn_timer_cb(struct sr_engine_timer *t)
{
	struct sr_cm_conn *c = sr_container_of(t, struct sr_cm_conn, timer);
	const struct sr_cm_conn_ops *ops = sr_cm_conn_live_ops(c);

	if (ops)
		ops->timeout(c);
}

/* ------------------------------------------------------------ object -- */

struct sr_cm_conn *sr_cm_conn_new(int fd, const struct sr_cm_conn_ops *ops)
{
	struct sr_cm_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->sock.fd = fd;
	c->sock.cb = sr_cm_conn_sock_cb;
	c->timer.cb = sr_cm_conn_timer_cb;
	c->ops = ops;
	sr_list_init(&c->node);
	return c;
}

unsigned int sr_cm_accept_timeout_ms(void)
{
	return sr_config_ms("SOFTRDMA_ACCEPT_TIMEOUT_MS", SR_CM_ACCEPT_TIMEOUT_MS);
}

int sr_cm_conn_arm_timer(struct sr_cm_conn *c, unsigned int ms)
{
	/* an engine timer, not a timerfd: no descriptor and no system call per handshake */
	return sr_engine_timer_arm(&c->timer, ms);
}

void sr_cm_conn_join_listener(struct sr_cm_conn *c, struct sr_cm_id *listener)
{
	c->listener = listener;
	sr_list_add_tail(&listener->hs_list, &c->node);
	listener->handshakes++;
}

static void sr_cm_conn_leave_listener(struct sr_cm_conn *c)
{
	if (!c->listener)
		return;
	sr_list_del(&c->node);
	c->listener->handshakes--;
	c->listener = NULL;
}

void sr_cm_conn_hand_over(struct sr_cm_conn *c, struct sr_cm_id *id)
{
	sr_cm_conn_leave_listener(c);
	c->id = id;
	id->conn = c;
}

bool sr_cm_conn_claim(struct sr_cm_conn *c)
{
	if (c->dead)
		return false;
	c->dead = true;
	if (c->id && c->id->conn == c)
		c->id->conn = NULL;
	sr_cm_conn_leave_listener(c);
	return true;
}

void sr_cm_conn_quiesce(struct sr_cm_conn *c)
{
	sr_engine_del(&c->sock);
	sr_engine_timer_cancel(&c->timer);
}

/* ------------------------------------------------------ graceful close -- */

/*
 * A connected socket the CM gives up on is closed with a FIN, never a reset (which a close
 * with unread bytes, or bytes arriving after the close, would draw): tearing down a
 * half-set-up connection to Linux siw is a path where its CM has hit a BUG() and refused
 * RDMA connections until reboot, so we keep it as gentle as TCP allows. FIN, then keep
 * reading and dropping what the peer still sends until its FIN, or
 * SR_CM_DISCONNECT_TIMEOUT_MS. The lingering socket belongs to nobody; it lives on the
 * engine until then. A peer that makes us give up on its connections and never closes them
 * would hold a descriptor per connection for that long, outside every other bound, so at
 * most SR_CM_MAX_LINGERING sockets linger in the process; beyond, a socket is reset at once
 * (the gentle close is kept for the peers a flood does not hide).
 */
struct sr_cm_linger {
	struct sr_engine_handler sock;
	struct sr_engine_timer timer; /* no descriptor of its own */
};

/* Held while a linger's handlers are being registered: its callbacks wait for that. */
static pthread_mutex_t sr_cm_linger_mu = PTHREAD_MUTEX_INITIALIZER;
/* Lingers alive or being set up (under sr_cm_linger_mu). */
static unsigned int sr_cm_lingering;

/* A linger slot, if one of the SR_CM_MAX_LINGERING is free. */
static bool sr_cm_linger_get(void)
{
	bool ok;

	pthread_mutex_lock(&sr_cm_linger_mu);
	ok = sr_cm_lingering < SR_CM_MAX_LINGERING;
	sr_cm_lingering += ok;
	pthread_mutex_unlock(&sr_cm_linger_mu);
	return ok;
}

static void sr_cm_linger_put(void)
{
	pthread_mutex_lock(&sr_cm_linger_mu);
	sr_cm_lingering--;
	pthread_mutex_unlock(&sr_cm_linger_mu);
}

/* No room to linger: close now with a reset (SO_LINGER 0), whatever is unread or unsent. */
static void sr_cm_close_abort(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/*
 * Read and drop what is there, at most SR_DRAIN_MAX bytes: a peer that sends on and on gets
 * the engine thread back for the rest only after the other connections (level-triggered).
 * Returns true once the stream is over (EOF or error).
 */
static bool sr_cm_drain(int fd)
{
	return sr_drain(fd) == SR_DRAIN_END;
}

/* Engine thread: the linger is over. */
static void sr_cm_linger_end(struct sr_cm_linger *l)
{
	sr_engine_del(&l->sock);
	sr_engine_timer_cancel(&l->timer);
	close(l->sock.fd);
	free(l);
	sr_cm_linger_put();
}

static void sr_cm_linger_sock_cb(struct sr_engine_handler *h, uint32_t events)
{
	struct sr_cm_linger *l = sr_container_of(h, struct sr_cm_linger, sock);
	bool over;

	pthread_mutex_lock(&sr_cm_linger_mu);
	pthread_mutex_unlock(&sr_cm_linger_mu);
	over = sr_cm_drain(h->fd) || (events & (EPOLLHUP | EPOLLERR));
	if (over)
		sr_cm_linger_end(l);
}

static void sr_cm_linger_timer_cb(struct sr_engine_timer *t)
{
	struct sr_cm_linger *l = sr_container_of(t, struct sr_cm_linger, timer);

	pthread_mutex_lock(&sr_cm_linger_mu);
	pthread_mutex_unlock(&sr_cm_linger_mu);
	sr_cm_drain(l->sock.fd); /* the peer never sent its FIN: a last look, then close */
	sr_cm_linger_end(l);
}

static void sr_cm_close_graceful(int fd)
{
	struct sr_cm_linger *l;
	bool over;

	if (!sr_cm_linger_get()) {
		sr_cm_close_abort(fd);
		return;
	}
	/* Unread bytes at close() make the kernel send a reset instead of our FIN. */
	over = sr_cm_drain(fd);
	shutdown(fd, SHUT_WR);
	l = over ? NULL : calloc(1, sizeof(*l));
	if (!l) {
		close(fd); /* over, or no memory to wait: drained at least */
		sr_cm_linger_put();
		return;
	}
	l->sock.fd = fd;
	l->sock.cb = sr_cm_linger_sock_cb;
	l->timer.cb = sr_cm_linger_timer_cb;
	pthread_mutex_lock(&sr_cm_linger_mu);
	if (sr_engine_timer_arm(&l->timer, SR_CM_DISCONNECT_TIMEOUT_MS) ||
	    sr_engine_add(&l->sock, EPOLLIN | EPOLLRDHUP)) {
		pthread_mutex_unlock(&sr_cm_linger_mu);
		sr_engine_timer_cancel(&l->timer);
		close(fd);
		free(l);
		sr_cm_linger_put();
		return;
	}
	pthread_mutex_unlock(&sr_cm_linger_mu);
}

void sr_cm_conn_destroy(struct sr_cm_conn *c)
{
	sr_cm_conn_quiesce(c);
	if (c->sock.fd >= 0) {
		/* a socket still connecting has nobody to say goodbye to; an aborted one has
		 * SO_LINGER 0: close() resets it */
		if (c->phase == SR_CONN_TCP_CONNECT || c->phase == SR_CONN_ABORT)
			close(c->sock.fd);
		else
			sr_cm_close_graceful(c->sock.fd);
	}
	free(c);
}

/* ----------------------------------------------------------- frame I/O -- */

int sr_cm_conn_read(struct sr_cm_conn *c)
{
	while (c->off < c->len) {
		ssize_t n = recv(c->sock.fd, c->buf + c->off, c->len - c->off, MSG_DONTWAIT);

		if (n > 0) {
			c->off += (size_t)n;
		} else if (n == 0) {
			return -ECONNRESET;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			return 0;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
	return 1;
}

/*
 * A frame usually arrives whole, in one segment: one MSG_PEEK sees it and whatever follows
 * it, one recv takes exactly it (two system calls where reading the header, the private
 * data and then peeking for stray bytes took three). Anything unusual (a short or bad
 * header, part of the frame) is left to the byte-wise path, which reports it.
 */
static void sr_cm_conn_read_whole(struct sr_cm_conn *c, bool expect_reply)
{
	uint8_t peek[sizeof(c->buf) + 1];
	struct sr_mpa_hdr_info hi;
	ssize_t n, got;
	size_t len;

	n = recv(c->sock.fd, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);
	if (n < SR_MPA_RR_HDR_LEN || sr_mpa_parse_header(peek, expect_reply, &hi) < 0)
		return;
	len = SR_MPA_RR_HDR_LEN + hi.pd_len;
	if (len > sizeof(c->buf) || (size_t)n < len)
		return;
	got = recv(c->sock.fd, c->buf, len, MSG_DONTWAIT);
	if (got <= 0)
		return;
	c->hi = hi;
	c->hdr_done = true;
	c->len = len;
	c->off = (size_t)got;
	if ((size_t)got == len)
		c->tail = (size_t)n > len ? SR_CONN_TAIL_BYTES : SR_CONN_TAIL_NONE;
}

int sr_cm_conn_read_frame(struct sr_cm_conn *c, bool expect_reply)
{
	c->tail = SR_CONN_TAIL_UNKNOWN;
	if (c->off == 0 && !c->hdr_done)
		sr_cm_conn_read_whole(c, expect_reply);
	for (;;) {
		int r = sr_cm_conn_read(c);

		if (r <= 0)
			return r;
		if (c->hdr_done)
			return 1;
		/* header complete: every length check is the codec's */
		r = sr_mpa_parse_header(c->buf, expect_reply, &c->hi);
		if (r < 0)
			return r;
		c->hdr_done = true;
		c->len = SR_MPA_RR_HDR_LEN + c->hi.pd_len;
		if (c->len > sizeof(c->buf))
			return SR_MPA_ETOOLONG;
	}
}

int sr_cm_conn_check_quiet(struct sr_cm_conn *c)
{
	uint8_t b;
	ssize_t n;

	/* Nothing may follow a Request before the Reply, nor a Reply before our first FPDU. */
	if (c->tail != SR_CONN_TAIL_UNKNOWN)
		return c->tail == SR_CONN_TAIL_BYTES ? -EPROTO : 0;
	n = recv(c->sock.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n > 0 ? -EPROTO : 0;
}

int sr_cm_conn_parse(struct sr_cm_conn *c, struct sr_mpa_params *p, const uint8_t **ulp,
		     size_t *ulp_len)
{
	return sr_mpa_parse_pd(&c->hi, c->buf + SR_MPA_RR_HDR_LEN, c->len - SR_MPA_RR_HDR_LEN,
			       p, ulp, ulp_len);
}

int sr_cm_send_frame(int fd, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(fd, buf + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return -EIO; /* a fresh socket always takes a few hundred bytes */
		else
			return n < 0 ? -errno : -EIO;
	}
	return 0;
}

void sr_cm_send_reject(int fd, const struct sr_mpa_params *peer, const void *pd, size_t len)
{
	struct sr_mpa_params rep = {
		.is_reply = true,
		.rev = peer->rev ? peer->rev : SR_MPA_REV1,
		.crc = peer->crc,
		.reject = true,
	};
	uint8_t frame[SR_MPA_FRAME_MAX];
	ssize_t n;

	n = sr_mpa_build_frame(frame, sizeof(frame), &rep, len ? pd : NULL, len);
	if (n > 0)
		sr_cm_send_frame(fd, frame, (size_t)n);
}

/* ------------------------------------------------------ MPA parameters -- */

static uint8_t sr_cm_min_u8(unsigned int a, unsigned int b)
{
	unsigned int v = a < b ? a : b;

	return (uint8_t)(v > 255 ? 255 : v);
}

/*
 * The IRD/ORD ceilings of the id's device, as it reported them. Every caller works on an id
 * past address resolution or on a request id, and both are bound to their device; an id
 * without one has nothing to offer.
 */
static void sr_cm_rd_limits(const struct sr_cm_id *id, unsigned int *max_rr,
			    unsigned int *max_id)
{
	*max_rr = id->dev ? id->dev->max_resp_res : 0;
	*max_id = id->dev ? id->dev->max_init_depth : 0;
}

void sr_cm_local_params(struct sr_cm_id *id, const struct rdma_conn_param *p,
			struct sr_mpa_local *loc)
{
	unsigned int max_rr, max_id, def_rr, def_id;

	sr_cm_rd_limits(id, &max_rr, &max_id);
	def_rr = max_rr;
	def_id = max_id;

	/* Accepting: by default as much as the peer asked for, within our limits. */
	if (id->have_peer && id->peer.enhanced && !id->peer.is_reply) {
		def_rr = sr_cm_min_u8(id->peer.ord, max_rr);
		def_id = sr_cm_min_u8(id->peer.ird, max_id);
	}
	memset(loc, 0, sizeof(*loc));
	/* 0xFF (RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH) means "the device maximum" */
	if (!p || p->responder_resources == RDMA_MAX_RESP_RES)
		loc->ird = (uint16_t)def_rr;
	else
		loc->ird = sr_cm_min_u8(p->responder_resources, max_rr);
	if (!p || p->initiator_depth == RDMA_MAX_INIT_DEPTH)
		loc->ord = (uint16_t)def_id;
	else
		loc->ord = sr_cm_min_u8(p->initiator_depth, max_id);
	loc->crc = sr_config_bool("SOFTRDMA_MPA_CRC");
}

void sr_cm_peer_evparam(struct sr_cm_id *id, const struct sr_mpa_params *peer,
			const uint8_t *ulp, size_t ulp_len, struct sr_cm_evparam *out)
{
	unsigned int max_rr, max_id;

	sr_cm_rd_limits(id, &max_rr, &max_id);
	memset(out, 0, sizeof(*out));
	out->pd = ulp;
	out->pd_len = ulp_len;
	/* iWARP CM: initiator_depth = the peer's IRD, responder_resources = its ORD */
	if (peer->enhanced) {
		out->initiator_depth = sr_cm_min_u8(peer->ird, 255);
		out->responder_resources = sr_cm_min_u8(peer->ord, 255);
	} else {
		out->initiator_depth = (uint8_t)max_id;
		out->responder_resources = (uint8_t)max_rr;
	}
}
