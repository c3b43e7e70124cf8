#!/usr/bin/env bash
# Shared helpers for integration tests. Environment from ctest: SR_LIBDIR, SR_BINDIR,
# SR_SRCDIR, SR_TESTBIN, SR_PRELOAD (sanitizer runtime for uninstrumented programs).
# Every test runs under tests/sandbox.sh (SR_TEST_ID set), which ends at the test's end what
# it started: processes, namespaces, TMPDIR. A script started by hand re-runs itself under it.
[ -n "${SR_TEST_ID:-}" ] || exec "$(dirname "${BASH_SOURCE[0]}")/../sandbox.sh" bash "$0" "$@"
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../teardown.sh"

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
	ip netns add "sr-probe-$SR_TEST_ID" 2>/dev/null || sr_skip "cannot create network namespaces here"
	ip netns del "sr-probe-$SR_TEST_ID"
}

# A network namespace named sr-<name>-<SR_TEST_ID>: the sandbox ends the processes in it and
# deletes it when the test ends (its name is how it is found; a=$(sr_netns_add a) runs in a
# subshell, so there is no list to keep).
sr_netns_add() {
	local ns="sr-$1-$SR_TEST_ID"
	ip netns add "$ns" || sr_fail "ip netns add $ns"
	echo "$ns"
}

# sr_stop PID...: ends background jobs of this script now, not at the test's end: SIGTERM to
# each and to everything under it (a job is often a subshell or a wrapper such as ip netns
# exec, env or timeout around the program that really runs; killing only the job would leave
# that program running, re-parented to init), then waits for the jobs. Bounded: SIGKILL after
# 5 s, 10 s in all (tests/teardown.sh, sr_end_all).
sr_stop() {
	local roots="$*"
	_sr_tree() {
		ps -e -o pid=,ppid= | awk -v roots="$roots" '
			{ kids[$2] = kids[$2] " " $1 }
			END {
				n = split(roots, q, " ")
				for (i = 1; i <= n; i++) {
					p = q[i]
					print p
					m = split(kids[p], k, " ")
					for (j = 1; j <= m; j++) q[++n] = k[j]
				}
			}'
	}
	sr_end_all _sr_tree
	local p
	for p in "$@"; do wait "$p" 2>/dev/null; done
	return 0
}

# Two namespaces joined by a veth pair: sr0 in $1 with 10.$3.0.1/24 and fd00:$3::1/64, sr1 in
# $2 with .2 / ::2, everything up. Returns once IPv6 duplicate address detection is over on
# both ends (neighbour discovery answers only then).
sr_veth_pair() {
	local a=$1 b=$2 net=$3 ns
	ip link add sr0 netns "$a" type veth peer name sr1 netns "$b" || sr_fail "veth"
	ip -n "$a" addr add "10.$net.0.1/24" dev sr0
	ip -n "$b" addr add "10.$net.0.2/24" dev sr1
	ip -n "$a" addr add "fd00:$net::1/64" dev sr0 nodad
	ip -n "$b" addr add "fd00:$net::2/64" dev sr1 nodad
	for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
	ip -n "$a" link set sr0 up
	ip -n "$b" link set sr1 up
	for ns in "$a" "$b"; do
		for _ in $(seq 200); do
			[ -z "$(ip -n "$ns" -6 addr show tentative)" ] && break
			sleep 0.05
		done
	done
}

# Run a test program of this build tree in namespace $1 (it links our libraries itself).
sr_in_ns() {
	local ns=$1
	shift
	ip netns exec "$ns" env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS=detect_leaks=0 "$@"
}

# Wait (up to 20 s) until file $1 holds a line matching $2, else print it and fail.
sr_wait_output() {
	for _ in $(seq 400); do
		grep -q "$2" "$1" && return 0
		sleep 0.05
	done
	cat "$1"
	sr_fail "no '$2' after 20 s"
}

# A path that fails under a running connection: sr_cut_when_ready LOG CUT CMD...
# runs CMD in the background (stdin a fifo, output in LOG); once it prints READY, runs the
# command CUT (a function of the caller), tells CMD "go" on its stdin and waits for it.
# Returns CMD's exit code.
sr_cut_when_ready() {
	local log=$1 cut=$2 fifo pid rc fd
	shift 2
	fifo=$(mktemp -u)
	mkfifo "$fifo" || sr_fail "mkfifo"
	"$@" <"$fifo" >"$log" 2>&1 &
	pid=$!
	exec {fd}>"$fifo"
	sr_wait_output "$log" READY
	"$cut"
	echo go >&"$fd"
	wait "$pid"
	rc=$?
	exec {fd}>&-
	rm -f "$fifo"
	return "$rc"
}

