/* SPDX-License-Identifier: MIT */
/*
 * librdmacm internals: event channels, ids and their connections.
 *
 * Threads. Application threads call the rdma_* API. librdmacm's own engine thread (its
 * private instance of engine/) runs listening sockets, TCP connects, MPA handshakes, timers
 * and the streams of QP-less connections. libibverbs' engine thread calls
 * sr_cm_link_closed() when an attached transport's stream ends.
 *
 * Locking. One process-wide mutex, sr_cm_lock, protects every id, channel queue and
 * connection object here; sr_cm_cond (with it) wakes rdma_destroy_id/rdma_migrate_id waiting
 * for acks. Never held while calling into libibverbs' QP/transport code (ibv_modify_qp,
 * priv_ops->*), while blocking in poll(), or across sr_engine_del() from an application
 * thread (the engine callback being waited for may itself need the lock).
 *
 * Connection objects (struct sr_cm_conn) are torn down by whoever "claims" them: setting
 * conn->dead under the lock. The claimer unlinks the conn from its id/listener in the same
 * critical section, then (unlocked) deregisters its handlers, closes its fds and frees it.
 * An engine callback that finds conn->dead set returns without touching anything else.
 *
 * Id states (enum sr_cm_state) follow the kernel's rdma_cm/iw_cm. Every change goes through
 * sr_cm_state_set(), whose table (state.c) holds exactly these, asserted in debug builds:
 *   IDLE -bind-> BOUND -resolve_addr-> [ADDR_QUERY ->] ADDR_RESOLVED -resolve_route->
 *   ROUTE_RESOLVED; a failed resolution (ADDR_ERROR) returns to BOUND
 *   ROUTE_RESOLVED -connect-> CONNECTING -> ESTABLISHED (QP) | RESPONDED (no QP) | FAILED
 *   RESPONDED -establish-> ESTABLISHED | FAILED, -disconnect-> DISCONNECTED
 *   IDLE|BOUND -listen-> LISTEN (back to BOUND if the engine refuses the socket); request
 *   ids go from IDLE to CONN_RECV at once -accept-> ESTABLISHED | FAILED, -reject-> FAILED
 *   ESTABLISHED -disconnect-> DISCONNECTING -closed-> DISCONNECTED (closed also from
 *   ESTABLISHED when the peer ends the stream, and from rdma_destroy_qp of the attached QP,
 *   whose transport then ends the stream without calling back); ESTABLISHED -> FAILED when
 *   the transport refuses the stream (attach)
 *   any but DESTROYING -destroy-> DESTROYING (no more events; waits for acks and in-flight
 *   calls)
 * A connection's phase (enum sr_cm_conn_phase) has its table in state.c too, the link's
 * state (enum sr_cm_link_state) in link.c.
 */
#ifndef SR_CM_PRIV_H
#define SR_CM_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include "cm/cm_core.h"
#include "engine/sr_engine.h"
#include "common/sr_common.h"
#include "common/sr_sockaddr.h"
#include "common/sr_tunables.h"
#include "common/sr_list.h"
#include "engine/sr_engine.h"
#include "iwarp/mpa.h"
#include "transport/sr_xport.h"
#include "verbs/sr_verbs.h"

/*
 * What librdmacm expects from libibverbs' private ops (verbs/sr_verbs.h, struct
 * sr_priv_ops): attach (given an SR_XPORT_IWARP struct sr_xport_attach: this CM speaks
 * MPA), disconnect, and
 *	struct ibv_qp *(*qp_by_num)(struct ibv_context *, uint32_t qpn);
 * for rdma_accept()/rdma_establish() on QPs the application created with ibv_create_qp
 * (conn_param->qp_num). Each may be NULL when the device's transport is not linked in: a
 * missing attach fails the connection (CONNECT_ERROR); a missing qp_by_num makes a non-zero
 * qp_num unusable (EINVAL). qp_num 0 with no QP on the id means "no QP at all": the CM then
 * keeps the socket itself (a QP-less connection, used by tests and by apps that only want
 * the handshake), reporting DISCONNECTED when either side ends it.
 */

