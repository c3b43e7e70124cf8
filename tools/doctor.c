// SPDX-License-Identifier: MIT
/*
 * `softrdma doctor`: each check prints OK, WARN or FAIL with its reason and, when it is not
 * OK, the exact command that fixes it. The checks:
 *   nofile    RLIMIT_NOFILE against the connections asked for (one descriptor each)
 *   memlock   RLIMIT_MEMLOCK, which softrdma does not need (it pins nothing)
 *   ports     ip_local_port_range less ip_local_reserved_ports: connections per destination
 *   program   whether PROGRAM, started by `softrdma run`, really loads our libraries
 *   kernel    a kernel RDMA stack (siw, rdma_rxe, a NIC) and how its devices relate to ours
 *   netns     the network namespace and the interfaces our devices will stand for
 * The pure parts (parsing, arithmetic) are declared in doctor.h and unit-tested.
 */
#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/sr_config.h"
#include "doctor.h"

/* ---- pure helpers (unit-tested) ---------------------------------------------------------- */

unsigned long long sr_doc_fds_needed(unsigned long long conns)
{
	return conns + SR_DOC_FD_RESERVE;
}

enum sr_doc_level sr_doc_nofile_level(rlim_t soft, rlim_t hard, unsigned long long need)
{
	if (soft == RLIM_INFINITY || soft >= need)
		return SR_DOC_OK;
	if (hard == RLIM_INFINITY || hard >= need)
		return SR_DOC_WARN;
	return SR_DOC_FAIL;
}

/* A port number at *p (0..65535), advancing *p; -1 if there is none. */
static long parse_port(const char **p)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**p))
		return -1;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v > 65535)
		return -1;
	*p = end;
	return v;
}

static const char *skip_blank(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static bool only_space_left(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return *p == '\0';
}

int sr_doc_parse_port_range(const char *text, unsigned int *lo, unsigned int *hi)
{
	const char *p = skip_blank(text);
	long a, b;

	if ((a = parse_port(&p)) < 0)
		return -1;
	p = skip_blank(p);
	if ((b = parse_port(&p)) < 0 || !only_space_left(p) || a > b)
		return -1;
	*lo = (unsigned int)a;
	*hi = (unsigned int)b;
	return 0;
}

long sr_doc_reserved_in_range(const char *text, unsigned int lo, unsigned int hi)
{
	static unsigned char reserved[65536 / 8];
	const char *p = skip_blank(text);
	long count = 0;

	memset(reserved, 0, sizeof(reserved));
	while (!only_space_left(p)) {
		long a = parse_port(&p), b;

		if (a < 0)
			return -1;
		b = a;
		if (*p == '-') {
			p++;
			if ((b = parse_port(&p)) < 0 || b < a)
				return -1;
		}
		for (long port = a; port <= b; port++)
			reserved[port / 8] |= (unsigned char)(1u << (port % 8));
		if (*p == ',')
			p++;
		else if (!only_space_left(p))
			return -1;
	}
	for (unsigned int port = lo; port <= hi && port < 65536; port++)
		count += (reserved[port / 8] >> (port % 8)) & 1;
	return count;
}

int sr_doc_trace_find(const char *trace, const char *soname, char *path, size_t size)
{
	size_t len = strlen(soname);
	const char *line = trace;

	while (line && *line) {
		const char *p = skip_blank(line), *nl = strchr(line, '\n');
		const char *end = nl ? nl : line + strlen(line);

		if ((size_t)(end - p) > len && strncmp(p, soname, len) == 0 &&
		    strncmp(p + len, " => ", 4) == 0) {
			const char *s = p + len + 4, *e = s;

			if (strncmp(s, "not found", 9) == 0) {
				if (size)
					path[0] = '\0';
				return 0;
			}
			while (e < end && *e != ' ')
				e++;
			snprintf(path, size, "%.*s", (int)(e - s), s);
			return 1;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

/* One program header of either class: its type, and where its bytes lie in the file. */
struct phdr {
	uint32_t type;
	uint64_t offset, filesz;
};

static int read_phdr(int fd, bool is64, uint64_t at, struct phdr *out)
{
	if (is64) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)at) != (ssize_t)sizeof(ph))
			return -1;
		*out = (struct phdr){ ph.p_type, ph.p_offset, ph.p_filesz };
	} else {
		Elf32_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)at) != (ssize_t)sizeof(ph))
			return -1;
		*out = (struct phdr){ ph.p_type, ph.p_offset, ph.p_filesz };
	}
	return 0;
}

