/* SPDX-License-Identifier: MIT */
/*
 * The defaults of the tunables whose value the code also needs as a number: the one
 * definition of each. config.c's table gives them as text (SR_TUNABLE_STR), the layers use
 * them where a setting is out of range; unit_common_config checks that the two agree.
 * Plain decimal literals only: the table's text is their spelling.
 */
#ifndef SR_TUNABLES_H
#define SR_TUNABLES_H

/* SOFTRDMA_ACCEPT_TIMEOUT_MS: the MPA Reply's wait, and a held connect request's (cm). */
#define SR_DEFAULT_ACCEPT_TIMEOUT_MS 60000
/* SOFTRDMA_CLOSE_TIMEOUT_MS: rdma_disconnect's orderly close (transport). */
#define SR_DEFAULT_CLOSE_TIMEOUT_MS 3000
/* SOFTRDMA_TERM_TIMEOUT_MS: a Terminate's wait for room in the socket (transport). */
#define SR_DEFAULT_TERM_TIMEOUT_MS 500
/* SOFTRDMA_POLL_LEASE_US: a busy-polling thread's hold on a connection's input (transport). */
#define SR_DEFAULT_POLL_LEASE_US 2000

/* The text of a default, for config.c's table. */
#define SR_TUNABLE_STR_(x) #x
#define SR_TUNABLE_STR(x) SR_TUNABLE_STR_(x)

#endif
