#!/usr/bin/env bash
# The benchmark suite (issue 9): every softrdma figure next to its baselines, measured in the
# same run on the same path, as a dated Markdown section for docs/PERFORMANCE.md.
#
#   bench/suite.sh BUILD_DIR [--quick] [--runs N] [--duration S] [--sizes LIST]
#                  [--paths lo,veth] [--only PARTS] [--no-install] > report.md
# (progress on stderr; PARTS: srbench,8qp,perftest,qperf,sockperf,ucx,fi, default all)
#
# Paths: "lo" (127.0.0.1) and "veth" (two network namespaces joined by a veth pair, MTU
# 1500; needs root, else its rows say why they are missing). On each path, per run:
#   srbench (ours): WRITE/READ/SEND bandwidth with 1 QP and with 8 QPs (8 client/server
#     process pairs at once), 8-byte and 4 KiB ping-pong blocking and busy-polling, message
#     rate at 64 B, CPU seconds per GiB on each side; its TCP baseline with the same I/O.
#   unmodified perftest (ib_*_bw -R, -q 8; ib_send_lat/ib_write_lat -R) and qperf (-cm1 rc_*)
#     through our libraries; qperf tcp_*, sockperf (TCP), ucx_perftest (UCX_TLS=tcp) and
#     fi_pingpong (libfabric tcp provider; verbs through our libraries on veth) as baselines.
# Each cell is the median of the runs with [min-max]. A tool that is not installed gives
# "n/a (... not installed)", a tool run that fails gives "FAILED (...)": --quick exits 1 if any
# cell is FAILED or was never measured, so CI notices a broken script or tool (it asserts no
# times: benchmarks are not tests).
#
# --quick: loopback only, 1 run, 2 sizes, 0.2 s per measurement, few iterations; installs
# nothing. Otherwise missing tools (SR_BENCH_PACKAGES in scripts/deps.sh) are installed when
# running as root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)

BUILD=${1:-}
[ -n "$BUILD" ] && [ "${BUILD#-}" = "$BUILD" ] || {
	sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
shift
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "suite.sh: no build directory" >&2; exit 2; }
QUICK=0 RUNS=3 DUR=1 PATHS=lo,veth INSTALL=1 SIZES= ONLY=srbench,8qp,perftest,qperf,sockperf,ucx,fi
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--runs) RUNS=$2; shift ;;
	--duration) DUR=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--paths) PATHS=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--no-install) INSTALL=0 ;;
	*) echo "suite.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
if [ "$QUICK" = 1 ]; then
	RUNS=1 DUR=0.2 PATHS=lo INSTALL=0
	SIZES=${SIZES:-64,64k}
	TOOL_SIZES=64k TOOL_LAT="8" LAT_N=200 UCX_BYTES=$((16 << 20))
	# each tool once or twice: perftest alone costs seconds per run for its two connections
	PT_OPS=write Q8_OPS=write TOOL_OPS=send BLOCK_TOOLS="qperf sockperf" BUSY_TOOLS="perftest ucx fi"
else
	SIZES=${SIZES:-64,256,1k,4k,16k,64k,256k,1m,4m}
	# perftest, qperf, UCX and libfabric at fewer sizes: each run costs a setup of seconds.
	TOOL_SIZES=64,4k,64k,1m,4m TOOL_LAT="8 4096" LAT_N=1000 UCX_BYTES=$((256 << 20))
	PT_OPS="write read send" Q8_OPS="write read send" TOOL_OPS="write read send"
	BLOCK_TOOLS="perftest qperf sockperf ucx fi" BUSY_TOOLS=$BLOCK_TOOLS
fi
# perftest -D and qperf -t take whole seconds
DUR_INT=$(awk -v d="$DUR" 'BEGIN { i = int(d); if (i < d) i++; print (i < 1 ? 1 : i) }')
SRBENCH=$BUILD/bin/srbench
LIB=$BUILD/lib
[ -x "$SRBENCH" ] || { echo "suite.sh: $SRBENCH not built" >&2; exit 2; }
[ -e "$LIB/libibverbs.so.1" ] && [ -e "$LIB/librdmacm.so.1" ] ||
	{ echo "suite.sh: softrdma libraries missing in $LIB" >&2; exit 2; }

. "$SRC/scripts/deps.sh"
if [ "$INSTALL" = 1 ] && [ "$(id -u)" -eq 0 ]; then
	sr_need_packages "${SR_BENCH_PACKAGES[@]}" || echo "suite.sh: continuing without them" >&2
fi

LOG=$(mktemp -d "${TMPDIR:-/tmp}/sr-suite.XXXXXX")
RES=$LOG/results.tsv
: >"$RES"
NS_A= NS_B=
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "$NS_A" "$NS_B"; do
		[ -n "$p" ] || continue
		ip netns pids "$p" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$p" 2>/dev/null
	done
	rm -rf "$LOG"
}
trap cleanup EXIT
say() { echo "suite.sh: $*" >&2; }

