// SPDX-License-Identifier: MIT
/*
 * epoll loop. The epoll data carries (generation, slot) rather than a pointer, so an event
 * that was already fetched for a handler that has since been deleted (and maybe freed) is
 * recognised as stale and dropped without touching the handler.
 *
 * Timers: one timerfd (slot SR_ENGINE_TIMER_SLOT in the epoll data) programmed for the
 * earliest deadline of a list kept in deadline order. A timer cancelled after the timerfd
 * was programmed for it leaves a spurious expiry behind: the loop then finds nothing due and
 * programs the next deadline.
 *
 * The engine thread sleeps in eng.outer, an epoll set that holds epfd alone, and harvests
 * epfd without waiting once that reports it ready: so its wake-ups can be switched off with
 * one epoll_ctl while a helper is in (below), without a wake-up to tell it.
 *
 * Helpers (sr_engine_help): an application thread about to sleep until some fd of its own
 * turns readable (a CM event channel) may instead wait in epfd itself, with that fd added
 * (edge-triggered, SR_ENGINE_HELPER_SLOT), and run the callbacks itself. Socket readiness
 * then wakes the thread that wants the result, not the engine thread, which would wake it in
 * turn: one thread wake-up where there were two. One helper at a time; while it is in,
 * epfd is off in eng.outer and the engine thread sleeps through everything; leaving, the
 * helper turns it back on, which wakes the engine thread only if events are pending.
 * Everything in epfd but the helper's fd is level-triggered, so if the engine thread had
 * harvested a batch just as a helper came in, it drops the batch (still pending for the
 * helper) and gives back the helper's edge if it took it. Callbacks, whoever runs them, run
 * one at a time under eng.dispatch and the handler is looked up again under it: an event
 * both threads fetched finds a handler deleted by the first run stale, or runs it once more
 * on a non-blocking socket that has nothing left, which every callback copes with.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "common/sr_log.h"
#include "engine/sr_engine.h"

struct sr_engine_slot {
	struct sr_engine_handler *h; /* NULL when free */
	uint32_t gen;
	uint32_t next_free;          /* free list link while free */
};

/* End of the free list. Free slots are kept on a list so that registering costs the same
 * with a hundred thousand handlers (one per connection) as with ten. */
#define SR_ENGINE_NO_SLOT UINT32_MAX

static struct {
	pthread_mutex_t mu;
	pthread_cond_t idle;
	pthread_once_t once;
	int epfd;
	int outer;             /* epoll set holding epfd alone: where the engine thread sleeps
				* when helpers are allowed; -1 otherwise */
	bool helpers_allowed;
	int start_err;
	bool started;          /* the thread runs (set once, before anyone may help) */
	pthread_t thread;
	struct sr_engine_slot *slots;
	uint32_t nslots;
	uint32_t free_head;
	uint32_t running; /* slot whose callback is running, or UINT32_MAX */
	/* serialises callbacks: held around each one, whichever thread runs it */
	pthread_mutex_t dispatch;
	/* helper: the thread waiting in the set in the engine thread's stead, if any */
	bool helper;
	int helper_fd;         /* its fd, while in the set; -1 otherwise */
	/* timers */
	int tfd;
	uint64_t tfd_deadline;                 /* what tfd is programmed for, 0: nothing */
	struct sr_list timers;                 /* armed timers, earliest first */
	struct sr_engine_timer *running_timer; /* whose callback is running */
	uint32_t epoch;        /* fork()s this process is away from the first one */
} eng = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.dispatch = PTHREAD_MUTEX_INITIALIZER,
	.once = PTHREAD_ONCE_INIT,
	.epfd = -1,
	.outer = -1,
	.helper_fd = -1,
	.free_head = SR_ENGINE_NO_SLOT,
	.running = UINT32_MAX,
	.tfd = -1,
	.timers = SR_LIST_INIT(eng.timers),
};

/* epoll data slots of the timerfd and of a helper's fd; handler slots never get this high */
#define SR_ENGINE_TIMER_SLOT UINT32_MAX
#define SR_ENGINE_HELPER_SLOT (UINT32_MAX - 1)

static __thread bool sr_engine_self;

bool sr_engine_in_thread(void)
{
	return sr_engine_self;
}

