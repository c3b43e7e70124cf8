/* SPDX-License-Identifier: MIT */
/*
 * What the CM's unit tests share: bounded waits for events, a plain TCP peer on loopback
 * that speaks MPA frames by hand (the fake other side), and a bounded wait for a condition
 * the engine thread makes true. Every wait is bounded (CM_TEST_WAIT_MS) and fails the test
 * when it runs out. Include after <cmocka.h>.
 */
#ifndef CM_TEST_H
#define CM_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cm/cm_priv.h"

#define CM_TEST_WAIT_MS 10000

/* The next event on ch, within CM_TEST_WAIT_MS; fails the test otherwise. */
static inline struct rdma_cm_event *cm_test_next_event(struct rdma_event_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev = NULL;

	assert_int_equal(poll(&p, 1, CM_TEST_WAIT_MS), 1);
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	return ev;
}

/* The next event must be type; returns its status (the event is acked). */
static inline int cm_test_expect(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = cm_test_next_event(ch);
	int status = ev->status;

	if (ev->event != type)
		fail_msg("got %s (status %d), expected %s", rdma_event_str(ev->event), ev->status,
			 rdma_event_str(type));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	return status;
}

/* The next event must be type with private data pd; returns its status (acked). */
static inline int cm_test_expect_pd(struct rdma_event_channel *ch, enum rdma_cm_event_type type,
				    const char *pd)
{
	struct rdma_cm_event *ev = cm_test_next_event(ch);
	int status = ev->status;

	assert_int_equal(ev->event, type);
	assert_int_equal(ev->param.conn.private_data_len, strlen(pd));
	assert_memory_equal(ev->param.conn.private_data, pd, strlen(pd));
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	return status;
}

/* The id's state, read under the lock. */
static inline enum sr_cm_state cm_test_state(struct sr_cm_id *s)
{
	enum sr_cm_state st;

	pthread_mutex_lock(&sr_cm_lock);
	st = s->state;
	pthread_mutex_unlock(&sr_cm_lock);
	return st;
}

/* For cm_test_wait_locked: the id's (struct rdma_cm_id *arg) connection is a QP-less stream
 * that stream.c owns. */
static inline bool cm_test_stream_owned(void *arg)
{
	struct sr_cm_conn *c = to_sr_id(arg)->conn;

	return c && c->phase == SR_CONN_STREAM && c->ops->io == sr_cm_stream_io;
}

/* No event on ch for ms. */
static inline void cm_test_no_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	assert_int_equal(poll(&p, 1, ms), 0);
}

/* Poll cond(arg) under sr_cm_lock every millisecond until true, at most CM_TEST_WAIT_MS. */
static inline void cm_test_wait_locked(bool (*cond)(void *arg), void *arg)
{
	struct timespec ms = { .tv_nsec = 1000000 };

	for (int i = 0; i < CM_TEST_WAIT_MS; i++) {
		bool ok;

		pthread_mutex_lock(&sr_cm_lock);
		ok = cond(arg);
		pthread_mutex_unlock(&sr_cm_lock);
		if (ok)
			return;
		nanosleep(&ms, NULL);
	}
	fail_msg("condition not met within %d ms", CM_TEST_WAIT_MS);
}

static inline struct sockaddr_in cm_test_lo(uint16_t port_be)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = port_be,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	return a;
}

/* A plain listening TCP socket on 127.0.0.1; *port_be gets its port. */
static inline int cm_test_tcp_listen(uint16_t *port_be)
{
	struct sockaddr_in a = cm_test_lo(0);
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port_be = a.sin_port;
	return fd;
}

/* A blocking accept, bounded. */
static inline int cm_test_tcp_accept(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int fd;

	assert_int_equal(poll(&p, 1, CM_TEST_WAIT_MS), 1);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

/* A blocking TCP connection to 127.0.0.1:port_be. */
static inline int cm_test_tcp_connect(uint16_t port_be)
{
	struct sockaddr_in a = cm_test_lo(port_be);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Exactly len bytes from fd, bounded; returns what came before EOF (less than len). */
static inline size_t cm_test_read_n(int fd, void *buf, size_t len)
{
	size_t off = 0;

	while (off < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		assert_int_equal(poll(&p, 1, CM_TEST_WAIT_MS), 1);
		n = recv(fd, (uint8_t *)buf + off, len - off, 0);
		if (n == 0)
			break;
		assert_true(n > 0);
		off += (size_t)n;
	}
	return off;
}

/* The peer's end of the stream: EOF (not a reset, not data) within the bound. */
static inline void cm_test_expect_eof(int fd)
{
	uint8_t b;

	assert_int_equal(cm_test_read_n(fd, &b, 1), 0);
}

/*
 * One MPA frame from fd, as the peer sent it: its parameters and ULP private data (pd, at
 * most SR_MPA_PD_MAX bytes, *pd_len).
 */
static inline void cm_test_read_frame(int fd, bool expect_reply, struct sr_mpa_params *p,
				      uint8_t *pd, size_t *pd_len)
{
	uint8_t buf[SR_MPA_RR_HDR_LEN + SR_MPA_PD_MAX];
	struct sr_mpa_hdr_info hi;
	const uint8_t *ulp;
	size_t ulp_len;
	int n;

	assert_int_equal(cm_test_read_n(fd, buf, SR_MPA_RR_HDR_LEN), SR_MPA_RR_HDR_LEN);
	n = sr_mpa_parse_header(buf, expect_reply, &hi);
	assert_true(n >= 0);
	assert_int_equal(cm_test_read_n(fd, buf + SR_MPA_RR_HDR_LEN, (size_t)n), (size_t)n);
	assert_int_equal(sr_mpa_parse_pd(&hi, buf + SR_MPA_RR_HDR_LEN, (size_t)n, p, &ulp,
					 &ulp_len), 0);
	if (ulp_len) /* no private data: ulp may be NULL, which memcpy may not get */
		memcpy(pd, ulp, ulp_len);
	*pd_len = ulp_len;
}

/* A Request frame as our initiator builds one (rev 2, IRD/ORD 1, no p2p), with pd. */
static inline size_t cm_test_request(uint8_t *out, size_t cap, const char *pd)
{
	struct sr_mpa_local loc = { .ird = 1, .ord = 1 };
	struct sr_mpa_params req;
	ssize_t n;

	sr_mpa_request_params(&loc, &req);
	n = sr_mpa_build_frame(out, cap, &req, pd, pd ? strlen(pd) : 0);
	assert_true(n > 0);
	return (size_t)n;
}

/* Send all of buf (blocking socket). */
static inline void cm_test_send(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

#endif
