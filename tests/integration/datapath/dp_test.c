// SPDX-License-Identifier: MIT
/*
 * Data-path integration tests over rdma_cm: dp_test <case>. Every transfer is byte-checked;
 * every error case checks the documented completion and that memory outside the target
 * region was not touched (guard zones around registered windows).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dp_common.h"

#define GUARD 4096
#define MR_RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* A buffer with a guard zone on each side filled with 0xA5. */
static uint8_t *guarded(size_t len)
{
	uint8_t *b = mmap(NULL, len + 2 * GUARD, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	DP_CHECK(b != MAP_FAILED, "mmap %zu", len);
	memset(b, 0xA5, GUARD);
	memset(b + GUARD + len, 0xA5, GUARD);
	return b + GUARD;
}

static void guards_intact(const uint8_t *p, size_t len)
{
	for (size_t i = 1; i <= GUARD; i++)
		DP_CHECK(p[-(ssize_t)i] == 0xA5, "guard before the region touched at -%zu", i);
	for (size_t i = 0; i < GUARD; i++)
		DP_CHECK(p[len + i] == 0xA5, "guard after the region touched at +%zu", i);
}

/* Client writes `len` bytes into the server's region, then a Send tells the server. */
static void case_write(size_t len)
{
	struct dp_pair p;
	uint8_t *src = guarded(len), *dst = guarded(len), note[8], hello[8] = "written";
	struct ibv_mr *smr, *dmr, *nmr, *hmr;
	struct ibv_wc wc;

	dp_connect(&p, NULL);
	smr = dp_reg(p.cli.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	hmr = dp_reg(p.cli.pd, hello, sizeof(hello), IBV_ACCESS_LOCAL_WRITE);
	dmr = dp_reg(p.srv.pd, dst, len, MR_RW);
	nmr = dp_reg(p.srv.pd, note, sizeof(note), IBV_ACCESS_LOCAL_WRITE);
	dp_fill(src, len, (uint32_t)len);
	memset(dst, 0, len);
	dp_post_recv(&p.srv, 7, nmr, note, sizeof(note));
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_WRITE, 1, smr, src, (uint32_t)len,
			      (uintptr_t)dst, dmr->rkey, IBV_SEND_SIGNALED) == 0, "post write");
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 2, hmr, hello, 8, 0, 0, IBV_SEND_SIGNALED) == 0,
		 "post send");
	wc = dp_wait_wc(p.cli.cq, 60000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1 && wc.opcode == IBV_WC_RDMA_WRITE,
		 "write wc status %s wr_id %llu", ibv_wc_status_str(wc.status),
		 (unsigned long long)wc.wr_id);
	wc = dp_wait_wc(p.cli.cq, 60000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2, "send wc");
	wc = dp_wait_wc(p.srv.cq, 60000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.byte_len == 8,
		 "recv wc %s len %u", ibv_wc_status_str(wc.status), wc.byte_len);
	/* The Send followed the Write on the same stream: the Write is placed. */
	DP_CHECK(dp_check(dst, len, (uint32_t)len), "written data differs");
	guards_intact(dst, len);
	DP_CHECK(!memcmp(note, "written", 8), "notification differs");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(hmr);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(nmr);
	dp_disconnect(&p);
}

static void case_read(size_t len)
{
	struct dp_pair p;
	uint8_t *src = guarded(len), *dst = guarded(len);
	struct ibv_mr *smr, *dmr;
	struct ibv_wc wc;

	dp_connect(&p, NULL);
	smr = dp_reg(p.srv.pd, src, len, MR_RW);
	dmr = dp_reg(p.cli.pd, dst, len, IBV_ACCESS_LOCAL_WRITE);
	dp_fill(src, len, (uint32_t)len + 1);
	memset(dst, 0, len);
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_READ, 3, dmr, dst, (uint32_t)len,
			      (uintptr_t)src, smr->rkey, IBV_SEND_SIGNALED) == 0, "post read");
	wc = dp_wait_wc(p.cli.cq, 60000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.wr_id == 3,
		 "read wc %s", ibv_wc_status_str(wc.status));
	DP_CHECK(wc.byte_len == len, "read byte_len %u", wc.byte_len);
	DP_CHECK(dp_check(dst, len, (uint32_t)len + 1), "read data differs");
	guards_intact(dst, len);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	dp_disconnect(&p);
}

/*
 * IRD/ORD at the device maximum (128, as siw) negotiated over MPA rev 2 (14-bit fields): both
 * sides ask for 255, librdmacm grants the device's max_qp_rd_atom on each QP, and twice that
 * many RDMA Reads posted at once all complete with the right bytes: the requester keeps up
 * to its ORD outstanding, the responder holds that many without overflowing its IRD (which
 * would end the stream with a Terminate and fail every Read).
 */
