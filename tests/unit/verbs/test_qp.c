// SPDX-License-Identifier: MIT
/* QP creation, capabilities, the state machine, query and destroy rules. */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "obj_helpers.h"

static void qp_create_caps(void **state)
{
	struct fx f;
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp, *qp2;
	struct ibv_context *ctx2 = open_lo();
	struct ibv_cq *cq2 = ibv_create_cq(ctx2, 4, NULL, NULL, 0);

	fx_open(&f);
	a = fx_qp_attr(&f, 10, 3, 64);
	a.qp_context = (void *)0x99;
	qp = ibv_create_qp(f.pd, &a);
	assert_non_null(qp);
	assert_true(a.cap.max_send_wr >= 10 && a.cap.max_recv_wr >= 10);
	assert_true(a.cap.max_send_sge >= 3 && a.cap.max_recv_sge >= 3);
	assert_true(a.cap.max_inline_data >= 64);
	assert_int_not_equal(qp->qp_num, 0);
	assert_true(qp->qp_num < (1u << 24));
	/* ibv_query_qp reports a new RC QP in INIT, as kernel iWARP does */
	assert_int_equal(qp->state, IBV_QPS_RESET); /* rdma-core's create sets the field so */
	{
		struct ibv_qp_attr sa;
		struct ibv_qp_init_attr sia;

		assert_int_equal(ibv_query_qp(qp, &sa, IBV_QP_STATE, &sia), 0);
		assert_int_equal(sa.qp_state, IBV_QPS_INIT);
	}
	assert_int_equal(qp->qp_type, IBV_QPT_RC);
	assert_ptr_equal(qp->qp_context, (void *)0x99);
	assert_ptr_equal(qp->pd, f.pd);
	assert_ptr_equal(qp->send_cq, f.scq);
	/* zero everything: still a usable QP, with at least one of each */
	a = fx_qp_attr(&f, 0, 0, 0);
	qp2 = ibv_create_qp(f.pd, &a);
	assert_non_null(qp2);
	assert_true(a.cap.max_send_wr >= 1 && a.cap.max_recv_sge >= 1);
	assert_int_not_equal(qp2->qp_num, qp->qp_num);
	assert_int_equal(ibv_destroy_qp(qp2), 0);

	/* limits */
#define BAD(expr, e)                                      \
	do {                                              \
		a = fx_qp_attr(&f, 4, 1, 0);              \
		expr;                                     \
		errno = 0;                                \
		assert_null(ibv_create_qp(f.pd, &a));     \
		assert_int_equal(errno, e);               \
	} while (0)
	BAD(a.cap.max_send_wr = SR_MAX_QP_WR + 1, EINVAL);
	BAD(a.cap.max_recv_wr = SR_MAX_QP_WR + 1, EINVAL);
	BAD(a.cap.max_send_sge = SR_MAX_SGE + 1, EINVAL);
	BAD(a.cap.max_recv_sge = SR_MAX_SGE + 1, EINVAL);
	BAD(a.cap.max_inline_data = SR_MAX_INLINE + 1, EINVAL);
	BAD(a.send_cq = NULL, EINVAL);
	BAD(a.recv_cq = NULL, EINVAL);
	BAD(a.send_cq = cq2, EINVAL); /* CQ of another context */
	BAD(a.qp_type = IBV_QPT_UD, EOPNOTSUPP);
	BAD(a.qp_type = IBV_QPT_UC, EOPNOTSUPP);
#undef BAD
	errno = 0;
	assert_null(ibv_create_qp(NULL, &a));
	assert_int_equal(errno, EINVAL);
	/* at the limits exactly */
	a = fx_qp_attr(&f, SR_MAX_QP_WR, SR_MAX_SGE, SR_MAX_INLINE);
	qp2 = ibv_create_qp(f.pd, &a);
	assert_non_null(qp2);
	assert_int_equal(ibv_destroy_qp(qp2), 0);

	assert_int_equal(ibv_destroy_qp(qp), 0);
	ibv_destroy_cq(cq2);
	ibv_close_device(ctx2);
	fx_close(&f);
}

/*
 * Queue depth and IRD/ORD are enforced exactly as advertised, and the advertised values are
 * at least the kernel's siw's (siw.h: 32768 WRs, IRD and ORD 128). A QP at the maximum depth
 * costs memory only as its queues fill: its rings (about 40 MiB here) are not committed up
 * front, and filling the receive queue commits its ring, which shows the measure works.
 */
