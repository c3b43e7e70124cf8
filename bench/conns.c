// SPDX-License-Identifier: MIT
/*
 * conns: many established RC connections through rdma_cm, and what each one costs.
 *
 *   conns [-n connections] [-a addr] [-p first_port] [-l listeners] [-w in_flight]
 *         [-d depth] [-C] [-F]
 *
 * The program forks a server process that listens on `listeners` consecutive ports of addr
 * (default 4 ports from 18700 on 127.0.0.1); this process is the client. Both raise their
 * own RLIMIT_NOFILE (soft and, when allowed, hard) to what the run needs. The client opens
 * connection 0 first (so both libraries have started their engines, contexts and tables),
 * both sides take a baseline, then the client opens connections 1..n-1 asynchronously with
 * up to `in_flight` of them between rdma_create_id and ESTABLISHED, spread round robin over
 * the listener ports. Every connection has its own QP (send and receive depth `depth`,
 * default 16, one SGE); each side has one PD, one MR and one CQ shared by all connections
 * (with -C: one CQ per connection, 2 x depth entries, all on one completion channel). On
 * every connection the client SENDs 8 bytes (its connection number) once ESTABLISHED, and
 * the server SENDs 8 bytes (the number the client put in its connect private data, tagged)
 * once ESTABLISHED; each side checks what it received. Receives are posted before
 * connect/accept, since an iWARP SEND must find one.
 *
 * When all connections have exchanged their SENDs, each side measures again, with every
 * connection established and idle: resident memory (Rss and Pss of /proc/self/smaps_rollup),
 * malloc'd bytes in use (mallinfo2: arena + mmapped), open file descriptors (/proc/self/fd)
 * and threads. Per connection = (after - baseline) / (n - 1). The application's own
 * per-connection arrays are allocated and touched before the baseline, so what is measured
 * is the libraries' cost (and the CQ rings: the shared one is sized 2n + 64). Then the
 * client disconnects every connection, each side destroys its QPs and ids, and both report.
 *
 * Output: one "key value" line per figure on stdout (setup time, connections per second,
 * per-connection bytes and fds for client and server, threads added, teardown time). Exit
 * status 0 when every connection exchanged both SENDs with the right contents and was torn
 * down; with -F also only when each side holds exactly one more fd per connection and no
 * more threads than at the baseline.
 *
 * Uses only the public <rdma/rdma_cma.h> and <infiniband/verbs.h>: it runs on rdma-core
 * too, with a kernel RDMA device on the address.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define SERVER_TAG 0x5352000000000000ull /* marks the server's SEND */

static struct {
	int n;
	const char *addr;
	int port;
	int listeners;
	int in_flight;
	int depth;
	bool cq_per_conn;
	bool strict_fds;
} opt = { .n = 1000, .addr = "127.0.0.1", .port = 18700, .listeners = 4, .in_flight = 256,
	  .depth = 16 };

static const char *g_role = "conns";

#include "bench_util.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ measurement -- */

struct usage {
	long rss_kb, pss_kb;
	size_t heap;
	int fds;
	long threads;
};

/* A "Name: value" field of a /proc/self file. */
static long proc_field(const char *file, const char *name)
{
	FILE *f = fopen(file, "r");
	char line[256];
	size_t len = strlen(name);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, len) == 0 && line[len] == ':')
			v = strtol(line + len + 1, NULL, 10);
	fclose(f);
	return v;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		die("opendir /proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static struct usage measure(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (struct usage){
		.rss_kb = proc_field("/proc/self/smaps_rollup", "Rss"),
		.pss_kb = proc_field("/proc/self/smaps_rollup", "Pss"),
		.heap = mi.uordblks + mi.hblkhd,
		.fds = count_fds(),
		.threads = proc_field("/proc/self/status", "Threads"),
	};
}

/* One report line set for a side: per connection over `conns` connections. */
static void report(FILE *out, const char *side, struct usage a, struct usage b, int conns)
{
	fprintf(out, "%s_rss_per_conn_bytes %.0f\n", side, (double)(b.rss_kb - a.rss_kb) * 1024 / conns);
	fprintf(out, "%s_pss_per_conn_bytes %.0f\n", side, (double)(b.pss_kb - a.pss_kb) * 1024 / conns);
	fprintf(out, "%s_heap_per_conn_bytes %.0f\n", side, ((double)b.heap - (double)a.heap) / conns);
	fprintf(out, "%s_fds_per_conn %.3f\n", side, (double)(b.fds - a.fds) / conns);
	fprintf(out, "%s_fds_added %d\n", side, b.fds - a.fds);
	fprintf(out, "%s_threads_added %ld\n", side, b.threads - a.threads);
}

