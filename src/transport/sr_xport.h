/* SPDX-License-Identifier: MIT */
/*
 * The transport interface between the connection manager and a QP's byte mover. Today there
 * is one transport, iWARP over a kernel TCP socket (transport/iwarp_*.c); the same-host
 * shared-memory path and a RoCE-style device plug in beside it: each transport registers a
 * struct sr_xport_desc under its kind, each device names the kind its QPs use, and the CM
 * hands a set-up connection over with a struct sr_xport_attach of that kind.
 *
 * librdmacm reaches these through the private ops of our contexts (struct sr_priv_ops in
 * verbs/sr_verbs.h), never through exported symbols.
 */
#ifndef SR_XPORT_H
#define SR_XPORT_H

#include <infiniband/verbs.h>
#include <stdbool.h>

#include "iwarp/mpa.h"

/* How the transport tells the CM about the connection's end. */
struct sr_conn_cb {
	void *arg;
	/*
	 * The stream is over: err == 0 for an orderly close by either side (peer's FIN after
	 * priv_ops->disconnect, or the peer disconnecting first), a negative errno otherwise
	 * (reset, protocol error, Terminate). Called exactly once, from the engine thread, after
	 * the QP has been moved to ERR and flushed. The socket is closed by then.
	 * Not called when the stream ends because the QP is destroyed (the caller of
	 * ibv_destroy_qp/rdma_destroy_qp knows).
	 */
	void (*closed)(void *arg, int err);
};

/* Which transport carries a device's QPs: selects the member of sr_xport_attach.u. */
enum sr_xport_kind {
	SR_XPORT_NONE,
	SR_XPORT_IWARP, /* MPA/DDP/RDMAP over a kernel TCP socket */
	SR_XPORT_KINDS,
};

/* SR_XPORT_IWARP: the connection as the CM's MPA exchange left it. */
struct sr_iwarp_attach_params {
	int fd;                       /* connected TCP socket, MPA frames already exchanged */
	bool initiator;               /* we sent the MPA Request */
	/* fd is O_NONBLOCK with TCP_NODELAY already (the CM's sockets are made so): the
	 * transport spends no system calls making it so, per connection */
	bool tuned;
	struct sr_mpa_conn mpa;       /* negotiated CRC, RTR, IRD/ORD */
	/* Initiator with P2P: longest wait after the RTR for the peer to show it is ready
	 * before sending anyway; 0 = the transport's default for the RTR form (what the CM
	 * uses; tests choose their own). */
	unsigned int ready_ms;
};

/* What the CM hands to a QP's transport once the connection is set up. */
struct sr_xport_attach {
	enum sr_xport_kind kind; /* must be the device's (priv_ops->kind): else EINVAL */
	struct sr_conn_cb cb;
	union {
		struct sr_iwarp_attach_params iwarp;
	} u;
};

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

#endif
