#!/usr/bin/env bash
# The launcher works from the build tree and after `cmake --install`: `softrdma devices`
# lists sriw_lo, and `softrdma run --` puts our libraries under an unmodified program.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ibv_devices cmake
build=$(dirname "$SR_LIBDIR")
prefix=$(mktemp -d)
cmake --install "$build" --prefix "$prefix" >/dev/null || sr_fail "cmake --install"
[ -e "$prefix/lib/softrdma/libibverbs.so.1" ] || sr_fail "no lib/softrdma/libibverbs.so.1 installed"
[ -e "$prefix/lib/softrdma/librdmacm.so.1" ] || sr_fail "no lib/softrdma/librdmacm.so.1 installed"
for launcher in "$SR_BINDIR/softrdma" "$prefix/bin/softrdma"; do
	out=$(env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS=detect_leaks=0 "$launcher" devices) ||
		sr_fail "$launcher devices"
	echo "$out" | grep -Eq '^sriw_lo +lo +' || sr_fail "$launcher devices: no sriw_lo row"
	out=$(env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS=detect_leaks=0 \
		"$launcher" run -- ibv_devices) || sr_fail "$launcher run -- ibv_devices"
	echo "$out" | grep -Eq '^\s+sriw_lo\s' || sr_fail "$launcher run: ibv_devices did not see sriw_lo"
done
"$prefix/bin/softrdma" run -- /nonexistent-program 2>/dev/null
[ $? -eq 127 ] || sr_fail "missing program should give 127"
sr_pass "launcher from the build tree and after install"
