// SPDX-License-Identifier: MIT
/*
 * Posting and the transport contract. The transport is simulated: a fake sr_xport_ops counts
 * kicks/aborts/detaches, and the test plays the engine with sr_sq_next/sr_sq_complete and
 * sr_rq_take/sr_rq_complete.
 */
#include <fcntl.h>
#include <poll.h>

#include "obj_helpers.h"

static atomic_int n_kick, n_abort, n_stop, n_detach;

static void fake_kick(struct sr_qp *qp)
{
	atomic_fetch_add(&n_kick, 1);
}

static void fake_abort(struct sr_qp *qp)
{
	atomic_fetch_add(&n_abort, 1);
}

static void fake_stop(struct sr_qp *qp)
{
	atomic_fetch_add(&n_stop, 1);
}

static void fake_detach(struct sr_qp *qp)
{
	atomic_fetch_add(&n_detach, 1);
}

static const struct sr_xport_ops fake_ops = {
	.sq_kick = fake_kick,
	.abort = fake_abort,
	.stop = fake_stop,
	.detach = fake_detach,
};

static void reset_counts(void)
{
	atomic_store(&n_kick, 0);
	atomic_store(&n_abort, 0);
	atomic_store(&n_stop, 0);
	atomic_store(&n_detach, 0);
}

static uint8_t buf[4096];

struct pfx {
	struct fx f;
	struct ibv_mr *mr;   /* local write + remote */
	struct ibv_mr *ro;   /* no local write */
	struct sr_qp *qp;
};

static void pfx_open(struct pfx *p, uint32_t wr, uint32_t sge, uint32_t inl,
		     enum ibv_qp_state to)
{
	reset_counts();
	fx_open_qp(&p->f, wr, sge, inl, to);
	p->qp = to_sr_qp(p->f.qp);
	p->mr = ibv_reg_mr(p->f.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	p->ro = ibv_reg_mr(p->f.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_READ);
	assert_non_null(p->mr);
	assert_non_null(p->ro);
}

static void pfx_close(struct pfx *p)
{
	assert_int_equal(ibv_destroy_qp(p->f.qp), 0);
	p->f.qp = NULL;
	assert_int_equal(ibv_dereg_mr(p->mr), 0);
	assert_int_equal(ibv_dereg_mr(p->ro), 0);
	fx_close(&p->f);
}

static struct ibv_sge sge_at(struct ibv_mr *mr, size_t off, uint32_t len)
{
	return (struct ibv_sge){ .addr = (uintptr_t)buf + off, .length = len, .lkey = mr->lkey };
}

static int post1(struct ibv_qp *qp, uint64_t id, enum ibv_wr_opcode op, unsigned int flags,
		 struct ibv_sge *sge, int n)
{
	struct ibv_send_wr wr = { .wr_id = id, .opcode = op, .send_flags = flags,
				  .sg_list = sge, .num_sge = n }, *bad = NULL;

	wr.wr.rdma.remote_addr = 0x1000;
	wr.wr.rdma.rkey = 0x4242;
	return ibv_post_send(qp, &wr, &bad);
}

static int recv1(struct ibv_qp *qp, uint64_t id, struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = sge, .num_sge = n }, *bad = NULL;

	return ibv_post_recv(qp, &wr, &bad);
}

