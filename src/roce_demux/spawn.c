// SPDX-License-Identifier: MIT
/*
 * Finding and starting softrdma-roced. It lives next to the library that holds this code
 * (build/lib in the build tree, the private library directory once installed), so a
 * process finds the daemon of its own build; SOFTRDMA_ROCED overrides the path.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdx_client.h"
#include "common/sr_config.h"

extern char **environ;

static int rdx_daemon_path(char *path, size_t len)
{
	const char *env = sr_config_str("SOFTRDMA_ROCED");
	Dl_info info;
	const char *slash;

	if (env && *env) {
		snprintf(path, len, "%s", env);
		return 0;
	}
	if (!dladdr((void *)rdx_spawn, &info) || !info.dli_fname)
		return -ENOENT;
	slash = strrchr(info.dli_fname, '/');
	if (!slash)
		snprintf(path, len, "softrdma-roced");
	else
		snprintf(path, len, "%.*s/softrdma-roced", (int)(slash - info.dli_fname),
			 info.dli_fname);
	return 0;
}

/*
 * posix_spawn, not fork: no pthread_atfork handlers of the application run, and nothing
 * but exec happens in a copy of a multithreaded process. POSIX_SPAWN_SETSID detaches it
 * from our terminal and process group (a Ctrl-C of ours is not the daemon's); the daemon
 * then forks once and its first process exits, which we reap here, so the daemon is never
 * our child. stdio is /dev/null: a daemon holding our stdout would keep a pipe reader
 * waiting for EOF after we exit.
 */
int rdx_spawn(int *ctl, char *why, size_t whylen)
{
	char path[PATH_MAX], fdarg[16];
	char *argv[] = { "softrdma-roced", "--starter-fd", fdarg, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int sv[2], e, st;
	pid_t pid;

	if (rdx_daemon_path(path, sizeof(path)) < 0 || access(path, X_OK) < 0) {
		snprintf(why, whylen, "softrdma-roced not found at %s (SOFTRDMA_ROCED names it)",
			 path);
		return -ENOENT;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	snprintf(fdarg, sizeof(fdarg), "%d", 3);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	/* nothing of the application's signal state: a blocked or ignored SIGTERM would keep
	 * the daemon from ending when it is asked to */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
					   POSIX_SPAWN_SETSIGDEF);
	/* fd 3 first: the dup2 to a new number clears close-on-exec, and /dev/null may get 0-2 */
	if (sv[1] == 3) {
		int moved = fcntl(sv[1], F_DUPFD_CLOEXEC, 4);

		close(sv[1]);
		sv[1] = moved;
	}
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
	posix_spawn_file_actions_adddup2(&fa, 0, 1);
	posix_spawn_file_actions_adddup2(&fa, 0, 2);
	e = sv[1] < 0 ? EMFILE : posix_spawn(&pid, path, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (sv[1] >= 0)
		close(sv[1]);
	if (e) {
		close(sv[0]);
		snprintf(why, whylen, "cannot start %s: %s", path, strerror(e));
		return -e;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*ctl = sv[0];
	return 0;
}
