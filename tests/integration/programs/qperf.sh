#!/usr/bin/env bash
# Unmodified qperf RC tests through our libraries, connected with rdma_cm (-cm1): the
# client must print a positive bandwidth or latency.
# usage: qperf.sh lo4|netns TEST...
#
# qperf 0.4.11 (Debian 12) sends its rdma_cm port to the client before calling rdma_listen
# (later qperf listens first). A client that connects inside that window is refused, as it
# would be by any stack (TCP answers a SYN to a port nobody listens on with a reset), and
# qperf reports "Event rejected". Only that failure is retried (up to 10 times: on a loaded
# 2-core machine about a third of the attempts hit the window).
. "$(dirname "$0")/../lib.sh"
sr_need_cmd qperf
sr_hosts "$1"
shift
port=$(sr_port)
slog=$(mktemp)
clog=$(mktemp)
sr_run_on "${SR_SRV[@]}" -- timeout 300 qperf -lp "$port" >"$slog" 2>&1 &
spid=$!
sr_wait_listen "$port" "${SR_SRV[@]}"
for t in "$@"; do
	for try in $(seq 10); do
		sr_run_on "${SR_CLI[@]}" -- timeout 60 qperf -lp "$port" -cm1 -t 1 "$SR_ADDR" "$t" \
			>"$clog" 2>&1
		rc=$?
		cat "$clog"
		[ "$rc" -ne 0 ] && grep -q 'Event rejected' "$clog" && { sleep 0.2; continue; }
		break
	done
	[ "$rc" -eq 0 ] || { sr_stop "$spid"; cat "$slog"; sr_fail "qperf $t exited $rc"; }
	awk '/(bw|latency) *=/ { ok = ($3 + 0 > 0) } END { exit !ok }' "$clog" ||
		{ sr_stop "$spid"; sr_fail "qperf $t printed no result"; }
done
sr_stop "$spid"
sr_pass "qperf $* over $SR_ADDR"
