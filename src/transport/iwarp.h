/* SPDX-License-Identifier: MIT */
/*
 * iWARP over a kernel TCP socket: the per-connection state shared by the transmit
 * (iwarp_tx.c), receive (iwarp_rx.c) and life-cycle (iwarp_conn.c) files.
 *
 * Threads: the receive side runs on libibverbs' engine thread, or in a thread polling one of
 * the QP's CQs (iwarp_poll.c), one at a time under rx_lock. The transmit side runs
 * in whichever thread holds tx_lock: the application thread that posted (sq_kick) or the
 * engine thread (socket writable, Read Request arrived, first FPDU arrived). Payload is sent
 * from registered memory, except small Sends and Writes, which are copied into the transmit
 * batch so that several share a sendmsg() (SR_IW_STAGE_MSG). Received payload is copied out of
 * the receive side's staging buffer, or, the rest of a large one, received straight into
 * registered memory.
 */
#ifndef SR_TRANSPORT_IWARP_H
#define SR_TRANSPORT_IWARP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/sr_tunables.h"
#include "engine/sr_engine.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"
#include "transport/sr_xport.h"
#include "verbs/sr_limits.h"
#include "verbs/sr_obj.h"

/* A message's bytes in registered memory: SGEs resolved to process addresses. */
struct sr_iw_buf {
	uint32_t n;
	uint64_t total;
	struct {
		uint8_t *p;
		uint64_t len;
		struct sr_mr *mr; /* reference held until sr_iw_buf_release(); NULL for inline */
	} span[SR_MAX_SGE];
};

/* Resolve sges with access `need`; returns SR_ACC_OK or the first failure (nothing held). */
enum sr_access_result sr_iw_buf_init(struct sr_iw_buf *b, const struct sr_pd *pd,
				     const struct ibv_sge *sge, uint32_t n, int need);
void sr_iw_buf_inline(struct sr_iw_buf *b, uint8_t *p, uint64_t len);
void sr_iw_buf_release(struct sr_iw_buf *b);
/* iovecs for [off, off+len): returns the count used (<= max) */
int sr_iw_buf_iov(const struct sr_iw_buf *b, uint64_t off, uint64_t len, struct iovec *iov,
		  int max);
/* Address of byte `off`, how many bytes are contiguous from there and their region (NULL
 * for inline bytes). */
uint8_t *sr_iw_buf_at(const struct sr_iw_buf *b, uint64_t off, uint64_t *contig,
		      struct sr_mr **mr);
/* sr_mr_enter() on every region of b (false, nothing entered: one was deregistered), and the
 * matching sr_mr_leave(). */
bool sr_iw_buf_enter(const struct sr_iw_buf *b);
void sr_iw_buf_leave(const struct sr_iw_buf *b);

/* A Read Request we received and must answer (responder side, IRD). */
struct sr_iw_rresp {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	uint8_t *src;
	struct sr_mr *mr; /* NULL for zero-length reads */
};

/* A Read Request we sent (requester side, ORD). wqe is NULL for an RTR zero-length read. */
struct sr_iw_rreq {
	struct sr_send_wqe *wqe;
	struct sr_iw_buf sink;
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	uint32_t placed;
};

/* FPDUs and iovecs per sendmsg(); one FPDU takes its header, up to SR_MAX_SGE payload
 * pieces and its trailer. */
#define SR_IW_BATCH     32
#define SR_IW_BATCH_IOV 160
/* A batch stops growing once it holds this much payload (two FPDUs at most on loopback's
 * 64 KiB MSS), so the kernel starts copying while we compute the next batch's CRCs. */
#define SR_IW_BATCH_BYTES 65536
_Static_assert(SR_IW_BATCH_IOV >= SR_MAX_SGE + 2, "a batch holds at least one FPDU");
/*
 * Small Sends and Writes share a batch: a message of at most SR_IW_STAGE_MSG bytes that fits
 * one FPDU is copied into the batch when it is built (under sr_mr_enter, like the CRC's
 * read), so several of them go out with one sendmsg() and none of them reads registered
 * memory during the call. They complete in order once the whole batch is in the socket.
 * Small Read Responses share a batch the same way (their IRD slots free once it is in the
 * socket), and so do consecutive Read Requests, which are headers only.
 */