int sr_doc_elf_interp(const char *path, char *interp, size_t size)
{
	unsigned char ident[EI_NIDENT];
	uint64_t phoff = 0;
	unsigned int phnum = 0, phentsize = 0;
	bool is64, ok;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -1;
	ok = size >= 2 && pread(fd, ident, sizeof(ident), 0) == (ssize_t)sizeof(ident) &&
	     memcmp(ident, ELFMAG, SELFMAG) == 0 &&
	     (ident[EI_CLASS] == ELFCLASS64 || ident[EI_CLASS] == ELFCLASS32);
	is64 = ok && ident[EI_CLASS] == ELFCLASS64;
	if (ok && is64) {
		Elf64_Ehdr eh;

		ok = pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh);
		phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
		ok = ok && phentsize == sizeof(Elf64_Phdr);
	} else if (ok) {
		Elf32_Ehdr eh;

		ok = pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh);
		phoff = eh.e_phoff, phnum = eh.e_phnum, phentsize = eh.e_phentsize;
		ok = ok && phentsize == sizeof(Elf32_Phdr);
	}
	for (unsigned int i = 0; ok && r == 0 && i < phnum; i++) {
		struct phdr ph;
		ssize_t got;

		ok = read_phdr(fd, is64, phoff + (uint64_t)i * phentsize, &ph) == 0;
		if (!ok || ph.type != PT_INTERP)
			continue;
		got = pread(fd, interp, ph.filesz < size ? ph.filesz : size - 1, (off_t)ph.offset);
		ok = got > 0;
		if (ok) {
			interp[got] = '\0';
			r = 1;
		}
	}
	close(fd);
	if (!ok) {
		errno = ENOEXEC;
		return -1;
	}
	return r;
}

/* ---- reporting ----------------------------------------------------------------------------- */

static enum sr_doc_level worst;

static void verdict(enum sr_doc_level level, const char *check, const char *fmt, ...)
{
	static const char *const word[] = { "OK", "WARN", "FAIL" };
	va_list ap;

	if (level > worst)
		worst = level;
	printf("%-4s %-8s ", word[level], check);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* An indented line under a verdict: a detail, or "fix: <command>". */
static void more(const char *fmt, ...)
{
	va_list ap;

	fputs("              ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int read_text(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
	return 0;
}

static const char *limit_str(rlim_t v, char *buf, size_t size)
{
	if (v == RLIM_INFINITY)
		return "unlimited";
	snprintf(buf, size, "%llu", (unsigned long long)v);
	return buf;
}

/* ---- the checks ---------------------------------------------------------------------------- */

static void check_nofile(unsigned long long conns)
{
	unsigned long long need = sr_doc_fds_needed(conns);
	struct rlimit rl;
	char s[32], h[32], nr[64] = "";
	unsigned long long nr_open = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl)) {
		verdict(SR_DOC_FAIL, "nofile", "getrlimit(RLIMIT_NOFILE): %s", strerror(errno));
		return;
	}
	limit_str(rl.rlim_cur, s, sizeof(s));
	limit_str(rl.rlim_max, h, sizeof(h));
	if (read_text("/proc/sys/fs/nr_open", nr, sizeof(nr)) == 0)
		nr_open = strtoull(nr, NULL, 10);
	switch (sr_doc_nofile_level(rl.rlim_cur, rl.rlim_max, need)) {
	case SR_DOC_OK:
		verdict(SR_DOC_OK, "nofile",
			"descriptors: soft %s, hard %s; %llu connections need %llu "
			"(one each, %d for the libraries and the program)", s, h, conns, need,
			SR_DOC_FD_RESERVE);
		break;
	case SR_DOC_WARN:
		verdict(SR_DOC_WARN, "nofile",
			"descriptors: soft limit %s < %llu that %llu connections need (one each, "
			"%d for the libraries and the program); the hard limit %s allows it",
			s, need, conns, SR_DOC_FD_RESERVE, h);
		more("fix: ulimit -Sn %llu   (in the shell that starts the program)", need);
		break;
	case SR_DOC_FAIL:
		verdict(SR_DOC_FAIL, "nofile",
			"descriptors: hard limit %s < %llu that %llu connections need (one each, "
			"%d for the libraries and the program); only root can raise it",
			h, need, conns, SR_DOC_FD_RESERVE);
		if (nr_open && need > nr_open)
			more("fix: sudo sysctl -w fs.nr_open=%llu   (the kernel's cap, now %llu), then:",
			     need, nr_open);
		more("fix: sudo prlimit --nofile=%llu:%llu --pid $$   (this shell), or for a user: "
		     "'%s hard nofile %llu' in /etc/security/limits.conf, or LimitNOFILE=%llu in a "
		     "systemd unit", need, need, getenv("USER") ? getenv("USER") : "USER", need, need);
		break;
	}
}

