// SPDX-License-Identifier: MIT
/*
 * What one QP accepts from a raw peer (test code on a plain socket that builds FPDUs with the
 * codec): FPDUs split at every byte or many to a read, zero-length segments; and how malformed
 * input is refused: Terminate bytes, QP to ERR with QP_FATAL, receives flushed, memory outside
 * the MR untouched; more Read Requests than IRD; the peer's Terminate and FIN.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>

#include "xport_helpers.h"

/*
 * The end of a stream test: two receives completed with these lengths, the Read Request's
 * response (sink STag/TO) carries `src`, the stream is still open; then tear down.
 */
static void stream_done(struct raw_qp *t, uint32_t len1, uint32_t len2, uint32_t stag, uint64_t to,
			const uint8_t *src, size_t len, struct ibv_mr *rmr, struct ibv_mr *mmr)
{
	struct ibv_wc wc[2];
	uint8_t got[1024];

	assert_true(len <= sizeof(got));
	wait_wc(t->e.rcq, wc, 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].byte_len, len1);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].byte_len, len2);
	t->r.to_base = to;
	assert_int_equal(raw_next(&t->r, got, sizeof(got), T_WAIT_MS), 0);
	assert_int_equal(t->r.seg.opcode, SR_RDMAP_OP_READ_RESP);
	assert_int_equal(t->r.seg.stag, stag);
	assert_int_equal(t->r.seg.to, to);
	assert_true(t->r.seg.last);
	assert_memory_equal(got, src, len);
	assert_int_equal(closed_calls(&t->e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	assert_int_equal(ibv_dereg_mr(mmr), 0);
	raw_qp_down(t);
}

/* Valid FPDUs delivered one byte per segment: every split of the stream works. */
static void t_bytewise(void **s)
{
	struct raw_qp t;
	uint8_t *st = malloc(1 << 16), *rbuf = calloc(1, 1024), *mem = calloc(1, PG), msg[300];
	struct ibv_mr *rmr, *mmr;
	size_t l = 0;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(true, 0, 4, 4), false);
	rmr = ibv_reg_mr(t.e.pd, rbuf, 1024, IBV_ACCESS_LOCAL_WRITE);
	mmr = ibv_reg_mr(t.e.pd, mem, PG, ACC_ALL);
	post_recv1(&t.e, 1, rbuf, 512, rmr->lkey);
	post_recv1(&t.e, 2, rbuf + 512, 512, rmr->lkey);
	fill(msg, sizeof(msg), 77);
	fill(mem + 2000, 64, 78);
	/* Send of 300 bytes in three segments */
	for (int i = 0; i < 3; i++)
		l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, i == 2, 1, (uint32_t)i * 100, 0,
				   msg + i * 100, 100);
	/* Write of 201 bytes in two segments (odd lengths: pads) */
	l += fpdu_tagged(st + l, true, SR_RDMAP_OP_WRITE, false, mmr->rkey,
			 (uintptr_t)mem + 1000, msg, 101);
	l += fpdu_tagged(st + l, true, SR_RDMAP_OP_WRITE, true, mmr->rkey,
			 (uintptr_t)mem + 1101, msg + 101, 100);
	/* Read Request of 64 bytes */
	l += fpdu_rreq(st + l, true, 1, 0x77, 0x5000, 64, mmr->rkey, (uintptr_t)mem + 2000);
	/* solicited Send of 5 */
	l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND_SE, true, 2, 0, 0, "hello", 5);
	xsend_bytewise(t.peer, st, l);

	stream_done(&t, 300, 5, 0x77, 0x5000, mem + 2000, 64, rmr, mmr);
	assert_memory_equal(rbuf, msg, 300);
	assert_memory_equal(rbuf + 512, "hello", 5);
	assert_memory_equal(mem + 1000, msg, 201);
	free(st);
	free(rbuf);
	free(mem);
}