static void post_send_state_and_validation(void **state)
{
	struct pfx p;
	struct ibv_sge s, sg[3];
	struct ibv_send_wr w[3], *bad;

	pfx_open(&p, 16, 2, 16, IBV_QPS_RESET);
	assert_int_equal(p.f.ia.cap.max_inline_data, 32); /* 2 SGEs' worth */
	s = sge_at(p.mr, 0, 8);
	/* no sends before RTS */
	for (enum ibv_qp_state st = IBV_QPS_RESET; st <= IBV_QPS_RTR; st++) {
		if (st != IBV_QPS_RESET)
			assert_int_equal(fx_modify(p.f.qp, st), 0);
		memset(w, 0, sizeof(w));
		w[0] = (struct ibv_send_wr){ .wr_id = 1, .opcode = IBV_WR_SEND, .sg_list = &s,
					     .num_sge = 1 };
		bad = NULL;
		assert_int_equal(ibv_post_send(p.f.qp, &w[0], &bad), EINVAL);
		assert_ptr_equal(bad, &w[0]);
	}
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RTS), 0);

	/* a list: the first bad WR stops it, the ones before stay posted */
	struct {
		enum ibv_wr_opcode op;
		unsigned int flags;
		int nsge;
		uint32_t len;
	} cases[] = {
		{ IBV_WR_SEND_WITH_IMM, 0, 1, 8 },
		{ IBV_WR_RDMA_WRITE_WITH_IMM, 0, 1, 8 },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, 0, 1, 8 },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 1, 8 },
		{ IBV_WR_LOCAL_INV, 0, 1, 8 },
		{ IBV_WR_BIND_MW, 0, 1, 8 },
		{ IBV_WR_SEND, IBV_SEND_IP_CSUM, 1, 8 },
		{ IBV_WR_SEND, 0, 3, 8 },                    /* > max_send_sge */
		{ IBV_WR_SEND, IBV_SEND_INLINE, 3, 16 },     /* 48 > max_inline (32 granted) */
		{ IBV_WR_RDMA_READ, IBV_SEND_INLINE, 1, 8 }, /* inline READ */
		{ IBV_WR_SEND, 0, 2, 0x40000001u },          /* 2 * len > SR_MAX_MSG_SIZE */
	};
	for (size_t i = 0; i < SR_ARRAY_SIZE(cases); i++) {
		for (int k = 0; k < 3; k++)
			sg[k] = sge_at(p.mr, 0, cases[i].len);
		w[0] = (struct ibv_send_wr){ .wr_id = 10, .opcode = IBV_WR_SEND, .sg_list = &s,
					     .num_sge = 1, .next = &w[1] };
		w[1] = (struct ibv_send_wr){ .wr_id = 11, .opcode = cases[i].op,
					     .send_flags = cases[i].flags, .sg_list = sg,
					     .num_sge = cases[i].nsge, .next = &w[2] };
		w[2] = w[0];
		w[2].next = NULL;
		bad = NULL;
		assert_int_equal(ibv_post_send(p.f.qp, &w[0], &bad), EINVAL);
		assert_ptr_equal(bad, &w[1]);
		assert_int_equal(p.qp->sq_count, i + 1);
	}
	assert_int_equal(p.qp->sq_count, SR_ARRAY_SIZE(cases));
	pfx_close(&p);
}

static void post_send_sq_full(void **state)
{
	struct pfx p;
	struct ibv_send_wr w[6], *bad = NULL;
	struct ibv_sge s;

	pfx_open(&p, 4, 1, 0, IBV_QPS_RTS);
	s = sge_at(p.mr, 0, 8);
	for (int i = 0; i < 6; i++)
		w[i] = (struct ibv_send_wr){ .wr_id = i, .opcode = IBV_WR_SEND, .sg_list = &s,
					     .num_sge = 1, .next = i < 5 ? &w[i + 1] : NULL };
	assert_int_equal(ibv_post_send(p.f.qp, w, &bad), ENOMEM);
	assert_ptr_equal(bad, &w[4]);
	/* the transport takes them; a completion frees a slot */
	struct sr_send_wqe *q[4];

	for (int i = 0; i < 4; i++) {
		q[i] = sr_sq_next(p.qp);
		assert_non_null(q[i]);
		assert_int_equal(q[i]->wr_id, i);
	}
	assert_null(sr_sq_next(p.qp));
	sr_sq_complete(p.qp, q[0], IBV_WC_SUCCESS);
	bad = NULL;
	assert_int_equal(ibv_post_send(p.f.qp, &w[5], &bad), 0);
	assert_int_equal(post1(p.f.qp, 9, IBV_WR_SEND, 0, &s, 1), ENOMEM);
	pfx_close(&p);
}

