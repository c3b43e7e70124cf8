// SPDX-License-Identifier: MIT
/*
 * Faults under a connection: fault_test <case> [args]. Exit 0 = pass, 77 = skip.
 *
 *   kill_sender        We stream RDMA WRITEs (1 MiB) and SENDs (64 KiB) to a peer process and
 *                      SIGKILL it mid-stream: DISCONNECTED within FT_KILL_BOUND_MS of the
 *                      kill, every outstanding work request completes (success or flushed),
 *                      and every destroy call returns 0.
 *   kill_receiver      The same with the peer streaming into us: our receives still posted
 *                      come back flushed, exactly as many as were left.
 *   vanish ADDR PORT ACK_TIMEOUT EXPECT_MIN_MS EXPECT_MAX_MS
 *                      (fault.sh, two namespaces) connect to peer_server, stream, say READY,
 *                      wait for a line on stdin (the peer's namespace drops every packet by
 *                      then, no FIN and no RST), post a SEND: DISCONNECTED must come within
 *                      [EXPECT_MIN_MS, EXPECT_MAX_MS] of it. ACK_TIMEOUT 0 leaves the option
 *                      unset (TCP's own limit, net.ipv4.tcp_retries2).
 *   peer_server ADDR PORT / peer_client ADDR PORT
 *                      the peers: stream until the connection ends or they are killed.
 *   cycles N CHECK_AT [no_memory]
 *                      N connect/transfer/disconnect cycles of a connected pair in this
 *                      process; descriptors, threads and memory at cycle CHECK_AT and N must
 *                      match (memory within the allowances of ft_cycles).
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dp_common.h"

#define FT_BUF (4u << 20)      /* each side's region */
#define FT_WRITE (1u << 20)    /* one RDMA WRITE */
#define FT_SEND (64u << 10)    /* one SEND, and each receive */
#define FT_NRECV 32            /* receives posted by a receiver */
#define FT_DEPTH 16            /* sends a streamer keeps outstanding */
#define FT_KILL_AFTER 64       /* completions seen before the peer is killed */
#define FT_KILL_BOUND_MS 5000  /* docs/SECURITY.md, "Faults" */
#define FT_SAFETY_MS 30000     /* generous wait for things that must happen */
#define FT_RECV_ID (1ull << 40) /* receives' wr_id: FT_RECV_ID + slot; sends count from 0 */

/* Where the peer tells us where to write. */
struct ft_target {
	uint64_t addr;
	uint32_t rkey;
} __attribute__((packed));

struct ft_end {
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen, *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ft_target remote;
	int posted_recv;       /* receives in the RQ */
	int outstanding;       /* signaled sends not yet completed */
};

static long ft_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct rdma_cm_event *ft_event(struct rdma_event_channel *ec, int ms)
{
	struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, ms) != 1 || rdma_get_cm_event(ec, &ev))
		return NULL;
	return ev;
}

static struct rdma_cm_event *ft_expect(struct rdma_event_channel *ec,
				       enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = ft_event(ec, FT_SAFETY_MS);

	DP_CHECK(ev, "no CM event within %d ms (wanted %s)", FT_SAFETY_MS, rdma_event_str(want));
	DP_CHECK(ev->event == want, "got %s status %d, wanted %s", rdma_event_str(ev->event),
		 ev->status, rdma_event_str(want));
	return ev;
}

static struct addrinfo *ft_addr(const char *addr, const char *port)
{
	struct addrinfo *ai;

	DP_CHECK(getaddrinfo(addr, port, NULL, &ai) == 0, "getaddrinfo %s %s", addr, port);
	return ai;
}

/* PD, CQ with a channel, QP, region; a receiver's QP holds a Send without a receive (rnr_retry
 * 7) rather than ending the stream, so the streamer may run ahead of its reposts. */
