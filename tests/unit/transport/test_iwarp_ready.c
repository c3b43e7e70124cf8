// SPDX-License-Identifier: MIT
/*
 * The initiator's wait after its RTR, against a raw peer. Linux siw sends its MPA Reply and
 * only then installs the receive side that processes FPDUs; bytes arriving in between are
 * lost to it, and nothing wakes it again unless more bytes arrive. So after the RTR the
 * initiator sends nothing until the peer shows it processes FPDUs (the Read Response to a
 * Read RTR, or any FPDU from it) or a bounded wait expires; what the application posted
 * meanwhile then goes out in order, exactly once. Also: nothing, not even a Terminate,
 * precedes the RTR.
 */
#include "xport_helpers.h"

/* A wait that never ends within a test: whatever goes out came from the peer's sign. */
#define NEVER_MS 600000
/* Bytes of a Read RTR with CRC: MPA length, DDP/RDMAP header of a Read Request, CRC. */
#define RTR_READ_LEN 52

static void rp_socks(struct raw_qp *t, bool crc)
{
	ep_create(&t->e, NULL, false);
	tcp_pair(&t->qfd, &t->peer);
	raw_init(&t->r, t->peer, crc);
}

/* The peer answers a zero-length Read RTR (sink STag 0, TO 0) as siw does. */
static void send_rtr_response(struct raw_qp *t, bool crc)
{
	uint8_t fp[64];
	size_t n = fpdu_tagged(fp, crc, SR_RDMAP_OP_READ_RESP, true, 0, 0, NULL, 0);

	xsend(t->peer, fp, n);
}

static void expect_rtr(struct raw_qp *t, uint8_t rtr)
{
	assert_int_equal(raw_next(&t->r, NULL, 0, T_WAIT_MS), 0);
	switch (rtr) {
	case SR_MPA_RTR_READ:
		assert_int_equal(t->r.seg.opcode, SR_RDMAP_OP_READ_REQ);
		assert_int_equal(t->r.seg.rreq.size, 0);
		break;
	case SR_MPA_RTR_WRITE:
		assert_int_equal(t->r.seg.opcode, SR_RDMAP_OP_WRITE);
		assert_int_equal(t->r.seg.payload_len, 0);
		break;
	default:
		assert_int_equal(t->r.seg.opcode, SR_RDMAP_OP_SEND);
		assert_int_equal(t->r.seg.payload_len, 0);
		break;
	}
}

/* The next FPDU is a whole one-segment Send of `want`, with MSN msn. */
static void expect_send(struct raw_qp *t, uint32_t msn, const void *want, size_t len)
{
	uint8_t msg[64] = { 0 };

	assert_int_equal(raw_next(&t->r, msg, sizeof(msg), T_WAIT_MS), 0);
	assert_int_equal(t->r.seg.opcode, SR_RDMAP_OP_SEND);
	assert_int_equal(t->r.seg.msn, msn);
	assert_true(t->r.seg.last);
	assert_int_equal(t->r.seg.payload_len, len);
	assert_memory_equal(msg, want, len);
}

/*
 * A responder like siw: everything that arrives before it "installs" its receive side is
 * lost, later bytes are processed. It installs as late as possible: once the initiator has
 * sent all it sends without a sign from the peer (it holds, or its first Send completed,
 * which only happens once the Send is in the socket). The initiator's first exchange, a
 * Send answered by a Send, must still complete.
 */
