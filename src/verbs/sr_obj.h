/* SPDX-License-Identifier: MIT */
/*
 * Verbs objects of the RC data path (PD, MR, completion channel, CQ, SRQ, QP). The verbs side
 * owns the objects, their queues and the completion rules; the transport (src/transport/)
 * moves bytes and calls back here, through the calls of transport/sr_xport_contract.h.
 *
 * Locking: each object has its own mutex. Lock order: qp->lock, then srq->lock, then
 * cq->lock, then channel->lock. Transport callbacks are called WITHOUT any verbs lock held
 * and may run on the engine thread or in an application thread. Poll-mode progress (cq.c)
 * comes before all of these: cq->qps_lock, then qp->poll_lock, then the transport's own.
 */
#ifndef SR_OBJ_H
#define SR_OBJ_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/sr_list.h"
#include "verbs/sr_verbs.h"

/* ---------------------------------------------------------------- PD -- */

struct sr_pd {
	struct ibv_pd ibpd;
	atomic_int users; /* MRs, QPs, SRQs using it: dealloc fails with EBUSY while > 0 */
};

static inline struct sr_pd *to_sr_pd(struct ibv_pd *pd)
{
	return sr_container_of(pd, struct sr_pd, ibpd);
}

/* ---------------------------------------------------------------- MR -- */

/*
 * lkey == rkey == the STag: (index << SR_STAG_KEY_BITS) | key, never 0 (RFC 5040 STag =
 * index + key).
 * MRs live in one process-wide table so the transport can resolve an STag from the wire.
 */
/* A region's remote reachability: REVOKED from ibv_dereg_mr on, while references remain. */
enum sr_mr_state {
	SR_MR_LIVE,
	SR_MR_REVOKED,
};

struct sr_mr {
	struct ibv_mr ibmr;
	struct sr_pd *pd;
	uint8_t *base;       /* process address of byte 0 of the region */
	uint64_t iova;       /* address the region is known by (== addr unless reg_mr_iova) */
	uint64_t length;
	int access;          /* IBV_ACCESS_* */
	_Atomic(enum sr_mr_state) state;
	atomic_int busy;     /* transport touches of the memory in progress (sr_mr_enter) */
	atomic_int refs;     /* the table's + transport lookups in flight */
};

/* STag = index << SR_STAG_KEY_BITS | key (verbs/mr.c); lkey == rkey == STag. */
#define SR_STAG_KEY_BITS 12
#define SR_STAG_KEY_MASK ((1u << SR_STAG_KEY_BITS) - 1)

/* The MR calls the transport makes (sr_mr_resolve, sr_mr_put, sr_mr_enter, sr_mr_leave) are
 * in transport/sr_xport_contract.h. */

/* ----------------------------------------------------------- channel -- */

struct sr_comp_channel {
	struct ibv_comp_channel ch;  /* ch.fd: eventfd in semaphore mode, one count per event */
	pthread_mutex_t lock;
	struct sr_list events;       /* queued struct sr_cq_event */
	/* Queued events without an eventfd count: signalled by the thread that waits for them
	 * in ibv_get_cq_event as the engine's helper, which takes them itself (channel.c). */
	uint32_t uncounted;
	atomic_int users;            /* CQs: destroy fails with EBUSY while > 0 */
};

/* ---------------------------------------------------------------- CQ -- */

/*
 * A CQ's place on its channel's event list (verbs-private). Embedded in the CQ so that
 * signalling needs no allocation on the engine thread: `pending` events of this CQ are queued
 * and not yet fetched; the record is on the list while pending > 0. Protected by the
 * channel's lock.
 */
struct sr_cq_event {
	struct sr_list node;
	struct sr_cq *cq;
	uint32_t pending;
};

