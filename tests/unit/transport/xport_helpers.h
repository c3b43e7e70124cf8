/* SPDX-License-Identifier: MIT */
/*
 * Fixtures of the transport tests: QPs on the real loopback device attached to TCP sockets
 * over 127.0.0.1 without the CM, and a "raw peer" that speaks iWARP on a plain socket with the
 * codec of src/iwarp.
 */
#ifndef XPORT_HELPERS_H
#define XPORT_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../common/xport_test.h"
#include "common/sr_common.h"
#include "iwarp/crc32c.h"
#include "iwarp/ddp.h"
#include "iwarp/mpa.h"
#include "iwarp/term.h"
#include "transport/iwarp.h"
#include "transport/sr_xport.h"
#include "verbs/sr_obj.h"
#include "verbs/sr_verbs.h"

#define T_WAIT_MS 30000 /* generous: sanitizer builds are slow */
#define PG 4096
#define ACC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define LONG_LEASE "30000000" /* 30 s: longer than any test waits, so only a poller reads */

static struct ibv_context *g_ctx;

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int grp_setup(void **state)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	(void)state;
	if (!list)
		return -1;
	for (int i = 0; list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), "sriw_lo") == 0)
			g_ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!g_ctx)
		return -1;
	fcntl(g_ctx->async_fd, F_SETFL, O_NONBLOCK);
	return 0;
}

static int grp_teardown(void **state)
{
	(void)state;
	return ibv_close_device(g_ctx);
}

/* Connections attached from here on take this poll lease (µs; "0": no poll mode). */
static inline void lease(const char *us)
{
	setenv("SOFTRDMA_POLL_LEASE_US", us, 1);
}

/* The verbs object behind an MR (its reference count, its state). */
static inline struct sr_mr *mr_of(struct ibv_mr *mr)
{
	return sr_container_of(mr, struct sr_mr, ibmr);
}

/* ------------------------------------------------------------------ sockets -- */

/* A connected TCP pair over 127.0.0.1: *a connected, *b accepted. */
static inline void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(l >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	*a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(*a >= 0);
	assert_int_equal(connect(*a, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*b = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(*b >= 0);
	close(l);
}

static inline bool fd_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

static inline void xsend(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		assert_true(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

/* One byte per send(), with a pause so the receiver sees every split. */
static inline void xsend_bytewise(int fd, const void *buf, size_t len)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (size_t i = 0; i < len; i++) {
		xsend(fd, (const uint8_t *)buf + i, 1);
		usleep(50);
	}
}

static inline int sock_mss(int fd)
{
	int mss = 0;
	socklen_t l = sizeof(mss);

	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l), 0);
	return mss;
}

/* --------------------------------------------------------------- QP ends -- */

struct ep {
	struct ibv_pd *pd;
	bool own_pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct xt_closed_rec cl;
	int fd;
};

#define EP_DEPTH 64
#define EP_SGE 4
#define EP_INLINE 128

static inline int qp_to(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };
	int mask = IBV_QP_STATE;

	if (s == IBV_QPS_INIT) {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_LOCAL_WRITE;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static inline void ep_create(struct ep *e, struct ibv_pd *pd, bool srq)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = EP_DEPTH, .max_recv_wr = EP_DEPTH, .max_send_sge = EP_SGE,
			 .max_recv_sge = EP_SGE, .max_inline_data = EP_INLINE },
	};

	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->cl.mu, NULL);
	e->fd = -1;
	e->own_pd = !pd;
	e->pd = pd ? pd : ibv_alloc_pd(g_ctx);
	assert_non_null(e->pd);
	e->ch = ibv_create_comp_channel(g_ctx);
	assert_non_null(e->ch);
	e->scq = ibv_create_cq(g_ctx, 4 * EP_DEPTH, NULL, e->ch, 0);
	e->rcq = ibv_create_cq(g_ctx, 4 * EP_DEPTH, NULL, e->ch, 0);
	assert_non_null(e->scq);
	assert_non_null(e->rcq);
	if (srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = EP_DEPTH, .max_sge = EP_SGE } };

		e->srq = ibv_create_srq(e->pd, &sa);
		assert_non_null(e->srq);
	}
	ia.send_cq = e->scq;
	ia.recv_cq = e->rcq;
	ia.srq = e->srq;
	e->qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(e->qp);
	sr_qp_llp_claim(e->qp); /* the test stands in for the CM that connects it */
	assert_int_equal(qp_to(e->qp, IBV_QPS_INIT), 0);
	assert_int_equal(qp_to(e->qp, IBV_QPS_RTR), 0);
	assert_int_equal(qp_to(e->qp, IBV_QPS_RTS), 0);
}

