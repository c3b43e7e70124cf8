// SPDX-License-Identifier: MIT
/*
 * Connection ends and failures with real QPs: whoever disconnects (or both at once), each
 * side gets exactly one DISCONNECTED and its posted receives come back flushed through the
 * completion channel; a rejected connect flushes the active QP; a path that dies under an
 * RDMA_OPTION_ID_ACK_TIMEOUT ends the connection in about the time asked for.
 * Usage: cm_qp <test> [address [port]]; exit 0 = pass, 77 = skip. serve/dead_path are
 * the two halves of the dead-path case, run in two namespaces by cm_netns.sh.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_verbs.h>

#include "../../common/cm_test.h"

#define NRECV 2

struct side {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t buf[NRECV][64];
};


/* QP with the library's CQs and channels, NRECV receives posted, CQ armed. */
static int make_qp(struct side *sd)
{
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 4, .max_recv_wr = NRECV,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };

	CT_CHECK(rdma_create_qp(sd->id, NULL, &qa) == 0);
	CT_CHECK(sd->id->recv_cq && sd->id->recv_cq_channel && sd->id->pd);
	sd->mr = ibv_reg_mr(sd->id->pd, sd->buf, sizeof(sd->buf), IBV_ACCESS_LOCAL_WRITE);
	CT_CHECK(sd->mr);
	for (int i = 0; i < NRECV; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)sd->buf[i], .length = 64,
				       .lkey = sd->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;

		CT_CHECK(ibv_post_recv(sd->id->qp, &wr, &bad) == 0);
	}
	CT_CHECK(ibv_req_notify_cq(sd->id->recv_cq, 0) == 0);
	CT_CHECK(ibv_req_notify_cq(sd->id->send_cq, 0) == 0);
	return 0;
}

/* A completion-channel event for cq within ms, then every one of its completions. */
static int wait_cq(struct ibv_cq *cq, struct ibv_comp_channel *cc, struct ibv_wc *wc, int n,
		   int ms)
{
	struct pollfd pfd = { .fd = cc->fd, .events = POLLIN };
	struct ibv_cq *ecq;
	void *ctx;
	int got = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		CT_CHECK(r >= 0);
		got += r;
		if (got == n)
			break;
		CT_CHECK(poll(&pfd, 1, ms) == 1);
		CT_CHECK(ibv_get_cq_event(cc, &ecq, &ctx) == 0 && ecq == cq);
		ibv_ack_cq_events(cq, 1);
		CT_CHECK(ibv_req_notify_cq(cq, 0) == 0);
	}
	return 0;
}

/* Both receives of a side came back flushed, and nothing else. */
static int flushed(struct side *sd)
{
	struct ibv_wc wc[NRECV + 1];

	if (wait_cq(sd->id->recv_cq, sd->id->recv_cq_channel, wc, NRECV, 5000))
		return 1;
	for (int i = 0; i < NRECV; i++)
		if (wc[i].status != IBV_WC_WR_FLUSH_ERR || wc[i].wr_id != 100 + (uint64_t)i)
			CT_FAIL("receive %d: wr_id %llu %s", i, (unsigned long long)wc[i].wr_id,
				ibv_wc_status_str(wc[i].status));
	CT_CHECK(ibv_poll_cq(sd->id->recv_cq, 1, wc) == 0);
	return 0;
}

static void put_side(struct side *sd)
{
	if (sd->id) {
		rdma_destroy_qp(sd->id);
		rdma_destroy_id(sd->id);
	}
	if (sd->mr)
		ibv_dereg_mr(sd->mr);
	rdma_destroy_event_channel(sd->ch);
}

