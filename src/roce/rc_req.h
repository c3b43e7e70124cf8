/* SPDX-License-Identifier: MIT */
/*
 * RC requester and completer: the sending half of a reliable connection, as pure logic.
 * It turns posted work requests into packets, takes the responses (ACK, NAK, RNR NAK, READ
 * responses, ATOMIC ACK), retransmits go-back-N, and completes the work requests in order.
 * No sockets, threads or clock reads: the owner (the RoCE transport) passes the time in,
 * pulls the packets to send, feeds the responses received, and asks when to call
 * sr_rc_req_tick() next. docs/WIRE.md §R10.
 *
 * Use:
 *   sr_rc_req_init(&r, &attr, &ops, ctx)        once; sr_rc_req_fini() at the end
 *   sr_rc_req_post(&r, &wr)                     per work request
 *   while (sr_rc_req_next(&r, now, &tx) == 1)   build tx.hdr (sr_roce_build), payload is
 *       send it                                 bytes [tx.off, tx.off + tx.len) of tx.wr
 *   sr_rc_req_recv(&r, &pkt, now)               per parsed response for this QP
 *   sr_rc_req_tick(&r, now)                     when now >= sr_rc_req_deadline(&r)
 * Completions, READ data and atomic results come back through @ops, from inside post,
 * recv and tick. Not thread-safe: the owner serialises all calls for one QP.
 */
#ifndef SR_ROCE_RC_REQ_H
#define SR_ROCE_RC_REQ_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "roce/packet.h"

/* Times are nanoseconds on any monotonic clock of the owner's choice. */
#define SR_RC_NEVER UINT64_MAX

/* The retry counts that mean "forever": only rnr_retry has one (IBTA; rxe also takes
 * retry_cnt 7 as forever, we do not). */
#define SR_RC_RNR_RETRY_INFINITE 7

/* Local ACK timeout of the QP attribute @timeout: 4.096 us * 2^timeout, 0 = no timeout
 * (SR_RC_NEVER). Values above 31 are taken as 31. */
uint64_t sr_rc_ack_timeout_ns(uint8_t timeout);

/* The RNR NAK timer of the 5-bit code @code (IBTA table: 0 = 655.36 ms, 1 = 10 us ...
 * 31 = 491.52 ms). */
uint64_t sr_rc_rnr_timer_ns(uint8_t code);

enum sr_rc_wr_op {
	SR_RC_WR_SEND,
	SR_RC_WR_SEND_IMM,
	SR_RC_WR_SEND_INV,
	SR_RC_WR_WRITE,
	SR_RC_WR_WRITE_IMM,
	SR_RC_WR_READ,
	SR_RC_WR_CMP_SWAP,
	SR_RC_WR_FETCH_ADD,
};

/* A work request as the engine needs it; the local buffers stay with the owner. */
struct sr_rc_wr {
	uint64_t wr_id;
	uint8_t op;		/* enum sr_rc_wr_op */
	bool solicited;		/* SE on the last packet (SEND*, WRITE_IMM) */
	uint32_t length;	/* message bytes; atomics: 8 */
	uint64_t remote_addr;	/* WRITE, READ, atomics */
	uint32_t rkey;
	uint32_t imm;		/* SEND_IMM, WRITE_IMM: ImmDt; SEND_INV: the R_Key to invalidate */
	uint64_t compare;	/* CMP_SWAP */
	uint64_t swap_add;	/* CMP_SWAP: swap; FETCH_ADD: add */
};

struct sr_rc_req_ops {
	/* READ response bytes for [off, off + len) of @wr's local buffer. */
	void (*read_data)(void *ctx, const struct sr_rc_wr *wr, uint32_t off, const uint8_t *p,
			  uint32_t len);
	/* The original value an atomic found at the target. */
	void (*atomic_orig)(void *ctx, const struct sr_rc_wr *wr, uint64_t orig);
	/* @wr is done; called in posting order. */
	void (*complete)(void *ctx, const struct sr_rc_wr *wr, enum ibv_wc_status status);
};

struct sr_rc_req_attr {
	uint32_t mtu;		/* path MTU, payload bytes: 256, 512, 1024, 2048 or 4096 */
	uint32_t dqpn;		/* the peer's QPN */
	uint16_t pkey;
	uint32_t sq_psn;	/* first PSN */
	uint8_t timeout;	/* local ACK timeout attribute, 0 = none */
	uint8_t retry_cnt;	/* 0..7, transport retries before IBV_WC_RETRY_EXC_ERR */
	uint8_t rnr_retry;	/* 0..7, 7 = forever */
	uint8_t max_rd_atomic;	/* READ/atomic requests outstanding at once */
	uint32_t window;	/* PSNs between the oldest unacknowledged and the next to send;
				 * 0 picks SR_RC_WINDOW_DEFAULT */
	uint32_t sq_depth;	/* work requests posted and not yet completed */
};