/*
 * The same kinds of FPDUs with payloads large enough for the receiver to read each one's
 * trailer and the next header together with its payload (look-ahead), all written at once
 * so the look-ahead always finds them: Writes and a Send in several segments, a Read
 * Request (longer header than the look-ahead) and a short Send after a long one.
 */
static void t_lookahead_stream(void **s)
{
	struct raw_qp t;
	uint8_t *st = malloc(1 << 16), *rbuf = calloc(1, 4096), *mem = calloc(1, 4 * PG);
	uint8_t msg[3000];
	struct ibv_mr *rmr, *mmr;
	size_t l = 0;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(true, 0, 4, 4), false);
	rmr = ibv_reg_mr(t.e.pd, rbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	mmr = ibv_reg_mr(t.e.pd, mem, 4 * PG, ACC_ALL);
	post_recv1(&t.e, 1, rbuf, 2048, rmr->lkey);
	post_recv1(&t.e, 2, rbuf + 2048, 2048, rmr->lkey);
	fill(msg, sizeof(msg), 91);
	fill(mem + 3 * PG, 700, 92);
	/* Write of 2001 bytes in two segments, then one of 999 (odd: pads) */
	l += fpdu_tagged(st + l, true, SR_RDMAP_OP_WRITE, false, mmr->rkey, (uintptr_t)mem,
			 msg, 1000);
	l += fpdu_tagged(st + l, true, SR_RDMAP_OP_WRITE, true, mmr->rkey,
			 (uintptr_t)mem + 1000, msg + 1000, 1001);
	l += fpdu_tagged(st + l, true, SR_RDMAP_OP_WRITE, true, mmr->rkey,
			 (uintptr_t)mem + 2001, msg + 2001, 999);
	/* Send of 1800 in three segments */
	for (int i = 0; i < 3; i++)
		l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, i == 2, 1, (uint32_t)i * 600, 0,
				   msg + i * 600, 600);
	/* Read Request of 700, then a Send of 5 */
	l += fpdu_rreq(st + l, true, 1, 0x99, 0x8000, 700, mmr->rkey, (uintptr_t)mem + 3 * PG);
	l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, 2, 0, 0, "tail!", 5);
	xsend(t.peer, st, l);

	stream_done(&t, 1800, 5, 0x99, 0x8000, mem + 3 * PG, 700, rmr, mmr);
	assert_memory_equal(rbuf, msg, 1800);
	assert_memory_equal(rbuf + 2048, "tail!", 5);
	assert_memory_equal(mem, msg, 3000);
	free(st);
	free(rbuf);
	free(mem);
}

/*
 * Malformed bytes that arrive through the look-ahead: a 1000-byte Write whose trailer (read
 * ahead with its payload) has a bad CRC, and a good one followed by a header with a bad DDP
 * version (its first 16 bytes read ahead). Each must end the stream with the right
 * Terminate, and only the good Write may be placed.
 */
