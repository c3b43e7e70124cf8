/* SPDX-License-Identifier: MIT */
/*
 * The connection fixture of the transport fuzz targets: one real RC QP on the loopback soft
 * iWARP device, attached as the MPA responder to a TCP socket over 127.0.0.1 whose other end
 * (the "peer") sends the fuzzer's bytes, then its FIN, and reads whatever the QP answers.
 *
 * Regions, registered once (so their STags stay what the seeds name), each between two
 * inaccessible guard pages (fz_guarded):
 *   0 rw      remote write + read, PD A: may change anywhere
 *   1 ro      remote read only, PD A: must never change
 *   2 recv    local write, PD A; its first half is posted as two receives: the second half
 *             must never change
 *   3 local   local write only, PD A: must never change nor leave the process
 *   4 otherpd remote write + read but PD B: must never change nor leave
 *   5 wo      remote write only, PD A: may change, must never leave
 * "Never leave": these regions are filled with a random 8-byte secret, new for every input
 * (libFuzzer learns the operands of comparisons: a fixed secret would soon be in its inputs,
 * echoed back in a Terminate's copy of the offending header); the peer checks every byte the
 * QP sends for it. Everything that may change is reset per input.
 *
 * Per input the connection must end by itself (the peer's FIN, or a protocol error, or the
 * peer's Terminate): a connection that neither closes nor reports within FZ_END_MS is a
 * finding (a hang), as is a second closed callback or a receive completion longer than its
 * buffer.
 */
#ifndef SR_FUZZ_CONN_H
#define SR_FUZZ_CONN_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "../../common/xport_test.h"
#include "../fuzz_util.h"
#include "fz_build.h"
#include "transport/sr_xport.h"
#include "verbs/sr_obj.h"
#include "verbs/sr_verbs.h"

/* Generous: the safety bound for one input, on a loaded 2-core machine under ASan. */
#define FZ_END_MS 20000
#define FZ_RECV_LEN 1024

struct fz_region {
	const char *name;
	size_t len;
	int access;
	int pd;          /* 0: A, the QP's; 1: B */
	bool may_change; /* remotely writable */
	bool secret;     /* filled with the secret; must never reach the peer */
	uint8_t *p;
	struct ibv_mr *mr;
};

#define FZ_RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
static struct fz_region fz_reg[FZ_NREG] = {
	{ .name = "rw", .len = 8192, .access = FZ_RW, .may_change = true },
	{ .name = "ro", .len = 4096, .access = IBV_ACCESS_REMOTE_READ },
	{ .name = "recv", .len = 4096, .access = IBV_ACCESS_LOCAL_WRITE },
	{ .name = "local", .len = 4096, .access = IBV_ACCESS_LOCAL_WRITE, .secret = true },
	{ .name = "otherpd", .len = 4096, .access = FZ_RW, .pd = 1, .secret = true },
	{ .name = "wo", .len = 4096, .access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	  .may_change = true, .secret = true },
};

static struct ibv_context *fz_ctx;
static struct ibv_pd *fz_pd[2];
static int fz_listen = -1;
static uint8_t fz_secret[8];
static uint8_t *fz_seen; /* what the peer received, for the secret search */
static size_t fz_seen_cap = 1 << 22;

/* The content every unchanged region must have: a per-region pattern, or the secret. */
static uint8_t fz_expect(int r, size_t i)
{
	return fz_reg[r].secret ? fz_secret[i % 8] : (uint8_t)(i * 7u + (unsigned int)r * 31u);
}

static void fz_fill(int r)
{
	for (size_t i = 0; i < fz_reg[r].len; i++)
		fz_reg[r].p[i] = fz_expect(r, i);
}

