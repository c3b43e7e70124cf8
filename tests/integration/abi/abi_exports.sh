#!/usr/bin/env bash
# abi_exports: every libibverbs/librdmacm symbol@version that the programs of rdmacm-utils,
# ibverbs-utils, perftest and qperf import (directly, or through another shared library they
# load) must be exported by our libraries at exactly that version.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

need_tool readelf dpkg awk
[ -x "$ABI_REPORT" ] || fail "$ABI_REPORT missing or not executable"
need_our_libs
abi_tmpdir

"$ABI_REPORT" --libdir "$SR_LIBDIR" >"$ABI_TMP/report" 2>"$ABI_TMP/err"
rc=$?
case $rc in
0 | 1) ;;
77) skip "$(tail -n 1 "$ABI_TMP/err")" ;;
*) cat "$ABI_TMP/err"; fail "abi-report exited with status $rc" ;;
esac

# Guard against a vacuous pass (e.g. readelf output that no longer parses).
n=$(wc -l <"$ABI_TMP/report")
[ "$n" -gt 100 ] || { cat "$ABI_TMP/err"; fail "abi-report found only $n imports; expected hundreds"; }

if [ $rc -ne 0 ]; then
	echo "Imports not exported by $SR_LIBDIR (symbol@version, library: importing programs):"
	awk '$4 == "NO" {
		k = $2 " (" $3 ")"; u = ($5 == "via") ? $6 : $1
		if (!((k, u) in seen)) { seen[k, u] = 1; if (k in users) users[k] = users[k] ", " u; else users[k] = u }
	} END { for (k in users) print "  " k ": " users[k] }' "$ABI_TMP/report" | sort
	grep -E '^abi-report: [0-9]+ binaries' "$ABI_TMP/err"
	fail "$(awk '$4 == "NO" { print $2 }' "$ABI_TMP/report" | sort -u | wc -l) symbol@version imports are not exported by our libraries"
fi
grep -E '^abi-report: [0-9]+ binaries' "$ABI_TMP/err"
echo "PASS: all $n imports resolve against $SR_LIBDIR"
