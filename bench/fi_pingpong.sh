#!/usr/bin/env bash
# libfabric's fi_pingpong through softrdma (verbs, verbs;ofi_rxm) next to libfabric's own tcp
# provider (tcp, tcp;ofi_rxm), in one run, across a veth between two namespaces (needs root;
# libfabric's verbs provider skips loopback). No FI_* settings. Prints a Markdown table for
# docs/PERFORMANCE.md: per provider and size, the figures of fi_pingpong's client line (its
# time per transfer and MB/sec).
#
#   sudo bench/fi_pingpong.sh [build-dir]
set -uo pipefail
BUILD=$(cd "${1:-build}" && pwd)
SR_LIBDIR=$BUILD/lib
. "$(dirname "$0")/../tests/integration/lib.sh"
for v in $(env | grep -o '^FI_[A-Za-z0-9_]*'); do unset "$v"; done
sr_hosts netns
echo "| provider | ep | size | iterations | usec/xfer | MB/sec |"
echo "| --- | --- | --- | --- | --- | --- |"
for pe in "verbs msg" "tcp msg" "verbs;ofi_rxm rdm" "tcp;ofi_rxm rdm"; do
	prov=${pe% *} ep=${pe##* }
	for si in "64 20000" "4096 10000" "65536 2000" "1048576 200"; do
		size=${si% *} it=${si#* }
		port=$((20000 + RANDOM % 20000))
		args=(-p "$prov" -e "$ep" -I "$it" -S "$size")
		lib=()
		# libfabric's tcp provider runs without our libraries; verbs through them
		[ "$prov" = "${prov#verbs}" ] && lib=(env -u LD_LIBRARY_PATH)
		"${SR_SRV[@]}" env LD_LIBRARY_PATH="$SR_LIBDIR" "${lib[@]}" \
			timeout 120 fi_pingpong "${args[@]}" -B "$port" >/dev/null 2>&1 &
		spid=$!
		sr_wait_listen "$port" "${SR_SRV[@]}"
		out=$("${SR_CLI[@]}" env LD_LIBRARY_PATH="$SR_LIBDIR" "${lib[@]}" \
			timeout 120 fi_pingpong "${args[@]}" -P "$port" "$SR_ADDR" 2>&1)
		wait "$spid"
		row=$(echo "$out" | grep -E '^[0-9]+[kmg]?[[:space:]]+[0-9]+[kmg]?[[:space:]]+=' | tail -1)
		# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
		read -r _ _ _ _ _ mbs usec _ <<<"$row"
		echo "| \`$prov\` | $ep | $size | $it | ${usec:-FAILED} | ${mbs:-FAILED} |"
	done
done
