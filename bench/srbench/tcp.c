// SPDX-License-Identifier: MIT
/* The TCP baseline: its server (a thread beside the rdma_cm one) and its client side. */
#include "srbench.h"

/* ---- TCP baseline, server side ---------------------------------------------------------- */

/* All of len bytes, or 0 at EOF, -1 on error. With spin, busy-polls a non-blocking call
 * (the TCP counterpart of polling a CQ) instead of sleeping in the kernel. */
static int tcp_io(int fd, void *buf, size_t len, bool wr, bool spin)
{
	uint8_t *p = buf;
	int fl = spin ? MSG_DONTWAIT : wr ? 0 : MSG_WAITALL;

	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL | fl) : recv(fd, p, len, fl);

		bool again = spin && (errno == EAGAIN || errno == EWOULDBLOCK);

		if (n < 0 && (errno == EINTR || again))
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0; /* EOF */
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

static int tcp_full(int fd, void *buf, size_t len, bool wr)
{
	return tcp_io(fd, buf, len, wr, false);
}

static void tcp_nodelay(int fd)
{
	int one = 1;

	CHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
}

static void tcp_serve_one(int fd)
{
	struct tcp_hdr h;

	tcp_nodelay(fd);
	if (tcp_full(fd, &h, sizeof(h), false) != 1 || be32toh(h.magic) != SR_MAGIC)
		return;
	uint32_t op = be32toh(h.op), size = be32toh(h.size), ms = be32toh(h.duration_ms);
	bool spin = be32toh(h.flags) & TCP_F_BUSY;
	double cpu0 = cpu_s();

	if (op == OP_BYE) {
		if (opt.once)
			g_quit = 1;
		uint32_t ok = htobe32(1);

		tcp_full(fd, &ok, 4, true);
		return;
	}
	if (size < 1 || size > MAX_SIZE)
		return;
	uint8_t *buf = xmalloc(size), *first = xmalloc(size);

	if (op == OP_WRITE || op == OP_SEND) { /* client -> server stream until EOF */
		uint64_t count = 0;
		int r;

		while ((r = tcp_full(fd, buf, size, false)) == 1) {
			if (count++ == 0)
				memcpy(first, buf, size);
		}
		uint32_t ok = r == 0 && count > 0 &&
			      pattern_check(first, size, SEED_SEND_FIRST) < 0 &&
			      pattern_check(buf, size, SEED_SEND_LAST) < 0;
		uint32_t rep[4] = { htobe32(ok), 0, htobe32((uint32_t)(count >> 32)),
				    htobe32((uint32_t)count) };

		tcp_full(fd, rep, sizeof(rep), true);
	} else if (op == OP_READ) { /* server -> client stream for ms milliseconds */
		uint8_t *last = xmalloc(size);
		double end = now_s() + ms * 1e-3;

		pattern_fill(buf, size, SEED_SEND_FIRST);
		pattern_fill(last, size, SEED_SEND_LAST);
		bool firstmsg = true;

		for (;;) {
			bool fin = !firstmsg && now_s() >= end;

			if (tcp_full(fd, fin ? last : buf, size, true) != 1)
				break;
			if (fin)
				break;
			firstmsg = false;
		}
		shutdown(fd, SHUT_WR);
		while (recv(fd, buf, size, 0) > 0)
			;
		free(last);
	} else if (op == OP_LAT) { /* echo until EOF */
		while (tcp_io(fd, buf, size, false, spin) == 1)
			if (tcp_io(fd, buf, size, true, spin) != 1)
				break;
	}
	free(buf);
	free(first);
	if (opt.kv)
		printf("server impl=tcp op=%s size=%u cpu_s=%.6f\n", op_name[op], size,
		       cpu_s() - cpu0);
}

static int tcp_listen_fd = -1;

static void *tcp_server_thread(void *arg)
{
	for (;;) {
		int fd = accept(tcp_listen_fd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (g_quit)
				return NULL;
			fprintf(stderr, "%s: accept failed: errno %d (%s)\n", g_role, errno,
				strerror(errno));
			g_quit = 1;
			return NULL;
		}
		tcp_serve_one(fd);
		close(fd);
		if (g_quit)
			return NULL;
	}
	return NULL;
}

