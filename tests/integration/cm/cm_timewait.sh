#!/usr/bin/env bash
# Who keeps TIME_WAIT after rdma_disconnect (docs/ARCHITECTURE.md, "Who closes first"):
# never the active side, whose ephemeral ports towards one server are the tuples connection
# churn would exhaust. Client and server live in two fresh network namespaces joined by a veth,
# so `ss` in each shows only that side's sockets.
#   client disconnects first (cmtime: N connections, disconnect all, destroy): once every
#     connection has reached its final state, the client holds no TIME_WAIT socket for them;
#   server disconnects first (ucmatose, with data transfers): the client holds none either
#     (TIME_WAIT, if any, is the server's).
# Every wait is for socket states (bounded, the bound only turns a hang into a failure).
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip ss cmtime ucmatose
sr_hosts netns
N=100
port=$(sr_port)

# count <ns prefix...> -- <state filter>: sockets to/from $port in that state
count() {
	local pre=()
	while [ "$1" != "--" ]; do pre+=("$1"); shift; done
	shift
	"${pre[@]}" ss -Htan state "$1" "( sport = :$port or dport = :$port )" | grep -c .
}
# settle <ns prefix...>: wait until that side's connections on $port are gone or in
# TIME_WAIT (no established, FIN_WAIT, CLOSE_WAIT, LAST_ACK or CLOSING socket left)
settle() {
	for _ in $(seq 300); do
		[ "$("$@" ss -Htan "( sport = :$port or dport = :$port )" |
			awk '$1 != "TIME-WAIT" && $1 != "LISTEN"' | grep -c .)" -eq 0 ] && return 0
		sleep 0.1
	done
	"$@" ss -tan "( sport = :$port or dport = :$port )"
	sr_fail "connections on port $port did not finish closing"
}

# --- the client disconnects first
slog=$(mktemp)
clog=$(mktemp)
sr_run_on "${SR_SRV[@]}" -- timeout 120 cmtime -b "$SR_ADDR" -p "$port" >"$slog" 2>&1 &
spid=$!
sr_wait_listen "$port" "${SR_SRV[@]}"
sr_run_on "${SR_CLI[@]}" -- timeout 60 cmtime -s "$SR_ADDR" -p "$port" -c "$N" >"$clog" 2>&1 ||
	{ cat "$clog"; sr_fail "cmtime client failed"; }
grep -q "error" "$clog" && { cat "$clog"; sr_fail "cmtime reported errors"; }
settle "${SR_CLI[@]}"
settle "${SR_SRV[@]}"
tw=$(count "${SR_CLI[@]}" -- time-wait)
stw=$(count "${SR_SRV[@]}" -- time-wait)
echo "client disconnects first: client TIME_WAIT $tw, server TIME_WAIT $stw"
if [ "$tw" -ne 0 ]; then
	"${SR_CLI[@]}" ss -tan state time-wait | head
	sr_fail "the active side holds $tw TIME_WAIT sockets"
fi
sr_stop "$spid"

# --- the server disconnects first (after its data transfers)
port=$((port + 1))
SR_TAIL=2 sr_server_client "$port" timeout 60 ucmatose -b "$SR_ADDR" -p "$port" -c 4 -C 10 -- \
	timeout 60 ucmatose -s "$SR_ADDR" -p "$port" -c 4 -C 10
[ "$SR_SRC" -eq 0 ] && [ "$SR_CRC" -eq 0 ] && grep -q "return status 0" "$SR_SLOG" &&
	grep -q "return status 0" "$SR_CLOG" || sr_fail "ucmatose did not finish cleanly"
settle "${SR_CLI[@]}"
settle "${SR_SRV[@]}"
tw=$(count "${SR_CLI[@]}" -- time-wait)
stw=$(count "${SR_SRV[@]}" -- time-wait)
echo "server disconnects first: client TIME_WAIT $tw, server TIME_WAIT $stw"
[ "$tw" -eq 0 ] || sr_fail "the active side holds $tw TIME_WAIT sockets"
rm -f "$SR_SLOG" "$SR_CLOG"
sr_pass "no TIME_WAIT on the active side"
