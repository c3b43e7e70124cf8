// SPDX-License-Identifier: MIT
/*
 * Memory going away under a transfer, against a raw peer: ibv_dereg_mr cuts off a Write being
 * placed, a Read Response being sent (inside an FPDU: the stream is aborted; between FPDUs:
 * the Terminate) and a small Send waiting in a batch; memory unmapped without deregistration
 * (EFAULT) ends the stream.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>

#include "xport_helpers.h"

/* The next segment from the QP is a Terminate with this cause; then the stream ends. */
static void expect_term_end(struct raw_qp *t, uint8_t layer, uint8_t etype, uint8_t ecode)
{
	struct sr_term_info got;

	assert_int_equal(raw_next(&t->r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t->r.seg.opcode, SR_RDMAP_OP_TERMINATE);
	assert_int_equal(sr_term_parse(t->r.fpdu + SR_FPDU_HDR_UNTAGGED,
				       t->r.seg.ulpdu_len - SR_DDP_UNTAGGED_HDR_LEN, &got), 0);
	assert_int_equal(got.cause.layer, layer);
	assert_int_equal(got.cause.etype, etype);
	assert_int_equal(got.cause.ecode, ecode);
	raw_expect_end(&t->r);
}

/*
 * A Write whose header passed every check, half of its payload placed, then the region is
 * deregistered and the memory reused: the other half must not land. The QP refuses the
 * rest as an invalid STag (DDP tagged buffer error), errs and flushes its receive.
 */
static void t_dereg_cuts_write(void **s)
{
	struct raw_qp t;
	const size_t wl = 3000, half = 1000;
	uint8_t *mem = aligned_alloc(PG, 3 * PG), *ref = malloc(3 * PG), *rbuf = calloc(1, 64);
	uint8_t data[3000], fp[3100];
	struct ibv_mr *mr, *rmr;
	struct ibv_wc wc;
	uint64_t end;
	size_t fl;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(true, 0, 4, 4), false);
	memset(mem, 0xee, 3 * PG);
	memset(mem + PG, 0x11, PG);
	fill(data, wl, 31);
	mr = ibv_reg_mr(t.e.pd, mem + PG, PG, ACC_ALL);
	rmr = ibv_reg_mr(t.e.pd, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_non_null(rmr);
	post_recv1(&t.e, 7, rbuf, 64, rmr->lkey);
	fl = fpdu_tagged(fp, true, SR_RDMAP_OP_WRITE, true, mr->rkey, (uintptr_t)mem + PG, data,
			 wl);
	xsend(t.peer, fp, SR_FPDU_HDR_TAGGED + half);
	/* the first half is placed: the header was accepted, the Write is in flight */
	end = now_ms() + T_WAIT_MS;
	while (memcmp(mem + PG, data, half) != 0 && now_ms() < end)
		usleep(1000);
	assert_memory_equal(mem + PG, data, half);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	memset(mem + PG, 0x5a, PG); /* the application reuses the memory */
	memcpy(ref, mem, 3 * PG);
	xsend(t.peer, fp + SR_FPDU_HDR_TAGGED + half, fl - SR_FPDU_HDR_TAGGED - half);

	expect_term_end(&t, 1, 1, 0x00);
	assert_true(wait_closed(&t.e) < 0);
	assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
	assert_true(wait_async(t.e.qp, IBV_EVENT_QP_FATAL, T_WAIT_MS));
	wait_wc(t.e.rcq, &wc, 1);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_memory_equal(mem, ref, 3 * PG);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	raw_qp_down(&t);
	free(mem);
	free(ref);
	free(rbuf);
}

/* The QP's transmit side is stuck on a full socket in the middle of a Read Response. */
/* A Read Response waits for the socket, with nresp responses owed in all (queued ones too). */
static bool rresp_blocked(struct raw_qp *t, uint32_t nresp)
{
	struct sr_iw_conn *c = xt_conn(t->e.qp);
	bool b;

	pthread_mutex_lock(&c->tx_lock);
	b = c->tx_want_out && c->kind == SR_IW_TX_RRESP && c->resp_count >= nresp;
	pthread_mutex_unlock(&c->tx_lock);
	return b;
}

/* Small socket buffers on both ends, so that little of a response is in flight. */
static void small_buffers(struct raw_qp *t)
{
	int sz = 65536;

	assert_int_equal(setsockopt(t->qfd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)), 0);
	assert_int_equal(setsockopt(t->peer, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
}

static void wait_rresp_blocked(struct raw_qp *t, uint32_t nresp)
{
	uint64_t end = now_ms() + T_WAIT_MS;

	while (!rresp_blocked(t, nresp) && now_ms() < end)
		usleep(1000);
	assert_true(rresp_blocked(t, nresp));
}

/*
 * A long Read Response whose requester stops reading, then the source region is
 * deregistered and its memory rewritten: not one byte of the new contents may go out. What
 * arrives is the old contents only (copied into the socket before the deregistration), the
 * response stops short, the stream ends (a Terminate for the invalid STag when the response
 * stopped between two FPDUs, else an abort) and the QP errs.
 */
static void dereg_stops_rresp(bool crc)
{
	struct raw_qp t;
	const size_t n = 8u << 20;
	uint8_t *mem = malloc(n), *orig = malloc(n), *got = calloc(1, n), fp[128];
	struct ibv_mr *mr;
	uint64_t off = 0;
	int ret;

	raw_qp_attach(&t, true, mpa_conn(crc, 0, 1, 1), false);
	small_buffers(&t);
	t.r.mulpdu = 0; /* the QP's socket is gone by the time we read: its MSS is unknown */
	fill(mem, n, 41);
	memcpy(orig, mem, n);
	mr = ibv_reg_mr(t.e.pd, mem, n, IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	xsend(t.peer, fp, fpdu_rreq(fp, crc, 1, 0x10, 0x9000, (uint32_t)n, mr->rkey,
				    (uintptr_t)mem));
	wait_rresp_blocked(&t, 1);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	for (size_t i = 0; i < n; i++)
		mem[i] ^= 0xff;
	t.r.to_base = 0x9000;
	while ((ret = raw_next(&t.r, got, n, T_WAIT_MS)) == 0 &&
	       t.r.seg.opcode == SR_RDMAP_OP_READ_RESP) {
		assert_int_equal(t.r.seg.to, 0x9000 + off);
		off += t.r.seg.payload_len;
		assert_false(t.r.seg.last);
	}
	print_message("crc %d: %llu of %zu bytes sent, then %s\n", crc, (unsigned long long)off,
		      n, ret == 0 ? "a Terminate" : "the end");
	if (ret == 0) {
		struct sr_term_info ti;

		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_TERMINATE);
		assert_int_equal(sr_term_parse(t.r.fpdu + SR_FPDU_HDR_UNTAGGED,
					       t.r.seg.ulpdu_len - SR_DDP_UNTAGGED_HDR_LEN, &ti),
				 0);
		assert_int_equal(ti.cause.layer, 0);
		assert_int_equal(ti.cause.etype, 1);
		assert_int_equal(ti.cause.ecode, 0x00);
		raw_expect_end(&t.r);
	} else {
		assert_int_equal(ret, -ECONNRESET); /* ended inside an FPDU */
	}
	assert_true(off < n);
	/* every byte that arrived is the old contents (received bytes are compared whole:
	 * a partial last FPDU landed in got too) */
	assert_memory_equal(got, orig, off);
	assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
	shutdown(t.peer, SHUT_WR);
	assert_true(wait_closed(&t.e) < 0);
	raw_qp_down(&t);
	free(mem);
	free(orig);
	free(got);
}

static void t_dereg_stops_rresp_crc(void **s)
{
	(void)s;
	dereg_stops_rresp(true);
}

static void t_dereg_stops_rresp_nocrc(void **s)
{
	(void)s;
	dereg_stops_rresp(false);
}

/*
 * A Read Response still queued behind another one when its region is deregistered never
 * starts: the first response completes, then the peer gets the Terminate for an invalid
 * STag (RDMAP remote protection error) instead of a byte of the second, and the FIN.
 */
static void dereg_queued_rresp(bool crc)
{
	struct raw_qp t;
	const size_t na = 2u << 20, nb = 65536;
	uint8_t *a = malloc(na), *b = malloc(nb), *got = calloc(1, na), fp[256];
	struct ibv_mr *amr, *bmr;
	uint64_t off = 0;
	size_t l;

	raw_qp_attach(&t, true, mpa_conn(crc, 0, 2, 2), false);
	small_buffers(&t);
	t.r.mulpdu = 0;
	fill(a, na, 51);
	memset(b, 0x77, nb);
	amr = ibv_reg_mr(t.e.pd, a, na, IBV_ACCESS_REMOTE_READ);
	bmr = ibv_reg_mr(t.e.pd, b, nb, IBV_ACCESS_REMOTE_READ);
	assert_non_null(amr);
	assert_non_null(bmr);
	l = fpdu_rreq(fp, crc, 1, 0x10, 0, (uint32_t)na, amr->rkey, (uintptr_t)a);
	l += fpdu_rreq(fp + l, crc, 2, 0x20, 0, (uint32_t)nb, bmr->rkey, (uintptr_t)b);
	xsend(t.peer, fp, l);
	/* Both requests taken (the second one's STag checked) before the deregistration:
	 * else the second Request meets a dead STag and is refused as any bad Read. */
	wait_rresp_blocked(&t, 2);
	assert_int_equal(ibv_dereg_mr(bmr), 0);
	memset(b, 0x99, nb);
	do {
		assert_int_equal(raw_next(&t.r, got, na, T_WAIT_MS), 0);
		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_RESP);
		assert_int_equal(t.r.seg.stag, 0x10);
		off += t.r.seg.payload_len;
	} while (!t.r.seg.last);
	assert_int_equal(off, na);
	assert_memory_equal(got, a, na);
	expect_term_end(&t, 0, 1, 0x00);
	assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
	assert_true(wait_async(t.e.qp, IBV_EVENT_QP_FATAL, T_WAIT_MS));
	shutdown(t.peer, SHUT_WR);
	assert_true(wait_closed(&t.e) < 0);
	assert_int_equal(ibv_dereg_mr(amr), 0);
	raw_qp_down(&t);
	free(a);
	free(b);
	free(got);
}

static void t_dereg_queued_rresp_crc(void **s)
{
	(void)s;
	dereg_queued_rresp(true);
}

static void t_dereg_queued_rresp_nocrc(void **s)
{
	(void)s;
	dereg_queued_rresp(false);
}

/* The transmit side is blocked (socket full) in the middle of WQE wr_id. */
static bool wqe_blocked(struct raw_qp *t, uint64_t wr_id)
{
	struct sr_iw_conn *c = xt_conn(t->e.qp);
	bool b;

	pthread_mutex_lock(&c->tx_lock);
	b = c->tx_want_out && c->kind == SR_IW_TX_WQE && c->wqe && c->wqe->wr_id == wr_id;
	pthread_mutex_unlock(&c->tx_lock);
	return b;
}

/*
 * Small Sends queued behind a blocked Write, one of them from a region deregistered while
 * it waits: those before it share a batch and complete, it fails with a local protection
 * error only after them (never overtaking them), the peer gets the Terminate, the rest is
 * flushed.
 */
static void t_small_batch_dereg(void **s)
{
	struct raw_qp t;
	const size_t nw = 2u << 20;
	uint8_t *w = malloc(nw), *got = calloc(1, nw), a[4][16];
	struct ibv_mr *wmr, *amr, *cmr;
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sg[4];
	struct ibv_wc wc[5];
	uint64_t end, off = 0;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(true, 0, 4, 4), false);
	small_buffers(&t);
	t.r.mulpdu = 0;
	fill(w, nw, 61);
	fill(&a[0][0], sizeof(a), 62);
	wmr = ibv_reg_mr(t.e.pd, w, nw, 0);
	amr = ibv_reg_mr(t.e.pd, a, sizeof(a), 0);
	cmr = ibv_reg_mr(t.e.pd, a[2], sizeof(a[2]), 0);
	assert_non_null(wmr);
	assert_non_null(amr);
	assert_non_null(cmr);
	post_send1(&t.e, 1, IBV_WR_RDMA_WRITE, 0, w, (uint32_t)nw, wmr->lkey, 0x5000, 0x77);
	end = now_ms() + T_WAIT_MS;
	while (!wqe_blocked(&t, 1) && now_ms() < end)
		usleep(1000);
	assert_true(wqe_blocked(&t, 1));
	for (int i = 0; i < 4; i++) {
		sg[i] = (struct ibv_sge){ .addr = (uintptr_t)a[i], .length = 16,
					  .lkey = i == 2 ? cmr->lkey : amr->lkey };
		wr[i] = (struct ibv_send_wr){ .wr_id = 10 + (uint64_t)i,
					      .next = i < 3 ? &wr[i + 1] : NULL,
					      .sg_list = &sg[i], .num_sge = 1,
					      .opcode = IBV_WR_SEND,
					      .send_flags = IBV_SEND_SIGNALED };
	}
	assert_int_equal(ibv_post_send(t.e.qp, wr, &bad), 0);
	/* the Write still holds the socket: the Sends have not been looked at */
	assert_true(wqe_blocked(&t, 1));
	assert_int_equal(ibv_dereg_mr(cmr), 0);
	t.r.to_base = 0x5000;
	do {
		assert_int_equal(raw_next(&t.r, got, nw, T_WAIT_MS), 0);
		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_WRITE);
		off += t.r.seg.payload_len;
	} while (!t.r.seg.last);
	assert_int_equal(off, nw);
	assert_memory_equal(got, w, nw);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(raw_next(&t.r, got, nw, T_WAIT_MS), 0);
		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_SEND);
		assert_int_equal(t.r.seg.msn, i + 1);
		assert_memory_equal(got, a[i], 16);
	}
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_TERMINATE);
	wait_wc(t.e.scq, wc, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(wc[i].wr_id, i ? 10 + (uint64_t)i - 1 : 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[2].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[3].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(wc[4].status, IBV_WC_WR_FLUSH_ERR);
	shutdown(t.peer, SHUT_WR);
	assert_true(wait_closed(&t.e) < 0);
	assert_int_equal(ibv_dereg_mr(wmr), 0);
	assert_int_equal(ibv_dereg_mr(amr), 0);
	raw_qp_down(&t);
	free(w);
	free(got);
}

/*
 * The application unmaps (here: makes inaccessible) memory it registered while a Read
 * Response from it is blocked: sendmsg fails with EFAULT, and the stream must then end
 * and the QP err, not stay half alive. CRC off: computing a CRC over such memory would
 * fault in our own process, as any read of it would.
 */
static void t_efault_closes(void **s)
{
	struct raw_qp t;
	const size_t n = 8u << 20;
	uint8_t *mem = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t fp[128];
	struct ibv_mr *mr;
	int ret;

	(void)s;
	assert_true(mem != MAP_FAILED);
	raw_qp_attach(&t, true, mpa_conn(false, 0, 1, 1), false);
	small_buffers(&t);
	t.r.mulpdu = 0;
	memset(mem, 0x42, n);
	mr = ibv_reg_mr(t.e.pd, mem, n, IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	xsend(t.peer, fp, fpdu_rreq(fp, false, 1, 0x10, 0, (uint32_t)n, mr->rkey,
				    (uintptr_t)mem));
	wait_rresp_blocked(&t, 1);
	assert_int_equal(mprotect(mem, n, PROT_NONE), 0);
	while ((ret = raw_next(&t.r, NULL, 0, T_WAIT_MS)) == 0)
		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_RESP);
	assert_true(ret == 1 || ret == -ECONNRESET);
	assert_true(wait_closed(&t.e) < 0);
	assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
	assert_int_equal(mprotect(mem, n, PROT_READ | PROT_WRITE), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	raw_qp_down(&t);
	munmap(mem, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_dereg_cuts_write),
		cmocka_unit_test(t_dereg_stops_rresp_crc),
		cmocka_unit_test(t_dereg_stops_rresp_nocrc),
		cmocka_unit_test(t_dereg_queued_rresp_crc),
		cmocka_unit_test(t_dereg_queued_rresp_nocrc),
		cmocka_unit_test(t_small_batch_dereg),
		cmocka_unit_test(t_efault_closes),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
