// SPDX-License-Identifier: MIT
/*
 * Two QPs of the loopback device talking iWARP to each other over a TCP pair, attached
 * directly with priv_ops->attach (no CM): data transfers, ordering, ORD, fences,
 * Send with Invalidate refused, RTR kinds, orderly disconnect and destroy with a live stream.
 */
#include "xport_helpers.h"

struct pair {
	struct ep a, b; /* a: initiator, b: responder */
};

static void pair_up_opt(struct pair *p, struct sr_mpa_conn ma, struct sr_mpa_conn mb,
			bool srq_b, void (*before_attach)(struct pair *))
{
	int fa, fb;

	ep_create(&p->a, NULL, false);
	ep_create(&p->b, NULL, srq_b);
	if (before_attach)
		before_attach(p);
	tcp_pair(&fa, &fb);
	ep_attach(&p->b, fb, false, mb);
	ep_attach(&p->a, fa, true, ma);
}

static void pair_up(struct pair *p, bool crc, uint8_t rtr)
{
	pair_up_opt(p, mpa_conn(crc, rtr, 8, 8), mpa_conn(crc, rtr, 8, 8), false, NULL);
}

static void pair_down(struct pair *p)
{
	ep_destroy(&p->a);
	ep_destroy(&p->b);
}

struct buf {
	uint8_t *p;
	size_t len;
	struct ibv_mr *mr;
};

static void buf_new(struct buf *b, struct ibv_pd *pd, size_t len, int access, unsigned int seed)
{
	b->len = len;
	b->p = malloc(len ? len : 1);
	assert_non_null(b->p);
	fill(b->p, len, seed);
	b->mr = ibv_reg_mr(pd, b->p, len ? len : 1, access);
	assert_non_null(b->mr);
}

static void buf_free(struct buf *b)
{
	assert_int_equal(ibv_dereg_mr(b->mr), 0);
	free(b->p);
}


static const size_t sizes[] = { 0, 1, 4096, 1u << 20, 16u << 20 };

/* SEND, WRITE (made visible by a Send behind it) and READ of every size. */
static void xfer_all(bool crc, uint8_t rtr)
{
	struct pair p;
	struct ibv_wc wc[2];

	pair_up(&p, crc, rtr);
	for (size_t i = 0; i < SR_ARRAY_SIZE(sizes); i++) {
		size_t n = sizes[i];
		struct buf src, dst;

		buf_new(&src, p.a.pd, n, ACC_ALL, 1 + (unsigned int)i);
		buf_new(&dst, p.b.pd, n, ACC_ALL, 100 + (unsigned int)i);

		/* SEND */
		post_recv1(&p.b, 10 + i, dst.p, (uint32_t)n, dst.mr->lkey);
		post_send1(&p.a, 20 + i, IBV_WR_SEND, 0, src.p, (uint32_t)n, src.mr->lkey, 0, 0);
		wait_wc(p.a.scq, wc, 1);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[0].opcode, IBV_WC_SEND);
		assert_int_equal(wc[0].wr_id, 20 + i);
		wait_wc(p.b.rcq, wc, 1);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[0].opcode, IBV_WC_RECV);
		assert_int_equal(wc[0].wr_id, 10 + i);
		assert_int_equal(wc[0].byte_len, n);
		assert_true(memcmp(src.p, dst.p, n) == 0);

		/* WRITE, then a zero-length Send: its arrival means the Write was placed */
		fill(src.p, n, 200 + (unsigned int)i);
		post_recv1(&p.b, 30 + i, NULL, 0, 0);
		post_send1(&p.a, 40 + i, IBV_WR_RDMA_WRITE, 0, src.p, (uint32_t)n, src.mr->lkey,
			   (uintptr_t)dst.p, dst.mr->rkey);
		post_send1(&p.a, 41 + i, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
		wait_wc(p.a.scq, wc, 2);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[0].opcode, IBV_WC_RDMA_WRITE);
		assert_int_equal(wc[1].opcode, IBV_WC_SEND);
		wait_wc(p.b.rcq, wc, 1);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[0].byte_len, 0);
		assert_true(memcmp(src.p, dst.p, n) == 0);

		/* READ from b into a */
		fill(dst.p, n, 300 + (unsigned int)i);
		post_send1(&p.a, 50 + i, IBV_WR_RDMA_READ, 0, src.p, (uint32_t)n, src.mr->lkey,
			   (uintptr_t)dst.p, dst.mr->rkey);
		wait_wc(p.a.scq, wc, 1);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[0].opcode, IBV_WC_RDMA_READ);
		assert_int_equal(wc[0].byte_len, n);
		assert_true(memcmp(src.p, dst.p, n) == 0);

		buf_free(&src);
		buf_free(&dst);
	}
	assert_int_equal(closed_calls(&p.a, NULL), 0);
	assert_int_equal(closed_calls(&p.b, NULL), 0);
	pair_down(&p);
}

