// SPDX-License-Identifier: MIT
/*
 * What one QP puts on the wire, checked by a raw peer (test code on a plain socket that
 * parses FPDUs with the codec): the RTR first and byte for byte, nothing from a responder
 * before the initiator's first FPDU, MULPDU, CRC, MSNs, Read Response STag/TO, and how many
 * FPDUs share a sendmsg() (small Sends and Writes, Read Responses and Read Requests batched).
 */
#include <stdatomic.h>
#include <stdio.h>

#include "xport_helpers.h"

/*
 * The transport's sendmsg() calls on one socket, counted (linked with --wrap=sendmsg): how
 * many FPDUs share a call is what batching promises, and only the calls show it.
 */
ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
static atomic_int sendmsg_fd = -1, sendmsg_calls;

ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
	if (fd == atomic_load(&sendmsg_fd))
		atomic_fetch_add(&sendmsg_calls, 1);
	return __real_sendmsg(fd, m, flags);
}

static void count_sendmsg(int fd)
{
	atomic_store(&sendmsg_calls, 0);
	atomic_store(&sendmsg_fd, fd);
}

static const uint8_t rtr_write_crc[] = { 0x00, 0x0e, 0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0,
					 0,    0,    0,    0,    0xeb, 0xd3, 0x4c, 0x5f };
static const uint8_t rtr_read_crc[] = {
	0x00, 0x2e, 0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, /* DDP hdr */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* sink STag 0, sink TO 0 */
	0, 0, 0, 0, 0, 0, 0, 1,			/* size 0, source STag 1 */
	0, 0, 0, 0, 0, 0, 0, 0,			/* source TO 0 */
	0xba, 0x10, 0xe3, 0xc9
};
_Static_assert(sizeof(rtr_read_crc) == 52, "docs/WIRE.md §3.3 Read RTR");
static const uint8_t rresp0_crc[] = { 0x00, 0x0e, 0xc1, 0x42, 0, 0, 0, 0, 0, 0, 0, 0,
				      0,    0,    0,    0,    0x69, 0x75, 0xd6, 0xca };

/* The initiator's first FPDU is the negotiated RTR, byte for byte; queues continue after it. */
static void rtr_case(uint8_t rtr, bool crc)
{
	struct raw_qp t;
	uint8_t exp[64], msg[8];
	size_t elen;
	struct ibv_wc wc[2];
	uint8_t x[3] = { 1, 2, 3 };

	raw_qp_attach(&t, true, mpa_conn(crc, rtr, 1, 1), false);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	if (rtr == SR_MPA_RTR_WRITE) {
		memcpy(exp, rtr_write_crc, elen = sizeof(rtr_write_crc));
	} else if (rtr == SR_MPA_RTR_READ) {
		memcpy(exp, rtr_read_crc, elen = sizeof(rtr_read_crc));
	} else {
		elen = fpdu_untagged(exp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, NULL, 0);
		/* cross-check the builder on docs/WIRE.md §3.3's Send RTR: 00 12 41 43 ... MSN 1 */
		assert_int_equal(exp[1], 0x12);
		assert_int_equal(exp[3], 0x43);
	}
	if (!crc)
		memset(exp + elen - 4, 0, 4);
	assert_int_equal(t.r.fpdu_len, elen);
	assert_memory_equal(t.r.fpdu, exp, elen);
	if (rtr == SR_MPA_RTR_READ) {
		memcpy(exp, rresp0_crc, sizeof(rresp0_crc));
		if (!crc)
			memset(exp + sizeof(rresp0_crc) - 4, 0, 4);
		xsend(t.peer, exp, sizeof(rresp0_crc));
	}
	/* then the application's messages, MSNs continuing after the RTR's */
	post_send1(&t.e, 1, IBV_WR_SEND, IBV_SEND_INLINE, x, 3, 0, 0, 0);
	post_send1(&t.e, 2, IBV_WR_RDMA_READ, 0, NULL, 0, 0, 0x1000, 0x4242);
	assert_int_equal(raw_next(&t.r, msg, sizeof(msg), T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_SEND);
	assert_int_equal(t.r.seg.msn, rtr == SR_MPA_RTR_SEND ? 2 : 1);
	assert_memory_equal(msg, x, 3);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_REQ);
	assert_int_equal(t.r.seg.msn, rtr == SR_MPA_RTR_READ ? 2 : 1);
	assert_int_equal(t.r.seg.rreq.size, 0);
	assert_int_equal(t.r.seg.rreq.src_stag, 0x4242);
	assert_int_equal(t.r.seg.rreq.src_to, 0x1000);
	/* answer the zero-length READ */
	elen = fpdu_tagged(exp, crc, SR_RDMAP_OP_READ_RESP, true, t.r.seg.rreq.sink_stag,
			   t.r.seg.rreq.sink_to, NULL, 0);
	xsend(t.peer, exp, elen);
	wait_wc(t.e.scq, wc, 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].opcode, IBV_WC_RDMA_READ);
	raw_qp_down(&t);
}

