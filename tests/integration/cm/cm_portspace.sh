#!/usr/bin/env bash
# Near port exhaustion, with the host's other TCP traffic in TIME_WAIT, rdma_cm gets as many
# connections out of the port space as plain TCP connect() does, and every attempt ends
# promptly: ESTABLISHED, or the documented EADDRNOTAVAIL (rdma_resolve_addr, or
# CONNECT_ERROR with status -EADDRNOTAVAIL when connect finds no free 4-tuple).
#
# Twice, in a fresh network namespace whose ip_local_port_range holds 100 ports (once with
# plain TCP, once with rdma_cm, through bench/ports): first a plain TCP program opens and
# closes 60 connections to another port, leaving 60 of the 100 ports in TIME_WAIT; then 3
# client processes open 150 connections each to 4 listeners of one server process and hold
# them. 450 attempts, 400 free 4-tuples: ports are shared by 4-tuple across processes, and
# the TIME_WAIT ports can only be used for other destinations by connect()'s own choice.
. "$(dirname "$0")/../lib.sh"
sr_need_root
ports="$SR_BINDIR/ports"
[ -x "$ports" ] || sr_fail "$ports not built"
K=3 N=150 TW=60
work=$(mktemp -d)
trap 'exec 3>&- 4>&- 2>/dev/null; rm -rf "$work"' EXIT

# run_set NAME [-T]: one set in a fresh namespace; results in $work/NAME.*
run_set() {
	local name=$1 tcp=${2:-} ns i t0
	ns=$(sr_netns_add "ps$name")
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="40000 40099" ||
		sr_fail "cannot set the port range"
	inns() { ip netns exec "$ns" env LD_LIBRARY_PATH="$SR_LIBDIR" \
		${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$@"; }

	# the other program's traffic: 60 connections opened, then closed by the client (its
	# ports go to TIME_WAIT; they are plain sockets, without SO_REUSEADDR)
	mkfifo "$work/$name.twhold"
	exec 4<>"$work/$name.twhold"
	inns "$ports" -r server -T -p 9100 -l 1 <"$work/$name.twhold" 4>&- >"$work/$name.twserver" 2>&1 &
	until grep -q ready "$work/$name.twserver"; do
		kill -0 $! 2>/dev/null || sr_fail "TCP server: $(cat "$work/$name.twserver")"
		sleep 0.05
	done
	inns "$ports" -r client -T -p 9100 -l 1 -n $TW </dev/null 4>&- >"$work/$name.tw" 2>&1 ||
		sr_fail "TIME_WAIT filler: $(cat "$work/$name.tw")"
	grep -q "^established $TW\$" "$work/$name.tw" || sr_fail "filler: $(cat "$work/$name.tw")"
	exec 4>&-
	wait
	[ "$(ip netns exec "$ns" ss -Htan state time-wait | wc -l)" -ge $TW ] ||
		sr_fail "the filler left no TIME_WAIT sockets"

	# the server and K clients, all holding until fd 3 closes
	mkfifo "$work/$name.hold"
	exec 3<>"$work/$name.hold"
	inns "$ports" -r server $tcp -p 18900 -l 4 <"$work/$name.hold" 3>&- >"$work/$name.server" 2>&1 &
	until grep -q ready "$work/$name.server"; do
		kill -0 $! 2>/dev/null || sr_fail "server: $(cat "$work/$name.server")"
		sleep 0.05
	done
	t0=$SECONDS
	for i in $(seq $K); do
		inns "$ports" -r client $tcp -p 18900 -l 4 -n $N <"$work/$name.hold" 3>&- \
			>"$work/$name.c$i" 2>&1 &
	done
	# every client reaches "held" (each attempt has ended) or exits; bounded by ctest
	for i in $(seq $K); do
		until grep -q '^held$' "$work/$name.c$i"; do
			jobs -r | grep -q . || break
			sleep 0.1
		done
	done
	echo "$name: setup took $((SECONDS - t0)) s"
	exec 3>&-
	wait
	for i in $(seq $K); do
		echo "$name client $i: $(tr '\n' ' ' <"$work/$name.c$i")"
		grep -q '^held$' "$work/$name.c$i" || sr_fail "$name client $i did not finish"
	done
	echo "$name server: $(tr '\n' ' ' <"$work/$name.server")"
	ip netns del "$ns"
}
total() { cat "$work/$1".c* | awk '$1 == "established" { s += $2 } END { print s + 0 }'; }

run_set tcp -T
run_set rdma
tcp=$(total tcp)
rdma=$(total rdma)
echo "established: TCP $tcp, rdma_cm $rdma (of $((K * N)) attempts)"
[ "$tcp" -gt $((K * N / 2)) ] || sr_fail "TCP itself got only $tcp: the setup is wrong"
[ "$rdma" -ge "$tcp" ] || sr_fail "rdma_cm got $rdma connections where TCP's connect() got $tcp"
# every failure is the documented one
bad=$(cat "$work"/rdma.c* | awk '$1 == "fail" && $2 != "rdma_resolve_addr:99" &&
	$2 != "RDMA_CM_EVENT_CONNECT_ERROR:-99" { print }')
[ -z "$bad" ] || sr_fail "failures other than EADDRNOTAVAIL: $bad"
# promptly: far below the 60 s the initiator waits for an MPA Reply (the 60 s hang of issue 15)
slow=$(cat "$work"/rdma.c* | awk '$1 == "slowest_ms" && $2 > m { m = $2 } END { print m + 0 }')
[ "$slow" -lt 10000 ] || sr_fail "an attempt took $slow ms to end"
grep -q '^server_lost 0$' "$work/rdma.server" ||
	sr_fail "the server accepted requests that never reached ESTABLISHED"
sr_pass "rdma_cm: $rdma connections (TCP: $tcp), every failure EADDRNOTAVAIL, slowest $slow ms"