# Where a server/client test runs: sets SR_ADDR (the server's address) and the command
# prefixes SR_SRV / SR_CLI that run a program on the server's / client's host.
#   lo4: 127.0.0.1   lo6: ::1   netns: two namespaces joined by a veth, 10.<net>.0.1 <- .2
#   own: both ends in the first of those namespaces, on its own veth address 10.<net>.0.1
#        (a host's own non-loopback address; real RNICs cannot do this, we must)
sr_hosts() {
	SR_SRV=()
	SR_CLI=()
	case "$1" in
	lo4) SR_ADDR=127.0.0.1 ;;
	lo6) SR_ADDR=::1 ;;
	netns | own)
		sr_need_root
		sr_need_cmd ip
		local a b net=$((200 + RANDOM % 50))
		a=$(sr_netns_add a)
		b=$(sr_netns_add b)
		sr_veth_pair "$a" "$b" "$net"
		SR_ADDR=10.$net.0.1
		SR_SRV=(ip netns exec "$a")
		SR_CLI=(ip netns exec "$b")
		[ "$1" = own ] && SR_CLI=("${SR_SRV[@]}")
		;;
	*) sr_fail "unknown host setup $1" ;;
	esac
}

# Wait (up to 20 s) until something listens on TCP port $1 on the host of prefix "${@:2}"
# (our rdma_cm listeners are real TCP listeners). Starting a client after a fixed sleep is
# flaky on a loaded machine. With SR_WAIT_PID set, fails at once when that process (the
# server) has exited, printing SR_WAIT_LOG (its output) if set.
sr_wait_listen() {
	local port=$1
	shift
	for _ in $(seq 200); do
		[ -n "$("$@" ss -Hltn "sport = :$port" 2>/dev/null)" ] && return 0
		if [ -n "${SR_WAIT_PID:-}" ] && ! kill -0 "$SR_WAIT_PID" 2>/dev/null; then
			[ -n "${SR_WAIT_LOG:-}" ] && cat "$SR_WAIT_LOG"
			sr_fail "the server exited before listening on port $port"
		fi
		sleep 0.1
	done
	[ -n "${SR_WAIT_LOG:-}" ] && cat "$SR_WAIT_LOG"
	sr_fail "nothing listens on port $port after 20 s"
}

# A TCP port for a test's server: below the host's ephemeral range, so that no connection's
# implicit local port (ours or the kernel's, in this test or a parallel one) can hold it,
# and that no socket uses right now at either end (a capture filtered on it sees only the
# test's own traffic).
sr_port() {
	local low p
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range
	[ "$low" -gt 21000 ] 2>/dev/null || low=30000
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % (low - 20000)))
		[ -z "$(ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null)" ] && break
	done
	echo "$p"
}

# Run a program through our libraries on a host prefix: sr_run_on "${SR_SRV[@]}" -- cmd...
sr_run_on() {
	local pre=()
	while [ "$1" != "--" ]; do pre+=("$1"); shift; done
	shift
	"${pre[@]}" env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$@"
}

# One server/client exchange between the hosts of sr_hosts, both through our libraries:
#   sr_server_client PORT SERVER-CMD... -- CLIENT-CMD...
# starts the server, waits until it listens on PORT, runs the client, waits for both.
# Sets SR_SLOG/SR_CLOG (their output) and SR_SRC/SR_CRC (their exit codes) and prints the
# last SR_TAIL (default 5) lines of each.
sr_server_client() {
	local port=$1 srv=() spid
	shift
	while [ "$1" != "--" ]; do srv+=("$1"); shift; done
	shift
	SR_SLOG=$(mktemp)
	SR_CLOG=$(mktemp)
	sr_run_on "${SR_SRV[@]}" -- "${srv[@]}" >"$SR_SLOG" 2>&1 &
	spid=$!
	SR_WAIT_PID=$spid SR_WAIT_LOG=$SR_SLOG sr_wait_listen "$port" "${SR_SRV[@]}"
	sr_run_on "${SR_CLI[@]}" -- "$@" >"$SR_CLOG" 2>&1
	SR_CRC=$?
	# a client that failed with the pattern in SR_SERVER_KILL_ON leaves no server to wait for
	if [ "$SR_CRC" -ne 0 ] && [ -n "${SR_SERVER_KILL_ON:-}" ] &&
		grep -q "$SR_SERVER_KILL_ON" "$SR_CLOG"; then
		sr_stop "$spid"
	fi
	wait "$spid"
	SR_SRC=$?
	echo "--- server (exit $SR_SRC)"; tail -n "${SR_TAIL:-5}" "$SR_SLOG"
	echo "--- client (exit $SR_CRC)"; tail -n "${SR_TAIL:-5}" "$SR_CLOG"
}