/* Timeouts (ms). siw uses 5 s for a Request to arrive and 10 s for the Reply. */
#define SR_CM_REQUEST_TIMEOUT_MS 5000
/*
 * The initiator's TCP connection and the sending of its Request; then, as long again, the
 * peer's TCP acknowledging the Request (one it has not taken although TCP resent it fails
 * the connect, active.c).
 */
#define SR_CM_CONNECT_TIMEOUT_MS 10000
/*
 * Once the Request is out (and the peer's TCP has acknowledged it), the initiator's wait for
 * the Reply, and (the same bound) how long
 * a connect request may wait for the application's answer: SOFTRDMA_ACCEPT_TIMEOUT_MS, this
 * by default. siw gives the Reply 10 s, but a responder may do real work between its
 * CONNECT_REQUEST and rdma_accept (perftest -q 8 -s 4194304 fills 64 MiB with random()
 * there: seconds of CPU, beyond 10 s on a loaded machine). InfiniBand's CM answers that with
 * an MRA that stretches the initiator's wait to about 68 s, Chelsio's iWARP waits 60 s for
 * the Reply; MPA has no MRA, so the initiator simply waits as long. The held request is
 * given up after as long as the initiator waits (whose timer started earlier, so it
 * normally fires first: UNREACHABLE); one that still waits gets an MPA Reject.
 */
#define SR_CM_ACCEPT_TIMEOUT_MS SR_DEFAULT_ACCEPT_TIMEOUT_MS
/* SOFTRDMA_ACCEPT_TIMEOUT_MS, else SR_CM_ACCEPT_TIMEOUT_MS (conn.c: both sides arm it). */
unsigned int sr_cm_accept_timeout_ms(void);
/* A QP-less stream we shut down waits this long for the peer's FIN. */
#define SR_CM_DISCONNECT_TIMEOUT_MS 3000
/* Listen backlog bounds (net.rdma_ucm.max_backlog default). */
#define SR_CM_MAX_BACKLOG 1024
/* Half-open MPA handshakes one listener keeps at most, and from one source address; over
 * either bound the oldest slow one (Request not complete SR_CM_HANDSHAKE_SLOW_MS after its
 * accept, whatever it has sent) is dropped for the newcomer; a newcomer admitted over its
 * source's bound gets SR_CM_HANDSHAKE_SLOW_MS for its Request, and a source never holds
 * more than the burst bound (passive.c, sr_cm_make_room_locked). */
#define SR_CM_MAX_HANDSHAKES 1024
#define SR_CM_MAX_HANDSHAKES_PER_SOURCE 256
#define SR_CM_MAX_HANDSHAKES_PER_SOURCE_BURST 512
#define SR_CM_HANDSHAKE_SLOW_MS 200
/* Sockets the CM let go of that linger for the peer's FIN (conn.c), in the whole process;
 * beyond, a socket given up is reset at once. */
#define SR_CM_MAX_LINGERING 256
/* A listener whose accept() ran out of descriptors or memory rests this long. */
#define SR_CM_ACCEPT_PAUSE_MS 100
/* Event private data buffer (RDMA_MAX_PRIVATE_DATA). */
#define SR_CM_PD_MAX 256

/* ------------------------------------------------------------ devices -- */

/* One opened context per soft iWARP device, kept for the life of the process. */
struct sr_cm_dev {
	struct ibv_context *verbs;
	int ifindex;
	uint8_t max_resp_res;   /* queried max_qp_rd_atom, as a u8 */
	uint8_t max_init_depth; /* queried max_qp_init_rd_atom */
	struct ibv_pd *pd;      /* default PD (rdma_create_qp with pd NULL), lazily */
	int pd_users;
	struct sr_cm_dev *next;
};

/* 0 when devices exist; -ENODEV otherwise (checked once). */
int sr_cm_init(void);
/* Device (opened) of an interface; NULL + errno. */
struct sr_cm_dev *sr_cm_dev_by_ifindex(int ifindex);
/* Device behind one of our contexts; NULL if the context is not ours. */
struct sr_cm_dev *sr_cm_dev_by_verbs(struct ibv_context *verbs);
/* Device serving a local address (owner interface, else the route's); NULL + errno. */
struct sr_cm_dev *sr_cm_dev_for_local(const struct sockaddr *sa);
/*
 * The two above open a device they have not opened yet (ibv_open_device), which must not
 * happen under sr_cm_lock (devices.c says why). Under the lock: the interface serving a
 * local address (> 0; else 0 with errno), and the device of an interface if it is open
 * already (NULL otherwise: open it unlocked with sr_cm_dev_by_ifindex, then look again).
 */
