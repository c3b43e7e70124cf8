#!/usr/bin/env bash
# Open MPI 4.1.4 (Debian's, unmodified) runs our test program mpi_check (ping-pong, Allreduce,
# one-sided Put/Get, every byte checked) as 2 ranks, one in each of two namespaces, through our
# libraries: pml cm + mtl ofi over libfabric's verbs provider with ofi_rxm (the job of issue
# 16), RUNS times in a row (default 20); every run must end with exit 0, no crash.
# Checked on every run: each rank has our librdmacm/libibverbs mapped (mpi_check reads its
# /proc/self/maps), the two ranks are in different namespaces, and mtl ofi chose a provider on
# our devices (its verbose line "mtl:ofi:provider: sriw_..."; only self as BTL, so nothing
# can go over shared memory or TCP behind our back).
# Launch without ssh: mpirun runs in the first namespace; for the second "host" (its veth
# address) Open MPI's rsh launcher calls mpi_ns_agent.sh, which runs orted there with
# `ip netns exec`, as ssh would on a remote host.
# usage: mpi.sh [RUNS] [verbs|ofi-tcp|btl-tcp] [perf]
#   ofi-tcp / btl-tcp: the same job over libfabric's tcp provider / Open MPI's tcp BTL, without
#   our libraries (figures for docs/PERFORMANCE.md); perf: mpi_check also prints latency and
#   bandwidth.
. "$(dirname "$0")/apps_lib.sh"
runs=${1:-20}
how=${2:-verbs}
perf=${3:-}
sr_need_root
sr_need_cmd mpirun
prog=$SR_TESTBIN/mpi_check
[ -x "$prog" ] || sr_skip "no $prog: built without MPI (package libopenmpi-dev)"

a=$(sr_netns_add mpa)
b=$(sr_netns_add mpb)
net=$((200 + RANDOM % 50))
sr_veth_pair "$a" "$b" "$net"
h1=10.$net.0.1 h2=10.$net.0.2
dir=$(mktemp -d)
trap 'sr_app_cleanup; rm -rf "$dir"' EXIT

# Nothing of the caller's environment steers Open MPI or libfabric.
for v in $(env | grep -Eo '^(OMPI_MCA|FI)_[A-Za-z0-9_]*'); do unset "$v"; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # CI runs as root
export SR_MPI_HOSTS="$h2=$b"
args=(-np 2 --host "$h1:1,$h2:1" --map-by node
	--mca plm_rsh_agent "$(dirname "$(realpath "$0")")/mpi_ns_agent.sh"
	--mca osc pt2pt # one-sided across hosts: osc rdma needs a BTL with RDMA, there is none here
	--timeout 100)
case "$how" in
verbs)
	export SR_EXPECT_LIBDIR=$SR_LIBDIR LD_LIBRARY_PATH=$SR_LIBDIR
	args+=(-x LD_LIBRARY_PATH -x SR_EXPECT_LIBDIR --mca btl self --mca pml cm --mca mtl ofi
		--mca mtl_ofi_provider_include "verbs;ofi_rxm" --mca mtl_base_verbose 10) ;;
ofi-tcp)
	args+=(--mca btl self --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "tcp;ofi_rxm") ;;
btl-tcp)
	args+=(--mca pml ob1 --mca btl "self,tcp") ;;
*) sr_fail "unknown transport $how" ;;
esac

for i in $(seq "$runs"); do
	log=$dir/run$i.log
	ip netns exec "$a" timeout -s KILL 150 mpirun "${args[@]}" "$prog" ${perf:+"$perf"} >"$log" 2>&1
	rc=$?
	fail=
	[ "$rc" -eq 0 ] || fail="mpirun exited $rc"
	grep -q '^OK: ping-pong, allreduce, put/get checked' "$log" || fail="${fail:-no OK line}"
	[ "$(grep -Eo '^rank [01]: netns [0-9]+' "$log" | awk '{print $4}' | sort -u | wc -l)" -eq 2 ] ||
		fail="${fail:-the ranks are not in two namespaces}"
	if [ "$how" = verbs ]; then
		[ "$(grep -c 'mtl:ofi:provider: sriw_' "$log")" -eq 2 ] ||
			fail="${fail:-mtl ofi did not pick our devices at both ranks}"
	fi
	if [ -n "$fail" ]; then
		grep -v '^\[.*\] \(mca\|select\)' "$log" | tail -n 40
		sr_fail "run $i of $runs over $how: $fail"
	fi
	grep -h '^perf:' "$log"
	# anything that survived the job (an orted, a rank) would be a leak: none may be left
	left=$( (ip netns pids "$a"; ip netns pids "$b") 2>/dev/null | wc -l)
	[ "$left" -eq 0 ] || sr_fail "run $i: $left processes left in the namespaces after mpirun"
done
sr_pass "Open MPI over $how across namespaces: $runs runs of ping-pong, Allreduce and Put/Get, all checked"
