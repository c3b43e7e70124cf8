#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Checks of what docs/ARCHITECTURE.md says about the code's structure, each a command that
# exits 1 naming what breaks the rule (0: the rule holds; 2: wrong usage or nothing to check).
# Uses bash, coreutils, binutils (nm) and gcc only; the ctests arch_* run it (SR_ARCH_CHECKS).
#
#   check-architecture.sh cycles <dir-or-object>...
#       The file graph of one library: a file depends on the file defining a global symbol
#       it uses (nm -u against nm --defined-only). Every *.o below the directories (or named)
#       is one node, objects of *_fuzzcov copies left out. Exit 1 on a call cycle, naming
#       the files of each loop and the symbols behind each edge of it.
#       e.g. check-architecture.sh cycles build/src/cm/CMakeFiles
#   check-architecture.sh locked <src-dir>...
#       Every function defined under the directories (*.c, *.h) whose name ends in _locked
#       calls a lock assert in its body: a call whose name holds "assert" on a line that
#       also says lock, held or own (sr_cm_assert_locked(), an assert(...held(&l)) ...);
#       static_assert does not count, nor is the assert itself (a name with "assert") a
#       _locked function. Exit 1 naming each function without one.
#       ARCH_LOCK_ASSERT_RE (an extended regex) replaces that test of a line if set.
#   check-architecture.sh verbs-includes [<src-dir>]
#       No file of <src-dir>/verbs (*.c, *.h) includes, directly or through other headers,
#       a header of <src-dir>/iwarp or <src-dir>/transport/iwarp*.h (gcc -E -H with
#       -I <src-dir>, as the layers are built). Exit 1 naming each file and its include chain.
#       <src-dir> defaults to the src/ next to this script. CC overrides gcc.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage()
{
	sed -n '4,/^set -uo/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

# ---- cycles ---------------------------------------------------------------------------

cmd_cycles()
{
	local objs=() a
	[ $# -ge 1 ] || usage
	for a in "$@"; do
		if [ -d "$a" ]; then
			while IFS= read -r -d '' o; do
				objs+=("$o")
			done < <(find "$a" -name '*.o' -not -path '*_fuzzcov.dir/*' -print0 | sort -z)
		elif [ -f "$a" ]; then
			objs+=("$a")
		else
			echo "cycles: no such file or directory: $a" >&2
			exit 2
		fi
	done
	if [ ${#objs[@]} -eq 0 ]; then
		echo "cycles: no object files under $* (build first)" >&2
		exit 2
	fi

	local tmp
	tmp=$(mktemp -d) || exit 2
	trap 'rm -rf "$tmp"' RETURN
	# "symbol file" of each global definition and each use; a file is named as its object
	# below CMake's <target>.dir/ without the .o (core.c.o: core.c; elsewhere the object's
	# own name). One nm for all the objects.
	local name='function file(p) { sub(/:[^:]*$/, "", p); sub(/\.o$/, "", p)
		if (match(p, /\.dir\//)) return substr(p, RSTART + RLENGTH)
		sub(/^.*\//, "", p); return p }'
	nm -A -g --defined-only "${objs[@]}" |
		awk "$name"' NF == 3 { print $3, file($1) }' | sort -k1,1 >"$tmp/def"
	nm -A -u "${objs[@]}" | awk "$name"' { print $NF, file($1) }' | sort -k1,1 >"$tmp/use"
	# A symbol defined twice would make the edge ambiguous: say so.
	awk '$1 == s { print "cycles: " $1 " is defined in " f " and " $2 > "/dev/stderr" }
	     { s = $1; f = $2 }' "$tmp/def"
	# edges "user definer symbol", without self-edges
	join -j 1 "$tmp/use" "$tmp/def" | awk '$2 != $3 { print $2, $3, $1 }' | sort -u >"$tmp/edges"
	# The files that lie on a cycle, grouped by strongly connected component: a and b are in
	# one when each reaches the other (transitive closure; a library has tens of files).
	# Each component is printed with the edges inside it and the symbols behind each edge.
	awk -v nobj="${#objs[@]}" '
		{
			if (!($1 in id)) { id[$1] = ++n; name[n] = $1 }
			if (!($2 in id)) { id[$2] = ++n; name[n] = $2 }
			r[id[$1], id[$2]] = 1
			e = $1 " -> " $2
			if (e in syms) syms[e] = syms[e] ", " $3
			else { syms[e] = $3; ne++; from[ne] = $1; to[ne] = $2; edge[ne] = e }
		}
		END {
			for (k = 1; k <= n; k++)
				for (i = 1; i <= n; i++)
					if (r[i, k])
						for (j = 1; j <= n; j++)
							if (r[k, j]) r[i, j] = 1
			for (i = 1; i <= n; i++) {
				if (comp[i] || !r[i, i]) continue
				nc++; members = ""
				for (j = 1; j <= n; j++)
					if (r[i, j] && r[j, i]) { comp[j] = nc; members = members " " name[j] }
				list[nc] = members
			}
			if (!nc) {
				printf "cycles: no call cycle among the %d files (%d edges)\n", nobj, ne
				exit 0
			}
			printf "cycles: FAIL: %d group(s) of files that call each other round in a cycle\n", nc
			for (c = 1; c <= nc; c++) {
				printf "  cycle %d:%s\n", c, list[c]
				for (x = 1; x <= ne; x++)
					if (comp[id[from[x]]] == c && comp[id[to[x]]] == c)
						printf "    %s: %s\n", edge[x], syms[edge[x]]
			}
			exit 1
		}' "$tmp/edges"
}

# ---- locked ---------------------------------------------------------------------------

cmd_locked()
{
	[ $# -ge 1 ] || usage
	local re='[a-z0-9_]*assert[a-z0-9_]*[[:space:]]*[(]'
	local files
	files=$(find "$@" \( -name '*.c' -o -name '*.h' \) -print | sort)
	[ -n "$files" ] || { echo "locked: no sources under $*" >&2; exit 2; }
	# A definition: a line at column 0 naming <name>_locked( that is followed, before any
	# ';', by a line "{" (or ends in "{"); its body ends at the next "}" at column 0.
	# shellcheck disable=SC2086
	awk -v re="$re" -v user_re="${ARCH_LOCK_ASSERT_RE:-}" '
		function asserts(line, l) {
			l = line
			gsub(/\/\*.*\*\//, "", l)   # comments on the line
			sub(/\/\/.*/, "", l)
			sub(/^[[:space:]]*\*.*/, "", l)
			if (user_re != "")
				return l ~ user_re
			if (l ~ /static_assert/)
				return 0
			l = tolower(l)
			return l ~ re && l ~ /(lock|held|own)/
		}
		FNR == 1 { state = 0 }
		state == 0 && /^[A-Za-z_].*[A-Za-z0-9_]+_locked\(/ && !/^(#|typedef)/ {
			s = $0
			sub(/\(.*/, "", s)
			n = split(s, w, /[^A-Za-z0-9_]+/)
			name = w[n]
			if (name ~ /_locked$/ && name !~ /assert/) { # not the assert itself
				state = 1; where = FILENAME ":" FNR; found = 0; total_sig = $0
				if ($0 ~ /;[[:space:]]*$/ || $0 ~ /\)[[:space:]]*;/) state = 0
				else if ($0 ~ /\{[[:space:]]*$/) state = 2 # "{" on the signature line
				next
			}
		}
		state == 1 {
			if ($0 ~ /^\{/) { state = 2; next }
			if ($0 ~ /;/) state = 0   # a prototype over several lines
			next
		}
		state == 2 {
			if ($0 ~ /^\}/) {
				checked++
				if (!found) { print "  " where ": " name; bad++ }
				state = 0
				next
			}
			if (asserts($0)) found = 1
		}
		END {
			if (bad) {
				printf "locked: FAIL: %d of %d _locked functions assert no lock (above)\n", bad, checked
				exit 1
			}
			printf "locked: every one of the %d _locked functions asserts its lock\n", checked
		}' $files >"${TMPDIR:-/tmp}/arch_locked.$$"
	local rc=$?
	# the summary first, then the list
	tail -1 "${TMPDIR:-/tmp}/arch_locked.$$"
	sed '$d' "${TMPDIR:-/tmp}/arch_locked.$$"
	rm -f "${TMPDIR:-/tmp}/arch_locked.$$"
	return $rc
}

# ---- verbs-includes -------------------------------------------------------------------

cmd_verbs_includes()
{
	local src=${1:-$here/../src} cc=${CC:-gcc}
	src=$(cd "$src" && pwd) || exit 2
	[ -d "$src/verbs" ] || { echo "verbs-includes: no $src/verbs" >&2; exit 2; }
	local f bad=0 n=0 out
	for f in "$src"/verbs/*.c "$src"/verbs/*.h; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		# -H prints each header opened, one dot per level of nesting
		if ! out=$("$cc" -E -H -D_GNU_SOURCE -I "$src" -x c "$f" -o /dev/null 2>&1); then
			echo "verbs-includes: $cc failed on $f:" >&2
			echo "$out" | grep -v '^\.' >&2
			exit 2
		fi
		out=$(echo "$out" | awk -v src="$src/" -v me="${f#"$src"/}" '
			/^\.+ / {
				d = length($1); p = $2
				sub(/^.*\/src\//, "", p) # as the layers name it
				if (index($2, src) == 1) p = substr($2, length(src) + 1)
				chain[d] = p
				if (skip && d > skip) next
				skip = 0
				if (p ~ /^iwarp\// || p ~ /^transport\/iwarp[^\/]*\.h$/) {
					c = me
					for (i = 1; i <= d; i++) c = c " -> " chain[i]
					if (!(c in seen)) { seen[c] = 1; print "  " c }
					skip = d # not what the iWARP header includes itself
				}
			}')
		if [ -n "$out" ]; then
			echo "$out"
			bad=$((bad + 1))
		fi
	done
	if [ "$bad" -gt 0 ]; then
		echo "verbs-includes: FAIL: $bad of the $n files of src/verbs include iWARP headers (chains above)"
		return 1
	fi
	echo "verbs-includes: none of the $n files of src/verbs includes an iWARP header"
	return 0
}

case "${1:-}" in
cycles) shift; cmd_cycles "$@" ;;
locked) shift; cmd_locked "$@" ;;
verbs-includes) shift; cmd_verbs_includes "$@" ;;
*) usage ;;
esac