static void ft_qp(struct ft_end *e, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * FT_DEPTH, .max_recv_wr = FT_NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	e->id = id;
	e->pd = ibv_alloc_pd(id->verbs);
	DP_CHECK(e->pd, "ibv_alloc_pd: %s", strerror(errno));
	e->cc = ibv_create_comp_channel(id->verbs);
	DP_CHECK(e->cc, "ibv_create_comp_channel: %s", strerror(errno));
	e->cq = ibv_create_cq(id->verbs, 2 * FT_DEPTH + FT_NRECV, NULL, e->cc, 0);
	DP_CHECK(e->cq, "ibv_create_cq: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = e->cq;
	DP_CHECK(rdma_create_qp(id, e->pd, &qa) == 0, "rdma_create_qp: %s", strerror(errno));
	e->buf = malloc(FT_BUF);
	DP_CHECK(e->buf, "malloc");
	memset(e->buf, 0x5a, FT_BUF);
	e->mr = dp_reg(e->pd, e->buf, FT_BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	DP_CHECK(ibv_req_notify_cq(e->cq, 0) == 0, "req_notify");
}

static void ft_hold_sends(struct ft_end *e)
{
	struct ibv_qp_attr a = { .rnr_retry = 7, .min_rnr_timer = 12 };

	DP_CHECK(ibv_modify_qp(e->id->qp, &a, IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER) == 0,
		 "modify_qp rnr: %s", strerror(errno));
}

static void ft_post_recv(struct ft_end *e, int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf + (size_t)slot * FT_SEND,
			       .length = FT_SEND, .lkey = e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = FT_RECV_ID + slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	DP_CHECK(ibv_post_recv(e->id->qp, &wr, &bad) == 0, "post_recv: %s", strerror(errno));
	e->posted_recv++;
}

/* Post the n-th send of a stream: WRITEs into the peer's region, every fourth a SEND. */
static int ft_post_stream(struct ft_end *e, unsigned long n)
{
	bool send = n % 4 == 3;
	uint32_t len = send ? FT_SEND : FT_WRITE;
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf, .length = len, .lkey = e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = n, .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
		.opcode = send ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
	}, *bad;

	wr.wr.rdma.remote_addr = e->remote.addr + (n % (FT_BUF / FT_WRITE)) * FT_WRITE;
	wr.wr.rdma.rkey = e->remote.rkey;
	if (ibv_post_send(e->id->qp, &wr, &bad))
		return -1;
	e->outstanding++;
	return 0;
}

/* Wait up to ms for the CQ's channel; then poll what is there. Returns completions (<= n). */
static int ft_poll(struct ft_end *e, struct ibv_wc *wc, int n, int ms)
{
	struct pollfd pfd = { .fd = e->cc->fd, .events = POLLIN };
	struct ibv_cq *ecq;
	void *ctx;
	int got = ibv_poll_cq(e->cq, n, wc);

	DP_CHECK(got >= 0, "ibv_poll_cq");
	if (got)
		return got;
	if (poll(&pfd, 1, ms) == 1) {
		DP_CHECK(ibv_get_cq_event(e->cc, &ecq, &ctx) == 0, "get_cq_event");
		ibv_ack_cq_events(ecq, 1);
		DP_CHECK(ibv_req_notify_cq(e->cq, 0) == 0, "req_notify");
	}
	got = ibv_poll_cq(e->cq, n, wc);
	DP_CHECK(got >= 0, "ibv_poll_cq");
	return got;
}

/* Every destroy call returns 0 (rdma_destroy_qp has no result). */
static void ft_destroy(struct ft_end *e)
{
	struct ibv_wc wc;

	rdma_destroy_qp(e->id);
	while (ibv_poll_cq(e->cq, 1, &wc) > 0)
		;
	DP_CHECK(ibv_dereg_mr(e->mr) == 0, "dereg_mr: %s", strerror(errno));
	DP_CHECK(ibv_destroy_cq(e->cq) == 0, "destroy_cq: %s", strerror(errno));
	DP_CHECK(ibv_destroy_comp_channel(e->cc) == 0, "destroy_comp_channel: %s", strerror(errno));
	DP_CHECK(ibv_dealloc_pd(e->pd) == 0, "dealloc_pd: %s", strerror(errno));
	DP_CHECK(rdma_destroy_id(e->id) == 0, "destroy_id: %s", strerror(errno));
	if (e->listen)
		DP_CHECK(rdma_destroy_id(e->listen) == 0, "destroy listener: %s", strerror(errno));
	rdma_destroy_event_channel(e->ec);
	free(e->buf);
}

/* Listen on addr:port (port 0: any), print "PORT n", take one connection, accept it with
 * our region as the target. */
static void ft_serve(struct ft_end *e, const char *addr, const char *port)
{
	struct addrinfo *ai = ft_addr(addr, port);
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };

	e->ec = rdma_create_event_channel();
	DP_CHECK(e->ec, "event channel");
	DP_CHECK(rdma_create_id(e->ec, &e->listen, NULL, RDMA_PS_TCP) == 0, "create_id");
	DP_CHECK(rdma_bind_addr(e->listen, ai->ai_addr) == 0, "bind: %s", strerror(errno));
	DP_CHECK(rdma_listen(e->listen, 1) == 0, "listen: %s", strerror(errno));
	freeaddrinfo(ai);
	printf("PORT %u\n", ntohs(rdma_get_src_port(e->listen)));
	fflush(stdout);
	ev = ft_expect(e->ec, RDMA_CM_EVENT_CONNECT_REQUEST);
	ft_qp(e, ev->id);
	rdma_ack_cm_event(ev);
	ft_hold_sends(e);
	for (int i = 0; i < FT_NRECV; i++)
		ft_post_recv(e, i);
	e->remote = (struct ft_target){ (uintptr_t)e->buf, e->mr->rkey };
	cp.private_data = &e->remote;
	cp.private_data_len = sizeof(e->remote);
	DP_CHECK(rdma_accept(e->id, &cp) == 0, "accept: %s", strerror(errno));
	rdma_ack_cm_event(ft_expect(e->ec, RDMA_CM_EVENT_ESTABLISHED));
}

