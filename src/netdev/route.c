// SPDX-License-Identifier: MIT
/*
 * Route and address queries: one RTM_GETROUTE request per lookup (what `ip route get`
 * does) and an RTM_GETADDR dump for address ownership, over one NETLINK_ROUTE socket per
 * process that callers on any thread take turns on (sr_route_sock_get).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>

#include "netdev/sr_route.h"

static const void *sr_addr_bytes(const struct sockaddr *sa, unsigned int *len)
{
	if (sa->sa_family == AF_INET) {
		*len = 4;
		return &((const struct sockaddr_in *)sa)->sin_addr;
	}
	*len = 16;
	return &((const struct sockaddr_in6 *)sa)->sin6_addr;
}

static void sr_addr_set_bytes(struct sockaddr_storage *ss, int family, const void *bytes)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = family;
	if (family == AF_INET)
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, bytes, 4);
	else
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, bytes, 16);
}

/*
 * One NETLINK_ROUTE socket per process (per library), opened at the first lookup and shared
 * under sr_rt_mu: opening one per lookup cost a socket, a bind, a getsockname, four
 * setsockopts and a close on every rdma_resolve_addr. Every lookup still asks the kernel;
 * nothing is cached. libnl checks each reply's sequence number, and a socket that saw any
 * error is dropped and reopened at the next lookup, so a late reply can never pass for the
 * answer to a later request. A forked child drops its copy and opens its own (the netlink
 * port id is the parent's).
 */
#define SR_RT_MSG_BUF 32768
static pthread_mutex_t sr_rt_mu = PTHREAD_MUTEX_INITIALIZER;
static struct nl_sock *sr_rt_sk;

static void sr_rt_prepare(void)
{
	pthread_mutex_lock(&sr_rt_mu);
}

static void sr_rt_parent(void)
{
	pthread_mutex_unlock(&sr_rt_mu);
}

static void sr_rt_child(void)
{
	if (sr_rt_sk) {
		nl_socket_free(sr_rt_sk);
		sr_rt_sk = NULL;
	}
	pthread_mutex_unlock(&sr_rt_mu);
}

/*
 * Registered at load with a constructor priority that puts it after the engine's handlers
 * and before the CM's (the default priority): prepare handlers run in the reverse order, so
 * the CM lock, held around route lookups, is taken before sr_rt_mu, and sr_rt_mu before
 * the engine's (docs/ARCHITECTURE.md, "fork()").
 */
__attribute__((constructor(102))) static void sr_rt_init(void)
{
	pthread_atfork(sr_rt_prepare, sr_rt_parent, sr_rt_child);
}

/* The process's route socket, with sr_rt_mu held (on success only). */
static int sr_route_sock_get(struct nl_sock **sk)
{
	pthread_mutex_lock(&sr_rt_mu);
	if (!sr_rt_sk) {
		sr_rt_sk = nl_socket_alloc();
		if (!sr_rt_sk) {
			pthread_mutex_unlock(&sr_rt_mu);
			return -ENOMEM;
		}
		if (nl_connect(sr_rt_sk, NETLINK_ROUTE) < 0) {
			nl_socket_free(sr_rt_sk);
			sr_rt_sk = NULL;
			pthread_mutex_unlock(&sr_rt_mu);
			return -EIO;
		}
		/* route requests get their answer, no extra ACK to read */
		nl_socket_disable_auto_ack(sr_rt_sk);
		/*
		 * One recvmsg per answer, not a MSG_PEEK first to size the buffer: the kernel
		 * never builds a netlink message (dump parts included) larger than 32 KiB for
		 * a reader whose buffer is that large.
		 */
		nl_socket_disable_msg_peek(sr_rt_sk);
		if (nl_socket_set_msg_buf_size(sr_rt_sk, SR_RT_MSG_BUF) < 0) {
			nl_socket_free(sr_rt_sk);
			sr_rt_sk = NULL;
			pthread_mutex_unlock(&sr_rt_mu);
			return -ENOMEM;
		}
	}
	*sk = sr_rt_sk;
	return 0;
}

/* Give the socket back; one that saw an error is closed (see above). */
static void sr_route_sock_put(bool ok)
{
	if (!ok) {
		nl_socket_free(sr_rt_sk);
		sr_rt_sk = NULL;
	}
	pthread_mutex_unlock(&sr_rt_mu);
}

struct sr_route_req {
	struct sr_route *out;
	int family;
	int err;      /* from an NLMSG_ERROR reply (negative errno) */
	bool got;
	bool have_src;
};