static inline struct sr_mpa_conn mpa_conn(bool crc, uint8_t rtr, uint16_t ird, uint16_t ord)
{
	return (struct sr_mpa_conn){ .crc = crc, .p2p = rtr != 0, .rtr = rtr, .ird = ird,
				     .ord = ord };
}

/* ready_ms: the initiator's longest wait after its RTR (0: the transport's default). */
static inline void ep_attach_ready(struct ep *e, int fd, bool initiator, struct sr_mpa_conn m,
				   unsigned int ready_ms)
{
	struct sr_xport_attach p = {
		.kind = SR_XPORT_IWARP,
		.cb = xt_closed_cb(&e->cl),
		.u.iwarp = {
			.fd = fd,
			.initiator = initiator,
			.mpa = m,
			.ready_ms = ready_ms,
		},
	};

	e->fd = fd;
	assert_int_equal(to_sr_ctx(g_ctx)->priv_ops->attach(e->qp, &p), 0);
}

static inline void ep_attach(struct ep *e, int fd, bool initiator, struct sr_mpa_conn m)
{
	ep_attach_ready(e, fd, initiator, m, 0);
}

static inline void ep_destroy(struct ep *e)
{
	if (e->qp)
		assert_int_equal(ibv_destroy_qp(e->qp), 0);
	if (e->srq)
		assert_int_equal(ibv_destroy_srq(e->srq), 0);
	assert_int_equal(ibv_destroy_cq(e->scq), 0);
	assert_int_equal(ibv_destroy_cq(e->rcq), 0);
	assert_int_equal(ibv_destroy_comp_channel(e->ch), 0);
	if (e->own_pd)
		assert_int_equal(ibv_dealloc_pd(e->pd), 0);
	pthread_mutex_destroy(&e->cl.mu);
}

static inline int closed_calls(struct ep *e, int *err)
{
	return xt_closed_calls(&e->cl, err);
}

/* Wait for the closed callback; returns its err. */
static inline int wait_closed(struct ep *e)
{
	uint64_t end = now_ms() + T_WAIT_MS;
	int err = 0;

	while (closed_calls(e, &err) == 0 && now_ms() < end)
		usleep(1000);
	assert_int_equal(closed_calls(e, &err), 1);
	return err;
}

static inline enum ibv_qp_state qp_state(struct ep *e)
{
	return xt_qp_state(e->qp);
}

/* Collect exactly n completions from cq (fails on timeout). */
static inline void wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int n)
{
	uint64_t end = now_ms() + T_WAIT_MS;
	int got = 0;

	while (got < n && now_ms() < end) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		assert_true(r >= 0);
		got += r;
		if (got < n)
			usleep(200);
	}
	assert_int_equal(got, n);
}

static inline void no_wc(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;

	usleep((useconds_t)ms * 1000);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
}

/* Wait for an async event of `type` about qp; others are acked and skipped. */
static inline bool wait_async(struct ibv_qp *qp, enum ibv_event_type type, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	do {
		struct ibv_async_event ev;

		if (!fd_readable(g_ctx->async_fd, 20))
			continue;
		if (ibv_get_async_event(g_ctx, &ev))
			continue;
		bool hit = ev.event_type == type && ev.element.qp == qp;

		ibv_ack_async_event(&ev);
		if (hit)
			return true;
	} while (now_ms() < end);
	return false;
}

static inline void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131u + seed + (i >> 12));
}

static inline void post_recv1(struct ep *e, uint64_t id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = len ? 1 : 0 }, *bad;

	if (e->srq)
		assert_int_equal(ibv_post_srq_recv(e->srq, &wr, &bad), 0);
	else
		assert_int_equal(ibv_post_recv(e->qp, &wr, &bad), 0);
}

