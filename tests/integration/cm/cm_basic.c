// SPDX-License-Identifier: MIT
/*
 * rdma_cm through our librdmacm, both sides in one process, QP-less ids (the CM keeps the
 * streams itself). Usage: cm_basic <test> [address [port [device]]]; exit 0 = pass,
 * 77 = skip. serve/dial run the two halves of a connection in separate processes.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../common/tcp_wait.h"
#include "../../common/cm_test.h"

static int t_connect(void)
{
	struct rdma_event_channel *chs, *chc;
	struct rdma_conn_param ap = { .private_data = "world", .private_data_len = 6 };
	struct rdma_cm_id *l, *c, *s;
	struct rdma_cm_event *ev;

	if (ct_pair_request(&chs, &chc, &l, &c, &s))
		return 1;
	CT_CHECK(rdma_establish(c) == -1 && errno == EINVAL); /* no response yet */
	CT_CHECK(rdma_accept(s, &ap) == 0);
	CT_CHECK(rdma_accept(s, &ap) == -1 && errno == EINVAL);
	ev = ct_expect(chs, RDMA_CM_EVENT_ESTABLISHED, 3000);
	CT_CHECK(ev && ev->id == s);
	rdma_ack_cm_event(ev);
	ev = ct_expect(chc, RDMA_CM_EVENT_CONNECT_RESPONSE, 3000);
	CT_CHECK(ev && ev->id == c && ev->status == 0);
	CT_CHECK(ev->param.conn.private_data_len == 6 &&
		 memcmp(ev->param.conn.private_data, "world", 6) == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_establish(c) == 0);
	CT_CHECK(rdma_establish(c) == -1 && errno == EINVAL);
	CT_CHECK(quiet(chc, 200) == 0); /* nothing more on the active side */

	if (ct_pair_disconnect(chs, chc, c, s))
		return 1;
	/* the other side's disconnect after the fact: no second event anywhere */
	CT_CHECK(rdma_disconnect(s) == 0);
	CT_CHECK(rdma_disconnect(c) == 0);
	CT_CHECK(quiet(chs, 300) == 0 && quiet(chc, 0) == 0);

	CT_CHECK(rdma_destroy_id(s) == 0);
	CT_CHECK(rdma_destroy_id(c) == 0);
	CT_CHECK(rdma_destroy_id(l) == 0);
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
	return 0;
}