static void t_rtr_first(void **s)
{
	(void)s;
	rtr_case(SR_MPA_RTR_WRITE, true);
	rtr_case(SR_MPA_RTR_READ, true);
	rtr_case(SR_MPA_RTR_SEND, true);
	rtr_case(SR_MPA_RTR_WRITE, false);
	rtr_case(SR_MPA_RTR_READ, false);
	rtr_case(SR_MPA_RTR_SEND, false);
}

/*
 * The context's private ops carry the iWARP transport; a hand-over of another kind is
 * refused with nothing taken: the QP stays free for the right one, the socket ours.
 */
static void t_attach_kind(void **s)
{
	const struct sr_priv_ops *ops = to_sr_ctx(g_ctx)->priv_ops;
	struct sr_xport_attach a = { .kind = SR_XPORT_NONE };
	struct raw_qp t;

	(void)s;
	assert_int_equal(ops->kind, SR_XPORT_IWARP);
	ep_create(&t.e, NULL, false);
	tcp_pair(&t.qfd, &t.peer);
	a.u.iwarp.fd = t.qfd;
	a.u.iwarp.initiator = true;
	a.u.iwarp.mpa = mpa_conn(true, 0, 1, 1);
	assert_int_equal(ops->attach(t.e.qp, &a), -EINVAL);
	a.kind = SR_XPORT_KINDS;
	assert_int_equal(ops->attach(t.e.qp, &a), -EINVAL);
	ep_attach(&t.e, t.qfd, true, mpa_conn(true, 0, 1, 1)); /* asserts 0: not EBUSY */
	raw_qp_down(&t);
}

