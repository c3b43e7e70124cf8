// SPDX-License-Identifier: MIT
/*
 * Posting from several threads at once (verbs allow it on one QP): DP_THREADS threads post
 * SENDs and RDMA WRITEs on the client QP while a poller thread reaps the shared CQ; on the
 * server a poller thread checks every message and reposts its receive. Every Send arrives
 * once, in its thread's order, intact; every thread's last Write is in place. Run under the
 * ThreadSanitizer build too (label tsan), where it shows races between posting, polling and
 * the engine thread.
 *
 * Polling registered memory, as ib_write_lat does: each side spins on the last byte of its
 * region until the peer's RDMA WRITE has placed it, checks the payload and writes back. The
 * engine thread places the bytes while the application thread reads them; under TSan that
 * must not count as a race of ours (common/sr_dma.h), as a NIC's DMA would not. The last byte
 * must land last: poll_write's 4 KiB Writes are copied from the transport's staging buffer,
 * poll_write_large's 256 KiB ones are mostly received straight into the region.
 * Usage: dp_threads post|poll_write|poll_write_large
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "dp_common.h"

#define DP_THREADS 4
#define DP_MSGS 400          /* Sends (and as many Writes) per posting thread */
#define DP_RING 8            /* source buffers of a thread, reused round robin */
#define DP_MSG 256           /* one Send */
#define DP_WRITE 4096        /* one Write, into the thread's own part of the server region */
#define DP_NRECV 128
#define DP_SAFETY_NS (30ull * 1000000000ull)

struct dp_msg {
	uint32_t thread, seq;
	uint8_t fill[DP_MSG - 8];
};

static struct dp_pair p;
static struct ibv_mr *cli_mr, *srv_mr, *wr_mr;
static struct {
	struct dp_msg msg;
	uint8_t write[DP_WRITE];
} cli_buf[DP_THREADS][DP_RING];                      /* each thread's sources */
static uint8_t srv_recv[DP_NRECV][DP_MSG];
static uint8_t srv_area[DP_THREADS][DP_WRITE];       /* the Writes' target */
static atomic_int outstanding[DP_THREADS];
static atomic_uint completions;

static uint64_t dp_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void post_recv(int slot)
{
	dp_post_recv(&p.srv, (uint64_t)slot, srv_mr, srv_recv[slot], DP_MSG);
}

/* A posting thread: Write then Send, DP_MSGS times, from a ring of DP_RING sources. */
static void *sender(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	uint64_t end = dp_ns() + DP_SAFETY_NS;

	for (uint32_t seq = 0; seq < DP_MSGS; seq++) {
		struct dp_msg *m = &cli_buf[t][seq % DP_RING].msg;
		uint8_t *w = cli_buf[t][seq % DP_RING].write;

		/* a source is reused once its last requests completed: a QP's sends complete in
		 * posting order, so at most 2 * (DP_RING - 1) of this thread's are outstanding */
		while (atomic_load(&outstanding[t]) > 2 * (DP_RING - 1)) {
			DP_CHECK(dp_ns() < end, "thread %u: completions stopped at %u", t, seq);
			sched_yield();
		}
		m->thread = t;
		m->seq = seq;
		dp_fill(m->fill, sizeof(m->fill), t << 16 | seq);
		dp_fill(w, DP_WRITE, t << 16 | seq | 0x8000);
		atomic_fetch_add(&outstanding[t], 2);
		DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_WRITE, (uint64_t)t << 32 | seq, cli_mr, w,
				      DP_WRITE, (uintptr_t)srv_area[t], wr_mr->rkey,
				      IBV_SEND_SIGNALED) == 0, "post write: %s", strerror(errno));
		DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, (uint64_t)t << 32 | seq, cli_mr, m,
				      DP_MSG, 0, 0, IBV_SEND_SIGNALED) == 0, "post send: %s",
			 strerror(errno));
	}
	return NULL;
}

