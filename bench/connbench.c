// SPDX-License-Identifier: MIT
/*
 * connbench: what a new connection costs before its first message is answered. Public
 * rdma_cm/verbs API only (the rdma_verbs.h helpers rdma_server/rdma_client use), so it runs
 * unchanged on softrdma and on rdma-core.
 *
 *   connbench -s [-a addr] [-p port]                 server: echoes two 8-byte Sends
 *   connbench -c [-a addr] [-p port] [-n count]      client: count connections, one by one
 *
 * Per connection the client times rdma_connect() until it returns (the connection is
 * established), then its first 8-byte Send until the echo is in (first message round trip:
 * includes any wait of the transport for the peer after the RTR), then a second one (an
 * established connection's round trip, for comparison). It prints the median and 90th
 * percentile of each in µs, and connections per second over the whole loop (setup, the two
 * exchanges, disconnect, teardown).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define MSG 8

static const char *g_role = "connbench";

#include "bench_util.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static struct rdma_addrinfo *lookup(const char *addr, const char *port, bool passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;

	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		die("rdma_getaddrinfo: %s", strerror(errno));
	return res;
}

static void qp_attr(struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->cap.max_send_wr = a->cap.max_recv_wr = 4;
	a->cap.max_send_sge = a->cap.max_recv_sge = 1;
	a->sq_sig_all = 1;
	a->qp_type = IBV_QPT_RC;
}

/* One Send of MSG bytes from buf and its completion. */
static void send_one(struct rdma_cm_id *id, uint8_t *buf, struct ibv_mr *mr)
{
	struct ibv_wc wc;

	if (rdma_post_send(id, NULL, buf, MSG, mr, 0))
		die("rdma_post_send: %s", strerror(errno));
	if (rdma_get_send_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
		die("send completion: %s", strerror(errno));
}

static void recv_one(struct rdma_cm_id *id)
{
	struct ibv_wc wc;

	if (rdma_get_recv_comp(id, &wc) <= 0 || wc.status != IBV_WC_SUCCESS)
		die("receive completion: %s", strerror(errno));
}

static void serve(const char *addr, const char *port)
{
	struct rdma_addrinfo *res = lookup(addr, port, true);
	struct rdma_cm_id *l, *id;
	struct ibv_qp_init_attr a;
	uint8_t buf[2 * MSG];

	qp_attr(&a);
	if (rdma_create_ep(&l, res, NULL, &a) || rdma_listen(l, 16))
		die("listen: %s", strerror(errno));
	for (;;) {
		struct ibv_mr *mr;

		if (rdma_get_request(l, &id))
			die("rdma_get_request: %s", strerror(errno));
		mr = rdma_reg_msgs(id, buf, sizeof(buf));
		if (!mr || rdma_post_recv(id, NULL, buf, MSG, mr) ||
		    rdma_post_recv(id, NULL, buf + MSG, MSG, mr) || rdma_accept(id, NULL))
			die("accept: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			recv_one(id);
			send_one(id, buf + i * MSG, mr);
		}
		rdma_disconnect(id);
		rdma_dereg_mr(mr);
		rdma_destroy_ep(id);
	}
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	printf("%-28s median %8.1f us   p90 %8.1f us\n", what, v[n / 2], v[(n * 9) / 10]);
}

static void dial(const char *addr, const char *port, int n)
{
	struct rdma_addrinfo *res = lookup(addr, port, false);
	double *setup = calloc((size_t)n, sizeof(double)), *first = calloc((size_t)n, sizeof(double));
	double *second = calloc((size_t)n, sizeof(double)), t0, t1, t2, t3, start;
	uint8_t sbuf[MSG] = "ping", rbuf[2 * MSG];

	if (!setup || !first || !second)
		die("calloc: %s", strerror(errno));
	start = now_us();
	for (int i = 0; i < n; i++) {
		struct ibv_qp_init_attr a;
		struct rdma_cm_id *id;
		struct ibv_mr *smr, *rmr;

		qp_attr(&a);
		if (rdma_create_ep(&id, res, NULL, &a))
			die("rdma_create_ep: %s", strerror(errno));
		smr = rdma_reg_msgs(id, sbuf, sizeof(sbuf));
		rmr = rdma_reg_msgs(id, rbuf, sizeof(rbuf));
		if (!smr || !rmr || rdma_post_recv(id, NULL, rbuf, MSG, rmr) ||
		    rdma_post_recv(id, NULL, rbuf + MSG, MSG, rmr))
			die("setup: %s", strerror(errno));
		t0 = now_us();
		if (rdma_connect(id, NULL))
			die("rdma_connect: %s", strerror(errno));
		t1 = now_us();
		send_one(id, sbuf, smr);
		recv_one(id);
		t2 = now_us();
		send_one(id, sbuf, smr);
		recv_one(id);
		t3 = now_us();
		setup[i] = t1 - t0;
		first[i] = t2 - t1;
		second[i] = t3 - t2;
		rdma_disconnect(id);
		rdma_dereg_mr(smr);
		rdma_dereg_mr(rmr);
		rdma_destroy_ep(id);
	}
	printf("%d connections, %.0f per second (setup, two round trips, teardown)\n", n,
	       n / ((now_us() - start) / 1e6));
	report("rdma_connect", setup, n);
	report("first message round trip", first, n);
	report("second message round trip", second, n);
	rdma_freeaddrinfo(res);
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1", *port = "18700";
	int opt, n = 200, mode = 0;

	while ((opt = getopt(argc, argv, "sca:p:n:")) != -1) {
		switch (opt) {
		case 's': mode = 's'; break;
		case 'c': mode = 'c'; break;
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'n': n = atoi(optarg); break;
		default: mode = 0; break;
		}
	}
	if (!mode || n <= 0) {
		fprintf(stderr, "usage: %s -s|-c [-a addr] [-p port] [-n count]\n", argv[0]);
		return 2;
	}
	if (mode == 's')
		serve(addr, port);
	else
		dial(addr, port, n);
	return 0;
}
