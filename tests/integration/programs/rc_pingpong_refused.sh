#!/usr/bin/env bash
# Unmodified ibv_rc_pingpong connects its QPs the InfiniBand way (QPN/PSN/GID swapped over a
# socket, then RTR/RTS by hand), which iWARP cannot: like kernel siw, ibv_modify_qp refuses
# RTS without a connection (EINVAL), so both ends fail at once. Before, RTS was taken, the
# first Send was accepted and never completed, and both ends hung in ibv_get_cq_event.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd ibv_rc_pingpong
sr_hosts lo4
port=$(sr_port)
# 60 s bounds a hang; a refusal takes milliseconds.
SR_TAIL=10 sr_server_client "$port" timeout 60 ibv_rc_pingpong -d sriw_lo -g 0 -p "$port" -- \
	timeout 60 ibv_rc_pingpong -d sriw_lo -g 0 -p "$port" 127.0.0.1
[ "$SR_CRC" -eq 124 ] || [ "$SR_SRC" -eq 124 ] && sr_fail "ibv_rc_pingpong hung"
[ "$SR_CRC" -ne 0 ] || sr_fail "the client succeeded"
cat "$SR_SLOG" "$SR_CLOG" | grep -q 'Failed to modify QP to RTS' ||
	sr_fail "no end was refused RTS"
sr_pass "ibv_rc_pingpong is refused RTS instead of hanging"
