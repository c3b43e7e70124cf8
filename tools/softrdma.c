// SPDX-License-Identifier: MIT
/*
 * softrdma: run a program on softrdma, or show what softrdma sees.
 *   softrdma run -- CMD [ARGS...]   run CMD with our libibverbs/librdmacm first
 *   softrdma devices                print the device table
 *   softrdma config                 print the runtime tunables
 *   softrdma doctor [--connections N] [PROGRAM]   what limits a program here (doctor.c)
 *   softrdma --version              our version and the rdma-core ABI we implement
 * The library folder is found next to this binary: ../lib in the build tree,
 * ../lib/softrdma (SR_PRIVATE_LIBDIR) after `cmake --install`.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <infiniband/verbs.h>

#include "common/sr_config.h"
#include "doctor.h"

#ifndef SR_INSTALL_REL_LIBDIR
#define SR_INSTALL_REL_LIBDIR "lib/softrdma"
#endif
/* Both come from CMake: project(VERSION) and the libibverbs headers we were built against. */
#ifndef SR_VERSION
#define SR_VERSION "unknown"
#endif
#ifndef SR_RDMA_CORE_VERSION
#define SR_RDMA_CORE_VERSION "unknown"
#endif

static int usage(FILE *out)
{
	fprintf(out, "usage: softrdma run -- CMD [ARGS...]\n"
		     "       softrdma devices\n"
		     "       softrdma config\n"
		     "       softrdma doctor [--connections N] [PROGRAM]\n"
		     "       softrdma --version\n");
	return out == stderr ? 2 : 0;
}

/* The folder holding our libibverbs.so.1, relative to where this binary lives. */
static int find_libdir(char *out, size_t size)
{
	static const char *const rel[] = { "../" SR_INSTALL_REL_LIBDIR, "../lib" };
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n < 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char probe[PATH_MAX + 64];

		snprintf(probe, sizeof(probe), "%s/%s/libibverbs.so.1", self, rel[i]);
		if (access(probe, R_OK) == 0) {
			char *real = realpath(probe, NULL);

			if (!real)
				return -1;
			*strrchr(real, '/') = '\0';
			snprintf(out, size, "%s", real);
			free(real);
			return 0;
		}
	}
	return -1;
}

static int cmd_run(int argc, char **argv)
{
	char libdir[PATH_MAX];
	const char *old = getenv("LD_LIBRARY_PATH");
	char *path;

	if (argc > 0 && strcmp(argv[0], "--") == 0) {
		argc--;
		argv++;
	}
	if (argc < 1)
		return usage(stderr);
	if (find_libdir(libdir, sizeof(libdir))) {
		fprintf(stderr, "softrdma: cannot find libibverbs.so.1 next to this program\n");
		return 1;
	}
	if (asprintf(&path, "%s%s%s", libdir, old && *old ? ":" : "", old ? old : "") < 0)
		return 1;
	setenv("LD_LIBRARY_PATH", path, 1);
	free(path);
	execvp(argv[0], argv);
	fprintf(stderr, "softrdma: %s: %s\n", argv[0], strerror(errno));
	return 127;
}

static int cmd_devices(void)
{
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	if (!list) {
		perror("softrdma: ibv_get_device_list");
		return 1;
	}
	printf("%-20s %-16s %-8s %-12s %-6s %s\n", "device", "interface", "ifindex", "state",
	       "mtu", "node GUID");
	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		struct ibv_port_attr pa;
		char ifname[IF_NAMESIZE] = "?";
		uint64_t guid = be64toh(ibv_get_device_guid(list[i]));
		int ifindex = ibv_get_device_index(list[i]);

		if (!ctx || ibv_query_port(ctx, 1, &pa)) {
			printf("%-20s (cannot query)\n", ibv_get_device_name(list[i]));
			if (ctx)
				ibv_close_device(ctx);
			continue;
		}
		if_indextoname(ifindex, ifname);
		printf("%-20s %-16s %-8d %-12s %-6d %016llx\n", ibv_get_device_name(list[i]),
		       ifname, ifindex, ibv_port_state_str(pa.state),
		       128 << pa.active_mtu, (unsigned long long)guid);
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	return 0;
}

static int cmd_config(void)
{
	unsigned int n;
	const struct sr_tunable *t = sr_config_table(&n);

	for (unsigned int i = 0; i < n; i++)
		printf("%s=%s\n    %s\n", t[i].name, sr_config_str(t[i].name), t[i].doc);
	return 0;
}

static int cmd_doctor(int argc, char **argv)
{
	char libdir[PATH_MAX];

	return sr_doctor(argc, argv, find_libdir(libdir, sizeof(libdir)) ? NULL : libdir);
}

static int cmd_version(void)
{
	printf("softrdma %s (rdma-core %s ABI: libibverbs.so.1, librdmacm.so.1)\n", SR_VERSION,
	       SR_RDMA_CORE_VERSION);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr);
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 2, argv + 2);
	if (strcmp(argv[1], "devices") == 0)
		return cmd_devices();
	if (strcmp(argv[1], "config") == 0)
		return cmd_config();
	if (strcmp(argv[1], "doctor") == 0)
		return cmd_doctor(argc - 2, argv + 2);
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)
		return cmd_version();
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)
		return usage(stdout);
	return usage(stderr);
}
