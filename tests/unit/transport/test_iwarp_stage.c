// SPDX-License-Identifier: MIT
/*
 * The receive side's staging buffer (iwarp_rx.c), against a raw peer: many FPDUs taken from
 * one read, a stream cut at every byte across two reads (header, payload, trailer; staged and
 * direct payload), a held Send with more FPDUs staged behind it that go on after the post
 * without new socket input, a target deregistered while its FPDU sits in staging, a target
 * deregistered and unmapped while its payload is received in place (the CRC reads it inside
 * the bracket), and EOF right behind staged FPDUs (between them: orderly; inside one:
 * Terminate).
 */
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "xport_helpers.h"


/* Hold Sends without a receive for as long as it takes. */
static void hold_forever(struct raw_qp *t)
{
	struct ibv_qp_attr a = { .rnr_retry = 7, .min_rnr_timer = 12 };

	assert_int_equal(ibv_modify_qp(t->e.qp, &a, IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER), 0);
}

/* The next FPDU from the QP is a Terminate with this cause (etype < 0: any), then the end. */
static void expect_term(struct raw_qp *t, uint8_t layer, int etype, uint8_t ecode)
{
	struct sr_term_info got;

	assert_int_equal(raw_next(&t->r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t->r.seg.opcode, SR_RDMAP_OP_TERMINATE);
	assert_int_equal(sr_term_parse(t->r.fpdu + SR_FPDU_HDR_UNTAGGED,
				       t->r.seg.ulpdu_len - SR_DDP_UNTAGGED_HDR_LEN, &got),
			 0);
	assert_int_equal(got.cause.layer, layer);
	if (etype >= 0)
		assert_int_equal(got.cause.etype, etype);
	assert_int_equal(got.cause.ecode, ecode);
	raw_expect_end(&t->r);
	assert_true(wait_closed(&t->e) < 0);
	assert_int_equal(qp_state(&t->e), IBV_QPS_ERR);
}

/* ------------------------------------------------------------ many in one -- */

#define MANY 300

/* Hundreds of small Sends and Writes written at once: all placed, in order, every byte. */
static void t_many_in_one_read(void **s)
{
	struct raw_qp t;
	uint8_t *st = malloc(MANY * 128), *rbuf = calloc(MANY, 64), *mem = calloc(MANY, 64);
	uint8_t msg[64];
	struct ibv_mr *rmr, *mmr;
	struct ibv_wc wc[MANY];
	size_t l = 0;

	(void)s;
	raw_qp_up(&t);
	hold_forever(&t);
	rmr = ibv_reg_mr(t.e.pd, rbuf, MANY * 64, IBV_ACCESS_LOCAL_WRITE);
	mmr = ibv_reg_mr(t.e.pd, mem, MANY * 64, ACC_ALL);
	for (int i = 0; i < MANY; i++) {
		uint32_t len = 1 + (uint32_t)i % 64;

		if (i < EP_DEPTH)
			post_recv1(&t.e, (uint64_t)i, rbuf + i * 64, 64, rmr->lkey);
		fill(msg, len, (unsigned int)i);
		l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, (uint32_t)i + 1, 0, 0,
				   msg, len);
		l += fpdu_tagged(st + l, true, SR_RDMAP_OP_WRITE, true, mmr->rkey,
				 (uintptr_t)mem + (size_t)i * 64, msg, len);
	}
	/* more Sends than the receive queue holds: the rest are posted as completions come */
	xsend(t.peer, st, l);
	for (int got = 0; got < MANY; got++) {
		wait_wc(t.e.rcq, &wc[got], 1);
		assert_int_equal(wc[got].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[got].wr_id, got);
		assert_int_equal(wc[got].byte_len, 1 + got % 64);
		if (got + EP_DEPTH < MANY)
			post_recv1(&t.e, (uint64_t)(got + EP_DEPTH), rbuf + (got + EP_DEPTH) * 64, 64,
				   rmr->lkey);
	}
	for (int i = 0; i < MANY; i++) {
		uint32_t len = 1 + (uint32_t)i % 64;

		fill(msg, len, (unsigned int)i);
		assert_memory_equal(rbuf + i * 64, msg, len);
		assert_memory_equal(mem + i * 64, msg, len);
	}
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	assert_int_equal(ibv_dereg_mr(mmr), 0);
	raw_qp_down(&t);
	free(st);
	free(rbuf);
	free(mem);
}