static int sr_route_valid(struct nl_msg *msg, void *arg)
{
	struct sr_route_req *r = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct nlattr *tb[RTA_MAX + 1];
	struct rtmsg *rtm;

	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return NL_OK;
	if (nlmsg_parse(nlh, sizeof(*rtm), tb, RTA_MAX, NULL) < 0)
		return NL_SKIP;
	rtm = nlmsg_data(nlh);
	r->got = true;
	switch (rtm->rtm_type) {
	case RTN_LOCAL:
		r->out->local = true;
		break;
	case RTN_UNICAST:
		break;
	case RTN_UNREACHABLE:
	case RTN_BLACKHOLE:
		r->err = -ENETUNREACH;
		return NL_STOP;
	case RTN_PROHIBIT:
		r->err = -EHOSTUNREACH;
		return NL_STOP;
	default:
		/* broadcast, multicast, anycast: not a unicast stream destination */
		r->err = -ENETUNREACH;
		return NL_STOP;
	}
	if (tb[RTA_OIF])
		r->out->oif = (int)nla_get_u32(tb[RTA_OIF]);
	if (tb[RTA_GATEWAY] &&
	    nla_len(tb[RTA_GATEWAY]) == (r->family == AF_INET ? 4 : 16)) {
		sr_addr_set_bytes(&r->out->nexthop, r->family, nla_data(tb[RTA_GATEWAY]));
		r->out->has_gateway = true;
	}
	if (tb[RTA_METRICS]) {
		struct nlattr *mx[RTAX_MAX + 1];

		if (nla_parse_nested(mx, RTAX_MAX, tb[RTA_METRICS], NULL) == 0 && mx[RTAX_MTU])
			r->out->mtu = nla_get_u32(mx[RTAX_MTU]);
	}
	if (tb[RTA_PREFSRC] &&
	    nla_len(tb[RTA_PREFSRC]) == (r->family == AF_INET ? 4 : 16)) {
		sr_addr_set_bytes(&r->out->src, r->family, nla_data(tb[RTA_PREFSRC]));
		r->have_src = true;
	}
	return NL_OK;
}

static int sr_route_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg)
{
	struct sr_route_req *r = arg;

	r->err = err->error < 0 ? err->error : -err->error;
	return NL_STOP;
}

/*
 * The kernel leaves RTA_PREFSRC out when no address is preferred; a connected UDP socket
 * asks it for the source it would use (no packet is sent).
 */
static int sr_route_src_by_udp(const struct sockaddr *dst, const struct sockaddr *src, int oif,
			       struct sockaddr_storage *out)
{
	struct sockaddr_storage d;
	socklen_t len = sizeof(*out);
	int fd, err = 0;