static void post_send_wqe_contents_and_inline(void **state)
{
	struct pfx p;
	char data[16] = "inline-payload!";
	struct ibv_sge in[2] = { { .addr = (uintptr_t)data, .length = 6 },
				 { .addr = (uintptr_t)data + 6, .length = 10 } };
	struct ibv_sge sg[2];
	struct ibv_send_wr wr = { 0 }, *bad;
	struct sr_send_wqe *q;

	pfx_open(&p, 8, 2, 16, IBV_QPS_RTS);
	sr_qp_attach_xport(p.qp, &fake_ops, &p);
	/* inline: lkeys are not looked at, data is copied at post time */
	wr = (struct ibv_send_wr){ .wr_id = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_INLINE | IBV_SEND_SOLICITED,
				   .sg_list = in, .num_sge = 2 };
	assert_int_equal(ibv_post_send(p.f.qp, &wr, &bad), 0);
	assert_int_equal(atomic_load(&n_kick), 1);
	memset(data, 'X', sizeof(data));
	q = sr_sq_next(p.qp);
	assert_non_null(q);
	assert_true(q->is_inline);
	assert_int_equal(q->num_sge, 0);
	assert_int_equal(q->length, 16);
	assert_memory_equal(q->inline_data, "inline-payload!", 16);
	assert_int_equal(q->flags, IBV_SEND_INLINE | IBV_SEND_SOLICITED);
	assert_false(q->signaled);

	/* WRITE: remote address, rkey and the SGEs copied */
	sg[0] = sge_at(p.mr, 100, 10);
	sg[1] = sge_at(p.mr, 300, 20);
	wr = (struct ibv_send_wr){ .wr_id = 2, .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE,
				   .sg_list = sg, .num_sge = 2 };
	wr.wr.rdma.remote_addr = 0xabcdef0123ull;
	wr.wr.rdma.rkey = 0x777;
	assert_int_equal(ibv_post_send(p.f.qp, &wr, &bad), 0);
	sg[0].length = 999; /* the WQE holds its own copy */
	q = sr_sq_next(p.qp);
	assert_int_equal(q->opcode, IBV_WR_RDMA_WRITE);
	assert_int_equal(q->remote_addr, 0xabcdef0123ull);
	assert_int_equal(q->rkey, 0x777);
	assert_int_equal(q->num_sge, 2);
	assert_int_equal(q->sge[0].length, 10);
	assert_int_equal(q->sge[1].addr, (uintptr_t)buf + 300);
	assert_int_equal(q->length, 30);
	assert_true(q->signaled);
	assert_false(q->is_inline);

	/* SEND_WITH_INV carries the STag to invalidate */
	wr = (struct ibv_send_wr){ .wr_id = 3, .opcode = IBV_WR_SEND_WITH_INV, .sg_list = sg,
				   .num_sge = 1, .invalidate_rkey = 0x1234 };
	assert_int_equal(ibv_post_send(p.f.qp, &wr, &bad), 0);
	q = sr_sq_next(p.qp);
	assert_int_equal(q->opcode, IBV_WR_SEND_WITH_INV);
	assert_int_equal(q->invalidate_rkey, 0x1234);
	/* zero-SGE send is fine */
	assert_int_equal(post1(p.f.qp, 4, IBV_WR_SEND, 0, NULL, 0), 0);
	q = sr_sq_next(p.qp);
	assert_int_equal(q->length, 0);
	assert_int_equal(atomic_load(&n_kick), 4);
	pfx_close(&p);
	assert_int_equal(atomic_load(&n_detach), 1);
}

/* Completions come in posting order: a READ still waiting holds back later ones. */
static void completion_order_with_held_read(void **state)
{
	struct pfx p;
	struct ibv_sge s;
	struct sr_send_wqe *q[4];
	struct ibv_wc wc[8];

	pfx_open(&p, 8, 1, 0, IBV_QPS_RTS);
	s = sge_at(p.mr, 0, 100);
	assert_int_equal(post1(p.f.qp, 1, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, &s, 1), 0);
	s.length = 50;
	assert_int_equal(post1(p.f.qp, 2, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, &s, 1), 0);
	assert_int_equal(post1(p.f.qp, 3, IBV_WR_SEND, 0, &s, 1), 0); /* unsignaled */
	assert_int_equal(post1(p.f.qp, 4, IBV_WR_SEND, IBV_SEND_SIGNALED, &s, 1), 0);
	for (int i = 0; i < 4; i++)
		q[i] = sr_sq_next(p.qp);
	sr_sq_complete(p.qp, q[1], IBV_WC_SUCCESS);
	sr_sq_complete(p.qp, q[3], IBV_WC_SUCCESS);
	sr_sq_complete(p.qp, q[2], IBV_WC_SUCCESS);
	assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 0);
	assert_int_equal(p.qp->sq_count, 4);
	sr_sq_complete(p.qp, q[0], IBV_WC_SUCCESS);
	assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 3);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc[0].byte_len, 100);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].qp_num, p.f.qp->qp_num);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(wc[2].wr_id, 4);
	assert_int_equal(wc[2].opcode, IBV_WC_SEND);
	assert_int_equal(p.qp->sq_count, 0);
	pfx_close(&p);
}

