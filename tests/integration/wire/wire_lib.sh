#!/usr/bin/env bash
# tshark capture and decode assertions for iWARP conversations (docs/WIRE.md §5, tshark 4.0.17).
# Sourced after ../lib.sh. Every wire_check_* prints one "ok:" line and returns 0, or prints
# the reason and returns 1; callers turn a 1 into sr_fail with the name of their step.
# wire_tshark_selftest.sh runs each check on hand-built good and bad captures.

# Decode options used for every read of a capture: MPA is a TCP heuristic, so let heuristics
# win over port dissectors, and keep RPCoRDMA/SMB-Direct from calling Send payloads malformed.
WIRE_DECODE=(-o tcp.try_heuristic_first:TRUE
	--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)

WIRE_TSHARK_PID=
# in the test's TMPDIR (removed with it by the sandbox), or in /tmp with WIRE_KEEP set
WIRE_TMP=$(mktemp -d "$([ -n "${WIRE_KEEP:-}" ] && echo /tmp || echo "${TMPDIR:-/tmp}")/sr-wire.XXXXXX")

wire_cleanup() {
	if [ -n "$WIRE_TSHARK_PID" ]; then
		kill -INT "$WIRE_TSHARK_PID" 2>/dev/null
		sleep 0.5
		kill -KILL "$WIRE_TSHARK_PID" 2>/dev/null
	fi
	[ -n "${WIRE_KEEP:-}" ] || rm -rf "$WIRE_TMP"
}
trap wire_cleanup EXIT

# Skip (77) unless we are root and have tshark.
wire_need_capture() {
	[ "$(id -u)" -eq 0 ] || sr_skip "needs root to capture on lo with tshark"
	sr_need_cmd tshark ss
}

# wire_capture_start <port> <file.pcapng>: capture tcp port <port> on lo until
# wire_capture_stop. Returns 1 (with tshark's messages) if tshark cannot capture.
wire_capture_start() {
	local port=$1 file=$2
	rm -f "$file"
	# -a duration: a hard stop even if nobody stops it (the test timeout is 180 s).
	tshark -i lo -f "tcp port $port" -a duration:170 -w "$file" \
		>"$file.out" 2>"$file.err" &
	WIRE_TSHARK_PID=$!
	for _ in $(seq 100); do
		if grep -q "Capturing on" "$file.err" 2>/dev/null; then
			sleep 0.3 # the filter is attached before the message, but be generous
			return 0
		fi
		if ! kill -0 "$WIRE_TSHARK_PID" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	echo "tshark did not start capturing on lo:"
	sed 's/^/  tshark: /' "$file.err"
	kill -KILL "$WIRE_TSHARK_PID" 2>/dev/null
	wait "$WIRE_TSHARK_PID" 2>/dev/null
	WIRE_TSHARK_PID=
	return 1
}

# wire_capture_stop <file.pcapng>: stop the capture (SIGINT, then SIGKILL after 10 s) and
# check that a capture file is there.
wire_capture_stop() {
	local file=$1
	[ -n "$WIRE_TSHARK_PID" ] || return 1
	sleep 0.5 # let the last packets through the ring buffer
	kill -INT "$WIRE_TSHARK_PID" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$WIRE_TSHARK_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$WIRE_TSHARK_PID" 2>/dev/null
	wait "$WIRE_TSHARK_PID" 2>/dev/null
	WIRE_TSHARK_PID=
	if [ ! -s "$file" ]; then
		echo "no capture file $file"
		return 1
	fi
	return 0
}

# tshark on a capture with the decode options; tshark's "running as root" chatter dropped.
wire_tshark() {
	local file=$1
	shift
	tshark -r "$file" "${WIRE_DECODE[@]}" "$@" 2>/dev/null
}

# Decode a capture once into <file>.fields (one line per frame, '|'-separated, several
# occurrences space-separated) and <file>.mpa (the -O iwarp_mpa text with CRC verdicts).
# Columns: 1 frame 2 key.req 3 key.rep 4 rej_flag 5 crc_flag 6 ulpdulength 7 ddp.dv
#          8 rdma.opcode 9 _ws.malformed 10 _ws.expert.severity 11 mpa.crc (CRC off)
wire_decode() {
	local f=$1
	if [ ! -s "$f.fields" ]; then
		wire_tshark "$f" -T fields -E occurrence=a -E aggregator=' ' -E separator='|' \
			-e frame.number -e iwarp_mpa.key.req -e iwarp_mpa.key.rep \
			-e iwarp_mpa.rej_flag -e iwarp_mpa.crc_flag -e iwarp_mpa.ulpdulength \
			-e iwarp_ddp.dv -e iwarp_rdma.opcode -e _ws.malformed -e _ws.expert.severity \
			-e iwarp_mpa.crc >"$f.fields"
	fi
	if [ ! -s "$f.mpa" ]; then
		wire_tshark "$f" -O iwarp_mpa >"$f.mpa"
	fi
}

