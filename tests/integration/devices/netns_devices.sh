#!/usr/bin/env bash
# In a fresh network namespace with lo and one veth end, exactly two devices appear, named
# after those interfaces; a veth whose peer is down is PORT_DOWN, and ACTIVE once both are up.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ibv_devices ibv_devinfo ip
sr_need_root

a=$(sr_netns_add a)
b=$(sr_netns_add b)
ip link add sr0 netns "$a" type veth peer name sr1 netns "$b" || sr_fail "veth"

list=$(ip netns exec "$a" env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
	ASAN_OPTIONS=detect_leaks=0 ibv_devinfo -l) || sr_fail "ibv_devinfo -l failed"
echo "$list"
echo "$list" | grep -q '^2 HCAs found:' || sr_fail "expected exactly 2 devices"
echo "$list" | grep -Eq '^\s+sriw_lo$' || sr_fail "no sriw_lo"
echo "$list" | grep -Eq '^\s+sriw_sr0$' || sr_fail "no sriw_sr0"

devinfo() { ip netns exec "$a" env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
	ASAN_OPTIONS=detect_leaks=0 ibv_devinfo -d "$1"; }
devinfo sriw_sr0 | grep -q 'PORT_DOWN' || sr_fail "sr0 (down) is not PORT_DOWN"
devinfo sriw_lo | grep -q 'PORT_DOWN' || sr_fail "fresh-namespace lo (down) is not PORT_DOWN"

ip -n "$a" link set sr0 up && ip -n "$b" link set sr1 up && ip -n "$a" link set lo up
for i in $(seq 50); do # carrier comes up asynchronously
	devinfo sriw_sr0 | grep -q PORT_ACTIVE && break
	sleep 0.1
done
devinfo sriw_sr0 | grep -q 'PORT_ACTIVE' || sr_fail "sr0 up with peer up is not PORT_ACTIVE"
devinfo sriw_lo | grep -q 'PORT_ACTIVE' || sr_fail "lo up is not PORT_ACTIVE"
# MTU follows the interface.
ip -n "$a" link set sr0 mtu 2100
devinfo sriw_sr0 | grep -Eq 'active_mtu:\s+2048 \(4\)' || sr_fail "active_mtu does not follow MTU 2100"
sr_pass "namespace sees exactly lo and its veth; state and MTU follow the links"