/* The responder sends nothing before the initiator's first FPDU. */
static void t_responder_holds(void **s)
{
	struct raw_qp t;
	uint8_t x[4] = { 9, 8, 7, 6 }, msg[4];
	struct ibv_wc wc;

	(void)s;
	raw_qp_attach(&t, false, mpa_conn(true, SR_MPA_RTR_WRITE, 1, 1), false);
	post_send1(&t.e, 1, IBV_WR_SEND, IBV_SEND_INLINE, x, 4, 0, 0, 0);
	assert_false(fd_readable(t.peer, 300));
	no_wc(t.e.scq, 0);
	xsend(t.peer, rtr_write_crc, sizeof(rtr_write_crc));
	assert_int_equal(raw_next(&t.r, msg, sizeof(msg), T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_SEND);
	assert_int_equal(t.r.seg.msn, 1);
	assert_memory_equal(msg, x, 4);
	wait_wc(t.e.scq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	raw_qp_down(&t);
}

/* Everything we send: ULPDU <= MULPDU, good CRC (or zero), MSNs from 1 per queue. */
static void tx_format(bool crc)
{
	struct raw_qp t;
	const uint32_t n = 1u << 20, rd = 300000;
	uint8_t *src = malloc(n), *got = malloc(n), *sink = calloc(1, rd), *resp = malloc(rd);
	struct ibv_mr *smr, *kmr;
	struct ibv_wc wc[4];
	uint8_t one = 0x5a, fp[70000];
	uint32_t off;

	raw_qp_attach(&t, true, mpa_conn(crc, 0, 4, 4), false);
	fill(src, n, 3);
	fill(resp, rd, 4);
	smr = ibv_reg_mr(t.e.pd, src, n, 0);
	kmr = ibv_reg_mr(t.e.pd, sink, rd, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	assert_non_null(kmr);
	post_send1(&t.e, 1, IBV_WR_SEND, 0, src, n, smr->lkey, 0, 0);
	post_send1(&t.e, 2, IBV_WR_RDMA_WRITE, 0, src, n, smr->lkey, 0x10000, 0x4242);
	post_send1(&t.e, 3, IBV_WR_RDMA_READ, 0, sink, rd, kmr->lkey, 0x777000, 0x5151);
	post_send1(&t.e, 4, IBV_WR_SEND, IBV_SEND_INLINE | IBV_SEND_SOLICITED, &one, 1, 0, 0, 0);

	/* the Send: MSN 1, MO continuous, L on the last only */
	memset(got, 0, n);
	off = 0;
	do {
		assert_int_equal(raw_next(&t.r, got, n, T_WAIT_MS), 0);
		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_SEND);
		assert_int_equal(t.r.seg.msn, 1);
		assert_int_equal(t.r.seg.mo, off);
		off += t.r.seg.payload_len;
	} while (!t.r.seg.last);
	assert_int_equal(off, n);
	assert_true(memcmp(got, src, n) == 0);
	assert_true(t.r.nseg > 1);
	/* the Write: STag and TO as posted */
	memset(got, 0, n);
	t.r.to_base = 0x10000;
	off = 0;
	do {
		assert_int_equal(raw_next(&t.r, got, n, T_WAIT_MS), 0);
		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_WRITE);
		assert_int_equal(t.r.seg.stag, 0x4242);
		assert_int_equal(t.r.seg.to, 0x10000 + off);
		off += t.r.seg.payload_len;
	} while (!t.r.seg.last);
	assert_int_equal(off, n);
	assert_true(memcmp(got, src, n) == 0);
	/* the Read Request: QN 1 MSN 1, sink named by our lkey/address */
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_REQ);
	assert_int_equal(t.r.seg.msn, 1);
	assert_int_equal(t.r.seg.rreq.size, rd);
	assert_int_equal(t.r.seg.rreq.src_stag, 0x5151);
	assert_int_equal(t.r.seg.rreq.src_to, 0x777000);
	assert_int_equal(t.r.seg.rreq.sink_stag, kmr->lkey);
	assert_int_equal(t.r.seg.rreq.sink_to, (uintptr_t)sink);
	/* the last Send: MSN 2, solicited */
	assert_int_equal(raw_next(&t.r, got, n, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_SEND_SE);
	assert_int_equal(t.r.seg.msn, 2);
	assert_int_equal(got[0], 0x5a);
	/* answer the READ in odd-sized pieces */
	for (uint32_t o = 0; o < rd;) {
		uint32_t len = SR_MIN(rd - o, 7777u);
		size_t fl = fpdu_tagged(fp, crc, SR_RDMAP_OP_READ_RESP, o + len == rd, kmr->lkey,
				 (uintptr_t)sink + o, resp + o, len);
		xsend(t.peer, fp, fl);
		o += len;
	}
	wait_wc(t.e.scq, wc, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, i + 1);
	}
	assert_true(memcmp(sink, resp, rd) == 0);
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	assert_int_equal(ibv_dereg_mr(kmr), 0);
	raw_qp_down(&t);
	free(src);
	free(got);
	free(sink);
	free(resp);
}

static void t_tx_format_crc(void **s)
{
	(void)s;
	tx_format(true);
}

static void t_tx_format_nocrc(void **s)
{
	(void)s;
	tx_format(false);
}

/* Read Responses echo the sink STag/TO of the request, in MULPDU-sized segments. */
static void t_rresp_echo(void **s)
{
	struct raw_qp t;
	const uint32_t n = 150000;
	uint8_t *mem = malloc(n + 7), *got = calloc(1, n), fp[64];
	struct ibv_mr *mr;
	size_t fl;
	uint32_t off = 0;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(true, 0, 4, 4), false);
	fill(mem, n + 7, 11);
	mr = ibv_reg_mr(t.e.pd, mem, n + 7, IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	fl = fpdu_rreq(fp, true, 1, 0xdead01, 0x123456789000ull, n, mr->rkey, (uintptr_t)mem + 7);
	xsend(t.peer, fp, fl);
	fl = fpdu_rreq(fp, true, 2, 0xdead02, 0xabcull, 0, mr->rkey, (uintptr_t)mem);
	xsend(t.peer, fp, fl);
	t.r.to_base = 0x123456789000ull;
	do {
		assert_int_equal(raw_next(&t.r, got, n, T_WAIT_MS), 0);
		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_RESP);
		assert_int_equal(t.r.seg.stag, 0xdead01);
		assert_int_equal(t.r.seg.to, 0x123456789000ull + off);
		off += t.r.seg.payload_len;
	} while (!t.r.seg.last);
	assert_int_equal(off, n);
	assert_true(memcmp(got, mem + 7, n) == 0);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_RESP);
	assert_int_equal(t.r.seg.stag, 0xdead02);
	assert_int_equal(t.r.seg.to, 0xabc);
	assert_int_equal(t.r.seg.payload_len, 0);
	assert_true(t.r.seg.last);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	raw_qp_down(&t);
	free(mem);
	free(got);
}

