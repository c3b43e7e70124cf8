#!/usr/bin/env bash
# Unmodified rping server and client through our libraries exchange verified data.
# usage: rping.sh lo4|lo6|netns [extra rping args for both sides...]
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rping
where=$1
shift
port=$((20000 + RANDOM % 20000))
srv_pre=()
cli_pre=()
case "$where" in
lo4) addr=127.0.0.1 ;;
lo6) addr=::1 ;;
netns)
	sr_need_root
	sr_need_cmd ip
	a=$(sr_netns_add a)
	b=$(sr_netns_add b)
	ip link add sr0 netns "$a" type veth peer name sr1 netns "$b" || sr_fail "veth"
	ip -n "$a" addr add 10.251.0.1/24 dev sr0
	ip -n "$b" addr add 10.251.0.2/24 dev sr1
	ip -n "$a" link set sr0 up
	ip -n "$b" link set sr1 up
	ip -n "$a" link set lo up
	ip -n "$b" link set lo up
	addr=10.251.0.1
	srv_pre=(ip netns exec "$a")
	cli_pre=(ip netns exec "$b")
	;;
*) sr_fail "unknown case $where" ;;
esac

slog=$(mktemp)
clog=$(mktemp)
"${srv_pre[@]}" env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
	ASAN_OPTIONS=detect_leaks=0 timeout 120 rping -s -a "$addr" -p "$port" "$@" >"$slog" 2>&1 &
spid=$!
sleep 0.5
"${cli_pre[@]}" env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
	ASAN_OPTIONS=detect_leaks=0 timeout 120 rping -c -a "$addr" -p "$port" "$@" >"$clog" 2>&1
crc=$?
wait "$spid"
src=$?
echo "--- server (exit $src)"; tail -5 "$slog"
echo "--- client (exit $crc)"; tail -5 "$clog"
[ "$crc" -eq 0 ] || sr_fail "rping client exited $crc"
[ "$src" -eq 0 ] || sr_fail "rping server exited $src"
grep -qi 'error\|fail' "$clog" && sr_fail "client reported an error"
sr_pass "rping $where $*"
