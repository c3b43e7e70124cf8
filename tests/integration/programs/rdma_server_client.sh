#!/usr/bin/env bash
# Unmodified rdma_server and rdma_client (synchronous rdma_cm API) both reach "end 0".
# usage: rdma_server_client.sh lo4|lo6|netns
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rdma_server rdma_client
port=$((20000 + RANDOM % 20000))
srv_pre=()
cli_pre=()
case "${1:-lo4}" in
lo4) addr=127.0.0.1 ;;
lo6) addr=::1 ;;
netns)
	sr_need_root
	sr_need_cmd ip
	a=$(sr_netns_add a)
	b=$(sr_netns_add b)
	ip link add sr0 netns "$a" type veth peer name sr1 netns "$b" || sr_fail "veth"
	ip -n "$a" addr add 10.252.0.1/24 dev sr0
	ip -n "$b" addr add 10.252.0.2/24 dev sr1
	for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
	ip -n "$a" link set sr0 up
	ip -n "$b" link set sr1 up
	addr=10.252.0.1
	srv_pre=(ip netns exec "$a")
	cli_pre=(ip netns exec "$b")
	;;
*) sr_fail "unknown case $1" ;;
esac
slog=$(mktemp)
clog=$(mktemp)
run() { env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
	ASAN_OPTIONS=detect_leaks=0 timeout 60 "$@"; }
"${srv_pre[@]}" bash -c "$(declare -f run); run rdma_server -s $addr -p $port" >"$slog" 2>&1 &
spid=$!
sleep 0.5
"${cli_pre[@]}" bash -c "$(declare -f run); run rdma_client -s $addr -p $port" >"$clog" 2>&1
crc=$?
wait "$spid"
src=$?
echo "--- server (exit $src)"; cat "$slog"
echo "--- client (exit $crc)"; cat "$clog"
grep -q '^rdma_server: end 0$' "$slog" || sr_fail "server did not end 0"
grep -q '^rdma_client: end 0$' "$clog" || sr_fail "client did not end 0"
sr_pass "rdma_server/rdma_client over $addr"