/* The passive side disconnects first; accept without a QP says so (qp_num 0). */
static int t_server_disconnect(void)
{
	struct rdma_event_channel *chs, *chc;
	struct rdma_cm_id *l, *c, *s;
	struct rdma_cm_event *ev;

	if (ct_pair_request(&chs, &chc, &l, &c, &s))
		return 1;
	CT_CHECK(rdma_accept(s, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_CONNECT_RESPONSE, 3000);
	CT_CHECK(ev && ev->param.conn.private_data_len == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_establish(c) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_ESTABLISHED, 3000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_disconnect(s) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_DISCONNECTED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_disconnect(c) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_DISCONNECTED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	CT_CHECK(quiet(chs, 200) == 0 && quiet(chc, 0) == 0);
	ct_pair_destroy(chs, chc, l, c, s);
	return 0;
}

static int t_reject(void)
{
	struct rdma_event_channel *chs, *chc;
	struct rdma_cm_id *l, *c, *s;
	struct rdma_cm_event *ev;

	if (ct_pair_request(&chs, &chc, &l, &c, &s))
		return 1;
	CT_CHECK(rdma_reject(s, "nope", 5) == 0);
	CT_CHECK(rdma_reject(s, "nope", 5) == -1 && errno == EINVAL);
	ev = ct_expect(chc, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->id == c);
	CT_CHECK(ev->status == -ECONNREFUSED);
	CT_CHECK(ev->param.conn.private_data_len == 5 &&
		 memcmp(ev->param.conn.private_data, "nope", 5) == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(quiet(chs, 200) == 0); /* no event on the rejecting side */
	/* a failed id is not reusable */
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == -1 && errno == EINVAL);
	ct_pair_destroy(chs, chc, l, c, s);
	return 0;
}

static int t_nolistener(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c;
	struct rdma_cm_event *ev;
	int port;

	/* a port that surely has no listener: ours, just released */
	if (listener(ch, &l, &port))
		return 1;
	rdma_destroy_id(l);
	if (resolve(ch, port, &c))
		return 1;
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->status == -ECONNREFUSED);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
	return 0;
}

/*
 * Requests beyond the backlog (queued, not yet fetched) are refused as the kernel's iWARP
 * CM refuses them: an MPA reject (the peer's TCP is up already), REJECTED -ECONNREFUSED
 * without private data, and the listener never hears of them.
 */
static int t_backlog(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *c1, *c2, *s;
	struct pollfd pfd = { .fd = chs->fd, .events = POLLIN };
	int port;

	CT_CHECK(rdma_create_id(chs, &l, NULL, RDMA_PS_TCP) == 0);
	ct_addr(ip, 0, &ss);
	CT_CHECK(rdma_bind_addr(l, (struct sockaddr *)&ss) == 0);
	CT_CHECK(rdma_listen(l, 1) == 0);
	port = ntohs(rdma_get_src_port(l));
	if (resolve(chc, port, &c1) || resolve(chc, port, &c2))
		return 1;
	CT_CHECK(rdma_connect(c1, &(struct rdma_conn_param){ 0 }) == 0);
	CT_CHECK(poll(&pfd, 1, 3000) == 1); /* c1's request is queued: the backlog is full */
	CT_CHECK(rdma_connect(c2, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->id == c2 && ev->status == -ECONNREFUSED);
	CT_CHECK(ev->param.conn.private_data_len == 0);
	rdma_ack_cm_event(ev);
	ev = ct_expect(chs, RDMA_CM_EVENT_CONNECT_REQUEST, 1000);
	CT_CHECK(ev);
	s = ev->id;
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_accept(s, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_CONNECT_RESPONSE, 3000);
	CT_CHECK(ev && ev->id == c1);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_establish(c1) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_ESTABLISHED, 3000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	/* destroying a connected id ends the connection: the peer sees DISCONNECTED */
	CT_CHECK(rdma_destroy_id(s) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_DISCONNECTED, 3000);
	CT_CHECK(ev && ev->id == c1);
	rdma_ack_cm_event(ev);
	CT_CHECK(quiet(chs, 100) == 0);
	rdma_destroy_id(c1);
	rdma_destroy_id(c2);
	ct_pair_destroy(chs, chc, l, NULL, NULL);
	return 0;
}

static bool destroyed;

static void *destroy_thread(void *arg)
{
	rdma_destroy_id(arg);
	__atomic_store_n(&destroyed, true, __ATOMIC_SEQ_CST);
	return NULL;
}

static int t_destroy_waits(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	pthread_t t;

	CT_CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	ct_addr(ip, 9, &ss);
	CT_CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 2000);
	CT_CHECK(ev);
	/* a queued, never fetched event does not hold destroy back: this one is fetched */
	CT_CHECK(rdma_resolve_route(id, 2000) == 0);
	pthread_create(&t, NULL, destroy_thread, id);
	usleep(300000);
	CT_CHECK(!__atomic_load_n(&destroyed, __ATOMIC_SEQ_CST));
	rdma_ack_cm_event(ev);
	pthread_join(t, NULL);
	CT_CHECK(__atomic_load_n(&destroyed, __ATOMIC_SEQ_CST));
	CT_CHECK(quiet(ch, 100) == 0); /* the ROUTE_RESOLVED went with the id */
	rdma_destroy_event_channel(ch);
	return 0;
}

/* Requests a listener never handed out are rejected when it goes away. */
static int t_listener_destroy(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct pollfd pfd = { .fd = chs->fd, .events = POLLIN };
	struct rdma_cm_id *l, *c;
	struct rdma_cm_event *ev;
	int port;

	if (listener(chs, &l, &port) || resolve(chc, port, &c))
		return 1;
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == 0);
	CT_CHECK(poll(&pfd, 1, 3000) == 1); /* the request is queued */
	CT_CHECK(rdma_destroy_id(l) == 0);
	CT_CHECK(poll(&pfd, 1, 0) == 0);    /* and gone with the listener */
	ev = ct_expect(chc, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->status == -ECONNREFUSED);
	rdma_ack_cm_event(ev);
	ct_pair_destroy(chs, chc, NULL, c, NULL);
	return 0;
}

static int t_nonblock(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct pollfd pfd;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct sockaddr_storage ss;

	CT_CHECK(ch);
	CT_CHECK(rdma_get_cm_event(ch, NULL) == -1 && errno == EINVAL);
	CT_CHECK(rdma_ack_cm_event(NULL) == -1 && errno == EINVAL);
	CT_CHECK(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
	CT_CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN);
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	CT_CHECK(poll(&pfd, 1, 0) == 0);
	CT_CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	ct_addr(ip, 9, &ss);
	CT_CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000) == 0);
	CT_CHECK(poll(&pfd, 1, 1000) == 1 && (pfd.revents & POLLIN));
	CT_CHECK(rdma_get_cm_event(ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED);
	CT_CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN);
	rdma_ack_cm_event(ev);
	CT_CHECK(poll(&pfd, 1, 0) == 0);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- synchronous ids: rdma_getaddrinfo + rdma_create_ep + rdma_get_request ---- */

