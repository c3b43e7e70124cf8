// SPDX-License-Identifier: MIT
/*
 * The attacker suite's own victim (tests/attack/attack.c drives it), built on our librdmacm
 * and libibverbs like any application.
 *
 *   attack_victim server   listens on 127.0.0.1, port 0; prints "PORT <n>"
 *   attack_victim client <port>   the good client: echoes every Send it receives
 *
 * The server keeps its regions between guard pages (PROT_NONE) with canary bytes next to
 * them inside the same pages, so that a byte written outside a region shows up either as a
 * crash or as a changed canary. Regions without remote write rights also keep a known
 * pattern that must never change. Each attacker connection gets its receives, IRD and an
 * optional action from the first bytes of its MPA private data, and learns the regions'
 * STags from the private data of the accepting Reply.
 *
 * Commands on stdin, one per line, each answered by one line on stdout:
 *   ping    one Send round trip over the good connection: "PONG ok <us>" / "PONG fail <why>"
 *   check   canaries and read-only patterns: "CHECK ok" / "CHECK bad <what>"
 *   dereg   deregisters region W and snapshots it: "DEREG ok"; the next check compares W
 *           with the snapshot, then registers it again (new STag for later connections)
 *   conns   "CONNS <number of live attacker connections>"
 * Unprompted lines: "EST <n>", "DISC <n>", "RECV <n> <status> <len>".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "attack_proto.h"

#define CANARY 0xA5
#define MAX_CONNS 64
#define RECV_SLOT 64
#define SAFETY_MS 15000

struct region {
	const char *name;
	uint8_t *map;	 /* guard page, data pages, guard page */
	size_t map_len;
	uint8_t *buf;	 /* the registered bytes */
	size_t len;
	uint8_t *pattern; /* expected content when remote peers may not write, else NULL */
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	int access;
	uint8_t *snap; /* content when deregistered by "dereg" */
};

struct conn {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	int no;
	bool live;
	bool est;
	bool disc_after_est;
};

static struct ibv_pd *pd_a, *pd_b;
static struct region regs[AV_NREG];
static struct conn conns[MAX_CONNS];
static int conn_seq;
static struct rdma_event_channel *ch;
static struct rdma_cm_id *good_id;
static struct ibv_cq *good_cq;
static struct ibv_mr *good_mr;
static uint8_t good_buf[2 * RECV_SLOT];

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void die(const char *what)
{
	out("FATAL %s: %s", what, strerror(errno));
	exit(1);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * Canaries fill the data pages around the region: CANARY_PRE bytes before it, and the rest
 * of its last page after it. Guard pages on both sides catch anything further out.
 */
#define CANARY_PRE 64

static void region_alloc(struct region *r, const char *name, size_t len, struct ibv_pd *pd,
			 int access, bool read_only)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t data = ((CANARY_PRE + len + 1 + (size_t)pg - 1) / (size_t)pg) * (size_t)pg;

	r->name = name;
	r->len = len;
	r->pd = pd;
	r->access = access;
	r->map_len = data + 2 * (size_t)pg;
	r->map = mmap(NULL, r->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->map == MAP_FAILED)
		die("mmap");
	if (mprotect(r->map + pg, data, PROT_READ | PROT_WRITE))
		die("mprotect");
	memset(r->map + pg, CANARY, data);
	r->buf = r->map + pg + CANARY_PRE;
	for (size_t i = 0; i < len; i++)
		r->buf[i] = (uint8_t)(i * 7 + 3);
	if (read_only) {
		r->pattern = malloc(len);
		if (!r->pattern)
			die("malloc");
		memcpy(r->pattern, r->buf, len);
	}
	r->mr = ibv_reg_mr(pd, r->buf, len, access);
	if (!r->mr)
		die("ibv_reg_mr");
}

