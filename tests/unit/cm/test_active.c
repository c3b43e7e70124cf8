// SPDX-License-Identifier: MIT
/*
 * The active side (cm/active.c) on its own, against a fake responder: a plain TCP socket of
 * the test that reads the MPA Request and answers by hand. The connection runs on the
 * engine with active.c's ops (struct sr_cm_conn_ops); each answer has its event: a Reply
 * CONNECT_RESPONSE (QP-less) and rdma_establish hands the socket to stream.c's ops, whose
 * end is DISCONNECTED; a rejecting Reply REJECTED; a close REJECTED -ECONNRESET; a bad frame
 * CONNECT_ERROR; silence UNREACHABLE when the deadline (SOFTRDMA_ACCEPT_TIMEOUT_MS, set
 * short here) reaches the ops' timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "cm_test.h"

/* The Reply deadline of this test (SOFTRDMA_ACCEPT_TIMEOUT_MS). */
#define REPLY_DEADLINE_MS "3000"

struct fixture {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	int lfd;  /* the fake responder's listener */
	int peer; /* its side of the connection */
	struct sr_mpa_params req;
};

/* An id connected (QP-less, private data "hi") to the fake responder, which has the Request. */
static int setup(void **state)
{
	static struct fixture f;
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .private_data = "hi", .private_data_len = 2 };
	uint8_t pd[SR_MPA_PD_MAX];
	struct sockaddr_in dst;
	struct sr_cm_conn *c;
	uint16_t port;
	size_t pd_len;

	memset(&f, 0, sizeof(f));
	f.lfd = cm_test_tcp_listen(&port);
	dst = cm_test_lo(port);
	f.ch = rdma_create_event_channel();
	assert_non_null(f.ch);
	assert_int_equal(rdma_create_id(f.ch, &f.id, NULL, RDMA_PS_TCP), 0);
	if (rdma_resolve_addr(f.id, NULL, (struct sockaddr *)&dst, CM_TEST_WAIT_MS)) {
		print_message("no soft iWARP device on loopback: %s\n", strerror(errno));
		return -1;
	}
	cm_test_expect(f.ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(f.id, CM_TEST_WAIT_MS), 0);
	cm_test_expect(f.ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_connect(f.id, &p), 0);

	f.peer = cm_test_tcp_accept(f.lfd);
	cm_test_read_frame(f.peer, false, &f.req, pd, &pd_len);
	assert_false(f.req.is_reply);
	assert_int_equal(pd_len, 2);
	assert_memory_equal(pd, "hi", 2);

	/* the connection is active.c's: its ops are the owner's calls */
	pthread_mutex_lock(&sr_cm_lock);
	c = to_sr_id(f.id)->conn;
	assert_non_null(c);
	assert_ptr_equal(c->ops->io, sr_cm_active_io);
	assert_ptr_equal(c->ops->timeout, sr_cm_active_timeout);
	assert_int_equal(to_sr_id(f.id)->state, SR_CM_CONNECTING);
	pthread_mutex_unlock(&sr_cm_lock);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(rdma_destroy_id(f->id), 0);
	rdma_destroy_event_channel(f->ch);
	if (f->peer >= 0)
		close(f->peer);
	close(f->lfd);
	return 0;
}

/* The fake responder's Reply to f->req: accepting or not, with private data. */
static void reply(struct fixture *f, bool reject, const char *pd)
{
	struct sr_mpa_local loc = { .ird = 1, .ord = 1 };
	uint8_t frame[SR_MPA_FRAME_MAX];
	struct sr_mpa_params rep;
	struct sr_mpa_conn mpa;
	ssize_t n;

	assert_int_equal(sr_mpa_respond(&f->req, &loc, &rep, &mpa), 0);
	rep.reject = reject;
	n = sr_mpa_build_frame(frame, sizeof(frame), &rep, pd, strlen(pd));
	assert_true(n > 0);
	cm_test_send(f->peer, frame, (size_t)n);
}

static enum sr_cm_state id_state(struct rdma_cm_id *id)
{
	return cm_test_state(to_sr_id(id));
}

/* A Reply: CONNECT_RESPONSE with its private data; establish makes it stream.c's. */
static void reply_then_establish(void **state)
{
	struct fixture *f = *state;

	reply(f, false, "ok");
	assert_int_equal(cm_test_expect_pd(f->ch, RDMA_CM_EVENT_CONNECT_RESPONSE, "ok"), 0);
	assert_int_equal(id_state(f->id), SR_CM_RESPONDED);

	assert_int_equal(rdma_establish(f->id), 0);
	assert_int_equal(id_state(f->id), SR_CM_ESTABLISHED);
	cm_test_wait_locked(cm_test_stream_owned, f->id);
	/* the peer ends the stream: stream.c's io reports it */
	close(f->peer);
	f->peer = -1;
	cm_test_expect(f->ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(id_state(f->id), SR_CM_DISCONNECTED);
}

/* A rejecting Reply: REJECTED -ECONNREFUSED with the private data; the id FAILED. */
static void reject(void **state)
{
	struct fixture *f = *state;

	reply(f, true, "no");
	assert_int_equal(cm_test_expect_pd(f->ch, RDMA_CM_EVENT_REJECTED, "no"), -ECONNREFUSED);
	assert_int_equal(id_state(f->id), SR_CM_FAILED);
	assert_null(to_sr_id(f->id)->conn);
}

/* The responder drops us: REJECTED -ECONNRESET. */
static void peer_closes(void **state)
{
	struct fixture *f = *state;

	close(f->peer);
	f->peer = -1;
	assert_int_equal(cm_test_expect(f->ch, RDMA_CM_EVENT_REJECTED), -ECONNRESET);
	assert_int_equal(id_state(f->id), SR_CM_FAILED);
}

/* Not a Reply: CONNECT_ERROR, and the socket is closed with a FIN. */
static void bad_reply(void **state)
{
	struct fixture *f = *state;
	uint8_t junk[SR_MPA_RR_HDR_LEN];

	memset(junk, 'x', sizeof(junk));
	cm_test_send(f->peer, junk, sizeof(junk));
	assert_int_equal(cm_test_expect(f->ch, RDMA_CM_EVENT_CONNECT_ERROR), SR_MPA_EBADKEY);
	assert_int_equal(id_state(f->id), SR_CM_FAILED);
	cm_test_expect_eof(f->peer);
}

/* No answer: the deadline reaches active.c's timeout op, UNREACHABLE -ETIMEDOUT. */
static void no_reply(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(cm_test_expect(f->ch, RDMA_CM_EVENT_UNREACHABLE), -ETIMEDOUT);
	assert_int_equal(id_state(f->id), SR_CM_FAILED);
	cm_test_expect_eof(f->peer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(reply_then_establish, setup, teardown),
		cmocka_unit_test_setup_teardown(reject, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(no_reply, setup, teardown),
	};

	/* before any thread reads it */
	setenv("SOFTRDMA_ACCEPT_TIMEOUT_MS", REPLY_DEADLINE_MS, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