/* Listener on ls->ch, client c with a QP connecting with pd, the request s fetched. */
static int request_qp(struct side *ls, struct side *c, struct side *s, const char *pd)
{
	struct rdma_conn_param p = { .private_data = pd, .private_data_len = 4,
				     .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_event *ev;
	int port;

	ls->ch = rdma_create_event_channel();
	c->ch = rdma_create_event_channel();
	s->ch = rdma_create_event_channel();
	CT_CHECK(ls->ch && c->ch && s->ch);
	if (listener(ls->ch, &ls->id, &port) || resolve(c->ch, port, &c->id) || make_qp(c))
		return 1;
	CT_CHECK(rdma_connect(c->id, &p) == 0);
	ev = ct_expect(ls->ch, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CT_CHECK(ev && ev->param.conn.private_data_len == 4 &&
		 memcmp(ev->param.conn.private_data, pd, 4) == 0);
	s->id = ev->id;
	rdma_ack_cm_event(ev);
	/* the request's events go to a channel of their own, to tell the sides apart */
	CT_CHECK(rdma_migrate_id(s->id, s->ch) == 0);
	return 0;
}

static int connect_qp(struct side *ls, struct side *c, struct side *s)
{
	struct rdma_conn_param ap = { .private_data = "srv", .private_data_len = 4,
				      .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_event *ev;

	if (request_qp(ls, c, s, "cli") || make_qp(s))
		return 1;
	CT_CHECK(rdma_accept(s->id, &ap) == 0);
	/* with a QP the active side never sees CONNECT_RESPONSE */
	ev = ct_expect(c->ch, RDMA_CM_EVENT_ESTABLISHED, 3000);
	CT_CHECK(ev && ev->id == c->id && ev->status == 0);
	CT_CHECK(ev->param.conn.private_data_len == 4 &&
		 memcmp(ev->param.conn.private_data, "srv", 4) == 0);
	rdma_ack_cm_event(ev);
	ev = ct_expect(s->ch, RDMA_CM_EVENT_ESTABLISHED, 3000);
	CT_CHECK(ev && ev->id == s->id && ev->status == 0);
	rdma_ack_cm_event(ev);
	return 0;
}

static int one_disconnected(struct side *sd)
{
	struct rdma_cm_event *ev = ct_expect(sd->ch, RDMA_CM_EVENT_DISCONNECTED, 5000);

	CT_CHECK(ev && ev->id == sd->id && ev->status == 0);
	rdma_ack_cm_event(ev);
	return 0;
}

static pthread_barrier_t bar;

static void *disc_thread(void *arg)
{
	pthread_barrier_wait(&bar);
	return (void *)(intptr_t)rdma_disconnect(arg);
}

/* who: 0 active side first, 1 passive side first, 2 both at the same time */
static int disc_case(int who)
{
	struct side ls = { 0 }, c = { 0 }, s = { 0 };
	pthread_t t1, t2;
	void *r1, *r2;

	if (connect_qp(&ls, &c, &s))
		return 1;
	if (who == 2) {
		pthread_barrier_init(&bar, NULL, 2);
		pthread_create(&t1, NULL, disc_thread, c.id);
		pthread_create(&t2, NULL, disc_thread, s.id);
		pthread_join(t1, &r1);
		pthread_join(t2, &r2);
		pthread_barrier_destroy(&bar);
		CT_CHECK(r1 == NULL && r2 == NULL);
	} else {
		CT_CHECK(rdma_disconnect(who ? s.id : c.id) == 0);
	}
	/* the peer's DISCONNECTED comes without it calling rdma_disconnect (iWARP) */
	if (one_disconnected(&s) || one_disconnected(&c) || flushed(&c) || flushed(&s))
		return 1;
	/* the other side's call after the fact: nothing more */
	CT_CHECK(rdma_disconnect(who ? c.id : s.id) == 0);
	CT_CHECK(rdma_disconnect(who ? s.id : c.id) == 0);
	CT_CHECK(quiet(c.ch, 300) == 0 && quiet(s.ch, 0) == 0 && quiet(ls.ch, 0) == 0);
	put_side(&s);
	put_side(&c);
	put_side(&ls);
	return 0;
}

static int t_disc_active(void)
{
	return disc_case(0);
}

static int t_disc_passive(void)
{
	return disc_case(1);
}

static int t_disc_both(void)
{
	return disc_case(2);
}

/* A reject: REJECTED with the reject's private data, and the active QP flushed. */
static int t_reject_qp(void)
{
	struct side ls = { 0 }, c = { 0 }, s = { 0 };
	struct rdma_cm_event *ev;

	if (request_qp(&ls, &c, &s, "knck"))
		return 1;
	CT_CHECK(rdma_reject(s.id, "busy", 5) == 0);
	ev = ct_expect(c.ch, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->id == c.id && ev->status == -ECONNREFUSED);
	CT_CHECK(ev->param.conn.private_data_len == 5 &&
		 memcmp(ev->param.conn.private_data, "busy", 5) == 0);
	rdma_ack_cm_event(ev);
	if (flushed(&c))
		return 1;
	CT_CHECK(rdma_connect(c.id, &(struct rdma_conn_param){ 0 }) == -1 && errno == EINVAL);
	CT_CHECK(quiet(s.ch, 200) == 0 && quiet(ls.ch, 0) == 0 && quiet(c.ch, 0) == 0);
	rdma_destroy_id(s.id);
	s.id = NULL;
	put_side(&s);
	put_side(&c);
	put_side(&ls);
	return 0;
}

/*
 * As librdmacm: an id with a device (ADDR_RESOLVED, CONNECT_REQUEST) has the device's default
 * PD in id->pd, so rdma_reg_msgs works before any QP and a QP created without a PD lands on
 * it; it was NULL until the first QP.
 */
static int t_default_pd(void)
{
	struct side ls = { 0 }, c = { 0 }, s = { 0 };
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_event *ev;
	struct ibv_mr *msgs;
	struct ibv_pd *pd;
	char buf[32];
	int port;

	ls.ch = rdma_create_event_channel();
	c.ch = rdma_create_event_channel();
	CT_CHECK(ls.ch && c.ch);
	if (listener(ls.ch, &ls.id, &port) || resolve(c.ch, port, &c.id))
		return 1;
	CT_CHECK(c.id->verbs && c.id->pd && c.id->pd->context == c.id->verbs);
	pd = c.id->pd;
	msgs = rdma_reg_msgs(c.id, buf, sizeof(buf));
	CT_CHECK(msgs && msgs->pd == pd);
	if (make_qp(&c))
		return 1;
	CT_CHECK(c.id->qp->pd == pd && c.id->pd == pd);
	CT_CHECK(rdma_connect(c.id, &p) == 0);
	ev = ct_expect(ls.ch, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CT_CHECK(ev && ev->id->verbs && ev->id->pd && ev->id->pd->context == ev->id->verbs);
	s.id = ev->id;
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_reject(s.id, NULL, 0) == 0);
	ev = ct_expect(c.ch, RDMA_CM_EVENT_REJECTED, 3000);
	CT_CHECK(ev && ev->id == c.id);
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_dereg_mr(msgs) == 0);
	rdma_destroy_id(s.id);
	s.id = NULL;
	put_side(&c);
	put_side(&ls);
	return 0;
}

/*
 * A rejected connect racing the application's rdma_destroy_qp (MPI ranks connecting to each
 * other reject one of each pair and tear down): the CM moves the QP to ERR after dropping
 * its lock; destroy must wait for that, or the flush runs on freed memory (ASan/TSan) and
 * completions of WRs never posted reach the shared CQ. Each round posts receives with
 * round-unique wr_ids; every completion on the shared CQ must be one of them, once.
 */
#define RD_ROUNDS 300
#define RD_RECV 4

struct rd_server {
	struct rdma_event_channel *ch;
	atomic_int stop;
};

static void *rd_reject_thread(void *arg)
{
	struct rd_server *sv = arg;

	while (!atomic_load(&sv->stop)) {
		struct rdma_cm_event *ev = ct_get(sv->ch, 100);
		struct rdma_cm_id *req;

		if (!ev)
			continue;
		req = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->id : NULL;
		if (req)
			rdma_reject(req, NULL, 0);
		rdma_ack_cm_event(ev);
		if (req)
			rdma_destroy_id(req);
	}
	return NULL;
}

static int rd_poll(struct ibv_cq *cq, uint8_t *seen, uint64_t nposted)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			uint64_t id = wc[i].wr_id;

			if (id < 1000 || id - 1000 >= nposted || seen[id - 1000]) {
				fprintf(stderr, "completion with wr_id %llu never posted (or twice)\n",
					(unsigned long long)id);
				return 1;
			}
			seen[id - 1000] = 1;
		}
	}
	CT_CHECK(n == 0);
	return 0;
}

