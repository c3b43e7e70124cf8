// SPDX-License-Identifier: MIT
/*
 * Progress in the application's thread (transport/iwarp_poll.c, verbs/cq.c, verbs/channel.c):
 * a thread polling an empty, unarmed CQ receives, places and completes itself while the
 * engine's EPOLLIN is off; the engine takes the input back at the lease's end and at once
 * when a CQ is armed; ends of the stream a poller meets still close the right way; destroy
 * and RESET race a busy poller; a blocking ibv_get_cq_event waits as the engine's helper.
 */
#include "xport_helpers.h"

struct pair {
	struct ep a, b; /* a: initiator, b: responder */
};

static unsigned long polled_wc(struct ibv_cq *cq)
{
	return atomic_load(&to_sr_cq(cq)->polled_wc);
}

/* Empty polls, two in a row (a thread that polls once and then sleeps takes nothing):
 * the poller takes the connection's input. */
#define poll_empty(cq)                                                   \
	do {                                                             \
		struct ibv_wc wc_;                                       \
                                                                         \
		assert_int_equal(ibv_poll_cq((cq), 1, &wc_), 0);         \
		assert_int_equal(ibv_poll_cq((cq), 1, &wc_), 0);         \
	} while (0)

/* Busy-poll (no sleep) for exactly one completion. */
static void spin_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t end = now_ms() + T_WAIT_MS;
	int r = 0;

	while (r == 0 && now_ms() < end)
		r = ibv_poll_cq(cq, 1, wc);
	assert_int_equal(r, 1);
}