# ---- results: one line per measured value: path, table, row, column, value ----------------
P= # current path
rec() { printf '%s\t%s\t%s\t%s\t%s\n' "$P" "$1" "$2" "$3" "$4" >>"$RES"; }
have() { command -v "$1" >/dev/null 2>&1; }
# rec_val TABLE ROW COLUMN VALUE WHAT LOG... : the value, or "FAILED (WHAT)" and the logs' ends
rec_val() {
	local t=$1 r=$2 c=$3 v=$4 what=$5
	shift 5
	if [ -n "$v" ]; then
		rec "$t" "$r" "$c" "$v"
		return 0
	fi
	rec "$t" "$r" "$c" "FAILED ($what)"
	say "$what failed: $(tail -n 3 "$@" 2>&1)"
	return 1
}
bytes() { # 64k -> 65536
	local v=${1%[kKmM]}
	case $1 in *[kK]) echo $((v << 10)) ;; *[mM]) echo $((v << 20)) ;; *) echo "$v" ;; esac
}
human() { # 65536 -> 64 KiB
	local b=$1
	if [ $((b % 1048576)) -eq 0 ]; then echo "$((b >> 20)) MiB"
	elif [ $((b % 1024)) -eq 0 ]; then echo "$((b >> 10)) KiB"
	else echo "$b B"; fi
}
in_list() { [[ ",$2," == *",$1,"* ]]; }
# measure_mode TOOL block|busy : whether this run measures that ping-pong mode with TOOL
measure_mode() {
	local l=$BUSY_TOOLS
	[ "$2" = block ] && l=$BLOCK_TOOLS
	in_list "$1" "${l// /,}"
}
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }

