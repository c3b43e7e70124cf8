// SPDX-License-Identifier: MIT
/* CQs and completion channels: ordering, overflow, arming, the channel fd, destroy rules. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "obj_helpers.h"

static struct ibv_wc mkwc(uint64_t id, enum ibv_wc_status st)
{
	return (struct ibv_wc){ .wr_id = id, .status = st, .opcode = IBV_WC_RECV, .byte_len = 7 };
}

static bool fd_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void cq_create_errors(void **state)
{
	struct ibv_context *ctx = open_lo(), *ctx2 = open_lo();
	struct ibv_comp_channel *ch2 = ibv_create_comp_channel(ctx2);
	struct ibv_cq *cq;

	errno = 0;
	assert_null(ibv_create_cq(ctx, 0, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_create_cq(ctx, SR_MAX_CQE + 1, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_create_cq(ctx, 4, NULL, NULL, ctx->num_comp_vectors));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_create_cq(ctx, 4, NULL, ch2, 0)); /* channel of another context */
	assert_int_equal(errno, EINVAL);
	cq = ibv_create_cq(ctx, SR_MAX_CQE, (void *)1, NULL, 0);
	assert_non_null(cq);
	assert_true(cq->cqe >= SR_MAX_CQE);
	assert_ptr_equal(cq->cq_context, (void *)1);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch2), 0);
	ibv_close_device(ctx2);
	ibv_close_device(ctx);
}

static void cq_push_poll_order(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_wc wc[16];

	assert_int_equal(ibv_poll_cq(cq, 4, wc), 0);
	for (int round = 0; round < 3; round++) { /* wraps the ring */
		for (uint64_t i = 0; i < 5; i++) {
			struct ibv_wc w = mkwc(round * 10 + i, IBV_WC_SUCCESS);

			sr_cq_push(to_sr_cq(cq), &w, false);
		}
		assert_int_equal(ibv_poll_cq(cq, 2, wc), 2);
		assert_int_equal(wc[0].wr_id, round * 10 + 0);
		assert_int_equal(wc[1].wr_id, round * 10 + 1);
		assert_int_equal(ibv_poll_cq(cq, 16, wc), 3);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(wc[i].wr_id, round * 10 + 2 + i);
			assert_int_equal(wc[i].byte_len, 7);
			assert_int_equal(wc[i].opcode, IBV_WC_RECV);
		}
	}
	assert_int_equal(ibv_destroy_cq(cq), 0);
	ibv_close_device(ctx);
}

