// SPDX-License-Identifier: MIT
/*
 * Waits of the CM that must end (docs/ARCHITECTURE.md, "Every wait and its bound"), and
 * rdma_conn_param.rnr_retry_count reaching the QP:
 *  - disconnect_bound: a synchronous rdma_disconnect against a raw peer that keeps its
 *    socket open (never sends its FIN) returns at the close bound, and the peer is reset;
 *  - held_request: a connect request the application never answers is rejected on the wire
 *    at SOFTRDMA_ACCEPT_TIMEOUT_MS (the test sets it to 10 s); no local event;
 *    accept/reject: ECONNRESET;
 *  - rnr_retry: the counts given to rdma_connect and rdma_accept are the QPs' rnr_retry, and
 *    a Send posted before the peer's receive then completes instead of breaking the stream;
 *  - drain_bound: a peer whose handshake the CM dropped sends on and on; the CM engine reads
 *    and drops a bounded amount per wake-up (sr_cm_drain), so a real client connecting
 *    meanwhile still gets its CONNECT_REQUEST through while the flood runs.
 * Usage: cm_bounds <test> [address]; exit 0 = pass, 77 = skip.
 */
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../common/tcp_wait.h"
#include "../../common/cm_test.h"

#define CLOSE_BOUND_MS 3000 /* SOFTRDMA_CLOSE_TIMEOUT_MS's default */
#define SAFETY_S 40         /* far beyond every bound: a wait that never ends */

static void on_alarm(int sig)
{
	static const char msg[] = "  a bounded wait did not end within the safety timeout\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

/* An id with a QP of its own (library CQs) resolved to the raw listener on port. */
static int qp_id(struct rdma_event_channel *ch, int port, struct rdma_cm_id **c)
{
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };

	if (resolve(ch, port, c))
		return 1;
	CT_CHECK(rdma_create_qp(*c, NULL, &qa) == 0);
	return 0;
}

static int t_disconnect_bound(void)
{
	/* a valid rev 2 peer-to-peer Reply (IRD 1, ORD 1, the Read RTR) */
	static const uint8_t rep[] = "MPA ID Rep Frame\x50\x02\x00\x04\x80\x01\x40\x01";
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;
	uint8_t buf[64];
	int lfd, fd, port;
	long t0, took;

	lfd = raw_listener(&port);
	CT_CHECK(lfd >= 0);
	if (qp_id(ch, port, &c))
		return 1;
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ .initiator_depth = 1,
							     .responder_resources = 1 }) == 0);
	fd = accept(lfd, NULL, NULL);
	CT_CHECK(fd >= 0);
	CT_CHECK(recv(fd, buf, 24, MSG_WAITALL) == 24 && memcmp(buf, "MPA ID Req Frame", 16) == 0);
	CT_CHECK(send(fd, rep, 24, 0) == 24);
	ev = ct_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	/* synchronous from here: rdma_disconnect waits for its DISCONNECTED */
	CT_CHECK(rdma_migrate_id(c, NULL) == 0);
	signal(SIGALRM, on_alarm);
	alarm(SAFETY_S);
	t0 = ct_now_ms();
	CT_CHECK(rdma_disconnect(c) == 0);
	took = ct_now_ms() - t0;
	alarm(0);
	fprintf(stderr, "  rdma_disconnect returned after %ld ms\n", took);
	CT_CHECK(took >= CLOSE_BOUND_MS - 1); /* the orderly close was given its time */
	CT_CHECK(tcp_reaches(fd, TCP_CLOSE, SAFETY_S * 1000L)); /* then aborted: a reset */
	rdma_destroy_qp(c);
	CT_CHECK(rdma_destroy_id(c) == 0);
	close(fd);
	close(lfd);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int t_held_request(void)
{
	static const uint8_t req[] = "MPA ID Req Frame\x40\x01\x00\x00";
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param ap = { 0 };
	struct pollfd pfd;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *s;
	uint8_t buf[64];
	int port, fd;
	long t0;

	if (listener(ch, &l, &port))
		return 1;
	fd = raw_connect(port);
	CT_CHECK(fd >= 0);
	t0 = ct_now_ms();
	CT_CHECK(send(fd, req, 20, 0) == 20);
	ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 5000);
	CT_CHECK(ev);
	s = ev->id;
	rdma_ack_cm_event(ev);
	/* the application sits on it: the peer gets an MPA Reject, then our FIN */
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	CT_CHECK(poll(&pfd, 1, SAFETY_S * 1000) == 1);
	CT_CHECK(ct_now_ms() - t0 >= ct_accept_bound_ms() - 1);
	CT_CHECK(recv(fd, buf, 20, MSG_WAITALL) == 20);
	CT_CHECK(memcmp(buf, "MPA ID Rep Frame", 16) == 0 && (buf[16] & 0x20)); /* R: reject */
	CT_CHECK(recv(fd, buf, 1, 0) == 0);
	/* no local event; the request can no longer be answered */
	CT_CHECK(quiet(ch, 100) == 0);
	errno = 0;
	CT_CHECK(rdma_accept(s, &ap) == -1 && errno == ECONNRESET);
	errno = 0;
	CT_CHECK(rdma_reject(s, NULL, 0) == -1 && errno == ECONNRESET);
	CT_CHECK(rdma_destroy_id(s) == 0);
	close(fd);
	CT_CHECK(rdma_destroy_id(l) == 0);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* rnr_retry as ibv_query_qp reports it. */
