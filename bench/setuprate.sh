#!/usr/bin/env bash
# Connection setup rate over 127.0.0.1 on softrdma's libraries, as a Markdown report for
# docs/PERFORMANCE.md: setuprate (rdma_cm per step, next to TCP connect + exchange + close,
# 1 and 64 in flight), then unmodified cmtime (rdma-core's example) for comparison.
# Builds nothing: build first with  cmake --build <build> --target setuprate ibverbs rdmacm
#
#   bench/setuprate.sh [build-dir] [extra setuprate client options, e.g. -n 5000 -r 5]
#
# Environment: SETUPRATE_PORT (default 19700; TCP baseline port+1, cmtime port+2),
# CMTIME_CONNS (default "1 200": one cmtime run per count; empty skips cmtime).
# Progress goes to stderr, the report to stdout:  bench/setuprate.sh build > /tmp/report.md
set -uo pipefail

. "$(dirname "$0")/lib.sh"
BUILD_ARG=${1:-build}
[ $# -gt 0 ] && shift
bench_init setuprate.sh setuprate "$BUILD_ARG"
PORT=${SETUPRATE_PORT:-19700}
CMTIME_CONNS=${CMTIME_CONNS-1 200}
ADDR=127.0.0.1

# start_server <ready-regex> <cmd...>: background server, wait until it prints the regex.
start_server() {
	local ready=$1
	shift
	# Servers never exit by themselves (cmtime's does not either); hard limit in case.
	timeout -k 5 900 "$@" >"$LOG/server.out" 2>"$LOG/server.err" &
	SPID=$!
	for _ in $(seq 100); do
		grep -qE "$ready" "$LOG/server.out" "$LOG/server.err" 2>/dev/null && return 0
		if ! kill -0 "$SPID" 2>/dev/null; then
			echo "setuprate.sh: server exited early:" >&2
			cat "$LOG/server.out" "$LOG/server.err" >&2
			exit 1
		fi
		sleep 0.1
	done
	return 0 # cmtime prints nothing when ready: its listen is immediate
}
stop_server() {
	kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	SPID=
}

SERVER_CMD=(env "LD_LIBRARY_PATH=$(rel "$LIB")" "$(rel "$BIN")" -s -a "$ADDR" -p "$PORT")
CLIENT_CMD=(env "LD_LIBRARY_PATH=$(rel "$LIB")" "$(rel "$BIN")" -c -a "$ADDR" -p "$PORT" "$@")

cd "$SRC" || exit 2
START=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
LOAD=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
start_server 'tcp listening' "${SERVER_CMD[@]}"
for _ in $(seq 100); do grep -q 'rdma listening' "$LOG/server.out" && break; sleep 0.1; done
timeout -k 5 900 "${CLIENT_CMD[@]}" >"$LOG/client.out" 2> >(tee "$LOG/client.err" >&2)
RC=$?
if [ "$RC" -ne 0 ]; then
	echo "setuprate.sh: client failed (exit $RC); server log:" >&2
	sed 's/^/  server: /' "$LOG/server.err" >&2
	exit "$RC"
fi
stop_server

# cmtime: unmodified rdma-core example through our libraries (its phases: every connection
# finishes a step before the next step starts, all of them in flight).
CMTIME=$(command -v cmtime || true)
CMTIME_OUT=
if [ -n "$CMTIME" ] && [ -n "$CMTIME_CONNS" ]; then
	CPORT=$((PORT + 2))
	start_server 'never' env "LD_LIBRARY_PATH=$(rel "$LIB")" "$CMTIME" -b "$ADDR" -p "$CPORT"
	for c in $CMTIME_CONNS; do
		echo "cmtime -c $c" >&2
		CMD=(env "LD_LIBRARY_PATH=$(rel "$LIB")" cmtime -s "$ADDR" -p "$CPORT" -c "$c")
		if ! timeout -k 5 300 "${CMD[@]}" >"$LOG/cmtime.out" 2>&1; then
			echo "setuprate.sh: cmtime -c $c failed:" >&2
			cat "$LOG/cmtime.out" >&2
			exit 1
		fi
		CMTIME_OUT+=$'\n'"\`${CMD[*]}\` (server: \`cmtime -b $ADDR -p $CPORT\`):"$'\n\n```\n'
		CMTIME_OUT+=$(sed -n '/^step/,$p' "$LOG/cmtime.out")$'\n```\n'
	done
	stop_server
fi

COMMIT=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$SRC" status --porcelain 2>/dev/null | grep -c .)
CPU=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')

cat <<EOF
### Run of $START

- commit: \`$COMMIT\`$([ "$DIRTY" -gt 0 ] && echo " (work tree with $DIRTY uncommitted changes)")
- machine: $(nproc) cores, ${CPU:-unknown CPU}, Linux $(uname -r), load average before the run ${LOAD:-?}
- command: \`bench/setuprate.sh $(rel "$BUILD")${*:+ $*}\`, which runs
  - server: \`${SERVER_CMD[*]}\`
  - client: \`${CLIENT_CMD[*]}\`

EOF
cat "$LOG/client.out"
[ -n "$CMTIME_OUT" ] && printf '%s\n' "$CMTIME_OUT"
exit 0
