// SPDX-License-Identifier: MIT
/*
 * Network changes under live rdma_cm ids (src/cm/netwatch.c), driven by cm_events.sh.
 *   cm_events serve <addr> <port>      accept every connection until killed
 *   cm_events watch <dst> <port> <EV>  connect (QP-less), print CONNECTED, then wait for
 *                                      event EV (ADDR_CHANGE or DEVICE_REMOVAL); exit 0 when
 *                                      it comes. With ADDR_CHANGE the connection must still be
 *                                      up when it does (no DISCONNECTED first).
 * A last argument "qp" makes serve and watch connect real QPs (library-made CQs, one posted
 * receive each); watch then also checks that DEVICE_REMOVAL flushes that receive.
 *   cm_events expect <src|-> <dst> <port> <EV>  resolve (from src), connect: the first
 *                                      event must be EV (CONNECT_RESPONSE, REJECTED, ...)
 */
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "../../common/cm_test.h"

static bool use_qp; /* "qp" as the last argument: both sides connect real QPs */

/* A QP with library-made CQs and one posted receive (lock: none). */
static int make_qp(struct rdma_cm_id *id)
{
	static char buf[64];
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_RC,
				      .cap = { .max_send_wr = 4, .max_recv_wr = 4,
					       .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = sizeof(buf) };
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_mr *mr;

	CT_CHECK(rdma_create_qp(id, NULL, &a) == 0);
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CT_CHECK(mr);
	sge.lkey = mr->lkey;
	CT_CHECK(ibv_post_recv(id->qp, &wr, &bad) == 0);
	return 0;
}

static int serve(const char *ip, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *l;

	CT_CHECK(ch && rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0);
	CT_CHECK(ct_addr(ip, port, &ss) == 0);
	CT_CHECK(rdma_bind_addr(l, (struct sockaddr *)&ss) == 0 && rdma_listen(l, 0) == 0);
	printf("LISTENING\n");
	fflush(stdout);
	while (rdma_get_cm_event(ch, &ev) == 0) {
		struct rdma_cm_id *id = ev->id;
		enum rdma_cm_event_type type = ev->event;

		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			if (use_qp && make_qp(id))
				return 1;
			rdma_accept(id, &(struct rdma_conn_param){ .responder_resources = 1,
								   .initiator_depth = 1 });
		}
		else if (type == RDMA_CM_EVENT_DISCONNECTED)
			rdma_disconnect(id);
	}
	return 0;
}

static int watch(const char *ip, int port, const char *want)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	enum rdma_cm_event_type w;
	struct sockaddr_storage ss;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;

	if (strcmp(want, "ADDR_CHANGE") == 0)
		w = RDMA_CM_EVENT_ADDR_CHANGE;
	else if (strcmp(want, "DEVICE_REMOVAL") == 0)
		w = RDMA_CM_EVENT_DEVICE_REMOVAL;
	else
		CT_FAIL("unknown event %s", want);
	CT_CHECK(ch && ct_addr(ip, port, &ss) == 0);
	if (ct_resolve_both(ch, &c, NULL, (struct sockaddr *)&ss, 5000, 10000))
		return 1;
	if (use_qp) {
		if (make_qp(c))
			return 1;
		CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ .responder_resources = 1,
								    .initiator_depth = 1 }) == 0);
		ev = ct_expect(ch, RDMA_CM_EVENT_ESTABLISHED, 10000);
		CT_CHECK(ev);
		rdma_ack_cm_event(ev);
	} else {
		CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == 0);
		ev = ct_expect(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, 10000);
		CT_CHECK(ev);
		rdma_ack_cm_event(ev);
		CT_CHECK(rdma_establish(c) == 0);
	}
	printf("CONNECTED\n");
	fflush(stdout);
	for (;;) {
		ev = ct_get(ch, 30000);
		CT_CHECK(ev != NULL);
		printf("event %s status %d\n", rdma_event_str(ev->event), ev->status);
		fflush(stdout);
		if (ev->event == w) {
			CT_CHECK(ev->id == c && ev->status == 0);
			rdma_ack_cm_event(ev);
			break;
		}
		if (w == RDMA_CM_EVENT_ADDR_CHANGE)
			CT_FAIL("%s before ADDR_CHANGE", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	}
	if (w == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		if (use_qp) {
			/* the QP went to error: its posted receive comes back flushed */
			struct ibv_wc wc;
			int n = 0, i;

			for (i = 0; i < 2000 && n == 0; i++) {
				n = ibv_poll_cq(c->recv_cq, 1, &wc);
				if (!n)
					usleep(5000);
			}
			CT_CHECK(n == 1 && wc.wr_id == 7 && wc.status == IBV_WC_WR_FLUSH_ERR);
			printf("receive flushed\n");
			rdma_destroy_qp(c);
		}
		/* the application can tear everything down cleanly */
		CT_CHECK(rdma_destroy_id(c) == 0);
		rdma_destroy_event_channel(ch);
	}
	printf("PASS %s\n", want);
	return 0;
}

/* Resolve (from src when given), route, connect: the outcome must be the event named.
 * Prints the device the id resolved to. */
static int expect(const char *src, const char *ip, int port, const char *want)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage ss, sa;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;

	CT_CHECK(ch && ct_addr(ip, port, &ss) == 0);
	if (strcmp(src, "-"))
		CT_CHECK(ct_addr(src, 0, &sa) == 0);
	if (ct_resolve_both(ch, &c, strcmp(src, "-") ? (struct sockaddr *)&sa : NULL,
			    (struct sockaddr *)&ss, 5000, 10000))
		return 1;
	printf("device %s\n", ibv_get_device_name(c->verbs->device));
	CT_CHECK(rdma_connect(c, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_get(ch, 60000);
	CT_CHECK(ev);
	printf("event %s status %d\n", rdma_event_str(ev->event), ev->status);
	if (strcmp(rdma_event_str(ev->event) + strlen("RDMA_CM_EVENT_"), want))
		CT_FAIL("wanted %s", want);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(c);
	rdma_destroy_event_channel(ch);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[argc - 1], "qp") == 0) {
		use_qp = true;
		argc--;
	}
	if (argc == 6 && strcmp(argv[1], "expect") == 0)
		return expect(argv[2], argv[3], atoi(argv[4]), argv[5]);
	if (argc == 4 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], atoi(argv[3]));
	if (argc == 5 && strcmp(argv[1], "watch") == 0)
		return watch(argv[2], atoi(argv[3]), argv[4]);
	fprintf(stderr, "usage: %s serve ADDR PORT | watch DST PORT EVENT | expect SRC DST PORT EVENT\n",
		argv[0]);
	return 2;
}