/* "check": every canary byte, and every region remote peers may not write. */
static void check(void)
{
	long pg = sysconf(_SC_PAGESIZE);

	for (int i = 0; i < AV_NREG; i++) {
		struct region *r = &regs[i];
		uint8_t *lo = r->map + pg, *hi = r->map + r->map_len - pg;

		if (!r->map)
			continue;

		for (uint8_t *p = lo; p < hi; p = p + 1 == r->buf ? r->buf + r->len : p + 1) {
			if (*p != CANARY) {
				out("CHECK bad canary of %s at %td", r->name, p - r->buf);
				return;
			}
		}
		if (r->pattern && memcmp(r->pattern, r->buf, r->len)) {
			out("CHECK bad %s changed without remote write rights", r->name);
			return;
		}
		if (r->snap) {
			bool same = !memcmp(r->snap, r->buf, r->len);

			free(r->snap);
			r->snap = NULL;
			r->mr = ibv_reg_mr(r->pd, r->buf, r->len, r->access);
			if (!r->mr)
				die("ibv_reg_mr");
			if (!same) {
				out("CHECK bad %s changed after ibv_dereg_mr returned", r->name);
				return;
			}
		}
	}
	out("CHECK ok");
}

static void dereg(void)
{
	struct region *r = &regs[AV_REG_W];

	if (!r->mr || ibv_dereg_mr(r->mr)) {
		out("DEREG fail");
		return;
	}
	r->mr = NULL;
	r->snap = malloc(r->len);
	if (!r->snap)
		die("malloc");
	memcpy(r->snap, r->buf, r->len);
	out("DEREG ok");
}

static struct conn *conn_of(struct rdma_cm_id *id)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].live && conns[i].id == id)
			return &conns[i];
	return NULL;
}

static void conn_free(struct conn *c)
{
	rdma_destroy_qp(c->id);
	rdma_destroy_id(c->id);
	ibv_destroy_cq(c->cq);
	c->live = false;
}

static int post_recv(struct rdma_cm_id *id, struct ibv_mr *mr, uint8_t *buf, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = RECV_SLOT, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(id->qp, &wr, &bad);
}

static void put_region(uint8_t *p, const struct region *r)
{
	uint32_t stag = htonl(r->mr ? r->mr->rkey : 0);
	uint64_t addr = (uintptr_t)r->buf;
	uint32_t len = htonl((uint32_t)r->len);

	memcpy(p, &stag, 4);
	for (int i = 0; i < 8; i++)
		p[4 + i] = (uint8_t)(addr >> (56 - 8 * i));
	memcpy(p + 12, &len, 4);
}

/*
 * PDs and regions, on the device of the first connection: a listener on a loopback address
 * learns its device only from a request (as with the kernel's CM).
 */
static void setup(struct ibv_context *ctx)
{
	pd_a = ibv_alloc_pd(ctx);
	pd_b = ibv_alloc_pd(ctx);
	if (!pd_a || !pd_b)
		die("ibv_alloc_pd");
	region_alloc(&regs[AV_REG_W], "W", 5000, pd_a,
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, false);
	region_alloc(&regs[AV_REG_R], "R", AV_R_LEN, pd_a, IBV_ACCESS_REMOTE_READ, true);
	region_alloc(&regs[AV_REG_N], "N", 3000, pd_a, IBV_ACCESS_LOCAL_WRITE, true);
	region_alloc(&regs[AV_REG_B], "B", 3000, pd_b,
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		     true);
	region_alloc(&regs[AV_REG_RB], "RB", AV_RECV_SLOTS * RECV_SLOT, pd_a,
		     IBV_ACCESS_LOCAL_WRITE, false);
}

/* CONNECT_REQUEST from an attacker (or the good client, which says so). Returns whether it
 * acknowledged @ev itself. */
