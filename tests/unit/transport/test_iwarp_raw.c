// SPDX-License-Identifier: MIT
/*
 * One QP against a "raw peer": test code on a plain socket that builds and parses FPDUs with
 * the codec. Checks what we put on the wire (RTR first, nothing from a holding responder,
 * MULPDU, CRC, MSNs, Read Response STag/TO) and how malformed input is refused (Terminate
 * bytes, QP to ERR with QP_FATAL, receives flushed, memory outside the MR untouched), and
 * that ibv_dereg_mr cuts off a Write being placed and a Read Response being sent.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>

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
#define PG 4096

struct rq {
	struct ep e;
	int peer; /* the raw end */
	int qfd;
	struct raw r;
};

static void rq_up_srq(struct rq *t, bool initiator, struct sr_mpa_conn m, bool srq)
{
	ep_create(&t->e, NULL, srq);
	tcp_pair(&t->qfd, &t->peer);
	raw_init(&t->r, t->peer, m.crc);
	t->r.mulpdu = sr_mpa_mulpdu((uint32_t)sock_mss(t->qfd));
	t->r.qfd = t->qfd;
	ep_attach(&t->e, t->qfd, initiator, m);
}

static void rq_up(struct rq *t, bool initiator, struct sr_mpa_conn m)
{
	rq_up_srq(t, initiator, m, false);
}

static void rq_down(struct rq *t)
{
	ep_destroy(&t->e);
	close(t->peer);
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
	struct rq t;
	uint8_t exp[64], msg[8];
	size_t elen;
	struct ibv_wc wc[2];
	uint8_t x[3] = { 1, 2, 3 };

	rq_up(&t, true, mpa_conn(crc, rtr, 1, 1));
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
	rq_down(&t);
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
	struct rq t;

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
	rq_down(&t);
}

/* The responder sends nothing before the initiator's first FPDU. */
static void t_responder_holds(void **s)
{
	struct rq t;
	uint8_t x[4] = { 9, 8, 7, 6 }, msg[4];
	struct ibv_wc wc;

	(void)s;
	rq_up(&t, false, mpa_conn(true, SR_MPA_RTR_WRITE, 1, 1));
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
	rq_down(&t);
}

/* Everything we send: ULPDU <= MULPDU, good CRC (or zero), MSNs from 1 per queue. */
static void tx_format(bool crc)
{
	struct rq t;
	const uint32_t n = 1u << 20, rd = 300000;
	uint8_t *src = malloc(n), *got = malloc(n), *sink = calloc(1, rd), *resp = malloc(rd);
	struct ibv_mr *smr, *kmr;
	struct ibv_wc wc[4];
	uint8_t one = 0x5a, fp[70000];
	uint32_t off;

	rq_up(&t, true, mpa_conn(crc, 0, 4, 4));
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
	rq_down(&t);
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
	struct rq t;
	const uint32_t n = 150000;
	uint8_t *mem = malloc(n + 7), *got = calloc(1, n), fp[64];
	struct ibv_mr *mr;
	size_t fl;
	uint32_t off = 0;

	(void)s;
	rq_up(&t, true, mpa_conn(true, 0, 4, 4));
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
	rq_down(&t);
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
	struct rq t;

	rq_up(&t, true, mpa_conn(crc, 0, N, N));
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
	rq_down(&t);
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
	struct rq t;
	int sent = 0;

	(void)s;
	rq_up(&t, true, mpa_conn(true, 0, ORD, ORD));
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
	rq_down(&t);
	free(sink);
}

/*
 * The end of a stream test: two receives completed with these lengths, the Read Request's
 * response (sink STag/TO) carries `src`, the stream is still open; then tear down.
 */
static void stream_done(struct rq *t, uint32_t len1, uint32_t len2, uint32_t stag, uint64_t to,
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
	rq_down(t);
}

