// SPDX-License-Identifier: MIT
/* Protection domains: a name that MRs, QPs and SRQs share, nothing more. */
#include <errno.h>
#include <stdlib.h>

#include "verbs/sr_obj.h"

static atomic_int sr_pd_count;
static atomic_uint sr_pd_handle;

SR_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct sr_pd *pd;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	if (!sr_count_get(&sr_pd_count, SR_MAX_PD)) {
		errno = ENOMEM;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		atomic_fetch_sub(&sr_pd_count, 1);
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = context;
	pd->ibpd.handle = atomic_fetch_add(&sr_pd_handle, 1);
	return &pd->ibpd;
}

SR_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sr_pd *pd;

	if (!ibpd)
		return EINVAL;
	pd = to_sr_pd(ibpd);
	if (atomic_load(&pd->users) > 0)
		return EBUSY;
	free(pd);
	atomic_fetch_sub(&sr_pd_count, 1);
	return 0;
}
