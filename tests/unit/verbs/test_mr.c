// SPDX-License-Identifier: MIT
/* PDs, MRs and the STag table the transport resolves from the wire. */
#include "obj_helpers.h"

static void pd_alloc_dealloc_busy(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *pd2 = ibv_alloc_pd(ctx);
	char buf[64];
	struct ibv_mr *mr;

	assert_non_null(pd);
	assert_non_null(pd2);
	assert_ptr_equal(pd->context, ctx);
	assert_int_not_equal(pd->handle, pd2->handle);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	assert_null(ibv_alloc_pd(NULL));
	assert_int_equal(errno, EINVAL);
	ibv_close_device(ctx);
}

static void mr_stag_fields(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static char buf[4096];
	struct ibv_mr *a, *b;
	uint32_t old;

	a = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	b = ibv_reg_mr(pd, buf + 100, 10, 0);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_equal(a->addr, buf);
	assert_int_equal(a->length, sizeof(buf));
	assert_ptr_equal(a->pd, pd);
	assert_ptr_equal(a->context, ctx);
	assert_int_equal(a->lkey, a->rkey);
	assert_int_not_equal(a->lkey, 0);
	assert_int_not_equal(a->lkey >> SR_STAG_KEY_BITS, 0);
	assert_int_not_equal(a->lkey, b->lkey);
	assert_int_not_equal(a->lkey >> SR_STAG_KEY_BITS, b->lkey >> SR_STAG_KEY_BITS);
	/* A freed index comes back (eventually) with another key: the old STag stays dead. */
	old = b->lkey;
	assert_int_equal(ibv_dereg_mr(b), 0);
	for (int i = 0; i < 3; i++) {
		struct sr_mr *m;
		uint8_t *p;

		b = ibv_reg_mr(pd, buf, 10, 0);
		assert_non_null(b);
		assert_int_not_equal(b->lkey, old);
		assert_int_equal(sr_mr_resolve(old, NULL, (uintptr_t)buf, 1, 0, &m, &p),
				 SR_ACC_BAD_STAG);
		assert_int_equal(ibv_dereg_mr(b), 0);
	}
	assert_int_equal(ibv_dereg_mr(a), 0);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

/* rdma-core 44 without a provider rereg_mr (siw): what it checks itself fails with EINVAL and
 * IBV_REREG_MR_ERR_INPUT, the rest with EOPNOTSUPP and IBV_REREG_MR_ERR_CMD; errno was unset. */
static void mr_rereg_not_supported(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);

	assert_non_null(mr);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ),
			 IBV_REREG_MR_ERR_CMD);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_FLAGS_SUPPORTED << 1, NULL, NULL, 0, 0),
			 IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 0, 0),
			 IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd, NULL, 0,
				      IBV_ACCESS_LOCAL_WRITE), IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void mr_reg_errors(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	char buf[64];
	struct ibv_mr *mr;

	/* remote write without local write */
	errno = 0;
	assert_null(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	/* remote atomic without local write */
	errno = 0;
	assert_null(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_ATOMIC));
	assert_int_equal(errno, EINVAL);
	/* with it, accepted (it grants nothing: atomic_cap is NONE, atomic WRs are refused) */
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	/* unknown and unsupported flags */
	errno = 0;
	assert_null(ibv_reg_mr(pd, buf, sizeof(buf), 1 << 15));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_ON_DEMAND));
	assert_int_equal(errno, EINVAL);
	/* NULL with a length, and too long */
	errno = 0;
	assert_null(ibv_reg_mr(pd, NULL, 8, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_reg_mr(pd, buf, SR_MAX_MR_SIZE + 1, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_reg_mr_iova(pd, buf, sizeof(buf), UINT64_MAX - 8, 0));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(ibv_reg_mr(NULL, buf, sizeof(buf), 0));
	assert_int_equal(errno, EINVAL);
	/* optional-range flags are ignored, through the header's inline path too */
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	/* zero length is a region too (it takes zero-length operations) */
	mr = ibv_reg_mr(pd, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(mr->length, 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dereg_mr(NULL), EINVAL);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

static void mr_resolve_bounds_rights_pd(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *other = ibv_alloc_pd(ctx);
	static uint8_t buf[1000];
	const uint64_t iova = 0x100000000ull; /* the region is known by a virtual address */
	struct ibv_mr *mr;
	struct sr_mr *m;
	uint8_t *p;
	const struct sr_pd *spd = to_sr_pd(pd);

	mr = ibv_reg_mr_iova(pd, buf, sizeof(buf), iova,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr);
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, iova + 10, 20, IBV_ACCESS_REMOTE_WRITE,
				       &m, &p), SR_ACC_OK);
	assert_ptr_equal(p, buf + 10);
	assert_ptr_equal(&m->ibmr, mr);
	sr_mr_put(m);
	/* whole region, and zero length at the very end */
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, iova, sizeof(buf), 0, &m, &p), SR_ACC_OK);
	sr_mr_put(m);
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, iova + sizeof(buf), 0, 0, &m, &p),
			 SR_ACC_OK);
	assert_ptr_equal(p, buf + sizeof(buf));
	sr_mr_put(m);
	/* bounds: below, past the end, one byte over, wrapping */
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, iova - 1, 1, 0, &m, &p), SR_ACC_BOUNDS);
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, iova + sizeof(buf), 1, 0, &m, &p),
			 SR_ACC_BOUNDS);
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, iova + 1, sizeof(buf), 0, &m, &p),
			 SR_ACC_BOUNDS);
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, iova + sizeof(buf) + 1, 0, 0, &m, &p),
			 SR_ACC_BOUNDS);
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, iova + 8, UINT64_MAX - 4, 0, &m, &p),
			 SR_ACC_BOUNDS);
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, UINT64_MAX, 2, 0, &m, &p), SR_ACC_BOUNDS);
	/* the process address is not the iova */
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, (uintptr_t)buf, 1, 0, &m, &p),
			 SR_ACC_BOUNDS);
	/* rights: no remote read granted */
	assert_int_equal(sr_mr_resolve(mr->rkey, spd, iova, 1, IBV_ACCESS_REMOTE_READ, &m, &p),
			 SR_ACC_RIGHTS);
	/* another PD; an unknown STag; the key part wrong */
	assert_int_equal(sr_mr_resolve(mr->rkey, to_sr_pd(other), iova, 1, 0, &m, &p),
			 SR_ACC_PD);
	assert_int_equal(sr_mr_resolve(0, spd, iova, 1, 0, &m, &p), SR_ACC_BAD_STAG);
	assert_int_equal(sr_mr_resolve(mr->rkey ^ 1, spd, iova, 1, 0, &m, &p), SR_ACC_BAD_STAG);
	assert_int_equal(sr_mr_resolve(0xffffff00u, spd, iova, 1, 0, &m, &p), SR_ACC_BAD_STAG);
	assert_int_equal(ibv_dereg_mr(mr), 0);

	/* a read-only region: local writes are refused */
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_int_equal(sr_mr_resolve(mr->lkey, spd, (uintptr_t)buf, 4, IBV_ACCESS_LOCAL_WRITE,
				       &m, &p), SR_ACC_RIGHTS);
	assert_int_equal(sr_mr_resolve(mr->lkey, spd, (uintptr_t)buf, 4, IBV_ACCESS_REMOTE_READ,
				       &m, &p), SR_ACC_OK);
	sr_mr_put(m);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	ibv_dealloc_pd(other);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

