// SPDX-License-Identifier: MIT
/*
 * srbench: RDMA WRITE / READ / SEND bandwidth and SEND/RECV ping-pong latency over rdma_cm
 * (RDMA_PS_TCP, RC), next to a plain TCP socket baseline on the same address measured in the
 * same run. Written against the public <infiniband/verbs.h> and <rdma/rdma_cma.h> only, so it
 * runs on softrdma (LD_LIBRARY_PATH=build/lib) and on rdma-core alike.
 *
 *   server: srbench -s [-a addr] [-p port] [-o]
 *   client: srbench -c -a addr [-p port] [-t write|read|send|lat|all[,...]] [-S sizes]
 *                   [-d seconds] [-T both|rdma|tcp] [-w window] [-P spin_us] [-L size]
 *                   [-M | -K]
 *
 * Protocol. Every measurement uses a fresh RC connection. The client's connect private data
 * says what it measures (operation, size, window) and carries its buffer's address and rkey;
 * the server's accept private data answers with its buffer's address, rkey, receive depth and
 * IRD. Small control messages (12 bytes) travel as SEND/RECV on the same QP: VERIFY (server
 * checks its buffer against a byte pattern), END (end of a SEND stream), CREDIT (the server
 * reposted receives: iWARP has no RNR retry, so a SEND must never find no receive), RESULT.
 * The TCP baseline listens on port+1 of the same address: one connection per measurement, a
 * 16-byte header, then a stream of messages of the same size (or 8-byte ping-pong).
 *
 * Timing. Bandwidth counts payload bytes from the first post (first send()) until the
 * receiver has confirmed the last byte: RESULT for WRITE/SEND (TCP: the server's reply after
 * EOF); the last READ completion (TCP "read": EOF of the server's stream). 1 MB = 10^6 bytes.
 * Latency is the round-trip time of an 8-byte (-L) SEND answered by a SEND of the same size
 * (TCP: write/read of that size), median and 99th percentile in microseconds, after 100
 * warm-up round trips. With -P both sides busy-poll: the CQ (softrdma) or a non-blocking
 * socket (TCP); without it both block (completion channel / recv()).
 *
 * CPU time. Each side takes getrusage(RUSAGE_SELF) (all its threads, so softrdma's engine
 * threads count) before the connection and after its teardown; -K prints both sides' seconds
 * per measurement, the server's on its own stdout.
 *
 * Correctness. WRITE: the first transfer and the last of each stream carry distinct byte
 * patterns that the server verifies. READ: the first and last READ land in zeroed buffers and
 * are verified by the client. SEND: the server verifies the first and last message and the
 * count. Ping-pong: every pong must echo its sequence number. TCP: first and last message.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                     */

static const char *g_role = "srbench";

#include "bench_util.h"

static void *xmalloc(size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, n ? n : 1) != 0)
		die("out of memory (%zu bytes)", n);
	memset(p, 0, n);
	return p;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds (user + system) of the whole process, all threads. */
static double cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* ------------------------------------------------------------------------------------------ */
/* Byte patterns                                                                              */

static uint64_t mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static uint8_t pattern_byte(uint32_t seed, size_t i)
{
	return (uint8_t)(mix64(((uint64_t)seed << 40) ^ (i / 8)) >> (8 * (i % 8)));
}

static void pattern_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *p = buf;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w = htole64(mix64(((uint64_t)seed << 40) ^ (i / 8)));

		memcpy(p + i, &w, 8);
	}
	for (; i < len; i++)
		p[i] = pattern_byte(seed, i);
}

/* Returns -1 if buf holds the pattern, else the first differing offset. */
static long pattern_check(const void *buf, size_t len, uint32_t seed)
{
	const uint8_t *p = buf;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w = htole64(mix64(((uint64_t)seed << 40) ^ (i / 8)));

		if (memcmp(p + i, &w, 8) != 0)
			break;
	}
	for (; i < len; i++)
		if (p[i] != pattern_byte(seed, i))
			return (long)i;
	return -1;
}

enum { SEED_WRITE_FIRST = 1, SEED_WRITE_STREAM, SEED_WRITE_LAST, SEED_READ,
       SEED_SEND_FIRST, SEED_SEND_LAST };

/* ------------------------------------------------------------------------------------------ */
/* Options and wire formats                                                                   */

enum op { OP_WRITE = 1, OP_READ, OP_SEND, OP_LAT, OP_BYE };
static const char *const op_name[] = { "?", "write", "read", "send", "lat", "bye" };

static struct {
	const char *addr;
	int port;
	bool server, client, once, markdown;
	unsigned int ops; /* bit per enum op */
	bool do_rdma, do_tcp;
	double duration;
	unsigned int window; /* 0: by size */
	unsigned int spin_us;
	size_t lat_size;
	bool kv; /* -K: one key=value line per measurement instead of the tables */
	size_t sizes[32];
	unsigned int nsizes;
} opt = {
	.port = 18600, .duration = 1.0, .spin_us = 0, .lat_size = 8, .do_rdma = true,
	.do_tcp = true,
};

#define SR_MAGIC 0x53524231u /* "SRB1" */
#define SR_VERSION 1
#define MIN_SIZE 16
#define MAX_SIZE (64u << 20)
#define LAT_MIN 8 /* a ping carries its 8-byte sequence number */
#define LAT_RECVS 16
#define WARMUP 100
#define MAX_SAMPLES 2000000

/* Connect private data (client -> server), 32 bytes, big-endian. */
struct conn_req {
	uint32_t magic;
	uint8_t version, op;
	uint16_t window;
	uint32_t size;
	uint32_t rkey;
	uint64_t addr;
	uint32_t spin_us; /* OP_LAT: the server busy-polls like the client */
	uint32_t rsvd;
};

/* Accept private data (server -> client), 32 bytes, big-endian. */
struct conn_rep {
	uint32_t magic;
	uint8_t version, op;
	uint16_t recv_depth;
	uint32_t size;
	uint32_t rkey;
	uint64_t addr;
	uint32_t ird;
	uint32_t rsvd;
};

/* Control message carried by SEND/RECV, 12 bytes, big-endian. */
enum ctrl_type { CT_VERIFY = 1, CT_RESULT, CT_END, CT_CREDIT };
#define CTRL_LEN 12
#define CTRL_SLOT 64
#define CTRL_RECV_SLOTS 48
#define CTRL_SEND_SLOTS 16

/* TCP baseline header, 20 bytes, big-endian. */
struct tcp_hdr {
	uint32_t magic, op, size, duration_ms, flags;
};
#define TCP_F_BUSY 1u /* ping-pong: both sides spin on non-blocking sockets */

/* ------------------------------------------------------------------------------------------ */
/* RDMA connection plumbing shared by client and server                                       */

enum wr_kind { WK_RCTRL = 1, WK_RDATA, WK_SCTRL, WK_SDATA };
#define WRID(kind, idx) (((uint64_t)(kind) << 48) | (uint64_t)(idx))
#define WR_KIND(id) ((unsigned int)((id) >> 48))
#define WR_IDX(id) ((id) & 0xFFFFFFFFFFFFull)

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *ctrl; /* CTRL_RECV_SLOTS + CTRL_SEND_SLOTS slots of CTRL_SLOT bytes */
	struct ibv_mr *ctrl_mr;
	uint8_t *data;
	size_t data_len;
	struct ibv_mr *data_mr;
	unsigned int ctrl_send_next;
	unsigned int sends_out; /* signaled control sends not yet completed */
	int cq_events;
	unsigned int spin_us; /* wait_cq busy-polls this long before sleeping */
};

static void conn_setup(struct conn *c, struct rdma_cm_id *id, size_t data_len,
		       unsigned int send_depth, unsigned int recv_depth)
{
	struct ibv_qp_init_attr qa;

	c->id = id;
	CHECK_PTR(c->pd, ibv_alloc_pd(id->verbs));
	/* Left blocking: a wait with nothing else to watch sleeps in ibv_get_cq_event (wait_cq). */
	CHECK_PTR(c->ch, ibv_create_comp_channel(id->verbs));
	CHECK_PTR(c->cq, ibv_create_cq(id->verbs, (int)(send_depth + recv_depth + 16), NULL,
				       c->ch, 0));
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = send_depth;
	qa.cap.max_recv_wr = recv_depth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	CHECK(rdma_create_qp(id, c->pd, &qa));
	c->qp = id->qp;
	c->ctrl = xmalloc((CTRL_RECV_SLOTS + CTRL_SEND_SLOTS) * CTRL_SLOT);
	CHECK_PTR(c->ctrl_mr, ibv_reg_mr(c->pd, c->ctrl, (CTRL_RECV_SLOTS + CTRL_SEND_SLOTS) *
					 CTRL_SLOT, IBV_ACCESS_LOCAL_WRITE));
	c->data_len = data_len;
	if (data_len) {
		c->data = xmalloc(data_len);
		CHECK_PTR(c->data_mr, ibv_reg_mr(c->pd, c->data, data_len,
						 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
							 IBV_ACCESS_REMOTE_READ));
	}
}

