// SPDX-License-Identifier: MIT
/* Helpers shared by the rdma_cm integration test programs (declared in cm_test.h). */
#include <dirent.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cm_test.h"

const char *ip = "127.0.0.1";
int ct_port;

int quiet(struct rdma_event_channel *ch, int ms)
{
	struct rdma_cm_event *ev = ct_get(ch, ms);

	if (ev) {
		fprintf(stderr, "  unexpected %s status %d\n", rdma_event_str(ev->event),
			ev->status);
		rdma_ack_cm_event(ev);
		return 1;
	}
	return 0;
}

int listener(struct rdma_event_channel *ch, struct rdma_cm_id **l, int *port)
{
	struct sockaddr_storage ss;

	CT_CHECK(rdma_create_id(ch, l, (void *)0x1234, RDMA_PS_TCP) == 0);
	CT_CHECK(ct_addr(ip, 0, &ss) == 0);
	CT_CHECK(rdma_bind_addr(*l, (struct sockaddr *)&ss) == 0);
	CT_CHECK(rdma_listen(*l, 8) == 0);
	*port = ntohs(rdma_get_src_port(*l));
	CT_CHECK(*port != 0);
	return 0;
}

int resolve(struct rdma_event_channel *ch, int port, struct rdma_cm_id **c)
{
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;

	CT_CHECK(rdma_create_id(ch, c, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(ct_addr(ip, port, &ss) == 0);
	CT_CHECK(rdma_resolve_addr(*c, NULL, (struct sockaddr *)&ss, 2000) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 2000);
	CT_CHECK(ev && ev->id == *c && ev->status == 0);
	rdma_ack_cm_event(ev);
	CT_CHECK((*c)->verbs != NULL && (*c)->port_num == 1);
	CT_CHECK(ntohs(rdma_get_dst_port(*c)) == port);
	CT_CHECK(rdma_get_src_port(*c) != 0);
	CT_CHECK(rdma_resolve_route(*c, 2000) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 2000);
	CT_CHECK(ev && ev->id == *c);
	rdma_ack_cm_event(ev);
	return 0;
}

/* listen, connect with private data, CONNECT_REQUEST; *s is the request id */
int request(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
		   struct rdma_cm_id **l, struct rdma_cm_id **c, struct rdma_cm_id **s)
{
	struct rdma_conn_param p = { .private_data = "hello", .private_data_len = 6,
				     .responder_resources = 1, .initiator_depth = 2,
				     .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_event *ev;
	int port;

	if (listener(chs, l, &port) || resolve(chc, port, c))
		return 1;
	CT_CHECK(rdma_connect(*c, &p) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CT_CHECK(ev != NULL);
	CT_CHECK(ev->listen_id == *l && ev->id != *l && ev->status == 0);
	CT_CHECK(ev->param.conn.private_data_len == 6 &&
		 memcmp(ev->param.conn.private_data, "hello", 6) == 0);
	/* the peer's IRD (1) and ORD (2), iWARP style; MPA rev 1 carries none */
	if (!getenv("SOFTRDMA_MPA_REV") || atoi(getenv("SOFTRDMA_MPA_REV")) != 1)
		CT_CHECK(ev->param.conn.initiator_depth == 1 &&
			 ev->param.conn.responder_resources == 2);
	*s = ev->id;
	CT_CHECK((*s)->verbs != NULL && (*s)->port_num == 1);
	CT_CHECK((*s)->context == (void *)0x1234 && (*s)->channel == chs);
	CT_CHECK((*s)->ps == RDMA_PS_TCP && (*s)->qp_type == IBV_QPT_RC);
	CT_CHECK(rdma_get_dst_port(*s) == rdma_get_src_port(*c));
	CT_CHECK(rdma_get_src_port(*s) == htons(port));
	CT_CHECK((*s)->route.addr.src_addr.sa_family == (*c)->route.addr.dst_addr.sa_family);
	rdma_ack_cm_event(ev);
	return 0;
}


int raw_listener(int *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd;

	ct_addr(ip, 0, &ss);
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, ss.ss_family == AF_INET ?
			   sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) ||
	    listen(fd, 4) || getsockname(fd, (struct sockaddr *)&ss, &len))
		return -1;
	*port = ntohs(((struct sockaddr_in *)&ss)->sin_port); /* same offset for v6 */
	return fd;
}

int raw_connect(int port)
{
	struct sockaddr_storage ss;
	int fd;

	ct_addr(ip, port, &ss);
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, ss.ss_family == AF_INET ?
			      sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)))
		return -1;
	return fd;
}


