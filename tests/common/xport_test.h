// SPDX-License-Identifier: MIT
/*
 * What the transport's unit tests (tests/unit/transport/) and fuzz targets
 * (tests/fuzz/transport/) share about an attached QP: a recorder for the CM's closed
 * callback (struct sr_conn_cb), and reads of the connection's state under the lock that
 * guards it, as the transport's own threads write it. No test framework: the fuzz targets
 * use it too.
 */
#ifndef SR_TESTS_XPORT_TEST_H
#define SR_TESTS_XPORT_TEST_H

#include <pthread.h>

#include "transport/iwarp.h"
#include "transport/sr_xport.h"
#include "verbs/sr_obj.h"

/* ------------------------------------------------------ closed callback -- */

/* What the transport reported through cb.closed: how often, and the last err. */
struct xt_closed_rec {
	pthread_mutex_t mu;
	int calls;
	int err;
};

#define XT_CLOSED_REC_INIT { .mu = PTHREAD_MUTEX_INITIALIZER }

/* cb.closed, with arg a struct xt_closed_rec. */
static inline void xt_on_closed(void *arg, int err)
{
	struct xt_closed_rec *r = arg;

	pthread_mutex_lock(&r->mu);
	r->calls++;
	r->err = err;
	pthread_mutex_unlock(&r->mu);
}

/* The callback for r, as struct sr_xport_attach takes it. */
static inline struct sr_conn_cb xt_closed_cb(struct xt_closed_rec *r)
{
	return (struct sr_conn_cb){ .arg = r, .closed = xt_on_closed };
}

/* Calls so far; *err (if not NULL): the last one's err. */
static inline int xt_closed_calls(struct xt_closed_rec *r, int *err)
{
	int n;

	pthread_mutex_lock(&r->mu);
	n = r->calls;
	if (err)
		*err = r->err;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* ------------------------------------------------------ locked accessors -- */

/* The iWARP connection attached to qp (NULL: none). */
static inline struct sr_iw_conn *xt_conn(struct ibv_qp *qp)
{
	return to_sr_qp(qp)->xport;
}

/* Who reads the socket (under rx_lock). */
static inline enum sr_iw_rx_owner xt_rx_owner(struct ibv_qp *qp)
{
	struct sr_iw_conn *c = xt_conn(qp);
	enum sr_iw_rx_owner o;

	pthread_mutex_lock(&c->rx_lock);
	o = c->rx_owner;
	pthread_mutex_unlock(&c->rx_lock);
	return o;
}

/* Which FPDUs may go out (under tx_lock). */
static inline enum sr_iw_tx_gate xt_tx_gate(struct ibv_qp *qp)
{
	struct sr_iw_conn *c = xt_conn(qp);
	enum sr_iw_tx_gate g;

	pthread_mutex_lock(&c->tx_lock);
	g = c->tx_gate;
	pthread_mutex_unlock(&c->tx_lock);
	return g;
}

/* The QP's state (under qp->lock). */
static inline enum ibv_qp_state xt_qp_state(struct ibv_qp *ibqp)
{
	struct sr_qp *qp = to_sr_qp(ibqp);
	enum ibv_qp_state s;

	pthread_mutex_lock(&qp->lock);
	s = qp->state;
	pthread_mutex_unlock(&qp->lock);
	return s;
}

/* Send WQEs the transport has taken from the queue, not yet reaped (under qp->lock). */
static inline uint32_t xt_sq_started(struct ibv_qp *ibqp)
{
	struct sr_qp *qp = to_sr_qp(ibqp);
	uint32_t n;

	pthread_mutex_lock(&qp->lock);
	n = qp->sq_started;
	pthread_mutex_unlock(&qp->lock);
	return n;
}

#endif