/* Program the timerfd for the earliest deadline, unless it already fires by then. */
static void sr_engine_timer_program_locked(void)
{
	struct itimerspec its = { 0 };
	struct sr_engine_timer *t;

	sr_assert_held(&eng.mu);
	if (sr_list_empty(&eng.timers))
		return;
	t = sr_list_first(&eng.timers, struct sr_engine_timer, node);
	if (eng.tfd_deadline && eng.tfd_deadline <= t->deadline)
		return;
	its.it_value.tv_sec = (time_t)(t->deadline / 1000000000ull);
	its.it_value.tv_nsec = (long)(t->deadline % 1000000000ull);
	if (timerfd_settime(eng.tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		eng.tfd_deadline = t->deadline;
	else
		sr_err("timerfd_settime: %m");
}

/* The timerfd expired: run every timer that is due, one at a time. */
static void sr_engine_run_timers(void)
{
	uint64_t n;

	if (read(eng.tfd, &n, sizeof(n)) < 0)
		n = 0; /* EAGAIN: the expiry was consumed by a reprogramming */
	pthread_mutex_lock(&eng.mu);
	eng.tfd_deadline = 0;
	while (!sr_list_empty(&eng.timers)) {
		struct sr_engine_timer *t = sr_list_first(&eng.timers, struct sr_engine_timer, node);

		if (t->deadline > sr_mono_ns())
			break;
		sr_list_del(&t->node);
		t->armed = false;
		eng.running_timer = t;
		pthread_mutex_unlock(&eng.mu);
		t->cb(t);
		pthread_mutex_lock(&eng.mu);
		eng.running_timer = NULL;
		pthread_cond_broadcast(&eng.idle);
	}
	sr_engine_timer_program_locked();
	pthread_mutex_unlock(&eng.mu);
}

/*
 * Run the callbacks of one epoll batch, each under eng.dispatch. Returns true when the
 * batch held the helper's fd.
 */
static bool sr_engine_dispatch(const struct epoll_event *evs, int n)
{
	bool helper_fd = false;

	for (int i = 0; i < n; i++) {
		uint32_t slot = (uint32_t)evs[i].data.u64;
		uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
		struct sr_engine_handler *h = NULL;

		if (slot == SR_ENGINE_HELPER_SLOT) {
			helper_fd = true;
			continue;
		}
		pthread_mutex_lock(&eng.dispatch);
		if (slot == SR_ENGINE_TIMER_SLOT) {
			sr_engine_run_timers();
			pthread_mutex_unlock(&eng.dispatch);
			continue;
		}
		pthread_mutex_lock(&eng.mu);
		if (slot < eng.nslots && eng.slots[slot].h && eng.slots[slot].gen == gen) {
			h = eng.slots[slot].h;
			eng.running = slot;
		}
		pthread_mutex_unlock(&eng.mu);
		if (h) {
			h->cb(h, evs[i].events);
			pthread_mutex_lock(&eng.mu);
			eng.running = UINT32_MAX;
			pthread_cond_broadcast(&eng.idle);
			pthread_mutex_unlock(&eng.mu);
		}
		pthread_mutex_unlock(&eng.dispatch);
	}
	return helper_fd;
}

/*
 * The helper's fd is edge-triggered (level would wake the engine thread along with the
 * helper for as long as the fd stays readable), so an edge the engine thread fetched is
 * lost to the helper: this re-arms it, which queues it again, readable as it is, and wakes
 * the helper. Caller holds eng.mu.
 */
static void sr_engine_helper_rearm_locked(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = SR_ENGINE_HELPER_SLOT };

	sr_assert_held(&eng.mu);
	if (eng.helper && eng.helper_fd >= 0)
		epoll_ctl(eng.epfd, EPOLL_CTL_MOD, eng.helper_fd, &ev);
}

static bool sr_engine_has_helper_edge(const struct epoll_event *evs, int n)
{
	for (int i = 0; i < n; i++)
		if ((uint32_t)evs[i].data.u64 == SR_ENGINE_HELPER_SLOT)
			return true;
	return false;
}

/* Whether a helper is in; if so and evs holds its edge, give that back to it. */
static bool sr_engine_helped(const struct epoll_event *evs, int n)
{
	bool helped;

	pthread_mutex_lock(&eng.mu);
	helped = eng.helper;
	if (helped && sr_engine_has_helper_edge(evs, n))
		sr_engine_helper_rearm_locked();
	pthread_mutex_unlock(&eng.mu);
	return helped;
}

uint32_t sr_engine_epoch(void)
{
	return __atomic_load_n(&eng.epoch, __ATOMIC_RELAXED);
}

/* fork(): the tables are consistent in the child's copy (eng.mu is held across the fork). */
static void sr_engine_fork_prepare(void)
{
	pthread_mutex_lock(&eng.mu);
}

static void sr_engine_fork_parent(void)
{
	pthread_mutex_unlock(&eng.mu);
}

/*
 * The child: only the forking thread came along, so the engine thread and any helper are
 * gone, and the epoll set, the timerfd and every registered fd are shared with the parent,
 * whose engine thread still serves them. Drop the child's references to the sets (never
 * epoll_ctl them: the registrations are the parent's) and start over; the parent's
 * handlers and timers stay in memory, unregistered and disarmed, for their objects'
 * owners to find stale. Locks are re-initialised: a thread of the parent may have held
 * them at the fork.
 */
static void sr_engine_fork_child(void)
{
	if (eng.epfd >= 0)
		close(eng.epfd);
	if (eng.outer >= 0)
		close(eng.outer);
	if (eng.tfd >= 0)
		close(eng.tfd);
	eng.epfd = eng.outer = eng.tfd = -1;
	while (!sr_list_empty(&eng.timers)) {
		struct sr_engine_timer *t = sr_list_first(&eng.timers, struct sr_engine_timer, node);

		sr_list_del(&t->node);
		t->armed = false;
	}
	eng.tfd_deadline = 0;
	eng.running_timer = NULL;
	free(eng.slots);
	eng.slots = NULL;
	eng.nslots = 0;
	eng.free_head = SR_ENGINE_NO_SLOT;
	eng.running = UINT32_MAX;
	eng.helper = false;
	eng.helper_fd = -1;
	eng.start_err = 0;
	__atomic_store_n(&eng.started, false, __ATOMIC_RELEASE);
	eng.once = (pthread_once_t)PTHREAD_ONCE_INIT;
	__atomic_store_n(&eng.epoch, eng.epoch + 1, __ATOMIC_RELAXED);
	sr_engine_self = false;
	pthread_mutex_init(&eng.dispatch, NULL);
	pthread_cond_init(&eng.idle, NULL);
	pthread_mutex_init(&eng.mu, NULL); /* held since the prepare handler */
}

/*
 * Registered at load, before any object exists, so that every child starts a new epoch;
 * and before the other layers' handlers (a lower constructor priority runs first), so its
 * prepare handler runs last: the layers call into the engine (eng.mu) with their locks
 * held, never the other way round, so their locks are taken before eng.mu.
 */
__attribute__((constructor(101))) static void sr_engine_fork_register(void)
{
	pthread_atfork(sr_engine_fork_prepare, sr_engine_fork_parent, sr_engine_fork_child);
}

static void *sr_engine_main(void *unused)
{
	struct epoll_event evs[64];

	sr_engine_self = true;
	for (;;) {
		int n, max = (int)(sizeof(evs) / sizeof(evs[0]));

		if (eng.outer < 0) {
			n = epoll_wait(eng.epfd, evs, max, -1);
		} else {
			n = epoll_wait(eng.outer, evs, 1, -1);
			/* epfd is ready: ours to serve unless a helper came in (then it is off
			 * in eng.outer until the helper leaves, and this thread sleeps). */
			if (n > 0 && sr_engine_helped(NULL, 0))
				continue;
			if (n > 0)
				n = epoll_wait(eng.epfd, evs, max, 0);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			sr_err("epoll_wait: %m");
			return NULL;
		}
		/* A helper came in meanwhile: what we fetched is still pending for it (all
		 * level-triggered but the helper's own edge, given back). */
		if (sr_engine_helped(evs, n))
			continue;
		sr_engine_dispatch(evs, n); /* a helper's edge in it is stale: it left */
	}
	return NULL;
}

static void sr_engine_start(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = SR_ENGINE_TIMER_SLOT };
	pthread_attr_t attr;
	sigset_t all, old;

	struct epoll_event inner = { .events = EPOLLIN };

	eng.epfd = epoll_create1(EPOLL_CLOEXEC);
	eng.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (eng.epfd < 0 || eng.tfd < 0 || epoll_ctl(eng.epfd, EPOLL_CTL_ADD, eng.tfd, &ev) < 0) {
		eng.start_err = -errno;
		return;
	}
	/* Without helpers the thread sleeps in epfd itself: one epoll_wait per batch. */
	if (__atomic_load_n(&eng.helpers_allowed, __ATOMIC_ACQUIRE) &&
	    ((eng.outer = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	     epoll_ctl(eng.outer, EPOLL_CTL_ADD, eng.epfd, &inner) < 0)) {
		eng.start_err = -errno;
		return;
	}
	/* The engine must never take the application's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	eng.start_err = -pthread_create(&eng.thread, &attr, sr_engine_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!eng.start_err) {
		pthread_setname_np(eng.thread, "softrdma-engine");
		__atomic_store_n(&eng.started, true, __ATOMIC_RELEASE);
	}
}

/*
 * Turn the engine thread's wake-ups on or off: epfd in or out of eng.outer. Turned back on
 * with events pending, eng.outer is ready at once and the engine thread wakes for them;
 * with none, it sleeps on. Caller holds eng.mu.
 */
static int sr_engine_outer_locked(bool on)
{
	struct epoll_event ev = { .events = on ? EPOLLIN : 0 };

	sr_assert_held(&eng.mu);
	return epoll_ctl(eng.outer, EPOLL_CTL_MOD, eng.epfd, &ev) < 0 ? -errno : 0;
}

/* The helper leaves: its fd out of the set, the engine thread back to work. */
static void sr_engine_help_end(void *arg)
{
	pthread_mutex_lock(&eng.mu);
	epoll_ctl(eng.epfd, EPOLL_CTL_DEL, *(int *)arg, NULL);
	eng.helper_fd = -1;
	if (sr_engine_outer_locked(true))
		sr_err("engine wake-ups back on: %m"); /* cannot fail: both fds are ours */
	eng.helper = false;
	pthread_mutex_unlock(&eng.mu);
}

/* The helper's wait: until its fd shows up in a batch or done() says so. */
static int sr_engine_help_loop(bool (*done)(void *arg), void *arg)
{
	struct epoll_event evs[64];
	bool over = false;

	/* done before we were in (the engine thread may have been at it): no wait at all */
	over = done(arg);
	while (!over) {
		int n = epoll_wait(eng.epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])), -1);
		int old;

		if (n < 0)
			return -errno; /* -EINTR on a signal, as the poll() it replaces */
		/* Callbacks take locks and must run to their end: no cancellation inside. */
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		sr_engine_self = true;
		over = sr_engine_dispatch(evs, n);
		sr_engine_self = false;
		if (!over)
			over = done(arg);
		pthread_setcancelstate(old, NULL);
	}
	return 0;
}

