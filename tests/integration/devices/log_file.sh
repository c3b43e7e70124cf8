#!/usr/bin/env bash
# SOFTRDMA_LOG_FILE cannot be turned against the user or the program (docs/SECURITY.md,
# "Local users"): a final symbolic link is refused with one message and the log goes to
# stderr; a new file is 0600; and a set-group-ID program never sees the variable, so a user
# who starts it cannot make it create or append to a file only its group may write.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd setpriv
probe="$SR_TESTBIN/log_probe"
[ -x "$probe" ] || sr_fail "$probe not built"

dir=$(mktemp -d /tmp/sr-logfile.XXXXXX) || sr_fail "mktemp"
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
export SOFTRDMA_LOG_LEVEL=4

# 1. A plain file: the log lines land there, not on stderr; created 0600 (umask 022).
(umask 022; SOFTRDMA_LOG_FILE="$dir/plain.log" "$probe" >"$dir/out" 2>"$dir/err") ||
	sr_fail "probe failed: $(cat "$dir/err")"
grep -q 'debug .*device sriw_lo' "$dir/plain.log" || sr_fail "no log lines in the file"
[ -s "$dir/err" ] && sr_fail "log lines on stderr although the file opened: $(cat "$dir/err")"
[ "$(stat -c %a "$dir/plain.log")" = 600 ] ||
	sr_fail "new log file has mode $(stat -c %a "$dir/plain.log"), not 600"
sr_pass "a plain log file gets the lines, mode 600"

# 2. A symbolic link (someone else's, say in /tmp) to a file: refused, the target untouched,
#    one line on stderr says so, and the log lines follow it on stderr.
: >"$dir/target"
ln -s "$dir/target" "$dir/link"
SOFTRDMA_LOG_FILE="$dir/link" "$probe" >"$dir/out" 2>"$dir/err" || sr_fail "probe failed"
cat "$dir/err"
[ -s "$dir/target" ] && sr_fail "the log followed the symbolic link: $(cat "$dir/target")"
[ "$(grep -c 'SOFTRDMA_LOG_FILE' "$dir/err")" = 1 ] || sr_fail "not exactly one message"
grep -q 'SOFTRDMA_LOG_FILE=.*link not opened: it is a symbolic link; logging to stderr' \
	"$dir/err" || sr_fail "the message does not say why"
grep -q 'debug .*device sriw_lo' "$dir/err" || sr_fail "log lines not on stderr"
sr_pass "a symbolic link is refused, logging stays on stderr"

# 3. A set-group-ID copy of the probe, started by an unprivileged user. Only the group may
#    write in $priv; the user sets SOFTRDMA_LOG_FILE to a file there. With getenv the library
#    would create (or append to) it with the program's group; secure_getenv hides it.
[ "$(id -u)" -eq 0 ] || sr_skip "needs root to make a set-group-ID program"
# LeakSanitizer aborts in a set-group-ID process (it cannot trace it), whatever its options
[ -n "${SR_PRELOAD:-}" ] && sr_skip "set-group-ID part: not in a sanitizer build"
gid=61515
user=65534 # nobody
priv="$dir/priv"
mkdir "$priv" && chown 0:$gid "$priv" && chmod 770 "$priv"
printf 'kept\n' >"$priv/existing.log"
chown 0:$gid "$priv/existing.log" && chmod 660 "$priv/existing.log"
cp "$probe" "$dir/sgid_probe" && chown 0:$gid "$dir/sgid_probe" && chmod 2755 "$dir/sgid_probe"
run_user() {
	setpriv --reuid=$user --regid=$user --clear-groups env SOFTRDMA_LOG_LEVEL=4 \
		SOFTRDMA_LOG_FILE="$1" "$dir/sgid_probe" >"$dir/out" 2>"$dir/err"
}
# the set-group-ID bit takes effect here (no nosuid mount): the program runs with egid
setpriv --reuid=$user --regid=$user --clear-groups "$dir/sgid_probe" >/dev/null ||
	sr_fail "the set-group-ID probe does not run as $user"
run_user "$priv/new.log" || sr_fail "set-group-ID probe failed: $(cat "$dir/err")"
[ -e "$priv/new.log" ] && sr_fail "a set-group-ID program created the user's log file"
run_user "$priv/existing.log" || sr_fail "set-group-ID probe failed: $(cat "$dir/err")"
[ "$(cat "$priv/existing.log")" = kept ] ||
	sr_fail "a set-group-ID program appended to a file only its group may write"
head -3 "$dir/err"
# our library, not the system's, was loaded (it logs at debug to stderr), and says why
grep -q 'debug .*device sriw_lo' "$dir/err" || sr_fail "the probe did not log through our library"
grep -q 'SOFTRDMA_LOG_FILE is ignored in a set-user-ID or set-group-ID program' "$dir/err" ||
	sr_fail "no message that the log file is ignored"
sr_pass "a set-group-ID program ignores SOFTRDMA_LOG_FILE"
