// SPDX-License-Identifier: MIT
/*
 * The port space through our librdmacm (QP-less ids, both sides in one process). Run by
 * cm_ports.sh inside a fresh network namespace whose ip_local_port_range it narrows, with
 * 10.9.0.1 and 10.9.0.2 on a veth end. Usage: cm_ports <case>; exit 0 = pass.
 *   share    active ids share ports as long as their 4-tuples differ; ss shows the tuples
 *   explicit explicit binds: EADDRINUSE / EADDRNOTAVAIL / REUSEADDR / TCP sockets / port 0
 *   eacces   a port below 1024 without CAP_NET_BIND_SERVICE
 *   retry    a tuple taken outside our process moves the id to another port at connect
 */
#include <fcntl.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../common/cm_test.h"

#define RANGE_LO 40000 /* cm_ports.sh sets ip_local_port_range to 40000-40001 */
#define RANGE_HI 40001

static int set_range(int lo, int hi)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "w");

	if (!f)
		return -1;
	fprintf(f, "%d %d\n", lo, hi);
	return fclose(f);
}

static int listen_on(struct rdma_event_channel *ch, const char *ip, int port,
		     struct rdma_cm_id **l)
{
	struct sockaddr_storage ss;

	CT_CHECK(rdma_create_id(ch, l, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(ct_addr(ip, port, &ss) == 0);
	CT_CHECK(rdma_bind_addr(*l, (struct sockaddr *)&ss) == 0);
	CT_CHECK(rdma_listen(*l, 0) == 0);
	return 0;
}

/* rdma_resolve_addr to ip:port; returns its errno (0: ADDR_RESOLVED arrived). */
static int resolve_to(struct rdma_event_channel *ch, const char *ip, int port,
		      struct rdma_cm_id **c)
{
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;

	if (rdma_create_id(ch, c, NULL, RDMA_PS_TCP) || ct_addr(ip, port, &ss))
		return -1;
	if (rdma_resolve_addr(*c, NULL, (struct sockaddr *)&ss, 2000))
		return errno;
	ev = ct_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 5000);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	return 0;
}

/* Route, connect, accept on the listener's channel, establish: a live QP-less pair. */
static int connect_pair(struct rdma_event_channel *chc, struct rdma_event_channel *chs,
			struct rdma_cm_id *c, struct rdma_cm_id **s)
{
	struct rdma_conn_param p = { .private_data = "p", .private_data_len = 1 };
	struct rdma_cm_event *ev;

	CT_CHECK(rdma_resolve_route(c, 2000) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_connect(c, &p) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_CONNECT_REQUEST, 5000);
	CT_CHECK(ev);
	*s = ev->id;
	rdma_ack_cm_event(ev);
	/* the passive side sees the port the active side reports */
	CT_CHECK(rdma_get_dst_port(*s) == rdma_get_src_port(c));
	CT_CHECK(rdma_accept(*s, &p) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_CONNECT_RESPONSE, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_establish(c) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_ESTABLISHED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	return 0;
}

/* Does `ss -Htn state established` list this tuple? */
static bool ss_has(int sport, int dport)
{
	char want[96], line[512];
	bool found = false;
	FILE *p;

	snprintf(want, sizeof(want), "127.0.0.1:%d 127.0.0.1:%d", sport, dport);
	p = popen("ss -Htn state established | awk '{print $3, $4}'", "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p))
		if (strncmp(line, want, strlen(want)) == 0 && (line[strlen(want)] == '\n'))
			found = true;
	pclose(p);
	return found;
}

#define NL 4  /* listeners */
#define PER 2 /* connections per listener: the whole two-port range */

static int t_share(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct rdma_cm_id *l[NL], *c[NL][PER], *s[NL][PER], *x;
	int i, j, sport;

	CT_CHECK(chs && chc);
	for (i = 0; i < NL; i++)
		if (listen_on(chs, "127.0.0.1", 41001 + i, &l[i]))
			return 1;
	/* 8 connections from a range of 2 ports: only tuple sharing makes this possible */
	for (i = 0; i < NL; i++) {
		for (j = 0; j < PER; j++) {
			CT_CHECK(resolve_to(chc, "127.0.0.1", 41001 + i, &c[i][j]) == 0);
			sport = ntohs(rdma_get_src_port(c[i][j]));
			CT_CHECK(sport >= RANGE_LO && sport <= RANGE_HI);
			if (connect_pair(chc, chs, c[i][j], &s[i][j]))
				return 1;
			CT_CHECK(ntohs(rdma_get_src_port(c[i][j])) == sport);
		}
		CT_CHECK(rdma_get_src_port(c[i][0]) != rdma_get_src_port(c[i][1]));
	}
	/* the host sees every RDMA connection with its real tuple */
	for (i = 0; i < NL; i++)
		for (j = 0; j < PER; j++)
			CT_CHECK(ss_has(ntohs(rdma_get_src_port(c[i][j])), 41001 + i));
	/* a third id to the same destination finds no unique tuple: EADDRNOTAVAIL, no event */
	CT_CHECK(resolve_to(chc, "127.0.0.1", 41001, &x) == EADDRNOTAVAIL);
	CT_CHECK(x->route.addr.src_addr.sa_family == 0 || rdma_get_src_port(x) == 0);
	/* an id that goes away gives its tuple back */
	sport = ntohs(rdma_get_src_port(c[0][0]));
	CT_CHECK(rdma_destroy_id(s[0][0]) == 0 && rdma_destroy_id(c[0][0]) == 0);
	CT_CHECK(rdma_destroy_id(x) == 0);
	CT_CHECK(resolve_to(chc, "127.0.0.1", 41001, &x) == 0);
	CT_CHECK(ntohs(rdma_get_src_port(x)) == sport);
	return 0; /* process exit closes the rest */
}

static int bind_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, const char *ip,
		   int port, bool reuse)
{
	struct sockaddr_storage ss;
	int one = 1;

	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP))
		return -1;
	if (reuse && rdma_set_option(*id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
				     sizeof(one)))
		return -1;
	ct_addr(ip, port, &ss);
	return rdma_bind_addr(*id, (struct sockaddr *)&ss) ? errno : 0;
}

