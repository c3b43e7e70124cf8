#!/usr/bin/env bash
# Sourced by scripts/demo and scripts/test: makes sure the Debian packages named in "$@" are
# installed. As root it installs what is missing with apt-get; otherwise it prints the exact
# apt-get line and fails.
sr_need_packages() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "softrdma: missing Debian packages. Install them with:" >&2
		echo "  sudo apt-get install -y ${missing[*]}" >&2
		return 1
	fi
	echo "softrdma: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; then
		apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null || {
			echo "softrdma: apt-get install ${missing[*]} failed" >&2
			return 1
		}
	fi
}

# What building needs.
SR_BUILD_PACKAGES=(gcc make cmake pkg-config libibverbs-dev librdmacm-dev libnl-3-dev
	libnl-route-3-dev libcmocka-dev)
# What the tests need on top: the unmodified programs we run, namespaces, sanitizers, tshark,
# groff (tools_man renders the man pages),
# clang with libFuzzer's runtime for the fuzzing stage, rdma-core's own test suite
# (python3-pyverbs, tests/integration/suite), and the real applications of
# tests/integration/apps: tgt (tgtd), libiscsi-bin, qemu-utils with qemu-block-extra (qemu-img's
# iscsi/iser driver, a Recommends that --no-install-recommends leaves out), qemu-system-x86,
# openmpi-bin and libopenmpi-dev (mpicc for the test program).
SR_TEST_PACKAGES=(ibverbs-utils python3-pyverbs rdmacm-utils perftest qperf iproute2
	tshark procps binutils nftables libfabric1 libfabric-bin clang libclang-rt-14-dev groff-base
	tgt libiscsi-bin qemu-utils qemu-block-extra qemu-system-x86 openmpi-bin libopenmpi-dev)
# What the demo needs on top.
SR_DEMO_PACKAGES=(ibverbs-utils rdmacm-utils iproute2)
# What bench/suite.sh measures against (installed by the suite itself, not by the tests).
SR_BENCH_PACKAGES=(perftest qperf sockperf ucx-utils libfabric-bin iproute2 procps)