#define SR_IW_STAGE_MSG   512
#define SR_IW_STAGE_BYTES 4096

/*
 * The FPDUs being written: consecutive FPDUs of one message, or several small messages, go
 * out with one sendmsg() (on a 1500-byte MTU path a 64 KiB Write is 46 FPDUs). About
 * 10 KiB, so a connection holds one only while it has something to send: taken when
 * transmission starts, given back when the send queue has nothing more for the socket. An
 * idle connection costs none.
 */
struct sr_iw_batch {
	uint8_t hdr[SR_IW_BATCH][SR_FPDU_HDR_MAX + SR_DDP_UNTAGGED_HDR_LEN +
				 SR_RDMAP_RREQ_HDR_LEN + 8];
	uint8_t trl[SR_IW_BATCH][SR_FPDU_TRAILER_MAX];
	struct iovec iov[SR_IW_BATCH_IOV];
	uint8_t stage[SR_IW_STAGE_BYTES];          /* copies of the small messages */
	struct sr_send_wqe *staged[SR_IW_BATCH];   /* their WQEs, in order */
};

enum sr_iw_tx_kind {
	SR_IW_TX_IDLE,
	SR_IW_TX_WQE,   /* a send WQE: Send, Write or Read Request */
	SR_IW_TX_RRESP, /* a Read Response */
	SR_IW_TX_CTRL,  /* RTR or Terminate: header-only FPDU */
};

/*
 * Which FPDUs may go out (tx_gate, under tx_lock). RFC 6581 wants the initiator's RTR first
 * and nothing from the responder before that arrives. On top of that the initiator waits
 * after its RTR until the peer shows that it processes FPDUs: Linux siw installs its receive
 * side only after sending its Reply, and drops what arrives in between without a later
 * wakeup, so a Send right behind the RTR can hang the connection.
 *
 * The first gate is chosen at attach (sr_iw_tx_gate_init: responder PEER_FIRST, peer-to-peer
 * initiator RTR, else OPEN); every change after that goes through sr_iw_tx_gate_set()
 * (iwarp_tx.c), which asserts this table in debug builds:
 *
 *   RTR         -> PEER_READY   the RTR is in the batch
 *   PEER_READY  -> OPEN         any segment from the peer, or the ready timer ran out
 *   PEER_FIRST  -> OPEN         the initiator's first segment arrived
 *   OPEN                        (stays)
 */
enum sr_iw_tx_gate {
	SR_IW_GATE_OPEN,        /* anything */
	SR_IW_GATE_RTR,         /* initiator: the RTR is next, nothing precedes it */
	SR_IW_GATE_PEER_READY,  /* initiator: RTR sent; the rest waits for any FPDU from the
				 * peer (the Read Response to a Read RTR) or the ready timer */
	SR_IW_GATE_PEER_FIRST,  /* responder: nothing before the initiator's first FPDU */
};

/*
 * How long the initiator waits after its RTR for a sign of life before it sends anyway
 * (docs/COMPATIBILITY.md). With a Read RTR the peer answers, usually within milliseconds
 * (siw: 0.1-20 ms, median about 2): the bound only covers a peer that is slow or does not
 * answer. A Write or Send RTR draws no answer, so there the wait is always served in full
 * unless the peer talks first; it is kept short.
 */
#define SR_IW_READY_READ_MS  200
#define SR_IW_READY_OTHER_MS 20

/*
 * Receiver not ready. A Send that finds no posted receive is held: the connection stops
 * reading its stream (TCP backpressure reaches the sender; everything behind the Send waits
 * with it, in order) until a receive is posted, or until the QP's rnr_retry x min_rnr_timer
 * bound runs out, which ends the stream with the Terminate of RFC 5040 (untagged buffer, no
 * buffer available). One state, written under tx_lock by the receive side (which also holds
 * rx_lock) and, once the receive side has ended, by the close of a Terminate's way out.
 * It starts READING (sr_iw_rx_init); every change goes through sr_iw_rx_state_set_locked()
 * (iwarp_rx.c), which asserts this table in debug builds:
 *
 *   READING     -> HELD         a Send found no receive and the QP allows a wait
 *   HELD        -> READING      its receive came, the bound ran out, or a disconnect
 *   READING     -> TERMINATING  a Terminate of ours waits for room in the socket
 *   TERMINATING                 (stays: the stream closes)
 */
