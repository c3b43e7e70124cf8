// SPDX-License-Identifier: MIT
/*
 * The RoCE demultiplexer through its client API (src/roce_demux/sr_rdx.h), one scenario per
 * mode; roce_demux.sh runs each in a fresh network namespace. Datagrams are forged BTHs
 * sent from a plain UDP socket to the loopback addresses, as a remote peer's would arrive.
 *
 *   rdx_test deliver N   N processes start at once: one daemon; each gets its own QPNs and
 *                        exactly its datagrams; the rest is dropped and counted
 *   rdx_test kill        the daemon killed: the client is told, a new open starts another;
 *                        a stopped one: a request gives up after 5 s, also a death
 *   rdx_test linger      the daemon stays SOFTRDMA_ROCED_LINGER_MS after its last client
 *   rdx_test hold        open, print "READY <daemon pid>", close at EOF on stdin
 *   rdx_test refused UID expect -EACCES naming UID, from the client and from the daemon
 *   rdx_test error ERRNO WORD   expect sr_rdx_open to fail with ERRNO, naming WORD
 * Every wait is for an event, bounded; exit 0 = pass.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "roce_demux/sr_rdx.h"

#define FAIL(...)                                                  \
	do {                                                       \
		fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                      \
		fprintf(stderr, "\n");                             \
		exit(1);                                           \
	} while (0)
#define CHECK(c, ...)                  \
	do {                                \
		if (!(c))                   \
			FAIL(__VA_ARGS__);  \
	} while (0)

enum { PER_QPN = 20, WAIT_MS = 10000 };

static unsigned int port(void)
{
	const char *p = getenv("SOFTRDMA_ROCE_UDP_PORT");

	return p ? (unsigned int)atoi(p) : RDX_ROCE_PORT;
}

static struct sr_rdx *open_or_die(sr_rdx_dead_fn fn, void *arg)
{
	struct sr_rdx *x;
	char why[256];
	int e = sr_rdx_open(&x, fn, arg, why, sizeof(why));

	CHECK(e == 0, "sr_rdx_open: %s (%s)", strerror(-e), why);
	return x;
}

/* A BTH (RC SEND Only to qpn, PSN seq) and 8 bytes: the QPN and seq again. */
static void forge(int s, int family, uint32_t qpn, uint32_t seq, size_t len)
{
	uint8_t p[20] = { 0x04, 0, 0xff, 0xff, 0, (uint8_t)(qpn >> 16), (uint8_t)(qpn >> 8),
			  (uint8_t)qpn, 0, (uint8_t)(seq >> 16), (uint8_t)(seq >> 8), (uint8_t)seq };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port()),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port()),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	uint32_t q = htonl(qpn), sq = htonl(seq);
	ssize_t n;

	memcpy(p + 12, &q, 4);
	memcpy(p + 16, &sq, 4);
	if (family == AF_INET)
		n = sendto(s, p, len, 0, (struct sockaddr *)&a4, sizeof(a4));
	else
		n = sendto(s, p, len, 0, (struct sockaddr *)&a6, sizeof(a6));
	CHECK(n == (ssize_t)len, "sendto: %s", strerror(errno));
}

/* The next datagram within WAIT_MS; its DestQP and PSN. */
static ssize_t next(struct sr_rdx *x, struct rdx_meta *m, uint8_t *buf, size_t len)
{
	for (;;) {
		struct pollfd p = { .fd = sr_rdx_fd(x), .events = POLLIN };
		ssize_t n = sr_rdx_recv(x, m, buf, len);

		if (n != -EAGAIN)
			return n;
		CHECK(poll(&p, 1, WAIT_MS) == 1, "no datagram within %d ms", WAIT_MS);
	}
}

