/* SPDX-License-Identifier: MIT */
/*
 * Lock ownership asserted, not only named: every function named _locked starts with
 * sr_assert_held(&its_lock) (the CM's functions with sr_cm_assert_locked(), cm/cm_core.h).
 * In debug builds it aborts with the function's name when the calling thread does not own
 * that mutex: glibc records the owner's thread id in every mutex it locks, whatever its type,
 * and clears it at unlock (pthread_cond_wait included). Release builds check nothing.
 */
#ifndef SR_LOCK_H
#define SR_LOCK_H

#include <pthread.h>

#if defined(NDEBUG) || !defined(__GLIBC__)
#define sr_assert_held(m) ((void)(m))
#else
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void sr_assert_held_at(const pthread_mutex_t *m, const char *func)
{
	if (m->__data.__owner == gettid())
		return;
	fprintf(stderr, "softrdma: %s called without its lock\n", func);
	abort();
}
#define sr_assert_held(m) sr_assert_held_at((m), __func__)
#endif

#endif