static void conn_teardown(struct conn *c)
{
	if (c->cq_events)
		ibv_ack_cq_events(c->cq, (unsigned int)c->cq_events);
	if (c->qp)
		rdma_destroy_qp(c->id);
	if (c->data_mr)
		CHECK_RET(ibv_dereg_mr(c->data_mr));
	CHECK_RET(ibv_dereg_mr(c->ctrl_mr));
	CHECK_RET(ibv_destroy_cq(c->cq));
	CHECK_RET(ibv_destroy_comp_channel(c->ch));
	CHECK_RET(ibv_dealloc_pd(c->pd));
	free(c->data);
	free(c->ctrl);
	memset(c, 0, sizeof(*c));
}

static void post_recv(struct conn *c, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK_RET(ibv_post_recv(c->qp, &wr, &bad));
}

static void post_ctrl_recv(struct conn *c, unsigned int slot)
{
	post_recv(c, WRID(WK_RCTRL, slot), c->ctrl + slot * CTRL_SLOT, CTRL_SLOT, c->ctrl_mr->lkey);
}

static void post_send(struct conn *c, uint64_t wr_id, enum ibv_wr_opcode opc, void *addr,
		      uint32_t len, uint32_t lkey, bool signaled, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = opc;
	wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	CHECK_RET(ibv_post_send(c->qp, &wr, &bad));
}

/* Send a 12-byte control message from the next send slot (always signaled). */
static void send_ctrl(struct conn *c, uint32_t type, uint32_t a, uint32_t b)
{
	if (c->sends_out >= CTRL_SEND_SLOTS)
		die("internal: too many control sends outstanding");
	unsigned int slot = CTRL_RECV_SLOTS + (c->ctrl_send_next++ % CTRL_SEND_SLOTS);
	uint32_t *m = (uint32_t *)(c->ctrl + slot * CTRL_SLOT);

	m[0] = htobe32(type);
	m[1] = htobe32(a);
	m[2] = htobe32(b);
	post_send(c, WRID(WK_SCTRL, slot), IBV_WR_SEND, m, CTRL_LEN, c->ctrl_mr->lkey, true, 0, 0);
	c->sends_out++;
}

static void parse_ctrl(const void *p, uint32_t *type, uint32_t *a, uint32_t *b)
{
	uint32_t m[3];

	memcpy(m, p, sizeof(m));
	*type = be32toh(m[0]);
	*a = be32toh(m[1]);
	*b = be32toh(m[2]);
}

static const char *wc_op_str(enum ibv_wc_opcode o)
{
	switch (o) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_RECV: return "RECV";
	default: return "other";
	}
}

/*
 * The watchdog of a blocking wait (wait_cq): wait_cq stores its deadline (CLOCK_MONOTONIC
 * seconds, 0 while not blocked), a thread looks every 100 ms and ends a run whose peer
 * stopped answering. Plain stores: the wait itself costs no system call of ours, so the
 * library's blocking path is measured alone, as TCP's blocking recv() is.
 */
static _Atomic double g_wait_deadline;
static pthread_once_t g_watchdog_once = PTHREAD_ONCE_INIT;