static void check_memlock(void)
{
	struct rlimit rl;
	char s[32], h[32];

	if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		verdict(SR_DOC_WARN, "memlock", "getrlimit(RLIMIT_MEMLOCK): %s", strerror(errno));
		return;
	}
	verdict(SR_DOC_OK, "memlock",
		"locked memory: soft %s, hard %s bytes; no limit applies: softrdma registers "
		"memory without pinning it (no mlock, no kernel driver), so ibv_reg_mr is bounded "
		"by nothing but memory itself", limit_str(rl.rlim_cur, s, sizeof(s)),
		limit_str(rl.rlim_max, h, sizeof(h)));
	more("(a kernel RDMA stack would pin: programs not run through softrdma need it raised)");
}

static void check_ports(unsigned long long conns)
{
	char range[64], res[4096] = "";
	unsigned int lo, hi;
	long reserved, ports;

	if (read_text("/proc/sys/net/ipv4/ip_local_port_range", range, sizeof(range)) ||
	    sr_doc_parse_port_range(range, &lo, &hi)) {
		verdict(SR_DOC_WARN, "ports", "cannot read net.ipv4.ip_local_port_range");
		return;
	}
	if (read_text("/proc/sys/net/ipv4/ip_local_reserved_ports", res, sizeof(res)))
		res[0] = '\0';
	reserved = sr_doc_reserved_in_range(res, lo, hi);
	if (reserved < 0) {
		verdict(SR_DOC_WARN, "ports", "cannot parse net.ipv4.ip_local_reserved_ports");
		reserved = 0;
	}
	ports = (long)(hi - lo + 1) - reserved;
	if ((unsigned long long)ports >= conns) {
		verdict(SR_DOC_OK, "ports",
			"local ports %u-%u less %ld reserved: %ld connections per destination "
			"(address and port) from each source address; %llu wanted", lo, hi, reserved,
			ports, conns);
		return;
	}
	verdict(SR_DOC_WARN, "ports",
		"local ports %u-%u less %ld reserved: %ld connections per destination (address "
		"and port) from each source address, fewer than the %llu wanted if they all go "
		"to one destination (accepted connections take no port)", lo, hi, reserved, ports,
		conns);
	if (reserved > 0)
		more("fix: sudo sysctl -w net.ipv4.ip_local_reserved_ports=   (free the %ld "
		     "reserved ports)", reserved);
	more("fix: sudo sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"   (%d ports), or "
	     "spread the connections over several destinations or source addresses",
	     65535 - 1024 + 1);
}

/* Path of prog as execvp would find it, in out. */
static int find_program(const char *prog, char *out, size_t size)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;

	if (strchr(prog, '/')) {
		snprintf(out, size, "%s", prog);
		return access(out, X_OK);
	}
	copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!copy)
		return -1;
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, size, "%s/%s", *dir ? dir : ".", prog);
		if (access(out, X_OK) == 0) {
			free(copy);
			return 0;
		}
	}
	free(copy);
	errno = ENOENT;
	return -1;
}