/*
 * A window of Read Requests in one segment: the Responses come back in order, each with its
 * sink STag/TO and bytes, whether copied into a shared batch (at most SR_IW_STAGE_MSG
 * bytes, while the batch has room) or sent from the region (larger ones, in between); the
 * IRD slots free once they are out, so a second full window is taken too.
 */
static void rresp_window(bool crc)
{
	static const uint32_t sizes[] = { 64, 0, SR_IW_STAGE_MSG, SR_IW_STAGE_MSG + 1, 8, 512,
					  512, 512, 512, 512, 512, 512, 1, 3000, 64, 64 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	const size_t n = 64 * 1024;
	uint8_t *mem = malloc(n), *fp = malloc(N * 64), got[4096];
	struct ibv_mr *mr;
	struct raw_qp t;

	raw_qp_attach(&t, true, mpa_conn(crc, 0, N, N), false);
	fill(mem, n, 21);
	mr = ibv_reg_mr(t.e.pd, mem, n, IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	for (int round = 0; round < 2; round++) {
		size_t l = 0;

		for (int i = 0; i < N; i++)
			l += fpdu_rreq(fp + l, crc, (uint32_t)(round * N + i + 1), 0x500 + (uint32_t)i,
				       0x10000ull * (uint64_t)(i + 1), sizes[i], mr->rkey,
				       (uintptr_t)mem + (uint64_t)i * 1000);
		count_sendmsg(t.qfd);
		xsend(t.peer, fp, l); /* one segment: the QP reads the window with one recvmsg() */
		for (int i = 0; i < N; i++) {
			memset(got, 0, sizeof(got));
			t.r.to_base = 0x10000ull * (uint64_t)(i + 1);
			assert_int_equal(raw_next(&t.r, got, sizeof(got), T_WAIT_MS), 0);
			assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_RESP);
			assert_int_equal(t.r.seg.stag, 0x500 + (uint32_t)i);
			assert_int_equal(t.r.seg.to, t.r.to_base);
			assert_true(t.r.seg.last);
			assert_int_equal(t.r.seg.payload_len, sizes[i]);
			assert_memory_equal(got, mem + (size_t)i * 1000, sizes[i]);
		}
		/* batches: 64 0 512 | 513 | 8 512x7 1 | 3000 | 64 64 (one sendmsg each) */
		printf("round %d: %d Read Responses in %d sendmsg()\n", round, N,
		       atomic_load(&sendmsg_calls));
		assert_true(atomic_load(&sendmsg_calls) <= 5);
	}
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	raw_qp_down(&t);
	free(mem);
	free(fp);
}

static void t_rresp_window_crc(void **s)
{
	(void)s;
	rresp_window(true);
}

static void t_rresp_window_nocrc(void **s)
{
	(void)s;
	rresp_window(false);
}

/*
 * Reads posted as a list share a batch of Read Requests up to ORD; the rest go once
 * Responses free ORD slots, again together; all complete in order with their bytes placed.
 */
static void t_rreq_window(void **s)
{
	enum { N = 10, ORD = 4, LEN = 100 };
	uint8_t *sink = calloc(N, LEN), src[N][LEN], fp[N * 200];
	struct ibv_send_wr wr[N], *bad;
	struct ibv_sge sg[N];
	struct ibv_wc wc[N];
	struct ibv_mr *mr;
	struct raw_qp t;
	int sent = 0;

	(void)s;
	raw_qp_attach(&t, true, mpa_conn(true, 0, ORD, ORD), false);
	mr = ibv_reg_mr(t.e.pd, sink, N * LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	for (int i = 0; i < N; i++) {
		fill(src[i], LEN, 40 + (uint32_t)i);
		sg[i] = (struct ibv_sge){ .addr = (uintptr_t)(sink + i * LEN), .length = LEN,
					  .lkey = mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = 300 + (uint64_t)i,
			.next = i + 1 < N ? &wr[i + 1] : NULL,
			.sg_list = &sg[i],
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = 0x7000 + (uint64_t)i * LEN, .rkey = 0x77 },
		};
	}
	count_sendmsg(t.qfd);
	assert_int_equal(ibv_post_send(t.e.qp, wr, &bad), 0);
	while (sent < N) {
		int win = N - sent < ORD ? N - sent : ORD;
		size_t l = 0;

		/* ORD Requests, in order, and no more until Responses come */
		for (int i = sent; i < sent + win; i++) {
			assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
			assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_REQ);
			assert_int_equal(t.r.seg.msn, (uint32_t)i + 1);
			assert_int_equal(t.r.seg.rreq.src_to, wr[i].wr.rdma.remote_addr);
			assert_int_equal(t.r.seg.rreq.size, LEN);
			l += fpdu_tagged(fp + l, true, SR_RDMAP_OP_READ_RESP, true,
					 t.r.seg.rreq.sink_stag, t.r.seg.rreq.sink_to, src[i], LEN);
		}
		if (win == ORD && sent + win < N)
			assert_false(fd_readable(t.peer, 50));
		xsend(t.peer, fp, l);
		sent += win;
	}
	wait_wc(t.e.scq, wc, N);
	/* a window of Requests per sendmsg(): the posted list, then each window of Responses
	 * (one segment, one recvmsg()) frees ORD slots for the next */
	printf("%d Read Requests in %d sendmsg()\n", N, atomic_load(&sendmsg_calls));
	assert_true(atomic_load(&sendmsg_calls) <= (N + ORD - 1) / ORD);
	for (int i = 0; i < N; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, 300 + (uint64_t)i);
		assert_memory_equal(sink + i * LEN, src[i], LEN);
	}
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	raw_qp_down(&t);
	free(sink);
}

