// SPDX-License-Identifier: MIT
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "dp_common.h"

static struct rdma_cm_event *dp_event(struct rdma_event_channel *ec, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = NULL;
	struct pollfd pfd = { .fd = ec->fd, .events = POLLIN };

	DP_CHECK(poll(&pfd, 1, 10000) == 1, "no CM event (wanted %s)", rdma_event_str(want));
	DP_CHECK(rdma_get_cm_event(ec, &ev) == 0, "rdma_get_cm_event: %s", strerror(errno));
	DP_CHECK(ev->event == want, "got %s (status %d), wanted %s", rdma_event_str(ev->event),
		 ev->status, rdma_event_str(want));
	return ev;
}

static void dp_side_init(struct dp_side *s, struct rdma_cm_id *id, const struct dp_opts *o)
{
	struct ibv_qp_init_attr qa = { 0 };

	s->id = id;
	if (!s->pd)
		s->pd = ibv_alloc_pd(id->verbs);
	DP_CHECK(s->pd, "ibv_alloc_pd: %s", strerror(errno));
	s->ch = ibv_create_comp_channel(id->verbs);
	DP_CHECK(s->ch, "ibv_create_comp_channel: %s", strerror(errno));
	s->cq = ibv_create_cq(id->verbs, 4096, s, s->ch, 0);
	DP_CHECK(s->cq, "ibv_create_cq: %s", strerror(errno));
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = o->max_send_wr ? o->max_send_wr : 256;
	qa.cap.max_recv_wr = o->max_recv_wr ? o->max_recv_wr : 256;
	qa.cap.max_send_sge = o->max_sge ? o->max_sge : 4;
	qa.cap.max_recv_sge = o->max_sge ? o->max_sge : 4;
	qa.cap.max_inline_data = o->max_inline;
	if (s->srq) {
		qa.srq = s->srq;
		qa.cap.max_recv_wr = 0;
	}
	DP_CHECK(rdma_create_qp(id, s->pd, &qa) == 0, "rdma_create_qp: %s", strerror(errno));
}

void dp_connect(struct dp_pair *p, const struct dp_opts *o)
{
	struct addrinfo *ai;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp = { .responder_resources = 8, .initiator_depth = 8 };
	const char *addr = o && o->addr ? o->addr : "127.0.0.1";
	struct dp_opts none = { 0 };

	if (!o)
		o = &none;
	if (o->rd_atomic)
		cp.responder_resources = cp.initiator_depth = (uint8_t)o->rd_atomic;
	memset(p, 0, sizeof(*p));
	p->ec = rdma_create_event_channel();
	DP_CHECK(p->ec, "rdma_create_event_channel: %s", strerror(errno));
	DP_CHECK(getaddrinfo(addr, "0", NULL, &ai) == 0, "getaddrinfo %s", addr);
	DP_CHECK(rdma_create_id(p->ec, &p->listen, NULL, RDMA_PS_TCP) == 0, "create_id");
	DP_CHECK(rdma_bind_addr(p->listen, ai->ai_addr) == 0, "bind: %s", strerror(errno));
	DP_CHECK(rdma_listen(p->listen, 4) == 0, "listen: %s", strerror(errno));
	/* connect to the port the listener got */
	if (ai->ai_family == AF_INET)
		((struct sockaddr_in *)ai->ai_addr)->sin_port = rdma_get_src_port(p->listen);
	else
		((struct sockaddr_in6 *)ai->ai_addr)->sin6_port = rdma_get_src_port(p->listen);

	DP_CHECK(rdma_create_id(p->ec, &p->cli.id, NULL, RDMA_PS_TCP) == 0, "create_id");
	DP_CHECK(rdma_resolve_addr(p->cli.id, NULL, ai->ai_addr, 2000) == 0, "resolve_addr: %s",
		 strerror(errno));
	rdma_ack_cm_event(dp_event(p->ec, RDMA_CM_EVENT_ADDR_RESOLVED));
	DP_CHECK(rdma_resolve_route(p->cli.id, 2000) == 0, "resolve_route");
	rdma_ack_cm_event(dp_event(p->ec, RDMA_CM_EVENT_ROUTE_RESOLVED));
	dp_side_init(&p->cli, p->cli.id, o);
	DP_CHECK(rdma_connect(p->cli.id, &cp) == 0, "connect: %s", strerror(errno));

	ev = dp_event(p->ec, RDMA_CM_EVENT_CONNECT_REQUEST);
	p->srv.id = ev->id;
	rdma_ack_cm_event(ev);
	if (o->srv_srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 256, .max_sge = 4 } };

		p->srv.pd = ibv_alloc_pd(p->srv.id->verbs);
		DP_CHECK(p->srv.pd, "ibv_alloc_pd");
		p->srv.srq = ibv_create_srq(p->srv.pd, &sa);
		DP_CHECK(p->srv.srq, "ibv_create_srq: %s", strerror(errno));
		dp_side_init(&p->srv, p->srv.id, o);
	} else {
		dp_side_init(&p->srv, p->srv.id, o);
	}
	DP_CHECK(rdma_accept(p->srv.id, &cp) == 0, "accept: %s", strerror(errno));
	/* both ESTABLISHED events arrive on the shared channel in either order */
	for (int i = 0; i < 2; i++) {
		ev = dp_event(p->ec, RDMA_CM_EVENT_ESTABLISHED);
		if (ev->id == p->cli.id) {
			p->est_initiator_depth = ev->param.conn.initiator_depth;
			p->est_responder_resources = ev->param.conn.responder_resources;
		}
		rdma_ack_cm_event(ev);
	}
	freeaddrinfo(ai);
}

