// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/sr_config.h"
#include "common/sr_list.h"
#include "common/sr_tunables.h"

static void defaults_and_overrides(void **state)
{
	unsetenv("SOFTRDMA_MPA_CRC");
	assert_true(sr_config_bool("SOFTRDMA_MPA_CRC"));
	setenv("SOFTRDMA_MPA_CRC", "0", 1);
	assert_false(sr_config_bool("SOFTRDMA_MPA_CRC"));
	setenv("SOFTRDMA_MPA_CRC", "off", 1);
	assert_false(sr_config_bool("SOFTRDMA_MPA_CRC"));
	setenv("SOFTRDMA_MPA_CRC", "yes", 1);
	assert_true(sr_config_bool("SOFTRDMA_MPA_CRC"));
	unsetenv("SOFTRDMA_MPA_REV");
	assert_int_equal(sr_config_long("SOFTRDMA_MPA_REV"), 2);
	assert_string_equal(sr_config_str("SOFTRDMA_DEVICE_PREFIX"), "sriw_");
}

/*
 * The defaults the layers use as numbers (sr_tunables.h) are the table's: unset, each
 * tunable reads as its macro, and a bound in milliseconds is within sr_config_ms's range.
 */
static void numeric_defaults_match_the_table(void **state)
{
	static const struct {
		const char *name;
		long def;
		bool ms;
	} d[] = {
		{ "SOFTRDMA_ACCEPT_TIMEOUT_MS", SR_DEFAULT_ACCEPT_TIMEOUT_MS, true },
		{ "SOFTRDMA_CLOSE_TIMEOUT_MS", SR_DEFAULT_CLOSE_TIMEOUT_MS, true },
		{ "SOFTRDMA_TERM_TIMEOUT_MS", SR_DEFAULT_TERM_TIMEOUT_MS, true },
		{ "SOFTRDMA_POLL_LEASE_US", SR_DEFAULT_POLL_LEASE_US, false },
	};
	unsigned int n;
	const struct sr_tunable *t = sr_config_table(&n);

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		unsigned int j = 0;

		while (j < n && strcmp(t[j].name, d[i].name) != 0)
			j++;
		assert_true(j < n);
		assert_int_equal(strtol(t[j].def, NULL, 10), d[i].def);
		unsetenv(d[i].name);
		assert_int_equal(sr_config_long(d[i].name), d[i].def);
		if (d[i].ms)
			assert_int_equal(sr_config_ms(d[i].name, 0), d[i].def);
	}
}

static void unknown_names_are_not_tunables(void **state)
{
	setenv("SOFTRDMA_NOT_A_TUNABLE", "1", 1);
	assert_null(sr_config_str("SOFTRDMA_NOT_A_TUNABLE"));
	assert_false(sr_config_bool("SOFTRDMA_NOT_A_TUNABLE"));
}

static void table_is_documented(void **state)
{
	unsigned int n;
	const struct sr_tunable *t = sr_config_table(&n);

	assert_true(n >= 5);
	for (unsigned int i = 0; i < n; i++) {
		assert_non_null(t[i].name);
		assert_non_null(t[i].def);
		assert_true(t[i].doc && t[i].doc[0]);
	}
}

/* docs/CONFIG.md must list exactly the registered tunables. */
static void docs_list_every_tunable(void **state)
{
	unsigned int n;
	const struct sr_tunable *t = sr_config_table(&n);
	FILE *f = fopen(SR_SRCDIR "/docs/CONFIG.md", "r");
	char line[1024];
	unsigned int rows = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		bool known = false;

		if (strncmp(line, "| `SOFTRDMA_", 12) != 0)
			continue;
		rows++;
		for (unsigned int i = 0; i < n; i++) {
			size_t l = strlen(t[i].name);

			known |= strncmp(line + 3, t[i].name, l) == 0 && line[3 + l] == '`';
		}
		assert_true(known);
	}
	fclose(f);
	assert_int_equal(rows, n);
}

struct item {
	int v;
	struct sr_list node;
};

static void list_basics(void **state)
{
	struct sr_list head = SR_LIST_INIT(head), *pos, *tmp;
	struct item it[3] = { { .v = 1 }, { .v = 2 }, { .v = 3 } };
	int sum = 0;

	assert_true(sr_list_empty(&head));
	for (int i = 0; i < 3; i++)
		sr_list_add_tail(&head, &it[i].node);
	assert_int_equal(sr_list_first(&head, struct item, node)->v, 1);
	sr_list_del(&it[0].node);
	assert_int_equal(sr_list_first(&head, struct item, node)->v, 2);
	sr_list_for_each_safe(pos, tmp, &head) {
		sum += sr_list_entry(pos, struct item, node)->v;
		sr_list_del(pos);
	}
	assert_int_equal(sum, 5);
	assert_true(sr_list_empty(&head));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_and_overrides),
		cmocka_unit_test(numeric_defaults_match_the_table),
		cmocka_unit_test(unknown_names_are_not_tunables),
		cmocka_unit_test(table_is_documented),
		cmocka_unit_test(docs_list_every_tunable),
		cmocka_unit_test(list_basics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
