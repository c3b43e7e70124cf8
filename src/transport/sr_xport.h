/* SPDX-License-Identifier: MIT */
/*
 * The connection manager's side of a transport: what it hands a QP's transport once a
 * connection is set up (struct sr_xport_attach), and how the transport tells it about the
 * connection's end. Today there is one transport, iWARP over a kernel TCP socket
 * (transport/iwarp_*.c); the same-host shared-memory path and a RoCE-style device plug in
 * beside it: each transport registers a struct sr_xport_desc under its kind, each device
 * names the kind its QPs use, and the CM hands a set-up connection over with a struct
 * sr_xport_attach of that kind. Those kinds and the registration are the verbs/transport
 * contract (transport/sr_xport_contract.h), which names no wire; this header does (the
 * parameters of each kind), and only the CM and the transports include it.
 *
 * librdmacm reaches these through the private ops of our contexts (struct sr_priv_ops in
 * verbs/sr_verbs.h), never through exported symbols.
 */
#ifndef SR_XPORT_H
#define SR_XPORT_H

#include <infiniband/verbs.h>
#include <stdbool.h>

#include "iwarp/mpa.h"
#include "transport/sr_xport_contract.h"

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

#endif
