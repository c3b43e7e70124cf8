#!/usr/bin/env bash
# The port space (src/cm/port_space.c) in a fresh network namespace whose implicit port
# range is narrowed to two ports, so sharing ports between distinct tuples is the only way
# the connections fit. 10.9.0.1 and 10.9.0.2 sit on a veth end for explicit binds.
# usage: cm_ports.sh share|explicit|eacces|retry
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip ss setpriv
sr_need_root
T="$SR_TESTBIN/cm_ports"
[ -x "$T" ] || sr_fail "no $T"

ns=$(sr_netns_add ports)
ip -n "$ns" link set lo up
ip -n "$ns" link add srv0 type veth peer name srv1 || sr_fail "veth"
ip -n "$ns" addr add 10.9.0.1/24 dev srv0
ip -n "$ns" addr add 10.9.0.2/24 dev srv0
ip -n "$ns" link set srv0 up
ip -n "$ns" link set srv1 up
ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="40000 40001" ||
	sr_fail "cannot set the port range"

run=(ip netns exec "$ns" env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS=detect_leaks=0)
if [ "$1" = eacces ]; then
	# root without CAP_NET_BIND_SERVICE: drop it from the bounding set before exec
	run+=(setpriv --bounding-set=-net_bind_service --inh-caps=-net_bind_service)
fi
"${run[@]}" "$T" "$1" || sr_fail "cm_ports $1"
sr_pass "port space: $1"