/*
 * The loader's own answer: the program's interpreter run on it with LD_TRACE_LOADED_OBJECTS=1
 * and the LD_LIBRARY_PATH `softrdma run` would set. Explicitly invoked, the loader runs with
 * our privileges (never the file's set-ID ones), maps the libraries the way it would for a
 * real start (DT_NEEDED, RPATH before LD_LIBRARY_PATH before RUNPATH, ld.so.cache, the
 * default folders), prints them and exits before any code of the program or its libraries
 * runs. A statically linked program (no interpreter) is never run.
 */
static int loader_trace(const char *interp, const char *prog, const char *ldpath, char *out,
			size_t size)
{
	extern char **environ;
	size_t n = 0, len = 0;
	char **envp, *ld = NULL;
	int fds[2], status, r = -1;
	pid_t pid;

	/* The child's environment, built before fork: ours less the two we set. */
	for (char **e = environ; *e; e++)
		n++;
	envp = calloc(n + 3, sizeof(*envp));
	if (!envp || asprintf(&ld, "LD_LIBRARY_PATH=%s", ldpath) < 0 || pipe2(fds, O_CLOEXEC)) {
		free(envp);
		free(ld);
		return -1;
	}
	n = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_LIBRARY_PATH=", 16) && strncmp(*e, "LD_TRACE_LOADED_OBJECTS=", 24))
			envp[n++] = *e;
	envp[n++] = ld;
	envp[n++] = "LD_TRACE_LOADED_OBJECTS=1";
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(fds[1], 1);
		if (null >= 0)
			dup2(null, 2);
		execve(interp, (char *[]){ (char *)interp, (char *)prog, NULL }, envp);
		_exit(127);
	}
	close(fds[1]);
	/* Read to the end (past what fits, so the loader never blocks on a full pipe). */
	for (char scratch[4096];;) {
		bool room = len < size - 1;
		ssize_t got = room ? read(fds[0], out + len, size - 1 - len)
				   : read(fds[0], scratch, sizeof(scratch));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (room)
			len += (size_t)got;
	}
	out[len] = '\0';
	close(fds[0]);
	if (pid > 0) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		r = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
	}
	free(envp);
	free(ld);
	return r;
}

/* Whether file lies in folder dir (both resolved). */
static bool is_in_dir(const char *file, const char *dir)
{
	char *f = realpath(file, NULL), *d = realpath(dir, NULL), *slash;
	bool in = false;

	if (f && d && (slash = strrchr(f, '/'))) {
		*slash = '\0';
		in = strcmp(f, d) == 0;
	}
	free(f);
	free(d);
	return in;
}

static bool has_file(const char *dir, const char *name)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, R_OK) == 0;
}

