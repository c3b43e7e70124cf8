#!/usr/bin/env bash
# Shared helpers for integration tests. Environment from ctest: SR_LIBDIR, SR_BINDIR,
# SR_SRCDIR, SR_TESTBIN, SR_PRELOAD (sanitizer runtime for uninstrumented programs).
set -uo pipefail

sr_skip() { echo "SKIP: $*"; exit 77; }
sr_fail() { echo "FAIL: $*"; exit 1; }
sr_pass() { echo "PASS: $*"; }

# Run a program with our libraries first, as a user would through `softrdma run`.
sr_run() {
	env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$@"
}

sr_need_cmd() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || sr_skip "$c not installed"
	done
}

sr_need_root() {
	[ "$(id -u)" -eq 0 ] || sr_skip "needs root (network namespaces)"
	ip netns add "sr-probe-$$" 2>/dev/null || sr_skip "cannot create network namespaces here"
	ip netns del "sr-probe-$$"
}

# Network namespaces named after this test and PID, removed on exit.
SR_NETNS=()
sr_netns_add() {
	local ns="sr-$1-$$"
	ip netns add "$ns" || sr_fail "ip netns add $ns"
	SR_NETNS+=("$ns")
	echo "$ns"
}
sr_cleanup() {
	local ns
	for ns in "${SR_NETNS[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
}
trap sr_cleanup EXIT