static int sync_port;
static int sync_result = -1;
static pthread_mutex_t sync_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cv = PTHREAD_COND_INITIALIZER;

static int sync_server_body(void)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	struct rdma_conn_param ap = { .private_data = "srv", .private_data_len = 4 };
	struct rdma_addrinfo *res;
	struct rdma_cm_id *l, *s;

	CT_CHECK(rdma_getaddrinfo(ip, "0", &hints, &res) == 0);
	CT_CHECK(res->ai_src_addr && (res->ai_flags & RAI_PASSIVE));
	CT_CHECK(res->ai_port_space == RDMA_PS_TCP && res->ai_qp_type == IBV_QPT_RC);
	CT_CHECK(rdma_create_ep(&l, res, NULL, NULL) == 0);
	rdma_freeaddrinfo(res);
	CT_CHECK(rdma_listen(l, 0) == 0);
	pthread_mutex_lock(&sync_mu);
	sync_port = ntohs(rdma_get_src_port(l));
	pthread_cond_broadcast(&sync_cv);
	pthread_mutex_unlock(&sync_mu);

	CT_CHECK(rdma_get_request(l, &s) == 0);
	CT_CHECK(s->event && s->event->event == RDMA_CM_EVENT_CONNECT_REQUEST);
	CT_CHECK(s->event->param.conn.private_data_len == 4 &&
		 memcmp(s->event->param.conn.private_data, "cli", 4) == 0);
	CT_CHECK(s->channel != l->channel);
	CT_CHECK(rdma_accept(s, &ap) == 0); /* returns once ESTABLISHED */
	CT_CHECK(s->event && s->event->event == RDMA_CM_EVENT_ESTABLISHED);
	CT_CHECK(rdma_disconnect(s) == 0); /* waits for DISCONNECTED */
	CT_CHECK(s->event && s->event->event == RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_ep(s);
	rdma_destroy_ep(l);
	return 0;
}

static void *sync_server(void *arg)
{
	int r = sync_server_body();

	pthread_mutex_lock(&sync_mu);
	sync_result = r;
	sync_port = sync_port ? sync_port : -1;
	pthread_cond_broadcast(&sync_cv);
	pthread_mutex_unlock(&sync_mu);
	return NULL;
}

static int t_sync(void)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_conn_param p = { .private_data = "cli", .private_data_len = 4 };
	struct rdma_addrinfo *res;
	struct rdma_cm_id *c;
	char svc[16];
	pthread_t t;

	pthread_create(&t, NULL, sync_server, NULL);
	pthread_mutex_lock(&sync_mu);
	while (!sync_port)
		pthread_cond_wait(&sync_cv, &sync_mu);
	pthread_mutex_unlock(&sync_mu);
	CT_CHECK(sync_port > 0);
	snprintf(svc, sizeof(svc), "%d", sync_port);
	CT_CHECK(rdma_getaddrinfo(ip, svc, &hints, &res) == 0);
	CT_CHECK(res->ai_dst_addr && !(res->ai_flags & RAI_PASSIVE));
	CT_CHECK(rdma_create_ep(&c, res, NULL, NULL) == 0);
	rdma_freeaddrinfo(res);
	CT_CHECK(c->verbs != NULL && c->event && c->event->event == RDMA_CM_EVENT_ROUTE_RESOLVED);
	CT_CHECK(rdma_connect(c, &p) == 0); /* returns at CONNECT_RESPONSE (no QP) */
	CT_CHECK(c->event && c->event->event == RDMA_CM_EVENT_CONNECT_RESPONSE);
	CT_CHECK(c->event->param.conn.private_data_len == 4 &&
		 memcmp(c->event->param.conn.private_data, "srv", 4) == 0);
	CT_CHECK(rdma_establish(c) == 0);
	CT_CHECK(rdma_disconnect(c) == 0);
	CT_CHECK(c->event && c->event->event == RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_ep(c);
	pthread_join(t, NULL);
	CT_CHECK(sync_result == 0);
	return 0;
}

/* ---- misbehaving peers (raw TCP) ---- */

/* An id connecting (no private data) to the raw listener lfd; *fd: the accepted end. */
static int raw_dial(struct rdma_event_channel *ch, int lfd, int port, struct rdma_cm_id **c,
		    int *fd)
{
	if (resolve(ch, port, c))
		return 1;
	CT_CHECK(rdma_connect(*c, &(struct rdma_conn_param){ 0 }) == 0);
	*fd = accept(lfd, NULL, NULL);
	CT_CHECK(*fd >= 0);
	return 0;
}