static void pair_up(struct pair *p)
{
	struct ibv_wc wc;
	int fa, fb;

	ep_create(&p->a, NULL, false);
	ep_create(&p->b, NULL, false);
	tcp_pair(&fa, &fb);
	ep_attach(&p->b, fb, false, mpa_conn(true, 0, 8, 8));
	ep_attach(&p->a, fa, true, mpa_conn(true, 0, 8, 8));
	/* one Send each way: both streams past their first segment (the poller's gate) */
	post_recv1(&p->b, 1, NULL, 0, 0);
	post_send1(&p->a, 2, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	wait_wc(p->a.scq, &wc, 1);
	wait_wc(p->b.rcq, &wc, 1);
	post_recv1(&p->a, 3, NULL, 0, 0);
	post_send1(&p->b, 4, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	wait_wc(p->b.scq, &wc, 1);
	wait_wc(p->a.rcq, &wc, 1);
}

static void pair_down(struct pair *p)
{
	ep_destroy(&p->a);
	ep_destroy(&p->b);
}

/* Send, Write and Read complete in the polling thread while the engine's EPOLLIN is off;
 * arming the CQ gives the input back at once. */
static void t_poll_in_thread(void **s)
{
	uint8_t src[256], dst[256];
	struct ibv_mr *ms, *md;
	struct ibv_wc wc, three[3];
	unsigned long n0;
	struct pair p;

	(void)s;
	lease(LONG_LEASE);
	pair_up(&p);
	ms = ibv_reg_mr(p.a.pd, src, sizeof(src), ACC_ALL);
	md = ibv_reg_mr(p.b.pd, dst, sizeof(dst), ACC_ALL);
	assert_non_null(ms);
	assert_non_null(md);

	/* Send: b's input is its poller's before a's Send leaves */
	post_recv1(&p.b, 10, dst, sizeof(dst), md->lkey);
	poll_empty(p.b.rcq);
	assert_int_equal(xt_rx_owner(p.b.qp), SR_IW_RXO_POLLED);
	n0 = polled_wc(p.b.rcq);
	fill(src, sizeof(src), 1);
	post_send1(&p.a, 11, IBV_WR_SEND, 0, src, sizeof(src), ms->lkey, 0, 0);
	spin_wc(p.b.rcq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(wc.byte_len, sizeof(src));
	assert_memory_equal(src, dst, sizeof(src));
	assert_int_equal(polled_wc(p.b.rcq), n0 + 1);
	assert_int_equal(xt_rx_owner(p.b.qp), SR_IW_RXO_POLLED);

	/* Write, made visible by the Send behind it, both received by b's poller */
	fill(src, sizeof(src), 2);
	post_recv1(&p.b, 12, NULL, 0, 0);
	post_send1(&p.a, 13, IBV_WR_RDMA_WRITE, 0, src, sizeof(src), ms->lkey, (uintptr_t)dst,
		   md->rkey);
	post_send1(&p.a, 14, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	spin_wc(p.b.rcq, &wc);
	assert_int_equal(wc.wr_id, 12);
	assert_memory_equal(src, dst, sizeof(src));
	assert_int_equal(polled_wc(p.b.rcq), n0 + 2);

	/* Arming hands b's input back to the engine before the call returns. */
	assert_int_equal(ibv_req_notify_cq(p.b.rcq, 0), 0);
	assert_int_equal(xt_rx_owner(p.b.qp), SR_IW_RXO_ENGINE);
	poll_empty(p.b.rcq); /* an armed CQ's empty poll takes nothing */
	assert_int_equal(xt_rx_owner(p.b.qp), SR_IW_RXO_ENGINE);

	/* Read: a's poller places the response and completes it; b's engine answers. */
	wait_wc(p.a.scq, three, 3); /* the Send, the Write and the Send */
	poll_empty(p.a.scq);
	assert_int_equal(xt_rx_owner(p.a.qp), SR_IW_RXO_POLLED);
	n0 = polled_wc(p.a.scq);
	fill(dst, sizeof(dst), 3);
	post_send1(&p.a, 15, IBV_WR_RDMA_READ, 0, src, sizeof(src), ms->lkey, (uintptr_t)dst,
		   md->rkey);
	spin_wc(p.a.scq, &wc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_memory_equal(src, dst, sizeof(src));
	assert_int_equal(polled_wc(p.a.scq), n0 + 1);

	assert_int_equal(closed_calls(&p.a, NULL), 0);
	assert_int_equal(closed_calls(&p.b, NULL), 0);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(md), 0);
	pair_down(&p);
}

/* A target that stops polling still serves Writes and Reads: the lease runs out. */
static void t_poll_lease_expiry(void **s)
{
	uint8_t src[4096], dst[4096], back[4096];
	struct ibv_mr *ms, *md;
	struct ibv_wc wc[2];
	struct pair p;

	(void)s;
	lease("20000"); /* 20 ms */
	pair_up(&p);
	ms = ibv_reg_mr(p.a.pd, src, sizeof(src), ACC_ALL);
	struct ibv_mr *mb = ibv_reg_mr(p.a.pd, back, sizeof(back), ACC_ALL);

	md = ibv_reg_mr(p.b.pd, dst, sizeof(dst), ACC_ALL);
	poll_empty(p.b.rcq);
	assert_int_equal(xt_rx_owner(p.b.qp), SR_IW_RXO_POLLED);
	/* b never polls again */
	fill(src, sizeof(src), 7);
	post_send1(&p.a, 20, IBV_WR_RDMA_WRITE, 0, src, sizeof(src), ms->lkey, (uintptr_t)dst,
		   md->rkey);
	post_send1(&p.a, 21, IBV_WR_RDMA_READ, 0, back, sizeof(back), mb->lkey, (uintptr_t)dst,
		   md->rkey);
	wait_wc(p.a.scq, wc, 2);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].opcode, IBV_WC_RDMA_READ);
	assert_memory_equal(src, back, sizeof(src));
	assert_int_equal(xt_rx_owner(p.b.qp), SR_IW_RXO_ENGINE);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(mb), 0);
	assert_int_equal(ibv_dereg_mr(md), 0);
	pair_down(&p);
}

/* ------------------------------------------------------- blocking waits -- */

struct waiter {
	struct ep *e;
	pthread_t t;
	int ret;
	struct ibv_cq *cq;
};

static void *wait_event(void *arg)
{
	struct waiter *w = arg;
	void *ctx;

	w->ret = ibv_get_cq_event(w->e->ch, &w->cq, &ctx);
	return NULL;
}

/* Blocking ibv_get_cq_event on two channels from two threads: one waits as the engine's
 * helper and runs the receive itself, the other reads its channel; both get their event. */
static void t_blocking_helper(void **s)
{
	struct waiter w[2];
	struct pair p[2];
	struct ibv_wc wc;
	unsigned long h0;
	uint64_t end;

	(void)s;
	lease(LONG_LEASE);
	for (int i = 0; i < 2; i++) {
		pair_up(&p[i]);
		/* a poller had the input: arming gives it back, then the thread sleeps */
		poll_empty(p[i].b.rcq);
		assert_int_equal(ibv_req_notify_cq(p[i].b.rcq, 0), 0);
		assert_int_equal(xt_rx_owner(p[i].b.qp), SR_IW_RXO_ENGINE);
		post_recv1(&p[i].b, 30, NULL, 0, 0);
	}
	h0 = atomic_load(&sr_chan_helped);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct waiter){ .e = &p[i].b, .ret = -2 };
		assert_int_equal(pthread_create(&w[i].t, NULL, wait_event, &w[i]), 0);
	}
	/* the event must come while a thread helps, so the helper is the one woken */
	end = now_ms() + T_WAIT_MS;
	while (!sr_engine_helper_active() && now_ms() < end)
		usleep(1000);
	assert_true(sr_engine_helper_active());
	for (int i = 0; i < 2; i++)
		post_send1(&p[i].a, 31, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(w[i].t, NULL), 0);
		assert_int_equal(w[i].ret, 0);
		assert_ptr_equal(w[i].cq, p[i].b.rcq);
		ibv_ack_cq_events(w[i].cq, 1);
		assert_int_equal(ibv_poll_cq(p[i].b.rcq, 1, &wc), 1);
		assert_int_equal(wc.wr_id, 30);
		wait_wc(p[i].a.scq, &wc, 1);
	}
	assert_true(atomic_load(&sr_chan_helped) >= h0 + 1);
	pair_down(&p[0]);
	pair_down(&p[1]);
}