/* A plain TCP socket (SO_REUSEADDR, as servers set it) bound to ip:port; errno or 0. */
static int tcp_bind(const char *ip, int port, int *fd)
{
	struct sockaddr_storage ss;
	int one = 1;

	ct_addr(ip, port, &ss);
	*fd = socket(ss.ss_family, SOCK_STREAM, 0);
	setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	return bind(*fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)) ? errno : 0;
}

static int t_explicit(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a, *b, *c, *d, *e, *f, *g, *act;
	int fd;

	CT_CHECK(ch);
	/* the same specific address twice; different specific addresses coexist */
	CT_CHECK(bind_id(ch, &a, "10.9.0.1", 42000, false) == 0);
	CT_CHECK(bind_id(ch, &b, "10.9.0.1", 42000, false) == EADDRINUSE);
	rdma_destroy_id(b);
	CT_CHECK(bind_id(ch, &b, "10.9.0.2", 42000, false) == 0);
	/* a wildcard or loopback address next to any other: EADDRNOTAVAIL */
	CT_CHECK(bind_id(ch, &c, "0.0.0.0", 42000, false) == EADDRNOTAVAIL);
	rdma_destroy_id(c);
	CT_CHECK(bind_id(ch, &c, "127.0.0.1", 42000, false) == EADDRNOTAVAIL);
	rdma_destroy_id(c);

	/* REUSEADDR on both: shared until one listens; a listener must be alone */
	CT_CHECK(bind_id(ch, &d, "10.9.0.1", 42001, true) == 0);
	CT_CHECK(bind_id(ch, &e, "10.9.0.1", 42001, true) == 0);
	CT_CHECK(rdma_listen(d, 0) == -1 && errno == EADDRINUSE);
	rdma_destroy_id(e);
	CT_CHECK(rdma_listen(d, 0) == 0);
	CT_CHECK(bind_id(ch, &e, "10.9.0.1", 42001, true) == EADDRINUSE); /* reuse cleared */
	rdma_destroy_id(e);
	CT_CHECK(bind_id(ch, &e, "10.9.0.1", 42001, false) == EADDRINUSE);
	rdma_destroy_id(e);

	/* our ports are the host's: a TCP server blocks an RDMA bind and vice versa */
	CT_CHECK(tcp_bind("0.0.0.0", 42002, &fd) == 0 && listen(fd, 1) == 0);
	CT_CHECK(bind_id(ch, &f, "10.9.0.1", 42002, false) == EADDRINUSE);
	rdma_destroy_id(f);
	close(fd);
	CT_CHECK(bind_id(ch, &f, "0.0.0.0", 42003, false) == 0 && rdma_listen(f, 0) == 0);
	CT_CHECK(tcp_bind("0.0.0.0", 42003, &fd) == EADDRINUSE);
	close(fd);

	/* port 0: the implicit range (two ports); an active id takes one of them, and an
	 * explicit wildcard bind, which has no destination, may not share it */
	CT_CHECK(resolve_to(ch, "127.0.0.1", 42003, &act) == 0);
	CT_CHECK(bind_id(ch, &g, "0.0.0.0", 0, false) == 0);
	CT_CHECK(ntohs(rdma_get_src_port(g)) >= RANGE_LO &&
		 ntohs(rdma_get_src_port(g)) <= RANGE_HI &&
		 rdma_get_src_port(g) != rdma_get_src_port(act));
	CT_CHECK(bind_id(ch, &c, "0.0.0.0", 0, false) == EADDRNOTAVAIL);
	rdma_destroy_id(c);

	/* a source port given to rdma_resolve_addr is an explicit bind */
	{
		struct sockaddr_storage src, dst;

		ct_addr("10.9.0.1", 42004, &src);
		ct_addr("10.9.0.2", 42003, &dst);
		CT_CHECK(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP) == 0);
		CT_CHECK(rdma_resolve_addr(c, (struct sockaddr *)&src, (struct sockaddr *)&dst,
					   2000) == 0);
		CT_CHECK(ntohs(rdma_get_src_port(c)) == 42004);
		CT_CHECK(bind_id(ch, &e, "10.9.0.1", 42004, false) == EADDRINUSE);
	}
	return 0; /* process exit closes the rest */
}