static void check_program(const char *prog, const char *libdir)
{
	static const char *const sonames[] = { "libibverbs.so.1", "librdmacm.so.1" };
	char path[PATH_MAX], interp[PATH_MAX], trace[65536], found[PATH_MAX];
	const char *old = getenv("LD_LIBRARY_PATH");
	struct stat st, ist;
	char *ldpath;
	int absent = 0, r;

	if (find_program(prog, path, sizeof(path)) || stat(path, &st)) {
		verdict(SR_DOC_FAIL, "program", "%s: %s", prog, strerror(errno));
		more("fix: give its path, or a name found on PATH");
		return;
	}
	if (!libdir) {
		verdict(SR_DOC_FAIL, "program", "%s: the launcher found no libibverbs.so.1 of ours "
			"next to it", path);
		more("fix: run the softrdma of a build tree (build/bin) or of an install");
		return;
	}
	/* The kernel starts these in secure mode (AT_SECURE): the loader then ignores
	 * LD_LIBRARY_PATH, so `softrdma run` cannot put our libraries under them. */
	if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
	    ((st.st_mode & S_ISGID) && st.st_gid != getegid())) {
		verdict(SR_DOC_FAIL, "program", "%s is set-%s-ID: started by you the loader runs "
			"it in secure mode and ignores LD_LIBRARY_PATH, so it loads the system's "
			"libraries, never ours", path, (st.st_mode & S_ISUID) ? "user" : "group");
		more("fix: cp %s /tmp/ && softrdma run /tmp/%s ...   (a copy has no set-ID bit), "
		     "or run it as its owner", path, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
		return;
	}
	if (getxattr(path, "security.capability", NULL, 0) > 0 && geteuid() != 0) {
		verdict(SR_DOC_FAIL, "program", "%s has file capabilities (getcap %s): started by "
			"you the loader runs it in secure mode and ignores LD_LIBRARY_PATH", path,
			path);
		more("fix: cp %s /tmp/ && softrdma run /tmp/%s ...   (a copy has no capabilities)",
		     path, strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
		return;
	}
	r = sr_doc_elf_interp(path, interp, sizeof(interp));
	if (r < 0) {
		verdict(SR_DOC_WARN, "program", "%s is not an ELF program (%s); a script: check "
			"the program it runs", path, strerror(errno));
		more("fix: softrdma doctor /path/of/the/program/it/starts");
		return;
	}
	if (r == 0) {
		verdict(SR_DOC_FAIL, "program", "%s is statically linked: it loads no shared "
			"library, ours neither", path);
		more("fix: rebuild it dynamically linked against libibverbs/librdmacm "
		     "(-libverbs -lrdmacm without -static)");
		return;
	}
	/* The interpreter is named by the program: run it only if it is a system file. */
	if (stat(interp, &ist) || ist.st_uid != 0 || (ist.st_mode & (S_IWGRP | S_IWOTH))) {
		verdict(SR_DOC_WARN, "program", "%s names %s as its loader, which is not a "
			"root-owned file only root may write: not run", path, interp);
		more("fix: readelf -l %s | grep interpreter   (a program for another system?)",
		     path);
		return;
	}
	if (asprintf(&ldpath, "%s%s%s", libdir, old && *old ? ":" : "", old ? old : "") < 0)
		return;
	r = loader_trace(interp, path, ldpath, trace, sizeof(trace));
	free(ldpath);
	if (r) {
		verdict(SR_DOC_FAIL, "program", "%s: its loader %s could not map it (a library "
			"missing or of another architecture)", path, interp);
		more("fix: softrdma run -- ldd %s   (shows which)", path);
		return;
	}
	for (unsigned int i = 0; i < 2; i++) {
		r = sr_doc_trace_find(trace, sonames[i], found, sizeof(found));
		if (r < 0) {
			absent++;
			continue;
		}
		if (r == 0) {
			verdict(SR_DOC_FAIL, "program", "%s: %s not found", path, sonames[i]);
			more("fix: check %s/%s exists and matches the program's architecture",
			     libdir, sonames[i]);
		} else if (is_in_dir(found, libdir)) {
			verdict(SR_DOC_OK, "program", "%s: %s => %s (ours, under softrdma run)", path,
				sonames[i], found);
		} else if (!has_file(libdir, sonames[i])) {
			verdict(SR_DOC_FAIL, "program", "%s: %s => %s, not ours: %s has no %s",
				path, sonames[i], found, libdir, sonames[i]);
			more("fix: build or install softrdma completely (cmake --build, or the "
			     "softrdma package)");
		} else {
			verdict(SR_DOC_FAIL, "program", "%s: %s => %s, not ours: something the "
				"loader honours before LD_LIBRARY_PATH names that folder (a DT_RPATH of "
				"the program or of the library that needs it, or LD_PRELOAD)", path,
				sonames[i], found);
			more("fix: readelf -d %s | grep -E 'R(UN)?PATH'; relink with "
			     "-Wl,--enable-new-dtags (RUNPATH comes after LD_LIBRARY_PATH), or on a "
			     "copy: patchelf --remove-rpath COPY", path);
		}
	}
	if (absent == 2) {
		verdict(SR_DOC_WARN, "program", "%s loads neither libibverbs.so.1 nor "
			"librdmacm.so.1 when it starts", path);
		more("if it opens them later with dlopen (libfabric, UCX, MPI components), "
		     "LD_LIBRARY_PATH still puts ours first unless the opener has a DT_RPATH; "
		     "check with: softrdma run -- env SOFTRDMA_LOG_LEVEL=3 %s", path);
	}
}

static bool module_loaded(const char *modules, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = modules; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, len) == 0 && p[len] == ' ')
			return true;
	return false;
}

