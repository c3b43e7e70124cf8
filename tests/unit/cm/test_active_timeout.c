// SPDX-License-Identifier: MIT
/*
 * The initiator's Reply deadline (cm/active.c, sr_cm_active_timeout) when the Reply is in
 * the socket already. On a loaded host the engine thread runs late, and an expired timer can
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
#include <poll.h>
#include <string.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reply_before_timer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