/* ------------------------------------------------------------ raw peer -- */

/* Our QP (responder) facing a raw peer; past the first segment, its input with a poller. */
static void rq_up_polled(struct raw_qp *t)
{
	uint8_t st[128];
	struct ibv_wc wc;
	size_t l;

	lease(LONG_LEASE);
	ep_create(&t->e, NULL, false);
	tcp_pair(&t->qfd, &t->peer);
	raw_init(&t->r, t->peer, true);
	ep_attach(&t->e, t->qfd, false, mpa_conn(true, 0, 4, 4));
	post_recv1(&t->e, 1, NULL, 0, 0);
	l = fpdu_untagged(st, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, NULL, 0);
	xsend(t->peer, st, l);
	wait_wc(t->e.rcq, &wc, 1);
	post_recv1(&t->e, 2, NULL, 0, 0); /* flushed by the close */
	poll_empty(t->e.rcq);
	assert_int_equal(xt_rx_owner(t->e.qp), SR_IW_RXO_POLLED);
}

static void rq_down(struct raw_qp *t)
{
	ep_destroy(&t->e);
	if (t->peer >= 0)
		close(t->peer);
}

/* Busy-poll until the stream is closed (the engine thread cannot see the input) and the
 * receive posted in rq_up_polled comes back flushed. */
static int poll_until_closed(struct raw_qp *t)
{
	uint64_t end = now_ms() + T_WAIT_MS;
	bool flushed = false;
	struct ibv_wc wc;
	int err = 0;

	while ((closed_calls(&t->e, &err) == 0 || !flushed) && now_ms() < end)
		if (ibv_poll_cq(t->e.rcq, 1, &wc) == 1 && wc.wr_id == 2 &&
		    wc.status == IBV_WC_WR_FLUSH_ERR)
			flushed = true;
	assert_int_equal(closed_calls(&t->e, &err), 1);
	assert_true(flushed);
	return err;
}

/* The peer's FIN, read by the poller: the engine closes orderly. */
static void t_poll_eof(void **s)
{
	struct raw_qp t;

	(void)s;
	rq_up_polled(&t);
	shutdown(t.peer, SHUT_WR);
	assert_int_equal(poll_until_closed(&t), 0);
	assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
	raw_expect_end(&t.r);
	rq_down(&t);
}