static void sq_sig_all(void **state)
{
	struct fx f;
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;
	struct ibv_wc wc;

	fx_open(&f);
	a = fx_qp_attr(&f, 4, 1, 0);
	a.sq_sig_all = 1;
	qp = ibv_create_qp(f.pd, &a);
	sr_qp_llp_claim(qp);
	assert_int_equal(fx_modify(qp, IBV_QPS_INIT), 0);
	assert_int_equal(fx_modify(qp, IBV_QPS_RTR), 0);
	assert_int_equal(fx_modify(qp, IBV_QPS_RTS), 0);
	assert_int_equal(post1(qp, 5, IBV_WR_SEND, 0, NULL, 0), 0);
	sr_sq_complete(to_sr_qp(qp), sr_sq_next(to_sr_qp(qp)), IBV_WC_SUCCESS);
	assert_int_equal(ibv_poll_cq(f.scq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 5);
	f.qp = qp;
	fx_close(&f);
}

static bool fd_readable(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return poll(&pf, 1, 0) == 1;
}

/* Moving to ERR: abort the stream, flush every send and receive in order, wake the channel. */
static void flush_on_error(void **state)
{
	struct pfx p;
	struct ibv_sge s;
	struct ibv_wc wc[8];
	struct sr_send_wqe *started;
	struct ibv_cq *got;
	void *cctx;
	int n;

	pfx_open(&p, 8, 1, 0, IBV_QPS_RTS);
	sr_qp_attach_xport(p.qp, &fake_ops, &p);
	s = sge_at(p.mr, 0, 64);
	assert_int_equal(post1(p.f.qp, 1, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, &s, 1), 0);
	assert_int_equal(post1(p.f.qp, 2, IBV_WR_SEND, 0, &s, 1), 0); /* unsignaled */
	assert_int_equal(post1(p.f.qp, 3, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, &s, 1), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(recv1(p.f.qp, 100 + i, &s, 1), 0);
	started = sr_sq_next(p.qp); /* the READ is with the transport */
	assert_non_null(started);
	ibv_req_notify_cq(p.f.scq, 0);
	ibv_req_notify_cq(p.f.rcq, 1); /* solicited only: flush errors still wake */
	assert_false(fd_readable(p.f.ch->fd));

	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_ERR), 0);
	assert_int_equal(atomic_load(&n_stop), 1); /* the application's ERR waits for the stop */
	assert_int_equal(atomic_load(&n_abort), 0);
	assert_int_equal(p.f.qp->state, IBV_QPS_ERR);
	n = ibv_poll_cq(p.f.scq, 8, wc);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, i + 1);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].byte_len, 0);
		assert_int_equal(wc[i].qp_num, p.f.qp->qp_num);
	}
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc[1].opcode, IBV_WC_SEND);
	assert_int_equal(wc[2].opcode, IBV_WC_RDMA_WRITE);
	n = ibv_poll_cq(p.f.rcq, 8, wc);
	assert_int_equal(n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 100 + i);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, IBV_WC_RECV);
	}
	assert_true(fd_readable(p.f.ch->fd));
	assert_int_equal(ibv_get_cq_event(p.f.ch, &got, &cctx), 0);
	assert_int_equal(ibv_get_cq_event(p.f.ch, &got, &cctx), 0);
	ibv_ack_cq_events(p.f.scq, 1);
	ibv_ack_cq_events(p.f.rcq, 1);

	/* the transport finishing the flushed READ late changes nothing */
	sr_sq_complete(p.qp, started, IBV_WC_SUCCESS);
	assert_null(sr_sq_next(p.qp));
	assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 0);

	/* posting in ERR: accepted, completed at once as flushed (unsignaled too) */
	assert_int_equal(post1(p.f.qp, 7, IBV_WR_SEND, 0, &s, 1), 0);
	assert_int_equal(recv1(p.f.qp, 8, &s, 1), 0);
	assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 7);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(ibv_poll_cq(p.f.rcq, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 8);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	/* ERR -> ERR stops nothing more; RESET detaches and empties without completions */
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_ERR), 0);
	assert_int_equal(atomic_load(&n_stop), 1);
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RESET), 0);
	assert_int_equal(atomic_load(&n_detach), 1);
	assert_null(p.qp->xops);
	pfx_close(&p);
	assert_int_equal(atomic_load(&n_detach), 1);
}

