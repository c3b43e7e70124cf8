#!/usr/bin/env bash
# Shared by the real-application tests (tgtd + libiscsi, QEMU, Open MPI): two namespaces joined
# by a veth, daemons that must die with the test, and checks that a process really runs on our
# libraries.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# Processes this test started (their real PIDs, not those of a wrapper), killed with SIGKILL
# on any exit, before the sandbox (tests/sandbox.sh) ends the rest and deletes the
# namespaces: tgtd ignores SIGTERM and SIGINT (its handler is empty), and QEMU and orted may be
# stuck in a migration or a collective; the sandbox would wait 5 s for each before its own
# SIGKILL.
SR_APP_PIDS=()
# Every other process in this test's namespaces (orted and MPI ranks started by mpirun, whatever a
# killed client left) gets SIGKILL too.
sr_app_cleanup() {
	local p ns
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^sr-.*-$SR_TEST_ID\$"); do
		mapfile -t -O "${#SR_APP_PIDS[@]}" SR_APP_PIDS < <(ip netns pids "$ns" 2>/dev/null)
	done
	for p in "${SR_APP_PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	for p in "${SR_APP_PIDS[@]}"; do
		# reaped by us, or by init once we are gone: either way gone within a second
		for _ in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
	done
}
trap sr_app_cleanup EXIT
trap 'exit 130' INT TERM

# sr_app_start LOG NS CMD...: start CMD in namespace NS through our libraries, output in LOG,
# input from file SR_APP_STDIN (default /dev/null), in the background; sets SR_APP_PID to CMD's own PID. `ip netns exec` and `env` both exec, so
# the PID of the background job is the program's (a shell function in the background, such as
# sr_run_on, would be a subshell's instead).
sr_app_start() {
	local log=$1 ns=$2
	shift 2
	ip netns exec "$ns" env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$@" <"${SR_APP_STDIN:-/dev/null}" >"$log" 2>&1 &
	SR_APP_PID=$!
	SR_APP_PIDS+=("$SR_APP_PID")
}

# sr_app_uses_ours PID: fail unless process PID has our librdmacm and libibverbs mapped (and
# not the system's): a misconfigured run would otherwise pass on another RDMA stack.
sr_app_uses_ours() {
	local pid=$1 maps lib
	maps=$(cat "/proc/$pid/maps" 2>/dev/null) || sr_fail "process $pid is gone"
	for lib in librdmacm.so.1 libibverbs.so.1; do
		grep -q "$(realpath "$SR_LIBDIR/$lib")" <<<"$maps" ||
			grep -q "$SR_LIBDIR/$lib" <<<"$maps" ||
			sr_fail "process $pid ($(cat /proc/"$pid"/comm)) does not use our $lib"
	done
}
