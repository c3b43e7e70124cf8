#!/usr/bin/env bash
# Build the Debian package (cmake/Packaging.cmake) in its own build directory, unpack it into a
# throwaway root with `dpkg -x` (no installation on this host), and check that what a user
# gets works: the launcher finds its private library folder relative to itself, reports its
# version, `softrdma doctor` sees rping resolve to the packaged libraries, Debian's unmodified
# rping runs server and client over 127.0.0.1 through the installed launcher, the man pages
# render without a groff warning, no header is shipped, and lintian reports no error.
# Usage: scripts/package-test.sh [build-dir]   (default build-pkg). Exits non-zero on any
# failure. Everything it creates outside the build directory is under TMPDIR and removed.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
sr_need_packages "${SR_BUILD_PACKAGES[@]}" dpkg-dev lintian groff-base man-db rdmacm-utils iproute2
dir=${1:-build-pkg}
jobs=$(nproc)

fail() { echo "package-test: FAIL: $*" >&2; exit 1; }

root=$(mktemp -d "${TMPDIR:-/tmp}/sr-pkg.XXXXXX")
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	rm -rf "$root"
}
trap cleanup EXIT

echo "== package $dir"
# Only what the package holds is built: with CMAKE_SKIP_INSTALL_ALL_DEPENDENCY cpack does not
# build the tests and benchmarks first.
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSR_WERROR=ON \
	-DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
cmake --build "$dir" -j"$jobs" --target softrdma ibverbs rdmacm softrdma-roced \
	sr_package_docs >/dev/null
rm -f "$dir"/softrdma_*.deb
(cd "$dir" && cpack -G DEB >/dev/null)
deb=$(ls "$dir"/softrdma_*.deb)
echo "package: $deb"
dpkg-deb -f "$deb" Package Version Depends

dpkg -x "$deb" "$root"
sr=$root/usr/bin/softrdma
! dpkg-deb -c "$deb" | grep -q '/usr/include' || fail "the package ships headers"
for f in usr/lib/softrdma/libibverbs.so.1 usr/lib/softrdma/librdmacm.so.1 \
	usr/lib/softrdma/softrdma-roced usr/share/man/man1/softrdma.1.gz \
	usr/share/man/man7/softrdma.7.gz usr/share/doc/softrdma/copyright; do
	[ -e "$root/$f" ] || fail "no /$f in the package"
done

# The launcher runs from the unpacked root, not from /usr: its libraries must come from
# $root/usr/lib/softrdma (RUNPATH $ORIGIN/..., and `run` finds the folder next to itself).
version=$("$sr" --version) || fail "softrdma --version"
echo "$version"
[[ "$version" =~ ^softrdma\ [0-9]+\.[0-9]+\.[0-9]+\ \(rdma-core\ [0-9]+\.[0-9]+\ ABI ]] ||
	fail "softrdma --version: '$version'"
lib=$(ldd "$sr" | awk '$1 == "libibverbs.so.1" { print $3 }')
[ "$(readlink -f "$(dirname "$lib")")" = "$(readlink -f "$root/usr/lib/softrdma")" ] ||
	fail "the launcher loads $lib, not the packaged libibverbs"
"$sr" devices | grep -Eq '^sriw_lo +lo ' || fail "softrdma devices: no sriw_lo"
out=$("$sr" doctor rping) || true
echo "$out" | grep -q "^OK   program .*librdmacm.so.1 => $root/usr/lib/softrdma/" ||
	fail "softrdma doctor rping does not see the packaged librdmacm: $out"

for page in man1/softrdma.1 man7/softrdma.7; do
	warnings=$(zcat "$root/usr/share/man/$page.gz" | groff -ww -z -man 2>&1) ||
		fail "groff on $page"
	[ -z "$warnings" ] || fail "groff warnings on $page: $warnings"
	man -l "$root/usr/share/man/$page.gz" 2>&1 >/dev/null | grep . && fail "man -l $page"
done

# Debian's rping, unmodified, through the installed launcher: ten verified pings.
port=$((20000 + RANDOM % 20000))
timeout 60 "$sr" run rping -s -a 127.0.0.1 -p "$port" -V -C 10 >"$root/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do # until the server listens (its TCP listener), at most 10 s
	ss -Hltn "sport = :$port" | grep -q . && break
	sleep 0.1
done
timeout 60 "$sr" run rping -c -a 127.0.0.1 -p "$port" -V -C 10 -v >"$root/client.out" 2>&1 ||
	fail "rping client: $(cat "$root/client.out")"
[ "$(grep -c '^ping data: ' "$root/client.out")" -eq 10 ] ||
	fail "rping client did not verify 10 pings: $(cat "$root/client.out")"
wait "$server" || fail "rping server exited with $?: $(cat "$root/server.out")"
server=
echo "rping through $sr: 10 pings verified"

echo "== lintian"
# lintian leaves a temporary file (mldbm-elf-*) behind: give it the root as TMPDIR.
TMPDIR=$root lintian --fail-on error "$deb" || fail "lintian reports errors"
echo "package-test: PASS"
