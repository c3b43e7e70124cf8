// SPDX-License-Identifier: MIT
/*
 * The CM's handling of an MPA Request and its private data, end to end: a real rdma_listen
 * on 127.0.0.1 (our librdmacm, its engine thread), and per input one TCP connection that
 * sends the input as the would-be MPA Request, then its FIN, and reads until the CM closes
 * the socket. A CONNECT_REQUEST event is rejected at once (rdma_reject), as an application
 * would refuse it.
 *
 * Asserts: a CONNECT_REQUEST only for a frame that parses (header, then private data whole,
 * RFC 6581 block included when enhanced); its private data is the frame's ULP data, cut to
 * the 255 bytes rdma_cm_event can carry; its initiator depth / responder resources are the
 * peer's IRD/ORD (capped at 255) when the peer sent them. An exact, acceptable Request (no
 * markers, an RTR we offer) must produce the event. The CM closes every connection by itself
 * (after a reject or a refusal), within FZ_END_MS, and never crashes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <rdma/rdma_cma.h>

#include "../fuzz_util.h"
#include "iwarp/mpa.h"

#define FZ_END_MS 20000

static struct rdma_event_channel *ch;
static struct rdma_cm_id *lid;
static struct sockaddr_in laddr;

static void init(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	ch = rdma_create_event_channel();
	CHECK(ch);
	CHECK(fcntl(ch->fd, F_SETFL, O_NONBLOCK) == 0);
	CHECK(rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) == 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(rdma_bind_addr(lid, (struct sockaddr *)&a) == 0);
	CHECK(rdma_listen(lid, 16) == 0);
	memcpy(&laddr, rdma_get_local_addr(lid), sizeof(laddr));
}

/* What the CM should make of the input: -1 never an event, 0 maybe, 1 certainly. */
struct expect {
	int event;
	struct sr_mpa_params p;
	const uint8_t *ulp;
	size_t ulp_len;
};

static void expect(const uint8_t *d, size_t n, struct expect *e)
{
	struct sr_mpa_hdr_info hi;
	struct sr_mpa_local loc = { .ird = 1, .ord = 1 };
	struct sr_mpa_params rep;
	struct sr_mpa_conn c;

	memset(e, 0, sizeof(*e));
	e->event = -1;
	if (n < SR_MPA_RR_HDR_LEN || sr_mpa_parse_header(d, false, &hi) < 0 ||
	    n < SR_MPA_RR_HDR_LEN + (size_t)hi.pd_len ||
	    sr_mpa_parse_pd(&hi, d + SR_MPA_RR_HDR_LEN, hi.pd_len, &e->p, &e->ulp,
			    &e->ulp_len) != 0)
		return;
	/* Bytes behind the Request are refused only if the CM sees them in time. */
	e->event = 0;
	if (n == SR_MPA_RR_HDR_LEN + (size_t)hi.pd_len && sr_mpa_respond(&e->p, &loc, &rep, &c) == 0)
		e->event = 1;
}

static void on_event(const struct expect *e, int *events)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(ch, &ev) == 0) {
		struct rdma_cm_id *id = ev->id;
		const struct rdma_conn_param *cp = &ev->param.conn;
		size_t want = e->ulp_len < 255 ? e->ulp_len : 255;

		CHECK(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->listen_id == lid);
		CHECK(e->event >= 0);
		CHECK(cp->private_data_len == want);
		CHECK(!want || memcmp(cp->private_data, e->ulp, want) == 0);
		if (e->p.enhanced) {
			CHECK(cp->initiator_depth == (e->p.ird < 255 ? e->p.ird : 255));
			CHECK(cp->responder_resources == (e->p.ord < 255 ? e->p.ord : 255));
		}
		(*events)++;
		CHECK(rdma_reject(id, NULL, 0) == 0);
		CHECK(rdma_ack_cm_event(ev) == 0);
		CHECK(rdma_destroy_id(id) == 0);
	}
	CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t end = fz_now_ms() + FZ_END_MS;
	size_t sent = 0;
	bool fin = false, eof = false;
	struct expect e;
	int s, events = 0;

	if (!ch)
		init();
	expect(data, size, &e);
	s = fz_connect((struct sockaddr *)&laddr, sizeof(laddr));
	CHECK(fcntl(s, F_SETFL, O_NONBLOCK) == 0);
	while (!eof) {
		struct pollfd p[2] = { { .fd = s, .events = POLLIN | (fin ? 0 : POLLOUT) },
				       { .fd = ch->fd, .events = POLLIN } };
		uint8_t junk[512];
		ssize_t k;

		if (fz_now_ms() > end) {
			fprintf(stderr, "fuzz: the CM kept the connection for %d ms\n", FZ_END_MS);
			abort();
		}
		if (poll(p, 2, 10) <= 0)
			continue;
		if (p[1].revents & POLLIN)
			on_event(&e, &events);
		if (!fin && (p[0].revents & POLLOUT)) {
			k = sent < size ? send(s, data + sent, size - sent, MSG_NOSIGNAL) : 0;
			if (k > 0)
				sent += (size_t)k;
			if (sent == size || (k < 0 && errno != EAGAIN && errno != EINTR)) {
				shutdown(s, SHUT_WR);
				fin = true;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			k = recv(s, junk, sizeof(junk), 0);
			if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
				eof = true;
		}
	}
	close(s);
	/* The event, if any, came before the reject that closed the socket. */
	on_event(&e, &events);
	CHECK(events <= 1);
	CHECK(e.event != 1 || events == 1);
	return 0;
}
