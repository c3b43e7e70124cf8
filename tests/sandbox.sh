#!/usr/bin/env bash
# Runs one test and ends everything it started, however it ends: sandbox.sh CMD [ARGS...]
# (tests/CMakeLists.txt puts every integration test under it; tests/integration/lib.sh
# re-runs a script started by hand under it). Exit status: the test's; 1 if something it
# left could not be ended.
#
# The test runs with:
#  - SR_TEST_ID=<id> in its environment, which every program it starts inherits (through
#    ip netns exec, env, timeout, ...): a process the test left, even one whose parent was
#    killed (re-parented to init), is found by it; see tests/teardown.sh;
#  - its own session and process group (setsid): one signal reaches every process of it that
#    did not move elsewhere, and a terminal's Ctrl-C reaches the sandbox only, which then
#    ends the test;
#  - TMPDIR=<a directory of its own> (sr-test.<id>.XXXXXX): every mktemp of the test and of the
#    programs it runs lands there and goes with it;
#  - network namespaces named sr-<name>-<id> (lib.sh, sr_netns_add), deleted at the end with
#    their veths and nftables tables, after the processes in them have ended.
# When the test ends (its status, or SIGTERM, SIGINT or SIGHUP to the sandbox), the sandbox
# ends every process of the test's group, of its environment tag and of its namespaces
# (SIGTERM, then SIGKILL after 5 s; tests/teardown.sh, sr_end_all), then deletes the
# namespaces and the directory. SIGKILL of the sandbox (ctest's --timeout kills the whole
# process tree with it) leaves no process but leaves the namespaces and the directory: the
# check at the end of scripts/test reports and removes them (scripts/leftovers.sh).
set -u
[ $# -ge 1 ] || { echo "usage: sandbox.sh CMD [ARGS...]" >&2; exit 2; }
. "$(dirname "${BASH_SOURCE[0]}")/teardown.sh"

id=${SR_RUN:+$SR_RUN-}$$
dir=$(mktemp -d "${TMPDIR:-/tmp}/sr-test.$id.XXXXXX") || exit 1
child=

test_pids() {
	[ -n "$child" ] && pgrep -g "$child"
	sr_tagged_pids "SR_TEST_ID=$id"
	# shellcheck disable=SC2046 # one name a word
	sr_netns_pids $(sr_netns_matching "^sr-.*-$id\$")
}
end_test() {
	local rc=$? ok=0
	trap '' INT TERM HUP
	sr_end_all test_pids || ok=1
	# shellcheck disable=SC2046 # one name a word
	sr_netns_del $(sr_netns_matching "^sr-.*-$id\$")
	if [ -n "$(sr_netns_matching "^sr-.*-$id\$")" ]; then
		echo "sandbox: could not delete $(sr_netns_matching "^sr-.*-$id\$" | tr '\n' ' ')" >&2
		ok=1
	fi
	rm -rf "$dir"
	[ "$ok" -eq 0 ] || exit 1
	# a test killed by a signal (a crash): end the same way, so that ctest reports the signal
	if [ -n "$child" ] && [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then
		trap - EXIT INT TERM HUP
		kill -s $((rc - 128)) $$
	fi
	exit "$rc"
}
trap end_test EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# setsid: a new session and process group led by the test itself ($! is the test's PID, as
# the background child is not a group leader, setsid does not fork). wait returns early when
# one of the signals above arrives; its trap then ends the test.
SR_TEST_ID=$id TMPDIR=$dir setsid "$@" &
child=$!
wait "$child"