/* ---------------------------------------------------------------- splits -- */

/*
 * A Send in two segments (payload 37 and 3: pads), a Write of `big` bytes to `stag`/`to` and a
 * Send of 5. *write_at: where the Write's FPDU starts.
 */
static size_t split_stream(uint8_t *out, size_t big, const uint8_t *data, uint32_t stag,
			   uint64_t to, size_t *write_at)
{
	size_t l = 0;

	l += fpdu_untagged(out + l, true, SR_RDMAP_OP_SEND, false, 1, 0, 0, data, 37);
	l += fpdu_untagged(out + l, true, SR_RDMAP_OP_SEND, true, 1, 37, 0, data + 37, 3);
	*write_at = l;
	l += fpdu_tagged(out + l, true, SR_RDMAP_OP_WRITE, true, stag, to, data, big);
	l += fpdu_untagged(out + l, true, SR_RDMAP_OP_SEND, true, 2, 0, 0, "tail!", 5);
	return l;
}

/* The stream of split_stream() written in two parts cut at `cut`, the second only once the
 * QP has read the first: everything must arrive whole. */
static void split_case(size_t big, size_t cut, const uint8_t *data)
{
	struct raw_qp t;
	uint8_t rbuf[128] = { 0 };
	uint8_t *mem = calloc(1, big), *stream = malloc(big + 256);
	struct ibv_mr *rmr, *mmr;
	struct ibv_wc wc[2];
	size_t len, w;

	raw_qp_up(&t);
	rmr = ibv_reg_mr(t.e.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	mmr = ibv_reg_mr(t.e.pd, mem, big, ACC_ALL);
	post_recv1(&t.e, 1, rbuf, 64, rmr->lkey);
	post_recv1(&t.e, 2, rbuf + 64, 64, rmr->lkey);
	len = split_stream(stream, big, data, mmr->rkey, (uintptr_t)mem, &w);
	assert_true(cut > 0 && cut < len);
	xsend(t.peer, stream, cut);
	raw_qp_drained(&t);
	xsend(t.peer, stream + cut, len - cut);
	wait_wc(t.e.rcq, wc, 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].byte_len, 40);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].byte_len, 5);
	assert_memory_equal(rbuf, data, 40);
	assert_memory_equal(rbuf + 64, "tail!", 5);
	/* the Write precedes the last Send: placed by the time it completes */
	assert_memory_equal(mem, data, big);
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	assert_int_equal(ibv_dereg_mr(mmr), 0);
	raw_qp_down(&t);
	free(mem);
	free(stream);
}

/* Small Write: every cut from the first byte to the last, all of it staged. */
static void t_split_every_byte(void **s)
{
	const size_t big = 21;
	uint8_t data[64], stream[256];
	size_t len, w;

	(void)s;
	fill(data, sizeof(data), 5);
	len = split_stream(stream, big, data, 0, 0, &w);
	for (size_t cut = 1; cut < len; cut++)
		split_case(big, cut, data);
}

/*
 * A Write of 40000 bytes: its payload is read straight into the region from where the rest
 * is large, staged where it is small. Cuts at every byte of the framing around it (the
 * Send before, its header, the first payload bytes, its trailer, the Send after), and
 * throughout its payload (both sides of the direct-read threshold).
 */
static void t_split_large_payload(void **s)
{
	const size_t big = 40000;
	uint8_t *data = malloc(big), *stream = malloc(big + 256);
	size_t len, w0, w1;

	(void)s;
	fill(data, big, 6);
	len = split_stream(stream, big, data, 0, 0, &w0);
	w1 = w0 + SR_FPDU_HDR_TAGGED + big; /* the Write's trailer */
	for (size_t cut = w0 - 8; cut < w0 + SR_FPDU_HDR_TAGGED + 4; cut++)
		split_case(big, cut, data);
	for (size_t cut = w0 + SR_FPDU_HDR_TAGGED + 4; cut < w1 - 8; cut += 997)
		split_case(big, cut, data);
	for (size_t cut = w1 - 8; cut < len; cut++)
		split_case(big, cut, data);
	free(data);
	free(stream);
}

/* ------------------------------------------------------------ held Send -- */

/*
 * Two Sends and a Write arrive together while no receive is posted: the first Send holds the
 * stream with everything staged behind it. The posts alone (no new bytes from the peer) must
 * bring all three in.
 */
