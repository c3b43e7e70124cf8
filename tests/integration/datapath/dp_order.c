// SPDX-License-Identifier: MIT
/*
 * Completion order on a shared CQ: a Send must complete no later than the peer can have
 * answered it. A ping-pong between the two QPs of a dp_pair (each with one CQ for its send
 * and receive queues): the client sends request i, the server answers it with reply i, the
 * client sends request i+1 only once it polled reply i. Every receive is checked against
 * the sends its sender had to read first: on the client, reply i may be polled only after
 * the completion of request i; on the server, request i+1 only after the completion of
 * reply i. iSER targets (tgtd) change a connection's phase on the Send completion of their
 * last login response and drop the login when the initiator's first command is polled
 * first, which is what this catches.
 *
 * Modes (argv[1]):
 *   busy   each side busy-polls its CQ (poll-mode progress); the client posts from a second
 *          thread, so the polling thread receives while the posting one may be between
 *          its sendmsg() and the Send's completion
 *   event  each side waits on its completion channel (blocking ibv_get_cq_event): the
 *          engine thread, or the waiting thread as its helper, receives
 * argv[2]: iterations (default 20000). Any inversion fails the test; the count is printed.
 * Every wait is bounded by a watchdog: no progress for 30 s fails the test.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dp_common.h"

#define ORD_MSG 64
#define ORD_NRECV 16
#define ORD_STALL_S 30

struct ord_side {
	struct dp_side *s;
	const char *name;
	struct ibv_mr *mr;
	uint8_t recv[ORD_NRECV][ORD_MSG];
	uint8_t send[ORD_MSG];
	atomic_long sends_done;   /* send completions polled (sends complete in order) */
	atomic_long recvs_done;   /* receive completions polled */
	long inversions;
};

static struct dp_pair p;
static struct ord_side cli = { .name = "client" }, srv = { .name = "server" };
static long iters = 20000;
static bool busy;
static atomic_long progress;

#define ORD_SEND_WRID 0x5000000000000000ull

static void ord_setup(struct ord_side *o, struct dp_side *s)
{
	o->s = s;
	o->mr = dp_reg(s->pd, o, sizeof(*o), IBV_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < ORD_NRECV; i++)
		dp_post_recv(s, (uint64_t)i, o->mr, o->recv[i], ORD_MSG);
}

static void ord_send(struct ord_side *o, long seq)
{
	memcpy(o->send, &seq, sizeof(seq));
	DP_CHECK(dp_post_send(o->s, IBV_WR_SEND, ORD_SEND_WRID | (uint64_t)seq, o->mr, o->send,
			      ORD_MSG, 0, 0, IBV_SEND_SIGNALED) == 0,
		 "post_send: %s", strerror(errno));
}

/*
 * Next completion of o's CQ, polled or waited for on its channel. The caller checks the
 * order; this only keeps the counters.
 */
static struct ibv_wc ord_next(struct ord_side *o)
{
	struct ibv_wc wc;

