// SPDX-License-Identifier: MIT
/* Message helpers shared by softrdma-roced and its clients (rdx_proto.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rdx_proto.h"

/*
 * Abstract unix names live in the network namespace's socket table: one daemon per
 * namespace and port, found without a file, gone with the last close of its listener.
 */
socklen_t rdx_name(struct sockaddr_un *sa, unsigned int port)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "softrdma-roced.%u", port);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int rdx_send(int sock, const struct rdx_msg *m, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		memset(&c, 0, sizeof(c));
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n == (ssize_t)sizeof(*m))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : -EPROTO;
	}
}

int rdx_recv(int sock, struct rdx_msg *m, int *fd, int timeout_ms)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
	struct pollfd p = { .fd = sock, .events = POLLIN };
	ssize_t n;
	int got = -1;

	if (fd)
		*fd = -1;
	for (;;) {
		int r = poll(&p, 1, timeout_ms);

		if (r > 0)
			break;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
	/*
	 * ECONNRESET: the peer closed with our message unread in its queue. The error is
	 * reported before what the peer sent earlier (an answer, then its close), and once:
	 * read again for that.
	 */
	for (int reset = 0;;) {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | (reset ? MSG_DONTWAIT : 0));
		if (n >= 0)
			break;
		if (errno == EINTR || (errno == ECONNRESET && !reset++))
			continue;
		if (errno == ECONNRESET || (errno == EAGAIN && reset))
			return -EPIPE; /* nothing came before the close */
		return -errno;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&got, CMSG_DATA(cm), sizeof(int));
	if (n == 0) {
		if (got >= 0)
			close(got);
		return -EPIPE;
	}
	if (n != (ssize_t)sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (got >= 0)
			close(got);
		return -EPROTO;
	}
	if (fd)
		*fd = got;
	else if (got >= 0)
		close(got);
	m->text[sizeof(m->text) - 1] = '\0';
	return 0;
}
