#!/usr/bin/env bash
# abi_selftest: the abi_* checks and tools/abi-report must fail when they should and pass when
# they should. Builds stand-in libraries (every function returns 0) from the export maps in a
# temporary directory, then runs the checks against faithful and deliberately broken variants.
# Needs a C compiler: first argument, else $CC, else cc. Never touches the real build.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

CC=${1:-${CC:-cc}}
need_tool readelf dpkg awk timeout
command -v "$CC" >/dev/null 2>&1 || skip "C compiler $CC not found"
[ -x "$ABI_REPORT" ] || fail "$ABI_REPORT missing or not executable"
abi_tmpdir
T=$ABI_TMP
IBV_MAP="$SR_SRCDIR/src/verbs/libibverbs.map"
CM_MAP="$SR_SRCDIR/src/cm/librdmacm.map"
failures=0
bad() { echo "SELFTEST FAIL: $*"; failures=$((failures + 1)); }
good() { echo "ok: $*"; }

map_names() { awk -f "$abi_here/../../../tools/mapsyms.awk" "$1" | awk -F '\t' '$1 == "G" { print $3 }'; }

# stub OUTDIR SONAME VERSION-SCRIPT|- NAMES-FILE [OMIT...]
stub() {
	local out=$1 soname=$2 vs=$3 names=$4 c
	shift 4
	mkdir -p "$out"
	c="$out/${soname}.c"
	sort -u "$names" | awk -v omit=" $* " 'index(omit, " " $1 " ") == 0 { print "long " $1 "(void) { return 0; }" }' >"$c"
	if [ "$vs" = - ]; then
		"$CC" -w -shared -fPIC -Wl,-soname,"$soname" -o "$out/$soname" "$c" || fail "cannot build stub $out/$soname"
	else
		"$CC" -w -shared -fPIC -Wl,-soname,"$soname" -Wl,--version-script="$vs" -o "$out/$soname" "$c" ||
			fail "cannot build stub $out/$soname"
	fi
	rm -f "$c"
}

# expect NAME RC PATTERN -- CMD...: CMD must exit RC and (if PATTERN) print a line matching it.
expect() {
	local what=$1 want=$2 pat=$3 rc
	shift 4
	"$@" >"$T/log" 2>&1
	rc=$?
	if [ $rc -eq 77 ]; then skip "$(tail -n 1 "$T/log")"; fi
	if [ $rc -ne "$want" ]; then
		bad "$what: exit $rc, expected $want"; sed 's/^/    /' "$T/log" | tail -n 15; return
	fi
	if [ -n "$pat" ] && ! grep -Eq -- "$pat" "$T/log"; then
		bad "$what: output lacks /$pat/"; sed 's/^/    /' "$T/log" | tail -n 15; return
	fi
	good "$what"
}

map_names "$IBV_MAP" >"$T/ibv.names"
map_names "$CM_MAP" >"$T/cm.names"
if [ ! -s "$T/ibv.names" ] || [ ! -s "$T/cm.names" ]; then fail "no names parsed from the export maps"; fi

# 1. Faithful stand-ins of the maps: abi_version_nodes passes.
stub "$T/faithful" libibverbs.so.1 "$IBV_MAP" "$T/ibv.names"
stub "$T/faithful" librdmacm.so.1 "$CM_MAP" "$T/cm.names"
expect "version nodes pass on faithful stubs" 0 '^PASS' -- \
	env SR_LIBDIR="$T/faithful" "$abi_here/abi_version_nodes.sh"

# 2. A symbol outside the map leaks.
sed 's/^\([[:space:]]*\)ibv_alloc_pd;/\1ibv_alloc_pd;\n\1sr_selftest_leak;/' "$IBV_MAP" >"$T/leak.map"
{ cat "$T/ibv.names"; echo sr_selftest_leak; } >"$T/leak.names"
stub "$T/leak" libibverbs.so.1 "$T/leak.map" "$T/leak.names"
cp "$T/faithful/librdmacm.so.1" "$T/leak/"
expect "version nodes catch a leaked symbol" 1 'sr_selftest_leak@IBVERBS_1.1 .*leak' -- \
	env SR_LIBDIR="$T/leak" "$abi_here/abi_version_nodes.sh"

# 3. A map symbol is missing: version nodes and abi-report both notice.
stub "$T/missing" libibverbs.so.1 "$IBV_MAP" "$T/ibv.names" ibv_query_gid_type
cp "$T/faithful/librdmacm.so.1" "$T/missing/"
expect "version nodes catch a missing symbol" 1 'ibv_query_gid_type@IBVERBS_PRIVATE_34 is in the map but not exported' -- \
	env SR_LIBDIR="$T/missing" "$abi_here/abi_version_nodes.sh"