/* RESET drops everything silently; the QP can be used again. */
static void reset_discards(void **state)
{
	struct pfx p;
	struct ibv_sge s;
	struct ibv_wc wc[4];

	pfx_open(&p, 4, 1, 0, IBV_QPS_RTS);
	s = sge_at(p.mr, 0, 8);
	assert_int_equal(post1(p.f.qp, 1, IBV_WR_SEND, IBV_SEND_SIGNALED, &s, 1), 0);
	assert_int_equal(recv1(p.f.qp, 2, &s, 1), 0);
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RESET), 0);
	assert_int_equal(ibv_poll_cq(p.f.scq, 4, wc), 0);
	assert_int_equal(ibv_poll_cq(p.f.rcq, 4, wc), 0);
	assert_int_equal(recv1(p.f.qp, 3, &s, 1), EINVAL); /* RESET takes no receives */
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_INIT), 0);
	assert_int_equal(recv1(p.f.qp, 4, &s, 1), 0);
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RTR), 0);
	struct sr_recv_wqe *r = sr_rq_take(p.qp);

	assert_non_null(r);
	assert_int_equal(r->wr_id, 4);
	sr_rq_release(r);
	pfx_close(&p);
}

/* Bad lkeys do not fail the post: the WR completes with LOC_PROT_ERR in its turn. */
static void bad_lkey_completes_with_error(void **state)
{
	struct pfx p;
	struct ibv_sge s, bad_s;
	struct ibv_wc wc[8];
	struct sr_send_wqe *q;

	/* at the head: fails at once, QP to ERR, stream aborted */
	pfx_open(&p, 8, 1, 0, IBV_QPS_RTS);
	sr_qp_attach_xport(p.qp, &fake_ops, &p);
	bad_s = sge_at(p.mr, 0, 8);
	bad_s.lkey ^= 0x55;
	assert_int_equal(post1(p.f.qp, 1, IBV_WR_SEND, 0, &bad_s, 1), 0);
	assert_int_equal(p.f.qp->state, IBV_QPS_ERR);
	assert_int_equal(atomic_load(&n_stop), 1); /* the posting thread: stop, it may wait */
	assert_int_equal(atomic_load(&n_abort), 0);
	assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, IBV_WC_LOC_PROT_ERR);
	pfx_close(&p);

	/* behind an outstanding WQE: waits, is never handed out, fails in order */
	pfx_open(&p, 8, 1, 0, IBV_QPS_RTS);
	sr_qp_attach_xport(p.qp, &fake_ops, &p);
	s = sge_at(p.mr, 0, 8);
	bad_s = sge_at(p.mr, sizeof(buf) - 4, 8); /* past the end of the region */
	assert_int_equal(post1(p.f.qp, 1, IBV_WR_RDMA_WRITE, 0, &s, 1), 0);
	assert_int_equal(post1(p.f.qp, 2, IBV_WR_SEND, 0, &bad_s, 1), 0);
	assert_int_equal(post1(p.f.qp, 3, IBV_WR_SEND, IBV_SEND_SIGNALED, &s, 1), 0);
	assert_int_equal(p.f.qp->state, IBV_QPS_RTS);
	q = sr_sq_next(p.qp);
	assert_int_equal(q->wr_id, 1);
	assert_null(sr_sq_next(p.qp));
	sr_sq_complete(p.qp, q, IBV_WC_SUCCESS);
	assert_int_equal(p.f.qp->state, IBV_QPS_ERR);
	assert_int_equal(atomic_load(&n_abort), 1); /* inside the transport: abort, no wait */
	assert_int_equal(atomic_load(&n_stop), 0);
	assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 2); /* the unsignaled WRITE is silent */
	assert_int_equal(wc[0].wr_id, 2);
	assert_int_equal(wc[0].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(wc[1].wr_id, 3);
	assert_int_equal(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	pfx_close(&p);

	/* a READ sink must be locally writable; a region of another PD is refused */
	pfx_open(&p, 8, 1, 0, IBV_QPS_RTS);
	s = sge_at(p.ro, 0, 8);
	assert_int_equal(post1(p.f.qp, 1, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, &s, 1), 0);
	q = sr_sq_next(p.qp);
	assert_non_null(q); /* reading from a read-only region is fine */
	sr_sq_complete(p.qp, q, IBV_WC_SUCCESS);
	assert_int_equal(post1(p.f.qp, 2, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, &s, 1), 0);
	assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(wc[1].opcode, IBV_WC_RDMA_READ);
	pfx_close(&p);

	pfx_open(&p, 8, 1, 0, IBV_QPS_RTS);
	{
		struct ibv_pd *pd2 = ibv_alloc_pd(p.f.ctx);
		struct ibv_mr *mr2 = ibv_reg_mr(pd2, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

		s = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 8, .lkey = mr2->lkey };
		assert_int_equal(post1(p.f.qp, 1, IBV_WR_SEND, 0, &s, 1), 0);
		assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 1);
		assert_int_equal(wc[0].status, IBV_WC_LOC_PROT_ERR);
		ibv_dereg_mr(mr2);
		ibv_dealloc_pd(pd2);
	}
	pfx_close(&p);
}

