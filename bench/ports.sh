#!/usr/bin/env bash
# The port space at scale, rdma_cm next to plain TCP connect() (bench/ports): in a fresh
# network namespace each (root: ip netns), optionally after another program left TW
# connections in TIME_WAIT, K client processes open N connections each to S server processes
# (four listeners each; client i uses server i mod S) and hold them; once every client has
# seen every attempt end, everything is released. Prints a Markdown table for
# docs/PERFORMANCE.md. Build first:  cmake --build <build> --target ports ibverbs rdmacm
#
#   sudo bench/ports.sh [build-dir] [K] [N] [S] [TW] [L]   (default: build 6 17000 6 0 4)
# L: listeners per server.
#
# N connections need N + a few fds per client: ports raises its soft limit to the hard one.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "ports.sh: no build directory" >&2; exit 2; }
K=${2:-6} N=${3:-17000} S=${4:-6} TW=${5:-0} L=${6:-4}
BIN=$BUILD/bin/ports LIB=$BUILD/lib
[ -x "$BIN" ] || { echo "ports.sh: $BIN not built" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "ports.sh: needs root (network namespaces)" >&2; exit 2; }
work=$(mktemp -d)
nss=()
cleanup() {
	exec 3>&- 4>&- 2>/dev/null
	for ns in "${nss[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

# run NAME [-T]: one set; results in $work/NAME.*
run() {
	local name=$1 tcp=${2:-} ns i t0
	ns="srports-$name-$$"
	ip netns add "$ns" && nss+=("$ns")
	ip -n "$ns" link set lo up
	inns() { ip netns exec "$ns" env LD_LIBRARY_PATH="$LIB" "$@"; }
	if [ "$TW" -gt 0 ]; then
		mkfifo "$work/$name.twhold"
		exec 4<>"$work/$name.twhold"
		inns "$BIN" -r server -T -p 9100 -l 1 <"$work/$name.twhold" 4>&- >/dev/null 2>&1 &
		sleep 0.5
		inns "$BIN" -r client -T -p 9100 -l 1 -n "$TW" </dev/null 4>&- >"$work/$name.tw" 2>&1
		exec 4>&-
		wait
	fi
	echo "$name: $(ip netns exec "$ns" ss -Htan state time-wait | wc -l) sockets in TIME_WAIT" >&2
	mkfifo "$work/$name.hold"
	exec 3<>"$work/$name.hold"
	for i in $(seq 0 $((S - 1))); do
		inns "$BIN" -r server $tcp -p $((18900 + 10 * i)) -l "$L" <"$work/$name.hold" 3>&- \
			>"$work/$name.s$i" 2>&1 &
	done
	for i in $(seq 0 $((S - 1))); do
		until grep -q ready "$work/$name.s$i"; do sleep 0.1; done
	done
	t0=$(date +%s.%N)
	for i in $(seq 0 $((K - 1))); do
		inns "$BIN" -r client $tcp -p $((18900 + 10 * (i % S))) -l "$L" -n "$N" -w 256 \
			<"$work/$name.hold" 3>&- >"$work/$name.c$i" 2>&1 &
	done
	for i in $(seq 0 $((K - 1))); do
		until grep -q '^held$' "$work/$name.c$i" || ! jobs -r | grep -q .; do sleep 0.5; done
	done
	echo "$(date +%s.%N) - $t0" | bc >"$work/$name.secs"
	ip netns exec "$ns" ss -Htn state established | awk '{ split($3, a, ":"); if (a[2] >= 32768) print a[2] }' |
		sort -u | wc -l >"$work/$name.distinct"
	exec 3>&-
	wait
	ip netns del "$ns"
}
sum() { cat "$work/$1".c* | awk -v k="$2" '$1 == k { s += $2 } END { print s + 0 }'; }
maxv() { cat "$work/$1".c* | awk -v k="$2" '$1 == k && $2 > m { m = $2 } END { print m + 0 }'; }
fails() {
	cat "$work/$1".c* | awk '$1 == "fail" { c[$2] += $3 } END { for (k in c) printf "%s %d; ", k, c[k] }'
}
row() { # row NAME LABEL
	printf '| %s | %s | %s (%s) | %s | %s ms | %s s |\n' "$2" "$(sum "$1" established)" \
		"$(sum "$1" failed)" "$(fails "$1")" "$(cat "$work/$1.distinct")" \
		"$(maxv "$1" slowest_ms)" "$(cat "$work/$1.secs")"
}

run tcp -T
run rdma
lost=$(cat "$work"/rdma.s* | awk '$1 == "server_lost" { s += $2 } END { print s + 0 }')
cat <<EOT
### Port space: $K clients x $N connections to $S servers x $L listeners ($(date -u +%Y-%m-%d), $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null))

Machine: $(nproc) CPUs, $(uname -r). Another program's connections left in TIME_WAIT first: $TW.
Command: \`sudo bench/ports.sh ${1:-build} $K $N $S $TW $L\`

| | established | failed (how) | distinct client ports | slowest attempt | all ended after |
| --- | ---: | --- | ---: | ---: | ---: |
$(row tcp "TCP connect()")
$(row rdma rdma_cm)

rdma_cm servers: $lost requests accepted that never reached ESTABLISHED.
EOT