static void fz_conn_init(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct sockaddr_in sa = { .sin_family = AF_INET };

	CHECK(list);
	for (int i = 0; list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), "sriw_lo") == 0)
			fz_ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	CHECK(fz_ctx);
	fz_pd[0] = ibv_alloc_pd(fz_ctx);
	fz_pd[1] = ibv_alloc_pd(fz_ctx);
	CHECK(fz_pd[0] && fz_pd[1]);
	for (int r = 0; r < FZ_NREG; r++) {
		fz_reg[r].p = fz_guarded(fz_reg[r].len);
		fz_fill(r);
		fz_reg[r].mr = ibv_reg_mr_iova(fz_pd[fz_reg[r].pd], fz_reg[r].p, fz_reg[r].len,
					       FZ_IOVA(r), fz_reg[r].access);
		CHECK(fz_reg[r].mr);
		if (fz_reg[r].mr->rkey != FZ_STAG(r)) /* the stream seeds then miss it */
			fprintf(stderr, "fuzz: region %s has STag 0x%x, the stream seeds name 0x%x\n",
				fz_reg[r].name, fz_reg[r].mr->rkey, FZ_STAG(r));
	}
	fz_seen = malloc(fz_seen_cap);
	CHECK(fz_seen);
	fz_listen = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fz_listen >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(fz_listen, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(fz_listen, 4) == 0);
}

