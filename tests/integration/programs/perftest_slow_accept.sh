#!/usr/bin/env bash
# perftest's server answers its CONNECT_REQUESTs late: with -q 8 -s 4194304 it fills 64 MiB
# with random() between the first request and rdma_accept, seconds of CPU that exceed 10 s
# on a loaded machine. The initiator must still be waiting then (as on InfiniBand, whose CM
# stretches the wait with an MRA, and Chelsio's iWARP, 60 s): an UNREACHABLE there sends
# perftest's client into its retry path, which crashes (SIGSEGV in rdma_resolve_addr on a
# stale id). Here the load is made certain: the server is stopped for 12 s once the eight
# test connections have reached it, past the 10 s the initiator used to wait.
# usage: perftest_slow_accept.sh lo4|netns PROGRAM
. "$(dirname "$0")/../lib.sh"
prog=$2
sr_need_cmd "$prog" ss
sr_hosts "$1"
args=(-R -q 8 -s 4194304 -n 5)
port=$(sr_port)
slog=$(mktemp)
clog=$(mktemp)
sr_run_on "${SR_SRV[@]}" -- timeout 120 "$prog" "${args[@]}" -p "$port" >"$slog" 2>&1 &
spid=$!
sr_wait_listen "$port" "${SR_SRV[@]}"
spid_prog=$("${SR_SRV[@]}" ss -Hltnp "sport = :$port" | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1)
[ -n "$spid_prog" ] || sr_fail "no pid listens on $port"
sr_run_on "${SR_CLI[@]}" -- timeout 120 "$prog" "${args[@]}" -p "$port" "$SR_ADDR" >"$clog" 2>&1 &
cpid=$!
# the first (parameter exchange) connection and then the test's eight
for _ in $(seq 600); do
	n=$("${SR_SRV[@]}" ss -Htn state established "( sport = :$port )" | wc -l)
	[ "$n" -ge 8 ] && break
	kill -0 "$cpid" 2>/dev/null || break
	sleep 0.05
done
[ "$n" -ge 8 ] || { sr_stop "$spid"; cat "$clog"; sr_fail "the 8 connections never arrived (30 s)"; }
kill -STOP "$spid_prog"
echo "server $spid_prog stopped with $n connections in"
# the stall itself is the test's input (it ends early if the client dies meanwhile)
timeout 12 tail --pid="$cpid" -f /dev/null
kill -CONT "$spid_prog"
wait "$cpid"
crc=$?
wait "$spid"
src=$?
echo "--- server (exit $src)"; tail -n 5 "$slog"
echo "--- client (exit $crc)"; tail -n 8 "$clog"
[ "$crc" -eq 0 ] || sr_fail "$prog client exited $crc"
[ "$src" -eq 0 ] || sr_fail "$prog server exited $src"
res=$(grep -A1 '#bytes' "$clog" | tail -1)
awk '{ exit !($4 + 0 > 0) }' <<<"$res" || sr_fail "no result in: $res"
rm -f "$slog" "$clog"
sr_pass "$prog ${args[*]} with an accept 12 s late: $res"