/* mode 0: never answer; 1: answer garbage; 2: close; 3: valid Reply + trailing byte */
static int raw_server_case(int mode, enum rdma_cm_event_type want, int status, int ms)
{
	static const uint8_t rep_v1[] = "MPA ID Rep Frame\x40\x01\x00\x00Z";
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;
	uint8_t buf[64];
	int lfd, fd, port;
	time_t t0;

	lfd = raw_listener(&port);
	CT_CHECK(lfd >= 0);
	if (raw_dial(ch, lfd, port, &c, &fd))
		return 1;
	CT_CHECK(recv(fd, buf, 20, MSG_WAITALL) == 20 && memcmp(buf, "MPA ID Req Frame", 16) == 0);
	if (mode == 1)
		CT_CHECK(send(fd, "MPA ID Rex Frame\x40\x01\x00\x00", 20, 0) == 20);
	else if (mode == 2)
		close(fd);
	else if (mode == 3)
		CT_CHECK(send(fd, rep_v1, 21, 0) == 21);
	t0 = time(NULL);
	ev = ct_expect(ch, want, ms);
	CT_CHECK(ev);
	/* a silent responder is given the whole Reply wait (SOFTRDMA_ACCEPT_TIMEOUT_MS) */
	if (mode == 0)
		CT_CHECK(time(NULL) - t0 >= ct_accept_bound_ms() / 1000 - 1);
	if (status)
		CT_CHECK(ev->status == status);
	else
		CT_CHECK(ev->status != 0);
	rdma_ack_cm_event(ev);
	if (mode != 2)
		close(fd);
	close(lfd);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int t_bad_reply(void)
{
	return raw_server_case(1, RDMA_CM_EVENT_CONNECT_ERROR, 0, 3000) ||
	       raw_server_case(2, RDMA_CM_EVENT_REJECTED, -ECONNRESET, 3000) ||
	       raw_server_case(3, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO, 3000);
}

static int t_timeout(void)
{
	return raw_server_case(0, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT,
			       (int)ct_accept_bound_ms() + 5000);
}

/*
 * After our FIN the peer still talks, then closes: once its socket is closed, did it get a
 * reset? Waits for the state, not for a time.
 */
static bool reset_after_fin(int fd)
{
	socklen_t len = sizeof(int);
	bool closed;
	int err = 0;

	if (send(fd, "late bytes after the FIN", 24, MSG_NOSIGNAL) != 24)
		return true;
	shutdown(fd, SHUT_WR);
	closed = tcp_reaches(fd, TCP_CLOSE, 10000);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	return !closed || err != 0;
}

/*
 * An initiator that gives up after its P2P Request ends the connection with a FIN and
 * nothing before it (no Terminate), never a reset, even with the peer's bytes unread or
 * still arriving: Linux siw's CM cannot recover from a reset there. Cases: a Reply with a
 * stray byte behind it (refused: CONNECT_ERROR), half a Reply and the id destroyed.
 */
static int t_no_reset(void)
{
	static const uint8_t rep[] = "MPA ID Rep Frame\x50\x02\x00\x04\x80\x01\x40\x01Z";
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;
	uint8_t buf[64];
	int lfd, fd, port;

	lfd = raw_listener(&port);
	CT_CHECK(lfd >= 0);
	for (int mode = 0; mode < 2; mode++) {
		if (raw_dial(ch, lfd, port, &c, &fd))
			return 1;
		CT_CHECK(recv(fd, buf, 24, MSG_WAITALL) == 24 &&
			 memcmp(buf, "MPA ID Req Frame", 16) == 0);
		CT_CHECK(buf[20] & 0x80); /* a P2P Request */
		if (mode == 0) {
			CT_CHECK(send(fd, rep, 25, 0) == 25);
			ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_ERROR, 3000);
			CT_CHECK(ev && ev->status == -EPROTO);
			rdma_ack_cm_event(ev);
		} else {
			CT_CHECK(send(fd, rep, 10, 0) == 10);
			CT_CHECK(quiet(ch, 100) == 0);
		}
		if (mode == 1)
			rdma_destroy_id(c);
		/* our FIN, with nothing before it */
		CT_CHECK(recv(fd, buf, 1, 0) == 0);
		CT_CHECK(!reset_after_fin(fd));
		close(fd);
		if (mode == 0)
			rdma_destroy_id(c);
	}
	close(lfd);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* The CM closed fd: EOF, or a reset when it left our bytes unread. */
static bool dropped(int fd)
{
	uint8_t b;
	ssize_t n = recv(fd, &b, 1, 0);

	return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* Garbage, over-long and early-data Requests never reach the application. */
static int t_bad_request(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	static const uint8_t req_extra[] = "MPA ID Req Frame\x40\x01\x00\x00!";
	static const uint8_t req_long[] = "MPA ID Req Frame\x40\x01\x02\x01";
	struct rdma_cm_id *l;
	int port, fd;

	if (listener(ch, &l, &port))
		return 1;
	fd = raw_connect(port);
	CT_CHECK(fd >= 0);
	CT_CHECK(send(fd, "GET / HTTP/1.0\r\n\r\nxxxxx", 23, 0) == 23);
	CT_CHECK(dropped(fd));
	close(fd);

	fd = raw_connect(port);
	CT_CHECK(send(fd, req_long, 20, 0) == 20); /* PD_Length 513 */
	CT_CHECK(dropped(fd));
	close(fd);

	fd = raw_connect(port);
	CT_CHECK(send(fd, req_extra, 21, 0) == 21); /* a byte after the frame */
	CT_CHECK(dropped(fd));
	close(fd);

	fd = raw_connect(port); /* peer gone mid-frame */
	CT_CHECK(send(fd, req_extra, 10, 0) == 10);
	close(fd);

	CT_CHECK(quiet(ch, 300) == 0);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* A silent peer is dropped after the Request timeout. */
static int t_request_timeout(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct pollfd pfd;
	struct rdma_cm_id *l;
	int port, fd;

	if (listener(ch, &l, &port))
		return 1;
	fd = raw_connect(port);
	CT_CHECK(fd >= 0);
	CT_CHECK(send(fd, "MPA ID", 6, 0) == 6);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	CT_CHECK(poll(&pfd, 1, 8000) == 1 && dropped(fd));
	close(fd);
	CT_CHECK(quiet(ch, 0) == 0);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* An MPA rev 1 initiator written by hand: what goes on the wire is RFC 5044's. */
static int t_wire_v1(void)
{
	static const uint8_t req[] = "MPA ID Req Frame\x40\x01\x00\x05hello";
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param ap = { .private_data = "abc", .private_data_len = 3 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *s;
	uint8_t rep[32], b;
	int port, fd;

	if (listener(ch, &l, &port))
		return 1;
	fd = raw_connect(port);
	CT_CHECK(fd >= 0 && send(fd, req, 25, 0) == 25);
	ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CT_CHECK(ev && ev->param.conn.private_data_len == 5);
	s = ev->id;
	rdma_ack_cm_event(ev);
	/* rev 1: 255 bytes fit a u8 length; the limit is the v1 one, not 252 */
	CT_CHECK(rdma_accept(s, &ap) == 0);
	CT_CHECK(recv(fd, rep, 23, MSG_WAITALL) == 23);
	CT_CHECK(memcmp(rep, "MPA ID Rep Frame", 16) == 0);
	CT_CHECK((rep[16] & 0xe0) == 0x40); /* C set (we asked for CRC too), M and R clear */
	CT_CHECK(rep[17] == 1 && rep[18] == 0 && rep[19] == 3 && memcmp(rep + 20, "abc", 3) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 3000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	close(fd); /* the peer goes: one DISCONNECTED */
	ev = ct_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 3000);
	CT_CHECK(ev && ev->id == s);
	rdma_ack_cm_event(ev);
	(void)b;
	rdma_destroy_id(s);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

/*
 * The RTR bits a Request carries for SOFTRDMA_MPA_RTR: the IRD word's high byte (P2P, Send)
 * and the ORD word's (Write, Read). Unset or not a list of forms: the Read alone.
 */
static void rtr_offer_bits(uint8_t *ird_hi, uint8_t *ord_hi)
{
	const char *v = getenv("SOFTRDMA_MPA_RTR");
	bool all = v && strcmp(v, "all") == 0;
	bool rd = all || (v && strstr(v, "read")), wr = all || (v && strstr(v, "write"));
	bool sd = all || (v && strstr(v, "send"));

	if (!rd && !wr && !sd)
		rd = true;
	*ird_hi = (uint8_t)(0x80 | (sd ? 0x40 : 0));
	*ord_hi = (uint8_t)((wr ? 0x80 : 0) | (rd ? 0x40 : 0));
}

/*
 * What our initiator puts on the wire, checked byte by byte (docs/WIRE.md §1.1, §1.3), and how a
 * hand-written rev 2 Reply's IRD/ORD come back in CONNECT_RESPONSE. Follows
 * SOFTRDMA_MPA_REV / SOFTRDMA_MPA_CRC / SOFTRDMA_MPA_RTR from the environment; the Reply
 * picks Read, else Write, else Send among the forms offered.
 */
static int t_wire_request(void)
{
	uint8_t rep_v2[] = "MPA ID Rep Frame\x50\x02\x00\x04\x80\x02\x40\x01";
	static const uint8_t rep_v1[] = "MPA ID Rep Frame\x40\x01\x00\x00";
	const char *rev_env = getenv("SOFTRDMA_MPA_REV"), *crc_env = getenv("SOFTRDMA_MPA_CRC");
	bool v1 = rev_env && atoi(rev_env) == 1, crc = !crc_env || atoi(crc_env) != 0;
	uint8_t ird_hi, ord_hi;
	struct rdma_conn_param p = { .private_data = "abc", .private_data_len = 4,
				     .responder_resources = 3, .initiator_depth = 5 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;
	uint8_t req[64], b;
	int lfd, fd, port;

	lfd = raw_listener(&port);
	CT_CHECK(lfd >= 0);
	if (resolve(ch, port, &c))
		return 1;
	CT_CHECK(rdma_connect(c, &p) == 0);
	fd = accept(lfd, NULL, NULL);
	CT_CHECK(fd >= 0);
	CT_CHECK(recv(fd, req, 20, MSG_WAITALL) == 20);
	CT_CHECK(memcmp(req, "MPA ID Req Frame", 16) == 0);
	if (v1) {
		CT_CHECK(req[16] == (crc ? 0x40 : 0x00) && req[17] == 1);
		CT_CHECK(req[18] == 0 && req[19] == 4);
		CT_CHECK(recv(fd, req + 20, 4, MSG_WAITALL) == 4 && memcmp(req + 20, "abc", 4) == 0);
	} else {
		/* C as configured, enhanced; IRD 3 with P2P, ORD 5, the RTR forms configured */
		rtr_offer_bits(&ird_hi, &ord_hi);
		CT_CHECK(req[16] == (crc ? 0x50 : 0x10) && req[17] == 2);
		CT_CHECK(req[18] == 0 && req[19] == 8);
		CT_CHECK(recv(fd, req + 20, 8, MSG_WAITALL) == 8);
		CT_CHECK(req[20] == ird_hi && req[21] == 3 && req[22] == ord_hi && req[23] == 5);
		CT_CHECK(memcmp(req + 24, "abc", 4) == 0);
		if (!(ord_hi & 0x40)) { /* no Read offered: answer with Write, else Send */
			rep_v2[22] = ord_hi & 0x80 ? 0x80 : 0x00;
			rep_v2[20] = ord_hi & 0x80 ? 0x80 : 0xc0;
		}
	}
	/* the initiator sends nothing more before the Reply */
	CT_CHECK(recv(fd, &b, 1, MSG_DONTWAIT) == -1 && errno == EAGAIN);
	CT_CHECK(send(fd, v1 ? rep_v1 : rep_v2, v1 ? 20 : 24, 0) == (v1 ? 20 : 24));
	ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, 3000);
	CT_CHECK(ev && ev->param.conn.private_data_len == 0);
	if (!v1) /* the peer's IRD 2 and ORD 1 */
		CT_CHECK(ev->param.conn.initiator_depth == 2 &&
			 ev->param.conn.responder_resources == 1);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_establish(c) == 0);
	close(fd); /* the peer ends it: DISCONNECTED */
	ev = ct_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 3000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	close(lfd);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- argument and state checks ---- */

static int t_errors(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	char big[253] = { 0 };
	struct rdma_conn_param p = { .private_data = big, .private_data_len = 253 };
	struct sockaddr_storage ss, ss2;
	struct rdma_cm_id *a, *b, *l;
	struct rdma_cm_event *ev;
	int one = 1, port, tfd;
	uint8_t tos = 0x10;

	CT_CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_UDP) == -1 && errno == EOPNOTSUPP);
	CT_CHECK(rdma_create_id(ch, &a, NULL, (enum rdma_port_space)0x4242) == -1 &&
		 errno == EINVAL);
	CT_CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(rdma_disconnect(a) == -1 && errno == EINVAL);
	CT_CHECK(rdma_establish(a) == -1 && errno == EINVAL);
	CT_CHECK(rdma_accept(a, NULL) == -1 && errno == EINVAL);
	CT_CHECK(rdma_reject(a, NULL, 0) == -1 && errno == EINVAL);
	CT_CHECK(rdma_resolve_route(a, 100) == -1 && errno == EINVAL);
	CT_CHECK(rdma_connect(a, &(struct rdma_conn_param){ 0 }) == -1 && errno == EINVAL);
	CT_CHECK(rdma_join_multicast(a, (struct sockaddr *)&ss, NULL) == -1 && errno == ENOSYS);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, 42, &one, sizeof(one)) == -1 &&
		 errno == ENOSYS);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1) == 0);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &one, 4) == -1 &&
		 errno == EINVAL);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
				 sizeof(one)) == 0);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one,
				 sizeof(one)) == 0);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &tos, 1) == 0);
	CT_CHECK(rdma_init_qp_attr(a, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT },
				   &one) == -1 && errno == EINVAL); /* no device yet */

	/* an address of no interface here */
	ct_addr(strchr(ip, ':') ? "2001:db8::1" : "192.0.2.1", 0, &ss);
	CT_CHECK(rdma_bind_addr(a, (struct sockaddr *)&ss) == -1 && errno == EADDRNOTAVAIL);
	/* the port space is the host's TCP port space */
	ct_addr(ip, 0, &ss);
	tfd = socket(ss.ss_family, SOCK_STREAM, 0);
	CT_CHECK(tfd >= 0 && bind(tfd, (struct sockaddr *)&ss, ss.ss_family == AF_INET ?
				  sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) == 0);
	CT_CHECK(listen(tfd, 1) == 0);
	{
		socklen_t len = sizeof(ss2);

		getsockname(tfd, (struct sockaddr *)&ss2, &len);
	}
	CT_CHECK(rdma_bind_addr(a, (struct sockaddr *)&ss2) == -1 && errno == EADDRINUSE);
	close(tfd);
	/* two ids of ours on one explicit address:port; the kernel CM counts a loopback
	 * address as a wildcard here, so the answer is EADDRNOTAVAIL, not EADDRINUSE */
	CT_CHECK(listener(ch, &l, &port) == 0);
	CT_CHECK(rdma_create_id(ch, &b, NULL, RDMA_PS_TCP) == 0);
	ct_addr(ip, port, &ss);
	CT_CHECK(rdma_bind_addr(b, (struct sockaddr *)&ss) == -1 && errno == EADDRNOTAVAIL);
	CT_CHECK(rdma_bind_addr(a, (struct sockaddr *)&ss) == -1 && errno == EADDRNOTAVAIL);
	ct_addr(ip, 0, &ss);
	CT_CHECK(rdma_bind_addr(b, (struct sockaddr *)&ss) == 0);
	CT_CHECK(rdma_bind_addr(b, (struct sockaddr *)&ss) == -1 && errno == EINVAL);
	CT_CHECK(b->verbs == NULL || strchr(ip, ':') == NULL || 1);
	rdma_destroy_id(b);

	/* over-long private data */
	CT_CHECK(rdma_destroy_id(a) == 0);
	if (resolve(ch, port, &a))
		return 1;
	CT_CHECK(rdma_connect(a, &p) == -1 && errno == EINVAL);
	CT_CHECK(rdma_connect(a, NULL) == -1 && errno == EINVAL); /* no QP: param needed */
	p.private_data_len = 252;
	CT_CHECK(rdma_connect(a, &p) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CT_CHECK(ev && ev->param.conn.private_data_len == 252);
	CT_CHECK(rdma_reject(ev->id, big, 253) == -1 && errno == EINVAL);
	b = ev->id;
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_init_qp_attr(b, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR },
				   &one) == 0);
	rdma_destroy_id(b); /* an un-accepted request: the peer is refused */
	ev = ct_expect(ch, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->id == a);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(a);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int t_migrate(void)
{
	struct rdma_event_channel *ch1 = rdma_create_event_channel();
	struct rdma_event_channel *ch2 = rdma_create_event_channel();
	struct pollfd pfd = { .fd = ch1->fd, .events = POLLIN };
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	CT_CHECK(rdma_create_id(ch1, &id, NULL, RDMA_PS_TCP) == 0);
	ct_addr(ip, 9, &ss);
	CT_CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, 2000) == 0);
	CT_CHECK(poll(&pfd, 1, 1000) == 1);
	CT_CHECK(rdma_migrate_id(id, ch2) == 0);
	CT_CHECK(id->channel == ch2);
	CT_CHECK(poll(&pfd, 1, 0) == 0);
	ev = ct_expect(ch2, RDMA_CM_EVENT_ADDR_RESOLVED, 1000);
	CT_CHECK(ev && ev->id == id);
	rdma_ack_cm_event(ev);
	/* to a private channel and back is not allowed from sync */
	CT_CHECK(rdma_migrate_id(id, NULL) == 0);
	CT_CHECK(rdma_migrate_id(id, NULL) == -1 && errno == EINVAL);
	CT_CHECK(rdma_resolve_route(id, 2000) == 0); /* sync now: returns with the event */
	CT_CHECK(id->event && id->event->event == RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch1);
	rdma_destroy_event_channel(ch2);
	return 0;
}