int sr_cm_dev_ifindex_for_local(const struct sockaddr *sa);
struct sr_cm_dev *sr_cm_dev_find(int ifindex);
/* Default PD of the device, counted; put releases it when the last user goes. */
struct ibv_pd *sr_cm_dev_get_pd(struct sr_cm_dev *dev);
void sr_cm_dev_put_pd(struct sr_cm_dev *dev);
/* Private ops of the device's context, or NULL if it is not a softrdma context. */
const struct sr_priv_ops *sr_cm_priv_ops(struct ibv_context *verbs);

/* ------------------------------------------------------------ channels -- */

struct sr_cm_channel {
	struct rdma_event_channel ch; /* ch.fd: eventfd, count 1 while events are queued */
	struct sr_list queue;         /* struct sr_cm_event, FIFO; under sr_cm_lock */
	bool sync;                    /* private channel of one synchronous id */
	/* Threads inside rdma_get_cm_event (atomic: counted before sr_cm_lock is taken) and
	 * whether the channel was destroyed under them; see rdma_destroy_event_channel. */
	int waiters;
	bool dead;
	uint32_t epoch;               /* the CM engine's epoch at creation (fork: see below) */
};

static inline struct sr_cm_channel *to_sr_chan(struct rdma_event_channel *ch)
{
	return sr_container_of(ch, struct sr_cm_channel, ch);
}

struct sr_cm_id;

struct sr_cm_event {
	struct rdma_cm_event ev;  /* handed to the application */
	struct sr_list node;      /* channel queue */
	struct sr_cm_id *owner;   /* whose ack count it bumps: the listener for requests */
	uint8_t pd[SR_CM_PD_MAX];
};

struct sr_cm_channel *sr_cm_channel_new(bool sync);
/* Drops any events still queued and frees the channel; if a thread is still waiting in
 * rdma_get_cm_event, the fd and memory stay (that thread blocks for good, as a read of a
 * closed kernel channel does). */
void sr_cm_channel_free(struct sr_cm_channel *ch);

/* Event parameters for sr_cm_post(). */
struct sr_cm_evparam {
	const void *pd;
	size_t pd_len;
	uint8_t responder_resources;
	uint8_t initiator_depth;
};

/*
 * Queue an event for id on its channel (sr_cm_lock held). Dropped when the id is being
 * destroyed. For CONNECT_REQUEST id is the new id and listener its listener.
 */
void sr_cm_post(struct sr_cm_id *id, enum rdma_cm_event_type type, int status,
		const struct sr_cm_evparam *p);
int sr_cm_post_request(struct sr_cm_id *listener, struct sr_cm_id *req,
		       const struct sr_cm_evparam *p);
/*
 * Remove every queued event owned by id from ch (sr_cm_lock held), keeping the eventfd
 * count right. With to != NULL they move there instead (rdma_migrate_id). Request ids of
 * dropped CONNECT_REQUESTs are appended to *orphans (through their ->orphan_node).
 */
void sr_cm_chan_take(struct sr_cm_channel *ch, struct sr_cm_id *owner,
		     struct sr_cm_channel *to, struct sr_list *orphans);
/*
 * Sync ids: the ucma_complete() step. Acks the previous id->event, fetches the next event
 * of the id's private channel into id->event and maps a failing one to -1/errno
 * (REJECTED -> ECONNREFUSED). Returns 0 for async ids. Called without sr_cm_lock.
 */
int sr_cm_sync_wait(struct sr_cm_id *id);
/* Ack without the public NULL check; sr_cm_lock NOT held. */
void sr_cm_ack(struct sr_cm_event *e);

/* ----------------------------------------------------------------- ids -- */