/* Names in a folder, space-separated, in out; their number. */
static int list_dir(const char *dir, char *out, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t len = 0;
	int n = 0;

	out[0] = '\0';
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		if (len + strlen(e->d_name) + 2 < size)
			len += (size_t)snprintf(out + len, size - len, "%s%s", len ? " " : "",
						e->d_name);
	}
	closedir(d);
	return n;
}

int sr_doc_kernel_netdev(const char *sysroot, const char *dev, char *out, size_t size)
{
	static const char *const where[] = {
		"ports/1/gid_attrs/ndevs/0", /* RoCE and iWARP devices: the port's netdev */
		"parent",                    /* rxe: the interface it was added on */
	};
	char path[PATH_MAX], buf[IF_NAMESIZE + 2];

	for (unsigned int i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/%s", sysroot, dev, where[i]);
		if (read_text(path, buf, sizeof(buf)) == 0 && buf[0] && buf[0] != '\n') {
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(out, size, "%s", buf);
			return 0;
		}
	}
	/* a NIC: the interfaces of the same PCI function */
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/device/net", sysroot, dev);
	return list_dir(path, out, size) > 0 ? 0 : -1;
}

static void check_kernel(void)
{
	static char modules[65536];
	const char *prefix = sr_config_str("SOFTRDMA_DEVICE_PREFIX");
	char devs[1024], uverbs[1024], nodes[1024], mods[64] = "";
	int ndev = list_dir("/sys/class/infiniband", devs, sizeof(devs));
	int nuv = list_dir("/sys/class/infiniband_verbs", uverbs, sizeof(uverbs));
	int nnodes = list_dir("/dev/infiniband", nodes, sizeof(nodes));
	bool clash = false;

	if (read_text("/proc/modules", modules, sizeof(modules)))
		modules[0] = '\0';
	if (module_loaded(modules, "siw"))
		strcat(mods, " siw");
	if (module_loaded(modules, "rdma_rxe"))
		strcat(mods, " rdma_rxe");
	if (module_loaded(modules, "ib_uverbs"))
		strcat(mods, " ib_uverbs");
	if (ndev <= 0 && nuv <= 0 && nnodes <= 0 && !mods[0]) {
		verdict(SR_DOC_OK, "kernel", "no kernel RDMA stack here (no /sys/class/infiniband, "
			"/dev/infiniband or siw/rdma_rxe module): softrdma's %s* devices are the only "
			"ones", prefix);
		return;
	}
	for (const char *t = devs; *t; t = strchr(t, ' ') ? strchr(t, ' ') + 1 : "")
		clash |= strncmp(t, prefix, strlen(prefix)) == 0;
	verdict(clash ? SR_DOC_WARN : SR_DOC_OK, "kernel",
		"a kernel RDMA stack is present: devices [%s], uverbs [%s], /dev/infiniband [%s], "
		"modules [%s ]", ndev > 0 ? devs : "", nuv > 0 ? uverbs : "",
		nnodes > 0 ? nodes : "", mods);
	for (const char *t = devs; ndev > 0 && *t;) {
		size_t l = strcspn(t, " ");
		char dev[256], netdev[256];

		snprintf(dev, sizeof(dev), "%.*s", (int)l, t);
		if (sr_doc_kernel_netdev("", dev, netdev, sizeof(netdev)) == 0)
			more("kernel %s is on %s; softrdma's device there: %s%s", dev, netdev, prefix,
			     netdev);
		else
			more("kernel %s: its interface is not shown in sysfs", dev);
		t += l + (t[l] == ' ');
	}
	more("a program started with `softrdma run` sees only softrdma's %s<interface> devices "
	     "(our libibverbs opens no /dev/infiniband); one started without sees only the "
	     "kernel's. softrdma speaks iWARP over TCP, as siw and iWARP NICs do; rxe and "
	     "InfiniBand are other protocols", prefix);
	if (module_loaded(modules, "rdma_rxe"))
		more("rdma_rxe binds UDP port 4791 for its devices; softrdma's soft RoCE uses "
		     "SOFTRDMA_ROCE_UDP_PORT (now %s) next to it",
		     sr_config_str("SOFTRDMA_ROCE_UDP_PORT"));
	if (clash)
		more("fix: SOFTRDMA_DEVICE_PREFIX=sr_ softrdma run ...   (a kernel device has a "
		     "name starting with %s, so the two sets of names can be confused)", prefix);
}

