#!/usr/bin/env bash
# The RoCE demultiplexer (softrdma-roced, src/roce_demux/), each scenario in a fresh network
# namespace (its own UDP 4791 and abstract unix names, so nothing collides with the host or
# a parallel test): several processes started at once share one daemon and receive exactly
# their datagrams; a killed daemon is noticed; it stays its grace period after its last
# client and then exits; a second user is refused with its owner's uid named; a port held by
# another program and a missing daemon give clear errors. Each scenario ends with no process
# left in its namespace: the daemon exits with its last client.
. "$(dirname "$0")/../lib.sh"
sr_need_root
sr_need_cmd ip setpriv python3

T=$SR_TESTBIN/rdx_test
D=$SR_LIBDIR/softrdma-roced
{ [ -x "$T" ] && [ -x "$D" ]; } || sr_fail "build rdx_test and softrdma-roced first"

fresh() {
	local ns
	ns=$(sr_netns_add "$1")
	ip -n "$ns" link set lo up
	echo "$ns"
}
# rdx_test in namespace $1, optionally as another user ($AS: setpriv arguments)
rdx() {
	local ns=$1
	shift
	ip netns exec "$ns" ${AS:+setpriv $AS} env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
		ASAN_OPTIONS=detect_leaks=0 SOFTRDMA_ROCED="$D" \
		SOFTRDMA_ROCED_LINGER_MS="${LINGER:-300}" "$T" "$@"
}
# Nothing runs in namespace $1 any more. rdx_test waited for the daemon's exit (pidfd), so
# this is a check, not a wait.
none_left() {
	local p
	p=$(ip netns pids "$1" | tr '\n' ' ')
	[ -z "$p" ] || { ps -o pid,user,args -p "$p"; sr_fail "$2: left running in $1"; }
}
# A background command with its stdin on a fifo: starts it, waits for READY in its output.
# Sets BG_PID and BG_FD (close it to end the command).
bg_ready() {
	local log=$1 fifo
	shift
	fifo=$(mktemp -u)
	mkfifo "$fifo" || sr_fail mkfifo
	"$@" <"$fifo" >"$log" 2>&1 &
	BG_PID=$!
	exec {BG_FD}>"$fifo"
	rm -f "$fifo"
	sr_wait_output "$log" READY
}

ns=$(fresh deliver)
rdx "$ns" deliver 6 || sr_fail "deliver"
none_left "$ns" deliver
sr_pass "6 processes started at once: one daemon, own QPNs, exactly their datagrams"

ns=$(fresh kill)
rdx "$ns" kill || sr_fail "kill"
none_left "$ns" kill
sr_pass "a killed daemon is noticed, a stopped one after 5 s; the next open starts another"

ns=$(fresh linger)
LINGER=1000 rdx "$ns" linger || sr_fail "linger"
none_left "$ns" linger
sr_pass "the daemon stays its grace period, then exits"

# A second user: nobody's daemon serves the namespace, root is refused by name.
ns=$(fresh user)
log=$(mktemp)
AS="--reuid=65534 --regid=65534 --clear-groups" bg_ready "$log" rdx "$ns" hold
rdx "$ns" refused 65534 || { cat "$log"; sr_fail "refused"; }
exec {BG_FD}>&-
wait "$BG_PID" || { cat "$log"; sr_fail "nobody's client"; }
none_left "$ns" user
sr_pass "a second user gets EACCES naming the owner; the daemon refuses it too"

# UDP 4791 held by a program that is not ours.
ns=$(fresh port)
bg_ready "$log" ip netns exec "$ns" python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 4791))
print("READY", flush=True)
sys.stdin.read()'
rdx "$ns" error 98 "in use by uid 0," || sr_fail "port held"
exec {BG_FD}>&-
wait "$BG_PID"
none_left "$ns" port
sr_pass "a port held by another program: EADDRINUSE naming its uid"

# No daemon where the library looks for it (next to the object holding the client).
ns=$(fresh missing)
ip netns exec "$ns" env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS=detect_leaks=0 \
	SOFTRDMA_ROCED= "$T" error 2 "softrdma-roced not found at" || sr_fail "missing"
sr_pass "a missing daemon: ENOENT naming the path"
