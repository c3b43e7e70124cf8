// SPDX-License-Identifier: MIT
/*
 * setuprate: how many RC connections per second rdma_cm sets up and tears down, next to plain
 * TCP connect + one small exchange + close on the same address, in the same run. Written
 * against the public <rdma/rdma_cma.h> only, so it runs on softrdma (LD_LIBRARY_PATH) and on
 * rdma-core alike.
 *
 *   server: setuprate -s [-a addr] [-p port]          (RDMA on port, TCP on port+1)
 *   client: setuprate -c [-a addr] [-p port] [-n conns] [-w windows] [-r rounds] [-W warmup]
 *                        [-T both|tcp|rdma]  (one mode only: for profiling)
 *
 * One RDMA connection is the whole life of an id, each step timed separately:
 *   create id, resolve addr (call to ADDR_RESOLVED), resolve route (call to ROUTE_RESOLVED),
 *   create qp (rdma_create_qp with the library's default PD and CQs, as cmtime does),
 *   connect (call to ESTABLISHED), disconnect (call to DISCONNECTED), destroy (QP and id).
 * One TCP connection: connect (call to writable), exchange (64 bytes out, the server's 64-byte
 * echo back), close (the server's FIN in, then close()).
 *
 * TIME_WAIT. The TCP server closes first, right after its echo, so TIME_WAIT stays on the
 * server, as it does with softrdma's rdma_cm (docs/ARCHITECTURE.md, "Who closes first").
 * Were the client to close first, every baseline connection would hold one of the client's
 * ephemeral ports for a minute, and a few rounds fill the port range: the rdma_cm ids'
 * implicit binds would then pay for the baseline's TIME_WAITs.
 *
 * Window. "-w 1,64" runs everything with at most 1 and then at most 64 connections in flight:
 * a new connection starts as soon as one finishes (a pipeline, unlike cmtime's phases where
 * every connection finishes step k before any starts step k+1). One thread drives all of them
 * from one event channel (TCP: one epoll set), so the figures include no thread of ours.
 *
 * Per step the table gives what cmtime gives per step, per connection: the sum over all
 * connections (ms), the largest (ms), the smallest (us) and the mean (us / conn). The rate is
 * connections / wall time of the round. Each (mode, window) pair runs -r rounds, interleaved
 * (TCP, RDMA, TCP, RDMA, ...) so background load hits both alike; the round with the median
 * rate is printed, and the ratio is the median of the rounds' ratios.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define XCHG_LEN 64
#define MAX_WINDOW 1024
#define MAX_ROUNDS 15
#define MODE_TCP 1
#define MODE_RDMA 2

static unsigned int g_modes = MODE_TCP | MODE_RDMA; /* -T: what to measure (profiling) */

static const char *g_role = "setuprate";

#include "bench_util.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void resolve(const char *host, int port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res;
	char svc[16];
	int rc;

	snprintf(svc, sizeof(svc), "%d", port);
	rc = getaddrinfo(host, svc, &hints, &res);
	if (rc)
		die("%s: %s", host, gai_strerror(rc));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Server                                                                                     */

/* RDMA: accept everything with a small QP; on DISCONNECTED tear down (as cmtime -b does). */
static void *rdma_server(void *arg)
{
	struct sockaddr_storage *addr = arg;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *lid;
	struct rdma_cm_event *ev;

	if (!ch)
		die("rdma_create_event_channel: %s", strerror(errno));
	CHECK(rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP));
	CHECK(rdma_bind_addr(lid, (struct sockaddr *)addr));
	CHECK(rdma_listen(lid, 0));
	printf("setuprate server: rdma listening\n");
	fflush(stdout);
	for (;;) {
		struct rdma_cm_id *id;
		enum rdma_cm_event_type type;

		CHECK(rdma_get_cm_event(ch, &ev));
		id = ev->id;
		type = ev->event;
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST: {
			struct ibv_qp_init_attr qa = {
				.cap = { .max_send_wr = 1, .max_recv_wr = 1,
					 .max_send_sge = 1, .max_recv_sge = 1 },
				.qp_type = IBV_QPT_RC,
			};

			if (rdma_create_qp(id, NULL, &qa) || rdma_accept(id, NULL)) {
				fprintf(stderr, "setuprate server: accept: %s\n", strerror(errno));
				if (id->qp)
					rdma_destroy_qp(id);
				rdma_destroy_id(id);
			}
			break;
		}
		case RDMA_CM_EVENT_ESTABLISHED:
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
			rdma_disconnect(id); /* harmless when over; what cmtime's server does */
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			break;
		default:
			fprintf(stderr, "setuprate server: event %s\n", rdma_event_str(type));
			break;
		}
	}
	return NULL;
}

