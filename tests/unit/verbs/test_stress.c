// SPDX-License-Identifier: MIT
/*
 * The application and an engine thread at the same time (meant for TSan): every posted WR
 * completes exactly once and in posting order, also when the QP is moved to ERR mid-stream.
 */
#include <pthread.h>
#include <sched.h>

#include "obj_helpers.h"

#define N_WR 20000

struct engine {
	struct sr_qp *qp;
	atomic_bool stop;
	atomic_int done;
};

/* Plays the transport: completes sends as it gets them, READs one step late. */
static void *engine_main(void *arg)
{
	struct engine *e = arg;
	struct sr_send_wqe *held = NULL;

	while (!atomic_load(&e->stop)) {
		struct sr_send_wqe *w = sr_sq_next(e->qp);
		struct sr_recv_wqe *r = sr_rq_take(e->qp);

		if (r)
			sr_rq_complete(e->qp, r, IBV_WC_SUCCESS, (uint32_t)r->length, 0, 0,
				       r->wr_id % 7 == 0);
		if (!w) {
			if (held) {
				sr_sq_complete(e->qp, held, IBV_WC_SUCCESS);
				held = NULL;
			}
			sched_yield();
			continue;
		}
		if (w->opcode == IBV_WR_RDMA_READ && !held) {
			held = w; /* completes after the next one */
			continue;
		}
		sr_sq_complete(e->qp, w, IBV_WC_SUCCESS);
		if (held) {
			sr_sq_complete(e->qp, held, IBV_WC_SUCCESS);
			held = NULL;
		}
		atomic_fetch_add(&e->done, 1);
	}
	return NULL;
}

static void run(bool error_midway)
{
	struct fx f;
	struct engine e = { 0 };
	pthread_t t;
	uint64_t next_send = 0, next_recv = 0, posted_s = 0, posted_r = 0;
	struct ibv_wc wc[32];
	bool errored = false;

	fx_open_qp(&f, 64, 1, 0, IBV_QPS_RTS);
	e.qp = to_sr_qp(f.qp);
	assert_int_equal(pthread_create(&t, NULL, engine_main, &e), 0);
	while (next_send < N_WR || next_recv < N_WR) {
		struct ibv_send_wr sw = { .opcode = posted_s % 5 == 0 ? IBV_WR_RDMA_READ :
								      IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bs;
		struct ibv_recv_wr rw = { 0 }, *br;
		int n;

		/* as any application must: never more outstanding than the CQ holds */
		if (posted_s < N_WR && posted_s - next_send < 64) {
			sw.wr_id = posted_s;
			if (ibv_post_send(f.qp, &sw, &bs) == 0)
				posted_s++;
		}
		if (posted_r < N_WR && posted_r - next_recv < 64) {
			rw.wr_id = posted_r;
			if (ibv_post_recv(f.qp, &rw, &br) == 0)
				posted_r++;
		}
		if (error_midway && !errored && posted_s > N_WR / 2) {
			assert_int_equal(fx_modify(f.qp, IBV_QPS_ERR), 0);
			errored = true;
		}
		n = ibv_poll_cq(f.scq, 32, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].wr_id, next_send);
			next_send++;
			if (!errored)
				assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		}
		n = ibv_poll_cq(f.rcq, 32, wc);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].wr_id, next_recv);
			next_recv++;
		}
	}
	atomic_store(&e.stop, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(ibv_poll_cq(f.scq, 32, wc), 0);
	assert_int_equal(ibv_poll_cq(f.rcq, 32, wc), 0);
	fx_close(&f);
}

static void stress_in_order(void **state)
{
	run(false);
}

static void stress_error_midway(void **state)
{
	run(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stress_in_order),
		cmocka_unit_test(stress_error_midway),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