/*
 * ibv_dereg_mr revokes what the transport still holds: a reference outlives it, the access
 * does not. A touch in progress (between enter and leave) holds dereg back until it ends.
 */
struct dereg_arg {
	struct ibv_mr *mr;
	atomic_int done;
};

static void *dereg_main(void *p)
{
	struct dereg_arg *a = p;

	assert_int_equal(ibv_dereg_mr(a->mr), 0);
	atomic_store(&a->done, 1);
	return NULL;
}

static void mr_dereg_revokes(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static uint8_t buf[64];
	struct dereg_arg a = { .mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) };
	struct sr_mr *m, *again;
	uint8_t *p;
	pthread_t th;

	assert_int_equal(sr_mr_resolve(a.mr->lkey, to_sr_pd(pd), (uintptr_t)buf, 8, 0, &m, &p),
			 SR_ACC_OK);
	assert_true(sr_mr_enter(m));
	assert_true(sr_mr_enter(m)); /* nested: two regions of one batch may be the same */
	sr_mr_leave(m);
	assert_int_equal(pthread_create(&th, NULL, dereg_main, &a), 0);
	/* dereg has taken the STag out of the table and now waits for our touch */
	while (sr_mr_resolve(m->ibmr.lkey, NULL, (uintptr_t)buf, 8, 0, &again, &p) == SR_ACC_OK)
		sr_mr_put(again);
	while (atomic_load(&m->state) == SR_MR_LIVE)
		sched_yield();
	assert_int_equal(atomic_load(&a.done), 0);
	sr_mr_leave(m);
	pthread_join(th, NULL);
	assert_int_equal(atomic_load(&a.done), 1);
	/* the holder's reference is still good, its access is not */
	assert_false(sr_mr_enter(m));
	assert_int_equal(atomic_load(&m->busy), 0);
	assert_int_equal(atomic_load(&m->refs), 1);
	sr_mr_put(m);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

