#!/usr/bin/env bash
# Unmodified rdma_server and rdma_client (synchronous rdma_cm API) both reach "end 0".
# usage: rdma_server_client.sh lo4|lo6|netns
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rdma_server rdma_client
sr_hosts "${1:-lo4}"
port=$((20000 + RANDOM % 20000))
slog=$(mktemp)
clog=$(mktemp)
sr_run_on "${SR_SRV[@]}" -- timeout 60 rdma_server -s "$SR_ADDR" -p "$port" >"$slog" 2>&1 &
spid=$!
sr_wait_listen "$port" "${SR_SRV[@]}"
sr_run_on "${SR_CLI[@]}" -- timeout 60 rdma_client -s "$SR_ADDR" -p "$port" >"$clog" 2>&1
crc=$?
wait "$spid"
src=$?
echo "--- server (exit $src)"; cat "$slog"
echo "--- client (exit $crc)"; cat "$clog"
grep -q '^rdma_server: end 0$' "$slog" || sr_fail "server did not end 0"
grep -q '^rdma_client: end 0$' "$clog" || sr_fail "client did not end 0"
sr_pass "rdma_server/rdma_client over $SR_ADDR"