static void t_held_send_staged_behind(void **s)
{
	struct raw_qp t;
	uint8_t st[512], rbuf[128] = { 0 }, mem[64] = { 0 }, msg[48];
	struct ibv_mr *rmr, *mmr;
	struct ibv_wc wc[2];
	size_t l = 0;

	(void)s;
	raw_qp_up(&t);
	hold_forever(&t);
	rmr = ibv_reg_mr(t.e.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	mmr = ibv_reg_mr(t.e.pd, mem, sizeof(mem), ACC_ALL);
	fill(msg, sizeof(msg), 7);
	l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, msg, 10);
	l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, 2, 0, 0, msg + 10, 20);
	l += fpdu_tagged(st + l, true, SR_RDMAP_OP_WRITE, true, mmr->rkey, (uintptr_t)mem, msg,
			 sizeof(msg));
	xsend(t.peer, st, l);
	raw_qp_drained(&t);
	assert_int_equal(ibv_poll_cq(t.e.rcq, 1, wc), 0);
	/* the QP has all of it and waits: nothing may be placed yet */
	assert_int_equal(mem[0], 0);
	post_recv1(&t.e, 1, rbuf, 64, rmr->lkey);
	wait_wc(t.e.rcq, wc, 1);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].byte_len, 10);
	/* the second Send holds again, staged: the Write behind it still waits */
	assert_int_equal(mem[0], 0);
	post_recv1(&t.e, 2, rbuf + 64, 64, rmr->lkey);
	wait_wc(t.e.rcq, wc + 1, 1);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].wr_id, 2);
	assert_int_equal(wc[1].byte_len, 20);
	assert_memory_equal(rbuf, msg, 10);
	assert_memory_equal(rbuf + 64, msg + 10, 20);
	/* the Write comes in behind the Send without another byte from the peer: wait for it */
	{
		uint64_t end = now_ms() + T_WAIT_MS;

		while (memcmp(mem, msg, sizeof(msg)) != 0 && now_ms() < end)
			usleep(200);
	}
	assert_memory_equal(mem, msg, sizeof(msg));
	assert_int_equal(closed_calls(&t.e, NULL), 0);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	assert_int_equal(ibv_dereg_mr(mmr), 0);
	raw_qp_down(&t);
}

/*
 * The target of a Write staged behind a held Send is deregistered before the Send's receive
 * is posted: the Send completes, the Write is refused as an invalid STag and not a byte of
 * the memory (reused by the application) changes.
 */
static void t_dereg_while_staged(void **s)
{
	struct raw_qp t;
	uint8_t st[512], rbuf[64] = { 0 }, msg[48], ref[256];
	uint8_t *mem = calloc(1, 256);
	struct ibv_mr *rmr, *mmr;
	struct ibv_wc wc;
	size_t l = 0;

	(void)s;
	raw_qp_up(&t);
	hold_forever(&t);
	rmr = ibv_reg_mr(t.e.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	mmr = ibv_reg_mr(t.e.pd, mem + 64, 64, ACC_ALL);
	fill(msg, sizeof(msg), 8);
	l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, msg, 10);
	l += fpdu_tagged(st + l, true, SR_RDMAP_OP_WRITE, true, mmr->rkey, (uintptr_t)mem + 64,
			 msg, sizeof(msg));
	xsend(t.peer, st, l);
	raw_qp_drained(&t);
	assert_int_equal(ibv_dereg_mr(mmr), 0);
	memset(mem, 0x5a, 256); /* the application reuses the memory */
	memcpy(ref, mem, 256);
	post_recv1(&t.e, 1, rbuf, 64, rmr->lkey);
	wait_wc(t.e.rcq, &wc, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 10);
	assert_memory_equal(rbuf, msg, 10);
	expect_term(&t, 1, 1, 0x00); /* DDP tagged buffer error, invalid STag */
	assert_memory_equal(mem, ref, 256);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	raw_qp_down(&t);
	free(mem);
}

/* ------------------------------------------------ unmapped under the CRC -- */

/*
 * The rest of a large payload is received straight into its region, and the CRC then reads
 * it there. Every touch of a region, that CRC included, runs between sr_mr_enter and
 * sr_mr_leave (docs/SECURITY.md): ibv_dereg_mr returns once no touch is in progress, and the
 * application may unmap the buffer right away. The CRC is wrapped here (the test links with
 * --wrap=sr_crc32c): when it is about to read the armed buffer, another thread deregisters
 * the region and unmaps it, and the CRC goes on once that thread is done, or once the
 * deregistration is seen waiting for the bracket the CRC runs in. A CRC outside the bracket
 * thus reads unmapped memory, every time: SIGSEGV.
 */