/* Connect to addr:port; the accept's private data names the peer's region. */
static void ft_dial(struct ft_end *e, const char *addr, const char *port, uint8_t ack_timeout)
{
	struct addrinfo *ai = ft_addr(addr, port);
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *id;

	e->ec = rdma_create_event_channel();
	DP_CHECK(e->ec, "event channel");
	DP_CHECK(rdma_create_id(e->ec, &id, NULL, RDMA_PS_TCP) == 0, "create_id");
	DP_CHECK(rdma_resolve_addr(id, NULL, ai->ai_addr, 2000) == 0, "resolve_addr");
	freeaddrinfo(ai);
	rdma_ack_cm_event(ft_expect(e->ec, RDMA_CM_EVENT_ADDR_RESOLVED));
	DP_CHECK(rdma_resolve_route(id, 2000) == 0, "resolve_route");
	rdma_ack_cm_event(ft_expect(e->ec, RDMA_CM_EVENT_ROUTE_RESOLVED));
	if (ack_timeout)
		DP_CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
					 &ack_timeout, 1) == 0, "ACK_TIMEOUT");
	ft_qp(e, id);
	ft_hold_sends(e);
	for (int i = 0; i < FT_NRECV; i++)
		ft_post_recv(e, i);
	DP_CHECK(rdma_connect(id, &cp) == 0, "connect: %s", strerror(errno));
	ev = ft_expect(e->ec, RDMA_CM_EVENT_ESTABLISHED);
	DP_CHECK(ev->param.conn.private_data_len >= sizeof(e->remote), "no target in the accept");
	memcpy(&e->remote, ev->param.conn.private_data, sizeof(e->remote));
	rdma_ack_cm_event(ev);
}

/* Run one streaming step: reap completions (reposting receives), top the send queue up.
 * Returns the successful completions reaped, -1 once the connection failed. */
