#!/usr/bin/env bash
# Unmodified rdma_server and rdma_client (synchronous rdma_cm API) both reach "end 0".
# usage: rdma_server_client.sh lo4|lo6|netns|own
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rdma_server rdma_client
sr_hosts "${1:-lo4}"
port=$(sr_port)
SR_TAIL=50 sr_server_client "$port" timeout 60 rdma_server -s "$SR_ADDR" -p "$port" -- \
	timeout 60 rdma_client -s "$SR_ADDR" -p "$port"
grep -q '^rdma_server: end 0$' "$SR_SLOG" || sr_fail "server did not end 0"
grep -q '^rdma_client: end 0$' "$SR_CLOG" || sr_fail "client did not end 0"
sr_pass "rdma_server/rdma_client over $SR_ADDR"
