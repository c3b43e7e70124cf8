// SPDX-License-Identifier: MIT
/*
 * RC reliability (roce/rc_req.h, roce/rc_resp.h, roce/psn.h): PSN arithmetic and the timer
 * tables; a requester and a responder over a simulated link (tests/unit/roce/rc_sim.h) with
 * scripted losses: sequence error NAK and go-back-N, ACK timeout, retry exhaustion, RNR
 * NAK and its retries, duplicate READ and atomic, remote access and invalid request errors,
 * the in-flight bound, the PSN wrap; the responder fed crafted packets; random packets fed
 * to both ends; and many seeds of a mixed workload over a lossy, duplicating, reordering
 * link.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rc_sim.h"

#define OPC(oper) SR_ROCE_OP(SR_ROCE_RC, oper)
#define MS 1000000ull

static struct sr_rc_wr send_wr(uint32_t len)
{
	return (struct sr_rc_wr){ .op = SR_RC_WR_SEND, .length = len };
}

/* The receive @i holds the payload of work request @id. */
static void check_recv(const struct sim *s, uint32_t i, uint32_t id)
{
	assert_true(i < s->nrcv);
	assert_int_equal(s->rcv[i].info.status, IBV_WC_SUCCESS);
	assert_int_equal(s->rcv[i].info.byte_len, s->wr[id].length);
	assert_memory_equal(s->rcv[i].data, s->data[id], s->wr[id].length);
}

static void check_cq(const struct sim *s, uint32_t i, uint64_t id, enum ibv_wc_status st)
{
	assert_true(i < s->ncq);
	assert_int_equal(s->cq_id[i], id);
	assert_int_equal(s->cq_st[i], st);
}

/* ------------------------------------------------------------------ */

static void test_psn(void **state)
{
	(void)state;
	assert_int_equal(sr_psn_add(0xffffff, 1), 0);
	assert_int_equal(sr_psn_add(0xfffffe, 5), 3);
	assert_int_equal(sr_psn_diff(0, 0xffffff), 1);
	assert_int_equal(sr_psn_diff(0xffffff, 0), -1);
	assert_int_equal(sr_psn_diff(5, 5), 0);
	assert_int_equal(sr_psn_diff(0x7fffff, 0), 0x7fffff);
	assert_int_equal(sr_psn_diff(0x800000, 0), -0x800000);
	assert_true(sr_psn_before(0xfffff0, 3));
	assert_false(sr_psn_before(3, 0xfffff0));
	assert_true(sr_psn_in(1, 0xfffffe, 4));
	assert_false(sr_psn_in(2, 0xfffffe, 4));
	assert_false(sr_psn_in(0xfffffd, 0xfffffe, 4));
}

static void test_timers(void **state)
{
	(void)state;
	assert_true(sr_rc_ack_timeout_ns(0) == SR_RC_NEVER);
	assert_int_equal(sr_rc_ack_timeout_ns(1), 8192);
	assert_int_equal(sr_rc_ack_timeout_ns(14), 4096ull << 14);	/* 67.1 ms */
	assert_int_equal(sr_rc_ack_timeout_ns(31), 4096ull << 31);
	/* the IBTA table in ms, as docs/WIRE.md §R5 lists it */
	static const double ms[32] = {
		655.36, 0.01,  0.02,  0.03,  0.04,   0.06,   0.08,   0.12,
		0.16,	0.24,  0.32,  0.48,  0.64,   0.96,   1.28,   1.92,
		2.56,	3.84,  5.12,  7.68,  10.24,  15.36,  20.48,  30.72,
		40.96,	61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52,
	};

	for (uint8_t c = 0; c < 32; c++)
		assert_int_equal(sr_rc_rnr_timer_ns(c), (uint64_t)(ms[c] * 1e6 + 0.5));
	assert_int_equal(sr_rc_rnr_timer_ns(32 + 5), sr_rc_rnr_timer_ns(5));
}

/* One SEND of 8 packets; the 3rd is lost once. One NAK, not five; packets 3..8 again. */
static int drop_req_psn_once(struct sim *s, int dir, const struct sr_roce_pkt *p, uint32_t nth)
{
	static bool done;

	(void)nth;
	if (s == NULL) {
		done = false;
		return 0;
	}
	if (dir == SIM_REQ && p->psn == 102 && !done) {
		done = true;
		return SIM_DROP;
	}
	return SIM_PASS;
}

static void test_seq_nak_go_back_n(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 100);
	s = sim_new(&ra, &sa, 1);
	drop_req_psn_once(NULL, 0, NULL, 0);
	s->script = drop_req_psn_once;
	assert_int_equal(sim_post(s, send_wr(8 * 256)), 0);
	sim_run(s, 1, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	check_recv(s, 0, 0);
	assert_int_equal(s->nrcv, 1);
	assert_int_equal(s->resp.stats.seq_naks, 1);
	assert_int_equal(s->req.stats.seq_naks, 1);
	assert_int_equal(s->req.stats.timeouts, 0);
	assert_int_equal(s->req.stats.retrans_pkts, 6);
	assert_int_equal(sim_count(s, SIM_REQ, 0xff), 14);
	/* the packets after the gap were dropped, not executed */
	assert_int_equal(s->resp.stats.reqs, 8);
	/* the NAK carries the expected PSN */
	for (uint32_t i = 0; i < s->nlog; i++)
		if (s->log[i].dir == SIM_RESP &&
		    s->log[i].syndrome == SR_AETH_SYN_NAK(SR_AETH_NAK_PSN_SEQ))
			assert_int_equal(s->log[i].psn, 102);
	sim_free(s);
}

/* The only packet's ACK is lost: the local ACK timeout resends, the responder re-ACKs
 * the duplicate without delivering it twice. */
static int drop_first_ack(struct sim *s, int dir, const struct sr_roce_pkt *p, uint32_t nth)
{
	(void)s;
	(void)p;
	return dir == SIM_RESP && nth == 0 ? SIM_DROP : SIM_PASS;
}