static int t_devices(void)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct ibv_context **list;
	struct rdma_addrinfo *res;
	bool lo = false;
	int n = 0;

	list = rdma_get_devices(&n);
	CT_CHECK(list && n >= 1);
	for (int i = 0; i < n; i++) {
		CT_CHECK(list[i] != NULL);
		lo |= strcmp(ibv_get_device_name(list[i]->device), "sriw_lo") == 0;
	}
	CT_CHECK(list[n] == NULL && lo);
	rdma_free_devices(list);

	CT_CHECK(rdma_getaddrinfo(NULL, NULL, NULL, &res) == -1 && errno == EINVAL);
	CT_CHECK(rdma_getaddrinfo(ip, "7471", &hints, &res) == 0);
	CT_CHECK(res->ai_next == NULL && res->ai_dst_addr && !res->ai_src_addr);
	CT_CHECK(res->ai_qp_type == IBV_QPT_RC && res->ai_port_space == RDMA_PS_TCP);
	CT_CHECK(ntohs(((struct sockaddr_in *)res->ai_dst_addr)->sin_port) == 7471);
	rdma_freeaddrinfo(res);
	hints.ai_flags = RAI_PASSIVE;
	CT_CHECK(rdma_getaddrinfo(NULL, "7471", &hints, &res) == 0);
	CT_CHECK(res->ai_src_addr && res->ai_src_addr->sa_family == AF_INET);
	rdma_freeaddrinfo(res);
	return 0;
}