struct tcp_srv_conn {
	int fd;
	size_t got;
	uint8_t buf[XCHG_LEN];
};

/* TCP: echo XCHG_LEN bytes and close. One epoll thread. */
static void tcp_server(struct sockaddr_storage *addr)
{
	int one = 1, lfd, ep;
	struct epoll_event ev = { .events = EPOLLIN };

	CHECK(lfd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	CHECK(setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	CHECK(bind(lfd, (struct sockaddr *)addr,
		   addr->ss_family == AF_INET ? sizeof(struct sockaddr_in)
					      : sizeof(struct sockaddr_in6)));
	CHECK(listen(lfd, 4096));
	CHECK(ep = epoll_create1(EPOLL_CLOEXEC));
	ev.data.ptr = NULL;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev));
	printf("setuprate server: tcp listening\n");
	fflush(stdout);
	for (;;) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, -1);

		if (n < 0 && errno == EINTR)
			continue;
		CHECK(n);
		for (int i = 0; i < n; i++) {
			struct tcp_srv_conn *c = evs[i].data.ptr;
			ssize_t r;

			if (!c) {
				int fd;

				while ((fd = accept4(lfd, NULL, NULL,
						     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					c = calloc(1, sizeof(*c));
					if (!c)
						die("out of memory");
					c->fd = fd;
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					ev.events = EPOLLIN;
					ev.data.ptr = c;
					CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
				}
				continue;
			}
			r = recv(c->fd, c->buf + c->got, XCHG_LEN - c->got, 0);
			if (r > 0) {
				c->got += (size_t)r;
				/* Echo, then close first: see "TIME_WAIT" at the top. */
				if (c->got == XCHG_LEN)
					r = 0;
				if (c->got == XCHG_LEN &&
				    send(c->fd, c->buf, XCHG_LEN, MSG_NOSIGNAL) != XCHG_LEN)
					fprintf(stderr, "setuprate server: echo: %s\n", strerror(errno));
			}
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				close(c->fd); /* also takes it out of the epoll set */
				free(c);
			}
		}
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Client: steps and statistics                                                               */

enum rdma_step { R_CREATE, R_ADDR, R_ROUTE, R_QP, R_CONNECT, R_DISC, R_DESTROY, R_NSTEPS };
enum tcp_step { T_CONNECT, T_XCHG, T_CLOSE, T_NSTEPS };

static const char *const rdma_step_name[R_NSTEPS] = {
	"create id", "resolve addr", "resolve route", "create qp", "connect", "disconnect",
	"destroy",
};
static const char *const tcp_step_name[T_NSTEPS] = { "connect", "exchange", "close" };

struct step_stat {
	uint64_t sum, max, min;
};

struct round {
	unsigned int conns;
	uint64_t wall_ns;
	struct step_stat st[R_NSTEPS];
};

static void stat_add(struct step_stat *s, uint64_t ns)
{
	s->sum += ns;
	if (ns > s->max)
		s->max = ns;
	if (!s->min || ns < s->min)
		s->min = ns;
}

static double round_rate(const struct round *r)
{
	return r->wall_ns ? r->conns * 1e9 / (double)r->wall_ns : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Client: RDMA                                                                               */

struct rconn {
	struct rdma_cm_id *id;
	uint64_t t; /* start of the step in progress */
	bool busy;
};

struct rdma_run {
	struct rdma_event_channel *ch;
	struct sockaddr_storage dst;
	struct round *r;
	unsigned int started, done, total;
};

static void rdma_step_done(struct rdma_run *run, struct rconn *c, enum rdma_step s)
{
	uint64_t t = now_ns();

	if (run->r)
		stat_add(&run->r->st[s], t - c->t);
	c->t = t;
}

static void rdma_start(struct rdma_run *run, struct rconn *c)
{
	c->busy = true;
	run->started++;
	c->t = now_ns();
	CHECK(rdma_create_id(run->ch, &c->id, c, RDMA_PS_TCP));
	rdma_step_done(run, c, R_CREATE);
	CHECK(rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&run->dst, 2000));
}

static void rdma_event(struct rdma_run *run, struct rdma_cm_event *ev)
{
	struct rconn *c = ev->id->context;
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 2 };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	rdma_ack_cm_event(ev);
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		rdma_step_done(run, c, R_ADDR);
		CHECK(rdma_resolve_route(c->id, 2000));
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		rdma_step_done(run, c, R_ROUTE);
		CHECK(rdma_create_qp(c->id, NULL, &qa));
		rdma_step_done(run, c, R_QP);
		CHECK(rdma_connect(c->id, &cp));
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		rdma_step_done(run, c, R_CONNECT);
		CHECK(rdma_disconnect(c->id));
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		rdma_step_done(run, c, R_DISC);
		rdma_destroy_qp(c->id);
		CHECK(rdma_destroy_id(c->id));
		rdma_step_done(run, c, R_DESTROY);
		c->busy = false;
		run->done++;
		break;
	default:
		die("connection %u: %s, status %d", run->started, rdma_event_str(type), status);
	}
}

