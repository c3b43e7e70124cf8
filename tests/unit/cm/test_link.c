// SPDX-License-Identifier: MIT
/*
 * The link (cm/link.c) on its own: a real QP of the loopback soft iWARP device, and a fake
 * transport in its context's ops table (struct sr_priv_ops: attach and qp_by_num recorded
 * and answered by the test, the rest the device's own). The QP moves to RTS and to ERR;
 * attaching hands the socket over, reports ESTABLISHED and then the transport's close as
 * DISCONNECTED (once, also when the close comes during the attach, and when the QP is
 * destroyed or found gone instead); a failed attach is a CONNECT_ERROR with the QP in ERR.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <cmocka.h>

#include "cm_test.h"
#include "netdev/sr_route.h"
#include "verbs/sr_verbs.h"

/* --------------------------------------------------- the fake transport -- */

static struct {
	int calls;
	int ret;                /* what attach answers */
	bool close_inside;      /* the stream ends while attach runs */
	bool disconnect_inside; /* rdma_disconnect finds the QP gone while attach runs */
	struct ibv_qp *qp;
	struct sr_xport_attach a;
	bool qp_gone;           /* qp_by_num finds no QP */
	struct sr_cm_id *id;    /* for disconnect_inside */
	struct ibv_qp *live_qp_inside;
} xp;

static struct sr_priv_ops fake_ops;
static const struct sr_priv_ops *real_ops;

static int fake_attach(struct ibv_qp *qp, const struct sr_xport_attach *a)
{
	xp.calls++;
	xp.qp = qp;
	xp.a = *a;
	if (xp.close_inside)
		a->cb.closed(a->cb.arg, -ECONNRESET);
	if (xp.disconnect_inside) {
		/* what another thread's rdma_disconnect does meanwhile (sr_cm_link_live_qp) */
		xp.qp_gone = true;
		xp.live_qp_inside = sr_cm_link_live_qp(xp.id);
		xp.qp_gone = false;
	}
	return xp.ret;
}

static struct ibv_qp *fake_qp_by_num(struct ibv_context *ctx, uint32_t qpn)
{
	return xp.qp_gone ? NULL : real_ops->qp_by_num(ctx, qpn);
}

/* ---------------------------------------------------------- the owner -- */

struct fixture {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct sr_cm_id *s;
	int peer; /* the other end of the connection's socket */
	int fd;
};

static int setup(void **state)
{
	static struct fixture f;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct sr_cm_dev *dev;
	struct sr_cm_conn *c;
	int sv[2];

	memset(&xp, 0, sizeof(xp));
	memset(&f, 0, sizeof(f));
	dev = sr_cm_dev_by_ifindex(SR_LOOPBACK_IFINDEX);
	if (!dev) {
		print_message("no soft iWARP device on loopback: %s\n", strerror(errno));
		return -1;
	}
	f.ch = rdma_create_event_channel();
	assert_non_null(f.ch);
	assert_int_equal(rdma_create_id(f.ch, &f.id, NULL, RDMA_PS_TCP), 0);
	f.s = to_sr_id(f.id);
	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_id_set_dev(f.s, dev);
	pthread_mutex_unlock(&sr_cm_lock);
	assert_int_equal(rdma_create_qp(f.id, NULL, &qa), 0);

	/* the transport of this context is ours for the test */
	real_ops = to_sr_ctx(f.id->verbs)->priv_ops;
	assert_non_null(real_ops);
	fake_ops = *real_ops;
	fake_ops.attach = fake_attach;
	fake_ops.qp_by_num = fake_qp_by_num;
	to_sr_ctx(f.id->verbs)->priv_ops = &fake_ops;

	/* a connection past its handshake, as active.c/passive.c leave it */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f.fd = sv[0];
	f.peer = sv[1];
	c = sr_cm_conn_new(f.fd, NULL);
	assert_non_null(c);
	c->phase = SR_CONN_HELD;
	pthread_mutex_lock(&sr_cm_lock);
	c->id = f.s;
	f.s->conn = c;
	f.s->state = SR_CM_CONNECTING;
	f.s->mpa.ird = 1;
	f.s->mpa.ord = 1;
	f.s->have_mpa = true;
	pthread_mutex_unlock(&sr_cm_lock);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->id->qp)
		rdma_destroy_qp(f->id);
	to_sr_ctx(f->id->verbs)->priv_ops = real_ops;
	assert_int_equal(rdma_destroy_id(f->id), 0);
	rdma_destroy_event_channel(f->ch);
	close(f->peer);
	if (xp.calls && !xp.ret)
		close(xp.a.u.iwarp.fd); /* what the fake transport took over */
	return 0;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	assert_int_equal(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
	return attr.qp_state;
}