static void test_ack_timeout(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;
	uint64_t to;

	(void)state;
	sim_attrs(&ra, &sa, 0);
	ra.timeout = 10;
	to = sr_rc_ack_timeout_ns(10);
	s = sim_new(&ra, &sa, 1);
	s->script = drop_first_ack;
	assert_int_equal(sim_post(s, send_wr(100)), 0);
	assert_int_equal(sr_rc_req_deadline(&s->req), SR_RC_NEVER);	/* nothing sent yet */
	sim_run(s, 1, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	assert_int_equal(s->nrcv, 1);
	check_recv(s, 0, 0);
	assert_int_equal(s->req.stats.timeouts, 1);
	assert_int_equal(s->resp.stats.dups, 1);
	assert_true(s->cq_t[0] >= to);
	assert_true(s->cq_t[0] < to + 4 * s->delay);
	assert_int_equal(sr_rc_req_deadline(&s->req), SR_RC_NEVER);	/* idle again */
	sim_free(s);
}

/* Everything from the requester is lost: retry_cnt + 1 timeouts, then RETRY_EXC_ERR and
 * the rest flushed. 7 is not infinite. */
static int drop_all_req(struct sim *s, int dir, const struct sr_roce_pkt *p, uint32_t nth)
{
	(void)s;
	(void)p;
	(void)nth;
	return dir == SIM_REQ ? SIM_DROP : SIM_PASS;
}

static void retry_exhaustion(uint8_t retry_cnt)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;
	uint64_t to;

	sim_attrs(&ra, &sa, 0);
	ra.retry_cnt = retry_cnt;
	to = sr_rc_ack_timeout_ns(ra.timeout);
	s = sim_new(&ra, &sa, 1);
	s->script = drop_all_req;
	assert_int_equal(sim_post(s, send_wr(600)), 0);
	assert_int_equal(sim_post(s, (struct sr_rc_wr){ .op = SR_RC_WR_WRITE, .length = 10,
							 .remote_addr = SIM_MEM_BASE,
							 .rkey = SIM_RKEY }), 0);
	assert_int_equal(sim_post(s, send_wr(0)), 0);
	sim_run(s, 3, 1000 * MS);
	assert_int_equal(s->ncq, 3);
	check_cq(s, 0, 0, IBV_WC_RETRY_EXC_ERR);
	check_cq(s, 1, 1, IBV_WC_WR_FLUSH_ERR);
	check_cq(s, 2, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(s->req.stats.timeouts, retry_cnt + 1u);
	assert_int_equal(s->req.state, SR_RC_REQ_ERROR);
	assert_true(s->cq_t[0] >= (retry_cnt + 1u) * to);
	assert_int_equal(s->nrcv, 0);
	/* posting in the error state flushes at once */
	assert_int_equal(sim_post(s, send_wr(1)), 0);
	check_cq(s, 3, 3, IBV_WC_WR_FLUSH_ERR);
	sim_free(s);
}

static void test_retry_exhaustion(void **state)
{
	(void)state;
	retry_exhaustion(0);
	retry_exhaustion(3);
	retry_exhaustion(7);
}

/* No receive posted: RNR NAK; one receive appears; the requester resends after the RNR
 * timer of the NAK's code, not before, and the SEND succeeds. */
static void test_rnr_then_success(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;
	uint64_t t_nak = 0, t_resend = 0;
	uint32_t nsend = 0;

	(void)state;
	sim_attrs(&ra, &sa, 5);
	ra.rnr_retry = 3;
	sa.min_rnr_timer = 12;	/* 0.64 ms */
	s = sim_new(&ra, &sa, 1);
	s->rq_avail = 0;
	s->rq_refill_every = 100000;	/* a receive appears every 100 us */
	s->rq_refill = 1;
	s->rq_next_refill = 50000;
	assert_int_equal(sim_post(s, send_wr(300)), 0);
	sim_run(s, 1, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	check_recv(s, 0, 0);
	assert_int_equal(s->req.stats.rnr_naks, 1);
	assert_int_equal(s->resp.stats.rnr_naks, 1);
	for (uint32_t i = 0; i < s->nlog; i++) {
		if (s->log[i].dir == SIM_RESP && s->log[i].syndrome == SR_AETH_SYN_RNR(12)) {
			assert_int_equal(s->log[i].psn, 5);
			t_nak = s->log[i].t;
		}
		if (s->log[i].dir == SIM_REQ && s->log[i].opcode == OPC(SR_ROCE_SEND_FIRST) &&
		    nsend++ == 1)
			t_resend = s->log[i].t;
	}
	assert_int_equal(nsend, 2);
	assert_true(t_resend >= t_nak + s->delay + sr_rc_rnr_timer_ns(12));
	assert_true(t_resend < t_nak + s->delay + sr_rc_rnr_timer_ns(12) + 1000);
	sim_free(s);
}

/* Never a receive: rnr_retry + 1 RNR NAKs, then RNR_RETRY_EXC_ERR; the next WR flushes. */
static void test_rnr_exhaustion(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0);
	ra.rnr_retry = 2;
	s = sim_new(&ra, &sa, 1);
	s->rq_avail = 0;
	assert_int_equal(sim_post(s, send_wr(10)), 0);
	assert_int_equal(sim_post(s, send_wr(10)), 0);
	sim_run(s, 2, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_RNR_RETRY_EXC_ERR);
	check_cq(s, 1, 1, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(s->req.stats.rnr_naks, 3);
	assert_int_equal(s->req.stats.timeouts, 0);
	assert_int_equal(s->nrcv, 0);
	sim_free(s);
}

/* rnr_retry 7 retries for ever: 50 RNR NAKs, then a receive, then success. */
static void test_rnr_infinite(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0);
	ra.rnr_retry = 7;
	s = sim_new(&ra, &sa, 1);
	s->rq_avail = 0;
	assert_int_equal(sim_post(s, send_wr(10)), 0);
	while (s->req.stats.rnr_naks < 50 && s->ncq == 0)
		sim_run(s, 1, s->now + sr_rc_rnr_timer_ns(1));
	assert_int_equal(s->ncq, 0);
	s->rq_avail = 1;
	sim_run(s, 1, s->now + 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	check_recv(s, 0, 0);
	sim_free(s);
}

/* A WRITE with immediate consumes a receive too: RNR on it, then success. */
static void test_rnr_write_imm(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0);
	s = sim_new(&ra, &sa, 1);
	s->rq_avail = 0;
	s->rq_refill_every = 30000;
	s->rq_refill = 1;
	s->rq_next_refill = 30000;
	assert_int_equal(sim_post(s, (struct sr_rc_wr){ .op = SR_RC_WR_WRITE_IMM, .length = 700,
							 .remote_addr = SIM_MEM_BASE + 64,
							 .rkey = SIM_RKEY, .imm = 0xabcd }), 0);
	sim_run(s, 1, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	assert_true(s->req.stats.rnr_naks >= 1);
	assert_int_equal(s->nrcv, 1);
	assert_true(s->rcv[0].info.is_write && s->rcv[0].info.with_imm);
	assert_int_equal(s->rcv[0].info.imm, 0xabcd);
	assert_int_equal(s->rcv[0].info.byte_len, 700);
	assert_memory_equal(s->mem + 64, s->data[0], 700);
	sim_free(s);
}

/* The 2nd of 3 READ response packets is lost once: the 3rd tells the requester, which asks
 * again for the rest; the responder re-executes the READ from its saved request. */
static int drop_second_read_resp(struct sim *s, int dir, const struct sr_roce_pkt *p,
				 uint32_t nth)
{
	(void)s;
	(void)nth;
	return dir == SIM_RESP && p->opcode == OPC(SR_ROCE_READ_RESP_MIDDLE) &&
			       s->resp.stats.dup_reads == 0 ?
		       SIM_DROP :
		       SIM_PASS;
}

static void test_dup_read(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;
	uint32_t nreq = 0;

	(void)state;
	sim_attrs(&ra, &sa, 40);
	s = sim_new(&ra, &sa, 1);
	s->script = drop_second_read_resp;
	assert_int_equal(sim_post(s, (struct sr_rc_wr){ .op = SR_RC_WR_READ, .length = 700,
							 .remote_addr = SIM_MEM_BASE + 1000,
							 .rkey = SIM_RKEY }), 0);
	sim_run(s, 1, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	assert_memory_equal(s->data[0], s->mem + 1000, 700);
	assert_int_equal(s->resp.stats.dup_reads, 1);
	/* the 3rd response revealed the gap at once, no timeout was needed */
	assert_int_equal(s->req.stats.timeouts, 0);
	/* FIRST, MIDDLE (lost), LAST; then the rest again: FIRST, LAST */
	assert_int_equal(sim_count(s, SIM_RESP, 0xff), 5);
	assert_int_equal(sim_count(s, SIM_RESP, OPC(SR_ROCE_READ_RESP_FIRST)), 2);
	for (uint32_t i = 0; i < s->nlog; i++) {
		if (s->log[i].dir != SIM_REQ || s->log[i].opcode != OPC(SR_ROCE_READ_REQ))
			continue;
		if (nreq++ == 0) {
			assert_int_equal(s->log[i].psn, 40);
			assert_int_equal(s->log[i].dma_len, 700);
		} else {	/* the rest: from the lost packet on */
			assert_int_equal(s->log[i].psn, 41);
			assert_int_equal(s->log[i].va, SIM_MEM_BASE + 1000 + 256);
			assert_int_equal(s->log[i].dma_len, 700 - 256);
		}
	}
	assert_int_equal(nreq, 2);
	assert_int_equal(s->req.max_psn, 43);
	sim_free(s);
}

/* A READ's only response is lost; the ACK of the SEND after it says so (implied NAK):
 * the READ is asked again without waiting for the timeout. */
static int drop_read_only_once(struct sim *s, int dir, const struct sr_roce_pkt *p,
			       uint32_t nth)
{
	(void)nth;
	return dir == SIM_RESP && p->opcode == OPC(SR_ROCE_READ_RESP_ONLY) &&
			       s->resp.stats.dup_reads == 0 ?
		       SIM_DROP :
		       SIM_PASS;
}

static void test_read_implied_nak(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0xffffff);
	s = sim_new(&ra, &sa, 1);
	s->script = drop_read_only_once;
	assert_int_equal(sim_post(s, (struct sr_rc_wr){ .op = SR_RC_WR_READ, .length = 16,
							 .remote_addr = SIM_MEM_BASE + 32,
							 .rkey = SIM_RKEY }), 0);
	assert_int_equal(sim_post(s, send_wr(5)), 0);
	sim_run(s, 2, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	check_cq(s, 1, 1, IBV_WC_SUCCESS);
	assert_memory_equal(s->data[0], s->mem + 32, 16);
	assert_int_equal(s->req.stats.timeouts, 0);
	assert_int_equal(s->req.stats.implied_naks, 1);
	assert_int_equal(s->resp.stats.dup_reads, 1);
	assert_int_equal(s->nrcv, 1);
	assert_int_equal(s->req.max_psn, 1);	/* READ at 0xffffff, SEND at 0 */
	sim_free(s);
}

/* The ATOMIC ACK is lost: the resent atomic is answered from the saved result, the
 * counter at the target moves once. */
static void test_dup_atomic(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;
	uint64_t v = 41, got;

	(void)state;
	sim_attrs(&ra, &sa, 0);
	s = sim_new(&ra, &sa, 1);
	s->script = drop_first_ack;
	memcpy(s->mem + 8, &v, 8);
	assert_int_equal(sim_post(s, (struct sr_rc_wr){ .op = SR_RC_WR_FETCH_ADD, .length = 8,
							 .remote_addr = SIM_MEM_BASE + 8,
							 .rkey = SIM_RKEY, .swap_add = 5 }), 0);
	sim_run(s, 1, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	assert_int_equal(s->req.stats.timeouts, 1);
	assert_int_equal(s->resp.stats.dup_atomics, 1);
	assert_int_equal(s->natomic_exec, 1);
	assert_int_equal(s->orig[0], 41);
	memcpy(&got, s->mem + 8, 8);
	assert_int_equal(got, 46);

	/* compare and swap, same story */
	s->req.stats.timeouts = 0;
	s->nsent[SIM_RESP] = 0;
	assert_int_equal(sim_post(s, (struct sr_rc_wr){ .op = SR_RC_WR_CMP_SWAP, .length = 8,
							 .remote_addr = SIM_MEM_BASE + 8,
							 .rkey = SIM_RKEY, .compare = 46,
							 .swap_add = 7 }), 0);
	sim_run(s, 2, s->now + 100 * MS);
	check_cq(s, 1, 1, IBV_WC_SUCCESS);
	assert_int_equal(s->req.stats.timeouts, 1);
	assert_int_equal(s->resp.stats.dup_atomics, 2);
	assert_int_equal(s->natomic_exec, 2);
	assert_int_equal(s->orig[1], 46);
	memcpy(&got, s->mem + 8, 8);
	assert_int_equal(got, 7);
	sim_free(s);
}

/* A WRITE outside the region (or a region without the right): NAK remote access error,
 * IBV_WC_REM_ACCESS_ERR, the rest flushed, the responder stops. */
static void access_error(struct sr_rc_wr bad, unsigned int access)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;

	sim_attrs(&ra, &sa, 0xfffff0);
	s = sim_new(&ra, &sa, 1);
	s->mem_access = access;
	assert_int_equal(sim_post(s, send_wr(10)), 0);
	assert_int_equal(sim_post(s, bad), 0);
	assert_int_equal(sim_post(s, send_wr(10)), 0);
	sim_run(s, 3, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	check_cq(s, 1, 1, IBV_WC_REM_ACCESS_ERR);
	check_cq(s, 2, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(s->resp.state, SR_RC_RESP_ERROR);
	assert_int_equal(s->resp.stats.fatal_naks, 1);
	assert_int_equal(s->nrcv, 1);
	assert_int_equal(s->nwrite_exec, 0);
	assert_int_equal(s->natomic_exec, 0);
	sim_free(s);
}

static void test_remote_access_error(void **state)
{
	unsigned int all = SR_RC_ACCESS_WRITE | SR_RC_ACCESS_READ | SR_RC_ACCESS_ATOMIC;

	(void)state;
	access_error((struct sr_rc_wr){ .op = SR_RC_WR_WRITE, .length = 600, .rkey = SIM_RKEY,
					.remote_addr = SIM_MEM_BASE + SIM_MEM_SIZE - 100 }, all);
	access_error((struct sr_rc_wr){ .op = SR_RC_WR_WRITE, .length = 6, .rkey = SIM_RKEY + 1,
					.remote_addr = SIM_MEM_BASE }, all);
	access_error((struct sr_rc_wr){ .op = SR_RC_WR_READ, .length = 6, .rkey = SIM_RKEY,
					.remote_addr = SIM_MEM_BASE }, SR_RC_ACCESS_WRITE);
	access_error((struct sr_rc_wr){ .op = SR_RC_WR_FETCH_ADD, .length = 8, .rkey = SIM_RKEY,
					.remote_addr = SIM_MEM_BASE }, SR_RC_ACCESS_READ);
}

/* A SEND longer than the receive buffer: NAK invalid request, REM_INV_REQ_ERR at the
 * requester, the receive completes with a length error. */
static void test_invalid_request_length(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0);
	s = sim_new(&ra, &sa, 1);
	assert_int_equal(sim_post(s, send_wr(SIM_RBUF + 1)), 0);
	sim_run(s, 1, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(s->nrcv, 1);
	assert_int_equal(s->rcv[0].info.status, IBV_WC_LOC_LEN_ERR);
	sim_free(s);
}

/* Bound on what is in flight: a slow link, window 8, 40 packets to go. */
static void test_inflight_bound(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;
	(void)state;
	sim_attrs(&ra, &sa, 0);
	ra.window = 8;
	ra.timeout = 14;
	s = sim_new(&ra, &sa, 1);
	s->delay = 200000;
	for (int i = 0; i < 10; i++)
		assert_int_equal(sim_post(s, send_wr(4 * 256)), 0);
	sim_run(s, 10, 1000 * MS);
	for (uint32_t i = 0; i < 10; i++) {
		check_cq(s, i, i, IBV_WC_SUCCESS);
		check_recv(s, i, i);
	}
	assert_int_equal(s->req.stats.max_inflight, 8);
	assert_int_equal(s->max_qn[SIM_REQ], 8);	/* packets on the wire at once */
	assert_int_equal(s->req.stats.retrans_pkts, 0);
	assert_int_equal(s->req.stats.timeouts, 0);
	/* AckReq on each message's last packet, none in between (window / 2 = 4 packets) */
	assert_int_equal(sim_count_ackreq(s), 10);
	sim_free(s);
}

/* A single message larger than the window: acknowledged piecewise, no timeout. */
static void test_long_message_small_window(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0xfffffa);
	ra.window = 4;
	s = sim_new(&ra, &sa, 1);
	assert_int_equal(sim_post(s, send_wr(20 * 256 + 3)), 0);
	sim_run(s, 1, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	check_recv(s, 0, 0);
	assert_int_equal(s->req.stats.timeouts, 0);
	assert_true(s->req.stats.max_inflight <= 4);
	assert_int_equal(s->max_qn[SIM_REQ], 4);
	assert_int_equal(sim_count_ackreq(s), 11);	/* every 2nd packet, and the last */
	assert_int_equal(s->req.una, sr_psn_add(0xfffffa, 21));
	sim_free(s);
}

/* PSNs wrap at 2^24: a SEND of 6 packets from 0xfffffd loses the packet with PSN 0 once;
 * the NAK names PSN 0, the requester goes back across the wrap, and a packet from before
 * the wrap is then a duplicate to the responder. */
static int drop_psn0_once(struct sim *s, int dir, const struct sr_roce_pkt *p, uint32_t nth)
{
	(void)nth;
	return dir == SIM_REQ && p->psn == 0 && s->resp.stats.seq_naks == 0 ? SIM_DROP : SIM_PASS;
}

static void test_psn_wrap(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sr_rc_resp_tx tx;
	struct sr_roce_pkt p = { 0 };
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0xfffffd);
	s = sim_new(&ra, &sa, 1);
	s->script = drop_psn0_once;
	assert_int_equal(sim_post(s, send_wr(6 * 256)), 0);
	assert_int_equal(sim_post(s, send_wr(1)), 0);
	sim_run(s, 2, 100 * MS);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);
	check_cq(s, 1, 1, IBV_WC_SUCCESS);
	check_recv(s, 0, 0);
	check_recv(s, 1, 1);
	assert_int_equal(s->resp.stats.seq_naks, 1);
	assert_int_equal(s->req.stats.timeouts, 0);
	assert_int_equal(s->req.stats.retrans_pkts, 4);	/* PSNs 0, 1, 2, 3 */
	assert_int_equal(s->req.una, 4);
	assert_int_equal(s->resp.epsn, 4);
	/* 0xfffffe is 6 behind 4: a duplicate, acknowledged with PSN 3 */
	p.opcode = OPC(SR_ROCE_SEND_MIDDLE);
	p.op = sr_roce_opinfo(p.opcode);
	p.psn = 0xfffffe;
	p.payload_len = 256;
	p.payload = s->data[0];
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(sr_rc_resp_next(&s->resp, &tx), 1);
	assert_int_equal(tx.hdr.syndrome, SR_AETH_ACK_NO_CREDIT);
	assert_int_equal(tx.hdr.psn, 3);
	assert_int_equal(s->nrcv, 2);
	sim_free(s);
}

/* ---- the responder alone, fed crafted packets ---- */

static struct sr_roce_pkt mk(uint8_t oper, uint32_t psn, bool ackreq, uint32_t plen)
{
	static uint8_t zero[4096];
	struct sr_roce_pkt p = { 0 };

	p.opcode = OPC(oper);
	p.op = sr_roce_opinfo(p.opcode);
	p.psn = psn;
	p.ackreq = ackreq;
	p.payload = zero;
	p.payload_len = plen;
	p.dqpn = 0x11;
	return p;
}

static int pull(struct sim *s, struct sr_rc_resp_tx *tx, int max)
{
	int n = 0;

	while (n < max && sr_rc_resp_next(&s->resp, &tx[n]) == 1)
		n++;
	return n;
}

static void test_responder_direct(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sr_rc_resp_tx tx[8];
	struct sr_roce_pkt p;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 10);
	s = sim_new(&ra, &sa, 1);

	/* ACK coalescing: no ACK without AckReq; two AckReqs before a pull give one ACK */
	p = mk(SR_ROCE_SEND_ONLY, 10, false, 4);
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(pull(s, tx, 8), 0);
	p = mk(SR_ROCE_SEND_ONLY, 11, true, 4);
	sr_rc_resp_recv(&s->resp, &p);
	p = mk(SR_ROCE_SEND_ONLY, 12, true, 4);
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(pull(s, tx, 8), 1);
	assert_int_equal(tx[0].hdr.opcode, OPC(SR_ROCE_ACK));
	assert_int_equal(tx[0].hdr.psn, 12);
	assert_int_equal(tx[0].hdr.syndrome, SR_AETH_ACK_NO_CREDIT);
	assert_int_equal(tx[0].hdr.msn, 3);
	assert_int_equal(s->nrcv, 3);

	/* a gap: one NAK with the expected PSN, silence until it arrives */
	for (uint32_t psn = 14; psn < 18; psn++) {
		p = mk(SR_ROCE_SEND_ONLY, psn, true, 4);
		sr_rc_resp_recv(&s->resp, &p);
	}
	assert_int_equal(pull(s, tx, 8), 1);
	assert_int_equal(tx[0].hdr.opcode, OPC(SR_ROCE_ACK));
	assert_int_equal(tx[0].hdr.syndrome, SR_AETH_SYN_NAK(SR_AETH_NAK_PSN_SEQ));
	assert_int_equal(tx[0].hdr.psn, 13);
	p = mk(SR_ROCE_SEND_ONLY, 13, true, 4);
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(pull(s, tx, 8), 1);
	assert_int_equal(tx[0].hdr.syndrome, SR_AETH_ACK_NO_CREDIT);
	assert_int_equal(tx[0].hdr.psn, 13);
	/* a new gap NAKs again */
	p = mk(SR_ROCE_SEND_ONLY, 20, true, 4);
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(pull(s, tx, 8), 1);
	assert_int_equal(tx[0].hdr.syndrome, SR_AETH_SYN_NAK(SR_AETH_NAK_PSN_SEQ));
	assert_int_equal(tx[0].hdr.psn, 14);

	/* a duplicate SEND is acknowledged with the last PSN and not delivered again */
	p = mk(SR_ROCE_SEND_ONLY, 11, false, 4);
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(pull(s, tx, 8), 1);
	assert_int_equal(tx[0].hdr.syndrome, SR_AETH_ACK_NO_CREDIT);
	assert_int_equal(tx[0].hdr.psn, 13);
	assert_int_equal(s->nrcv, 4);
	assert_int_equal(s->resp.stats.dups, 1);

	/* a duplicate READ that no saved request covers is dropped */
	p = mk(SR_ROCE_READ_REQ, 9, false, 0);
	p.va = SIM_MEM_BASE;
	p.rkey = SIM_RKEY;
	p.dma_len = 4;
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(pull(s, tx, 8), 0);

	/* MIDDLE without FIRST: NAK invalid request, then nothing more */
	p = mk(SR_ROCE_SEND_MIDDLE, 14, false, 256);
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(pull(s, tx, 8), 1);
	assert_int_equal(tx[0].hdr.syndrome, SR_AETH_SYN_NAK(SR_AETH_NAK_INV_REQ));
	assert_int_equal(tx[0].hdr.psn, 14);
	assert_int_equal(s->resp.state, SR_RC_RESP_ERROR);
	p = mk(SR_ROCE_SEND_ONLY, 15, true, 4);
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(pull(s, tx, 8), 0);
	sim_free(s);
}

/* Sizes: a FIRST shorter than the MTU is an invalid request; ack_every ACKs unasked. */
static void test_responder_sizes_ack_every(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sr_rc_resp_tx tx[8];
	struct sr_roce_pkt p;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0);
	sa.ack_every = 3;
	s = sim_new(&ra, &sa, 1);
	for (uint32_t psn = 0; psn < 7; psn++) {
		p = mk(SR_ROCE_SEND_ONLY, psn, false, 1);
		sr_rc_resp_recv(&s->resp, &p);
		assert_int_equal(pull(s, tx, 8), psn % 3 == 2);
	}
	p = mk(SR_ROCE_SEND_FIRST, 7, false, 255);
	sr_rc_resp_recv(&s->resp, &p);
	assert_int_equal(pull(s, tx, 8), 1);
	assert_int_equal(tx[0].hdr.syndrome, SR_AETH_SYN_NAK(SR_AETH_NAK_INV_REQ));
	assert_int_equal(s->nrcv, 7);
	assert_int_equal(s->resp.state, SR_RC_RESP_ERROR);
	sim_free(s);
}

/* The requester fed a crafted NAK invalid request: REM_INV_REQ_ERR, rest flushed; and a
 * remote operational error. */
static void nak_status(uint8_t code, enum ibv_wc_status want)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sr_rc_req_tx tx;
	struct sr_roce_pkt p;
	struct sim *s;

	sim_attrs(&ra, &sa, 0);
	s = sim_new(&ra, &sa, 1);
	assert_int_equal(sim_post(s, send_wr(10)), 0);
	assert_int_equal(sim_post(s, send_wr(10)), 0);
	assert_int_equal(sim_post(s, send_wr(10)), 0);
	while (sr_rc_req_next(&s->req, 0, &tx) == 1)
		;
	p = mk(SR_ROCE_ACK, 1, false, 0);
	p.syndrome = SR_AETH_SYN_NAK(code);
	sr_rc_req_recv(&s->req, &p, 10);
	check_cq(s, 0, 0, IBV_WC_SUCCESS);	/* a NAK acknowledges what is before it */
	check_cq(s, 1, 1, want);
	check_cq(s, 2, 2, IBV_WC_WR_FLUSH_ERR);
	sim_free(s);
}