void tcp_server_start(const char *addr, int port)
{
	struct addrinfo *ai = resolve(addr, port, true);
	int one = 1;
	pthread_t th;

	CHECK(tcp_listen_fd = socket(ai->ai_family, SOCK_STREAM, 0));
	CHECK(setsockopt(tcp_listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	CHECK(bind(tcp_listen_fd, ai->ai_addr, ai->ai_addrlen));
	CHECK(listen(tcp_listen_fd, 8));
	freeaddrinfo(ai);
	CHECK_RET(pthread_create(&th, NULL, tcp_server_thread, NULL));
	pthread_detach(th);
}

void tcp_server_stop(void)
{
	close(tcp_listen_fd);
}

/* ---- TCP baseline, client side ---------------------------------------------------------- */

static int tcp_connect_hdr(enum op op, size_t size, uint32_t ms, uint32_t flags)
{
	int fd;

	CHECK(fd = socket(g_dst->ai_family, SOCK_STREAM, 0));
	struct sockaddr_storage ss;

	memcpy(&ss, g_dst->ai_addr, g_dst->ai_addrlen);
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)(opt.port + 1));
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)(opt.port + 1));
	CHECK(connect(fd, (struct sockaddr *)&ss, g_dst->ai_addrlen));
	tcp_nodelay(fd);
	struct tcp_hdr h = { htobe32(SR_MAGIC), htobe32(op), htobe32((uint32_t)size), htobe32(ms),
			     htobe32(flags) };

	if (tcp_full(fd, &h, sizeof(h), true) != 1)
		die("TCP baseline: send header failed: errno %d (%s)", errno, strerror(errno));
	return fd;
}

double cli_tcp_bw(enum op op, size_t size)
{
	uint8_t *buf = xmalloc(size), *last = xmalloc(size), *first = xmalloc(size);
	double t0, t1;
	uint64_t count = 0;
	int fd = tcp_connect_hdr(op, size, (uint32_t)(opt.duration * 1000), 0);

	if (op == OP_WRITE || op == OP_SEND) {
		pattern_fill(buf, size, SEED_SEND_FIRST);
		pattern_fill(last, size, SEED_SEND_LAST);
		t0 = now_s();
		double end = t0 + opt.duration;

		for (;;) {
			bool fin = count > 0 && now_s() >= end;

			if (tcp_full(fd, fin ? last : buf, size, true) != 1)
				die("TCP baseline %s %zu B: send failed: errno %d (%s)",
				    op_name[op], size, errno, strerror(errno));
			count++;
			if (fin)
				break;
		}
		CHECK(shutdown(fd, SHUT_WR));
		uint32_t rep[4];

		if (tcp_full(fd, rep, sizeof(rep), false) != 1)
			die("TCP baseline %s %zu B: no reply from the server: errno %d (%s)",
			    op_name[op], size, errno, strerror(errno));
		t1 = now_s();
		uint64_t got = (uint64_t)be32toh(rep[2]) << 32 | be32toh(rep[3]);

		if (!be32toh(rep[0]) || got != count)
			die("TCP baseline %s %zu B: server reports bad data or count (%llu of %llu)",
			    op_name[op], size, (unsigned long long)got,
			    (unsigned long long)count);
	} else { /* read: server -> client stream */
		int r;

		t0 = now_s();
		while ((r = tcp_full(fd, buf, size, false)) == 1)
			if (count++ == 0)
				memcpy(first, buf, size);
		t1 = now_s();
		if (r < 0)
			die("TCP baseline read %zu B: recv failed: errno %d (%s)", size, errno,
			    strerror(errno));
		if (!count || pattern_check(first, size, SEED_SEND_FIRST) >= 0 ||
		    pattern_check(buf, size, SEED_SEND_LAST) >= 0)
			die("TCP baseline read %zu B: wrong data in the first or last message", size);
	}
	close(fd);
	free(buf);
	free(last);
	free(first);
	fprintf(stderr, "  tcp  %-5s %8zu B: %llu messages, %.3f s\n", op_name[op], size,
		(unsigned long long)count, t1 - t0);
	g_msgs = count;
	g_secs = t1 - t0;
	return (double)count * (double)size / (t1 - t0) / 1e6;
}

struct tcp_lat {
	int fd;
	bool spin;
	uint8_t *pong;
};

static double tcp_round_trip(void *ctx, uint8_t *ping, size_t size, uint64_t seq, double t0)
{
	struct tcp_lat *t = ctx;

	if (tcp_io(t->fd, ping, size, true, t->spin) != 1 ||
	    tcp_io(t->fd, t->pong, size, false, t->spin) != 1)
		die("TCP baseline ping-pong failed: errno %d (%s)", errno, strerror(errno));
	if (memcmp(ping, t->pong, size) != 0)
		die("TCP baseline ping-pong: wrong echo");
	return now_s();
}

struct lat_result cli_tcp_lat(double *samples)
{
	bool spin = opt.spin_us > 0;
	size_t size = opt.lat_size;
	struct tcp_lat t = { tcp_connect_hdr(OP_LAT, size, 0, spin ? TCP_F_BUSY : 0), spin,
			     xmalloc(size) };
	uint8_t *ping = xmalloc(size);
	uint64_t n = lat_loop(samples, ping, size, tcp_round_trip, &t);

	close(t.fd);
	free(ping);
	free(t.pong);
	return lat_report("tcp", size, samples, n);
}

void cli_bye(void)
{
	int fd = tcp_connect_hdr(OP_BYE, 0, 0, 0);
	uint32_t ok;

	tcp_full(fd, &ok, 4, false);
	close(fd);
}
