// SPDX-License-Identifier: MIT
/*
 * The client side of the RoCE demultiplexer without a daemon: QPN allocation inside blocks
 * (next-fit, a new block when full, an emptied block given back), the receive filter and the
 * death notification. The "daemon" is the test itself on the other end of two socketpairs:
 * a reply is queued before the request that reads it, and the request is read afterwards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "roce_demux/rdx_client.h"

struct fake {
	struct sr_rdx *x;
	int ctl;   /* the daemon's end of the control channel */
	int data;  /* the daemon's end of the data channel */
	int deaths;
};

static void on_dead(void *arg)
{
	((struct fake *)arg)->deaths++;
}

static int setup(void **state)
{
	static struct fake f;
	int c[2], d[2];

	memset(&f, 0, sizeof(f));
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, c), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, d), 0);
	f.x = calloc(1, sizeof(*f.x));
	f.x->ctl = c[0];
	f.x->data = d[0];
	f.x->dead = on_dead;
	f.x->arg = &f;
	pthread_mutex_init(&f.x->lock, NULL);
	f.ctl = c[1];
	f.data = d[1];
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fake *f = *state;

	sr_rdx_close(f->x);
	if (f->ctl >= 0)
		close(f->ctl);
	close(f->data);
	return 0;
}

/* Queue the daemon's reply to the next request. */
static void reply(struct fake *f, enum rdx_op op, int status, uint32_t arg)
{
	struct rdx_msg m = { .op = op, .status = status, .arg = arg };

	assert_int_equal(rdx_send(f->ctl, &m, -1), 0);
}

/* The request the client sent. */
static struct rdx_msg request(struct fake *f)
{
	struct rdx_msg m;

	assert_int_equal(rdx_recv(f->ctl, &m, NULL, 1000), 0);
	return m;
}

static void no_request(struct fake *f)
{
	struct rdx_msg m;

	assert_int_equal(rdx_recv(f->ctl, &m, NULL, 0), -ETIMEDOUT);
}

static void test_blocks(void **state)
{
	struct fake *f = *state;
	uint32_t q;

	reply(f, RDX_BLOCK_ALLOC, 0, 5);
	for (uint32_t i = 0; i < RDX_BLOCK_QPNS; i++) {
		assert_int_equal(sr_rdx_qpn_alloc(f->x, &q), 0);
		assert_int_equal(q, 5u << 8 | i);
		if (i == 0)
			assert_int_equal(request(f).op, RDX_BLOCK_ALLOC);
		else
			no_request(f); /* inside the block: no round trip */
	}
	reply(f, RDX_BLOCK_ALLOC, 0, 9);
	assert_int_equal(sr_rdx_qpn_alloc(f->x, &q), 0);
	assert_int_equal(q, 9u << 8);
	assert_int_equal(request(f).op, RDX_BLOCK_ALLOC);
	assert_true(rdx_qpn_held(f->x, 0x5FF));
	assert_true(rdx_qpn_held(f->x, 0x900));
	assert_false(rdx_qpn_held(f->x, 0x901));

	/* block 9 emptied while block 5 remains: it goes back */
	reply(f, RDX_BLOCK_FREE, 0, 0);
	assert_int_equal(sr_rdx_qpn_free(f->x, 0x900), 0);
	{
		struct rdx_msg m = request(f);

		assert_int_equal(m.op, RDX_BLOCK_FREE);
		assert_int_equal(m.arg, 9);
	}
	assert_false(rdx_qpn_held(f->x, 0x900));
	/* the last block stays with us, even empty */
	for (uint32_t i = 0; i < RDX_BLOCK_QPNS; i++)
		assert_int_equal(sr_rdx_qpn_free(f->x, 5u << 8 | i), 0);
	no_request(f);
	assert_int_equal(f->x->nblocks, 1);
}

static void test_next_fit(void **state)
{
	struct fake *f = *state;
	uint32_t q[3], r;

	reply(f, RDX_BLOCK_ALLOC, 0, 7);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sr_rdx_qpn_alloc(f->x, &q[i]), 0);
	request(f);
	assert_int_equal(sr_rdx_qpn_free(f->x, q[1]), 0);
	assert_int_equal(sr_rdx_qpn_alloc(f->x, &r), 0);
	assert_int_equal(r, q[2] + 1); /* not the one just freed */
	assert_int_equal(sr_rdx_qpn_free(f->x, q[1]), -EINVAL);    /* twice */
	assert_int_equal(sr_rdx_qpn_free(f->x, 0x123456), -EINVAL); /* not our block */
	no_request(f);
}

