// SPDX-License-Identifier: MIT
/*
 * Unloading: dlopen() a plugin linked against our libraries (lc_plugin.c), use it (a
 * connection over loopback, left disconnecting), dlclose() it, many times. This program
 * does not link librdmacm or libibverbs, so the plugin's dlclose() would unload them with
 * their engine threads still running, and the next event on an old connection would run
 * unmapped code. They are built -z nodelete and stay loaded: every round must complete and
 * the process must exit cleanly.
 * Usage: lc_unload <plugin.so> [rounds] [address]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 20;
	const char *addr = argc > 3 ? argv[3] : "127.0.0.1";

	if (argc < 2) {
		fprintf(stderr, "usage: lc_unload <plugin.so> [rounds] [address]\n");
		return 2;
	}
	for (int i = 0; i < rounds; i++) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		int (*run)(const char *);
		void *still;

		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		run = (int (*)(const char *))dlsym(h, "lc_plugin_run");
		if (!run || run(addr)) {
			fprintf(stderr, "round %d: the plugin failed\n", i);
			return 1;
		}
		if (dlclose(h)) {
			fprintf(stderr, "dlclose: %s\n", dlerror());
			return 1;
		}
		still = dlopen("librdmacm.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (i == 0)
			printf("after dlclose, librdmacm is %s\n", still ? "still loaded" : "unloaded");
		if (still)
			dlclose(still);
	}
	printf("%d rounds of dlopen/connect/dlclose\n", rounds);
	return 0;
}