/* Room for n connections plus the libraries' own descriptors. */
static void raise_nofile(int n)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)n + 256;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		die("getrlimit: %s", strerror(errno));
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
		struct rlimit up = { want, want };

		/* only with CAP_SYS_RESOURCE, up to fs.nr_open; else the soft limit below decides */
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			rl = up;
	}
	if (rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			die("setrlimit: %s", strerror(errno));
	}
	if (rl.rlim_cur < want)
		die("RLIMIT_NOFILE %llu is below the %llu this run needs (run as root to raise it)",
		    (unsigned long long)rl.rlim_cur, (unsigned long long)want);
}

/* --------------------------------------------------------------- verbs objects -- */

/* Per connection: the 8-byte message each way, the id. Allocated before the baseline. */
struct conn {
	uint64_t sbuf, rbuf;
	struct rdma_cm_id *id;
	struct ibv_cq *cq; /* -C: the connection's own */
	uint64_t peer_no;  /* server: the client's connection number */
	uint8_t got_recv, got_send, established, disconnected;
};

struct side {
	struct rdma_event_channel *ch;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_comp_channel *cch;
	struct conn *c;
	int nconn;
	int done;          /* connections with both completions */
	int disconnected;
	/* the role's CM event handler, and what a connection's received message must hold */
	void (*event)(struct side *s, struct rdma_cm_event *ev);
	uint64_t (*expect)(struct side *s, struct conn *c);
};

static struct ibv_cq *new_cq(struct side *s, int cqe)
{
	struct ibv_cq *cq = ibv_create_cq(s->verbs, cqe, NULL, s->cch, 0);

	if (!cq)
		die("ibv_create_cq: %s", strerror(errno));
	if (ibv_req_notify_cq(cq, 0))
		die("ibv_req_notify_cq failed");
	return cq;
}

static void side_objects(struct side *s, struct ibv_context *verbs)
{
	int cqe = 2 * opt.n + 64;
	struct ibv_device_attr da;

	if (s->verbs)
		return;
	s->verbs = verbs;
	if (ibv_query_device(verbs, &da))
		die("ibv_query_device failed");
	if (da.max_qp < opt.n)
		die("the device allows %d QPs, fewer than %d connections", da.max_qp, opt.n);
	if (cqe > da.max_cqe)
		cqe = da.max_cqe;
	s->pd = ibv_alloc_pd(verbs);
	s->cch = ibv_create_comp_channel(verbs);
	s->mr = s->pd ? ibv_reg_mr(s->pd, s->c, sizeof(*s->c) * (size_t)opt.n,
				   IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!s->pd || !s->cch || !s->mr)
		die("PD/channel/MR: %s", strerror(errno));
	if (!opt.cq_per_conn)
		s->cq = new_cq(s, cqe);
}

static void qp_for(struct side *s, struct rdma_cm_id *id, struct conn *c)
{
	side_objects(s, id->verbs);
	if (opt.cq_per_conn)
		c->cq = new_cq(s, 2 * opt.depth);

	struct ibv_cq *cq = opt.cq_per_conn ? c->cq : s->cq;
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = (uint32_t)opt.depth, .max_recv_wr = (uint32_t)opt.depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)&c->rbuf, sizeof(c->rbuf), s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uintptr_t)c, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (rdma_create_qp(id, s->pd, &a))
		die("rdma_create_qp (connection %td): %s", c - s->c, strerror(errno));
	if (ibv_post_recv(id->qp, &wr, &bad))
		die("ibv_post_recv failed");
}