static void case_read_depth(void)
{
	enum { CHUNK = 64 * 1024 }; /* large enough that Read Responses queue up behind TCP */
	struct dp_opts o = { .rd_atomic = 255 };
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;
	struct dp_pair p;
	struct ibv_mr *smr, *dmr;
	uint8_t *src, *dst;
	int n;

	{
		struct ibv_device **l = ibv_get_device_list(NULL);
		struct ibv_context *ctx = NULL;

		for (int i = 0; l && l[i] && !ctx; i++)
			if (!strcmp(ibv_get_device_name(l[i]), "sriw_lo"))
				ctx = ibv_open_device(l[i]);
		DP_CHECK(ctx && ibv_query_device(ctx, &da) == 0, "query sriw_lo");
		ibv_close_device(ctx);
		ibv_free_device_list(l);
	}
	DP_CHECK(da.max_qp_rd_atom >= 128 && da.max_qp_init_rd_atom >= 128,
		 "max_qp_rd_atom %d, max_qp_init_rd_atom %d", da.max_qp_rd_atom,
		 da.max_qp_init_rd_atom);
	n = 2 * da.max_qp_init_rd_atom;
	o.max_send_wr = n;
	src = guarded((size_t)n * CHUNK);
	dst = guarded((size_t)n * CHUNK);
	dp_connect(&p, &o);
	DP_CHECK(p.est_initiator_depth == da.max_qp_rd_atom &&
		 p.est_responder_resources == da.max_qp_init_rd_atom,
		 "ESTABLISHED: initiator_depth %u responder_resources %u", p.est_initiator_depth,
		 p.est_responder_resources);
	for (struct dp_side *s = &p.cli; s; s = s == &p.cli ? &p.srv : NULL) {
		DP_CHECK(ibv_query_qp(s->id->qp, &qa, IBV_QP_MAX_QP_RD_ATOMIC |
				      IBV_QP_MAX_DEST_RD_ATOMIC, &qi) == 0, "query_qp");
		DP_CHECK(qa.max_rd_atomic == da.max_qp_init_rd_atom &&
			 qa.max_dest_rd_atomic == da.max_qp_rd_atom,
			 "%s QP: ORD %u IRD %u", s == &p.cli ? "client" : "server",
			 qa.max_rd_atomic, qa.max_dest_rd_atomic);
	}
	smr = dp_reg(p.srv.pd, src, (size_t)n * CHUNK, MR_RW);
	dmr = dp_reg(p.cli.pd, dst, (size_t)n * CHUNK, IBV_ACCESS_LOCAL_WRITE);
	dp_fill(src, (size_t)n * CHUNK, 128);
	memset(dst, 0, (size_t)n * CHUNK);
	for (int i = 0; i < n; i++)
		DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_READ, (uint64_t)i, dmr, dst + i * CHUNK,
				      CHUNK, (uintptr_t)src + (uint64_t)i * CHUNK, smr->rkey,
				      IBV_SEND_SIGNALED) == 0, "post read %d", i);
	for (int i = 0; i < n; i++) {
		struct ibv_wc wc = dp_wait_wc(p.cli.cq, 60000);

		DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ &&
			 wc.wr_id == (uint64_t)i, "read %d: wc %s wr_id %llu", i,
			 ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
	}
	DP_CHECK(dp_check(dst, (size_t)n * CHUNK, 128), "read data differs");
	guards_intact(dst, (size_t)n * CHUNK);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	dp_disconnect(&p);
}

/* Sends of several sizes with 3 SGEs gathered and 2 SGEs scattered. */
static void case_send_sge(void)
{
	static const uint32_t sizes[] = { 1, 100, 4096, 65536, 1 << 20 };
	struct dp_pair p;
	size_t max = 1 << 20;
	uint8_t *src = guarded(max), *dst = guarded(max + 64);
	struct ibv_mr *smr, *dmr;

	dp_connect(&p, NULL);
	smr = dp_reg(p.cli.pd, src, max, IBV_ACCESS_LOCAL_WRITE);
	dmr = dp_reg(p.srv.pd, dst, max + 64, IBV_ACCESS_LOCAL_WRITE);
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = sizes[i], a = len / 3, b = len / 3, c = len - a - b, half = len / 2;
		struct ibv_sge ss[3] = {
			{ (uintptr_t)src, a, smr->lkey },
			{ (uintptr_t)src + a, b, smr->lkey },
			{ (uintptr_t)src + a + b, c, smr->lkey },
		};
		/* the receive spans two SGEs with a gap between them in memory */
		struct ibv_sge rs[2] = {
			{ (uintptr_t)dst, half, dmr->lkey },
			{ (uintptr_t)dst + half + 32, len - half + 16, dmr->lkey },
		};
		struct ibv_send_wr sw = { .wr_id = i, .sg_list = ss, .num_sge = 3,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bs;
		struct ibv_recv_wr rw = { .wr_id = 100 + i, .sg_list = rs, .num_sge = 2 }, *br;
		struct ibv_wc wc;

		memset(dst, 0, max + 64);
		dp_fill(src, len, len);
		DP_CHECK(ibv_post_recv(p.srv.id->qp, &rw, &br) == 0, "post_recv");
		DP_CHECK(ibv_post_send(p.cli.id->qp, &sw, &bs) == 0, "post_send");
		wc = dp_wait_wc(p.cli.cq, 30000);
		DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND, "send wc");
		wc = dp_wait_wc(p.srv.cq, 30000);
		DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == len && wc.wr_id == 100 + i,
			 "recv wc %s len %u", ibv_wc_status_str(wc.status), wc.byte_len);
		DP_CHECK(dp_check(dst, half, len), "first receive SGE differs");
		for (int k = 0; k < 32; k++)
			DP_CHECK(dst[half + k] == 0, "gap between receive SGEs touched");
		{
			uint8_t *tmp = malloc(len);

			memcpy(tmp, dst, half);
			memcpy(tmp + half, dst + half + 32, len - half);
			DP_CHECK(dp_check(tmp, len, len), "scattered data differs");
			free(tmp);
		}
		DP_CHECK(dst[half + 32 + (len - half)] == 0, "receive wrote past the message");
	}
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	dp_disconnect(&p);
}