static bool on_request(struct rdma_cm_event *ev)
{
	const uint8_t *pd = ev->param.conn.private_data;
	uint8_t pdl = ev->param.conn.private_data_len;
	struct rdma_cm_id *id = ev->id;
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1 },
				       .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	uint8_t reply[AV_REPLY_LEN];
	struct conn *c = NULL;

	if (!pd_a)
		setup(id->verbs);

	if (pdl >= 4 && !memcmp(pd, AV_GOOD_MAGIC, 4) && !good_id) {
		good_cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
		qa.send_cq = qa.recv_cq = good_cq;
		if (!good_cq || rdma_create_qp(id, pd_b, &qa))
			die("good qp");
		good_mr = ibv_reg_mr(pd_b, good_buf, sizeof(good_buf), IBV_ACCESS_LOCAL_WRITE);
		if (!good_mr || rdma_accept(id, &cp))
			die("good accept");
		good_id = id;
		return false;
	}
	for (int i = 0; i < MAX_CONNS; i++)
		if (!conns[i].live) {
			c = &conns[i];
			break;
		}
	if (!c || pdl < AV_REQ_LEN || memcmp(pd, AV_REQ_MAGIC, 4)) {
		rdma_reject(id, NULL, 0);
		/* an id is destroyed only after its event is acknowledged */
		rdma_ack_cm_event(ev);
		rdma_destroy_id(id);
		return true;
	}
	memset(c, 0, sizeof(*c));
	c->id = id;
	c->no = ++conn_seq;
	c->cq = ibv_create_cq(id->verbs, 64, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = c->cq;
	if (!c->cq || rdma_create_qp(id, pd_a, &qa))
		die("attacker qp");
	for (int i = 0; i < pd[4] && i < AV_RECV_SLOTS; i++)
		if (post_recv(id, regs[AV_REG_RB].mr, regs[AV_REG_RB].buf + i * RECV_SLOT,
			      (uint64_t)i))
			die("post_recv");
	cp.responder_resources = pd[5] ? pd[5] : 1;
	c->disc_after_est = pd[6] & AV_ACT_DISCONNECT;
	memcpy(reply, AV_REPLY_MAGIC, 4);
	reply[4] = (uint8_t)c->no;
	for (int i = 0; i < AV_NREG; i++)
		put_region(reply + 8 + i * 16, &regs[i]);
	cp.private_data = reply;
	cp.private_data_len = sizeof(reply);
	c->live = true;
	if (rdma_accept(id, &cp)) {
		out("ACCEPTFAIL %d %s", c->no, strerror(errno));
		rdma_ack_cm_event(ev);
		conn_free(c);
		return true;
	}
	return false;
}

static void on_event(struct rdma_cm_event *ev)
{
	struct conn *c = conn_of(ev->id);
	enum rdma_cm_event_type type = ev->event;

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		if (!on_request(ev))
			rdma_ack_cm_event(ev);
		return;
	}
	rdma_ack_cm_event(ev);
	if (!c)
		return; /* the good connection's ESTABLISHED */
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		c->est = true;
		out("EST %d", c->no);
		if (c->disc_after_est)
			rdma_disconnect(c->id);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		out("DISC %d", c->no);
		conn_free(c);
		break;
	default:
		break;
	}
}

static void poll_conns(void)
{
	struct ibv_wc wc[16];

	for (int i = 0; i < MAX_CONNS; i++) {
		int n;

		if (!conns[i].live)
			continue;
		while ((n = ibv_poll_cq(conns[i].cq, 16, wc)) > 0)
			for (int k = 0; k < n; k++)
				if (wc[k].opcode & IBV_WC_RECV)
					out("RECV %d %d %u", conns[i].no, wc[k].status,
					    wc[k].byte_len);
	}
}

static void pump_events(int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) > 0)
		while (rdma_get_cm_event(ch, &ev) == 0)
			on_event(ev);
	poll_conns();
}

/* One Send over the good connection and its echo back, within SAFETY_MS. */
static void ping(void)
{
	struct ibv_sge sge = { .addr = (uintptr_t)good_buf + RECV_SLOT, .length = 16,
			       .lkey = good_mr ? good_mr->lkey : 0 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;
	uint64_t t0 = now_us();
	bool sent = false, got = false;
	struct ibv_wc wc;

	if (!good_id || !good_id->qp) {
		out("PONG fail no good connection");
		return;
	}
	snprintf((char *)good_buf + RECV_SLOT, 16, "ping %llu", (unsigned long long)t0 % 100000);
	memset(good_buf, 0, RECV_SLOT);
	if (post_recv(good_id, good_mr, good_buf, 2) || ibv_post_send(good_id->qp, &wr, &bad)) {
		out("PONG fail post");
		return;
	}
	while (!(sent && got)) {
		int n = ibv_poll_cq(good_cq, 1, &wc);

		if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS)) {
			out("PONG fail completion status %d", n < 0 ? -1 : (int)wc.status);
			return;
		}
		if (n == 1) {
			sent |= wc.wr_id == 1;
			got |= wc.wr_id == 2;
			continue;
		}
		if (now_us() - t0 > SAFETY_MS * 1000u) {
			out("PONG fail no echo within %d ms", SAFETY_MS);
			return;
		}
		pump_events(1);
	}
	if (memcmp(good_buf, good_buf + RECV_SLOT, 16)) {
		out("PONG fail echo differs");
		return;
	}
	out("PONG ok %llu", (unsigned long long)(now_us() - t0));
}

