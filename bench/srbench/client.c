// SPDX-License-Identifier: MIT
/* The client: the verbs measurements, the latency loop and the report. */
#include "srbench.h"

struct cli {
	struct rdma_event_channel *ec;
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

struct addrinfo *g_dst;
uint64_t g_msgs;
double g_secs;

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
	CHECK(rdma_resolve_addr(id, NULL, g_dst->ai_addr, 2000));
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

uint64_t lat_loop(double *samples, uint8_t *ping, size_t size, lat_round_trip round_trip,
		  void *ctx)
{
	uint64_t n = 0, seq = 0;
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
		double t_echo = round_trip(ctx, ping, size, seq, t0);

		if (seq >= WARMUP)
			samples[n++] = t_echo - t0;
		seq++;
	}
	return n;
}

struct lat_result lat_report(const char *impl, size_t size, double *s, uint64_t n)
{
	struct lat_result r = { -1, -1, n };

	fprintf(stderr, "  %-4s lat %8zu B: %llu round trips\n", impl, size, (unsigned long long)n);
	if (!n)
		return r;
	qsort(s, n, sizeof(*s), cmp_double);
	r.median = s[n / 2] * 1e6;
	size_t k = (size_t)ceil(0.99 * (double)n);

	r.p99 = s[k ? k - 1 : 0] * 1e6;
	return r;
}

/* One verbs round trip: the ping's SEND and its completion, the pong in a data slot. */
static double rdma_round_trip(void *ctx, uint8_t *ping, size_t size, uint64_t seq, double t0)
{
	struct ibv_wc wc[16];
	bool sent = false, got = false;
	double t_echo = 0;

	(void)ctx;
	post_send(&cl.c, WRID(WK_SCTRL, 0), IBV_WR_SEND, ping, (uint32_t)size, cl.c.data_mr->lkey,
		  true, 0, 0);
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
				die("ping-pong: pong (sequence %llu) differs from ping %llu",
				    (unsigned long long)be64toh(echo), (unsigned long long)seq);
			}
			post_recv(&cl.c, wc[i].wr_id, pong, (uint32_t)size, cl.c.data_mr->lkey);
			got = true;
			t_echo = now_s();
		}
	}
	return t_echo;
}

static struct lat_result cli_rdma_lat(double *samples)
{
	size_t size = opt.lat_size;

	cli_connect(OP_LAT, size, 1, size * (1 + LAT_RECVS));
	uint64_t n = lat_loop(samples, cl.c.data, size, rdma_round_trip, NULL);

	cli_disconnect();
	return lat_report("rdma", size, samples, n);
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

int run_client(void)
{
	struct bw_row rows[3 * 32];
	unsigned int nrows = 0;
	double t_all = now_s();

	g_dst = resolve(opt.addr, opt.port, false);
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
	freeaddrinfo(g_dst);
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
