#!/usr/bin/env bash
# qperf -cm1 rc_bw with small messages, again and again: its client posts Sends as fast as
# they complete and its server reposts receives only after polling, and each side stops on
# its own timer, so the server regularly finds a Send with no receive posted (during the run,
# and at its end, when it has stopped reposting and the client still sends). qperf asks for
# rnr_retry_count 7: the receiver must hold the stream until a receive comes (on InfiniBand
# the sender retries without end), never Terminate, or qperf reports "WR flush failure" /
# "Remote operation failure" (as it did while rdma_cm dropped the count: about one run in
# four at 64 B). The server logs its holds: the loop goes on past RUNS runs until one held
# a Send (at most 30 runs), else it proved nothing and fails; under the sanitizers, whose
# slower receive side rarely falls behind, it then only says so.
# usage: qperf_rc_bw_loop.sh lo4|netns RUNS [SIZE]
. "$(dirname "$0")/../lib.sh"
sr_need_cmd qperf
sr_hosts "$1"
runs=$2
size=${3:-64}
port=$(sr_port)
slog=$(mktemp)
clog=$(mktemp)
SOFTRDMA_LOG_LEVEL=4 sr_run_on "${SR_SRV[@]}" -- timeout 600 qperf -lp "$port" >"$slog" 2>&1 &
spid=$!
sr_wait_listen "$port" "${SR_SRV[@]}"
ok=0
tries=0
holds=0
while [ "$ok" -lt "$runs" ] || { [ "$holds" -eq 0 ] && [ "$ok" -lt 30 ]; }; do
	tries=$((tries + 1))
	# qperf 0.4.11 tells the client its port before it listens (see qperf.sh): retried
	[ "$tries" -le $((ok + 20)) ] || { sr_stop "$spid"; sr_fail "qperf refused too often"; }
	sr_run_on "${SR_CLI[@]}" -- timeout 60 qperf -lp "$port" -cm1 -t 1 -m "$size" "$SR_ADDR" \
		rc_bw >"$clog" 2>&1
	rc=$?
	[ "$rc" -ne 0 ] && grep -q 'Event rejected' "$clog" && continue
	cat "$clog"
	[ "$rc" -eq 0 ] || { sr_stop "$spid"; sr_fail "qperf rc_bw -m $size run $((ok + 1)) exited $rc"; }
	awk '/bw *=/ { ok = ($3 + 0 > 0) } END { exit !ok }' "$clog" ||
		{ sr_stop "$spid"; sr_fail "qperf rc_bw printed no result"; }
	ok=$((ok + 1))
	holds=$(grep -c 'Send without a posted receive' "$slog")
done
sr_stop "$spid"
rm -f "$slog" "$clog"
if [ "$holds" -eq 0 ]; then
	[ -n "${SR_PRELOAD:-}" ] ||
		sr_fail "no run of $ok found a Send without a receive: the loop tested nothing"
	echo "note: no run of $ok held a Send (sanitizer build); the plain build's run tests it"
fi
sr_pass "qperf rc_bw -m $size over $SR_ADDR: $ok runs, $holds Sends held for a receive"