static void t_lookahead_malformed(void **s)
{
	static const struct {
		bool bad_crc;
		uint8_t layer, etype, ecode;
	} cases[] = { { true, 2, 0, 0x02 }, { false, 1, 2, 0x06 } };

	(void)s;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct raw_qp t;
		uint8_t *st = malloc(8192), *mem = calloc(1, PG), msg[1000], data[8] = { 0 };
		struct ibv_mr *mmr;
		struct sr_term_info got;
		size_t l;

		raw_qp_attach(&t, true, mpa_conn(true, 0, 4, 4), false);
		mmr = ibv_reg_mr(t.e.pd, mem, PG, ACC_ALL);
		fill(msg, sizeof(msg), 93);
		l = fpdu_tagged(st, true, SR_RDMAP_OP_WRITE, true, mmr->rkey, (uintptr_t)mem, msg,
				sizeof(msg));
		if (cases[k].bad_crc)
			st[l - 1] ^= 0x01;
		/* a Send whose DDP version is 2, with a good CRC over the bad header */
		fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, data, 8);
		st[l + 2] = (uint8_t)((st[l + 2] & ~SR_DDP_DV_MASK) | 2);
		l += fpdu_finish(st + l, SR_FPDU_HDR_UNTAGGED, data, 8, true);
		xsend(t.peer, st, l);

		assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_TERMINATE);
		assert_int_equal(sr_term_parse(t.r.fpdu + SR_FPDU_HDR_UNTAGGED,
					       t.r.seg.ulpdu_len - SR_DDP_UNTAGGED_HDR_LEN, &got),
				 0);
		assert_int_equal(got.cause.layer, cases[k].layer);
		assert_int_equal(got.cause.etype, cases[k].etype);
		assert_int_equal(got.cause.ecode, cases[k].ecode);
		raw_expect_end(&t.r);
		assert_true(wait_closed(&t.e) < 0);
		assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
		/* the Write's payload is placed before its CRC is known (ddp.h); a good one
		 * must be complete */
		if (!cases[k].bad_crc)
			assert_memory_equal(mem, msg, sizeof(msg));
		assert_int_equal(ibv_dereg_mr(mmr), 0);
		raw_qp_down(&t);
		free(st);
		free(mem);
	}
}

/* ------------------------------------------------------------ malformed -- */

enum mk {
	MK_BAD_CRC,
	MK_DDP_VERSION,
	MK_OPCODE,
	MK_MSN_RANGE,
	MK_WRITE_STAG,
	MK_WRITE_BOUNDS,
	MK_WRITE_RIGHTS,
	MK_WRITE_PD,
	MK_SEND_NOBUF,
	MK_SEND_TOO_LONG,
	MK_RREQ_STAG,
	MK_RREQ_RIGHTS,
	MK_SEND_INV_BAD,
	MK_SEND_INV_MR,
	MK_TRUNCATED,
};

static const struct mcase {
	enum mk kind;
	const char *name;
	enum sr_iw_err err;
	uint8_t layer, etype, ecode;
	uint16_t hdrct;
	int recvs;        /* receives posted */
	bool inv_err;     /* the first receive completes with REM_INV_REQ_ERR */
} mcases[] = {
	{ MK_BAD_CRC, "bad CRC", SR_IW_ERR_MPA_CRC, 2, 0, 0x02, 0, 2, false },
	{ MK_DDP_VERSION, "DDP version", SR_IW_ERR_DDP_U_VERSION, 1, 2, 0x06, 0, 2, false },
	{ MK_OPCODE, "opcode", SR_IW_ERR_RDMAP_OPCODE, 0, 2, 0x06, 0, 2, false },
	{ MK_MSN_RANGE, "MSN", SR_IW_ERR_DDP_U_MSN_RANGE, 1, 2, 0x03,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, 2, false },
	{ MK_WRITE_STAG, "Write STag", SR_IW_ERR_DDP_T_STAG, 1, 1, 0x00,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, 2, false },
	{ MK_WRITE_BOUNDS, "Write bounds", SR_IW_ERR_DDP_T_BOUNDS, 1, 1, 0x01,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, 2, false },
	{ MK_WRITE_RIGHTS, "Write rights", SR_IW_ERR_RDMAP_ACCESS, 0, 1, 0x02,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, 2, false },
	{ MK_WRITE_PD, "Write PD", SR_IW_ERR_DDP_T_NOT_ASSOC, 1, 1, 0x02,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, 2, false },
	{ MK_SEND_NOBUF, "Send no buffer", SR_IW_ERR_DDP_U_MSN_NOBUF, 1, 2, 0x02,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, 0, false },
	{ MK_SEND_TOO_LONG, "Send too long", SR_IW_ERR_DDP_U_TOO_LONG, 1, 2, 0x05,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, 2, false },
	{ MK_RREQ_STAG, "Read STag", SR_IW_ERR_RDMAP_STAG, 0, 1, 0x00,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D | SR_TERM_HDRCT_R, 2, false },
	{ MK_RREQ_RIGHTS, "Read rights", SR_IW_ERR_RDMAP_ACCESS, 0, 1, 0x02,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D | SR_TERM_HDRCT_R, 2, false },
	{ MK_SEND_INV_BAD, "Send-Inv bad STag", SR_IW_ERR_RDMAP_INV_OP, 0, 2, 0x09,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, 2, true },
	/* a plain MR of the QP's own PD: never invalidated remotely, the same answer */
	{ MK_SEND_INV_MR, "Send-Inv plain MR", SR_IW_ERR_RDMAP_INV_OP, 0, 2, 0x09,
	  SR_TERM_HDRCT_M | SR_TERM_HDRCT_D, 2, true },
	{ MK_TRUNCATED, "truncated", SR_IW_ERR_MPA_TCP_LOST, 2, 0, 0x01, 0, 2, false },
};