static void send_msg(struct side *s, struct conn *c, uint64_t v)
{
	struct ibv_sge sge = { (uintptr_t)&c->sbuf, sizeof(c->sbuf), s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = (uintptr_t)c | 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;

	c->sbuf = v;
	if (ibv_post_send(c->id->qp, &wr, &bad))
		die("ibv_post_send failed");
}

/* Drain the CQ, checking every received message. */
static void poll_cq(struct side *s, struct ibv_cq *cq)
{
	struct ibv_wc wc[64];
	int n;

	while ((n = ibv_poll_cq(cq, 64, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct conn *c = (struct conn *)(uintptr_t)(wc[i].wr_id & ~(uint64_t)1);

			if (wc[i].status != IBV_WC_SUCCESS)
				die("completion of connection %td: %s", c - s->c,
				    ibv_wc_status_str(wc[i].status));
			if (wc[i].wr_id & 1) {
				c->got_send = 1;
			} else {
				if (wc[i].byte_len != 8 || c->rbuf != s->expect(s, c))
					die("connection %td received %#" PRIx64 ", expected %#" PRIx64,
					    c - s->c, c->rbuf, s->expect(s, c));
				c->got_recv = 1;
			}
			if (c->got_send && c->got_recv)
				s->done++;
		}
	}
	if (n < 0)
		die("ibv_poll_cq failed");
}

/* Handle every queued CM event (acked after its handler: accept uses its private data). */
static void cm_events(struct side *s)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(s->ch, &ev) == 0) {
		s->event(s, ev);
		rdma_ack_cm_event(ev);
	}
	if (errno != EAGAIN)
		die("rdma_get_cm_event: %s", strerror(errno));
}

/* Wait until the CM channel or the CQ has something (the CQ re-armed, then drained). */
static void wait_any(struct side *s)
{
	struct pollfd p[2] = { { .fd = s->ch->fd, .events = POLLIN } };
	int np = 1;

	cm_events(s);
	if (s->cch) {
		p[1] = (struct pollfd){ .fd = s->cch->fd, .events = POLLIN };
		np = 2;
	}
	if (poll(p, (nfds_t)np, 1000) < 0 && errno != EINTR)
		die("poll: %s", strerror(errno));
	if (np == 2 && (p[1].revents & POLLIN)) {
		struct ibv_cq *cq;
		void *ctx;

		if (ibv_get_cq_event(s->cch, &cq, &ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			if (ibv_req_notify_cq(cq, 0))
				die("ibv_req_notify_cq failed");
			if (cq != s->cq)
				poll_cq(s, cq);
		}
	}
	if (s->cq)
		poll_cq(s, s->cq); /* also after a timeout: a lost wake-up would not hang us */
	cm_events(s);
}

/* Events every connection of both roles sees once established. True if ev was one. */
static bool conn_event(struct side *s, struct conn *c, struct rdma_cm_event *ev, uint64_t msg)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		c->established = 1;
		send_msg(s, c, msg);
		return true;
	case RDMA_CM_EVENT_DISCONNECTED:
		c->disconnected = 1;
		s->disconnected++;
		return true;
	default:
		return false;
	}
}

static void nonblock(int fd)
{
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		die("fcntl: %s", strerror(errno));
}

/* The role's connection array (touched now, so the baseline includes it) and channel. */
static void side_init(struct side *s)
{
	s->c = calloc((size_t)opt.n, sizeof(struct conn));
	if (!s->c)
		die("out of memory");
	memset(s->c, 0, sizeof(struct conn) * (size_t)opt.n);
	s->ch = rdma_create_event_channel();
	if (!s->ch)
		die("rdma_create_event_channel: %s", strerror(errno));
	nonblock(s->ch->fd);
}

static void destroy_conns(struct side *s)
{
	for (int i = 0; i < opt.n; i++) {
		rdma_destroy_qp(s->c[i].id);
		if (rdma_destroy_id(s->c[i].id))
			die("rdma_destroy_id: %s", strerror(errno));
		if (s->c[i].cq && ibv_destroy_cq(s->c[i].cq))
			die("ibv_destroy_cq: %s", strerror(errno));
	}
}

static void side_free(struct side *s)
{
	if (ibv_dereg_mr(s->mr) || (s->cq && ibv_destroy_cq(s->cq)) ||
	    ibv_destroy_comp_channel(s->cch) || ibv_dealloc_pd(s->pd))
		die("freeing the shared objects failed");
	rdma_destroy_event_channel(s->ch);
	free(s->c);
}

/* -------------------------------------------------------------------- server -- */

static uint64_t server_expect(struct side *s, struct conn *c)
{
	(void)s;
	return c->peer_no;
}