static void t_siw_late_install(void **s)
{
	struct raw_qp t;
	uint8_t ping[4] = "ping", pong[4] = "pong", rbuf[16], fp[64], junk[512];
	struct ibv_mr *rmr;
	struct ibv_wc wc;
	size_t lost = 0, n;
	bool sent = false;

	(void)s;
	rp_socks(&t, true);
	rmr = ibv_reg_mr(t.e.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(rmr);
	post_recv1(&t.e, 7, rbuf, sizeof(rbuf), rmr->lkey);
	/* rping's order: its first Send is posted as soon as the connection is up */
	post_send1(&t.e, 1, IBV_WR_SEND, IBV_SEND_INLINE, ping, 4, 0, 0, 0);
	/* long enough that the test's own slowness cannot make it expire before we look */
	ep_attach_ready(&t.e, t.qfd, true, mpa_conn(true, SR_MPA_RTR_READ, 1, 1), 2000);

	assert_true(fd_readable(t.peer, T_WAIT_MS));
	for (uint64_t end = now_ms() + T_WAIT_MS; now_ms() < end;) {
		if (ibv_poll_cq(t.e.scq, 1, &wc) == 1) {
			sent = true; /* the Send went out right behind the RTR */
			break;
		}
		if (xt_tx_gate(t.e.qp) == SR_IW_GATE_PEER_READY && xt_sq_started(t.e.qp) == 0)
			break;
		usleep(200);
	}
	/* not installed yet: whatever is there is lost */
	for (;;) {
		ssize_t r = recv(t.peer, junk, sizeof(junk), MSG_DONTWAIT);

		if (r <= 0)
			break;
		lost += (size_t)r;
	}
	assert_false(sent);
	assert_int_equal(lost, RTR_READ_LEN); /* the RTR alone was lost */

	/* installed: the Send comes once the wait expires, since the peer never answers */
	raw_init(&t.r, t.peer, true);
	expect_send(&t, 1, ping, 4);
	wait_wc(t.e.scq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	n = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, pong, 4);
	xsend(t.peer, fp, n);
	wait_wc(t.e.rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 4);
	assert_memory_equal(rbuf, pong, 4);
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	raw_qp_down(&t);
}

/*
 * Nothing follows the Read RTR before its Read Response; then every message posted before
 * and during the wait goes out once, in order, MSNs continuing after the RTR's.
 */
static void t_hold_order(void **s)
{
	struct raw_qp t;
	uint8_t a[3] = { 1, 2, 3 }, d[2] = { 4, 5 }, wsrc[8], sink[8] = { 0 }, rsrc[8], fp[64];
	struct ibv_mr *wmr, *smr;
	struct sr_rdmap_rreq rr;
	struct ibv_wc wc[4];
	size_t n;

	(void)s;
	rp_socks(&t, true);
	fill(wsrc, sizeof(wsrc), 1);
	fill(rsrc, sizeof(rsrc), 2);
	wmr = ibv_reg_mr(t.e.pd, wsrc, sizeof(wsrc), 0);
	smr = ibv_reg_mr(t.e.pd, sink, sizeof(sink), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(wmr);
	assert_non_null(smr);
	post_send1(&t.e, 1, IBV_WR_SEND, IBV_SEND_INLINE, a, 3, 0, 0, 0);
	post_send1(&t.e, 2, IBV_WR_RDMA_WRITE, 0, wsrc, 8, wmr->lkey, 0x2000, 0x77);
	ep_attach_ready(&t.e, t.qfd, true, mpa_conn(true, SR_MPA_RTR_READ, 4, 4), NEVER_MS);
	expect_rtr(&t, SR_MPA_RTR_READ);
	post_send1(&t.e, 3, IBV_WR_RDMA_READ, 0, sink, 8, smr->lkey, 0x3000, 0x88);
	post_send1(&t.e, 4, IBV_WR_SEND, IBV_SEND_INLINE, d, 2, 0, 0, 0);
	/* held: nothing on the wire, nothing taken from the queue, nothing completed */
	assert_false(fd_readable(t.peer, 200));
	assert_int_equal(xt_tx_gate(t.e.qp), SR_IW_GATE_PEER_READY);
	assert_int_equal(xt_sq_started(t.e.qp), 0);
	no_wc(t.e.scq, 0);

	send_rtr_response(&t, true);
	expect_send(&t, 1, a, 3);
	t.r.to_base = 0x2000;
	assert_int_equal(raw_next(&t.r, sink, sizeof(sink), T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_WRITE);
	assert_int_equal(t.r.seg.stag, 0x77);
	assert_int_equal(t.r.seg.payload_len, 8);
	assert_memory_equal(sink, wsrc, 8);
	memset(sink, 0, sizeof(sink));
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_REQ);
	assert_int_equal(t.r.seg.msn, 2); /* the RTR was Read Request 1 */
	assert_int_equal(t.r.seg.rreq.size, 8);
	assert_int_equal(t.r.seg.rreq.src_stag, 0x88);
	rr = t.r.seg.rreq;
	expect_send(&t, 2, d, 2);
	/* exactly once: nothing else follows */
	assert_false(fd_readable(t.peer, 100));

	n = fpdu_tagged(fp, true, SR_RDMAP_OP_READ_RESP, true, rr.sink_stag, rr.sink_to, rsrc, 8);
	xsend(t.peer, fp, n);
	wait_wc(t.e.scq, wc, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 1);
	}
	assert_int_equal(wc[2].opcode, IBV_WC_RDMA_READ);
	assert_memory_equal(sink, rsrc, 8);
	no_wc(t.e.scq, 50);
	assert_int_equal(ibv_dereg_mr(wmr), 0);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	raw_qp_down(&t);
}

/* With a Write or Send RTR nothing answers it: any FPDU from the peer ends the wait. */
static void hold_any_fpdu(uint8_t rtr)
{
	struct raw_qp t;
	uint8_t x[5] = "hello", fp[64];
	size_t n;

	rp_socks(&t, false);
	post_send1(&t.e, 1, IBV_WR_SEND, IBV_SEND_INLINE, x, 5, 0, 0, 0);
	ep_attach_ready(&t.e, t.qfd, true, mpa_conn(false, rtr, 1, 1), NEVER_MS);
	expect_rtr(&t, rtr);
	assert_false(fd_readable(t.peer, 100));
	assert_int_equal(xt_tx_gate(t.e.qp), SR_IW_GATE_PEER_READY);
	/* the peer's own zero-length Write (it may talk once our RTR is in) */
	n = fpdu_tagged(fp, false, SR_RDMAP_OP_WRITE, true, 1, 0, NULL, 0);
	xsend(t.peer, fp, n);
	expect_send(&t, rtr == SR_MPA_RTR_SEND ? 2 : 1, x, 5);
	assert_int_equal(xt_tx_gate(t.e.qp), SR_IW_GATE_OPEN);
	raw_qp_down(&t);
}

static void t_hold_any_fpdu(void **s)
{
	(void)s;
	hold_any_fpdu(SR_MPA_RTR_WRITE);
	hold_any_fpdu(SR_MPA_RTR_SEND);
}

/*
 * A peer that never answers: after the default bound (SR_IW_READY_READ_MS for a Read RTR,
 * SR_IW_READY_OTHER_MS otherwise) the queue goes out anyway, once. A Read Response that
 * comes late still answers the RTR, and later Reads work.
 */
static void hold_fallback(uint8_t rtr)
{
	struct raw_qp t;
	uint8_t x[4] = { 7, 7, 7, 7 }, sink[4] = { 0 }, src[4] = { 1, 2, 3, 4 }, fp[64];
	struct ibv_mr *smr;
	struct ibv_wc wc;
	size_t n;

	rp_socks(&t, true);
	post_send1(&t.e, 1, IBV_WR_SEND, IBV_SEND_INLINE, x, 4, 0, 0, 0);
	ep_attach(&t.e, t.qfd, true, mpa_conn(true, rtr, 2, 2));
	expect_rtr(&t, rtr);
	expect_send(&t, rtr == SR_MPA_RTR_SEND ? 2 : 1, x, 4);
	assert_int_equal(xt_tx_gate(t.e.qp), SR_IW_GATE_OPEN);
	wait_wc(t.e.scq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_false(fd_readable(t.peer, 100)); /* once */
	if (rtr == SR_MPA_RTR_READ)
		send_rtr_response(&t, true);
	smr = ibv_reg_mr(t.e.pd, sink, sizeof(sink), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	post_send1(&t.e, 2, IBV_WR_RDMA_READ, 0, sink, 4, smr->lkey, 0x5000, 0x99);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_REQ);
	assert_int_equal(t.r.seg.msn, rtr == SR_MPA_RTR_READ ? 2 : 1);
	n = fpdu_tagged(fp, true, SR_RDMAP_OP_READ_RESP, true, t.r.seg.rreq.sink_stag,
			t.r.seg.rreq.sink_to, src, 4);
	xsend(t.peer, fp, n);
	wait_wc(t.e.scq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_memory_equal(sink, src, 4);
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	raw_qp_down(&t);
}

static void t_hold_fallback(void **s)
{
	(void)s;
	hold_fallback(SR_MPA_RTR_READ);
	hold_fallback(SR_MPA_RTR_WRITE);
	hold_fallback(SR_MPA_RTR_SEND);
}

/*
 * A disconnect asked for during the wait still sends what was queued before it, then the
 * FIN: the wait delays the close, it does not drop anything.
 */
static void t_hold_disconnect(void **s)
{
	struct raw_qp t;
	uint8_t x[3] = { 3, 3, 3 };

	(void)s;
	rp_socks(&t, true);
	ep_attach_ready(&t.e, t.qfd, true, mpa_conn(true, SR_MPA_RTR_READ, 1, 1), NEVER_MS);
	expect_rtr(&t, SR_MPA_RTR_READ);
	post_send1(&t.e, 1, IBV_WR_SEND, IBV_SEND_INLINE, x, 3, 0, 0, 0);
	to_sr_ctx(g_ctx)->priv_ops->disconnect(t.e.qp);
	assert_false(fd_readable(t.peer, 100));
	send_rtr_response(&t, true);
	expect_send(&t, 1, x, 3);
	raw_expect_end(&t.r);
	shutdown(t.peer, SHUT_WR);
	assert_int_equal(wait_closed(&t.e), 0);
	raw_qp_down(&t);
}

/*
 * Bad bytes already waiting when the stream is handed over: our Terminate answers them, but
 * only after the RTR, which is always the first FPDU.
 */
static void t_rtr_before_terminate(void **s)
{
	struct raw_qp t;
	uint8_t fp[64];
	size_t n;

	(void)s;
	rp_socks(&t, true);
	n = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, "abcde", 5);
	fp[n - 1] ^= 0x01; /* bad CRC */
	xsend(t.peer, fp, n);
	assert_true(fd_readable(t.qfd, T_WAIT_MS));
	ep_attach_ready(&t.e, t.qfd, true, mpa_conn(true, SR_MPA_RTR_READ, 1, 1), NEVER_MS);
	expect_rtr(&t, SR_MPA_RTR_READ);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_TERMINATE);
	raw_expect_end(&t.r);
	assert_int_equal(wait_closed(&t.e), -ECONNABORTED);
	raw_qp_down(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_siw_late_install),
		cmocka_unit_test(t_hold_order),
		cmocka_unit_test(t_hold_any_fpdu),
		cmocka_unit_test(t_hold_fallback),
		cmocka_unit_test(t_hold_disconnect),
		cmocka_unit_test(t_rtr_before_terminate),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