static int ft_step(struct ft_end *e, unsigned long *n, bool stream)
{
	struct ibv_wc wc[16];
	int got, ok = 0;

	while (stream && e->outstanding < FT_DEPTH)
		if (ft_post_stream(e, (*n)++))
			return -1;
	got = ft_poll(e, wc, 16, 1000);
	for (int i = 0; i < got; i++) {
		bool recv = wc[i].wr_id >= FT_RECV_ID; /* opcode is undefined in errors */

		if (recv)
			e->posted_recv--;
		else
			e->outstanding--;
		if (wc[i].status != IBV_WC_SUCCESS)
			return -1;
		ok++;
		if (recv)
			ft_post_recv(e, (int)(wc[i].wr_id - FT_RECV_ID));
	}
	return ok;
}

/* A peer: stream (client) or take what comes (server) until the connection ends. */
static int ft_peer(bool server, const char *addr, const char *port)
{
	struct ft_end e = { 0 };
	unsigned long n = 0;

	if (server)
		ft_serve(&e, addr, port);
	else
		ft_dial(&e, addr, port, 0);
	printf("STREAMING\n");
	fflush(stdout);
	while (ft_step(&e, &n, !server) >= 0)
		;
	return 0;
}

/* Start this program as a peer; returns its pid, its stdout on *out. */
static pid_t ft_spawn(char *const argv[], FILE **out)
{
	int fds[2];
	pid_t pid;

	pid_t parent = getpid();

	DP_CHECK(pipe2(fds, O_CLOEXEC) == 0, "pipe");
	pid = fork();
	DP_CHECK(pid >= 0, "fork");
	if (!pid) {
		/* the peer streams until killed: it must not outlive us when a check fails first
		 * (or ctest kills us at the timeout) */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		dup2(fds[1], 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(fds[1]);
	*out = fdopen(fds[0], "r");
	DP_CHECK(*out, "fdopen");
	return pid;
}

/* Read peer output lines until one starts with want; returns it. */
static const char *ft_peer_says(FILE *f, const char *want)
{
	static char line[128];

	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, want, strlen(want)))
			return line;
	DP_CHECK(0, "the peer ended without saying %s", want);
	return NULL;
}

