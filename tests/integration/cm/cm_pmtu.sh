#!/usr/bin/env bash
# The path MTU shrinks under a running transfer: unmodified rping (-V verifies every byte)
# between two namespaces while the route's MTU drops from 1500 to 1280 on the client and the
# link's on the server. FPDUs follow the connection's TCP MSS as it shrinks; every ping
# must still complete, verified.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rping ip
sr_need_root
a=$(sr_netns_add mtua)
b=$(sr_netns_add mtub)
sr_veth_pair "$a" "$b" 84
SR_SRV=(ip netns exec "$b")
slog=$(mktemp)
clog=$(mktemp)
count=3000
sr_run_on ip netns exec "$b" -- timeout 120 rping -s -a 10.84.0.2 -p 7402 -S 30000 -V \
	-C "$count" >"$slog" 2>&1 &
spid=$!
sr_wait_listen 7402 ip netns exec "$b"
sr_run_on ip netns exec "$a" -- timeout 120 rping -c -a 10.84.0.2 -p 7402 -S 30000 -V -v \
	-C "$count" >"$clog" 2>&1 &
cpid=$!
# rping's own output is buffered; the kernel's byte counters show the transfer is under way
sent() { ip netns exec "$a" ss -Htin state established dst 10.84.0.2 |
	grep -o 'bytes_sent:[0-9]*' | cut -d: -f2 | sort -n | tail -1; }
for _ in $(seq 400); do [ "$(sent)" -gt 3000000 ] 2>/dev/null && break; sleep 0.05; done
[ "$(sent)" -gt 3000000 ] 2>/dev/null || sr_fail "no transfer under way"
ip -n "$a" route replace 10.84.0.0/24 dev sr0 mtu 1280 || sr_fail "route mtu"
ip -n "$b" link set sr1 mtu 1280 || sr_fail "link mtu"
kill -0 "$cpid" 2>/dev/null || sr_fail "the transfer ended before the MTU changed"
mss=$(ip netns exec "$a" ss -Htin state established dst 10.84.0.2 | grep -o ' mss:[0-9]*' | head -1)
echo "client connection after the change:$mss"
wait "$cpid"
crc=$?
wait "$spid"
src=$?
after=$(grep -c 'ping data' "$clog")
echo "verified pings: $after"
[ "$crc" -eq 0 ] && [ "$src" -eq 0 ] || { cat "$slog"; tail "$clog"; sr_fail "rping exited $crc / $src"; }
[ "$after" -eq "$count" ] || sr_fail "$after of $count pings"
sr_pass "rping -V across a path MTU change (1500 -> 1280)"
