#!/usr/bin/env bash
# Run bench/conns (N established RC connections from one client process to a server process
# with four listeners on 127.0.0.1) on softrdma's libraries and print a Markdown report for
# docs/PERFORMANCE.md: date, commit, machine, the exact command, the figures.
# Builds nothing: build first with  cmake --build <build> --target conns ibverbs rdmacm
#
#   bench/conns.sh [build-dir] [connections] [extra conns options, e.g. -w 512]
#
# N connections need N + 256 file descriptors in each process: conns raises its own limit,
# beyond the hard limit only with CAP_SYS_RESOURCE. More than about 28,000 connections from
# one client need active-side port sharing (ip_local_port_range). Environment: CONNS_PORT
# (first listener port, default 18700). Progress goes to stderr, the report to stdout.
set -uo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
[ $# -gt 0 ] && shift
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "conns.sh: no build directory" >&2; exit 2; }
N=${1:-20000}
[ $# -gt 0 ] && shift
BIN=$BUILD/bin/conns
LIB=$BUILD/lib
PORT=${CONNS_PORT:-18700}

[ -x "$BIN" ] || { echo "conns.sh: $BIN not built (cmake --build $BUILD --target conns)" >&2; exit 2; }
if [ ! -e "$LIB/libibverbs.so.1" ] || [ ! -e "$LIB/librdmacm.so.1" ]; then
	echo "conns.sh: softrdma libraries missing in $LIB" >&2
	exit 2
fi

rel() { # path relative to the source tree when inside it
	case $1 in "$SRC"/*) echo "${1#"$SRC"/}" ;; *) echo "$1" ;; esac
}
CMD=(env "LD_LIBRARY_PATH=$(rel "$LIB")" "$(rel "$BIN")" -n "$N" -a 127.0.0.1 -p "$PORT" -F "$@")

OUT=$(mktemp /tmp/conns-run.XXXXXX)
trap 'rm -f "$OUT"' EXIT
echo "conns.sh: ${CMD[*]}" >&2
(cd "$SRC" && "${CMD[@]}") >"$OUT"
rc=$?
if [ $rc -ne 0 ]; then
	cat "$OUT" >&2
	echo "conns.sh: conns failed ($rc)" >&2
	exit 1
fi
val() { awk -v k="$1" '$1 == k { print $2 }' "$OUT"; }

cat <<EOF
### Connections at scale: $N connections ($(date -u +%Y-%m-%d), $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo "unknown commit"))

Machine: $(nproc) CPUs, $(uname -r), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo).
Command (from the source tree):

\`\`\`sh
${CMD[*]}
\`\`\`

Setup of connections 1..$((N - 1)) with $(val in_flight) in flight: $(val setup_seconds) s
($(val connections_per_second) connections/s); teardown (disconnect, destroy): $(val teardown_seconds) s.

| per idle connection | client | server |
| --- | --- | --- |
| resident memory (Rss) | $(val client_rss_per_conn_bytes) B | $(val server_rss_per_conn_bytes) B |
| proportional (Pss) | $(val client_pss_per_conn_bytes) B | $(val server_pss_per_conn_bytes) B |
| malloc'd | $(val client_heap_per_conn_bytes) B | $(val server_heap_per_conn_bytes) B |
| file descriptors | $(val client_fds_per_conn) | $(val server_fds_per_conn) |
| threads added (whole run) | $(val client_threads_added) | $(val server_threads_added) |
EOF