static uint32_t bth_qpn(const uint8_t *b)
{
	return (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
}

static uint32_t bth_psn(const uint8_t *b)
{
	return (uint32_t)b[9] << 16 | (uint32_t)b[10] << 8 | b[11];
}

/* The daemon's exit within bound_ms, seen through a pidfd (it is not our child). */
static void wait_exit(pid_t pid, int bound_ms)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd p;

	if (fd < 0 && errno == ESRCH)
		return;
	CHECK(fd >= 0, "pidfd_open: %s", strerror(errno));
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	CHECK(poll(&p, 1, bound_ms) == 1, "softrdma-roced %d still runs after %d ms", pid,
	      bound_ms);
	close(fd);
}

struct child_report {
	pid_t daemon;
	uint32_t qpn[3]; /* two held, the third freed */
};

/*
 * One client process: start (or find) the daemon when `go` closes, take three QPNs, free
 * the third, report; then read until the END datagram (PSN 0xFFFFFF) of each held QPN
 * and check that exactly its datagrams came, in order, with their metadata.
 */
static void deliver_child(int go, int rep, uint16_t sport4, uint16_t sport6)
{
	struct child_report r;
	struct sr_rdx *x;
	struct rdx_meta m;
	uint8_t buf[256];
	unsigned int got[2] = { 0, 0 }, ends = 0;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	CHECK(read(go, &c, 1) == 0, "barrier");
	x = open_or_die(NULL, NULL);
	r.daemon = sr_rdx_daemon_pid(x);
	for (int i = 0; i < 3; i++)
		CHECK(sr_rdx_qpn_alloc(x, &r.qpn[i]) == 0, "qpn_alloc");
	CHECK(r.qpn[0] >> 8 != 0 && r.qpn[0] >> 8 != 0xFFFF, "QPN %#x in a reserved block",
	      r.qpn[0]);
	CHECK(sr_rdx_qpn_free(x, r.qpn[2]) == 0, "qpn_free");
	CHECK(sr_rdx_qpn_free(x, r.qpn[2]) == -EINVAL, "double free accepted");
	CHECK(write(rep, &r, sizeof(r)) == sizeof(r), "report");
	while (ends < 2) {
		ssize_t n = next(x, &m, buf, sizeof(buf));
		uint32_t q, psn;
		int k;

		CHECK(n == 20, "datagram of %zd bytes", n);
		q = bth_qpn(buf);
		psn = bth_psn(buf);
		k = q == r.qpn[0] ? 0 : q == r.qpn[1] ? 1 : -1;
		CHECK(k >= 0, "datagram for QPN %#x, ours are %#x %#x", q, r.qpn[0], r.qpn[1]);
		if (psn == 0xFFFFFF) {
			CHECK(got[k] == PER_QPN, "QPN %#x: %u datagrams before END", q, got[k]);
			ends++;
			continue;
		}
		CHECK(psn == got[k], "QPN %#x: PSN %u, expected %u", q, psn, got[k]);
		/* the metadata: family, source port of the sender, addresses in GID form
		 * (the first QPN gets IPv4, the second IPv6) */
		if (k == 0) {
			static const uint8_t lo4[16] = { [10] = 0xff, [11] = 0xff, [12] = 127,
							 [15] = 1 };

			CHECK(m.family == AF_INET && m.src_port == sport4 &&
			      !memcmp(m.src, lo4, 16) && !memcmp(m.dst, lo4, 16) &&
			      m.hop_limit == 64 && m.dst_port == port(), "IPv4 metadata");
		} else {
			CHECK(m.family == AF_INET6 && m.src_port == sport6 &&
			      !memcmp(m.src, &in6addr_loopback, 16) &&
			      !memcmp(m.dst, &in6addr_loopback, 16) && m.hop_limit == 64,
			      "IPv6 metadata");
		}
		got[k]++;
	}
	/* the freed QPN's datagrams reached us (our block) and were dropped here */
	CHECK(sr_rdx_dropped(x) == 3, "%llu dropped by the client, expected 3",
	      (unsigned long long)sr_rdx_dropped(x));
	sr_rdx_close(x);
	exit(0);
}