/* Valid FPDUs delivered one byte per segment: every split of the stream works. */
static void t_bytewise(void **s)
{
	struct rq t;
	uint8_t *st = malloc(1 << 16), *rbuf = calloc(1, 1024), *mem = calloc(1, PG), msg[300];
	struct ibv_mr *rmr, *mmr;
	size_t l = 0;

	(void)s;
	rq_up(&t, true, mpa_conn(true, 0, 4, 4));
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
	struct rq t;
	uint8_t *st = malloc(1 << 16), *rbuf = calloc(1, 4096), *mem = calloc(1, 4 * PG);
	uint8_t msg[3000];
	struct ibv_mr *rmr, *mmr;
	size_t l = 0;

	(void)s;
	rq_up(&t, true, mpa_conn(true, 0, 4, 4));
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
		struct rq t;
		uint8_t *st = malloc(8192), *mem = calloc(1, PG), msg[1000], data[8] = { 0 };
		struct ibv_mr *mmr;
		struct sr_term_info got;
		size_t l;

		rq_up(&t, true, mpa_conn(true, 0, 4, 4));
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
		rq_down(&t);
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
	struct rq t;
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
	rq_up(&t, true, mpa_conn(true, 0, 4, 4));
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
	rq_down(&t);
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
	struct rq *t;
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
	struct rq t;
	const size_t n = 32u << 20;
	uint8_t *mem = malloc(n), fp[128];
	struct ird_drain d = { .t = &t };
	pthread_t th;
	struct ibv_mr *mr;
	size_t l;

	(void)s;
	rq_up(&t, true, mpa_conn(false, 0, 1, 1));
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
	rq_down(&t);
	free(mem);
}

/* A Terminate from the peer fails the oldest outstanding request with the peer's verdict. */
static void t_peer_terminate(void **s)
{
	struct rq t;
	uint8_t fp[128], *sink = malloc(64);
	struct ibv_mr *mr;
	struct sr_term_info ti;
	struct ibv_wc wc[2];
	ssize_t l;

	(void)s;
	rq_up(&t, true, mpa_conn(true, 0, 4, 4));
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
	rq_down(&t);
	free(sink);
}

/* The peer closes between FPDUs: an orderly close, closed(0), not fatal. */
static void t_peer_fin(void **s)
{
	struct rq t;
	struct ibv_wc wc;

	(void)s;
	rq_up(&t, true, mpa_conn(true, SR_MPA_RTR_WRITE, 4, 4));
	post_recv1(&t.e, 1, NULL, 0, 0);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0); /* RTR */
	shutdown(t.peer, SHUT_WR);
	assert_int_equal(wait_closed(&t.e), 0);
	raw_expect_end(&t.r);
	wait_wc(t.e.rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_false(wait_async(t.e.qp, IBV_EVENT_QP_FATAL, 50));
	rq_down(&t);
}

/* ------------------------------------------------ revocation, zero-length -- */

/* The next segment from the QP is a Terminate with this cause; then the stream ends. */
static void expect_term_end(struct rq *t, uint8_t layer, uint8_t etype, uint8_t ecode)
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

static struct sr_mr *mr_of(struct ibv_mr *mr)
{
	return sr_container_of(mr, struct sr_mr, ibmr);
}

/*
 * A Write whose header passed every check, half of its payload placed, then the region is
 * deregistered and the memory reused: the other half must not land. The QP refuses the
 * rest as an invalid STag (DDP tagged buffer error), errs and flushes its receive.
 */
static void t_dereg_cuts_write(void **s)
{
	struct rq t;
	const size_t wl = 3000, half = 1000;
	uint8_t *mem = aligned_alloc(PG, 3 * PG), *ref = malloc(3 * PG), *rbuf = calloc(1, 64);
	uint8_t data[3000], fp[3100];
	struct ibv_mr *mr, *rmr;
	struct ibv_wc wc;
	uint64_t end;
	size_t fl;

	(void)s;
	rq_up(&t, true, mpa_conn(true, 0, 4, 4));
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
	rq_down(&t);
	free(mem);
	free(ref);
	free(rbuf);
}

/* The QP's transmit side is stuck on a full socket in the middle of a Read Response. */
/* A Read Response waits for the socket, with nresp responses owed in all (queued ones too). */
static bool rresp_blocked(struct rq *t, uint32_t nresp)
{
	struct sr_iw_conn *c = xt_conn(t->e.qp);
	bool b;

	pthread_mutex_lock(&c->tx_lock);
	b = c->tx_want_out && c->kind == SR_IW_TX_RRESP && c->resp_count >= nresp;
	pthread_mutex_unlock(&c->tx_lock);
	return b;
}

/* Small socket buffers on both ends, so that little of a response is in flight. */
static void small_buffers(struct rq *t)
{
	int sz = 65536;

	assert_int_equal(setsockopt(t->qfd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)), 0);
	assert_int_equal(setsockopt(t->peer, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)), 0);
}