static void t_xfer_crc(void **s)
{
	(void)s;
	xfer_all(true, 0);
}

static void t_xfer_nocrc(void **s)
{
	(void)s;
	xfer_all(false, 0);
}

static void t_xfer_rtr_write(void **s)
{
	(void)s;
	xfer_all(true, SR_MPA_RTR_WRITE);
}

static void t_xfer_rtr_read(void **s)
{
	(void)s;
	xfer_all(false, SR_MPA_RTR_READ);
}

static struct buf g_rtr_buf;

static void post_rtr_recv(struct pair *p)
{
	buf_new(&g_rtr_buf, p->b.pd, 64, ACC_ALL, 7);
	post_recv1(&p->b, 0x777, g_rtr_buf.p, 64, g_rtr_buf.mr->lkey);
}

/* A Send RTR consumes a posted receive at the responder: a zero-length completion. */
static void t_rtr_send(void **s)
{
	struct pair p;
	struct ibv_wc wc;
	uint8_t msg[5] = "hello";

	(void)s;
	pair_up_opt(&p, mpa_conn(true, SR_MPA_RTR_SEND, 4, 4),
		    mpa_conn(true, SR_MPA_RTR_SEND, 4, 4), false, post_rtr_recv);
	wait_wc(p.b.rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 0x777);
	assert_int_equal(wc.byte_len, 0);
	/* and the Send queue's MSNs continue at 2 */
	post_recv1(&p.b, 0x778, g_rtr_buf.p, 64, g_rtr_buf.mr->lkey);
	post_send1(&p.a, 1, IBV_WR_SEND, IBV_SEND_INLINE, msg, 5, 0, 0, 0);
	wait_wc(p.b.rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 5);
	assert_memory_equal(g_rtr_buf.p, "hello", 5);
	wait_wc(p.a.scq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	buf_free(&g_rtr_buf);
	pair_down(&p);
}

/* Several SGEs on both sides, with uneven and zero-length pieces. */
static void t_multi_sge(void **s)
{
	struct pair p;
	struct ibv_wc wc[2];
	struct buf a1, a2, b1, b2;
	static const uint32_t al[] = { 3, 0, 70001, 4096 };  /* 74100 */
	static const uint32_t bl[] = { 65536, 1, 0, 8563 };  /* 74100 */
	uint8_t *ref, *got;
	struct ibv_sge asg[4], bsg[4];
	size_t off;

	(void)s;
	pair_up(&p, true, 0);
	buf_new(&a1, p.a.pd, 40000, ACC_ALL, 1);
	buf_new(&a2, p.a.pd, 40000, ACC_ALL, 2);
	buf_new(&b1, p.b.pd, 40000, ACC_ALL, 3);
	buf_new(&b2, p.b.pd, 40000, ACC_ALL, 4);
	ref = malloc(74100);
	got = malloc(74100);
	/* a's pieces: a1[0..3), a2 (zero length), a1[100..) mixed with a2 */
	struct {
		struct buf *b;
		size_t off;
	} ap[] = { { &a1, 0 }, { &a2, 0 }, { &a2, 5 }, { &a1, 10000 } },
	  bp[] = { { &b1, 0 }, { &b2, 0 }, { &b2, 3 }, { &b2, 10 } };
	/* 70001 does not fit a2 (40000): use two real regions big enough */
	struct buf big_a, big_b;

	buf_new(&big_a, p.a.pd, 80000, ACC_ALL, 5);
	buf_new(&big_b, p.b.pd, 80000, ACC_ALL, 6);
	ap[2].b = &big_a;
	bp[0].b = &big_b;
	off = 0;
	for (int i = 0; i < 4; i++) {
		asg[i] = (struct ibv_sge){ .addr = (uintptr_t)(ap[i].b->p + ap[i].off),
					   .length = al[i], .lkey = ap[i].b->mr->lkey };
		memcpy(ref + off, ap[i].b->p + ap[i].off, al[i]);
		off += al[i];
		bsg[i] = (struct ibv_sge){ .addr = (uintptr_t)(bp[i].b->p + bp[i].off),
					   .length = bl[i], .lkey = bp[i].b->mr->lkey };
	}

	/* SEND: 4 SGEs into 4 SGEs */
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = bsg, .num_sge = 4 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = 2, .sg_list = asg, .num_sge = 4, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;

	assert_int_equal(ibv_post_recv(p.b.qp, &rwr, &rbad), 0);
	assert_int_equal(ibv_post_send(p.a.qp, &swr, &sbad), 0);
	wait_wc(p.b.rcq, wc, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].byte_len, 74100);
	off = 0;
	for (int i = 0; i < 4; i++) {
		memcpy(got + off, (void *)(uintptr_t)bsg[i].addr, bl[i]);
		off += bl[i];
	}
	assert_true(memcmp(ref, got, 74100) == 0);
	wait_wc(p.a.scq, wc, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);

	/* WRITE gathered from 4 SGEs into big_b at 100, then READ it back scattered */
	swr.opcode = IBV_WR_RDMA_WRITE;
	swr.wr.rdma.remote_addr = (uintptr_t)big_b.p + 100;
	swr.wr.rdma.rkey = big_b.mr->rkey;
	assert_int_equal(ibv_post_send(p.a.qp, &swr, &sbad), 0);
	post_recv1(&p.b, 3, NULL, 0, 0);
	post_send1(&p.a, 4, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	wait_wc(p.b.rcq, wc, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_true(memcmp(big_b.p + 100, ref, 74100) == 0);
	wait_wc(p.a.scq, wc, 2);

	/* READ: b's 74100 bytes scattered over a's 4 SGEs (after clearing them) */
	fill(big_b.p + 100, 74100, 99);
	memcpy(ref, big_b.p + 100, 74100);
	for (int i = 0; i < 4; i++)
		memset((void *)(uintptr_t)asg[i].addr, 0, al[i]);
	swr.opcode = IBV_WR_RDMA_READ;
	swr.wr_id = 5;
	assert_int_equal(ibv_post_send(p.a.qp, &swr, &sbad), 0);
	wait_wc(p.a.scq, wc, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].byte_len, 74100);
	off = 0;
	for (int i = 0; i < 4; i++) {
		assert_true(memcmp((void *)(uintptr_t)asg[i].addr, ref + off, al[i]) == 0);
		off += al[i];
	}

	free(ref);
	free(got);
	buf_free(&a1);
	buf_free(&a2);
	buf_free(&b1);
	buf_free(&b2);
	buf_free(&big_a);
	buf_free(&big_b);
	pair_down(&p);
}

/* Inline Send and inline Write: the bytes travel from the WQE, no lkey needed. */
static void t_inline(void **s)
{
	struct pair p;
	struct ibv_wc wc[2];
	struct buf dst;
	uint8_t msg[EP_INLINE];

	(void)s;
	pair_up(&p, true, 0);
	buf_new(&dst, p.b.pd, 4096, ACC_ALL, 0);
	fill(msg, sizeof(msg), 42);
	post_recv1(&p.b, 1, dst.p, 4096, dst.mr->lkey);
	post_send1(&p.a, 2, IBV_WR_SEND, IBV_SEND_INLINE, msg, sizeof(msg), 0, 0, 0);
	/* the WQE holds the bytes: scribbling on msg now must not matter */
	memset(msg, 0, sizeof(msg));
	wait_wc(p.b.rcq, wc, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].byte_len, EP_INLINE);
	fill(msg, sizeof(msg), 42);
	assert_memory_equal(dst.p, msg, sizeof(msg));

	fill(msg, sizeof(msg), 43);
	post_send1(&p.a, 3, IBV_WR_RDMA_WRITE, IBV_SEND_INLINE, msg, 100, 0,
		   (uintptr_t)dst.p + 1000, dst.mr->rkey);
	post_recv1(&p.b, 4, NULL, 0, 0);
	post_send1(&p.a, 5, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	wait_wc(p.b.rcq, wc, 1);
	assert_memory_equal(dst.p + 1000, msg, 100);
	wait_wc(p.a.scq, wc, 2);
	wait_wc(p.a.scq, wc, 1);
	buf_free(&dst);
	pair_down(&p);
}

/* Receives from an SRQ. */
static void t_srq(void **s)
{
	struct pair p;
	struct ibv_wc wc[4];
	struct buf dst, src;

	(void)s;
	pair_up_opt(&p, mpa_conn(true, SR_MPA_RTR_WRITE, 4, 4),
		    mpa_conn(true, SR_MPA_RTR_WRITE, 4, 4), true, NULL);
	buf_new(&dst, p.b.pd, 4 * 1000, ACC_ALL, 0);
	buf_new(&src, p.a.pd, 4 * 1000, ACC_ALL, 9);
	for (int i = 0; i < 4; i++)
		post_recv1(&p.b, 100 + (uint64_t)i, dst.p + i * 1000, 1000, dst.mr->lkey);
	for (int i = 0; i < 4; i++)
		post_send1(&p.a, (uint64_t)i, IBV_WR_SEND, 0, src.p + i * 1000,
			   (uint32_t)(500 + i), src.mr->lkey, 0, 0);
	wait_wc(p.b.rcq, wc, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, 100 + i);
		assert_int_equal(wc[i].byte_len, 500 + i);
		assert_memory_equal(dst.p + i * 1000, src.p + i * 1000, 500 + i);
	}
	wait_wc(p.a.scq, wc, 4);
	buf_free(&dst);
	buf_free(&src);
	pair_down(&p);
}

