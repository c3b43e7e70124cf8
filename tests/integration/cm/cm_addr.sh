#!/usr/bin/env bash
# rdma_resolve_addr through the kernel's neighbour table, between two namespaces joined by
# a veth: a next hop that answers (IPv4, IPv6), one that never does (timeout), one the
# kernel gives up on before the timeout (EHOSTUNREACH), waits shared and cancelled.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip
sr_need_root
T="$SR_TESTBIN/cm_addr"
[ -x "$T" ] || sr_fail "no $T"

a=$(sr_netns_add adra)
b=$(sr_netns_add adrb)
sr_veth_pair "$a" "$b" 78

inns() { sr_in_ns "$a" "$@"; }
neigh() { ip -n "$a" neigh show "$1" dev sr0; }

# the peer answers: the entry goes from absent to valid, the id resolves
[ -z "$(neigh 10.78.0.2)" ] || sr_fail "neighbour entry before the test"
inns "$T" ok 10.78.0.2 2000 || sr_fail "ok v4"
neigh 10.78.0.2 | grep -qE "REACHABLE|STALE|DELAY" || { neigh 10.78.0.2; sr_fail "no entry"; }
inns "$T" ok fd00:78::2 2000 || sr_fail "ok v6"
# an on-link address nobody has: our timeout wins over the kernel's 3 x 1 s of probes
inns "$T" timeout 10.78.0.99 1000 || sr_fail "timeout v4"
inns "$T" timeout fd00:78::99 1000 || sr_fail "timeout v6"
inns "$T" shared 10.78.0.98 300 || sr_fail "shared"
inns "$T" destroy 10.78.0.97 300 || sr_fail "destroy"
# quick probes: the neighbour table fails the entry long before a 10 s timeout
ip netns exec "$a" sysctl -qw net.ipv4.neigh.sr0.retrans_time_ms=100 \
	net.ipv4.neigh.sr0.mcast_solicit=2
inns "$T" failed 10.78.0.96 10000 || sr_fail "failed"
sr_pass "next-hop resolution: answer, timeout, failure, shared waits, destroy"