static int attach(struct fixture *f, bool initiator)
{
	struct sr_cm_evparam est = { .initiator_depth = 1, .responder_resources = 1 };
	int err;

	pthread_mutex_lock(&sr_cm_lock);
	sr_cm_id_hold(f->s);
	pthread_mutex_unlock(&sr_cm_lock);
	err = sr_cm_link_attach(f->s, f->id->qp, initiator, true, &est);
	sr_cm_id_unhold(f->s);
	return err;
}

/* ------------------------------------------------------------- tests -- */

/* The handshake's QP moves: RTR/RTS with the negotiated IRD/ORD, then ERR. */
static void qp_moves(void **state)
{
	struct fixture *f = *state;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	assert_int_equal(qp_state(f->id->qp), IBV_QPS_INIT);
	assert_int_equal(sr_cm_qp_to_rts(f->s, f->id->qp), 0);
	assert_int_equal(ibv_query_qp(f->id->qp, &attr, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC |
				      IBV_QP_MAX_DEST_RD_ATOMIC, &init), 0);
	assert_int_equal(attr.qp_state, IBV_QPS_RTS);
	assert_int_equal(attr.max_rd_atomic, 1);
	assert_int_equal(attr.max_dest_rd_atomic, 1);
	sr_cm_qp_to_err(f->id->qp);
	assert_int_equal(qp_state(f->id->qp), IBV_QPS_ERR);
	sr_cm_qp_to_err(NULL); /* no QP: nothing */
}