/* The owner flushes: in order, all of them, later posts too; nothing more is sent. */
static void test_requester_flush(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sr_rc_req_tx tx;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0);
	s = sim_new(&ra, &sa, 1);
	for (int i = 0; i < 4; i++)
		assert_int_equal(sim_post(s, send_wr(600)), 0);
	assert_int_equal(sr_rc_req_next(&s->req, 0, &tx), 1);
	assert_true(sr_rc_req_deadline(&s->req) != SR_RC_NEVER);
	sr_rc_req_flush(&s->req);
	for (uint32_t i = 0; i < 4; i++)
		check_cq(s, i, i, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(s->ncq, 4);
	assert_int_equal(sr_rc_req_next(&s->req, 0, &tx), 0);
	assert_true(sr_rc_req_deadline(&s->req) == SR_RC_NEVER);
	assert_int_equal(sim_post(s, send_wr(1)), 0);
	check_cq(s, 4, 4, IBV_WC_WR_FLUSH_ERR);
	sim_free(s);
}

/* A request posted from a completion callback while the queue flushes completes after the
 * older ones. */
static int repost;

static void complete_and_post(void *ctx, const struct sr_rc_wr *wr, enum ibv_wc_status st)
{
	sim_complete(ctx, wr, st);
	if (repost-- > 0)
		assert_int_equal(sim_post(ctx, send_wr(1)), 0);
}