static void rdma_round(const struct sockaddr_storage *dst, unsigned int n, unsigned int window,
		       struct round *r)
{
	struct rdma_run run = { .dst = *dst, .r = r, .total = n };
	struct rconn *slots = calloc(window, sizeof(*slots));
	uint64_t t0;

	if (!slots)
		die("out of memory");
	run.ch = rdma_create_event_channel();
	if (!run.ch)
		die("rdma_create_event_channel: %s", strerror(errno));
	if (r)
		memset(r, 0, sizeof(*r));
	t0 = now_ns();
	while (run.done < n) {
		struct rdma_cm_event *ev;

		for (unsigned int i = 0; i < window && run.started < n; i++)
			if (!slots[i].busy)
				rdma_start(&run, &slots[i]);
		CHECK(rdma_get_cm_event(run.ch, &ev));
		rdma_event(&run, ev);
	}
	if (r) {
		r->wall_ns = now_ns() - t0;
		r->conns = n;
	}
	rdma_destroy_event_channel(run.ch);
	free(slots);
}

/* ------------------------------------------------------------------------------------------ */
/* Client: TCP                                                                                */

struct tconn {
	int fd;
	enum tcp_step step;
	size_t got;
	uint64_t t;
	uint8_t buf[XCHG_LEN];
};

static void tcp_step_done(struct round *r, struct tconn *c, enum tcp_step s)
{
	uint64_t t = now_ns();

	if (r)
		stat_add(&r->st[s], t - c->t);
	c->t = t;
}

static void tcp_start(int ep, const struct sockaddr_storage *dst, struct tconn *c)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
	int one = 1;

	c->t = now_ns();
	c->step = T_CONNECT;
	c->got = 0;
	CHECK(c->fd = socket(dst->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (const struct sockaddr *)dst,
		    dst->ss_family == AF_INET ? sizeof(struct sockaddr_in)
					      : sizeof(struct sockaddr_in6)) < 0 &&
	    errno != EINPROGRESS)
		die("connect: %s", strerror(errno));
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev));
}

