// SPDX-License-Identifier: MIT
/*
 * The connection object (cm/conn.c) on its own, with a fake owner: a recorded ops table.
 * Socket events and the deadline reach the owner's ops on the engine thread, the ops in
 * force when they happen (an owner hands over, as stream.c takes a QP-less connection), and
 * nothing reaches a claimed one; claim and hand-over keep the listener's handshake list and
 * count; frames are read whole and never past their end; a reject goes out as a Reply; a
 * connection given up closes with a FIN after draining what the peer sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <cmocka.h>

#include "cm_test.h"

/* ------------------------------------------------- the recorded owner -- */

struct rec {
	atomic_int io, timeout;
	atomic_uint events; /* of the last io */
};

static struct rec rec_a, rec_b;

static void rec_io(struct rec *r, struct sr_cm_conn *c, uint32_t events)
{
	uint8_t b[64];

	/* level-triggered: take what is there, as an owner would */
	while (recv(c->sock.fd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
	atomic_store(&r->events, events);
	atomic_fetch_add(&r->io, 1);
}

static void a_io(struct sr_cm_conn *c, uint32_t events)
{
	rec_io(&rec_a, c, events);
}

static void a_timeout(struct sr_cm_conn *c)
{
	(void)c;
	atomic_fetch_add(&rec_a.timeout, 1);
}

static void b_io(struct sr_cm_conn *c, uint32_t events)
{
	rec_io(&rec_b, c, events);
}

static void b_timeout(struct sr_cm_conn *c)
{
	(void)c;
	atomic_fetch_add(&rec_b.timeout, 1);
}

static const struct sr_cm_conn_ops ops_a = { .io = a_io, .timeout = a_timeout };
static const struct sr_cm_conn_ops ops_b = { .io = b_io, .timeout = b_timeout };

static int setup(void **state)
{
	(void)state;
	memset(&rec_a, 0, sizeof(rec_a));
	memset(&rec_b, 0, sizeof(rec_b));
	return 0;
}

static bool at_least_one(void *arg)
{
	return atomic_load((atomic_int *)arg) >= 1;
}

static void sleep_ms(long ms)
{
	struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

/* A connection on one end of a stream socketpair; *peer gets the other end. */
static struct sr_cm_conn *pair_conn(const struct sr_cm_conn_ops *ops, int *peer)
{
	int sv[2];
	struct sr_cm_conn *c;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv),
			 0);
	c = sr_cm_conn_new(sv[0], ops);
	assert_non_null(c);
	*peer = sv[1];
	return c;
}

static void claim_and_destroy(struct sr_cm_conn *c)
{
	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_conn_claim(c);
	pthread_mutex_unlock(&sr_cm_lock);
	sr_cm_conn_destroy(c);
}

/* ----------------------------------------------------------- dispatch -- */

/* The socket's events and the deadline go to the owner's ops, on the engine thread. */
static void io_and_timer_reach_owner(void **state)
{
	struct sr_cm_conn *c;
	int peer;

	(void)state;
	c = pair_conn(&ops_a, &peer);
	assert_int_equal(sr_engine_add(&c->sock, EPOLLIN), 0);
	cm_test_send(peer, "x", 1);
	cm_test_wait_locked(at_least_one, &rec_a.io);
	assert_true(atomic_load(&rec_a.events) & EPOLLIN);
	assert_int_equal(atomic_load(&rec_a.timeout), 0);

	assert_int_equal(sr_cm_conn_arm_timer(c, 5), 0);
	cm_test_wait_locked(at_least_one, &rec_a.timeout);
	assert_int_equal(atomic_load(&rec_a.timeout), 1);
	assert_int_equal(atomic_load(&rec_b.io) + atomic_load(&rec_b.timeout), 0);

	claim_and_destroy(c);
	close(peer);
}

/* An owner that takes over (stream.c after a QP-less handshake) gets what follows. */
static void ops_switch_under_lock(void **state)
{
	struct sr_cm_conn *c;
	int peer, io_a;

	(void)state;
	c = pair_conn(&ops_a, &peer);
	assert_int_equal(sr_engine_add(&c->sock, EPOLLIN), 0);
	pthread_mutex_lock(&sr_cm_lock);
	c->ops = &ops_b;
	pthread_mutex_unlock(&sr_cm_lock);
	io_a = atomic_load(&rec_a.io);

	cm_test_send(peer, "y", 1);
	cm_test_wait_locked(at_least_one, &rec_b.io);
	assert_int_equal(sr_cm_conn_arm_timer(c, 5), 0);
	cm_test_wait_locked(at_least_one, &rec_b.timeout);
	assert_int_equal(atomic_load(&rec_a.io), io_a);
	assert_int_equal(atomic_load(&rec_a.timeout), 0);

	claim_and_destroy(c);
	close(peer);
}

/* A claimed connection calls its owner no more, whatever still happens on it. */
static void claimed_is_silent(void **state)
{
	struct sr_cm_conn *c;
	int peer;

	(void)state;
	c = pair_conn(&ops_a, &peer);
	assert_int_equal(sr_engine_add(&c->sock, EPOLLIN), 0);
	pthread_mutex_lock(&sr_cm_lock);
	assert_true(sr_cm_conn_claim(c));
	assert_false(sr_cm_conn_claim(c)); /* once */
	pthread_mutex_unlock(&sr_cm_lock);
	assert_int_equal(sr_cm_conn_arm_timer(c, 1), 0);
	cm_test_send(peer, "z", 1);
	sleep_ms(100);
	assert_int_equal(atomic_load(&rec_a.io), 0);
	assert_int_equal(atomic_load(&rec_a.timeout), 0);
	sr_cm_conn_destroy(c);
	close(peer);
}

/* ------------------------------------------------ claim and hand-over -- */

static void claim_and_hand_over(void **state)
{
	struct sr_cm_id *l = sr_cm_id_new(NULL, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct sr_cm_id *id = sr_cm_id_new(NULL, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct sr_cm_conn *c1, *c2;
	int p1, p2;

	(void)state;
	assert_non_null(l);
	assert_non_null(id);
	c1 = pair_conn(&ops_a, &p1);
	c2 = pair_conn(&ops_a, &p2);

	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_conn_join_listener(c1, l);
	sr_cm_conn_join_listener(c2, l);
	assert_int_equal(l->handshakes, 2);
	assert_ptr_equal(sr_list_first(&l->hs_list, struct sr_cm_conn, node), c1);

	/* a finished handshake leaves the listener for its request id */
	sr_cm_conn_hand_over(c1, id);
	assert_int_equal(l->handshakes, 1);
	assert_null(c1->listener);
	assert_ptr_equal(c1->id, id);
	assert_ptr_equal(id->conn, c1);
	assert_ptr_equal(sr_list_first(&l->hs_list, struct sr_cm_conn, node), c2);

	/* claiming unlinks it from whichever holds it */
	assert_true(sr_cm_conn_claim(c1));
	assert_null(id->conn);
	assert_true(sr_cm_conn_claim(c2));
	assert_int_equal(l->handshakes, 0);
	assert_true(sr_list_empty(&l->hs_list));
	assert_null(c2->listener);
	pthread_mutex_unlock(&sr_cm_lock);

	sr_cm_conn_destroy(c1);
	sr_cm_conn_destroy(c2);
	close(p1);
	close(p2);
	assert_int_equal(rdma_destroy_id(&id->id), 0);
	assert_int_equal(rdma_destroy_id(&l->id), 0);
}

/* ---------------------------------------------------------- frame I/O -- */

/* A whole frame in one segment, then one in pieces; never a byte past the frame. */
static void frames_whole_and_in_pieces(void **state)
{
	uint8_t frame[SR_MPA_FRAME_MAX + 8];
	struct sr_mpa_params p;
	struct sr_cm_conn *c;
	const uint8_t *ulp;
	size_t n, ulp_len;
	uint8_t after;
	int peer;

	(void)state;
	c = pair_conn(&ops_a, &peer);
	n = cm_test_request(frame, sizeof(frame), "hello");
	cm_test_send(peer, frame, n);
	c->len = SR_MPA_RR_HDR_LEN;
	assert_int_equal(sr_cm_conn_read_frame(c, false), 1);
	assert_int_equal(c->len, n);
	assert_int_equal(sr_cm_conn_check_quiet(c), 0);
	assert_int_equal(sr_cm_conn_parse(c, &p, &ulp, &ulp_len), 0);
	assert_false(p.is_reply);
	assert_int_equal(p.rev, SR_MPA_REV2);
	assert_int_equal(ulp_len, 5);
	assert_memory_equal(ulp, "hello", 5);

	/* the same frame in three pieces, and one byte after it (the peer's next) */
	c->off = 0;
	c->len = SR_MPA_RR_HDR_LEN;
	c->hdr_done = false;
	cm_test_send(peer, frame, 7);
	assert_int_equal(sr_cm_conn_read_frame(c, false), 0);
	cm_test_send(peer, frame + 7, SR_MPA_RR_HDR_LEN + 2 - 7);
	assert_int_equal(sr_cm_conn_read_frame(c, false), 0);
	frame[n] = 0xAB;
	cm_test_send(peer, frame + SR_MPA_RR_HDR_LEN + 2, n + 1 - (SR_MPA_RR_HDR_LEN + 2));
	assert_int_equal(sr_cm_conn_read_frame(c, false), 1);
	assert_int_equal(c->off, n);
	/* the byte after it is out of turn, and still in the socket */
	assert_int_equal(sr_cm_conn_check_quiet(c), -EPROTO);
	assert_int_equal(recv(c->sock.fd, &after, 1, MSG_DONTWAIT), 1);
	assert_int_equal(after, 0xAB);

	/* a Reply key where a Request is expected; then the peer's end */
	c->off = 0;
	c->len = SR_MPA_RR_HDR_LEN;
	c->hdr_done = false;
	memcpy(frame, "MPA ID Rep frame", 16);
	cm_test_send(peer, frame, SR_MPA_RR_HDR_LEN);
	assert_int_equal(sr_cm_conn_read_frame(c, false), SR_MPA_EBADKEY);
	c->off = 0;
	c->len = SR_MPA_RR_HDR_LEN;
	c->hdr_done = false;
	shutdown(peer, SHUT_WR);
	assert_int_equal(sr_cm_conn_read_frame(c, false), -ECONNRESET);

	claim_and_destroy(c);
	close(peer);
}

/* A reject answers the peer's Request with a rejecting Reply carrying the private data. */
static void reject_is_a_reply(void **state)
{
	struct sr_mpa_params req = { .rev = SR_MPA_REV2, .crc = false }, rep;
	struct sr_cm_conn *c;
	uint8_t pd[SR_MPA_PD_MAX];
	size_t pd_len;
	int peer;

	(void)state;
	c = pair_conn(&ops_a, &peer);
	sr_cm_send_reject(c->sock.fd, &req, "no", 2);
	cm_test_read_frame(peer, true, &rep, pd, &pd_len);
	assert_true(rep.is_reply);
	assert_true(rep.reject);
	assert_int_equal(rep.rev, SR_MPA_REV2);
	assert_int_equal(pd_len, 2);
	assert_memory_equal(pd, "no", 2);
	claim_and_destroy(c);
	close(peer);
}

/* Given up: what the peer sent is drained and our FIN goes out (the peer reads EOF). */
static void destroy_closes_with_fin(void **state)
{
	struct sr_cm_conn *c;
	int peer;

	(void)state;
	c = pair_conn(&ops_a, &peer);
	c->phase = SR_CONN_READ_REQ; /* past the TCP connect: the graceful close */
	cm_test_send(peer, "unread", 6);
	claim_and_destroy(c);
	cm_test_expect_eof(peer);
	close(peer); /* the linger ends with the peer's FIN */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(io_and_timer_reach_owner, setup),
		cmocka_unit_test_setup(ops_switch_under_lock, setup),
		cmocka_unit_test_setup(claimed_is_silent, setup),
		cmocka_unit_test_setup(claim_and_hand_over, setup),
		cmocka_unit_test_setup(frames_whole_and_in_pieces, setup),
		cmocka_unit_test_setup(reject_is_a_reply, setup),
		cmocka_unit_test_setup(destroy_closes_with_fin, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
