// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sr_config.h"
#include "sr_log.h"

int sr_log_level_cur;
static FILE *sr_log_out;
static pthread_mutex_t sr_log_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * SOFTRDMA_LOG_FILE, opened in a library constructor of whatever program loads us, which may
 * run with more rights than the user who set the variable: the tunable is a secure one
 * (config.c: a set-user-ID or set-group-ID program never sees it), and the open neither
 * follows a final symbolic link (someone else's link in /tmp must not redirect a privileged
 * program's appends) nor blocks on a FIFO without a reader, and a new file is the user's
 * alone (0600 before the umask: log lines name peers, ports and STags). A file that cannot
 * be opened leaves logging on stderr, with one line that says why.
 */
static FILE *sr_log_open(const char *file)
{
	int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC |
				    O_NONBLOCK, 0600);
	FILE *f;

	if (fd < 0) {
		int err = errno;

		/* O_NOFOLLOW on a final symbolic link: ELOOP; say what it means */
		sr_log_msg(SR_LOG_ERR, __func__, "SOFTRDMA_LOG_FILE=%s not opened: %s; logging to stderr",
			   file, err == ELOOP ? "it is a symbolic link" : strerror(err));
		return NULL;
	}
	/* writes may block like stderr's: only the open had to be non-blocking */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	f = fdopen(fd, "a");
	if (!f)
		close(fd);
	return f;
}

__attribute__((constructor)) static void sr_log_init(void)
{
	const char *file = sr_config_str("SOFTRDMA_LOG_FILE");

	sr_log_level_cur = (int)sr_config_long("SOFTRDMA_LOG_LEVEL");
	if (sr_log_level_cur <= 0)
		return;
	if (file && *file)
		sr_log_out = sr_log_open(file);
	else if (sr_config_withheld("SOFTRDMA_LOG_FILE"))
		sr_log_msg(SR_LOG_ERR, __func__, "SOFTRDMA_LOG_FILE is ignored in a set-user-ID or "
			   "set-group-ID program; logging to stderr");
}

void sr_log_msg(int level, const char *func, const char *fmt, ...)
{
	static const char *const names[] = { "", "err", "warn", "info", "debug" };
	int saved = errno;
	struct timespec ts;
	FILE *out = sr_log_out ? sr_log_out : stderr;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_lock(&sr_log_lock);
	fprintf(out, "softrdma[%d] %ld.%06ld %s %s: ", (int)getpid(), (long)ts.tv_sec,
		ts.tv_nsec / 1000, names[level < 0 || level > 4 ? 0 : level], func);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	fflush(out);
	pthread_mutex_unlock(&sr_log_lock);
	errno = saved;
}
