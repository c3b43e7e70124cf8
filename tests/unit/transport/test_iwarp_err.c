// SPDX-License-Identifier: MIT
/*
 * Moving a QP to ERR stops placement (transport/iwarp_conn.c, sr_iw_stop): once
 * ibv_modify_qp returns, not a byte more lands in the QP's receive buffers, Read sinks or
 * regions, although the socket still holds megabytes of Sends, Writes and Read Responses
 * (a raw peer queued them while a poller held the input), and although a receive pass of the
 * engine thread or of a polling thread may be running when the call comes. The application
 * has seen the flush and reuses the buffers.
 */
#include "xport_helpers.h"

#define BUF (4u << 20)
#define SEG 32768u /* payload per FPDU */

/* Until p holds want (the engine placed it). */
static void wait_placed(const uint8_t *p, const uint8_t *want, size_t n)
{
	uint64_t end = now_ms() + T_WAIT_MS;

	while (memcmp(p, want, n) != 0 && now_ms() < end)
		usleep(500);
	assert_memory_equal(p, want, n);
}

/* The QP's end of the stream is gone: the raw peer reads to its EOF or reset. */
static void wait_peer_end(struct raw_qp *t)
{
	uint64_t end = now_ms() + T_WAIT_MS;
	static uint8_t sink[65536];

	while (now_ms() < end) {
		ssize_t n;

		if (!fd_readable(t->peer, 20))
			continue;
		n = recv(t->peer, sink, sizeof(sink), 0);
		if (n == 0 || (n < 0 && errno != EINTR))
			return;
	}
	fail_msg("the QP's socket stayed open for %d ms", T_WAIT_MS);
}

