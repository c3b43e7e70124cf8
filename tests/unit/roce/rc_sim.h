/* SPDX-License-Identifier: MIT */
/*
 * A requester (roce/rc_req.h) and a responder (roce/rc_resp.h) joined by a simulated link
 * with simulated time, for the RC reliability tests. Every packet goes through the codec
 * (sr_roce_build, then sr_roce_parse on arrival). The link drops, duplicates and delays
 * (reorders) packets by a seeded generator, and a test may script the fate of chosen
 * packets. The responder owns a memory region and a receive queue; both ends log what
 * they see so the tests can check it.
 */
#ifndef SR_TESTS_RC_SIM_H
#define SR_TESTS_RC_SIM_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "roce/packet.h"
#include "roce/psn.h"
#include "roce/rc_req.h"
#include "roce/rc_resp.h"

#define SIM_MAX_WR 512
#define SIM_MAX_PKT 2048
#define SIM_MEM_BASE 0x10000ull
#define SIM_MEM_SIZE (256u * 1024u)
#define SIM_RKEY 0x1234u
#define SIM_RBUF 8192u

enum { SIM_REQ = 0, SIM_RESP = 1 };	/* link direction: who sent */
enum { SIM_PASS, SIM_DROP, SIM_DUP };

struct sim_pkt {
	uint64_t t;		/* delivery time */
	uint64_t seq;		/* order of sending, breaks ties of t */
	uint32_t len;
	uint8_t buf[SR_ROCE_HDR_MAX + 4096 + SR_ROCE_TRAILER_MAX];
};

struct sim_recv {
	struct sr_rc_recv_info info;
	uint8_t *data;
};

/* One packet as it left an end, for the tests to look at. */
struct sim_sent {
	uint64_t t;
	int dir;
	uint8_t opcode;
	uint32_t psn, len, dma_len;
	uint64_t va;
	uint8_t syndrome;
	bool ackreq;
};

struct sim {
	struct sr_rc_req req;
	struct sr_rc_resp resp;
	uint64_t now;
	uint64_t rnd;
	/* link */
	unsigned int drop_pct[2], dup_pct[2];
	uint64_t delay, jitter;
	int (*script)(struct sim *s, int dir, const struct sr_roce_pkt *p, uint32_t nth);
	struct sim_pkt *q[2];
	uint32_t qn[2];
	uint32_t nsent[2];
	uint32_t max_qn[2];	/* most packets on the link at once */
	uint64_t seq;
	struct sim_sent *log;
	uint32_t nlog;
	/* requester side */
	struct sr_rc_wr wr[SIM_MAX_WR];
	uint8_t *data[SIM_MAX_WR];	/* SEND/WRITE payload; READ destination */
	uint64_t orig[SIM_MAX_WR];
	uint32_t nposted;
	uint64_t cq_id[SIM_MAX_WR];
	enum ibv_wc_status cq_st[SIM_MAX_WR];
	uint64_t cq_t[SIM_MAX_WR];
	uint32_t ncq;
	/* responder side */
	uint8_t mem[SIM_MEM_SIZE];
	unsigned int mem_access;
	uint32_t rq_avail;
	uint64_t rq_refill_every;	/* add rq_refill receives each period, 0: never */
	uint32_t rq_refill;
	uint64_t rq_next_refill;
	struct sim_recv rcv[SIM_MAX_WR];
	uint32_t nrcv;
	uint8_t *cur_rbuf;
	uint32_t natomic_exec, nwrite_exec;
};

