/* SPDX-License-Identifier: MIT */
/*
 * The transport interface between the connection manager and a QP's byte mover. Today there
 * is one transport, iWARP over a kernel TCP socket (transport/iwarp_*.c); the same-host
 * shared-memory path and a RoCE-style device plug in behind the same calls later.
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
	 * sr_iwarp_disconnect, or the peer disconnecting first), a negative errno otherwise
	 * (reset, protocol error, Terminate). Called exactly once, from the engine thread, after
	 * the QP has been moved to ERR and flushed. The socket is closed by then.
	 * Not called when the stream ends because the QP is destroyed (the caller of
	 * ibv_destroy_qp/rdma_destroy_qp knows).
	 */
	void (*closed)(void *arg, int err);
};

struct sr_iwarp_attach_params {
	int fd;                       /* connected TCP socket, MPA frames already exchanged */
	bool initiator;               /* we sent the MPA Request */
	/* fd is O_NONBLOCK with TCP_NODELAY already (the CM's sockets are made so): the
	 * transport spends no system calls making it so, per connection */
	bool tuned;
	struct sr_mpa_conn mpa;       /* negotiated CRC, RTR, IRD/ORD */
	struct sr_conn_cb cb;
	/* Initiator with P2P: longest wait after the RTR for the peer to show it is ready
	 * before sending anyway; 0 = the transport's default for the RTR form (what the CM
	 * uses; tests choose their own). */
	unsigned int ready_ms;
};

#endif
