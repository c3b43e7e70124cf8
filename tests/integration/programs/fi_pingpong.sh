#!/usr/bin/env bash
# Debian's libfabric (fi_pingpong from libfabric-bin) through our libraries, as a new user runs
# it: no FI_* settings (but see FI_OFI_RXM_USE_SRX below), server and client in two namespaces
# joined by a veth (a non-loopback address: libfabric's verbs provider skips loopback). Each size runs
# with data checks (-c); both sides must exit 0 and report all transfers acknowledged.
# usage: fi_pingpong.sh PROVIDER EP-TYPE SIZE...   (PROVIDER: '+' for ';', e.g. verbs+ofi_rxm)
. "$(dirname "$0")/../lib.sh"
sr_need_cmd fi_pingpong
prov=${1//+/;} ep=$2
shift 2
sr_hosts netns
# Whatever the caller's environment holds, libfabric sees none of its variables.
for v in $(env | grep -o '^FI_[A-Za-z0-9_]*'); do unset "$v"; done
# With one exception: Debian's libfabric 1.17 ofi_rxm sometimes dies of SIGSEGV inside
# libfabric.so.1 while fi_pingpong closes its objects after the run (results printed, no frame
# of ours on the stack; about 1 run in 10 under load here): rxm's exit crash, fixed upstream
# but not in a 1.17 release. With rxm's shared receive context it did not happen in 15 runs,
# so the rdm test sets FI_OFI_RXM_USE_SRX=1 (rxm's receives then go to our SRQ).
[[ $prov == *ofi_rxm* ]] && export FI_OFI_RXM_USE_SRX=1
for size in "$@"; do
	port=$(sr_port)
	sr_server_client "$port" timeout 120 fi_pingpong -p "$prov" -e "$ep" -I 100 -S "$size" -c \
		-B "$port" -- timeout 120 fi_pingpong -p "$prov" -e "$ep" -I 100 -S "$size" -c \
		-P "$port" "$SR_ADDR"
	[ "$SR_CRC" -eq 0 ] || sr_fail "fi_pingpong -p '$prov' -e $ep -S $size: client exited $SR_CRC"
	[ "$SR_SRC" -eq 0 ] || sr_fail "fi_pingpong -p '$prov' -e $ep -S $size: server exited $SR_SRC"
	# the result row: bytes, #sent, #ack; every one of the 100 sent must be acknowledged
	for log in "$SR_SLOG" "$SR_CLOG"; do
		grep -Eq '^[0-9]+k?[[:space:]]+100[[:space:]]+=100[[:space:]]' "$log" ||
			sr_fail "fi_pingpong -S $size: no result row with 100 acknowledged in $(cat "$log")"
	done
done
sr_pass "fi_pingpong -p '$prov' -e $ep over $SR_ADDR, sizes $*"