static void qp_limits_as_advertised(void **state)
{
	struct ibv_recv_wr rwr = { 0 }, *bad = NULL;
	struct ibv_qp_attr qa = { 0 }, q;
	struct ibv_qp_init_attr a, qi;
	struct ibv_device_attr da;
	long rss0, rss1, rss2;
	struct ibv_qp *qp;
	uint32_t n;
	struct fx f;

	fx_open(&f);
	da = query_attr(f.ctx);
	assert_true(da.max_qp_wr >= 32768);
	assert_true(da.max_qp_rd_atom >= 128 && da.max_qp_init_rd_atom >= 128);
	assert_true(da.max_res_rd_atom >= da.max_qp_rd_atom);
	n = (uint32_t)da.max_qp_wr;

	a = fx_qp_attr(&f, n + 1, 1, 0);
	a.cap.max_recv_wr = 1;
	errno = 0;
	assert_null(ibv_create_qp(f.pd, &a));
	assert_int_equal(errno, EINVAL);
	a = fx_qp_attr(&f, 1, 1, 0);
	a.cap.max_recv_wr = n + 1;
	errno = 0;
	assert_null(ibv_create_qp(f.pd, &a));
	assert_int_equal(errno, EINVAL);

	rss0 = rss_bytes();
	a = fx_qp_attr(&f, n, (uint32_t)da.max_sge, SR_MAX_INLINE);
	qp = ibv_create_qp(f.pd, &a);
	assert_non_null(qp);
	sr_qp_llp_claim(qp); /* stands in for the CM */
	assert_int_equal(a.cap.max_send_wr, n);
	assert_int_equal(a.cap.max_recv_wr, n);
	rss1 = rss_bytes();
	assert_true(rss1 - rss0 < 4L << 20);

	/* exactly n receives fit, the next is refused */
	assert_int_equal(fx_modify(qp, IBV_QPS_INIT), 0);
	for (uint32_t i = 0; i < n; i++) {
		rwr.wr_id = i;
		assert_int_equal(ibv_post_recv(qp, &rwr, &bad), 0);
	}
	assert_int_equal(ibv_post_recv(qp, &rwr, &bad), ENOMEM);
	assert_ptr_equal(bad, &rwr);
	rss2 = rss_bytes();
	assert_true(rss2 - rss1 >= (long)n * da.max_sge * (long)sizeof(struct ibv_sge) / 2);

	/* IRD at the maximum and one more, then ORD the same way */
	qa.qp_state = IBV_QPS_RTR;
	qa.max_dest_rd_atomic = (uint8_t)(da.max_qp_rd_atom + 1);
	assert_int_equal(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC), EINVAL);
	qa.max_dest_rd_atomic = (uint8_t)da.max_qp_rd_atom;
	assert_int_equal(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC), 0);
	qa.qp_state = IBV_QPS_RTS;
	qa.max_rd_atomic = (uint8_t)(da.max_qp_init_rd_atom + 1);
	assert_int_equal(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC), EINVAL);
	qa.max_rd_atomic = (uint8_t)da.max_qp_init_rd_atom;
	assert_int_equal(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC), 0);
	assert_int_equal(ibv_query_qp(qp, &q, IBV_QP_MAX_QP_RD_ATOMIC |
				      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CAP, &qi), 0);
	assert_int_equal(q.max_rd_atomic, da.max_qp_init_rd_atom);
	assert_int_equal(q.max_dest_rd_atomic, da.max_qp_rd_atom);
	assert_int_equal(q.cap.max_send_wr, n);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	fx_close(&f);
}

static void qp_create_ex(void **state)
{
	struct fx f;
	struct ibv_qp_init_attr_ex ax;
	struct ibv_qp *qp;

	fx_open(&f);
	memset(&ax, 0, sizeof(ax));
	ax.send_cq = f.scq;
	ax.recv_cq = f.rcq;
	ax.qp_type = IBV_QPT_RC;
	ax.cap = (struct ibv_qp_cap){ .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
				      .max_recv_sge = 1 };
	ax.pd = f.pd;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qp = ibv_create_qp_ex(f.ctx, &ax); /* goes through the verbs_context slot */
	assert_non_null(qp);
	assert_true(ax.cap.max_send_wr >= 2);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.send_ops_flags = IBV_QP_EX_WITH_SEND;
	errno = 0;
	assert_null(ibv_create_qp_ex(f.ctx, &ax));
	assert_int_equal(errno, EOPNOTSUPP);
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ax.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	errno = 0;
	assert_null(ibv_create_qp_ex(f.ctx, &ax));
	assert_int_equal(errno, EOPNOTSUPP);
	ax.comp_mask = IBV_QP_INIT_ATTR_CREATE_FLAGS; /* no PD */
	ax.create_flags = 0;
	errno = 0;
	assert_null(ibv_create_qp_ex(f.ctx, &ax));
	assert_int_equal(errno, EINVAL);
	fx_close(&f);
}

