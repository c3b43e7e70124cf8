/* SPDX-License-Identifier: MIT */
/* The client's private state, shared by client.c, qpn.c and spawn.c. */
#ifndef SR_RDX_CLIENT_H
#define SR_RDX_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>

#include "sr_rdx.h"

/* How long a request may wait for the daemon's reply (a stopped daemon must not hang us). */
#define RDX_REPLY_MS 5000
/* The first reply after a start: exec, binds, the reply. */
#define RDX_START_MS 10000

struct rdx_block {
	uint32_t block;
	unsigned int used;
	unsigned int next;  /* next-fit start */
	uint64_t bits[RDX_BLOCK_QPNS / 64];
};

struct sr_rdx {
	int ctl;
	int data;
	pid_t daemon;
	sr_rdx_dead_fn dead;
	void *arg;
	atomic_bool gone;    /* the dead callback ran (or is running) */
	atomic_uint_fast64_t dropped;
	pthread_mutex_t lock; /* the control channel and the blocks */
	struct rdx_block *blocks;
	unsigned int nblocks;
};

/* client.c: one request and its reply, under x->lock. */
int rdx_rpc(struct sr_rdx *x, struct rdx_msg *m);
/* client.c: the daemon is gone: call the callback once. */
void rdx_dead(struct sr_rdx *x);
/* qpn.c: whether qpn is allocated here (x->lock held). */
bool rdx_qpn_held(const struct sr_rdx *x, uint32_t qpn);

/*
 * spawn.c: start softrdma-roced with one end of a socketpair as its first client
 * connection; *ctl gets our end. 0 or -errno with why[] filled.
 */
int rdx_spawn(int *ctl, char *why, size_t whylen);

#endif
