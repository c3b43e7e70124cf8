/* SPDX-License-Identifier: MIT */
/*
 * The CM's core: its one lock, the condition that waiters use with it, and the list of
 * live ids. Every other CM file depends on this one and this one on none of them.
 */
#ifndef SR_CM_CORE_H
#define SR_CM_CORE_H

#include <pthread.h>

#include "common/sr_list.h"

/*
 * One process-wide mutex protects every id, channel queue, connection object and the port
 * table. sr_cm_cond (with it) wakes rdma_destroy_id/rdma_migrate_id waiting for acks and
 * in-flight calls. In debug builds the mutex checks its owner, so sr_cm_assert_locked()
 * can prove that a function named _locked really runs under it.
 */
extern pthread_mutex_t sr_cm_lock;
extern pthread_cond_t sr_cm_cond;

/* Every id from rdma_create_id (and every request id) until it is destroyed. */
extern struct sr_list sr_cm_ids;

#ifdef NDEBUG
static inline void sr_cm_assert_locked(void)
{
}
#else
/* Aborts with a message when the calling thread does not hold sr_cm_lock. */
void sr_cm_assert_locked_at(const char *func);
#define sr_cm_assert_locked() sr_cm_assert_locked_at(__func__)
#endif

#endif
