// SPDX-License-Identifier: MIT
/*
 * sr_engine_help: an application thread waiting for its own fd runs the engine's callbacks
 * and timers while the engine thread stands aside, and the engine thread takes over again
 * when it leaves (returned, interrupted or cancelled). Every wait is for an event or a
 * state, bounded by a generous deadline only against a hang.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/sr_common.h"
#include "engine/sr_engine.h"

/* Against a hang only: nothing here takes more than milliseconds when it works. */
#define DEADLINE_NS (20ull * 1000000000ull)

struct probe {
	struct sr_engine_handler h;
	atomic_int calls;
	atomic_bool on_engine;     /* sr_engine_in_thread() inside the callback */
	_Atomic pthread_t ran_on;  /* thread of the last call */
};

static void probe_cb(struct sr_engine_handler *h, uint32_t events)
{
	struct probe *p = sr_container_of(h, struct probe, h);
	uint64_t v;

	(void)events;
	if (read(h->fd, &v, sizeof(v)) < 0)
		v = 0;
	atomic_store(&p->on_engine, sr_engine_in_thread());
	atomic_store(&p->ran_on, pthread_self());
	atomic_fetch_add(&p->calls, 1);
}

static void probe_open(struct probe *p)
{
	memset(p, 0, sizeof(*p));
	p->h.cb = probe_cb;
	p->h.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(p->h.fd >= 0);
	assert_int_equal(sr_engine_add(&p->h, EPOLLIN), 0);
}

static void probe_close(struct probe *p)
{
	sr_engine_del(&p->h);
	close(p->h.fd);
}

static void kick(int fd)
{
	uint64_t one = 1;

	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
}

/* Kick p and wait for the callback; returns the thread it ran on. */
static pthread_t kick_and_wait(struct probe *p)
{
	int before = atomic_load(&p->calls);
	uint64_t end = sr_mono_ns() + DEADLINE_NS;

	kick(p->h.fd);
	while (atomic_load(&p->calls) == before && sr_mono_ns() < end)
		usleep(200);
	assert_true(atomic_load(&p->calls) > before);
	return atomic_load(&p->ran_on);
}

static bool never_done(void *arg)
{
	(void)arg;
	return false;
}

static bool probe_called(void *arg)
{
	return atomic_load(&((struct probe *)arg)->calls) > 0;
}

struct helper {
	pthread_t thread;
	int fd;                    /* the fd it waits for */
	atomic_int ret;
	atomic_bool started, returned;
};

static void *helper_main(void *arg)
{
	struct helper *hp = arg;

	atomic_store(&hp->started, true);
	atomic_store(&hp->ret, sr_engine_help(hp->fd, never_done, NULL));
	atomic_store(&hp->returned, true);
	return NULL;
}

static void helper_start(struct helper *hp)
{
	memset(hp, 0, sizeof(*hp));
	hp->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(hp->fd >= 0);
	assert_int_equal(pthread_create(&hp->thread, NULL, helper_main, hp), 0);
}

/* Kick p until its callback runs on hp's thread: from then on hp helps. */
static void wait_helping(struct helper *hp, struct probe *p)
{
	uint64_t end = sr_mono_ns() + DEADLINE_NS;

	while (!pthread_equal(kick_and_wait(p), hp->thread) && sr_mono_ns() < end)
		assert_false(atomic_load(&hp->returned));
	assert_true(pthread_equal(atomic_load(&p->ran_on), hp->thread));
}

static void helper_join(struct helper *hp)
{
	assert_int_equal(pthread_join(hp->thread, NULL), 0);
	close(hp->fd);
}

/* The helper runs callbacks as the engine would (sr_engine_in_thread() true in them), only
 * one thread helps at a time, and it returns 0 once its own fd is readable. */
static void helper_runs_callbacks(void **state)
{
	struct probe p;
	struct helper hp;
	int other = eventfd(0, EFD_CLOEXEC);

	(void)state;
	probe_open(&p);
	helper_start(&hp);
	wait_helping(&hp, &p);
	assert_true(atomic_load(&p.on_engine));
	/* a second helper is turned away while the first is in */
	assert_int_equal(sr_engine_help(other, never_done, NULL), -EBUSY);
	kick(hp.fd);
	helper_join(&hp);
	assert_int_equal(atomic_load(&hp.ret), 0);
	/* it left: the engine thread serves the handler again */
	assert_false(pthread_equal(kick_and_wait(&p), hp.thread));
	assert_true(atomic_load(&p.on_engine));
	probe_close(&p);
	close(other);
}