static int bound_udp(int family, uint16_t *sport)
{
	int s = socket(family, SOCK_DGRAM, 0);
	struct sockaddr_in6 a = { 0 };
	socklen_t len = sizeof(a);

	CHECK(s >= 0, "socket");
	a.sin6_family = (sa_family_t)family;
	CHECK(bind(s, (struct sockaddr *)&a, family == AF_INET ? sizeof(struct sockaddr_in) :
			sizeof(a)) == 0, "bind");
	getsockname(s, (struct sockaddr *)&a, &len);
	*sport = ntohs(a.sin6_port);
	return s;
}

static int mode_deliver(int n)
{
	int go[2], rep[2], s4, s6, st;
	uint16_t p4, p6;
	struct child_report r[16];
	pid_t kid[16];
	struct sr_rdx *x;
	uint64_t c[RDX_ST_COUNT];

	CHECK(n >= 2 && n <= 16, "N");
	s4 = bound_udp(AF_INET, &p4);
	s6 = bound_udp(AF_INET6, &p6);
	CHECK(pipe(go) == 0 && pipe(rep) == 0, "pipe");
	for (int i = 0; i < n; i++) {
		kid[i] = fork();
		CHECK(kid[i] >= 0, "fork");
		if (kid[i] == 0) {
			close(go[1]);
			close(rep[0]);
			deliver_child(go[0], rep[1], p4, p6);
		}
	}
	close(go[0]);
	close(rep[1]);
	close(go[1]); /* all start at once */
	for (int i = 0; i < n; i++)
		CHECK(read(rep[0], &r[i], sizeof(r[i])) == sizeof(r[i]), "child report");
	for (int i = 0; i < n; i++) {
		CHECK(r[i].daemon == r[0].daemon, "two daemons: %d and %d", r[0].daemon,
		      r[i].daemon);
		for (int j = 0; j < i; j++)
			for (int a = 0; a < 2; a++)
				for (int b = 0; b < 2; b++)
					CHECK(r[i].qpn[a] != r[j].qpn[b], "QPN %#x twice",
					      r[i].qpn[a]);
	}
	/* ours after theirs: it must find the running daemon */
	x = open_or_die(NULL, NULL);
	CHECK(sr_rdx_daemon_pid(x) == r[0].daemon, "the parent reached another daemon");
	/* the first QPN of each over IPv4, the second over IPv6: one socket keeps order */
	for (uint32_t k = 0; k < PER_QPN; k++)
		for (int i = 0; i < n; i++) {
			forge(s4, AF_INET, r[i].qpn[0], k, 20);
			forge(s6, AF_INET6, r[i].qpn[1], k, 20);
		}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			forge(s4, AF_INET, r[i].qpn[2], k, 20);  /* freed: client drops */
	for (int k = 0; k < 4; k++)
		forge(k % 2 ? s6 : s4, k % 2 ? AF_INET6 : AF_INET, 0xFFFE05, k, 20); /* nobody's */
	forge(s4, AF_INET, 0, 0, 20);                /* QPN 0: dropped */
	forge(s4, AF_INET, RDX_QPN_GSI, 0, 20);      /* QP1, nobody joined: dropped */
	forge(s6, AF_INET6, RDX_QPN_MCAST, 0, 20);   /* multicast: counted, TODO */
	forge(s4, AF_INET, r[0].qpn[0], 0, 11);      /* shorter than a BTH */
	for (int i = 0; i < n; i++) {
		forge(s4, AF_INET, r[i].qpn[0], 0xFFFFFF, 20);
		forge(s6, AF_INET6, r[i].qpn[1], 0xFFFFFF, 20);
	}
	for (int i = 0; i < n; i++) {
		CHECK(waitpid(kid[i], &st, 0) == kid[i], "waitpid");
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d failed", i);
	}
	CHECK(sr_rdx_stats(x, c) == 0, "stats");
	printf("rx %llu delivered %llu no_owner %llu short %llu full %llu mcast %llu\n",
	       (unsigned long long)c[RDX_ST_RX], (unsigned long long)c[RDX_ST_DELIVERED],
	       (unsigned long long)c[RDX_ST_NO_OWNER], (unsigned long long)c[RDX_ST_SHORT],
	       (unsigned long long)c[RDX_ST_FULL], (unsigned long long)c[RDX_ST_MCAST]);
	CHECK(c[RDX_ST_DELIVERED] == (uint64_t)n * (2 * (PER_QPN + 1) + 3), "delivered");
	CHECK(c[RDX_ST_NO_OWNER] == 6 && c[RDX_ST_SHORT] == 1 && c[RDX_ST_MCAST] == 1 &&
	      c[RDX_ST_FULL] == 0, "drop counters");
	CHECK(c[RDX_ST_RX] == c[RDX_ST_DELIVERED] + 8, "rx");
	/* QP1 once joined: the CM's MADs come to the process that joined */
	{
		struct rdx_meta m;
		uint8_t buf[64];

		CHECK(sr_rdx_gsi(x, true) == 0, "GSI join");
		forge(s6, AF_INET6, RDX_QPN_GSI, 5, 20);
		CHECK(next(x, &m, buf, sizeof(buf)) == 20 && bth_qpn(buf) == RDX_QPN_GSI &&
		      bth_psn(buf) == 5, "QP1 datagram");
		CHECK(sr_rdx_gsi(x, false) == 0, "GSI leave");
	}
	sr_rdx_close(x);
	wait_exit(r[0].daemon, WAIT_MS);
	return 0;
}