/* Inline data is taken at post time: changing the buffer afterwards changes nothing. */
static void case_inline(void)
{
	struct dp_opts o = { .max_inline = 64 };
	struct dp_pair p;
	uint8_t msg[64], got[64];
	struct ibv_mr *rmr;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;

	dp_connect(&p, &o);
	DP_CHECK(ibv_query_qp(p.cli.id->qp, &qa, IBV_QP_CAP, &qia) == 0, "query_qp");
	DP_CHECK(qa.cap.max_inline_data >= 64, "max_inline_data %u", qa.cap.max_inline_data);
	rmr = dp_reg(p.srv.pd, got, sizeof(got), IBV_ACCESS_LOCAL_WRITE);
	dp_post_recv(&p.srv, 1, rmr, got, sizeof(got));
	dp_fill(msg, sizeof(msg), 42);
	/* no MR at all for an inline send */
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 1, NULL, msg, sizeof(msg), 0, 0,
			      IBV_SEND_INLINE | IBV_SEND_SIGNALED) == 0, "post inline");
	memset(msg, 0, sizeof(msg));
	wc = dp_wait_wc(p.srv.cq, 10000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == 64, "recv wc");
	DP_CHECK(dp_check(got, sizeof(got), 42), "inline data differs");
	wc = dp_wait_wc(p.cli.cq, 10000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS, "send wc");
	/* more than max_inline_data is refused at post time */
	{
		uint8_t big[1024];

		DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 2, NULL, big, sizeof(big), 0, 0,
				      IBV_SEND_INLINE) == EINVAL, "oversized inline accepted");
	}
	ibv_dereg_mr(rmr);
	dp_disconnect(&p);
}

static void case_srq(void)
{
	struct dp_opts o = { .srv_srq = true };
	struct dp_pair p;
	uint8_t src[256], dst[16][256];
	struct ibv_mr *smr, *dmr;

	dp_connect(&p, &o);
	smr = dp_reg(p.cli.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	dmr = dp_reg(p.srv.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 16; i++)
		dp_post_recv(&p.srv, (uint64_t)i, dmr, dst[i], sizeof(dst[i]));
	for (int i = 0; i < 16; i++) {
		struct ibv_wc wc;

		dp_fill(src, sizeof(src), 1000 + i);
		DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, i, smr, src, sizeof(src), 0, 0,
				      IBV_SEND_SIGNALED) == 0, "post");
		wc = dp_wait_wc(p.cli.cq, 10000);
		DP_CHECK(wc.status == IBV_WC_SUCCESS, "send wc");
		wc = dp_wait_wc(p.srv.cq, 10000);
		DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i, "srq recv wc");
		DP_CHECK(dp_check(dst[i], sizeof(dst[i]), 1000 + i), "srq data %d differs", i);
	}
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	dp_disconnect(&p);
}

/* A CQ armed for solicited completions only wakes for the solicited Send. */
static void case_solicited(void)
{
	struct dp_pair p;
	uint8_t src[8], dst[2][8];
	struct ibv_mr *smr, *dmr;
	struct pollfd pfd;
	struct ibv_cq *ecq;
	void *ectx;

	dp_connect(&p, NULL);
	smr = dp_reg(p.cli.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	dmr = dp_reg(p.srv.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	dp_post_recv(&p.srv, 0, dmr, dst[0], 8);
	dp_post_recv(&p.srv, 1, dmr, dst[1], 8);
	fcntl(p.srv.ch->fd, F_SETFL, O_NONBLOCK);
	DP_CHECK(ibv_req_notify_cq(p.srv.cq, 1) == 0, "req_notify solicited");
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 0, smr, src, 8, 0, 0, 0) == 0, "post");
	pfd = (struct pollfd){ .fd = p.srv.ch->fd, .events = POLLIN };
	DP_CHECK(poll(&pfd, 1, 300) == 0, "woken by an unsolicited completion");
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 1, smr, src, 8, 0, 0, IBV_SEND_SOLICITED) == 0,
		 "post");
	DP_CHECK(poll(&pfd, 1, 5000) == 1, "not woken by the solicited completion");
	DP_CHECK(ibv_get_cq_event(p.srv.ch, &ecq, &ectx) == 0 && ecq == p.srv.cq &&
			 ectx == &p.srv, "get_cq_event");
	ibv_ack_cq_events(ecq, 1);
	for (int i = 0; i < 2; i++) {
		struct ibv_wc wc = dp_wait_wc(p.srv.cq, 5000);

		DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i, "recv %d", i);
	}
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	dp_disconnect(&p);
}

