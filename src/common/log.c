// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "sr_config.h"
#include "sr_log.h"

int sr_log_level_cur;
static FILE *sr_log_out;
static pthread_mutex_t sr_log_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((constructor)) static void sr_log_init(void)
{
	const char *file = sr_config_str("SOFTRDMA_LOG_FILE");

	sr_log_level_cur = (int)sr_config_long("SOFTRDMA_LOG_LEVEL");
	if (sr_log_level_cur > 0 && file && *file)
		sr_log_out = fopen(file, "ae");
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