/* The client's poller: every completion successful, credited to its thread. */
static void *cli_poller(void *arg)
{
	const unsigned int want = DP_THREADS * DP_MSGS * 2;
	uint64_t end = dp_ns() + DP_SAFETY_NS;

	while (atomic_load(&completions) < want) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(p.cli.cq, 16, wc);

		DP_CHECK(n >= 0, "poll_cq");
		for (int i = 0; i < n; i++) {
			DP_CHECK(wc[i].status == IBV_WC_SUCCESS, "client completion: %s",
				 ibv_wc_status_str(wc[i].status));
			atomic_fetch_sub(&outstanding[wc[i].wr_id >> 32], 1);
			atomic_fetch_add(&completions, 1);
		}
		if (!n) {
			DP_CHECK(dp_ns() < end, "client completions stopped at %u of %u",
				 atomic_load(&completions), want);
			sched_yield();
		}
	}
	return NULL;
}

/* The server's poller: each Send once, in its thread's order, intact; receive reposted. */
static void *srv_poller(void *arg)
{
	uint32_t next[DP_THREADS] = { 0 };
	unsigned int got = 0;
	uint64_t end = dp_ns() + DP_SAFETY_NS;

	while (got < DP_THREADS * DP_MSGS) {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(p.srv.cq, 16, wc);

		DP_CHECK(n >= 0, "poll_cq");
		for (int i = 0; i < n; i++) {
			struct dp_msg *m = (struct dp_msg *)srv_recv[wc[i].wr_id];

			DP_CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len == DP_MSG,
				 "server completion: %s, %u bytes", ibv_wc_status_str(wc[i].status),
				 wc[i].byte_len);
			DP_CHECK(m->thread < DP_THREADS && m->seq == next[m->thread],
				 "thread %u: Send %u arrived, expected %u", m->thread, m->seq,
				 m->thread < DP_THREADS ? next[m->thread] : 0);
			DP_CHECK(dp_check(m->fill, sizeof(m->fill), m->thread << 16 | m->seq),
				 "thread %u Send %u corrupted", m->thread, m->seq);
			next[m->thread]++;
			got++;
			post_recv((int)wc[i].wr_id);
		}
		if (!n) {
			DP_CHECK(dp_ns() < end, "Sends stopped at %u", got);
			sched_yield();
		}
	}
	return NULL;
}

