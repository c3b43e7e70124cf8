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
	assert_int_not_equal(a->lkey >> 8, 0);
	assert_int_not_equal(a->lkey, b->lkey);
	assert_int_not_equal(a->lkey >> 8, b->lkey >> 8);
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

static void mr_invalidate(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *other = ibv_alloc_pd(ctx);
	static uint8_t buf[64];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	struct sr_mr *m;
	uint8_t *p;

	assert_int_equal(sr_mr_invalidate(mr->rkey, to_sr_pd(other)), SR_ACC_PD);
	assert_int_equal(sr_mr_invalidate(mr->rkey + 1, to_sr_pd(pd)), SR_ACC_BAD_STAG);
	assert_int_equal(sr_mr_invalidate(mr->rkey, to_sr_pd(pd)), SR_ACC_OK);
	assert_int_equal(sr_mr_invalidate(mr->rkey, to_sr_pd(pd)), SR_ACC_BAD_STAG);
	assert_int_equal(sr_mr_resolve(mr->rkey, to_sr_pd(pd), (uintptr_t)buf, 1, 0, &m, &p),
			 SR_ACC_BAD_STAG);
	/* still registered: dereg works */
	assert_int_equal(ibv_dereg_mr(mr), 0);
	ibv_dealloc_pd(other);
	ibv_dealloc_pd(pd);
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
	assert_int_equal(mrs[n / 2]->lkey >> 8, old >> 8);
	assert_int_not_equal(mrs[n / 2]->lkey, old);
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
		cmocka_unit_test(mr_resolve_bounds_rights_pd),
		cmocka_unit_test(mr_invalidate),
		cmocka_unit_test(mr_dereg_while_referenced),
		cmocka_unit_test(mr_table_limit_and_key_reuse),
		cmocka_unit_test(pd_count_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
