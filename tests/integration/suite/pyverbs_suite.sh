#!/usr/bin/env bash
# pyverbs_suite: rdma-core's own Python test suite (Debian's python3-pyverbs ships it in
# /usr/share/doc/rdma-core/tests) run unmodified against build/lib, on a soft iWARP device
# over a veth pair in a namespace of its own. The suite finds a device's IP address through
# /sys/class/infiniband/<dev>/device/net/<ifname>; a private mount namespace gives it that
# tree for our device (nothing else in the suite or our libraries reads /sys/class).
# Passes when nothing fails, errors or hangs and every skip reason is one of the expected
# ones below (features an iWARP device lacks; counted in docs/COMPATIBILITY.md). --port 1
# --gid 0: like siw, our GID holds the MAC in its first bytes, which the suite takes for an
# unset GID when it picks one itself.
# In a sanitizer build the runtime is preloaded (SR_PRELOAD), as for every uninstrumented
# program we run, and Python's own allocations are not reported as leaks.
# Usage: pyverbs_suite.sh [build/lib]; exit 77 = skipped.
set -u
here=$(cd "$(dirname "$0")" && pwd)
LIB=${1:-${SR_LIBDIR:-$here/../../../build/lib}}
SUITE=/usr/share/doc/rdma-core/tests
PY=/usr/bin/python3
BOUND=${SR_PYVERBS_TIMEOUT:-240} # seconds for the whole suite (it takes a few)

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$SUITE/run_tests.py" ] || skip "rdma-core's tests not installed (apt-get install python3-pyverbs)"
"$PY" -c 'import pyverbs' 2>/dev/null || skip "pyverbs not importable by $PY"
[ "$(id -u)" -eq 0 ] || skip "needs root (network and mount namespaces)"
command -v unshare >/dev/null || skip "unshare not found"
[ -e "$LIB/libibverbs.so.1" ] || fail "$LIB/libibverbs.so.1 missing (build first)"
LIB=$(cd "$LIB" && pwd)