/* The transport reports an error on a later WQE while an earlier READ is outstanding. */
static void transport_error_flushes_in_order(void **state)
{
	struct pfx p;
	struct ibv_sge s;
	struct sr_send_wqe *q[3];
	struct ibv_wc wc[8];

	pfx_open(&p, 8, 1, 0, IBV_QPS_RTS);
	sr_qp_attach_xport(p.qp, &fake_ops, &p);
	s = sge_at(p.mr, 0, 8);
	assert_int_equal(post1(p.f.qp, 1, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, &s, 1), 0);
	assert_int_equal(post1(p.f.qp, 2, IBV_WR_RDMA_WRITE, 0, &s, 1), 0);
	assert_int_equal(post1(p.f.qp, 3, IBV_WR_SEND, 0, &s, 1), 0);
	for (int i = 0; i < 3; i++)
		q[i] = sr_sq_next(p.qp);
	sr_sq_complete(p.qp, q[1], IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(p.f.qp->state, IBV_QPS_ERR);
	assert_int_equal(atomic_load(&n_abort), 0); /* the transport knows already */
	assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 3);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(wc[2].wr_id, 3);
	assert_int_equal(wc[2].status, IBV_WC_WR_FLUSH_ERR);
	sr_sq_complete(p.qp, q[0], IBV_WC_SUCCESS); /* late: ignored */
	assert_int_equal(ibv_poll_cq(p.f.scq, 8, wc), 0);
	pfx_close(&p);
}