static void *watchdog_main(void *unused)
{
	(void)unused;
	for (;;) {
		double d = g_wait_deadline;
		struct timespec ts = { 0, 100 * 1000 * 1000 };

		if (d > 0 && now_s() > d) {
			fprintf(stderr, "srbench: timeout in a blocking completion wait\n");
			_exit(1);
		}
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void watchdog_start(void)
{
	pthread_t th;

	CHECK_RET(pthread_create(&th, NULL, watchdog_main, NULL));
	pthread_detach(th);
}

/* A completion event was taken: acknowledge them in batches of 64 (one lock, not 64). */
static void cq_event_taken(struct conn *c)
{
	if (++c->cq_events >= 64) {
		ibv_ack_cq_events(c->cq, (unsigned int)c->cq_events);
		c->cq_events = 0;
	}
}

/*
 * Wait for at least one completion: poll for up to c->spin_us, then arm the CQ and sleep on
 * the completion channel. Returns the number of completions in wc (1..max). With extra_fd
 * (server: the CM channel) returns 0 when that fd became readable and no completion arrived.
 * Dies after deadline (absolute, now_s() scale; 0 = none).
 */
static int wait_cq(struct conn *c, struct ibv_wc *wc, int max, double deadline, int extra_fd,
		   const char *what)
{
	double spin_until = now_s() + c->spin_us * 1e-6;

	for (;;) {
		int n = ibv_poll_cq(c->cq, max, wc);

		if (n < 0)
			die("ibv_poll_cq failed: returned %d (waiting for %s)", n, what);
		if (n > 0)
			return n;
		if (now_s() < spin_until)
			continue;
		CHECK_RET(ibv_req_notify_cq(c->cq, 0));
		n = ibv_poll_cq(c->cq, max, wc);
		if (n < 0)
			die("ibv_poll_cq failed: returned %d (waiting for %s)", n, what);
		if (n > 0)
			return n;

		if (extra_fd < 0) {
			/*
			 * Nothing else to watch: sleep in ibv_get_cq_event itself, the way rping,
			 * perftest -e and qperf wait (a library may do useful work in that call,
			 * which it cannot inside our poll()). A watchdog thread bounds the wait
			 * instead of poll()'s timeout.
			 */
			struct ibv_cq *ecq;
			void *ectx;

			if (deadline > 0 && deadline <= now_s())
				die("timeout waiting for %s", what);
			pthread_once(&g_watchdog_once, watchdog_start);
			g_wait_deadline = deadline > 0 ? deadline + 1 : 0;
			if (ibv_get_cq_event(c->ch, &ecq, &ectx) == 0)
				cq_event_taken(c);
			else if (errno != EINTR)
				die("ibv_get_cq_event failed: errno %d (%s)", errno, strerror(errno));
			g_wait_deadline = 0;
			spin_until = now_s() + c->spin_us * 1e-6;
			continue;
		}

		struct pollfd pfd[2] = { { .fd = c->ch->fd, .events = POLLIN },
					 { .fd = extra_fd, .events = POLLIN } };
		int tmo = 1000;

		if (deadline > 0) {
			double left = deadline - now_s();

			if (left <= 0)
				die("timeout waiting for %s", what);
			tmo = left > 1.0 ? 1000 : (int)(left * 1000) + 1;
		}
		int r = poll(pfd, extra_fd >= 0 ? 2 : 1, tmo);

		if (r < 0 && errno != EINTR)
			die("poll failed: errno %d (%s)", errno, strerror(errno));
		if (r > 0 && (pfd[0].revents & POLLIN)) {
			struct ibv_cq *ecq;
			void *ectx;

			if (ibv_get_cq_event(c->ch, &ecq, &ectx) == 0)
				cq_event_taken(c);
			else if (errno != EAGAIN)
				die("ibv_get_cq_event failed: errno %d (%s)", errno, strerror(errno));
		}
		if (r > 0 && extra_fd >= 0 && (pfd[1].revents & POLLIN))
			return 0;
		spin_until = now_s() + c->spin_us * 1e-6;
	}
}

static void wc_check(const struct ibv_wc *wc, const char *what)
{
	if (wc->status != IBV_WC_SUCCESS)
		die("work completion error during %s: %s (status %d, vendor_err 0x%x), opcode %s, "
		    "wr_id 0x%llx", what, ibv_wc_status_str(wc->status), wc->status,
		    wc->vendor_err, wc_op_str(wc->opcode), (unsigned long long)wc->wr_id);
}

/* Next CM event on a channel whose fd is non-blocking; dies after timeout seconds. */
static struct rdma_cm_event *get_cm_event(struct rdma_event_channel *ec, double timeout,
					  const char *what)
{
	double deadline = now_s() + timeout;
	struct rdma_cm_event *ev;

	for (;;) {
		if (rdma_get_cm_event(ec, &ev) == 0)
			return ev;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			die("rdma_get_cm_event failed: errno %d (%s) (waiting for %s)", errno,
			    strerror(errno), what);
		double left = deadline - now_s();

		if (left <= 0)
			die("timeout waiting for %s", what);
		struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };

		poll(&pfd, 1, left > 1.0 ? 1000 : (int)(left * 1000) + 1);
	}
}

static void expect_cm_event(struct rdma_event_channel *ec, enum rdma_cm_event_type type,
			    double timeout, struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev = get_cm_event(ec, timeout, rdma_event_str(type));

	if (ev->event != type) {
		enum rdma_cm_event_type got = ev->event;
		int status = ev->status;

		rdma_ack_cm_event(ev);
		die("expected CM event %s, got %s (status %d%s%s)", rdma_event_str(type),
		    rdma_event_str(got), status, status < 0 ? ": " : "",
		    status < 0 ? strerror(-status) : "");
	}
	if (out)
		*out = ev;
	else
		rdma_ack_cm_event(ev);
}

static struct rdma_event_channel *make_event_channel(void)
{
	struct rdma_event_channel *ec;

	CHECK_PTR(ec, rdma_create_event_channel());
	int fl = fcntl(ec->fd, F_GETFL);

	CHECK(fcntl(ec->fd, F_SETFL, fl | O_NONBLOCK));
	return ec;
}

static unsigned int window_for(size_t size)
{
	if (opt.window)
		return opt.window;
	size_t w = (8u << 20) / size;

	return w < 4 ? 4 : w > 64 ? 64 : (unsigned int)w;
}

/* ------------------------------------------------------------------------------------------ */
/* Server                                                                                     */

static volatile sig_atomic_t g_quit;

struct srv_conn {
	struct conn c;
	enum op op;
	size_t size;
	unsigned int recv_depth; /* SEND: data slots; else control slots */
	bool disconnected, failed;
	/* SEND stream state */
	uint64_t data_msgs;
	long first_bad;	    /* first message's pattern_check result */
	long last_idx;	    /* slot of the last data message */
	unsigned int credits_pending;
};

static void srv_fail(struct srv_conn *s, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: connection (%s %zu B): ", g_role, op_name[s->op], s->size);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	s->failed = true;
}

static void srv_handle_recv(struct srv_conn *s, struct ibv_wc *wc)
{
	struct conn *c = &s->c;
	unsigned int kind = WR_KIND(wc->wr_id), idx = (unsigned int)WR_IDX(wc->wr_id);
	uint8_t *buf = kind == WK_RDATA ? c->data + (size_t)idx * s->size : c->ctrl + idx * CTRL_SLOT;
	uint32_t type, a, b;

	if (s->op == OP_LAT) { /* echo from a send slot after the receive slots */
		size_t slot = s->recv_depth + c->ctrl_send_next % CTRL_SEND_SLOTS;
		uint8_t *m = c->data + slot * s->size;

		if (kind != WK_RDATA || wc->byte_len != s->size) {
			srv_fail(s, "ping-pong: ping of %u bytes", wc->byte_len);
			return;
		}
		memcpy(m, buf, s->size);
		post_recv(c, wc->wr_id, buf, (uint32_t)s->size, c->data_mr->lkey);
		if (c->sends_out >= CTRL_SEND_SLOTS) {
			srv_fail(s, "ping-pong: client sent too many pings");
			return;
		}
		c->ctrl_send_next++;
		post_send(c, WRID(WK_SCTRL, 0), IBV_WR_SEND, m, (uint32_t)s->size,
			  c->data_mr->lkey, true, 0, 0);
		c->sends_out++;
		return;
	}
	if (s->op == OP_SEND && wc->byte_len == s->size) { /* data message */
		if (s->data_msgs == 0)
			s->first_bad = pattern_check(buf, s->size, SEED_SEND_FIRST);
		s->data_msgs++;
		s->last_idx = idx;
		post_recv(c, wc->wr_id, buf, (uint32_t)s->size, c->data_mr->lkey);
		s->credits_pending++; /* returned by srv_return_credits() */
		return;
	}
	if (wc->byte_len != CTRL_LEN) {
		srv_fail(s, "unexpected message of %u bytes", wc->byte_len);
		return;
	}
	parse_ctrl(buf, &type, &a, &b);
	/* Repost before answering: the slot content was copied out above. */
	if (kind == WK_RDATA) {
		post_recv(c, wc->wr_id, buf, (uint32_t)s->size, c->data_mr->lkey);
		s->credits_pending++;
	} else {
		post_ctrl_recv(c, idx);
	}
	switch (type) {
	case CT_VERIFY: {
		long bad = pattern_check(c->data, s->size, a);

		if (bad >= 0)
			fprintf(stderr, "%s: WRITE %zu B: pattern %u mismatch at offset %ld\n",
				g_role, s->size, a, bad);
		send_ctrl(c, CT_RESULT, bad < 0, bad < 0 ? 0 : (uint32_t)bad);
		break;
	}
	case CT_END: {
		uint32_t ok = 1, detail = 0;

		if (s->data_msgs != a) {
			fprintf(stderr, "%s: SEND %zu B: client sent %u messages, %llu arrived\n",
				g_role, s->size, a, (unsigned long long)s->data_msgs);
			ok = 0;
		} else if (s->first_bad >= 0) {
			fprintf(stderr, "%s: SEND %zu B: first message differs at offset %ld\n",
				g_role, s->size, s->first_bad);
			ok = 0;
			detail = (uint32_t)s->first_bad;
		} else if (s->data_msgs) {
			long bad = pattern_check(c->data + (size_t)s->last_idx * s->size, s->size,
						 SEED_SEND_LAST);

			if (bad >= 0) {
				fprintf(stderr, "%s: SEND %zu B: last message differs at offset %ld\n",
					g_role, s->size, bad);
				ok = 0;
				detail = (uint32_t)bad;
			}
		}
		send_ctrl(c, CT_RESULT, ok, detail);
		s->credits_pending = 0;
		break;
	}
	default:
		srv_fail(s, "unknown control message type %u", type);
	}
}

/*
 * SEND stream: return reposted receives to the client in batches of a quarter of the receive
 * depth. Called after each batch of completions; leaves two send slots for RESULT, and when
 * all slots are busy waits for the next batch (send completions free them).
 */
static void srv_return_credits(struct srv_conn *s)
{
	if (s->op != OP_SEND || s->failed || s->credits_pending < (s->recv_depth + 3) / 4 ||
	    s->c.sends_out + 2 >= CTRL_SEND_SLOTS)
		return;
	send_ctrl(&s->c, CT_CREDIT, s->credits_pending, 0);
	s->credits_pending = 0;
}

/* Serve one connection until it is disconnected. Returns a CONNECT_REQUEST that arrived
 * meanwhile (unacked), or NULL. */
static struct rdma_cm_event *srv_run_conn(struct rdma_event_channel *ec, struct srv_conn *s)
{
	struct rdma_cm_event *pending = NULL;
	struct ibv_wc wc[16];

	while (!s->disconnected) {
		/*
		 * Ping-pong: wait on the CQ alone, as the client does, so that both sides block in
		 * ibv_get_cq_event. The client's disconnect still ends the wait: it flushes the
		 * receives posted here, and from the first flushed completion on the CM channel is
		 * watched again for the DISCONNECTED behind it.
		 */
		int xfd = s->op == OP_LAT && !s->failed ? -1 : ec->fd;
		int n = wait_cq(&s->c, wc, 16, 0, xfd, "client");

		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (!s->failed && wc[i].status != IBV_WC_WR_FLUSH_ERR)
					srv_fail(s, "work completion error: %s (status %d), "
						    "opcode %s", ibv_wc_status_str(wc[i].status),
						 wc[i].status, wc_op_str(wc[i].opcode));
				s->failed = true;
				continue;
			}
			if (wc[i].opcode & IBV_WC_RECV)
				srv_handle_recv(s, &wc[i]);
			else if (WR_KIND(wc[i].wr_id) == WK_SCTRL)
				s->c.sends_out--;
		}
		srv_return_credits(s);
		if (n > 0)
			continue;
		/* The CM channel is readable. */
		struct rdma_cm_event *ev;

		while (rdma_get_cm_event(ec, &ev) == 0) {
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
				if (!pending) {
					pending = ev; /* served after this connection */
					continue;
				}
				struct rdma_cm_id *nid = ev->id;

				rdma_ack_cm_event(ev);
				rdma_reject(nid, NULL, 0);
				rdma_destroy_id(nid);
				continue;
			}
			if (ev->id == s->c.id &&
			    (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
			     ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT))
				s->disconnected = true;
			else if (ev->id == s->c.id && ev->event != RDMA_CM_EVENT_ESTABLISHED)
				fprintf(stderr, "%s: unexpected CM event %s (status %d)\n", g_role,
					rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
		}
	}
	return pending;
}

