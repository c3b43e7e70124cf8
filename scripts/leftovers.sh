#!/usr/bin/env bash
# What test runs left behind (docs/ARCHITECTURE.md, "Tests leave nothing behind"):
#
#   leftovers.sh check RUN TMPDIR [STAGE]
#       The end-of-suite check of scripts/test: names every process, network namespace (with
#       the veths and nftables tables in it), temporary file and root-namespace sr* interface
#       or nftables table that run RUN (its SR_RUN tag) left, ends or removes them, and exits
#       1 if there was any. Only RUN's are judged: another suite running on the machine at the
#       same time has another tag. Processes: those whose environment holds SR_RUN=RUN, those
#       in a namespace of the run, and those running a program of the build directories in
#       SR_RUN_BUILDS (absolute paths; a program that cleared its environment). Namespaces:
#       sr-*-RUN-<PID> (tests/teardown.sh), and any a process of the run runs in. Files:
#       whatever is left under TMPDIR, the run's own temporary directory. Root-namespace
#       objects: those named sr* that were not in SR_ROOTNS_BEFORE (the output of
#       "leftovers.sh rootns" at the run's start; not looked at without it); no test creates
#       any, so one there is a test that created it in the wrong place.
#   leftovers.sh sweep
#       Ends and removes what earlier runs left whose owner is gone (scripts/test runs it
#       first): sr-*-<id> namespaces, processes tagged SR_TEST_ID=<id> or SR_RUN=<run>, and
#       sr-test.<id>.*/sr-run.<run>.* directories whose test and run are both gone (no process
#       has their PIDs). Leftovers of a running suite (even of a test it saw killed) are left
#       to that suite's own check. It cannot hide a leak of the run that follows it: it runs
#       before that run starts, and the check judges that run by its own tag.
#   leftovers.sh rootns
#       The sr* interfaces and nftables tables of the root network namespace, one a line.
# Tags and names: tests/teardown.sh.
set -uo pipefail
# Scanning environments must not find this script's own processes: run untagged.
if [ -n "${SR_RUN:-}${SR_TEST_ID:-}" ]; then
	exec env -u SR_RUN -u SR_TEST_ID "$0" "$@"
fi
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/teardown.sh"

rootns() {
	ip -o link show 2>/dev/null | awk -F': ' '$2 ~ /^sr/ {sub(/@.*/, "", $2); print "interface " $2}'
	nft list tables 2>/dev/null | awk '$3 ~ /^sr/ {print "nftables table " $2 " " $3}'
}

# Is PID $1 gone?
gone() { [ ! -e "/proc/$1" ]; }
# Is the owner of the name or tag $1 gone? It ends in an id (tests/teardown.sh): "...r<run
# PID>-<sandbox PID>", "...<sandbox PID>" or "r<run PID>". Something of a live run whose test
# was killed stays: that run's own check reports it.
stale() {
	if [[ "$1" =~ r([0-9]+)-([0-9]+)$ ]]; then
		gone "${BASH_REMATCH[1]}" && gone "${BASH_REMATCH[2]}"
	elif [[ "$1" =~ (^|[^0-9])([0-9]+)$ ]]; then
		gone "${BASH_REMATCH[2]}"
	else
		return 1
	fi
}