static void post_recv_and_rq_complete(void **state)
{
	struct pfx p;
	struct ibv_sge s[3];
	struct ibv_recv_wr w[3], *bad;
	struct sr_recv_wqe *r1, *r2;
	struct ibv_wc wc[4];
	struct ibv_cq *got;
	void *cctx;

	pfx_open(&p, 2, 2, 0, IBV_QPS_RESET);
	s[0] = sge_at(p.mr, 0, 10);
	s[1] = sge_at(p.mr, 10, 20);
	s[2] = s[1];
	assert_int_equal(recv1(p.f.qp, 1, s, 1), EINVAL); /* RESET */
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_INIT), 0);
	assert_null(sr_rq_take(p.qp)); /* INIT receives nothing yet */
	w[0] = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = s, .num_sge = 2, .next = &w[1] };
	w[1] = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = s, .num_sge = 3, .next = NULL };
	bad = NULL;
	assert_int_equal(ibv_post_recv(p.f.qp, w, &bad), EINVAL); /* 3 SGEs > 2 */
	assert_ptr_equal(bad, &w[1]);
	w[1].num_sge = 1;
	w[1].next = &w[2];
	w[2] = (struct ibv_recv_wr){ .wr_id = 3, .sg_list = s, .num_sge = 1 };
	assert_int_equal(ibv_post_recv(p.f.qp, &w[1], &bad), ENOMEM); /* depth 2 */
	assert_ptr_equal(bad, &w[2]);

	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RTR), 0);
	r1 = sr_rq_take(p.qp);
	r2 = sr_rq_take(p.qp);
	assert_null(sr_rq_take(p.qp));
	assert_int_equal(r1->wr_id, 1);
	assert_int_equal(r1->num_sge, 2);
	assert_int_equal(r1->length, 30);
	assert_int_equal(r1->sge[1].addr, (uintptr_t)buf + 10);
	assert_int_equal(r2->wr_id, 2);
	/* the slots are free again while the transport holds its copies */
	assert_int_equal(recv1(p.f.qp, 5, s, 1), 0);

	ibv_req_notify_cq(p.f.rcq, 1);
	sr_rq_complete(p.qp, r1, IBV_WC_SUCCESS, 25, 0, 0, false);
	assert_false(fd_readable(p.f.ch->fd)); /* not solicited */
	sr_rq_complete(p.qp, r2, IBV_WC_SUCCESS, 7, IBV_WC_WITH_INV, 0xabc, true);
	assert_int_equal(ibv_get_cq_event(p.f.ch, &got, &cctx), 0);
	assert_ptr_equal(got, p.f.rcq);
	ibv_ack_cq_events(got, 1);
	assert_int_equal(ibv_poll_cq(p.f.rcq, 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].opcode, IBV_WC_RECV);
	assert_int_equal(wc[0].byte_len, 25);
	assert_int_equal(wc[0].wc_flags, 0);
	assert_int_equal(wc[0].qp_num, p.f.qp->qp_num);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].byte_len, 7);
	assert_int_equal(wc[1].wc_flags, IBV_WC_WITH_INV);
	assert_int_equal(wc[1].invalidated_rkey, 0xabc);

	/* a receive error ends the QP and flushes the rest */
	r1 = sr_rq_take(p.qp);
	assert_int_equal(recv1(p.f.qp, 6, s, 1), 0);
	sr_rq_complete(p.qp, r1, IBV_WC_LOC_LEN_ERR, 0, 0, 0, false);
	assert_int_equal(p.f.qp->state, IBV_QPS_ERR);
	assert_int_equal(ibv_poll_cq(p.f.rcq, 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 5);
	assert_int_equal(wc[0].status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(wc[1].wr_id, 6);
	assert_int_equal(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	pfx_close(&p);
}

static void transport_fatal_and_kicks(void **state)
{
	struct pfx p;
	struct ibv_sge s;
	struct ibv_async_event ev;
	struct ibv_wc wc[4];

	pfx_open(&p, 8, 1, 0, IBV_QPS_RTS);
	s = sge_at(p.mr, 0, 8);
	/* posted before the transport arrived: attaching kicks */
	assert_int_equal(post1(p.f.qp, 1, IBV_WR_SEND, 0, &s, 1), 0);
	sr_qp_attach_xport(p.qp, &fake_ops, &p);
	assert_int_equal(atomic_load(&n_kick), 1);
	assert_ptr_equal(p.qp->xport, &p);
	/* SQD: queued, not started, no kick; back to RTS kicks */
	assert_non_null(sr_sq_next(p.qp));
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_SQD), 0);
	assert_int_equal(post1(p.f.qp, 2, IBV_WR_SEND, 0, &s, 1), 0);
	assert_int_equal(atomic_load(&n_kick), 1);
	assert_null(sr_sq_next(p.qp));
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RTS), 0);
	assert_int_equal(atomic_load(&n_kick), 2);
	assert_non_null(sr_sq_next(p.qp));

	sr_qp_to_error(p.qp, true);
	sr_qp_to_error(p.qp, true); /* idempotent: one event */
	assert_int_equal(p.f.qp->state, IBV_QPS_ERR);
	assert_int_equal(atomic_load(&n_abort), 0);
	assert_int_equal(ibv_poll_cq(p.f.scq, 4, wc), 2);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(ibv_get_async_event(p.f.ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
	assert_ptr_equal(ev.element.qp, p.f.qp);
	fcntl(p.f.ctx->async_fd, F_SETFL, O_NONBLOCK);
	assert_int_equal(ibv_get_async_event(p.f.ctx, &ev), -1);
	ev.event_type = IBV_EVENT_QP_FATAL;
	ev.element.qp = p.f.qp;
	ibv_ack_async_event(&ev);
	pfx_close(&p);
}

/* Receives the transport holds belong to the QP: ERR flushes them first, in order. */
static void taken_receives_flush_in_order(void **state)
{
	struct pfx p;
	struct ibv_sge s;
	struct sr_recv_wqe *r1, *r2;
	struct ibv_wc wc[8];

	pfx_open(&p, 8, 1, 0, IBV_QPS_RTS);
	s = sge_at(p.mr, 0, 8);
	for (int i = 1; i <= 3; i++)
		assert_int_equal(recv1(p.f.qp, i, &s, 1), 0);
	r1 = sr_rq_take(p.qp);
	assert_int_equal(r1->wr_id, 1);
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_ERR), 0);
	assert_int_equal(ibv_poll_cq(p.f.rcq, 8, wc), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, i + 1);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	}
	/* the transport finishing it afterwards reports nothing more */
	sr_rq_complete(p.qp, r1, IBV_WC_SUCCESS, 8, 0, 0, false);
	assert_int_equal(ibv_poll_cq(p.f.rcq, 8, wc), 0);

	/* RESET drops a held one silently; a copy outliving its QP can still be released */
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RESET), 0);
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_INIT), 0);
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RTR), 0);
	assert_int_equal(recv1(p.f.qp, 4, &s, 1), 0);
	assert_int_equal(recv1(p.f.qp, 5, &s, 1), 0);
	r1 = sr_rq_take(p.qp);
	r2 = sr_rq_take(p.qp);
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RESET), 0);
	sr_rq_complete(p.qp, r1, IBV_WC_SUCCESS, 8, 0, 0, false);
	assert_int_equal(ibv_poll_cq(p.f.rcq, 8, wc), 0);
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_INIT), 0);
	assert_int_equal(fx_modify(p.f.qp, IBV_QPS_RTR), 0);
	assert_int_equal(recv1(p.f.qp, 6, &s, 1), 0);
	r1 = sr_rq_take(p.qp);
	assert_int_equal(r1->wr_id, 6);
	pfx_close(&p);
	sr_rq_release(r1);
	sr_rq_release(r2);
}