static void check_netns(void)
{
	const char *prefix = sr_config_str("SOFTRDMA_DEVICE_PREFIX");
	struct if_nameindex *ifs = if_nameindex();
	struct stat self, init;
	char list[2048] = "";
	size_t len = 0;
	int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), n = 0, up = 0;

	if (stat("/proc/self/ns/net", &self)) {
		verdict(SR_DOC_WARN, "netns", "cannot stat /proc/self/ns/net: %s", strerror(errno));
	} else if (stat("/proc/1/ns/net", &init)) {
		verdict(SR_DOC_OK, "netns", "network namespace net:[%llu]; whether it is the "
			"host's (pid 1's) cannot be told: %s", (unsigned long long)self.st_ino,
			strerror(errno));
	} else if (self.st_ino == init.st_ino && self.st_dev == init.st_dev) {
		verdict(SR_DOC_OK, "netns", "network namespace net:[%llu], the host's (pid 1's)",
			(unsigned long long)self.st_ino);
	} else {
		verdict(SR_DOC_OK, "netns", "network namespace net:[%llu], not pid 1's "
			"net:[%llu]: our devices are this namespace's interfaces only, and peers "
			"are reached through them", (unsigned long long)self.st_ino,
			(unsigned long long)init.st_ino);
	}
	for (struct if_nameindex *i = ifs; i && i->if_index; i++) {
		struct ifreq ifr = { 0 };
		bool is_up = false;

		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->if_name);
		if (sock >= 0 && ioctl(sock, SIOCGIFFLAGS, &ifr) == 0)
			is_up = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
		n++;
		up += is_up;
		if (len + 64 < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s%s (%s)",
						len ? ", " : "", prefix, i->if_name,
						is_up ? "active" : "down");
	}
	if (sock >= 0)
		close(sock);
	if (ifs)
		if_freenameindex(ifs);
	if (n == 0) {
		verdict(SR_DOC_FAIL, "netns", "no network interface here: softrdma has no device");
		more("fix: ip link set lo up   (or give the namespace an interface)");
		return;
	}
	verdict(up ? SR_DOC_OK : SR_DOC_WARN, "netns", "%d device%s: %s", n, n == 1 ? "" : "s",
		list);
	if (!up)
		more("fix: ip link set lo up   (a device is usable once its interface is up)");
	more("softrdma devices   (the table a program will see)");
}

static int usage(void)
{
	fprintf(stderr, "usage: softrdma doctor [--connections N] [PROGRAM]\n");
	return 2;
}

int sr_doctor(int argc, char **argv, const char *libdir)
{
	unsigned long long conns = 100;
	const char *prog = NULL;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--connections") == 0) {
			char *end;

			if (i + 1 >= argc)
				return usage();
			errno = 0;
			conns = strtoull(argv[++i], &end, 10);
			if (errno || *end || end == argv[i] || argv[i][0] == '-')
				return usage();
		} else if (strcmp(argv[i], "--") == 0 && i + 2 == argc) {
			prog = argv[++i];
		} else if (argv[i][0] == '-' || prog) {
			return usage();
		} else {
			prog = argv[i];
		}
	}
	worst = SR_DOC_OK;
	check_nofile(conns);
	check_memlock();
	check_ports(conns);
	if (prog)
		check_program(prog, libdir);
	check_kernel();
	check_netns();
	fflush(stdout);
	return worst == SR_DOC_FAIL ? 1 : 0;
}
