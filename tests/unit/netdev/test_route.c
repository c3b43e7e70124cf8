// SPDX-License-Identifier: MIT
/* Route and address-ownership queries (netdev/route.c) against this namespace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "netdev/sr_route.h"

static struct sockaddr_in v4(const char *ip)
{
	struct sockaddr_in s = { .sin_family = AF_INET };

	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

static struct sockaddr_in6 v6(const char *ip)
{
	struct sockaddr_in6 s = { .sin6_family = AF_INET6 };

	inet_pton(AF_INET6, ip, &s.sin6_addr);
	return s;
}

static bool have_v6_loopback(void)
{
	struct sockaddr_in6 a = v6("::1");
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

	if (fd >= 0)
		close(fd);
	return ok;
}

static void helpers(void **state)
{
	struct sockaddr_in a = v4("0.0.0.0"), l = v4("127.0.0.5"), o = v4("192.0.2.1");
	struct sockaddr_in6 a6 = v6("::"), l6 = v6("::1"), m6 = v6("::ffff:127.0.0.1");
	struct sockaddr un = { .sa_family = AF_UNIX };

	assert_true(sr_addr_is_any((struct sockaddr *)&a));
	assert_true(sr_addr_is_any((struct sockaddr *)&a6));
	assert_false(sr_addr_is_any((struct sockaddr *)&o));
	assert_true(sr_addr_is_loopback((struct sockaddr *)&l));
	assert_true(sr_addr_is_loopback((struct sockaddr *)&l6));
	assert_true(sr_addr_is_loopback((struct sockaddr *)&m6));
	assert_false(sr_addr_is_loopback((struct sockaddr *)&o));
	assert_true(sr_addr_is_v4mapped((struct sockaddr *)&m6));
	assert_false(sr_addr_is_v4mapped((struct sockaddr *)&l6));
	assert_int_equal(sr_addr_len((struct sockaddr *)&o), sizeof(struct sockaddr_in));
	assert_int_equal(sr_addr_len((struct sockaddr *)&l6), sizeof(struct sockaddr_in6));
	assert_int_equal(sr_addr_len(&un), 0);
}

static void loopback_v4(void **state)
{
	struct sockaddr_in dst = v4("127.0.0.1"), dst2 = v4("127.0.0.2");
	struct sr_route rt;
	int lo = (int)if_nametoindex("lo");

	assert_int_equal(sr_route_lookup((struct sockaddr *)&dst, NULL, 0, &rt), 0);
	assert_true(rt.local);
	assert_int_equal(rt.oif, lo);
	assert_int_equal(rt.dev_ifindex, lo);
	assert_int_equal(rt.src.ss_family, AF_INET);
	assert_int_equal(((struct sockaddr_in *)&rt.src)->sin_addr.s_addr, dst.sin_addr.s_addr);
	assert_int_equal(((struct sockaddr_in *)&rt.src)->sin_port, 0);
	/* 127/8 beyond .1: owned by nobody, routed to lo */
	assert_int_equal(sr_route_lookup((struct sockaddr *)&dst2, NULL, 0, &rt), 0);
	assert_true(rt.local);
	assert_int_equal(rt.dev_ifindex, lo);
	assert_int_equal(sr_addr_owner((struct sockaddr *)&dst), lo);
	assert_int_equal(sr_addr_owner((struct sockaddr *)&dst2), -EADDRNOTAVAIL);
}

static void loopback_v6(void **state)
{
	struct sockaddr_in6 dst = v6("::1");
	struct sr_route rt;
	int lo = (int)if_nametoindex("lo");

	if (!have_v6_loopback())
		skip();
	assert_int_equal(sr_route_lookup((struct sockaddr *)&dst, NULL, 0, &rt), 0);
	assert_true(rt.local);
	assert_int_equal(rt.dev_ifindex, lo);
	assert_int_equal(rt.src.ss_family, AF_INET6);
	assert_memory_equal(&((struct sockaddr_in6 *)&rt.src)->sin6_addr, &dst.sin6_addr, 16);
	assert_int_equal(sr_addr_owner((struct sockaddr *)&dst), lo);
}

/* Our own non-loopback address: local route, device = the interface that owns it. */
static void own_address(void **state)
{
	struct ifaddrs *ifa, *i;
	bool done = false;

	assert_int_equal(getifaddrs(&ifa), 0);
	for (i = ifa; i && !done; i = i->ifa_next) {
		struct sr_route rt;
		int idx;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    sr_addr_is_loopback(i->ifa_addr))
			continue;
		idx = (int)if_nametoindex(i->ifa_name);
		assert_int_equal(sr_addr_owner(i->ifa_addr), idx);
		assert_int_equal(sr_route_lookup(i->ifa_addr, NULL, 0, &rt), 0);
		assert_true(rt.local);
		assert_int_equal(rt.dev_ifindex, idx); /* never lo for an interface's address */
		assert_int_equal(((struct sockaddr_in *)&rt.src)->sin_addr.s_addr,
				 ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		done = true;
	}
	freeifaddrs(ifa);
	if (!done)
		skip();
}

static void errors(void **state)
{
	struct sockaddr un = { .sa_family = AF_UNIX };
	struct sockaddr_in6 ll = v6("fe80::1"), dst6 = v6("::1");
	struct sockaddr_in src4 = v4("127.0.0.1"), doc = v4("192.0.2.7");
	struct sr_route rt;

	assert_int_equal(sr_route_lookup(&un, NULL, 0, &rt), -EINVAL);
	assert_int_equal(sr_route_lookup(NULL, NULL, 0, &rt), -EINVAL);
	/* link-local without an interface cannot be routed */
	assert_int_equal(sr_route_lookup((struct sockaddr *)&ll, NULL, 0, &rt), -EINVAL);
	/* mixed families */
	assert_int_equal(sr_route_lookup((struct sockaddr *)&dst6, (struct sockaddr *)&src4, 0,
					 &rt), -EINVAL);
	assert_int_equal(sr_addr_owner((struct sockaddr *)&doc), -EADDRNOTAVAIL);
	assert_int_equal(sr_addr_owner(&un), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(helpers),
		cmocka_unit_test(loopback_v4),
		cmocka_unit_test(loopback_v6),
		cmocka_unit_test(own_address),
		cmocka_unit_test(errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