enum sr_cm_state {
	SR_CM_IDLE,
	SR_CM_BOUND,
	SR_CM_ADDR_QUERY,    /* rdma_resolve_addr waiting for the next hop (resolve.c) */
	SR_CM_ADDR_RESOLVED,
	SR_CM_ROUTE_RESOLVED,
	SR_CM_LISTEN,
	SR_CM_CONNECTING,
	SR_CM_RESPONDED,     /* active, no QP: CONNECT_RESPONSE reported, establish pending */
	SR_CM_CONN_RECV,     /* passive: request delivered, accept/reject pending */
	SR_CM_ESTABLISHED,
	SR_CM_DISCONNECTING,
	SR_CM_DISCONNECTED,
	SR_CM_FAILED,        /* connect failed or rejected: not reusable */
	SR_CM_DESTROYING,
};

struct sr_cm_conn;
struct sr_cm_link;

/* How an id holds its local port (port_space.c). */
enum sr_cm_port_kind {
	SR_CM_PORT_NONE,   /* no port: unbound, or a request id (accepted ids use none) */
	SR_CM_PORT_BOUND,  /* explicit bind, listener: never shared but through REUSEADDR */
	SR_CM_PORT_ACTIVE, /* implicit bind at rdma_resolve_addr: shared by distinct tuples */
	SR_CM_PORT_KERNEL, /* implicit bind whose port the kernel picks at connect (port 0 and
			    * unlisted until then): every port we could choose was taken */
};

struct sr_cm_id {
	struct rdma_cm_id id;        /* the application's handle; must be first */
	enum sr_cm_state state;      /* written only through sr_cm_state_set() */
	struct sr_cm_channel *chan;  /* == to_sr_chan(id.channel) */
	bool sync;                   /* chan is private to this id */
	unsigned int reported;       /* events fetched by the application */
	unsigned int acked;
	int busy;                    /* calls working on the id unlocked (destroy waits) */
	struct sr_list node;         /* sr_cm_ids: every live id */

	/* address */
	int fd;                      /* bound or listening socket, -1 */
	enum sr_cm_port_kind port_kind; /* port_space.c: how the id holds route's src port */
	uint16_t port;               /* the port it holds, while port_kind != NONE */
	struct sr_cm_id *port_next;  /* next owner of that port */
	bool reuseaddr;
	int afonly;                  /* -1: system default */
	int tos;                     /* -1: not set */
	int user_timeout_ms;         /* TCP_USER_TIMEOUT from ACK_TIMEOUT; -1: not set */
	int ack_timeout;             /* ACK_TIMEOUT as given, for the QP's RTS; -1: not set */
	struct sr_cm_dev *dev;       /* device the id is bound to, NULL until known */
	/* The path rdma_resolve_addr found, watched for changes (netwatch.c); oif 0: none
	 * (a local destination, or not resolved). */
	struct {
		int oif;
		struct sockaddr_storage nh;
		uint8_t mac[32];
		unsigned int mac_len;
	} path;
	bool dev_removed;            /* DEVICE_REMOVAL reported: the id only awaits destroy */
	struct sr_cm_nwait *nwait;   /* resolve.c: the next-hop wait it is on (ADDR_QUERY) */
	struct sr_list nwait_node;
	uint64_t resolve_deadline;   /* CLOCK_MONOTONIC ns */

	/* listener */
	struct sr_engine_handler listen_h;
	struct sr_engine_timer accept_pause; /* accept() failed for lack of fds: resume later */
	int backlog;
	unsigned int queued_reqs;    /* CONNECT_REQUESTs queued, not yet fetched */
	unsigned int handshakes;     /* half-open MPA exchanges in progress */
	struct sr_list hs_list;      /* struct sr_cm_conn (passive handshakes) */

	/* request ids */
	struct sr_cm_id *listener;   /* while its CONNECT_REQUEST is not yet fetched */
	struct sr_list orphan_node;  /* scratch list for teardown */
	struct sr_mpa_params peer;   /* the peer's Request (passive) or Reply (active) */
	bool have_peer;

	/* connection */
	struct sr_cm_conn *conn;     /* socket while the CM owns it */
	struct sr_cm_link *link;     /* transport attachment */
	struct sr_mpa_local loc;     /* our MPA wishes */
	struct sr_mpa_params req;    /* the Request we sent (active) */
	struct sr_mpa_conn mpa;      /* negotiated */
	bool have_mpa;
	uint32_t qp_num;             /* connect()'s conn_param->qp_num (establish) */
	uint8_t rnr_retry;           /* connect/accept conn_param->rnr_retry_count, for RTS */
	bool disc_fetched;           /* DISCONNECTED was fetched by the app */