/* ---- two processes (network namespaces): serve / dial / noroute ---- */

static const char *want_dev;

static int check_dev(struct rdma_cm_id *id)
{
	const char *name = id->verbs ? ibv_get_device_name(id->verbs->device) : "(none)";

	if (want_dev && strcmp(name, want_dev) != 0)
		CT_FAIL("device %s, expected %s", name, want_dev);
	return 0;
}

static int t_serve(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param ap = { .private_data = "pong", .private_data_len = 5 };
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *s;

	CT_CHECK(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(ct_addr(ip, ct_port, &ss) == 0);
	CT_CHECK(rdma_bind_addr(l, (struct sockaddr *)&ss) == 0);
	if (check_dev(l)) /* a specific address binds its device at once */
		return 1;
	CT_CHECK(rdma_listen(l, 1) == 0);
	printf("LISTENING\n");
	fflush(stdout);
	ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 20000);
	CT_CHECK(ev && ev->param.conn.private_data_len == 5 &&
		 memcmp(ev->param.conn.private_data, "ping", 5) == 0);
	s = ev->id;
	rdma_ack_cm_event(ev);
	if (check_dev(s))
		return 1;
	CT_CHECK(rdma_accept(s, &ap) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	ev = ct_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 10000);
	CT_CHECK(ev && ev->id == s);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_disconnect(s) == 0);
	CT_CHECK(quiet(ch, 200) == 0);
	rdma_destroy_id(s);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int t_dial(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param p = { .private_data = "ping", .private_data_len = 5 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;

	if (resolve(ch, ct_port, &c) || check_dev(c))
		return 1;
	CT_CHECK(rdma_connect(c, &p) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, 5000);
	CT_CHECK(ev && ev->param.conn.private_data_len == 5 &&
		 memcmp(ev->param.conn.private_data, "pong", 5) == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_establish(c) == 0);
	CT_CHECK(rdma_disconnect(c) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 10000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* No route: rdma_resolve_addr fails at once, no event (kernel: ENETUNREACH). */
static int t_noroute(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage ss;
	struct rdma_cm_id *c;

	CT_CHECK(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP) == 0);
	ct_addr(ip, 7, &ss);
	CT_CHECK(rdma_resolve_addr(c, NULL, (struct sockaddr *)&ss, 2000) == -1);
	CT_CHECK(errno == ENETUNREACH || errno == EHOSTUNREACH);
	CT_CHECK(quiet(ch, 100) == 0);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
	return 0;
}

static const struct ct_test tests[] = {
	{ "serve", t_serve },
	{ "dial", t_dial },
	{ "noroute", t_noroute },
	{ "connect", t_connect },
	{ "server_disconnect", t_server_disconnect },
	{ "reject", t_reject },
	{ "nolistener", t_nolistener },
	{ "backlog", t_backlog },
	{ "destroy_waits", t_destroy_waits },
	{ "listener_destroy", t_listener_destroy },
	{ "nonblock", t_nonblock },
	{ "sync", t_sync },
	{ "bad_reply", t_bad_reply },
	{ "timeout", t_timeout },
	{ "bad_request", t_bad_request },
	{ "request_timeout", t_request_timeout },
	{ "wire_v1", t_wire_v1 },
	{ "wire_request", t_wire_request },
	{ "no_reset", t_no_reset },
	{ "errors", t_errors },
	{ "migrate", t_migrate },
	{ "devices", t_devices },
};

int main(int argc, char **argv)
{
	if (argc > 4 && argv[4][0])
		want_dev = argv[4];
	return ct_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
