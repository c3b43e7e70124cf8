// SPDX-License-Identifier: MIT
/*
 * Event queue logic of cm/channel.c: the eventfd count follows the queue, FIFO order,
 * O_NONBLOCK, ack accounting, migration and dropping (with connect requests), private data
 * limits and the synchronous-call error mapping.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cm/cm_priv.h"

static bool readable(struct sr_cm_channel *ch)
{
	struct pollfd p = { .fd = ch->ch.fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void post(struct sr_cm_id *id, enum rdma_cm_event_type t, int status)
{
	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_post(id, t, status, NULL);
	pthread_mutex_unlock(&sr_cm_lock);
}

static void fifo_and_count(void **state)
{
	struct sr_cm_channel *ch = sr_cm_channel_new(false);
	struct sr_cm_id *a = sr_cm_id_new(ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct sr_cm_id *b = sr_cm_id_new(ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct rdma_cm_event *e1, *e2, *e3;

	assert_false(readable(ch));
	post(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	post(b, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV);
	post(a, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	assert_true(readable(ch));
	assert_int_equal(rdma_get_cm_event(&ch->ch, &e1), 0);
	assert_int_equal(rdma_get_cm_event(&ch->ch, &e2), 0);
	assert_int_equal(rdma_get_cm_event(&ch->ch, &e3), 0);
	assert_false(readable(ch));
	assert_ptr_equal(e1->id, &a->id);
	assert_int_equal(e1->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_ptr_equal(e2->id, &b->id);
	assert_int_equal(e2->status, -ENODEV);
	assert_int_equal(e3->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(a->reported, 2);
	assert_int_equal(a->acked, 0);
	rdma_ack_cm_event(e1);
	rdma_ack_cm_event(e3);
	rdma_ack_cm_event(e2);
	assert_int_equal(a->acked, 2);
	assert_int_equal(b->acked, 1);
	assert_int_equal(rdma_destroy_id(&a->id), 0);
	assert_int_equal(rdma_destroy_id(&b->id), 0);
	sr_cm_channel_free(ch);
}

static void nonblocking(void **state)
{
	struct sr_cm_channel *ch = sr_cm_channel_new(false);
	struct sr_cm_id *a = sr_cm_id_new(ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct rdma_cm_event *e;

	fcntl(ch->ch.fd, F_SETFL, O_NONBLOCK);
	errno = 0;
	assert_int_equal(rdma_get_cm_event(&ch->ch, &e), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(rdma_get_cm_event(&ch->ch, NULL), -1);
	assert_int_equal(errno, EINVAL);
	post(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	assert_int_equal(rdma_get_cm_event(&ch->ch, &e), 0);
	rdma_ack_cm_event(e);
	assert_int_equal(rdma_get_cm_event(&ch->ch, &e), -1);
	assert_int_equal(errno, EAGAIN);
	rdma_destroy_id(&a->id);
	sr_cm_channel_free(ch);
}

/* Destroy drops what was never fetched; the count on the fd follows. */
static void destroy_drops_queued(void **state)
{
	struct sr_cm_channel *ch = sr_cm_channel_new(false);
	struct sr_cm_id *a = sr_cm_id_new(ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct sr_cm_id *b = sr_cm_id_new(ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct rdma_cm_event *e;

	post(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	post(b, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	post(a, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	assert_int_equal(rdma_destroy_id(&a->id), 0); /* nothing fetched: no wait */
	assert_true(readable(ch));
	assert_int_equal(rdma_get_cm_event(&ch->ch, &e), 0);
	assert_ptr_equal(e->id, &b->id);
	assert_false(readable(ch));
	rdma_ack_cm_event(e);
	rdma_destroy_id(&b->id);
	sr_cm_channel_free(ch);
}

static void migrate_moves_in_order(void **state)
{
	struct sr_cm_channel *c1 = sr_cm_channel_new(false), *c2 = sr_cm_channel_new(false);
	struct sr_cm_id *a = sr_cm_id_new(c1, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct sr_cm_id *b = sr_cm_id_new(c1, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct rdma_cm_event *e;

	post(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	post(b, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	post(a, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	assert_int_equal(rdma_migrate_id(&a->id, &c2->ch), 0);
	assert_ptr_equal(a->id.channel, &c2->ch);
	assert_int_equal(rdma_get_cm_event(&c2->ch, &e), 0);
	assert_int_equal(e->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(e);
	assert_int_equal(rdma_get_cm_event(&c2->ch, &e), 0);
	assert_int_equal(e->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	rdma_ack_cm_event(e);
	assert_false(readable(c2));
	assert_int_equal(rdma_get_cm_event(&c1->ch, &e), 0);
	assert_ptr_equal(e->id, &b->id);
	rdma_ack_cm_event(e);
	assert_false(readable(c1));
	rdma_destroy_id(&a->id);
	rdma_destroy_id(&b->id);
	sr_cm_channel_free(c1);
	sr_cm_channel_free(c2);
}

/* A CONNECT_REQUEST counts against its listener, and orphans its id when dropped. */
static void requests(void **state)
{
	struct sr_cm_channel *ch = sr_cm_channel_new(false);
	struct sr_cm_id *l = sr_cm_id_new(ch, (void *)7, RDMA_PS_TCP, IBV_QPT_RC);
	struct sr_cm_id *r1 = sr_cm_id_new(ch, (void *)7, RDMA_PS_TCP, IBV_QPT_RC);
	struct sr_cm_id *r2 = sr_cm_id_new(ch, (void *)7, RDMA_PS_TCP, IBV_QPT_RC);
	struct sr_cm_evparam p = { .pd = "x", .pd_len = 2, .initiator_depth = 3,
				   .responder_resources = 4 };
	struct sr_list orphans;
	struct rdma_cm_event *e;

	pthread_mutex_lock(&sr_cm_lock);
	assert_int_equal(sr_cm_post_request(l, r1, &p), 0);
	assert_int_equal(sr_cm_post_request(l, r2, &p), 0);
	assert_int_equal(l->queued_reqs, 2);
	pthread_mutex_unlock(&sr_cm_lock);

	assert_int_equal(rdma_get_cm_event(&ch->ch, &e), 0);
	assert_int_equal(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(e->id, &r1->id);
	assert_ptr_equal(e->listen_id, &l->id);
	assert_int_equal(e->param.conn.private_data_len, 2);
	assert_int_equal(e->param.conn.initiator_depth, 3);
	assert_int_equal(e->param.conn.responder_resources, 4);
	assert_int_equal(l->queued_reqs, 1);
	assert_int_equal(l->reported, 1);
	assert_int_equal(r1->reported, 0);
	assert_null(r1->listener);
	rdma_ack_cm_event(e);
	assert_int_equal(l->acked, 1);

	sr_list_init(&orphans);
	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_chan_take(ch, l, NULL, &orphans);
	assert_int_equal(l->queued_reqs, 0);
	assert_ptr_equal(orphans.next, &r2->orphan_node);
	assert_ptr_equal(orphans.next->next, &orphans);
	assert_null(r2->listener);
	pthread_mutex_unlock(&sr_cm_lock);
	assert_false(readable(ch));
	sr_list_del(&r2->orphan_node);
	sr_cm_id_free_unseen(r2);
	rdma_destroy_id(&r1->id);
	rdma_destroy_id(&l->id);
	sr_cm_channel_free(ch);
}

static void private_data_clamped(void **state)
{
	struct sr_cm_channel *ch = sr_cm_channel_new(false);
	struct sr_cm_id *a = sr_cm_id_new(ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	uint8_t big[300];
	struct sr_cm_evparam p = { .pd = big, .pd_len = sizeof(big) };
	struct rdma_cm_event *e;

	memset(big, 0xab, sizeof(big));
	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_post(a, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED, &p);
	pthread_mutex_unlock(&sr_cm_lock);
	assert_int_equal(rdma_get_cm_event(&ch->ch, &e), 0);
	assert_int_equal(e->param.conn.private_data_len, 255); /* a u8 */
	assert_memory_equal(e->param.conn.private_data, big, 255);
	rdma_ack_cm_event(e);
	rdma_destroy_id(&a->id);
	sr_cm_channel_free(ch);
}

/* The DESTROYING state refuses new events (engine racing a destroy). */
static void destroying_refuses(void **state)
{
	struct sr_cm_channel *ch = sr_cm_channel_new(false);
	struct sr_cm_id *a = sr_cm_id_new(ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);

	pthread_mutex_lock(&sr_cm_lock);
	a->state = SR_CM_DESTROYING;
	sr_cm_post(a, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
	a->state = SR_CM_IDLE;
	pthread_mutex_unlock(&sr_cm_lock);
	assert_false(readable(ch));
	rdma_destroy_id(&a->id);
	sr_cm_channel_free(ch);
}

struct waiter {
	struct sr_cm_channel *ch;
	int ret, err;
};

static void *wait_event(void *arg)
{
	struct waiter *w = arg;
	struct rdma_cm_event *e;

	w->ret = rdma_get_cm_event(&w->ch->ch, &e);
	w->err = errno;
	return NULL;
}

static void wait_entered(struct sr_cm_channel *ch)
{
	while (__atomic_load_n(&ch->waiters, __ATOMIC_SEQ_CST) == 0)
		sched_yield();
}

/*
 * rping's main thread destroys the channel its CM thread is (about to be) waiting on. As
 * with a kernel channel the waiter must stay blocked (rping exits 255 if it returns an
 * error) and never touch freed memory. The race is run many times: the waiter is held on
 * sr_cm_lock at the destroy, or already polling.
 */
static void destroy_under_waiter(void **state)
{
	for (int i = 0; i < 200; i++) {
		struct waiter w = { .ch = sr_cm_channel_new(false), .ret = 1 };
		pthread_t t;
		void *res;

		if (i % 2)
			pthread_mutex_lock(&sr_cm_lock);
		assert_int_equal(pthread_create(&t, NULL, wait_event, &w), 0);
		wait_entered(w.ch);
		if (i % 2)
			pthread_mutex_unlock(&sr_cm_lock);
		rdma_destroy_event_channel(&w.ch->ch);
		assert_int_equal(pthread_cancel(t), 0);
		assert_int_equal(pthread_join(t, &res), 0);
		assert_ptr_equal(res, PTHREAD_CANCELED); /* it never returned */
		assert_int_equal(w.ret, 1);
		assert_int_equal(w.ch->waiters, 0);
		close(w.ch->ch.fd); /* kept for the waiter; ours to drop now */
		free(w.ch);
	}
}

/* A CM thread cancelled while it waits leaves no lock held and no waiter counted. */
static void cancel_waiter(void **state)
{
	struct waiter w = { .ch = sr_cm_channel_new(false), .ret = 1 };
	struct sr_cm_id *a = sr_cm_id_new(w.ch, NULL, RDMA_PS_TCP, IBV_QPT_RC);
	struct rdma_cm_event *e;
	pthread_t t;
	void *res;

	assert_int_equal(pthread_create(&t, NULL, wait_event, &w), 0);
	wait_entered(w.ch);
	usleep(10000);
	assert_int_equal(pthread_cancel(t), 0);
	assert_int_equal(pthread_join(t, &res), 0);
	assert_ptr_equal(res, PTHREAD_CANCELED);
	assert_int_equal(w.ch->waiters, 0);
	post(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	assert_int_equal(rdma_get_cm_event(&w.ch->ch, &e), 0);
	rdma_ack_cm_event(e);
	assert_int_equal(rdma_destroy_id(&a->id), 0);
	rdma_destroy_event_channel(&w.ch->ch); /* no waiter: really freed (LSan checks) */
}

static void sync_mapping(void **state)
{
	struct sr_cm_id *a = sr_cm_id_new(NULL, NULL, RDMA_PS_TCP, IBV_QPT_RC);

	assert_true(a->sync);
	post(a, RDMA_CM_EVENT_REJECTED, -ECONNRESET);
	errno = 0;
	assert_int_equal(sr_cm_sync_wait(a), -1);
	assert_int_equal(errno, ECONNREFUSED);
	assert_int_equal(a->id.event->event, RDMA_CM_EVENT_REJECTED);
	post(a, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
	assert_int_equal(sr_cm_sync_wait(a), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_int_equal(a->acked, 1); /* the REJECTED was acked by the next call */
	post(a, RDMA_CM_EVENT_ESTABLISHED, 0);
	assert_int_equal(sr_cm_sync_wait(a), 0);
	assert_int_equal(a->id.event->event, RDMA_CM_EVENT_ESTABLISHED);
	assert_int_equal(rdma_destroy_id(&a->id), 0); /* acks id->event itself */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fifo_and_count),
		cmocka_unit_test(nonblocking),
		cmocka_unit_test(destroy_drops_queued),
		cmocka_unit_test(migrate_moves_in_order),
		cmocka_unit_test(requests),
		cmocka_unit_test(private_data_clamped),
		cmocka_unit_test(destroying_refuses),
		cmocka_unit_test(sync_mapping),
		cmocka_unit_test(destroy_under_waiter),
		cmocka_unit_test(cancel_waiter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