static void malformed_case(const struct mcase *mc)
{
	struct raw_qp t;
	uint8_t *mem = aligned_alloc(PG, 3 * PG), *ref = malloc(3 * PG), *rbuf = calloc(1, 64);
	uint8_t fp[256], exp[SR_TERM_FPDU_MAX], data[100];
	struct ibv_pd *pd2 = ibv_alloc_pd(g_ctx);
	struct ibv_mr *mr, *rmr;
	struct sr_term_info ti, got;
	struct ibv_wc wc[4];
	size_t fl, hl, el;
	int access = ACC_ALL;
	struct ibv_pd *mpd;

	print_message("case: %s\n", mc->name);
	raw_qp_attach(&t, true, mpa_conn(true, 0, 4, 4), false);
	memset(mem, 0xee, 3 * PG);      /* guard zones */
	memset(mem + PG, 0x11, PG);     /* the region */
	memcpy(ref, mem, 3 * PG);
	fill(data, sizeof(data), 5);
	if (mc->kind == MK_WRITE_RIGHTS)
		access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	if (mc->kind == MK_RREQ_RIGHTS)
		access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	mpd = mc->kind == MK_WRITE_PD ? pd2 : t.e.pd;
	mr = ibv_reg_mr(mpd, mem + PG, PG, access);
	rmr = ibv_reg_mr(t.e.pd, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_non_null(rmr);
	for (int i = 0; i < mc->recvs; i++)
		post_recv1(&t.e, 10 + (uint64_t)i, rbuf + i * 16, 16, rmr->lkey);

	hl = SR_FPDU_HDR_UNTAGGED;
	switch (mc->kind) {
	case MK_BAD_CRC:
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, "abcde", 5);
		fp[fl - 1] ^= 0x01;
		break;
	case MK_DDP_VERSION:
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, data, 8);
		fp[2] = (uint8_t)((fp[2] & ~SR_DDP_DV_MASK) | 2);
		fl = fpdu_finish(fp, hl, data, 8, true); /* good CRC over the bad header */
		break;
	case MK_OPCODE:
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, data, 8);
		fp[3] = (uint8_t)((fp[3] & ~SR_RDMAP_OPCODE_MASK) | 0x8);
		fl = fpdu_finish(fp, hl, data, 8, true);
		break;
	case MK_MSN_RANGE:
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 5, 0, 0, data, 8);
		break;
	case MK_WRITE_STAG:
		hl = SR_FPDU_HDR_TAGGED;
		fl = fpdu_tagged(fp, true, SR_RDMAP_OP_WRITE, true, mr->rkey ^ 0x00ff0000u,
				 (uintptr_t)mem + PG, data, 32);
		break;
	case MK_WRITE_BOUNDS:
		hl = SR_FPDU_HDR_TAGGED;
		fl = fpdu_tagged(fp, true, SR_RDMAP_OP_WRITE, true, mr->rkey,
				 (uintptr_t)mem + 2 * PG - 10, data, 20);
		break;
	case MK_WRITE_RIGHTS:
	case MK_WRITE_PD:
		hl = SR_FPDU_HDR_TAGGED;
		fl = fpdu_tagged(fp, true, SR_RDMAP_OP_WRITE, true, mr->rkey, (uintptr_t)mem + PG,
				 data, 20);
		break;
	case MK_SEND_NOBUF:
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, data, 8);
		break;
	case MK_SEND_TOO_LONG:
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, data, 17);
		break;
	case MK_RREQ_STAG:
		hl = SR_FPDU_HDR_RREQ;
		fl = fpdu_rreq(fp, true, 1, 0x99, 0, 16, mr->rkey ^ 0x00ff0000u,
			       (uintptr_t)mem + PG);
		break;
	case MK_RREQ_RIGHTS:
		hl = SR_FPDU_HDR_RREQ;
		fl = fpdu_rreq(fp, true, 1, 0x99, 0, 16, mr->rkey, (uintptr_t)mem + PG);
		break;
	case MK_SEND_INV_BAD:
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND_INV, true, 1, 0, 0x00abcd01, data, 8);
		break;
	case MK_SEND_INV_MR:
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND_INV, true, 1, 0, mr->rkey, data, 8);
		break;
	case MK_TRUNCATED:
	default:
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, data, 8);
		break;
	}
	if (mc->kind == MK_TRUNCATED) {
		xsend(t.peer, fp, fl / 2);
		usleep(20000);
		shutdown(t.peer, SHUT_WR);
	} else {
		xsend(t.peer, fp, fl);
	}

	/* the exact Terminate: cause, and the offending headers as the layer requires */
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_TERMINATE);
	assert_int_equal(sr_term_parse(t.r.fpdu + SR_FPDU_HDR_UNTAGGED,
				       t.r.seg.ulpdu_len - SR_DDP_UNTAGGED_HDR_LEN, &got), 0);
	if (got.cause.layer != mc->layer || got.cause.etype != mc->etype ||
	    got.cause.ecode != mc->ecode)
		print_message("got %u/%u/0x%x\n", got.cause.layer, got.cause.etype,
			      got.cause.ecode);
	assert_int_equal(got.cause.layer, mc->layer);
	assert_int_equal(got.cause.etype, mc->etype);
	assert_int_equal(got.cause.ecode, mc->ecode);
	assert_int_equal(got.hdrct, mc->hdrct);
	sr_term_info_init(&ti, mc->err, fp + SR_MPA_LEN_SIZE, hl - SR_MPA_LEN_SIZE,
			  sr_get_be16(fp));
	el = (size_t)sr_term_build(exp, sizeof(exp), &ti, 1, true);
	assert_int_equal(t.r.fpdu_len, el);
	assert_memory_equal(t.r.fpdu, exp, el);
	if (mc->kind == MK_BAD_CRC) {
		static const uint8_t wire[] = { 0x00, 0x16, 0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2,
						0,    0,    0,    1,    0, 0, 0, 0, 0x20, 0x02,
						0,    0,    0x7f, 0xe4, 0x25, 0x85 };

		assert_memory_equal(t.r.fpdu, wire, sizeof(wire)); /* docs/WIRE.md §3.3 */
	}
	raw_expect_end(&t.r);

	/* the QP: closed with an error, in ERR, QP_FATAL, receives flushed */
	assert_true(wait_closed(&t.e) < 0);
	assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
	if (!mc->inv_err) /* a receive completed in error moved it to ERR already: no event */
		assert_true(wait_async(t.e.qp, IBV_EVENT_QP_FATAL, T_WAIT_MS));
	if (mc->recvs) {
		wait_wc(t.e.rcq, wc, mc->recvs);
		for (int i = 0; i < mc->recvs; i++) {
			assert_int_equal(wc[i].wr_id, 10 + i);
			assert_int_equal(wc[i].status, i == 0 && mc->inv_err ?
							       IBV_WC_REM_INV_REQ_ERR :
							       IBV_WC_WR_FLUSH_ERR);
		}
	}
	no_wc(t.e.rcq, 20);
	/* nothing placed anywhere: not in the region, not around it */
	assert_memory_equal(mem, ref, 3 * PG);
	assert_int_equal(closed_calls(&t.e, NULL), 1);
	if (mc->kind == MK_SEND_INV_MR) {
		/* still valid: a lookup as a Write would make it finds the region */
		struct sr_mr *m;
		uint8_t *p;

		assert_int_equal(sr_mr_resolve(mr->rkey, to_sr_pd(mpd), (uintptr_t)mem + PG, 1,
					       IBV_ACCESS_REMOTE_WRITE, &m, &p), SR_ACC_OK);
		sr_mr_put(m);
	}

	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	raw_qp_down(&t);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	free(mem);
	free(ref);
	free(rbuf);
}

