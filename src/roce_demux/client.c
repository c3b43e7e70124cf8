// SPDX-License-Identifier: MIT
/*
 * Client of softrdma-roced (sr_rdx.h): connect or start, the control requests, and reading
 * datagrams from the data channel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rdx_client.h"
#include "common/sr_config.h"
#include "common/sr_log.h"

static unsigned int rdx_port(void)
{
	long p = sr_config_long("SOFTRDMA_ROCE_UDP_PORT");

	return p > 0 && p <= 65535 ? (unsigned int)p : RDX_ROCE_PORT;
}

void rdx_dead(struct sr_rdx *x)
{
	bool was = atomic_exchange(&x->gone, true);

	if (!was && x->dead)
		x->dead(x->arg);
}

int rdx_rpc(struct sr_rdx *x, struct rdx_msg *m)
{
	uint32_t op = m->op;
	int e;

	if (atomic_load(&x->gone))
		return -EPIPE;
	e = rdx_send(x->ctl, m, -1);
	if (e == 0)
		e = rdx_recv(x->ctl, m, NULL, RDX_REPLY_MS);
	/* a daemon that does not answer is as good as gone: nothing it owes us will come */
	if (e == -ETIMEDOUT || e == -ECONNRESET)
		e = -EPIPE;
	if (e == 0 && m->op != op)
		e = -EPROTO;
	return e < 0 ? e : m->status;
}

/*
 * HELLO on a connection to a daemon, or on the starter's end before the daemon has set
 * up. -EAGAIN: try again from the start (we lost a start race, or reached a daemon in its
 * last instant, which closes without answering).
 */
static int rdx_hello(struct sr_rdx *x, int ctl, int timeout_ms, char *why, size_t whylen)
{
	struct rdx_msg m = { .op = RDX_HELLO, .arg = RDX_VERSION };
	int e, fd;

	e = rdx_send(ctl, &m, -1);
	if (e == -EPIPE || e == -ECONNRESET)
		return -EAGAIN;
	if (e == 0)
		e = rdx_recv(ctl, &m, &fd, timeout_ms);
	if (e == -EPIPE || e == -ECONNRESET)
		return -EAGAIN;
	if (e == -ETIMEDOUT) {
		snprintf(why, whylen, "softrdma-roced did not answer within %d ms", timeout_ms);
		return e;
	}
	if (e < 0) {
		snprintf(why, whylen, "softrdma-roced: %s", strerror(-e));
		return e;
	}
	if (m.op == RDX_START_LOST)
		return -EAGAIN;
	if (m.op == RDX_START_FAILED || m.status < 0) {
		snprintf(why, whylen, "%s", m.text[0] ? m.text : strerror(-m.status));
		if (fd >= 0)
			close(fd);
		return m.status < 0 ? m.status : -EPROTO;
	}
	if (m.op != RDX_HELLO || fd < 0 || m.vals[0] != geteuid()) {
		if (fd >= 0)
			close(fd);
		snprintf(why, whylen, "softrdma-roced: a malformed answer");
		return -EPROTO;
	}
	x->ctl = ctl;
	x->data = fd;
	x->daemon = (pid_t)m.vals[1];
	return 0;
}

/*
 * A listener of another user holds the name: say whose, without sending it anything. The
 * daemon refuses such a client as well; this check also catches a squatter on the name
 * that is no daemon at all.
 */
static int rdx_check_peer(int ctl, unsigned int port, char *why, size_t whylen)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(ctl, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return -errno;
	if (cr.uid == geteuid())
		return 0;
	snprintf(why, whylen,
		 "UDP port %u of this network namespace is served by softrdma-roced of uid %u "
		 "(pid %d); one user per network namespace may use soft RoCE",
		 port, (unsigned int)cr.uid, (int)cr.pid);
	return -EACCES;
}

/* One attempt: connect, else start a daemon. */
static int rdx_try(struct sr_rdx *x, char *why, size_t whylen)
{
	struct sockaddr_un sa;
	unsigned int port = rdx_port();
	socklen_t len = rdx_name(&sa, port);
	int ctl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), e;
	/* connect waits while the listener's backlog is full: bounded, as a stopped daemon's is */
	struct timeval tv = { .tv_sec = RDX_REPLY_MS / 1000 };

	if (ctl < 0)
		return -errno;
	setsockopt(ctl, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(ctl, (struct sockaddr *)&sa, len) == 0) {
		e = rdx_check_peer(ctl, port, why, whylen);
		if (e == 0)
			e = rdx_hello(x, ctl, RDX_REPLY_MS, why, whylen);
	} else if (errno == ECONNREFUSED || errno == ENOENT) {
		close(ctl);
		e = rdx_spawn(&ctl, why, whylen);
		if (e < 0)
			return e;
		e = rdx_hello(x, ctl, RDX_START_MS, why, whylen);
	} else {
		e = -errno;
		snprintf(why, whylen, "cannot reach softrdma-roced: %s", strerror(errno));
	}
	if (e < 0)
		close(ctl);
	return e;
}

