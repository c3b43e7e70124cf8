// SPDX-License-Identifier: MIT
/*
 * Memory regions and the process-wide STag table. The transport resolves STags that arrive
 * from the wire here, so the table is shared by all contexts and guarded by a rwlock: lookups
 * (every tagged segment) only read. A lookup takes a reference on the MR, which keeps the
 * struct alive across ibv_dereg_mr until the transport calls sr_mr_put().
 *
 * STag = (index << SR_STAG_KEY_BITS) | key. Index 0 is never used so no STag is 0 (nor the
 * RTR's STag 1). A slot's key starts at a random value and counts up every time the slot is
 * freed, and freed slots are reused oldest first: a stale STag comes back only after
 * 2^SR_STAG_KEY_BITS reuses of its slot, each behind every other free slot, and a peer
 * cannot guess the key of a region it was never told about.
 *
 * Revocation (docs/SECURITY.md): the reference keeps the struct, not the access. Every touch
 * of a region's memory by the transport (one non-blocking recvmsg/sendmsg or copy) sits
 * between sr_mr_enter() and sr_mr_leave(); ibv_dereg_mr marks the region revoked and waits
 * only for the touches already in progress, which never wait for the network.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

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
	uint32_t key;       /* SR_STAG_KEY_BITS wide: the key of the next registration */
};

static pthread_rwlock_t sr_mr_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct sr_mr_slot sr_mr_tab[SR_MAX_MR + 1];
static uint32_t sr_mr_free_head, sr_mr_free_tail; /* FIFO: a freed index rests before reuse */
static uint32_t sr_mr_never_used = 1;
static uint64_t sr_mr_rand_state; /* table write lock */

/* ibv_dereg_mr waits here for the transport's touches of a revoked region to end. */
static pthread_mutex_t sr_mr_idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sr_mr_idle_cv = PTHREAD_COND_INITIALIZER;

/* fork(): the engine thread takes the table's read lock for every placement; a child must
 * not inherit it held (common/sr_fork.h says why, for mutexes). */
static void sr_mr_fork_prepare(void)
{
	pthread_rwlock_wrlock(&sr_mr_lock);
}

static void sr_mr_fork_parent(void)
{
	pthread_rwlock_unlock(&sr_mr_lock);
}

static void sr_mr_fork_child(void)
{
	pthread_rwlock_init(&sr_mr_lock, NULL);
}

__attribute__((constructor)) static void sr_mr_fork_register(void)
{
	pthread_atfork(sr_mr_fork_prepare, sr_mr_fork_parent, sr_mr_fork_child);
}

_Static_assert(((uint64_t)SR_MAX_MR << SR_STAG_KEY_BITS) <= UINT32_MAX,
	       "MR index must fit the STag");

/* Table write lock held: a random start for a fresh slot's key (splitmix64 over a seed from
 * the kernel, taken once; the clock if getrandom is unavailable). */
static uint32_t sr_mr_rand_key(void)
{
	uint64_t z;

	if (!sr_mr_rand_state &&
	    getrandom(&sr_mr_rand_state, sizeof(sr_mr_rand_state), GRND_NONBLOCK) !=
		    (ssize_t)sizeof(sr_mr_rand_state))
		sr_mr_rand_state = sr_mono_ns() ^ (uint64_t)(uintptr_t)&sr_mr_rand_state;
	z = (sr_mr_rand_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)(z ^ (z >> 31)) & SR_STAG_KEY_MASK;
}

/* Table write lock held. Returns 0 when the table is full. */
static uint32_t sr_mr_index_alloc(void)
{
	uint32_t i;

	if (sr_mr_never_used <= SR_MAX_MR) {
		i = sr_mr_never_used++;
		sr_mr_tab[i].key = sr_mr_rand_key();
		return i;
	}
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
	sr_mr_tab[i].key = (sr_mr_tab[i].key + 1) & SR_STAG_KEY_MASK;
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
	atomic_init(&mr->state, SR_MR_LIVE);
	atomic_init(&mr->busy, 0);
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
	mr->ibmr.lkey = idx << SR_STAG_KEY_BITS | sr_mr_tab[idx].key;
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
	idx = ibmr->lkey >> SR_STAG_KEY_BITS;
	pthread_rwlock_wrlock(&sr_mr_lock);
	if (idx == 0 || idx > SR_MAX_MR || sr_mr_tab[idx].mr != mr) {
		pthread_rwlock_unlock(&sr_mr_lock);
		return EINVAL;
	}
	sr_mr_index_free(idx);
	pthread_rwlock_unlock(&sr_mr_lock);
	/*
	 * No new lookup finds it now. Revoke what the transport still holds (a Write being
	 * placed, a Read Response being sent, a posted buffer) and wait for the touches in
	 * progress: each is one non-blocking system call or copy, so this never waits for a
	 * peer. From here on no byte of the buffer is read or written for a remote peer.
	 */
	atomic_store(&mr->state, SR_MR_REVOKED);
	pthread_mutex_lock(&sr_mr_idle_lock);
	while (atomic_load(&mr->busy))
		pthread_cond_wait(&sr_mr_idle_cv, &sr_mr_idle_lock);
	pthread_mutex_unlock(&sr_mr_idle_lock);
	atomic_fetch_sub(&mr->pd->users, 1);
	/* References still held keep the struct until sr_mr_put, not the access. */
	sr_mr_put(mr);
	return 0;
}

/*
 * Sequentially consistent on both sides: either enter sees REVOKED, or dereg sees the busy
 * count raised and waits for the matching leave.
 */
bool sr_mr_enter(struct sr_mr *mr)
{
	atomic_fetch_add(&mr->busy, 1);
	if (atomic_load(&mr->state) == SR_MR_LIVE)
		return true;
	sr_mr_leave(mr);
	return false;
}

void sr_mr_leave(struct sr_mr *mr)
{
	if (atomic_fetch_sub(&mr->busy, 1) == 1 && atomic_load(&mr->state) != SR_MR_LIVE) {
		pthread_mutex_lock(&sr_mr_idle_lock);
		pthread_cond_broadcast(&sr_mr_idle_cv);
		pthread_mutex_unlock(&sr_mr_idle_lock);
	}
}

void sr_mr_put(struct sr_mr *mr)
{
	if (atomic_fetch_sub(&mr->refs, 1) == 1)
		free(mr);
}

/* Table lock held (either way). */
static struct sr_mr *sr_mr_find(uint32_t stag)
{
	uint32_t idx = stag >> SR_STAG_KEY_BITS;
	struct sr_mr *mr;

	if (idx == 0 || idx > SR_MAX_MR)
		return NULL;
	mr = sr_mr_tab[idx].mr;
	if (!mr || mr->ibmr.lkey != stag)
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
