#!/usr/bin/env bash
# Run srbench (server and client) over 127.0.0.1 on softrdma's libraries and print a Markdown
# report for docs/PERFORMANCE.md: date, commit, machine, exact commands, result tables.
# Builds nothing: build first with  cmake --build <build> --target srbench ibverbs rdmacm
#
#   bench/run.sh [build-dir] [extra srbench client options, e.g. -t write -S 4k -d 2]
#
# Environment: SRBENCH_PORT (default 18600; the TCP baseline uses port+1).
# Progress goes to stderr, the report to stdout:  bench/run.sh build > /tmp/report.md
set -uo pipefail

. "$(dirname "$0")/lib.sh"
BUILD_ARG=${1:-build}
[ $# -gt 0 ] && shift
bench_init run.sh srbench "$BUILD_ARG"
PORT=${SRBENCH_PORT:-18600}
ADDR=127.0.0.1
SERVER_CMD=(env "LD_LIBRARY_PATH=$(rel "$LIB")" "$(rel "$BIN")" -s -a "$ADDR" -p "$PORT" -o)
CLIENT_CMD=(env "LD_LIBRARY_PATH=$(rel "$LIB")" "$(rel "$BIN")" -c -a "$ADDR" -p "$PORT" -M "$@")

cd "$SRC" || exit 2
# Server: exits by itself when the client is done (-o); hard limit in case it hangs.
timeout -k 5 600 "${SERVER_CMD[@]}" >"$LOG/server.out" 2>"$LOG/server.err" &
SPID=$!
for _ in $(seq 100); do
	grep -q '^srbench server:' "$LOG/server.out" 2>/dev/null && break
	if ! kill -0 "$SPID" 2>/dev/null; then
		echo "run.sh: server exited early:" >&2
		cat "$LOG/server.out" "$LOG/server.err" >&2
		exit 1
	fi
	sleep 0.1
done

START=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
LOAD=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
timeout -k 5 600 "${CLIENT_CMD[@]}" >"$LOG/client.out" 2> >(tee "$LOG/client.err" >&2)
RC=$?
if [ "$RC" -ne 0 ]; then
	echo "run.sh: client failed (exit $RC); server log:" >&2
	sed 's/^/  server: /' "$LOG/server.err" >&2
	exit "$RC"
fi
for _ in $(seq 50); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
SPID=

COMMIT=$(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$SRC" status --porcelain 2>/dev/null | grep -c .)
CPU=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')

cat <<EOF
### Run of $START

- commit: \`$COMMIT\`$([ "$DIRTY" -gt 0 ] && echo " (work tree with $DIRTY uncommitted changes)")
- machine: $(nproc) cores, ${CPU:-unknown CPU}, Linux $(uname -r), loopback MTU $(cat /sys/class/net/lo/mtu 2>/dev/null || echo '?'), load average before the run ${LOAD:-?}
- command: \`bench/run.sh $(rel "$BUILD")${*:+ $*}\`, which runs
  - server: \`${SERVER_CMD[*]}\`
  - client: \`${CLIENT_CMD[*]}\`

EOF
cat "$LOG/client.out"
