// SPDX-License-Identifier: MIT
/* The CM's lock, its condition and the id list (see cm_core.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cm/cm_core.h"

#ifdef NDEBUG
/*
 * Adaptive: an application thread woken for a CM event takes this lock right away, often
 * while the thread that posted the event is still on its way out of the critical section
 * (the eventfd write is the last thing in it). A short spin there costs less than
 * sleeping on the futex and being woken again.
 */
pthread_mutex_t sr_cm_lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
#else
/* An error-checking mutex knows its owner: locking it again from that thread fails with
 * EDEADLK instead of hanging, which is how ownership is asserted below. */
pthread_mutex_t sr_cm_lock = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

void sr_cm_assert_locked_at(const char *func)
{
	int r = pthread_mutex_lock(&sr_cm_lock);

	if (r == EDEADLK)
		return;
	fprintf(stderr, "softrdma: %s called without the CM lock\n", func);
	abort();
}
#endif
pthread_cond_t sr_cm_cond = PTHREAD_COND_INITIALIZER;

/*
 * fork() (docs/ARCHITECTURE.md, "fork()"): the CM lock is held across the fork (so no
 * thread of the parent holds it in the child's copy). The child forgets the parent's
 * devices and link watch too (devices.c, netwatch.c register that themselves: the core
 * calls no CM file): their contexts and sockets belong to the parent's engines. Ids
 * and channels stay in memory, inherited (sr_cm_chan_inherited), off the id list.
 */
static void sr_cm_fork_prepare(void)
{
	pthread_mutex_lock(&sr_cm_lock);
}

static void sr_cm_fork_parent(void)
{
	pthread_mutex_unlock(&sr_cm_lock);
}

static void sr_cm_fork_child(void)
{
#ifdef NDEBUG
	pthread_mutex_t fresh = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
#else
	pthread_mutex_t fresh = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
#endif
	sr_cm_lock = fresh;
	pthread_cond_init(&sr_cm_cond, NULL);
	/* The parent's ids leave the list: nothing of the child's (a link change its link
	 * watch reports) walks them and queues events on the parent's channels. */
	sr_list_init(&sr_cm_ids);
}

__attribute__((constructor)) static void sr_cm_fork_register(void)
{
	pthread_atfork(sr_cm_fork_prepare, sr_cm_fork_parent, sr_cm_fork_child);
}

struct sr_list sr_cm_ids = SR_LIST_INIT(sr_cm_ids);
