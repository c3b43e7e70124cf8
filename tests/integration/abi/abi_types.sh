#!/usr/bin/env bash
# abi_types: the build-time type check of our exports (src/CMakeLists.txt, sr_abi_declared)
# holds. For each library: the file tools/abi-decl-tu generates from the export map compiles
# against the API header (every export declared); a map with one undeclared name does not;
# a definition of ibv_get_sysfs_path with the type softrdma once had (int (char *, size_t))
# and one of rdma_get_devices returning int do not compile under the force-included header,
# while the ones with rdma-core's types do. Needs a C compiler: first argument, else $CC.
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

CC=${1:-${CC:-cc}}
command -v "$CC" >/dev/null 2>&1 || skip "C compiler $CC not found"
abi_tmpdir
T=$ABI_TMP
S=$SR_SRCDIR/src
cc_check() { "$CC" -std=gnu11 -Wall -Werror -I"$S" -c -o "$T/out.o" "$@" 2>"$T/err"; }
failures=0
bad() { echo "FAIL: $*"; sed 's/^/    /' "$T/err" | head -n 5; failures=$((failures + 1)); }

check_lib() { # MAP HEADER GOOD-DEFINITION BAD-DEFINITION
	local map=$1 hdr=$2 name
	name=$(basename "$map" .map)
	sh "$SR_SRCDIR/tools/abi-decl-tu" "$map" "$hdr" "$T/$name.c" || fail "abi-decl-tu failed on $map"
	[ "$(grep -c '(const void \*)&' "$T/$name.c")" -gt 50 ] || fail "$T/$name.c names too few exports"
	cc_check "$T/$name.c" && echo "ok: every name in $name.map is declared" ||
		bad "$name.map has exports without a declaration"
	{ cat "$map"; printf 'SR_EXTRA_NODE { global: sr_abi_types_undeclared; };\n'; } >"$T/extra.map"
	sh "$SR_SRCDIR/tools/abi-decl-tu" "$T/extra.map" "$hdr" "$T/extra.c" || fail "abi-decl-tu failed"
	if cc_check "$T/extra.c"; then bad "an undeclared export in $name.map compiled"; else
		grep -q "sr_abi_types_undeclared" "$T/err" && echo "ok: an undeclared export is an error" ||
			bad "an undeclared export failed for another reason"
	fi
	printf '%s\n' "$3" >"$T/good.c"
	cc_check -include "$hdr" "$T/good.c" && echo "ok: rdma-core's type compiles" || bad "rdma-core's type rejected: $3"
	printf '%s\n' "$4" >"$T/bad.c"
	if cc_check -include "$hdr" "$T/bad.c"; then bad "a wrong type compiled: $4"; else
		grep -q "conflicting types" "$T/err" && echo "ok: a wrong type is a conflicting-types error" ||
			bad "a wrong type failed for another reason"
	fi
}

check_lib "$S/verbs/libibverbs.map" "$S/verbs/sr_verbs_api.h" \
	'const char *ibv_get_sysfs_path(void) { return "/sys"; }' \
	'int ibv_get_sysfs_path(char *buf, unsigned long size) { return buf && size ? 0 : -1; }'
check_lib "$S/cm/librdmacm.map" "$S/cm/sr_cm_api.h" \
	'struct ibv_context **rdma_get_devices(int *n) { if (n) *n = 0; return 0; }' \
	'int rdma_get_devices(int *n) { return n ? 0 : -1; }'
[ "$failures" -eq 0 ] || fail "$failures check(s) failed"
echo "PASS: exports are declared and checked against rdma-core's types"
