// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "netdev/sr_netdev.h"

static void dump_has_loopback(void **state)
{
	struct sr_netdev_link *links;
	size_t n;
	bool found = false;

	assert_int_equal(sr_netdev_dump_links(&links, &n), 0);
	assert_true(n >= 1);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(links[i].name, "lo") == 0) {
			found = true;
			assert_int_equal(links[i].ifindex, (int)if_nametoindex("lo"));
			assert_true(links[i].mtu > 0);
			assert_true(links[i].has_mac); /* all-zero, but 6 bytes long */
		}
	}
	free(links);
	assert_true(found);
}

static void get_by_index(void **state)
{
	struct sr_netdev_link l;

	assert_int_equal(sr_netdev_get_link((int)if_nametoindex("lo"), &l), 0);
	assert_string_equal(l.name, "lo");
	assert_int_equal(sr_netdev_get_link(0x7ffffff0, &l), -ENODEV);
}

static void running_needs_up_and_carrier(void **state)
{
	struct sr_netdev_link l = { .flags = IFF_UP };

	assert_false(sr_netdev_link_running(&l));
	l.flags = IFF_UP | IFF_RUNNING;
	assert_true(sr_netdev_link_running(&l));
	l.flags = IFF_RUNNING;
	assert_false(sr_netdev_link_running(&l));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dump_has_loopback),
		cmocka_unit_test(get_by_index),
		cmocka_unit_test(running_needs_up_and_carrier),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