# ---- hosts: SRV/CLI command prefixes and ADDR ------------------------------------------------
setup_path() {
	SRV=() CLI=()
	case $1 in
	lo) ADDR=127.0.0.1 ;;
	veth)
		[ "$(id -u)" -eq 0 ] || return 1
		# named as the tests' namespaces are (tests/integration/lib.sh): under the tests'
		# sandbox, it deletes them if this script cannot
		NS_A=sr-srsa-${SR_TEST_ID:-$$} NS_B=sr-srsb-${SR_TEST_ID:-$$}
		ip netns add "$NS_A" && ip netns add "$NS_B" || return 1
		ip link add srs0 netns "$NS_A" mtu 1500 type veth peer name srs1 netns "$NS_B" mtu 1500 ||
			return 1
		ip -n "$NS_A" addr add 10.98.0.1/24 dev srs0
		ip -n "$NS_B" addr add 10.98.0.2/24 dev srs1
		local ns
		for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
		ip -n "$NS_A" link set srs0 up && ip -n "$NS_B" link set srs1 up || return 1
		ADDR=10.98.0.1
		SRV=(ip netns exec "$NS_A")
		CLI=(ip netns exec "$NS_B")
		;;
	esac
}
teardown_path() {
	local ns
	for ns in "$NS_A" "$NS_B"; do
		[ -n "$ns" ] || continue
		ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	NS_A= NS_B=
}
# Through softrdma's libraries (in a sanitizer build, unmodified programs need its runtime
# preloaded: SR_PRELOAD, as in the integration tests), or a baseline: never through them.
OURS=(env LD_LIBRARY_PATH="$LIB" ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"}
	ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0")
THEIRS=(env -u LD_LIBRARY_PATH -u LD_PRELOAD)
# wait (up to 20 s) until something listens on TCP port $1 on the server's host; fails at
# once if the server ($SPID) is gone
wait_listen() {
	local i
	for i in $(seq 200); do
		[ -n "$("${SRV[@]}" ss -Hltn "sport = :$1" 2>/dev/null)" ] && return 0
		kill -0 "$SPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# Ports below the 20000-40000 that the integration tests pick at random and below the
# kernel's ephemeral range (a client's local port can take a port we want to listen on).
PORT=$((10000 + $$ % 8000))
next_port() { PORT=$((PORT + 7)); [ $PORT -gt 18500 ] && PORT=10000; }
start_srv() { # start_srv LOGFILE cmd... : sets SPID
	"${SRV[@]}" "${@:2}" >"$1" 2>&1 &
	SPID=$!
	PIDS+=("$SPID")
}
stop_srv() { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }

# ---- srbench (ours and its TCP baseline) -----------------------------------------------------
SB_TABLE_BW="bw1" SB_LAT_ROWS=()
srbench_bw() { # one server and one client: every op and size, RDMA then TCP
	next_port
	local s=$LOG/sb-srv.out c=$LOG/sb-cli.out
	start_srv "$s" "${OURS[@]}" timeout -k 5 900 "$SRBENCH" -s -a "$ADDR" -p "$PORT" -o -K
	if ! wait_listen "$PORT"; then
		say "srbench server did not start: $(tail -3 "$s")"; stop_srv; return
	fi
	"${CLI[@]}" "${OURS[@]}" timeout -k 5 900 "$SRBENCH" -c -a "$ADDR" -p "$PORT" -K \
		-d "$DUR" -t write,read,send -S "$SIZES" >"$c" 2>"$LOG/sb-cli.err"
	local rc=$?
	wait "$SPID"
	[ $rc -eq 0 ] || say "srbench client exited $rc: $(tail -3 "$LOG/sb-cli.err")"
	local impl op size mbps msgs secs cpu col gib
	while read -r _ impl op size mbps msgs secs cpu; do
		impl=${impl#impl=} op=${op#op=} size=${size#size=} mbps=${mbps#mbps=}
		msgs=${msgs#msgs=} secs=${secs#secs=} cpu=${cpu#cpu_s=}
		col=$([ "$impl" = rdma ] && echo softrdma || echo TCP)
		rec bw1 "$op|$size" "$col" "$mbps"
		gib=$(calc "$msgs * $size / 1073741824")
		rec cpu "$op|$size" "$col client" "$(calc "$cpu / $gib")"
		[ "$size" = 64 ] && rec msgrate "$op" "$col" "$(calc "$msgs / $secs / 1e6")"
	done < <(grep '^result ' "$c")
	while read -r _ impl op size cpu; do
		impl=${impl#impl=} op=${op#op=} size=${size#size=} cpu=${cpu#cpu_s=}
		col=$([ "$impl" = rdma ] && echo softrdma || echo TCP)
		msgs=$(awk -v i="impl=$impl" -v o="op=$op" -v z="size=$size" \
			'$2 == i && $3 == o && $4 == z { sub("msgs=", "", $6); print $6 }' "$c")
		[ -n "$msgs" ] || continue
		rec cpu "$op|$size" "$col server" "$(calc "$cpu / ($msgs * $size / 1073741824)")"
	done < <(grep '^server ' "$s")
}

srbench_lat() { # ping-pong, $1 = size, $2 = block|busy
	next_port
	local s=$LOG/sbl-srv.out c=$LOG/sbl-cli.out spin=()
	[ "$2" = busy ] && spin=(-P 100000)
	start_srv "$s" "${OURS[@]}" timeout -k 5 300 "$SRBENCH" -s -a "$ADDR" -p "$PORT" -o -K
	wait_listen "$PORT" || { say "srbench server did not start: $(tail -3 "$s")"; stop_srv; return; }
	"${CLI[@]}" "${OURS[@]}" timeout -k 5 300 "$SRBENCH" -c -a "$ADDR" -p "$PORT" -K \
		-d "$DUR" -t lat -L "$1" "${spin[@]}" >"$c" 2>"$LOG/sbl-cli.err" ||
		say "srbench ping-pong failed: $(tail -3 "$LOG/sbl-cli.err")"
	wait "$SPID"
	local impl med p99 col row
	row="$(bytes "$1")|$2"
	while read -r _ impl _ _ _ med p99 _; do
		impl=${impl#impl=} med=${med#median_us=} p99=${p99#p99_us=}
		col=$([ "$impl" = rdma ] && echo softrdma || echo TCP)
		awk -v m="$med" 'BEGIN { exit !(m > 0) }' || continue
		rec lat "$row" "$col" "$med"
		rec lat "$row" "$col p99" "$p99"
	done < <(grep '^result ' "$c")
}

srbench_8qp() { # 8 server/client process pairs at once, each with one QP; summed MB/s
	local i op size impl ports=() base
	next_port
	base=$PORT
	PORT=$((PORT + 20))
	for i in $(seq 0 7); do
		ports+=($((base + 2 * i)))
		start_srv "$LOG/q8-srv$i.out" "${OURS[@]}" timeout -k 5 1800 "$SRBENCH" \
			-s -a "$ADDR" -p "${ports[$i]}"
		eval "Q8SPID$i=$SPID"
	done
	for i in $(seq 0 7); do
		eval "SPID=\$Q8SPID$i"
		wait_listen "${ports[$i]}" || say "8 QPs: server $i not listening"
	done
	for op in write read send; do
		for size in ${SIZES//,/ }; do
			if ! in_list "$op" "${Q8_OPS// /,}"; then
				rec bw8 "$op|$(bytes "$size")" softrdma "-"
				rec bw8 "$op|$(bytes "$size")" TCP "-"
				continue
			fi
			for impl in rdma tcp; do
				local pids=()
				for i in $(seq 0 7); do
					"${CLI[@]}" "${OURS[@]}" timeout -k 5 300 "$SRBENCH" -c \
						-a "$ADDR" -p "${ports[$i]}" -K -d "$DUR" -t "$op" -S "$size" \
						-T "$impl" >"$LOG/q8-cli$i.out" 2>"$LOG/q8-cli$i.err" &
					pids+=($!)
				done
				local ok=1 sum
				for i in $(seq 0 7); do wait "${pids[$i]}" || ok=0; done
				sum=$(cat "$LOG"/q8-cli?.out | awk '/^result / { sub("mbps=", "", $5); s += $5; n++ }
					END { if (n == 8) printf "%.3f", s }')
				local col=$([ "$impl" = rdma ] && echo softrdma || echo TCP)
				if [ "$ok" = 1 ] && [ -n "$sum" ]; then
					rec bw8 "$op|$(bytes "$size")" "$col" "$sum"
				else
					rec bw8 "$op|$(bytes "$size")" "$col" "FAILED (see srbench stderr)"
					say "8 QPs $impl $op $size failed: $(cat "$LOG"/q8-cli?.err | tail -3)"
				fi
			done
		done
	done
	for i in $(seq 0 7); do eval "kill \$Q8SPID$i" 2>/dev/null; done
	wait 2>/dev/null
}

# ---- perftest through our libraries ----------------------------------------------------------
# perftest -R makes a parameter-exchange connection and then the test's own; a client that
# connects before the server listens again is refused and gives up: only that is retried.
perftest_run() { # perftest_run OUTFILE prog args... ; returns the client's status
	local out=$1 prog=$2 try rc
	shift 2
	for try in 1 2 3 4 5; do
		next_port
		start_srv "$LOG/pt-srv.out" "${OURS[@]}" timeout -k 5 300 "$prog" -R -p "$PORT" "$@"
		wait_listen "$PORT" || { stop_srv; continue; }
		"${CLI[@]}" "${OURS[@]}" timeout -k 5 300 "$prog" -R -p "$PORT" "$@" "$ADDR" \
			>"$out" 2>&1
		rc=$?
		[ $rc -ne 0 ] && kill "$SPID" 2>/dev/null
		wait "$SPID" 2>/dev/null
		[ $rc -ne 0 ] && grep -q 'RDMA_CM_EVENT_REJECTED' "$out" && continue
		return $rc
	done
	return 1
}
perftest_field() { # the figure in column $2 of the line under "#bytes"
	grep -A1 '#bytes' "$1" | tail -1 | awk -v f="$2" '$f + 0 > 0 { print $f }'
}
perftest_all() {
	local op size v q qn tbl
	if ! have ib_write_bw; then
		rec bw1 "*" "perftest -R" "n/a (perftest not installed)"
		rec bw8 "*" "perftest -R -q 8" "n/a (perftest not installed)"
		rec lat "*" "perftest ib_send_lat" "n/a (perftest not installed)"
		rec lat "*" "perftest ib_write_lat" "n/a (perftest not installed)"
		rec msgrate "*" "perftest" "n/a (perftest not installed)"
		return
	fi
	for op in write read send; do
		for size in ${SIZES//,/ }; do
			for qn in 1 8; do
				tbl=bw1 q=() col="perftest -R"
				[ $qn = 8 ] && tbl=bw8 q=(-q 8) col="perftest -R -q 8"
				if ! in_list "$size" "$TOOL_SIZES" || ! in_list "$op" "${PT_OPS// /,}"; then
					rec $tbl "$op|$(bytes "$size")" "$col" "-"
					continue
				fi
				if perftest_run "$LOG/pt.out" "ib_${op}_bw" -s "$(bytes "$size")" -D "$DUR_INT" "${q[@]}" &&
					v=$(perftest_field "$LOG/pt.out" 4) && [ -n "$v" ]; then
					# perftest's MB is 2^20 bytes
					rec $tbl "$op|$(bytes "$size")" "$col" "$(calc "$v * 1.048576")"
					[ "$(bytes "$size")" = 64 ] && [ $qn = 1 ] && [ "$op" != read ] &&
						rec msgrate "$op" "perftest" "$(perftest_field "$LOG/pt.out" 5)"
				else
					rec $tbl "$op|$(bytes "$size")" "$col" "FAILED (ib_${op}_bw)"
					say "ib_${op}_bw -s $size ${q[*]} failed: $(tail -3 "$LOG/pt.out")"
				fi
			done
		done
	done
	in_list 64 "$TOOL_SIZES" || rec msgrate "*" "perftest" "-"
	rec msgrate "read" "perftest" "-"
	local lsz mode ev prog
	for lsz in 8 4096; do
		if ! in_list "$lsz" "${TOOL_LAT// /,}"; then
			for prog in ib_send_lat ib_write_lat; do
				rec lat "$lsz|block" "perftest $prog" "-"
				rec lat "$lsz|busy" "perftest $prog" "-"
			done
			continue
		fi
		for mode in block busy; do
			for prog in ib_send_lat ib_write_lat; do
				ev=()
				if ! measure_mode perftest $mode || { [ "$QUICK" = 1 ] && [ $prog = ib_write_lat ]; }; then
					rec lat "$lsz|$mode" "perftest $prog" "-"
					continue
				fi
				if [ $mode = block ]; then
					# ib_write_lat polls memory: it has no blocking mode
					[ $prog = ib_write_lat ] && { rec lat "$lsz|$mode" "perftest $prog" "-"; continue; }
					ev=(-e)
				fi
				# send_lat and write_lat print half the round trip: doubled here
				if perftest_run "$LOG/pt.out" "$prog" -s "$lsz" -n "$LAT_N" "${ev[@]}" &&
					v=$(perftest_field "$LOG/pt.out" 5) && [ -n "$v" ]; then
					rec lat "$lsz|$mode" "perftest $prog" "$(calc "2 * $v")"
				else
					rec lat "$lsz|$mode" "perftest $prog" "FAILED ($prog)"
					say "$prog -s $lsz ${ev[*]} failed: $(tail -3 "$LOG/pt.out")"
				fi
			done
		done
	done
}

# ---- qperf: rc_* through our libraries (-cm1), tcp_* as a baseline ---------------------------
qperf_one() { # qperf_one OUTFILE args... : retries qperf 0.4.11's listen window (see tests)
	local out=$1 try rc
	shift
	for try in 1 2 3 4 5 6 7 8 9 10; do
		"${CLI[@]}" "${OURS[@]}" timeout -k 5 120 qperf -lp "$QPORT" "$@" >"$out" 2>&1
		rc=$?
		[ $rc -ne 0 ] && grep -q 'Event rejected' "$out" && { sleep 0.2; continue; }
		break
	done
	return $rc
}
qperf_val() { # the figure of "bw = N bytes/sec" or "latency = N ns" (-uu)
	awk '/(bw|latency) *=/ { if ($3 + 0 > 0) print $3 }' "$1" | tail -1
}
qperf_all() {
	if ! have qperf; then
		for c in "qperf -cm1 rc" "qperf tcp"; do
			rec bw1 "*" "$c" "n/a (qperf not installed)"
			rec lat "*" "$c" "n/a (qperf not installed)"
		done
		return
	fi
	next_port
	QPORT=$PORT
	start_srv "$LOG/qp-srv.out" "${OURS[@]}" timeout -k 5 3600 qperf -lp "$QPORT"
	wait_listen "$QPORT" || say "qperf server not listening"
	local op size test t v
	for op in write read send; do
		for size in ${SIZES//,/ }; do
			local row="$op|$(bytes "$size")"
			if ! in_list "$size" "$TOOL_SIZES" || ! in_list "$op" "${TOOL_OPS// /,}"; then
				rec bw1 "$row" "qperf -cm1 rc" "-"
				rec bw1 "$row" "qperf tcp" "-"
				continue
			fi
			case $op in
			write) test= ;; # rc_rdma_write_bw writes with immediate data, which iWARP lacks
			read) test=rc_rdma_read_bw ;;
			send) test=rc_bw ;;
			esac
			if [ -z "$test" ]; then
				rec bw1 "$row" "qperf -cm1 rc" "n/a (WRITE with immediate)"
			elif qperf_one "$LOG/qp.out" -cm1 -uu -t "$DUR_INT" -m "$size" "$ADDR" "$test" &&
				v=$(qperf_val "$LOG/qp.out") && [ -n "$v" ]; then
				rec bw1 "$row" "qperf -cm1 rc" "$(calc "$v / 1e6")"
			else
				rec bw1 "$row" "qperf -cm1 rc" "FAILED ($test)"
				say "qperf $test -m $size failed: $(tail -3 "$LOG/qp.out")"
			fi
			if qperf_one "$LOG/qp.out" -uu -t "$DUR_INT" -m "$size" "$ADDR" tcp_bw &&
				v=$(qperf_val "$LOG/qp.out") && [ -n "$v" ]; then
				rec bw1 "$row" "qperf tcp" "$(calc "$v / 1e6")"
			else
				rec bw1 "$row" "qperf tcp" "FAILED (tcp_bw)"
			fi
		done
	done
	local lsz mode cp
	for lsz in 8 4096; do
		for mode in block busy; do
			if ! in_list "$lsz" "${TOOL_LAT// /,}" || ! measure_mode qperf $mode; then
				rec lat "$lsz|$mode" "qperf -cm1 rc" "-"
				rec lat "$lsz|$mode" "qperf tcp" "-"
				continue
			fi
			cp=()
			[ $mode = busy ] && cp=(-cp1)
			# qperf prints half the round trip: doubled here
			if qperf_one "$LOG/qp.out" -cm1 "${cp[@]}" -uu -t "$DUR_INT" -m "$lsz" "$ADDR" rc_lat &&
				v=$(qperf_val "$LOG/qp.out") && [ -n "$v" ]; then
				rec lat "$lsz|$mode" "qperf -cm1 rc" "$(calc "2 * $v / 1000")"
			else
				rec lat "$lsz|$mode" "qperf -cm1 rc" "FAILED (rc_lat)"
				say "qperf rc_lat -m $lsz failed: $(tail -3 "$LOG/qp.out")"
			fi
			if [ $mode = busy ]; then # qperf's TCP tests block in recv()
				rec lat "$lsz|$mode" "qperf tcp" "-"
			elif qperf_one "$LOG/qp.out" -uu -t "$DUR_INT" -m "$lsz" "$ADDR" tcp_lat &&
				v=$(qperf_val "$LOG/qp.out") && [ -n "$v" ]; then
				rec lat "$lsz|$mode" "qperf tcp" "$(calc "2 * $v / 1000")"
			else
				rec lat "$lsz|$mode" "qperf tcp" "FAILED (tcp_lat)"
			fi
		done
	done
	stop_srv
}

# ---- sockperf (TCP): ping-pong blocking / --nonblocked, throughput at 64 B -------------------
sockperf_all() {
	if ! have sockperf; then
		rec lat "*" "sockperf" "n/a (sockperf not installed)"
		rec msgrate "*" "sockperf tp" "n/a (sockperf not installed)"
		return
	fi
	local lsz mode nb v
	for lsz in 8 4096; do
		for mode in block busy; do
			if ! in_list "$lsz" "${TOOL_LAT// /,}" || ! measure_mode sockperf $mode; then
				rec lat "$lsz|$mode" "sockperf" "-"
				continue
			fi
			nb=()
			[ $mode = busy ] && nb=(--nonblocked)
			next_port
			start_srv "$LOG/sp-srv.out" "${THEIRS[@]}" timeout -k 5 300 sockperf sr --tcp -i "$ADDR" -p "$PORT" "${nb[@]}"
			wait_listen "$PORT"
			# sockperf's smallest message is 14 bytes (its header)
			"${CLI[@]}" "${THEIRS[@]}" timeout -k 5 120 sockperf pp --tcp -i "$ADDR" -p "$PORT" \
				-m $((lsz < 14 ? 14 : lsz)) -t "$(awk -v d="$DUR" 'BEGIN { print (d < 1 ? 1 : d) }')" \
				--full-rtt "${nb[@]}" >"$LOG/sp.out" 2>&1
			v=$(awk '/percentile 50.000 =/ { print $NF }' "$LOG/sp.out")
			if [ -n "$v" ]; then
				rec lat "$lsz|$mode" "sockperf" "$v"
			else
				rec lat "$lsz|$mode" "sockperf" "FAILED (sockperf pp)"
				say "sockperf pp failed: $(tail -3 "$LOG/sp.out")"
			fi
			stop_srv
		done
	done
	next_port
	start_srv "$LOG/sp-srv.out" "${THEIRS[@]}" timeout -k 5 300 sockperf sr --tcp -i "$ADDR" -p "$PORT"
	wait_listen "$PORT"
	"${CLI[@]}" "${THEIRS[@]}" timeout -k 5 120 sockperf tp --tcp -i "$ADDR" -p "$PORT" -m 64 \
		-t "$(awk -v d="$DUR" 'BEGIN { print (d < 1 ? 1 : d) }')" >"$LOG/sp.out" 2>&1
	v=$(awk '/Message Rate is/ { for (i = 1; i <= NF; i++) if ($i == "is") print $(i + 1) }' "$LOG/sp.out")
	if [ -n "$v" ]; then
		rec msgrate send "sockperf tp" "$(calc "$v / 1e6")"
	else
		rec msgrate send "sockperf tp" "FAILED (sockperf tp)"
	fi
	rec msgrate write "sockperf tp" "-"
	rec msgrate read "sockperf tp" "-"
	stop_srv
}

# ---- UCX over TCP (ucx_perftest, UCX_TLS=tcp) ------------------------------------------------
ucx_run() { # ucx_run OUTFILE ucx_perftest-client-args... ; prints nothing, returns status
	local out=$1
	shift
	next_port
	start_srv "$LOG/ucx-srv.out" "${THEIRS[@]}" UCX_TLS=tcp timeout -k 5 300 ucx_perftest -p "$PORT"
	wait_listen "$PORT" || { stop_srv; return 1; }
	"${CLI[@]}" "${THEIRS[@]}" UCX_TLS=tcp timeout -k 5 300 ucx_perftest "$ADDR" -p "$PORT" -f "$@" \
		>"$out" 2>&1
	local rc=$?
	[ $rc -ne 0 ] && kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	return $rc
}
ucx_field() { # field $2 of the final line (-f): iters lat50 latavg latall bwavg bwall mravg mrall
	awk 'NF == 8 && $1 ~ /^[0-9]+$/ { l = $0 } END { print l }' "$1" | awk -v f="$2" '{ print $f }'
}
ucx_all() {
	if ! have ucx_perftest; then
		rec bw1 "*" "UCX tcp" "n/a (ucx-utils not installed)"
		rec lat "*" "UCX tcp" "n/a (ucx-utils not installed)"
		rec msgrate "*" "UCX tcp" "n/a (ucx-utils not installed)"
		return
	fi
	local op size test n v b
	for op in write read send; do
		case $op in write) test=ucp_put_bw ;; read) test=ucp_get ;; send) test=ucp_am_bw ;; esac
		for size in ${SIZES//,/ }; do
			b=$(bytes "$size")
			if ! in_list "$size" "$TOOL_SIZES" || ! in_list "$op" "${TOOL_OPS// /,}"; then
				rec bw1 "$op|$b" "UCX tcp" "-"
				continue
			fi
			n=$((UCX_BYTES / b))
			[ $n -gt 5000 ] && n=5000
			[ $n -lt 20 ] && n=20
			# UCX's MB is 2^20 bytes
			if ucx_run "$LOG/ucx.out" -t "$test" -s "$b" -n "$n" && v=$(ucx_field "$LOG/ucx.out" 6) &&
				[ -n "$v" ] && awk -v x="$v" 'BEGIN { exit !(x > 0) }'; then
				rec bw1 "$op|$b" "UCX tcp" "$(calc "$v * 1.048576")"
				[ "$b" = 64 ] && rec msgrate "$op" "UCX tcp" "$(calc "$(ucx_field "$LOG/ucx.out" 8) / 1e6")"
			else
				rec bw1 "$op|$b" "UCX tcp" "FAILED ($test)"
				say "ucx_perftest $test -s $b failed: $(tail -3 "$LOG/ucx.out")"
			fi
		done
	done
	in_list 64 "$TOOL_SIZES" || rec msgrate "*" "UCX tcp" "-"
	local lsz mode em
	for lsz in 8 4096; do
		for mode in block busy; do
			if ! in_list "$lsz" "${TOOL_LAT// /,}" || ! measure_mode ucx $mode; then
				rec lat "$lsz|$mode" "UCX tcp" "-"
				continue
			fi
			em=(-E poll)
			[ $mode = block ] && em=(-E sleep)
			# ucp_am_lat prints half the round trip (its 50th percentile): doubled here
			v=
			ucx_run "$LOG/ucx.out" -t ucp_am_lat -s "$lsz" -n "$LAT_N" "${em[@]}" &&
				v=$(ucx_field "$LOG/ucx.out" 2) && [ -n "$v" ] && v=$(calc "2 * $v")
			rec_val lat "$lsz|$mode" "UCX tcp" "$v" "ucp_am_lat ${em[*]}" "$LOG/ucx.out" "$LOG/ucx-srv.out"
		done
	done
}

# ---- libfabric (fi_pingpong): tcp provider; verbs through our libraries on veth --------------
fi_run() { # fi_run OUTFILE provider size iterations ; sets FI_LINE to the client's figures
	local out=$1 prov=$2 size=$3 it=$4 wrap=("${THEIRS[@]}")
	[ "$prov" = verbs ] && wrap=("${OURS[@]}")
	FI_LINE=
	next_port
	start_srv "$LOG/fi-srv.out" "${wrap[@]}" timeout -k 5 120 fi_pingpong -p "$prov" -e msg -I "$it" \
		-S "$size" -B "$PORT"
	wait_listen "$PORT" || { stop_srv; return 1; }
	"${CLI[@]}" "${wrap[@]}" timeout -k 5 120 fi_pingpong -p "$prov" -e msg -I "$it" -S "$size" \
		-P "$PORT" "$ADDR" >"$out" 2>&1
	local rc=$?
	[ $rc -ne 0 ] && kill "$SPID" 2>/dev/null
	wait "$SPID" 2>/dev/null
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	FI_LINE=$(grep -E '^[0-9]+[kmg]?[[:space:]]+[0-9]+[kmg]?[[:space:]]+=' "$out" | tail -1)
	return $rc
}
fi_all() {
	local prov col size b it op lsz
	if ! have fi_pingpong; then
		rec bw1 "*" "libfabric tcp" "n/a (libfabric-bin not installed)"
		rec lat "*" "libfabric tcp" "n/a (libfabric-bin not installed)"
		rec lat "*" "libfabric verbs (softrdma)" "n/a (libfabric-bin not installed)"
		return
	fi
	for prov in tcp verbs; do
		col="libfabric $prov"
		[ $prov = verbs ] && col="libfabric verbs (softrdma)"
		if [ $prov = verbs ] && [ "$P" = lo ]; then
			rec lat "*" "$col" "n/a (libfabric's verbs provider skips loopback)"
			continue
		fi
		if [ $prov = tcp ]; then # fi_pingpong's MB/sec: a ping-pong, not a stream
			for size in ${SIZES//,/ }; do
				b=$(bytes "$size")
				if ! in_list "$size" "$TOOL_SIZES"; then
					for op in write read send; do rec bw1 "$op|$b" "$col" "-"; done
					continue
				fi
				it=$((UCX_BYTES / 8 / b))
					[ $it -gt 2000 ] && it=2000
				[ $it -lt 10 ] && it=10
				fi_run "$LOG/fi.out" tcp "$b" "$it"
				local mbs
				mbs=$(awk '{ print $6 }' <<<"$FI_LINE")
				for op in write read send; do
					if [ "$op" = send ] && [ -n "$mbs" ]; then
						rec bw1 "$op|$b" "$col" "$mbs"
					elif [ "$op" = send ]; then
						rec bw1 "$op|$b" "$col" "FAILED (fi_pingpong)"
						say "fi_pingpong -p tcp -S $b failed: $(tail -3 "$LOG/fi.out")"
					else
						rec bw1 "$op|$b" "$col" "-"
					fi
				done
			done
		fi
		for lsz in 8 4096; do
			# fi_pingpong busy-polls its CQ; usec/xfer is half the round trip: doubled here
			rec lat "$lsz|block" "$col" "-"
			in_list "$lsz" "${TOOL_LAT// /,}" || { rec lat "$lsz|busy" "$col" "-"; continue; }
			fi_run "$LOG/fi.out" "$prov" "$lsz" "$LAT_N"
			local us
			us=$(awk '{ print $7 }' <<<"$FI_LINE")
			[ -n "$us" ] && us=$(calc "2 * $us")
			rec_val lat "$lsz|busy" "$col" "$us" "fi_pingpong -p $prov -S $lsz" "$LOG/fi.out" "$LOG/fi-srv.out"
		done
	done
}

# ---- rendering ---------------------------------------------------------------------------------
# render TABLE "col|col|ratio:A/B|..." : Markdown rows for the current path, each cell the
# median [min-max] of its values; rows in the order first recorded; "*" rows fill a column.
render() {
	awk -F'\t' -v P="$P" -v T="$1" -v spec="$2" -v rowhdr="$3" '
	function fmt(v) {
		if (v >= 1000) return sprintf("%.0f", v)
		if (v >= 10) return sprintf("%.1f", v)
		if (v >= 1) return sprintf("%.2f", v)
		return sprintf("%.3g", v)
	}
	function isnum(v) { return v ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ && v != "-" }
	function stats(key,    n, i, j, t, a, m) {
		n = cnt[key]
		if (!n) return ""
		for (i = 1; i <= n; i++) a[i] = val[key, i]
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
		m = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		med[key] = m
		return n == 1 ? fmt(m) : fmt(m) " [" fmt(a[1]) "–" fmt(a[n]) "]"
	}
	$1 == P && $2 == T {
		if ($3 == "*") { fill[$4] = $5; next }
		if (!(($3) in seen)) { seen[$3] = 1; rows[++nr] = $3 }
		k = $3 SUBSEP $4
		if (isnum($5)) val[k, ++cnt[k]] = $5 + 0
		else note[k] = $5
	}
	END {
		if (!nr) { print "| MISSING: nothing measured |"; exit }
		nc = split(spec, cols, "|")
		line = "| " rowhdr
		gsub(/ \/ /, " | ", line)
		sep = "|" gensep(rowhdr)
		for (c = 1; c <= nc; c++) {
			h = cols[c]
			if (h ~ /^ratio:/) { split(substr(h, 7), ab, "/"); h = "ratio " ab[1] " / " ab[2] }
			line = line " | " h
			sep = sep " ---: |"
		}
		print line " |"
		print sep
		for (r = 1; r <= nr; r++) {
			split(rows[r], rk, "|")
			line = "| " rowlabel(rk[1], rk[2])
			for (c = 1; c <= nc; c++) {
				h = cols[c]
				if (h ~ /^ratio:/) {
					split(substr(h, 7), ab, "/")
					ka = rows[r] SUBSEP ab[1]; kb = rows[r] SUBSEP ab[2]
					stats(ka); stats(kb)
					cell = (cnt[ka] && cnt[kb] && med[kb] > 0) ? sprintf("%.2f", med[ka] / med[kb]) : "–"
				} else {
					k = rows[r] SUBSEP h
					cell = stats(k)
					if (cell == "") cell = (k in note) ? note[k] : (h in fill) ? fill[h] : "MISSING"
					if (cell == "-") cell = "–"
				}
				line = line " | " cell
			}
			print line " |"
		}
	}
	function gensep(h,   n, i, s) { n = split(h, x, " / "); s = ""; for (i = 1; i <= n; i++) s = s " --- |"; return s }
	function rowlabel(a, b) {
		if (b == "") return a
		if (b + 0 > 0 && b % 1048576 == 0) b = (b / 1048576) " MiB"
		else if (b + 0 > 0 && b % 1024 == 0) b = (b / 1024) " KiB"
		else if (b + 0 > 0) b = b " B"
		else if (b == "block") b = "blocking"
		else if (b == "busy") b = "busy-polling"
		if (a + 0 > 0) { a = a + 0; a = (a % 1024 == 0) ? (a / 1024) " KiB" : a " B" }
		return a " | " b
	}' "$RES"
}

# ---- run ---------------------------------------------------------------------------------------
START=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
T0=$(date +%s)
IFS=, read -ra PATH_LIST <<<"$PATHS"
for P in "${PATH_LIST[@]}"; do
	if ! setup_path "$P"; then
		say "path $P unavailable (veth needs root and network namespaces)"
		for t in bw1 bw8 lat msgrate cpu; do rec "$t" "*" "softrdma" "n/a (path $P needs root)"; done
		teardown_path
		continue
	fi
	for r in $(seq "$RUNS"); do
		for part in ${ONLY//,/ }; do
			t=$(date +%s)
			case $part in
			srbench)
				srbench_bw
				for lsz in 8 4k; do srbench_lat "$lsz" block; srbench_lat "$lsz" busy; done ;;
			8qp) srbench_8qp ;;
			perftest) perftest_all ;;
			qperf) qperf_all ;;
			sockperf) sockperf_all ;;
			ucx) ucx_all ;;
			fi) fi_all ;;
			*) say "unknown part $part"; exit 2 ;;
			esac
			say "path $P, run $r of $RUNS: $part took $(( $(date +%s) - t )) s"
		done
	done
	teardown_path