/* The first DISCONNECTED (other events may come first) within ms; its time since t0. */
static long ft_disconnected(struct ft_end *e, long t0, int ms)
{
	struct rdma_cm_event *ev;
	long t;

	for (;;) {
		ev = ft_event(e->ec, ms);
		DP_CHECK(ev, "no DISCONNECTED within %d ms", ms);
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
			break;
		fprintf(stderr, "(event %s first)\n", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	}
	t = ft_now_ms() - t0;
	DP_CHECK(ev->id == e->id, "DISCONNECTED for another id");
	rdma_ack_cm_event(ev);
	return t;
}

/* After DISCONNECTED: every outstanding send and every posted receive completes, successful
 * or flushed, then every destroy succeeds. Returns the number flushed. */
static int ft_flush_destroy(struct ft_end *e)
{
	struct ibv_wc wc[16];
	long t_end = ft_now_ms() + FT_SAFETY_MS;
	int flushed = 0;

	while (e->outstanding || e->posted_recv) {
		int got = ft_poll(e, wc, 16, 1000);

		for (int i = 0; i < got; i++) {
			DP_CHECK(wc[i].status == IBV_WC_SUCCESS || wc[i].status == IBV_WC_WR_FLUSH_ERR,
				 "completion %llx: %s", (unsigned long long)wc[i].wr_id,
				 ibv_wc_status_str(wc[i].status));
			flushed += wc[i].status == IBV_WC_WR_FLUSH_ERR;
			if (wc[i].wr_id >= FT_RECV_ID)
				e->posted_recv--;
			else
				e->outstanding--;
		}
		DP_CHECK(ft_now_ms() < t_end, "%d sends and %d receives never completed",
			 e->outstanding, e->posted_recv);
	}
	ft_destroy(e);
	return flushed;
}

/* We stream (sender) to a peer server, or a peer client streams into us (receiver). */
static int ft_kill(bool we_send)
{
	char *argv[] = { "fault_test", we_send ? "peer_server" : "peer_client", "127.0.0.1",
			 NULL, NULL };
	struct ft_end e = { 0 };
	unsigned long n = 0;
	long seen = 0, t_kill, t_disc;
	int flushed;
	char port[16];
	FILE *out;
	pid_t pid;
	int st;

	if (we_send) {
		argv[3] = "0";
		pid = ft_spawn(argv, &out);
		DP_CHECK(sscanf(ft_peer_says(out, "PORT"), "PORT %15s", port) == 1, "port");
		ft_dial(&e, "127.0.0.1", port, 0);
	} else {
		/* the listener must exist before the peer dials: serve in two halves */
		struct addrinfo *ai = ft_addr("127.0.0.1", "0");

		e.ec = rdma_create_event_channel();
		DP_CHECK(e.ec, "event channel");
		DP_CHECK(rdma_create_id(e.ec, &e.listen, NULL, RDMA_PS_TCP) == 0, "create_id");
		DP_CHECK(rdma_bind_addr(e.listen, ai->ai_addr) == 0, "bind");
		DP_CHECK(rdma_listen(e.listen, 1) == 0, "listen");
		freeaddrinfo(ai);
		snprintf(port, sizeof(port), "%u", ntohs(rdma_get_src_port(e.listen)));
		argv[3] = port;
		pid = ft_spawn(argv, &out);
		{
			struct rdma_cm_event *ev = ft_expect(e.ec, RDMA_CM_EVENT_CONNECT_REQUEST);
			struct rdma_conn_param cp = { .responder_resources = 1,
						      .initiator_depth = 1 };

			ft_qp(&e, ev->id);
			rdma_ack_cm_event(ev);
			ft_hold_sends(&e);
			for (int i = 0; i < FT_NRECV; i++)
				ft_post_recv(&e, i);
			e.remote = (struct ft_target){ (uintptr_t)e.buf, e.mr->rkey };
			cp.private_data = &e.remote;
			cp.private_data_len = sizeof(e.remote);
			DP_CHECK(rdma_accept(e.id, &cp) == 0, "accept: %s", strerror(errno));
			rdma_ack_cm_event(ft_expect(e.ec, RDMA_CM_EVENT_ESTABLISHED));
		}
	}
	/* mid-transfer: the stream runs, FT_KILL_AFTER completions of it are in */
	while (seen < FT_KILL_AFTER) {
		int r = ft_step(&e, &n, we_send);

		DP_CHECK(r >= 0, "the stream failed before the kill");
		seen += r;
	}
	DP_CHECK(kill(pid, SIGKILL) == 0, "kill");
	t_kill = ft_now_ms();
	DP_CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st), "peer not killed");
	fclose(out);
	/* keep the stream going into the dead connection: posting may fail once it is over */
	while (we_send && e.outstanding < FT_DEPTH && !ft_post_stream(&e, n++))
		;
	t_disc = ft_disconnected(&e, t_kill, FT_SAFETY_MS);
	flushed = ft_flush_destroy(&e);
	printf("DISCONNECTED %ld ms after the kill (bound %d ms), %d work requests flushed\n",
	       t_disc, FT_KILL_BOUND_MS, flushed);
	DP_CHECK(t_disc < FT_KILL_BOUND_MS, "DISCONNECTED too late");
	return 0;
}