static void t_malformed(void **s)
{
	(void)s;
	for (size_t i = 0; i < SR_ARRAY_SIZE(mcases); i++)
		malformed_case(&mcases[i]);
}

/*
 * More Read Requests than IRD while a response is still going out: the stream is
 * terminated. The Terminate can only follow the FPDU in progress, which fills the socket;
 * the peer starts draining only 100 ms later, so the Terminate gets out only because the
 * transport keeps sending (bounded) before it closes.
 */
struct ird_drain {
	struct raw_qp *t;
	int ret;
	bool term_seen;
	struct sr_term_info got;
};

static void *ird_drain_main(void *arg)
{
	struct ird_drain *d = arg;

	usleep(100000);
	while ((d->ret = raw_next(&d->t->r, NULL, 0, T_WAIT_MS)) == 0) {
		if (d->t->r.seg.opcode == SR_RDMAP_OP_TERMINATE) {
			sr_term_parse(d->t->r.fpdu + SR_FPDU_HDR_UNTAGGED,
				      d->t->r.seg.ulpdu_len - SR_DDP_UNTAGGED_HDR_LEN, &d->got);
			d->term_seen = true;
		}
	}
	return NULL;
}

static void t_ird_exceeded(void **s)
{
	struct raw_qp t;
	const size_t n = 32u << 20;
	uint8_t *mem = malloc(n), fp[128];
	struct ird_drain d = { .t = &t };
	pthread_t th;
	struct ibv_mr *mr;
	size_t l;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(false, 0, 1, 1), false);
	t.r.mulpdu = 0; /* the QP's socket is gone by the time we read: its MSS is unknown */
	memset(mem, 0x3c, n);
	mr = ibv_reg_mr(t.e.pd, mem, n, IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	l = fpdu_rreq(fp, false, 1, 0x10, 0, (uint32_t)n, mr->rkey, (uintptr_t)mem);
	l += fpdu_rreq(fp + l, false, 2, 0x11, 0, 0, mr->rkey, (uintptr_t)mem);
	xsend(t.peer, fp, l);
	assert_int_equal(pthread_create(&th, NULL, ird_drain_main, &d), 0);
	assert_true(wait_closed(&t.e) < 0);
	assert_int_equal(qp_state(&t.e), IBV_QPS_ERR);
	assert_true(wait_async(t.e.qp, IBV_EVENT_QP_FATAL, T_WAIT_MS));
	pthread_join(th, NULL);
	assert_true(d.ret == 1 || d.ret == -ECONNRESET);
	assert_true(d.term_seen);
	assert_int_equal(d.got.cause.layer, 0);
	assert_int_equal(d.got.cause.etype, 2);
	assert_int_equal(d.got.cause.ecode, 0x07);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	raw_qp_down(&t);
	free(mem);
}

