/* SPDX-License-Identifier: MIT */
/*
 * Every runtime tunable is declared once in config.c (name, default, doc) and read only
 * through these helpers; no other file calls getenv(). docs/CONFIG.md lists them and
 * `softrdma config` prints them.
 */
#ifndef SR_CONFIG_H
#define SR_CONFIG_H

#include <stdbool.h>

struct sr_tunable {
	const char *name;     /* environment variable */
	const char *def;      /* default, as text */
	const char *doc;
	bool secure;          /* names a path or weakens a check: secure_getenv (config.c) */
};

/*
 * Value of a registered tunable (environment or default). Unknown names abort in debug. A
 * secure tunable has its default in a set-user-ID or set-group-ID program.
 */
const char *sr_config_str(const char *name);
long sr_config_long(const char *name);
/* Whether the environment sets the secure tunable name but this program may not use it. */
bool sr_config_withheld(const char *name);
bool sr_config_bool(const char *name);
/* A bound in milliseconds: the tunable when it is 1 to 600000, else def. */
unsigned int sr_config_ms(const char *name, unsigned int def);

/* Iterate the table (for `softrdma config` and docs). */
const struct sr_tunable *sr_config_table(unsigned int *count);

#endif
