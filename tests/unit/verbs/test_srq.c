// SPDX-License-Identifier: MIT
/* Shared receive queues: limits, posting, QPs taking from them, the limit event. */
#include <fcntl.h>

#include "obj_helpers.h"

static struct ibv_srq *mk_srq(struct fx *f, uint32_t wr, uint32_t sge)
{
	struct ibv_srq_init_attr a = { .srq_context = (void *)0x51,
				       .attr = { .max_wr = wr, .max_sge = sge, .srq_limit = 3 } };

	return ibv_create_srq(f->pd, &a);
}

static int srq_post(struct ibv_srq *srq, uint64_t id, int nsge)
{
	static char b[64];
	struct ibv_sge s[4] = { { .addr = (uintptr_t)b, .length = 8 },
				{ .addr = (uintptr_t)b + 8, .length = 8 },
				{ .addr = (uintptr_t)b + 16, .length = 8 },
				{ .addr = (uintptr_t)b + 24, .length = 8 } };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = s, .num_sge = nsge }, *bad = NULL;
	int rc = ibv_post_srq_recv(srq, &wr, &bad);

	if (rc)
		assert_ptr_equal(bad, &wr);
	return rc;
}

static void srq_create_query_modify(void **state)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 10, .max_sge = 2, .srq_limit = 5 } };
	struct ibv_srq_attr q;
	struct ibv_srq *srq;
	struct fx f;

	fx_open(&f);
	errno = 0;
	a.attr.max_wr = SR_MAX_SRQ_WR + 1;
	assert_null(ibv_create_srq(f.pd, &a));
	assert_int_equal(errno, EINVAL);
	a.attr.max_wr = 10;
	a.attr.max_sge = SR_MAX_SRQ_SGE + 1;
	errno = 0;
	assert_null(ibv_create_srq(f.pd, &a));
	assert_int_equal(errno, EINVAL);
	a.attr.max_sge = 2;
	srq = ibv_create_srq(f.pd, &a);
	assert_non_null(srq);
	assert_true(a.attr.max_wr >= 10);
	assert_true(a.attr.max_sge >= 2);
	assert_ptr_equal(srq->pd, f.pd);
	assert_int_equal(ibv_query_srq(srq, &q), 0);
	assert_int_equal(q.max_wr, a.attr.max_wr);
	assert_int_equal(q.srq_limit, 0); /* the create-time limit is ignored */

	q.srq_limit = q.max_wr + 1;
	assert_int_equal(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT), EINVAL);
	q.srq_limit = 4;
	assert_int_equal(ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT), 0);
	assert_int_equal(ibv_modify_srq(srq, &q, 1 << 5), EINVAL);
	/* resize keeps what is queued, in order; not below what it holds */
	for (int i = 0; i < 6; i++)
		assert_int_equal(srq_post(srq, i, 1), 0);
	q.max_wr = 5;
	assert_int_equal(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR), EINVAL);
	q.max_wr = 20;
	assert_int_equal(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR), 0);
	assert_int_equal(ibv_query_srq(srq, &q), 0);
	assert_int_equal(q.max_wr, 20);
	assert_int_equal(q.srq_limit, 4);
	for (int i = 6; i < 20; i++)
		assert_int_equal(srq_post(srq, i, 2), 0);
	assert_int_equal(srq_post(srq, 99, 1), ENOMEM);
	assert_int_equal(srq_post(srq, 99, 3), EINVAL); /* > max_sge */
	for (int i = 0; i < 20; i++) {
		struct sr_srq *s = to_sr_srq(srq);

		assert_int_equal(sr_srq_slot(s, s->head + i)->wr_id, i);
	}
	assert_int_equal(ibv_destroy_srq(srq), 0);
	fx_close(&f);
}