#define SR_RC_WINDOW_DEFAULT 64
#define SR_RC_WINDOW_MAX 4096

enum sr_rc_req_state {
	SR_RC_REQ_RUN,
	SR_RC_REQ_RNR_WAIT,	/* RNR NAKed: sending resumes at the RNR deadline */
	SR_RC_REQ_ERROR,	/* a work request failed; every other one was flushed */
};

struct sr_rc_wqe {
	struct sr_rc_wr wr;
	uint32_t first_psn;	/* valid when psn_set */
	uint32_t npsn;		/* PSNs the message takes (READ: one per response packet) */
	uint32_t rcvd;		/* READ: response bytes received in order */
	bool psn_set;
};

/* One packet to send: headers in @hdr (for sr_roce_build), payload from @wr's buffer. */
struct sr_rc_req_tx {
	struct sr_roce_pkt hdr;
	const struct sr_rc_wr *wr;	/* valid until the next call into the engine */
	uint32_t off, len;		/* payload: bytes [off, off + len) of the message */
};

struct sr_rc_req_stats {
	uint64_t pkts, retrans_pkts;	/* packets produced; those sent more than once */
	uint64_t timeouts, seq_naks, rnr_naks;	/* received / happened */
	uint64_t implied_naks;		/* went back for a lost READ or atomic answer */
	uint64_t dropped;		/* responses ignored (stale, duplicate, malformed) */
	uint32_t max_inflight;		/* most PSNs ever outstanding */
};

struct sr_rc_req {
	struct sr_rc_req_attr attr;
	const struct sr_rc_req_ops *ops;
	void *ctx;
	enum sr_rc_req_state state;
	struct sr_rc_wqe *q;	/* ring of attr.sq_depth */
	uint32_t head, cur, tail;	/* counters; index = counter % sq_depth */
	uint32_t cur_off;	/* bytes of wqe[cur] already sent in this pass */
	uint32_t snd_psn;	/* PSN of the next packet */
	uint32_t max_psn;	/* one past the highest PSN ever assigned */
	uint32_t sent_psn;	/* one past the highest PSN ever sent */
	uint32_t una;		/* oldest PSN not yet acknowledged */
	uint32_t since_ackreq;	/* packets since the last with AckReq */
	uint8_t retry_left, rnr_left;
	bool rewound;		/* went back to una already, no progress since */
	bool flushing;		/* inside sr_rc_req_flush(): posts queue behind the rest */
	uint64_t ack_deadline, rnr_deadline;
	struct sr_rc_req_stats stats;
};

/* Returns 0, -EINVAL (bad attributes), -ENOMEM. */
int sr_rc_req_init(struct sr_rc_req *r, const struct sr_rc_req_attr *attr,
		   const struct sr_rc_req_ops *ops, void *ctx);
void sr_rc_req_fini(struct sr_rc_req *r);

/*
 * Queue @wr. Returns 0, -ENOMEM (sq_depth work requests outstanding) or -EINVAL (length
 * over 2^31, an atomic not of 8 bytes, READ/atomic with max_rd_atomic 0, unknown op). In
 * the error state the request is accepted and completed at once with IBV_WC_WR_FLUSH_ERR.
 */
int sr_rc_req_post(struct sr_rc_req *r, const struct sr_rc_wr *wr);

/* The next packet to send at @now: 1 and @tx filled, or 0 when nothing may go now (idle,
 * window or max_rd_atomic full, RNR wait, error). */
int sr_rc_req_next(struct sr_rc_req *r, uint64_t now, struct sr_rc_req_tx *tx);

/* A parsed response packet for this QP (ACK, ATOMIC ACK, READ response; others ignored). */
void sr_rc_req_recv(struct sr_rc_req *r, const struct sr_roce_pkt *pkt, uint64_t now);

/* When sr_rc_req_tick() has work to do, SR_RC_NEVER if never without a new event. */
uint64_t sr_rc_req_deadline(const struct sr_rc_req *r);

/* Run the ACK timeout and the RNR timer if due at @now. */
void sr_rc_req_tick(struct sr_rc_req *r, uint64_t now);

/* The owner moves the QP to the error state (ibv_modify_qp to IBV_QPS_ERR, the responder
 * side failed, the peer is gone): every request not completed completes with
 * IBV_WC_WR_FLUSH_ERR, in order, and so will any posted later. */
void sr_rc_req_flush(struct sr_rc_req *r);

/* PSNs sent and not acknowledged (what the window bounds). */
uint32_t sr_rc_req_inflight(const struct sr_rc_req *r);

/* Work requests posted and not yet completed. */
static inline uint32_t sr_rc_req_outstanding(const struct sr_rc_req *r)
{
	return r->tail - r->head;
}

#endif