struct sr_cq {
	struct ibv_cq ibcq;          /* ibcq.mutex/cond/comp_events_completed used as upstream */
	pthread_mutex_t lock;
	struct ibv_wc *ring;
	uint32_t size, head;         /* ring capacity = ibcq.cqe */
	/* Entries in the ring; changed under lock, read without it by sr_poll_cq to tell an
	 * empty CQ without taking the lock the transport needs to push. */
	_Atomic uint32_t count;
	/* 0, or 1 + solicited_only; written under lock, read without it by the empty poll */
	_Atomic int armed;
	bool overflow;               /* reported once as IBV_EVENT_CQ_ERR */
	struct sr_comp_channel *chan;
	atomic_int users;            /* QPs/SRQs: destroy fails with EBUSY while > 0 */
	uint32_t comp_events;        /* events delivered to the channel (destroy waits for acks) */
	/* verbs-private */
	struct sr_cq_event chan_ev;  /* under chan->lock */
	atomic_int async_events;     /* CQ_ERR events posted, for destroy to wait on acks */
	/*
	 * Progress in the polling thread (docs/ARCHITECTURE.md, "Progress in the application's
	 * thread"): the QPs completing into this CQ (struct sr_qp_cq_link), round-robin from the
	 * head, under qps_lock; `polled` says a poll pass may have taken a connection's input
	 * from the engine, which arming hands back.
	 */
	pthread_mutex_t qps_lock;
	struct sr_list qps;
	atomic_bool polled;
	atomic_uint empty_polls;     /* unarmed empty polls in a row (sr_poll_cq) */
	atomic_ulong polled_wc;      /* completions pushed inside a poll pass (tests, stats) */
};

static inline struct sr_cq *to_sr_cq(struct ibv_cq *cq)
{
	return sr_container_of(cq, struct sr_cq, ibcq);
}

/*
 * Add a completion. Wakes the channel when the CQ is armed (solicited-only arming fires for
 * solicited completions and for any error completion). On overflow the entry is dropped and
 * an IBV_EVENT_CQ_ERR async event is posted. Safe from any thread.
 */
void sr_cq_push(struct sr_cq *cq, const struct ibv_wc *wc, bool solicited);

/* ------------------------------------------------------- work queues -- */

struct sr_send_wqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;   /* SEND, SEND_WITH_INV, RDMA_WRITE, RDMA_READ */
	unsigned int flags;          /* IBV_SEND_* */
	uint32_t num_sge;
	uint64_t length;             /* sum of SGE lengths (or inline length) */
	uint64_t remote_addr;        /* WRITE/READ */
	uint32_t rkey;               /* WRITE/READ */
	uint32_t invalidate_rkey;    /* SEND_WITH_INV */
	bool is_inline;              /* data copied into inline_data at post time */
	uint8_t *inline_data;        /* points into the slot, max_inline_data bytes */
	struct ibv_sge *sge;         /* points into the slot, max_send_sge entries */
	/* verbs bookkeeping, not for the transport */
	bool done;
	enum ibv_wc_status status;
	bool signaled;
};

struct sr_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint64_t length;             /* sum of SGE lengths */
	struct ibv_sge *sge;         /* points into the slot */
	/* verbs-private, used by the copies sr_rq_take hands out (under owner->lock) */
	struct sr_list node;         /* in owner->rq_taken until completed or flushed */
	struct sr_qp *_Atomic owner; /* NULL once flushed, dropped or the QP is destroyed */
	bool flushed;                /* already completed by a flush: completing it is a no-op */
};

/* --------------------------------------------------------------- SRQ -- */

struct sr_srq {
	struct ibv_srq ibsrq;
	pthread_mutex_t lock;
	struct sr_pd *pd;
	uint32_t max_wr, max_sge, limit;
	/* ring of receive WQEs */
	void *slots;
	size_t slot_size;
	uint32_t head, count;
	atomic_int users;            /* QPs */
	/* verbs-private */
	atomic_int async_events;     /* SRQ_LIMIT_REACHED posted, for destroy to wait on acks */
};

static inline struct sr_srq *to_sr_srq(struct ibv_srq *srq)
{
	return sr_container_of(srq, struct sr_srq, ibsrq);
}

/* ---------------------------------------------------------------- QP -- */

struct sr_qp;

/* A QP's place on the QP list of one of its CQs (two when the send and recv CQs differ). */
struct sr_qp_cq_link {
	struct sr_list node;
	struct sr_qp *qp;
	struct sr_cq *cq;
};

/*
 * An iWARP QP reaches RTS only over a connection (kernel siw refuses RTS without its LLP
 * socket, EINVAL): the CM claims a QP before it moves it there, or grants its context one
 * move when the application moves a QP of its own (rdma_init_qp_attr without id->qp).
 */
enum sr_qp_llp {
	SR_QP_LLP_NONE, /* no connection: RTS refused */
	SR_QP_LLP_CM,   /* the CM connects it: RTS allowed */
};

