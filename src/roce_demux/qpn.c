// SPDX-License-Identifier: MIT
/*
 * QPNs of one process: blocks of 256 from the daemon, single QPNs from them here without a
 * round trip. Next-fit inside a block, so a just-freed QPN (whose peer may still send to it)
 * is the last to be handed out again.
 */
#include <errno.h>
#include <stdlib.h>

#include "rdx_client.h"

static struct rdx_block *rdx_block_of(const struct sr_rdx *x, uint32_t qpn)
{
	for (unsigned int i = 0; i < x->nblocks; i++)
		if (x->blocks[i].block == qpn >> RDX_BLOCK_SHIFT)
			return &x->blocks[i];
	return NULL;
}

bool rdx_qpn_held(const struct sr_rdx *x, uint32_t qpn)
{
	const struct rdx_block *b = rdx_block_of(x, qpn);
	unsigned int i = qpn & (RDX_BLOCK_QPNS - 1);

	return b && (b->bits[i / 64] >> (i % 64) & 1);
}

static bool rdx_take(struct rdx_block *b, uint32_t *qpn)
{
	for (unsigned int k = 0; k < RDX_BLOCK_QPNS; k++) {
		unsigned int i = (b->next + k) % RDX_BLOCK_QPNS;

		if (!(b->bits[i / 64] >> (i % 64) & 1)) {
			b->bits[i / 64] |= 1ull << (i % 64);
			b->used++;
			b->next = (i + 1) % RDX_BLOCK_QPNS;
			*qpn = b->block << RDX_BLOCK_SHIFT | i;
			return true;
		}
	}
	return false;
}

int sr_rdx_qpn_alloc(struct sr_rdx *x, uint32_t *qpn)
{
	struct rdx_msg m = { .op = RDX_BLOCK_ALLOC };
	struct rdx_block *nb;
	int e = 0;

	/* a QPN nobody routes to any more would be a QP that never receives */
	if (atomic_load(&x->gone))
		return -EPIPE;
	pthread_mutex_lock(&x->lock);
	for (unsigned int i = 0; i < x->nblocks; i++)
		if (x->blocks[i].used < RDX_BLOCK_QPNS && rdx_take(&x->blocks[i], qpn))
			goto out;
	nb = realloc(x->blocks, (x->nblocks + 1) * sizeof(*nb));
	if (!nb) {
		e = -ENOMEM;
		goto out;
	}
	x->blocks = nb;
	e = rdx_rpc(x, &m);
	if (e < 0)
		goto out;
	nb = &x->blocks[x->nblocks++];
	*nb = (struct rdx_block){ .block = m.arg };
	rdx_take(nb, qpn);
out:
	pthread_mutex_unlock(&x->lock);
	if (e == -EPIPE)
		rdx_dead(x);
	return e;
}

/* An emptied block goes back to the daemon, except the last one (churn of one QP). */
int sr_rdx_qpn_free(struct sr_rdx *x, uint32_t qpn)
{
	struct rdx_block *b;
	unsigned int i = qpn & (RDX_BLOCK_QPNS - 1);
	bool dead = false;
	int e = 0;

	pthread_mutex_lock(&x->lock);
	b = rdx_block_of(x, qpn);
	if (!b || !(b->bits[i / 64] >> (i % 64) & 1)) {
		e = -EINVAL;
		goto out;
	}
	b->bits[i / 64] &= ~(1ull << (i % 64));
	if (--b->used == 0 && x->nblocks > 1) {
		struct rdx_msg m = { .op = RDX_BLOCK_FREE, .arg = b->block };

		*b = x->blocks[--x->nblocks];
		/* the daemon forgets the block with us if it is gone: nothing to undo */
		e = rdx_rpc(x, &m);
		if (e == -EPIPE) {
			dead = true;
			e = 0;
		}
	}
out:
	pthread_mutex_unlock(&x->lock);
	if (dead)
		rdx_dead(x);
	return e;
}
