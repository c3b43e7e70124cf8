/* SPDX-License-Identifier: MIT */
/*
 * The contract between the verbs objects (src/verbs/) and a transport (src/transport/): the
 * one header both sides share. It names no wire: a transport's own headers (iWARP:
 * transport/iwarp.h and src/iwarp/) stay on its side, and the verbs layer includes none of them.
 *
 *   - which transport carries a device's QPs (enum sr_xport_kind), and how a transport makes
 *     itself available (struct sr_xport_desc, sr_xport_register);
 *   - what the verbs side asks of the transport attached to a QP (struct sr_xport_ops);
 *   - what the transport calls on the verbs side (sr_sq_next ... sr_qp_attach_xport in
 *     verbs/xport.c, the MR calls in verbs/mr.c), with the rules both keep.
 *
 * The objects themselves (struct sr_qp, sr_send_wqe, sr_recv_wqe, sr_mr) are in
 * verbs/sr_obj.h, whose lock order both sides follow. The CM's side of a transport (the
 * parameters it hands over at attach) is transport/sr_xport.h.
 */
#ifndef SR_XPORT_CONTRACT_H
#define SR_XPORT_CONTRACT_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

/* Which transport carries a device's QPs: selects the member of sr_xport_attach.u. */
enum sr_xport_kind {
	SR_XPORT_NONE,
	SR_XPORT_IWARP, /* MPA/DDP/RDMAP over a kernel TCP socket */
	SR_XPORT_KINDS,
};

/* What the CM hands to a QP's transport (transport/sr_xport.h); the verbs side only passes
 * it on. */
struct sr_xport_attach;

/* A transport, as it registers itself (sr_xport_register). */
struct sr_xport_desc {
	enum sr_xport_kind kind;
	/* Give the connection to qp (in RTS or about to be). 0 or a negative errno; on success
	 * the transport owns what the parameters hand over (the socket). */
	int (*attach)(struct ibv_qp *qp, const struct sr_xport_attach *a);
	/* Orderly close: finish queued sends, then end the stream; cb.closed follows. */
	void (*disconnect)(struct ibv_qp *qp);
};

/*
 * verbs/context.c: make a transport available to the devices of its kind. Called by each
 * transport from a constructor of the library, so before any thread exists; a kind is
 * registered once.
 */
void sr_xport_register(const struct sr_xport_desc *d);

struct sr_qp;
struct sr_pd;
struct sr_mr;
struct sr_send_wqe;
struct sr_recv_wqe;

/* What the verbs side asks of the transport attached to a QP. */
struct sr_xport_ops {
	/* New WQEs were posted to the SQ of a QP in RTS. No verbs lock held. */
	void (*sq_kick)(struct sr_qp *qp);
	/* A completion in error moved the QP to ERR: stop the stream now. Any thread, also
	 * from inside the transport (under its own locks). */
	void (*abort)(struct sr_qp *qp);
	/*
	 * The application moved the QP to ERR (ibv_modify_qp, or a post whose WR failed at the
	 * head of the queue): stop the stream, and return only once no byte will be placed for
	 * the QP any more, so the flush that follows reports buffers nothing touches again.
	 * Waits for a receive pass in progress. No verbs lock held; never from the transport.
	 */
	void (*stop)(struct sr_qp *qp);
	/* The QP is being destroyed: after return the transport never touches qp again. */
	void (*detach)(struct sr_qp *qp);
	/* A receive was posted to the QP's own RQ after sr_rq_take() had found none (the
	 * transport holds a Send for it). No verbs lock held. */
	void (*rq_kick)(struct sr_qp *qp);
	/*
	 * Progress from the calling thread (ibv_poll_cq found the CQ empty and not armed):
	 * returns whether it ran the receive side. Never waits for another thread that might
	 * hold a verbs lock or be inside an engine callback. Called under qp->poll_lock only.
	 */
	bool (*poll)(struct sr_qp *qp);
	/* The application armed a CQ of this QP: the engine takes the input back now.
	 * Under qp->poll_lock only. */
	void (*poll_release)(struct sr_qp *qp);
};

