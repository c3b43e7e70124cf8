#!/usr/bin/env bash
# Unmodified ibv_devices / ibv_devinfo -v see a loopback iWARP device with sane values.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ibv_devices ibv_devinfo

out=$(sr_run ibv_devices) || sr_fail "ibv_devices exited $?"
echo "$out"
echo "$out" | grep -Eq '^\s*sriw_lo\s+[0-9a-f]{16}$' || sr_fail "no sriw_lo row in ibv_devices"
echo "$out" | grep -Eq 'sriw_lo\s+0{16}$' && sr_fail "loopback node GUID is zero"

info=$(sr_run ibv_devinfo -v -d sriw_lo) || sr_fail "ibv_devinfo exited $?"
echo "$info"
expect() { echo "$info" | grep -Eq "$1" || sr_fail "ibv_devinfo -v: missing /$1/"; }
expect '^hca_id:\s+sriw_lo$'
expect 'transport:\s+iWARP \(1\)'
expect 'node_guid:\s+[0-9a-f:]{19}'
echo "$info" | grep -Eq 'node_guid:\s+0000:0000:0000:0000' && sr_fail "zero node GUID"
expect 'phys_port_cnt:\s+1$'
expect 'state:\s+PORT_ACTIVE \(4\)'
expect 'link_layer:\s+Ethernet'
expect 'max_qp:\s+[1-9]'
expect 'max_qp_rd_atom:\s+[1-9]'
expect 'max_mr_size:\s+0x[1-9a-f]'
# GID 0 as kernel iWARP devices lay it out: six address bytes, then zeros. ibv_devinfo takes a
# GID whose last eight bytes are zero for an empty entry and prints no GID line, exactly as for a
# kernel siw device; the bytes themselves are checked by unit_verbs_device. No P_Key table.
echo "$info" | grep -Eq 'GID\[' && sr_fail "a GID line: GID 0 is not in the iWARP layout"
expect 'max_pkeys:\s+0$'
expect 'pkey_tbl_len:\s+0$'
# lo's MTU is 65536 here unless someone changed it: the largest IB MTU that fits is 4096.
mtu=$(cat /sys/class/net/lo/mtu)
if [ "$mtu" -ge 4096 ]; then expect 'active_mtu:\s+4096 \(5\)'; fi
sr_pass "ibv_devices and ibv_devinfo -v show sriw_lo"
