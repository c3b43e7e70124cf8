// SPDX-License-Identifier: MIT
/*
 * Shared receive queues: one ring of receive WQEs that several QPs of the same context take
 * from (sr_rq_take). The limit event fires once when the ring drops below the armed limit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs/sr_obj.h"

static atomic_int sr_srq_count;
static atomic_uint sr_srq_handle;

SR_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *a)
{
	struct sr_srq *srq;

	if (!pd || !a || a->attr.max_wr > SR_MAX_SRQ_WR || a->attr.max_sge > SR_MAX_SRQ_SGE) {
		errno = EINVAL;
		return NULL;
	}
	if (!sr_count_get(&sr_srq_count, SR_MAX_SRQ)) {
		errno = ENOMEM;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		atomic_fetch_sub(&sr_srq_count, 1);
		errno = ENOMEM;
		return NULL;
	}
	srq->max_wr = SR_MAX(a->attr.max_wr, 1u);
	srq->max_sge = SR_MAX(a->attr.max_sge, 1u);
	srq->slots = sr_recv_ring_alloc(srq->max_wr, srq->max_sge, &srq->slot_size);
	if (!srq->slots) {
		free(srq);
		atomic_fetch_sub(&sr_srq_count, 1);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&srq->lock, NULL);
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	srq->ibsrq.context = pd->context;
	srq->ibsrq.srq_context = a->srq_context;
	srq->ibsrq.pd = pd;
	srq->ibsrq.handle = atomic_fetch_add(&sr_srq_handle, 1);
	srq->pd = to_sr_pd(pd);
	atomic_fetch_add(&srq->pd->users, 1);
	/* ibv_create_srq(3): srq_limit is ignored here; report what was granted. */
	a->attr.max_wr = srq->max_wr;
	a->attr.max_sge = srq->max_sge;
	a->attr.srq_limit = 0;
	return &srq->ibsrq;
}

/* srq->lock held. Grow or shrink the ring, keeping the queued WQEs in order. */
static int sr_srq_resize_locked(struct sr_srq *srq, uint32_t max_wr)
{
	size_t slot_size;
	void *slots;

	sr_assert_held(&srq->lock);
	if (max_wr < srq->count)
		return EINVAL;
	slots = sr_recv_ring_alloc(max_wr, srq->max_sge, &slot_size);
	if (!slots)
		return ENOMEM;
	for (uint32_t i = 0; i < srq->count; i++) {
		const struct sr_recv_wqe *from = sr_srq_slot(srq, srq->head + i);
		struct sr_recv_wqe *to = (struct sr_recv_wqe *)((char *)slots + i * slot_size);

		*to = *from;
		to->sge = (struct ibv_sge *)(to + 1);
		memcpy(to->sge, from->sge, from->num_sge * sizeof(*to->sge));
	}
	sr_ring_free(srq->slots, srq->max_wr, srq->slot_size);
	srq->slots = slots;
	srq->slot_size = slot_size;
	srq->head = 0;
	srq->max_wr = max_wr;
	return 0;
}

SR_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int attr_mask)
{
	struct sr_srq *srq;
	uint32_t max_wr;
	int err = 0;

	if (!ibsrq || !attr || (attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	srq = to_sr_srq(ibsrq);
	pthread_mutex_lock(&srq->lock);
	max_wr = (attr_mask & IBV_SRQ_MAX_WR) ? attr->max_wr : srq->max_wr;
	/* All or nothing: check both before changing either. */
	if (max_wr < 1 || max_wr > SR_MAX_SRQ_WR ||
	    ((attr_mask & IBV_SRQ_LIMIT) && attr->srq_limit > max_wr))
		err = EINVAL;
	if (!err && max_wr != srq->max_wr)
		err = sr_srq_resize_locked(srq, max_wr);
	if (!err && (attr_mask & IBV_SRQ_LIMIT))
		srq->limit = attr->srq_limit; /* 0 disarms */
	pthread_mutex_unlock(&srq->lock);
	return err;
}

SR_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct sr_srq *srq;

	if (!ibsrq || !attr)
		return EINVAL;
	srq = to_sr_srq(ibsrq);
	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

SR_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct sr_srq *srq;

	if (!ibsrq)
		return EINVAL;
	srq = to_sr_srq(ibsrq);
	if (atomic_load(&srq->users) > 0)
		return EBUSY;
	sr_async_drain_obj(ibsrq->context, ibsrq, &srq->async_events, &ibsrq->mutex,
			   &ibsrq->cond, &ibsrq->events_completed);
	atomic_fetch_sub(&srq->pd->users, 1);
	pthread_mutex_destroy(&srq->lock);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	sr_ring_free(srq->slots, srq->max_wr, srq->slot_size);
	free(srq);
	atomic_fetch_sub(&sr_srq_count, 1);
	return 0;
}

int sr_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct sr_srq *srq = to_sr_srq(ibsrq);
	int err = 0;

	if (sr_ctx_inherited(ibsrq->context)) {
		*bad = wr;
		return EIO; /* the parent's SRQ (fork) */
	}
	pthread_mutex_lock(&srq->lock);
	for (; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			break;
		}
		if (srq->count == srq->max_wr) {
			err = ENOMEM;
			break;
		}
		sr_recv_wqe_fill(sr_srq_slot(srq, srq->head + srq->count), wr);
		srq->count++;
	}
	pthread_mutex_unlock(&srq->lock);
	if (err)
		*bad = wr;
	return err;
}