/* A fenced Write after a Read of the same bytes waits for the Read: the Read sees old data. */
static void case_fence(void)
{
	struct dp_pair p;
	size_t len = 1 << 20;
	uint8_t *remote = guarded(len), *rd = guarded(len), *wr = guarded(len);
	struct ibv_mr *rmr, *rdmr, *wrmr;

	dp_connect(&p, NULL);
	rmr = dp_reg(p.srv.pd, remote, len, MR_RW);
	rdmr = dp_reg(p.cli.pd, rd, len, IBV_ACCESS_LOCAL_WRITE);
	wrmr = dp_reg(p.cli.pd, wr, len, IBV_ACCESS_LOCAL_WRITE);
	for (int round = 0; round < 20; round++) {
		struct ibv_wc wc;

		dp_fill(remote, len, 7 + round);
		dp_fill(wr, len, 99);
		DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_READ, 1, rdmr, rd, (uint32_t)len,
				      (uintptr_t)remote, rmr->rkey, IBV_SEND_SIGNALED) == 0, "read");
		DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_WRITE, 2, wrmr, wr, (uint32_t)len,
				      (uintptr_t)remote, rmr->rkey,
				      IBV_SEND_SIGNALED | IBV_SEND_FENCE) == 0, "write");
		wc = dp_wait_wc(p.cli.cq, 30000);
		DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1, "read first");
		wc = dp_wait_wc(p.cli.cq, 30000);
		DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2, "write second");
		DP_CHECK(dp_check(rd, len, 7 + round), "fenced read saw the later write");
		/* A Write completes once sent; a Read behind it on the stream returns only after
		 * the Write was placed: a barrier before the next round refills the target. */
		DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_READ, 3, rdmr, rd, 1, (uintptr_t)remote,
				      rmr->rkey, IBV_SEND_SIGNALED) == 0, "barrier read");
		wc = dp_wait_wc(p.cli.cq, 30000);
		DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 3, "barrier");
	}
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(rdmr);
	ibv_dereg_mr(wrmr);
	dp_disconnect(&p);
}

/* The next async event about the client's QP is `want`. Both QPs live on one device context
 * here, so the server's own events are skipped. */
static void wait_cli_async(struct dp_pair *p, enum ibv_event_type want)
{
	for (;;) {
		struct pollfd pfd = { .fd = p->cli.id->verbs->async_fd, .events = POLLIN };
		struct ibv_async_event ae;
		bool mine;

		DP_CHECK(poll(&pfd, 1, 10000) == 1, "no async event for the client's QP");
		DP_CHECK(ibv_get_async_event(p->cli.id->verbs, &ae) == 0, "get_async_event");
		mine = ae.element.qp == p->cli.id->qp;
		if (mine)
			DP_CHECK(ae.event_type == want, "client async event %s, want %s",
				 ibv_event_type_str(ae.event_type), ibv_event_type_str(want));
		ibv_ack_async_event(&ae);
		if (mine)
			return;
	}
}

/*
 * Send with Invalidate goes out as posted, but the receiver refuses to invalidate a plain MR
 * (only memory windows and fast-registered MRs may be invalidated remotely, and we offer
 * neither): its receive completes with IBV_WC_REM_INV_REQ_ERR, a Terminate ("STag cannot be
 * invalidated") ends the stream, and the region stays registered and untouched.
 */
static void case_send_inv(void)
{
	struct dp_pair p;
	uint8_t msg[8], got[8], *win = guarded(4096);
	struct ibv_mr *smr, *gmr, *wmr;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;

	dp_connect(&p, NULL);
	smr = dp_reg(p.cli.pd, msg, sizeof(msg), IBV_ACCESS_LOCAL_WRITE);
	gmr = dp_reg(p.srv.pd, got, sizeof(got), IBV_ACCESS_LOCAL_WRITE);
	wmr = dp_reg(p.srv.pd, win, 4096, MR_RW);
	memset(win, 0x11, 4096);
	dp_post_recv(&p.srv, 5, gmr, got, sizeof(got));
	sge = (struct ibv_sge){ (uintptr_t)msg, sizeof(msg), smr->lkey };
	wr.wr_id = 9;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = wmr->rkey;
	DP_CHECK(ibv_post_send(p.cli.id->qp, &wr, &bad) == 0, "post send_inv");
	wc = dp_wait_wc(p.srv.cq, 10000);
	DP_CHECK(wc.wr_id == 5 && wc.status == IBV_WC_REM_INV_REQ_ERR &&
			 !(wc.wc_flags & IBV_WC_WITH_INV),
		 "recv wc %s flags 0x%x", ibv_wc_status_str(wc.status), wc.wc_flags);
	/* iWARP completes a Send once it is sent; one still in flight carries the verdict */
	wc = dp_wait_wc(p.cli.cq, 10000);
	DP_CHECK(wc.wr_id == 9 &&
			 (wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_REM_OP_ERR),
		 "send_inv wc %s", ibv_wc_status_str(wc.status));
	/* the sender hears the refusal as a remote operation error: QP_FATAL */
	wait_cli_async(&p, IBV_EVENT_QP_FATAL);
	for (size_t i = 0; i < 4096; i++)
		DP_CHECK(win[i] == 0x11, "window changed at %zu", i);
	guards_intact(win, 4096);
	DP_CHECK(ibv_dereg_mr(wmr) == 0, "the region is still registered");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(gmr);
	dp_disconnect(&p);
}

enum bad_kind { BAD_RKEY, BAD_BOUNDS, BAD_RIGHTS, BAD_PD };

