// SPDX-License-Identifier: MIT
/* Synchronous link queries over a short-lived NETLINK_ROUTE socket. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/netlink.h>
#include <netlink/cache.h>
#include <netlink/route/link.h>

#include "netdev/netdev_priv.h"

void sr_netdev_link_from_nl(struct rtnl_link *nl, struct sr_netdev_link *out)
{
	struct nl_addr *a = rtnl_link_get_addr(nl);
	const char *name = rtnl_link_get_name(nl);

	memset(out, 0, sizeof(*out));
	out->ifindex = rtnl_link_get_ifindex(nl);
	if (name)
		strncpy(out->name, name, sizeof(out->name) - 1);
	out->flags = rtnl_link_get_flags(nl);
	out->mtu = rtnl_link_get_mtu(nl);
	out->arptype = rtnl_link_get_arptype(nl);
	if (a && nl_addr_get_len(a) == 6) {
		memcpy(out->addr, nl_addr_get_binary_addr(a), 6);
		out->has_mac = true;
	}
}

static int sr_netdev_connect(struct nl_sock **sk)
{
	int err;

	*sk = nl_socket_alloc();
	if (!*sk)
		return -ENOMEM;
	err = nl_connect(*sk, NETLINK_ROUTE);
	if (err < 0) {
		nl_socket_free(*sk);
		return -EIO;
	}
	return 0;
}

int sr_netdev_dump_links(struct sr_netdev_link **out, size_t *count)
{
	struct nl_cache *cache = NULL;
	struct nl_object *obj;
	struct nl_sock *sk;
	size_t n = 0, i = 0;
	int err;

	err = sr_netdev_connect(&sk);
	if (err)
		return err;
	if (rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache) < 0) {
		nl_socket_free(sk);
		return -EIO;
	}
	n = nl_cache_nitems(cache);
	*out = calloc(n ? n : 1, sizeof(**out));
	if (!*out) {
		nl_cache_free(cache);
		nl_socket_free(sk);
		return -ENOMEM;
	}
	for (obj = nl_cache_get_first(cache); obj && i < n; obj = nl_cache_get_next(obj))
		sr_netdev_link_from_nl((struct rtnl_link *)obj, &(*out)[i++]);
	*count = i;
	nl_cache_free(cache);
	nl_socket_free(sk);
	return 0;
}

int sr_netdev_get_link(int ifindex, struct sr_netdev_link *out)
{
	struct rtnl_link *link = NULL;
	struct nl_sock *sk;
	int err;

	err = sr_netdev_connect(&sk);
	if (err)
		return err;
	err = rtnl_link_get_kernel(sk, ifindex, NULL, &link);
	if (err < 0) {
		nl_socket_free(sk);
		return err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV ? -ENODEV : -EIO;
	}
	sr_netdev_link_from_nl(link, out);
	rtnl_link_put(link);
	nl_socket_free(sk);
	return 0;
}