T=$(mktemp -d "${TMPDIR:-/tmp}/sr-pyverbs.XXXXXX") || fail "mktemp"
NS=sr-pv-${SR_TEST_ID:-$$}
cleanup() { ip netns del "$NS" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
cp -r "$SUITE" "$T/tests" && gunzip -f "$T"/tests/*.gz || fail "cannot copy the suite"

ip netns add "$NS" || skip "cannot create a network namespace"
ip -n "$NS" link set lo up
ip -n "$NS" link add pv0 type veth peer name pv1 || skip "no veth support"
ip -n "$NS" addr add 10.231.0.1/24 dev pv0
ip -n "$NS" addr add 10.231.0.2/24 dev pv1
ip -n "$NS" link set pv0 up
ip -n "$NS" link set pv1 up
DEV=sriw_pv0

# shellcheck disable=SC2016 # expanded by the inner shell
timeout -k 10 "$BOUND" ip netns exec "$NS" unshare -m sh -c '
	mount -t tmpfs sr-sysfs-view /sys/class &&
	mkdir -p /sys/class/infiniband/$1/device/net/pv0 &&
	cd "$2" && exec env LD_LIBRARY_PATH="$3" ${5:+LD_PRELOAD="$5"} \
		ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
		"$4" tests/run_tests.py -v --dev "$1" --port 1 --gid 0 ${SR_PYVERBS_ONLY:-}' \
	sh "$DEV" "$T" "$LIB" "$PY" "${SR_PRELOAD:-}" >"$T/out" 2>&1
rc=$?
[ $rc -eq 124 ] || [ $rc -eq 137 ] && { tail -n 30 "$T/out"; fail "the suite did not finish within ${BOUND}s"; }

ran=$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' "$T/out")
[ -n "$ran" ] && [ "$ran" -gt "${SR_PYVERBS_MIN:-200}" ] || { tail -n 30 "$T/out"; fail "the suite did not run (rc $rc)"; }
# Errors from what an iWARP device lacks, which the suite reports as errors rather than
# skips (it has no iWARP case); each is the exact refusal kernel siw gives:
#  - RTS refused, EINVAL: the suite's RC traffic (RCResources.to_rts) moves two bare QPs
#    through the InfiniBand connection model; an iWARP QP needs an rdma_cm connection.
#  - rdma_create_id(RDMA_PS_UDP) refused, EOPNOTSUPP (no UD on iWARP): reported by the
#    suite's forked players ("Player ... got: ...") before the test's ERROR line.
expected_err='Failed to modify QP state to RTS. Errno: 22, Invalid argument'
expected_player='Player (active|passive) got: Failed to create CM ID. Errno: 95, Operation not supported'
awk -v pat="$expected_err" -v ppat="$expected_player" '
	match($0, /\(tests\.[A-Za-z0-9_.]+\) \.\.\. /) { cur = substr($0, RSTART, RLENGTH - 5) }
	$0 ~ ppat && cur != "" { player[cur] = 1 }
	/^(FAIL|ERROR): / {
		if (name != "") print name "\t" (hit ? "expected" : "bad")
		name = $0; hit = 0
		if (match($0, /\(tests\.[A-Za-z0-9_.]+\)/) && (substr($0, RSTART, RLENGTH) in player)) hit = 1
		next
	}
	name != "" && $0 ~ pat { hit = 1 }
	/^Ran [0-9]+ tests/ { if (name != "") print name "\t" (hit ? "expected" : "bad"); name = "" }
' "$T/out" >"$T/errs"
awk -F '\t' '$2 == "bad" { print $1 }' "$T/errs" >"$T/bad"
awk -F '\t' '$2 == "expected" { print $1 }' "$T/errs" >"$T/expected"
# Skip reasons, one per line, with counts.
grep -oE "skipped ['\"].*['\"]$" "$T/out" | sed -E "s/^skipped ['\"]//; s/['\"]$//" |
	sort | uniq -c | sort -rn >"$T/skips"
# What an iWARP device (or this machine) lacks; anything else is a finding.
expected='^(Device memory is not supported|Allocating dmabuf is not supported by .*|Create (UD|UC|Raw Packet) QP (with|without)( extended)? attrs is not supported|Can not run the test over non (MLX5|EFA) device|Could not open mlx5 context .*|cuda-python .* must be installed to run CUDA tests|PCI device must be passed by the user|Query device real time is not supported|Create Extended CQ is not supported|There are no huge pages of size 2M allocated|Create AH is not supported|All gid indices populated, cannot check bad flow|.*(is|are) not supported.*|.*UD.*|.*[Aa]tomic.*|.*[Mm]emory [Ww]indow.*|.*ODP.*|.*[Pp]arent [Dd]omain.*|.*XRC.*|.*SRQ.*[Tt]ag.*|.*RSS.*|.*[Mm]ulticast.*)$'
unexpected=$(awk '{ $1 = ""; sub(/^ /, ""); print }' "$T/skips" | grep -vE "$expected")
echo "Skip reasons (count reason):"
cat "$T/skips"
ok=$(grep -cE '\.\.\. ok$' "$T/out")
echo "ran $ran: $ok passed, $(grep -c '^FAIL:' "$T/bad") failed, $(grep -c '^ERROR:' "$T/bad") errors," \
	"$(wc -l <"$T/expected") errors for what iWARP lacks:"
sed 's/^/  /' "$T/expected"
if [ -s "$T/bad" ] || [ -n "$unexpected" ]; then
	cat "$T/bad"
	[ -n "$unexpected" ] && printf 'unexpected skip reason: %s\n' "$unexpected"
	grep -E -A25 '^(FAIL|ERROR):' "$T/out" | head -n 200
	fail "rdma-core's suite found problems"
fi
echo "PASS: rdma-core's suite: no failure, error or hang; only expected skips"
