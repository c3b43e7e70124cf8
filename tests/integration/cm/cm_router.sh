#!/usr/bin/env bash
# Three hosts: A - R - B, two subnets and a router between them, IPv4 and IPv6. Unmodified
# rping (-V) runs across the router while A's neighbour table is flushed and R's link to B
# goes down and up (the connection rides it out); an id connected through the router sees
# ADDR_CHANGE when the gateway's MAC changes (the next hop is the gateway, not B). And a
# process sees only its own namespace's devices.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rping ip ibv_devices
sr_need_root
T="$SR_TESTBIN/cm_events"
[ -x "$T" ] || sr_fail "no $T"
A=$(sr_netns_add rta)
R=$(sr_netns_add rtr)
B=$(sr_netns_add rtb)
ip link add sr0 netns "$A" type veth peer name sr1 netns "$R" || sr_fail "veth A-R"
ip link add sr2 netns "$R" type veth peer name sr3 netns "$B" || sr_fail "veth R-B"
ip -n "$A" addr add 10.85.1.1/24 dev sr0
ip -n "$A" addr add fd00:85:1::1/64 dev sr0 nodad
ip -n "$R" addr add 10.85.1.254/24 dev sr1
ip -n "$R" addr add fd00:85:1::fe/64 dev sr1 nodad
ip -n "$R" addr add 10.85.2.254/24 dev sr2
ip -n "$R" addr add fd00:85:2::fe/64 dev sr2 nodad
ip -n "$B" addr add 10.85.2.2/24 dev sr3
ip -n "$B" addr add fd00:85:2::2/64 dev sr3 nodad
for ns in "$A" "$R" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set sr0 up
ip -n "$R" link set sr1 up
ip -n "$R" link set sr2 up
ip -n "$B" link set sr3 up
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
ip -n "$A" route add default via 10.85.1.254
ip -n "$A" -6 route add default via fd00:85:1::fe
ip -n "$B" route add default via 10.85.2.254
ip -n "$B" -6 route add default via fd00:85:2::fe
for ns in "$A" "$R" "$B"; do
	for _ in $(seq 200); do
		[ -z "$(ip -n "$ns" -6 addr show tentative)" ] && break
		sleep 0.05
	done
done

# isolation: each namespace has its own devices
devs=$(sr_run_on ip netns exec "$A" -- ibv_devices)
echo "$devs" | grep -q sriw_sr0 || { echo "$devs"; sr_fail "A does not see sriw_sr0"; }
echo "$devs" | grep -qE "sriw_sr[123]" && { echo "$devs"; sr_fail "A sees other namespaces"; }

slog=$(mktemp)
clog=$(mktemp)
# rping <server address> <port> <count> [action while it runs...]
rping_across() {
	local addr=$1 port=$2 count=$3 spid cpid
	shift 3
	sr_run_on ip netns exec "$B" -- timeout 120 rping -s -a "$addr" -p "$port" -S 4096 -V \
		-C "$count" >"$slog" 2>&1 &
	spid=$!
	sr_wait_listen "$port" ip netns exec "$B"
	sr_run_on ip netns exec "$A" -- timeout 120 rping -c -a "$addr" -p "$port" -S 4096 -V -v \
		-C "$count" >"$clog" 2>&1 &
	cpid=$!
	if [ $# -gt 0 ]; then
		for _ in $(seq 400); do
			[ -n "$(ip netns exec "$A" ss -Htn state established dst "$addr")" ] && break
			sleep 0.05
		done
		"$@"
		kill -0 "$cpid" 2>/dev/null || echo "(rping ended before the action)"
	fi
	wait "$cpid" || { cat "$clog" "$slog"; sr_fail "rping client to $addr"; }
	wait "$spid" || { cat "$slog"; sr_fail "rping server $addr"; }
	[ "$(grep -c 'ping data' "$clog")" -eq "$count" ] || sr_fail "pings lost to $addr"
	echo "ok: rping -V -C $count to $addr $*"
}
disturb() {
	ip -n "$A" neigh flush dev sr0
	ip -n "$R" link set sr2 down
	ip -n "$R" link set sr2 up
}
rping_across fd00:85:2::2 7404 200
rping_across 10.85.2.2 7403 2000 disturb

# the gateway's MAC changes under a connected id: ADDR_CHANGE
out=$(mktemp)
sr_run_on ip netns exec "$B" -- "$T" serve 10.85.2.2 7405 >"$out" 2>&1 &
sr_wait_output "$out" LISTENING
sr_run_on ip netns exec "$A" -- "$T" watch 10.85.2.2 7405 ADDR_CHANGE >"$clog" 2>&1 &
wpid=$!
sr_wait_output "$clog" CONNECTED
ip -n "$R" link set sr1 address 02:85:00:00:00:fe
ip -n "$A" neigh replace 10.85.1.254 lladdr 02:85:00:00:00:fe dev sr0 nud reachable
wait "$wpid" || { cat "$clog"; sr_fail "no ADDR_CHANGE for the gateway's MAC"; }
rm -f "$out"
sr_pass "rping through a router (v4 with neighbour flush and link flap, v6), gateway MAC change, isolation"