static bool same_sa(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	size_t len = b->sa_family == AF_INET ? sizeof(struct sockaddr_in)
					     : sizeof(struct sockaddr_in6);

	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET6) /* the scope id may differ in what getsockname says */
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0 &&
		       ((const struct sockaddr_in6 *)a)->sin6_port ==
			       ((const struct sockaddr_in6 *)b)->sin6_port;
	return memcmp(a, b, len) == 0;
}

int ct_conn_fd(struct rdma_cm_id *id)
{
	struct sockaddr *local = rdma_get_local_addr(id), *peer = rdma_get_peer_addr(id);
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int found = -1;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL && found < 0) {
		struct sockaddr_storage l, p;
		socklen_t ll = sizeof(l), pl = sizeof(p);
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		if (getsockname(fd, (struct sockaddr *)&l, &ll) ||
		    getpeername(fd, (struct sockaddr *)&p, &pl))
			continue;
		if (same_sa(&l, local) && same_sa(&p, peer))
			found = fd;
	}
	closedir(d);
	return found;
}

long ct_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ct_pair_request(struct rdma_event_channel **chs, struct rdma_event_channel **chc,
		    struct rdma_cm_id **l, struct rdma_cm_id **c, struct rdma_cm_id **s)
{
	*chs = rdma_create_event_channel();
	*chc = rdma_create_event_channel();
	CT_CHECK(*chs && *chc);
	return request(*chs, *chc, l, c, s);
}

int ct_pair_establish(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
		      struct rdma_cm_id *c, struct rdma_cm_id *s)
{
	struct rdma_cm_event *ev;

	CT_CHECK(rdma_accept(s, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_CONNECT_RESPONSE, 3000);
	CT_CHECK(ev && ev->id == c);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_establish(c) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_ESTABLISHED, 3000);
	CT_CHECK(ev && ev->id == s);
	rdma_ack_cm_event(ev);
	return 0;
}

int ct_pair_disconnect(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
		       struct rdma_cm_id *c, struct rdma_cm_id *s)
{
	struct rdma_cm_event *ev;

	CT_CHECK(rdma_disconnect(c) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_DISCONNECTED, 5000);
	CT_CHECK(ev && ev->id == s);
	rdma_ack_cm_event(ev);
	ev = ct_expect(chc, RDMA_CM_EVENT_DISCONNECTED, 5000);
	CT_CHECK(ev && ev->id == c);
	rdma_ack_cm_event(ev);
	return 0;
}

void ct_pair_destroy(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
		     struct rdma_cm_id *l, struct rdma_cm_id *c, struct rdma_cm_id *s)
{
	if (s)
		rdma_destroy_id(s);
	if (c)
		rdma_destroy_id(c);
	if (l)
		rdma_destroy_id(l);
	rdma_destroy_event_channel(chs);
	rdma_destroy_event_channel(chc);
}

int ct_pair_teardown(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
		     struct rdma_cm_id *l, struct rdma_cm_id *c, struct rdma_cm_id *s)
{
	if (ct_pair_disconnect(chs, chc, c, s))
		return 1;
	ct_pair_destroy(chs, chc, l, c, s);
	return 0;
}

int ct_main(int argc, char **argv, const struct ct_test *tests, size_t n)
{
	struct sockaddr_storage ss;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: %s <test> [address [port [...]]]\n", argv[0]);
		return 2;
	}
	if (argc > 2)
		ip = argv[2];
	if (argc > 3)
		ct_port = atoi(argv[3]);
	if (strcmp(ip, "::1") == 0) {
		/* skip where IPv6 is off */
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		ct_addr(ip, 0, &ss);
		if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in6))) {
			printf("SKIP: %s not usable\n", ip);
			return 77;
		}
		close(fd);
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(tests[i].name, argv[1]) == 0) {
			int r = tests[i].fn();

			printf("%s %s (%s)\n", r ? "FAIL" : "PASS", argv[1], ip);
			return r;
		}
	}
	fprintf(stderr, "unknown test %s\n", argv[1]);
	return 2;
}
