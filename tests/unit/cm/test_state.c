// SPDX-License-Identifier: MIT
/*
 * The CM's state tables (cm/state.c): an id's state and a connection's phase change only
 * along their tables, and in debug builds the setters refuse anything else, or a caller
 * without the CM lock, by aborting. The aborts are watched from a forked child; release
 * builds (NDEBUG) check nothing there, so those cases are skipped in them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cm/cm_priv.h"

/* The rdma_cm life of an id, as the code walks it: every step legal. */
static const enum sr_cm_state active_path[] = {
	SR_CM_IDLE, SR_CM_BOUND, SR_CM_ADDR_QUERY, SR_CM_ADDR_RESOLVED, SR_CM_ROUTE_RESOLVED,
	SR_CM_CONNECTING, SR_CM_ESTABLISHED, SR_CM_DISCONNECTING, SR_CM_DISCONNECTED,
	SR_CM_DESTROYING,
};

static void id_table(void **state)
{
	(void)state;
	for (size_t i = 1; i < SR_ARRAY_SIZE(active_path); i++)
		assert_true(sr_cm_state_legal(active_path[i - 1], active_path[i]));
	assert_true(sr_cm_state_legal(SR_CM_IDLE, SR_CM_CONN_RECV));       /* a request id */
	assert_true(sr_cm_state_legal(SR_CM_CONN_RECV, SR_CM_ESTABLISHED)); /* accept */
	assert_true(sr_cm_state_legal(SR_CM_CONN_RECV, SR_CM_FAILED));      /* reject */
	assert_true(sr_cm_state_legal(SR_CM_ADDR_QUERY, SR_CM_BOUND));      /* ADDR_ERROR */
	assert_true(sr_cm_state_legal(SR_CM_CONNECTING, SR_CM_RESPONDED));
	assert_true(sr_cm_state_legal(SR_CM_RESPONDED, SR_CM_DISCONNECTED));
	/* everything may be destroyed, once */
	for (int s = SR_CM_IDLE; s < SR_CM_DESTROYING; s++)
		assert_true(sr_cm_state_legal((enum sr_cm_state)s, SR_CM_DESTROYING));
	for (int s = SR_CM_IDLE; s <= SR_CM_DESTROYING; s++)
		assert_false(sr_cm_state_legal(SR_CM_DESTROYING, (enum sr_cm_state)s));

	assert_false(sr_cm_state_legal(SR_CM_IDLE, SR_CM_ESTABLISHED));
	assert_false(sr_cm_state_legal(SR_CM_IDLE, SR_CM_IDLE));
	assert_false(sr_cm_state_legal(SR_CM_BOUND, SR_CM_CONNECTING)); /* no route yet */
	assert_false(sr_cm_state_legal(SR_CM_LISTEN, SR_CM_CONNECTING));
	assert_false(sr_cm_state_legal(SR_CM_ESTABLISHED, SR_CM_CONNECTING));
	assert_false(sr_cm_state_legal(SR_CM_DISCONNECTING, SR_CM_ESTABLISHED));
	assert_false(sr_cm_state_legal(SR_CM_DISCONNECTED, SR_CM_ESTABLISHED)); /* not reusable */
	assert_false(sr_cm_state_legal(SR_CM_FAILED, SR_CM_CONNECTING));
	assert_false(sr_cm_state_legal(SR_CM_FAILED, SR_CM_BOUND));
	assert_false(sr_cm_state_legal(SR_CM_CONN_RECV, SR_CM_DISCONNECTED));
	assert_false(sr_cm_state_legal(SR_CM_IDLE, (enum sr_cm_state)(SR_CM_DESTROYING + 1)));
	assert_false(sr_cm_state_legal((enum sr_cm_state)(SR_CM_DESTROYING + 1), SR_CM_IDLE));
}

