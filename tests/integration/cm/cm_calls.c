// SPDX-License-Identifier: MIT
/*
 * Each rdma_cm call's documented outcomes that cm_basic does not cover: options on the
 * connection's socket, rdma_notify, rdma_resolve_addr's source rules, several threads and
 * channels fetching events, rdma_migrate_id's waits and listeners, destroying ids at every
 * stage, rdma_accept without a QP, a failed id's second connect, ECE, RDMA_OPTION_IB_PATH
 * and AF_IB. QP-less ids, both sides in one process. Usage: cm_calls <test> [address [port [n]]]; exit 0 = pass, 77 = skip.
 * serve_any and unreachable are halves of cases cm_netns_paths.sh runs across namespaces.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/ib.h>
#include <infiniband/sa.h>

#include "../../common/cm_test.h"

static int arg_n;

static bool v6(void)
{
	return strchr(ip, ':') != NULL;
}

/* TOS (IPv4) or traffic class (IPv6) of the id's connection socket; -1 if not found. */
static int conn_tos(struct rdma_cm_id *id)
{
	int fd = ct_conn_fd(id), v = -1;
	socklen_t len = sizeof(v);

	if (fd < 0)
		return -1;
	if (v6())
		getsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &v, &len);
	else
		getsockopt(fd, IPPROTO_IP, IP_TOS, &v, &len);
	return v;
}

static int conn_user_timeout(struct rdma_cm_id *id)
{
	int fd = ct_conn_fd(id), v = -1;
	socklen_t len = sizeof(v);

	if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &v, &len))
		return -1;
	return v;
}

static int set_u8(struct rdma_cm_id *id, int opt, uint8_t v)
{
	return rdma_set_option(id, RDMA_OPTION_ID, opt, &v, sizeof(v));
}

/* ---- rdma_set_option ---- */

static int t_option_errors(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a, *l;
	int one = 1, zero = 0, port;
	uint8_t v = 1;

	CT_CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0);
	/* unknown level or option: ENOSYS */
	CT_CHECK(rdma_set_option(a, 7, 0, &one, sizeof(one)) == -1 && errno == ENOSYS);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, 99, &one, sizeof(one)) == -1 &&
		 errno == ENOSYS);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_IB, 99, &one, sizeof(one)) == -1 &&
		 errno == ENOSYS);
	/* bad length: EINVAL */
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &one, sizeof(one)) ==
			 -1 && errno == EINVAL);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &one,
				 sizeof(one)) == -1 && errno == EINVAL);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v, 1) == -1 &&
		 errno == EINVAL);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v, 1) == -1 &&
		 errno == EINVAL);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, NULL, 1) == -1 &&
		 errno == EINVAL);
	CT_CHECK(rdma_set_option(NULL, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &v, 1) == -1 &&
		 errno == EINVAL);
	rdma_destroy_id(a);

	/* bad state: EINVAL */
	CT_CHECK(listener(ch, &l, &port) == 0);
	CT_CHECK(rdma_set_option(l, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
				 sizeof(one)) == -1 && errno == EINVAL);
	CT_CHECK(rdma_set_option(l, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one,
				 sizeof(one)) == -1 && errno == EINVAL);
	CT_CHECK(resolve(ch, port, &a) == 0);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one,
				 sizeof(one)) == -1 && errno == EINVAL);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &zero,
				 sizeof(zero)) == -1 && errno == EINVAL);
	CT_CHECK(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
				 sizeof(one)) == 0);
	/* TOS and ACK timeout in any state */
	CT_CHECK(set_u8(l, RDMA_OPTION_ID_TOS, 8) == 0);
	CT_CHECK(set_u8(a, RDMA_OPTION_ID_ACK_TIMEOUT, 14) == 0);
	rdma_destroy_id(a);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

/*
 * TOS and ACK timeout reach the sockets of the connection: set before bind (listener),
 * on a resolved id, inherited by requests, and on a request id before its accept.
 * ACK timeout v is 4.096 us * 2^v in whole ms, rounded up: 14 -> 68, 18 -> 1074.
 */
