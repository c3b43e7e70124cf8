#!/usr/bin/env bash
# Network changes under a connected rdma_cm id, between two namespaces: the client's source
# address removed, its next hop's MAC changed, its route moved to another link (each:
# ADDR_CHANGE while the connection stays up), its interface deleted (DEVICE_REMOVAL, then a
# clean teardown).
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip
sr_need_root
T="$SR_TESTBIN/cm_events"
[ -x "$T" ] || sr_fail "no $T"

a=$(sr_netns_add eva)
b=$(sr_netns_add evb)
sr_veth_pair "$a" "$b" 79
slog=$(mktemp)
sr_in_ns "$b" "$T" serve 10.79.0.2 7400 >"$slog" 2>&1 &
sr_wait_output "$slog" LISTENING

# watch <expected event> <what to do once connected...>
watch() {
	local ev=$1 pid
	shift
	clog=$(mktemp)
	sr_in_ns "$a" "$T" watch 10.79.0.2 "${port:-7400}" "$ev" ${qp:-} >"$clog" 2>&1 &
	pid=$!
	sr_wait_output "$clog" CONNECTED
	"$@"
	wait "$pid" || { cat "$clog"; sr_fail "$ev after: $*"; }
	cat "$clog"
}
# (port=P qp=qp watch ...: another server, real QPs)

# the source address goes away (a second one, so the first stays usable for later cases)
ip -n "$a" addr add 10.79.0.11/24 dev sr0
ip -n "$a" route replace 10.79.0.2/32 dev sr0 src 10.79.0.11
watch ADDR_CHANGE ip -n "$a" addr del 10.79.0.11/24 dev sr0
ip -n "$a" route del 10.79.0.2/32 2>/dev/null

# the next hop answers with a new MAC
mac=02:79:00:00:00:02
watch ADDR_CHANGE sh -c "ip -n $b link set sr1 address $mac &&
	ip -n $a neigh replace 10.79.0.2 lladdr $mac dev sr0 nud reachable"

# a route sends the destination out of a second link
ip link add sr2 netns "$a" type veth peer name sr3 netns "$b" || sr_fail "veth 2"
ip -n "$a" addr add 10.80.0.1/24 dev sr2
ip -n "$b" addr add 10.80.0.2/24 dev sr3
ip -n "$a" link set sr2 up
ip -n "$b" link set sr3 up
watch ADDR_CHANGE ip -n "$a" route add 10.79.0.2/32 via 10.80.0.2 dev sr2
ip -n "$a" route del 10.79.0.2/32

# the client's interface is deleted; with a QP, its posted receive is flushed
sr_in_ns "$b" "$T" serve 10.79.0.2 7406 qp >"$slog.qp" 2>&1 &
sr_wait_output "$slog.qp" LISTENING
port=7406 qp=qp watch DEVICE_REMOVAL ip -n "$a" link del sr0
grep -q "receive flushed" "$clog" || sr_fail "no flushed receive after DEVICE_REMOVAL"
rm -f "$slog.qp"
sr_pass "ADDR_CHANGE on address removal, MAC change and route change; DEVICE_REMOVAL"
