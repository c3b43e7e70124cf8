#!/usr/bin/env bash
# QEMU's live migration over RDMA, unmodified (Debian's qemu-system-x86 7.2): the destination
# listens with `-incoming rdma:ADDR:PORT` in one namespace, the source in the other is told
# `migrate -d rdma:ADDR:PORT` on its monitor, both through our libraries. The guest's RAM
# (MIB MiB, default 64) is a memory-backend-file with share=on on each side: the source's file
# is filled with random data before QEMU starts, the destination's is zero, and after the
# migration the destination's must equal what the source was given.
# The guest is `-machine none` (no firmware, no CPU: nothing but RAM to migrate) and the source
# stays paused (-S), so its RAM does not change under the comparison. QEMU caps migration at
# 128 MiB/s by default (max-bandwidth); the cap is lifted first.
# usage: qemu_migrate.sh [MIB] [rdma|tcp]   (tcp: the same over QEMU's tcp: transport, for
#        comparison; it does not touch our libraries)
. "$(dirname "$0")/apps_lib.sh"
mib=${1:-64}
proto=${2:-rdma}
sr_need_root
sr_need_cmd qemu-system-x86_64

a=$(sr_netns_add qma)
b=$(sr_netns_add qmb)
net=$((200 + RANDOM % 50))
sr_veth_pair "$a" "$b" "$net"
addr=10.$net.0.1
port=$(sr_port)
# The RAM files live in /dev/shm when it is there (tmpfs): on a disk, the destination's writes
# into its file-backed RAM would be paced by writeback, and the figure would be the disk's.
dir=$(mktemp -d -p "$( [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")")
trap 'sr_app_cleanup; rm -rf "$dir"' EXIT

head -c "${mib}M" /dev/urandom >"$dir/ref"
cp "$dir/ref" "$dir/src.ram"
truncate -s "${mib}M" "$dir/dst.ram"
qemu() { # ram-file, more arguments
	local ram=$1
	shift
	echo qemu-system-x86_64 -machine none,memory-backend=mem -m "${mib}M" \
		-object "memory-backend-file,id=mem,size=${mib}M,mem-path=$ram,share=on" \
		-nodefaults -display none "$@"
}

# shellcheck disable=SC2046 # qemu prints one word per argument, no spaces in them
sr_app_start "$dir/dst.log" "$a" $(qemu "$dir/dst.ram" -monitor none -incoming "$proto:$addr:$port")
dst=$SR_APP_PID
SR_WAIT_PID=$dst SR_WAIT_LOG=$dir/dst.log sr_wait_listen "$port" ip netns exec "$a"
[ "$proto" = rdma ] && sr_app_uses_ours "$dst"

# The source's human monitor on its stdin (a fifo, held open read-write here so that neither
# end's open blocks), its answers in src.log.
mkfifo "$dir/mon"
exec {mon}<>"$dir/mon"
# shellcheck disable=SC2046
SR_APP_STDIN=$dir/mon sr_app_start "$dir/src.log" "$b" $(qemu "$dir/src.ram" -S -monitor stdio)
src=$SR_APP_PID
sr_wait_output "$dir/src.log" '(qemu)'
[ "$proto" = rdma ] && sr_app_uses_ours "$src"
echo "migrate_set_parameter max-bandwidth 100G" >&"$mon"
echo "migrate -d $proto:$addr:$port" >&"$mon"
# Ask until the migration is over: 120 s bound (64 MiB take 1-3 s).
status=
for _ in $(seq 600); do
	echo "info migrate" >&"$mon"
	sleep 0.2
	status=$(tr -d '\r' <"$dir/src.log" | grep -o 'Migration status: [a-z-]*' | tail -n 1)
	case "$status" in *completed | *failed | *cancelled) break ;; esac
	kill -0 "$src" 2>/dev/null || break
	kill -0 "$dst" 2>/dev/null || break
done
tr -d '\r' <"$dir/src.log" | sed 's/\x1b\[[0-9;]*[A-Za-z]//g' |
	grep -E '^(Migration status|total time|downtime|transferred ram|throughput):' | tail -n 5
[ "$status" = "Migration status: completed" ] || {
	tail -c 2000 "$dir/src.log"
	cat "$dir/dst.log"
	sr_fail "migration over $proto: ${status:-no status} (source, destination alive: $(kill -0 "$src" 2>/dev/null && echo yes || echo no), $(kill -0 "$dst" 2>/dev/null && echo yes || echo no))"
}
cmp "$dir/ref" "$dir/dst.ram" || sr_fail "the destination's guest RAM differs from the source's"
exec {mon}>&-
sr_pass "QEMU migration of $mib MiB of guest RAM over $proto: across namespaces, RAM identical"
