// SPDX-License-Identifier: MIT
/*
 * A connection's socket while the CM owns it (struct sr_cm_conn): engine registration and
 * dispatch by phase, the CM's one timer for every connection's deadline, frame I/O, MPA parameters and the QP moves around them. The
 * hand-over to the transport is link.c, the QP-less stream's end stream.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "cm/cm_priv.h"
#include "common/sr_config.h"
#include "common/sr_log.h"

/* ---------------------------------------------------------- dispatch -- */

/* The connection's phase, read under the CM lock; false once it is dead. */
static bool sr_cm_conn_live_phase(struct sr_cm_conn *c, enum sr_cm_conn_phase *phase)
{
	bool live;

	pthread_mutex_lock(&sr_cm_lock);
	*phase = c->phase;
	live = !c->dead;
	pthread_mutex_unlock(&sr_cm_lock);
	return live;
}

static void sr_cm_conn_sock_cb(struct sr_engine_handler *h, uint32_t events)
{
	struct sr_cm_conn *c = sr_container_of(h, struct sr_cm_conn, sock);
	enum sr_cm_conn_phase phase;

	if (!sr_cm_conn_live_phase(c, &phase))
		return;
	switch (phase) {
	case SR_CONN_TCP_CONNECT:
	case SR_CONN_SEND_REQ:
	case SR_CONN_READ_REPLY:
		sr_cm_active_io(c, events);
		break;
	case SR_CONN_READ_REQ:
		sr_cm_passive_io(c, events);
		break;
	case SR_CONN_STREAM:
		sr_cm_stream_io(c, events);
		break;
	case SR_CONN_HELD:
		break;
	}
}

/* ------------------------------------------------------------- timers -- */

/*
 * One timerfd serves every connection's deadline (MPA Request/Reply timeouts, a QP-less
 * stream's wait for the peer's FIN). The list is kept in deadline order; since each kind
 * of timeout has one fixed length, a new deadline almost always goes to the tail.
 *
 * The mutex protects the list, the armed flags and firing, and is taken after sr_cm_lock,
 * never before it. firing is the connection whose handler the engine thread is running:
 * quiescing it from another thread waits for that to end, as sr_engine_del() does for a
 * socket callback.
 */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct sr_engine_handler h;  /* .fd: the timerfd, made on first use */
	struct sr_list list;         /* struct sr_cm_conn (tnode), earliest first */
	struct sr_cm_conn *firing;
} sr_cm_timer = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.h = { .fd = -1 },
	.list = SR_LIST_INIT(sr_cm_timer.list),
};