/* A Terminate from the peer fails the oldest outstanding request with the peer's verdict. */
static void t_peer_terminate(void **s)
{
	struct raw_qp t;
	uint8_t fp[128], *sink = malloc(64);
	struct ibv_mr *mr;
	struct sr_term_info ti;
	struct ibv_wc wc[2];
	ssize_t l;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(true, 0, 4, 4), false);
	mr = ibv_reg_mr(t.e.pd, sink, 64, IBV_ACCESS_LOCAL_WRITE);
	post_send1(&t.e, 1, IBV_WR_RDMA_READ, 0, sink, 64, mr->lkey, 0x1000, 0x2222);
	post_recv1(&t.e, 2, NULL, 0, 0);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_REQ);
	sr_term_info_init(&ti, SR_IW_ERR_RDMAP_STAG, t.r.fpdu + 2, SR_FPDU_HDR_RREQ - 2,
			  t.r.seg.ulpdu_len);
	l = sr_term_build(fp, sizeof(fp), &ti, 1, true);
	assert_true(l > 0);
	xsend(t.peer, fp, (size_t)l);
	wait_wc(t.e.scq, wc, 1);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	assert_true(wait_closed(&t.e) < 0);
	wait_wc(t.e.rcq, wc, 1);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	raw_qp_down(&t);
	free(sink);
}