/* done() ends the wait without the fd: here, once the callback ran in this very thread. */
static void helper_done_ends_wait(void **state)
{
	struct probe p;
	int fd = eventfd(0, EFD_CLOEXEC);

	(void)state;
	probe_open(&p);
	kick(p.h.fd); /* pending before we help: ours to run, or run already (done at once) */
	assert_int_equal(sr_engine_help(fd, probe_called, &p), 0);
	assert_true(atomic_load(&p.calls) >= 1);
	probe_close(&p);
	close(fd);
}

struct tprobe {
	struct sr_engine_timer t;
	atomic_bool fired;
	_Atomic pthread_t ran_on;
};

static void tprobe_cb(struct sr_engine_timer *t)
{
	struct tprobe *tp = sr_container_of(t, struct tprobe, t);

	atomic_store(&tp->ran_on, pthread_self());
	atomic_store(&tp->fired, true);
}

static bool tprobe_fired(void *arg)
{
	return atomic_load(&((struct tprobe *)arg)->fired);
}

/* Timers expire in the helper too (the engine thread sleeps through them). */
static void helper_runs_timers(void **state)
{
	struct tprobe tp = { .t = { .cb = tprobe_cb } };
	int fd = eventfd(0, EFD_CLOEXEC);

	(void)state;
	assert_int_equal(sr_engine_timer_arm(&tp.t, 5), 0);
	assert_int_equal(sr_engine_help(fd, tprobe_fired, &tp), 0);
	assert_true(atomic_load(&tp.fired));
	assert_true(pthread_equal(atomic_load(&tp.ran_on), pthread_self()));
	close(fd);
}

static void on_usr1(int sig)
{
	(void)sig;
}

/* A signal ends the wait with -EINTR, as it ends poll(); the engine thread takes over. */
static void helper_interrupted(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr1 }; /* no SA_RESTART */
	struct probe p;
	struct helper hp;

	(void)state;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	probe_open(&p);
	helper_start(&hp);
	wait_helping(&hp, &p);
	/* until it returns: a signal that lands while it runs a callback is no EINTR */
	for (uint64_t end = sr_mono_ns() + DEADLINE_NS;
	     !atomic_load(&hp.returned) && sr_mono_ns() < end; usleep(1000))
		assert_int_equal(pthread_kill(hp.thread, SIGUSR1), 0);
	helper_join(&hp);
	assert_int_equal(atomic_load(&hp.ret), -EINTR);
	assert_false(pthread_equal(kick_and_wait(&p), hp.thread));
	probe_close(&p);
}

/* A helper cancelled in its wait leaves: the engine thread serves again, another may help. */
static void helper_cancelled(void **state)
{
	struct probe p;
	struct helper hp;
	int fd = eventfd(0, EFD_CLOEXEC);

	(void)state;
	probe_open(&p);
	helper_start(&hp);
	wait_helping(&hp, &p);
	assert_int_equal(pthread_cancel(hp.thread), 0);
	helper_join(&hp);
	assert_false(atomic_load(&hp.returned));
	assert_false(pthread_equal(kick_and_wait(&p), hp.thread));
	atomic_store(&p.calls, 0);
	kick(p.h.fd);
	assert_int_equal(sr_engine_help(fd, probe_called, &p), 0);
	probe_close(&p);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(helper_runs_callbacks),
		cmocka_unit_test(helper_done_ends_wait),
		cmocka_unit_test(helper_runs_timers),
		cmocka_unit_test(helper_interrupted),
		cmocka_unit_test(helper_cancelled),
	};
	int fd = eventfd(0, EFD_CLOEXEC);
	struct probe p;

	/* Before the engine starts, nobody can help; allowed, the first handler starts it. */
	if (sr_engine_help(fd, never_done, NULL) != -EBUSY)
		return 1;
	close(fd);
	sr_engine_allow_helpers();
	probe_open(&p);
	probe_close(&p);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