done
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
COMMIT=$(git -C "$SRC" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$SRC" status --porcelain --untracked-files=no 2>/dev/null | grep -c .)
CPU=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "not installed"; }

report() {
	echo "### Benchmark suite, $START"
	echo
	echo "- commit \`$COMMIT\`$([ "$DIRTY" -gt 0 ] && echo " (with $DIRTY uncommitted changes)")," \
		"command \`bench/suite.sh ${BUILD#"$SRC"/}$([ $QUICK = 1 ] && echo " --quick") --runs $RUNS --duration $DUR --sizes $SIZES --paths $PATHS\`" \
		"($(( $(date +%s) - T0 )) s)"
	echo "- machine: $(nproc) cores, ${CPU:-unknown CPU}, Linux $(uname -r); load average $LOAD0 before, $LOAD1 after"
	echo "- tools: perftest $(ver perftest), qperf $(ver qperf), sockperf $(ver sockperf), ucx-utils $(ver ucx-utils), libfabric-bin $(ver libfabric-bin)"
	echo "- each cell: median of $RUNS run(s) [min–max]; – not measured at that size or mode; ratios from medians"
	echo
	for P in "${PATH_LIST[@]}"; do
		case $P in lo) pname="loopback (127.0.0.1, MTU $(cat /sys/class/net/lo/mtu))" ;; veth) pname="veth pair between two namespaces, MTU 1500" ;; *) pname=$P ;; esac
		echo "#### Path: $pname"
		echo
		echo "Bandwidth, 1 QP, MB/s (10^6 bytes/s). libfabric's figure is fi_pingpong's (a ping-pong of that size, not a stream)."
		echo
		render bw1 "softrdma|TCP|ratio:softrdma/TCP|perftest -R|qperf -cm1 rc|qperf tcp|UCX tcp|libfabric tcp" "op / size"
		echo
		echo "Bandwidth, 8 QPs (srbench: 8 client/server process pairs at once, MB/s summed; perftest: one process, -q 8)."
		echo
		render bw8 "softrdma|TCP|ratio:softrdma/TCP|perftest -R -q 8" "op / size"
		echo
		echo "Ping-pong round trip, µs (median; p99 for srbench). Every tool's figure is a full round trip (perftest, qperf, UCX and fi_pingpong print half of it; doubled). sockperf's smallest message is 14 bytes."
		echo
		render lat "softrdma|softrdma p99|TCP|TCP p99|ratio:softrdma/TCP|perftest ib_send_lat|perftest ib_write_lat|qperf -cm1 rc|qperf tcp|sockperf|UCX tcp|libfabric tcp|libfabric verbs (softrdma)" "size / mode"
		echo
		echo "Message rate at 64 B, million messages/s, 1 QP (srbench: window of 64 WRs; TCP: one send() per message, TCP_NODELAY)."
		echo
		render msgrate "softrdma|TCP|ratio:softrdma/TCP|perftest|sockperf tp|UCX tcp" "op"
		echo
		echo "CPU seconds per GiB moved (getrusage of each whole process, all threads, from connect to teardown), 1 QP."
		echo
		render cpu "softrdma client|TCP client|ratio:softrdma client/TCP client|softrdma server|TCP server|ratio:softrdma server/TCP server" "op / size"
		echo
	done
}
report >"$LOG/report.md"
cat "$LOG/report.md"
if [ "$QUICK" = 1 ]; then
	# Every cell must hold a number, "–" (not measured by design) or "n/a (reason)".
	if grep -q -E 'MISSING|FAILED' "$LOG/report.md"; then
		say "cells without a figure:"
		grep -E 'MISSING|FAILED' "$LOG/report.md" >&2
		exit 1
	fi
	say "every cell has a figure or says why not"
fi