static int rnr_retry_of(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_RNR_RETRY, &ia))
		return -1;
	return a.rnr_retry;
}

/* A completion on cq within the safety timeout (polled: the CQs have channels nobody arms). */
static int one_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	long end = ct_now_ms() + SAFETY_S * 1000L;
	int r;

	while ((r = ibv_poll_cq(cq, 1, wc)) == 0 && ct_now_ms() < end)
		usleep(200);
	CT_CHECK(r == 1);
	return 0;
}

static int t_rnr_retry(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .initiator_depth = 1, .responder_resources = 1,
				      .retry_count = 7, .rnr_retry_count = 5 };
	struct rdma_conn_param ap = { .initiator_depth = 1, .responder_resources = 1,
				      .rnr_retry_count = 6 };
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
	char out[16] = "early send", in[16] = { 0 };
	struct ibv_mr *mo, *mi;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l, *c, *s;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr swr, *sbad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int port;

	if (listener(ch, &l, &port) || qp_id(ch, port, &c))
		return 1;
	CT_CHECK(rdma_connect(c, &cp) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 5000);
	CT_CHECK(ev);
	s = ev->id;
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_create_qp(s, NULL, &qa) == 0);
	CT_CHECK(rdma_accept(s, &ap) == 0);
	for (int i = 0; i < 2; i++) {
		ev = ct_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 5000);
		CT_CHECK(ev);
		rdma_ack_cm_event(ev);
	}
	CT_CHECK(rnr_retry_of(c->qp) == 5);
	CT_CHECK(rnr_retry_of(s->qp) == 6);

	/* the client's Send arrives before the server has a receive: it waits for one */
	mo = ibv_reg_mr(c->pd, out, sizeof(out), IBV_ACCESS_LOCAL_WRITE);
	mi = ibv_reg_mr(s->pd, in, sizeof(in), IBV_ACCESS_LOCAL_WRITE);
	CT_CHECK(mo && mi);
	sge = (struct ibv_sge){ .addr = (uintptr_t)out, .length = sizeof(out), .lkey = mo->lkey };
	swr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				    .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	CT_CHECK(ibv_post_send(c->qp, &swr, &sbad) == 0);
	CT_CHECK(one_wc(c->send_cq, &wc) == 0 && wc.status == IBV_WC_SUCCESS);
	sge = (struct ibv_sge){ .addr = (uintptr_t)in, .length = sizeof(in), .lkey = mi->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 2, .sg_list = &sge, .num_sge = 1 };
	CT_CHECK(ibv_post_recv(s->qp, &rwr, &rbad) == 0);
	CT_CHECK(one_wc(s->recv_cq, &wc) == 0);
	if (wc.status != IBV_WC_SUCCESS)
		CT_FAIL("held Send: %s", ibv_wc_status_str(wc.status));
	CT_CHECK(memcmp(in, out, sizeof(out)) == 0);

	CT_CHECK(rdma_disconnect(c) == 0);
	for (int i = 0; i < 2; i++) {
		ev = ct_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 10000);
		CT_CHECK(ev);
		rdma_ack_cm_event(ev);
	}
	ibv_dereg_mr(mo);
	ibv_dereg_mr(mi);
	rdma_destroy_qp(c);
	rdma_destroy_qp(s);
	CT_CHECK(rdma_destroy_id(c) == 0);
	CT_CHECK(rdma_destroy_id(s) == 0);
	CT_CHECK(rdma_destroy_id(l) == 0);
	rdma_destroy_event_channel(ch);
	return 0;
}