uint32_t __real_sr_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t __wrap_sr_crc32c(uint32_t crc, const void *buf, size_t len);

static struct {
	_Atomic(uint8_t *) base; /* the armed buffer (NULL: the wrapper only passes through) */
	size_t len;
	struct ibv_mr *mr;       /* its registration */
	atomic_int go;           /* the CRC reached it: deregister and unmap now */
	atomic_int done;         /* ... done (dereg_ret holds what ibv_dereg_mr returned) */
	atomic_int fired;
	atomic_int inside;       /* the region was entered when the CRC began */
	int dereg_ret;
} g_unmap;

uint32_t __wrap_sr_crc32c(uint32_t crc, const void *buf, size_t len)
{
	uint8_t *b = atomic_load(&g_unmap.base);
	const uint8_t *p = buf;

	if (b && p >= b && p < b + g_unmap.len && !atomic_exchange(&g_unmap.fired, 1)) {
		/* The transport holds a reference on the region: the struct outlives dereg. */
		struct sr_mr *mr = sr_container_of(g_unmap.mr, struct sr_mr, ibmr);
		uint64_t end = now_ms() + T_WAIT_MS;

		atomic_store(&g_unmap.inside, atomic_load(&mr->busy) > 0);
		atomic_store(&g_unmap.go, 1);
		while (!atomic_load(&g_unmap.done) &&
		       !(atomic_load(&mr->state) != SR_MR_LIVE && atomic_load(&mr->busy) > 0) &&
		       now_ms() < end)
			sched_yield();
	}
	return __real_sr_crc32c(crc, buf, len);
}

/* The application: deregister, then unmap at once, as soon as the CRC reaches the buffer. */
static void *unmapper(void *arg)
{
	uint64_t end = now_ms() + T_WAIT_MS;

	(void)arg;
	while (!atomic_load(&g_unmap.go) && now_ms() < end)
		usleep(100);
	if (atomic_load(&g_unmap.go)) {
		g_unmap.dereg_ret = ibv_dereg_mr(g_unmap.mr);
		munmap(atomic_load(&g_unmap.base), g_unmap.len);
	}
	atomic_store(&g_unmap.done, 1);
	return NULL;
}

enum inplace_kind { IP_WRITE, IP_SEND, IP_RRESP };

static void inplace_case(enum inplace_kind k)
{
	const size_t maplen = 65536, len = 60000; /* one FPDU; its rest goes in place */
	uint8_t *mem = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	uint8_t *data = malloc(len), *fp = malloc(len + 64);
	struct ibv_mr *mr;
	size_t fl = 0, hl = SR_FPDU_HDR_TAGGED;
	pthread_t th;
	struct raw_qp t;

	assert_true(mem != MAP_FAILED);
	assert_non_null(data);
	assert_non_null(fp);
	raw_qp_up(&t);
	fill(data, len, 40 + k);
	mr = ibv_reg_mr(t.e.pd, mem, maplen, ACC_ALL);
	assert_non_null(mr);
	switch (k) {
	case IP_WRITE:
		fl = fpdu_tagged(fp, true, SR_RDMAP_OP_WRITE, true, mr->rkey, (uintptr_t)mem, data,
				 len);
		break;
	case IP_SEND:
		post_recv1(&t.e, 1, mem, (uint32_t)maplen, mr->lkey);
		fl = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, data, len);
		hl = SR_FPDU_HDR_UNTAGGED;
		break;
	case IP_RRESP:
		post_send1(&t.e, 2, IBV_WR_RDMA_READ, 0, mem, (uint32_t)len, mr->lkey, 0x10000,
			   0x1234);
		assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
		assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_REQ);
		assert_int_equal(t.r.seg.rreq.size, len);
		fl = fpdu_tagged(fp, true, SR_RDMAP_OP_READ_RESP, true, t.r.seg.rreq.sink_stag,
				 t.r.seg.rreq.sink_to, data, len);
		break;
	}
	/* The header alone first: once the QP has taken it, nothing is staged and the whole
	 * payload is received in place. */
	xsend(t.peer, fp, hl);
	raw_qp_drained(&t);
	memset(&g_unmap, 0, sizeof(g_unmap));
	g_unmap.len = maplen;
	g_unmap.mr = mr;
	atomic_store(&g_unmap.base, mem);
	assert_int_equal(pthread_create(&th, NULL, unmapper, NULL), 0);
	xsend(t.peer, fp + hl, fl - hl);
	assert_int_equal(pthread_join(th, NULL), 0);
	atomic_store(&g_unmap.base, NULL);
	assert_int_equal(atomic_load(&g_unmap.fired), 1); /* the CRC read the region */
	assert_int_equal(atomic_load(&g_unmap.inside), 1);
	assert_int_equal(g_unmap.dereg_ret, 0);
	/* The payload's last byte is placed after the read in place (iwarp_rx.c): the region
	 * is gone by then, so the stream ends with a Terminate. */
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_TERMINATE);
	raw_expect_end(&t.r);
	assert_true(wait_closed(&t.e) < 0);
	raw_qp_down(&t);
	free(data);
	free(fp);
}