/* One taken from an SRQ is the QP's too. */
static void taken_srq_receive_flushes_with_qp(void **state)
{
	struct fx f;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_qp_init_attr a;
	struct ibv_recv_wr wr = { .wr_id = 42 }, *bad;
	struct ibv_srq *srq;
	struct sr_recv_wqe *r;
	struct ibv_wc wc[4];

	fx_open(&f);
	srq = ibv_create_srq(f.pd, &sa);
	a = fx_qp_attr(&f, 4, 1, 0);
	a.srq = srq;
	f.qp = ibv_create_qp(f.pd, &a);
	assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), 0);
	wr.wr_id = 43;
	assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), 0);
	assert_int_equal(fx_modify(f.qp, IBV_QPS_INIT), 0);
	assert_int_equal(fx_modify(f.qp, IBV_QPS_RTR), 0);
	r = sr_rq_take(to_sr_qp(f.qp));
	assert_int_equal(r->wr_id, 42);
	assert_int_equal(fx_modify(f.qp, IBV_QPS_ERR), 0);
	assert_int_equal(ibv_poll_cq(f.rcq, 4, wc), 1);
	assert_int_equal(wc[0].wr_id, 42);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[0].qp_num, f.qp->qp_num);
	sr_rq_complete(to_sr_qp(f.qp), r, IBV_WC_SUCCESS, 1, 0, 0, false);
	assert_int_equal(ibv_poll_cq(f.rcq, 4, wc), 0);
	assert_int_equal(to_sr_srq(srq)->count, 1); /* 43 stays on the SRQ */
	assert_int_equal(ibv_destroy_qp(f.qp), 0);
	f.qp = NULL;
	assert_int_equal(ibv_destroy_srq(srq), 0);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(post_send_state_and_validation),
		cmocka_unit_test(post_send_sq_full),
		cmocka_unit_test(post_send_wqe_contents_and_inline),
		cmocka_unit_test(completion_order_with_held_read),
		cmocka_unit_test(sq_sig_all),
		cmocka_unit_test(flush_on_error),
		cmocka_unit_test(reset_discards),
		cmocka_unit_test(bad_lkey_completes_with_error),
		cmocka_unit_test(transport_error_flushes_in_order),
		cmocka_unit_test(post_recv_and_rq_complete),
		cmocka_unit_test(transport_fatal_and_kicks),
		cmocka_unit_test(taken_receives_flush_in_order),
		cmocka_unit_test(taken_srq_receive_flushes_with_qp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