static void srv_connect_request(struct rdma_event_channel *ec, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	struct conn_req rq;
	struct srv_conn s;
	struct ibv_device_attr da;
	double cpu0 = cpu_s();
	uint8_t ini_res = ev->param.conn.responder_resources;
	uint8_t ini_ord = ev->param.conn.initiator_depth;

	memset(&s, 0, sizeof(s));
	if (ev->param.conn.private_data_len < sizeof(rq) || !ev->param.conn.private_data) {
		fprintf(stderr, "%s: connect request without srbench private data (%u bytes), "
				"rejecting\n", g_role, ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	memcpy(&rq, ev->param.conn.private_data, sizeof(rq));
	rdma_ack_cm_event(ev);
	s.op = rq.op;
	s.size = be32toh(rq.size);
	if (be32toh(rq.magic) != SR_MAGIC || rq.version != SR_VERSION || s.op < OP_WRITE ||
	    s.op > OP_LAT || s.size < (s.op == OP_LAT ? LAT_MIN : MIN_SIZE) || s.size > MAX_SIZE) {
		fprintf(stderr, "%s: bad connect request (magic 0x%08x, op %u, size %zu), "
				"rejecting\n", g_role, be32toh(rq.magic), rq.op, s.size);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	unsigned int window = be16toh(rq.window);

	CHECK_RET(ibv_query_device(id->verbs, &da));
	size_t data_len = 0;

	switch (s.op) {
	case OP_WRITE:
	case OP_READ:
		data_len = s.size;
		s.recv_depth = 8;
		break;
	case OP_SEND:
		s.recv_depth = 2 * window + 4;
		if (s.recv_depth > 256)
			s.recv_depth = 256;
		data_len = s.size * s.recv_depth;
		break;
	default: /* OP_LAT: receive slots, then CTRL_SEND_SLOTS slots to echo from */
		s.recv_depth = LAT_RECVS;
		data_len = s.size * (LAT_RECVS + CTRL_SEND_SLOTS);
		break;
	}
	if ((int)s.recv_depth + 4 > da.max_qp_wr)
		s.recv_depth = (unsigned int)da.max_qp_wr - 4;
	conn_setup(&s.c, id, data_len, CTRL_SEND_SLOTS + 4, s.recv_depth + 2);
	if (s.op == OP_LAT) {
		s.c.spin_us = be32toh(rq.spin_us);
		if (s.c.spin_us > 1000000)
			s.c.spin_us = 1000000;
	}
	if (s.op == OP_READ)
		pattern_fill(s.c.data, s.size, SEED_READ);
	for (unsigned int i = 0; i < s.recv_depth; i++) {
		if (s.op == OP_SEND || s.op == OP_LAT)
			post_recv(&s.c, WRID(WK_RDATA, i), s.c.data + (size_t)i * s.size,
				  (uint32_t)s.size, s.c.data_mr->lkey);
		else
			post_ctrl_recv(&s.c, i);
	}

	struct conn_rep rp;
	struct rdma_conn_param cp;
	unsigned int ird = ini_ord ? ini_ord : 16;

	if (ird > (unsigned int)da.max_qp_rd_atom)
		ird = (unsigned int)da.max_qp_rd_atom;
	memset(&rp, 0, sizeof(rp));
	rp.magic = htobe32(SR_MAGIC);
	rp.version = SR_VERSION;
	rp.op = s.op;
	rp.recv_depth = htobe16((uint16_t)s.recv_depth);
	rp.size = htobe32((uint32_t)s.size);
	rp.rkey = htobe32(s.c.data_mr ? s.c.data_mr->rkey : 0);
	rp.addr = htobe64((uintptr_t)s.c.data);
	rp.ird = htobe32(ird);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &rp;
	cp.private_data_len = sizeof(rp);
	cp.responder_resources = (uint8_t)ird;
	cp.initiator_depth = (uint8_t)(ini_res < da.max_qp_init_rd_atom ? ini_res
									: da.max_qp_init_rd_atom);
	if (rdma_accept(id, &cp) < 0) {
		fprintf(stderr, "%s: rdma_accept failed: errno %d (%s)\n", g_role, errno,
			strerror(errno));
		conn_teardown(&s.c);
		rdma_destroy_id(id);
		return;
	}
	fprintf(stderr, "%s: serving %s %zu B (window %u)\n", g_role, op_name[s.op], s.size,
		window);

	struct rdma_cm_event *next = srv_run_conn(ec, &s);

	rdma_disconnect(id); /* may fail if already disconnected: harmless */
	conn_teardown(&s.c);
	rdma_destroy_id(id);
	if (opt.kv)
		printf("server impl=rdma op=%s size=%zu cpu_s=%.6f\n", op_name[s.op], s.size,
		       cpu_s() - cpu0);
	if (next) {
		if (next->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			srv_connect_request(ec, next);
		else
			rdma_ack_cm_event(next);
	}
}

/* ---- TCP baseline, server side ---------------------------------------------------------- */

/* All of len bytes, or 0 at EOF, -1 on error. With spin, busy-polls a non-blocking call
 * (the TCP counterpart of polling a CQ) instead of sleeping in the kernel. */
static int tcp_io(int fd, void *buf, size_t len, bool wr, bool spin)
{
	uint8_t *p = buf;
	int fl = spin ? MSG_DONTWAIT : wr ? 0 : MSG_WAITALL;

	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL | fl) : recv(fd, p, len, fl);

		bool again = spin && (errno == EAGAIN || errno == EWOULDBLOCK);

		if (n < 0 && (errno == EINTR || again))
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0; /* EOF */
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

static int tcp_full(int fd, void *buf, size_t len, bool wr)
{
	return tcp_io(fd, buf, len, wr, false);
}

static void tcp_nodelay(int fd)
{
	int one = 1;

	CHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
}

static void tcp_serve_one(int fd)
{
	struct tcp_hdr h;

	tcp_nodelay(fd);
	if (tcp_full(fd, &h, sizeof(h), false) != 1 || be32toh(h.magic) != SR_MAGIC)
		return;
	uint32_t op = be32toh(h.op), size = be32toh(h.size), ms = be32toh(h.duration_ms);
	bool spin = be32toh(h.flags) & TCP_F_BUSY;
	double cpu0 = cpu_s();

	if (op == OP_BYE) {
		if (opt.once)
			g_quit = 1;
		uint32_t ok = htobe32(1);

		tcp_full(fd, &ok, 4, true);
		return;
	}
	if (size < 1 || size > MAX_SIZE)
		return;
	uint8_t *buf = xmalloc(size), *first = xmalloc(size);

	if (op == OP_WRITE || op == OP_SEND) { /* client -> server stream until EOF */
		uint64_t count = 0;
		int r;

		while ((r = tcp_full(fd, buf, size, false)) == 1) {
			if (count++ == 0)
				memcpy(first, buf, size);
		}
		uint32_t ok = r == 0 && count > 0 &&
			      pattern_check(first, size, SEED_SEND_FIRST) < 0 &&
			      pattern_check(buf, size, SEED_SEND_LAST) < 0;
		uint32_t rep[4] = { htobe32(ok), 0, htobe32((uint32_t)(count >> 32)),
				    htobe32((uint32_t)count) };

		tcp_full(fd, rep, sizeof(rep), true);
	} else if (op == OP_READ) { /* server -> client stream for ms milliseconds */
		uint8_t *last = xmalloc(size);
		double end = now_s() + ms * 1e-3;

		pattern_fill(buf, size, SEED_SEND_FIRST);
		pattern_fill(last, size, SEED_SEND_LAST);
		bool firstmsg = true;

		for (;;) {
			bool fin = !firstmsg && now_s() >= end;

			if (tcp_full(fd, fin ? last : buf, size, true) != 1)
				break;
			if (fin)
				break;
			firstmsg = false;
		}
		shutdown(fd, SHUT_WR);
		while (recv(fd, buf, size, 0) > 0)
			;
		free(last);
	} else if (op == OP_LAT) { /* echo until EOF */
		while (tcp_io(fd, buf, size, false, spin) == 1)
			if (tcp_io(fd, buf, size, true, spin) != 1)
				break;
	}
	free(buf);
	free(first);
	if (opt.kv)
		printf("server impl=tcp op=%s size=%u cpu_s=%.6f\n", op_name[op], size,
		       cpu_s() - cpu0);
}

static int tcp_listen_fd = -1;

static void *tcp_server_thread(void *arg)
{
	for (;;) {
		int fd = accept(tcp_listen_fd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (g_quit)
				return NULL;
			fprintf(stderr, "%s: accept failed: errno %d (%s)\n", g_role, errno,
				strerror(errno));
			g_quit = 1;
			return NULL;
		}
		tcp_serve_one(fd);
		close(fd);
		if (g_quit)
			return NULL;
	}
	return NULL;
}

static struct addrinfo *resolve(const char *addr, int port, bool passive)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0) },
			*ai;
	char ps[16];

	snprintf(ps, sizeof(ps), "%d", port);
	int rc = getaddrinfo(addr, ps, &hints, &ai);

	if (rc != 0)
		die("getaddrinfo(%s, %s) failed: %s", addr ? addr : "*", ps, gai_strerror(rc));
	return ai;
}

static int run_server(void)
{
	struct rdma_event_channel *ec = make_event_channel();
	struct rdma_cm_id *listen_id;
	struct addrinfo *ai = resolve(opt.addr, opt.port, true);
	int one = 1;

	CHECK(rdma_create_id(ec, &listen_id, NULL, RDMA_PS_TCP));
	CHECK(rdma_bind_addr(listen_id, ai->ai_addr));
	CHECK(rdma_listen(listen_id, 8));
	freeaddrinfo(ai);

	ai = resolve(opt.addr, opt.port + 1, true);
	CHECK(tcp_listen_fd = socket(ai->ai_family, SOCK_STREAM, 0));
	CHECK(setsockopt(tcp_listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	CHECK(bind(tcp_listen_fd, ai->ai_addr, ai->ai_addrlen));
	CHECK(listen(tcp_listen_fd, 8));
	freeaddrinfo(ai);

	pthread_t th;

	CHECK_RET(pthread_create(&th, NULL, tcp_server_thread, NULL));
	pthread_detach(th);
	printf("srbench server: rdma_cm on %s port %d, TCP baseline on port %d%s\n",
	       opt.addr ? opt.addr : "*", opt.port, opt.port + 1,
	       opt.once ? " (exits when the client is done)" : "");
	fflush(stdout);

	while (!g_quit) {
		struct rdma_cm_event *ev;

		if (rdma_get_cm_event(ec, &ev) < 0) {
			if (errno != EAGAIN && errno != EINTR)
				die("rdma_get_cm_event failed: errno %d (%s)", errno,
				    strerror(errno));
			struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };

			poll(&pfd, 1, 200);
			continue;
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			srv_connect_request(ec, ev);
		else
			rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ec);
	close(tcp_listen_fd);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Client                                                                                     */

struct cli {
	struct rdma_event_channel *ec;
	struct addrinfo *dst;
	struct conn c;
	struct conn_rep rep;
	unsigned int ord;
	/* SEND credits */
	unsigned int credits;
	/* control messages received and not yet consumed */
	uint32_t res_type, res_a, res_b;
	bool have_res;
};

static struct cli cl;

/* The last bandwidth measurement's message count and timed seconds (for -K). */
static uint64_t g_msgs;
static double g_secs;

/* Handle a completion seen while streaming: returns true if it retired a data WR. */
static void cli_handle_wc(struct ibv_wc *wc, uint64_t *retired, const char *what)
{
	wc_check(wc, what);
	unsigned int kind = WR_KIND(wc->wr_id);

	if (wc->opcode & IBV_WC_RECV) {
		unsigned int idx = (unsigned int)WR_IDX(wc->wr_id);
		uint32_t t, a, b;

		if (wc->byte_len != CTRL_LEN)
			die("%s: unexpected %u-byte message from the server", what, wc->byte_len);
		parse_ctrl(cl.c.ctrl + idx * CTRL_SLOT, &t, &a, &b);
		post_ctrl_recv(&cl.c, idx);
		if (t == CT_CREDIT) {
			cl.credits += a;
		} else if (t == CT_RESULT) {
			if (cl.have_res)
				die("%s: two RESULT messages", what);
			cl.have_res = true;
			cl.res_type = t;
			cl.res_a = a;
			cl.res_b = b;
		} else {
			die("%s: unexpected control message type %u", what, t);
		}
		return;
	}
	if (kind == WK_SCTRL)
		cl.c.sends_out--;
	else if (kind == WK_SDATA && retired)
		*retired = WR_IDX(wc->wr_id) + 1;
}

/* Wait until a RESULT arrives; returns its a/b. */
static void cli_wait_result(double deadline, const char *what, uint32_t *a, uint32_t *b)
{
	struct ibv_wc wc[16];

	while (!cl.have_res) {
		int n = wait_cq(&cl.c, wc, 16, deadline, -1, what);

		for (int i = 0; i < n; i++)
			cli_handle_wc(&wc[i], NULL, what);
	}
	cl.have_res = false;
	*a = cl.res_a;
	*b = cl.res_b;
}

static void cli_connect(enum op op, size_t size, unsigned int window, size_t data_len)
{
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct ibv_device_attr da;

	CHECK(rdma_create_id(cl.ec, &id, NULL, RDMA_PS_TCP));
	CHECK(rdma_resolve_addr(id, NULL, cl.dst->ai_addr, 2000));
	expect_cm_event(cl.ec, RDMA_CM_EVENT_ADDR_RESOLVED, 5, NULL);
	CHECK(rdma_resolve_route(id, 2000));
	expect_cm_event(cl.ec, RDMA_CM_EVENT_ROUTE_RESOLVED, 5, NULL);
	CHECK_RET(ibv_query_device(id->verbs, &da));
	if ((int)window + CTRL_SEND_SLOTS + 4 > da.max_qp_wr)
		die("window %u too large for this device (max_qp_wr %d)", window, da.max_qp_wr);
	if (size > da.max_mr_size)
		die("size %zu larger than max_mr_size %llu", size,
		    (unsigned long long)da.max_mr_size);
	conn_setup(&cl.c, id, data_len, window + CTRL_SEND_SLOTS + 4, CTRL_RECV_SLOTS + 2);
	cl.c.spin_us = opt.spin_us;
	/* Ping-pong: the pongs land in data slots 1..LAT_RECVS (slot 0 is the ping); there are
	 * no control messages on that connection. */
	for (unsigned int i = 0; i < (op == OP_LAT ? LAT_RECVS : CTRL_RECV_SLOTS); i++) {
		if (op == OP_LAT)
			post_recv(&cl.c, WRID(WK_RDATA, i), cl.c.data + (i + 1) * size,
				  (uint32_t)size, cl.c.data_mr->lkey);
		else
			post_ctrl_recv(&cl.c, i);
	}

	struct conn_req rq;
	struct rdma_conn_param cp;

	memset(&rq, 0, sizeof(rq));
	rq.magic = htobe32(SR_MAGIC);
	rq.version = SR_VERSION;
	rq.op = (uint8_t)op;
	rq.window = htobe16((uint16_t)window);
	rq.size = htobe32((uint32_t)size);
	rq.rkey = htobe32(cl.c.data_mr ? cl.c.data_mr->rkey : 0);
	rq.addr = htobe64((uintptr_t)cl.c.data);
	rq.spin_us = htobe32(op == OP_LAT ? opt.spin_us : 0);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &rq;
	cp.private_data_len = sizeof(rq);
	cp.initiator_depth = (uint8_t)(da.max_qp_init_rd_atom < 16 ? da.max_qp_init_rd_atom : 16);
	cp.responder_resources = (uint8_t)(da.max_qp_rd_atom < 16 ? da.max_qp_rd_atom : 16);
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	CHECK(rdma_connect(id, &cp));
	expect_cm_event(cl.ec, RDMA_CM_EVENT_ESTABLISHED, 10, &ev);
	if (ev->param.conn.private_data_len < sizeof(cl.rep) || !ev->param.conn.private_data) {
		rdma_ack_cm_event(ev);
		die("ESTABLISHED without the server's private data (%u bytes)",
		    ev->param.conn.private_data_len);
	}
	memcpy(&cl.rep, ev->param.conn.private_data, sizeof(cl.rep));
	rdma_ack_cm_event(ev);
	if (be32toh(cl.rep.magic) != SR_MAGIC || cl.rep.op != op ||
	    be32toh(cl.rep.size) != size)
		die("server's accept private data does not match the request (magic 0x%08x, "
		    "op %u, size %u)", be32toh(cl.rep.magic), cl.rep.op, be32toh(cl.rep.size));
	cl.ord = be32toh(cl.rep.ird);
	if (cl.ord > cp.initiator_depth)
		cl.ord = cp.initiator_depth;
	if (cl.ord == 0)
		cl.ord = 1;
	cl.credits = be16toh(cl.rep.recv_depth);
	cl.have_res = false;
}

static void cli_disconnect(void)
{
	CHECK(rdma_disconnect(cl.c.id));
	/* Completions flushed by the disconnect are dropped with the CQ. */
	expect_cm_event(cl.ec, RDMA_CM_EVENT_DISCONNECTED, 10, NULL);
	struct rdma_cm_id *id = cl.c.id;

	conn_teardown(&cl.c);
	CHECK(rdma_destroy_id(id));
}

/*
 * One bandwidth stream: post WRs of @size bytes for opt.duration seconds with at most @window
 * outstanding, signaling every (window+3)/4-th WR and the last. The last WR uses @last_buf.
 * For SEND also respects credits (keeping one for END). Returns the number of WRs.
 */
static uint64_t cli_stream(enum op op, size_t size, unsigned int window, uint8_t *buf,
			   uint8_t *last_buf, double *t_start)
{
	enum ibv_wr_opcode opc = op == OP_WRITE ? IBV_WR_RDMA_WRITE :
				 op == OP_READ	? IBV_WR_RDMA_READ :
						  IBV_WR_SEND;
	uint64_t raddr = be64toh(cl.rep.addr);
	uint32_t rkey = be32toh(cl.rep.rkey);
	unsigned int sig = (window + 3) / 4;
	uint64_t posted = 0, retired = 0;
	bool last_posted = false;
	struct ibv_wc wc[32];
	double t0 = now_s(), end = t0 + opt.duration;
	char what[64];

	snprintf(what, sizeof(what), "%s %zu B stream", op_name[op], size);
	*t_start = t0;
	while (!last_posted || retired < posted) {
		bool posted_any = false;

		while (!last_posted && posted - retired < window &&
		       (op != OP_SEND || cl.credits > 1)) {
			bool last = now_s() >= end;

			post_send(&cl.c, WRID(WK_SDATA, posted), opc, last ? last_buf : buf,
				  (uint32_t)size, cl.c.data_mr->lkey,
				  last || posted % sig == sig - 1, raddr, rkey);
			posted++;
			posted_any = true;
			if (op == OP_SEND)
				cl.credits--;
			last_posted = last;
		}
		int n = ibv_poll_cq(cl.c.cq, 32, wc);

		if (n < 0)
			die("ibv_poll_cq failed: returned %d (%s)", n, what);
		if (n == 0 && !posted_any)
			n = wait_cq(&cl.c, wc, 32, end + 10 + size * 1e-6, -1, what);
		for (int i = 0; i < n; i++)
			cli_handle_wc(&wc[i], &retired, what);
	}
	return posted;
}

static double cli_rdma_bw(enum op op, size_t size)
{
	unsigned int window = window_for(size);
	double t0, t1, deadline;
	uint32_t ok, detail;
	uint64_t n;
	char what[80];

	/* Local buffers: [0, size) stream buffer, [size, 2*size) last-transfer buffer. */
	cli_connect(op, size, window, 2 * size);
	uint8_t *a = cl.c.data, *b = cl.c.data + size;
	uint64_t raddr = be64toh(cl.rep.addr);
	uint32_t rkey = be32toh(cl.rep.rkey);
	struct ibv_wc wc[16];

	deadline = now_s() + 10 + size * 1e-6;
	switch (op) {
	case OP_WRITE:
		/* First transfer, verified by the server. */
		pattern_fill(b, size, SEED_WRITE_FIRST);
		post_send(&cl.c, WRID(WK_SDATA, 0), IBV_WR_RDMA_WRITE, b, (uint32_t)size,
			  cl.c.data_mr->lkey, true, raddr, rkey);
		snprintf(what, sizeof(what), "first RDMA WRITE of %zu B", size);
		for (bool done = false; !done;) {
			int k = wait_cq(&cl.c, wc, 16, deadline, -1, what);

			for (int i = 0; i < k; i++) {
				cli_handle_wc(&wc[i], NULL, what);
				done |= WR_KIND(wc[i].wr_id) == WK_SDATA;
			}
		}
		send_ctrl(&cl.c, CT_VERIFY, SEED_WRITE_FIRST, 0);
		cli_wait_result(deadline, what, &ok, &detail);
		if (!ok)
			die("%s: server found wrong data at offset %u", what, detail);
		pattern_fill(a, size, SEED_WRITE_STREAM);
		pattern_fill(b, size, SEED_WRITE_LAST);
		n = cli_stream(op, size, window, a, b, &t0);
		snprintf(what, sizeof(what), "last RDMA WRITE of %zu B", size);
		send_ctrl(&cl.c, CT_VERIFY, SEED_WRITE_LAST, 0);
		cli_wait_result(now_s() + 10 + size * 1e-6, what, &ok, &detail);
		t1 = now_s();
		if (!ok)
			die("%s: server found wrong data at offset %u", what, detail);
		break;
	case OP_READ: {
		window = window_for(size) < cl.ord ? window_for(size) : cl.ord;
		long bad;

		snprintf(what, sizeof(what), "first RDMA READ of %zu B", size);
		post_send(&cl.c, WRID(WK_SDATA, 0), IBV_WR_RDMA_READ, b, (uint32_t)size,
			  cl.c.data_mr->lkey, true, raddr, rkey);
		for (bool done = false; !done;) {
			int k = wait_cq(&cl.c, wc, 16, deadline, -1, what);

			for (int i = 0; i < k; i++) {
				cli_handle_wc(&wc[i], NULL, what);
				done |= WR_KIND(wc[i].wr_id) == WK_SDATA;
			}
		}
		if ((bad = pattern_check(b, size, SEED_READ)) >= 0)
			die("%s: wrong data at offset %ld", what, bad);
		memset(b, 0, size);
		n = cli_stream(op, size, window, a, b, &t0);
		t1 = now_s();
		snprintf(what, sizeof(what), "last RDMA READ of %zu B", size);
		if ((bad = pattern_check(b, size, SEED_READ)) >= 0)
			die("%s: wrong data at offset %ld", what, bad);
		break;
	}
	case OP_SEND:
		pattern_fill(a, size, SEED_SEND_FIRST);
		pattern_fill(b, size, SEED_SEND_LAST);
		if (window + 2 > cl.credits)
			window = cl.credits > 2 ? cl.credits - 2 : 1;
		n = cli_stream(op, size, window, a, b, &t0);
		snprintf(what, sizeof(what), "SEND stream of %zu B", size);
		send_ctrl(&cl.c, CT_END, (uint32_t)n, 0);
		cli_wait_result(now_s() + 10 + size * 1e-6, what, &ok, &detail);
		t1 = now_s();
		if (!ok)
			die("%s: server reports wrong data or count (see the server's log)", what);
		break;
	default:
		die("internal: bad op");
	}
	cli_disconnect();
	fprintf(stderr, "  rdma %-5s %8zu B: %llu WRs, window %u, %.3f s\n", op_name[op], size,
		(unsigned long long)n, window, t1 - t0);
	g_msgs = n;
	g_secs = t1 - t0;
	return (double)n * (double)size / (t1 - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct lat_result {
	double median, p99; /* µs; < 0: not measured */
	uint64_t n;
};

static struct lat_result lat_stats(double *s, uint64_t n)
{
	struct lat_result r = { -1, -1, n };

	if (!n)
		return r;
	qsort(s, n, sizeof(*s), cmp_double);
	r.median = s[n / 2] * 1e6;
	size_t k = (size_t)ceil(0.99 * (double)n);

	r.p99 = s[k ? k - 1 : 0] * 1e6;
	return r;
}

static struct lat_result cli_rdma_lat(double *samples)
{
	struct ibv_wc wc[16];
	uint64_t n = 0, seq = 0;
	size_t size = opt.lat_size;
	double end;

	cli_connect(OP_LAT, size, 1, size * (1 + LAT_RECVS));
	uint8_t *ping = cl.c.data;

	pattern_fill(ping, size, SEED_SEND_FIRST);
	end = 0;
	for (;;) {
		double t0 = now_s();

		if (seq == WARMUP)
			end = t0 + opt.duration; /* the time counts from the end of the warm-up */
		if (seq >= WARMUP && (t0 >= end || n >= MAX_SAMPLES))
			break;
		uint64_t v = htobe64(seq);

		memcpy(ping, &v, 8);
		post_send(&cl.c, WRID(WK_SCTRL, 0), IBV_WR_SEND, ping, (uint32_t)size,
			  cl.c.data_mr->lkey, true, 0, 0);
		bool sent = false, got = false;

		while (!sent || !got) {
			int k = wait_cq(&cl.c, wc, 16, t0 + 10, -1, "ping-pong");

			for (int i = 0; i < k; i++) {
				wc_check(&wc[i], "ping-pong");
				if (!(wc[i].opcode & IBV_WC_RECV)) {
					sent = true;
					continue;
				}
				unsigned int idx = (unsigned int)WR_IDX(wc[i].wr_id);
				uint8_t *pong = cl.c.data + (idx + 1) * size;

				if (wc[i].byte_len != size)
					die("ping-pong: pong of %u bytes", wc[i].byte_len);
				if (memcmp(pong, ping, size) != 0) {
					uint64_t echo;

					memcpy(&echo, pong, 8);
					die("ping-pong: pong (sequence %llu) differs from "
					    "ping %llu",
					    (unsigned long long)be64toh(echo),
					    (unsigned long long)seq);
				}
				post_recv(&cl.c, wc[i].wr_id, pong, (uint32_t)size,
					  cl.c.data_mr->lkey);
				got = true;
				if (seq >= WARMUP)
					samples[n++] = now_s() - t0;
			}
		}
		seq++;
	}
	cli_disconnect();
	fprintf(stderr, "  rdma lat %8zu B: %llu round trips\n", size, (unsigned long long)n);
	return lat_stats(samples, n);
}

/* ---- TCP baseline, client side ---------------------------------------------------------- */

static int tcp_connect_hdr(enum op op, size_t size, uint32_t ms, uint32_t flags)
{
	int fd;

	CHECK(fd = socket(cl.dst->ai_family, SOCK_STREAM, 0));
	struct sockaddr_storage ss;

	memcpy(&ss, cl.dst->ai_addr, cl.dst->ai_addrlen);
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)(opt.port + 1));
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)(opt.port + 1));
	CHECK(connect(fd, (struct sockaddr *)&ss, cl.dst->ai_addrlen));
	tcp_nodelay(fd);
	struct tcp_hdr h = { htobe32(SR_MAGIC), htobe32(op), htobe32((uint32_t)size), htobe32(ms),
			     htobe32(flags) };

	if (tcp_full(fd, &h, sizeof(h), true) != 1)
		die("TCP baseline: send header failed: errno %d (%s)", errno, strerror(errno));
	return fd;
}

static double cli_tcp_bw(enum op op, size_t size)
{
	uint8_t *buf = xmalloc(size), *last = xmalloc(size), *first = xmalloc(size);
	double t0, t1;
	uint64_t count = 0;
	int fd = tcp_connect_hdr(op, size, (uint32_t)(opt.duration * 1000), 0);

	if (op == OP_WRITE || op == OP_SEND) {
		pattern_fill(buf, size, SEED_SEND_FIRST);
		pattern_fill(last, size, SEED_SEND_LAST);
		t0 = now_s();
		double end = t0 + opt.duration;

		for (;;) {
			bool fin = count > 0 && now_s() >= end;

			if (tcp_full(fd, fin ? last : buf, size, true) != 1)
				die("TCP baseline %s %zu B: send failed: errno %d (%s)",
				    op_name[op], size, errno, strerror(errno));
			count++;
			if (fin)
				break;
		}
		CHECK(shutdown(fd, SHUT_WR));
		uint32_t rep[4];

		if (tcp_full(fd, rep, sizeof(rep), false) != 1)
			die("TCP baseline %s %zu B: no reply from the server: errno %d (%s)",
			    op_name[op], size, errno, strerror(errno));
		t1 = now_s();
		uint64_t got = (uint64_t)be32toh(rep[2]) << 32 | be32toh(rep[3]);

		if (!be32toh(rep[0]) || got != count)
			die("TCP baseline %s %zu B: server reports bad data or count (%llu of %llu)",
			    op_name[op], size, (unsigned long long)got,
			    (unsigned long long)count);
	} else { /* read: server -> client stream */
		int r;

		t0 = now_s();
		while ((r = tcp_full(fd, buf, size, false)) == 1)
			if (count++ == 0)
				memcpy(first, buf, size);
		t1 = now_s();
		if (r < 0)
			die("TCP baseline read %zu B: recv failed: errno %d (%s)", size, errno,
			    strerror(errno));
		if (!count || pattern_check(first, size, SEED_SEND_FIRST) >= 0 ||
		    pattern_check(buf, size, SEED_SEND_LAST) >= 0)
			die("TCP baseline read %zu B: wrong data in the first or last message", size);
	}
	close(fd);
	free(buf);
	free(last);
	free(first);
	fprintf(stderr, "  tcp  %-5s %8zu B: %llu messages, %.3f s\n", op_name[op], size,
		(unsigned long long)count, t1 - t0);
	g_msgs = count;
	g_secs = t1 - t0;
	return (double)count * (double)size / (t1 - t0) / 1e6;
}

static struct lat_result cli_tcp_lat(double *samples)
{
	bool spin = opt.spin_us > 0;
	size_t size = opt.lat_size;
	int fd = tcp_connect_hdr(OP_LAT, size, 0, spin ? TCP_F_BUSY : 0);
	uint64_t n = 0, seq = 0;
	uint8_t *ping = xmalloc(size), *pong = xmalloc(size);
	double end = 0;

	pattern_fill(ping, size, SEED_SEND_FIRST);
	for (;;) {
		double t0 = now_s();

		if (seq == WARMUP)
			end = t0 + opt.duration; /* the time counts from the end of the warm-up */
		if (seq >= WARMUP && (t0 >= end || n >= MAX_SAMPLES))
			break;
		uint64_t v = htobe64(seq);

		memcpy(ping, &v, 8);
		if (tcp_io(fd, ping, size, true, spin) != 1 ||
		    tcp_io(fd, pong, size, false, spin) != 1)
			die("TCP baseline ping-pong failed: errno %d (%s)", errno, strerror(errno));
		if (memcmp(ping, pong, size) != 0)
			die("TCP baseline ping-pong: wrong echo");
		if (seq >= WARMUP)
			samples[n++] = now_s() - t0;
		seq++;
	}
	close(fd);
	free(ping);
	free(pong);
	fprintf(stderr, "  tcp  lat %8zu B: %llu round trips\n", size, (unsigned long long)n);
	return lat_stats(samples, n);
}

/* ---- Report ----------------------------------------------------------------------------- */

static const char *size_str(size_t s, char *buf, size_t len)
{
	if (s >= (1u << 20) && s % (1u << 20) == 0)
		snprintf(buf, len, "%zu MiB", s >> 20);
	else if (s >= 1024 && s % 1024 == 0)
		snprintf(buf, len, "%zu KiB", s >> 10);
	else
		snprintf(buf, len, "%zu B", s);
	return buf;
}

static void fmt_num(char *buf, size_t len, double v, int prec)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.*f", prec, v);
}

struct bw_row {
	enum op op;
	size_t size;
	double rdma, tcp;
};

static void print_bw(const struct bw_row *rows, unsigned int n)
{
	char s[32], r[32], t[32], q[32];

	if (opt.markdown) {
		printf("| op | size | softrdma MB/s | TCP MB/s | ratio |\n");
		printf("| --- | ---: | ---: | ---: | ---: |\n");
	} else {
		printf("%-6s %9s %14s %10s %7s\n", "op", "size", "softrdma MB/s", "TCP MB/s",
		       "ratio");
	}
	for (unsigned int i = 0; i < n; i++) {
		size_str(rows[i].size, s, sizeof(s));
		fmt_num(r, sizeof(r), rows[i].rdma, 1);
		fmt_num(t, sizeof(t), rows[i].tcp, 1);
		fmt_num(q, sizeof(q), rows[i].rdma >= 0 && rows[i].tcp > 0 ?
					      rows[i].rdma / rows[i].tcp : -1, 2);
		if (opt.markdown)
			printf("| %s | %s | %s | %s | %s |\n", op_name[rows[i].op], s, r, t, q);
		else
			printf("%-6s %9s %14s %10s %7s\n", op_name[rows[i].op], s, r, t, q);
	}
}

static void print_lat(struct lat_result r, struct lat_result t)
{
	char rm[32], rp[32], tm[32], tp[32], q[32];

	fmt_num(rm, sizeof(rm), r.median, 1);
	fmt_num(rp, sizeof(rp), r.p99, 1);
	fmt_num(tm, sizeof(tm), t.median, 1);
	fmt_num(tp, sizeof(tp), t.p99, 1);
	fmt_num(q, sizeof(q), r.median >= 0 && t.median > 0 ? r.median / t.median : -1, 2);
	char sz[32];

	size_str(opt.lat_size, sz, sizeof(sz));
	if (opt.markdown) {
		printf("| op | size | softrdma median µs | softrdma p99 µs | TCP median µs | "
		       "TCP p99 µs | ratio (median) |\n");
		printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
		printf("| lat | %s | %s | %s | %s | %s | %s |\n", sz, rm, rp, tm, tp, q);
	} else {
		printf("%-6s %9s %14s %10s %10s %10s %7s\n", "op", "size", "rdma med µs",
		       "rdma p99", "tcp med µs", "tcp p99", "ratio");
		printf("%-6s %9s %14s %10s %10s %10s %7s\n", "lat", sz, rm, rp, tm, tp, q);
	}
}

static void cli_bye(void)
{
	int fd = tcp_connect_hdr(OP_BYE, 0, 0, 0);
	uint32_t ok;

	tcp_full(fd, &ok, 4, false);
	close(fd);
}

/* One bandwidth measurement; with -K also its key=value line, with this process's CPU
 * seconds from before the connection to after its teardown. */
static double kv_bw(const char *impl, enum op op, size_t size, double (*fn)(enum op, size_t))
{
	double cpu0 = cpu_s(), mbps = fn(op, size);

	if (opt.kv)
		printf("result impl=%s op=%s size=%zu mbps=%.3f msgs=%llu secs=%.6f cpu_s=%.6f\n",
		       impl, op_name[op], size, mbps, (unsigned long long)g_msgs, g_secs,
		       cpu_s() - cpu0);
	return mbps;
}

static void kv_lat(const char *impl, struct lat_result r)
{
	if (opt.kv)
		printf("result impl=%s op=lat size=%zu mode=%s median_us=%.3f p99_us=%.3f n=%llu\n",
		       impl, opt.lat_size, opt.spin_us ? "busy" : "block", r.median, r.p99,
		       (unsigned long long)r.n);
}

static int run_client(void)
{
	struct bw_row rows[3 * 32];
	unsigned int nrows = 0;
	double t_all = now_s();

	cl.dst = resolve(opt.addr, opt.port, false);
	cl.ec = make_event_channel();
	for (enum op op = OP_WRITE; op <= OP_SEND; op++) {
		if (!(opt.ops & (1u << op)))
			continue;
		for (unsigned int i = 0; i < opt.nsizes; i++) {
			struct bw_row *r = &rows[nrows++];

			r->op = op;
			r->size = opt.sizes[i];
			r->rdma = opt.do_rdma ? kv_bw("rdma", op, r->size, cli_rdma_bw) : -1;
			r->tcp = opt.do_tcp ? kv_bw("tcp", op, r->size, cli_tcp_bw) : -1;
		}
	}
	struct lat_result lr = { -1, -1, 0 }, lt = { -1, -1, 0 };

	if (opt.ops & (1u << OP_LAT)) {
		double *samples = malloc(MAX_SAMPLES * sizeof(double));

		if (!samples)
			die("out of memory");
		if (opt.do_rdma)
			kv_lat("rdma", lr = cli_rdma_lat(samples));
		if (opt.do_tcp)
			kv_lat("tcp", lt = cli_tcp_lat(samples));
		free(samples);
	}
	cli_bye();
	rdma_destroy_event_channel(cl.ec);
	freeaddrinfo(cl.dst);
	if (opt.kv)
		return 0;

	fprintf(stderr, "srbench: done in %.1f s\n", now_s() - t_all);
	if (nrows)
		print_bw(rows, nrows);
	if (nrows && (opt.ops & (1u << OP_LAT)))
		printf("\n");
	if (opt.ops & (1u << OP_LAT))
		print_lat(lr, lt);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: srbench -s [-a addr] [-p port] [-o]\n"
		"       srbench -c -a addr [-p port] [-t write|read|send|lat|all[,...]]\n"
		"               [-S size,...] [-d seconds] [-T both|rdma|tcp] [-w window]\n"
		"               [-P spin_us] [-L size] [-M | -K]\n"
		"  -s          server (rdma_cm on port, TCP baseline on port+1)\n"
		"  -o          server: exit when a client has finished its run\n"
		"  -c          client\n"
		"  -a addr     address to listen on / connect to (server default: any)\n"
		"  -p port     rdma_cm port (default 18600); the TCP baseline uses port+1\n"
		"  -t list     measurements (default all = write,read,send,lat)\n"
		"  -S list     message sizes for bandwidth, suffix k/m for KiB/MiB, %u..%u\n"
		"              (default 64,256,1k,4k,16k,64k,256k,1m,4m)\n"
		"  -d seconds  time per measurement (default 1)\n"
		"  -T which    both (default), rdma (softrdma/verbs only) or tcp (baseline only)\n"
		"  -w window   outstanding WRs (default 8 MiB/size, clamped to 4..64)\n"
		"  -P us       busy-poll this long before sleeping on the completion channel "
		"(default 0);\n"
		"              ping-pong: the server polls too, and TCP spins on non-blocking "
		"sockets\n"
		"  -L size     ping-pong message size (default 8, %u..%u)\n"
		"  -M          print the tables in Markdown\n"
		"  -K          one key=value line per measurement (client and server), with CPU "
		"seconds\n",
		MIN_SIZE, MAX_SIZE, LAT_MIN, MAX_SIZE);
}

