# Finding and ending what tests leave behind (sourced, not run). Shared by tests/sandbox.sh
# (one test's leftovers, when it ends) and scripts/leftovers.sh (a whole run's, at the end of
# scripts/test, and those of earlier runs whose owner is gone, at its start).
#
# What is "ours" (docs/ARCHITECTURE.md, "Tests leave nothing behind"):
#  - a process whose environment holds SR_TEST_ID=<id> (the sandbox gives it to the test it
#    runs; ip netns exec, env, timeout, the sanitizer runtimes and the Debian programs pass it
#    on, whatever process group or parent they end up with) or SR_RUN=<run> (scripts/test
#    gives it to the whole run, unit tests included);
#  - a network namespace named sr-<name>-<id> (tests/integration/lib.sh, sr_netns_add); its
#    veths and nftables tables live and die with it;
#  - the files under sr-test.<id>.XXXXXX (the TMPDIR of one test) and sr-run.<run>.XXXXXX (the
#    TMPDIR of one run) in /tmp or the caller's TMPDIR.
# <id> is "<run>-<pid of the sandbox>" under scripts/test, else "<pid of the sandbox>"; <run> is
# "r<pid of scripts/test>". The last number of either is its owner's PID: the sweep of old
# leftovers takes only what belongs to a PID that no longer exists.
# (No "cut" here: tests define functions of that name.)

# The PIDs of the processes whose environment holds the entry $1 (NAME=value), one a line.
# grep's own environment must not hold it: callers run without SR_TEST_ID and SR_RUN.
sr_tagged_pids() {
	grep -lzxF -- "$1" /proc/[0-9]*/environ 2>/dev/null | awk -F/ '{print $3}'
}

# Every value of the environment variable $1 among running processes, as "PID VALUE" lines.
sr_tag_values() {
	grep -Hzo "^$1=.*" /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' |
		sed -n "s|^/proc/\([0-9]*\)/environ:$1=|\1 |p"
}

# Our network namespaces whose name matches the extended regular expression $1.
sr_netns_matching() {
	ip netns list 2>/dev/null | awk '{print $1}' | grep -E -- "$1"
}

# The processes in the network namespaces given as arguments.
sr_netns_pids() {
	local ns
	for ns in "$@"; do ip netns pids "$ns" 2>/dev/null; done
}

# Of the PIDs on stdin, those of processes that still run (a zombie has ended: its parent, or
# init, reaps it), one a line.
sr_alive() {
	local p st
	while read -r p _; do
		{ read -r st <"/proc/$p/stat"; } 2>/dev/null || continue
		st=${st##*) }
		st=${st%% *}
		[ -n "$st" ] && [ "$st" != Z ] && echo "$p"
	done
}

# The PIDs on stdin as "PID command line" lines, for a report.
sr_describe() {
	local p c
	while read -r p _; do
		c=$(tr '\0\n' '  ' <"/proc/$p/cmdline" 2>/dev/null)
		echo "$p ${c:0:160}"
	done
}

# sr_end_all LIST: ends every process that the command LIST prints the PID of. LIST runs again
# each round (every 50 ms or so), so what a dying process starts is found too. SIGTERM first;
# what still runs 5 s later gets SIGKILL. Bounded: after 10 s in all, prints what could not
# be ended (a process stuck in the kernel) and returns 1.
sr_end_all() {
	local list=$1 sig=TERM left t0=${EPOCHREALTIME/[.,]/} ms
	while :; do
		left=$($list | sort -un | sr_alive)
		[ -n "$left" ] || return 0
		ms=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
		if [ "$ms" -ge 10000 ]; then
			echo "could not end:" >&2
			echo "$left" | sr_describe | sed 's/^/  /' >&2
			return 1
		fi
		[ "$ms" -ge 5000 ] && sig=KILL
		# a stopped process (kill -STOP in a test) acts on SIGTERM only once continued
		# shellcheck disable=SC2086 # one PID a word
		kill -s "$sig" $left 2>/dev/null
		# shellcheck disable=SC2086
		kill -s CONT $left 2>/dev/null
		sleep 0.05
	done
}

# Deletes the network namespaces given as arguments (their processes must be gone: a name
# deleted under a running process would hide the namespace, not end it).
sr_netns_del() {
	local ns
	for ns in "$@"; do ip netns del "$ns" 2>/dev/null; done
}

# What a namespace still holds besides lo, for a report: interfaces and nftables tables.
sr_netns_holds() {
	local l t
	l=$(ip -n "$1" -o link show 2>/dev/null | awk -F': ' '$2 != "lo" {sub(/@.*/, "", $2); print $2}' |
		tr '\n' ' ')
	t=$(ip netns exec "$1" nft list tables 2>/dev/null | awk '{print $3}' | tr '\n' ' ')
	echo "${l:+interfaces: $l}${t:+nftables tables: $t}"
}
