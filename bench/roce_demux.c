// SPDX-License-Identifier: MIT
/*
 * What softrdma-roced adds per datagram (docs/PERFORMANCE.md, "Soft RoCE demultiplexer"):
 * UDP ping-pong on loopback, direct and through the demultiplexer, interleaved in one run.
 *
 *   direct: client socket -> echo -> client socket
 *   demux:  client socket -> echo -> UDP port of softrdma-roced -> unix channel -> client
 * Both paths have two UDP sends; the demux path adds the daemon's wakeup, its receive and
 * its send on the client's channel. The difference of the medians is that cost.
 *
 *   roce_demux [-n iterations] [-s bytes] [-c cpu]
 * -c pins the client, the echo and the daemon (which inherits the mask) to one CPU.
 * SOFTRDMA_ROCE_UDP_PORT picks another port than 4791 (the host's may be taken);
 * SOFTRDMA_ROCED the daemon (default: build/lib/softrdma-roced next to this binary's lib).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "roce_demux/sr_rdx.h"

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of a process so far (ns): the first field of /proc/PID/schedstat. */
static uint64_t cpu_ns(pid_t pid)
{
	char path[64];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int udp_lo(struct sockaddr_in *a)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	socklen_t len = sizeof(*a);

	*a = (struct sockaddr_in){ .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (s < 0 || bind(s, (struct sockaddr *)a, sizeof(*a)) < 0 ||
	    getsockname(s, (struct sockaddr *)a, &len) < 0)
		die("udp socket");
	return s;
}

/* Echo: byte 12 of the payload (after the BTH) says where the answer goes. */
static void echo(int s, unsigned int roce_port)
{
	static uint8_t buf[65536];
	struct sockaddr_in roce = { .sin_family = AF_INET, .sin_port = htons((uint16_t)roce_port),
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);

		if (n < 13)
			continue;
		if (buf[12])
			sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&roce, sizeof(roce));
		else
			sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
	}
}

static void wait_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 5000) != 1) {
		fprintf(stderr, "no answer within 5 s\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	int n = 20000, size = 64, cpu = -1, o, c, e_s;
	struct sockaddr_in ea, ca;
	struct sr_rdx *x;
	char why[256];
	uint32_t qpn;
	uint8_t *buf, *rbuf;
	uint64_t *rtt[2];
	pid_t echo_pid;
	uint64_t d_cpu0 = 0, d_cpu, e_cpu0 = 0, e_cpu;
	const char *p = getenv("SOFTRDMA_ROCE_UDP_PORT");
	unsigned int port = p ? (unsigned int)atoi(p) : RDX_ROCE_PORT;

	while ((o = getopt(argc, argv, "n:s:c:")) != -1) {
		if (o == 'n')
			n = atoi(optarg);
		else if (o == 's')
			size = atoi(optarg);
		else if (o == 'c')
			cpu = atoi(optarg);
		else
			return 2;
	}
	if (n < 100 || size < 16 || size > 8192)
		return 2;
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			die("sched_setaffinity");
	}
	if (sr_rdx_open(&x, NULL, NULL, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s\n", why);
		return 1;
	}
	if (sr_rdx_qpn_alloc(x, &qpn) < 0)
		die("qpn");
	e_s = udp_lo(&ea);
	c = udp_lo(&ca);
	echo_pid = fork();
	if (echo_pid == 0)
		echo(e_s, port);
	close(e_s);
	buf = calloc(1, (size_t)size);
	rbuf = malloc(65536);
	rtt[0] = calloc((size_t)n, sizeof(uint64_t));
	rtt[1] = calloc((size_t)n, sizeof(uint64_t));
	/* a BTH to our QPN */
	buf[0] = 0x04;
	buf[2] = buf[3] = 0xff;
	buf[5] = (uint8_t)(qpn >> 16);
	buf[6] = (uint8_t)(qpn >> 8);
	buf[7] = (uint8_t)qpn;
	/* interleaved blocks of 100, after a warm-up, so both paths see the same machine */
	for (int i = -1000; i < n; i += 100) {
		if (i == 0) {
			d_cpu0 = cpu_ns(sr_rdx_daemon_pid(x));
			e_cpu0 = cpu_ns(echo_pid);
		}
		for (int mode = 0; mode < 2; mode++) {
			buf[12] = (uint8_t)mode;
			for (int k = 0; k < 100; k++) {
				struct rdx_meta m;
				uint64_t t0 = now_ns();
				ssize_t r;

				if (sendto(c, buf, (size_t)size, 0, (struct sockaddr *)&ea,
					   sizeof(ea)) != size)
					die("sendto");
				if (mode == 0) {
					wait_in(c);
					r = recv(c, rbuf, 65536, 0);
				} else {
					do {
						wait_in(sr_rdx_fd(x));
						r = sr_rdx_recv(x, &m, rbuf, 65536);
					} while (r == -EAGAIN);
				}
				if (r != size) {
					fprintf(stderr, "answer of %zd bytes\n", r);
					return 1;
				}
				if (i + k >= 0 && i + k < n)
					rtt[mode][i + k] = now_ns() - t0;
			}
		}
	}
	/* the daemon forwarded exactly n datagrams since d_cpu0 (nothing else runs there) */
	d_cpu = cpu_ns(sr_rdx_daemon_pid(x)) - d_cpu0;
	/* the echo answered 2n: its CPU per datagram is the yardstick of this machine now */
	e_cpu = cpu_ns(echo_pid) - e_cpu0;
	kill(echo_pid, SIGKILL);
	waitpid(echo_pid, NULL, 0);
	sr_rdx_close(x);
	printf("| bytes | cpu | direct median | direct p99 | demux median | demux p99 | added (medians) | daemon CPU per datagram | echo CPU per datagram |\n");
	qsort(rtt[0], (size_t)n, sizeof(uint64_t), cmp_u64);
	qsort(rtt[1], (size_t)n, sizeof(uint64_t), cmp_u64);
	printf("| %d | %s | %.1f µs | %.1f µs | %.1f µs | %.1f µs | %.1f µs | %.2f µs | %.2f µs |\n", size,
	       cpu >= 0 ? "one" : "any", rtt[0][n / 2] / 1e3, rtt[0][n * 99 / 100] / 1e3,
	       rtt[1][n / 2] / 1e3, rtt[1][n * 99 / 100] / 1e3,
	       ((double)rtt[1][n / 2] - (double)rtt[0][n / 2]) / 1e3, (double)d_cpu / n / 1e3,
	       (double)e_cpu / (2.0 * n) / 1e3);
	free(buf);
	free(rbuf);
	free(rtt[0]);
	free(rtt[1]);
	return 0;
}