/*
 * A remote access the target refuses: the target sends a Terminate and its QP goes to error;
 * the initiator's oldest outstanding request (here a Read issued after the Write) completes
 * with IBV_WC_REM_ACCESS_ERR and the rest are flushed. Nothing outside the window changes.
 */
static void case_bad_access(enum bad_kind k, bool via_read)
{
	struct dp_pair p;
	size_t len = 4096;
	uint8_t *win = guarded(len), *src = guarded(len);
	struct ibv_mr *wmr, *smr;
	struct ibv_pd *other = NULL;
	uint32_t rkey;
	uint64_t raddr;
	int access = MR_RW;
	struct ibv_wc wc;
	bool got_access_err = false;

	dp_connect(&p, NULL);
	if (k == BAD_RIGHTS)
		access = IBV_ACCESS_LOCAL_WRITE; /* neither remote write nor read */
	if (k == BAD_PD) {
		other = ibv_alloc_pd(p.srv.id->verbs);
		wmr = dp_reg(other, win, len, MR_RW);
	} else {
		wmr = dp_reg(p.srv.pd, win, len, access);
	}
	smr = dp_reg(p.cli.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	memset(win, 0x11, len);
	dp_fill(src, len, 5);
	rkey = k == BAD_RKEY ? wmr->rkey ^ 0x5a5a00 : wmr->rkey;
	raddr = (uintptr_t)win + (k == BAD_BOUNDS ? len / 2 : 0); /* runs past the end */
	if (!via_read)
		DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_WRITE, 1, smr, src, (uint32_t)len, raddr,
				      rkey, 0) == 0, "post write");
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_READ, 2, smr, src, (uint32_t)len, raddr, rkey,
			      IBV_SEND_SIGNALED) == 0, "post read");
	/* Completions until the Read's: it is signaled, so it always completes. */
	do {
		wc = dp_wait_wc(p.cli.cq, 10000);
		fprintf(stderr, "wc wr_id %llu: %s\n", (unsigned long long)wc.wr_id,
			ibv_wc_status_str(wc.status));
		DP_CHECK(wc.status != IBV_WC_SUCCESS, "refused access completed successfully");
		got_access_err |= wc.status == IBV_WC_REM_ACCESS_ERR;
	} while (wc.wr_id != 2);
	/* The initiator always hears the verdict as an affiliated async event too. */
	wait_cli_async(&p, IBV_EVENT_QP_ACCESS_ERR);
	/* A refused Read is in flight when the verdict comes: it always carries it. A Write has
	 * usually completed locally by then; it carries it only if it was still being sent. */
	if (via_read)
		DP_CHECK(wc.status == IBV_WC_REM_ACCESS_ERR, "refused Read: %s",
			 ibv_wc_status_str(wc.status));
	else
		got_access_err = true;
	DP_CHECK(got_access_err, "no IBV_WC_REM_ACCESS_ERR");
	for (size_t i = 0; i < len; i++)
		DP_CHECK(win[i] == 0x11, "refused Write changed the window at %zu", i);
	guards_intact(win, len);
	/* the QP is in error now: a new request is flushed */
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 3, smr, src, 8, 0, 0, IBV_SEND_SIGNALED) == 0,
		 "post after error");
	do
		wc = dp_wait_wc(p.cli.cq, 10000);
	while (wc.wr_id != 3);
	DP_CHECK(wc.status == IBV_WC_WR_FLUSH_ERR, "post after error: %s",
		 ibv_wc_status_str(wc.status));
	ibv_dereg_mr(wmr);
	ibv_dereg_mr(smr);
	dp_disconnect(&p);
	if (other)
		ibv_dealloc_pd(other);
}

/* The receiver-not-ready wait of the server's QP (ibv_modify_qp in RTS, IB encodings). */
static void set_rnr(struct dp_pair *p, uint8_t retry, uint8_t timer)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .rnr_retry = retry,
				 .min_rnr_timer = timer };
	struct ibv_qp_init_attr ia;

	DP_CHECK(ibv_modify_qp(p->srv.id->qp, &a, IBV_QP_STATE | IBV_QP_RNR_RETRY |
						    IBV_QP_MIN_RNR_TIMER) == 0, "modify rnr");
	memset(&a, 0, sizeof(a));
	DP_CHECK(ibv_query_qp(p->srv.id->qp, &a, IBV_QP_RNR_RETRY, &ia) == 0, "query");
	DP_CHECK(a.rnr_retry == retry && a.min_rnr_timer == timer, "rnr attributes not kept");
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * A Send that finds no posted receive breaks the stream: at once with rnr_retry 0 (the
 * default, and all iWARP has done before), else after rnr_retry x min_rnr_timer, which must
 * have passed (at least bound_ms) when the target reports the error.
 */
