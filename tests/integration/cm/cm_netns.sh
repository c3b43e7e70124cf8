#!/usr/bin/env bash
# rdma_cm between two network namespaces joined by a veth pair, QP-less ids: IPv4, IPv6
# global and link-local (scope id), the device of each side is the veth end's, an id
# connecting to its own namespace's veth address uses that interface's device (not lo),
# and an unroutable destination fails rdma_resolve_addr at once.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip ss
sr_need_root
T="$SR_TESTBIN/cm_basic"
[ -x "$T" ] || sr_fail "no $T"

a=$(sr_netns_add cma)
b=$(sr_netns_add cmb)
sr_veth_pair "$a" "$b" 77
ip -n "$a" addr add fe80::77:1/64 dev sr0 nodad
ip -n "$b" addr add fe80::77:2/64 dev sr1 nodad

inns() { sr_in_ns "$@"; }

# pair <server ns> <server addr> <server dev> <client ns> <connect addr> <client dev> <port>
pair() {
	local sns=$1 saddr=$2 sdev=$3 cns=$4 caddr=$5 cdev=$6 port=$7 out spid
	out=$(mktemp)
	inns "$sns" "$T" serve "$saddr" "$port" "$sdev" >"$out" 2>&1 &
	spid=$!
	sr_wait_output "$out" LISTENING
	inns "$cns" "$T" dial "$caddr" "$port" "$cdev" || { cat "$out"; sr_fail "dial $caddr"; }
	wait "$spid" || { cat "$out"; sr_fail "server $saddr"; }
	rm -f "$out"
	echo "ok: $caddr ($cdev -> $sdev)"
}

pair "$a" 10.77.0.1 sriw_sr0 "$b" 10.77.0.1 sriw_sr1 17801
pair "$a" fd00:77::1 sriw_sr0 "$b" fd00:77::1 sriw_sr1 17802
pair "$a" "fe80::77:1%sr0" sriw_sr0 "$b" "fe80::77:1%sr1" sriw_sr1 17803
# our own veth address from inside its namespace: the owning interface's device
pair "$a" 10.77.0.1 sriw_sr0 "$a" 10.77.0.1 sriw_sr0 17804
# loopback in a namespace
pair "$a" 127.0.0.1 "" "$a" 127.0.0.1 sriw_lo 17805
inns "$b" "$T" noroute 10.99.0.1 || sr_fail "noroute"
sr_pass "rdma_cm across namespaces: v4, v6, link-local, own address, loopback, no route"