static void server_event(struct side *s, struct rdma_cm_event *ev)
{
	struct conn *c = ev->id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST: {
		struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1 };
		uint64_t no;

		if (s->nconn >= opt.n || ev->param.conn.private_data_len < sizeof(no))
			die("unexpected connect request");
		memcpy(&no, ev->param.conn.private_data, sizeof(no));
		c = &s->c[s->nconn++];
		c->id = ev->id;
		c->peer_no = no;
		ev->id->context = c;
		qp_for(s, ev->id, c);
		if (rdma_accept(ev->id, &p))
			die("rdma_accept: %s", strerror(errno));
		break;
	}
	default:
		if (!conn_event(s, c, ev, c->peer_no | SERVER_TAG))
			die("unexpected event %s (%d)", rdma_event_str(ev->event), ev->status);
	}
}

/* Wait for one byte from the client's pipe (the client's go-ahead). */
static void wait_byte(int fd)
{
	char b;

	if (read(fd, &b, 1) != 1)
		die("the other process went away");
}

static int server_main(int to_client, int from_client)
{
	struct rdma_cm_id **lids = calloc((size_t)opt.listeners, sizeof(*lids));
	struct side s = { .event = server_event, .expect = server_expect };
	struct usage base, idle;
	FILE *out = fdopen(to_client, "w");

	g_role = "conns server";
	if (!lids || !out)
		die("out of memory");
	side_init(&s);
	for (int i = 0; i < opt.listeners; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET,
					   .sin_port = htons((uint16_t)(opt.port + i)) };

		inet_pton(AF_INET, opt.addr, &sin.sin_addr);
		if (rdma_create_id(s.ch, &lids[i], NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(lids[i], (struct sockaddr *)&sin) || rdma_listen(lids[i], 1024))
			die("listen on port %d: %s", opt.port + i, strerror(errno));
	}
	fprintf(out, "ready\n");
	fflush(out);

	/* connection 0 warms everything up; then the baseline */
	while (s.done < 1)
		wait_any(&s);
	base = measure();
	fprintf(out, "base\n");
	fflush(out);
	while (s.done < opt.n)
		wait_any(&s);
	idle = measure();
	report(out, "server", base, idle, opt.n - 1);
	fprintf(out, "idle\n");
	fflush(out);

	/* the client disconnects everything */
	while (s.disconnected < opt.n)
		wait_any(&s);
	destroy_conns(&s);
	for (int i = 0; i < opt.listeners; i++)
		rdma_destroy_id(lids[i]);
	side_free(&s);
	fprintf(out, "server_torn_down %d\nend\n", opt.n);
	fclose(out);
	wait_byte(from_client); /* the client has read everything */
	free(lids);
	return 0;
}

/* -------------------------------------------------------------------- client -- */

static uint64_t client_expect(struct side *s, struct conn *c)
{
	return (uint64_t)(c - s->c) | SERVER_TAG;
}

static int client_started, client_established;

static void client_start(struct side *s)
{
	struct conn *c = &s->c[client_started];
	struct sockaddr_in dst = { .sin_family = AF_INET };

	dst.sin_port = htons((uint16_t)(opt.port + client_started % opt.listeners));
	inet_pton(AF_INET, opt.addr, &dst.sin_addr);
	if (rdma_create_id(s->ch, &c->id, c, RDMA_PS_TCP))
		die("rdma_create_id (connection %d): %s", client_started, strerror(errno));
	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&dst, 2000))
		die("rdma_resolve_addr (connection %d): %s", client_started, strerror(errno));
	client_started++;
}

static void client_event(struct side *s, struct rdma_cm_event *ev)
{
	struct conn *c = ev->id->context;
	uint64_t no = (uint64_t)(c - s->c);

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ev->id, 2000))
			die("rdma_resolve_route: %s", strerror(errno));
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		struct rdma_conn_param p = { .private_data = &no, .private_data_len = sizeof(no),
					     .responder_resources = 1, .initiator_depth = 1 };

		qp_for(s, ev->id, c);
		if (rdma_connect(ev->id, &p))
			die("rdma_connect (connection %" PRIu64 "): %s", no, strerror(errno));
		break;
	}
	default:
		if (!conn_event(s, c, ev, no))
			die("connection %" PRIu64 ": unexpected event %s (status %d)", no,
			    rdma_event_str(ev->event), ev->status);
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED)
			client_established++;
	}
}