/* --- called by the transport (verbs/xport.c; no verbs locks held by the caller) --- */

/*
 * Next posted send WQE not yet handed out, or NULL. The WQE stays owned by the QP; the
 * transport reads it until it calls sr_sq_complete() on it. Only while the QP is in RTS.
 */
struct sr_send_wqe *sr_sq_next(struct sr_qp *qp);
/*
 * The transport is done with `wqe` (data handed to TCP for SEND/WRITE, response placed for
 * READ, or an error). Completions are generated in posting order: an earlier READ that is
 * still waiting holds back later completions. Signaled WQEs (or sq_sig_all, or errors) produce
 * a CQE with the right opcode and byte_len (byte_len meaningful for READ).
 * A status other than SUCCESS moves the QP to ERR and flushes the rest.
 */
void sr_sq_complete(struct sr_qp *qp, struct sr_send_wqe *wqe, enum ibv_wc_status status);
/*
 * The peer refused a request (it sent a Terminate): the oldest WQE handed to the transport
 * and not yet finished completes with `status` (a later sr_sq_complete() on it is ignored),
 * the QP goes to ERR and the rest is flushed. Returns false when no WQE was in flight (the
 * refused request had already completed locally, as RDMA Writes and Sends do once sent).
 * Never calls back into the transport.
 */
bool sr_sq_fail_oldest(struct sr_qp *qp, enum ibv_wc_status status);
/*
 * Take the next receive WQE (the QP's RQ or its SRQ) for an incoming Send; NULL if none
 * (iWARP: the stream is then broken). With an SRQ this may fire IBV_EVENT_SRQ_LIMIT_REACHED.
 * The caller owns the returned copy and must hand it back with sr_rq_complete().
 */
struct sr_recv_wqe *sr_rq_take(struct sr_qp *qp);
void sr_rq_complete(struct sr_qp *qp, struct sr_recv_wqe *wqe, enum ibv_wc_status status,
		    uint32_t byte_len, unsigned int wc_flags, uint32_t invalidated_rkey,
		    bool solicited);
/* Free a taken WQE without a completion (a transport dropping what it holds at detach). */
void sr_rq_release(struct sr_recv_wqe *wqe);
/*
 * How long an incoming Send may wait for a receive to be posted: rnr_retry × the
 * min_rnr_timer period, in microseconds; 0 = not at all; UINT64_MAX = without end
 * (rnr_retry 7). Takes the QP's lock.
 */
#define SR_RNR_FOREVER UINT64_MAX
uint64_t sr_qp_rnr_bound_us(struct sr_qp *qp);
/*
 * The connection failed or closed: the QP goes to ERR, every outstanding send and receive WQE
 * completes with IBV_WC_WR_FLUSH_ERR and an IBV_EVENT_QP_FATAL async event is posted when
 * `fatal`. Idempotent.
 */
void sr_qp_to_error(struct sr_qp *qp, bool fatal);
/* Post an affiliated async event about qp (e.g. IBV_EVENT_QP_ACCESS_ERR for the peer's
 * Terminate); destroy waits for its ack. */
void sr_qp_async_event(struct sr_qp *qp, enum ibv_event_type type);
/* Attach (ops and its per-QP state) or, with NULLs, detach a transport: a transport's
 * attach, after the CM's connection set-up. */
void sr_qp_attach_xport(struct sr_qp *qp, const struct sr_xport_ops *ops, void *xport);

/* --- memory regions (verbs/mr.c): STags from the wire and local SGEs alike --- */

/* lkey == rkey == the STag; MRs live in one process-wide table (struct sr_mr, verbs/sr_obj.h). */
enum sr_access_result {
	SR_ACC_OK = 0,
	SR_ACC_BAD_STAG,   /* no such STag (never registered, or deregistered) */
	SR_ACC_BOUNDS,     /* [to, to+len) not inside the region (or wraps) */
	SR_ACC_RIGHTS,     /* the region does not allow this access */
	SR_ACC_PD,         /* region belongs to another protection domain */
};

