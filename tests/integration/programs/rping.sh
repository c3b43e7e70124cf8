#!/usr/bin/env bash
# Unmodified rping server and client through our libraries exchange verified data.
# usage: rping.sh lo4|lo6|netns [extra rping args for both sides...]
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rping
sr_hosts "$1"
shift
port=$((20000 + RANDOM % 20000))
slog=$(mktemp)
clog=$(mktemp)
sr_run_on "${SR_SRV[@]}" -- timeout 120 rping -s -a "$SR_ADDR" -p "$port" "$@" >"$slog" 2>&1 &
spid=$!
sr_wait_listen "$port" "${SR_SRV[@]}"
sr_run_on "${SR_CLI[@]}" -- timeout 120 rping -c -a "$SR_ADDR" -p "$port" "$@" >"$clog" 2>&1
crc=$?
wait "$spid"
src=$?
echo "--- server (exit $src)"; tail -5 "$slog"
echo "--- client (exit $crc)"; tail -5 "$clog"
[ "$crc" -eq 0 ] || sr_fail "rping client exited $crc"
[ "$src" -eq 0 ] || sr_fail "rping server exited $src"
grep -qi 'error\|fail' "$clog" && sr_fail "client reported an error"
sr_pass "rping over $SR_ADDR $*"
