# shellcheck shell=bash
# Sourced by the abi_* test scripts. Environment (set by sr_integration_test, or by hand):
#   SR_SRCDIR  repository root          (default: three levels above this file)
#   SR_LIBDIR  our built libraries      (default: $SR_SRCDIR/build/lib)
# Exit codes: 0 pass, 1 fail, 77 skipped (one line on stdout says why).

abi_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SR_SRCDIR=${SR_SRCDIR:-$(cd "$abi_here/../../.." && pwd)}
SR_LIBDIR=${SR_LIBDIR:-$SR_SRCDIR/build/lib}
# shellcheck disable=SC2034 # used by the scripts that source this file
ABI_REPORT="$SR_SRCDIR/tools/abi-report"
OUR_LIBS=(libibverbs.so.1 librdmacm.so.1)

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

need_tool() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || skip "$t not found (apt-get install ${ABI_TOOL_PKG[$t]:-$t})"
	done
}
declare -A ABI_TOOL_PKG=([readelf]=binutils [timeout]=coreutils [dpkg]=dpkg [awk]=mawk)

# Our two libraries must have been built; a missing one is a failure, not a skip.
need_our_libs() {
	local l
	for l in "${OUR_LIBS[@]}"; do
		[ -e "$SR_LIBDIR/$l" ] || fail "$SR_LIBDIR/$l does not exist (build the project first)"
	done
}

abi_tmpdir() {
	ABI_TMP=$(mktemp -d "${TMPDIR:-/tmp}/sr-abi.XXXXXX") || fail "mktemp failed"
	trap 'rm -rf "$ABI_TMP"' EXIT
}