/* *q: the QP's end (non-blocking, no delay, as the CM hands it over); *peer: the fuzzer's. */
static void fz_tcp_pair(int *q, int *peer)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int one = 1;

	CHECK(getsockname(fz_listen, (struct sockaddr *)&sa, &sl) == 0);
	*peer = fz_connect((struct sockaddr *)&sa, sizeof(sa));
	*q = accept4(fz_listen, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	CHECK(*q >= 0);
	setsockopt(*q, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	CHECK(fcntl(*peer, F_SETFL, O_NONBLOCK) == 0);
}

/* A new secret in the secret regions. */
static void fz_new_secret(void)
{
	CHECK(getrandom(fz_secret, sizeof(fz_secret), 0) == sizeof(fz_secret));
	for (int r = 0; r < FZ_NREG; r++)
		if (fz_reg[r].secret)
			fz_fill(r);
}

/* The peer received n more bytes at fz_seen + *have: look for the secret, keep a tail. */
static void fz_seen_add(size_t *have, size_t n)
{
	size_t from = *have >= sizeof(fz_secret) - 1 ? *have - (sizeof(fz_secret) - 1) : 0;

	*have += n;
	for (size_t i = from; i + sizeof(fz_secret) <= *have; i++)
		if (fz_seen[i] == fz_secret[0] &&
		    memcmp(fz_seen + i, fz_secret, sizeof(fz_secret)) == 0) {
			fprintf(stderr, "fuzz: a secret region's bytes reached the peer\n");
			abort();
		}
	if (*have > fz_seen_cap / 2) {
		memmove(fz_seen, fz_seen + *have - 7, 7);
		*have = 7;
	}
}

static void fz_check_regions(void)
{
	for (int r = 0; r < FZ_NREG; r++) {
		size_t from = r == 2 ? 2 * FZ_RECV_LEN : 0;

		if (fz_reg[r].may_change) {
			fz_fill(r);
			continue;
		}
		for (size_t i = from; i < fz_reg[r].len; i++)
			if (fz_reg[r].p[i] != fz_expect(r, i)) {
				fprintf(stderr, "fuzz: region %s changed at byte %zu\n",
					fz_reg[r].name, i);
				abort();
			}
		if (r == 2)
			for (size_t i = 0; i < from; i++)
				fz_reg[r].p[i] = fz_expect(r, i);
	}
}

/*
 * Feed stream to a fresh QP and wait until its connection has ended. crc: MPA CRC
 * negotiated; ird: our IRD (0 is what an MPA rev 1 peer leaves).
 */
static void fz_conn_run(const uint8_t *stream, size_t len, bool crc, uint16_t ird)
{
	struct xt_closed_rec cl = XT_CLOSED_REC_INIT;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 4, .max_send_sge = 2,
			 .max_recv_sge = 2 },
	};
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .qp_access_flags = FZ_RW };
	struct sr_xport_attach ap = {
		.kind = SR_XPORT_IWARP,
		.cb = xt_closed_cb(&cl),
		.u.iwarp = {
			.initiator = false,
			.tuned = true,
			.mpa = { .crc = crc, .ird = ird, .ord = ird },
		},
	};
	uint64_t end = fz_now_ms() + FZ_END_MS;
	size_t sent = 0, have = 0;
	bool eof = false, fin = false;
	struct ibv_wc wc[8];
	int done[2] = { 0 };
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int q, peer, n;

	fz_new_secret();
	cq = ibv_create_cq(fz_ctx, 64, NULL, NULL, 0);
	CHECK(cq);
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(fz_pd[0], &ia);
	CHECK(qp);
	sr_qp_llp_claim(qp); /* the harness connects it, as the CM would */
	CHECK(ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS) == 0);
	qa.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(qp, &qa, IBV_QP_STATE) == 0);
	qa.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(qp, &qa, IBV_QP_STATE) == 0);
	for (int i = 0; i < 2; i++) {
		/* Local addresses are in the region's iova space, as for remote access. */
		struct ibv_sge sg = { .addr = FZ_IOVA(2) + (uint64_t)i * FZ_RECV_LEN,
				      .length = FZ_RECV_LEN, .lkey = fz_reg[2].mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sg, .num_sge = 1 };
		struct ibv_recv_wr *bad;

		CHECK(ibv_post_recv(qp, &wr, &bad) == 0);
	}
	fz_tcp_pair(&q, &peer);
	ap.u.iwarp.fd = q;
	CHECK(to_sr_ctx(fz_ctx)->priv_ops->attach(qp, &ap) == 0);

	/* Send everything, then FIN; read all the QP says until its end of stream. */
	while (!eof || !xt_closed_calls(&cl, NULL)) {
		struct pollfd p = { .fd = peer, .events = POLLIN | (fin ? 0 : POLLOUT) };
		ssize_t k;

		if (fz_now_ms() > end) {
			fprintf(stderr, "fuzz: the connection did not end within %d ms "
					"(%zu of %zu bytes sent, EOF %d, closed %d)\n",
				FZ_END_MS, sent, len, eof, xt_closed_calls(&cl, NULL));
			abort();
		}
		if (poll(&p, 1, 10) <= 0)
			continue;
		if (!fin && (p.revents & POLLOUT)) {
			k = sent < len ? send(peer, stream + sent, len - sent, MSG_NOSIGNAL) : 0;
			if (k > 0)
				sent += (size_t)k;
			if (sent == len || (k < 0 && errno != EAGAIN && errno != EINTR)) {
				shutdown(peer, SHUT_WR);
				fin = true;
			}
		}
		if (!eof && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
			k = recv(peer, fz_seen + have, fz_seen_cap - have, 0);
			if (k > 0)
				fz_seen_add(&have, (size_t)k);
			else if (k == 0 || (errno != EAGAIN && errno != EINTR))
				eof = true;
		}
		if (eof && !fin) { /* the QP ended the stream first: stop sending */
			shutdown(peer, SHUT_WR);
			fin = true;
		}
	}
	CHECK(xt_closed_calls(&cl, NULL) == 1);
	/* The QP is in ERR and flushed: each receive has completed, exactly once (no Sends
	 * are posted, so every completion is a receive's). */
	while ((n = ibv_poll_cq(cq, 8, wc)) > 0)
		for (int i = 0; i < n; i++) {
			CHECK(wc[i].wr_id < 2);
			done[wc[i].wr_id]++;
			if (wc[i].status == IBV_WC_SUCCESS)
				CHECK(wc[i].byte_len <= FZ_RECV_LEN);
		}
	CHECK(n == 0);
	if (done[0] != 1 || done[1] != 1) {
		fprintf(stderr, "fuzz: receives completed %d and %d times\n", done[0], done[1]);
		abort();
	}
	CHECK(ibv_destroy_qp(qp) == 0);
	CHECK(xt_closed_calls(&cl, NULL) == 1);
	CHECK(ibv_destroy_cq(cq) == 0);
	close(peer);
	/* Nothing of the connection holds a region any more: only the STag table's reference. */
	for (int r = 0; r < FZ_NREG; r++)
		CHECK(atomic_load(&sr_container_of(fz_reg[r].mr, struct sr_mr, ibmr)->refs) == 1);
	fz_check_regions();
}

#endif
