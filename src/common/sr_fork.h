/* SPDX-License-Identifier: MIT */
/*
 * fork() and process-wide locks: a thread of the parent (the engine thread above all) may
 * hold one at the moment another thread forks, and the child, which has only the forking
 * thread, would then wait for it for ever. SR_FORK_SAFE_MUTEX(name, mu) registers, at
 * load, handlers that take mu before the fork, release it in the parent and re-initialise
 * it in the child, then call child_fn (or nothing) to drop what the child inherited.
 * The lock must not be held by the forking thread, and no two of these locks may be taken
 * in opposite orders anywhere (each is a leaf lock or outermost where it is used).
 */
#ifndef SR_FORK_H
#define SR_FORK_H

#include <pthread.h>

#define SR_FORK_SAFE_MUTEX(name, mu, child_fn)                                              \
	static void name##_fork_prepare(void)                                               \
	{                                                                                   \
		pthread_mutex_lock(mu);                                                     \
	}                                                                                   \
	static void name##_fork_parent(void)                                                \
	{                                                                                   \
		pthread_mutex_unlock(mu);                                                   \
	}                                                                                   \
	static void name##_fork_child(void)                                                 \
	{                                                                                   \
		void (*fn)(void) = child_fn;                                                \
		pthread_mutex_init(mu, NULL);                                               \
		if (fn)                                                                     \
			fn();                                                               \
	}                                                                                   \
	__attribute__((constructor)) static void name##_fork_register(void)                 \
	{                                                                                   \
		pthread_atfork(name##_fork_prepare, name##_fork_parent, name##_fork_child); \
	}

#endif
