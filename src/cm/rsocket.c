// SPDX-License-Identifier: MIT
/*
 * rsockets live in librdmacm, so every binary that imports them must load. Until the rsocket
 * transport exists, creating an rsocket fails with ENOSYS and every call on an rsocket fails
 * with EBADF (there can be none). rpoll/rselect work for ordinary file descriptors, as the
 * man page allows mixing them.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <rdma/rsocket.h>

#include "common/sr_common.h"

#define SR_FAIL(err)           \
	do {                   \
		errno = (err); \
		return -1;     \
	} while (0)

SR_EXPORT int rsocket(int domain, int type, int protocol)
{
	SR_FAIL(ENOSYS);
}

SR_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int rlisten(int socket, int backlog)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int rshutdown(int socket, int how)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int rclose(int socket)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			    struct sockaddr *src_addr, socklen_t *addrlen)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			  const struct sockaddr *dest_addr, socklen_t addrlen)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	SR_FAIL(EBADF);
}

SR_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	SR_FAIL(EBADF);
}

/* No rsocket can exist yet, so every descriptor is an ordinary one. */
SR_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

SR_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		      struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

SR_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			  socklen_t optlen)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int rfcntl(int socket, int cmd, ...)
{
	SR_FAIL(EBADF);
}

SR_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	SR_FAIL(EBADF);
}

SR_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	SR_FAIL(EBADF);
}

SR_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	errno = EBADF;
	return 0; /* riowrite returns size_t: 0 bytes written, errno set */
}
