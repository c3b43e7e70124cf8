#!/usr/bin/env bash
# rdma_cm paths that need a network between two namespaces:
#  - a wildcard listener serves every interface, including one added after rdma_listen;
#  - a destination that never answers the TCP handshake (its neighbour entry points at a
#    MAC nobody has) is UNREACHABLE -ETIMEDOUT after the connect timeout (10 s), one whose
#    address nobody resolves (ARP fails) UNREACHABLE -EHOSTUNREACH;
#  - a path that dies under RDMA_OPTION_ID_ACK_TIMEOUT 18 (1074 ms) ends the connection,
#    Send in error and DISCONNECTED, within seconds.
# usage: cm_netns_paths.sh wildcard|unreachable|dead_path
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip
sr_need_root
CALLS="$SR_TESTBIN/cm_calls"
QP="$SR_TESTBIN/cm_qp"
BASIC="$SR_TESTBIN/cm_basic"
for t in "$CALLS" "$QP" "$BASIC"; do [ -x "$t" ] || sr_fail "no $t"; done

a=$(sr_netns_add pa)
b=$(sr_netns_add pb)
veth() { # veth <a dev> <b dev> <net>
	ip link add "$1" netns "$a" type veth peer name "$2" netns "$b" || sr_fail "veth"
	ip -n "$a" addr add "10.$3.0.1/24" dev "$1"
	ip -n "$b" addr add "10.$3.0.2/24" dev "$2"
	ip -n "$a" link set "$1" up
	ip -n "$b" link set "$2" up
}
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
veth sr0 sr1 79

inns() { sr_in_ns "$@"; }
# wait_for <file> <text>: the background program printed text
wait_for() {
	local i
	for i in $(seq 400); do grep -q "$2" "$1" && return 0; sleep 0.05; done
	cat "$1"
	sr_fail "no '$2'"
}
out=$(mktemp)

case "$1" in
wildcard)
	inns "$a" "$CALLS" serve_any 0.0.0.0 17811 3 >"$out" 2>&1 &
	spid=$!
	wait_for "$out" LISTENING
	inns "$b" "$BASIC" dial 10.79.0.1 17811 sriw_sr1 || { cat "$out"; sr_fail "dial sr0"; }
	# an interface that did not exist when the listener started
	veth sr2 sr3 80
	inns "$b" "$BASIC" dial 10.80.0.1 17811 sriw_sr3 || { cat "$out"; sr_fail "dial sr2"; }
	inns "$a" "$BASIC" dial 127.0.0.1 17811 sriw_lo || { cat "$out"; sr_fail "dial lo"; }
	wait "$spid" || { cat "$out"; sr_fail "server"; }
	cat "$out"
	grep -q "REQUEST sriw_sr0 10.79.0.1" "$out" || sr_fail "request on sr0"
	grep -q "REQUEST sriw_sr2 10.80.0.1" "$out" || sr_fail "request on the new sr2"
	grep -q "REQUEST sriw_lo 127.0.0.1" "$out" || sr_fail "request on lo"
	sr_pass "a wildcard listener serves current and new interfaces"
	;;
unreachable)
	# 10.79.0.9 "exists" (a neighbour entry) but nothing ever answers. (An address nobody
	# answers ARP for already fails rdma_resolve_addr: cm_addr_resolve.)
	ip -n "$b" neigh add 10.79.0.9 lladdr 02:00:00:00:00:99 dev sr1 nud permanent
	inns "$b" "$CALLS" unreachable 10.79.0.9 17812 110 >"$out" 2>&1 || { cat "$out"; sr_fail "no TCP answer"; }
	cat "$out"
	sr_pass "unanswered destinations are UNREACHABLE"
	;;
dead_path)
	inns "$a" "$QP" serve 10.79.0.1 17813 >/dev/null 2>&1 &
	spid=$!
	sr_wait_listen 17813 ip netns exec "$a"
	# from READY on b's packets to a go to a MAC nobody has: a dead path, no RST, no ICMP
	cut() { ip -n "$b" neigh replace 10.79.0.1 lladdr 02:00:00:00:00:99 dev sr1 nud permanent; }
	sr_cut_when_ready "$out" cut inns "$b" "$QP" dead_path 10.79.0.1 17813
	crc=$?
	sr_stop "$spid"
	cat "$out"
	[ "$crc" -eq 0 ] || sr_fail "dead path"
	sr_pass "a dead path ends the connection after the ACK timeout"
	;;
*) sr_fail "unknown case $1" ;;
esac