int sr_engine_help(int fd, bool (*done)(void *arg), void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = SR_ENGINE_HELPER_SLOT };
	int err = 0;

	/* Only a started engine that allows helpers, and only one helper at a time. */
	if (!__atomic_load_n(&eng.started, __ATOMIC_ACQUIRE) || eng.outer < 0)
		return -EBUSY;
	pthread_mutex_lock(&eng.mu);
	if (eng.helper) {
		pthread_mutex_unlock(&eng.mu);
		return -EBUSY;
	}
	/* Added readable, the fd is queued at once: an event posted since the caller
	 * looked is not missed. */
	if (epoll_ctl(eng.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		err = errno == EEXIST ? -EBUSY : -errno;
	} else if ((err = sr_engine_outer_locked(false))) {
		epoll_ctl(eng.epfd, EPOLL_CTL_DEL, fd, NULL);
	} else {
		/* from here on the engine thread sleeps unless it had woken already */
		eng.helper = true;
		eng.helper_fd = fd;
	}
	pthread_mutex_unlock(&eng.mu);
	if (err)
		return err;
	/* epoll_wait is a cancellation point: a cancelled helper must still leave the set. */
	pthread_cleanup_push(sr_engine_help_end, &fd);
	err = sr_engine_help_loop(done, arg);
	pthread_cleanup_pop(1);
	return err;
}

