// SPDX-License-Identifier: MIT
/*
 * The initiator's deadlines (cm/active.c, sr_cm_active_timeout) when what they wait for is
 * there already: the Reply in the socket (reply_before_timer), or the TCP connection up
 * (connect_before_timer). On a loaded host the engine thread runs late, and an expired timer can
 * be dispatched before the socket's own event although the Reply arrived in time (seen near
 * port exhaustion, issue 15 item 7: UNREACHABLE here, DISCONNECTED at a responder that had
 * accepted in time). The test makes that order certain: the connection is taken off the
 * engine, the responder accepts, and once the Reply is readable the timeout handler runs.
 * It must take the Reply (CONNECT_RESPONSE for this QP-less connect), not report
 * UNREACHABLE. Every wait is bounded (WAIT_MS).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cm/cm_priv.h"

#define WAIT_MS 10000

/* The next event on ch, within WAIT_MS; fails the test otherwise. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev = NULL;

	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	return ev;
}

static void expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = next_event(ch);

	if (ev->event != type)
		fail_msg("got %s (status %d), expected %s", rdma_event_str(ev->event), ev->status,
			 rdma_event_str(type));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
}

static void reply_before_timer(void **state)
{
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *lid, *cid, *req;
	struct rdma_cm_event *ev;
	struct sr_cm_conn *c;
	struct pollfd pf;

	(void)state;
	assert_non_null(sch);
	assert_non_null(cch);
	assert_int_equal(rdma_create_id(sch, &lid, NULL, RDMA_PS_TCP), 0);
	if (rdma_bind_addr(lid, (struct sockaddr *)&a)) {
		print_message("no soft iWARP device on loopback: %s\n", strerror(errno));
		skip();
	}
	assert_int_equal(rdma_listen(lid, 8), 0);
	a.sin_port = rdma_get_src_port(lid);

	assert_int_equal(rdma_create_id(cch, &cid, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(cid, NULL, (struct sockaddr *)&a, WAIT_MS), 0);
	expect_event(cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(cid, WAIT_MS), 0);
	expect_event(cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_connect(cid, &p), 0); /* no QP: a QP-less connection */

	ev = next_event(sch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	req = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);

	/* The Request is out (the responder has it): the initiator waits for the Reply. Take
	 * it off the engine, as a late engine thread would not have looked at it yet. */
	pthread_mutex_lock(&sr_cm_lock);
	c = to_sr_id(cid)->conn;
	assert_non_null(c);
	assert_int_equal(c->phase, SR_CONN_READ_REPLY);
	pthread_mutex_unlock(&sr_cm_lock);
	sr_cm_conn_quiesce(c);

	assert_int_equal(rdma_accept(req, &p), 0);
	pf = (struct pollfd){ .fd = c->sock.fd, .events = POLLIN };
	assert_int_equal(poll(&pf, 1, WAIT_MS), 1); /* the Reply is in the socket */

	/* Now the deadline: the Reply is there, so the connection goes on. */
	sr_cm_active_timeout(c);
	expect_event(cch, RDMA_CM_EVENT_CONNECT_RESPONSE);

	assert_int_equal(rdma_destroy_id(cid), 0);
	assert_int_equal(rdma_destroy_id(req), 0);
	assert_int_equal(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* Wait (within WAIT_MS) until the listener lfd holds n connections nobody accepted yet. */
static void wait_accept_queue(int lfd, unsigned int n)
{
	const struct timespec tick = { .tv_nsec = 1000000 };
	struct tcp_info ti;
	socklen_t len;
	int ms;

	for (ms = 0; ms < WAIT_MS; ms++) {
		len = sizeof(ti);
		/* a listener's tcpi_unacked is its accept queue's length */
		assert_int_equal(getsockopt(lfd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
		if (ti.tcpi_unacked >= n)
			return;
		nanosleep(&tick, NULL);
	}
	fail_msg("the accept queue never held %u connections", n);
}

/* Accept from lfd, within WAIT_MS. */
static int accept_within(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	assert_int_equal(poll(&p, 1, WAIT_MS), 1);
	fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);
	return fd;
}

/* Read exactly len bytes from fd, within WAIT_MS each; fails the test at EOF. */
static void read_all(int fd, uint8_t *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		assert_int_equal(poll(&p, 1, WAIT_MS), 1);
		n = recv(fd, buf + off, len - off, 0);
		if (n <= 0)
			fail_msg("the initiator's Request did not come (recv %zd after %zu bytes)", n,
				 off);
		off += (size_t)n;
	}
}

/*
 * The connect's deadline (SR_CM_CONNECT_TIMEOUT_MS) expires as the TCP connection comes
 * up, its EPOLLOUT not dispatched yet: the Request must go out and the Reply be taken, not
 * UNREACHABLE reported. The responder is a plain TCP listener whose accept queue is full,
 * so the initiator's SYN is dropped and its connect stays in progress until the test makes
 * room; the socket stays on the engine, asking for no event, until the deadline has run.
 */
static void connect_before_timer(void **state)
{
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
	struct sr_mpa_local loc = { .ird = 1, .ord = 1 };
	uint8_t buf[SR_MPA_FRAME_MAX];
	struct sr_mpa_params req, rep;
	struct sockaddr_in mine, peer;
	struct sr_mpa_hdr_info hi;
	struct sr_mpa_conn mconn;
	int lfd, fill[2], fd, i;
	const uint8_t *ulp;
	struct rdma_cm_id *cid;
	struct sr_cm_conn *c;
	struct pollfd pf;
	socklen_t alen;
	size_t ulp_len;
	ssize_t n;
	int pd;

	(void)state;
	assert_non_null(cch);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 1), 0); /* an accept queue of 2 */
	alen = sizeof(a);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	for (i = 0; i < 2; i++) {
		fill[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fill[i] >= 0);
		assert_int_equal(connect(fill[i], (struct sockaddr *)&a, sizeof(a)), 0);
	}
	wait_accept_queue(lfd, 2); /* full: the next SYN is dropped */

	assert_int_equal(rdma_create_id(cch, &cid, NULL, RDMA_PS_TCP), 0);
	if (rdma_resolve_addr(cid, NULL, (struct sockaddr *)&a, WAIT_MS)) {
		print_message("no soft iWARP device on loopback: %s\n", strerror(errno));
		skip();
	}
	expect_event(cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(cid, WAIT_MS), 0);
	expect_event(cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_connect(cid, &p), 0); /* no QP: a QP-less connection */

	/* The SYN was dropped: the connect is in progress. Keep the engine from seeing the
	 * socket become writable, as a late engine thread would not have looked yet. */
	pthread_mutex_lock(&sr_cm_lock);
	c = to_sr_id(cid)->conn;
	assert_non_null(c);
	assert_int_equal(c->phase, SR_CONN_TCP_CONNECT);
	pthread_mutex_unlock(&sr_cm_lock);
	assert_int_equal(sr_engine_mod(&c->sock, 0), 0);

	/* Room in the queue: the retransmitted SYN (1 s) completes the connect. */
	close(accept_within(lfd));
	pf = (struct pollfd){ .fd = c->sock.fd, .events = POLLOUT };
	assert_int_equal(poll(&pf, 1, WAIT_MS), 1);
	assert_int_equal(pf.revents, POLLOUT);

	alen = sizeof(mine);
	assert_int_equal(getsockname(c->sock.fd, (struct sockaddr *)&mine, &alen), 0);

	/* Now the deadline: the connection is up, so the Request goes out (c may be gone). */
	sr_cm_active_timeout(c);

	/* the initiator's connection is the queue's second, after the other filler's */
	for (fd = -1, i = 0; fd < 0 && i < 2; i++) {
		int f = accept_within(lfd);

		alen = sizeof(peer);
		assert_int_equal(getpeername(f, (struct sockaddr *)&peer, &alen), 0);
		if (peer.sin_port == mine.sin_port)
			fd = f;
		else
			close(f);
	}
	assert_true(fd >= 0);

	/* Answer the Request as a responder would. */
	read_all(fd, buf, SR_MPA_RR_HDR_LEN);
	pd = sr_mpa_parse_header(buf, false, &hi);
	assert_true(pd >= 0);
	read_all(fd, buf + SR_MPA_RR_HDR_LEN, (size_t)pd);
	assert_int_equal(sr_mpa_parse_pd(&hi, buf + SR_MPA_RR_HDR_LEN, (size_t)pd, &req, &ulp,
					 &ulp_len), 0);
	assert_int_equal(sr_mpa_respond(&req, &loc, &rep, &mconn), 0);
	n = sr_mpa_build_frame(buf, sizeof(buf), &rep, NULL, 0);
	assert_true(n > 0);
	assert_int_equal(send(fd, buf, (size_t)n, MSG_NOSIGNAL), n);
	expect_event(cch, RDMA_CM_EVENT_CONNECT_RESPONSE);

	assert_int_equal(rdma_destroy_id(cid), 0);
	close(fd);
	close(fill[0]);
	close(fill[1]);
	close(lfd);
	rdma_destroy_event_channel(cch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reply_before_timer),
		cmocka_unit_test(connect_before_timer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