static void test_no_block(void **state)
{
	struct fake *f = *state;
	uint32_t q;

	reply(f, RDX_BLOCK_ALLOC, -ENOSPC, 0);
	assert_int_equal(sr_rdx_qpn_alloc(f->x, &q), -ENOSPC);
	request(f);
	assert_int_equal(f->deaths, 0);
}

/* One datagram as the daemon writes it. */
static void put(struct fake *f, uint32_t qpn, size_t len)
{
	uint8_t p[32] = { 0x04, 0, 0xff, 0xff, 0, (uint8_t)(qpn >> 16), (uint8_t)(qpn >> 8),
			  (uint8_t)qpn };
	struct rdx_meta m = { .family = AF_INET, .len = (uint32_t)len };
	struct iovec iov[2] = { { &m, sizeof(m) }, { p, len } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	assert_int_equal(sendmsg(f->data, &mh, 0), (ssize_t)(sizeof(m) + len));
}

static void test_recv_filter(void **state)
{
	struct fake *f = *state;
	struct rdx_meta m;
	uint8_t buf[64];
	uint32_t q;

	reply(f, RDX_BLOCK_ALLOC, 0, 3);
	assert_int_equal(sr_rdx_qpn_alloc(f->x, &q), 0);
	request(f);
	put(f, q + 1, 20);         /* our block, not allocated */
	put(f, q, 20);
	put(f, RDX_QPN_GSI, 24);   /* QP1: the daemon sends it only after a join */
	put(f, q, 8);              /* shorter than a BTH */
	assert_int_equal(sr_rdx_recv(f->x, &m, buf, sizeof(buf)), 20);
	assert_int_equal(buf[7], q & 0xff);
	assert_int_equal(sr_rdx_recv(f->x, &m, buf, sizeof(buf)), 24);
	assert_int_equal(sr_rdx_recv(f->x, &m, buf, sizeof(buf)), -EAGAIN);
	assert_int_equal(sr_rdx_dropped(f->x), 2);
	put(f, q, 20);
	assert_int_equal(sr_rdx_recv(f->x, &m, buf, 16), -EAGAIN); /* too long for buf */
	assert_int_equal(sr_rdx_dropped(f->x), 3);
	assert_int_equal(f->deaths, 0);
}

static void test_death(void **state)
{
	struct fake *f = *state;
	struct rdx_meta m;
	uint8_t buf[64];
	uint32_t q;

	reply(f, RDX_BLOCK_ALLOC, 0, 4);
	assert_int_equal(sr_rdx_qpn_alloc(f->x, &q), 0);
	request(f);
	put(f, q, 20);
	close(f->ctl);
	f->ctl = -1;
	shutdown(f->data, SHUT_WR);
	/* what came before the death is still read, then the death, once */
	assert_int_equal(sr_rdx_recv(f->x, &m, buf, sizeof(buf)), 20);
	assert_int_equal(sr_rdx_recv(f->x, &m, buf, sizeof(buf)), -EPIPE);
	assert_int_equal(f->deaths, 1);
	assert_int_equal(sr_rdx_qpn_alloc(f->x, &q), -EPIPE);
	assert_int_equal(sr_rdx_gsi(f->x, true), -EPIPE);
	assert_int_equal(sr_rdx_recv(f->x, &m, buf, sizeof(buf)), -EPIPE);
	assert_int_equal(f->deaths, 1);
}

/* A request to a daemon that closed: the death is noticed there too. */
static void test_death_in_request(void **state)
{
	struct fake *f = *state;
	uint64_t st[RDX_ST_COUNT];

	close(f->ctl);
	f->ctl = -1;
	assert_int_equal(sr_rdx_stats(f->x, st), -EPIPE);
	assert_int_equal(f->deaths, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_next_fit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_block, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recv_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_death, setup, teardown),
		cmocka_unit_test_setup_teardown(test_death_in_request, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