static int deaths;
static void on_dead(void *arg)
{
	(void)arg;
	deaths++;
}

static int mode_kill(void)
{
	struct sr_rdx *x = open_or_die(on_dead, NULL);
	pid_t d = sr_rdx_daemon_pid(x);
	struct pollfd p = { .fd = sr_rdx_fd(x), .events = POLLIN };
	struct rdx_meta m;
	uint8_t buf[64];
	uint32_t q;
	uint16_t sp;
	int s;

	CHECK(sr_rdx_qpn_alloc(x, &q) == 0, "qpn_alloc");
	CHECK(kill(d, SIGKILL) == 0, "kill");
	CHECK(poll(&p, 1, WAIT_MS) == 1, "no event on the channel after the daemon died");
	CHECK(sr_rdx_recv(x, &m, buf, sizeof(buf)) == -EPIPE, "recv after death");
	CHECK(deaths == 1, "dead callback ran %d times", deaths);
	CHECK(sr_rdx_qpn_alloc(x, &q) == -EPIPE, "qpn_alloc after death");
	CHECK(sr_rdx_recv(x, &m, buf, sizeof(buf)) == -EPIPE && deaths == 1, "callback twice");
	sr_rdx_close(x);
	/* a new open starts a new daemon, which works */
	x = open_or_die(on_dead, NULL);
	CHECK(sr_rdx_daemon_pid(x) != d, "the dead daemon's pid again");
	CHECK(sr_rdx_qpn_alloc(x, &q) == 0, "qpn_alloc");
	s = bound_udp(AF_INET, &sp);
	forge(s, AF_INET, q, 7, 20);
	CHECK(next(x, &m, buf, sizeof(buf)) == 20 && bth_psn(buf) == 7, "after restart");
	/* a stopped daemon: a request gives up after its bound and counts as a death */
	d = sr_rdx_daemon_pid(x);
	CHECK(kill(d, SIGSTOP) == 0, "SIGSTOP");
	{
		uint64_t st[RDX_ST_COUNT];
		struct timespec t0, t1;
		long ms;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		CHECK(sr_rdx_stats(x, st) == -EPIPE, "a request to a stopped daemon");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		CHECK(ms >= 4900 && ms < 9000, "gave up after %ld ms, the bound is 5000", ms);
		CHECK(deaths == 2, "dead callback ran %d times in all, expected 2", deaths);
	}
	CHECK(kill(d, SIGKILL) == 0, "SIGKILL");
	sr_rdx_close(x);
	wait_exit(d, WAIT_MS);
	return 0;
}

