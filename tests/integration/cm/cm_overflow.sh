#!/usr/bin/env bash
# A listener whose accept queue overflows: the responder's kernel drops the initiator's
# Request, and the initiator's connect must still end promptly (issue 15 item 7). A connect
# whose Request the responder's TCP has not acknowledged SR_CM_CONNECT_TIMEOUT_MS (10 s)
# after it was sent, although TCP resent it, ends UNREACHABLE (-ETIMEDOUT), instead of
# waiting out the 60 s the responder's application gets for its answer (src/cm/active.c,
# sr_cm_active_wait_on).
#
# In a fresh namespace with net.core.somaxconn 1 (an accept queue of 2) and lo slowed to a
# packet every 40 ms (so that a burst's SYNs are answered before the first handshake's ACK comes
# back), a server process (bench/ports) listens and is stopped, so nothing takes
# connections off its queue. A client opens N connections at once: two fill the queue, the
# kernel drops the ACKs and Requests of the others (ListenOverflows) while their initiators
# are established, each with its Request unacknowledged. The test waits until no initiator
# holds an unacknowledged Request any more (with the 60 s wait: a minute), then lets the
# server go on; the two queued connections complete, and every attempt has ended:
# ESTABLISHED or UNREACHABLE -110, within 20 s. The failed ones were reset, so the server
# never gets their Requests: it ends with exactly the client's connections.
#
# cm_overflow.sh congested: the same link with the server running (no overflow) and 50
# connections at once. The link queues packets for more than 10 s, so Requests are on their
# way, unacknowledged, at the 10 s check, before TCP's retransmission timer (from the round
# trip the handshake measured) has resent them: they must not be failed (a first version of
# the check failed 45 while the server got all their Requests). Nearly all complete, and the
# server ends with exactly the client's connections.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip ss tc nstat
sr_need_root
ports="$SR_BINDIR/ports"
[ -x "$ports" ] || sr_fail "$ports not built"
MODE=${1:-stopped} N=16 PORT=18900 BOUND=20
[ "$MODE" = congested ] && N=50 BOUND=60
work=$(mktemp -d)
trap 'exec 3>&- 2>/dev/null; rm -rf "$work"' EXIT

ns=$(sr_netns_add ovf)
ip -n "$ns" link set lo mtu 1500 up
ip netns exec "$ns" sysctl -qw net.core.somaxconn=1 || sr_fail "cannot set somaxconn"
# 16 kbit/s without a burst: a packet every ~40 ms, so a burst's SYNs queue ahead of the first
# SYN-ACK (loopback otherwise completes each handshake within its connect())
tc -n "$ns" qdisc add dev lo root handle 1: htb default 1 || sr_skip "no htb qdisc"
tc -n "$ns" class add dev lo parent 1: classid 1:1 htb rate 16kbit ceil 16kbit burst 10 \
	cburst 10 quantum 1514 || sr_fail "htb class"
inns() { ip netns exec "$ns" env LD_LIBRARY_PATH="$SR_LIBDIR" \
	${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$@"; }
# client-side sockets (to the listener) established with bytes not acknowledged
unacked() { ip netns exec "$ns" ss -Htn state established "( dport = :$PORT )" |
	awk '$2 > 0' | wc -l; }

mkfifo "$work/hold"
exec 3<>"$work/hold"
inns "$ports" -r server -p $PORT -l 1 <"$work/hold" 3>&- >"$work/server" 2>&1 &
spid=$!
until grep -q ready "$work/server"; do
	kill -0 $spid 2>/dev/null || sr_fail "server: $(cat "$work/server")"
	sleep 0.05
done
# the server process takes nothing from now on (the only process in the namespace yet)
srv=$(ip netns pids "$ns")
[ -n "$srv" ] || sr_fail "no server process in the namespace"
[ "$MODE" = congested ] || kill -STOP $srv
ip netns exec "$ns" nstat -n
t0=$SECONDS
inns "$ports" -r client -p $PORT -l 1 -n "$N" -w "$N" <"$work/hold" 3>&- >"$work/client" 2>&1 &
cpid=$!

if [ "$MODE" != congested ]; then
	# the state under test appears: initiators established with their Request unacknowledged
	seen=0
	for _ in $(seq 200); do
		seen=$(unacked)
		[ "$seen" -gt 0 ] && break
		sleep 0.05
	done
	[ "$seen" -gt 0 ] || sr_fail "no initiator ever held an unacknowledged Request: the setup is wrong"
	# ... and goes: each such connect has ended (its socket closed), within the bound
	until [ "$(unacked)" -eq 0 ]; do
		[ $((SECONDS - t0)) -le $BOUND ] || break
		sleep 0.1
	done
	left=$(unacked)
	stuck=$((SECONDS - t0))
	overflows=$(ip netns exec "$ns" nstat -az TcpExtListenOverflows |
		awk '/ListenOverflows/ { print $2 }')
	echo "initiators with an unacknowledged Request: first $seen, $left left after $stuck s;" \
		"ListenOverflows $overflows"
	kill -CONT $srv
	[ "$left" -eq 0 ] ||
		sr_fail "$left connects still waited after $BOUND s on a Request the responder never took"
fi

# the queued connections complete once the server runs; then every attempt has ended
until grep -q '^held$' "$work/client"; do
	kill -0 $cpid 2>/dev/null || break
	[ $((SECONDS - t0)) -le $((BOUND + 20)) ] || break
	sleep 0.1
done
echo "client: $(tr '\n' ' ' <"$work/client")"
grep -q '^held$' "$work/client" || sr_fail "the client's connects did not all end"
# the failed connects leave nothing that could still reach the server: once their sockets are
# gone, the server has exactly the client's connections (a Request TCP delivered later would
# give it connections the client reported UNREACHABLE)
until [ -z "$(ip netns exec "$ns" ss -Htan "( dport = :$PORT )" | grep -v '^ESTAB')" ]; do
	[ $((SECONDS - t0)) -le $((BOUND + 60)) ] || sr_fail "the failed connects' sockets stayed"
	sleep 0.1
done
exec 3>&-
wait
echo "server: $(tr '\n' ' ' <"$work/server")"
est=$(awk '$1 == "established" { print $2 }' "$work/client")
failed=$(awk '$1 == "failed" { print $2 }' "$work/client")
slow=$(awk '$1 == "slowest_ms" { print $2 }' "$work/client")
grep -q "^server_established $est\$" "$work/server" ||
	sr_fail "the server has other connections than the client's $est"
[ "$slow" -lt $((BOUND * 1000)) ] || sr_fail "an attempt took $slow ms to end"
if [ "$MODE" = congested ]; then
	# before the 10 s check: 48 of 50, 2 REJECTED (the server's 5 s for a Request)
	[ "$est" -ge $((N - 5)) ] || sr_fail "only $est of $N connections on a slow link completed"
	sr_pass "congested link: $est of $N established, slowest $slow ms"
	exit 0
fi
[ "$est" -ge 1 ] || sr_fail "no connection completed once the server ran"
[ "$failed" -ge 1 ] || sr_fail "no connect failed: the Requests were not dropped"
bad=$(awk '$1 == "fail" && $2 != "RDMA_CM_EVENT_UNREACHABLE:-110" { print }' "$work/client")
[ -z "$bad" ] || sr_fail "failures other than UNREACHABLE -110: $bad"
sr_pass "accept queue overflow: $est established, $failed UNREACHABLE, slowest $slow ms"
