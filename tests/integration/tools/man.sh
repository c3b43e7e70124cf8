#!/usr/bin/env bash
# softrdma(1) documents every subcommand the launcher's usage lists, and both man pages
# format without a groff warning.
. "$(dirname "$0")/../lib.sh"
sr_need_cmd groff
man1=$SR_SRCDIR/docs/man/softrdma.1
usage=$(env ${SR_PRELOAD:+LD_PRELOAD="$SR_PRELOAD"} ASAN_OPTIONS=detect_leaks=0 \
	"$SR_BINDIR/softrdma" --help) || sr_fail "softrdma --help"
words=$(echo "$usage" | sed -nE 's/^(usage:)? *softrdma ([^ ]+).*/\2/p')
[ "$(echo "$words" | wc -l)" -ge 5 ] || sr_fail "usage lists too few commands: $usage"
for w in $words; do
	roff=${w//-/\\-} # as the page spells it: \-\-version
	# a paragraph heading of COMMANDS: ".TP" then ".B word" or ".BR word ..."
	awk -v w="$roff" '/^\.SH /{ s = ($2 == "COMMANDS") } s && prev == ".TP" && ($1 == ".B" || $1 == ".BR") && $2 == w { found = 1 } { prev = $0 } END { exit !found }' "$man1" ||
		sr_fail "softrdma.1 has no COMMANDS entry for '$w'"
done
for page in "$man1" "$SR_SRCDIR/docs/man/softrdma.7"; do
	warnings=$(groff -ww -z -man "$page" 2>&1) || sr_fail "groff $page"
	[ -z "$warnings" ] || sr_fail "groff warnings in $page: $warnings"
done
sr_pass "softrdma.1 documents: $(echo $words)"