static int mode_linger(void)
{
	struct sr_rdx *a = open_or_die(NULL, NULL), *b = open_or_die(NULL, NULL);
	pid_t d = sr_rdx_daemon_pid(a);
	int fd = (int)syscall(SYS_pidfd_open, d, 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	CHECK(fd >= 0 && sr_rdx_daemon_pid(b) == d, "one daemon for two clients");
	sr_rdx_close(a);
	sr_rdx_close(b);
	/* just after its last client left it still runs, and a new client finds it */
	CHECK(poll(&p, 1, 0) == 0, "the daemon exited without its grace period");
	a = open_or_die(NULL, NULL);
	CHECK(sr_rdx_daemon_pid(a) == d, "a new daemon within the grace period");
	sr_rdx_close(a);
	CHECK(poll(&p, 1, WAIT_MS) == 1, "the daemon outlived its last client by %d ms",
	      WAIT_MS);
	return 0;
}

static int mode_hold(void)
{
	struct sr_rdx *x = open_or_die(NULL, NULL);
	pid_t d = sr_rdx_daemon_pid(x);
	char line[16];

	printf("READY %d\n", d);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	sr_rdx_close(x);
	wait_exit(d, WAIT_MS);
	return 0;
}

/* Both checks: the client's (by the listener's credentials) and the daemon's own. */
static int mode_refused(const char *uid)
{
	struct sr_rdx *x;
	char why[256], want[64];
	struct sockaddr_un sa;
	socklen_t len = rdx_name(&sa, port());
	struct rdx_msg m = { .op = RDX_HELLO, .arg = RDX_VERSION };
	int e = sr_rdx_open(&x, NULL, NULL, why, sizeof(why)), s, fd;

	snprintf(want, sizeof(want), "uid %s ", uid);
	printf("sr_rdx_open: %s: %s\n", strerror(-e), why);
	CHECK(e == -EACCES && strstr(why, want), "expected EACCES naming %s", want);
	s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	CHECK(connect(s, (struct sockaddr *)&sa, len) == 0, "connect");
	/* the daemon answers at accept and closes: our HELLO may meet a closed socket */
	rdx_send(s, &m, -1);
	e = rdx_recv(s, &m, &fd, WAIT_MS);
	CHECK(e == 0, "the daemon's answer: %s", strerror(-e));
	CHECK(m.status == -EACCES && fd < 0 && strstr(m.text, want), "daemon let us in");
	CHECK(rdx_recv(s, &m, NULL, WAIT_MS) == -EPIPE, "the daemon kept the connection");
	close(s);
	return 0;
}

static int mode_error(const char *err, const char *word)
{
	struct sr_rdx *x;
	char why[256];
	int e = sr_rdx_open(&x, NULL, NULL, why, sizeof(why));

	printf("sr_rdx_open: %s: %s\n", strerror(-e), why);
	CHECK(e == -atoi(err) && strstr(why, word), "expected errno %s naming '%s'", err, word);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "deliver"))
		return mode_deliver(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "kill"))
		return mode_kill();
	if (argc == 2 && !strcmp(argv[1], "linger"))
		return mode_linger();
	if (argc == 2 && !strcmp(argv[1], "hold"))
		return mode_hold();
	if (argc == 3 && !strcmp(argv[1], "refused"))
		return mode_refused(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "error"))
		return mode_error(argv[2], argv[3]);
	fprintf(stderr, "usage: see the comment at the top of rdx_test.c\n");
	return 2;
}
