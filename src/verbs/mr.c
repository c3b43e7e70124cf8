// SPDX-License-Identifier: MIT
/*
 * Memory regions and the process-wide STag table. The transport resolves STags that arrive
 * from the wire here, so the table is shared by all contexts and guarded by a rwlock: lookups
 * (every tagged segment) only read. A lookup takes a reference on the MR, which keeps the
 * struct alive across ibv_dereg_mr until the transport calls sr_mr_put().
 *
 * STag = (index << 8) | key. Index 0 is never used so no STag is 0; the key of a slot changes
 * every time the slot is freed, so a stale STag does not reach the next region in that slot.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs/sr_obj.h"

/*
 * IBV_ACCESS_ZERO_BASED, _ON_DEMAND and _FLUSH_* are not offered. REMOTE_ATOMIC is accepted
 * because programs ask for it by habit (qperf registers every region with it); it grants
 * nothing, since iWARP has no atomics and atomic work requests are refused at post time.
 */
#define SR_MR_ACCESS_OK                                                                    \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |       \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_HUGETLB)

struct sr_mr_slot {
	struct sr_mr *mr;
	uint32_t next_free; /* free list link (0: end) */
	uint8_t key;
};

static pthread_rwlock_t sr_mr_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct sr_mr_slot sr_mr_tab[SR_MAX_MR + 1];
static uint32_t sr_mr_free_head, sr_mr_free_tail; /* FIFO: a freed index rests before reuse */
static uint32_t sr_mr_never_used = 1;

_Static_assert(((uint64_t)SR_MAX_MR << 8) <= UINT32_MAX, "MR index must fit the STag");

/* Table write lock held. Returns 0 when the table is full. */
static uint32_t sr_mr_index_alloc(void)
{
	uint32_t i;

	if (sr_mr_never_used <= SR_MAX_MR)
		return sr_mr_never_used++;
	i = sr_mr_free_head;
	if (i) {
		sr_mr_free_head = sr_mr_tab[i].next_free;
		if (!sr_mr_free_head)
			sr_mr_free_tail = 0;
	}
	return i;
}

/* Table write lock held. */
static void sr_mr_index_free(uint32_t i)
{
	sr_mr_tab[i].mr = NULL;
	sr_mr_tab[i].key++;
	sr_mr_tab[i].next_free = 0;
	if (sr_mr_free_tail)
		sr_mr_tab[sr_mr_free_tail].next_free = i;
	else
		sr_mr_free_head = i;
	sr_mr_free_tail = i;
}

