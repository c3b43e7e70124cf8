// SPDX-License-Identifier: MIT
/*
 * Every wait of an attached stream has an end (docs/ARCHITECTURE.md, "Every wait and its
 * bound"), against a raw peer that misbehaves on purpose: one that never sends its FIN or
 * never reads (the orderly close gives up at SOFTRDMA_CLOSE_TIMEOUT_MS and resets), one
 * that fills our socket and then provokes a Terminate (the engine thread keeps serving the
 * process's other connections while the Terminate waits for room, and the Terminate still
 * goes out once there is), and a peer-to-peer initiator that never sends its RTR.
 */
#include <sys/ioctl.h>

#include "../../common/tcp_wait.h"
#include "xport_helpers.h"

#define BIG (16u << 20) /* far more than the small socket buffers below hold */

/*
 * A loopback pair whose buffers are as small as the kernel allows, set before the handshake
 * so the window offered is small too: one full-size FPDU (64 KiB on loopback) can then never
 * get through while the peer does not read, and whatever queues behind it waits.
 */
static void tcp_pair_small(int *a, int *b)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), tiny = 1;

	assert_true(l >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(l, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny)); /* inherited by b */
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	*a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*a >= 0);
	setsockopt(*a, SOL_SOCKET, SO_SNDBUF, &tiny, sizeof(tiny));
	assert_int_equal(connect(*a, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*b = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(*b >= 0);
	close(l);
}

/* A QP on the small end a of such a pair; the raw peer on b. */
static void rq_up(struct raw_qp *t, bool initiator, struct sr_mpa_conn m)
{
	ep_create(&t->e, NULL, false);
	tcp_pair_small(&t->qfd, &t->peer);
	raw_init(&t->r, t->peer, m.crc);
	ep_attach(&t->e, t->qfd, initiator, m);
}

static void disconnect(struct ep *e)
{
	to_sr_ctx(g_ctx)->priv_ops->disconnect(e->qp);
}

/* A QP whose socket the peer stopped reading: a Write far bigger than the buffers, wr 7. */
struct full {
	struct raw_qp t;
	uint8_t *big;
	struct ibv_mr *mr;
};

static void full_up(struct full *f)
{
	f->big = malloc(BIG);
	assert_non_null(f->big);
	rq_up(&f->t, true, mpa_conn(true, 0, 4, 4));
	f->mr = ibv_reg_mr(f->t.e.pd, f->big, BIG, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(f->mr);
	post_send1(&f->t.e, 7, IBV_WR_RDMA_WRITE, 0, f->big, BIG, f->mr->lkey, 0x1000, 0x1234);
}

/* The Write never got out: flushed. */
static void full_down(struct full *f)
{
	struct ibv_wc wc;

	wait_wc(f->t.e.scq, &wc, 1);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(ibv_dereg_mr(f->mr), 0);
	raw_qp_down(&f->t);
	free(f->big);
}

/* The peer writes to an STag that does not exist: our receive side queues a Terminate. */
static void provoke_terminate(struct raw_qp *t)
{
	uint8_t fp[128], pl[16] = { 0 };
	size_t n = fpdu_tagged(fp, true, SR_RDMAP_OP_WRITE, true, 0x7fff0000, 0, pl, sizeof(pl));

	xsend(t->peer, fp, n);
}

/*
 * Our FIN went out, the peer keeps its socket open for ever: the close gives up at the bound
 * (not before), the QP is flushed, and the peer gets a reset.
 */
static void t_close_peer_keeps_open(void **s)
{
	struct ibv_wc wc;
	struct raw_qp t;
	uint64_t t0;

	(void)s;
	rq_up(&t, true, mpa_conn(true, 0, 4, 4));
	post_recv1(&t.e, 1, NULL, 0, 0);
	t0 = now_ms();
	disconnect(&t.e);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 1); /* our FIN */
	assert_int_equal(wait_closed(&t.e), -ETIMEDOUT);
	assert_true(now_ms() - t0 >= SR_IW_CLOSE_TIMEOUT_MS - 1);
	wait_wc(t.e.rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_true(tcp_reaches(t.peer, TCP_CLOSE, T_WAIT_MS));
	raw_qp_down(&t);
}

/*
 * The peer stops reading (as a receiver-not-ready hold does) with our send queue in its
 * way: the FIN can never go out behind it. The close still ends at the bound: the Write is
 * flushed and the stream reset.
 */
static void t_close_peer_holds_queue(void **s)
{
	struct full f;

	(void)s;
	full_up(&f);
	disconnect(&f.t.e);
	assert_int_equal(wait_closed(&f.t.e), -ETIMEDOUT);
	assert_true(tcp_reaches(f.t.peer, TCP_CLOSE, T_WAIT_MS));
	full_down(&f);
}

/* One Send from a to b and one back, each into a posted receive; completions checked. */
static void ping_pong(struct ep *a, struct ep *b)
{
	uint8_t out[32] = "ping", in[32];
	struct ibv_mr *ma = ibv_reg_mr(a->pd, out, sizeof(out), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mb = ibv_reg_mr(b->pd, in, sizeof(in), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_wc wc;

	assert_non_null(ma);
	assert_non_null(mb);
	post_recv1(b, 21, in, sizeof(in), mb->lkey);
	post_recv1(a, 22, out, sizeof(out), ma->lkey);
	post_send1(a, 23, IBV_WR_SEND, 0, out, 4, ma->lkey, 0, 0);
	wait_wc(b->rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(in, "ping", 4);
	memcpy(in, "pong", 4);
	post_send1(b, 24, IBV_WR_SEND, 0, in, 4, mb->lkey, 0, 0);
	wait_wc(a->rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(out, "pong", 4);
	wait_wc(a->scq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	wait_wc(b->scq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(ibv_dereg_mr(ma), 0);
	assert_int_equal(ibv_dereg_mr(mb), 0);
}

/*
 * A peer fills our socket (it never reads a big Write of ours), then sends a Write to an
 * STag that does not exist. Our Terminate cannot get into the socket; the engine thread must
 * not wait for it: another connection of the process completes a ping-pong while the first
 * one is still open (its Terminate pending). Once the peer reads, the Terminate arrives
 * after the Write's bytes, then the FIN, and the stream closes.
 */
static void t_terminate_never_blocks(void **s)
{
	struct ep b1, b2;
	struct full f;
	int fa, fb, ret;
	bool term = false;

	(void)s;
	/* long enough that only the peer's reading can end the wait in this test */
	setenv("SOFTRDMA_TERM_TIMEOUT_MS", "600000", 1);
	full_up(&f);
	provoke_terminate(&f.t);

	/* the other connection: two QPs of ours */
	ep_create(&b1, NULL, false);
	ep_create(&b2, NULL, false);
	tcp_pair(&fa, &fb);
	ep_attach(&b1, fa, true, mpa_conn(false, 0, 4, 4));
	ep_attach(&b2, fb, false, mpa_conn(false, 0, 4, 4));
	ping_pong(&b1, &b2);
	/* the first connection is still waiting to get its Terminate out */
	assert_int_equal(closed_calls(&f.t.e, NULL), 0);

	/* the peer reads: the Write's FPDUs, the Terminate, the end */
	while ((ret = raw_next(&f.t.r, NULL, 0, T_WAIT_MS)) == 0)
		if (f.t.r.seg.opcode == SR_RDMAP_OP_TERMINATE)
			term = true;
	assert_true(term);
	assert_true(ret == 1 || ret == -ECONNRESET);
	assert_int_equal(wait_closed(&f.t.e), -ECONNABORTED);
	unsetenv("SOFTRDMA_TERM_TIMEOUT_MS");
	full_down(&f);

	disconnect(&b1);
	assert_int_equal(wait_closed(&b1), 0);
	assert_int_equal(wait_closed(&b2), 0);
	ep_destroy(&b1);
	ep_destroy(&b2);
}

/* A Terminate into a full socket whose peer never reads: the stream ends at the bound. */
static void t_terminate_bound(void **s)
{
	struct full f;

	(void)s;
	full_up(&f);
	provoke_terminate(&f.t);
	assert_int_equal(wait_closed(&f.t.e), -ECONNABORTED);
	assert_true(tcp_reaches(f.t.peer, TCP_CLOSE, T_WAIT_MS)); /* aborted: a reset */
	full_down(&f);
}

/*
 * A peer-to-peer responder whose initiator never sends the RTR: the stream ends (our FIN) at
 * SR_IW_FIRST_FPDU_TIMEOUT_MS, not before, and nothing of ours precedes the FIN.
 */
static void t_responder_no_rtr(void **s)
{
	struct ibv_wc wc;
	struct raw_qp t;
	uint64_t t0 = now_ms();

	(void)s;
	rq_up(&t, false, mpa_conn(true, SR_MPA_RTR_WRITE, 4, 4));
	post_recv1(&t.e, 1, NULL, 0, 0);
	post_send1(&t.e, 2, IBV_WR_SEND, IBV_SEND_INLINE, "x", 1, 0, 0, 0);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 1); /* the FIN, nothing before */
	assert_true(now_ms() - t0 >= SR_IW_FIRST_FPDU_TIMEOUT_MS - 1);
	assert_true(wait_closed(&t.e) < 0);
	wait_wc(t.e.scq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	wait_wc(t.e.rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	raw_qp_down(&t);
}

/*
 * Engine time per wake-up (docs/SECURITY.md, "Resources a remote peer can make us hold"):
 * one callback reads at most SR_IW_RX_BUDGET (4 MiB) of a connection, then the engine serves
 * the others. A holds 16 MiB of Writes and a Send in its socket, B a Send that became
 * readable while A's callback waited for A's receive lock (held here); the two QPs share a
 * receive CQ, so the order of their completions is the order the engine delivered them: B's
 * first, although A was served first. Without the bound, A's one callback takes all 16 MiB.
 */
#define RXB_PAY 32768u
#define RXB_TOTAL (16u << 20)

/* All of buf into a socket whose peer's buffer can take it; fails instead of blocking. */
static void send_within(int fd, const uint8_t *buf, size_t len, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = POLLOUT };
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		assert_true(n < 0 && (errno == EAGAIN || errno == EINTR));
		assert_true(now_ms() < end);
		poll(&pf, 1, 100);
	}
}

static void t_rx_budget(void **s)
{
	int big = 64 << 20, qa, pa, qb, pb, pending = 0;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	uint8_t *region, *stream, sbuf[2][64];
	struct xt_closed_rec bcl = { 0 };
	struct ibv_mr *mr, *smr;
	struct sr_iw_conn *ca;
	struct ibv_qp *bqp;
	struct ibv_wc wc[2];
	size_t n = 0;
	struct ep a;
	int l;

	(void)s;
	/* A's socket can hold all of it before anybody reads (root: SO_RCVBUFFORCE) */
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	qa = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l >= 0 && qa >= 0);
	if (setsockopt(qa, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big))) {
		close(l);
		close(qa);
		skip(); /* not root */
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(connect(qa, (struct sockaddr *)&sa, sizeof(sa)), 0);
	pa = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(pa >= 0);
	close(l);
	tcp_pair(&qb, &pb);

	ep_create(&a, NULL, false);
	region = calloc(1, 1u << 20);
	stream = malloc(RXB_TOTAL + RXB_TOTAL / 16);
	assert_non_null(region);
	assert_non_null(stream);
	mr = ibv_reg_mr(a.pd, region, 1u << 20, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	smr = ibv_reg_mr(a.pd, sbuf, sizeof(sbuf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_non_null(smr);
	{
		/* B: a QP on A's CQs */
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RC, .send_cq = a.scq, .recv_cq = a.rcq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		bqp = ibv_create_qp(a.pd, &ia);
		assert_non_null(bqp);
		assert_int_equal(qp_to(bqp, IBV_QPS_INIT), 0);
		assert_int_equal(qp_to(bqp, IBV_QPS_RTR), 0);
		sr_qp_llp_claim(bqp); /* the test stands in for the CM that connects it */
		assert_int_equal(qp_to(bqp, IBV_QPS_RTS), 0);
		pthread_mutex_init(&bcl.mu, NULL);
	}
	post_recv1(&a, 1, sbuf[0], sizeof(sbuf[0]), smr->lkey);
	{
		struct ibv_sge sg = { .addr = (uintptr_t)sbuf[1], .length = sizeof(sbuf[1]),
				      .lkey = smr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sg, .num_sge = 1 }, *bad;

		assert_int_equal(ibv_post_recv(bqp, &wr, &bad), 0);
	}

	/* A attached with nothing to read yet; then its callback is made to wait */
	ep_attach(&a, qa, false, mpa_conn(false, 0, 1, 1));
	ca = xt_conn(a.qp);
	pthread_mutex_lock(&ca->rx_lock);
	for (uint32_t off = 0; off < RXB_TOTAL; off += RXB_PAY)
		n += fpdu_tagged(stream + n, false, SR_RDMAP_OP_WRITE, true, mr->rkey,
				 (uintptr_t)region + off % (1u << 20) , region, RXB_PAY);
	n += fpdu_untagged(stream + n, false, SR_RDMAP_OP_SEND, true, 1, 0, 0, "A", 1);
	send_within(pa, stream, n, T_WAIT_MS);
	for (uint64_t end = now_ms() + T_WAIT_MS; (size_t)pending < n; usleep(1000)) {
		assert_int_equal(ioctl(qa, FIONREAD, &pending), 0);
		assert_true(now_ms() < end);
	}
	/* B becomes readable while the engine is (or is about to be) in A's callback */
	n = fpdu_untagged(stream, false, SR_RDMAP_OP_SEND, true, 1, 0, 0, "B", 1);
	xsend(pb, stream, n);
	{
		struct sr_xport_attach p = {
			.kind = SR_XPORT_IWARP,
			.cb = xt_closed_cb(&bcl),
			.u.iwarp = { .fd = qb, .initiator = false,
				     .mpa = mpa_conn(false, 0, 1, 1) },
		};

		assert_int_equal(to_sr_ctx(g_ctx)->priv_ops->attach(bqp, &p), 0);
	}
	pthread_mutex_unlock(&ca->rx_lock);

	wait_wc(a.rcq, wc, 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	/* B's Send was delivered while A still had more than the bound to read */
	assert_int_equal(wc[0].wr_id, 2);
	assert_int_equal(wc[1].wr_id, 1);
	assert_memory_equal(sbuf[0], "A", 1);
	assert_memory_equal(sbuf[1], "B", 1);

	assert_int_equal(ibv_destroy_qp(bqp), 0);
	pthread_mutex_destroy(&bcl.mu);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	ep_destroy(&a);
	close(pa);
	close(pb);
	free(stream);
	free(region);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_close_peer_keeps_open),
		cmocka_unit_test(t_close_peer_holds_queue),
		cmocka_unit_test(t_terminate_never_blocks),
		cmocka_unit_test(t_terminate_bound),
		cmocka_unit_test(t_responder_no_rtr),
		cmocka_unit_test(t_rx_budget),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
