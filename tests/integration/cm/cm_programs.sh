#!/usr/bin/env bash
# Unmodified Debian rdma_cm programs that stress the connection manager through our
# libraries: ucmatose (several connections, channel migration, IPv6; 1000 connections at
# once) and cmtime (1000 connections at once; its server never exits and is stopped here).
# usage: cm_programs.sh ucmatose4|ucmatose6m|ucmatose1000|cmtime
. "$(dirname "$0")/../lib.sh"
case "$1" in
ucmatose*) sr_need_cmd ucmatose ;;
cmtime) sr_need_cmd cmtime ;;
*) sr_fail "unknown case $1" ;;
esac
port=$(sr_port)
# Each connection costs the process exactly its TCP socket (the CM's timers share one
# descriptor): 1000 connections fit the common default limit of 1024 descriptors, as they
# do with the kernel CM. Run under that limit so that a per-connection descriptor shows.
ulimit -Sn 1024 2>/dev/null
slog=$(mktemp)
clog=$(mktemp)

show() { echo "--- server"; cat "$slog"; echo "--- client"; cat "$clog"; }

case "$1" in
ucmatose4)
	sr_run timeout 60 ucmatose -p "$port" -c 4 -C 20 >"$slog" 2>&1 &
	spid=$!
	sr_wait_listen "$port"
	sr_run timeout 60 ucmatose -s 127.0.0.1 -p "$port" -c 4 -C 20 >"$clog" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	;;
ucmatose1000)
	sr_run timeout 100 ucmatose -p "$port" -c 1000 >"$slog" 2>&1 &
	spid=$!
	sr_wait_listen "$port"
	sr_run timeout 100 ucmatose -s 127.0.0.1 -p "$port" -c 1000 >"$clog" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	;;
ucmatose6m)
	sr_run timeout 60 ucmatose -b ::1 -p "$port" -c 2 -m >"$slog" 2>&1 &
	spid=$!
	sr_wait_listen "$port"
	sr_run timeout 60 ucmatose -s ::1 -p "$port" -c 2 -m >"$clog" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	grep -q "migrating to new event channel" "$clog" || { show; sr_fail "no migration"; }
	;;
cmtime)
	# env execs timeout, so $! is timeout itself; sr_stop below ends it and cmtime under it
	env LD_LIBRARY_PATH="$SR_LIBDIR" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
		timeout 100 cmtime -p "$port" >"$slog" 2>&1 &
	spid=$!
	sr_wait_listen "$port"
	sr_run timeout 100 cmtime -s 127.0.0.1 -p "$port" -c 1000 >"$clog" 2>&1
	crc=$?
	sr_stop "$spid"
	src=0
	grep -q "^connect " "$clog" || { show; sr_fail "no timing table"; }
	grep -q "error" "$clog" && { show; sr_fail "errors reported"; }
	;;
esac
[ "$crc" -eq 0 ] || { show; sr_fail "client exited $crc"; }
[ "$src" -eq 0 ] || { show; sr_fail "server exited $src"; }
case "$1" in
ucmatose*)
	grep -q "return status 0" "$clog" && grep -q "return status 0" "$slog" ||
		{ show; sr_fail "no clean finish"; }
	;;
esac
sr_pass "$1"
