/* SPDX-License-Identifier: MIT */
/*
 * RC responder: the receiving half of a reliable connection, as pure logic. It checks each
 * request's PSN against the expected one, executes new requests in order through the
 * owner's callbacks, answers duplicates without executing them twice, and queues the
 * responses (ACK, NAK, RNR NAK, READ responses, ATOMIC ACK) for the owner to pull and send.
 * docs/WIRE.md §R10.
 *
 * Use:
 *   sr_rc_resp_init(&s, &attr, &ops, ctx)       once; sr_rc_resp_fini() at the end
 *   sr_rc_resp_recv(&s, &pkt)                   per parsed request packet for this QP
 *   while (sr_rc_resp_next(&s, &tx) == 1)       build tx.hdr; a READ response's payload is
 *       send it                                 tx.len bytes at tx.va under tx.rkey
 * The owner should drain sr_rc_resp_next() after each sr_rc_resp_recv(): a request that
 * arrives while the response queue is full is dropped (the requester sends it again), and
 * a READ response's bytes are read when the packet is pulled. Not thread-safe.
 */
#ifndef SR_ROCE_RC_RESP_H
#define SR_ROCE_RC_RESP_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "roce/packet.h"

/* Rights an R_Key must grant (sr_rc_resp_ops.rkey_check). */
enum {
	SR_RC_ACCESS_WRITE = 1,
	SR_RC_ACCESS_READ = 2,
	SR_RC_ACCESS_ATOMIC = 4,
};

/* A receive work request finished (sr_rc_resp_ops.recv_done). */
struct sr_rc_recv_info {
	enum ibv_wc_status status;	/* SUCCESS, or why the message failed */
	bool is_write;		/* RDMA WRITE with immediate: no bytes went to the receive */
	bool with_imm, with_inv;
	uint32_t imm;		/* ImmDt as read big-endian (pkt.imm) */
	uint32_t inv_rkey;	/* SEND with Invalidate: the R_Key to invalidate */
	uint32_t byte_len;	/* SEND: bytes placed; WRITE with immediate: the RETH length */
};

/*
 * The owner's side. Errors are negative errno values; each maps to a NAK:
 * -EMSGSIZE (message longer than the receive buffer) and -EINVAL give "invalid request",
 * -EACCES (and any other from rkey_check or write_data) "remote access error", anything
 * else "remote operational error".
 */
struct sr_rc_resp_ops {
	/* A message that consumes a receive begins: take the next posted receive. -EAGAIN
	 * when none is posted (RNR NAK, nothing else changes). */
	int (*recv_begin)(void *ctx);
	/* SEND payload bytes for [off, off + len) of the receive taken. */
	int (*recv_data)(void *ctx, uint32_t off, const uint8_t *p, uint32_t len);
	/* The receive taken is complete (or failed, info->status). */
	void (*recv_done)(void *ctx, const struct sr_rc_recv_info *info);
	/* May @len bytes at @va be accessed under @rkey with SR_RC_ACCESS_* @access? */
	int (*rkey_check)(void *ctx, uint32_t rkey, uint64_t va, uint64_t len,
			  unsigned int access);
	/* WRITE payload to @va (already checked by rkey_check). */
	int (*write_data)(void *ctx, uint32_t rkey, uint64_t va, const uint8_t *p, uint32_t len);
	/* Execute an atomic at @va (checked, 8-byte aligned), storing the value found. */
	int (*atomic)(void *ctx, uint32_t rkey, uint64_t va, bool cmp_swap, uint64_t compare,
		      uint64_t swap_add, uint64_t *orig);
};

struct sr_rc_resp_attr {
	uint32_t mtu;			/* path MTU: 256 ... 4096 */
	uint32_t dqpn;			/* the peer's QPN */
	uint16_t pkey;
	uint32_t rq_psn;		/* first expected PSN */
	uint8_t min_rnr_timer;		/* RNR timer code sent in RNR NAKs */
	uint8_t max_dest_rd_atomic;	/* saved READ/atomic requests (0: refused) */
	uint32_t ack_every;		/* ACK after this many requests without AckReq; 0: never */
};

/* sr_rc_resp.msg when no SEND or WRITE is in progress (SR_ROCE_K_SEND is 0). */
#define SR_RC_MSG_NONE 0xff

enum sr_rc_resp_state {
	SR_RC_RESP_RUN,
	SR_RC_RESP_ERROR,	/* a fatal NAK was queued; requests are ignored */
};

/* A READ or atomic remembered to answer its duplicates. */
struct sr_rc_res {
	uint8_t kind;		/* 0 (free), SR_ROCE_K_READ_REQ, SR_ROCE_K_ATOMIC */
	uint32_t psn, npsn, msn;
	uint64_t va;
	uint32_t rkey, len;
	uint64_t orig;		/* atomic: the value returned */
};

/* A queued response. */
struct sr_rc_out {
	uint8_t kind;		/* SR_ROCE_K_ACK, SR_ROCE_K_READ_RESP, SR_ROCE_K_ATOMIC_ACK */
	uint8_t syndrome;
	uint32_t psn, msn;
	uint64_t orig;
	uint64_t va;		/* READ response: what is left to send */
	uint32_t rkey, len, off;
};

/* One packet to send: headers in @hdr; a READ response carries @len bytes at @va. */
struct sr_rc_resp_tx {
	struct sr_roce_pkt hdr;
	uint64_t va;
	uint32_t rkey, len;
};

struct sr_rc_resp_stats {
	uint64_t reqs;			/* requests executed (packets) */
	uint64_t dups, dup_reads, dup_atomics;	/* duplicates answered */
	uint64_t seq_naks, rnr_naks, fatal_naks, acks;
	uint64_t dropped;		/* ignored: out of sequence after the NAK, unknown
					 * duplicates, full response queue, after an error */
};

struct sr_rc_resp {
	struct sr_rc_resp_attr attr;
	const struct sr_rc_resp_ops *ops;
	void *ctx;
	enum sr_rc_resp_state state;
	uint32_t epsn;		/* expected PSN */
	uint32_t msn;		/* messages completed, 24 bits */
	bool nak_sent;		/* NAKed (sequence or RNR) at epsn: no second NAK */
	uint8_t msg;		/* message in progress: SR_ROCE_K_SEND, SR_ROCE_K_WRITE or SR_RC_MSG_NONE */
	bool have_recv;		/* a receive was taken for it */
	uint32_t msg_off;	/* bytes placed so far */
	uint64_t w_va;		/* WRITE in progress: RETH */
	uint32_t w_rkey, w_len;
	uint32_t unacked;	/* requests executed since the last ACK queued */
	struct sr_rc_res *res;	/* ring of max_dest_rd_atomic */
	uint32_t res_next;
	struct sr_rc_out *out;	/* ring of out_cap */
	uint32_t out_cap, out_head, out_tail;
	struct sr_rc_resp_stats stats;
};

/* Returns 0, -EINVAL, -ENOMEM. */
int sr_rc_resp_init(struct sr_rc_resp *s, const struct sr_rc_resp_attr *attr,
		    const struct sr_rc_resp_ops *ops, void *ctx);
void sr_rc_resp_fini(struct sr_rc_resp *s);

/* A parsed request packet for this QP (responses and non-RC packets are ignored). */
void sr_rc_resp_recv(struct sr_rc_resp *s, const struct sr_roce_pkt *pkt);

/* The next response to send: 1 and @tx filled, 0 when none is queued. */
int sr_rc_resp_next(struct sr_rc_resp *s, struct sr_rc_resp_tx *tx);

#endif