static int t_option_socket(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct rdma_conn_param p = { 0 };
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *c, *s;
	int port;

	CT_CHECK(rdma_create_id(chs, &l, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(set_u8(l, RDMA_OPTION_ID_TOS, 0x20) == 0);
	CT_CHECK(set_u8(l, RDMA_OPTION_ID_ACK_TIMEOUT, 14) == 0);
	ct_addr(ip, 0, &ss);
	CT_CHECK(rdma_bind_addr(l, (struct sockaddr *)&ss) == 0);
	CT_CHECK(rdma_listen(l, 4) == 0);
	port = ntohs(rdma_get_src_port(l));

	CT_CHECK(resolve(chc, port, &c) == 0);
	CT_CHECK(set_u8(c, RDMA_OPTION_ID_TOS, 0x48) == 0);
	CT_CHECK(set_u8(c, RDMA_OPTION_ID_ACK_TIMEOUT, 18) == 0);
	CT_CHECK(rdma_connect(c, &p) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CT_CHECK(ev);
	s = ev->id;
	rdma_ack_cm_event(ev);
	/* the request inherits the listener's */
	CT_CHECK(conn_tos(s) == 0x20);
	CT_CHECK(conn_user_timeout(s) == 68);
	CT_CHECK(set_u8(s, RDMA_OPTION_ID_TOS, 0x10) == 0);
	CT_CHECK(set_u8(s, RDMA_OPTION_ID_ACK_TIMEOUT, 0) == 0);
	CT_CHECK(conn_user_timeout(s) == 0); /* 0: TCP's own limit */
	CT_CHECK(set_u8(s, RDMA_OPTION_ID_ACK_TIMEOUT, 40) == 0);
	CT_CHECK(conn_user_timeout(s) == 8796094); /* capped at IB's 31 */
	if (ct_pair_establish(chs, chc, c, s))
		return 1;
	CT_CHECK(conn_tos(s) == 0x10);
	CT_CHECK(conn_tos(c) == 0x48);
	CT_CHECK(conn_user_timeout(c) == 1074);
	return ct_pair_teardown(chs, chc, l, c, s);
}

/* RDMA_OPTION_IB_PATH stands in for rdma_resolve_route: ADDR_RESOLVED only. */
static int t_ib_path(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct ibv_path_data path[2];
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *c;
	int port;

	memset(path, 0, sizeof(path));
	path[0].flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_ALTERNATE;
	path[1].flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
	CT_CHECK(listener(chs, &l, &port) == 0);
	CT_CHECK(rdma_create_id(chc, &c, NULL, RDMA_PS_TCP) == 0);
	/* no address yet */
	CT_CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, path, sizeof(path)) ==
			 -1 && errno == EINVAL);
	ct_addr(ip, port, &ss);
	CT_CHECK(rdma_resolve_addr(c, NULL, (struct sockaddr *)&ss, 2000) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_ADDR_RESOLVED, 2000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, path, 0) == -1 &&
		 errno == EINVAL);
	CT_CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, path,
				 sizeof(path) - 1) == -1 && errno == EINVAL);
	/* no primary bidirectional path in it */
	CT_CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, path,
				 sizeof(path[0])) == -1 && errno == EINVAL);
	CT_CHECK(quiet(chc, 0) == 0);
	CT_CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, path, sizeof(path)) ==
		 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_ROUTE_RESOLVED, 1000);
	CT_CHECK(ev && ev->id == c && ev->status == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_set_option(c, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, path, sizeof(path)) ==
			 -1 && errno == EINVAL);
	CT_CHECK(rdma_resolve_route(c, 100) == -1 && errno == EINVAL);
	/* and the id connects as after rdma_resolve_route */
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CT_CHECK(ev);
	CT_CHECK(rdma_reject(ev->id, NULL, 0) == 0);
	rdma_destroy_id(ev->id);
	rdma_ack_cm_event(ev);
	ev = ct_expect(chc, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->status == -ECONNREFUSED);
	rdma_ack_cm_event(ev);
	ct_pair_destroy(chs, chc, l, c, NULL);
	return 0;
}

/* AF_IB: iWARP devices have no IB addresses. */
static int t_af_ib(void)
{
	struct rdma_addrinfo hints = { .ai_family = AF_IB, .ai_flags = RAI_NUMERICHOST,
				       .ai_port_space = RDMA_PS_TCP };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_ib sib = { .sib_family = AF_IB };
	struct rdma_addrinfo *res = NULL;
	struct rdma_cm_id *id;

	CT_CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(rdma_bind_addr(id, (struct sockaddr *)&sib) == -1 && errno == EAFNOSUPPORT);
	CT_CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sib, 100) == -1 &&
		 errno == EAFNOSUPPORT);
	CT_CHECK(rdma_getaddrinfo("::1", "7471", &hints, &res) == -1 && errno == EAFNOSUPPORT);
	hints.ai_flags |= RAI_FAMILY;
	CT_CHECK(rdma_getaddrinfo("::1", "7471", &hints, &res) == -1 && errno == EAFNOSUPPORT);
	CT_CHECK(res == NULL);
	CT_CHECK(quiet(ch, 0) == 0);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- rdma_notify ---- */

