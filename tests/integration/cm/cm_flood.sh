#!/usr/bin/env bash
# Half-open connection floods against a listener (cm_flood.c), in a fresh network namespace
# so the fixed port and the 127.0.0.x sources meet nobody else. usage: cm_flood.sh flood|emfile
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ip ss
sr_need_root
T="$SR_TESTBIN/cm_flood"
[ -x "$T" ] || sr_fail "no $T"
ns=$(sr_netns_add flood)
ip -n "$ns" link set lo up
sr_in_ns "$ns" "$T" "$1" || sr_fail "cm_flood $1"
sr_pass "listener under a half-open flood: $1"