/*
 * recv() as the libraries call it: this program's definition comes first. While flood_port is
 * set, the CM's end of the flooding connection never runs dry: when the kernel has nothing at
 * that moment, 4 KiB more "arrive". The peer is then faster than any reader every time, not
 * only while its thread has a CPU (a reader that empties the socket once would get away).
 */
static atomic_int flood_port; /* the flooding socket's own port (network order); 0: off */

static bool from_flood(int fd, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	/* the port sits at the same offset in both families */
	return getpeername(fd, (struct sockaddr *)&ss, &len) == 0 &&
	       ((struct sockaddr_in *)&ss)->sin_port == port;
}

__attribute__((visibility("default"))) ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	ssize_t n = syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
	int port = atomic_load(&flood_port), err = errno;

	if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK) && port && len && from_flood(fd, port)) {
		n = (ssize_t)(len < 4096 ? len : 4096);
		memset(buf, 'x', (size_t)n);
		return n;
	}
	errno = err;
	return n;
}

/* A peer that sends as fast as it can until told to stop or the socket fails. */
struct flood {
	int fd;
	atomic_bool stop;
	atomic_long sent;
	atomic_int err; /* errno that ended it (0: still sending, or stopped) */
};

static void *flood_main(void *arg)
{
	static uint8_t junk[256 * 1024];
	struct flood *f = arg;

	memset(junk, 'x', sizeof(junk));
	while (!atomic_load(&f->stop)) {
		ssize_t n = send(f->fd, junk, sizeof(junk), MSG_NOSIGNAL);

		if (n > 0) {
			atomic_fetch_add(&f->sent, n);
		} else if (n < 0 && errno != EINTR) {
			atomic_store(&f->err, errno);
			break;
		}
	}
	return NULL;
}

static int t_drain_bound(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	/* far more than the socket buffers of both ends hold: the CM has been draining */
	const long draining = 64L << 20;
	struct flood f = { .fd = -1 };
	struct rdma_cm_id *l, *c, *s;
	struct sockaddr_storage me;
	socklen_t melen = sizeof(me);
	struct rdma_cm_event *ev;
	long sent_at_event;
	int port, ended;
	pthread_t th;

	if (listener(ch, &l, &port))
		return 1;
	f.fd = raw_connect(port);
	CT_CHECK(f.fd >= 0);
	CT_CHECK(getsockname(f.fd, (struct sockaddr *)&me, &melen) == 0);
	atomic_store(&flood_port, ((struct sockaddr_in *)&me)->sin_port);
	/* not an MPA Request: the CM drops the handshake, then drains whatever follows */
	CT_CHECK(send(f.fd, "GET / HTTP/1.0\r\n\r\n\r\n", 20, 0) == 20);
	CT_CHECK(pthread_create(&th, NULL, flood_main, &f) == 0);
	signal(SIGALRM, on_alarm);
	alarm(SAFETY_S); /* without a bound the engine never comes back: nothing else ends */
	while (atomic_load(&f.sent) < draining && !atomic_load(&f.err))
		usleep(1000);
	CT_CHECK(!atomic_load(&f.err));
	/* the engine must still serve another connection while the flood goes on */
	if (resolve(ch, port, &c))
		return 1;
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ .initiator_depth = 1,
							     .responder_resources = 1 }) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, SAFETY_S * 1000);
	sent_at_event = atomic_load(&f.sent);
	ended = atomic_load(&f.err);
	alarm(0);
	CT_CHECK(ev);
	s = ev->id;
	rdma_ack_cm_event(ev);
	fprintf(stderr, "  CONNECT_REQUEST after %ld MiB of flood%s\n", sent_at_event >> 20,
		ended ? " (the flood had ended)" : "");
	/* The dropped handshake lingers SR_CM_DISCONNECT_TIMEOUT_MS (3 s), then is closed,
	 * which ends the flood: the request came while it still ran. */
	CT_CHECK(!ended);
	atomic_store(&f.stop, true);
	pthread_join(th, NULL);
	atomic_store(&flood_port, 0);
	close(f.fd);
	CT_CHECK(rdma_reject(s, NULL, 0) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_REJECTED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_destroy_id(s) == 0);
	CT_CHECK(rdma_destroy_id(c) == 0);
	CT_CHECK(rdma_destroy_id(l) == 0);
	rdma_destroy_event_channel(ch);
	return 0;
}

static const struct ct_test tests[] = {
	{ "disconnect_bound", t_disconnect_bound },
	{ "held_request", t_held_request },
	{ "rnr_retry", t_rnr_retry },
	{ "drain_bound", t_drain_bound },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
