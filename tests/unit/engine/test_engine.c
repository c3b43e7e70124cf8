// SPDX-License-Identifier: MIT
/* The progress engine: callbacks and timers run on its thread; del and cancel wait for a
 * running callback; timers fire in deadline order, cancelled ones never. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "engine/sr_engine.h"

struct probe {
	struct sr_engine_handler h;
	atomic_int calls;
	atomic_bool in_cb;
	atomic_bool on_engine;
	int sleep_ms;
};

static void probe_cb(struct sr_engine_handler *h, uint32_t events)
{
	struct probe *p = (struct probe *)h;
	uint64_t v;
	struct timespec d = { 0, (long)p->sleep_ms * 1000000L };

	atomic_store(&p->in_cb, true);
	atomic_store(&p->on_engine, sr_engine_in_thread());
	if (read(h->fd, &v, sizeof(v)) < 0)
		v = 0;
	nanosleep(&d, NULL);
	/* the count is the last touch: a test that saw it may let the probe go out of scope */
	atomic_store(&p->in_cb, false);
	atomic_fetch_add(&p->calls, 1);
}

static void wait_calls(struct probe *p, int n)
{
	for (int i = 0; i < 2000 && atomic_load(&p->calls) < n; i++)
		usleep(1000);
}

static void callback_runs_on_engine(void **state)
{
	struct probe p = { .h = { .cb = probe_cb } };
	uint64_t one = 1;

	p.h.fd = eventfd(0, EFD_NONBLOCK);
	assert_int_equal(sr_engine_add(&p.h, EPOLLIN), 0);
	assert_false(sr_engine_in_thread());
	assert_int_equal(write(p.h.fd, &one, 8), 8);
	wait_calls(&p, 1);
	assert_int_equal(atomic_load(&p.calls), 1);
	assert_true(atomic_load(&p.on_engine));
	sr_engine_del(&p.h);
	/* after del, nothing more is delivered */
	assert_int_equal(write(p.h.fd, &one, 8), 8);
	usleep(50000);
	assert_int_equal(atomic_load(&p.calls), 1);
	close(p.h.fd);
}

static void del_waits_for_running_callback(void **state)
{
	struct probe p = { .h = { .cb = probe_cb }, .sleep_ms = 200 };
	uint64_t one = 1;

	p.h.fd = eventfd(0, EFD_NONBLOCK);
	assert_int_equal(sr_engine_add(&p.h, EPOLLIN), 0);
	assert_int_equal(write(p.h.fd, &one, 8), 8);
	for (int i = 0; i < 2000 && !atomic_load(&p.in_cb); i++)
		usleep(500);
	assert_true(atomic_load(&p.in_cb));
	sr_engine_del(&p.h); /* must not return while the callback runs */
	assert_false(atomic_load(&p.in_cb));
	assert_int_equal(atomic_load(&p.calls), 1);
	close(p.h.fd);
}

static void many_handlers_and_slot_reuse(void **state)
{
	struct probe p[100];
	uint64_t one = 1;

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 100; i++) {
			p[i] = (struct probe){ .h = { .cb = probe_cb } };
			p[i].h.fd = eventfd(0, EFD_NONBLOCK);
			assert_int_equal(sr_engine_add(&p[i].h, EPOLLIN), 0);
		}
		for (int i = 0; i < 100; i++)
			assert_int_equal(write(p[i].h.fd, &one, 8), 8);
		for (int i = 0; i < 100; i++) {
			wait_calls(&p[i], 1);
			assert_int_equal(atomic_load(&p[i].calls), 1);
			sr_engine_del(&p[i].h);
			close(p[i].h.fd);
		}
	}
}

static void bad_fd_is_an_error(void **state)
{
	struct probe p = { .h = { .cb = probe_cb, .fd = -1 } };

	assert_int_equal(sr_engine_add(&p.h, EPOLLIN), -EBADF);
	sr_engine_del(&p.h); /* not registered: a no-op */
}

/* ------------------------------------------------------------ timers -- */

struct tprobe {
	struct sr_engine_timer t;
	atomic_int fired;
	atomic_bool in_cb;
	atomic_bool on_engine;
	int sleep_ms;
	int order;            /* position among all expiries of the test */
};

