#!/usr/bin/env bash
# abi_version_nodes: our libibverbs.so.1 and librdmacm.so.1 carry the right SONAME, define the
# version nodes of rdma-core's libraries (with the same parent chain as our export maps), export
# nothing unversioned, and export exactly the names of the export maps, each at the version node
# the map puts it in (no leaks, nothing missing).
set -u
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

need_tool readelf awk
need_our_libs
abi_tmpdir

# The nodes rdma-core 44 defines and Debian's binaries bind to. IBVERBS 1.2-1.4 never existed.
expect_ibverbs="IBVERBS_1.0 IBVERBS_1.1 IBVERBS_1.5 IBVERBS_1.6 IBVERBS_1.7 IBVERBS_1.8 IBVERBS_1.9
IBVERBS_1.10 IBVERBS_1.11 IBVERBS_1.12 IBVERBS_1.13 IBVERBS_1.14 IBVERBS_PRIVATE_34"
expect_rdmacm="RDMACM_1.0 RDMACM_1.1 RDMACM_1.2 RDMACM_1.3"

errors=0
err() { echo "  $*"; errors=$((errors + 1)); }

check_lib() { # SONAME MAPFILE EXPECTED-NODES
	local soname=$1 map=$2 expect=$3 lib="$SR_LIBDIR/$1" d="$ABI_TMP/$1" n
	mkdir -p "$d"
	echo "$lib (map: ${map#"$SR_SRCDIR"/}):"
	[ -r "$map" ] || { err "export map $map not found"; return; }
	readelf -d -W "$lib" >"$d/dynamic" 2>&1 || { err "readelf -d failed: $(head -n 1 "$d/dynamic")"; return; }
	readelf -V -W "$lib" >"$d/versions" 2>&1 || { err "readelf -V failed"; return; }
	readelf --dyn-syms -W "$lib" >"$d/dynsym" 2>&1 || { err "readelf --dyn-syms failed"; return; }
	awk -f "$abi_here/../../../tools/mapsyms.awk" "$map" >"$d/map"

	# SONAME
	n=$(sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p' "$d/dynamic")
	[ "$n" = "$soname" ] || err "SONAME is '${n:-<none>}', expected $soname"

	# Version definitions: "node<TAB>parent" (parent "-"), and the BASE entry.
	awk '
		/Version definition section/ { on = 1; next }
		/^Version (needs|symbols) section/ || /^$/ { if (on && seen) on = 0 }
		!on { next }
		/Name:/ {
			seen = 1; name = $NF
			if ($0 ~ /Flags: BASE/) { print "BASE\t" name; name = ""; next }
			parent[name] = "-"; order[++n] = name; next
		}
		/Parent 1:/ && name != "" { parent[name] = $NF }
		END { for (i = 1; i <= n; i++) print order[i] "\t" parent[order[i]] }' "$d/versions" >"$d/vdefs"
	n=$(awk -F '\t' '$1 == "BASE" { print $2 }' "$d/vdefs")
	[ "$n" = "$soname" ] || err "base version definition is '${n:-<none>}', expected $soname"
	for n in $expect; do
		grep -q "^$n	" "$d/vdefs" || err "version node $n is not defined"
	done
	# Nodes and parents: library vs map, both directions.
	awk -F '\t' '$1 == "N" { print $2 "\t" $3 }' "$d/map" | sort >"$d/map-nodes"
	grep -v '^BASE	' "$d/vdefs" | sort >"$d/lib-nodes"
	comm -13 "$d/map-nodes" "$d/lib-nodes" | while IFS=$'\t' read -r a b; do
		echo "  version node $a (parent $b) in the library does not match the map"
	done >"$d/x"
	comm -23 "$d/map-nodes" "$d/lib-nodes" | while IFS=$'\t' read -r a b; do
		echo "  version node $a (parent $b) of the map is not defined like that in the library"
	done >>"$d/x"
	if [ -s "$d/x" ]; then cat "$d/x"; errors=$((errors + $(wc -l <"$d/x"))); fi

	# Exported (defined, non-local) dynamic symbols as "name<TAB>version" ("-" = unversioned),
	# leaving out the version-definition symbols themselves (absolute, named like their node).
	awk -v OFS='\t' '
		FILENAME == ARGV[1] { node[$1] = 1; next }
		$7 == "UND" || $7 == "Ndx" || NF < 8 || $5 == "LOCAL" { next }
		{
			s = $8; i = index(s, "@")
			if (i == 0 && $7 == "ABS" && (s in node)) next
			if (i == 0) { print s, "-"; next }
			v = substr(s, i + 1); s = substr(s, 1, i - 1); sub(/^@/, "", v)
			if (s != v) print s, v
		}' "$d/vdefs" "$d/dynsym" | sort -u >"$d/exported"
	[ -s "$d/exported" ] || err "exports no symbols at all"
	awk -F '\t' -v base="$soname" '$2 == "-" || $2 == base' "$d/exported" >"$d/x"
	while IFS=$'\t' read -r a b; do err "$a is exported without a version node ($b)"; done <"$d/x"

	# Map globals vs exports, both directions. Glob patterns in the map only cover exports.
	awk -F '\t' -v OFS='\t' '$1 == "G" && $3 !~ /[*?[]/ { print $3, $2 }' "$d/map" | sort -u >"$d/map-names"
	awk -F '\t' -v OFS='\t' '$1 == "G" && $3 ~ /[*?[]/ { print $3, $2 }' "$d/map" >"$d/map-globs"
	comm -23 "$d/map-names" "$d/exported" | while IFS=$'\t' read -r a b; do
		echo "  $a@$b is in the map but not exported at that version"
	done >"$d/x"
	comm -13 "$d/map-names" "$d/exported" | grep -v '	-$' | while IFS=$'\t' read -r a b; do
		covered=0
		while IFS=$'\t' read -r g gn; do
			# shellcheck disable=SC2053
			[ "$gn" = "$b" ] && [[ $a == $g ]] && { covered=1; break; }
		done <"$d/map-globs"
		[ $covered -eq 1 ] || echo "  $a@$b is exported but not listed in that node of the map (leak)"
	done >>"$d/x"
	if [ -s "$d/x" ]; then cat "$d/x"; errors=$((errors + $(wc -l <"$d/x"))); fi

	echo "  $(wc -l <"$d/exported") exported symbols, $(grep -vc '^BASE	' "$d/vdefs") version nodes checked"
}

check_lib libibverbs.so.1 "$SR_SRCDIR/src/verbs/libibverbs.map" "$expect_ibverbs"
check_lib librdmacm.so.1 "$SR_SRCDIR/src/cm/librdmacm.map" "$expect_rdmacm"

[ $errors -eq 0 ] || fail "$errors problem(s) with the version nodes or exports of $SR_LIBDIR"
echo "PASS: SONAMEs, version nodes and exported names of $SR_LIBDIR match the export maps"