# wire_awk <file> <awk program>: run awk over the decoded fields.
wire_awk() {
	wire_decode "$1"
	awk -F'|' "$2" "$1.fields"
}

# Number of frames whose column <col> is not empty.
wire_count_col() {
	wire_awk "$1" "\$$2 != \"\" { n++ } END { print n + 0 }"
}

# Number of FPDUs tshark decoded (a frame can hold several).
wire_fpdu_count() {
	wire_awk "$1" '{ n += split($6, a, " ") } END { print n + 0 }'
}

# awk: hex("0x1f") or hex("1f") is 31 (tshark prints integer fields in hex).
WIRE_AWK_HEX='
	function hex(s,   v, i, c) {
		v = 0; sub(/^0x/, "", s)
		for (i = 1; i <= length(s); i++) {
			c = index("0123456789abcdef", tolower(substr(s, i, 1)))
			v = v * 16 + c - 1
		}
		return v
	}'

# Number of frames holding at least one RDMAP message with opcode <n> (tshark prints 0x03).
wire_opcode_frames() {
	wire_decode "$1"
	awk -F'|' -v "op=$2" "$WIRE_AWK_HEX"'
		{ k = split($8, a, " "); for (i = 1; i <= k; i++)
			if (hex(a[i]) == op) { n++; break } }
		END { print n + 0 }' "$1.fields"
}

# Both MPA frames, the Reply not rejecting.
wire_check_handshake() {
	local f=$1 req rep rej
	req=$(wire_count_col "$f" 2)
	rep=$(wire_count_col "$f" 3)
	rej=$(wire_awk "$f" '$3 != "" && $4 == 1 { n++ } END { print n + 0 }')
	if [ "$req" -lt 1 ] || [ "$rep" -lt 1 ]; then
		echo "MPA handshake not decoded: $req Request frame(s), $rep Reply frame(s)"
		return 1
	fi
	if [ "$rej" -ne 0 ]; then
		echo "MPA Reply has the Reject flag set"
		return 1
	fi
	echo "ok: MPA Request ($req) and Reply ($rep) frames"
}

# FPDUs carrying DDP headers (DDP version 1).
wire_check_fpdus() {
	local f=$1 frames n
	frames=$(wire_awk "$f" '$7 ~ /1/ { n++ } END { print n + 0 }')
	n=$(wire_fpdu_count "$f")
	if [ "$frames" -lt 1 ] || [ "$n" -lt 1 ]; then
		echo "no FPDUs with DDP headers decoded ($frames frames, $n FPDUs)"
		return 1
	fi
	echo "ok: $n FPDUs with DDP headers in $frames frames"
}

# wire_check_opcodes <file> <name>...: every named RDMAP message appears at least once.
wire_check_opcodes() {
	local f=$1 name op n missing="" seen=""
	shift
	for name in "$@"; do
		case $name in
		Write) op=0 ;;
		ReadRequest) op=1 ;;
		ReadResponse) op=2 ;;
		Send) op=3 ;;
		Terminate) op=7 ;;
		*) echo "wire_check_opcodes: unknown message $name"; return 1 ;;
		esac
		n=$(wire_opcode_frames "$f" "$op")
		if [ "$n" -lt 1 ]; then
			missing+=" $name(opcode $op)"
		else
			seen+=" $name:$n"
		fi
	done
	if [ -n "$missing" ]; then
		echo "RDMAP messages missing from the capture:$missing (frames seen:${seen:- none})"
		return 1
	fi
	echo "ok: RDMAP messages present (frames):$seen"
}

# No malformed frames, no expert info of severity Error (PI_ERROR = 0x00800000; tshark 4.0
# files a Malformed Packet as an Error, but raises no expert item for a bad MPA CRC: that is
# wire_check_crc_on's job).
wire_check_clean() {
	local f=$1 mal err
	mal=$(wire_count_col "$f" 9)
	err=$(wire_awk "$f" '{ k = split($10, a, " "); for (i = 1; i <= k; i++)
		if (a[i] + 0 >= 8388608) { n++; break } } END { print n + 0 }')
	if [ "$mal" -ne 0 ] || [ "$err" -ne 0 ]; then
		echo "$mal malformed frame(s), $err frame(s) with expert errors:"
		wire_tshark "$f" -Y '_ws.malformed || _ws.expert.severity == error' | head -n 10 |
			sed 's/^/  /'
		return 1
	fi
	echo "ok: no malformed frames, no expert errors"
}

# MPA frames: print the crc_flag of the Request and of the Reply ("<req> <rep>").
wire_crc_flags() {
	local q p
	q=$(wire_awk "$1" '$2 != "" { print $5; exit }')
	p=$(wire_awk "$1" '$3 != "" { print $5; exit }')
	echo "${q:-?} ${p:-?}"
}