	/* qp.c: objects the library made for the app */
	bool own_send_cq, own_recv_cq;
	bool uses_default_pd;
	struct ibv_qp_init_attr *ep_attr; /* rdma_create_ep passive: per-request QP attrs */
};

static inline struct sr_cm_id *to_sr_id(struct rdma_cm_id *id)
{
	return sr_container_of(id, struct sr_cm_id, id);
}

/*
 * fork(): a channel (and every id on it) the parent created, seen in the child. Its
 * eventfd, sockets and engine are the parent's: the child's calls on it fail with EIO
 * before touching any (reading the eventfd would take the parent's events, a shutdown
 * would end the parent's connection); rdma_destroy_id leaves it alone.
 */
static inline bool sr_cm_chan_inherited(const struct sr_cm_channel *ch)
{
	return ch->epoch != sr_engine_epoch();
}

static inline bool sr_cm_id_inherited(struct rdma_cm_id *id)
{
	return id && sr_cm_chan_inherited(to_sr_id(id)->chan);
}

/* Return -1 with errno = err (err > 0). */
static inline int sr_cm_fail(int err)
{
	errno = err;
	return -1;
}

/* Allocate an id on channel (NULL: new private sync channel); sr_cm_lock NOT held. */
struct sr_cm_id *sr_cm_id_new(struct sr_cm_channel *chan, void *context,
			      enum rdma_port_space ps, enum ibv_qp_type qp_type);
struct sr_cm_id *sr_cm_id_new_locked(struct sr_cm_channel *chan, void *context,
				     enum rdma_port_space ps, enum ibv_qp_type qp_type);
/* Keep the id alive across an unlocked stretch (hold: lock held; unhold takes it). */
void sr_cm_id_hold(struct sr_cm_id *id);
void sr_cm_id_unhold(struct sr_cm_id *id);
/* Last step of every id's life, once nothing refers to it (lock NOT held). */
void sr_cm_id_release(struct sr_cm_id *id);
/* Bind the id to a device: id.verbs, id.port_num (sr_cm_lock held). */
void sr_cm_id_set_dev(struct sr_cm_id *id, struct sr_cm_dev *dev);
const char *sr_cm_state_str(enum sr_cm_state s);
/* state.c: move the id's state (lock held; asserts the table in debug builds). */
bool sr_cm_state_legal(enum sr_cm_state from, enum sr_cm_state to);
void sr_cm_state_set(struct sr_cm_id *id, enum sr_cm_state to);

/* --------------------------------------------------------- addressing -- */

/*
 * Bind id to addr: rdma_resolve_addr's implicit bind when active (route.addr.dst set), else
 * an explicit one. Creates the TCP socket; dev is the device of a specific address, found
 * by the caller (NULL: wildcard, loopback, or none). Returns 0 or a negative errno.
 * sr_cm_lock held.
 */
int sr_cm_bind_locked(struct sr_cm_id *id, const struct sockaddr *addr, bool active,
		      struct sr_cm_dev *dev);

/*
 * resolve.c (lock held): wait for the next hop nh on ifindex to become valid, at most
 * timeout_ms. Returns 1 when it already is (nothing waits), 0 when the id now waits in
 * ADDR_QUERY (ADDR_RESOLVED or ADDR_ERROR follow), or a negative errno.
 */
int sr_cm_resolve_nexthop_locked(struct sr_cm_id *id, int ifindex, const struct sockaddr *nh,
				 int timeout_ms);
/* Stop the id's wait, if any, without an event (destroy). */
void sr_cm_resolve_cancel_locked(struct sr_cm_id *id);

/*
 * netwatch.c: the CM's one rtnetlink subscription on librdmacm's engine, opened on first
 * use (lock held; 0 or a negative errno). It raises ADDR_CHANGE and DEVICE_REMOVAL itself
 * and passes neighbour news up to whoever registered for them (resolve.c's next-hop
 * waits), lock held: neigh for each neighbour update, lost when updates were lost.
 */