static uint64_t sr_cm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Point the timerfd at the earliest deadline (mu held). */
static void sr_cm_timer_program(void)
{
	struct itimerspec its = { 0 };
	struct sr_cm_conn *first;

	if (sr_list_empty(&sr_cm_timer.list))
		return; /* a stale expiry finds nothing due and does no harm */
	first = sr_list_first(&sr_cm_timer.list, struct sr_cm_conn, tnode);
	/* 0 would disarm: a deadline already due fires at the next nanosecond */
	its.it_value.tv_sec = (time_t)(first->deadline_ns / 1000000000ull);
	its.it_value.tv_nsec = (long)(first->deadline_ns % 1000000000ull);
	if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	if (timerfd_settime(sr_cm_timer.h.fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		sr_err("CM timer: %m");
}

/* Dispatch an expired connection by phase (engine thread, no lock held). */
static void sr_cm_conn_expired(struct sr_cm_conn *c)
{
	enum sr_cm_conn_phase phase;

	if (!sr_cm_conn_live_phase(c, &phase))
		return;
	switch (phase) {
	case SR_CONN_TCP_CONNECT:
	case SR_CONN_SEND_REQ:
	case SR_CONN_READ_REPLY:
		sr_cm_active_timeout(c);
		break;
	case SR_CONN_READ_REQ:
		sr_cm_passive_timeout(c);
		break;
	case SR_CONN_STREAM:
		sr_cm_stream_timeout(c);
		break;
	case SR_CONN_HELD:
		break;
	}
}

static void sr_cm_timer_cb(struct sr_engine_handler *h, uint32_t events)
{
	uint64_t n;

	if (read(h->fd, &n, sizeof(n)) != sizeof(n))
		return; /* not expired (re-armed meanwhile) */
	/* a bounded batch per wakeup keeps the engine fair; the rest fire right after */
	for (int i = 0; i < 64; i++) {
		struct sr_cm_conn *c = NULL;

		pthread_mutex_lock(&sr_cm_timer.mu);
		if (!sr_list_empty(&sr_cm_timer.list)) {
			c = sr_list_first(&sr_cm_timer.list, struct sr_cm_conn, tnode);
			if (c->deadline_ns > sr_cm_now_ns())
				c = NULL;
		}
		if (c) {
			sr_list_del(&c->tnode);
			c->armed = false;
			sr_cm_timer.firing = c;
		}
		pthread_mutex_unlock(&sr_cm_timer.mu);
		if (!c)
			break;
		sr_cm_conn_expired(c); /* may free c (then on this thread: nobody waits) */
		pthread_mutex_lock(&sr_cm_timer.mu);
		sr_cm_timer.firing = NULL;
		pthread_cond_broadcast(&sr_cm_timer.cond);
		pthread_mutex_unlock(&sr_cm_timer.mu);
	}
	pthread_mutex_lock(&sr_cm_timer.mu);
	sr_cm_timer_program();
	pthread_mutex_unlock(&sr_cm_timer.mu);
}

int sr_cm_conn_arm_timer(struct sr_cm_conn *c, unsigned int ms)
{
	struct sr_list *pos;
	int err = 0;

	pthread_mutex_lock(&sr_cm_timer.mu);
	if (sr_cm_timer.h.fd < 0) {
		sr_cm_timer.h.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (sr_cm_timer.h.fd < 0) {
			err = -errno;
			goto out;
		}
		sr_cm_timer.h.cb = sr_cm_timer_cb;
		err = sr_engine_add(&sr_cm_timer.h, EPOLLIN);
		if (err) {
			close(sr_cm_timer.h.fd);
			sr_cm_timer.h.fd = -1;
			goto out;
		}
	}
	if (c->armed)
		sr_list_del(&c->tnode);
	c->deadline_ns = sr_cm_now_ns() + (uint64_t)ms * 1000000ull;
	/* from the tail: the place of a fixed-length timeout is nearly always there */
	for (pos = sr_cm_timer.list.prev; pos != &sr_cm_timer.list; pos = pos->prev)
		if (sr_list_entry(pos, struct sr_cm_conn, tnode)->deadline_ns <= c->deadline_ns)
			break;
	sr_list_add_tail(pos->next, &c->tnode); /* right after pos */
	c->armed = true;
	if (sr_cm_timer.list.next == &c->tnode)
		sr_cm_timer_program();
out:
	pthread_mutex_unlock(&sr_cm_timer.mu);
	return err;
}

/* Drop c's deadline; wait out a running handler of c's unless it is ours. */
static void sr_cm_conn_disarm(struct sr_cm_conn *c)
{
	bool engine = sr_engine_in_thread();

	pthread_mutex_lock(&sr_cm_timer.mu);
	if (c->armed) {
		sr_list_del(&c->tnode);
		c->armed = false;
	}
	while (!engine && sr_cm_timer.firing == c)
		pthread_cond_wait(&sr_cm_timer.cond, &sr_cm_timer.mu);
	pthread_mutex_unlock(&sr_cm_timer.mu);
}

/* ------------------------------------------------------------ object -- */

struct sr_cm_conn *sr_cm_conn_new(int fd)
{
	struct sr_cm_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->sock.fd = fd;
	c->sock.cb = sr_cm_conn_sock_cb;
	sr_list_init(&c->node);
	sr_list_init(&c->tnode);
	return c;
}

bool sr_cm_conn_claim(struct sr_cm_conn *c)
{
	if (c->dead)
		return false;
	c->dead = true;
	if (c->id && c->id->conn == c)
		c->id->conn = NULL;
	if (c->listener) {
		sr_list_del(&c->node);
		c->listener->handshakes--;
		c->listener = NULL;
	}
	return true;
}

void sr_cm_conn_quiesce(struct sr_cm_conn *c)
{
	sr_engine_del(&c->sock);
	sr_cm_conn_disarm(c);
}

/* ------------------------------------------------------ graceful close -- */

/*
 * A connected socket the CM gives up on is closed with a FIN, never a reset (which a close
 * with unread bytes, or bytes arriving after the close, would draw): tearing down a
 * half-set-up connection to Linux siw is a path where its CM has hit a BUG() and refused
 * RDMA connections until reboot, so we keep it as gentle as TCP allows. FIN, then keep
 * reading and dropping what the peer still sends until its FIN, or
 * SR_CM_DISCONNECT_TIMEOUT_MS. The lingering socket belongs to nobody; it lives on the
 * engine until then.
 */
struct sr_cm_linger {
	struct sr_engine_handler sock;
	struct sr_engine_handler timer;
};

/* Held while a linger's handlers are being registered: its callbacks wait for that. */
static pthread_mutex_t sr_cm_linger_mu = PTHREAD_MUTEX_INITIALIZER;

/* Read and drop what is there. Returns true once the stream is over (EOF or error). */
static bool sr_cm_drain(int fd)
{
	uint8_t scratch[4096];

	for (;;) {
		ssize_t n = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);

		if (n > 0)
			continue;
		if (n < 0 && errno == EINTR)
			continue;
		return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
	}
}

/* Engine thread: the linger is over. */
static void sr_cm_linger_end(struct sr_cm_linger *l)
{
	sr_engine_del(&l->sock);
	sr_engine_del(&l->timer);
	close(l->timer.fd);
	close(l->sock.fd);
	free(l);
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

static void sr_cm_linger_timer_cb(struct sr_engine_handler *h, uint32_t events)
{
	struct sr_cm_linger *l = sr_container_of(h, struct sr_cm_linger, timer);

	(void)events;
	pthread_mutex_lock(&sr_cm_linger_mu);
	pthread_mutex_unlock(&sr_cm_linger_mu);
	sr_cm_drain(l->sock.fd); /* the peer never sent its FIN: a last look, then close */
	sr_cm_linger_end(l);
}

static void sr_cm_close_graceful(int fd)
{
	struct itimerspec its = { .it_value = {
		.tv_sec = SR_CM_DISCONNECT_TIMEOUT_MS / 1000,
		.tv_nsec = (long)(SR_CM_DISCONNECT_TIMEOUT_MS % 1000) * 1000000L } };
	struct sr_cm_linger *l;
	bool over;

	/* Unread bytes at close() make the kernel send a reset instead of our FIN. */
	over = sr_cm_drain(fd);
	shutdown(fd, SHUT_WR);
	l = over ? NULL : calloc(1, sizeof(*l));
	if (!l) {
		close(fd); /* over, or no memory to wait: drained at least */
		return;
	}
	l->sock.fd = fd;
	l->sock.cb = sr_cm_linger_sock_cb;
	l->timer.cb = sr_cm_linger_timer_cb;
	l->timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	pthread_mutex_lock(&sr_cm_linger_mu);
	if (l->timer.fd < 0 || timerfd_settime(l->timer.fd, 0, &its, NULL) < 0 ||
	    sr_engine_add(&l->timer, EPOLLIN) || sr_engine_add(&l->sock, EPOLLIN | EPOLLRDHUP)) {
		pthread_mutex_unlock(&sr_cm_linger_mu);
		sr_engine_del(&l->timer);
		if (l->timer.fd >= 0)
			close(l->timer.fd);
		close(fd);
		free(l);
		return;
	}
	pthread_mutex_unlock(&sr_cm_linger_mu);
}

void sr_cm_conn_destroy(struct sr_cm_conn *c)
{
	sr_cm_conn_quiesce(c);
	if (c->sock.fd >= 0) {
		/* a socket still connecting has nobody to say goodbye to */
		if (c->phase == SR_CONN_TCP_CONNECT)
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

int sr_cm_conn_read_frame(struct sr_cm_conn *c, bool expect_reply)
{
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
	ssize_t n = recv(c->sock.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	/* Nothing may follow a Request before the Reply, nor a Reply before our first FPDU. */
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

/* -------------------------------------------------------------- QP moves -- */

int sr_cm_qp_to_rts(struct sr_cm_id *id, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask, err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(&id->id, &attr, &mask))
		return -errno;
	err = ibv_modify_qp(qp, &attr, mask);
	if (err)
		return -err;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(&id->id, &attr, &mask))
		return -errno;
	err = ibv_modify_qp(qp, &attr, mask);
	return err ? -err : 0;
}

void sr_cm_qp_to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (qp)
		ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}