/* Drive a fresh QP to `s` (SQE cannot be reached from outside: set it as the engine would). */
static void drive(struct ibv_qp *qp, enum ibv_qp_state s)
{
	static const enum ibv_qp_state path[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };

	/* born in INIT; the table starts from RESET. The test stands in for the CM. */
	assert_int_equal(fx_modify(qp, IBV_QPS_RESET), 0);
	sr_qp_llp_claim(qp);
	if (s == IBV_QPS_RESET)
		return;
	if (s == IBV_QPS_ERR) {
		assert_int_equal(fx_modify(qp, IBV_QPS_ERR), 0);
		return;
	}
	for (size_t i = 0; i < SR_ARRAY_SIZE(path); i++) {
		assert_int_equal(fx_modify(qp, path[i]), 0);
		if (path[i] == s)
			return;
	}
	if (s == IBV_QPS_SQD) {
		assert_int_equal(fx_modify(qp, IBV_QPS_SQD), 0);
	} else if (s == IBV_QPS_SQE) {
		to_sr_qp(qp)->state = IBV_QPS_SQE;
		qp->state = IBV_QPS_SQE;
	}
}

static void qp_state_table(void **state)
{
	/* legal[cur][next], IB spec 10.3.1 for RC */
	static const bool legal[7][7] = {
		/*              RESET  INIT   RTR    RTS    SQD    SQE    ERR */
		[IBV_QPS_RESET] = { 1, 1, 0, 0, 0, 0, 1 },
		[IBV_QPS_INIT]  = { 1, 1, 1, 0, 0, 0, 1 },
		[IBV_QPS_RTR]   = { 1, 0, 0, 1, 0, 0, 1 },
		[IBV_QPS_RTS]   = { 1, 0, 0, 1, 1, 0, 1 },
		[IBV_QPS_SQD]   = { 1, 0, 0, 1, 1, 0, 1 },
		[IBV_QPS_SQE]   = { 1, 0, 0, 1, 0, 0, 1 },
		[IBV_QPS_ERR]   = { 1, 0, 0, 0, 0, 0, 1 },
	};
	struct fx f;
	int checked = 0;

	fx_open(&f);
	for (int cur = 0; cur < 7; cur++) {
		for (int next = 0; next < 7; next++) {
			struct ibv_qp_init_attr a = fx_qp_attr(&f, 2, 1, 0);
			struct ibv_qp *qp = ibv_create_qp(f.pd, &a);
			struct ibv_qp_attr qa;
			struct ibv_qp_init_attr qia;
			int rc;

			assert_non_null(qp);
			drive(qp, cur);
			assert_int_equal(qp->state, cur);
			rc = fx_modify(qp, next);
			if (legal[cur][next]) {
				assert_int_equal(rc, 0);
				assert_int_equal(qp->state, next);
			} else {
				assert_int_equal(rc, EINVAL);
				assert_int_equal(qp->state, cur);
			}
			assert_int_equal(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia), 0);
			assert_int_equal(qa.qp_state, qp->state);
			assert_int_equal(ibv_destroy_qp(qp), 0);
			checked++;
		}
	}
	assert_int_equal(checked, 49);
	fx_close(&f);
}

/*
 * An RC QP nobody connects cannot reach RTS (kernel siw: EINVAL, "no socket"); before, it
 * went there, took WRs and never completed them. RTR stays allowed (siw accepts it).
 * A claim by the CM, or one grant to the context, lets it through.
 */