/* Returns true when the connection is over. */
static bool tcp_event(int ep, struct round *r, struct tconn *c, uint32_t events)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	ssize_t n;

	if (c->step == T_CONNECT) {
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
		if (soerr || (events & EPOLLERR))
			die("tcp connect: %s", strerror(soerr ? soerr : EIO));
		tcp_step_done(r, c, T_CONNECT);
		memset(c->buf, 0x5a, sizeof(c->buf));
		if (send(c->fd, c->buf, XCHG_LEN, MSG_NOSIGNAL) != XCHG_LEN)
			die("tcp send: %s", strerror(errno));
		CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev));
		c->step = T_XCHG;
		return false;
	}
	if (c->step == T_CLOSE) {
		/* the server's FIN follows its echo: then close, keeping no TIME_WAIT here */
		n = recv(c->fd, c->buf, sizeof(c->buf), 0);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return false;
		if (n != 0)
			die("tcp close: %s", n < 0 ? strerror(errno) : "data after the echo");
		close(c->fd);
		tcp_step_done(r, c, T_CLOSE);
		return true;
	}
	n = recv(c->fd, c->buf + c->got, XCHG_LEN - c->got, 0);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return false;
	if (n <= 0)
		die("tcp exchange: %s", n ? strerror(errno) : "early EOF");
	c->got += (size_t)n;
	if (c->got < XCHG_LEN)
		return false;
	tcp_step_done(r, c, T_XCHG);
	c->step = T_CLOSE;
	return tcp_event(ep, r, c, events); /* the FIN may be there already */
}

static void tcp_round(const struct sockaddr_storage *dst, unsigned int n, unsigned int window,
		      struct round *r)
{
	struct tconn *slots = calloc(window, sizeof(*slots));
	unsigned int started = 0, done = 0;
	bool *busy = calloc(window, sizeof(*busy));
	uint64_t t0;
	int ep;

	if (!slots || !busy)
		die("out of memory");
	CHECK(ep = epoll_create1(EPOLL_CLOEXEC));
	if (r)
		memset(r, 0, sizeof(*r));
	t0 = now_ns();
	while (done < n) {
		struct epoll_event evs[64];
		int k;

		for (unsigned int i = 0; i < window && started < n; i++) {
			if (!busy[i]) {
				busy[i] = true;
				started++;
				tcp_start(ep, dst, &slots[i]);
			}
		}
		k = epoll_wait(ep, evs, 64, -1);
		if (k < 0 && errno == EINTR)
			continue;
		CHECK(k);
		for (int i = 0; i < k; i++) {
			struct tconn *c = evs[i].data.ptr;

			if (tcp_event(ep, r, c, evs[i].events)) {
				busy[c - slots] = false;
				done++;
			}
		}
	}
	if (r) {
		r->wall_ns = now_ns() - t0;
		r->conns = n;
	}
	close(ep);
	free(slots);
	free(busy);
}

/* ------------------------------------------------------------------------------------------ */
/* Client: report                                                                             */