int sr_cm_netwatch_start_locked(void);
struct sr_neigh;
struct sr_cm_neigh_watcher {
	void (*neigh)(const struct sr_neigh *n);
	void (*lost)(void);
};
void sr_cm_netwatch_set_watcher_locked(const struct sr_cm_neigh_watcher *w);

/* --------------------------------------------------------- port space -- */

/*
 * port_space.c; every function with sr_cm_lock held. The rules are stated at the top of
 * that file. Binds create id->fd, set route.addr.src (with the port) and enter the id in
 * the process's port table; errors are negative errnos.
 */
/* rdma_bind_addr, listen's auto-bind: rule 1 for a given port, rule 2 for port 0. */
int sr_cm_port_bind_locked(struct sr_cm_id *id, const struct sockaddr *addr);
/* rdma_resolve_addr's implicit bind (route.addr.dst already set): src's port or rule 2. */
int sr_cm_port_bind_active_locked(struct sr_cm_id *id, const struct sockaddr *src);
/* rdma_listen: a reuse id must be alone on its port (rule 3); clears reuse. */
int sr_cm_port_listen_locked(struct sr_cm_id *id);
/*
 * connect() *fd to route.addr.dst. If the kernel finds the tuple taken (EADDRNOTAVAIL) and
 * the id's port was chosen implicitly, moves to another port (new socket in *fd) and tries
 * again. Returns 0, -EINPROGRESS or another negative errno.
 */
int sr_cm_port_connect_locked(struct sr_cm_id *id, int *fd);
/* The id gives its port up (destroy). Its socket is closed by whoever owns it. */
void sr_cm_port_release_locked(struct sr_cm_id *id);
/* The rules themselves, for tests: rule 1 (0 or -EADDRINUSE/-EADDRNOTAVAIL) and rule 2. */
int sr_cm_port_rule_explicit(const struct sockaddr *a, bool a_reuse, bool a_afonly,
			     const struct sockaddr *b, bool b_reuse, bool b_afonly);
bool sr_cm_port_rule_unique(const struct sockaddr *src_a, const struct sockaddr *dst_a,
			    const struct sockaddr *src_b, const struct sockaddr *dst_b);
/* Apply the id's TOS and ACK timeout (options.c) to a socket of its (lock held). */
void sr_cm_apply_sockopts(const struct sr_cm_id *id, int fd);

/* --------------------------------------------------------- connections -- */

/* A connection's phase; every change through sr_cm_conn_phase_set() (state.c, its table). */
enum sr_cm_conn_phase {
	SR_CONN_NEW,         /* made, not yet on the engine */
	SR_CONN_TCP_CONNECT, /* active: TCP handshake in progress */
	SR_CONN_SEND_REQ,    /* active: writing the Request */
	SR_CONN_READ_REPLY,  /* active: reading the Reply */
	SR_CONN_READ_REQ,    /* passive: reading the Request */
	SR_CONN_HELD,        /* frames done, waiting for accept/establish; nobody reads */
	SR_CONN_STREAM,      /* QP-less connection: the CM watches the stream for its end */
	SR_CONN_STREAM_SHUT, /* ... and we sent our FIN (rdma_disconnect): the peer's is due */
	SR_CONN_ABORT,       /* active: given up with the Request unacknowledged: closed with
			      * a reset, never a FIN behind it (active.c, sr_cm_active_wait_on) */
};

/* Bytes after an MPA frame that has just been read (sr_cm_conn_check_quiet). */
enum sr_cm_conn_tail {
	SR_CONN_TAIL_UNKNOWN,           /* not seen: check_quiet asks the socket */
	SR_CONN_TAIL_NONE,              /* the frame's peek saw nothing after it */
	SR_CONN_TAIL_BYTES,             /* ... saw the peer speaking out of turn */
};

struct sr_cm_conn;

/*
 * What a connection calls of its owner: the side that runs it (active.c, passive.c) and,
 * for a QP-less connection after the handshake, stream.c. The owner sets it (under
 * sr_cm_lock once the connection is on the engine); conn.c calls it on the engine thread,
 * without the lock, for a connection not yet claimed. Neither may be NULL.
 */
