#!/usr/bin/env bash
# `softrdma doctor` under conditions the test sets: descriptor limits (soft only: WARN with
# `ulimit -n`; hard too: FAIL with prlimit), a port range with reserved ports in a namespace
# of its own, programs whose libibverbs resolves to ours or, through a DT_RPATH, not, a
# set-group-ID copy; and --version against the rdma-core version pkg-config reports.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rping cc pkg-config readelf
doctor() {
	env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS=detect_leaks=0 \
		"$SR_BINDIR/softrdma" doctor "$@"
}
expect() { # rc, regex, output
	[ "$3" -eq "$1" ] || sr_fail "exit status $3, not $1: $2"$'\n'"$out"
	echo "$out" | grep -Eq "$2" || sr_fail "no line matching '$2' in:"$'\n'"$out"
}
need=$((100 + 256)) # the default 100 connections, one descriptor each, and 256 more

# Descriptors: soft limit too low but the hard one enough: a warning, not a failure.
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 1024 ] || sr_skip "hard limit $(ulimit -Hn)"
out=$(ulimit -Sn 64; doctor); rc=$?
expect 0 "^WARN nofile .*soft limit 64 < $need" $rc
expect 0 "^ +fix: ulimit -Sn $need " $rc
out=$(ulimit -Sn 400; doctor --connections 100); rc=$?
expect 0 "^OK   nofile .*soft 400.* 100 connections need $need" $rc
out=$(ulimit -Sn 400; doctor --connections 200); rc=$?
expect 0 "^WARN nofile .*< 456 that 200 connections need" $rc
# Hard limit too: a failure, the exit status says so.
out=$(ulimit -n 64; doctor); rc=$?
expect 1 "^FAIL nofile .*hard limit 64 < $need" $rc
expect 1 "^ +fix: sudo prlimit --nofile=$need:$need --pid" $rc
out=$(doctor --connections x 2>&1); rc=$?
[ $rc -eq 2 ] || sr_fail "a bad --connections gave $rc, not 2"
# Locked memory never limits us.
out=$(ulimit -l 0 2>/dev/null; doctor); rc=$?
expect 0 "^OK   memlock .*soft 0, .*no limit applies" $rc

# rping, unmodified, resolves both libraries to ours under the launcher.
out=$(doctor rping); rc=$?
expect 0 "^OK   program .*libibverbs.so.1 => $SR_LIBDIR/libibverbs.so.1 \(ours" $rc
expect 0 "^OK   program .*librdmacm.so.1 => $SR_LIBDIR/librdmacm.so.1 \(ours" $rc

# A program whose DT_RPATH names the system's folder loads the system's libibverbs whatever
# LD_LIBRARY_PATH says; with DT_RUNPATH (searched after LD_LIBRARY_PATH) it loads ours.
sys=$(ldconfig -p | awk '$1 == "libibverbs.so.1" { print $NF; exit }')
[ -n "$sys" ] || sr_skip "no system libibverbs.so.1 in ld.so.cache"
sysdir=$(dirname "$(readlink -f "$sys")")
src=$TMPDIR/probe.c
printf '#include <infiniband/verbs.h>\nint main(void) { return !ibv_get_device_list(0); }\n' >"$src"
cc -o "$TMPDIR/rpath" "$src" -libverbs -Wl,--disable-new-dtags -Wl,-rpath,"$sysdir" ||
	sr_fail "cc (rpath)"
cc -o "$TMPDIR/runpath" "$src" -libverbs -Wl,--enable-new-dtags -Wl,-rpath,"$sysdir" ||
	sr_fail "cc (runpath)"
out=$(doctor "$TMPDIR/rpath"); rc=$?
expect 1 "^FAIL program .*libibverbs.so.1 => $sysdir/libibverbs.so.1, not ours: .*DT_RPATH" $rc
expect 1 "fix: readelf -d $TMPDIR/rpath" $rc
out=$(doctor "$TMPDIR/runpath"); rc=$?
expect 0 "^OK   program .*libibverbs.so.1 => $SR_LIBDIR/libibverbs.so.1 \(ours" $rc
# A script is not a program the loader can trace.
out=$(doctor "$SR_SRCDIR/scripts/test"); rc=$?
expect 0 "^WARN program .* is not an ELF program" $rc
out=$(doctor /nonexistent/program); rc=$?
expect 1 "^FAIL program +/nonexistent/program: No such file" $rc

