// SPDX-License-Identifier: MIT
/* What the client and the server share: clocks, byte patterns, RDMA plumbing. */
#include "srbench.h"

const char *const op_name[] = { "?", "write", "read", "send", "lat", "bye" };

void *xmalloc(size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, n ? n : 1) != 0)
		die("out of memory (%zu bytes)", n);
	memset(p, 0, n);
	return p;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double cpu_s(void)
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

void pattern_fill(void *buf, size_t len, uint32_t seed)
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

long pattern_check(const void *buf, size_t len, uint32_t seed)
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


/* ------------------------------------------------------------------------------------------ */
/* RDMA connection plumbing shared by client and server                                       */

void conn_setup(struct conn *c, struct rdma_cm_id *id, size_t data_len, unsigned int send_depth,
		unsigned int recv_depth)
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

void conn_teardown(struct conn *c)
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

void post_recv(struct conn *c, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK_RET(ibv_post_recv(c->qp, &wr, &bad));
}

void post_ctrl_recv(struct conn *c, unsigned int slot)
{
	post_recv(c, WRID(WK_RCTRL, slot), c->ctrl + slot * CTRL_SLOT, CTRL_SLOT, c->ctrl_mr->lkey);
}

void post_send(struct conn *c, uint64_t wr_id, enum ibv_wr_opcode opc, void *addr, uint32_t len,
	       uint32_t lkey, bool signaled, uint64_t raddr, uint32_t rkey)
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

void send_ctrl(struct conn *c, uint32_t type, uint32_t a, uint32_t b)
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

void parse_ctrl(const void *p, uint32_t *type, uint32_t *a, uint32_t *b)
{
	uint32_t m[3];

	memcpy(m, p, sizeof(m));
	*type = be32toh(m[0]);
	*a = be32toh(m[1]);
	*b = be32toh(m[2]);
}

const char *wc_op_str(enum ibv_wc_opcode o)
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

/* srbench.h says what it does. */
int wait_cq(struct conn *c, struct ibv_wc *wc, int max, double deadline, int extra_fd,
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

void wc_check(const struct ibv_wc *wc, const char *what)
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

void expect_cm_event(struct rdma_event_channel *ec, enum rdma_cm_event_type type, double timeout,
		     struct rdma_cm_event **out)
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

struct rdma_event_channel *make_event_channel(void)
{
	struct rdma_event_channel *ec;

	CHECK_PTR(ec, rdma_create_event_channel());
	int fl = fcntl(ec->fd, F_GETFL);

	CHECK(fcntl(ec->fd, F_SETFL, fl | O_NONBLOCK));
	return ec;
}

unsigned int window_for(size_t size)
{
	if (opt.window)
		return opt.window;
	size_t w = (8u << 20) / size;

	return w < 4 ? 4 : w > 64 ? 64 : (unsigned int)w;
}

struct addrinfo *resolve(const char *addr, int port, bool passive)
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
