#!/usr/bin/env bash
# abi_load_bind_now: every program of rdmacm-utils, ibverbs-utils, perftest and qperf must load
# with our libraries first on the path and every symbol bound at start-up (LD_BIND_NOW=1), and
# the libibverbs.so.1/librdmacm.so.1 that the loader actually maps must be ours.
#
# Each program is started with a harmless argument that makes it print its usage and exit
# (they all accept --help or reject it as an unknown option) under `timeout`, stdin from
# /dev/null. Its exit status does not matter; a timeout is not a failure either, as long as the
# loader reported no error. LD_DEBUG=libs,files (written to separate files) tells which file
# was mapped for each library.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

need_tool readelf dpkg awk timeout
[ -x "$ABI_REPORT" ] || fail "$ABI_REPORT missing or not executable"
need_our_libs
abi_tmpdir

bins=$("$ABI_REPORT" --list-binaries 2>"$ABI_TMP/err")
rc=$?
[ $rc -eq 77 ] && skip "$(tail -n 1 "$ABI_TMP/err")"
if [ $rc -ne 0 ] || [ -z "$bins" ]; then cat "$ABI_TMP/err"; fail "abi-report --list-binaries failed ($rc)"; fi

libdir_real=$(cd "$SR_LIBDIR" && pwd -P)

# A sanitizer build of our libraries needs its runtime loaded first in these uninstrumented
# programs.
preload=
for l in "${OUR_LIBS[@]}"; do
	for rt in $(readelf -d -W "$SR_LIBDIR/$l" | sed -n 's/.*(NEEDED).*\[\(lib[at]san\.so[^]]*\)\].*/\1/p'); do
		p=$(/sbin/ldconfig -p 2>/dev/null | awk -v n="$rt" '$1 == n { print $NF; exit }')
		[ -n "$p" ] && case ":$preload:" in *":$p:"*) ;; *) preload="${preload:+$preload:}$p" ;; esac
	done
done

args_for() {
	case "$(basename "$1")" in
	*) echo "--help" ;; # every program of the four packages prints usage and exits on it
	esac
}

loader_error_re="symbol lookup error|undefined symbol|version \`[^']*' not found|error while loading shared libraries|cannot open shared object file|relocation error"

nfail=0
nrun=0
ntimeout=0
for bin in $bins; do
	name=$(basename "$bin")
	d="$ABI_TMP/$name"
	mkdir -p "$d"
	needed=$(readelf -d -W "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
	# shellcheck disable=SC2046
	timeout -k 2 10 env -u LD_PRELOAD -u LD_AUDIT \
		LD_LIBRARY_PATH="$SR_LIBDIR" LD_BIND_NOW=1 \
		LD_DEBUG=libs,files LD_DEBUG_OUTPUT="$d/ld" \
		${preload:+LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0} \
		"$bin" $(args_for "$bin") </dev/null >"$d/out" 2>"$d/err"
	rc=$?
	nrun=$((nrun + 1))
	problems=()
	if grep -Eq "$loader_error_re" "$d/err" "$d/out"; then
		problems+=("loader error: $(grep -Eh "$loader_error_re" "$d/err" "$d/out" | head -n 1)")
	fi
	case $rc in
	124 | 137) ntimeout=$((ntimeout + 1)); echo "note: $name did not exit within 10 s (killed)" ;;
	127) [ ${#problems[@]} -gt 0 ] || problems+=("exit status 127 (could not be started): $(head -n 1 "$d/err")") ;;
	esac

	# Which file was mapped for each library: the last "trying file=" before its link map.
	cat "$d"/ld.* >"$d/ld" 2>/dev/null || : >"$d/ld"
	awk '
		/trying file=/ { t = $0; sub(/.*trying file=/, "", t); next }
		/generating link map/ {
			n = $0; sub(/.*file=/, "", n); sub(/ .*/, "", n)
			p = t; sub(/.*\//, "", p)
			if (p == n) print n "\t" t
		}' "$d/ld" >"$d/mapped"
	for l in "${OUR_LIBS[@]}"; do
		paths=$(awk -F '\t' -v l="$l" '$1 == l { print $2 }' "$d/mapped")
		for p in $paths; do
			real=$(readlink -f -- "$p")
			[ "$(dirname -- "$real")" = "$libdir_real" ] ||
				problems+=("$l loaded from $p ($real), not from $SR_LIBDIR")
		done
		if printf '%s\n' "$needed" | grep -qxF "$l" && [ -z "$paths" ]; then
			problems+=("$l is needed but the loader never mapped it (no LD_DEBUG record)")
		fi
	done

	if [ ${#problems[@]} -gt 0 ]; then
		nfail=$((nfail + 1))
		for p in "${problems[@]}"; do echo "FAIL $name: $p"; done
	else
		echo "ok   $name (exit $rc)"
	fi
done

[ "$nrun" -gt 0 ] || fail "no programs were run"
[ $nfail -eq 0 ] || fail "$nfail of $nrun programs did not load cleanly against $SR_LIBDIR"
echo "PASS: $nrun programs loaded with LD_BIND_NOW=1 against $SR_LIBDIR ($ntimeout timed out after loading)"