static void cq_overflow_async_event(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_cq *cq = ibv_create_cq(ctx, 2, NULL, NULL, 0), *cq2;
	struct ibv_async_event ev;
	struct ibv_wc wc[4], w;

	fcntl(ctx->async_fd, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 4; i++) {
		w = mkwc(i, IBV_WC_SUCCESS);
		sr_cq_push(to_sr_cq(cq), &w, false);
	}
	/* the first two survive, the rest are dropped and reported once */
	assert_int_equal(ibv_poll_cq(cq, 4, wc), 2);
	assert_int_equal(wc[0].wr_id, 0);
	assert_int_equal(wc[1].wr_id, 1);
	assert_int_equal(ibv_get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_CQ_ERR);
	assert_ptr_equal(ev.element.cq, cq);
	assert_int_equal(ibv_get_async_event(ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	ibv_ack_async_event(&(struct ibv_async_event){ .event_type = IBV_EVENT_CQ_ERR,
						       .element.cq = cq });
	assert_int_equal(ibv_destroy_cq(cq), 0); /* acked: does not wait */

	/* an overflow event nobody fetched is withdrawn by destroy, which does not hang */
	cq2 = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	for (int i = 0; i < 2; i++) {
		w = mkwc(i, IBV_WC_SUCCESS);
		sr_cq_push(to_sr_cq(cq2), &w, false);
	}
	assert_true(fd_readable(ctx->async_fd, 0));
	assert_int_equal(ibv_destroy_cq(cq2), 0);
	assert_int_equal(ibv_get_async_event(ctx, &ev), -1); /* stale count skipped */
	assert_int_equal(errno, EAGAIN);
	ibv_close_device(ctx);
}

static void cq_notify_channel(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, (void *)0xc0ffee, ch, 0), *got;
	struct ibv_wc w = mkwc(1, IBV_WC_SUCCESS);
	void *cctx;

	assert_ptr_equal(cq->channel, ch);
	/* not armed: completions do not wake anyone */
	sr_cq_push(to_sr_cq(cq), &w, false);
	assert_false(fd_readable(ch->fd, 0));
	/* armed: the next completion is one event */
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	sr_cq_push(to_sr_cq(cq), &w, false);
	sr_cq_push(to_sr_cq(cq), &w, false);
	assert_true(fd_readable(ch->fd, 0));
	assert_int_equal(ibv_get_cq_event(ch, &got, &cctx), 0);
	assert_ptr_equal(got, cq);
	assert_ptr_equal(cctx, (void *)0xc0ffee);
	assert_false(fd_readable(ch->fd, 0)); /* one event per arming */
	ibv_ack_cq_events(cq, 1);

	/* solicited-only: plain completions do not fire, solicited and errors do */
	assert_int_equal(ibv_req_notify_cq(cq, 1), 0);
	sr_cq_push(to_sr_cq(cq), &w, false);
	assert_false(fd_readable(ch->fd, 0));
	sr_cq_push(to_sr_cq(cq), &w, true);
	assert_true(fd_readable(ch->fd, 0));
	assert_int_equal(ibv_get_cq_event(ch, &got, &cctx), 0);
	assert_int_equal(ibv_req_notify_cq(cq, 1), 0);
	w.status = IBV_WC_LOC_PROT_ERR;
	sr_cq_push(to_sr_cq(cq), &w, false);
	assert_int_equal(ibv_get_cq_event(ch, &got, &cctx), 0);
	/* arming for any completion wins over solicited-only */
	assert_int_equal(ibv_req_notify_cq(cq, 1), 0);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	w.status = IBV_WC_SUCCESS;
	sr_cq_push(to_sr_cq(cq), &w, false);
	assert_int_equal(ibv_get_cq_event(ch, &got, &cctx), 0);
	ibv_ack_cq_events(cq, 3);

	/* non-blocking channel: nothing queued -> EAGAIN */
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	assert_int_equal(ibv_get_cq_event(ch, &got, &cctx), -1);
	assert_int_equal(errno, EAGAIN);

	assert_int_equal(ibv_destroy_comp_channel(ch), EBUSY);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	ibv_close_device(ctx);
}

/* Two CQs on one channel: each event names its CQ. */
static void cq_two_on_channel(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *a = ibv_create_cq(ctx, 4, (void *)0xa, ch, 0);
	struct ibv_cq *b = ibv_create_cq(ctx, 4, (void *)0xb, ch, 0), *got;
	struct ibv_wc w = mkwc(1, IBV_WC_SUCCESS);
	void *cctx;

	ibv_req_notify_cq(a, 0);
	ibv_req_notify_cq(b, 0);
	sr_cq_push(to_sr_cq(b), &w, false);
	sr_cq_push(to_sr_cq(a), &w, false);
	assert_int_equal(ibv_get_cq_event(ch, &got, &cctx), 0);
	assert_ptr_equal(got, b);
	assert_ptr_equal(cctx, (void *)0xb);
	assert_int_equal(ibv_get_cq_event(ch, &got, &cctx), 0);
	assert_ptr_equal(got, a);
	ibv_ack_cq_events(a, 1);
	ibv_ack_cq_events(b, 1);
	/* an event queued but never fetched does not hold destroy, and its count is skipped */
	ibv_req_notify_cq(a, 0);
	sr_cq_push(to_sr_cq(a), &w, false);
	assert_int_equal(ibv_destroy_cq(a), 0);
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	assert_int_equal(ibv_get_cq_event(ch, &got, &cctx), -1);
	assert_int_equal(errno, EAGAIN);
	ibv_req_notify_cq(b, 0);
	sr_cq_push(to_sr_cq(b), &w, false);
	assert_int_equal(ibv_get_cq_event(ch, &got, &cctx), 0);
	assert_ptr_equal(got, b);
	ibv_ack_cq_events(b, 1);
	assert_int_equal(ibv_destroy_cq(b), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	ibv_close_device(ctx);
}

struct waiter {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	atomic_int stage;
};

static void *get_event_thread(void *arg)
{
	struct waiter *w = arg;
	struct ibv_cq *got;
	void *cctx;

	/* blocks in read() until the main thread pushes */
	if (ibv_get_cq_event(w->ch, &got, &cctx) == 0 && got == w->cq)
		atomic_store(&w->stage, 1);
	return NULL;
}

static void *destroy_thread(void *arg)
{
	struct waiter *w = arg;

	if (ibv_destroy_cq(w->cq) == 0)
		atomic_store(&w->stage, 2);
	return NULL;
}

static void cq_destroy_waits_for_ack(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct waiter w = { .ch = ibv_create_comp_channel(ctx) };
	struct ibv_wc wc = mkwc(1, IBV_WC_SUCCESS);
	pthread_t t;

	w.cq = ibv_create_cq(ctx, 4, NULL, w.ch, 0);
	ibv_req_notify_cq(w.cq, 0);
	assert_int_equal(pthread_create(&t, NULL, get_event_thread, &w), 0);
	usleep(20000);
	sr_cq_push(to_sr_cq(w.cq), &wc, false);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&w.stage), 1);

	assert_int_equal(pthread_create(&t, NULL, destroy_thread, &w), 0);
	usleep(100000);
	assert_int_equal(atomic_load(&w.stage), 1); /* still waiting for the ack */
	ibv_ack_cq_events(w.cq, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&w.stage), 2);
	assert_int_equal(ibv_destroy_comp_channel(w.ch), 0);
	ibv_close_device(ctx);
}