/* Two namespaces (fault.sh): the peer's namespace drops everything after READY. */
static int ft_vanish(const char *addr, const char *port, int ack, long min_ms, long max_ms)
{
	struct ft_end e = { 0 };
	unsigned long n = 0;
	long seen = 0, t0, t_disc;
	int flushed;
	char line[16];

	ft_dial(&e, addr, port, (uint8_t)ack);
	while (seen < FT_KILL_AFTER) {
		int r = ft_step(&e, &n, true);

		DP_CHECK(r >= 0, "the stream failed before the cut");
		seen += r;
	}
	/* drain what is in flight so the cut meets a quiet connection, then one SEND */
	while (e.outstanding) {
		int r = ft_step(&e, &n, false);

		DP_CHECK(r >= 0, "the stream failed before the cut");
	}
	printf("READY\n");
	fflush(stdout);
	DP_CHECK(fgets(line, sizeof(line), stdin), "no go");
	t0 = ft_now_ms();
	n = 3; /* a SEND */
	DP_CHECK(ft_post_stream(&e, n) == 0, "post");
	t_disc = ft_disconnected(&e, t0, (int)max_ms + FT_SAFETY_MS);
	flushed = ft_flush_destroy(&e);
	printf("vanished peer: DISCONNECTED after %ld ms (expected %ld..%ld ms), %d flushed\n",
	       t_disc, min_ms, max_ms, flushed);
	DP_CHECK(t_disc >= min_ms && t_disc <= max_ms, "detection outside the expected window");
	return 0;
}

static long ft_count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	long n = 0;

	DP_CHECK(d, "opendir %s", path);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - (!strcmp(path, "/proc/self/fd")); /* opendir's own descriptor */
}

struct ft_usage {
	long fds, threads, vsz_kib, rss_kib;
	size_t heap; /* bytes malloc has handed out, mmapped blocks included (mallinfo2) */
};

static struct ft_usage ft_usage(void)
{
	struct mallinfo2 mi = mallinfo2();
	struct ft_usage u = { ft_count_dir("/proc/self/fd"), ft_count_dir("/proc/self/task"), 0,
			      0, mi.uordblks + mi.hblkhd };
	long vsz = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	DP_CHECK(f && fscanf(f, "%ld %ld", &vsz, &rss) == 2, "statm");
	fclose(f);
	u.vsz_kib = vsz * (sysconf(_SC_PAGESIZE) / 1024);
	u.rss_kib = rss * (sysconf(_SC_PAGESIZE) / 1024);
	return u;
}

/* One cycle: connect a pair, a SEND and an RDMA WRITE checked byte for byte, disconnect,
 * destroy everything (PDs and regions included). */
static void ft_cycle(unsigned int i)
{
	static uint8_t src[4096], dst[4096], rcv[4096];
	struct dp_pair p;
	struct ibv_mr *smr, *dmr, *rmr;
	struct ibv_wc wc;
	struct ibv_pd *cpd, *spd;

	dp_connect(&p, NULL);
	cpd = p.cli.pd;
	spd = p.srv.pd;
	smr = dp_reg(cpd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	dmr = dp_reg(spd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rmr = dp_reg(spd, rcv, sizeof(rcv), IBV_ACCESS_LOCAL_WRITE);
	dp_fill(src, sizeof(src), i);
	dp_post_recv(&p.srv, 1, rmr, rcv, sizeof(rcv));
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_WRITE, 2, smr, src, sizeof(src), (uintptr_t)dst,
			      dmr->rkey, IBV_SEND_SIGNALED) == 0, "post write");
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 3, smr, src, sizeof(src), 0, 0,
			      IBV_SEND_SIGNALED) == 0, "post send");
	for (int k = 0; k < 2; k++) {
		wc = dp_wait_wc(p.cli.cq, FT_SAFETY_MS);
		DP_CHECK(wc.status == IBV_WC_SUCCESS, "cycle %u: %s", i, ibv_wc_status_str(wc.status));
	}
	wc = dp_wait_wc(p.srv.cq, FT_SAFETY_MS);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1, "cycle %u: receive", i);
	/* the Send follows the Write in order: the Write's bytes are in place */
	DP_CHECK(dp_check(dst, sizeof(dst), i) && dp_check(rcv, sizeof(rcv), i), "cycle %u data", i);
	dp_disconnect_wait(&p);
	DP_CHECK(ibv_dereg_mr(smr) == 0 && ibv_dereg_mr(dmr) == 0 && ibv_dereg_mr(rmr) == 0,
		 "dereg_mr");
	dp_teardown(&p);
	DP_CHECK(ibv_dealloc_pd(cpd) == 0 && ibv_dealloc_pd(spd) == 0, "dealloc_pd");
}

