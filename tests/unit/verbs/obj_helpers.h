/* SPDX-License-Identifier: MIT */
/* Shared fixtures of the verbs object tests: the real loopback device, a PD, CQs, a QP. */
#ifndef OBJ_HELPERS_H
#define OBJ_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "verbs/sr_obj.h"

static inline struct ibv_context *open_lo(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	assert_non_null(list);
	for (int i = 0; list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), "sriw_lo") == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	assert_non_null(ctx);
	return ctx;
}

/* What the device advertises: the object tests check the limits enforced against it. */
static inline struct ibv_device_attr query_attr(struct ibv_context *ctx)
{
	struct ibv_device_attr a;

	assert_int_equal(ibv_query_device(ctx, &a), 0);
	return a;
}

/* Resident memory of this process in bytes (/proc/self/statm), for "costs nothing until
 * used" checks: the tests compare it before and after, with megabytes at stake. */
static inline long rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, resident = 0;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld", &size, &resident), 2);
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

struct fx {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia;
};

static inline struct ibv_qp_init_attr fx_qp_attr(struct fx *f, uint32_t wr, uint32_t sge,
						 uint32_t inl)
{
	return (struct ibv_qp_init_attr){
		.send_cq = f->scq,
		.recv_cq = f->rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = sge,
			 .max_recv_sge = sge, .max_inline_data = inl },
	};
}

/* Device, channel, PD and two CQs (64 entries) on the channel; no QP. */
static inline void fx_open(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	f->ctx = open_lo();
	f->ch = ibv_create_comp_channel(f->ctx);
	assert_non_null(f->ch);
	f->pd = ibv_alloc_pd(f->ctx);
	assert_non_null(f->pd);
	f->scq = ibv_create_cq(f->ctx, 64, (void *)0x5c, f->ch, 0);
	f->rcq = ibv_create_cq(f->ctx, 64, (void *)0x7c, f->ch, 0);
	assert_non_null(f->scq);
	assert_non_null(f->rcq);
}

static inline int fx_modify(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* fx_open plus an RC QP of depth wr, brought to state `to` along the legal path. */
static inline void fx_open_qp(struct fx *f, uint32_t wr, uint32_t sge, uint32_t inl,
			      enum ibv_qp_state to)
{
	static const enum ibv_qp_state path[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };

	fx_open(f);
	f->ia = fx_qp_attr(f, wr, sge, inl);
	f->qp = ibv_create_qp(f->pd, &f->ia);
	assert_non_null(f->qp);
	/* The fixture stands in for the CM, whose connection lets a QP reach RTS. */
	sr_qp_llp_claim(f->qp);
	/* A QP is born in INIT (as on siw); RESET is where ibv_modify_qp takes it. */
	if (to == IBV_QPS_RESET)
		assert_int_equal(fx_modify(f->qp, IBV_QPS_RESET), 0);
	for (size_t i = 0; i < SR_ARRAY_SIZE(path) && to != IBV_QPS_RESET; i++) {
		assert_int_equal(fx_modify(f->qp, path[i]), 0);
		if (path[i] == to)
			break;
	}
	if (to == IBV_QPS_ERR)
		assert_int_equal(fx_modify(f->qp, IBV_QPS_ERR), 0);
}

static inline void fx_close(struct fx *f)
{
	if (f->qp)
		assert_int_equal(ibv_destroy_qp(f->qp), 0);
	assert_int_equal(ibv_destroy_cq(f->scq), 0);
	assert_int_equal(ibv_destroy_cq(f->rcq), 0);
	assert_int_equal(ibv_dealloc_pd(f->pd), 0);
	assert_int_equal(ibv_destroy_comp_channel(f->ch), 0);
	assert_int_equal(ibv_close_device(f->ctx), 0);
}

static inline int poll_all(struct ibv_cq *cq, struct ibv_wc *wc, int max)
{
	return ibv_poll_cq(cq, max, wc);
}

#endif
