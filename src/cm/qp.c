// SPDX-License-Identifier: MIT
/*
 * QPs and SRQs made through the CM: rdma_create_qp(_ex), rdma_destroy_qp, rdma_init_qp_attr,
 * rdma_create_srq(_ex), rdma_destroy_srq. The library supplies what the application left
 * out (default PD, CQs with completion channels whose context is the id, as rdma_verbs.h's
 * helpers assert) and moves a new QP to INIT. The attributes rdma_init_qp_attr gives and
 * the handshake's moves to RTS and to error are link.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"

static void sr_cm_destroy_cqs(struct sr_cm_id *s)
{
	struct rdma_cm_id *id = &s->id;

	if (s->own_recv_cq && id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		id->recv_cq = NULL;
		if (id->recv_cq_channel)
			ibv_destroy_comp_channel(id->recv_cq_channel);
		id->recv_cq_channel = NULL;
		s->own_recv_cq = false;
	}
	if (s->own_send_cq && id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
		if (id->send_cq_channel)
			ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
		s->own_send_cq = false;
	}
}

/* One CQ per missing direction, each with its own channel; cq_context = the id. */
static int sr_cm_create_cq(struct sr_cm_id *s, uint32_t size, struct ibv_cq **cq,
			   struct ibv_comp_channel **ch)
{
	struct rdma_cm_id *id = &s->id;

	*ch = ibv_create_comp_channel(id->verbs);
	if (!*ch)
		return -1;
	*cq = ibv_create_cq(id->verbs, (int)(size ? size : 1), id, *ch, 0);
	if (!*cq) {
		int err = errno;

		ibv_destroy_comp_channel(*ch);
		*ch = NULL;
		errno = err;
		return -1;
	}
	return 0;
}

SR_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				int *qp_attr_mask)
{
	int err;

	if (!id || !qp_attr || !qp_attr_mask)
		return sr_cm_fail(EINVAL);
	err = sr_cm_qp_attr(to_sr_id(id), qp_attr, qp_attr_mask);
	return err ? sr_cm_fail(err) : 0;
}

/*
 * The PD for an id's QP or SRQ when the caller names none: the id's own, else the device's
 * default PD, taken for the id (*took). sr_cm_pd_settle() then keeps that default PD for the
 * id once the object exists (ok), or gives it back.
 */
static struct ibv_pd *sr_cm_id_pd(struct sr_cm_id *s, bool *took)
{
	*took = false;
	if (!s->id.pd) {
		s->id.pd = sr_cm_dev_get_pd(s->dev);
		if (!s->id.pd)
			return NULL;
		*took = true;
	}
	return s->id.pd;
}

static void sr_cm_pd_settle(struct sr_cm_id *s, bool took, bool ok)
{
	if (!took)
		return;
	if (ok) {
		s->uses_default_pd = true;
	} else {
		s->id.pd = NULL;
		sr_cm_dev_put_pd(s->dev);
	}
}

SR_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_attr qattr;
	bool made_send = false, made_recv = false, took_pd = false;
	struct sr_cm_id *s;
	struct ibv_qp *qp;
	int mask, err;

	if (!id || !attr)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	if (id->qp || !id->verbs)
		return sr_cm_fail(EINVAL);
	if (attr->qp_type != IBV_QPT_RC)
		return sr_cm_fail(EOPNOTSUPP); /* iWARP: RC only */

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = sr_cm_id_pd(s, &took_pd);
		if (!attr->pd)
			return -1;
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	} else if (attr->pd->context != id->verbs) {
		return sr_cm_fail(EINVAL);
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq)) {
		err = EINVAL;
		goto fail;
	}
	if (!attr->recv_cq && !id->recv_cq && attr->cap.max_recv_wr) {
		if (sr_cm_create_cq(s, attr->cap.max_recv_wr, &id->recv_cq, &id->recv_cq_channel))
			goto fail_errno;
		made_recv = s->own_recv_cq = true;
	}
	if (!attr->send_cq && !id->send_cq && attr->cap.max_send_wr) {
		if (sr_cm_create_cq(s, attr->cap.max_send_wr, &id->send_cq, &id->send_cq_channel))
			goto fail_errno;
		made_send = s->own_send_cq = true;
	}
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;

	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp)
		goto fail_errno;
	memset(&qattr, 0, sizeof(qattr));
	qattr.qp_state = IBV_QPS_INIT;
	if (rdma_init_qp_attr(id, &qattr, &mask)) {
		err = errno;
		ibv_destroy_qp(qp);
		goto fail;
	}
	err = ibv_modify_qp(qp, &qattr, mask);
	if (err) {
		ibv_destroy_qp(qp);
		goto fail;
	}
	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_pd_settle(s, took_pd, true);
	id->pd = qp->pd;
	id->qp = qp;
	pthread_mutex_unlock(&sr_cm_lock);
	return 0;

fail_errno:
	err = errno ? errno : ENOMEM;
fail:
	if (made_recv || made_send) {
		bool keep_send = s->own_send_cq && !made_send;
		bool keep_recv = s->own_recv_cq && !made_recv;

		s->own_send_cq = made_send;
		s->own_recv_cq = made_recv;
		sr_cm_destroy_cqs(s);
		s->own_send_cq = keep_send;
		s->own_recv_cq = keep_recv;
	}
	sr_cm_pd_settle(s, took_pd, false);
	return sr_cm_fail(err);
}

SR_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (!id || !qp_init_attr)
		return sr_cm_fail(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, qp_init_attr, sizeof(*qp_init_attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &ex);
	/* the granted caps (and the CQs we chose) go back to the caller */
	memcpy(qp_init_attr, &ex, sizeof(*qp_init_attr));
	return ret;
}

SR_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct ibv_qp *qp;

	if (!id)
		return;
	pthread_mutex_lock(&sr_cm_lock);
	qp = id->qp;
	id->qp = NULL;
	/*
	 * Work in progress on the id (a failed connect moving the QP to ERR, a disconnect, a
	 * removed device) read id->qp before and uses it without the lock while it holds the
	 * id: wait for it, as rdma_destroy_id does, so the QP is never used after it is freed.
	 * No such work waits on anything of the application's; the waits are short.
	 */
	while (qp && to_sr_id(id)->busy)
		pthread_cond_wait(&sr_cm_cond, &sr_cm_lock);
	pthread_mutex_unlock(&sr_cm_lock);
	if (qp)
		sr_cm_link_destroy_qp(to_sr_id(id), qp);
	sr_cm_destroy_cqs(to_sr_id(id));
}

SR_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct sr_cm_id *s;
	struct ibv_srq *srq;
	bool took_pd = false;

	if (!id || !attr || !id->verbs)
		return sr_cm_fail(EINVAL);
	s = to_sr_id(id);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return sr_cm_fail(EINVAL);
	if (attr->srq_type != IBV_SRQT_BASIC)
		return sr_cm_fail(EOPNOTSUPP); /* no XRC, no tag matching */
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = sr_cm_id_pd(s, &took_pd);
		if (!attr->pd)
			return -1;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq) {
		int err = errno;

		sr_cm_pd_settle(s, took_pd, false);
		return sr_cm_fail(err);
	}
	sr_cm_pd_settle(s, took_pd, true);
	if (!id->pd)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

SR_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (!id || !attr)
		return sr_cm_fail(EINVAL);
	memset(&ex, 0, sizeof(ex));
	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ex.srq_type = IBV_SRQT_BASIC;
	ex.pd = pd;
	ret = rdma_create_srq_ex(id, &ex);
	memcpy(attr, &ex, sizeof(*attr));
	return ret;
}

SR_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}
