// SPDX-License-Identifier: MIT
/*
 * softrdma-roced: owns the RoCE v2 UDP port of one network namespace for one user and hands
 * each datagram to the process that owns its DestQP (docs/ARCHITECTURE.md, "Soft RoCE: one
 * UDP port for many processes"). Started by the first client (spawn.c), as that user; ends
 * when its last client has been gone for SOFTRDMA_ROCED_LINGER_MS.
 *
 *   softrdma-roced --starter-fd N
 * N is the starter's control connection (a socketpair end): it gets the HELLO reply, or
 * RDX_START_LOST when another daemon already serves the namespace, or RDX_START_FAILED.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "roced.h"
#include "common/sr_common.h"
#include "common/sr_config.h"
#include "common/sr_log.h"

static int roced_starter_fd(int argc, char **argv)
{
	char *end;
	long fd;

	if (argc != 3 || strcmp(argv[1], "--starter-fd") != 0)
		return -1;
	fd = strtol(argv[2], &end, 10);
	if (*end || fd < 3 || fd > 1023 || fcntl((int)fd, F_GETFD) < 0)
		return -1;
	return (int)fd;
}

static void roced_start_reply(int starter, enum rdx_op op, int status, const char *text)
{
	struct rdx_msg m = { .op = op, .status = status };

	snprintf(m.text, sizeof(m.text), "%s", text);
	rdx_send(starter, &m, -1);
}

/*
 * The name first: binding it is the lock that makes one of several concurrent starters
 * the daemon; the others tell their starter to connect. Only then the UDP port, so a bind
 * failure there is about someone else, not a twin of ours.
 */
static int roced_setup(struct roced *d, int starter)
{
	struct sockaddr_un sa;
	socklen_t len = rdx_name(&sa, d->port);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = ROCED_TAG(ROCED_EV_LISTEN, 0) };
	char text[160] = "";
	int e;

	d->listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (d->listener < 0 || bind(d->listener, (struct sockaddr *)&sa, len) < 0) {
		e = errno;
		if (e == EADDRINUSE) {
			roced_start_reply(starter, RDX_START_LOST, -EADDRINUSE, "");
			exit(0);
		}
		snprintf(text, sizeof(text), "softrdma-roced: cannot bind its unix name: %s",
			 strerror(e));
		roced_start_reply(starter, RDX_START_FAILED, -e, text);
		exit(1);
	}
	d->ep = epoll_create1(EPOLL_CLOEXEC);
	if (d->ep < 0 || listen(d->listener, 128) < 0 ||
	    epoll_ctl(d->ep, EPOLL_CTL_ADD, d->listener, &ev) < 0) {
		e = errno;
		roced_start_reply(starter, RDX_START_FAILED, -e, "softrdma-roced: setup failed");
		exit(1);
	}
	e = roced_net_open(d, text, sizeof(text));
	if (e < 0) {
		roced_start_reply(starter, RDX_START_FAILED, e, text);
		exit(1);
	}
	return roced_client_add(d, starter);
}

/*
 * Out of descriptors, the pending connection stays and level-triggered epoll would report
 * it again at once: the listener leaves the loop until a client goes (roced_clients.c).
 */
static void roced_accept(struct roced *d)
{
	for (;;) {
		int c = accept4(d->listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (c < 0 && (errno == EMFILE || errno == ENFILE)) {
			epoll_ctl(d->ep, EPOLL_CTL_DEL, d->listener, NULL);
			d->listener_paused = true;
		}
		if (c < 0)
			return; /* EAGAIN, or a connection reset before we took it */
		if (roced_client_add(d, c) < 0)
			close(c);
	}
}

int main(int argc, char **argv)
{
	static struct roced d = { .udp = { -1, -1 } };
	unsigned int linger = sr_config_ms("SOFTRDMA_ROCED_LINGER_MS", 1000);
	uint64_t idle_since = 0;
	int starter = roced_starter_fd(argc, argv);

	if (starter < 0) {
		fprintf(stderr, "softrdma-roced is started by the softrdma libraries, "
				"not by hand (usage: softrdma-roced --starter-fd N)\n");
		return 2;
	}
	/* what the application left open is not ours to keep alive */
	if (starter > 3)
		close_range(3, (unsigned int)starter - 1, 0);
	close_range((unsigned int)starter + 1, ~0u, 0);
	fcntl(starter, F_SETFD, FD_CLOEXEC);
	fcntl(starter, F_SETFL, O_NONBLOCK);
	signal(SIGPIPE, SIG_IGN);
	/* the starter's working directory is not ours to keep busy (an unmount) */
	if (chdir("/") < 0)
		sr_warn("chdir /: %s", strerror(errno));
	/* two descriptors a client: take all the descriptors we may */
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	/*
	 * posix_spawn made us a session leader; our child, in that session, can never get a
	 * controlling terminal, and the starter reaps us at once: no zombie in its process.
	 */
	switch (fork()) {
	case -1:
		roced_start_reply(starter, RDX_START_FAILED, -errno, "softrdma-roced: fork failed");
		return 1;
	case 0:
		break;
	default:
		_exit(0);
	}
	d.uid = geteuid();
	d.port = (unsigned int)sr_config_long("SOFTRDMA_ROCE_UDP_PORT");
	if (d.port == 0 || d.port > 65535)
		d.port = RDX_ROCE_PORT;
	if (roced_setup(&d, starter) < 0)
		return 1;

	for (;;) {
		struct epoll_event ev[16];
		int timeout = -1, n;

		if (d.nclients == 0) {
			uint64_t now = sr_mono_ns(), end;

			if (!idle_since)
				idle_since = now;
			end = idle_since + (uint64_t)linger * 1000000u;
			if (now >= end)
				break;
			timeout = (int)((end - now + 999999) / 1000000);
		} else {
			idle_since = 0;
		}
		n = epoll_wait(d.ep, ev, 16, timeout);
		for (int i = 0; i < n; i++) {
			uint32_t kind = (uint32_t)(ev[i].data.u64 >> 32);
			uint32_t idx = (uint32_t)ev[i].data.u64;

			if (kind == ROCED_EV_LISTEN)
				roced_accept(&d);
			else if (kind == ROCED_EV_UDP)
				roced_net_rx(&d, d.udp[idx]);
			else if (idx < d.ncl_slots && d.cl[idx])
				roced_client_input(&d, idx);
		}
	}
	/*
	 * Closing the listener frees the name at once. A client that connected in the last
	 * instant reads EOF instead of its HELLO reply and starts a new daemon (spawn.c).
	 */
	sr_info("no client for %u ms: exiting", linger);
	return 0;
}