check() {
	local run=$1 tmp=$2 stage=${3:-} found=0 nss ns files new
	[[ "$run" =~ ^r[0-9]+$ ]] || { echo "leftovers.sh: bad run tag '$run'" >&2; exit 2; }
	run_pids() {
		sr_tagged_pids "SR_RUN=$run"
		# shellcheck disable=SC2012 # the targets of /proc/*/exe, one process a line
		[ -z "${SR_RUN_BUILDS:-}" ] || ls -l /proc/[0-9]*/exe 2>/dev/null |
			awk -v dirs="$SR_RUN_BUILDS" '
			BEGIN { n = split(dirs, b, " ") }
			{ d = $NF == "(deleted)"; t = $(NF - d); p = $(NF - 2 - d)
			  sub(/^\/proc\//, "", p); sub(/\/exe$/, "", p)
			  for (i = 1; i <= n; i++) if (index(t, b[i] "/") == 1) { print p; break } }'
		# shellcheck disable=SC2046 # one name a word
		sr_netns_pids $(sr_netns_matching "^sr-.*-$run-[0-9]+\$")
	}
	local procs p held
	procs=$(run_pids | sort -un | sr_alive | sr_describe)
	if [ -n "$procs" ]; then
		found=1
		echo "LEFTOVER processes of this run${stage:+ ($stage)}:"
		echo "$procs" | sed 's/^/  /'
	fi
	# a named namespace that one of them runs in is the run's too, whatever its name
	held=$(echo "$procs" | while read -r p _; do [ -n "$p" ] && ip netns identify "$p"; done |
		sort -u | grep . || true)
	sr_end_all run_pids
	nss=$( (sr_netns_matching "^sr-.*-$run-[0-9]+\$"; echo "$held") | sort -u | grep . || true)
	if [ -n "$nss" ]; then
		found=1
		echo "LEFTOVER network namespaces of this run${stage:+ ($stage)}:"
		for ns in $nss; do echo "  $ns $(sr_netns_holds "$ns")"; done
		# shellcheck disable=SC2086 # one name a word
		sr_netns_del $nss
	fi
	if [ -d "$tmp" ]; then
		files=$(cd "$tmp" && find . -mindepth 1 -maxdepth 3 | sed 's|^\./||' | head -50)
		if [ -n "$files" ]; then
			found=1
			echo "LEFTOVER temporary files of this run${stage:+ ($stage)} in $tmp:"
			echo "$files" | sed 's/^/  /'
			find "$tmp" -mindepth 1 -delete
		fi
	fi
	# only against a list from the run's start (a self-test's check gives none)
	new=
	[ -z "${SR_ROOTNS_BEFORE+set}" ] ||
		new=$(comm -13 <(echo "$SR_ROOTNS_BEFORE" | sort) <(rootns | sort) | grep . || true)
	if [ -n "$new" ]; then
		found=1
		echo "LEFTOVER in the root network namespace${stage:+ ($stage)} (new since the run began):"
		echo "$new" | sed 's/^/  /'
		# "interface NAME" / "nftables table FAMILY NAME"
		echo "$new" | while read -r kind a b c; do
			case $kind in
			interface) ip link del "$a" 2>/dev/null ;;
			nftables) nft delete table "$b" "$c" 2>/dev/null ;;
			esac
		done
	fi
	[ "$found" -eq 0 ] || { echo "FAIL: the suite left the above behind (now removed)"; return 1; }
	echo "== no leftovers${stage:+ after $stage}"
}

sweep() {
	local ns d o
	for ns in $(sr_netns_matching '^sr-.+-[0-9]+$'); do
		stale "$ns" || continue
		echo "sweep: namespace $ns (its test is gone) $(sr_netns_holds "$ns")"
		sr_end_all "sr_netns_pids $ns"
		sr_netns_del "$ns"
	done
	dead_pids() {
		local p v
		sr_tag_values SR_TEST_ID | while read -r p v; do stale "$v" && echo "$p"; done
		sr_tag_values SR_RUN | while read -r p v; do stale "$v" && echo "$p"; done
	}
	dead_pids | sort -un | sr_alive | sr_describe |
		sed 's/^/sweep: process (its test or run is gone) /'
	sr_end_all dead_pids
	for d in "${TMPDIR:-/tmp}"/sr-test.*.* "${TMPDIR:-/tmp}"/sr-run.r*.*; do
		[ -d "$d" ] || continue
		o=${d##*/}
		o=${o#sr-test.}
		o=${o#sr-run.}
		stale "${o%.*}" || continue
		echo "sweep: directory $d (its test or run is gone)"
		rm -rf "$d"
	done
	return 0
}

case "${1:-}" in
check) shift; [ $# -ge 2 ] || { echo "usage: leftovers.sh check RUN TMPDIR [STAGE]" >&2; exit 2; }; check "$@" ;;
sweep) sweep ;;
rootns) rootns ;;
*) echo "usage: leftovers.sh check RUN TMPDIR [STAGE] | sweep | rootns" >&2; exit 2 ;;
esac
