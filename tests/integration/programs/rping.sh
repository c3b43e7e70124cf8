#!/usr/bin/env bash
# Unmodified rping server and client through our libraries exchange verified data.
# usage: rping.sh lo4|lo6|netns|own [extra rping args for both sides...]
. "$(dirname "$0")/../lib.sh"
sr_need_cmd rping
sr_hosts "$1"
shift
port=$(sr_port)
sr_server_client "$port" timeout 120 rping -s -a "$SR_ADDR" -p "$port" "$@" -- \
	timeout 120 rping -c -a "$SR_ADDR" -p "$port" "$@"
[ "$SR_CRC" -eq 0 ] || sr_fail "rping client exited $SR_CRC"
[ "$SR_SRC" -eq 0 ] || sr_fail "rping server exited $SR_SRC"
grep -qi 'error\|fail' "$SR_CLOG" && sr_fail "client reported an error"
sr_pass "rping over $SR_ADDR $*"