static void no_recv(uint8_t retry, uint8_t timer, double bound_ms)
{
	struct dp_pair p;
	uint8_t src[64];
	struct ibv_mr *smr;
	struct ibv_wc wc;
	struct ibv_async_event ae;
	struct pollfd pfd;
	double t0;

	dp_connect(&p, NULL);
	if (retry)
		set_rnr(&p, retry, timer);
	smr = dp_reg(p.cli.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	t0 = now_ms();
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 1, smr, src, sizeof(src), 0, 0,
			      IBV_SEND_SIGNALED) == 0, "post");
	wc = dp_wait_wc(p.cli.cq, 10000); /* handed to TCP: success or, if late, an error */
	/*
	 * The target QP is now in error with a fatal async event, and the initiator gets one
	 * when its receive side has taken the Terminate (both QPs share one device context
	 * here). Only from then on must its next request fail: one posted earlier is handed
	 * to TCP, the stream's FIN still ahead of it, and completes like any other Send.
	 */
	for (bool tgt = false, ini = false; !tgt || !ini;) {
		pfd = (struct pollfd){ .fd = p.srv.id->verbs->async_fd, .events = POLLIN };
		DP_CHECK(poll(&pfd, 1, 10000) == 1, "no async event on the %s",
			 tgt ? "initiator" : "target");
		DP_CHECK(ibv_get_async_event(p.srv.id->verbs, &ae) == 0, "get_async_event");
		if (ae.element.qp == p.srv.id->qp) {
			DP_CHECK(ae.event_type == IBV_EVENT_QP_FATAL, "async event %s",
				 ibv_event_type_str(ae.event_type));
			if (!tgt)
				DP_CHECK(now_ms() - t0 >= bound_ms,
					 "Terminate after %.1f ms, before the %.1f ms bound",
					 now_ms() - t0, bound_ms);
			tgt = true;
		} else if (ae.element.qp == p.cli.id->qp) {
			ini = true;
		}
		ibv_ack_async_event(&ae);
	}
	/* and the initiator's next request is flushed */
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 2, smr, src, 8, 0, 0, IBV_SEND_SIGNALED) == 0,
		 "post 2");
	do
		wc = dp_wait_wc(p.cli.cq, 10000);
	while (wc.wr_id != 2);
	DP_CHECK(wc.status == IBV_WC_WR_FLUSH_ERR || wc.status == IBV_WC_REM_OP_ERR,
		 "after broken stream: %s", ibv_wc_status_str(wc.status));
	ibv_dereg_mr(smr);
	dp_disconnect(&p);
}

static void case_no_recv(void)
{
	no_recv(0, 0, 0);
}

/* rnr_retry 3 x min_rnr_timer 24 (40.96 ms): the Terminate comes after 122.88 ms. */
static void case_rnr_bound(void)
{
	no_recv(3, 24, 122.88);
}

/*
 * A Send held without end (rnr_retry 7) gets no receive once the holding side disconnects:
 * the wait ends with the Terminate, and the sender's next request fails instead of
 * disappearing into a stream nobody reads.
 */
static void case_rnr_disconnect(void)
{
	struct dp_pair p;
	uint8_t src[64];
	struct ibv_mr *smr;
	struct ibv_wc wc;
	int rc;

	dp_connect(&p, NULL);
	set_rnr(&p, 7, 1);
	smr = dp_reg(p.cli.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 1, smr, src, sizeof(src), 0, 0,
			      IBV_SEND_SIGNALED) == 0, "post");
	wc = dp_wait_wc(p.cli.cq, 10000);
	DP_CHECK(wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS, "send wc %s",
		 ibv_wc_status_str(wc.status));
	DP_CHECK(rdma_disconnect(p.srv.id) == 0, "server rdma_disconnect");
	/*
	 * Sends posted before the client learns of the end may still be handed to TCP; the
	 * client's DISCONNECTED event says its QP knows (Terminate, then the close), and from
	 * then on a request fails: refused at post, or completed with an error.
	 */
	for (;;) {
		struct pollfd pfd = { .fd = p.ec->fd, .events = POLLIN };
		struct rdma_cm_event *ev;
		bool cli_done;

		DP_CHECK(poll(&pfd, 1, 10000) == 1, "no DISCONNECTED event for the client");
		DP_CHECK(rdma_get_cm_event(p.ec, &ev) == 0, "rdma_get_cm_event");
		cli_done = ev->id == p.cli.id && ev->event == RDMA_CM_EVENT_DISCONNECTED;
		rdma_ack_cm_event(ev);
		if (cli_done)
			break;
	}
	rc = dp_post_send(&p.cli, IBV_WR_SEND, 2, smr, src, 8, 0, 0, IBV_SEND_SIGNALED);
	if (rc == 0) {
		do
			wc = dp_wait_wc(p.cli.cq, 10000);
		while (wc.wr_id != 2);
		DP_CHECK(wc.status != IBV_WC_SUCCESS,
			 "a Send after the client's DISCONNECTED event succeeded");
	} else {
		DP_CHECK(rc == EINVAL, "post after DISCONNECTED: %s", strerror(rc));
	}
	ibv_dereg_mr(smr);
	dp_teardown(&p);
}

/*
 * Receiver not ready, without end (rnr_retry 7): a Send posted before the peer's receive
 * waits in the stream, and so does an RDMA Read behind it; once the receive is posted both
 * complete normally and the connection carries on. With the server's own RQ (a post resumes
 * the stream at once) and with an SRQ.
 */