static void parse_sizes(char *arg)
{
	opt.nsizes = 0;
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		char *end;
		unsigned long long v = strtoull(tok, &end, 10);

		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		if (end == tok || *end || v < MIN_SIZE || v > MAX_SIZE)
			die("bad size '%s' (%u..%u, suffix k or m)", tok, MIN_SIZE, MAX_SIZE);
		if (opt.nsizes == 32)
			die("too many sizes (max 32)");
		opt.sizes[opt.nsizes++] = (size_t)v;
	}
}

static void parse_ops(char *arg)
{
	opt.ops = 0;
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		if (!strcmp(tok, "all"))
			opt.ops |= 1u << OP_WRITE | 1u << OP_READ | 1u << OP_SEND | 1u << OP_LAT;
		else if (!strcmp(tok, "write"))
			opt.ops |= 1u << OP_WRITE;
		else if (!strcmp(tok, "read"))
			opt.ops |= 1u << OP_READ;
		else if (!strcmp(tok, "send"))
			opt.ops |= 1u << OP_SEND;
		else if (!strcmp(tok, "lat"))
			opt.ops |= 1u << OP_LAT;
		else
			die("bad -t '%s' (write, read, send, lat, all)", tok);
	}
}

int main(int argc, char **argv)
{
	static const size_t def_sizes[] = { 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10,
					    256 << 10, 1 << 20, 4 << 20 };
	int c;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	opt.ops = 1u << OP_WRITE | 1u << OP_READ | 1u << OP_SEND | 1u << OP_LAT;
	for (unsigned int i = 0; i < sizeof(def_sizes) / sizeof(def_sizes[0]); i++)
		opt.sizes[opt.nsizes++] = def_sizes[i];
	while ((c = getopt(argc, argv, "sca:p:ot:S:d:T:w:P:L:MKh")) != -1) {
		switch (c) {
		case 's': opt.server = true; break;
		case 'c': opt.client = true; break;
		case 'a': opt.addr = optarg; break;
		case 'p': opt.port = atoi(optarg); break;
		case 'o': opt.once = true; break;
		case 't': parse_ops(optarg); break;
		case 'S': parse_sizes(optarg); break;
		case 'd': opt.duration = atof(optarg); break;
		case 'w': opt.window = (unsigned int)atoi(optarg); break;
		case 'P': opt.spin_us = (unsigned int)atoi(optarg); break;
		case 'M': opt.markdown = true; break;
		case 'K': opt.kv = true; break;
		case 'L': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);

			if (*end == 'k' || *end == 'K')
				v <<= 10, end++;
			if (end == optarg || *end || v < LAT_MIN || v > MAX_SIZE)
				die("bad -L '%s' (%u..%u, suffix k)", optarg, LAT_MIN, MAX_SIZE);
			opt.lat_size = (size_t)v;
			break;
		}
		case 'T':
			if (!strcmp(optarg, "both"))
				opt.do_rdma = opt.do_tcp = true;
			else if (!strcmp(optarg, "rdma"))
				opt.do_rdma = true, opt.do_tcp = false;
			else if (!strcmp(optarg, "tcp"))
				opt.do_rdma = false, opt.do_tcp = true;
			else
				die("bad -T '%s' (both, rdma, tcp)", optarg);
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (opt.server == opt.client || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (opt.port <= 0 || opt.port >= 65535)
		die("bad port %d", opt.port);
	if (opt.duration <= 0 || opt.duration > 60)
		die("bad -d %g (0 < seconds <= 60)", opt.duration);
	if (opt.window > 1024)
		die("bad -w %u (1..1024)", opt.window);
	if (opt.server) {
		g_role = "srbench server";
		return run_server();
	}
	g_role = "srbench client";
	if (!opt.addr)
		die("-c needs -a addr");
	return run_client();
}