static void conn_table(void **state)
{
	static const enum sr_cm_conn_phase active[] = {
		SR_CONN_NEW, SR_CONN_TCP_CONNECT, SR_CONN_SEND_REQ, SR_CONN_READ_REPLY,
		SR_CONN_HELD, SR_CONN_STREAM, SR_CONN_STREAM_SHUT,
	};

	(void)state;
	for (size_t i = 1; i < SR_ARRAY_SIZE(active); i++)
		assert_true(sr_cm_conn_phase_legal(active[i - 1], active[i]));
	assert_true(sr_cm_conn_phase_legal(SR_CONN_NEW, SR_CONN_READ_REQ));
	assert_true(sr_cm_conn_phase_legal(SR_CONN_READ_REQ, SR_CONN_HELD));
	assert_true(sr_cm_conn_phase_legal(SR_CONN_TCP_CONNECT, SR_CONN_READ_REPLY));
	assert_true(sr_cm_conn_phase_legal(SR_CONN_READ_REPLY, SR_CONN_ABORT));
	assert_false(sr_cm_conn_phase_legal(SR_CONN_ABORT, SR_CONN_READ_REPLY));
	assert_false(sr_cm_conn_phase_legal(SR_CONN_TCP_CONNECT, SR_CONN_ABORT));

	assert_false(sr_cm_conn_phase_legal(SR_CONN_NEW, SR_CONN_STREAM));
	assert_false(sr_cm_conn_phase_legal(SR_CONN_READ_REQ, SR_CONN_READ_REPLY));
	assert_false(sr_cm_conn_phase_legal(SR_CONN_HELD, SR_CONN_READ_REQ));
	assert_false(sr_cm_conn_phase_legal(SR_CONN_STREAM_SHUT, SR_CONN_STREAM));
	assert_false(sr_cm_conn_phase_legal(SR_CONN_STREAM_SHUT, SR_CONN_STREAM_SHUT));
	assert_false(sr_cm_conn_phase_legal(SR_CONN_STREAM, SR_CONN_HELD));
}

/* The setters follow their tables when the move is legal (any build). */
static void setters_move(void **state)
{
	struct sr_cm_id *id = calloc(1, sizeof(*id));
	struct sr_cm_conn *c = calloc(1, sizeof(*c));

	(void)state;
	assert_non_null(id);
	assert_non_null(c);
	pthread_mutex_lock(&sr_cm_lock);
	for (size_t i = 1; i < SR_ARRAY_SIZE(active_path); i++) {
		sr_cm_state_set(id, active_path[i]);
		assert_int_equal(id->state, active_path[i]);
	}
	assert_int_equal(c->phase, SR_CONN_NEW);
	sr_cm_conn_phase_set(c, SR_CONN_READ_REQ);
	sr_cm_conn_phase_set(c, SR_CONN_HELD);
	assert_int_equal(c->phase, SR_CONN_HELD);
	pthread_mutex_unlock(&sr_cm_lock);
	free(c);
	free(id);
}

#ifndef NDEBUG
enum bad_move { BAD_ID_MOVE, BAD_CONN_MOVE, ID_UNLOCKED, CONN_UNLOCKED };

/* In a child: make one move the setters must refuse; returns how the child ended. */
static int child_move(enum bad_move what)
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct sr_cm_id id = { .state = SR_CM_IDLE };
		struct sr_cm_conn c = { .phase = SR_CONN_HELD };

		if (what == BAD_ID_MOVE || what == BAD_CONN_MOVE)
			pthread_mutex_lock(&sr_cm_lock);
		switch (what) {
		case BAD_ID_MOVE:
			sr_cm_state_set(&id, SR_CM_ESTABLISHED); /* IDLE never connects */
			break;
		case BAD_CONN_MOVE:
			sr_cm_conn_phase_set(&c, SR_CONN_READ_REQ); /* a held conn reads no more */
			break;
		case ID_UNLOCKED:
			sr_cm_state_set(&id, SR_CM_BOUND); /* legal, but without the lock */
			break;
		case CONN_UNLOCKED:
			sr_cm_conn_phase_set(&c, SR_CONN_STREAM);
			break;
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}
#endif

static void setters_refuse(void **state)
{
	(void)state;
#ifdef NDEBUG
	skip(); /* release builds do not check */
#else
	for (int w = BAD_ID_MOVE; w <= CONN_UNLOCKED; w++) {
		int st = child_move((enum bad_move)w);

		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT)
			fail_msg("case %d: the setter let it pass (status 0x%x)", w, st);
	}
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(id_table),
		cmocka_unit_test(conn_table),
		cmocka_unit_test(setters_move),
		cmocka_unit_test(setters_refuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