enum sr_iw_rx_state {
	SR_IW_RXS_READING,
	SR_IW_RXS_HELD, /* the current segment is a Send whose receive is not posted yet */
	SR_IW_RXS_TERMINATING, /* we found an error and queued a Terminate: nothing more is
				* read; the stream closes once the Terminate is in the socket,
				* or at SR_IW_TERM_TIMEOUT_MS */
};
/*
 * Who reads the socket (iwarp_poll.c). ENGINE: the engine thread, on EPOLLIN. POLLED: a
 * thread polling one of the QP's CQs, EPOLLIN off in the engine until the lease runs out
 * or a CQ is armed. HANDBACK: a poller met the end of the fast path (EOF, reset, a protocol
 * error), or the application moved the QP to ERR (sr_iw_stop), and left the result in
 * rx_carried for the engine thread, which owns every close; nobody reads any more.
 * ENDED: the receive side is over (closing, or a Terminate on its way out): nobody reads.
 */
enum sr_iw_rx_owner {
	SR_IW_RXO_ENGINE,
	SR_IW_RXO_POLLED,
	SR_IW_RXO_HANDBACK,
	SR_IW_RXO_ENDED,
};
/* How long a poller keeps the socket without polling again (SOFTRDMA_POLL_LEASE_US). */
#define SR_IW_POLL_LEASE_US SR_DEFAULT_POLL_LEASE_US

/* With an SRQ no post tells this connection about new receives: look again this often. */
#define SR_IW_RNR_SRQ_POLL_MS 1

/*
 * Bounded ends (docs/ARCHITECTURE.md, "Every wait and its bound"). An orderly close
 * (rdma_disconnect: queued sends, FIN, the peer's FIN) gives up after SR_IW_CLOSE_TIMEOUT_MS:
 * a peer that never reads our queue or never sends its FIN must not hold the QP's flush and
 * DISCONNECTED for ever. A Terminate waits at most SR_IW_TERM_TIMEOUT_MS for room in a full
 * socket, without blocking anybody (the engine thread serves the other connections
 * meanwhile). When either runs out the stream is aborted (close_t, iwarp_conn.c).
 */
#define SR_IW_CLOSE_TIMEOUT_MS SR_DEFAULT_CLOSE_TIMEOUT_MS /* SOFTRDMA_CLOSE_TIMEOUT_MS */
#define SR_IW_TERM_TIMEOUT_MS SR_DEFAULT_TERM_TIMEOUT_MS   /* SOFTRDMA_TERM_TIMEOUT_MS */
/*
 * A peer-to-peer responder's wait for the initiator's RTR, its first FPDU, which RFC 6581
 * wants right behind the Reply: without it within this bound the stream is ended (a FIN).
 * Without peer-to-peer (MPA rev 1) the initiator's application sends first whenever it
 * wants, and that wait has no bound.
 */
#define SR_IW_FIRST_FPDU_TIMEOUT_MS 10000