static int t_reject_destroy(void)
{
	static uint8_t seen[RD_ROUNDS * RD_RECV];
	struct rd_server sv = { 0 };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *ls;
	struct ibv_cq *cq = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	uint8_t buf[64];
	uint64_t nposted = 0;
	pthread_t t;
	int port;

	sv.ch = rdma_create_event_channel();
	ch = rdma_create_event_channel();
	CT_CHECK(sv.ch && ch);
	if (listener(sv.ch, &ls, &port))
		return 1;
	CT_CHECK(pthread_create(&t, NULL, rd_reject_thread, &sv) == 0);
	for (int r = 0; r < RD_ROUNDS; r++) {
		struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
		struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 2, .max_recv_wr = RD_RECV,
							.max_send_sge = 1, .max_recv_sge = 1 },
					       .qp_type = IBV_QPT_RC };
		struct rdma_cm_event *ev;
		struct rdma_cm_id *id;

		if (resolve(ch, port, &id))
			return 1;
		if (!cq) {
			pd = id->pd;
			CT_CHECK(pd);
			cq = ibv_create_cq(id->verbs, RD_ROUNDS * RD_RECV, NULL, NULL, 0);
			mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
			CT_CHECK(cq && mr);
		}
		qa.send_cq = qa.recv_cq = cq;
		CT_CHECK(rdma_create_qp(id, pd, &qa) == 0);
		for (int k = 0; k < RD_RECV; k++) {
			struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = sizeof(buf),
					       .lkey = mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = 1000 + nposted, .sg_list = &sge,
						  .num_sge = 1 };
			struct ibv_recv_wr *bad;

			CT_CHECK(ibv_post_recv(id->qp, &wr, &bad) == 0);
			nposted++;
		}
		CT_CHECK(rdma_connect(id, &p) == 0);
		/* vary the moment of destruction across the window of the Reject's arrival */
		for (volatile int spin = 0; spin < (r % 50) * 2000; spin++)
			;
		rdma_destroy_qp(id);
		ev = ct_get(ch, 5000);
		CT_CHECK(ev && ev->id == id);
		CT_CHECK(ev->event == RDMA_CM_EVENT_REJECTED ||
			 ev->event == RDMA_CM_EVENT_CONNECT_ERROR);
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id);
		if (rd_poll(cq, seen, nposted))
			return 1;
	}
	atomic_store(&sv.stop, 1);
	pthread_join(t, NULL);
	if (rd_poll(cq, seen, nposted))
		return 1;
	CT_CHECK(ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0);
	rdma_destroy_id(ls);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(sv.ch);
	return 0;
}