static void case_post(void)
{
	struct dp_opts o = { .max_send_wr = DP_THREADS * DP_RING * 2, .max_recv_wr = DP_NRECV };
	/* the server may fall behind the senders: it holds a Send (TCP backpressure) until
	 * its poller has reposted, rather than ending the stream */
	struct ibv_qp_attr a = { .rnr_retry = 7, .min_rnr_timer = 1 };
	pthread_t st[DP_THREADS], cp, sp;

	dp_connect(&p, &o);
	DP_CHECK(ibv_modify_qp(p.srv.id->qp, &a, IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER) == 0,
		 "modify_qp: %s", strerror(errno));
	cli_mr = dp_reg(p.cli.pd, cli_buf, sizeof(cli_buf), IBV_ACCESS_LOCAL_WRITE);
	srv_mr = dp_reg(p.srv.pd, srv_recv, sizeof(srv_recv), IBV_ACCESS_LOCAL_WRITE);
	wr_mr = dp_reg(p.srv.pd, srv_area, sizeof(srv_area),
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	for (int i = 0; i < DP_NRECV; i++)
		post_recv(i);
	DP_CHECK(pthread_create(&sp, NULL, srv_poller, NULL) == 0, "thread");
	DP_CHECK(pthread_create(&cp, NULL, cli_poller, NULL) == 0, "thread");
	for (uintptr_t t = 0; t < DP_THREADS; t++)
		DP_CHECK(pthread_create(&st[t], NULL, sender, (void *)t) == 0, "thread");
	for (int t = 0; t < DP_THREADS; t++)
		pthread_join(st[t], NULL);
	pthread_join(cp, NULL);
	pthread_join(sp, NULL);
	/* every thread's last Write landed before its last Send, which has arrived */
	for (uint32_t t = 0; t < DP_THREADS; t++)
		DP_CHECK(dp_check(srv_area[t], DP_WRITE, t << 16 | (DP_MSGS - 1) | 0x8000),
			 "thread %u: last Write not in place", t);
	printf("%d threads posted %d Sends and %d Writes each; all arrived in order\n",
	       DP_THREADS, DP_MSGS, DP_MSGS);
	dp_disconnect_wait(&p);
	DP_CHECK(ibv_dereg_mr(cli_mr) == 0 && ibv_dereg_mr(srv_mr) == 0 && ibv_dereg_mr(wr_mr) == 0,
		 "dereg");
	dp_teardown(&p);
}

#define DP_PINGS 200

#define DP_WRITE_LARGE (256 * 1024)

/* Spin until the last byte of buf (written by the peer's RDMA WRITE) is want. */
static void wait_byte(const volatile uint8_t *buf, size_t len, uint8_t want, const char *who)
{
	uint64_t end = dp_ns() + DP_SAFETY_NS;

	while (buf[len - 1] != want) {
		DP_CHECK(dp_ns() < end, "%s: Write %u never landed", who, want);
		sched_yield();
	}
}

static void case_poll_write(size_t len)
{
	uint8_t *src[2], *dst[2]; /* [0] client, [1] server */
	struct ibv_mr *smr[2], *dmr[2];
	struct dp_side *side[2] = { &p.cli, &p.srv };

	dp_connect(&p, NULL);
	for (int k = 0; k < 2; k++) {
		src[k] = calloc(1, len);
		dst[k] = calloc(1, len);
		DP_CHECK(src[k] && dst[k], "calloc");
		smr[k] = dp_reg(side[k]->pd, src[k], len, IBV_ACCESS_LOCAL_WRITE);
		dmr[k] = dp_reg(side[k]->pd, dst[k], len,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	}
	for (uint32_t i = 1; i <= DP_PINGS; i++) {
		for (int k = 0; k < 2; k++) { /* client to server, then back */
			struct ibv_wc wc;

			dp_fill(src[k], len - 1, i << 1 | (uint32_t)k);
			src[k][len - 1] = (uint8_t)i;
			DP_CHECK(dp_post_send(side[k], IBV_WR_RDMA_WRITE, i, smr[k], src[k],
					      (uint32_t)len, (uintptr_t)dst[!k], dmr[!k]->rkey,
					      IBV_SEND_SIGNALED) == 0, "post write");
			wait_byte(dst[!k], len, (uint8_t)i, k ? "client" : "server");
			/* the last byte lands last: the rest of the Write is in place */
			DP_CHECK(dp_check(dst[!k], len - 1, i << 1 | (uint32_t)k),
				 "Write %u corrupted", i);
			wc = dp_wait_wc(side[k]->cq, 30000);
			DP_CHECK(wc.status == IBV_WC_SUCCESS, "write %u: %s", i,
				 ibv_wc_status_str(wc.status));
		}
	}
	printf("%d Writes of %zu bytes each way seen by polling the region\n", DP_PINGS, len);
	dp_disconnect_wait(&p);
	for (int k = 0; k < 2; k++) {
		DP_CHECK(ibv_dereg_mr(smr[k]) == 0 && ibv_dereg_mr(dmr[k]) == 0, "dereg");
		free(src[k]);
		free(dst[k]);
	}
	dp_teardown(&p);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "post")) {
		case_post();
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "poll_write")) {
		case_poll_write(DP_WRITE);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "poll_write_large")) {
		case_poll_write(DP_WRITE_LARGE);
		return 0;
	}
	fprintf(stderr, "usage: dp_threads post|poll_write|poll_write_large\n");
	return 2;
}