/* Queue as much as the sockets take without blocking; false once they are full. */
static bool queue(int fd, const uint8_t *f, size_t n, size_t *queued)
{
	ssize_t r = send(fd, f, n, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (r > 0)
		*queued += (size_t)r;
	return r == (ssize_t)n;
}

/*
 * A Send, a Read Response and Writes are under way (their first segments placed) when a
 * poller takes the input and stops polling: the rest, megabytes of it, waits in the socket.
 * The QP goes to ERR. Nothing more lands anywhere: not from the engine thread, which the
 * shutdown wakes, not from the passes that polling the flush completions runs.
 */
static void t_err_queued(void **s)
{
	uint8_t *r0 = malloc(BUF), *r1 = malloc(BUF), *rd = malloc(BUF), *w = malloc(BUF);
	uint8_t *ref_rd = malloc(BUF), *ref_w = malloc(BUF), *data = malloc(SEG);
	uint8_t *f = malloc(SEG + 64);
	struct ibv_mr *m0, *m1, *mrd, *mw;
	uint32_t sink_stag;
	uint64_t sink_to;
	size_t fl, queued = 0;
	struct ibv_wc wc[2];
	struct raw_qp t;

	(void)s;
	lease(LONG_LEASE);
	raw_qp_up(&t);
	memset(r0, 0x11, BUF);
	memset(r1, 0x22, BUF);
	memset(rd, 0x33, BUF);
	memset(w, 0x44, BUF);
	m0 = ibv_reg_mr(t.e.pd, r0, BUF, ACC_ALL);
	m1 = ibv_reg_mr(t.e.pd, r1, BUF, ACC_ALL);
	mrd = ibv_reg_mr(t.e.pd, rd, BUF, ACC_ALL);
	mw = ibv_reg_mr(t.e.pd, w, BUF, ACC_ALL);
	assert_true(m0 && m1 && mrd && mw);
	post_recv1(&t.e, 100, r0, BUF, m0->lkey);
	post_recv1(&t.e, 101, r1, BUF, m1->lkey);
	post_send1(&t.e, 200, IBV_WR_RDMA_READ, 0, rd, BUF, mrd->lkey, 0x100000, 0x4321);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_REQ);
	sink_stag = t.r.seg.rreq.sink_stag;
	sink_to = t.r.seg.rreq.sink_to;

	/* Writes through the whole region first: both ends' buffers grow to megabytes. */
	for (uint32_t k = 0; k < BUF / SEG; k++) {
		fill(data, SEG, k);
		fl = fpdu_tagged(f, true, SR_RDMAP_OP_WRITE, true, mw->rkey,
				 (uintptr_t)w + k * SEG, data, SEG);
		xsend(t.peer, f, fl);
	}
	wait_placed(w + BUF - SEG, data, SEG);
	/* The first segment of a Send (taking receive 100) and of the Read Response. */
	fill(data, SEG, 1000);
	fl = fpdu_untagged(f, true, SR_RDMAP_OP_SEND, false, 1, 0, 0, data, SEG);
	xsend(t.peer, f, fl);
	fl = fpdu_tagged(f, true, SR_RDMAP_OP_READ_RESP, false, sink_stag, sink_to, data, SEG);
	xsend(t.peer, f, fl);
	wait_placed(r0, data, SEG);
	wait_placed(rd, data, SEG);
	raw_qp_drained(&t);

	/* A poller takes the input and then stops polling: nobody reads now. */
	{
		struct ibv_wc none;

		assert_int_equal(ibv_poll_cq(t.e.rcq, 1, &none), 0);
		assert_int_equal(ibv_poll_cq(t.e.rcq, 1, &none), 0);
	}
	assert_int_equal(xt_rx_owner(t.e.qp), SR_IW_RXO_POLLED);
	memcpy(ref_rd, rd, BUF);
	memcpy(ref_w, w, BUF);
	for (uint32_t k = 1; k < BUF / SEG; k++) {
		fill(data, SEG, 2000 + k);
		fl = fpdu_untagged(f, true, SR_RDMAP_OP_SEND, false, 1, k * SEG, 0, data, SEG);
		if (!queue(t.peer, f, fl, &queued))
			break;
		fl = fpdu_tagged(f, true, SR_RDMAP_OP_READ_RESP, false, sink_stag,
				 sink_to + k * SEG, data, SEG);
		if (!queue(t.peer, f, fl, &queued))
			break;
		fl = fpdu_tagged(f, true, SR_RDMAP_OP_WRITE, true, mw->rkey,
				 (uintptr_t)w + k * SEG, data, SEG);
		if (!queue(t.peer, f, fl, &queued))
			break;
	}
	print_message("queued behind the poller: %zu KiB\n", queued >> 10);
	assert_true(queued >= (1u << 20));
	assert_memory_equal(rd, ref_rd, BUF);
	assert_memory_equal(w, ref_w, BUF);

	assert_int_equal(qp_to(t.e.qp, IBV_QPS_ERR), 0);
	/* The flush: the receive being filled, the one never taken, the Read. Polling for it
	 * (and on, at empty CQs) is what runs poller passes. */
	wait_wc(t.e.rcq, wc, 2);
	assert_int_equal(wc[0].wr_id, 100);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[1].wr_id, 101);
	assert_int_equal(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	wait_wc(t.e.scq, wc, 1);
	assert_int_equal(wc[0].wr_id, 200);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	/* the application reuses the receive buffers at once */
	memset(r0, 0x5a, BUF);
	memset(r1, 0x5b, BUF);
	assert_true(wait_closed(&t.e) < 0);
	wait_peer_end(&t);
	no_wc(t.e.rcq, 0);
	for (int i = 0; i < 8; i++) /* more empty polls: a pass would read now if any could */
		no_wc(t.e.rcq, 0);
	assert_memory_equal(rd, ref_rd, BUF);
	assert_memory_equal(w, ref_w, BUF);
	for (size_t i = 0; i < BUF; i++)
		if (r0[i] != 0x5a || r1[i] != 0x5b)
			fail_msg("a flushed receive buffer changed at %zu", i);
	assert_int_equal(ibv_dereg_mr(m0), 0);
	assert_int_equal(ibv_dereg_mr(m1), 0);
	assert_int_equal(ibv_dereg_mr(mrd), 0);
	assert_int_equal(ibv_dereg_mr(mw), 0);
	raw_qp_down(&t);
	free(r0);
	free(r1);
	free(rd);
	free(w);
	free(ref_rd);
	free(ref_w);
	free(data);
	free(f);
}

/* ---------------------------------------------- ERR during a receive pass -- */

/* A raw peer that sends Writes as fast as the QP reads them, until the stream dies. */
struct streamer {
	int fd;
	const uint8_t *buf;
	size_t len;
	atomic_size_t sent;
	atomic_bool stop;
};

static void *stream_main(void *arg)
{
	struct streamer *st = arg;

	while (!atomic_load(&st->stop)) {
		ssize_t n = send(st->fd, st->buf, st->len, MSG_NOSIGNAL);

		if (n > 0)
			atomic_fetch_add(&st->sent, (size_t)n);
		else if (n < 0 && errno != EINTR)
			break;
	}
	return NULL;
}

