#!/usr/bin/env bash
# N established RC connections from one client process to a server process with four
# listeners on 127.0.0.1 (bench/conns): every connection moves one SEND each way with the
# right contents, each side holds exactly one more fd per connection and no more threads,
# and everything is torn down cleanly.
# With a port range LO-HI the run happens in a fresh network namespace whose implicit range
# is only that: more connections than ports then fit only through 4-tuple port sharing.
# usage: cm_conns.sh N [LO-HI]
. "$(dirname "$0")/../lib.sh"
n=${1:?connections}
range=${2:-}
conns="$SR_BINDIR/conns"
[ -x "$conns" ] || sr_fail "$conns not built"
# conns raises its own limit; beyond the hard limit that needs CAP_SYS_RESOURCE
need=$((n + 256))
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$need" ] && ! (ulimit -Hn "$need") 2>/dev/null; then
	sr_skip "$n connections need $need fds per process; the hard limit is $hard and cannot be raised here"
fi
port=$((20000 + RANDOM % 10000))
log=$(mktemp)

# -w 512: many connects in flight, well within the listeners' backlogs (4 x 1024)
pre=()
if [ -n "$range" ]; then
	sr_need_root
	ns=$(sr_netns_add conns)
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="${range/-/ }" ||
		sr_fail "cannot set the port range"
	pre=(ip netns exec "$ns")
	[ "$n" -gt $((${range#*-} - ${range%-*} + 1)) ] || sr_fail "$n connections fit $range unshared"
fi
"${pre[@]}" "$conns" -n "$n" -p "$port" -w 512 -F >"$log" 2>&1
rc=$?
cat "$log"
[ "$rc" -eq 0 ] || sr_fail "conns exited $rc"
val() { awk -v k="$1" '$1 == k { print $2 }' "$log"; }
[ "$(val exchanged)" = "$n" ] || sr_fail "not every connection exchanged its SENDs"
[ "$(val server_torn_down)" = "$n" ] || sr_fail "the server did not tear down every connection"
for side in client server; do
	[ "$(val ${side}_fds_added)" = "$((n - 1))" ] || sr_fail "$side: not one fd per connection"
	[ "$(val ${side}_threads_added)" = 0 ] || sr_fail "$side: threads per connection"
done
sr_pass "$n connections, one fd each${range:+, implicit ports $range}"
