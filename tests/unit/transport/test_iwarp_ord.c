// SPDX-License-Identifier: MIT
/*
 * Reads pipeline up to the negotiated ORD (issue 9: "READ pipelines up to the negotiated
 * ORD"), against a raw peer: with ORD 16 and 20 Reads posted, exactly 16 Read Requests go
 * out at once; the 17th waits for a response, and every response lets exactly one more go.
 */
#include "xport_helpers.h"

#define ORD 16u
#define NREAD 20u
#define RLEN 64u

static void expect_rreq(struct raw_qp *t, uint32_t i, const uint8_t *sink, uint32_t lkey)
{
	assert_int_equal(raw_next(&t->r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t->r.seg.opcode, SR_RDMAP_OP_READ_REQ);
	assert_int_equal(t->r.seg.msn, i + 1);
	assert_int_equal(t->r.seg.rreq.size, RLEN);
	assert_int_equal(t->r.seg.rreq.sink_stag, lkey);
	assert_int_equal(t->r.seg.rreq.sink_to, (uintptr_t)(sink + i * RLEN));
	assert_int_equal(t->r.seg.rreq.src_to, 0x1000 + i * RLEN);
}

static void ord_case(bool crc)
{
	struct raw_qp t;
	uint8_t *sink = calloc(NREAD, RLEN), *resp = malloc(NREAD * RLEN), mem[8], fp[256];
	struct ibv_mr *kmr, *mr;
	struct ibv_wc wc[NREAD];
	size_t fl;

	ep_create(&t.e, NULL, false);
	tcp_pair(&t.qfd, &t.peer);
	raw_init(&t.r, t.peer, crc);
	ep_attach(&t.e, t.qfd, true, mpa_conn(crc, 0, 4, ORD));
	fill(resp, NREAD * RLEN, 5);
	fill(mem, sizeof(mem), 6);
	kmr = ibv_reg_mr(t.e.pd, sink, NREAD * RLEN, IBV_ACCESS_LOCAL_WRITE);
	mr = ibv_reg_mr(t.e.pd, mem, sizeof(mem), IBV_ACCESS_REMOTE_READ);
	assert_non_null(kmr);
	assert_non_null(mr);
	for (uint32_t i = 0; i < NREAD; i++)
		post_send1(&t.e, i + 1, IBV_WR_RDMA_READ, 0, sink + i * RLEN, RLEN, kmr->lkey,
			   0x1000 + i * RLEN, 0x5151);

	/* ORD of them at once, without a single response */
	for (uint32_t i = 0; i < ORD; i++)
		expect_rreq(&t, i, sink, kmr->lkey);
	/*
	 * Had the 17th gone out too, it would sit in the stream before anything we provoke
	 * now: our own Read Request must be answered first.
	 */
	fl = fpdu_rreq(fp, crc, 1, 0xdead01, 0x9000, sizeof(mem), mr->rkey, (uintptr_t)mem);
	xsend(t.peer, fp, fl);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_RESP);
	assert_int_equal(t.r.seg.stag, 0xdead01);

	/* each response, in order, releases exactly the next Request */
	for (uint32_t k = 0; k < NREAD; k++) {
		fl = fpdu_tagged(fp, crc, SR_RDMAP_OP_READ_RESP, true, kmr->lkey,
				 (uintptr_t)(sink + k * RLEN), resp + k * RLEN, RLEN);
		xsend(t.peer, fp, fl);
		if (k + ORD < NREAD)
			expect_rreq(&t, k + ORD, sink, kmr->lkey);
	}
	wait_wc(t.e.scq, wc, NREAD);
	for (uint32_t i = 0; i < NREAD; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, i + 1);
		assert_int_equal(wc[i].opcode, IBV_WC_RDMA_READ);
	}
	assert_true(memcmp(sink, resp, NREAD * RLEN) == 0);
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(kmr), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	ep_destroy(&t.e);
	close(t.peer);
	free(sink);
	free(resp);
}

static void t_ord_crc(void **s)
{
	(void)s;
	ord_case(true);
}

static void t_ord_nocrc(void **s)
{
	(void)s;
	ord_case(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_ord_crc),
		cmocka_unit_test(t_ord_nocrc),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
