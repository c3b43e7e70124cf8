// SPDX-License-Identifier: MIT
/* The progress engine: callbacks run on its thread; del waits for a running callback. */
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
	atomic_fetch_add(&p->calls, 1);
	atomic_store(&p->in_cb, false);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(callback_runs_on_engine),
		cmocka_unit_test(del_waits_for_running_callback),
		cmocka_unit_test(many_handlers_and_slot_reuse),
		cmocka_unit_test(bad_fd_is_an_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