/*
 * How the transmit direction ends (tx_end, under tx_lock). Transitions, all through
 * sr_iw_tx_end_set() (iwarp_tx.c), which asserts them in debug builds:
 *
 *   from \ to     FIN_QUEUED  FIN_SENT  TERM_QUEUED  TERM_SENT  TERM_FIN  DEAD
 *   OPEN           disconnect  peer FIN  error found      -         -      any
 *   FIN_QUEUED         -       drained,  error found      -         -      any
 *                                 peer FIN
 *   FIN_SENT           -          -          -            -         -      any
 *   TERM_QUEUED        -       peer FIN      -         its turn     -      any
 *   TERM_SENT          -          -          -            -      written,  any
 *                                                                 peer FIN
 *   TERM_FIN           -          -          -            -         -      any
 *   DEAD               -          -          -            -         -      (stays)
 *
 * "drained": the send queue and the Read Responses owed are done and no Read of ours is
 * outstanding (or the responder never got the first FPDU, when nothing may be sent at all).
 * "any": the socket failed, a source region vanished inside an FPDU, the peer's Terminate
 * arrived, a bound ran out, the stream closes. New FPDUs are built only in OPEN, FIN_QUEUED
 * and TERM_QUEUED (then only the Terminate); the batch being written is finished in any
 * state but DEAD. A FIN is sent once: in FIN_SENT and TERM_FIN it is out; DEAD answers a
 * peer's FIN with one more shutdown (harmless) as the stream closes anyway.
 */
enum sr_iw_tx_end {
	SR_IW_TXE_OPEN,
	SR_IW_TXE_FIN_QUEUED,  /* orderly close asked: our FIN follows the queue */
	SR_IW_TXE_FIN_SENT,    /* our FIN is in the socket: nothing more enters it */
	SR_IW_TXE_TERM_QUEUED, /* a Terminate overtakes all not yet started (not the RTR) */
	SR_IW_TXE_TERM_SENT,   /* the Terminate is in the batch: the stream's last FPDU */
	SR_IW_TXE_TERM_FIN,    /* the Terminate is in the socket, our FIN behind it */
	SR_IW_TXE_DEAD,        /* socket failed or closing: nothing enters it */
};

/*
 * The connection's life (life, under sr_iw_fd_lock; the engine thread and a detach that has
 * stopped it read it without):
 *
 *   LIVE --sr_iw_conn_close--> CLOSING --cb.closed returned--> CLOSED --detach--> freed
 *                                 |
 *                                 +--detach from inside cb.closed--> CLOSING_FREE --> freed
 *   LIVE --detach (QP destroyed or reset)--> closed without flush or callback --> freed
 */
enum sr_iw_life {
	SR_IW_LIFE_LIVE,
	SR_IW_LIFE_CLOSING,      /* sr_iw_conn_close() runs: socket going, cb.closed may run */
	SR_IW_LIFE_CLOSING_FREE, /* ... and the QP was destroyed inside cb.closed: the close
				  * frees the connection when the callback returns */
	SR_IW_LIFE_CLOSED,       /* stream over, callback done; freed at detach */
};

/*
 * Who asked the stream to end (end_ask, under sr_iw_fd_lock). A disconnect asks for an
 * orderly close; an abort (QP to ERR, a bound ran out, a local failure) cuts the stream, so
 * the EOF or reset that follows is not the orderly end. Both may happen, in either order:
 * a cut after a disconnect still closes without a fatal async event.
 *
 *   NONE -disconnect-> ASKED -abort-> ASKED_CUT
 *   NONE -abort-> CUT -disconnect-> ASKED_CUT
 */
enum sr_iw_end_ask {
	SR_IW_ASK_NONE,
	SR_IW_ASK_DISCONNECT,
	SR_IW_ASK_CUT,
	SR_IW_ASK_DISCONNECT_CUT,
};

struct sr_iw_conn;

/*
 * What the lower files (iwarp_poll.c, iwarp_rx.c, iwarp_tx.c) need of the connection's life
 * cycle, which iwarp_conn.c owns (the descriptor lock, end_ask): iwarp_conn.c sets
 * c->conn_ops at attach, so those files call up through it and never name a function of a
 * file above them (the order at the end of this header).
 */
struct sr_iw_conn_ops {
	/* End the stream abortively (the engine then closes it); any thread, also under
	 * tx_lock. */
	void (*fail_stream)(struct sr_iw_conn *c);
	/* Whether the application asked for an orderly close (any thread). */
	bool (*disconnect_asked)(struct sr_iw_conn *c);
};

struct sr_iw_conn {
	struct sr_qp *qp;
	const struct sr_iw_conn_ops *conn_ops; /* set at attach (iwarp_conn.c) */
	int fd;
	uint32_t epoch;              /* the engine's epoch at attach: another one means the
				      * parent's connection, seen in a fork()ed child */
	bool initiator;
	struct sr_mpa_conn mpa;
	struct sr_conn_cb cb;
	struct sr_engine_handler h;