/* A reset (the kernel says it once): carried to the engine, which closes with it. */
static void t_poll_reset(void **s)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct raw_qp t;

	(void)s;
	rq_up_polled(&t);
	assert_int_equal(setsockopt(t.peer, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	close(t.peer);
	t.peer = -1;
	assert_int_equal(poll_until_closed(&t), -ECONNRESET);
	assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
	rq_down(&t);
}

/* A bad STag met by the poller: our Terminate goes out, then the engine closes. */
static void t_poll_terminate(void **s)
{
	uint8_t st[256], msg[16] = { 0 };
	struct raw_qp t;
	size_t l;

	(void)s;
	rq_up_polled(&t);
	l = fpdu_tagged(st, true, SR_RDMAP_OP_WRITE, true, 0x7fff00, 0, msg, sizeof(msg));
	xsend(t.peer, st, l);
	assert_int_equal(poll_until_closed(&t), -ECONNABORTED);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_TERMINATE);
	assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
	rq_down(&t);
}

/* The peer's Terminate read by the poller: the QP's async event and the close. */
static void t_poll_peer_terminate(void **s)
{
	uint8_t st[SR_TERM_FPDU_MAX];
	struct sr_term_info ti;
	struct raw_qp t;
	ssize_t l;

	(void)s;
	rq_up_polled(&t);
	/* what a peer says when our Write names an STag it does not know */
	sr_term_info_init(&ti, SR_IW_ERR_DDP_T_STAG, NULL, 0, 0);
	l = sr_term_build(st, sizeof(st), &ti, 1, true);
	assert_true(l > 0);
	xsend(t.peer, st, (size_t)l);
	assert_true(poll_until_closed(&t) < 0);
	assert_true(wait_async(t.e.qp, IBV_EVENT_QP_ACCESS_ERR, T_WAIT_MS));
	rq_down(&t);
}

/* --------------------------------------------- destroy under a busy poller -- */

struct spinner {
	struct ibv_cq *cq;
	atomic_bool stop;
	atomic_ulong got;
};

static void *spin_cq(void *arg)
{
	struct spinner *sp = arg;
	struct ibv_wc wc[8];

	while (!atomic_load(&sp->stop)) {
		int n = ibv_poll_cq(sp->cq, 8, wc);

		assert_true(n >= 0);
		atomic_fetch_add(&sp->got, (unsigned long)n);
	}
	return NULL;
}

