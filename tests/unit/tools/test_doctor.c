// SPDX-License-Identifier: MIT
/* The pure parts of `softrdma doctor` (tools/doctor.h) and softrdma(7)'s list of tunables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "common/sr_config.h"
#include "doctor.h"

static void nofile_arithmetic(void **state)
{
	assert_int_equal(sr_doc_fds_needed(0), SR_DOC_FD_RESERVE);
	assert_int_equal(sr_doc_fds_needed(1000), 1000 + SR_DOC_FD_RESERVE);
	/* the soft limit covers it, exactly or more */
	assert_int_equal(sr_doc_nofile_level(1024, 4096, 356), SR_DOC_OK);
	assert_int_equal(sr_doc_nofile_level(356, 356, 356), SR_DOC_OK);
	assert_int_equal(sr_doc_nofile_level(RLIM_INFINITY, RLIM_INFINITY, 1ull << 40), SR_DOC_OK);
	/* only the hard limit does: the soft one can be raised without privilege */
	assert_int_equal(sr_doc_nofile_level(355, 356, 356), SR_DOC_WARN);
	assert_int_equal(sr_doc_nofile_level(64, RLIM_INFINITY, 100000), SR_DOC_WARN);
	/* neither */
	assert_int_equal(sr_doc_nofile_level(64, 64, 356), SR_DOC_FAIL);
	assert_int_equal(sr_doc_nofile_level(1024, 20000, 30256), SR_DOC_FAIL);
}

static void port_range_text(void **state)
{
	unsigned int lo = 0, hi = 0;

	assert_int_equal(sr_doc_parse_port_range("32768\t60999\n", &lo, &hi), 0);
	assert_int_equal(lo, 32768);
	assert_int_equal(hi, 60999);
	assert_int_equal(sr_doc_parse_port_range(" 1024 65535", &lo, &hi), 0);
	assert_int_equal(lo, 1024);
	assert_int_equal(hi, 65535);
	assert_int_equal(sr_doc_parse_port_range("40000 40000\n", &lo, &hi), 0);
	assert_int_equal(hi - lo + 1, 1);
	assert_int_equal(sr_doc_parse_port_range("", &lo, &hi), -1);
	assert_int_equal(sr_doc_parse_port_range("5000\n", &lo, &hi), -1);
	assert_int_equal(sr_doc_parse_port_range("6000 5000", &lo, &hi), -1);
	assert_int_equal(sr_doc_parse_port_range("1 70000", &lo, &hi), -1);
	assert_int_equal(sr_doc_parse_port_range("1 2 3", &lo, &hi), -1);
	assert_int_equal(sr_doc_parse_port_range("-1 20", &lo, &hi), -1);
	assert_int_equal(sr_doc_parse_port_range("a b", &lo, &hi), -1);
}

static void reserved_ports(void **state)
{
	assert_int_equal(sr_doc_reserved_in_range("", 32768, 60999), 0);
	assert_int_equal(sr_doc_reserved_in_range("\n", 32768, 60999), 0);
	assert_int_equal(sr_doc_reserved_in_range("8080,9000-9010\n", 1024, 65535), 12);
	/* only what lies in the range counts */
	assert_int_equal(sr_doc_reserved_in_range("8080,9000-9010\n", 32768, 60999), 0);
	assert_int_equal(sr_doc_reserved_in_range("100-200", 150, 160), 11);
	assert_int_equal(sr_doc_reserved_in_range("40000-40009\n", 40000, 40099), 10);
	assert_int_equal(sr_doc_reserved_in_range("65535", 0, 65535), 1);
	/* overlapping entries count each port once */
	assert_int_equal(sr_doc_reserved_in_range("10-20,15-25,20", 0, 100), 16);
	assert_int_equal(sr_doc_reserved_in_range("5-", 0, 100), -1);
	assert_int_equal(sr_doc_reserved_in_range("10-5", 0, 100), -1);
	assert_int_equal(sr_doc_reserved_in_range("1,,2", 0, 100), -1);
	assert_int_equal(sr_doc_reserved_in_range("x", 0, 100), -1);
	assert_int_equal(sr_doc_reserved_in_range("70000", 0, 100), -1);
}