static void rnr_late_recv(bool srq)
{
	struct dp_opts o = { .srv_srq = srq };
	uint8_t src[4096], dst[4096], rsrc[512], rdst[512];
	struct ibv_mr *smr, *dmr, *rsmr, *rdmr;
	struct dp_pair p;
	struct ibv_wc wc;

	dp_connect(&p, &o);
	set_rnr(&p, 7, 1);
	smr = dp_reg(p.cli.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	rdmr = dp_reg(p.cli.pd, rdst, sizeof(rdst), IBV_ACCESS_LOCAL_WRITE);
	dmr = dp_reg(p.srv.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	rsmr = dp_reg(p.srv.pd, rsrc, sizeof(rsrc), IBV_ACCESS_REMOTE_READ);
	dp_fill(src, sizeof(src), 71);
	dp_fill(rsrc, sizeof(rsrc), 72);
	memset(dst, 0, sizeof(dst));
	memset(rdst, 0, sizeof(rdst));
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 1, smr, src, sizeof(src), 0, 0,
			      IBV_SEND_SIGNALED) == 0, "post send");
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_RDMA_READ, 2, rdmr, rdst, sizeof(rdst),
			      (uintptr_t)rsrc, rsmr->rkey, IBV_SEND_SIGNALED) == 0, "post read");
	wc = dp_wait_wc(p.cli.cq, 10000);
	DP_CHECK(wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS, "send wc %s",
		 ibv_wc_status_str(wc.status));
	/* The Read Request is behind the Send in the stream: it cannot be answered yet. */
	DP_CHECK(dp_no_wc(p.cli.cq, 100), "the Read completed while the Send waited");
	DP_CHECK(dp_no_wc(p.srv.cq, 1), "a completion on the target before its receive");
	dp_post_recv(&p.srv, 10, dmr, dst, sizeof(dst));
	wc = dp_wait_wc(p.srv.cq, 10000);
	DP_CHECK(wc.wr_id == 10 && wc.status == IBV_WC_SUCCESS && wc.byte_len == sizeof(src),
		 "recv wc %s len %u", ibv_wc_status_str(wc.status), wc.byte_len);
	DP_CHECK(dp_check(dst, sizeof(dst), 71), "Send data differs");
	wc = dp_wait_wc(p.cli.cq, 10000);
	DP_CHECK(wc.wr_id == 2 && wc.status == IBV_WC_SUCCESS, "read wc %s",
		 ibv_wc_status_str(wc.status));
	DP_CHECK(dp_check(rdst, sizeof(rdst), 72), "Read data differs");
	/* the connection carries on: a Send with its receive already there */
	dp_post_recv(&p.srv, 11, dmr, dst, sizeof(dst));
	dp_fill(src, sizeof(src), 73);
	DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 3, smr, src, 100, 0, 0, IBV_SEND_SIGNALED) == 0,
		 "post send 2");
	wc = dp_wait_wc(p.cli.cq, 10000);
	DP_CHECK(wc.wr_id == 3 && wc.status == IBV_WC_SUCCESS, "send 2 wc");
	wc = dp_wait_wc(p.srv.cq, 10000);
	DP_CHECK(wc.wr_id == 11 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 100, "recv 2 wc");
	DP_CHECK(dp_check(dst, 100, 73), "Send 2 data differs");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rdmr);
	ibv_dereg_mr(dmr);
	ibv_dereg_mr(rsmr);
	dp_disconnect(&p);
}

struct closer {
	struct dp_pair *p;
	struct ibv_wc wc;
};

/* The target: as soon as the Send has arrived, close the connection (perftest's server
 * does this at the end of its final handshake). */
static void *close_on_recv(void *arg)
{
	struct closer *c = arg;

	c->wc = dp_wait_wc(c->p->srv.cq, 10000);
	rdma_disconnect(c->p->srv.id);
	return NULL;
}

/*
 * A Send whose bytes are all on the wire completes successfully, even when the peer acts
 * on it and closes the connection at once: the close must not report it as flushed. The
 * race is between our completion and the peer's reaction; on one CPU the woken receiver
 * preempts the sender right after its send, which makes the race happen nearly every run.
 * Threads created from here on (the library's engine thread too) inherit the pinning.
 */