static int server(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	struct rdma_cm_id *l;
	char line[64];
	size_t have = 0;
	int live;

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(l, (struct sockaddr *)&sin) || rdma_listen(l, 64))
		die("listen");
	if (fcntl_nonblock(ch->fd))
		die("fcntl");
	out("PORT %d", ntohs(rdma_get_src_port(l)));
	for (;;) {
		struct pollfd p[2] = { { .fd = ch->fd, .events = POLLIN },
				       { .fd = 0, .events = POLLIN } };
		ssize_t n;

		poll(p, 2, 20);
		if (p[0].revents)
			pump_events(0);
		poll_conns();
		if (!p[1].revents)
			continue;
		n = read(0, line + have, sizeof(line) - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		line[have] = 0;
		while (strchr(line, '\n')) {
			char *nl = strchr(line, '\n');

			*nl = 0;
			if (!strcmp(line, "ping"))
				ping();
			else if (!strcmp(line, "check"))
				check();
			else if (!strcmp(line, "dereg"))
				dereg();
			else if (!strcmp(line, "conns")) {
				live = 0;
				for (int i = 0; i < MAX_CONNS; i++)
					live += conns[i].live;
				out("CONNS %d", live);
			} else
				out("ERR unknown command %s", line);
			have -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, have + 1);
		}
	}
	return 0;
}

static int client(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(0x7f000001) };
	struct ibv_qp_init_attr qa = { .cap = { .max_send_wr = 16, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1,
						.max_inline_data = RECV_SLOT },
				       .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .private_data = AV_GOOD_MAGIC, .private_data_len = 4 };
	static uint8_t buf[RECV_SLOT];
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 5000) ||
	    rdma_get_cm_event(ch, &ev) || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		die("client resolve addr");
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 5000) || rdma_get_cm_event(ch, &ev) ||
	    ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		die("client resolve route");
	rdma_ack_cm_event(ev);
	pd = ibv_alloc_pd(id->verbs);
	cq = pd ? ibv_create_cq(id->verbs, 16, NULL, NULL, 0) : NULL;
	qa.send_cq = qa.recv_cq = cq;
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr || rdma_create_qp(id, pd, &qa) || post_recv(id, mr, buf, 2) ||
	    rdma_connect(id, &cp) || rdma_get_cm_event(ch, &ev) ||
	    ev->event != RDMA_CM_EVENT_ESTABLISHED)
		die("client connect");
	rdma_ack_cm_event(ev);
	if (fcntl_nonblock(ch->fd))
		die("fcntl");
	for (;;) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS)) {
			/* on stderr: the attacker reads the server's stdout only */
			fprintf(stderr, "good client: %s, status %d\n",
				n < 0 ? "poll failed" : wc.wr_id == 1 ? "echo failed" :
								  "receive failed",
				n < 0 ? -1 : (int)wc.status);
			break;
		}
		if (n == 1 && wc.wr_id == 2) {
			struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = wc.byte_len,
					       .lkey = mr->lkey };
			struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_SEND,
						  .send_flags = IBV_SEND_INLINE }, *bad;

			/* inline: the buffer is free for the next receive at once */
			if (ibv_post_send(id->qp, &wr, &bad) || post_recv(id, mr, buf, 2))
				break;
			continue;
		}
		if (n == 0) {
			struct pollfd p = { .fd = ch->fd, .events = POLLIN };

			if (poll(&p, 1, 1) > 0 && rdma_get_cm_event(ch, &ev) == 0) {
				enum rdma_cm_event_type t = ev->event;

				rdma_ack_cm_event(ev);
				if (t == RDMA_CM_EVENT_DISCONNECTED) {
					fprintf(stderr, "good client: DISCONNECTED\n");
					break;
				}
			}
		}
	}
	rdma_disconnect(id);
	rdma_destroy_qp(id);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(id);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "server"))
		return server();
	if (argc >= 3 && !strcmp(argv[1], "client"))
		return client(atoi(argv[2]));
	fprintf(stderr, "usage: %s server | client <port>\n", argv[0]);
	return 2;
}