static int sr_mr_check_access(unsigned int access)
{
	/* The optional range may be ignored by definition (verbs.h: IBV_ACCESS_OPTIONAL_RANGE). */
	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (access & ~(unsigned int)SR_MR_ACCESS_OK)
		return EINVAL;
	/* ibv_reg_mr(3): remote write and remote atomic need local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	return 0;
}

SR_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length,
					  uint64_t iova, unsigned int access)
{
	struct sr_mr *mr;
	uint32_t idx;
	int err;

	if (!ibpd) {
		errno = EINVAL;
		return NULL;
	}
	err = sr_mr_check_access(access);
	/* Zero-length regions are allowed (as on hardware); they only take zero-length ops. */
	if (!err && (length > SR_MAX_MR_SIZE || (!addr && length) ||
		     (uintptr_t)addr + length < (uintptr_t)addr || iova + length < iova))
		err = EINVAL;
	if (err) {
		errno = err;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->pd = to_sr_pd(ibpd);
	mr->base = addr;
	mr->iova = iova;
	mr->length = length;
	mr->access = (int)(access & SR_MR_ACCESS_OK);
	atomic_init(&mr->valid, true);
	atomic_init(&mr->refs, 1); /* the table's */

	pthread_rwlock_wrlock(&sr_mr_lock);
	idx = sr_mr_index_alloc();
	if (!idx) {
		pthread_rwlock_unlock(&sr_mr_lock);
		free(mr);
		errno = ENOMEM; /* SR_MAX_MR regions per process */
		return NULL;
	}
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->ibmr.handle = idx;
	mr->ibmr.lkey = idx << 8 | sr_mr_tab[idx].key;
	mr->ibmr.rkey = mr->ibmr.lkey;
	atomic_fetch_add(&mr->pd->users, 1);
	sr_mr_tab[idx].mr = mr;
	pthread_rwlock_unlock(&sr_mr_lock);
	return &mr->ibmr;
}

SR_EXPORT struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

SR_EXPORT struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length,
					   uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

SR_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct sr_mr *mr;
	uint32_t idx;

	if (!ibmr)
		return EINVAL;
	mr = sr_container_of(ibmr, struct sr_mr, ibmr);
	idx = ibmr->lkey >> 8;
	pthread_rwlock_wrlock(&sr_mr_lock);
	if (idx == 0 || idx > SR_MAX_MR || sr_mr_tab[idx].mr != mr) {
		pthread_rwlock_unlock(&sr_mr_lock);
		return EINVAL;
	}
	sr_mr_index_free(idx);
	pthread_rwlock_unlock(&sr_mr_lock);
	atomic_fetch_sub(&mr->pd->users, 1);
	/* Lookups in flight keep the struct; the application's buffer is its own business. */
	sr_mr_put(mr);
	return 0;
}

void sr_mr_put(struct sr_mr *mr)
{
	if (atomic_fetch_sub(&mr->refs, 1) == 1)
		free(mr);
}

/* Table lock held (either way). */
static struct sr_mr *sr_mr_find(uint32_t stag)
{
	uint32_t idx = stag >> 8;
	struct sr_mr *mr;

	if (idx == 0 || idx > SR_MAX_MR)
		return NULL;
	mr = sr_mr_tab[idx].mr;
	if (!mr || mr->ibmr.lkey != stag || !atomic_load(&mr->valid))
		return NULL;
	return mr;
}

enum sr_access_result sr_mr_resolve(uint32_t stag, const struct sr_pd *pd, uint64_t to,
				    uint64_t len, int need, struct sr_mr **out_mr, uint8_t **out)
{
	enum sr_access_result res = SR_ACC_OK;
	struct sr_mr *mr;
	uint64_t off = 0;

	pthread_rwlock_rdlock(&sr_mr_lock);
	mr = sr_mr_find(stag);
	if (!mr)
		res = SR_ACC_BAD_STAG;
	else if (pd && mr->pd != pd)
		res = SR_ACC_PD;
	else if ((mr->access & need) != need)
		res = SR_ACC_RIGHTS;
	/* Written so that nothing can wrap: to - iova and length - off are both in range. */
	else if (to < mr->iova || (off = to - mr->iova) > mr->length || len > mr->length - off)
		res = SR_ACC_BOUNDS;
	else
		atomic_fetch_add(&mr->refs, 1);
	pthread_rwlock_unlock(&sr_mr_lock);
	if (res != SR_ACC_OK)
		return res;
	*out_mr = mr;
	*out = mr->base ? mr->base + off : NULL; /* a zero-length region may sit at NULL */
	return SR_ACC_OK;
}

enum sr_access_result sr_mr_invalidate(uint32_t stag, const struct sr_pd *pd)
{
	enum sr_access_result res = SR_ACC_OK;
	struct sr_mr *mr;

	pthread_rwlock_rdlock(&sr_mr_lock);
	mr = sr_mr_find(stag);
	if (!mr)
		res = SR_ACC_BAD_STAG;
	else if (pd && mr->pd != pd)
		res = SR_ACC_PD;
	else if (!atomic_exchange(&mr->valid, false))
		res = SR_ACC_BAD_STAG; /* lost a race with another invalidation */
	pthread_rwlock_unlock(&sr_mr_lock);
	return res;
}