	for (;;) {
		int n = ibv_poll_cq(o->s->cq, 1, &wc);

		DP_CHECK(n >= 0, "%s: ibv_poll_cq failed", o->name);
		if (n == 1)
			break;
		if (busy) {
			sched_yield(); /* two cores for both sides and their engines */
			continue;
		}
		DP_CHECK(ibv_req_notify_cq(o->s->cq, 0) == 0, "req_notify");
		n = ibv_poll_cq(o->s->cq, 1, &wc);
		DP_CHECK(n >= 0, "%s: ibv_poll_cq failed", o->name);
		if (n == 1)
			break;
		{
			struct ibv_cq *ecq;
			void *ectx;

			DP_CHECK(ibv_get_cq_event(o->s->ch, &ecq, &ectx) == 0, "get_cq_event: %s",
				 strerror(errno));
			ibv_ack_cq_events(ecq, 1);
		}
	}
	DP_CHECK(wc.status == IBV_WC_SUCCESS, "%s: wr %llx: %s", o->name,
		 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	atomic_fetch_add(&progress, 1);
	if (wc.opcode == IBV_WC_SEND) {
		DP_CHECK(wc.wr_id == (ORD_SEND_WRID | (uint64_t)atomic_load(&o->sends_done)),
			 "%s: send completion %llx out of order", o->name,
			 (unsigned long long)wc.wr_id);
		atomic_fetch_add(&o->sends_done, 1);
	} else {
		DP_CHECK(wc.opcode == IBV_WC_RECV, "%s: opcode %d", o->name, wc.opcode);
		atomic_fetch_add(&o->recvs_done, 1);
	}
	return wc;
}

/* A receive completion wc on o: check that the sends its message answers are done. */
static long ord_received(struct ord_side *o, const struct ibv_wc *wc, long answers)
{
	long seq;

	memcpy(&seq, o->recv[wc->wr_id], sizeof(seq));
	dp_post_recv(o->s, wc->wr_id, o->mr, o->recv[wc->wr_id], ORD_MSG);
	/* the message answers our sends 0..answers: their completions come first */
	if (answers >= 0 && atomic_load(&o->sends_done) <= answers) {
		if (!o->inversions)
			fprintf(stderr, "%s: message %ld polled before the completion of our "
				"send %ld it answers\n", o->name, seq, answers);
		o->inversions++;
	}
	return seq;
}

/* The server answers request i with reply i; request i answers reply i-1. */
static void *ord_server(void *arg)
{
	(void)arg;
	for (long i = 0; i < iters;) {
		struct ibv_wc wc = ord_next(&srv);

		if (wc.opcode != IBV_WC_RECV)
			continue;
		DP_CHECK(ord_received(&srv, &wc, i - 1) == i, "server: request out of sequence");
		ord_send(&srv, i);
		i++;
	}
	/* the last reply's completion */
	while (atomic_load(&srv.sends_done) < iters)
		ord_next(&srv);
	return NULL;
}

/* Busy mode: the client posts from this thread while the main thread polls. */
static void *ord_client_poster(void *arg)
{
	(void)arg;
	for (long i = 0; i < iters; i++) {
		while (atomic_load(&cli.recvs_done) < i)
			sched_yield();
		ord_send(&cli, i);
	}
	return NULL;
}

static void *ord_watchdog(void *arg)
{
	long last = -1;
	int still = 0;

	(void)arg;
	for (;;) {
		long now = atomic_load(&progress);

		sleep(1);
		still = now == last ? still + 1 : 0;
		last = now;
		if (still >= ORD_STALL_S) {
			fprintf(stderr, "no completion for %d s (client %ld/%ld, server %ld/%ld)\n",
				ORD_STALL_S, atomic_load(&cli.sends_done),
				atomic_load(&cli.recvs_done), atomic_load(&srv.sends_done),
				atomic_load(&srv.recvs_done));
			_exit(1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t st, pt, wt;

	if (argc < 2 || (strcmp(argv[1], "busy") && strcmp(argv[1], "event"))) {
		fprintf(stderr, "usage: dp_order busy|event [iterations]\n");
		return 2;
	}
	busy = !strcmp(argv[1], "busy");
	if (argc > 2)
		iters = atol(argv[2]);
	dp_connect(&p, NULL);
	ord_setup(&cli, &p.cli);
	ord_setup(&srv, &p.srv);
	pthread_create(&wt, NULL, ord_watchdog, NULL);
	pthread_detach(wt);
	pthread_create(&st, NULL, ord_server, NULL);
	if (busy)
		pthread_create(&pt, NULL, ord_client_poster, NULL);
	for (long i = 0; i < iters;) {
		struct ibv_wc wc;

		if (!busy)
			ord_send(&cli, i); /* event mode: this thread posts too */
		do
			wc = ord_next(&cli);
		while (wc.opcode != IBV_WC_RECV);
		DP_CHECK(ord_received(&cli, &wc, i) == i, "client: reply out of sequence");
		i++;
	}
	if (busy)
		pthread_join(pt, NULL);
	pthread_join(st, NULL);
	while (atomic_load(&cli.sends_done) < iters)
		ord_next(&cli);
	printf("%s: %ld round trips, inversions: client %ld, server %ld\n", argv[1], iters,
	       cli.inversions, srv.inversions);
	dp_disconnect(&p);
	return cli.inversions || srv.inversions ? 1 : 0;
}
