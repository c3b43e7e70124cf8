#!/usr/bin/env bash
# With SOFTRDMA_MPA_REV=1 the library warns, once per process, that rev 1 exchanges no IRD/ORD
# (a peer whose application leaves them 0 refuses READs; docs/COMPATIBILITY.md), and the
# connection still works.
set -euo pipefail
out=$(SOFTRDMA_MPA_REV=1 SOFTRDMA_LOG_LEVEL=2 "$SR_TESTBIN/cm_basic" connect 2>&1) || {
	printf '%s\n' "$out"
	exit 1
}
n=$(printf '%s\n' "$out" | grep -c 'MPA rev 1 exchanges no IRD/ORD' || true)
if [ "$n" != 1 ]; then
	printf '%s\n' "$out"
	echo "expected the rev 1 warning once, saw it $n times" >&2
	exit 1
fi