static void case_peer_close(void)
{
	cpu_set_t set;

	DP_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "getaffinity");
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, &set)) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			break;
		}
	}
	DP_CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "setaffinity");
	for (int i = 0; i < 200; i++) {
		struct dp_pair p;
		uint8_t src[64], dst[64];
		struct ibv_mr *smr, *dmr;
		struct closer c = { .p = &p };
		struct ibv_wc wc;
		pthread_t t;

		dp_connect(&p, NULL);
		smr = dp_reg(p.cli.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
		dmr = dp_reg(p.srv.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
		dp_post_recv(&p.srv, 7, dmr, dst, sizeof(dst));
		DP_CHECK(pthread_create(&t, NULL, close_on_recv, &c) == 0, "thread");
		DP_CHECK(dp_post_send(&p.cli, IBV_WR_SEND, 1, smr, src, sizeof(src), 0, 0,
				      IBV_SEND_SIGNALED) == 0, "post");
		wc = dp_wait_wc(p.cli.cq, 10000);
		pthread_join(t, NULL);
		DP_CHECK(c.wc.status == IBV_WC_SUCCESS, "receive: %s",
			 ibv_wc_status_str(c.wc.status));
		DP_CHECK(wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS,
			 "run %d: a Send the peer received completed with %s", i,
			 ibv_wc_status_str(wc.status));
		ibv_dereg_mr(smr);
		ibv_dereg_mr(dmr);
		dp_disconnect(&p);
	}
}

/*
 * The active side disconnects while the passive side's Sends are still on their way. The
 * passive side answers the active side's FIN with a reset when all its bytes are
 * acknowledged (so the active side keeps no TIME_WAIT), and the active side reads everything
 * that arrived before the reset. Whatever the timing: every Send the server saw complete
 * successfully is received intact and in order by the client, the others are flushed.
 */
static void case_close_race(void)
{
	enum { MSGS = 16, LEN = 256 };

	for (int i = 0; i < 200; i++) {
		static uint8_t src[MSGS][LEN], dst[MSGS][LEN];
		int sent = 0, got = 0, flushed = 0;
		struct ibv_mr *smr, *dmr;
		struct dp_pair p;
		struct ibv_wc wc;

		dp_connect(&p, NULL);
		smr = dp_reg(p.srv.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
		dmr = dp_reg(p.cli.pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
		memset(dst, 0, sizeof(dst));
		for (int k = 0; k < MSGS; k++) {
			dp_fill(src[k], LEN, (uint32_t)(i * MSGS + k));
			dp_post_recv(&p.cli, 100 + (uint64_t)k, dmr, dst[k], LEN);
		}
		/* Half the runs let the first Sends go before the FIN, half race all of them. */
		for (int k = 0; k < MSGS; k++) {
			if (k == (i % 2 ? MSGS / 2 : 0))
				rdma_disconnect(p.cli.id);
			if (dp_post_send(&p.srv, IBV_WR_SEND, (uint64_t)k, smr, src[k], LEN, 0, 0,
					 IBV_SEND_SIGNALED))
				break; /* the QP is in ERR already */
		}
		dp_disconnect_wait(&p);
		while (ibv_poll_cq(p.srv.cq, 1, &wc) > 0) {
			if (wc.status != IBV_WC_SUCCESS) {
				DP_CHECK(wc.status == IBV_WC_WR_FLUSH_ERR, "send: %s",
					 ibv_wc_status_str(wc.status));
				continue;
			}
			DP_CHECK(wc.wr_id == (uint64_t)sent, "run %d: send %llu completed out of order",
				 i, (unsigned long long)wc.wr_id);
			sent++;
		}
		while (ibv_poll_cq(p.cli.cq, 1, &wc) > 0) {
			if (wc.status != IBV_WC_SUCCESS) {
				DP_CHECK(wc.status == IBV_WC_WR_FLUSH_ERR, "recv: %s",
					 ibv_wc_status_str(wc.status));
				flushed++;
				continue;
			}
			DP_CHECK(wc.wr_id == 100 + (uint64_t)got && wc.byte_len == LEN,
				 "run %d: receive %llu (%u bytes) out of order", i,
				 (unsigned long long)wc.wr_id, wc.byte_len);
			DP_CHECK(dp_check(dst[got], LEN, (uint32_t)(i * MSGS + got)),
				 "run %d: message %d differs", i, got);
			got++;
		}
		DP_CHECK(got == sent, "run %d: the server completed %d Sends, the client received %d",
			 i, sent, got);
		DP_CHECK(got + flushed == MSGS, "run %d: %d receives neither completed nor flushed",
			 i, MSGS - got - flushed);
		ibv_dereg_mr(smr);
		ibv_dereg_mr(dmr);
		dp_teardown(&p);
	}
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";

	static const size_t sizes[] = { 1, 4096, 1 << 20, 64u << 20 };

	if (!strcmp(c, "write"))
		for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			case_write(sizes[i]);
	else if (!strcmp(c, "read"))
		for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			case_read(sizes[i]);
	else if (!strcmp(c, "read_depth"))
		case_read_depth();
	else if (!strcmp(c, "send_sge"))
		case_send_sge();
	else if (!strcmp(c, "inline"))
		case_inline();
	else if (!strcmp(c, "srq"))
		case_srq();
	else if (!strcmp(c, "solicited"))
		case_solicited();
	else if (!strcmp(c, "fence"))
		case_fence();
	else if (!strcmp(c, "send_inv"))
		case_send_inv();
	else if (!strcmp(c, "bad_rkey"))
		case_bad_access(BAD_RKEY, false), case_bad_access(BAD_RKEY, true);
	else if (!strcmp(c, "bad_bounds"))
		case_bad_access(BAD_BOUNDS, false), case_bad_access(BAD_BOUNDS, true);
	else if (!strcmp(c, "bad_rights"))
		case_bad_access(BAD_RIGHTS, false), case_bad_access(BAD_RIGHTS, true);
	else if (!strcmp(c, "bad_pd"))
		case_bad_access(BAD_PD, false), case_bad_access(BAD_PD, true);
	else if (!strcmp(c, "no_recv"))
		case_no_recv();
	else if (!strcmp(c, "rnr_bound"))
		case_rnr_bound();
	else if (!strcmp(c, "rnr_disconnect"))
		case_rnr_disconnect();
	else if (!strcmp(c, "rnr_late_recv"))
		rnr_late_recv(false), rnr_late_recv(true);
	else if (!strcmp(c, "peer_close"))
		case_peer_close();
	else if (!strcmp(c, "close_race"))
		case_close_race();
	else {
		fprintf(stderr, "usage: dp_test CASE\n");
		return 2;
	}
	printf("PASS: %s\n", c);
	return 0;
}
