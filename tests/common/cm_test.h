/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the rdma_cm integration test programs (tests/integration/cm). */
#ifndef CM_TEST_H
#define CM_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#define CT_FAIL(...)                                                       \
	do {                                                               \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
		fprintf(stderr, __VA_ARGS__);                              \
		fprintf(stderr, "\n");                                     \
		return 1;                                                  \
	} while (0)

#define CT_CHECK(cond)                                                     \
	do {                                                               \
		if (!(cond))                                               \
			CT_FAIL("%s (errno %d %s)", #cond, errno, strerror(errno)); \
	} while (0)

/* Next event on ch within ms, or NULL (timeout). */
static inline struct rdma_cm_event *ct_get(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) <= 0)
		return NULL;
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/* Wait for an event of the given type; prints what came instead. */
static inline struct rdma_cm_event *ct_expect(struct rdma_event_channel *ch,
					      enum rdma_cm_event_type type, int ms)
{
	struct rdma_cm_event *ev = ct_get(ch, ms);

	if (!ev) {
		fprintf(stderr, "  no event (wanted %s)\n", rdma_event_str(type));
		return NULL;
	}
	if (ev->event != type) {
		fprintf(stderr, "  got %s status %d (wanted %s)\n", rdma_event_str(ev->event),
			ev->status, rdma_event_str(type));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

/*
 * A new id on ch resolved to dst (from src, NULL: the route's source; resolve timeout ms,
 * ADDR_RESOLVED awaited up to wait_ms) and then its route (ROUTE_RESOLVED within 5 s).
 */
static inline int ct_resolve_both(struct rdma_event_channel *ch, struct rdma_cm_id **c,
				  const struct sockaddr *src, const struct sockaddr *dst, int ms,
				  int wait_ms)
{
	struct rdma_cm_event *ev;

	CT_CHECK(rdma_create_id(ch, c, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(rdma_resolve_addr(*c, (struct sockaddr *)src, (struct sockaddr *)dst, ms) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, wait_ms);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_resolve_route(*c, 2000) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	return 0;
}

/* Fill a sockaddr from text + port. */
static inline int ct_addr(const char *ip, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		char buf[128], *pct;

		snprintf(buf, sizeof(buf), "%s", ip);
		pct = strchr(buf, '%');
		if (pct) {
			*pct = 0;
			s6->sin6_scope_id = if_nametoindex(pct + 1);
		}
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, buf, &s6->sin6_addr) == 1 ? 0 : -1;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		return inet_pton(AF_INET, ip, &s4->sin_addr) == 1 ? 0 : -1;
	}
}

/* ---- cm_test.c ---- */

/* The address every test uses (argv[2] of the programs). */
extern const char *ip;
/* The port argument (argv[3]) of the two-process cases, 0 without one. */
extern int ct_port;

/* 0 when no event arrives on ch within ms; else prints it and returns 1. */
int quiet(struct rdma_event_channel *ch, int ms);
/* A listener bound to ip, port chosen by the system (*port), backlog 8, context 0x1234. */
int listener(struct rdma_event_channel *ch, struct rdma_cm_id **l, int *port);
/* A new id on ch resolved (address and route) to ip:port. */
int resolve(struct rdma_event_channel *ch, int port, struct rdma_cm_id **c);
/* listen, connect with private data "hello", CONNECT_REQUEST; *s is the request id. */
int request(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
	    struct rdma_cm_id **l, struct rdma_cm_id **c, struct rdma_cm_id **s);
/* A plain TCP listener on ip (fd, *port), and a plain TCP connection to ip:port. */
int raw_listener(int *port);
int raw_connect(int port);
struct ct_test {
	const char *name;
	int (*fn)(void);
};
/* argv: <test> [address [port ...]]: sets ip and ct_port, skips (77) where ::1 is unusable, runs the test. */
int ct_main(int argc, char **argv, const struct ct_test *tests, size_t n);
/*
 * The initiator's wait for its MPA Reply and the passive side's for the application's answer
 * (SOFTRDMA_ACCEPT_TIMEOUT_MS, whose default is 60 s): the tests that run into it set it
 * lower in their environment to stay short.
 */
static inline long ct_accept_bound_ms(void)
{
	const char *v = getenv("SOFTRDMA_ACCEPT_TIMEOUT_MS");
	long ms = v ? strtol(v, NULL, 0) : 0;

	return ms >= 1 && ms <= 600000 ? ms : 60000;
}
/* The process's TCP socket whose ends are the id's local and peer addresses, or -1. */
int ct_conn_fd(struct rdma_cm_id *id);
/* CLOCK_MONOTONIC in milliseconds. */
long ct_now_ms(void);

/*
 * A QP-less pair of ids, both sides in this process: the server's channel chs with its
 * listener l and request id s, the client's channel chc with its id c.
 */
/* Both channels, then request() (listen, connect with "hello", CONNECT_REQUEST). */
int ct_pair_request(struct rdma_event_channel **chs, struct rdma_event_channel **chc,
		    struct rdma_cm_id **l, struct rdma_cm_id **c, struct rdma_cm_id **s);
/* Accept the request without private data and run both sides to ESTABLISHED. */
int ct_pair_establish(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
		      struct rdma_cm_id *c, struct rdma_cm_id *s);
/* Disconnect from c: one DISCONNECTED on each side. */
int ct_pair_disconnect(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
		       struct rdma_cm_id *c, struct rdma_cm_id *s);
/* Destroy s, c and l (each where not NULL), then both channels. */
void ct_pair_destroy(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
		     struct rdma_cm_id *l, struct rdma_cm_id *c, struct rdma_cm_id *s);
/* ct_pair_disconnect, then ct_pair_destroy. */
int ct_pair_teardown(struct rdma_event_channel *chs, struct rdma_event_channel *chc,
		     struct rdma_cm_id *l, struct rdma_cm_id *c, struct rdma_cm_id *s);

#endif