static inline void post_send1(struct ep *e, uint64_t id, enum ibv_wr_opcode op, unsigned int flags,
			      void *addr, uint32_t len, uint32_t lkey, uint64_t raddr,
			      uint32_t rkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = id,
		.sg_list = &sg,
		.num_sge = len ? 1 : 0,
		.opcode = op,
		.send_flags = flags | IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;

	assert_int_equal(ibv_post_send(e->qp, &wr, &bad), 0);
}

/* ---------------------------------------------------------------- raw peer -- */

/* FPDU builders: whole FPDUs (header, payload, pad, CRC) into out; return the length. */
static inline size_t fpdu_finish(uint8_t *out, size_t hlen, const void *payload, size_t plen,
				 bool crc_on)
{
	uint32_t crc = 0;

	if (plen)
		memcpy(out + hlen, payload, plen);
	if (crc_on)
		crc = sr_crc32c(0, out, hlen + plen);
	return hlen + plen + sr_fpdu_put_trailer(out + hlen + plen, hlen - 2 + plen, crc, crc_on);
}

static inline size_t fpdu_untagged(uint8_t *out, bool crc, unsigned int op, bool last,
				   uint32_t msn, uint32_t mo, uint32_t inval, const void *pl,
				   size_t plen)
{
	ssize_t h = sr_fpdu_put_untagged(out, SR_FPDU_HDR_UNTAGGED, op, last, msn, mo, inval,
					 plen);

	assert_int_equal(h, SR_FPDU_HDR_UNTAGGED);
	return fpdu_finish(out, (size_t)h, pl, plen, crc);
}

static inline size_t fpdu_tagged(uint8_t *out, bool crc, unsigned int op, bool last,
				 uint32_t stag, uint64_t to, const void *pl, size_t plen)
{
	ssize_t h = sr_fpdu_put_tagged(out, SR_FPDU_HDR_TAGGED, op, last, stag, to, plen);

	assert_int_equal(h, SR_FPDU_HDR_TAGGED);
	return fpdu_finish(out, (size_t)h, pl, plen, crc);
}

static inline size_t fpdu_rreq(uint8_t *out, bool crc, uint32_t msn, uint32_t sink_stag,
			       uint64_t sink_to, uint32_t size, uint32_t src_stag, uint64_t src_to)
{
	struct sr_rdmap_rreq rr = { .sink_stag = sink_stag, .sink_to = sink_to, .size = size,
				    .src_stag = src_stag, .src_to = src_to };
	ssize_t h = sr_fpdu_put_rreq(out, SR_FPDU_HDR_RREQ, msn, &rr);

	assert_int_equal(h, SR_FPDU_HDR_RREQ);
	return fpdu_finish(out, (size_t)h, NULL, 0, crc);
}

/* The receiving half of a raw peer: our own parser over a blocking socket. */
struct raw {
	int fd;
	bool crc;
	struct sr_fpdu_rx rx;
	struct sr_ddp_seg seg;  /* the last segment */
	uint8_t fpdu[70000];    /* its bytes as they came, header to CRC */
	size_t fpdu_len;
	uint32_t mulpdu;        /* fail if a ULPDU is longer (0: no check) */
	uint64_t to_base;       /* tagged payload lands at msg + (TO - to_base) */
	int qfd;                /* the QP's socket, for its current MSS (-1: none) */
	unsigned int nseg;
};

static inline void raw_init(struct raw *r, int fd, bool crc)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->qfd = -1;
	r->crc = crc;
	sr_fpdu_rx_init(&r->rx, crc);
}

/*
 * Next whole segment; payload goes to msg at its message offset (MO, or TO - to_base), if it
 * fits in cap bytes. Returns 0, 1 on a clean EOF, -ETIMEDOUT, -ECONNRESET (EOF or reset
 * mid-FPDU), or a parser error.
 */
