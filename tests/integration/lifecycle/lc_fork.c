// SPDX-License-Identifier: MIT
/*
 * fork() after the libraries started their engines. The parent connects a pair of QPs over
 * loopback (both engines running, the CM's and the data path's) and forks. The child:
 *  - finds the parent's objects refused with EIO (post, poll, CQ and CM events), never
 *    reaching the parent's sockets or eventfds;
 *  - connects a pair of its own and does an RDMA WRITE, an RDMA READ and a SEND with their
 *    data checked, then disconnects (both DISCONNECTED events): a working engine of its own.
 * Meanwhile the parent's engine threads must stay asleep: before the fix the child's
 * sockets entered the parent's epoll set and its engine thread spun on them. Their CPU
 * time during the child's life (schedstat) must stay under LC_SPIN_NS. Then the parent's
 * own connection must still carry a Send and a Write, and disconnect.
 * Every wait is bounded (dp_common's bounds, the child's alarm, the parent's waitpid loop).
 * Usage: lc_fork [address]
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../datapath/dp_common.h"

#define LC_LEN 4096
#define LC_SPIN_NS (50ull * 1000000ull)
#define LC_CHILD_S 60

static uint8_t src[LC_LEN], dst[LC_LEN], back[LC_LEN];

/*
 * ThreadSanitizer builds (label tsan): by default TSan ends a child of a multithreaded
 * process that starts threads, which is what this test is about. Read only by TSan's
 * runtime; TSAN_OPTIONS from the environment still apply on top.
 */
__attribute__((visibility("default"))) const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}

/* CPU time, in ns, of this process's engine threads (both libraries'). */
static unsigned long long engine_cpu_ns(void)
{
	unsigned long long sum = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	DP_CHECK(d, "/proc/self/task: %s", strerror(errno));
	while ((e = readdir(d))) {
		char path[300], comm[64] = "";
		unsigned long long ns = 0;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, "softrdma-engine", 15))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

/* WRITE, READ and SEND on a connected pair, data checked at the other end. */
static void traffic(struct dp_pair *p, uint32_t seed)
{
	struct ibv_mr *smr = dp_reg(p->cli.pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *bmr = dp_reg(p->cli.pd, back, sizeof(back), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dmr = dp_reg(p->srv.pd, dst, sizeof(dst),
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ);
	struct ibv_wc wc;

	dp_fill(src, sizeof(src), seed);
	memset(dst, 0, sizeof(dst));
	DP_CHECK(dp_post_send(&p->cli, IBV_WR_RDMA_WRITE, 1, smr, src, LC_LEN,
			      (uintptr_t)dst, dmr->rkey, IBV_SEND_SIGNALED) == 0, "post write");
	wc = dp_wait_wc(p->cli.cq, 10000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1, "write: %s",
		 ibv_wc_status_str(wc.status));
	/* placed: the READ that follows it on the same QP returns what it wrote */
	memset(back, 0, sizeof(back));
	DP_CHECK(dp_post_send(&p->cli, IBV_WR_RDMA_READ, 2, bmr, back, LC_LEN,
			      (uintptr_t)dst, dmr->rkey, IBV_SEND_SIGNALED) == 0, "post read");
	wc = dp_wait_wc(p->cli.cq, 10000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 2, "read: %s",
		 ibv_wc_status_str(wc.status));
	DP_CHECK(dp_check(back, LC_LEN, seed) && dp_check(dst, LC_LEN, seed), "read data");
	memset(dst, 0, sizeof(dst));
	dp_post_recv(&p->srv, 3, dmr, dst, LC_LEN);
	DP_CHECK(dp_post_send(&p->cli, IBV_WR_SEND, 4, smr, src, LC_LEN, 0, 0,
			      IBV_SEND_SIGNALED) == 0, "post send");
	wc = dp_wait_wc(p->srv.cq, 10000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 3 && wc.byte_len == LC_LEN,
		 "recv: %s", ibv_wc_status_str(wc.status));
	DP_CHECK(dp_check(dst, LC_LEN, seed), "send data");
	wc = dp_wait_wc(p->cli.cq, 10000);
	DP_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 4, "send");
	ibv_dereg_mr(smr);
	ibv_dereg_mr(bmr);
	ibv_dereg_mr(dmr);
}

static int child(struct dp_pair *parent, const struct dp_opts *o)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = 1, .lkey = 0 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };
	struct ibv_send_wr *bad;
	struct rdma_cm_event *ev;
	struct dp_pair p;
	struct ibv_wc wc;

	alarm(LC_CHILD_S);
	/* the parent's objects: refused, untouched */
	DP_CHECK(ibv_post_send(parent->cli.id->qp, &wr, &bad) == EIO, "post on the parent's QP");
	DP_CHECK(ibv_poll_cq(parent->cli.cq, 1, &wc) < 0, "poll of the parent's CQ");
	DP_CHECK(ibv_req_notify_cq(parent->cli.cq, 0) == EIO, "arming the parent's CQ");
	DP_CHECK(rdma_get_cm_event(parent->ec, &ev) == -1 && errno == EIO,
		 "rdma_get_cm_event on the parent's channel");
	DP_CHECK(rdma_disconnect(parent->cli.id) == -1 && errno == EIO,
		 "rdma_disconnect of the parent's id");
	/* our own */
	dp_connect(&p, o);
	traffic(&p, 77);
	dp_disconnect(&p);
	return 0;
}

int main(int argc, char **argv)
{
	struct dp_opts o = { .addr = argc > 1 ? argv[1] : NULL };
	unsigned long long cpu0, cpu;
	struct timespec d = { 0, 10 * 1000000 };
	struct dp_pair p;
	int status = 0;
	pid_t pid, w;

	dp_connect(&p, &o);
	traffic(&p, 1);
	fflush(NULL);
	cpu0 = engine_cpu_ns();
	pid = fork();
	DP_CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(child(&p, &o));
	for (int i = 0; (w = waitpid(pid, &status, WNOHANG)) == 0; i++) {
		if (i > (LC_CHILD_S + 10) * 100) {
			kill(pid, SIGKILL);
			DP_CHECK(0, "the child did not end");
		}
		nanosleep(&d, NULL);
	}
	cpu = engine_cpu_ns() - cpu0;
	printf("parent's engines ran %.1f ms while the child worked\n", (double)cpu / 1e6);
	DP_CHECK(w == pid, "waitpid: %s", strerror(errno));
	DP_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status %#x)",
		 status);
	DP_CHECK(cpu < LC_SPIN_NS, "the parent's engines were busy (%.1f ms) with the child's "
		 "sockets", (double)cpu / 1e6);
	/* the parent's connection is intact */
	traffic(&p, 2);
	dp_disconnect(&p);
	printf("fork: the child's own connection and the parent's both worked\n");
	return 0;
}
