#!/usr/bin/env bash
# Fault cases of fault_test (docs/SECURITY.md, "Faults").
# usage: fault.sh kill_sender|kill_receiver|vanish_ack_timeout|vanish_default
#        fault.sh cycles N CHECK_AT [no_memory]
. "$(dirname "$0")/../lib.sh"
FT="$SR_TESTBIN/fault_test"
[ -x "$FT" ] || sr_fail "no $FT"

# vanish <ACK_TIMEOUT or 0> <min ms> <max ms>: the survivor (namespace b) streams to a peer
# server (namespace a), then a's firewall drops every packet both ways: no FIN, no RST, no
# ICMP. The survivor's next SEND goes unacknowledged until TCP gives up.
vanish() {
	sr_need_root
	sr_need_cmd ip nft
	local a b net=$((150 + RANDOM % 40)) plog clog spid crc
	a=$(sr_netns_add fa)
	b=$(sr_netns_add fb)
	sr_veth_pair "$a" "$b" "$net"
	# without ACK_TIMEOUT, TCP's own limit: net.ipv4.tcp_retries2 of the survivor's
	# namespace (default 15: about 15 minutes). The test lowers it to 3 (about 3 s).
	ip netns exec "$b" sysctl -qw net.ipv4.tcp_retries2=3 || sr_fail "tcp_retries2"
	plog=$(mktemp)
	clog=$(mktemp)
	sr_in_ns "$a" "$FT" peer_server "10.$net.0.1" 0 >"$plog" 2>&1 &
	spid=$!
	sr_wait_output "$plog" '^PORT '
	port=$(awk '/^PORT /{print $2; exit}' "$plog")
	cut() {
		ip netns exec "$a" nft -f - <<'NFT' || sr_fail "nft"
table inet sr_vanish {
	chain in { type filter hook input priority 0; policy drop; }
	chain out { type filter hook output priority 0; policy drop; }
}
NFT
	}
	sr_cut_when_ready "$clog" cut \
		sr_in_ns "$b" "$FT" vanish "10.$net.0.1" "$port" "$1" "$2" "$3"
	crc=$?
	# $spid is the subshell of sr_in_ns: the peer server under it must end too (it cannot
	# see its connection end behind the drop-all rule)
	sr_stop "$spid"
	cat "$clog"
	[ "$crc" -eq 0 ] || sr_fail "vanished peer (ACK_TIMEOUT $1)"
}

case "$1" in
kill_sender | kill_receiver)
	sr_run "$FT" "$1" || sr_fail "$1"
	sr_pass "$1: the survivor sees DISCONNECTED and destroys everything"
	;;
cycles)
	# Our own program: not through sr_run, so a sanitizer build keeps leak detection on.
	# One malloc arena, so that mallinfo2 sees every thread's allocations.
	env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} MALLOC_ARENA_MAX=1 \
		"$FT" cycles "$2" "$3" ${4:-} || sr_fail "cycles"
	sr_pass "$2 cycles without growth"
	;;
vanish_ack_timeout)
	# ACK_TIMEOUT 18: 4.096 us * 2^18 = 1074 ms; TCP gives up at the first retransmission
	# timer after that (RTOs of 200 ms doubling): allow for a loaded machine
	vanish 18 1000 10000
	sr_pass "a vanished peer is detected after the ACK timeout"
	;;
vanish_default)
	# tcp_retries2 3: (2^4 - 1) * 200 ms = 3 s of retransmissions, then the next RTO
	vanish 0 2500 20000
	sr_pass "a vanished peer is detected after TCP's own limit (tcp_retries2)"
	;;
*) sr_fail "unknown case $1" ;;
esac
