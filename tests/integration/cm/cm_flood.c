// SPDX-License-Identifier: MIT
/*
 * Half-open connections against a listener (src/cm/passive.c), both sides in one process.
 *   cm_flood flood   1,160 idle TCP connections from 29 source addresses (127.0.0.2..30,
 *                    40 each: the per-source bound does not hold them back, the listener's
 *                    total bound does), then 300 more from 127.0.0.1 (the per-source bound);
 *                    once they have been idle longer than the CM's grace, a real rdma_cm
 *                    client must still get its CONNECT_REQUEST through
 *   cm_flood emfile  the listening process runs out of descriptors under a flood (a child
 *                    process holds the idle connections): the engine thread must not spin
 *                    (at most a quarter of a core over a second), and once the flood is
 *                    gone a real client connects again
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/cm_test.h"

#define PORT 17820

static int listen_here(struct rdma_event_channel *ch, struct rdma_cm_id **l)
{
	struct sockaddr_storage ss;

	CT_CHECK(rdma_create_id(ch, l, NULL, RDMA_PS_TCP) == 0);
	ct_addr("0.0.0.0", PORT, &ss);
	CT_CHECK(rdma_bind_addr(*l, (struct sockaddr *)&ss) == 0);
	CT_CHECK(rdma_listen(*l, 0) == 0);
	return 0;
}

/* An idle TCP connection from src to the listener (connect completes in the backlog). */
static int idle_conn(const char *src)
{
	struct sockaddr_storage s, d;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ct_addr(src, 0, &s);
	ct_addr("127.0.0.1", PORT, &d);
	if (fd < 0 || bind(fd, (struct sockaddr *)&s, sizeof(struct sockaddr_in)) ||
	    connect(fd, (struct sockaddr *)&d, sizeof(struct sockaddr_in))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Until the listener's accept queue is empty (our engine took every connection). */
static void wait_accepted(void)
{
	char cmd[128], line[256];

	snprintf(cmd, sizeof(cmd), "ss -Hltn 'sport = :%d' | awk '{print $2}'", PORT);
	for (int i = 0; i < 400; i++) {
		FILE *p = popen(cmd, "r");
		int q = -1;

		if (p && fgets(line, sizeof(line), p))
			q = atoi(line);
		if (p)
			pclose(p);
		if (q == 0)
			return;
		usleep(25000);
	}
}

/* A real client: resolve, connect with private data; the listener must see it. */
static int real_client(struct rdma_event_channel *chs, struct rdma_event_channel *chc)
{
	struct rdma_conn_param p = { .private_data = "real", .private_data_len = 5 };
	struct sockaddr_storage d;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c, *s;

	ct_addr("127.0.0.1", PORT, &d);
	if (ct_resolve_both(chc, &c, NULL, (struct sockaddr *)&d, 2000, 5000))
		return 1;
	CT_CHECK(rdma_connect(c, &p) == 0);
	ev = ct_expect(chs, RDMA_CM_EVENT_CONNECT_REQUEST, 10000);
	CT_CHECK(ev && ev->param.conn.private_data_len == 5 &&
		 memcmp(ev->param.conn.private_data, "real", 5) == 0);
	s = ev->id;
	rdma_ack_cm_event(ev);
	CT_CHECK(rdma_accept(s, &(struct rdma_conn_param){ 0 }) == 0);
	ev = ct_expect(chc, RDMA_CM_EVENT_CONNECT_RESPONSE, 10000);
	CT_CHECK(ev);
	rdma_ack_cm_event(ev);
	rdma_destroy_id(s);
	rdma_destroy_id(c);
	return 0;
}

static void raise_nofile(rlim_t want)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
		r.rlim_cur = r.rlim_max < want ? r.rlim_max : want;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static int t_flood(void)
{
	struct rdma_event_channel *chs = rdma_create_event_channel();
	struct rdma_event_channel *chc = rdma_create_event_channel();
	struct rdma_cm_id *l;
	char src[32];
	int n = 0;

	raise_nofile(8192);
	CT_CHECK(chs && chc);
	if (listen_here(chs, &l))
		return 1;
	for (int a = 2; a <= 30; a++) {
		snprintf(src, sizeof(src), "127.0.0.%d", a);
		for (int i = 0; i < 40; i++)
			n += idle_conn(src) >= 0;
	}
	for (int i = 0; i < 300; i++)
		n += idle_conn("127.0.0.1") >= 0;
	printf("%d idle connections\n", n);
	CT_CHECK(n == 1460);
	wait_accepted();
	/* The scenario is sockets that stay silent: let them be silent for longer than the
	 * CM's grace (SR_CM_HANDSHAKE_SLOW_MS, 200 ms), which spares a real client's socket
	 * whose Request is still on its way. */
	usleep(300000);
	if (real_client(chs, chc))
		return 1;
	printf("a real client got through\n");
	return 0; /* exit closes the rest */
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int t_emfile(void)
{
	struct rdma_event_channel *chs, *chc;
	int go[2], done[2], status;
	struct rlimit r;
	struct rdma_cm_id *l;
	double c0, c1;
	pid_t pid;
	char b;

	/* the attacker forks before this process has any thread (the libraries start theirs) */
	pid_t parent = getpid();

	CT_CHECK(pipe(go) == 0 && pipe(done) == 0);
	pid = fork();
	CT_CHECK(pid >= 0);
	if (pid == 0) {
		/* ends with us, whatever check fails first: killed by the kernel then, and an EOF
		 * on go[0] once our end is the only write end */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(1);
		close(go[1]);
		close(done[0]);
		/* 300 idle connections once the listener is up, held until the parent says */
		raise_nofile(4096);
		if (read(go[0], &b, 1) != 1)
			_exit(1);
		for (int i = 0; i < 300; i++)
			idle_conn("127.0.0.1");
		if (write(done[1], "x", 1) != 1 || read(go[0], &b, 1) != 1)
			_exit(1);
		_exit(0);
	}
	chs = rdma_create_event_channel();
	chc = rdma_create_event_channel();
	CT_CHECK(chs && chc);
	if (listen_here(chs, &l))
		return 1;
	/* the victim may hold 200 descriptors: accept() runs out during the flood */
	CT_CHECK(getrlimit(RLIMIT_NOFILE, &r) == 0);
	r.rlim_cur = 200;
	CT_CHECK(setrlimit(RLIMIT_NOFILE, &r) == 0);
	CT_CHECK(write(go[1], "x", 1) == 1 && read(done[0], &b, 1) == 1);
	c0 = cpu_seconds();
	sleep(1); /* the window over which CPU use is measured (not a wait for an event) */
	c1 = cpu_seconds();
	printf("CPU while out of descriptors: %.3f s in 1 s\n", c1 - c0);
	CT_CHECK(c1 - c0 < 0.25);
	/* the flood ends: the listener recovers and serves a real client */
	CT_CHECK(write(go[1], "x", 1) == 1);
	CT_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status));
	r.rlim_cur = r.rlim_max < 4096 ? r.rlim_max : 4096;
	CT_CHECK(setrlimit(RLIMIT_NOFILE, &r) == 0);
	if (real_client(chs, chc))
		return 1;
	printf("a real client got through after the flood\n");
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	signal(SIGPIPE, SIG_IGN);
	if (argc != 2 || (strcmp(argv[1], "flood") && strcmp(argv[1], "emfile"))) {
		fprintf(stderr, "usage: %s flood|emfile\n", argv[0]);
		return 2;
	}
	r = strcmp(argv[1], "flood") == 0 ? t_flood() : t_emfile();
	printf("%s %s\n", r ? "FAIL" : "PASS", argv[1]);
	return r;
}