static void qp_rts_needs_a_connection(void **state)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp, *qp2;
	struct fx f;

	fx_open(&f);
	a = fx_qp_attr(&f, 4, 1, 0);
	qp = ibv_create_qp(f.pd, &a);
	qp2 = ibv_create_qp(f.pd, &a);
	assert_non_null(qp);
	assert_non_null(qp2);
	assert_int_equal(fx_modify(qp, IBV_QPS_INIT), 0);
	assert_int_equal(fx_modify(qp, IBV_QPS_RTR), 0);
	assert_int_equal(fx_modify(qp, IBV_QPS_RTS), EINVAL);
	assert_int_equal(qp->state, IBV_QPS_RTR);
	assert_int_equal(fx_modify(qp2, IBV_QPS_RTS), EINVAL); /* INIT -> RTS is illegal anyway */
	/* one grant: the first QP taken to RTS gets it, the next is refused again */
	to_sr_ctx(f.ctx)->priv_ops->llp_grant(f.ctx);
	assert_int_equal(fx_modify(qp, IBV_QPS_RTS), 0);
	assert_int_equal(fx_modify(qp2, IBV_QPS_RTR), 0);
	assert_int_equal(fx_modify(qp2, IBV_QPS_RTS), EINVAL);
	to_sr_ctx(f.ctx)->priv_ops->llp_claim(qp2);
	assert_int_equal(fx_modify(qp2, IBV_QPS_RTS), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_qp(qp2), 0);
	fx_close(&f);
}

static void qp_modify_attrs_and_query(void **state)
{
	struct fx f;
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;

	fx_open_qp(&f, 8, 2, 32, IBV_QPS_RESET);
	/* the full IB mask for RESET->INIT is accepted too */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 2;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), EINVAL); /* port 2 */
	assert_int_equal(f.qp->state, IBV_QPS_RESET);
	a.port_num = 1;
	a.pkey_index = 1;
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), EINVAL); /* one P_Key only */
	a.pkey_index = 0;
	a.qp_access_flags = 1 << 12;
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS), EINVAL);
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	/* CUR_STATE must match */
	a.qp_state = IBV_QPS_RTR;
	a.cur_qp_state = IBV_QPS_RESET;
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	/* IRD too large; resizing; rate limits */
	a.max_dest_rd_atomic = SR_MAX_QP_RD_ATOM + 1;
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC),
			 EINVAL);
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_CAP), EINVAL);
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT), EINVAL);
	assert_int_equal(f.qp->state, IBV_QPS_INIT);
	/* RTR with the IB path attributes an IB-minded application passes */
	a.cur_qp_state = IBV_QPS_INIT;
	a.max_dest_rd_atomic = 16;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 1234;
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_AV |
				       IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	a.qp_state = IBV_QPS_RTS;
	a.max_rd_atomic = SR_MAX_QP_RD_ATOM + 1; /* all or nothing: the state stays RTR */
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC), EINVAL);
	assert_int_equal(f.qp->state, IBV_QPS_RTR);
	a.max_rd_atomic = 8;
	a.timeout = 14; /* reported back as set (rdma_cm's ACK_TIMEOUT reaches the QP so) */
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
	/* RTS->RTS takes attributes without a state */
	a.max_rd_atomic = 4;
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_MAX_QP_RD_ATOMIC), 0);

	assert_int_equal(ibv_query_qp(f.qp, &q, IBV_QP_STATE | IBV_QP_CAP, &qi), 0);
	assert_int_equal(q.qp_state, IBV_QPS_RTS);
	assert_int_equal(q.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_int_equal(q.max_rd_atomic, 4);
	assert_int_equal(q.timeout, 14);
	assert_int_equal(q.max_dest_rd_atomic, 16);
	assert_int_equal(q.port_num, 1);
	assert_in_range(q.path_mtu, IBV_MTU_256, IBV_MTU_4096);
	assert_int_equal(q.cap.max_send_wr, f.ia.cap.max_send_wr);
	assert_int_equal(q.cap.max_inline_data, f.ia.cap.max_inline_data);
	assert_int_equal(qi.cap.max_recv_sge, f.ia.cap.max_recv_sge);
	assert_ptr_equal(qi.send_cq, f.scq);
	assert_ptr_equal(qi.recv_cq, f.rcq);
	assert_null(qi.srq);
	assert_int_equal(qi.qp_type, IBV_QPT_RC);
	fx_close(&f);
}

static void qp_users_block_destroy(void **state)
{
	struct fx f;

	fx_open_qp(&f, 4, 1, 0, IBV_QPS_INIT);
	assert_int_equal(ibv_dealloc_pd(f.pd), EBUSY);
	assert_int_equal(ibv_destroy_cq(f.scq), EBUSY);
	assert_int_equal(ibv_destroy_cq(f.rcq), EBUSY);
	assert_int_equal(ibv_destroy_comp_channel(f.ch), EBUSY);
	fx_close(&f); /* destroys the QP first, then the rest succeeds */
}