static void loader_trace(void **state)
{
	static const char trace[] =
		"\tlinux-vdso.so.1 (0x00007ffd5e7f2000)\n"
		"\tlibibverbs.so.10 => /elsewhere/libibverbs.so.10 (0x00007f0000000000)\n"
		"\tlibibverbs.so.1 => /opt/softrdma/lib/softrdma/libibverbs.so.1 (0x00007f1a2b3c4000)\n"
		"\tlibrdmacm.so.1 => not found\n"
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f1a2b000000)\n"
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f1a2b5e0000)";
	char path[256] = "x";

	assert_int_equal(sr_doc_trace_find(trace, "libibverbs.so.1", path, sizeof(path)), 1);
	assert_string_equal(path, "/opt/softrdma/lib/softrdma/libibverbs.so.1");
	assert_int_equal(sr_doc_trace_find(trace, "librdmacm.so.1", path, sizeof(path)), 0);
	assert_string_equal(path, "");
	assert_int_equal(sr_doc_trace_find(trace, "libc.so.6", path, sizeof(path)), 1);
	assert_string_equal(path, "/lib/x86_64-linux-gnu/libc.so.6");
	assert_int_equal(sr_doc_trace_find(trace, "libnl-3.so.200", path, sizeof(path)), -1);
	assert_int_equal(sr_doc_trace_find(trace, "linux-vdso.so.1", path, sizeof(path)), -1);
	assert_int_equal(sr_doc_trace_find("", "libibverbs.so.1", path, sizeof(path)), -1);
	/* a path longer than the buffer is cut, not overrun */
	assert_int_equal(sr_doc_trace_find(trace, "libibverbs.so.1", path, 8), 1);
	assert_string_equal(path, "/opt/so");
}

/* A file in TMPDIR with these bytes; its path in out. */
static void write_file(char *out, size_t size, const void *bytes, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(out, size, "%s/sr-doctor-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(out);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, len), (ssize_t)len);
	close(fd);
}

static void elf_interpreter(void **state)
{
	struct {
		Elf64_Ehdr eh;
		Elf64_Phdr ph;
	} img = { 0 };
	char interp[256], path[512];

	/* this test program is dynamically linked: its loader exists */
	assert_int_equal(sr_doc_elf_interp("/proc/self/exe", interp, sizeof(interp)), 1);
	assert_int_equal(access(interp, X_OK), 0);
	/* a text file is not ELF */
	errno = 0;
	assert_int_equal(sr_doc_elf_interp(SR_SRCDIR "/tools/doctor.h", interp, sizeof(interp)),
			 -1);
	assert_int_equal(errno, ENOEXEC);
	assert_int_equal(sr_doc_elf_interp("/nonexistent/program", interp, sizeof(interp)), -1);
	assert_int_equal(errno, ENOENT);
	/* an ELF file with one PT_LOAD and no PT_INTERP is statically linked */
	memcpy(img.eh.e_ident, ELFMAG, SELFMAG);
	img.eh.e_ident[EI_CLASS] = ELFCLASS64;
	img.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	img.eh.e_ident[EI_VERSION] = EV_CURRENT;
	img.eh.e_type = ET_EXEC;
	img.eh.e_phoff = sizeof(img.eh);
	img.eh.e_phentsize = sizeof(img.ph);
	img.eh.e_phnum = 1;
	img.ph.p_type = PT_LOAD;
	write_file(path, sizeof(path), &img, sizeof(img));
	assert_int_equal(sr_doc_elf_interp(path, interp, sizeof(interp)), 0);
	unlink(path);
	/* the same header with its program headers cut off is not a program */
	write_file(path, sizeof(path), &img, sizeof(img.eh));
	assert_int_equal(sr_doc_elf_interp(path, interp, sizeof(interp)), -1);
	assert_int_equal(errno, ENOEXEC);
	unlink(path);
}

/* mkdir -p for the fake sysfs tree, then the file's text (if any). */
static void put(const char *root, const char *rel, const char *text)
{
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0700);
		*p = '/';
	}
	if (text) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs(text, f);
		fclose(f);
	} else {
		mkdir(path, 0700);
	}
}