/* Attach hands the socket over; the transport's close is the one DISCONNECTED. */
static void attach_then_closed(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(sr_cm_qp_to_rts(f->s, f->id->qp), 0);
	assert_int_equal(attach(f, true), 0);
	assert_int_equal(xp.calls, 1);
	assert_ptr_equal(xp.qp, f->id->qp);
	assert_int_equal(xp.a.kind, SR_XPORT_IWARP);
	assert_int_equal(xp.a.u.iwarp.fd, f->fd);
	assert_true(xp.a.u.iwarp.initiator);
	assert_int_equal(xp.a.u.iwarp.mpa.ird, 1);
	assert_null(f->s->conn); /* the CM let go of the socket: still open, the transport's */
	assert_true(fcntl(f->fd, F_GETFD) >= 0);
	assert_int_equal(cm_test_state(f->s), SR_CM_ESTABLISHED);
	cm_test_expect(f->ch, RDMA_CM_EVENT_ESTABLISHED);
	assert_ptr_equal(sr_cm_link_live_qp(f->s), f->id->qp);

	xp.a.cb.closed(xp.a.cb.arg, 0);
	cm_test_expect(f->ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(cm_test_state(f->s), SR_CM_DISCONNECTED);
	assert_null(sr_cm_link_live_qp(f->s)); /* closed: no QP to disconnect */
	cm_test_no_event(f->ch, 50);
}

/* The stream ends while attach runs: ESTABLISHED first, then DISCONNECTED. */
static void closed_during_attach(void **state)
{
	struct fixture *f = *state;

	xp.close_inside = true;
	assert_int_equal(sr_cm_qp_to_rts(f->s, f->id->qp), 0);
	assert_int_equal(attach(f, false), 0);
	assert_false(xp.a.u.iwarp.initiator);
	cm_test_expect(f->ch, RDMA_CM_EVENT_ESTABLISHED);
	cm_test_expect(f->ch, RDMA_CM_EVENT_DISCONNECTED);
	cm_test_no_event(f->ch, 50);
}

/* A transport that refuses: CONNECT_ERROR to the initiator, QP in ERR, socket closed. */
static void attach_fails(void **state)
{
	struct fixture *f = *state;

	xp.ret = -EIO;
	assert_int_equal(sr_cm_qp_to_rts(f->s, f->id->qp), 0);
	assert_int_equal(attach(f, true), -EIO);
	assert_int_equal(cm_test_expect(f->ch, RDMA_CM_EVENT_CONNECT_ERROR), -EIO);
	assert_int_equal(cm_test_state(f->s), SR_CM_FAILED);
	assert_int_equal(qp_state(f->id->qp), IBV_QPS_ERR);
	assert_null(f->s->link);
	cm_test_expect_eof(f->peer);
}

/*
 * A failing attach while another thread's rdma_disconnect found the QP gone: that closer
 * dropped the transport's reference for it, so the failure must not drop it again (the
 * link was freed under its holder, or leaked with a negative count: LeakSanitizer).
 */
static void attach_fails_after_disconnect(void **state)
{
	struct fixture *f = *state;

	xp.ret = -EIO;
	xp.disconnect_inside = true;
	xp.id = f->s;
	assert_int_equal(sr_cm_qp_to_rts(f->s, f->id->qp), 0);
	assert_int_equal(attach(f, true), -EIO);
	assert_null(xp.live_qp_inside);
	assert_int_equal(cm_test_expect(f->ch, RDMA_CM_EVENT_CONNECT_ERROR), -EIO);
	assert_int_equal(cm_test_state(f->s), SR_CM_FAILED);
	assert_null(f->s->link);
	assert_null(sr_cm_link_live_qp(f->s));
	cm_test_no_event(f->ch, 50);
}

/* rdma_destroy_qp of the attached QP ends the connection: DISCONNECTED, once. */
static void destroy_qp_disconnects(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(sr_cm_qp_to_rts(f->s, f->id->qp), 0);
	assert_int_equal(attach(f, true), 0);
	cm_test_expect(f->ch, RDMA_CM_EVENT_ESTABLISHED);
	rdma_destroy_qp(f->id);
	cm_test_expect(f->ch, RDMA_CM_EVENT_DISCONNECTED);
	assert_int_equal(cm_test_state(f->s), SR_CM_DISCONNECTED);
	cm_test_no_event(f->ch, 50);
}

/* A QP the application destroyed itself is found gone: DISCONNECTED, no QP handed out. */
static void live_qp_gone(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(sr_cm_qp_to_rts(f->s, f->id->qp), 0);
	assert_int_equal(attach(f, true), 0);
	cm_test_expect(f->ch, RDMA_CM_EVENT_ESTABLISHED);
	xp.qp_gone = true;
	assert_null(sr_cm_link_live_qp(f->s));
	cm_test_expect(f->ch, RDMA_CM_EVENT_DISCONNECTED);
	xp.qp_gone = false;
	assert_null(sr_cm_link_live_qp(f->s)); /* and stays so */
	cm_test_no_event(f->ch, 50);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(qp_moves, setup, teardown),
		cmocka_unit_test_setup_teardown(attach_then_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(closed_during_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(attach_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(attach_fails_after_disconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(destroy_qp_disconnects, setup, teardown),
		cmocka_unit_test_setup_teardown(live_qp_gone, setup, teardown),
	};

	if (!sr_cm_dev_by_ifindex(SR_LOOPBACK_IFINDEX)) {
		printf("no soft iWARP device on loopback: skipped\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
