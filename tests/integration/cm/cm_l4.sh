#!/usr/bin/env bash
# Our connections are the host's TCP connections, so the host's policy applies to them as to
# any socket: an nftables reject on the server's port ends rdma_connect in REJECTED, a drop
# in UNREACHABLE once our connect timeout (10 s) passes, and without the rule the next
# connect succeeds; a source-based policy route (ip rule from A lookup T) is followed by an
# id bound to A, choosing the device of the route's interface. Two namespaces, two links.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip nft
sr_need_root
T="$SR_TESTBIN/cm_events"
[ -x "$T" ] || sr_fail "no $T"

a=$(sr_netns_add l4a)
b=$(sr_netns_add l4b)
sr_veth_pair "$a" "$b" 81
ip link add sr2 netns "$a" type veth peer name sr3 netns "$b" || sr_fail "veth 2"
ip -n "$a" addr add 10.82.0.1/24 dev sr2
ip -n "$b" addr add 10.82.0.2/24 dev sr3
ip -n "$a" link set sr2 up
ip -n "$b" link set sr3 up
slog=$(mktemp)
sr_in_ns "$b" "$T" serve 0.0.0.0 7401 >"$slog" 2>&1 &
sr_wait_output "$slog" LISTENING

expect() { sr_in_ns "$a" "$T" expect "$@" || sr_fail "expect $*"; }

ip netns exec "$b" nft add table inet srt || sr_skip "nftables does not work here"
ip netns exec "$b" nft add chain inet srt in '{ type filter hook input priority 0; }'
ip netns exec "$b" nft add rule inet srt in tcp dport 7401 reject with tcp reset
expect - 10.81.0.2 7401 REJECTED
ip netns exec "$b" nft flush chain inet srt in
ip netns exec "$b" nft add rule inet srt in tcp dport 7401 drop
expect - 10.81.0.2 7401 UNREACHABLE
ip netns exec "$b" nft flush chain inet srt in
expect - 10.81.0.2 7401 CONNECT_RESPONSE

# policy routing: from 10.82.0.1, 10.81.0.2 is reached over the second link
ip -n "$a" route add 10.81.0.2/32 via 10.82.0.2 dev sr2 table 100
ip -n "$a" rule add from 10.82.0.1 lookup 100
out=$(sr_in_ns "$a" "$T" expect 10.82.0.1 10.81.0.2 7401 CONNECT_RESPONSE) ||
	{ echo "$out"; sr_fail "policy route connect"; }
echo "$out"
echo "$out" | grep -q "device sriw_sr2" || sr_fail "the policy route's interface was not used"
out=$(sr_in_ns "$a" "$T" expect - 10.81.0.2 7401 CONNECT_RESPONSE) || sr_fail "main table connect"
echo "$out" | grep -q "device sriw_sr0" || sr_fail "the main table's interface was not used"
sr_pass "firewall reject/drop/accept and source policy routing apply to RDMA connections"