/* ---- a dead path under ACK_TIMEOUT: two processes, cm_netns.sh cuts the path ---- */

#define DEAD_ACK_TIMEOUT 18 /* 4.096 us * 2^18 = 1.07 s */

/* Accept one connection with a QP; stay until killed or disconnected. */
static int t_serve(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct side s = { .ch = ch };
	struct rdma_cm_id *l;

	CT_CHECK(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(ct_addr(ip, ct_port, &ss) == 0);
	CT_CHECK(rdma_bind_addr(l, (struct sockaddr *)&ss) == 0);
	CT_CHECK(rdma_listen(l, 1) == 0);
	printf("LISTENING\n");
	fflush(stdout);
	ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 20000);
	CT_CHECK(ev);
	s.id = ev->id;
	rdma_ack_cm_event(ev);
	if (make_qp(&s))
		return 1;
	CT_CHECK(rdma_accept(s.id, &(struct rdma_conn_param){ .responder_resources = 1,
							      .initiator_depth = 1 }) == 0);
	ev = ct_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	ev = ct_expect(ch, RDMA_CM_EVENT_DISCONNECTED, 60000);
	if (ev)
		rdma_ack_cm_event(ev);
	s.ch = NULL;
	rdma_destroy_qp(s.id);
	rdma_destroy_id(s.id);
	ibv_dereg_mr(s.mr);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

/*
 * Connect with ACK_TIMEOUT 18, say READY, wait for a line on stdin (the path is cut by
 * then), post a Send: DISCONNECTED arrives once TCP's user timeout (1074 ms) has passed
 * without an acknowledgement, well before TCP's own limit, and the receives are flushed.
 */
static int t_dead_path(void)
{
	struct side c = { .ch = rdma_create_event_channel() };
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct rdma_cm_event *ev;
	struct ibv_wc wc;
	char line[16];
	long t0, t_wc, t_disc;

	if (resolve(c.ch, ct_port, &c.id) || make_qp(&c))
		return 1;
	CT_CHECK(rdma_set_option(c.id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
				 &(uint8_t){ DEAD_ACK_TIMEOUT }, 1) == 0);
	CT_CHECK(rdma_connect(c.id, &(struct rdma_conn_param){ .responder_resources = 1,
							       .initiator_depth = 1 }) == 0);
	ev = ct_expect(c.ch, RDMA_CM_EVENT_ESTABLISHED, 5000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	printf("READY\n");
	fflush(stdout);
	CT_CHECK(fgets(line, sizeof(line), stdin) != NULL);

	sge = (struct ibv_sge){ .addr = (uintptr_t)c.buf[0], .length = 64, .lkey = c.mr->lkey };
	t0 = ct_now_ms();
	CT_CHECK(ibv_post_send(c.id->qp, &wr, &bad) == 0);
	if (wait_cq(c.id->send_cq, c.id->send_cq_channel, &wc, 1, 30000))
		return 1;
	t_wc = ct_now_ms() - t0;
	/* iWARP completes a Send once TCP has it: success says nothing about the peer */
	CT_CHECK(wc.wr_id == 7);
	/* the next hop's new MAC is announced first (ADDR_CHANGE, a notice), then the end */
	ev = ct_get(c.ch, 30000);
	if (ev && ev->event == RDMA_CM_EVENT_ADDR_CHANGE) {
		rdma_ack_cm_event(ev);
		ev = ct_get(c.ch, 30000);
	}
	CT_CHECK(ev && ev->event == RDMA_CM_EVENT_DISCONNECTED);
	t_disc = ct_now_ms() - t0;
	CT_CHECK(ev && ev->id == c.id);
	rdma_ack_cm_event(ev);
	printf("dead path: send %s after %ld ms, DISCONNECTED after %ld ms (asked 1074 ms)\n",
	       ibv_wc_status_str(wc.status), t_wc, t_disc);
	/* not before the user timeout; and in its order of magnitude (the last RTO plus the
	 * engine's turn, with room for a loaded machine), not TCP's minutes */
	CT_CHECK(t_disc >= 1000 && t_disc < 6000);
	if (flushed(&c))
		return 1;
	put_side(&c);
	return 0;
}

static const struct ct_test tests[] = {
	{ "disc_active", t_disc_active },
	{ "disc_passive", t_disc_passive },
	{ "disc_both", t_disc_both },
	{ "reject_qp", t_reject_qp },
	{ "default_pd", t_default_pd },
	{ "reject_destroy", t_reject_destroy },
	{ "serve", t_serve },
	{ "dead_path", t_dead_path },
};

int main(int argc, char **argv)
{
	return ct_main(argc, argv, tests, sizeof(tests) / sizeof(tests[0]));
}
