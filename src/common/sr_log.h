/* SPDX-License-Identifier: MIT */
/*
 * Library logging: silent unless SOFTRDMA_LOG_LEVEL asks for it (library code never
 * prints on its own). Output goes to SOFTRDMA_LOG_FILE or stderr. errno is preserved.
 */
#ifndef SR_LOG_H
#define SR_LOG_H

enum sr_log_level {
	SR_LOG_NONE = 0,
	SR_LOG_ERR = 1,
	SR_LOG_WARN = 2,
	SR_LOG_INFO = 3,
	SR_LOG_DEBUG = 4,
};

extern int sr_log_level_cur;

void sr_log_msg(int level, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define sr_log(level, ...)                                            \
	do {                                                          \
		if (__builtin_expect(sr_log_level_cur >= (level), 0)) \
			sr_log_msg(level, __func__, __VA_ARGS__);     \
	} while (0)

#define sr_err(...) sr_log(SR_LOG_ERR, __VA_ARGS__)
#define sr_warn(...) sr_log(SR_LOG_WARN, __VA_ARGS__)
#define sr_info(...) sr_log(SR_LOG_INFO, __VA_ARGS__)
#define sr_dbg(...) sr_log(SR_LOG_DEBUG, __VA_ARGS__)

#endif