int sr_rdx_open(struct sr_rdx **out, sr_rdx_dead_fn dead, void *arg, char *why, size_t whylen)
{
	struct sr_rdx *x = calloc(1, sizeof(*x));
	int e = -EAGAIN;

	if (!x)
		return -ENOMEM;
	why[0] = '\0';
	x->dead = dead;
	x->arg = arg;
	pthread_mutex_init(&x->lock, NULL);
	/* every -EAGAIN follows an event (a lost race, a daemon exiting): a few suffice */
	for (int i = 0; i < 8 && e == -EAGAIN; i++)
		e = rdx_try(x, why, whylen);
	if (e == -EAGAIN)
		snprintf(why, whylen, "softrdma-roced kept exiting while we connected");
	if (e < 0) {
		sr_err("%s", why);
		pthread_mutex_destroy(&x->lock);
		free(x);
		return e;
	}
	sr_info("softrdma-roced pid %d", (int)x->daemon);
	*out = x;
	return 0;
}

void sr_rdx_close(struct sr_rdx *x)
{
	if (!x)
		return;
	/* the daemon frees our blocks when it reads EOF */
	close(x->ctl);
	close(x->data);
	pthread_mutex_destroy(&x->lock);
	free(x->blocks);
	free(x);
}

int sr_rdx_fd(const struct sr_rdx *x)
{
	return x->data;
}

pid_t sr_rdx_daemon_pid(const struct sr_rdx *x)
{
	return x->daemon;
}

uint64_t sr_rdx_dropped(const struct sr_rdx *x)
{
	return atomic_load(&((struct sr_rdx *)x)->dropped);
}

/* One request and its answer at a time on the control socket (takes x->lock). */
static int rdx_call(struct sr_rdx *x, struct rdx_msg *m)
{
	int e;

	pthread_mutex_lock(&x->lock);
	e = rdx_rpc(x, m);
	pthread_mutex_unlock(&x->lock);
	if (e == -EPIPE)
		rdx_dead(x);
	return e;
}

int sr_rdx_gsi(struct sr_rdx *x, bool join)
{
	struct rdx_msg m = { .op = join ? RDX_GSI_JOIN : RDX_GSI_LEAVE };

	return rdx_call(x, &m);
}

int sr_rdx_stats(struct sr_rdx *x, uint64_t st[RDX_ST_COUNT])
{
	struct rdx_msg m = { .op = RDX_STATS };
	int e = rdx_call(x, &m);

	if (e == 0)
		memcpy(st, m.vals, sizeof(m.vals));
	return e;
}

ssize_t sr_rdx_recv(struct sr_rdx *x, struct rdx_meta *m, void *buf, size_t len)
{
	for (;;) {
		struct iovec iov[2] = { { m, sizeof(*m) }, { buf, len } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
		ssize_t n = recvmsg(x->data, &mh, MSG_DONTWAIT);
		const uint8_t *bth = buf;
		uint32_t qpn;
		bool ours;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return -EAGAIN;
		if (n <= 0) { /* EOF: the daemon closed our channel, or died */
			rdx_dead(x);
			return -EPIPE;
		}
		if ((mh.msg_flags & MSG_TRUNC) || (size_t)n < sizeof(*m) + RDX_BTH_LEN ||
		    m->len != (size_t)n - sizeof(*m)) {
			atomic_fetch_add(&x->dropped, 1);
			continue;
		}
		qpn = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
		if (qpn == RDX_QPN_GSI)
			return (ssize_t)m->len;
		/* a datagram for a QPN we freed (its peer did not know yet) */
		pthread_mutex_lock(&x->lock);
		ours = rdx_qpn_held(x, qpn);
		pthread_mutex_unlock(&x->lock);
		if (ours)
			return (ssize_t)m->len;
		atomic_fetch_add(&x->dropped, 1);
	}
}