static void wait_rresp_blocked(struct rq *t, uint32_t nresp)
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
	struct rq t;
	const size_t n = 8u << 20;
	uint8_t *mem = malloc(n), *orig = malloc(n), *got = calloc(1, n), fp[128];
	struct ibv_mr *mr;
	uint64_t off = 0;
	int ret;

	rq_up(&t, true, mpa_conn(crc, 0, 1, 1));
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
	rq_down(&t);
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
	struct rq t;
	const size_t na = 2u << 20, nb = 65536;
	uint8_t *a = malloc(na), *b = malloc(nb), *got = calloc(1, na), fp[256];
	struct ibv_mr *amr, *bmr;
	uint64_t off = 0;
	size_t l;

	rq_up(&t, true, mpa_conn(crc, 0, 2, 2));
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
	rq_down(&t);
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

/*
 * Small Sends and Writes posted as one list are copied into shared batches (several per
 * sendmsg): on the wire each is still its own FPDU, in order, with its own MSN, STag and
 * TO, and they complete in order. 40 messages: more than one batch holds.
 */
static void small_batch(bool crc)
{
	enum { N = 40 };
	struct rq t;
	uint8_t *src = malloc(N * 64), got[SR_IW_STAGE_MSG], one = 0xa5;
	struct ibv_send_wr wr[N], *bad;
	struct ibv_sge sg[N];
	struct ibv_wc wc[N];
	struct ibv_mr *mr;
	uint32_t msn = 0;

	rq_up(&t, true, mpa_conn(crc, 0, 4, 4));
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
	rq_down(&t);
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

/* The transmit side is blocked (socket full) in the middle of WQE wr_id. */
static bool wqe_blocked(struct rq *t, uint64_t wr_id)
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
	struct rq t;
	const size_t nw = 2u << 20;
	uint8_t *w = malloc(nw), *got = calloc(1, nw), a[4][16];
	struct ibv_mr *wmr, *amr, *cmr;
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sg[4];
	struct ibv_wc wc[5];
	uint64_t end, off = 0;

	(void)s;
	rq_up(&t, true, mpa_conn(true, 0, 4, 4));
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
	rq_down(&t);
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
	struct rq t;
	const size_t n = 8u << 20;
	uint8_t *mem = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t fp[128];
	struct ibv_mr *mr;
	int ret;

	(void)s;
	assert_true(mem != MAP_FAILED);
	rq_up(&t, true, mpa_conn(false, 0, 1, 1));
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
	rq_down(&t);
	munmap(mem, n);
}

/*
 * Zero-length Send segments without the Last flag open a message; only its first segment
 * takes a receive. With an SRQ of four receives, a message made of 50 empty segments and a
 * last one of 5 bytes takes one, and three more messages take the other three: four
 * completions, in order, no Terminate, no MR reference left behind.
 */
static void t_zero_len_segments_srq(void **s)
{
	struct rq t;
	uint8_t *st = malloc(8192), *rbuf = calloc(1, 64);
	struct ibv_mr *rmr;
	struct ibv_wc wc[4];
	size_t l = 0;

	(void)s;
	rq_up_srq(&t, true, mpa_conn(true, 0, 4, 4), true);
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
	rq_down(&t);
	free(st);
	free(rbuf);
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
		cmocka_unit_test(t_bytewise),
		cmocka_unit_test(t_lookahead_stream),
		cmocka_unit_test(t_lookahead_malformed),
		cmocka_unit_test(t_malformed),
		cmocka_unit_test(t_ird_exceeded),
		cmocka_unit_test(t_peer_terminate),
		cmocka_unit_test(t_peer_fin),
		cmocka_unit_test(t_dereg_cuts_write),
		cmocka_unit_test(t_dereg_stops_rresp_crc),
		cmocka_unit_test(t_dereg_stops_rresp_nocrc),
		cmocka_unit_test(t_dereg_queued_rresp_crc),
		cmocka_unit_test(t_dereg_queued_rresp_nocrc),
		cmocka_unit_test(t_small_batch_crc),
		cmocka_unit_test(t_small_batch_nocrc),
		cmocka_unit_test(t_small_batch_dereg),
		cmocka_unit_test(t_efault_closes),
		cmocka_unit_test(t_zero_len_segments_srq),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
