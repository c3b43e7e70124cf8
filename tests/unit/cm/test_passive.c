// SPDX-License-Identifier: MIT
/*
 * The passive side (cm/passive.c) on its own, against a fake initiator: a plain TCP socket
 * of the test that sends an MPA Request by hand. A half-open handshake belongs to the
 * listener (its list and count, passive.c's ops); a complete Request hands the connection
 * over to a new request id (CONNECT_REQUEST with the private data) and leaves the listener;
 * accept answers with a Reply and gives the QP-less stream to stream.c; reject answers with
 * a rejecting Reply and no local event; a bad frame or the Request's deadline drops the
 * socket silently; the held request's deadline rejects it (accept then fails ECONNRESET);
 * a listener destroyed with a request nobody fetched rejects it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cm_test.h"

struct fixture {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid;
	struct sr_cm_id *l;
	uint16_t port;
	int cli; /* the fake initiator's socket */
};

static int setup(void **state)
{
	static struct fixture f;
	struct sockaddr_in a = cm_test_lo(0);

	memset(&f, 0, sizeof(f));
	f.ch = rdma_create_event_channel();
	assert_non_null(f.ch);
	assert_int_equal(rdma_create_id(f.ch, &f.lid, NULL, RDMA_PS_TCP), 0);
	if (rdma_bind_addr(f.lid, (struct sockaddr *)&a)) {
		print_message("no soft iWARP device on loopback: %s\n", strerror(errno));
		return -1;
	}
	assert_int_equal(rdma_listen(f.lid, 4), 0);
	f.l = to_sr_id(f.lid);
	f.port = rdma_get_src_port(f.lid);
	f.cli = cm_test_tcp_connect(f.port);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->lid)
		assert_int_equal(rdma_destroy_id(f->lid), 0);
	rdma_destroy_event_channel(f->ch);
	close(f->cli);
	return 0;
}

static bool one_handshake(void *arg)
{
	struct sr_cm_id *l = arg;

	return l->handshakes == 1;
}

static bool no_handshake(void *arg)
{
	struct sr_cm_id *l = arg;

	return l->handshakes == 0 && sr_list_empty(&l->hs_list);
}

/* Part of a Request: wait until the listener holds the handshake; returns the frame. */
static size_t half_request(struct fixture *f, uint8_t *frame, size_t cap, const char *pd)
{
	size_t n = cm_test_request(frame, cap, pd);
	struct sr_cm_conn *c;

	cm_test_send(f->cli, frame, 10);
	cm_test_wait_locked(one_handshake, f->l);
	pthread_mutex_lock(&sr_cm_lock);
	c = sr_list_first(&f->l->hs_list, struct sr_cm_conn, node);
	assert_ptr_equal(c->listener, f->l);
	assert_int_equal(c->phase, SR_CONN_READ_REQ);
	assert_ptr_equal(c->ops->io, sr_cm_passive_io);
	assert_ptr_equal(c->ops->timeout, sr_cm_passive_timeout);
	pthread_mutex_unlock(&sr_cm_lock);
	return n;
}

/* The whole Request: the request id it made, its CONNECT_REQUEST fetched and acked. */
static struct rdma_cm_id *request(struct fixture *f, const char *pd)
{
	uint8_t frame[SR_MPA_FRAME_MAX];
	struct rdma_cm_event *ev;
	struct rdma_cm_id *req;
	struct sr_cm_conn *c;
	size_t n;

	n = half_request(f, frame, sizeof(frame), pd);
	cm_test_send(f->cli, frame + 10, n - 10);
	ev = cm_test_next_event(f->ch);
	assert_int_equal(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(ev->listen_id, f->lid);
	assert_int_equal(ev->param.conn.private_data_len, strlen(pd));
	assert_memory_equal(ev->param.conn.private_data, pd, strlen(pd));
	req = ev->id;
	assert_int_equal(rdma_ack_cm_event(ev), 0);

	/* the connection left the listener for the request id */
	pthread_mutex_lock(&sr_cm_lock);
	assert_true(no_handshake(f->l));
	c = to_sr_id(req)->conn;
	assert_non_null(c);
	assert_null(c->listener);
	assert_ptr_equal(c->id, to_sr_id(req));
	assert_int_equal(c->phase, SR_CONN_HELD);
	assert_int_equal(to_sr_id(req)->state, SR_CM_CONN_RECV);
	pthread_mutex_unlock(&sr_cm_lock);
	return req;
}

/* Accept: a Reply with our private data, ESTABLISHED, the stream is stream.c's. */
static void request_then_accept(void **state)
{
	struct fixture *f = *state;
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .private_data = "yes", .private_data_len = 3 };
	struct rdma_cm_id *req = request(f, "hello");
	uint8_t pd[SR_MPA_PD_MAX];
	struct sr_mpa_params rep;
	size_t pd_len;