/*
 * Resolve `len` bytes at `to` (an iova-space address) of STag `stag` for an access that needs
 * all bits of `need` (IBV_ACCESS_REMOTE_WRITE / _REMOTE_READ for remote peers,
 * IBV_ACCESS_LOCAL_WRITE for local sinks, 0 for local reads). On SR_ACC_OK *out points at the
 * first byte and *mr holds a reference: release it with sr_mr_put() when done touching it.
 * len == 0 is valid for any `to` inside or at the end of the region (zero-length RDMA ops).
 */
enum sr_access_result sr_mr_resolve(uint32_t stag, const struct sr_pd *pd, uint64_t to,
				    uint64_t len, int need, struct sr_mr **mr, uint8_t **out);
void sr_mr_put(struct sr_mr *mr);
/*
 * Around every touch of a resolved region's memory (one non-blocking recvmsg, sendmsg or
 * copy; never a wait for the network): enter returns false once ibv_dereg_mr has started,
 * and the touch must not happen. ibv_dereg_mr returns only after every leave.
 */
bool sr_mr_enter(struct sr_mr *mr);
void sr_mr_leave(struct sr_mr *mr);

/* ------------------------------------ clarifications of the contract above --
 *
 * MR:
 *  - sr_mr_resolve() with pd == NULL skips the PD check (for callers that have checked it).
 *    Checks run in the order STag, PD, rights, bounds. A deregistered MR resolves as
 *    SR_ACC_BAD_STAG for local and remote use alike. No STag can be invalidated remotely
 *    (no memory windows or fast-registered MRs): Send with Invalidate is refused.
 *  - A local-read need (0) is always allowed; IBV_ACCESS_LOCAL_WRITE is needed for local sinks.
 *
 * Send queue:
 *  - An inline WQE has is_inline set, num_sge == 0 and the bytes in inline_data[0..length).
 *  - post_send validates the lkey of every non-inline SGE of non-zero length (0 for
 *    SEND/WRITE sources, IBV_ACCESS_LOCAL_WRITE for READ sinks). A WQE that fails is queued
 *    already completed with IBV_WC_LOC_PROT_ERR: sr_sq_next() never hands it out (it returns
 *    NULL while it is next), and when it reaches the head of the SQ its error completion is
 *    generated, the QP goes to ERR, the rest is flushed and the stream ends, on the thread
 *    that got it to the head (after every verbs lock has been dropped): the posting thread
 *    calls xops->stop, a thread inside sr_sq_complete() xops->abort.
 *    Zero-length SGEs are not checked: they move no data, the transport must skip them.
 *  - sr_sq_complete() on a WQE that is no longer outstanding (already flushed because the QP
 *    went to ERR or RESET) is ignored.
 *  - SQD: sr_sq_next() returns NULL (nothing new starts), WQEs already handed out complete as
 *    usual. IBV_EVENT_SQ_DRAINED is posted when the last one completes, if asked for.
 *
 * Receive queue:
 *  - sr_rq_take() works in RTR, RTS, SQD and SQE (NULL otherwise). The returned copy is heap
 *    memory: sr_rq_complete() frees it, sr_rq_release() frees it without a completion (for a
 *    transport that drops WQEs it holds at detach time).
 *  - sr_rq_complete() with an error status other than IBV_WC_WR_FLUSH_ERR moves the QP to ERR
 *    and flushes the rest (no abort: the transport reported it).
 *  - A taken WQE belongs to the QP (also one taken from an SRQ): when the QP goes to ERR it is
 *    flushed with the others, in order (taken ones first), and the transport's later
 *    sr_rq_complete() for it only frees the copy. RESET drops it the same way, silently.
 *
 * QP state and the transport:
 *  - sr_qp_to_error() never calls back into the transport. It posts IBV_EVENT_QP_FATAL only when
 *    it moves the QP into ERR (not when it was there already).
 *  - xops->detach is also called when the application moves the QP to RESET; afterwards xops
 *    and xport are NULL (a RESET QP has nothing to transport).
 *  - A QP with an SRQ entering ERR posts IBV_EVENT_QP_LAST_WQE_REACHED.
 */

#endif
