// SPDX-License-Identifier: MIT
/* The server: one rdma_cm listener serving one connection at a time (the TCP baseline
 * server runs beside it, tcp.c). */
#include "srbench.h"

volatile sig_atomic_t g_quit;

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

int run_server(void)
{
	struct rdma_event_channel *ec = make_event_channel();
	struct rdma_cm_id *listen_id;
	struct addrinfo *ai = resolve(opt.addr, opt.port, true);

	CHECK(rdma_create_id(ec, &listen_id, NULL, RDMA_PS_TCP));
	CHECK(rdma_bind_addr(listen_id, ai->ai_addr));
	CHECK(rdma_listen(listen_id, 8));
	freeaddrinfo(ai);
	tcp_server_start(opt.addr, opt.port + 1);
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
	tcp_server_stop();
	return 0;
}