	assert_int_equal(rdma_accept(req, &p), 0);
	cm_test_read_frame(f->cli, true, &rep, pd, &pd_len);
	assert_true(rep.is_reply);
	assert_false(rep.reject);
	assert_int_equal(pd_len, 3);
	assert_memory_equal(pd, "yes", 3);
	cm_test_expect(f->ch, RDMA_CM_EVENT_ESTABLISHED);
	cm_test_wait_locked(cm_test_stream_owned, req);
	shutdown(f->cli, SHUT_WR);
	cm_test_expect(f->ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(rdma_destroy_id(req), 0);
}

/* Reject: the initiator reads a rejecting Reply with the private data; no local event. */
static void request_then_reject(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_id *req = request(f, "hello");
	uint8_t pd[SR_MPA_PD_MAX];
	struct sr_mpa_params rep;
	size_t pd_len;

	assert_int_equal(rdma_reject(req, "no", 2), 0);
	cm_test_read_frame(f->cli, true, &rep, pd, &pd_len);
	assert_true(rep.reject);
	assert_int_equal(pd_len, 2);
	assert_memory_equal(pd, "no", 2);
	cm_test_expect_eof(f->cli);
	cm_test_no_event(f->ch, 50);
	assert_int_equal(rdma_destroy_id(req), 0);
}

/* Not a Request: the socket is dropped (a FIN), the application hears nothing. */
static void bad_request_dropped(void **state)
{
	struct fixture *f = *state;
	uint8_t junk[SR_MPA_RR_HDR_LEN];

	memset(junk, 'x', sizeof(junk));
	cm_test_send(f->cli, junk, sizeof(junk));
	cm_test_expect_eof(f->cli);
	cm_test_wait_locked(no_handshake, f->l);
	cm_test_no_event(f->ch, 50);
}

/* The Request's deadline (the ops' timeout in READ_REQ) drops the half-open socket. */
static void request_deadline(void **state)
{
	struct fixture *f = *state;
	uint8_t frame[SR_MPA_FRAME_MAX];
	struct sr_cm_conn *c;

	half_request(f, frame, sizeof(frame), "hello");
	pthread_mutex_lock(&sr_cm_lock);
	c = sr_list_first(&f->l->hs_list, struct sr_cm_conn, node);
	pthread_mutex_unlock(&sr_cm_lock);
	/* off the engine, as if its 5 s had passed before its next byte */
	sr_cm_conn_quiesce(c);
	c->ops->timeout(c);
	cm_test_expect_eof(f->cli);
	pthread_mutex_lock(&sr_cm_lock);
	assert_true(no_handshake(f->l));
	pthread_mutex_unlock(&sr_cm_lock);
	cm_test_no_event(f->ch, 50);
}

/* The held request's deadline (the ops' timeout in HELD) rejects it; accept: ECONNRESET. */
static void held_deadline(void **state)
{
	struct fixture *f = *state;
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *req = request(f, "hello");
	uint8_t pd[SR_MPA_PD_MAX];
	struct sr_mpa_params rep;
	struct sr_cm_conn *c;
	size_t pd_len;

	pthread_mutex_lock(&sr_cm_lock);
	c = to_sr_id(req)->conn;
	pthread_mutex_unlock(&sr_cm_lock);
	sr_cm_conn_quiesce(c);
	c->ops->timeout(c);
	cm_test_read_frame(f->cli, true, &rep, pd, &pd_len);
	assert_true(rep.reject);
	cm_test_expect_eof(f->cli);
	assert_int_equal(rdma_accept(req, &p), -1);
	assert_int_equal(errno, ECONNRESET);
	assert_int_equal(rdma_destroy_id(req), 0);
}

/* A listener destroyed with a request nobody fetched: the initiator is rejected. */
static void unseen_request_rejected(void **state)
{
	struct fixture *f = *state;
	uint8_t frame[SR_MPA_FRAME_MAX];
	struct sr_mpa_params rep;
	uint8_t pd[SR_MPA_PD_MAX];
	size_t n, pd_len;

	n = cm_test_request(frame, sizeof(frame), "hello");
	cm_test_send(f->cli, frame, n);
	/* queued, not fetched */
	{
		struct pollfd pf = { .fd = f->ch->fd, .events = POLLIN };

		assert_int_equal(poll(&pf, 1, CM_TEST_WAIT_MS), 1);
	}
	assert_int_equal(rdma_destroy_id(f->lid), 0);
	f->lid = NULL;
	cm_test_read_frame(f->cli, true, &rep, pd, &pd_len);
	assert_true(rep.reject);
	cm_test_expect_eof(f->cli);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(request_then_accept, setup, teardown),
		cmocka_unit_test_setup_teardown(request_then_reject, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_request_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(request_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(held_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(unseen_request_rejected, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