static int t_eacces(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a;

	CT_CHECK(ch);
	CT_CHECK(bind_id(ch, &a, "10.9.0.1", 80, false) == EACCES);
	CT_CHECK(rdma_destroy_id(a) == 0);
	CT_CHECK(bind_id(ch, &a, "10.9.0.1", 1024, false) == 0);
	return 0;
}

/* Until CLOCK_MONOTONIC_COARSE enters its next second, when port_space.c re-reads the
 * range (a wait for a state of the clock, bounded by one second). */
static void next_coarse_second(void)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t0);
	do {
		usleep(5000);
		clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	} while (t.tv_sec == t0.tv_sec);
}

static int t_retry(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct sockaddr_storage dst;
	struct rdma_cm_id *l, *c, *s;
	int fd;

	CT_CHECK(chs && chc);
	CT_CHECK(listen_on(chs, "127.0.0.1", 41001, &l) == 0);
	/* someone else's connection holds 127.0.0.1:40000 -> 127.0.0.1:41001 */
	CT_CHECK(set_range(RANGE_LO, RANGE_LO) == 0);
	next_coarse_second();
	CT_CHECK(tcp_bind("127.0.0.1", RANGE_LO, &fd) == 0);
	ct_addr("127.0.0.1", 41001, &dst);
	CT_CHECK(connect(fd, (struct sockaddr *)&dst, sizeof(struct sockaddr_in)) == 0);
	/* our table cannot see it: the only port in range is offered */
	CT_CHECK(resolve_to(chc, "127.0.0.1", 41001, &c) == 0);
	CT_CHECK(ntohs(rdma_get_src_port(c)) == RANGE_LO);
	/* with a second port in range, connect finds the tuple taken and moves there */
	CT_CHECK(set_range(RANGE_LO, RANGE_HI) == 0);
	next_coarse_second();
	if (connect_pair(chc, chs, c, &s))
		return 1;
	CT_CHECK(ntohs(rdma_get_src_port(c)) == RANGE_HI);
	CT_CHECK(ss_has(RANGE_HI, 41001) && ss_has(RANGE_LO, 41001));
	close(fd);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} tests[] = {
	{ "share", t_share },
	{ "explicit", t_explicit },
	{ "eacces", t_eacces },
	{ "retry", t_retry },
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s share|explicit|eacces|retry\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (strcmp(tests[i].name, argv[1]) == 0) {
			int r = tests[i].fn();

			printf("%s %s\n", r ? "FAIL" : "PASS", argv[1]);
			return r;
		}
	}
	fprintf(stderr, "unknown test %s\n", argv[1]);
	return 2;
}