static int t_notify(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct rdma_cm_id *l, *c, *s, *a;
	struct sockaddr_storage ss;
	int port;

	CT_CHECK(rdma_notify(NULL, IBV_EVENT_COMM_EST) == -1 && errno == EINVAL);
	/* no connection-level CM id yet: EINVAL (as the kernel) */
	CT_CHECK(rdma_create_id(chc, &a, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(rdma_notify(a, IBV_EVENT_COMM_EST) == -1 && errno == EINVAL);
	ct_addr(ip, 0, &ss);
	CT_CHECK(rdma_bind_addr(a, (struct sockaddr *)&ss) == 0);
	CT_CHECK(rdma_notify(a, IBV_EVENT_COMM_EST) == -1 && errno == EINVAL);
	rdma_destroy_id(a);
	CT_CHECK(listener(chs, &l, &port) == 0);
	CT_CHECK(resolve(chc, port, &a) == 0);
	CT_CHECK(rdma_notify(a, IBV_EVENT_COMM_EST) == -1 && errno == EINVAL);
	rdma_destroy_id(a);
	CT_CHECK(rdma_notify(l, IBV_EVENT_COMM_EST) == 0);
	rdma_destroy_id(l);
	/* then 0, with no event: iWARP has no RTU for it to stand in for */
	if (request(chs, chc, &l, &c, &s))
		return 1;
	CT_CHECK(rdma_notify(s, IBV_EVENT_COMM_EST) == 0);
	CT_CHECK(rdma_notify(c, IBV_EVENT_COMM_EST) == 0);
	CT_CHECK(quiet(chs, 100) == 0 && quiet(chc, 0) == 0);
	if (ct_pair_establish(chs, chc, c, s))
		return 1;
	CT_CHECK(rdma_notify(s, IBV_EVENT_COMM_EST) == 0);
	CT_CHECK(quiet(chs, 100) == 0 && quiet(chc, 0) == 0);
	return ct_pair_teardown(chs, chc, l, c, s);
}

/* ---- rdma_resolve_addr and the source address ---- */

static uint16_t src_port(struct rdma_cm_id *id)
{
	return ntohs(rdma_get_src_port(id));
}

static bool local_is(struct rdma_cm_id *id, const char *addr)
{
	struct sockaddr_storage want;
	struct sockaddr *got = rdma_get_local_addr(id);

	ct_addr(addr, 0, &want);
	if (got->sa_family != want.ss_family)
		return false;
	if (got->sa_family == AF_INET)
		return ((struct sockaddr_in *)got)->sin_addr.s_addr ==
		       ((struct sockaddr_in *)&want)->sin_addr.s_addr;
	return memcmp(&((struct sockaddr_in6 *)got)->sin6_addr,
		      &((struct sockaddr_in6 *)&want)->sin6_addr, 16) == 0;
}

/* resolve_addr(src, dst) on a fresh id: ADDR_RESOLVED with its device */
static int resolve_with(struct rdma_event_channel *ch, struct rdma_cm_id *id,
			struct sockaddr *src, int port)
{
	struct sockaddr_storage dst;
	struct rdma_cm_event *ev;

	ct_addr(ip, port, &dst);
	CT_CHECK(rdma_resolve_addr(id, src, (struct sockaddr *)&dst, 2000) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 2000);
	CT_CHECK(ev && ev->id == id && ev->status == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(id->verbs != NULL);
	CT_CHECK(ntohs(rdma_get_dst_port(id)) == port);
	return 0;
}

/* A TCP port nobody uses right now. */
static int free_port(void)
{
	int fd, port;

	fd = raw_listener(&port);
	close(fd);
	return fd < 0 ? -1 : port;
}

static int t_resolve_src(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *ch = rdma_create_event_channel();
	const char *any = v6() ? "::" : "0.0.0.0", *other = v6() ? "127.0.0.1" : "::1";
	struct sockaddr_storage src, dst;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *a;
	int port, p1, p2;

	CT_CHECK(listener(chs, &l, &port) == 0);
	/* without a source: the route's, a port of the system's choice */
	CT_CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0);
	if (resolve_with(ch, a, NULL, port))
		return 1;
	CT_CHECK(local_is(a, ip) && src_port(a) != 0);
	/* resolved already: EINVAL */
	ct_addr(ip, port, &dst);
	CT_CHECK(rdma_resolve_addr(a, NULL, (struct sockaddr *)&dst, 100) == -1 &&
		 errno == EINVAL);
	rdma_destroy_id(a);

	/* with a source address and port */
	p1 = free_port();
	CT_CHECK(p1 > 0);
	CT_CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0);
	ct_addr(ip, p1, &src);
	if (resolve_with(ch, a, (struct sockaddr *)&src, port))
		return 1;
	CT_CHECK(local_is(a, ip) && src_port(a) == p1);
	rdma_destroy_id(a);

	/* a wildcard source is the route's address */
	CT_CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0);
	ct_addr(any, 0, &src);
	if (resolve_with(ch, a, (struct sockaddr *)&src, port))
		return 1;
	CT_CHECK(local_is(a, ip) && src_port(a) != 0);
	rdma_destroy_id(a);

	/* families must match */
	CT_CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0);
	ct_addr(other, 0, &src);
	CT_CHECK(rdma_resolve_addr(a, (struct sockaddr *)&src, (struct sockaddr *)&dst, 100) ==
			 -1 && errno == EINVAL);
	/* bound already: the given source is ignored */
	p1 = free_port();
	CT_CHECK(p1 > 0);
	ct_addr(ip, p1, &src);
	CT_CHECK(rdma_bind_addr(a, (struct sockaddr *)&src) == 0);
	p2 = free_port();
	CT_CHECK(p2 > 0 && p2 != p1);
	ct_addr(ip, p2, &src);
	if (resolve_with(ch, a, (struct sockaddr *)&src, port))
		return 1;
	CT_CHECK(local_is(a, ip) && src_port(a) == p1);
	rdma_destroy_id(a);

	/* bound to the wildcard: the route's source, the bound port; and it connects */
	CT_CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0);
	p1 = free_port();
	ct_addr(any, p1, &src);
	CT_CHECK(rdma_bind_addr(a, (struct sockaddr *)&src) == 0);
	CT_CHECK(a->verbs == NULL); /* a wildcard bind has no device yet */
	ct_addr(other, port, &dst); /* but the other family: EINVAL */
	CT_CHECK(rdma_resolve_addr(a, NULL, (struct sockaddr *)&dst, 100) == -1 &&
		 errno == EINVAL);
	if (resolve_with(ch, a, NULL, port))
		return 1;
	CT_CHECK(local_is(a, ip) && src_port(a) == p1);
	CT_CHECK(rdma_resolve_route(a, 2000) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 2000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_connect(a, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CT_CHECK(ev && ntohs(rdma_get_dst_port(ev->id)) == p1);
	CT_CHECK(rdma_reject(ev->id, NULL, 0) == 0);
	rdma_destroy_id(ev->id);
	rdma_ack_cm_event(ev);
	ev = ct_expect(ch, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(a);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* ---- rdma_get_cm_event from several threads and channels ---- */

#define NCH 2
#define NTHR 3
#define NEV 24

struct waiter {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *ids[NEV + NTHR]; /* the channel's; the last NTHR stop a thread */
	int seen[NEV + NTHR];               /* under mu */
	int foreign;                        /* events of another channel's ids */
	int bad;                            /* not ADDR_RESOLVED */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *waiter_thread(void *arg)
{
	struct waiter *w = arg;

	for (;;) {
		struct rdma_cm_event *ev;
		bool stop = false, mine = false;

		if (rdma_get_cm_event(w->ch, &ev))
			return NULL;
		pthread_mutex_lock(&mu);
		for (int i = 0; i < NEV + NTHR; i++) {
			if (w->ids[i] == ev->id) {
				w->seen[i]++;
				mine = true;
				stop = i >= NEV;
			}
		}
		w->foreign += !mine;
		w->bad += ev->event != RDMA_CM_EVENT_ADDR_RESOLVED;
		pthread_mutex_unlock(&mu);
		rdma_ack_cm_event(ev);
		if (stop)
			return NULL;
	}
}

static int t_threads(void)
{
	static struct waiter w[NCH];
	pthread_t t[NCH][NTHR];
	struct sockaddr_storage dst;

	ct_addr(ip, 9, &dst);
	for (int c = 0; c < NCH; c++) {
		w[c].ch = rdma_create_event_channel();
		CT_CHECK(w[c].ch);
		for (int i = 0; i < NEV + NTHR; i++)
			CT_CHECK(rdma_create_id(w[c].ch, &w[c].ids[i], NULL, RDMA_PS_TCP) == 0);
		for (int i = 0; i < NTHR; i++)
			CT_CHECK(pthread_create(&t[c][i], NULL, waiter_thread, &w[c]) == 0);
	}
	/* events interleaved over both channels while every thread waits in the call */
	for (int i = 0; i < NEV; i++)
		for (int c = 0; c < NCH; c++)
			CT_CHECK(rdma_resolve_addr(w[c].ids[i], NULL, (struct sockaddr *)&dst,
						   2000) == 0);
	/* then one stop event per thread, after all the others */
	for (int i = NEV; i < NEV + NTHR; i++)
		for (int c = 0; c < NCH; c++)
			CT_CHECK(rdma_resolve_addr(w[c].ids[i], NULL, (struct sockaddr *)&dst,
						   2000) == 0);
	for (int c = 0; c < NCH; c++)
		for (int i = 0; i < NTHR; i++)
			pthread_join(t[c][i], NULL);
	for (int c = 0; c < NCH; c++) {
		CT_CHECK(w[c].foreign == 0 && w[c].bad == 0);
		for (int i = 0; i < NEV + NTHR; i++)
			if (w[c].seen[i] != 1)
				CT_FAIL("channel %d id %d seen %d times", c, i, w[c].seen[i]);
		CT_CHECK(quiet(w[c].ch, 0) == 0);
		for (int i = 0; i < NEV + NTHR; i++)
			rdma_destroy_id(w[c].ids[i]);
		rdma_destroy_event_channel(w[c].ch);
	}
	return 0;
}

/* ---- a thread blocked on one channel does the CM's work for another's ids ---- */

struct idle_waiter {
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	int ret;
};

static void *idle_wait(void *arg)
{
	struct idle_waiter *w = arg;

	__atomic_store_n(&w->ret, rdma_get_cm_event(w->ch, &w->ev), __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * The thread blocked in rdma_get_cm_event on an idle channel is the one that runs the CM's
 * socket work (a helper; the CM engine thread sleeps meanwhile), so the handshake of ids
 * on other channels, whose owner only polls their fds, must go through it, and it must
 * wake for its own channel's event, nothing else.
 */
static int t_helper_elsewhere(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct idle_waiter w = { .ch = rdma_create_event_channel(), .ret = -2 };
	struct rdma_cm_id *idle_l, *x, *l, *c, *s;
	struct sockaddr_storage dst;
	pthread_t t;
	int port;

	CT_CHECK(chs && chc && w.ch);
	/* a listener nobody connects to: the CM engine is running before the thread waits */
	CT_CHECK(listener(w.ch, &idle_l, &port) == 0);
	CT_CHECK(pthread_create(&t, NULL, idle_wait, &w) == 0);
	CT_CHECK(request(chs, chc, &l, &c, &s) == 0);
	CT_CHECK(ct_pair_establish(chs, chc, c, s) == 0);
	CT_CHECK(ct_pair_teardown(chs, chc, l, c, s) == 0);
	CT_CHECK(__atomic_load_n(&w.ret, __ATOMIC_SEQ_CST) == -2); /* still waiting */
	/* its own event ends its wait */
	ct_addr(ip, 9, &dst);
	CT_CHECK(rdma_create_id(w.ch, &x, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(rdma_resolve_addr(x, NULL, (struct sockaddr *)&dst, 2000) == 0);
	CT_CHECK(pthread_join(t, NULL) == 0);
	CT_CHECK(w.ret == 0 && w.ev->id == x && w.ev->event == RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(w.ev);
	CT_CHECK(quiet(w.ch, 0) == 0);
	rdma_destroy_id(x);
	rdma_destroy_id(idle_l);
	rdma_destroy_event_channel(w.ch); /* chs and chc went with the teardown */
	return 0;
}

/* ---- rdma_migrate_id ---- */

static bool migrated;

static void *migrate_thread(void *arg)
{
	struct rdma_cm_id *id = arg;

	if (rdma_migrate_id(id, ((struct rdma_event_channel **)id->context)[1]) == 0)
		__atomic_store_n(&migrated, true, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Waits for the acks of events fetched from the old channel; queued ones move along. */
static int t_migrate_waits(void)
{
	struct rdma_event_channel *ch[2] = { rdma_create_event_channel(),
					     rdma_create_event_channel() };
	struct pollfd pfd = { .fd = ch[0]->fd, .events = POLLIN };
	struct sockaddr_storage dst;
	struct rdma_cm_event *ev, *ev2;
	struct rdma_cm_id *id;
	pthread_t t;

	CT_CHECK(rdma_create_id(ch[0], &id, ch, RDMA_PS_TCP) == 0);
	ct_addr(ip, 9, &dst);
	CT_CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) == 0);
	ev = ct_expect(ch[0], RDMA_CM_EVENT_ADDR_RESOLVED, 2000);
	CT_CHECK(ev);
	CT_CHECK(rdma_resolve_route(id, 2000) == 0);
	CT_CHECK(poll(&pfd, 1, 2000) == 1); /* ROUTE_RESOLVED queued, not fetched */
	pthread_create(&t, NULL, migrate_thread, id);
	usleep(200000); /* room for a wrong early return */
	CT_CHECK(!__atomic_load_n(&migrated, __ATOMIC_SEQ_CST));
	rdma_ack_cm_event(ev);
	pthread_join(t, NULL);
	CT_CHECK(__atomic_load_n(&migrated, __ATOMIC_SEQ_CST) && id->channel == ch[1]);
	CT_CHECK(quiet(ch[0], 0) == 0);
	ev2 = ct_expect(ch[1], RDMA_CM_EVENT_ROUTE_RESOLVED, 1000);
	CT_CHECK(ev2 && ev2->id == id);
	rdma_ack_cm_event(ev2);
	CT_CHECK(rdma_migrate_id(NULL, ch[0]) == -1 && errno == EINVAL);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch[0]);
	rdma_destroy_event_channel(ch[1]);
	return 0;
}

/* A migrated listener takes its queued requests along; later ones arrive there too. */
static int t_migrate_listener(void)
{
	struct rdma_event_channel *ch1 = rdma_create_event_channel();
	struct rdma_event_channel *ch2 = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct pollfd pfd = { .fd = ch1->fd, .events = POLLIN };
	struct rdma_cm_id *l, *c[2];
	struct rdma_cm_event *ev;
	int port;

	CT_CHECK(listener(ch1, &l, &port) == 0);
	CT_CHECK(resolve(chc, port, &c[0]) == 0 && resolve(chc, port, &c[1]) == 0);
	CT_CHECK(rdma_connect(c[0], &(struct rdma_conn_param){ 0 }) == 0);
	CT_CHECK(poll(&pfd, 1, 3000) == 1);
	CT_CHECK(rdma_migrate_id(l, ch2) == 0);
	CT_CHECK(quiet(ch1, 0) == 0);
	CT_CHECK(rdma_connect(c[1], &(struct rdma_conn_param){ 0 }) == 0);
	for (int i = 0; i < 2; i++) {
		ev = ct_expect(ch2, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
		CT_CHECK(ev && ev->listen_id == l && ev->id->channel == ch2);
		CT_CHECK(rdma_get_dst_port(ev->id) == rdma_get_src_port(c[i]));
		CT_CHECK(rdma_reject(ev->id, NULL, 0) == 0);
		rdma_destroy_id(ev->id);
		rdma_ack_cm_event(ev);
		ev = ct_expect(chc, RDMA_CM_EVENT_REJECTED, 3000);
		CT_CHECK(ev && ev->id == c[i]);
		rdma_ack_cm_event(ev);
	}
	CT_CHECK(quiet(ch1, 100) == 0);
	rdma_destroy_id(c[0]);
	rdma_destroy_id(c[1]);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch1);
	rdma_destroy_event_channel(ch2);
	rdma_destroy_event_channel(chc);
	return 0;
}

/* ---- rdma_destroy_id at each stage ---- */

/* A listener destroyed with requests not yet fetched: every peer is REJECTED. */
static int t_destroy_listener(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct pollfd pfd = { .fd = chs->fd, .events = POLLIN };
	struct rdma_cm_id *l, *c[3];
	struct rdma_cm_event *ev;
	int port, refused = 0;

	CT_CHECK(listener(chs, &l, &port) == 0);
	for (int i = 0; i < 3; i++) {
		if (resolve(chc, port, &c[i]))
			return 1;
		CT_CHECK(rdma_connect(c[i], &(struct rdma_conn_param){
						    .private_data = "x", .private_data_len = 1 }) == 0);
	}
	CT_CHECK(poll(&pfd, 1, 3000) == 1); /* one request at least is queued */
	CT_CHECK(rdma_destroy_id(l) == 0);
	for (int i = 0; i < 3; i++) {
		ev = ct_expect(chc, RDMA_CM_EVENT_REJECTED, 3000);
		CT_CHECK(ev);
		/* a queued request is refused with an MPA reject; one still in its handshake
		 * has its connection closed (the peer sees a reset) */
		CT_CHECK(ev->status == -ECONNREFUSED || ev->status == -ECONNRESET);
		CT_CHECK(ev->param.conn.private_data_len == 0);
		refused += ev->status == -ECONNREFUSED;
		rdma_ack_cm_event(ev);
	}
	CT_CHECK(refused >= 1);
	CT_CHECK(quiet(chs, 100) == 0 && quiet(chc, 0) == 0);
	for (int i = 0; i < 3; i++) /* failed ids do not connect again */
		CT_CHECK(rdma_connect(c[i], &(struct rdma_conn_param){ 0 }) == -1 &&
			 errno == EINVAL);
	for (int i = 0; i < 3; i++)
		rdma_destroy_id(c[i]);
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
	return 0;
}

/* A request fetched but never accepted or rejected: destroying it rejects the peer. */
static int t_destroy_request(void)
{
	struct rdma_event_channel *chs, *chc;
	struct rdma_cm_id *l, *c, *s;
	struct rdma_cm_event *ev;

	if (ct_pair_request(&chs, &chc, &l, &c, &s))
		return 1;
	CT_CHECK(rdma_destroy_id(s) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->id == c && ev->status == -ECONNREFUSED);
	CT_CHECK(ev->param.conn.private_data_len == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(quiet(chs, 100) == 0 && quiet(chc, 0) == 0);
	ct_pair_destroy(chs, chc, l, c, NULL);
	return 0;
}

/* During address resolution: the pending ADDR_RESOLVED goes with the id. */
static int t_destroy_resolving(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage dst;
	struct rdma_cm_id *a, *b;
	struct rdma_cm_event *ev;

	ct_addr(ip, 9, &dst);
	CT_CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(rdma_create_id(ch, &b, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(rdma_resolve_addr(a, NULL, (struct sockaddr *)&dst, 2000) == 0);
	CT_CHECK(rdma_resolve_addr(b, NULL, (struct sockaddr *)&dst, 2000) == 0);
	CT_CHECK(rdma_destroy_id(a) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 1000);
	CT_CHECK(ev && ev->id == b); /* b's only */
	rdma_ack_cm_event(ev);
	CT_CHECK(quiet(ch, 100) == 0);
	rdma_destroy_id(b);
	rdma_destroy_event_channel(ch);
	return 0;
}

/*
 * During connect: toward a peer that never answers the Request, the connection simply
 * closes (the peer reads EOF) and no event follows; toward our own listener after the
 * request was delivered, accepting it either fails (the reset arrived first) or yields
 * ESTABLISHED and then exactly one DISCONNECTED.
 */
static int t_destroy_connecting(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct rdma_cm_id *l, *c, *s;
	struct rdma_cm_event *ev;
	uint8_t buf[64];
	int lfd, fd, port, r;
	ssize_t n;

	lfd = raw_listener(&port);
	CT_CHECK(lfd >= 0);
	if (resolve(chc, port, &c))
		return 1;
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == 0);
	fd = accept(lfd, NULL, NULL);
	CT_CHECK(fd >= 0);
	CT_CHECK(recv(fd, buf, 20, MSG_WAITALL) == 20 && memcmp(buf, "MPA ID Req Frame", 16) == 0);
	CT_CHECK(rdma_destroy_id(c) == 0);
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) /* the rest of the Request, then EOF */
		;
	CT_CHECK(n == 0 || (n < 0 && errno == ECONNRESET));
	close(fd);
	close(lfd);
	CT_CHECK(quiet(chc, 100) == 0);

	if (request(chs, chc, &l, &c, &s))
		return 1;
	CT_CHECK(rdma_destroy_id(c) == 0);
	CT_CHECK(quiet(chc, 0) == 0);
	r = rdma_accept(s, &(struct rdma_conn_param){ 0 });
	if (r == 0) {
		ev = ct_expect(chs, RDMA_CM_EVENT_ESTABLISHED, 3000);
		CT_CHECK(ev && ev->id == s);
		rdma_ack_cm_event(ev);
		ev = ct_expect(chs, RDMA_CM_EVENT_DISCONNECTED, 3000);
		CT_CHECK(ev && ev->id == s);
		rdma_ack_cm_event(ev);
	} else {
		CT_CHECK(errno == ECONNRESET);
	}
	CT_CHECK(quiet(chs, 100) == 0);
	ct_pair_destroy(chs, chc, l, NULL, s);
	return 0;
}

/* ---- rdma_accept without a QP, a failed id's second connect ---- */

static int t_accept_noqp(void)
{
	struct rdma_event_channel *chs, *chc;
	struct rdma_cm_id *l, *c, *s;

	if (ct_pair_request(&chs, &chc, &l, &c, &s))
		return 1;
	/* no QP and no parameters: nothing says there is no QP */
	CT_CHECK(rdma_accept(s, NULL) == -1 && errno == EINVAL);
	/* a QP number nobody has */
	CT_CHECK(rdma_accept(s, &(struct rdma_conn_param){ .qp_num = 0xabcdef }) == -1 &&
		 errno == EINVAL);
	CT_CHECK(quiet(chc, 100) == 0); /* the request is still pending */
	if (ct_pair_establish(chs, chc, c, s))
		return 1;
	return ct_pair_teardown(chs, chc, l, c, s);
}

/* No listener: REJECTED -ECONNREFUSED at once (an RST), and the id is spent; the same
 * through a synchronous id. */
static int t_second_connect(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage dst;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;
	long t0, dt;
	int port = free_port();

	CT_CHECK(port > 0);
	if (resolve(ch, port, &c))
		return 1;
	t0 = ct_now_ms();
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_REJECTED, 3000);
	dt = ct_now_ms() - t0;
	CT_CHECK(ev && ev->id == c && ev->status == -ECONNREFUSED);
	CT_CHECK(ev->param.conn.private_data_len == 0);
	rdma_ack_cm_event(ev);
	printf("no listener: REJECTED after %ld ms\n", dt);
	/* the reset, not a timeout: far below the 10 s of the MPA Reply's, even under load */
	CT_CHECK(dt < 2000);
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == -1 && errno == EINVAL);
	CT_CHECK(rdma_resolve_route(c, 100) == -1 && errno == EINVAL);
	ct_addr(ip, port, &dst);
	CT_CHECK(rdma_resolve_addr(c, NULL, (struct sockaddr *)&dst, 100) == -1 &&
		 errno == EINVAL);
	CT_CHECK(rdma_disconnect(c) == -1 && errno == EINVAL);
	CT_CHECK(quiet(ch, 100) == 0);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);

	/* a synchronous id: the call itself fails, ECONNREFUSED, the event in id->event */
	CT_CHECK(rdma_create_id(NULL, &c, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(rdma_resolve_addr(c, NULL, (struct sockaddr *)&dst, 2000) == 0);
	CT_CHECK(c->event && c->event->event == RDMA_CM_EVENT_ADDR_RESOLVED);
	CT_CHECK(rdma_resolve_route(c, 2000) == 0);
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == -1 && errno == ECONNREFUSED);
	CT_CHECK(c->event && c->event->event == RDMA_CM_EVENT_REJECTED &&
		 c->event->status == -ECONNREFUSED);
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == -1 && errno == EINVAL);
	rdma_destroy_id(c);
	return 0;
}

/* ---- ECE ---- */

static int t_ece(void)
{
	struct rdma_event_channel *chs, *chc;
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 1, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC };
	struct ibv_ece ece = { .vendor_id = 0x15b3, .options = 1 };
	struct rdma_cm_id *l, *c, *s, *q;
	struct rdma_cm_event *ev;
	int port;

	CT_CHECK(rdma_set_local_ece(NULL, &ece) == -1 && errno == EINVAL);
	if (ct_pair_request(&chs, &chc, &l, &c, &s))
		return 1;
	CT_CHECK(rdma_set_local_ece(s, NULL) == -1 && errno == EINVAL);
	CT_CHECK(rdma_set_local_ece(s, &(struct ibv_ece){ .vendor_id = 0 }) == -1 &&
		 errno == EINVAL);
	CT_CHECK(rdma_set_local_ece(s, &(struct ibv_ece){ .vendor_id = 1, .comp_mask = 1 }) ==
			 -1 && errno == EINVAL);
	/* taken, never sent: MPA has no room for it */
	CT_CHECK(rdma_set_local_ece(s, &ece) == 0);
	CT_CHECK(rdma_get_remote_ece(s, NULL) == -1 && errno == EINVAL);
	CT_CHECK(rdma_get_remote_ece(s, &ece) == 0);
	CT_CHECK(ece.vendor_id == 0 && ece.options == 0 && ece.comp_mask == 0);
	/* rdma_reject_ece is a reject: the peer gets REJECTED with the private data */
	CT_CHECK(rdma_reject_ece(s, "ece", 4) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->id == c && ev->status == -ECONNREFUSED);
	CT_CHECK(ev->param.conn.private_data_len == 4 &&
		 memcmp(ev->param.conn.private_data, "ece", 4) == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_get_remote_ece(c, &ece) == 0 && ece.vendor_id == 0);
	CT_CHECK(quiet(chs, 100) == 0);
	rdma_destroy_id(s);
	rdma_destroy_id(c);

	/* an id with a QP: EINVAL, as upstream */
	port = ntohs(rdma_get_src_port(l));
	if (resolve(chc, port, &q))
		return 1;
	CT_CHECK(rdma_create_qp(q, NULL, &qa) == 0);
	ece.vendor_id = 0x15b3;
	CT_CHECK(rdma_set_local_ece(q, &ece) == -1 && errno == EINVAL);
	CT_CHECK(rdma_get_remote_ece(q, &ece) == -1 && errno == EINVAL);
	rdma_destroy_qp(q);
	rdma_destroy_id(q);
	ct_pair_destroy(chs, chc, l, NULL, NULL);
	return 0;
}

/* ---- the CM's shared timer ---- */

/*
 * Deadlines of different lengths share one timer: a 5 s Request timeout armed after a 10 s
 * Reply timeout (SOFTRDMA_ACCEPT_TIMEOUT_MS as the test sets it) still fires first, and
 * each fires once, not before its time.
 */
static int t_timers(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct pollfd pfd;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *c;
	int lfd, afd, pfd_fd, port, lport;
	long t0, t_drop, t_unreach;
	uint8_t buf[64];

	lfd = raw_listener(&port); /* answers nothing */
	CT_CHECK(lfd >= 0);
	if (resolve(chc, port, &c) || listener(chs, &l, &lport))
		return 1;
	t0 = ct_now_ms();
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == 0);
	afd = accept(lfd, NULL, NULL);
	CT_CHECK(afd >= 0 && recv(afd, buf, 20, MSG_WAITALL) == 20);
	/* then half a Request to our listener: its deadline goes before the first one */
	pfd_fd = raw_connect(lport);
	CT_CHECK(pfd_fd >= 0 && send(pfd_fd, "MPA ID", 6, 0) == 6);
	pfd = (struct pollfd){ .fd = pfd_fd, .events = POLLIN };
	CT_CHECK(poll(&pfd, 1, 12000) == 1);
	t_drop = ct_now_ms() - t0;
	CT_CHECK(recv(pfd_fd, buf, sizeof(buf), 0) <= 0); /* dropped: EOF or reset */
	CT_CHECK(quiet(chc, 0) == 0); /* the earlier-armed, later deadline has not fired */
	ev = ct_expect(chc, RDMA_CM_EVENT_UNREACHABLE, (int)ct_accept_bound_ms() + 2000);
	t_unreach = ct_now_ms() - t0;
	CT_CHECK(ev && ev->id == c && ev->status == -ETIMEDOUT);
	rdma_ack_cm_event(ev);
	printf("request dropped after %ld ms, reply timeout after %ld ms\n", t_drop, t_unreach);
	CT_CHECK(t_drop >= 4900 && t_drop < t_unreach);
	CT_CHECK(t_unreach >= ct_accept_bound_ms() - 100);
	CT_CHECK(quiet(chs, 0) == 0 && quiet(chc, 100) == 0);
	close(pfd_fd);
	close(afd);
	close(lfd);
	ct_pair_destroy(chs, chc, l, c, NULL);
	return 0;
}

/* ---- two processes (cm_netns_paths.sh) ---- */

/*
 * A wildcard listener on ct_port taking arg_n connections (QP-less, private data
 * "ping" / "pong", ended by the peer); prints each request's device and local address,
 * so the script can tell that interfaces added after rdma_listen are served too.
 */
static int t_serve_any(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param ap = { .private_data = "pong", .private_data_len = 5 };
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *s;
	char addr[INET6_ADDRSTRLEN];

	CT_CHECK(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(ct_addr(ip, ct_port, &ss) == 0);
	CT_CHECK(rdma_bind_addr(l, (struct sockaddr *)&ss) == 0);
	CT_CHECK(l->verbs == NULL); /* wildcard: no device of its own */
	CT_CHECK(rdma_listen(l, 4) == 0);
	printf("LISTENING\n");
	fflush(stdout);
	for (int i = 0; i < arg_n; i++) {
		struct sockaddr *la;

		ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 30000);
		CT_CHECK(ev && ev->listen_id == l && ev->param.conn.private_data_len == 5 &&
			 memcmp(ev->param.conn.private_data, "ping", 5) == 0);
		s = ev->id;
		rdma_ack_cm_event(ev);
		CT_CHECK(s->verbs != NULL);
		la = rdma_get_local_addr(s);
		inet_ntop(la->sa_family, la->sa_family == AF_INET ?
				  (void *)&((struct sockaddr_in *)la)->sin_addr :
				  (void *)&((struct sockaddr_in6 *)la)->sin6_addr,
			  addr, sizeof(addr));
		printf("REQUEST %s %s\n", ibv_get_device_name(s->verbs->device), addr);
		fflush(stdout);
		CT_CHECK(rdma_accept(s, &ap) == 0);
		ev = ct_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 5000);
		CT_CHECK(ev && ev->id == s);
		rdma_ack_cm_event(ev);
		ev = ct_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 10000);
		CT_CHECK(ev && ev->id == s);
		rdma_ack_cm_event(ev);
		CT_CHECK(rdma_disconnect(s) == 0);
		rdma_destroy_id(s);
	}
	CT_CHECK(quiet(ch, 100) == 0);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* Connect to ip:ct_port, which never answers: UNREACHABLE with status -arg_n. */
static int t_unreachable(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;
	long t0;

	if (resolve(ch, ct_port, &c))
		return 1;
	t0 = ct_now_ms();
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_UNREACHABLE, 30000);
	CT_CHECK(ev && ev->id == c);
	printf("UNREACHABLE status %d after %ld ms\n", ev->status, ct_now_ms() - t0);
	CT_CHECK(ev->status == -arg_n && ev->param.conn.private_data_len == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == -1 && errno == EINVAL);
	CT_CHECK(quiet(ch, 100) == 0);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
	return 0;
}

static const struct ct_test tests[] = {
	{ "serve_any", t_serve_any },
	{ "unreachable", t_unreachable },
	{ "option_errors", t_option_errors },
	{ "option_socket", t_option_socket },
	{ "ib_path", t_ib_path },
	{ "af_ib", t_af_ib },
	{ "notify", t_notify },
	{ "resolve_src", t_resolve_src },
	{ "threads", t_threads },
	{ "helper_elsewhere", t_helper_elsewhere },
	{ "migrate_waits", t_migrate_waits },
	{ "migrate_listener", t_migrate_listener },
	{ "destroy_listener", t_destroy_listener },
	{ "destroy_request", t_destroy_request },
	{ "destroy_resolving", t_destroy_resolving },
	{ "destroy_connecting", t_destroy_connecting },
	{ "accept_noqp", t_accept_noqp },
	{ "second_connect", t_second_connect },
	{ "ece", t_ece },
	{ "timers", t_timers },
};

int main(int argc, char **argv)
{
	if (argc > 4)
		arg_n = atoi(argv[4]);
	return ct_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
