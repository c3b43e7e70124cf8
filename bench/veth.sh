#!/usr/bin/env bash
# srbench between two network namespaces joined by a veth pair (MTU 1500, like an ordinary
# Ethernet path; loopback's 64 KiB MTU hides per-FPDU costs). Needs root. Build first:
#   cmake --build build --target srbench ibverbs rdmacm
#   bench/veth.sh [build-dir] [srbench client options, e.g. -t write -S 64k -M]
set -uo pipefail
BUILD=$(cd "${1:-build}" && pwd) || exit 2
[ $# -gt 0 ] && shift
[ "$(id -u)" -eq 0 ] || { echo "veth.sh: needs root (ip netns)" >&2; exit 2; }
a=srb-a-$$ b=srb-b-$$
cleanup() { ip netns pids "$a" 2>/dev/null | xargs -r kill; ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; }
trap cleanup EXIT
ip netns add "$a" && ip netns add "$b" || exit 1
ip link add srb0 netns "$a" type veth peer name srb1 netns "$b" || exit 1
ip -n "$a" addr add 10.99.0.1/24 dev srb0
ip -n "$b" addr add 10.99.0.2/24 dev srb1
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set srb0 up
ip -n "$b" link set srb1 up
ip netns exec "$a" env LD_LIBRARY_PATH="$BUILD/lib" "$BUILD/bin/srbench" -s -a 10.99.0.1 -o \
	>/dev/null 2>&1 &
for _ in $(seq 100); do
	[ -n "$(ip netns exec "$a" ss -Hltn 'sport = :18600')" ] && break
	sleep 0.1
done
ip netns exec "$b" env LD_LIBRARY_PATH="$BUILD/lib" "$BUILD/bin/srbench" -c -a 10.99.0.1 "$@"