/*
 * Small Sends and Writes posted as one list are copied into shared batches (several per
 * sendmsg): on the wire each is still its own FPDU, in order, with its own MSN, STag and
 * TO, and they complete in order. 40 messages: more than one batch holds.
 */
static void small_batch(bool crc)
{
	enum { N = 40 };
	struct raw_qp t;
	uint8_t *src = malloc(N * 64), got[SR_IW_STAGE_MSG], one = 0xa5;
	struct ibv_send_wr wr[N], *bad;
	struct ibv_sge sg[N];
	struct ibv_wc wc[N];
	struct ibv_mr *mr;
	uint32_t msn = 0;

	raw_qp_attach(&t, true, mpa_conn(crc, 0, 4, 4), false);
	fill(src, N * 64, 9);
	mr = ibv_reg_mr(t.e.pd, src, N * 64, 0);
	assert_non_null(mr);
	for (int i = 0; i < N; i++) {
		/* lengths 0..63, every third a Write, one inline Send */
		sg[i] = (struct ibv_sge){ .addr = (uintptr_t)(src + i * 64), .length = (uint32_t)i,
					  .lkey = mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = 100 + (uint64_t)i,
			.next = i + 1 < N ? &wr[i + 1] : NULL,
			.sg_list = &sg[i],
			.num_sge = i ? 1 : 0,
			.opcode = i % 3 == 2 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { .remote_addr = 0x9000 + (uint64_t)i * 64, .rkey = 0x3131 },
		};
	}
	sg[7] = (struct ibv_sge){ .addr = (uintptr_t)&one, .length = 1 };
	wr[7].send_flags |= IBV_SEND_INLINE;
	assert_int_equal(ibv_post_send(t.e.qp, wr, &bad), 0);
	for (int i = 0; i < N; i++) {
		const uint8_t *want = i == 7 ? &one : src + i * 64;

		memset(got, 0, sizeof(got));
		t.r.to_base = wr[i].wr.rdma.remote_addr;
		assert_int_equal(raw_next(&t.r, got, sizeof(got), T_WAIT_MS), 0);
		assert_true(t.r.seg.last);
		assert_int_equal(t.r.seg.payload_len, sg[i].length);
		if (wr[i].opcode == IBV_WR_RDMA_WRITE) {
			assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_WRITE);
			assert_int_equal(t.r.seg.stag, 0x3131);
			assert_int_equal(t.r.seg.to, wr[i].wr.rdma.remote_addr);
		} else {
			assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_SEND);
			assert_int_equal(t.r.seg.msn, ++msn);
		}
		assert_memory_equal(got, want, sg[i].length);
	}
	wait_wc(t.e.scq, wc, N);
	for (int i = 0; i < N; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, 100 + (uint64_t)i);
	}
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	raw_qp_down(&t);
	free(src);
}

static void t_small_batch_crc(void **s)
{
	(void)s;
	small_batch(true);
}

static void t_small_batch_nocrc(void **s)
{
	(void)s;
	small_batch(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_rtr_first),
		cmocka_unit_test(t_responder_holds),
		cmocka_unit_test(t_attach_kind),
		cmocka_unit_test(t_tx_format_crc),
		cmocka_unit_test(t_tx_format_nocrc),
		cmocka_unit_test(t_rresp_echo),
		cmocka_unit_test(t_rresp_window_crc),
		cmocka_unit_test(t_rresp_window_nocrc),
		cmocka_unit_test(t_rreq_window),
		cmocka_unit_test(t_small_batch_crc),
		cmocka_unit_test(t_small_batch_nocrc),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
