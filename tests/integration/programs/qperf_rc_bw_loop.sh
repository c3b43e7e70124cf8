#!/usr/bin/env bash
# qperf -cm1 rc_bw with small messages, again and again: its client posts Sends as fast as
# they complete and its server reposts receives only after polling, and each side stops on
# its own timer, so the server regularly finds a Send with no receive posted (during the run,
# and at its end, when it has stopped reposting and the client still sends). qperf asks for
# rnr_retry_count 7: the receiver must hold the stream until a receive comes (on InfiniBand
# the sender retries without end), never Terminate, or the client sees "WR flush failure" /
# "Remote operation failure" (as it did while rdma_cm dropped the count: about one run in
# four at 64 B). The server logs its holds; at least one run must have held a Send, else the
# loop proved nothing.
# usage: qperf_rc_bw_loop.sh lo4|netns RUNS [SIZE]
. "$(dirname "$0")/../lib.sh"
sr_need_cmd qperf
sr_hosts "$1"
runs=$2
size=${3:-64}
port=$((20000 + RANDOM % 20000))
slog=$(mktemp)
clog=$(mktemp)
SOFTRDMA_LOG_LEVEL=4 sr_run_on "${SR_SRV[@]}" -- timeout 600 qperf -lp "$port" >"$slog" 2>&1 &
spid=$!
sr_wait_listen "$port" "${SR_SRV[@]}"
ok=0
tries=0
while [ "$ok" -lt "$runs" ]; do
	tries=$((tries + 1))
	# qperf 0.4.11 tells the client its port before it listens (see qperf.sh): retried
	[ "$tries" -le $((runs + 20)) ] || { kill "$spid"; sr_fail "qperf refused too often"; }
	sr_run_on "${SR_CLI[@]}" -- timeout 60 qperf -lp "$port" -cm1 -t 1 -m "$size" "$SR_ADDR" \
		rc_bw >"$clog" 2>&1
	rc=$?
	[ "$rc" -ne 0 ] && grep -q 'Event rejected' "$clog" && continue
	cat "$clog"
	[ "$rc" -eq 0 ] || { kill "$spid"; sr_fail "qperf rc_bw -m $size run $((ok + 1)) exited $rc"; }
	awk '/bw *=/ { ok = ($3 + 0 > 0) } END { exit !ok }' "$clog" ||
		{ kill "$spid"; sr_fail "qperf rc_bw printed no result"; }
	ok=$((ok + 1))
done
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
holds=$(grep -c 'Send without a posted receive' "$slog")
rm -f "$slog" "$clog"
[ "$holds" -gt 0 ] || sr_fail "no run found a Send without a receive: the loop tested nothing"
sr_pass "qperf rc_bw -m $size over $SR_ADDR: $runs runs, $holds Sends held for a receive"
