#!/usr/bin/env bash
# Unmodified rping over softrdma on 127.0.0.1, captured with tshark and decoded: MPA Request
# and Reply, FPDUs with DDP headers, RDMAP Send / Read Request / Read Response / Write, no
# malformed frames or expert errors; with SOFTRDMA_MPA_CRC=1 on both sides every FPDU has a
# good CRC32c, with SOFTRDMA_MPA_CRC=0 on both sides the CRC flag is 0 in both MPA frames.
# Every failure names its step: capture, rping server, rping client, decode.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/wire_lib.sh"

wire_need_capture
sr_need_cmd rping
[ -e "$SR_LIBDIR/librdmacm.so.1" ] || sr_fail "no $SR_LIBDIR/librdmacm.so.1 (build first)"

ITER=10
SIZE=64

# show_logs <dir>: the two rping logs, indented.
show_logs() {
	local l
	for l in "$1"/server.log "$1"/client.log; do
		[ -s "$l" ] || continue
		echo "  --- $(basename "$l"):"
		head -n 40 "$l" | sed 's/^/  | /'
	done
}

# run_case <crc 0|1>
run_case() {
	local crc=$1 port dir file spid cli_rc src crc_check
	dir=$WIRE_TMP/crc$crc
	mkdir -p "$dir"
	file=$dir/rping.pcapng
	port=$(sr_port)
	echo "== SOFTRDMA_MPA_CRC=$crc on both sides, port $port"

	if ! wire_capture_start "$port" "$file"; then
		sr_skip "tshark cannot capture on lo"
	fi

	# Server first; wait until its rdma_cm listener is a TCP listener on the port.
	SOFTRDMA_MPA_CRC=$crc sr_run timeout -k 5 60 \
		rping -s -a 127.0.0.1 -p "$port" -V -C "$ITER" -S "$SIZE" >"$dir/server.log" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		[ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] && break
		if ! kill -0 "$spid" 2>/dev/null; then
			wait "$spid"
			src=$?
			wire_capture_stop "$file" >/dev/null
			show_logs "$dir"
			sr_fail "step rping server (crc=$crc): exited $src before listening on 127.0.0.1:$port"
		fi
		sleep 0.1
	done
	if [ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
		sr_stop "$spid"
		wire_capture_stop "$file" >/dev/null
		show_logs "$dir"
		sr_fail "step rping server (crc=$crc): not listening on 127.0.0.1:$port after 10 s"
	fi

	SOFTRDMA_MPA_CRC=$crc sr_run timeout -k 5 60 \
		rping -c -a 127.0.0.1 -p "$port" -V -C "$ITER" -S "$SIZE" >"$dir/client.log" 2>&1
	cli_rc=$?
	# The server exits when its one client disconnects; give it a few seconds.
	for _ in $(seq 100); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	sr_stop "$spid"
	wait "$spid"
	src=$?
	wire_capture_stop "$file" || sr_fail "step capture (crc=$crc): tshark wrote no capture"

	if [ "$cli_rc" -ne 0 ]; then
		show_logs "$dir"
		sr_fail "step rping client (crc=$crc): exited $cli_rc$([ "$cli_rc" -eq 124 ] && echo ' (timeout 60 s)') — RC connection, SEND/READ/WRITE or verify failed"
	fi
	if [ "$src" -ne 0 ]; then
		show_logs "$dir"
		sr_fail "step rping server (crc=$crc): exited $src$([ "$src" -eq 143 ] && echo ' (killed: did not exit after the client finished)')"
	fi
	echo "  rping client and server exited 0 ($ITER iterations, $SIZE bytes, -V)"

	local out step
	if [ "$crc" -eq 1 ]; then crc_check=wire_check_crc_on; else crc_check=wire_check_crc_off; fi
	for step in wire_check_handshake wire_check_fpdus \
		"wire_check_opcodes Send ReadRequest ReadResponse Write" wire_check_clean "$crc_check" \
		wire_check_rtr_hold; do
		# shellcheck disable=SC2086 # step carries its arguments
		set -- $step
		out=$("$1" "$file" "${@:2}") || {
			# shellcheck disable=SC2034 # read by wire_cleanup (wire_lib.sh)
			WIRE_KEEP=1
			sr_fail "step decode (crc=$crc) $1: $out [capture kept: $file]"
		}
		echo "  $out"
	done
}

run_case 1
run_case 0
sr_pass "rping over softrdma decodes as clean iWARP with MPA CRC on and off"
