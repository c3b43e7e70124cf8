// SPDX-License-Identifier: MIT
/* rtnetlink notification subscription (RTNLGRP_LINK) parsed with libnl. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/route/link.h>
#include <linux/rtnetlink.h>

#include "netdev/netdev_priv.h"

struct sr_netdev_monitor {
	struct nl_sock *sk;
	sr_netdev_link_cb cb;
	void *arg;
	int cur_msgtype;
};

static void sr_netdev_monitor_obj(struct nl_object *obj, void *arg)
{
	struct sr_netdev_monitor *m = arg;
	struct sr_netdev_link link;

	if (nl_object_get_msgtype(obj) != RTM_NEWLINK &&
	    nl_object_get_msgtype(obj) != RTM_DELLINK)
		return;
	sr_netdev_link_from_nl((struct rtnl_link *)obj, &link);
	m->cb(m->arg, nl_object_get_msgtype(obj) == RTM_DELLINK ? SR_NETDEV_LINK_DEL :
								  SR_NETDEV_LINK_NEW,
	      &link);
}

static int sr_netdev_monitor_msg(struct nl_msg *msg, void *arg)
{
	/* nl_msg_parse() finds the rtnl_link cache ops from the message type. */
	nl_msg_parse(msg, sr_netdev_monitor_obj, arg);
	return NL_OK;
}

struct sr_netdev_monitor *sr_netdev_monitor_open(sr_netdev_link_cb cb, void *arg)
{
	struct sr_netdev_monitor *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cb = cb;
	m->arg = arg;
	m->sk = nl_socket_alloc();
	if (!m->sk)
		goto err;
	nl_socket_disable_seq_check(m->sk);
	nl_socket_modify_cb(m->sk, NL_CB_VALID, NL_CB_CUSTOM, sr_netdev_monitor_msg, m);
	if (nl_connect(m->sk, NETLINK_ROUTE) < 0)
		goto err;
	if (nl_socket_add_memberships(m->sk, RTNLGRP_LINK, 0) < 0)
		goto err;
	if (nl_socket_set_nonblocking(m->sk) < 0)
		goto err;
	/* Close-on-exec: the fd must not leak into programs the application starts. */
	{
		int fd = nl_socket_get_fd(m->sk);
		int fl = fcntl(fd, F_GETFD);

		if (fl >= 0)
			fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
	}
	return m;
err:
	if (m->sk)
		nl_socket_free(m->sk);
	free(m);
	errno = EIO;
	return NULL;
}

int sr_netdev_monitor_fd(struct sr_netdev_monitor *m)
{
	return nl_socket_get_fd(m->sk);
}

int sr_netdev_monitor_process(struct sr_netdev_monitor *m)
{
	for (;;) {
		int err = nl_recvmsgs_default(m->sk);

		if (err == -NLE_AGAIN || err == 0)
			return 0;
		if (err == -NLE_NOMEM)
			return -ENOBUFS; /* socket overrun: caller re-dumps */
		if (err < 0)
			return -EIO;
	}
}

void sr_netdev_monitor_close(struct sr_netdev_monitor *m)
{
	if (!m)
		return;
	nl_socket_free(m->sk);
	free(m);
}
