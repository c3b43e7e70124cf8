/* SPDX-License-Identifier: MIT */
/*
 * `softrdma doctor`: what limits a program on softrdma on this host, and the fix for each.
 * The checks are in doctor.c; the parsing and arithmetic they rest on are plain functions
 * declared here so that tests/unit/tools can test them without the host's state.
 */
#ifndef SR_DOCTOR_H
#define SR_DOCTOR_H

#include <stddef.h>
#include <sys/resource.h>

enum sr_doc_level { SR_DOC_OK, SR_DOC_WARN, SR_DOC_FAIL };

/*
 * Descriptors a process needs beyond one per connection: our libraries' own (the engine's
 * epoll and timer, rtnetlink sockets, an async and a command eventfd per open device, an
 * eventfd per completion or CM event channel, listeners) and the program's (stdio, its
 * files). bench/conns.c sizes its runs the same way (N + 256).
 */
#define SR_DOC_FD_RESERVE 256

/* Descriptors a process holding conns connections needs. */
unsigned long long sr_doc_fds_needed(unsigned long long conns);
/*
 * need against RLIM_NOFILE: OK when the soft limit covers it, WARN when only the hard limit
 * does (the process or its shell may raise the soft one), FAIL when the hard limit is below.
 */
enum sr_doc_level sr_doc_nofile_level(rlim_t soft, rlim_t hard, unsigned long long need);

/* "32768\t60999\n" (net.ipv4.ip_local_port_range) -> lo, hi. 0 on success, -1 if malformed. */
int sr_doc_parse_port_range(const char *text, unsigned int *lo, unsigned int *hi);
/*
 * How many ports of [lo, hi] net.ipv4.ip_local_reserved_ports ("8080,9000-9010\n", or empty)
 * reserves; ranges may overlap each other. -1 if malformed.
 */
long sr_doc_reserved_in_range(const char *text, unsigned int lo, unsigned int hi);

/*
 * Find soname in the loader's trace (LD_TRACE_LOADED_OBJECTS=1): lines such as
 * "\tlibibverbs.so.1 => /usr/lib/x86_64-linux-gnu/libibverbs.so.1 (0x...)". Returns 1 and
 * the path, 0 when the trace says "not found" (path empty), -1 when the name is absent.
 */
int sr_doc_trace_find(const char *trace, const char *soname, char *path, size_t size);

/*
 * The program interpreter (PT_INTERP) of the ELF file at path. 1 and the interpreter's path,
 * 0 for an ELF file without one (statically linked), -1 and errno for anything else
 * (ENOEXEC: not ELF).
 */
int sr_doc_elf_interp(const char *path, char *interp, size_t size);

/*
 * The network interface a kernel RDMA device dev sits on, from sysfs under sysroot ("" for
 * the real one): its port's GID netdev, rxe's parent, or a NIC's PCI function's interfaces
 * (space-separated). 0 and the name(s) in out, -1 if sysfs does not say.
 */
int sr_doc_kernel_netdev(const char *sysroot, const char *dev, char *out, size_t size);

/*
 * `softrdma doctor [--connections N] [PROGRAM]`. libdir: the folder `softrdma run` puts first
 * on LD_LIBRARY_PATH, or NULL when the launcher did not find it. Returns the exit status:
 * 0 nothing failed, 1 a check failed, 2 usage.
 */
int sr_doctor(int argc, char **argv, const char *libdir);

#endif