static int cmp_rate(const void *a, const void *b)
{
	double x = round_rate(a), y = round_rate(b);

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static const struct round *median(struct round *r, unsigned int k)
{
	qsort(r, k, sizeof(*r), cmp_rate);
	return &r[k / 2];
}

static void print_steps(const char *title, const struct round *r, const char *const *names,
			int nsteps)
{
	printf("%s: %u connections in %.1f ms, **%.0f connections/s**\n\n", title, r->conns,
	       r->wall_ns / 1e6, round_rate(r));
	printf("| step | total ms | max ms | min us | us / conn |\n");
	printf("| --- | ---: | ---: | ---: | ---: |\n");
	for (int s = 0; s < nsteps; s++)
		printf("| %s | %.2f | %.2f | %.1f | %.1f |\n", names[s], r->st[s].sum / 1e6,
		       r->st[s].max / 1e6, r->st[s].min / 1e3,
		       r->conns ? r->st[s].sum / 1e3 / r->conns : 0);
	printf("\n");
}

static void client(const struct sockaddr_storage *rdst, const struct sockaddr_storage *tdst,
		   unsigned int n, const unsigned int *windows, int nwin, unsigned int rounds,
		   unsigned int warmup)
{
	static struct round tr[MAX_ROUNDS], rr[MAX_ROUNDS];
	double summary[3][8], ratio[MAX_ROUNDS];

	/* Warm-up: device opening, first-use allocations, the server's accept path. */
	if (g_modes & MODE_TCP)
		tcp_round(tdst, warmup, 1, NULL);
	if (g_modes & MODE_RDMA)
		rdma_round(rdst, warmup, 1, NULL);

	for (int w = 0; w < nwin; w++) {
		const struct round *mt, *mr;
		char title[96];

		for (unsigned int k = 0; k < rounds; k++) {
			fprintf(stderr, "window %u, round %u/%u\n", windows[w], k + 1, rounds);
			if (g_modes & MODE_TCP)
				tcp_round(tdst, n, windows[w], &tr[k]);
			if (g_modes & MODE_RDMA)
				rdma_round(rdst, n, windows[w], &rr[k]);
		}
		/* The ratio is taken per round (TCP and rdma_cm ran back to back, under the same
		 * background load), then its median: steadier than a ratio of two medians. */
		for (unsigned int k = 0; k < rounds; k++)
			ratio[k] = round_rate(&tr[k]) > 0 ? round_rate(&rr[k]) / round_rate(&tr[k]) : 0;
		qsort(ratio, rounds, sizeof(ratio[0]), cmp_double);
		summary[2][w] = ratio[rounds / 2];
		mt = median(tr, rounds);
		mr = median(rr, rounds);
		snprintf(title, sizeof(title), "TCP, %u in flight", windows[w]);
		if (g_modes & MODE_TCP)
			print_steps(title, mt, tcp_step_name, T_NSTEPS);
		snprintf(title, sizeof(title), "rdma_cm, %u in flight", windows[w]);
		if (g_modes & MODE_RDMA)
			print_steps(title, mr, rdma_step_name, R_NSTEPS);
		summary[0][w] = round_rate(mt);
		summary[1][w] = round_rate(mr);
	}
	if (g_modes != (MODE_TCP | MODE_RDMA))
		return;
	printf("| in flight | TCP conn/s | rdma_cm conn/s | rdma_cm / TCP (median of rounds) |\n");
	printf("| ---: | ---: | ---: | ---: |\n");
	for (int w = 0; w < nwin; w++)
		printf("| %u | %.0f | %.0f | %.2f |\n", windows[w], summary[0][w], summary[1][w],
		       summary[2][w]);
	printf("\n");
}

/* ------------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f, "usage: setuprate -s [-a addr] [-p port]\n"
		   "       setuprate -c [-a addr] [-p port] [-n conns] [-w w1,w2,...] [-r rounds]"
		   " [-W warmup]\n"
		   "                 [-T both|tcp|rdma]\n"
		   "defaults: addr 127.0.0.1, port 19700 (TCP baseline: port+1), -n 2000,"
		   " -w 1,64, -r 3, -W 200\n");
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1";
	unsigned int n = 2000, rounds = 3, warmup = 200, windows[8] = { 1, 64 };
	int port = 19700, nwin = 2, mode = 0, c;
	struct sockaddr_storage rdst, tdst;

	while ((c = getopt(argc, argv, "sca:p:n:w:r:W:T:h")) != -1) {
		switch (c) {
		case 's': mode = 's'; break;
		case 'c': mode = 'c'; break;
		case 'a': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': n = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'r': rounds = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'W': warmup = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'w': {
			char *s = optarg, *end;

			for (nwin = 0; nwin < 8 && *s; nwin++) {
				windows[nwin] = (unsigned int)strtoul(s, &end, 0);
				if (end == s || !windows[nwin] || windows[nwin] > MAX_WINDOW)
					die("bad window list %s", optarg);
				s = *end == ',' ? end + 1 : end;
			}
			break;
		}
		case 'T':
			g_modes = !strcmp(optarg, "tcp") ? MODE_TCP : !strcmp(optarg, "rdma") ? MODE_RDMA
							: MODE_TCP | MODE_RDMA;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!mode || port <= 0 || port > 65534 || !n || !rounds || rounds > MAX_ROUNDS) {
		usage(stderr);
		return 2;
	}
	raise_nofile();
	setvbuf(stdout, NULL, _IOLBF, 0);
	resolve(host, port, &rdst);
	resolve(host, port + 1, &tdst);
	if (mode == 's') {
		pthread_t t;

		g_role = "setuprate server";
		if (pthread_create(&t, NULL, rdma_server, &rdst))
			die("pthread_create failed");
		tcp_server(&tdst);
		return 0;
	}
	g_role = "setuprate client";
	client(&rdst, &tdst, n, windows, nwin, rounds, warmup);
	return 0;
}