static const struct sr_rc_req_ops repost_ops = {
	.read_data = sim_read_data,
	.atomic_orig = sim_atomic_orig,
	.complete = complete_and_post,
};

static void test_requester_post_in_callback(void **state)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	struct sim *s;

	(void)state;
	sim_attrs(&ra, &sa, 0);
	ra.retry_cnt = 0;
	s = sim_new(&ra, &sa, 1);
	sr_rc_req_fini(&s->req);
	assert_int_equal(sr_rc_req_init(&s->req, &ra, &repost_ops, s), 0);
	s->script = drop_all_req;
	for (int i = 0; i < 3; i++)
		assert_int_equal(sim_post(s, send_wr(10)), 0);
	repost = 2;
	sim_run(s, 5, 100 * MS);
	assert_int_equal(s->ncq, 5);
	check_cq(s, 0, 0, IBV_WC_RETRY_EXC_ERR);
	for (uint32_t i = 1; i < 5; i++)
		check_cq(s, i, i, IBV_WC_WR_FLUSH_ERR);
	/* outside a flush a post in the error state completes at once */
	assert_int_equal(sim_post(s, send_wr(1)), 0);
	check_cq(s, 5, 5, IBV_WC_WR_FLUSH_ERR);
	sim_free(s);
}

static void test_requester_nak_status(void **state)
{
	(void)state;
	nak_status(SR_AETH_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	nak_status(SR_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
	nak_status(SR_AETH_NAK_REM_OP, IBV_WC_REM_OP_ERR);
	nak_status(SR_AETH_NAK_INV_RD_REQ, IBV_WC_REM_OP_ERR);
}

/* A peer that sends nonsense: random opcodes, PSNs near the window, syndromes, lengths and
 * keys into both ends. Nothing may crash (the ASan build runs this too), completions stay
 * in posting order, READ data stays inside its buffer (sim_read_data checks), and every
 * packet either end emits can be encoded (sim_emit checks). */
static void test_random_input(void **state)
{
	static uint8_t junk[4096 + 64];
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	uint32_t st[IBV_WC_GENERAL_ERR + 1] = { 0 };
	uint64_t rcvd = 0;

	(void)state;
	for (uint64_t seed = 1; seed <= 150; seed++) {
		struct sim *s;

		sim_attrs(&ra, &sa, seed % 2 ? 0xfffff0 : 7);
		sa.ack_every = (uint32_t)(seed % 4);
		s = sim_new(&ra, &sa, seed);
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)sim_rnd(s);
		for (int step = 0; step < 450; step++) {	/* < SIM_MAX_WR posts */
			struct sr_roce_pkt p = { 0 };
			uint64_t x = sim_rnd(s);
			uint32_t base;

			if (sr_rc_req_outstanding(&s->req) < 8) {
				struct sr_rc_wr w = { .op = (uint8_t)(x % 8),
						      .length = (uint32_t)(x >> 8) % 2000,
						      .remote_addr = SIM_MEM_BASE + 8 * ((x >> 20) % 64),
						      .rkey = SIM_RKEY };

				if (w.op == SR_RC_WR_CMP_SWAP || w.op == SR_RC_WR_FETCH_ADD)
					w.length = 8;
				assert_int_equal(sim_post(s, w), 0);
			}
			x = sim_rnd(s);
			do
				p.op = sr_roce_opinfo((uint8_t)(x & 0x1f));
			while (!p.op && (x = sim_rnd(s)));
			p.opcode = p.op->opcode;
			base = p.op->flags & SR_ROCE_F_RESP ? s->req.una : s->resp.epsn;
			p.psn = sr_psn_add(base, (uint32_t)((x >> 8) % 40) + SR_PSN_MASK - 4);
			p.ackreq = (x >> 16) & 1;
			p.syndrome = (uint8_t)((x >> 17) & 0x60) |
				     (uint8_t)((x >> 19) & 1 ? (x >> 20) % 5 : (x >> 20) & 0x1f);
			p.msn = (uint32_t)(x >> 24) & SR_PSN_MASK;
			x = sim_rnd(s);
			p.payload_len = p.op->flags & SR_ROCE_F_PAYLOAD ?
						(x % 4 ? 256 : (uint32_t)(x >> 8) % 300) :
						0;
			p.payload = junk;
			p.va = x % 3 ? SIM_MEM_BASE + ((x >> 12) % 4096) : x;
			p.rkey = x % 5 ? SIM_RKEY : (uint32_t)(x >> 32);
			p.dma_len = (uint32_t)(x >> 40) % (x % 2 ? 2048 : 0xffffffu);
			p.orig = x;
			if (p.op->flags & SR_ROCE_F_RESP)
				sr_rc_req_recv(&s->req, &p, s->now);
			else if ((p.opcode & SR_ROCE_CLASS_MASK) == SR_ROCE_RC)
				sr_rc_resp_recv(&s->resp, &p);
			s->now += 1000 + sim_rnd(s) % 400000;
			if (s->now >= sr_rc_req_deadline(&s->req))
				sr_rc_req_tick(&s->req, s->now);
			sim_pump(s);
			s->qn[0] = s->qn[1] = 0;	/* what was sent is lost */
			s->nlog = 0;
			if (s->req.state == SR_RC_REQ_ERROR) {
				/* start over with a fresh requester */
				sr_rc_req_fini(&s->req);
				assert_int_equal(sr_rc_req_init(&s->req, &ra, &sim_req_ops, s), 0);
			}
			if (s->resp.state == SR_RC_RESP_ERROR) {
				free(s->cur_rbuf);
				s->cur_rbuf = NULL;
				sr_rc_resp_fini(&s->resp);
				assert_int_equal(sr_rc_resp_init(&s->resp, &sa, &sim_resp_ops, s), 0);
			}
		}
		for (uint32_t i = 1; i < s->ncq; i++)
			assert_true(s->cq_id[i] > s->cq_id[i - 1]);
		for (uint32_t i = 0; i < s->ncq; i++)
			st[s->cq_st[i] <= IBV_WC_GENERAL_ERR ? s->cq_st[i] : IBV_WC_GENERAL_ERR]++;
		rcvd += s->nrcv;
		sim_free(s);
	}
	printf("random input: %u success, %u flushed, %u remote access, %u invalid request, "
	       "%u remote op, %u retry exceeded, %u RNR retry exceeded; %llu receives\n",
	       st[IBV_WC_SUCCESS], st[IBV_WC_WR_FLUSH_ERR], st[IBV_WC_REM_ACCESS_ERR],
	       st[IBV_WC_REM_INV_REQ_ERR], st[IBV_WC_REM_OP_ERR], st[IBV_WC_RETRY_EXC_ERR],
	       st[IBV_WC_RNR_RETRY_EXC_ERR], (unsigned long long)rcvd);
	/* the nonsense reached the completion paths, not just the drop counters */
	assert_true(st[IBV_WC_SUCCESS] && st[IBV_WC_WR_FLUSH_ERR] && st[IBV_WC_REM_ACCESS_ERR] &&
		    st[IBV_WC_REM_INV_REQ_ERR] && st[IBV_WC_REM_OP_ERR] && rcvd);
}

/* ---- many seeds over a lossy link ---- */

/* Totals over the seeds, printed at the end to show the link really misbehaved. */
static struct {
	uint64_t pkts, retrans, timeouts, seq_naks, implied, rnr, dup_reads, dup_atomics, dups;
} tot;

static void one_seed(uint64_t seed)
{
	struct sr_rc_req_attr ra;
	struct sr_rc_resp_attr sa;
	static const uint32_t windows[] = { 2, 4, 8, 16, 64 };
	const uint32_t nwr = 90;
	uint32_t psn, nfa = 0, ncs = 0, fa_seen = 0, rcv = 0, wslot = 0;
	uint64_t fa_val = 0, cs_val = 0;
	struct sim *s;

	sim_attrs(&ra, &sa, 0);
	{	/* draw the attributes from the seed */
		struct sim tmp = { .rnd = seed * 0x9E3779B97F4A7C15ull + 7 };

		psn = (uint32_t)(sim_rnd(&tmp) % 3 ? 0xffffff - sim_rnd(&tmp) % 200 :
						     sim_rnd(&tmp) & SR_PSN_MASK);
		ra.sq_psn = sa.rq_psn = psn;
		ra.window = windows[sim_rnd(&tmp) % 5];
		ra.max_rd_atomic = sa.max_dest_rd_atomic = 1 + sim_rnd(&tmp) % 4;
		ra.sq_depth = 4 + sim_rnd(&tmp) % 16;
	}
	s = sim_new(&ra, &sa, seed);
	memset(s->mem + 120 * 1024, 0, 16);
	s->drop_pct[0] = s->drop_pct[1] = (unsigned int)(sim_rnd(s) % 8);
	s->dup_pct[0] = s->dup_pct[1] = (unsigned int)(sim_rnd(s) % 5);
	s->jitter = sim_rnd(s) % 3 ? sim_rnd(s) % 30000 : 0;
	if (sim_rnd(s) % 3 == 0) {	/* receives come slowly: RNR NAKs */
		s->rq_avail = 2;
		s->rq_refill_every = 40000;
		s->rq_refill = 3;
		s->rq_next_refill = 40000;
	}
	for (uint32_t posted = 0, rounds = 0; posted < nwr || s->ncq < nwr; rounds++) {
		assert_true(rounds < 10 * nwr);	/* each round completes one or times out */
		while (posted < nwr && sr_rc_req_outstanding(&s->req) < ra.sq_depth) {
			struct sr_rc_wr wr = { 0 };
			uint32_t k = (uint32_t)(sim_rnd(s) % 9);

			wr.length = (uint32_t)(sim_rnd(s) % (4 * 256 + 1));
			switch (k) {
			case 0:
			case 1:
				wr.op = SR_RC_WR_SEND;
				break;
			case 2:
				wr.op = posted % 2 ? SR_RC_WR_SEND_INV : SR_RC_WR_SEND_IMM;
				wr.imm = (uint32_t)posted;
				break;
			case 3:
			case 4:
				wr.op = k == 3 ? SR_RC_WR_WRITE : SR_RC_WR_WRITE_IMM;
				wr.imm = (uint32_t)posted;
				wr.remote_addr = SIM_MEM_BASE + 128 * 1024 + (wslot++ % 100) * 1040;
				wr.rkey = SIM_RKEY;
				break;
			case 5:
			case 6:
				wr.op = SR_RC_WR_READ;
				wr.remote_addr = SIM_MEM_BASE + sim_rnd(s) % (64 * 1024);
				wr.rkey = SIM_RKEY;
				break;
			case 8:	/* succeeds exactly when executed exactly once */
				wr.op = SR_RC_WR_CMP_SWAP;
				wr.length = 8;
				wr.remote_addr = SIM_MEM_BASE + 120 * 1024 + 8;
				wr.rkey = SIM_RKEY;
				wr.compare = ncs;
				wr.swap_add = ncs + 1;
				ncs++;
				break;
			default:
				wr.op = SR_RC_WR_FETCH_ADD;
				wr.length = 8;
				wr.remote_addr = SIM_MEM_BASE + 120 * 1024;
				wr.rkey = SIM_RKEY;
				wr.swap_add = 1;
				nfa++;
				break;
			}
			assert_int_equal(sim_post(s, wr), 0);
			posted++;
		}
		sim_run(s, s->ncq + 1, s->now + 2000 * MS);
		assert_true(s->now < 100000 * MS);
		/* check what completed: in order, successful, with the right data */
		for (; fa_seen < s->ncq; fa_seen++) {
			uint32_t id = (uint32_t)s->cq_id[fa_seen];
			const struct sr_rc_wr *w = &s->wr[id];

			if (s->cq_id[fa_seen] != fa_seen || s->cq_st[fa_seen] != IBV_WC_SUCCESS)
				fail_msg("seed %llu: completion %u is wr %llu status %d",
					 (unsigned long long)seed, fa_seen,
					 (unsigned long long)s->cq_id[fa_seen], s->cq_st[fa_seen]);
			if (w->op == SR_RC_WR_READ)
				assert_memory_equal(s->data[id],
						    s->mem + (w->remote_addr - SIM_MEM_BASE),
						    w->length);
			if (w->op == SR_RC_WR_FETCH_ADD)
				assert_int_equal(s->orig[id], fa_val++);
			if (w->op == SR_RC_WR_CMP_SWAP)
				assert_int_equal(s->orig[id], cs_val++);
		}
	}
	assert_int_equal(s->ncq, nwr);
	/* receives: SEND*, WRITE_IMM, in order, each once */
	for (uint32_t id = 0; id < nwr; id++) {
		const struct sr_rc_wr *w = &s->wr[id];

		if (w->op == SR_RC_WR_WRITE || w->op == SR_RC_WR_WRITE_IMM)
			assert_memory_equal(s->mem + (w->remote_addr - SIM_MEM_BASE), s->data[id],
					    w->length);
		if (w->op == SR_RC_WR_SEND || w->op == SR_RC_WR_SEND_IMM ||
		    w->op == SR_RC_WR_SEND_INV) {
			check_recv(s, rcv, id);
			assert_int_equal(s->rcv[rcv].info.with_imm, w->op == SR_RC_WR_SEND_IMM);
			assert_int_equal(s->rcv[rcv].info.with_inv, w->op == SR_RC_WR_SEND_INV);
			if (w->op == SR_RC_WR_SEND_IMM)
				assert_int_equal(s->rcv[rcv].info.imm, id);
			if (w->op == SR_RC_WR_SEND_INV)
				assert_int_equal(s->rcv[rcv].info.inv_rkey, id);
			rcv++;
		}
		if (w->op == SR_RC_WR_WRITE_IMM) {
			assert_true(rcv < s->nrcv);
			assert_true(s->rcv[rcv].info.is_write);
			assert_int_equal(s->rcv[rcv].info.imm, id);
			assert_int_equal(s->rcv[rcv].info.byte_len, w->length);
			rcv++;
		}
	}
	assert_int_equal(s->nrcv, rcv);
	assert_int_equal(s->natomic_exec, nfa + ncs);
	tot.pkts += s->req.stats.pkts;
	tot.retrans += s->req.stats.retrans_pkts;
	tot.timeouts += s->req.stats.timeouts;
	tot.seq_naks += s->req.stats.seq_naks;
	tot.implied += s->req.stats.implied_naks;
	tot.rnr += s->req.stats.rnr_naks;
	tot.dup_reads += s->resp.stats.dup_reads;
	tot.dup_atomics += s->resp.stats.dup_atomics;
	tot.dups += s->resp.stats.dups;
	{
		uint64_t v;

		memcpy(&v, s->mem + 120 * 1024, 8);
		assert_int_equal(v, fa_val);	/* each FETCH_ADD executed once */
		memcpy(&v, s->mem + 120 * 1024 + 8, 8);
		assert_int_equal(v, cs_val);
	}
	sim_free(s);
}

static void test_lossy_seeds(void **state)
{
	const char *e = getenv("SR_RC_SEEDS");
	uint64_t n = e ? strtoull(e, NULL, 0) : 300;

	(void)state;
	for (uint64_t seed = 1; seed <= n; seed++)
		one_seed(seed);
	printf("%llu seeds: %llu request packets, %llu resent; %llu timeouts, %llu sequence "
	       "NAKs, %llu implied NAKs, %llu RNR NAKs; responder: %llu duplicates, %llu READs "
	       "re-executed, %llu atomics replayed\n",
	       (unsigned long long)n, (unsigned long long)tot.pkts,
	       (unsigned long long)tot.retrans, (unsigned long long)tot.timeouts,
	       (unsigned long long)tot.seq_naks, (unsigned long long)tot.implied,
	       (unsigned long long)tot.rnr, (unsigned long long)tot.dups,
	       (unsigned long long)tot.dup_reads, (unsigned long long)tot.dup_atomics);
	/* each mechanism was exercised somewhere */
	if (n >= 100)
		assert_true(tot.timeouts && tot.seq_naks && tot.implied && tot.rnr &&
			    tot.dup_reads && tot.dup_atomics);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_psn),
		cmocka_unit_test(test_timers),
		cmocka_unit_test(test_seq_nak_go_back_n),
		cmocka_unit_test(test_ack_timeout),
		cmocka_unit_test(test_retry_exhaustion),
		cmocka_unit_test(test_rnr_then_success),
		cmocka_unit_test(test_rnr_exhaustion),
		cmocka_unit_test(test_rnr_infinite),
		cmocka_unit_test(test_rnr_write_imm),
		cmocka_unit_test(test_dup_read),
		cmocka_unit_test(test_read_implied_nak),
		cmocka_unit_test(test_dup_atomic),
		cmocka_unit_test(test_remote_access_error),
		cmocka_unit_test(test_invalid_request_length),
		cmocka_unit_test(test_inflight_bound),
		cmocka_unit_test(test_long_message_small_window),
		cmocka_unit_test(test_psn_wrap),
		cmocka_unit_test(test_responder_direct),
		cmocka_unit_test(test_responder_sizes_ack_every),
		cmocka_unit_test(test_requester_nak_status),
		cmocka_unit_test(test_requester_flush),
		cmocka_unit_test(test_requester_post_in_callback),
		cmocka_unit_test(test_random_input),
		cmocka_unit_test(test_lossy_seeds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