	pthread_mutex_t tx_lock;     /* everything under "tx" below */
	/* tx */
	enum sr_iw_tx_gate tx_gate;
	bool tx_want_out;            /* EPOLLOUT armed (what the engine was told, not state) */
	enum sr_iw_tx_end tx_end;    /* how the transmit direction ends (table above) */
	bool tx_first_out;           /* one-way milestone: a first batch (an initiator's RTR)
				      * is wholly in the socket; only an abort reads it */
	uint32_t mulpdu;
	uint32_t mss_age;
	uint32_t send_msn, rreq_msn; /* last used, per queue (first is 1) */
	/* The batch being written (NULL while there is nothing to send) and where it is. */
	struct sr_iw_batch *fp;
	int fp_n;                    /* FPDUs in the batch */
	size_t fp_bytes;             /* their payload */
	int fp_iovcnt, fp_iovpos;
	uint32_t fp_stage_used;      /* bytes of fp->stage taken */
	int fp_nstaged;              /* WQEs in fp->staged, to complete once it is written */
	uint32_t fp_nrresp;          /* Read Responses copied into the batch (the first of the
				      * resp ring), to leave the ring once it is written */
	bool fp_busy;
	/*
	 * Completion order (docs/ARCHITECTURE.md, "Completing sends"): set before each
	 * sendmsg() and cleared, still under tx_lock, once what that call completes is in the
	 * CQ. The receive side reads it (sr_iw_tx_settle) before it completes an incoming
	 * Send: while set, bytes of ours may be in the socket uncompleted, and the peer may be
	 * answering them. Atomic: read without tx_lock.
	 */
	atomic_bool tx_uncompleted;
	bool fp_data;                /* its payload comes from the message in progress (c->src,
				      * or cur_resp for a Read Response): enter its regions */
	/* the message being cut into FPDUs */
	enum sr_iw_tx_kind kind;
	struct sr_send_wqe *wqe;
	struct sr_iw_buf src;
	struct sr_ddp_segmenter seg;
	bool seg_last_sent;
	struct sr_iw_rresp cur_resp;
	/* Read Responses owed (ring of resp_cap = IRD entries, allocated at the first Read
	 * Request: IRD goes up to max_qp_rd_atom, and most connections are never read from);
	 * rx produces, tx consumes */
	struct sr_iw_rresp *resp;
	uint32_t resp_cap, resp_head, resp_count;
	/* Read Requests outstanding (ring of rreq_cap = ORD entries, allocated at the first
	 * Read, as most connections never issue one); rx consumes, tx produces */
	struct sr_iw_rreq *rreq;
	uint32_t rreq_cap, rreq_head, rreq_count;
	/* Terminate to send */
	uint8_t term_buf[SR_TERM_FPDU_MAX];
	int term_len;

	/* The initiator's ready timer, or a peer-to-peer responder's bound on the wait for the
	 * RTR (an engine timer). Cancelled by the receive side when the peer's first segment
	 * opens the gate, else at close; its own callback never cancels it, so detach (which
	 * stops the receive side first) can wait for that callback. */
	struct sr_engine_timer ready_t;

	/* Receiver not ready (see enum sr_iw_rx_state). rnr_t is an engine timer: it resumes
	 * the held connection (armed at once by a post, periodically with an SRQ) or ends the
	 * wait at rx_rnr_deadline (CLOCK_MONOTONIC ns; UINT64_MAX: without end). */
	enum sr_iw_rx_state rx_state;
	uint64_t rx_rnr_deadline;
	struct sr_engine_timer rnr_t;

	/* Bounds an orderly close (armed by disconnect) or a Terminate's way out (armed when the
	 * receive side queued one into a full socket); at expiry the stream is aborted. */
	struct sr_engine_timer close_t;

