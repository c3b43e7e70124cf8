#!/usr/bin/env bash
# Unmodified rdma_server and rdma_client (synchronous rdma_cm API) both reach "end 0".
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rdma_server rdma_client
port=$((20000 + RANDOM % 20000))
slog=$(mktemp)
clog=$(mktemp)
sr_run timeout 60 rdma_server -s 127.0.0.1 -p "$port" >"$slog" 2>&1 &
spid=$!
sleep 0.5
sr_run timeout 60 rdma_client -s 127.0.0.1 -p "$port" >"$clog" 2>&1
crc=$?
wait "$spid"
src=$?
echo "--- server (exit $src)"; cat "$slog"
echo "--- client (exit $crc)"; cat "$clog"
grep -q '^rdma_server: end 0$' "$slog" || sr_fail "server did not end 0"
grep -q '^rdma_client: end 0$' "$clog" || sr_fail "client did not end 0"
sr_pass "rdma_server/rdma_client"