/* ibv_destroy_qp and RESET while another thread polls the QP's CQ in a loop (ASan, TSan). */
static void t_poll_destroy_race(void **s)
{
	struct ibv_pd *pd = ibv_alloc_pd(g_ctx);
	struct spinner sp = { 0 };
	pthread_t th;

	(void)s;
	lease(LONG_LEASE);
	assert_non_null(pd);
	sp.cq = ibv_create_cq(g_ctx, 1024, NULL, NULL, 0);
	assert_non_null(sp.cq);
	assert_int_equal(pthread_create(&th, NULL, spin_cq, &sp), 0);
	for (int i = 0; i < 40; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC, .send_cq = sp.cq, .recv_cq = sp.cq,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct ep a = { 0 }, b;
		unsigned long g0 = atomic_load(&sp.got);
		uint64_t end = now_ms() + T_WAIT_MS;
		int fa, fb;

		pthread_mutex_init(&a.cl.mu, NULL);
		a.pd = pd;
		a.qp = ibv_create_qp(pd, &ia);
		assert_non_null(a.qp);
		sr_qp_llp_claim(a.qp); /* stands in for the CM */
		assert_int_equal(qp_to(a.qp, IBV_QPS_INIT), 0);
		assert_int_equal(qp_to(a.qp, IBV_QPS_RTR), 0);
		assert_int_equal(qp_to(a.qp, IBV_QPS_RTS), 0);
		ep_create(&b, NULL, false);
		tcp_pair(&fa, &fb);
		ep_attach(&b, fb, false, mpa_conn(true, 0, 4, 4));
		ep_attach(&a, fa, true, mpa_conn(true, 0, 4, 4));
		for (int k = 0; k < 4; k++)
			post_recv1(&a, (uint64_t)k, NULL, 0, 0);
		/* a speaks first, b answers: both past their first segment; the spinner
		 * reaps a's Send and its receive */
		post_recv1(&b, 99, NULL, 0, 0);
		post_send1(&a, 98, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
		post_send1(&b, 100, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
		while (atomic_load(&sp.got) < g0 + 2 && now_ms() < end)
			usleep(200);
		assert_true(atomic_load(&sp.got) >= g0 + 2);
		/* more arriving while a's QP goes away under the spinner */
		for (int k = 0; k < 3; k++)
			post_send1(&b, 101 + (uint64_t)k, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
		if (i % 2)
			assert_int_equal(qp_to(a.qp, IBV_QPS_RESET), 0);
		assert_int_equal(ibv_destroy_qp(a.qp), 0);
		pthread_mutex_destroy(&a.cl.mu);
		ep_destroy(&b);
	}
	atomic_store(&sp.stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ibv_destroy_cq(sp.cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

/* More QPs on one CQ than a pass takes: round-robin reaches every one of them. */
static void t_poll_round_robin(void **s)
{
	enum { NQ = 12 };
	struct ibv_pd *pd = ibv_alloc_pd(g_ctx);
	struct ibv_cq *cq = ibv_create_cq(g_ctx, 256, NULL, NULL, 0);
	struct ep a[NQ], b[NQ];
	struct ibv_wc wc[2 * NQ];
	uint64_t end;
	bool all;

	(void)s;
	lease(LONG_LEASE);
	assert_non_null(pd);
	assert_non_null(cq);
	for (int i = 0; i < NQ; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		int fa, fb;

		memset(&a[i], 0, sizeof(a[i]));
		pthread_mutex_init(&a[i].cl.mu, NULL);
		a[i].pd = pd;
		a[i].qp = ibv_create_qp(pd, &ia);
		assert_non_null(a[i].qp);
		sr_qp_llp_claim(a[i].qp); /* stands in for the CM */
		assert_int_equal(qp_to(a[i].qp, IBV_QPS_INIT), 0);
		assert_int_equal(qp_to(a[i].qp, IBV_QPS_RTR), 0);
		assert_int_equal(qp_to(a[i].qp, IBV_QPS_RTS), 0);
		ep_create(&b[i], NULL, false);
		tcp_pair(&fa, &fb);
		ep_attach(&b[i], fb, false, mpa_conn(true, 0, 4, 4));
		ep_attach(&a[i], fa, true, mpa_conn(true, 0, 4, 4));
		/* a speaks first, b answers: both past their first segment */
		post_recv1(&b[i], 1, NULL, 0, 0);
		post_recv1(&a[i], 2, NULL, 0, 0);
		post_send1(&a[i], 3, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
		wait_wc(b[i].rcq, wc, 1);
		post_send1(&b[i], 4, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	}
	wait_wc(cq, wc, 2 * NQ); /* a's Sends and receives */
	/* spin on the empty CQ until every connection has been taken by a pass */
	end = now_ms() + T_WAIT_MS;
	do {
		poll_empty(cq);
		all = true;
		for (int i = 0; i < NQ; i++)
			all = all && xt_rx_owner(a[i].qp) == SR_IW_RXO_POLLED;
	} while (!all && now_ms() < end);
	assert_true(all);
	for (int i = 0; i < NQ; i++) {
		assert_int_equal(ibv_destroy_qp(a[i].qp), 0);
		pthread_mutex_destroy(&a[i].cl.mu);
		ep_destroy(&b[i]);
	}
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_poll_in_thread),
		cmocka_unit_test(t_poll_lease_expiry),
		cmocka_unit_test(t_blocking_helper),
		cmocka_unit_test(t_poll_eof),
		cmocka_unit_test(t_poll_reset),
		cmocka_unit_test(t_poll_terminate),
		cmocka_unit_test(t_poll_peer_terminate),
		cmocka_unit_test(t_poll_destroy_race),
		cmocka_unit_test(t_poll_round_robin),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