static void qp_sqd_drained_event(void **state)
{
	struct fx f;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 };
	struct ibv_async_event ev;

	fx_open_qp(&f, 4, 1, 0, IBV_QPS_RTS);
	assert_int_equal(ibv_modify_qp(f.qp, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
	assert_int_equal(ibv_get_async_event(f.ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SQ_DRAINED);
	assert_ptr_equal(ev.element.qp, f.qp);
	ibv_ack_async_event(&ev);
	assert_int_equal(fx_modify(f.qp, IBV_QPS_RTS), 0);
	fx_close(&f);
}

/* A fatal error with nobody reading async events must not make destroy hang. */
static void qp_destroy_with_unread_event(void **state)
{
	struct fx f;
	struct ibv_async_event ev;

	fx_open_qp(&f, 4, 1, 0, IBV_QPS_RTS);
	sr_qp_to_error(to_sr_qp(f.qp), true);
	assert_int_equal(f.qp->state, IBV_QPS_ERR);
	assert_int_equal(ibv_destroy_qp(f.qp), 0);
	f.qp = NULL;
	fcntl(f.ctx->async_fd, F_SETFL, O_NONBLOCK);
	assert_int_equal(ibv_get_async_event(f.ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	fx_close(&f);
}

/*
 * Exactly the advertised max_qp QPs exist at once: the next create fails with ENOMEM, as on
 * hardware, and a destroyed QP's slot serves again under a new number.
 */
static void qp_count_limit(void **state)
{
	struct fx f;
	int max, n = 0;
	struct ibv_qp **qps;
	uint32_t old;

	fx_open(&f);
	max = query_attr(f.ctx).max_qp;
	assert_int_equal(max, SR_MAX_QP);
	qps = calloc((size_t)max + 1, sizeof(*qps));
	assert_non_null(qps);
	for (; n <= max; n++) {
		struct ibv_qp_init_attr a = fx_qp_attr(&f, 1, 1, 0);

		qps[n] = ibv_create_qp(f.pd, &a);
		if (!qps[n])
			break;
	}
	assert_int_equal(n, max);
	assert_int_equal(errno, ENOMEM);
	/* numbers are unique among live QPs and below 2^24 */
	for (int i = 0; i < n; i++) {
		assert_true(qps[i]->qp_num > 0 && qps[i]->qp_num < (1u << 24));
		if (i)
			assert_int_not_equal(qps[i]->qp_num, qps[i - 1]->qp_num);
		assert_ptr_equal(sr_qp_by_num(f.ctx, qps[i]->qp_num), qps[i]);
	}
	old = qps[n / 2]->qp_num;
	assert_int_equal(ibv_destroy_qp(qps[n / 2]), 0);
	assert_null(sr_qp_by_num(f.ctx, old));
	{
		struct ibv_qp_init_attr a = fx_qp_attr(&f, 1, 1, 0);

		qps[n / 2] = ibv_create_qp(f.pd, &a);
	}
	assert_non_null(qps[n / 2]);
	assert_int_not_equal(qps[n / 2]->qp_num, old);
	for (int i = 0; i < n; i++)
		assert_int_equal(ibv_destroy_qp(qps[i]), 0);
	free(qps);
	fx_close(&f);
}

static atomic_int destroyed;

static void *destroy_qp_thread(void *arg)
{
	if (ibv_destroy_qp(arg) == 0)
		atomic_store(&destroyed, 1);
	return NULL;
}

/* A fetched event holds destroy until it is acked (ibv_get_async_event(3)). */
static void qp_destroy_waits_for_event_ack(void **state)
{
	struct fx f;
	struct ibv_async_event ev;
	pthread_t t;

	fx_open_qp(&f, 4, 1, 0, IBV_QPS_RTS);
	sr_qp_to_error(to_sr_qp(f.qp), true);
	assert_int_equal(ibv_get_async_event(f.ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
	atomic_store(&destroyed, 0);
	assert_int_equal(pthread_create(&t, NULL, destroy_qp_thread, f.qp), 0);
	usleep(100000);
	assert_int_equal(atomic_load(&destroyed), 0);
	ibv_ack_async_event(&ev);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&destroyed), 1);
	f.qp = NULL;
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(qp_create_caps),
		cmocka_unit_test(qp_limits_as_advertised),
		cmocka_unit_test(qp_create_ex),
		cmocka_unit_test(qp_state_table),
		cmocka_unit_test(qp_modify_attrs_and_query),
		cmocka_unit_test(qp_rts_needs_a_connection),
		cmocka_unit_test(qp_users_block_destroy),
		cmocka_unit_test(qp_sqd_drained_event),
		cmocka_unit_test(qp_destroy_with_unread_event),
		cmocka_unit_test(qp_count_limit),
		cmocka_unit_test(qp_destroy_waits_for_event_ack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
