#!/usr/bin/env bash
# The checker checked: wire_lib.sh's tshark assertions accept a hand-built, correct iWARP
# conversation (wire_synth, CRC on and off) and reject a bad CRC, a malformed FPDU, a missing
# RDMAP message, a TCP stream without the MPA handshake and FPDUs right behind a Read RTR. No softrdma code is involved.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wire_lib.sh"

wire_need_capture
SYNTH=${SR_TESTBIN:-}/wire_synth
[ -x "$SYNTH" ] || sr_fail "wire_synth not built ($SYNTH)"

# capture <name> <wire_synth options...>: one conversation in $WIRE_TMP/<name>.pcapng.
capture() {
	local name=$1 port file
	shift
	port=$(sr_port)
	file=$WIRE_TMP/$name.pcapng
	if ! wire_capture_start "$port" "$file"; then
		sr_skip "tshark cannot capture on lo"
	fi
	"$SYNTH" -p "$port" "$@" || sr_fail "step synth $name: wire_synth $* exited $?"
	wire_capture_stop "$file" || sr_fail "step capture $name: no capture file"
}

# expect_ok / expect_fail <what> <check> <args...>
expect_ok() {
	local what=$1 out
	shift
	out=$("$@") || sr_fail "$what: check $1 rejected a good capture: $out"
	echo "  $what: $out"
}
expect_fail() {
	local what=$1 out
	shift
	out=$("$@") && sr_fail "$what: check $1 accepted a bad capture: $out"
	echo "  $what: rejected as expected: $(echo "$out" | head -n 1)"
}

ALL=(Send ReadRequest ReadResponse Write)

echo "== good conversation, CRC on"
capture good_crc -c 1
good=$WIRE_TMP/good_crc.pcapng
expect_ok good_crc wire_check_handshake "$good"
expect_ok good_crc wire_check_fpdus "$good"
expect_ok good_crc wire_check_opcodes "$good" "${ALL[@]}"
expect_ok good_crc wire_check_clean "$good"
expect_ok good_crc wire_check_crc_on "$good"
expect_fail good_crc wire_check_crc_off "$good"
expect_fail good_crc wire_check_opcodes "$good" "${ALL[@]}" Terminate
n=$(wire_fpdu_count "$good")
[ "$n" -eq 10 ] || sr_fail "good_crc: expected 10 FPDUs decoded, tshark saw $n"
echo "  good_crc: 10 FPDUs decoded, as sent"

echo "== good conversation, CRC off"
capture good_nocrc -c 0
nocrc=$WIRE_TMP/good_nocrc.pcapng
expect_ok good_nocrc wire_check_handshake "$nocrc"
expect_ok good_nocrc wire_check_fpdus "$nocrc"
expect_ok good_nocrc wire_check_opcodes "$nocrc" "${ALL[@]}"
expect_ok good_nocrc wire_check_clean "$nocrc"
expect_ok good_nocrc wire_check_crc_off "$nocrc"
expect_fail good_nocrc wire_check_crc_on "$nocrc"

echo "== one FPDU with a corrupted CRC"
capture bad_crc -c 1 -b
badcrc=$WIRE_TMP/bad_crc.pcapng
expect_ok bad_crc wire_check_handshake "$badcrc"
expect_ok bad_crc wire_check_clean "$badcrc" # tshark 4.0 raises no expert item for a bad CRC
expect_fail bad_crc wire_check_crc_on "$badcrc"

echo "== one malformed FPDU (Read Request too short for its header)"
capture malformed -c 1 -m
mal=$WIRE_TMP/malformed.pcapng
expect_ok malformed wire_check_handshake "$mal"
expect_ok malformed wire_check_crc_on "$mal" # its CRC is right
expect_fail malformed wire_check_clean "$mal"

echo "== the Read RTR, then a wait for its Read Response"
capture rtr_held -c 1 -t held
held=$WIRE_TMP/rtr_held.pcapng
expect_ok rtr_held wire_check_rtr_hold "$held"
expect_ok rtr_held wire_check_clean "$held"
expect_fail good_crc wire_check_rtr_hold "$good" # no P2P at all

echo "== the Read RTR with the conversation right behind it"
capture rtr_unheld -c 1 -t unheld
expect_fail rtr_unheld wire_check_rtr_hold "$WIRE_TMP/rtr_unheld.pcapng"

echo "== FPDUs without the MPA handshake"
capture raw -c 1 -r
raw=$WIRE_TMP/raw.pcapng
expect_fail raw wire_check_handshake "$raw"
expect_fail raw wire_check_fpdus "$raw"
expect_fail raw wire_check_opcodes "$raw" Send

sr_pass "tshark assertions accept good iWARP captures and reject bad ones"