struct sr_cm_conn_ops {
	/* the socket has events (EPOLL*) */
	void (*io)(struct sr_cm_conn *c, uint32_t events);
	/* the deadline armed with sr_cm_conn_arm_timer passed */
	void (*timeout)(struct sr_cm_conn *c);
};

struct sr_cm_conn {
	struct sr_engine_handler sock;  /* .fd: the TCP socket */
	struct sr_engine_timer timer;   /* handshake / disconnect timeout */
	const struct sr_cm_conn_ops *ops; /* the owner's */
	enum sr_cm_conn_phase phase;
	bool dead;                      /* claimed for teardown */
	struct sr_cm_id *id;            /* owner, once there is one */
	struct sr_cm_id *listener;      /* passive handshake: the listener */
	struct sr_list node;            /* listener->hs_list, oldest first */
	struct sockaddr_storage peer;   /* passive: the peer's address, from accept4 */
	uint64_t accepted_ns;           /* passive handshake: when (CLOCK_MONOTONIC); active:
					 * when the Request went out */
	struct sr_mpa_hdr_info hi;
	bool hdr_done;                  /* hi holds the parsed header */
	enum sr_cm_conn_tail tail;      /* what followed the frame, when the read saw it */
	size_t off, len;                /* progress through buf */
	uint8_t buf[SR_MPA_RR_HDR_LEN + SR_MPA_PD_MAX];
};

/* state.c: move c's phase (lock held; asserts the table in debug builds) */
bool sr_cm_conn_phase_legal(enum sr_cm_conn_phase from, enum sr_cm_conn_phase to);
void sr_cm_conn_phase_set(struct sr_cm_conn *c, enum sr_cm_conn_phase to);

/* conn.c: the connection object (the layer above the id; it calls its owner via ops) */
struct sr_cm_conn *sr_cm_conn_new(int fd, const struct sr_cm_conn_ops *ops);
/*
 * (Re)arm c's deadline ms from now; at expiry the engine thread calls ops->timeout. All
 * connections share one timerfd: a connection costs the process exactly its socket. Any
 * thread, sr_cm_lock held or not. Returns 0 or a negative errno.
 */
int sr_cm_conn_arm_timer(struct sr_cm_conn *c, unsigned int ms);
/* A passive handshake joins its listener's list (lock held). */
void sr_cm_conn_join_listener(struct sr_cm_conn *c, struct sr_cm_id *listener);
/* The handshake leaves its listener for the request id, its owner from now on (lock held). */
void sr_cm_conn_hand_over(struct sr_cm_conn *c, struct sr_cm_id *id);
/* Claim c (sr_cm_lock held): marks it dead and unlinks it. Returns false if already dead. */
bool sr_cm_conn_claim(struct sr_cm_conn *c);
/*
 * Stop the engine watching c and drop its deadline; returns when no callback of c's runs
 * (except the caller's own, on the engine thread). Lock NOT held unless on the engine thread.
 */
void sr_cm_conn_quiesce(struct sr_cm_conn *c);
/* Tear down a claimed conn (lock NOT held, or on the engine thread). Closes the socket. */
void sr_cm_conn_destroy(struct sr_cm_conn *c);
/*
 * Read into c->buf until c->len bytes are there, never past the frame (the peer's next
 * bytes belong to the transport). Returns 1 when complete, 0 when more is needed, a
 * negative errno on error, -ECONNRESET at EOF.
 */
int sr_cm_conn_read(struct sr_cm_conn *c);
/* Read a whole Request/Reply frame: the header first, then its PD_Length. */
int sr_cm_conn_read_frame(struct sr_cm_conn *c, bool expect_reply);
/* Frame received completely: make sure the peer sent nothing beyond it (-EPROTO). */
int sr_cm_conn_check_quiet(struct sr_cm_conn *c);
/* Decode the frame in c->buf (header parsed into c->hi). */
int sr_cm_conn_parse(struct sr_cm_conn *c, struct sr_mpa_params *p, const uint8_t **ulp,
		     size_t *ulp_len);
/* Send a small frame on a non-blocking socket, all of it or an error. */
int sr_cm_send_frame(int fd, const uint8_t *buf, size_t len);
/* Send a rejecting Reply answering the Request peer (best effort). */
void sr_cm_send_reject(int fd, const struct sr_mpa_params *peer, const void *pd, size_t len);