static void t_unmap_under_crc(void **s)
{
	(void)s;
	for (int round = 0; round < 3; round++) {
		inplace_case(IP_WRITE);
		inplace_case(IP_SEND);
		inplace_case(IP_RRESP);
	}
}

/* ------------------------------------------------------------------- EOF -- */

/* FPDUs and the peer's FIN in one go: all processed, then an orderly close. */
static void t_eof_after_staged(void **s)
{
	struct raw_qp t;
	uint8_t st[512], rbuf[64] = { 0 }, mem[64] = { 0 }, msg[48];
	struct ibv_mr *rmr, *mmr;
	struct ibv_wc wc[2];
	size_t l = 0;

	(void)s;
	raw_qp_up(&t);
	rmr = ibv_reg_mr(t.e.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	mmr = ibv_reg_mr(t.e.pd, mem, sizeof(mem), ACC_ALL);
	fill(msg, sizeof(msg), 9);
	post_recv1(&t.e, 1, rbuf, 32, rmr->lkey);
	post_recv1(&t.e, 2, rbuf + 32, 32, rmr->lkey);
	l += fpdu_tagged(st + l, true, SR_RDMAP_OP_WRITE, true, mmr->rkey, (uintptr_t)mem, msg,
			 sizeof(msg));
	l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, msg, 16);
	xsend(t.peer, st, l);
	shutdown(t.peer, SHUT_WR);
	assert_int_equal(wait_closed(&t.e), 0);
	wait_wc(t.e.rcq, wc, 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, 1);
	assert_int_equal(wc[0].byte_len, 16);
	assert_int_equal(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	assert_memory_equal(rbuf, msg, 16);
	assert_memory_equal(mem, msg, sizeof(msg));
	assert_false(wait_async(t.e.qp, IBV_EVENT_QP_FATAL, 50));
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	assert_int_equal(ibv_dereg_mr(mmr), 0);
	raw_qp_down(&t);
}

/* A whole Send and half of the next, then the FIN: the first completes, the stream dies
 * with "TCP connection lost" (MPA layer) and the second receive is flushed. */
static void t_eof_inside_staged(void **s)
{
	struct raw_qp t;
	uint8_t st[512], rbuf[64] = { 0 }, msg[48];
	struct ibv_mr *rmr;
	struct ibv_wc wc[2];
	size_t l = 0, l2;

	(void)s;
	raw_qp_up(&t);
	rmr = ibv_reg_mr(t.e.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	fill(msg, sizeof(msg), 10);
	post_recv1(&t.e, 1, rbuf, 32, rmr->lkey);
	post_recv1(&t.e, 2, rbuf + 32, 32, rmr->lkey);
	l += fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, msg, 16);
	l2 = fpdu_untagged(st + l, true, SR_RDMAP_OP_SEND, true, 2, 0, 0, msg + 16, 16);
	xsend(t.peer, st, l + l2 / 2);
	shutdown(t.peer, SHUT_WR);
	expect_term(&t, 2, -1, 0x01); /* MPA: TCP connection lost */
	wait_wc(t.e.rcq, wc, 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].byte_len, 16);
	assert_memory_equal(rbuf, msg, 16);
	assert_int_not_equal(wc[1].status, IBV_WC_SUCCESS);
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	raw_qp_down(&t);
}

struct chan_waiter {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int ret;
};

