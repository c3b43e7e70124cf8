// SPDX-License-Identifier: MIT
/*
 * The port-space rules of cm/port_space.c as pure functions: rule 1 (explicit ports:
 * EADDRINUSE / EADDRNOTAVAIL / REUSEADDR / address-family-only) and rule 2 (which ids may
 * share a port chosen for them: distinct 4-tuples only).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "cm/cm_priv.h"

static struct sockaddr_storage A(const char *ip, int port)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (!ip)
		return ss; /* AF_UNSPEC: no address yet (an id without a destination) */
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, ip, &s6->sin6_addr);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, ip, &s4->sin_addr);
	}
	return ss;
}

#define SA(x) ((const struct sockaddr *)&(x))

static int explicit(const char *a, bool ar, const char *b, bool br)
{
	struct sockaddr_storage x = A(a, 7000), y = A(b, 7000);

	return sr_cm_port_rule_explicit(SA(x), ar, true, SA(y), br, true);
}

static void test_explicit_addresses(void **state)
{
	(void)state;
	assert_int_equal(explicit("10.0.0.1", false, "10.0.0.1", false), -EADDRINUSE);
	assert_int_equal(explicit("10.0.0.1", false, "10.0.0.2", false), 0);
	assert_int_equal(explicit("0.0.0.0", false, "10.0.0.2", false), -EADDRNOTAVAIL);
	assert_int_equal(explicit("10.0.0.2", false, "0.0.0.0", false), -EADDRNOTAVAIL);
	assert_int_equal(explicit("0.0.0.0", false, "0.0.0.0", false), -EADDRNOTAVAIL);
	/* loopback is a wildcard to the kernel CM (cma_any_addr) */
	assert_int_equal(explicit("127.0.0.1", false, "127.0.0.1", false), -EADDRNOTAVAIL);
	assert_int_equal(explicit("127.0.0.1", false, "10.0.0.1", false), -EADDRNOTAVAIL);
	assert_int_equal(explicit("::1", false, "fd00::1", false), -EADDRNOTAVAIL);
	assert_int_equal(explicit("fd00::1", false, "fd00::1", false), -EADDRINUSE);
	assert_int_equal(explicit("fd00::1", false, "fd00::2", false), 0);
}

static void test_explicit_reuse(void **state)
{
	(void)state;
	/* both must ask for it */
	assert_int_equal(explicit("10.0.0.1", true, "10.0.0.1", true), 0);
	assert_int_equal(explicit("0.0.0.0", true, "10.0.0.1", true), 0);
	assert_int_equal(explicit("10.0.0.1", true, "10.0.0.1", false), -EADDRINUSE);
	assert_int_equal(explicit("10.0.0.1", false, "10.0.0.1", true), -EADDRINUSE);
}

static void test_explicit_families(void **state)
{
	struct sockaddr_storage v4 = A("0.0.0.0", 7000), v6 = A("::", 7000);

	(void)state;
	/* both family-only: an IPv4 and an IPv6 wildcard coexist */
	assert_int_equal(sr_cm_port_rule_explicit(SA(v4), false, true, SA(v6), false, true), 0);
	/* an IPv6 wildcard that also takes IPv4 conflicts with any IPv4 bind */
	assert_int_equal(sr_cm_port_rule_explicit(SA(v4), false, true, SA(v6), false, false),
			 -EADDRNOTAVAIL);
}

static bool unique(const char *sa, int sp, const char *da, int dp, const char *sb, int spb,
		   const char *db, int dpb)
{
	struct sockaddr_storage s1 = A(sa, sp), d1 = A(da, dp), s2 = A(sb, spb), d2 = A(db, dpb);

	return sr_cm_port_rule_unique(SA(s1), SA(d1), SA(s2), SA(d2));
}

static void test_unique_tuples(void **state)
{
	(void)state;
	/* same source, different destination port: share */
	assert_true(unique("127.0.0.1", 0, "127.0.0.1", 7001, "127.0.0.1", 0, "127.0.0.1", 7002));
	/* same source and destination: no */
	assert_false(unique("10.0.0.1", 0, "10.0.0.9", 7001, "10.0.0.1", 0, "10.0.0.9", 7001));
	/* different destination address, same port: share */
	assert_true(unique("10.0.0.1", 0, "10.0.0.9", 7001, "10.0.0.1", 0, "10.0.0.8", 7001));
	/* different specific source: share */
	assert_true(unique("10.0.0.1", 0, "10.0.0.9", 7001, "10.0.0.2", 0, "10.0.0.9", 7001));
	/* loopback destinations are specific addresses here (TCP's 4-tuple) */
	assert_true(unique("127.0.0.1", 0, "127.0.0.1", 7001, "127.0.0.1", 0, "127.0.0.2", 7001));
}

static void test_unique_without_destination(void **state)
{
	(void)state;
	/* a listener / explicit bind has no destination: never shared through its dst */
	assert_false(unique("10.0.0.1", 0, "10.0.0.9", 7001, "10.0.0.1", 0, NULL, 0));
	assert_false(unique("10.0.0.1", 0, NULL, 0, "10.0.0.1", 0, NULL, 0));
	assert_false(unique("0.0.0.0", 0, "10.0.0.9", 7001, "10.0.0.1", 0, NULL, 0));
	/* ... except by a different specific source address */
	assert_true(unique("10.0.0.2", 0, "10.0.0.9", 7001, "10.0.0.1", 0, NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_explicit_addresses),
		cmocka_unit_test(test_explicit_reuse),
		cmocka_unit_test(test_explicit_families),
		cmocka_unit_test(test_unique_tuples),
		cmocka_unit_test(test_unique_without_destination),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
