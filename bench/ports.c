// SPDX-License-Identifier: MIT
/*
 * ports: how many connections processes get out of the host's port space, through rdma_cm
 * or through plain TCP connect(), and how each attempt ends.
 *
 *   ports -r server [-T] [-a addr] [-p first_port] [-l listeners]
 *   ports -r client [-T] [-a addr] [-p first_port] [-l listeners] [-n conns] [-w in_flight]
 *
 * The server listens on `listeners` consecutive ports (default 4 from 18900 on 127.0.0.1)
 * and accepts everything (rdma_cm: an RC QP per connection on one shared CQ) until its
 * standard input ends. A client opens `conns` connections spread round robin over those
 * ports, up to `in_flight` at a time, without binding (rdma_resolve_addr with no source; TCP:
 * socket + connect), and follows every one to its end: ESTABLISHED (connect() succeeded), or
 * the failure (the call that returned -1 and its errno, or the event and its status). Then
 * it prints, on stdout, one "key value" line per figure:
 *   established, failed, fail <how> <count> (one line per kind), ports (distinct local ports
 *   of established connections), slowest_ms (the longest time from rdma_create_id or socket
 *   to the connection's end), then "held"
 * and keeps every connection until its standard input ends, so that several clients hold
 * their ports at once. The server prints "ready" once it listens and, at the end,
 * "server_established N" and "server_lost N" (requests it accepted that never reached
 * ESTABLISHED). -T: plain TCP instead of rdma_cm, for the side-by-side figure.
 *
 * bench/ports.sh runs several clients against several servers this way; the integration
 * test cm_portspace runs a small version in a namespace with a narrowed port range.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

static const char *g_role = "ports";
#include "bench_util.h"

static struct {
	bool server, tcp;
	const char *addr;
	int port, listeners, n, in_flight;
} opt = { .addr = "127.0.0.1", .port = 18900, .listeners = 4, .n = 1000, .in_flight = 64 };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static struct sockaddr_in dst_of(int i)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)(opt.port + i % opt.listeners)) };

	if (inet_pton(AF_INET, opt.addr, &sin.sin_addr) != 1)
		die("bad address %s", opt.addr);
	return sin;
}

/* ------------------------------------------------------------ outcomes -- */

#define MAX_KINDS 32
static struct {
	char what[64];
	int count;
} kinds[MAX_KINDS];
static int established, failed, nkinds;
static double slowest;
static uint8_t port_used[65536];

static void failure(const char *what, int code, double t0)
{
	char w[64];
	int i;

	snprintf(w, sizeof(w), "%s:%d", what, code);
	for (i = 0; i < nkinds && strcmp(kinds[i].what, w); i++)
		;
	if (i == nkinds && nkinds < MAX_KINDS)
		snprintf(kinds[nkinds++].what, sizeof(w), "%s", w);
	if (i < MAX_KINDS)
		kinds[i].count++;
	failed++;
	if (now_ms() - t0 > slowest)
		slowest = now_ms() - t0;
}

static void success(uint16_t port_be, double t0)
{
	established++;
	port_used[ntohs(port_be)] = 1;
	if (now_ms() - t0 > slowest)
		slowest = now_ms() - t0;
}

/* Print the figures, then hold everything until stdin ends. */
static void report_and_hold(void)
{
	int ports = 0;
	char b;

	for (int p = 0; p < 65536; p++)
		ports += port_used[p];
	printf("established %d\nfailed %d\n", established, failed);
	for (int i = 0; i < nkinds; i++)
		printf("fail %s %d\n", kinds[i].what, kinds[i].count);
	printf("ports %d\nslowest_ms %.0f\nheld\n", ports, slowest);
	fflush(stdout);
	while (read(0, &b, 1) > 0)
		;
}

/* ----------------------------------------------------------------- TCP -- */