/* Read the server's lines up to `until`, copying figures to stdout. */
static void server_lines(FILE *in, const char *until)
{
	char line[256];

	while (fgets(line, sizeof(line), in)) {
		line[strcspn(line, "\n")] = 0;
		if (strcmp(line, until) == 0)
			return;
		printf("%s\n", line);
		if (opt.strict_fds && strncmp(line, "server_fds_added ", 17) == 0 &&
		    atoi(line + 17) != opt.n - 1)
			die("the server holds %d more fds for %d more connections", atoi(line + 17),
			    opt.n - 1);
		if (opt.strict_fds && strncmp(line, "server_threads_added ", 21) == 0 &&
		    atoi(line + 21) != 0)
			die("the server runs %d more threads", atoi(line + 21));
	}
	die("the server went away before \"%s\"", until);
}

static int client_main(FILE *from_server, int to_server)
{
	struct side s = { .event = client_event, .expect = client_expect };
	struct usage base, idle;
	double t0, t1, t2;

	side_init(&s);
	server_lines(from_server, "ready");

	client_start(&s);
	while (s.done < 1)
		wait_any(&s);
	server_lines(from_server, "base");
	base = measure();

	t0 = now_s();
	while (s.done < opt.n) {
		while (client_started < opt.n && client_started - client_established < opt.in_flight)
			client_start(&s);
		wait_any(&s);
	}
	t1 = now_s();
	idle = measure();
	printf("connections %d\n", opt.n);
	printf("listeners %d\n", opt.listeners);
	printf("in_flight %d\n", opt.in_flight);
	printf("cq_per_conn %d\n", opt.cq_per_conn);
	printf("setup_seconds %.3f\n", t1 - t0);
	printf("connections_per_second %.0f\n", (opt.n - 1) / (t1 - t0));
	report(stdout, "client", base, idle, opt.n - 1);
	server_lines(from_server, "idle");
	fflush(stdout);
	if (opt.strict_fds && idle.fds - base.fds != opt.n - 1)
		die("the client holds %d more fds for %d more connections", idle.fds - base.fds,
		    opt.n - 1);
	if (opt.strict_fds && idle.threads != base.threads)
		die("the client runs %ld more threads", idle.threads - base.threads);

	t1 = now_s();
	for (int i = 0; i < opt.n; i++)
		if (rdma_disconnect(s.c[i].id))
			die("rdma_disconnect (connection %d): %s", i, strerror(errno));
	while (s.disconnected < opt.n)
		wait_any(&s);
	destroy_conns(&s);
	t2 = now_s();
	printf("teardown_seconds %.3f\n", t2 - t1);
	side_free(&s);
	server_lines(from_server, "end");
	printf("exchanged %d\n", s.done);
	if (write(to_server, "x", 1) != 1)
		die("the server went away");
	return 0;
}

int main(int argc, char **argv)
{
	int down[2], up[2], o, st;
	pid_t pid;
	FILE *from_server;

	while ((o = getopt(argc, argv, "n:a:p:l:w:d:CF")) != -1) {
		switch (o) {
		case 'n': opt.n = atoi(optarg); break;
		case 'a': opt.addr = optarg; break;
		case 'p': opt.port = atoi(optarg); break;
		case 'l': opt.listeners = atoi(optarg); break;
		case 'w': opt.in_flight = atoi(optarg); break;
		case 'd': opt.depth = atoi(optarg); break;
		case 'C': opt.cq_per_conn = true; break;
		case 'F': opt.strict_fds = true; break;
		default:
			fprintf(stderr, "usage: conns [-n connections] [-a addr] [-p first_port] "
					"[-l listeners] [-w in_flight] [-d depth] [-C] [-F]\n");
			return 2;
		}
	}
	if (opt.n < 2 || opt.listeners < 1 || opt.in_flight < 1 || opt.depth < 1 ||
	    opt.port < 1 || opt.port + opt.listeners > 65536)
		die("bad arguments");
	raise_nofile(opt.n);
	/* before any RDMA call: the libraries' threads must not be forked */
	if (pipe(down) || pipe(up))
		die("pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		/* a client that dies must not leave the server waiting for it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		close(down[1]);
		close(up[0]);
		exit(server_main(up[1], down[0]));
	}
	close(down[0]);
	close(up[1]);
	g_role = "conns client";
	from_server = fdopen(up[0], "r");
	if (!from_server)
		die("fdopen: %s", strerror(errno));
	o = client_main(from_server, down[1]);
	fclose(from_server);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("the server failed");
	return o;
}
