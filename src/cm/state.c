// SPDX-License-Identifier: MIT
/*
 * The CM's state machines, one table each: an id's state (enum sr_cm_state) and a
 * connection's phase (enum sr_cm_conn_phase), both in cm_priv.h. Every change goes through
 * the setter here, which asserts the table and the CM lock in debug builds (as the
 * transport's sr_iw_tx_end_set does); the link's state has its own in link.c. The tables
 * hold every change the code makes and nothing else: a missing row is a bug to find, not
 * a transition to add blindly.
 */
#include <assert.h>

#include "cm/cm_priv.h"
#include "common/sr_log.h"

#define SR_CM_TO(s) (1u << SR_CM_##s)

/*
 * enum sr_cm_state: the states each state may move to (besides DESTROYING, which any state
 * but DESTROYING itself may enter: rdma_destroy_id, or a request id nobody has seen freed).
 */
static const unsigned int sr_cm_state_next[] = {
	/* bind (rdma_bind_addr, rdma_resolve_addr's implicit one, rdma_listen's); a request
	 * id is made IDLE and handed its request at once */
	[SR_CM_IDLE] = SR_CM_TO(BOUND) | SR_CM_TO(CONN_RECV),
	/* rdma_resolve_addr: a next hop to wait for, or none; rdma_listen */
	[SR_CM_BOUND] = SR_CM_TO(ADDR_QUERY) | SR_CM_TO(ADDR_RESOLVED) | SR_CM_TO(LISTEN),
	/* the next hop's entry is valid; it failed or the wait timed out (ADDR_ERROR) */
	[SR_CM_ADDR_QUERY] = SR_CM_TO(ADDR_RESOLVED) | SR_CM_TO(BOUND),
	/* rdma_resolve_route, RDMA_OPTION_IB_PATH */
	[SR_CM_ADDR_RESOLVED] = SR_CM_TO(ROUTE_RESOLVED),
	/* rdma_connect */
	[SR_CM_ROUTE_RESOLVED] = SR_CM_TO(CONNECTING),
	/* rdma_listen could not register the listening socket with the engine */
	[SR_CM_LISTEN] = SR_CM_TO(BOUND),
	/* the Reply: no QP (CONNECT_RESPONSE), with a QP (ESTABLISHED), or a failure */
	[SR_CM_CONNECTING] = SR_CM_TO(RESPONDED) | SR_CM_TO(ESTABLISHED) | SR_CM_TO(FAILED),
	/* rdma_establish (or its failure), rdma_disconnect */
	[SR_CM_RESPONDED] = SR_CM_TO(ESTABLISHED) | SR_CM_TO(FAILED) | SR_CM_TO(DISCONNECTED),
	/* rdma_accept (or its failure), rdma_reject */
	[SR_CM_CONN_RECV] = SR_CM_TO(ESTABLISHED) | SR_CM_TO(FAILED),
	/* rdma_disconnect; the stream's end; the transport refused the attach */
	[SR_CM_ESTABLISHED] = SR_CM_TO(DISCONNECTING) | SR_CM_TO(DISCONNECTED) | SR_CM_TO(FAILED),
	/* the stream's end */
	[SR_CM_DISCONNECTING] = SR_CM_TO(DISCONNECTED),
	/* DISCONNECTED, FAILED: only destroy; DESTROYING: nothing */
};

bool sr_cm_state_legal(enum sr_cm_state from, enum sr_cm_state to)
{
	if ((unsigned int)from > SR_CM_DESTROYING || (unsigned int)to > SR_CM_DESTROYING)
		return false;
	if (to == SR_CM_DESTROYING)
		return from != SR_CM_DESTROYING;
	return (unsigned int)from < SR_ARRAY_SIZE(sr_cm_state_next) &&
	       (sr_cm_state_next[from] & (1u << to));
}

void sr_cm_state_set(struct sr_cm_id *id, enum sr_cm_state to)
{
	sr_cm_assert_locked();
#ifndef NDEBUG
	if (!sr_cm_state_legal(id->state, to))
		sr_err("id %p: no transition %s -> %s", (void *)id, sr_cm_state_str(id->state),
		       sr_cm_state_str(to));
#endif
	assert(sr_cm_state_legal(id->state, to));
	id->state = to;
}

#define SR_CONN_TO(p) (1u << SR_CONN_##p)

/* enum sr_cm_conn_phase: the phases each phase may move to. Claimed conns never move. */
static const unsigned int sr_cm_conn_phase_next[] = {
	/* rdma_connect's conn; a listener's accepted socket */
	[SR_CONN_NEW] = SR_CONN_TO(TCP_CONNECT) | SR_CONN_TO(READ_REQ),
	/* connected: the Request goes out, in part or whole */
	[SR_CONN_TCP_CONNECT] = SR_CONN_TO(SEND_REQ) | SR_CONN_TO(READ_REPLY),
	[SR_CONN_SEND_REQ] = SR_CONN_TO(READ_REPLY),
	/* a Reply for an id without a QP: held for rdma_establish */
	[SR_CONN_READ_REPLY] = SR_CONN_TO(HELD) | SR_CONN_TO(ABORT),
	/* a Request: held for rdma_accept */
	[SR_CONN_READ_REQ] = SR_CONN_TO(HELD),
	/* established without a QP (rdma_establish, rdma_accept) */
	[SR_CONN_HELD] = SR_CONN_TO(STREAM),
	/* rdma_disconnect sent our FIN */
	[SR_CONN_STREAM] = SR_CONN_TO(STREAM_SHUT),
	/* STREAM_SHUT: nothing (the conn is claimed at the stream's end); ABORT: nothing (it
	 * is claimed and reset) */
};

bool sr_cm_conn_phase_legal(enum sr_cm_conn_phase from, enum sr_cm_conn_phase to)
{
	return (unsigned int)from < SR_ARRAY_SIZE(sr_cm_conn_phase_next) &&
	       (unsigned int)to <= SR_CONN_ABORT &&
	       (sr_cm_conn_phase_next[from] & (1u << to));
}

void sr_cm_conn_phase_set(struct sr_cm_conn *c, enum sr_cm_conn_phase to)
{
	sr_cm_assert_locked();
	assert(sr_cm_conn_phase_legal(c->phase, to));
	c->phase = to;
}