void dp_disconnect_wait(struct dp_pair *p)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = { .fd = p->ec->fd, .events = POLLIN };
	int seen = 0;

	rdma_disconnect(p->cli.id);
	while (seen < 2 && poll(&pfd, 1, 5000) == 1 && rdma_get_cm_event(p->ec, &ev) == 0) {
		seen += ev->event == RDMA_CM_EVENT_DISCONNECTED;
		rdma_ack_cm_event(ev);
		if (seen == 1)
			rdma_disconnect(p->srv.id); /* answer, as applications do */
	}
	DP_CHECK(seen == 2, "expected two DISCONNECTED events, got %d", seen);
}

void dp_teardown(struct dp_pair *p)
{
	for (struct dp_side *s = &p->cli; s; s = s == &p->cli ? &p->srv : NULL) {
		struct ibv_wc wc;

		rdma_destroy_qp(s->id);
		while (ibv_poll_cq(s->cq, 1, &wc) > 0)
			;
		DP_CHECK(ibv_destroy_cq(s->cq) == 0, "destroy_cq");
		DP_CHECK(ibv_destroy_comp_channel(s->ch) == 0, "destroy channel");
		if (s->srq)
			ibv_destroy_srq(s->srq);
		rdma_destroy_id(s->id);
	}
	rdma_destroy_id(p->listen);
	rdma_destroy_event_channel(p->ec);
}

void dp_disconnect(struct dp_pair *p)
{
	dp_disconnect_wait(p);
	dp_teardown(p);
}

struct ibv_wc dp_wait_wc(struct ibv_cq *cq, int timeout_ms)
{
	struct ibv_wc wc;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		DP_CHECK(n >= 0, "ibv_poll_cq failed");
		if (n == 1)
			return wc;
		clock_gettime(CLOCK_MONOTONIC, &t);
		DP_CHECK((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 <
				 timeout_ms,
			 "no completion within %d ms", timeout_ms);
	}
}

bool dp_no_wc(struct ibv_cq *cq, int ms)
{
	struct timespec d = { 0, 1000000 };

	for (int i = 0; i < ms; i++) {
		struct ibv_wc wc;

		if (ibv_poll_cq(cq, 1, &wc) == 1)
			return false;
		nanosleep(&d, NULL);
	}
	return true;
}

struct ibv_mr *dp_reg(struct ibv_pd *pd, void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);

	DP_CHECK(mr, "ibv_reg_mr(%zu): %s", len, strerror(errno));
	return mr;
}

void dp_post_recv(struct dp_side *s, uint64_t wr_id, struct ibv_mr *mr, void *buf, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (s->srq)
		DP_CHECK(ibv_post_srq_recv(s->srq, &wr, &bad) == 0, "post_srq_recv");
	else
		DP_CHECK(ibv_post_recv(s->id->qp, &wr, &bad) == 0, "post_recv");
}

int dp_post_send(struct dp_side *s, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_mr *mr,
		 void *buf, uint32_t len, uint64_t raddr, uint32_t rkey, unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr ? mr->lkey : 0 };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = flags,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(s->id->qp, &wr, &bad);
}

void dp_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *b = buf;
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

bool dp_check(const void *buf, size_t len, uint32_t seed)
{
	const uint8_t *b = buf;
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		if (b[i] != (uint8_t)(x >> 16)) {
			fprintf(stderr, "byte %zu of %zu differs\n", i, len);
			return false;
		}
	}
	return true;
}