bool sr_engine_helper_active(void)
{
	bool in;

	pthread_mutex_lock(&eng.mu);
	in = eng.helper;
	pthread_mutex_unlock(&eng.mu);
	return in;
}

void sr_engine_allow_helpers(void)
{
	__atomic_store_n(&eng.helpers_allowed, true, __ATOMIC_RELEASE);
}

int sr_engine_add(struct sr_engine_handler *h, uint32_t events)
{
	struct epoll_event ev = { .events = events };
	uint32_t slot;

	pthread_once(&eng.once, sr_engine_start);
	if (eng.start_err)
		return eng.start_err;
	pthread_mutex_lock(&eng.mu);
	if (eng.free_head == SR_ENGINE_NO_SLOT) {
		uint32_t nn = eng.nslots ? eng.nslots * 2 : 64;
		struct sr_engine_slot *ns = realloc(eng.slots, nn * sizeof(*ns));

		if (!ns) {
			pthread_mutex_unlock(&eng.mu);
			return -ENOMEM;
		}
		memset(ns + eng.nslots, 0, (nn - eng.nslots) * sizeof(*ns));
		for (uint32_t i = eng.nslots; i < nn; i++)
			ns[i].next_free = i + 1 < nn ? i + 1 : SR_ENGINE_NO_SLOT;
		eng.free_head = eng.nslots;
		eng.slots = ns;
		eng.nslots = nn;
	}
	slot = eng.free_head;
	eng.free_head = eng.slots[slot].next_free;
	eng.slots[slot].h = h;
	eng.slots[slot].gen++;
	h->slot = slot;
	h->gen = eng.slots[slot].gen;
	h->epoch = eng.epoch;
	ev.data.u64 = ((uint64_t)h->gen << 32) | slot;
	if (epoll_ctl(eng.epfd, EPOLL_CTL_ADD, h->fd, &ev) < 0) {
		int err = -errno;

		eng.slots[slot].h = NULL;
		eng.slots[slot].next_free = eng.free_head;
		eng.free_head = slot;
		pthread_mutex_unlock(&eng.mu);
		return err;
	}
	h->registered = true;
	pthread_mutex_unlock(&eng.mu);
	return 0;
}