if [ "$(id -u)" -eq 0 ] && getent group nogroup >/dev/null; then
	# Set-group-ID to a group we are not in: secure mode, LD_LIBRARY_PATH ignored.
	cp "$TMPDIR/runpath" "$TMPDIR/sgid"
	chgrp nogroup "$TMPDIR/sgid" && chmod g+s "$TMPDIR/sgid" || sr_fail "chmod g+s"
	out=$(doctor "$TMPDIR/sgid"); rc=$?
	expect 1 "^FAIL program .*sgid is set-group-ID: .*ignores LD_LIBRARY_PATH" $rc
	expect 1 "fix: cp $TMPDIR/sgid /tmp/ && softrdma run /tmp/sgid" $rc

	# A program naming a loader that someone other than root owns: that loader is not run;
	# the same loader owned by root is, and answers.
	ldso=$(readelf -l "$TMPDIR/runpath" | sed -nE 's/.*interpreter: ([^]]+)].*/\1/p')
	[ -n "$ldso" ] || sr_fail "no interpreter in $TMPDIR/runpath"
	cp "$ldso" "$TMPDIR/ld.so"
	cc -o "$TMPDIR/ownld" "$src" -libverbs -Wl,--dynamic-linker="$TMPDIR/ld.so" || sr_fail "cc (loader)"
	out=$(doctor "$TMPDIR/ownld"); rc=$?
	expect 0 "^OK   program .*libibverbs.so.1 => $SR_LIBDIR/libibverbs.so.1 \(ours" $rc
	chown nobody "$TMPDIR/ld.so" || sr_fail "chown nobody"
	out=$(doctor "$TMPDIR/ownld"); rc=$?
	expect 0 "^WARN program .* names $TMPDIR/ld.so as its loader, which is not a root-owned file" $rc

	# Ports: 100 in the range, 10 of them reserved, in a namespace of our own whose only
	# interface, lo, is down.
	ns=$(sr_netns_add doctor)
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="40000 40099" \
		net.ipv4.ip_local_reserved_ports=40000-40009,50000 || sr_fail "sysctl in $ns"
	out=$(ip netns exec "$ns" env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
		ASAN_OPTIONS=detect_leaks=0 "$SR_BINDIR/softrdma" doctor --connections 91); rc=$?
	expect 0 "^WARN ports +local ports 40000-40099 less 10 reserved: 90 connections per destination" $rc
	expect 0 "fix: sudo sysctl -w net.ipv4.ip_local_reserved_ports=" $rc
	expect 0 "fix: sudo sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"" $rc
	expect 0 "^WARN netns +1 device: sriw_lo \(down\)" $rc
	expect 0 "fix: ip link set lo up" $rc
	ino=$(stat -L -c %i "/run/netns/$ns")
	expect 0 "^OK   netns +network namespace net:\[$ino\]" $rc
	out=$(ip netns exec "$ns" env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} \
		ASAN_OPTIONS=detect_leaks=0 "$SR_BINDIR/softrdma" doctor --connections 90); rc=$?
	expect 0 "^OK   ports +.*: 90 connections per destination" $rc
else
	echo "not root: set-ID and port-range cases skipped"
fi

# --version: the project's version and the rdma-core whose headers we were built against.
out=$(env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS=detect_leaks=0 \
	"$SR_BINDIR/softrdma" --version); rc=$?
core=$(pkg-config --modversion libibverbs | sed -E 's/^[0-9]+\.[0-9]+\.//')
expect 0 "^softrdma [0-9]+\.[0-9]+\.[0-9]+ \(rdma-core ${core//./\\.} ABI" $rc
sr_pass "doctor checks descriptors, locked memory, ports, programs and the namespace"