/* A thread polling the (empty) receive CQ: it runs receive passes of the QP. */
struct poller {
	struct ibv_cq *cq;
	atomic_bool stop;
};

static void *poll_main(void *arg)
{
	struct poller *p = arg;
	struct ibv_wc wc;

	while (!atomic_load(&p->stop))
		if (ibv_poll_cq(p->cq, 1, &wc) < 0)
			break;
	return NULL;
}

/*
 * Writes stream in while the engine thread (or a polling thread) places them; the QP goes
 * to ERR in the middle. The pass running at that moment may finish, but once ibv_modify_qp
 * has returned the application refills the region, and it stays as refilled.
 */
static void err_mid_stream(bool polled)
{
	const size_t wl = 60000, copies = 16;
	uint8_t *w = malloc(wl), *data = malloc(wl), *buf = malloc(copies * (wl + 64));
	struct streamer st = { 0 };
	struct poller pl = { 0 };
	pthread_t ts, tp;
	struct ibv_mr *mw;
	size_t fl = 0;
	struct raw_qp t;
	uint64_t end;
	int closed;

	lease(polled ? LONG_LEASE : "0");
	raw_qp_up(&t);
	memset(w, 0, wl);
	mw = ibv_reg_mr(t.e.pd, w, wl, ACC_ALL);
	assert_non_null(mw);
	fill(data, wl, 77);
	for (size_t i = 0; i < copies; i++)
		fl += fpdu_tagged(buf + fl, true, SR_RDMAP_OP_WRITE, true, mw->rkey, (uintptr_t)w,
				  data, wl);
	/* the first one before the poller: a poller only reads a stream past its first
	 * segment */
	xsend(t.peer, buf, fl / copies);
	wait_placed(w, data, wl);
	if (polled) {
		pl.cq = t.e.rcq;
		assert_int_equal(pthread_create(&tp, NULL, poll_main, &pl), 0);
		end = now_ms() + T_WAIT_MS;
		while (xt_rx_owner(t.e.qp) != SR_IW_RXO_POLLED && now_ms() < end)
			usleep(100);
		assert_int_equal(xt_rx_owner(t.e.qp), SR_IW_RXO_POLLED);
	}
	st = (struct streamer){ .fd = t.peer, .buf = buf, .len = fl };
	assert_int_equal(pthread_create(&ts, NULL, stream_main, &st), 0);
	/* well under way: far more than the socket buffers have gone through the QP */
	end = now_ms() + T_WAIT_MS;
	while (atomic_load(&st.sent) < (64u << 20) && now_ms() < end)
		usleep(1000);
	assert_true(atomic_load(&st.sent) >= (64u << 20));

	assert_int_equal(qp_to(t.e.qp, IBV_QPS_ERR), 0);
	memset(w, 0xa5, wl); /* the application reuses the region */
	end = now_ms() + T_WAIT_MS;
	while (closed_calls(&t.e, NULL) == 0 && now_ms() < end)
		usleep(1000);
	closed = closed_calls(&t.e, NULL);
	/* stop the helpers before any assertion can leave them running */
	atomic_store(&st.stop, true);
	shutdown(t.peer, SHUT_RDWR);
	assert_int_equal(pthread_join(ts, NULL), 0);
	if (polled) {
		atomic_store(&pl.stop, true);
		assert_int_equal(pthread_join(tp, NULL), 0);
	}
	assert_int_equal(closed, 1);
	for (size_t i = 0; i < wl; i++)
		if (w[i] != 0xa5)
			fail_msg("byte %zu of the region was placed after ibv_modify_qp(ERR)", i);
	assert_int_equal(ibv_dereg_mr(mw), 0);
	raw_qp_down(&t);
	free(w);
	free(data);
	free(buf);
}

static void t_err_mid_stream_engine(void **s)
{
	(void)s;
	for (int i = 0; i < 3; i++)
		err_mid_stream(false);
}

static void t_err_mid_stream_polled(void **s)
{
	(void)s;
	for (int i = 0; i < 3; i++)
		err_mid_stream(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_err_queued),
		cmocka_unit_test(t_err_mid_stream_engine),
		cmocka_unit_test(t_err_mid_stream_polled),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