int sr_engine_mod(struct sr_engine_handler *h, uint32_t events)
{
	struct epoll_event ev = { .events = events };

	if (h->epoch != sr_engine_epoch())
		return -EIO; /* the parent's (fork): its fd is in the parent's set, not ours */
	ev.data.u64 = ((uint64_t)h->gen << 32) | h->slot;
	return epoll_ctl(eng.epfd, EPOLL_CTL_MOD, h->fd, &ev) < 0 ? -errno : 0;
}

void sr_engine_del(struct sr_engine_handler *h)
{
	pthread_mutex_lock(&eng.mu);
	if (!h->registered || h->epoch != eng.epoch) {
		/* the parent's handler (fork): not in our set, its slot not ours to free */
		pthread_mutex_unlock(&eng.mu);
		return;
	}
	epoll_ctl(eng.epfd, EPOLL_CTL_DEL, h->fd, NULL);
	eng.slots[h->slot].h = NULL;
	eng.slots[h->slot].gen++;
	eng.slots[h->slot].next_free = eng.free_head;
	eng.free_head = h->slot;
	h->registered = false;
	while (eng.running == h->slot && !sr_engine_self)
		pthread_cond_wait(&eng.idle, &eng.mu);
	pthread_mutex_unlock(&eng.mu);
}

int sr_engine_timer_arm(struct sr_engine_timer *t, unsigned int ms)
{
	return sr_engine_timer_arm_us(t, (uint64_t)ms * 1000u);
}

int sr_engine_timer_arm_us(struct sr_engine_timer *t, uint64_t us)
{
	struct sr_list *pos;

	pthread_once(&eng.once, sr_engine_start);
	if (eng.start_err)
		return eng.start_err;
	pthread_mutex_lock(&eng.mu);
	if (t->armed)
		sr_list_del(&t->node);
	t->deadline = sr_mono_ns() + us * 1000ull;
	/* From the end: timers of one kind arrive in deadline order. */
	for (pos = eng.timers.prev; pos != &eng.timers; pos = pos->prev)
		if (sr_list_entry(pos, struct sr_engine_timer, node)->deadline <= t->deadline)
			break;
	sr_list_add_tail(pos->next, &t->node);
	t->armed = true;
	sr_engine_timer_program_locked();
	pthread_mutex_unlock(&eng.mu);
	return 0;
}

void sr_engine_timer_cancel(struct sr_engine_timer *t)
{
	pthread_mutex_lock(&eng.mu);
	if (t->armed) {
		sr_list_del(&t->node);
		t->armed = false;
	}
	while (eng.running_timer == t && !sr_engine_self)
		pthread_cond_wait(&eng.idle, &eng.mu);
	pthread_mutex_unlock(&eng.mu);
}
