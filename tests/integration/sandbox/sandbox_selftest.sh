#!/usr/bin/env bash
# tests/sandbox.sh and scripts/leftovers.sh against a test that leaves everything behind the
# way the vanish cases of fault.sh once did (issue 22): a process in a namespace whose
# wrapper was killed (re-parented to init), one that ignores SIGTERM, one in a session of its
# own, a namespace and a temporary file.
#   ends_leftovers         the test exits 0: the sandbox ends and removes all of it
#   ends_on_sigterm        the sandbox gets SIGTERM while the test waits: the same, status 143
#   check_names_leftovers  leftovers.sh check names a run's leftovers, removes them, fails
. "$(dirname "$0")/../lib.sh"
sr_need_root
sr_need_cmd ip setsid pgrep
SANDBOX=$SR_SRCDIR/tests/sandbox.sh
out=$(mktemp -d)

# The leaky test: its tag, TMPDIR and the PIDs it leaves go to $out/ids; READY in $out/ready.
# With "hang", it then waits in the foreground (a command the shell cannot be interrupted in).
leaky() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	OUT=$out bash -c '
		ns=sr-self-$SR_TEST_ID
		ip netns add "$ns" || exit 1
		( ip netns exec "$ns" sleep 1000; true ) &
		wrapper=$!
		( trap "" TERM; exec sleep 1001 ) &
		deaf=$!
		setsid sleep 1002 &
		alone=$!
		mktemp >/dev/null
		for _ in $(seq 400); do [ -n "$(ip netns pids "$ns")" ] && break; sleep 0.05; done
		inns=$(ip netns pids "$ns")
		kill "$wrapper"; wait "$wrapper"
		echo "$SR_TEST_ID $TMPDIR $inns $deaf $alone" >"$OUT/ids"
		touch "$OUT/ready"
		[ "${1:-}" = hang ] && sleep 1003
		exit 0' leaky "$@"
}

# Fails unless nothing of the leaky test in $out/ids is left.
nothing_left() {
	local id dir pids p
	read -r id dir pids <"$out/ids" || sr_fail "the leaky test did not start"
	for p in $pids; do
		[ -n "$(echo "$p" | sr_alive)" ] && sr_fail "process $p of the test still runs: $(echo "$p" | sr_describe)"
	done
	[ -z "$(env -u SR_TEST_ID bash -c ". $SR_SRCDIR/tests/teardown.sh; sr_tagged_pids SR_TEST_ID=$id" | sr_alive)" ] ||
		sr_fail "processes tagged SR_TEST_ID=$id still run"
	[ -z "$(sr_netns_matching "^sr-.*-$id\$")" ] || sr_fail "namespace sr-self-$id is still there"
	[ ! -e "$dir" ] || sr_fail "the test's TMPDIR $dir is still there"
	echo "nothing left of test $id (processes $pids, namespace, $dir)"
}

case "$1" in
ends_leftovers)
	"$SANDBOX" bash -c "$(declare -f leaky); out=$out; leaky"
	rc=$?
	[ "$rc" -eq 0 ] || sr_fail "the sandbox exited $rc, the test 0"
	nothing_left
	sr_pass "the sandbox ends what a test leaves when it exits"
	;;
ends_on_sigterm)
	"$SANDBOX" bash -c "$(declare -f leaky); out=$out; leaky hang" &
	spid=$!
	for _ in $(seq 400); do [ -e "$out/ready" ] && break; sleep 0.05; done
	[ -e "$out/ready" ] || sr_fail "the leaky test did not get ready in 20 s"
	kill -TERM "$spid"
	wait "$spid"
	rc=$?
	[ "$rc" -eq 143 ] || sr_fail "the sandbox exited $rc after SIGTERM, want 143"
	nothing_left
	sr_pass "the sandbox ends the test and what it started on SIGTERM"
	;;
check_names_leftovers)
	# a run of our own (tag r<PID of this script>), its leftovers made by hand: a tagged
	# process, a namespace named for it with a veth and an nftables table, a file, and a
	# veth and an nftables table in the root namespace
	run=r$$
	tmp=$(mktemp -d)
	ns=sr-selfcheck-$run-$$
	before=$("$SR_SRCDIR/scripts/leftovers.sh" rootns)
	ip link add "srsc$$" type veth peer name "srsd$$" || sr_fail "root veth"
	nft add table inet "sr_selfcheck$$" || sr_fail "root nft"
	ip netns add "$ns" || sr_fail "ip netns add"
	ip -n "$ns" link add sr0 type veth peer name sr1 || sr_fail "veth"
	ip netns exec "$ns" nft add table inet sr_selfcheck || sr_fail "nft"
	SR_RUN=$run setsid sleep 1004 &
	p=$!
	touch "$tmp/left.txt"
	report=$(SR_ROOTNS_BEFORE=$before "$SR_SRCDIR/scripts/leftovers.sh" check "$run" "$tmp" selftest)
	rc=$?
	echo "$report"
	[ "$rc" -eq 1 ] || sr_fail "leftovers.sh check exited $rc, want 1"
	for want in "$p .*sleep 1004" "$ns .*sr0.*sr_selfcheck" "left.txt" "interface srsc$$" \
		"table inet sr_selfcheck$$"; do
		echo "$report" | grep -q -- "$want" || sr_fail "the report does not name '$want'"
	done
	[ -z "$(echo "$p" | sr_alive)" ] || sr_fail "process $p still runs"
	[ -z "$(sr_netns_matching "^$ns\$")" ] || sr_fail "namespace $ns is still there"
	[ ! -e "$tmp/left.txt" ] || sr_fail "left.txt is still there"
	ip link show "srsc$$" >/dev/null 2>&1 && sr_fail "interface srsc$$ is still there"
	nft list table inet "sr_selfcheck$$" >/dev/null 2>&1 && sr_fail "table sr_selfcheck$$ is still there"
	report=$("$SR_SRCDIR/scripts/leftovers.sh" check "$run" "$tmp" selftest) ||
		sr_fail "a second check found something: $report"
	sr_pass "the end-of-suite check names a run's leftovers, removes them and fails"
	;;
*) sr_fail "unknown case $1" ;;
esac