struct sr_qp {
	struct ibv_qp ibqp;
	pthread_mutex_t lock;
	struct sr_pd *pd;
	struct sr_cq *scq, *rcq;
	struct sr_srq *srq;          /* NULL: own RQ */
	struct ibv_qp_cap cap;       /* what we granted */
	bool sq_sig_all;
	int access;                  /* qp_access_flags */
	uint8_t max_rd_atomic;       /* ORD */
	uint8_t max_dest_rd_atomic;  /* IRD */
	/* Receiver not ready: how long an incoming Send may wait for a receive (the IB
	 * encodings of ibv_modify_qp(3); see sr_qp_rnr_bound_us) */
	uint8_t rnr_retry;           /* 0-6 tries, 7 = without end */
	uint8_t min_rnr_timer;       /* 0-31 */
	uint8_t timeout;             /* IBV_QP_TIMEOUT as set, reported by ibv_query_qp only */
	bool rq_wanted;              /* sr_rq_take() found the own RQ empty: kick on the next post */
	enum ibv_qp_state state;     /* mirrors ibqp.state */
	enum sr_qp_llp llp;          /* whether a connection may take it to RTS (qp_modify.c) */
	/* SQ ring: posted WQEs in order; [head, head+count) live, the first `started` of them
	 * handed to the transport */
	void *sq_slots;
	size_t sq_slot_size;
	uint32_t sq_head, sq_count, sq_started;
	/* RQ ring (unused with an SRQ) */
	void *rq_slots;
	size_t rq_slot_size;
	uint32_t rq_head, rq_count;
	/* transport attachment (NULL when none) */
	const struct sr_xport_ops *xops;
	void *xport;
	atomic_int async_events;     /* reported, for destroy to wait on acks */
	/* verbs-private */
	bool sqd_notify;             /* post IBV_EVENT_SQ_DRAINED once SQD has drained */
	struct sr_list rq_taken;     /* receive WQEs (own RQ or SRQ) the transport holds */
	uint32_t qpn_index;          /* slot in the process-wide QP number table */
	/* Poll-mode progress: a poller holds poll_lock (try-locked, under its CQ's qps_lock)
	 * while it reaches xport; detach holds it while the transport lets go, so a poller
	 * never sees a freed connection. */
	pthread_mutex_t poll_lock;
	struct sr_qp_cq_link cq_link[2]; /* [0] send CQ, [1] recv CQ (unused if the same) */
};

static inline struct sr_qp *to_sr_qp(struct ibv_qp *qp)
{
	return sr_container_of(qp, struct sr_qp, ibqp);
}

/* The transport's entry points into these objects (sr_sq_next, sr_sq_complete, sr_rq_take,
 * ...) are the verbs/transport contract: transport/sr_xport_contract.h. */

/* ------------------------------------------------------------- locks --
 *
 * Locks beyond the order at the top: the context's lock (async events) and a CQ's public
 * ibcq.mutex (event acks) are innermost; nothing is taken while holding them, except that
 * ibv_get_cq_event takes ibcq.mutex under channel->lock.
 */

/* ------------------------------------------------ verbs-private helpers -- */

/*
 * Object limits (sr_limits.h) are enforced per process: MR STags and QP numbers are
 * process-wide name spaces anyway, and a process is the unit that owns this soft device.
 */
static inline bool sr_count_get(atomic_int *cnt, int max)
{
	if (atomic_fetch_add(cnt, 1) >= max) {
		atomic_fetch_sub(cnt, 1);
		return false;
	}
	return true;
}

/* async_obj.c: affiliated async events of CQs, QPs and SRQs */
enum sr_async_kind {
	SR_ASYNC_NONE,
	SR_ASYNC_CQ,
	SR_ASYNC_QP,
	SR_ASYNC_SRQ,
};
enum sr_async_kind sr_async_kind(enum ibv_event_type type);
/* Post an event about obj (an ibv_cq/ibv_qp/ibv_srq) and count it in *posted. */
void sr_async_post_obj(struct ibv_context *ctx, enum ibv_event_type type, void *obj,
		       atomic_int *posted);
/*
 * Destroy path: drop the queued, not yet fetched events about obj, then wait (on the
 * object's public mutex/cond) until every fetched one has been acked.
 */
void sr_async_drain_obj(struct ibv_context *ctx, void *obj, atomic_int *posted,
			pthread_mutex_t *mutex, pthread_cond_t *cond, uint32_t *acked);