static void kernel_device_interface(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char root[512], cmd[600], out[256];

	snprintf(root, sizeof(root), "%s/sr-doctor-sys-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(root));
	/* siw on eth0: its port's GID netdev */
	put(root, "sys/class/infiniband/siw_eth0/ports/1/gid_attrs/ndevs/0", "eth0\n");
	/* rxe0: no GID netdev yet (empty), its parent */
	put(root, "sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", "");
	put(root, "sys/class/infiniband/rxe0/parent", "veth1\n");
	/* a NIC: the interfaces of its PCI function */
	put(root, "sys/class/infiniband/mlx5_0/device/net/enp1s0f0np0", NULL);
	/* a device sysfs says nothing about */
	put(root, "sys/class/infiniband/ghost0/ports/1", NULL);

	assert_int_equal(sr_doc_kernel_netdev(root, "siw_eth0", out, sizeof(out)), 0);
	assert_string_equal(out, "eth0");
	assert_int_equal(sr_doc_kernel_netdev(root, "rxe0", out, sizeof(out)), 0);
	assert_string_equal(out, "veth1");
	assert_int_equal(sr_doc_kernel_netdev(root, "mlx5_0", out, sizeof(out)), 0);
	assert_string_equal(out, "enp1s0f0np0");
	assert_int_equal(sr_doc_kernel_netdev(root, "ghost0", out, sizeof(out)), -1);
	assert_int_equal(sr_doc_kernel_netdev(root, "absent0", out, sizeof(out)), -1);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

/*
 * softrdma(7) describes every tunable of the table, each in a ".BR NAME ..." paragraph
 * heading of its TUNABLES section, and nothing else there.
 */
static void man_page_lists_every_tunable(void **state)
{
	unsigned int n, rows = 0;
	const struct sr_tunable *t = sr_config_table(&n);
	FILE *f = fopen(SR_SRCDIR "/docs/man/softrdma.7", "r");
	char line[1024];
	bool *seen = calloc(n, sizeof(*seen)), in_section = false;

	assert_non_null(f);
	assert_non_null(seen);
	while (fgets(line, sizeof(line), f)) {
		bool known = false;

		if (strncmp(line, ".SH ", 4) == 0)
			in_section = strcmp(line, ".SH TUNABLES\n") == 0;
		if (!in_section || strncmp(line, ".BR SOFTRDMA_", 13) != 0)
			continue;
		rows++;
		for (unsigned int i = 0; i < n; i++) {
			size_t l = strlen(t[i].name);

			if (strncmp(line + 4, t[i].name, l) == 0 && line[4 + l] == ' ') {
				known = true;
				seen[i] = true;
			}
		}
		assert_true(known);
	}
	fclose(f);
	for (unsigned int i = 0; i < n; i++) {
		if (!seen[i])
			fprintf(stderr, "softrdma.7 does not describe %s\n", t[i].name);
		assert_true(seen[i]);
	}
	assert_int_equal(rows, n);
	free(seen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nofile_arithmetic),
		cmocka_unit_test(port_range_text),
		cmocka_unit_test(reserved_ports),
		cmocka_unit_test(loader_trace),
		cmocka_unit_test(elf_interpreter),
		cmocka_unit_test(kernel_device_interface),
		cmocka_unit_test(man_page_lists_every_tunable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