	/* rx (engine thread or a poller, under rx_lock) */
	struct sr_fpdu_rx rx;
	bool rx_first_seen;           /* the gate needs a look only at the first segment */
	struct sr_recv_wqe *rx_rwqe;  /* receive being filled by the current Send message */
	struct sr_iw_buf rx_rbuf;
	uint8_t *rx_dst;              /* placement base of the current segment */
	struct sr_iw_rreq *rx_read;   /* Read Request the current Read Response answers */
	struct sr_mr *rx_wmr;         /* MR of the Write segment being placed: kept apart from
				       * rx_rbuf, which a Send message may still be filling */
	bool rx_discard;              /* zero-length RTR segment: nothing to place */
	/* Staging buffer (SR_IW_RX_STAGE bytes): what one recvmsg() read ahead of the parser,
	 * [rx_st_pos, rx_st_len) not taken yet. Allocated when a read needs it, freed once it
	 * is empty when sr_iw_rx returns: an idle connection holds none. */
	uint8_t *rx_st;
	uint32_t rx_st_pos, rx_st_len;
	bool rx_after_direct;         /* the last read placed payload in place (sr_iw_rx_stage_len) */
	bool rx_tx_due;               /* a Read Request or Response came while more was staged:
				       * transmit once the staged bytes are parsed, so that the
				       * Responses (or further Requests) share a batch */

	/*
	 * Poll-mode progress (iwarp_poll.c; docs/ARCHITECTURE.md, "Progress in the application's
	 * thread"). rx_lock guards the receive side (the rx_* fields above and below) against a
	 * thread polling a CQ: the engine callback takes it, a poller only try-locks it. Lock
	 * order: rx_lock, then tx_lock. rx_owner is written under both (its changes re-arm the
	 * engine's interest, which the transmit side also sets under tx_lock), read under either.
	 */
	pthread_mutex_t rx_lock;
	enum sr_iw_rx_owner rx_owner;
	int rx_carried;               /* SR_IW_RXO_HANDBACK: what sr_iw_rx returned, or that
				       * the QP went to ERR (iwarp_conn.c) */
	_Atomic uint64_t poll_last_ns; /* last poll (CLOCK_MONOTONIC): renews the lease */
	uint64_t poll_lease_us;       /* SOFTRDMA_POLL_LEASE_US; 0: no poll mode */
	struct sr_engine_timer lease_t; /* takes rx_lock: never cancelled under it */


	/* Written under sr_iw_fd_lock (iwarp_conn.c), which any thread may take. */
	enum sr_iw_life life;
	enum sr_iw_end_ask end_ask;
	int close_err;
};

/*
 * The files of the transport depend one way, each calling only those below it:
 *
 *   iwarp_conn.c   life cycle: attach, disconnect, abort, stop, close, detach; the socket
 *                  callback; the xops and the registration (sr_xport_register)
 *   iwarp_poll.c   poll-mode progress: who reads the socket (rx_owner), the lease
 *   iwarp_rx.c     the receive side: parser, placement, receiver not ready (rx_state)
 *   iwarp_tx.c     the transmit side: gate, batches, tx_end; the socket's epoll interest
 *   iwarp_buf.c    messages as spans of registered memory
 *
 * What a lower file needs from iwarp_conn.c goes through c->conn_ops.
 */

/* iwarp_conn.c's services to the files below it (struct sr_iw_conn_ops). */
static inline void sr_iw_fail_stream(struct sr_iw_conn *c)
{
	c->conn_ops->fail_stream(c);
}

static inline bool sr_iw_disconnect_asked(struct sr_iw_conn *c)
{
	return c->conn_ops->disconnect_asked(c);
}

/* iwarp_poll.c: poll-mode progress (xops->poll, xops->poll_release) and its set-up */
void sr_iw_poll_init(struct sr_iw_conn *c);
bool sr_iw_poll(struct sr_qp *qp);
void sr_iw_poll_release(struct sr_qp *qp);
/* rx_lock held: a new owner, with the engine's interest to match (takes tx_lock). */
void sr_iw_rx_owner_set_locked(struct sr_iw_conn *c, enum sr_iw_rx_owner o);
/* Receive passes pollers ran, process-wide (tests, stats). */
extern _Atomic unsigned long sr_iw_poll_passes;