static void srq_with_qps_and_limit_event(void **state)
{
	struct ibv_qp_init_attr a;
	struct ibv_async_event ev;
	struct ibv_srq_attr sa;
	struct ibv_qp *qp2;
	struct ibv_srq *srq;
	struct ibv_wc wc[4];
	struct sr_recv_wqe *r;
	struct fx f;

	fx_open(&f);
	srq = mk_srq(&f, 8, 2);
	assert_non_null(srq);
	a = fx_qp_attr(&f, 4, 1, 0);
	a.srq = srq;
	a.cap.max_recv_wr = SR_MAX_QP_WR + 100; /* ignored with an SRQ */
	a.cap.max_recv_sge = SR_MAX_SGE + 100;
	f.qp = ibv_create_qp(f.pd, &a);
	assert_non_null(f.qp);
	assert_ptr_equal(f.qp->srq, srq);
	a = fx_qp_attr(&f, 4, 1, 0);
	a.srq = srq;
	qp2 = ibv_create_qp(f.pd, &a);
	assert_non_null(qp2);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	assert_int_equal(ibv_dealloc_pd(f.pd), EBUSY);

	for (int i = 0; i < 5; i++)
		assert_int_equal(srq_post(srq, i, 2), 0);
	/* a QP on an SRQ takes no receives of its own */
	{
		struct ibv_recv_wr wr = { .wr_id = 1 }, *bad = NULL;

		assert_int_equal(fx_modify(f.qp, IBV_QPS_INIT), 0);
		assert_int_equal(ibv_post_recv(f.qp, &wr, &bad), EINVAL);
		assert_ptr_equal(bad, &wr);
	}
	assert_int_equal(fx_modify(f.qp, IBV_QPS_RTR), 0);
	assert_int_equal(fx_modify(qp2, IBV_QPS_INIT), 0);
	assert_int_equal(fx_modify(qp2, IBV_QPS_RTR), 0);

	sa.srq_limit = 3;
	assert_int_equal(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	fcntl(f.ctx->async_fd, F_SETFL, O_NONBLOCK);
	/* 5 -> 4 -> 3: not below the limit yet */
	for (int i = 0; i < 2; i++) {
		r = sr_rq_take(i ? to_sr_qp(qp2) : to_sr_qp(f.qp));
		assert_int_equal(r->wr_id, i);
		assert_int_equal(r->num_sge, 2);
		sr_rq_complete(i ? to_sr_qp(qp2) : to_sr_qp(f.qp), r, IBV_WC_SUCCESS, 3, 0, 0,
			       false);
	}
	assert_int_equal(ibv_get_async_event(f.ctx, &ev), -1);
	/* 3 -> 2: below, fires once and disarms */
	r = sr_rq_take(to_sr_qp(f.qp));
	assert_int_equal(r->wr_id, 2);
	assert_int_equal(ibv_get_async_event(f.ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.element.srq, srq);
	assert_ptr_equal(ev.element.srq->srq_context, (void *)0x51);
	ibv_ack_async_event(&ev);
	assert_int_equal(ibv_query_srq(srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 0);
	sr_rq_release(r);
	r = sr_rq_take(to_sr_qp(qp2));
	sr_rq_release(r);
	assert_int_equal(ibv_get_async_event(f.ctx, &ev), -1);
	/* completions go to the taking QP's CQ with its qp_num */
	assert_int_equal(ibv_poll_cq(f.rcq, 4, wc), 2);
	assert_int_equal(wc[0].qp_num, f.qp->qp_num);
	assert_int_equal(wc[1].qp_num, qp2->qp_num);

	/* ERR on a QP with an SRQ: last-WQE event, SRQ WQEs are not flushed */
	assert_int_equal(fx_modify(qp2, IBV_QPS_ERR), 0);
	assert_int_equal(ibv_get_async_event(f.ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.element.qp, qp2);
	ibv_ack_async_event(&ev);
	assert_int_equal(ibv_poll_cq(f.rcq, 4, wc), 0);
	assert_null(sr_rq_take(to_sr_qp(qp2)));
	r = sr_rq_take(to_sr_qp(f.qp));
	assert_non_null(r);
	assert_int_equal(r->wr_id, 4);
	sr_rq_release(r);

	assert_int_equal(ibv_destroy_qp(qp2), 0);
	assert_int_equal(ibv_destroy_qp(f.qp), 0);
	f.qp = NULL;
	assert_int_equal(ibv_destroy_srq(srq), 0);
	fx_close(&f);
}

/*
 * max_srq_wr is enforced exactly as advertised and is at least the kernel's siw's (siw.h:
 * 10 x 32768). An SRQ at the maximum depth and SGE count maps about 180 MiB of ring that
 * costs nothing until receives are posted; a full one takes exactly max_srq_wr receives.
 */
static void srq_depth_limit(void **state)
{
	struct ibv_srq_attr q;
	struct ibv_srq *srq;
	long rss0;
	uint32_t n;
	struct fx f;

	fx_open(&f);
	n = (uint32_t)query_attr(f.ctx).max_srq_wr;
	assert_true(n >= 327680);
	errno = 0;
	assert_null(mk_srq(&f, n + 1, 1));
	assert_int_equal(errno, EINVAL);

	rss0 = rss_bytes();
	srq = mk_srq(&f, n, (uint32_t)query_attr(f.ctx).max_srq_sge);
	assert_non_null(srq);
	assert_true(rss_bytes() - rss0 < 4L << 20);
	assert_int_equal(ibv_destroy_srq(srq), 0);

	/* grown to the maximum from a small ring, queued WQEs kept; then exactly full */
	srq = mk_srq(&f, 4, 1);
	assert_non_null(srq);
	assert_int_equal(srq_post(srq, 0, 1), 0);
	q.max_wr = n + 1;
	assert_int_equal(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR), EINVAL);
	q.max_wr = n;
	assert_int_equal(ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR), 0);
	assert_int_equal(ibv_query_srq(srq, &q), 0);
	assert_int_equal(q.max_wr, n);
	for (uint32_t i = 1; i < n; i++)
		assert_int_equal(srq_post(srq, i, 1), 0);
	assert_int_equal(srq_post(srq, n, 1), ENOMEM);
	assert_int_equal(sr_srq_slot(to_sr_srq(srq), to_sr_srq(srq)->head)->wr_id, 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	fx_close(&f);
}

/* Exactly the advertised max_srq SRQs exist at once; the next create is ENOMEM. */
static void srq_count_limit(void **state)
{
	struct ibv_srq **s;
	struct fx f;
	int max, n = 0;

	fx_open(&f);
	max = query_attr(f.ctx).max_srq;
	assert_int_equal(max, SR_MAX_SRQ);
	s = calloc((size_t)max + 1, sizeof(*s));
	while (n <= max && (s[n] = mk_srq(&f, 1, 1)))
		n++;
	assert_int_equal(n, max);
	assert_int_equal(errno, ENOMEM);
	for (int i = 0; i < n; i++)
		assert_int_equal(ibv_destroy_srq(s[i]), 0);
	free(s);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(srq_create_query_modify),
		cmocka_unit_test(srq_with_qps_and_limit_event),
		cmocka_unit_test(srq_depth_limit),
		cmocka_unit_test(srq_count_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