/* A solicited-only armed CQ wakes for a Send with SE only. */
static void t_solicited(void **s)
{
	struct pair p;
	struct ibv_wc wc;
	struct ibv_cq *cq;
	void *ctx;
	uint8_t x = 1;
	struct buf r;

	(void)s;
	pair_up(&p, false, SR_MPA_RTR_WRITE);
	buf_new(&r, p.b.pd, 16, ACC_ALL, 0);
	post_recv1(&p.b, 1, NULL, 0, 0);
	post_recv1(&p.b, 2, r.p, 16, r.mr->lkey);
	assert_int_equal(ibv_req_notify_cq(p.b.rcq, 1), 0);
	post_send1(&p.a, 3, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	wait_wc(p.b.rcq, &wc, 1);
	assert_int_equal(wc.wr_id, 1);
	assert_false(fd_readable(p.b.ch->fd, 200));
	post_send1(&p.a, 4, IBV_WR_SEND, IBV_SEND_SOLICITED | IBV_SEND_INLINE, &x, 1, 0, 0, 0);
	assert_true(fd_readable(p.b.ch->fd, T_WAIT_MS));
	assert_int_equal(ibv_get_cq_event(p.b.ch, &cq, &ctx), 0);
	assert_ptr_equal(cq, p.b.rcq);
	ibv_ack_cq_events(cq, 1);
	wait_wc(p.b.rcq, &wc, 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 1);
	assert_int_equal(r.p[0], 1);
	wait_wc(p.a.scq, &wc, 1);
	wait_wc(p.a.scq, &wc, 1);
	buf_free(&r);
	pair_down(&p);
}

/*
 * Send with Invalidate: a posts it as usual; b refuses to invalidate its plain MR (only
 * memory windows and fast-registered MRs may be, and there are none): b's receive completes
 * with IBV_WC_REM_INV_REQ_ERR, b terminates the stream ("STag cannot be invalidated", a
 * remote operation error), both QPs err, and the region stays valid.
 */
static void t_send_inv(void **s)
{
	struct pair p;
	struct ibv_wc wc;
	struct buf target, rbuf, local;
	struct sr_mr *mr;
	uint8_t *where;

	(void)s;
	pair_up(&p, true, 0);
	buf_new(&target, p.b.pd, 4096, ACC_ALL, 1);
	buf_new(&rbuf, p.b.pd, 64, ACC_ALL, 2);
	buf_new(&local, p.a.pd, 4096, ACC_ALL, 3);
	post_recv1(&p.b, 1, rbuf.p, 64, rbuf.mr->lkey);

	struct ibv_sge sg = { .addr = (uintptr_t)local.p, .length = 10, .lkey = local.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = target.mr->rkey }, *bad;

	assert_int_equal(ibv_post_send(p.a.qp, &wr, &bad), 0);
	wait_wc(p.b.rcq, &wc, 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
	assert_false(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(sr_mr_resolve(target.mr->rkey, NULL, (uintptr_t)target.p, 1,
				       IBV_ACCESS_REMOTE_READ, &mr, &where),
			 SR_ACC_OK);
	sr_mr_put(mr);
	/* iWARP completes a Send once sent; one still in flight carries b's verdict */
	wait_wc(p.a.scq, &wc, 1);
	assert_int_equal(wc.wr_id, 2);
	assert_true(wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_REM_OP_ERR);
	assert_true(wait_closed(&p.a) < 0);
	assert_true(wait_closed(&p.b) < 0);
	assert_int_equal(qp_state(&p.a), IBV_QPS_ERR);
	assert_int_equal(qp_state(&p.b), IBV_QPS_ERR);
	assert_true(wait_async(p.a.qp, IBV_EVENT_QP_FATAL, T_WAIT_MS));
	buf_free(&target);
	buf_free(&rbuf);
	buf_free(&local);
	pair_down(&p);
}

/* More READs than ORD: all complete, in posting order, and each one's data is right. */
static void t_ord_limit(void **s)
{
	struct pair p;
	struct ibv_wc wc[16];
	struct buf src, dst;
	const size_t chunk = 64 * 1024;

	(void)s;
	pair_up_opt(&p, mpa_conn(true, 0, 2, 2), mpa_conn(true, 0, 2, 2), false, NULL);
	buf_new(&src, p.b.pd, 16 * chunk, ACC_ALL, 5);
	buf_new(&dst, p.a.pd, 16 * chunk, ACC_ALL, 6);
	for (int i = 0; i < 16; i++)
		post_send1(&p.a, 100 + (uint64_t)i, IBV_WR_RDMA_READ, 0, dst.p + i * chunk,
			   (uint32_t)chunk, dst.mr->lkey, (uintptr_t)src.p + i * chunk,
			   src.mr->rkey);
	wait_wc(p.a.scq, wc, 16);
	for (int i = 0; i < 16; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, 100 + i);
		assert_int_equal(wc[i].opcode, IBV_WC_RDMA_READ);
	}
	assert_true(memcmp(src.p, dst.p, 16 * chunk) == 0);
	assert_int_equal(closed_calls(&p.b, NULL), 0);
	buf_free(&src);
	buf_free(&dst);
	pair_down(&p);
}

/* Transmit batch held (under tx_lock: it is given back in the same hold that completes). */
static bool holds_batch(struct ep *e)
{
	struct sr_iw_conn *c = xt_conn(e->qp);
	bool held;

	pthread_mutex_lock(&c->tx_lock);
	held = c->fp != NULL;
	pthread_mutex_unlock(&c->tx_lock);
	return held;
}

/*
 * An idle stream holds neither a transmit batch nor a Read Request ring: the batch comes
 * back once nothing more is queued for the socket, the ring (ORD entries) appears at the
 * first READ. This is what keeps 100,000 idle connections cheap.
 */
static void t_idle_costs(void **s)
{
	struct pair p;
	struct ibv_wc wc[1];
	struct buf src, dst;
	struct sr_iw_conn *a;

	(void)s;
	pair_up_opt(&p, mpa_conn(true, SR_MPA_RTR_WRITE, 3, 3),
		    mpa_conn(true, SR_MPA_RTR_WRITE, 3, 3), false, NULL);
	a = xt_conn(p.a.qp);
	buf_new(&src, p.a.pd, 4096, ACC_ALL, 7);
	buf_new(&dst, p.b.pd, 4096, ACC_ALL, 8);
	post_recv1(&p.b, 1, dst.p, 4096, dst.mr->lkey);
	post_send1(&p.a, 2, IBV_WR_SEND, 0, src.p, 4096, src.mr->lkey, 0, 0);
	wait_wc(p.a.scq, wc, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	wait_wc(p.b.rcq, wc, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_false(holds_batch(&p.a));
	assert_null(a->rreq);

	post_send1(&p.a, 3, IBV_WR_RDMA_READ, 0, src.p, 4096, src.mr->lkey, (uintptr_t)dst.p,
		   dst.mr->rkey);
	wait_wc(p.a.scq, wc, 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_true(memcmp(src.p, dst.p, 4096) == 0);
	assert_non_null(a->rreq);
	assert_int_equal(a->rreq_cap, 3);
	assert_false(holds_batch(&p.a));
	assert_false(holds_batch(&p.b)); /* it sent the Read Response */
	buf_free(&src);
	buf_free(&dst);
	pair_down(&p);
}

/*
 * FENCE: a Write that overwrites what a preceding READ reads must wait for the READ's
 * response; without the fence b could place the Write before it sends the Read Response.
 */
static void t_fence(void **s)
{
	struct pair p;
	struct ibv_wc wc[3];
	struct buf x, l, w;
	const size_t n = 8u << 20;

	(void)s;
	pair_up(&p, false, 0);
	buf_new(&x, p.b.pd, n, ACC_ALL, 0);
	buf_new(&l, p.a.pd, n, ACC_ALL, 1);
	buf_new(&w, p.a.pd, n, ACC_ALL, 2);
	memset(x.p, 'a', n);
	memset(w.p, 'b', n);
	post_send1(&p.a, 1, IBV_WR_RDMA_READ, 0, l.p, (uint32_t)n, l.mr->lkey, (uintptr_t)x.p,
		   x.mr->rkey);
	post_send1(&p.a, 2, IBV_WR_RDMA_WRITE, IBV_SEND_FENCE, w.p, (uint32_t)n, w.mr->lkey,
		   (uintptr_t)x.p, x.mr->rkey);
	post_recv1(&p.b, 3, NULL, 0, 0);
	post_send1(&p.a, 4, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	wait_wc(p.a.scq, wc, 3);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[2].wr_id, 4);
	for (size_t i = 0; i < n; i++)
		if (l.p[i] != 'a')
			fail_msg("READ saw the fenced WRITE at %zu", i);
	wait_wc(p.b.rcq, wc, 1);
	for (size_t i = 0; i < n; i++)
		if (x.p[i] != 'b')
			fail_msg("WRITE not placed at %zu", i);
	buf_free(&x);
	buf_free(&l);
	buf_free(&w);
	pair_down(&p);
}

/* A small WRITE posted after a big READ is not reported before the READ. */
static void t_write_after_read(void **s)
{
	struct pair p;
	struct ibv_wc wc[2];
	struct buf src, dst;

	(void)s;
	pair_up(&p, true, 0);
	buf_new(&src, p.b.pd, 4u << 20, ACC_ALL, 5);
	buf_new(&dst, p.a.pd, 4u << 20, ACC_ALL, 6);
	post_send1(&p.a, 1, IBV_WR_RDMA_READ, 0, dst.p, 4u << 20, dst.mr->lkey, (uintptr_t)src.p,
		   src.mr->rkey);
	post_send1(&p.a, 2, IBV_WR_RDMA_WRITE, 0, dst.p, 1, dst.mr->lkey, (uintptr_t)src.p + 1,
		   src.mr->rkey);
	wait_wc(p.a.scq, wc, 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].opcode, IBV_WC_RDMA_WRITE);
	buf_free(&src);
	buf_free(&dst);
	pair_down(&p);
}

static void disconnect(struct ep *e)
{
	to_sr_ctx(g_ctx)->priv_ops->disconnect(e->qp);
}

static void expect_flushed(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc[8];

	wait_wc(cq, wc, n);
	for (int i = 0; i < n; i++)
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	no_wc(cq, 50);
}

/* Orderly disconnect by the initiator: both sides closed once with 0, receives flushed. */
static void t_disconnect(void **s)
{
	struct pair p;
	struct ibv_wc wc;

	(void)s;
	pair_up(&p, true, SR_MPA_RTR_READ);
	for (int i = 0; i < 4; i++)
		post_recv1(&p.b, (uint64_t)i, NULL, 0, 0);
	for (int i = 0; i < 2; i++)
		post_recv1(&p.a, (uint64_t)i, NULL, 0, 0);
	/* one exchange first, so the stream is really up */
	post_send1(&p.a, 9, IBV_WR_SEND, 0, NULL, 0, 0, 0, 0);
	wait_wc(p.b.rcq, &wc, 1);
	wait_wc(p.a.scq, &wc, 1);
	disconnect(&p.a);
	assert_int_equal(wait_closed(&p.a), 0);
	assert_int_equal(wait_closed(&p.b), 0);
	expect_flushed(p.b.rcq, 3);
	expect_flushed(p.a.rcq, 2);
	assert_int_equal(qp_state(&p.a), IBV_QPS_ERR);
	assert_int_equal(qp_state(&p.b), IBV_QPS_ERR);
	/* an orderly close is not fatal */
	assert_false(wait_async(p.a.qp, IBV_EVENT_QP_FATAL, 50));
	assert_false(wait_async(p.b.qp, IBV_EVENT_QP_FATAL, 50));
	usleep(50000);
	assert_int_equal(closed_calls(&p.a, NULL), 1);
	assert_int_equal(closed_calls(&p.b, NULL), 1);
	pair_down(&p);
}

/*
 * Without P2P the responder may not send before the initiator's first FPDU: its Send waits,
 * and is flushed when the initiator disconnects. Then the same with the responder
 * disconnecting first while it still holds.
 */
static void t_disconnect_held(void **s)
{
	struct pair p;
	uint8_t x = 5;

	(void)s;
	pair_up(&p, true, 0);
	post_recv1(&p.a, 1, NULL, 0, 0);
	post_send1(&p.b, 2, IBV_WR_SEND, IBV_SEND_INLINE, &x, 1, 0, 0, 0);
	no_wc(p.a.rcq, 100);
	disconnect(&p.a);
	assert_int_equal(wait_closed(&p.b), 0);
	assert_int_equal(wait_closed(&p.a), 0);
	expect_flushed(p.b.scq, 1);
	expect_flushed(p.a.rcq, 1);
	pair_down(&p);

	pair_up(&p, true, 0);
	post_recv1(&p.a, 1, NULL, 0, 0);
	post_send1(&p.b, 2, IBV_WR_SEND, IBV_SEND_INLINE, &x, 1, 0, 0, 0);
	disconnect(&p.b);
	assert_int_equal(wait_closed(&p.b), 0);
	assert_int_equal(wait_closed(&p.a), 0);
	expect_flushed(p.b.scq, 1);
	expect_flushed(p.a.rcq, 1);
	pair_down(&p);
}

/* Disconnect waits for queued sends: a large Send posted just before still arrives. */
static void t_disconnect_drains(void **s)
{
	struct pair p;
	struct ibv_wc wc;
	struct buf src, dst;

	(void)s;
	pair_up(&p, false, SR_MPA_RTR_WRITE);
	buf_new(&src, p.a.pd, 8u << 20, ACC_ALL, 1);
	buf_new(&dst, p.b.pd, 8u << 20, ACC_ALL, 2);
	post_recv1(&p.b, 1, dst.p, 8u << 20, dst.mr->lkey);
	post_send1(&p.a, 2, IBV_WR_SEND, 0, src.p, 8u << 20, src.mr->lkey, 0, 0);
	disconnect(&p.a);
	wait_wc(p.b.rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 8u << 20);
	assert_true(memcmp(src.p, dst.p, 8u << 20) == 0);
	wait_wc(p.a.scq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wait_closed(&p.a), 0);
	assert_int_equal(wait_closed(&p.b), 0);
	buf_free(&src);
	buf_free(&dst);
	pair_down(&p);
}

/* ibv_modify_qp(ERR) aborts the stream: the local close is not reported as orderly. */
static void t_modify_err(void **s)
{
	struct pair p;
	int err;

	(void)s;
	pair_up(&p, true, SR_MPA_RTR_WRITE);
	post_recv1(&p.a, 1, NULL, 0, 0);
	post_recv1(&p.b, 1, NULL, 0, 0);
	assert_int_equal(qp_to(p.a.qp, IBV_QPS_ERR), 0);
	err = wait_closed(&p.a);
	assert_true(err < 0);
	wait_closed(&p.b);
	expect_flushed(p.a.rcq, 1);
	expect_flushed(p.b.rcq, 1);
	pair_down(&p);
}

/* Destroying QPs with live streams and work in flight: no callback, nothing leaks. */
enum { DL_SEND, DL_RECV, DL_READ, DL_WRITE, DL_N };
#define DL_LEN (8u << 20)

static void t_destroy_live(void **s)
{
	struct pair p;
	struct buf a[DL_N], b[DL_N];
	struct ibv_wc wc;

	(void)s;
	for (int round = 0; round < 2; round++) {
		pair_up(&p, true, round ? 0 : SR_MPA_RTR_READ);
		for (int i = 0; i < DL_N; i++) {
			buf_new(&a[i], p.a.pd, DL_LEN, ACC_ALL, (unsigned int)i);
			buf_new(&b[i], p.b.pd, DL_LEN, ACC_ALL, 10 + (unsigned int)i);
		}
		/* both directions busy: Sends, a READ and a WRITE, each with its own memory */
		post_recv1(&p.b, 1, b[DL_RECV].p, DL_LEN, b[DL_RECV].mr->lkey);
		post_recv1(&p.a, 1, a[DL_RECV].p, DL_LEN, a[DL_RECV].mr->lkey);
		post_send1(&p.a, 2, IBV_WR_SEND, 0, a[DL_SEND].p, DL_LEN, a[DL_SEND].mr->lkey, 0, 0);
		post_send1(&p.a, 3, IBV_WR_RDMA_READ, 0, a[DL_READ].p, DL_LEN, a[DL_READ].mr->lkey,
			   (uintptr_t)b[DL_READ].p, b[DL_READ].mr->rkey);
		post_send1(&p.b, 4, IBV_WR_RDMA_WRITE, 0, b[DL_WRITE].p, DL_LEN,
			   b[DL_WRITE].mr->lkey, (uintptr_t)a[DL_WRITE].p, a[DL_WRITE].mr->rkey);
		post_send1(&p.b, 5, IBV_WR_SEND, 0, b[DL_SEND].p, DL_LEN, b[DL_SEND].mr->lkey, 0, 0);
		usleep(round ? 1000 : 3000);
		if (round == 0) {
			/* a goes away: b sees the stream die (reset: unread data) and is told */
			assert_int_equal(ibv_destroy_qp(p.a.qp), 0);
			p.a.qp = NULL;
			wait_closed(&p.b);
			assert_int_equal(qp_state(&p.b), IBV_QPS_ERR);
			while (ibv_poll_cq(p.b.rcq, 1, &wc) > 0)
				;
		} else {
			/* both destroyed while everything is still running */
			assert_int_equal(ibv_destroy_qp(p.b.qp), 0);
			p.b.qp = NULL;
			assert_int_equal(ibv_destroy_qp(p.a.qp), 0);
			p.a.qp = NULL;
			/* (a may have seen b's reset first: that close is a's to report) */
			assert_int_equal(closed_calls(&p.b, NULL), 0);
		}
		if (round == 0)
			assert_int_equal(closed_calls(&p.a, NULL), 0);
		if (p.b.qp) {
			assert_int_equal(ibv_destroy_qp(p.b.qp), 0);
			p.b.qp = NULL;
		}
		for (int i = 0; i < DL_N; i++) {
			buf_free(&a[i]);
			buf_free(&b[i]);
		}
		pair_down(&p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_xfer_crc),
		cmocka_unit_test(t_xfer_nocrc),
		cmocka_unit_test(t_xfer_rtr_write),
		cmocka_unit_test(t_xfer_rtr_read),
		cmocka_unit_test(t_rtr_send),
		cmocka_unit_test(t_multi_sge),
		cmocka_unit_test(t_inline),
		cmocka_unit_test(t_srq),
		cmocka_unit_test(t_solicited),
		cmocka_unit_test(t_send_inv),
		cmocka_unit_test(t_ord_limit),
		cmocka_unit_test(t_idle_costs),
		cmocka_unit_test(t_fence),
		cmocka_unit_test(t_write_after_read),
		cmocka_unit_test(t_disconnect),
		cmocka_unit_test(t_disconnect_held),
		cmocka_unit_test(t_disconnect_drains),
		cmocka_unit_test(t_modify_err),
		cmocka_unit_test(t_destroy_live),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