static inline int raw_next(struct raw *r, uint8_t *msg, size_t cap, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	uint8_t scratch[65536];

	r->fpdu_len = 0;
	for (;;) {
		struct sr_fpdu_rx_need need;
		uint8_t *dst;
		ssize_t n;
		int ret;

		sr_fpdu_rx_need(&r->rx, &need);
		if (need.stage == SR_FPDU_RX_FAILED)
			return -EPROTO;
		if (need.stage == SR_FPDU_RX_PAYLOAD) {
			uint64_t off = (r->rx.seg.tagged ? r->rx.seg.to - r->to_base :
							   r->rx.seg.mo) + need.seg_off;

			if (need.len > sizeof(scratch))
				need.len = sizeof(scratch);
			if (msg && off <= cap && need.len <= cap - off)
				dst = msg + off;
			else
				dst = scratch; /* discard */
		} else {
			dst = need.buf;
		}
		if (!fd_readable(r->fd, 10)) {
			if (now_ms() > end)
				return -ETIMEDOUT;
			continue;
		}
		n = recv(r->fd, dst, need.len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return r->fpdu_len || r->rx.hdr_have ? -ECONNRESET : -errno;
		if (n == 0)
			return r->fpdu_len ? -ECONNRESET : 1;
		if (r->fpdu_len + (size_t)n <= sizeof(r->fpdu)) {
			memcpy(r->fpdu + r->fpdu_len, dst, (size_t)n);
			r->fpdu_len += (size_t)n;
		}
		ret = sr_fpdu_rx_advance(&r->rx, (size_t)n, dst);
		if (ret < 0)
			return ret;
		if (ret == SR_FPDU_RX_HDR_DONE) {
			r->seg = r->rx.seg;
			if (r->mulpdu) {
				/* Linux updates TCP_MAXSEG as traffic flows: the sender may
				 * have seen a larger one than we did at the start. */
				int mss = 0;
				socklen_t ml = sizeof(mss);
				uint32_t lim = r->mulpdu;

				if (r->qfd >= 0 && getsockopt(r->qfd, IPPROTO_TCP, TCP_MAXSEG,
							      &mss, &ml) == 0 && mss > 0)
					lim = SR_MAX(lim, sr_mpa_mulpdu((uint32_t)mss));
				assert_true(r->seg.ulpdu_len <= lim);
			}
		}
		if (ret == SR_FPDU_RX_SEG_DONE) {
			r->nseg++;
			if (!r->crc) {
				/* CRC off: the slot is zero, as siw sends it */
				size_t tl = sr_mpa_pad(r->seg.ulpdu_len) + SR_MPA_CRC_SIZE;

				assert_int_equal(sr_get_be32(r->fpdu + r->fpdu_len - 4), 0);
				assert_true(r->fpdu_len >= tl);
			}
			return 0;
		}
	}
}

/* The stream must end now (EOF or reset), with nothing else in it. */
static inline void raw_expect_end(struct raw *r)
{
	int ret = raw_next(r, NULL, 0, T_WAIT_MS);

	assert_true(ret == 1 || ret == -ECONNRESET);
}

/* A QP attached as the initiator (CRC on, no RTR) to a raw peer on the other end. */
struct raw_qp {
	struct ep e;
	int peer, qfd;
	struct raw r;
};

static inline void raw_qp_up(struct raw_qp *t)
{
	ep_create(&t->e, NULL, false);
	tcp_pair(&t->qfd, &t->peer);
	raw_init(&t->r, t->peer, true);
	t->r.qfd = t->qfd;
	ep_attach(&t->e, t->qfd, true, mpa_conn(true, 0, 4, 4));
}

/* A QP attached (on an SRQ if srq) to a raw peer that checks our MULPDU against the QP's MSS. */
static inline void raw_qp_attach(struct raw_qp *t, bool initiator, struct sr_mpa_conn m, bool srq)
{
	ep_create(&t->e, NULL, srq);
	tcp_pair(&t->qfd, &t->peer);
	raw_init(&t->r, t->peer, m.crc);
	t->r.mulpdu = sr_mpa_mulpdu((uint32_t)sock_mss(t->qfd));
	t->r.qfd = t->qfd;
	ep_attach(&t->e, t->qfd, initiator, m);
}

static inline void raw_qp_down(struct raw_qp *t)
{
	ep_destroy(&t->e);
	close(t->peer);
}

/*
 * Wait until the QP has taken every byte out of its socket: from then on all it has not
 * processed yet sits in its staging buffer.
 */
static inline void raw_qp_drained(struct raw_qp *t)
{
	uint64_t end = now_ms() + T_WAIT_MS;
	int q = -1;

	while (now_ms() < end) {
		assert_int_equal(ioctl(t->qfd, FIONREAD, &q), 0);
		if (q == 0)
			return;
		usleep(200);
	}
	fail_msg("the QP left %d bytes in its socket for %d ms", q, T_WAIT_MS);
}

#endif