static void *chan_wait(void *arg)
{
	struct chan_waiter *w = arg;
	void *ctx;

	w->ret = ibv_get_cq_event(w->ch, &w->cq, &ctx);
	return NULL;
}

/*
 * A thread blocked in ibv_get_cq_event runs the receive as the engine's helper and makes two
 * completion events at once (a held Send's receive and a Read Response staged behind it, on
 * the two CQs of one channel). Its own events carry no eventfd count; it takes one, and the
 * other must get its count: the channel fd is readable while an event is queued.
 */
static void t_helper_events_two_cqs(void **s)
{
	struct raw_qp t;
	uint8_t rbuf[64], sink[32] = { 0 }, resp[32], msg[16], fp[256];
	struct chan_waiter w = { .ret = -2 };
	struct pollfd pfd;
	struct ibv_mr *rmr, *kmr;
	struct ibv_cq *second;
	struct ibv_wc wc;
	pthread_t th;
	uint64_t end;
	void *ctx;
	size_t l;

	(void)s;
	raw_qp_up(&t);
	hold_forever(&t);
	rmr = ibv_reg_mr(t.e.pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	kmr = ibv_reg_mr(t.e.pd, sink, sizeof(sink), IBV_ACCESS_LOCAL_WRITE);
	fill(resp, sizeof(resp), 5);
	fill(msg, sizeof(msg), 6);
	assert_int_equal(ibv_req_notify_cq(t.e.rcq, 0), 0);
	assert_int_equal(ibv_req_notify_cq(t.e.scq, 0), 0);
	post_send1(&t.e, 1, IBV_WR_RDMA_READ, 0, sink, sizeof(sink), kmr->lkey, 0x1000, 0x2222);
	assert_int_equal(raw_next(&t.r, NULL, 0, T_WAIT_MS), 0);
	assert_int_equal(t.r.seg.opcode, SR_RDMAP_OP_READ_REQ);
	/* a Send with no receive posted (held), the Read Response behind it */
	l = fpdu_untagged(fp, true, SR_RDMAP_OP_SEND, true, 1, 0, 0, msg, sizeof(msg));
	l += fpdu_tagged(fp + l, true, SR_RDMAP_OP_READ_RESP, true, kmr->lkey, (uintptr_t)sink,
			 resp, sizeof(resp));
	xsend(t.peer, fp, l);
	raw_qp_drained(&t);
	w.ch = t.e.ch;
	assert_int_equal(pthread_create(&th, NULL, chan_wait, &w), 0);
	end = now_ms() + T_WAIT_MS;
	while (!sr_engine_helper_active() && now_ms() < end)
		usleep(1000);
	assert_true(sr_engine_helper_active());
	/* the post resumes the held stream: both completions are made in the helping thread */
	post_recv1(&t.e, 2, rbuf, sizeof(rbuf), rmr->lkey);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.ret, 0);
	pfd = (struct pollfd){ .fd = t.e.ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, T_WAIT_MS), 1);
	assert_int_equal(ibv_get_cq_event(t.e.ch, &second, &ctx), 0);
	assert_true(second != w.cq);
	assert_true((w.cq == t.e.rcq && second == t.e.scq) ||
		    (w.cq == t.e.scq && second == t.e.rcq));
	/* nothing is left behind either: no count without an event */
	assert_int_equal(poll(&pfd, 1, 0), 0);
	ibv_ack_cq_events(t.e.rcq, 1);
	ibv_ack_cq_events(t.e.scq, 1);
	wait_wc(t.e.rcq, &wc, 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.byte_len, sizeof(msg));
	wait_wc(t.e.scq, &wc, 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(sink, resp, sizeof(resp));
	assert_int_equal(ibv_dereg_mr(rmr), 0);
	assert_int_equal(ibv_dereg_mr(kmr), 0);
	raw_qp_down(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_many_in_one_read),
		cmocka_unit_test(t_split_every_byte),
		cmocka_unit_test(t_split_large_payload),
		cmocka_unit_test(t_held_send_staged_behind),
		cmocka_unit_test(t_dereg_while_staged),
		cmocka_unit_test(t_unmap_under_crc),
		cmocka_unit_test(t_eof_after_staged),
		cmocka_unit_test(t_eof_inside_staged),
		cmocka_unit_test(t_helper_events_two_cqs),
	};

	return cmocka_run_group_tests(tests, grp_setup, grp_teardown);
}