/*
 * n cycles; the usage after check_at cycles and after n must match. Memory (skipped with
 * !memory, for sanitizer builds whose allocators keep freed memory in quarantine):
 *  - the heap may differ by what one cycle's allocations round to, far below a leak of even
 *    a few bytes per cycle over the remaining cycles (fault.sh sets MALLOC_ARENA_MAX=1 so
 *    mallinfo2, which reports one arena, sees the engine thread's allocations too);
 *  - the address space must not grow (nothing mapped per cycle);
 *  - resident memory grows by design while libibverbs' process-wide QP-number and STag
 *    tables (static, 16 bytes a slot) are first used: a new QP or region takes a slot never
 *    used before until every slot has been, so that a freed number rests as long as possible
 *    before reuse (verbs/qp.c, verbs/mr.c). Each cycle makes 2 QPs and 3 regions, 80 bytes of
 *    new table; the allowance is 128 bytes a cycle plus 1 MiB of page-granular noise.
 */
static int ft_cycles(unsigned int n, unsigned int check_at, bool memory)
{
	struct ft_usage a = { 0 }, b;
	long t0 = ft_now_ms();
	const long heap_slack = 32 * 1024, vsz_slack = 1024;
	const long rss_slack = 1024 + (long)(n - check_at) * 128 / 1024;

	DP_CHECK(check_at >= 1 && check_at < n, "usage: cycles N CHECK_AT (0 < CHECK_AT < N)");
	for (unsigned int i = 1; i <= n; i++) {
		ft_cycle(i);
		if (i == check_at)
			a = ft_usage();
	}
	b = ft_usage();
	printf("%u cycles in %ld ms; at cycle %u / %u: fds %ld / %ld, threads %ld / %ld, "
	       "heap %zu / %zu B, address space %ld / %ld KiB, RSS %ld / %ld KiB (allowed +%ld)\n",
	       n, ft_now_ms() - t0, check_at, n, a.fds, b.fds, a.threads, b.threads, a.heap, b.heap,
	       a.vsz_kib, b.vsz_kib, a.rss_kib, b.rss_kib, rss_slack);
	DP_CHECK(b.fds == a.fds, "descriptors grew");
	DP_CHECK(b.threads == a.threads, "threads grew");
	if (!memory) {
		printf("(memory not compared: sanitizer build)\n");
		return 0;
	}
	DP_CHECK(b.heap <= a.heap || (long)(b.heap - a.heap) < heap_slack, "heap grew");
	DP_CHECK(b.vsz_kib - a.vsz_kib < vsz_slack, "address space grew");
	DP_CHECK(b.rss_kib - a.rss_kib < rss_slack, "RSS grew");
	return 0;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(c, "kill_sender"))
		return ft_kill(true);
	if (!strcmp(c, "kill_receiver"))
		return ft_kill(false);
	if (!strcmp(c, "peer_server") && argc == 4)
		return ft_peer(true, argv[2], argv[3]);
	if (!strcmp(c, "peer_client") && argc == 4)
		return ft_peer(false, argv[2], argv[3]);
	if (!strcmp(c, "vanish") && argc == 7)
		return ft_vanish(argv[2], argv[3], atoi(argv[4]), atol(argv[5]), atol(argv[6]));
	if (!strcmp(c, "cycles") && (argc == 4 || argc == 5))
		return ft_cycles((unsigned int)atoi(argv[2]), (unsigned int)atoi(argv[3]),
				 argc == 4 || strcmp(argv[4], "no_memory"));
	fprintf(stderr, "usage: fault_test kill_sender|kill_receiver|cycles N CHECK_AT|...\n");
	return 2;
}