static atomic_int g_order;

static void tprobe_cb(struct sr_engine_timer *t)
{
	struct tprobe *p = sr_container_of(t, struct tprobe, t);
	struct timespec d = { 0, (long)p->sleep_ms * 1000000L };

	atomic_store(&p->in_cb, true);
	atomic_store(&p->on_engine, sr_engine_in_thread());
	p->order = atomic_fetch_add(&g_order, 1);
	nanosleep(&d, NULL);
	/* the count is the last touch: a test that saw it may let the probe go out of scope */
	atomic_store(&p->in_cb, false);
	atomic_fetch_add(&p->fired, 1);
}

static void wait_fired(struct tprobe *p)
{
	for (int i = 0; i < 10000 && !atomic_load(&p->fired); i++)
		usleep(1000);
	assert_int_equal(atomic_load(&p->fired), 1);
}

static void timer_fires_once_on_engine(void **state)
{
	struct tprobe p = { .t = { .cb = tprobe_cb } };

	assert_int_equal(sr_engine_timer_arm(&p.t, 5), 0);
	wait_fired(&p);
	assert_true(atomic_load(&p.on_engine));
	sr_engine_timer_cancel(&p.t); /* after expiry: a no-op */
}

/* Expiries follow the deadlines (read back from the timers, so a stall of this thread
 * between two arms cannot make the expectation wrong). */
static void timers_fire_in_deadline_order(void **state)
{
	struct tprobe p[4] = { 0 };
	const unsigned int ms[4] = { 120, 40, 80, 20 };

	atomic_store(&g_order, 0);
	for (int i = 0; i < 4; i++) {
		p[i].t.cb = tprobe_cb;
		assert_int_equal(sr_engine_timer_arm(&p[i].t, ms[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		wait_fired(&p[i]);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			if (p[i].t.deadline < p[j].t.deadline)
				assert_true(p[i].order < p[j].order);
}

/* A cancelled timer never fires; a re-armed one fires at its new deadline. The sentinel's
 * expiry proves it: both others were due long before it. */
static void cancel_and_rearm(void **state)
{
	struct tprobe gone = { .t = { .cb = tprobe_cb } };
	struct tprobe moved = { .t = { .cb = tprobe_cb } };
	struct tprobe sentinel = { .t = { .cb = tprobe_cb } };

	atomic_store(&g_order, 0);
	assert_int_equal(sr_engine_timer_arm(&gone.t, 1000), 0);
	assert_int_equal(sr_engine_timer_arm(&moved.t, 60000), 0);
	assert_int_equal(sr_engine_timer_arm(&sentinel.t, 1500), 0);
	sr_engine_timer_cancel(&gone.t);
	assert_int_equal(sr_engine_timer_arm(&moved.t, 10), 0);
	wait_fired(&sentinel);
	wait_fired(&moved);
	assert_true(moved.t.deadline < sentinel.t.deadline);
	assert_int_equal(moved.order, 0);
	assert_int_equal(sentinel.order, 1);
	assert_int_equal(atomic_load(&gone.fired), 0);
}

static void cancel_waits_for_running_callback(void **state)
{
	struct tprobe p = { .t = { .cb = tprobe_cb }, .sleep_ms = 200 };

	assert_int_equal(sr_engine_timer_arm(&p.t, 1), 0);
	for (int i = 0; i < 10000 && !atomic_load(&p.in_cb); i++)
		usleep(500);
	assert_true(atomic_load(&p.in_cb));
	sr_engine_timer_cancel(&p.t); /* must not return while the callback runs */
	assert_false(atomic_load(&p.in_cb));
	assert_int_equal(atomic_load(&p.fired), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(callback_runs_on_engine),
		cmocka_unit_test(del_waits_for_running_callback),
		cmocka_unit_test(many_handlers_and_slot_reuse),
		cmocka_unit_test(bad_fd_is_an_error),
		cmocka_unit_test(timer_fires_once_on_engine),
		cmocka_unit_test(timers_fire_in_deadline_order),
		cmocka_unit_test(cancel_and_rearm),
		cmocka_unit_test(cancel_waits_for_running_callback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