expect "abi-report flags the missing import of ibv_devinfo" 1 \
	'^ibv_devinfo +ibv_query_gid_type@IBVERBS_PRIVATE_34 +libibverbs.so.1 +NO' -- \
	"$ABI_REPORT" --direct --libdir "$T/missing" /usr/bin/ibv_devinfo
expect "abi-report passes ibv_devinfo on faithful stubs" 0 '' -- \
	"$ABI_REPORT" --direct --libdir "$T/faithful" /usr/bin/ibv_devinfo

# 4. Unversioned exports and a wrong SONAME.
stub "$T/unversioned" librdmacm.so.1 - "$T/cm.names"
cp "$T/faithful/libibverbs.so.1" "$T/unversioned/"
expect "version nodes catch unversioned exports" 1 'rsocket is exported without a version node' -- \
	env SR_LIBDIR="$T/unversioned" "$abi_here/abi_version_nodes.sh"
"$CC" -w -shared -fPIC -Wl,-soname,libibverbs.so.2 -Wl,--version-script="$IBV_MAP" \
	-o "$T/unversioned/libibverbs.so.1" -x c - <<<'long ibv_open_device(void) { return 0; }' || fail "cc failed"
expect "version nodes catch a wrong SONAME" 1 "SONAME is 'libibverbs.so.2'" -- \
	env SR_LIBDIR="$T/unversioned" "$abi_here/abi_version_nodes.sh"

# 5. Stand-ins exporting everything the programs import (plus the maps): abi_exports and the
#    load test pass; with one import removed both fail.
"$ABI_REPORT" --libdir "$T/empty-dir-does-not-exist" >"$T/all" 2>/dev/null
[ $? -eq 1 ] || fail "abi-report against an empty libdir did not exit 1"
for lib in libibverbs.so.1 librdmacm.so.1; do
	awk -v l="$lib" '$3 == l { split($2, a, "@"); print a[2] "\t" a[1] }' "$T/all" | sort -u >"$T/$lib.imports"
	m=$([ $lib = libibverbs.so.1 ] && echo "$IBV_MAP" || echo "$CM_MAP")
	awk -f "$abi_here/../../../tools/mapsyms.awk" "$m" | awk -F '\t' -v OFS='\t' '$1 == "G" { print $2, $3 }' >>"$T/$lib.imports"
	sort -u "$T/$lib.imports" | awk -F '\t' '
		{ if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }; names[$1] = names[$1] "\t\t" $2 ";\n" }
		END { for (i = 1; i <= n; i++) printf "%s {\n\tglobal:\n%s\tlocal: *;\n};\n", order[i], names[order[i]] }' >"$T/$lib.map"
	cut -f2 "$T/$lib.imports" >"$T/$lib.names"
	stub "$T/complete" "$lib" "$T/$lib.map" "$T/$lib.names"
done
expect "abi_exports passes on complete stubs" 0 '^PASS' -- \
	env SR_LIBDIR="$T/complete" "$abi_here/abi_exports.sh"
expect "abi_load_bind_now passes on complete stubs" 0 '^PASS' -- \
	env SR_LIBDIR="$T/complete" "$abi_here/abi_load_bind_now.sh"

mkdir -p "$T/incomplete"
stub "$T/incomplete" libibverbs.so.1 "$T/libibverbs.so.1.map" "$T/libibverbs.so.1.names" ibv_query_gid_type
cp "$T/complete/librdmacm.so.1" "$T/incomplete/"
expect "abi_exports catches a missing import" 1 'ibv_query_gid_type@IBVERBS_PRIVATE_34 \(libibverbs.so.1\): .*ibv_devinfo' -- \
	env SR_LIBDIR="$T/incomplete" "$abi_here/abi_exports.sh"
expect "abi_load_bind_now catches the unresolved symbol" 1 'FAIL ibv_devinfo: loader error: .*ibv_query_gid_type' -- \
	env SR_LIBDIR="$T/incomplete" "$abi_here/abi_load_bind_now.sh"

# 6. A library that resolves to the system's copy is not ours.
sys_cm=$(/sbin/ldconfig -p 2>/dev/null | awk '$1 == "librdmacm.so.1" { print $NF; exit }')
if [ -n "$sys_cm" ]; then
	mkdir -p "$T/mixed"
	cp "$T/complete/libibverbs.so.1" "$T/mixed/"
	ln -s "$sys_cm" "$T/mixed/librdmacm.so.1"
	expect "abi_load_bind_now notices the system librdmacm" 1 'FAIL rping: librdmacm.so.1 loaded from .*not from' -- \
		env SR_LIBDIR="$T/mixed" "$abi_here/abi_load_bind_now.sh"
else
	echo "note: no system librdmacm.so.1; skipped the mixed-library case"
fi

[ $failures -eq 0 ] || fail "$failures self-test case(s) failed"
echo "PASS: the abi checks fail and pass when they should"