/* The peer closes between FPDUs: an orderly close, closed(0), not fatal. */
static void t_peer_fin(void **s)
{
	struct raw_qp t;
	struct ibv_wc wc;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(true, SR_MPA_RTR_WRITE, 4, 4), false);
	post_recv1(&t.e, 1, NULL, 0, 0);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0); /* RTR */
	shutdown(t.peer, SHUT_WR);
	assert_int_equal(wait_closed(&t.e), 0);
	raw_expect_end(&t.r);
	wait_wc(t.e.rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_false(wait_async(t.e.qp, IBV_EVENT_QP_FATAL, 50));
	raw_qp_down(&t);
}

/*
 * Zero-length Send segments without the Last flag open a message; only its first segment
 * takes a receive. With an SRQ of four receives, a message made of 50 empty segments and a
 * last one of 5 bytes takes one, and three more messages take the other three: four
 * completions, in order, no Terminate, no MR reference left behind.
 */
static void t_zero_len_segments_srq(void **s)
{
	struct raw_qp t;
	uint8_t *st = malloc(8192), *rbuf = calloc(1, 64);
	struct ibv_mr *rmr;
	struct ibv_wc wc[4];
	size_t l = 0;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(true, 0, 4, 4), true);
	rmr = ibv_reg_mr(t.e.pd, rbuf, 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(rmr);
	for (int i = 0; i < 4; i++)
		post_recv1(&t.e, 10 + (uint64_t)i, rbuf + i * 16, 16, rmr->lkey);
	for (int i = 0; i < 50; i++)
		l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, false, 1, 0, 0, NULL, 0);
	l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, "hello", 5);
	for (uint32_t m = 2; m <= 4; m++)
		l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, m, 0, 0, "abc", m);
	xsend(t.peer, st, l);
	wait_wc(t.e.rcq, wc, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, 10 + i);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].byte_len, i == 0 ? 5 : (uint32_t)i + 1);
	}
	assert_memory_equal(rbuf, "hello", 5);
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_false(fd_readable(t.peer, 0)); /* no Terminate */
	assert_int_equal(atomic_load(&mr_of(rmr)->refs), 1);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	raw_qp_down(&t);
	free(st);
	free(rbuf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_bytewise),
		cmocka_unit_test(t_lookahead_stream),
		cmocka_unit_test(t_lookahead_malformed),
		cmocka_unit_test(t_malformed),
		cmocka_unit_test(t_ird_exceeded),
		cmocka_unit_test(t_peer_terminate),
		cmocka_unit_test(t_peer_fin),
		cmocka_unit_test(t_zero_len_segments_srq),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