static void tcp_client(void)
{
	for (int i = 0; i < opt.n; i++) {
		struct sockaddr_in d = dst_of(i), l;
		socklen_t len = sizeof(l);
		double t0 = now_ms();
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			die("socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&d, sizeof(d)) < 0) {
			failure("connect", errno, t0);
			close(fd);
			continue;
		}
		getsockname(fd, (struct sockaddr *)&l, &len);
		success(l.sin_port, t0);
	}
	report_and_hold();
}

static void tcp_server(void)
{
	struct pollfd *p = calloc((size_t)opt.listeners + 1, sizeof(*p));
	int n = 0, one = 1;

	if (!p)
		die("out of memory");
	for (int i = 0; i < opt.listeners; i++) {
		struct sockaddr_in a = dst_of(i);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4096))
			die("listen on port %d: %s", opt.port + i, strerror(errno));
		p[i] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	p[opt.listeners] = (struct pollfd){ .fd = 0, .events = POLLIN };
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		if (poll(p, (nfds_t)opt.listeners + 1, -1) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (p[opt.listeners].revents) {
			char b;

			if (read(0, &b, 1) <= 0)
				break;
		}
		for (int i = 0; i < opt.listeners; i++)
			while (accept4(p[i].fd, NULL, NULL, SOCK_CLOEXEC) >= 0)
				n++;
	}
	printf("server_established %d\nserver_lost 0\n", n);
}

/* ------------------------------------------------------------- rdma_cm -- */

struct conn {
	struct rdma_cm_id *id;
	double t0;
	bool done, established;
};

static struct ibv_pd *pd;
static struct ibv_cq *cq;

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = 2, .max_recv_wr = 2,
					       .max_send_sge = 1, .max_recv_sge = 1 } };

	if (!pd) {
		pd = ibv_alloc_pd(id->verbs);
		cq = pd ? ibv_create_cq(id->verbs, 4096, NULL, NULL, 0) : NULL;
		if (!cq)
			die("PD/CQ: %s", strerror(errno));
	}
	a.send_cq = a.recv_cq = cq;
	if (rdma_create_qp(id, pd, &a))
		die("rdma_create_qp: %s", strerror(errno));
}

static struct rdma_event_channel *channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch || fcntl(ch->fd, F_SETFL, O_NONBLOCK))
		die("rdma_create_event_channel: %s", strerror(errno));
	return ch;
}

/* Wait for the channel (or stdin with in0), at most a second: every wait is bounded. */
static bool wait_channel(struct rdma_event_channel *ch, bool in0)
{
	struct pollfd p[2] = { { .fd = ch->fd, .events = POLLIN }, { .fd = 0, .events = POLLIN } };

	if (poll(p, in0 ? 2 : 1, 1000) < 0 && errno != EINTR)
		die("poll: %s", strerror(errno));
	return in0 && p[1].revents;
}

static void rdma_server(void)
{
	struct rdma_event_channel *ch = channel();
	int est = 0, lost = 0;

	for (int i = 0; i < opt.listeners; i++) {
		struct sockaddr_in a = dst_of(i);
		struct rdma_cm_id *l;

		if (rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(l, (struct sockaddr *)&a) || rdma_listen(l, 1024))
			die("listen on port %d: %s", opt.port + i, strerror(errno));
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct rdma_cm_event *ev;

		while (rdma_get_cm_event(ch, &ev) == 0) {
			struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };

			switch (ev->event) {
			case RDMA_CM_EVENT_CONNECT_REQUEST:
				ev->id->context = NULL;
				make_qp(ev->id);
				if (rdma_accept(ev->id, &p))
					die("rdma_accept: %s", strerror(errno));
				break;
			case RDMA_CM_EVENT_ESTABLISHED:
				ev->id->context = ev->id; /* marks it established */
				est++;
				break;
			case RDMA_CM_EVENT_DISCONNECTED:
			case RDMA_CM_EVENT_CONNECT_ERROR:
			case RDMA_CM_EVENT_UNREACHABLE:
			case RDMA_CM_EVENT_REJECTED:
				if (!ev->id->context)
					lost++; /* accepted, never established */
				break;
			default:
				break;
			}
			rdma_ack_cm_event(ev);
		}
		if (errno != EAGAIN)
			die("rdma_get_cm_event: %s", strerror(errno));
		if (wait_channel(ch, true)) {
			char b;

			if (read(0, &b, 1) <= 0)
				break;
		}
	}
	printf("server_established %d\nserver_lost %d\n", est, lost);
}