/*
 * iwarp_rx.c: handle readable socket; returns 0, or when the stream is over:
 * SR_IW_RX_EOF (the peer's FIN between FPDUs), SR_IW_RX_RESET (a reset between FPDUs, see
 * sr_iw_ready) or a negative errno.
 */
#define SR_IW_RX_EOF   1
#define SR_IW_RX_RESET 2
int sr_iw_rx(struct sr_iw_conn *c);
/* Set up the receive side's state and resume timer (attach, before the engine sees c). */
void sr_iw_rx_init(struct sr_iw_conn *c);
/* xops->rq_kick: a receive was posted; a held Send may go on (any thread). */
void sr_iw_rx_kick(struct sr_qp *qp);
/* tx_lock held: move rx_state (asserts the table at enum sr_iw_rx_state in debug builds).
 * The caller tells the engine what the socket is wanted for now. */
void sr_iw_rx_state_set_locked(struct sr_iw_conn *c, enum sr_iw_rx_state to);

/* iwarp_tx.c */
void sr_iw_tx_progress(struct sr_iw_conn *c);        /* takes tx_lock */
/*
 * Before the receive side completes an incoming message: every send WQE whose bytes are in
 * the socket is completed first (waits for tx_lock only while a sendmsg()'s completions
 * are still being made; one atomic load otherwise). rx_lock may be held, no verbs lock.
 */
void sr_iw_tx_settle(struct sr_iw_conn *c);
/* tx_lock held: move tx_end (asserts the table above in debug builds). */
void sr_iw_tx_end_set(struct sr_iw_conn *c, enum sr_iw_tx_end to);
/* tx_lock held: nothing more enters the socket, not even a FIN (the stream is closing). */
void sr_iw_tx_kill_locked(struct sr_iw_conn *c);
/* tx_lock held: our FIN now (shutdown SHUT_WR), behind whatever is in the socket. */
void sr_iw_tx_fin_locked(struct sr_iw_conn *c);
/* tx_lock held: nothing but the batch being written goes out any more (a Terminate is the
 * last FPDU, or the socket is dead); an orderly FIN may still follow the queue otherwise. */
static inline bool sr_iw_tx_ended(const struct sr_iw_conn *c)
{
	return c->tx_end == SR_IW_TXE_TERM_SENT || c->tx_end == SR_IW_TXE_TERM_FIN ||
	       c->tx_end == SR_IW_TXE_DEAD;
}
void sr_iw_tx_progress_locked(struct sr_iw_conn *c);
void sr_iw_queue_terminate(struct sr_iw_conn *c, const struct sr_term_info *t);
/*
 * The first gate (enum sr_iw_tx_gate) from c->initiator and c->mpa, and its bound: the
 * initiator's ready timer after the RTR (ready_ms) or a peer-to-peer responder's wait for
 * the RTR. Attach, before the engine sees c; 0 or a negative errno (no timer).
 */
int sr_iw_tx_gate_init(struct sr_iw_conn *c, unsigned int ready_ms);
/* The peer showed it is ready (first segment in, or the ready timer): let queued FPDUs
 * go. Engine thread; takes tx_lock. */
void sr_iw_tx_open_gate(struct sr_iw_conn *c);
/* Drop the gate's timer (receive callback, or close once the receive side is stopped). */
void sr_iw_ready_timer_stop(struct sr_iw_conn *c);
/*
 * The socket's epoll interest, the one place it is computed: the receive side's (EPOLLIN |
 * EPOLLRDHUP while it reads and the engine owns the input: rx_state, rx_owner) and EPOLLOUT
 * while the transmit side waits for room (tx_want_out). All under tx_lock.
 */
/* Tell the engine what both sides want from the socket now (unless the transmit side has
 * ended or the handler is gone). */
void sr_iw_interest_sync_locked(struct sr_iw_conn *c);
/* A Terminate waits for room in a full socket (rx_state TERMINATING): EPOLLOUT alone, even
 * though the transmit side has ended. */
void sr_iw_tx_await_room_locked(struct sr_iw_conn *c);

#endif