# CRC asked for by both sides, and tshark's verdict on every FPDU is "Good CRC32".
wire_check_crc_on() {
	local f=$1 flags n good bad
	flags=$(wire_crc_flags "$f")
	if [ "$flags" != "1 1" ]; then
		echo "MPA crc_flag (Request Reply) is '$flags', expected '1 1'"
		return 1
	fi
	n=$(wire_fpdu_count "$f")
	good=$(grep -c 'Good CRC32' "$f.mpa")
	bad=$(grep -c 'Bad CRC32' "$f.mpa")
	if [ "$n" -lt 1 ] || [ "$bad" -ne 0 ] || [ "$good" -ne "$n" ]; then
		echo "CRC verdicts: $n FPDUs, $good Good CRC32, $bad Bad CRC32"
		awk '/^Frame [0-9]+:/ { fr = $2 } /Bad CRC32/ { print "  frame " fr ": " $0 }' \
			"$f.mpa" | head -n 10
		return 1
	fi
	echo "ok: crc_flag 1 in Request and Reply; all $n FPDUs Good CRC32"
}

# CRC asked for by neither side: crc_flag 0 in both frames, so tshark checks no CRC.
wire_check_crc_off() {
	local f=$1 flags n checked nonzero
	flags=$(wire_crc_flags "$f")
	if [ "$flags" != "0 0" ]; then
		echo "MPA crc_flag (Request Reply) is '$flags', expected '0 0'"
		return 1
	fi
	n=$(wire_fpdu_count "$f")
	checked=$(grep -c 'CRC check:' "$f.mpa")
	if [ "$checked" -ne 0 ]; then
		echo "crc_flag is 0 but tshark checked $checked CRCs"
		return 1
	fi
	# Informational: siw sends zeros in the unused CRC slot (docs/WIRE.md §1.2).
	nonzero=$(wire_awk "$f" '{ k = split($11, a, " "); for (i = 1; i <= k; i++)
		if (a[i] != "0x00000000") n++ } END { print n + 0 }')
	echo "ok: crc_flag 0 in Request and Reply; $n FPDUs unchecked ($nonzero with a non-zero CRC slot)"
}

# wire_check_rtr_hold <file>: the initiator's P2P Request offers only the zero-length Read
# RTR, its first FPDU is that RTR alone, and its next FPDU goes out only after the responder's
# zero-length Read Response, or (the peer not answering) no sooner than the 200 ms fallback.
wire_check_rtr_hold() {
	local f=$1
	wire_tshark "$f" -T fields -E occurrence=a -E aggregator=' ' -E separator='|' \
		-e frame.number -e frame.time_relative -e tcp.srcport -e iwarp_mpa.key.req \
		-e iwarp_mpa.privatedata -e iwarp_rdma.opcode -e iwarp_mpa.ulpdulength \
		>"$f.rtr" || { echo "tshark could not read $f"; return 1; }
	awk -F'|' "$WIRE_AWK_HEX"'
		$4 != "" && ini == "" {
			ini = $3; pd = $5; gsub(/:/, "", pd)
			ird = hex(substr(pd, 1, 4)); ord = hex(substr(pd, 5, 4))
			if (int(ird / 32768) % 2 != 1) { print "the MPA Request does not ask for P2P"; bad = 1; exit }
			if (int(ird / 16384) % 2 || int(ord / 32768) % 2 || int(ord / 16384) % 2 != 1) {
				printf "the MPA Request offers RTR forms other than Read alone (IRD word 0x%04x, ORD word 0x%04x)\n", ird, ord
				bad = 1; exit
			}
			next
		}
		ini == "" || $6 == "" { next }
		$3 == ini && rtr == "" {
			rtr = $1; trtr = $2
			if ($6 != "0x01" || $7 != "46") {
				printf "the first FPDU (frame %s) is opcode %s, ULPDU %s bytes: not a zero-length Read RTR alone\n", $1, $6, $7
				bad = 1; exit
			}
			next
		}
		$3 != ini && resp == "" && rtr != "" {
			k = split($6, op, " "); split($7, ul, " ")
			for (i = 1; i <= k; i++)
				if (op[i] == "0x02" && ul[i] == "14") { resp = $1; tresp = $2 }
			next
		}
		$3 == ini && rtr != "" { nxt = $1; tnxt = $2; exit }
		END {
			if (bad) exit 1
			if (rtr == "") { print "no RTR from the initiator"; exit 1 }
			if (nxt == "") { print "nothing followed the RTR"; exit 1 }
			gap = (tnxt - trtr) * 1000
			if (resp != "") {
				printf "ok: Request offers the Read RTR alone; RTR (frame %s) answered (frame %s) before the next FPDU (frame %s, %.1f ms after the RTR)\n", rtr, resp, nxt, gap
				exit 0
			}
			if (gap >= 190) {
				printf "ok: Request offers the Read RTR alone; no answer, next FPDU (frame %s) after the fallback, %.1f ms after the RTR\n", nxt, gap
				exit 0
			}
			printf "the initiator sent frame %s %.1f ms after its RTR (frame %s) without waiting for a Read Response\n", nxt, gap, rtr
			exit 1
		}' "$f.rtr"
}