static int started, ended;

static void rdma_start(struct rdma_event_channel *ch, struct conn *c)
{
	struct sockaddr_in d = dst_of(started);

	c->t0 = now_ms();
	started++;
	if (rdma_create_id(ch, &c->id, c, RDMA_PS_TCP))
		die("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&d, 2000)) {
		failure("rdma_resolve_addr", errno, c->t0);
		rdma_destroy_id(c->id);
		c->id = NULL;
		c->done = true;
		ended++;
	}
}

/* One event of a client connection; returns true when the connection ended (failed ones
 * are destroyed by the caller, after the ack). */
static bool rdma_client_event(struct rdma_cm_event *ev, struct conn *c)
{
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .retry_count = 7 };

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(c->id, 2000) == 0)
			return false;
		failure("rdma_resolve_route", errno, c->t0);
		return true;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		make_qp(c->id);
		if (rdma_connect(c->id, &p) == 0)
			return false;
		failure("rdma_connect", errno, c->t0);
		return true;
	case RDMA_CM_EVENT_ESTABLISHED:
		c->established = true;
		success(rdma_get_src_port(c->id), c->t0);
		return false; /* ended, but kept */
	default:
		failure(rdma_event_str(ev->event), ev->status, c->t0);
		return true;
	}
}

static void rdma_client(void)
{
	struct rdma_event_channel *ch = channel();
	struct conn *cs = calloc((size_t)opt.n, sizeof(*cs));

	if (!cs)
		die("out of memory");
	while (ended < opt.n) {
		struct rdma_cm_event *ev;

		while (started < opt.n && started - ended < opt.in_flight)
			rdma_start(ch, &cs[started]);
		while (rdma_get_cm_event(ch, &ev) == 0) {
			struct conn *c = ev->id->context;
			bool est = ev->event == RDMA_CM_EVENT_ESTABLISHED;
			bool failed_now = !c->done && rdma_client_event(ev, c);

			rdma_ack_cm_event(ev);
			if (c->done)
				continue; /* e.g. DISCONNECTED of an established one: kept */
			if (est || failed_now) {
				c->done = true;
				ended++;
			}
			if (failed_now) {
				rdma_destroy_qp(c->id);
				rdma_destroy_id(c->id);
				c->id = NULL;
			}
		}
		if (errno != EAGAIN)
			die("rdma_get_cm_event: %s", strerror(errno));
		if (ended < opt.n)
			wait_channel(ch, false);
	}
	report_and_hold();
}

int main(int argc, char **argv)
{
	int o;

	while ((o = getopt(argc, argv, "r:Ta:p:l:n:w:")) != -1) {
		switch (o) {
		case 'r': opt.server = strcmp(optarg, "server") == 0; break;
		case 'T': opt.tcp = true; break;
		case 'a': opt.addr = optarg; break;
		case 'p': opt.port = atoi(optarg); break;
		case 'l': opt.listeners = atoi(optarg); break;
		case 'n': opt.n = atoi(optarg); break;
		case 'w': opt.in_flight = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: ports -r server|client [-T] [-a addr] [-p port] "
					"[-l listeners] [-n conns] [-w in_flight]\n");
			return 2;
		}
	}
	if (opt.listeners < 1 || opt.n < 1 || opt.in_flight < 1 || opt.port < 1 ||
	    opt.port + opt.listeners > 65536)
		die("bad arguments");
	g_role = opt.server ? "ports server" : "ports client";
	raise_nofile();
	if (opt.server)
		opt.tcp ? tcp_server() : rdma_server();
	else
		opt.tcp ? tcp_client() : rdma_client();
	return 0;
}