/* A lookup in flight keeps the MR alive across dereg (ASan would flag a use after free). */
static void mr_dereg_while_referenced(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static uint8_t buf[64];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	uint32_t stag = mr->lkey;
	struct sr_mr *m;
	uint8_t *p;

	assert_int_equal(sr_mr_resolve(stag, to_sr_pd(pd), (uintptr_t)buf, 8,
				       IBV_ACCESS_LOCAL_WRITE, &m, &p), SR_ACC_OK);
	assert_int_equal(atomic_load(&m->refs), 2);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	/* gone for new lookups, alive for the holder; the PD is free again */
	assert_int_equal(sr_mr_resolve(stag, NULL, (uintptr_t)buf, 8, 0, &m, &p),
			 SR_ACC_BAD_STAG);
	assert_int_equal(atomic_load(&m->refs), 1);
	assert_int_equal(m->length, sizeof(buf));
	memset(p, 0xab, 8);
	sr_mr_put(m);
	assert_int_equal(buf[7], 0xab);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

/* Exactly the advertised max_mr per process, and a reused index comes back with a new key. */
static void mr_table_limit_and_key_reuse(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	int max = query_attr(ctx).max_mr;
	struct ibv_mr **mrs = calloc((size_t)max + 1, sizeof(*mrs));
	static char buf[8];
	uint32_t old;
	int n = 0;

	assert_int_equal(max, SR_MAX_MR);
	while (n <= max && (mrs[n] = ibv_reg_mr(pd, buf, sizeof(buf), 0)))
		n++;
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(n, max);
	old = mrs[n / 2]->lkey;
	assert_int_equal(ibv_dereg_mr(mrs[n / 2]), 0);
	mrs[n / 2] = ibv_reg_mr(pd, buf, sizeof(buf), 0);
	assert_non_null(mrs[n / 2]);
	assert_int_equal(mrs[n / 2]->lkey >> SR_STAG_KEY_BITS, old >> SR_STAG_KEY_BITS);
	assert_int_not_equal(mrs[n / 2]->lkey, old);
	/*
	 * The only free slot, reused again and again: every STag it had stays dead for as long
	 * as its key has values (an 8-bit key brought the first one back at the 256th reuse).
	 */
	{
		/* 4000 more (the slot has had two STags, old and its successor, already) */
		const uint32_t reuses = 4000;
		uint32_t *seen = calloc(reuses + 1, sizeof(*seen));
		struct sr_mr *m;
		uint8_t *p;

		assert_int_equal(ibv_dereg_mr(mrs[n / 2]), 0);
		for (uint32_t k = 0; k <= reuses; k++) {
			mrs[n / 2] = ibv_reg_mr(pd, buf, sizeof(buf), 0);
			assert_non_null(mrs[n / 2]);
			seen[k] = mrs[n / 2]->lkey;
			assert_int_equal(seen[k] >> SR_STAG_KEY_BITS, old >> SR_STAG_KEY_BITS);
			assert_int_not_equal(seen[k], old);
			if (k)
				assert_int_not_equal(seen[k], seen[k - 1]);
			assert_int_equal(ibv_dereg_mr(mrs[n / 2]), 0);
			/* the first, long deregistered, STag finds nothing */
			assert_int_equal(sr_mr_resolve(seen[0], NULL, (uintptr_t)buf, 1, 0, &m, &p),
					 SR_ACC_BAD_STAG);
		}
		/* a counting key: consecutive STags of the slot */
		for (uint32_t k = 1; k <= reuses; k++)
			assert_int_equal((seen[k] - seen[k - 1]) & SR_STAG_KEY_MASK, 1);
		free(seen);
		mrs[n / 2] = ibv_reg_mr(pd, buf, sizeof(buf), 0);
		assert_non_null(mrs[n / 2]);
	}
	for (int i = 0; i < n; i++)
		assert_int_equal(ibv_dereg_mr(mrs[i]), 0);
	free(mrs);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	ibv_close_device(ctx);
}

/* Exactly the advertised max_pd protection domains exist at once; the next is ENOMEM. */
static void pd_count_limit(void **state)
{
	struct ibv_context *ctx = open_lo();
	int max = query_attr(ctx).max_pd;
	struct ibv_pd **pds = calloc((size_t)max + 1, sizeof(*pds));
	int n = 0;

	assert_int_equal(max, SR_MAX_PD);
	while (n <= max && (pds[n] = ibv_alloc_pd(ctx)))
		n++;
	assert_int_equal(n, max);
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(ibv_dealloc_pd(pds[0]), 0);
	pds[0] = ibv_alloc_pd(ctx);
	assert_non_null(pds[0]);
	for (int i = 0; i < n; i++)
		assert_int_equal(ibv_dealloc_pd(pds[i]), 0);
	free(pds);
	ibv_close_device(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pd_alloc_dealloc_busy),
		cmocka_unit_test(mr_stag_fields),
		cmocka_unit_test(mr_reg_errors),
		cmocka_unit_test(mr_rereg_not_supported),
		cmocka_unit_test(mr_resolve_bounds_rights_pd),
		cmocka_unit_test(mr_dereg_revokes),
		cmocka_unit_test(mr_dereg_while_referenced),
		cmocka_unit_test(mr_table_limit_and_key_reuse),
		cmocka_unit_test(pd_count_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