/* conn.c: MPA parameters */
/* Our MPA wishes from a connect/accept conn_param (NULL: device maxima / peer's asks). */
void sr_cm_local_params(struct sr_cm_id *id, const struct rdma_conn_param *p,
			struct sr_mpa_local *loc);
/* Event parameters from the peer's MPA frame: its private data, IRD and ORD. */
void sr_cm_peer_evparam(struct sr_cm_id *id, const struct sr_mpa_params *peer,
			const uint8_t *ulp, size_t ulp_len, struct sr_cm_evparam *out);
/* Largest ULP private data for an MPA revision / enhanced block (u8 API limit: 255). */
static inline size_t sr_cm_pd_max(bool enhanced)
{
	return enhanced ? SR_MPA_ULP_PD_MAX_V2 : 255;
}

/* link.c: the QP side of a connection (above conn.c) */
/*
 * rdma_init_qp_attr's answer for the id (takes sr_cm_lock): the attributes for
 * qp_attr->qp_state from the negotiated connection. 0 or a positive errno.
 */
int sr_cm_qp_attr(struct sr_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask);
/* QP moves, lock NOT held: RTR then RTS with the negotiated IRD/ORD; to ERR (NULL: none). */
int sr_cm_qp_to_rts(struct sr_cm_id *id, struct ibv_qp *qp);
void sr_cm_qp_to_err(struct ibv_qp *qp);
/*
 * Give the stream to its QP's transport (priv_ops->attach); report ESTABLISHED when
 * report_est. Lock NOT held, id held; id must own conn. Returns 0 or a negative errno (the
 * conn is then torn down and the id FAILED).
 */
int sr_cm_link_attach(struct sr_cm_id *id, struct ibv_qp *qp, bool initiator,
		      bool report_est, const struct sr_cm_evparam *est);
/* The transport's closed callback. */
void sr_cm_link_closed(void *arg, int err);
/* A connection's end (lock held): DISCONNECTED, once. */
void sr_cm_closed_locked(struct sr_cm_id *id);
/* Id teardown of the attachment (lock held): the link forgets the id. */
void sr_cm_link_release(struct sr_cm_id *id);
/* Destroy a QP, ending its attachment (DISCONNECTED if connected); lock NOT held. */
void sr_cm_link_destroy_qp(struct sr_cm_id *id, struct ibv_qp *qp);
/* The attached QP if it still exists (lock NOT held, id held). */
struct ibv_qp *sr_cm_link_live_qp(struct sr_cm_id *id);

/* stream.c: the established connection, an owner of QP-less connections (above link.c) */
/*
 * Give the stream to its QP (qp != NULL, sr_cm_link_attach) or keep it as a QP-less stream
 * the CM watches; report ESTABLISHED when report_est. As sr_cm_link_attach.
 */
int sr_cm_start_stream(struct sr_cm_id *id, struct ibv_qp *qp, bool initiator,
		       bool report_est, const struct sr_cm_evparam *est);
void sr_cm_stream_io(struct sr_cm_conn *c, uint32_t events);
void sr_cm_stream_timeout(struct sr_cm_conn *c);
/* Our disconnect: send our FIN, give the peer's a while (lock held). */
int sr_cm_stream_shutdown(struct sr_cm_conn *c);

/* passive.c (above stream.c, addr.c) */
/* Listener teardown (lock held): claims its handshakes onto *claimed (via conn->node). */
void sr_cm_listen_stop(struct sr_cm_id *id, struct sr_list *claimed);
/* Free a request id nobody has seen (listener gone, request failed); lock NOT held. */
void sr_cm_id_free_unseen(struct sr_cm_id *id);
/* Its connections' owner (sr_cm_conn_ops), for tests: */
void sr_cm_passive_io(struct sr_cm_conn *c, uint32_t events);
/* the Request's deadline, or (held) the application's answer's */
void sr_cm_passive_timeout(struct sr_cm_conn *c);

/* active.c (above stream.c); its connections' owner (sr_cm_conn_ops), for tests: */
void sr_cm_active_io(struct sr_cm_conn *c, uint32_t events);
void sr_cm_active_timeout(struct sr_cm_conn *c);

#endif