static inline uint64_t sim_rnd(struct sim *s)
{
	uint64_t x = s->rnd;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s->rnd = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* ---- requester callbacks ---- */

static inline void sim_read_data(void *ctx, const struct sr_rc_wr *wr, uint32_t off,
				 const uint8_t *p, uint32_t len)
{
	struct sim *s = ctx;

	assert_true(wr->wr_id < SIM_MAX_WR);
	assert_true((uint64_t)off + len <= wr->length);
	memcpy(s->data[wr->wr_id] + off, p, len);
}

static inline void sim_atomic_orig(void *ctx, const struct sr_rc_wr *wr, uint64_t orig)
{
	struct sim *s = ctx;

	s->orig[wr->wr_id] = orig;
}

static inline void sim_complete(void *ctx, const struct sr_rc_wr *wr, enum ibv_wc_status st)
{
	struct sim *s = ctx;

	assert_true(s->ncq < SIM_MAX_WR);
	s->cq_id[s->ncq] = wr->wr_id;
	s->cq_t[s->ncq] = s->now;
	s->cq_st[s->ncq++] = st;
}

static const struct sr_rc_req_ops sim_req_ops = {
	.read_data = sim_read_data,
	.atomic_orig = sim_atomic_orig,
	.complete = sim_complete,
};

/* ---- responder callbacks ---- */

static inline int sim_recv_begin(void *ctx)
{
	struct sim *s = ctx;

	if (s->rq_avail == 0)
		return -EAGAIN;
	s->rq_avail--;
	assert_null(s->cur_rbuf);
	s->cur_rbuf = calloc(1, SIM_RBUF);
	assert_non_null(s->cur_rbuf);
	return 0;
}

static inline int sim_recv_data(void *ctx, uint32_t off, const uint8_t *p, uint32_t len)
{
	struct sim *s = ctx;

	assert_non_null(s->cur_rbuf);
	if ((uint64_t)off + len > SIM_RBUF)
		return -EMSGSIZE;
	memcpy(s->cur_rbuf + off, p, len);
	return 0;
}

static inline void sim_recv_done(void *ctx, const struct sr_rc_recv_info *info)
{
	struct sim *s = ctx;

	assert_true(s->nrcv < SIM_MAX_WR);
	s->rcv[s->nrcv].info = *info;
	s->rcv[s->nrcv++].data = s->cur_rbuf;
	s->cur_rbuf = NULL;
}

static inline int sim_rkey_check(void *ctx, uint32_t rkey, uint64_t va, uint64_t len,
				 unsigned int access)
{
	struct sim *s = ctx;

	if (rkey != SIM_RKEY || va < SIM_MEM_BASE || va + len > SIM_MEM_BASE + SIM_MEM_SIZE ||
	    (s->mem_access & access) != access)
		return -EACCES;
	return 0;
}

static inline int sim_write_data(void *ctx, uint32_t rkey, uint64_t va, const uint8_t *p,
				 uint32_t len)
{
	struct sim *s = ctx;

	assert_int_equal(rkey, SIM_RKEY);
	assert_true(va >= SIM_MEM_BASE && va + len <= SIM_MEM_BASE + SIM_MEM_SIZE);
	memcpy(s->mem + (va - SIM_MEM_BASE), p, len);
	s->nwrite_exec++;
	return 0;
}

static inline int sim_atomic(void *ctx, uint32_t rkey, uint64_t va, bool cmp_swap,
			     uint64_t compare, uint64_t swap_add, uint64_t *orig)
{
	struct sim *s = ctx;
	uint64_t v;

	assert_int_equal(rkey, SIM_RKEY);
	memcpy(&v, s->mem + (va - SIM_MEM_BASE), 8);
	*orig = v;
	if (cmp_swap)
		v = v == compare ? swap_add : v;
	else
		v += swap_add;
	memcpy(s->mem + (va - SIM_MEM_BASE), &v, 8);
	s->natomic_exec++;
	return 0;
}

static const struct sr_rc_resp_ops sim_resp_ops = {
	.recv_begin = sim_recv_begin,
	.recv_data = sim_recv_data,
	.recv_done = sim_recv_done,
	.rkey_check = sim_rkey_check,
	.write_data = sim_write_data,
	.atomic = sim_atomic,
};

/* Defaults: MTU 256, window 16, timeout 8 (about 1 ms), retries 7, RNR timer 10 us. */
static inline void sim_attrs(struct sr_rc_req_attr *ra, struct sr_rc_resp_attr *sa,
			     uint32_t psn)
{
	memset(ra, 0, sizeof(*ra));
	memset(sa, 0, sizeof(*sa));
	ra->mtu = sa->mtu = 256;
	ra->dqpn = 0x12;
	sa->dqpn = 0x11;
	ra->pkey = sa->pkey = SR_ROCE_PKEY_DEFAULT;
	ra->sq_psn = sa->rq_psn = psn;
	ra->timeout = 8;
	ra->retry_cnt = 7;
	ra->rnr_retry = 7;
	ra->max_rd_atomic = 4;
	ra->window = 16;
	ra->sq_depth = 32;
	sa->min_rnr_timer = 1;
	sa->max_dest_rd_atomic = 4;
}

static inline struct sim *sim_new(const struct sr_rc_req_attr *ra,
				  const struct sr_rc_resp_attr *sa, uint64_t seed)
{
	struct sim *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->rnd = seed * 0x9E3779B97F4A7C15ull + 1;
	s->q[0] = calloc(SIM_MAX_PKT, sizeof(struct sim_pkt));
	s->q[1] = calloc(SIM_MAX_PKT, sizeof(struct sim_pkt));
	s->log = calloc(1u << 16, sizeof(*s->log));
	assert_true(s->q[0] && s->q[1] && s->log);
	s->delay = 5000;
	s->mem_access = SR_RC_ACCESS_WRITE | SR_RC_ACCESS_READ | SR_RC_ACCESS_ATOMIC;
	s->rq_avail = 1u << 30;
	for (uint32_t i = 0; i < SIM_MEM_SIZE; i++)
		s->mem[i] = (uint8_t)(i * 7 + (i >> 8));
	assert_int_equal(sr_rc_req_init(&s->req, ra, &sim_req_ops, s), 0);
	assert_int_equal(sr_rc_resp_init(&s->resp, sa, &sim_resp_ops, s), 0);
	return s;
}

static inline void sim_free(struct sim *s)
{
	sr_rc_req_fini(&s->req);
	sr_rc_resp_fini(&s->resp);
	for (uint32_t i = 0; i < SIM_MAX_WR; i++)
		free(s->data[i]);
	for (uint32_t i = 0; i < s->nrcv; i++)
		free(s->rcv[i].data);
	free(s->cur_rbuf);
	free(s->q[0]);
	free(s->q[1]);
	free(s->log);
	free(s);
}

/* Post a work request with wr_id = its index; SEND/WRITE get a pattern payload. */
static inline int sim_post(struct sim *s, struct sr_rc_wr wr)
{
	uint32_t id = s->nposted;
	int r;

	assert_true(id < SIM_MAX_WR);
	wr.wr_id = id;
	s->wr[id] = wr;
	free(s->data[id]);
	s->data[id] = calloc(1, wr.length + 1);
	assert_non_null(s->data[id]);
	if (wr.op != SR_RC_WR_READ)
		for (uint32_t i = 0; i < wr.length; i++)
			s->data[id][i] = (uint8_t)(id * 31 + i * 13 + 1);
	r = sr_rc_req_post(&s->req, &wr);
	if (r == 0)
		s->nposted++;
	return r;
}

/* Serialize a packet through the codec and put it on the link (or not). */
static inline void sim_emit(struct sim *s, int dir, const struct sr_roce_pkt *h,
			    const uint8_t *payload, uint32_t plen)
{
	struct sim_pkt pk;
	ssize_t hl = sr_roce_build(pk.buf, sizeof(pk.buf), h, plen);
	unsigned int pad = sr_roce_pad(plen), copies = 1;
	uint32_t nth = s->nsent[dir]++;
	struct sim_sent *l = &s->log[s->nlog++ & 0xffff];

	assert_true(hl > 0);
	if (plen)
		memcpy(pk.buf + hl, payload, plen);
	memset(pk.buf + hl + plen, 0, pad + SR_ROCE_ICRC_LEN);
	pk.len = (uint32_t)hl + plen + pad + SR_ROCE_ICRC_LEN;
	*l = (struct sim_sent){ .t = s->now, .dir = dir, .opcode = h->opcode, .psn = h->psn,
				.len = plen, .dma_len = h->dma_len, .va = h->va,
				.syndrome = h->syndrome, .ackreq = h->ackreq };
	if (s->script) {
		int a = s->script(s, dir, h, nth);

		if (a == SIM_DROP)
			return;
		if (a == SIM_DUP)
			copies = 2;
	}
	if (sim_rnd(s) % 100 < s->drop_pct[dir])
		return;
	if (sim_rnd(s) % 100 < s->dup_pct[dir])
		copies = 2;
	while (copies--) {
		assert_true(s->qn[dir] < SIM_MAX_PKT);
		pk.t = s->now + s->delay + (s->jitter ? sim_rnd(s) % s->jitter : 0);
		pk.seq = s->seq++;
		s->q[dir][s->qn[dir]++] = pk;
		if (s->qn[dir] > s->max_qn[dir])
			s->max_qn[dir] = s->qn[dir];
	}
}

/* Pull everything both ends have to send now. */
static inline void sim_pump(struct sim *s)
{
	struct sr_rc_req_tx rt;
	struct sr_rc_resp_tx st;

	while (sr_rc_req_next(&s->req, s->now, &rt) == 1) {
		assert_true(sr_rc_req_inflight(&s->req) <= s->req.attr.window ||
			    rt.hdr.opcode == SR_ROCE_OP(SR_ROCE_RC, SR_ROCE_READ_REQ));
		sim_emit(s, SIM_REQ, &rt.hdr, s->data[rt.wr->wr_id] + rt.off, rt.len);
	}
	while (sr_rc_resp_next(&s->resp, &st) == 1) {
		const uint8_t *p = NULL;

		if (st.len) {
			assert_true(st.va >= SIM_MEM_BASE &&
				    st.va + st.len <= SIM_MEM_BASE + SIM_MEM_SIZE);
			p = s->mem + (st.va - SIM_MEM_BASE);
		}
		sim_emit(s, SIM_RESP, &st.hdr, p, st.len);
	}
}

/* Deliver the earliest packet due by now; returns false when none is. */
static inline bool sim_deliver(struct sim *s)
{
	int bd = -1;
	uint32_t bi = 0;
	struct sr_roce_pkt p;
	struct sim_pkt pk;

	for (int d = 0; d < 2; d++)
		for (uint32_t i = 0; i < s->qn[d]; i++)
			if (s->q[d][i].t <= s->now &&
			    (bd < 0 || s->q[d][i].t < s->q[bd][bi].t ||
			     (s->q[d][i].t == s->q[bd][bi].t && s->q[d][i].seq < s->q[bd][bi].seq))) {
				bd = d;
				bi = i;
			}
	if (bd < 0)
		return false;
	pk = s->q[bd][bi];
	s->q[bd][bi] = s->q[bd][--s->qn[bd]];
	assert_int_equal(sr_roce_parse(pk.buf, pk.len, SR_ROCE_CLASS_RC, &p), SR_ROCE_OK);
	if (bd == SIM_REQ)
		sr_rc_resp_recv(&s->resp, &p);
	else
		sr_rc_req_recv(&s->req, &p, s->now);
	return true;
}

/* The time of the next event, UINT64_MAX when nothing will happen. */
static inline uint64_t sim_next_event(const struct sim *s)
{
	uint64_t t = sr_rc_req_deadline(&s->req);

	for (int d = 0; d < 2; d++)
		for (uint32_t i = 0; i < s->qn[d]; i++)
			if (s->q[d][i].t < t)
				t = s->q[d][i].t;
	if (s->rq_refill_every && s->rq_next_refill < t)
		t = s->rq_next_refill;
	return t;
}

/* Run until @want completions, nothing left to happen, or @limit ns. */
static inline void sim_run(struct sim *s, uint32_t want, uint64_t limit)
{
	while (s->ncq < want && s->now <= limit) {
		uint64_t t;

		sim_pump(s);
		if (sim_deliver(s))
			continue;
		if (s->rq_refill_every && s->now >= s->rq_next_refill) {
			s->rq_avail += s->rq_refill;
			s->rq_next_refill = s->now + s->rq_refill_every;
		}
		if (s->now >= sr_rc_req_deadline(&s->req)) {
			sr_rc_req_tick(&s->req, s->now);
			continue;
		}
		t = sim_next_event(s);
		if (t == UINT64_MAX)
			break;
		if (t > s->now)
			s->now = t;
	}
	sim_pump(s);
}

/* Packets of @dir logged so far with @opcode (0xff: any). */
static inline uint32_t sim_count(const struct sim *s, int dir, uint8_t opcode)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nlog && i < (1u << 16); i++)
		n += s->log[i].dir == dir && (opcode == 0xff || s->log[i].opcode == opcode);
	return n;
}

/* Requester packets logged with AckReq. */
static inline uint32_t sim_count_ackreq(const struct sim *s)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nlog && i < (1u << 16); i++)
		n += s->log[i].dir == SIM_REQ && s->log[i].ackreq;
	return n;
}

#endif
