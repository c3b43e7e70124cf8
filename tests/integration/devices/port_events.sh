#!/usr/bin/env bash
# Setting a link down while a context is open gives IBV_EVENT_PORT_ERR and PORT_DOWN (also in
# the unmodified ibv_devinfo); setting it up again gives IBV_EVENT_PORT_ACTIVE.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip ibv_devinfo
sr_need_root

a=$(sr_netns_add a)
b=$(sr_netns_add b)
ip link add sr0 netns "$a" type veth peer name sr1 netns "$b" || sr_fail "veth"
ip -n "$a" link set sr0 up && ip -n "$b" link set sr1 up
for i in $(seq 50); do
	ip -n "$a" link show sr0 | grep -q 'LOWER_UP' && break
	sleep 0.1
done

log=$(mktemp)
ip netns exec "$a" env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
	"$SR_TESTBIN/port_events" sriw_sr0 2 >"$log" 2>&1 &
pid=$!
sr_wait_output "$log" '^ready'
grep -q '^ready active' "$log" || { cat "$log"; sr_fail "not ready/active"; }

ip -n "$a" link set sr0 down
sr_wait_output "$log" 'PORT_ERR\|port error'
ip netns exec "$a" env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
	ASAN_OPTIONS=detect_leaks=0 ibv_devinfo -d sriw_sr0 | tee /dev/stderr | grep -q 'PORT_DOWN' ||
	sr_fail "ibv_devinfo does not show PORT_DOWN"
ip -n "$a" link set sr0 up
wait "$pid" || { cat "$log"; sr_fail "port_events exited $?"; }
cat "$log"
grep -q '^event port error port 1 state down$' "$log" || sr_fail "no PORT_ERR event with state down"
grep -q '^event port active port 1 state active$' "$log" || sr_fail "no PORT_ACTIVE event"
sr_pass "port down/up reach the application as async events"