	memcpy(&d, dst, sr_addr_len(dst));
	if (d.ss_family == AF_INET)
		((struct sockaddr_in *)&d)->sin_port = htons(9);
	else
		((struct sockaddr_in6 *)&d)->sin6_port = htons(9);
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (oif > 0 && dst->sa_family == AF_INET6 && !((struct sockaddr_in6 *)&d)->sin6_scope_id)
		((struct sockaddr_in6 *)&d)->sin6_scope_id = (uint32_t)oif;
	if (src && !sr_addr_is_any(src) && bind(fd, src, sr_addr_len(src)) < 0)
		err = -errno;
	if (!err && connect(fd, (struct sockaddr *)&d, sr_addr_len(dst)) < 0)
		err = -errno;
	if (!err && getsockname(fd, (struct sockaddr *)out, &len) < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	if (out->ss_family == AF_INET)
		((struct sockaddr_in *)out)->sin_port = 0;
	else
		((struct sockaddr_in6 *)out)->sin6_port = 0;
	return 0;
}

static bool sr_is_link_local(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

int sr_route_lookup(const struct sockaddr *dst, const struct sockaddr *src, int oif,
		    struct sr_route *out)
{
	struct sr_route_req r = { .out = out };
	struct rtmsg rtm = { 0 };
	struct nl_cb *cb;
	struct nl_sock *sk;
	struct nl_msg *msg;
	const void *bytes;
	unsigned int blen;
	int err, owner;

	if (!dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return -EINVAL;
	if (src && !sr_addr_is_any(src) && src->sa_family != dst->sa_family)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	r.family = dst->sa_family;
	if (!oif && sr_is_link_local(dst))
		oif = (int)((const struct sockaddr_in6 *)dst)->sin6_scope_id;
	if (!oif && src && sr_is_link_local(src))
		oif = (int)((const struct sockaddr_in6 *)src)->sin6_scope_id;
	if (sr_is_link_local(dst) && !oif)
		return -EINVAL;

	msg = nlmsg_alloc_simple(RTM_GETROUTE, 0);
	cb = nl_cb_alloc(NL_CB_DEFAULT); /* per request: the shared socket keeps no pointer to r */
	if (!msg || !cb) {
		nlmsg_free(msg);
		nl_cb_put(cb);
		return -ENOMEM;
	}
	rtm.rtm_family = (unsigned char)dst->sa_family;
	bytes = sr_addr_bytes(dst, &blen);
	rtm.rtm_dst_len = (unsigned char)(blen * 8);
	err = nlmsg_append(msg, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 ? -ENOMEM : 0;
	if (!err && nla_put(msg, RTA_DST, (int)blen, bytes) < 0)
		err = -ENOMEM;
	if (!err && src && !sr_addr_is_any(src)) {
		bytes = sr_addr_bytes(src, &blen);
		if (nla_put(msg, RTA_SRC, (int)blen, bytes) < 0)
			err = -ENOMEM;
	}
	if (!err && oif > 0 && nla_put_u32(msg, RTA_OIF, (uint32_t)oif) < 0)
		err = -ENOMEM;
	if (!err) {
		nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, sr_route_valid, &r);
		nl_cb_err(cb, NL_CB_CUSTOM, sr_route_error, &r);
		err = sr_route_sock_get(&sk);
	}
	if (!err) {
		bool ok = nl_send_auto(sk, msg) >= 0;

		/* the kernel's NLMSG_ERROR answer (r.err) leaves the socket in step */
		if (ok && nl_recvmsgs(sk, cb) < 0 && !r.err)
			ok = false;
		sr_route_sock_put(ok);
		if (!ok)
			err = -EIO;
	}
	nlmsg_free(msg);
	nl_cb_put(cb);
	if (err)
		return err;
	if (r.err)
		return r.err;
	if (!r.got)
		return -EIO;

	if (!r.have_src) {
		if (src && !sr_addr_is_any(src)) {
			memcpy(&out->src, src, sr_addr_len(src));
		} else {
			err = sr_route_src_by_udp(dst, src, oif ? oif : out->oif, &out->src);
			if (err)
				return err;
		}
	}
	if (out->src.ss_family == AF_INET)
		((struct sockaddr_in *)&out->src)->sin_port = 0;
	else
		((struct sockaddr_in6 *)&out->src)->sin6_port = 0;
	if (out->src.ss_family == AF_INET6 &&
	    sr_is_link_local((struct sockaddr *)&out->src))
		((struct sockaddr_in6 *)&out->src)->sin6_scope_id = (uint32_t)out->oif;

	if (!out->has_gateway)
		memcpy(&out->nexthop, dst, sr_addr_len(dst));
	sr_addr_set_port((struct sockaddr *)&out->nexthop, 0);
	if (out->nexthop.ss_family == AF_INET6 &&
	    sr_is_link_local((struct sockaddr *)&out->nexthop))
		((struct sockaddr_in6 *)&out->nexthop)->sin6_scope_id = (uint32_t)out->oif;

	out->dev_ifindex = out->oif;
	/* 127.0.0.0/8 and ::1 are lo's (docs/ARCHITECTURE.md): no address dump for them */
	if (out->local && !sr_addr_is_loopback(dst)) {
		owner = sr_addr_owner(dst);
		if (owner > 0)
			out->dev_ifindex = owner;
	}
	return 0;
}

int sr_addr_owner(const struct sockaddr *addr)
{
	struct nl_cache *cache = NULL;
	struct nl_object *obj;
	struct nl_sock *sk;
	const void *want;
	unsigned int wlen;
	uint32_t scope = 0;
	int err, found = -EADDRNOTAVAIL;

	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return -EINVAL;
	want = sr_addr_bytes(addr, &wlen);
	if (sr_is_link_local(addr))
		scope = ((const struct sockaddr_in6 *)addr)->sin6_scope_id;
	err = sr_route_sock_get(&sk);
	if (err)
		return err;
	if (rtnl_addr_alloc_cache(sk, &cache) < 0) {
		sr_route_sock_put(false);
		return -EIO;
	}
	sr_route_sock_put(true);
	for (obj = nl_cache_get_first(cache); obj; obj = nl_cache_get_next(obj)) {
		struct rtnl_addr *a = (struct rtnl_addr *)obj;
		struct nl_addr *local = rtnl_addr_get_local(a);

		if (rtnl_addr_get_family(a) != addr->sa_family || !local)
			continue;
		if (nl_addr_get_len(local) != wlen ||
		    memcmp(nl_addr_get_binary_addr(local), want, wlen) != 0)
			continue;
		if (scope && (uint32_t)rtnl_addr_get_ifindex(a) != scope)
			continue;
		found = rtnl_addr_get_ifindex(a);
		break;
	}
	nl_cache_free(cache);
	return found;
}