/* channel.c: queue one event of cq and count it on the fd (cq->lock held) */
void sr_chan_signal(struct sr_comp_channel *chan, struct sr_cq *cq);
/* channel.c: blocking ibv_get_cq_event calls that waited as the engine's helper (tests) */
extern atomic_ulong sr_chan_helped;
/* channel.c: forget the queued, unfetched events of cq (destroy) */
void sr_chan_forget(struct sr_comp_channel *chan, struct sr_cq *cq);

/* wq.c: queue bookkeeping shared by post.c, qp.c and the transport entry points */
static inline struct sr_send_wqe *sr_sq_slot(const struct sr_qp *qp, uint32_t i)
{
	return (struct sr_send_wqe *)((char *)qp->sq_slots +
				      (size_t)(i % qp->cap.max_send_wr) * qp->sq_slot_size);
}

static inline struct sr_recv_wqe *sr_rq_slot(const struct sr_qp *qp, uint32_t i)
{
	return (struct sr_recv_wqe *)((char *)qp->rq_slots +
				      (size_t)(i % qp->cap.max_recv_wr) * qp->rq_slot_size);
}

static inline struct sr_recv_wqe *sr_srq_slot(const struct sr_srq *srq, uint32_t i)
{
	return (struct sr_recv_wqe *)((char *)srq->slots + (size_t)(i % srq->max_wr) *
				      srq->slot_size);
}

/* A zeroed ring of n slots whose pages are committed as they are first written; NULL: no
 * memory. Free with the same n and slot_size. */
void *sr_ring_alloc(size_t n, size_t slot_size);
void sr_ring_free(void *ring, size_t n, size_t slot_size);
/* A ring of `n` receive slots for `nsge` SGEs each; returns the slot array or NULL. */
void *sr_recv_ring_alloc(uint32_t n, uint32_t nsge, size_t *slot_size);
/* Copy a receive WR into a slot (and point its sge at the slot's SGE array); the caller has
 * validated num_sge. */
void sr_recv_wqe_fill(struct sr_recv_wqe *w, const struct ibv_recv_wr *wr);
/*
 * qp->lock held. Move to ERR (if not there) and flush every outstanding WQE in posting order.
 * Returns true if the QP was not in ERR before.
 */
bool sr_qp_error_locked(struct sr_qp *qp);
/* qp->lock held: flush whatever is outstanding (QP in ERR). */
void sr_qp_flush_locked(struct sr_qp *qp);
/* qp->lock held: forget the receive WQEs the transport holds, completing them as flushed
 * first if `complete`; the transport's later sr_rq_complete() is then a no-op. */
void sr_qp_drop_taken_locked(struct sr_qp *qp, bool complete);
/* qp->lock held: drop every WQE without completions (RESET). */
void sr_qp_discard_locked(struct sr_qp *qp);
/*
 * qp->lock held: complete the in-order prefix of finished send WQEs. Returns true if that
 * completed an error and so moved the QP to ERR (the caller then calls xops->stop or, inside
 * the transport, xops->abort, unlocked).
 */
bool sr_sq_reap_locked(struct sr_qp *qp);
/* qp->lock held: post IBV_EVENT_SQ_DRAINED if SQD asked for it and nothing is in flight. */
void sr_qp_sqd_check_locked(struct sr_qp *qp);

/* post.c */
int sr_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int sr_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* srq.c */
int sr_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* cq.c */
int sr_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
/* A QP's CQ membership (create / destroy); removal waits for a poller on the QP. */
void sr_cq_add_qp(struct sr_qp *qp);
void sr_cq_del_qp(struct sr_qp *qp);
/* Let the transport go under qp->poll_lock (destroy, RESET): no poller meets it freed. */
void sr_qp_detach_polled(struct sr_qp *qp, const struct sr_xport_ops *xops);
int sr_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* qp.c */
struct ibv_qp *sr_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
/* The QP numbered qpn if it belongs to ctx, else NULL (sr_priv_ops.qp_by_num). */
struct ibv_qp *sr_qp_by_num(struct ibv_context *ctx, uint32_t qpn);
/* qp_modify.c: the CM's hold on a QP's way to RTS (struct sr_priv_ops) */
void sr_qp_llp_claim(struct ibv_qp *ibqp);
void sr_qp_llp_grant(struct ibv_context *ctx);

#endif