static void cq_resize(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_wc wc[8], w;

	/* put the head in the middle of the ring first */
	for (int i = 0; i < 3; i++) {
		w = mkwc(100, IBV_WC_SUCCESS);
		sr_cq_push(to_sr_cq(cq), &w, false);
	}
	assert_int_equal(ibv_poll_cq(cq, 3, wc), 3);
	for (int i = 0; i < 4; i++) {
		w = mkwc(i, IBV_WC_SUCCESS);
		sr_cq_push(to_sr_cq(cq), &w, false);
	}
	assert_int_equal(ibv_resize_cq(cq, 3), EINVAL); /* holds 4 */
	assert_int_equal(ibv_resize_cq(cq, 0), EINVAL);
	assert_int_equal(ibv_resize_cq(cq, SR_MAX_CQE + 1), EINVAL);
	assert_int_equal(ibv_resize_cq(cq, 6), 0);
	assert_true(cq->cqe >= 6);
	for (int i = 4; i < 6; i++) {
		w = mkwc(i, IBV_WC_SUCCESS);
		sr_cq_push(to_sr_cq(cq), &w, false);
	}
	assert_int_equal(ibv_poll_cq(cq, 8, wc), 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(wc[i].wr_id, i);
	assert_int_equal(ibv_resize_cq(cq, 1), 0); /* shrinking an empty CQ is fine */
	assert_int_equal(ibv_destroy_cq(cq), 0);
	ibv_close_device(ctx);
}

/*
 * Exactly the advertised max_cq CQs exist at once (the fixture-free context has none): the
 * next create fails with ENOMEM, and a destroyed CQ's place serves again.
 */
static void cq_count_limit(void **state)
{
	struct ibv_context *ctx = open_lo();
	int max = query_attr(ctx).max_cq;
	struct ibv_cq **cqs = calloc((size_t)max + 1, sizeof(*cqs));
	int n = 0;

	assert_int_equal(max, SR_MAX_CQ);
	assert_int_equal(query_attr(ctx).max_cqe, SR_MAX_CQE);
	while (n <= max && (cqs[n] = ibv_create_cq(ctx, 1, NULL, NULL, 0)))
		n++;
	assert_int_equal(n, max);
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(ibv_destroy_cq(cqs[0]), 0);
	cqs[0] = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	assert_non_null(cqs[0]);
	for (int i = 0; i < n; i++)
		assert_int_equal(ibv_destroy_cq(cqs[i]), 0);
	free(cqs);
	ibv_close_device(ctx);
}

struct poll_arg {
	struct ibv_cq *cq;
	int got;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
};

static void *poll_once(void *p)
{
	struct poll_arg *a = p;
	struct ibv_wc wc;
	int got = ibv_poll_cq(a->cq, 1, &wc);

	pthread_mutex_lock(&a->mu);
	a->got = got;
	a->done = true;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/*
 * Polling an empty CQ does not take the lock the transport pushes under: a spinning poller
 * preempted while holding it would stall every completion behind its time slice. With the
 * CQ's lock held (as by a push in progress), a poll of the empty CQ returns 0 at once.
 */
static void cq_empty_poll_takes_no_lock(void **state)
{
	struct poll_arg a = { .got = -1, .mu = PTHREAD_MUTEX_INITIALIZER,
			      .cv = PTHREAD_COND_INITIALIZER };
	struct ibv_context *ctx = open_lo();
	struct timespec until;
	struct sr_cq *cq;
	pthread_t t;

	a.cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	assert_non_null(a.cq);
	cq = to_sr_cq(a.cq);
	pthread_mutex_lock(&cq->lock);
	assert_int_equal(pthread_create(&t, NULL, poll_once, &a), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10; /* safety bound only: the poll returns at once, or never */
	pthread_mutex_lock(&a.mu);
	while (!a.done && pthread_cond_timedwait(&a.cv, &a.mu, &until) == 0)
		;
	pthread_mutex_unlock(&a.mu);
	if (!a.done)
		fail_msg("ibv_poll_cq on an empty CQ waited for the CQ's lock");
	pthread_mutex_unlock(&cq->lock);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(a.got, 0);
	assert_int_equal(ibv_destroy_cq(a.cq), 0);
	ibv_close_device(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cq_create_errors),
		cmocka_unit_test(cq_push_poll_order),
		cmocka_unit_test(cq_overflow_async_event),
		cmocka_unit_test(cq_notify_channel),
		cmocka_unit_test(cq_two_on_channel),
		cmocka_unit_test(cq_destroy_waits_for_ack),
		cmocka_unit_test(cq_resize),
		cmocka_unit_test(cq_count_limit),
		cmocka_unit_test(cq_empty_poll_takes_no_lock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
