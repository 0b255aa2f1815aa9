#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/setup.sh -- install every Debian 12 package the project builds and
# tests with. Idempotent: when everything is present it says so and exits at
# once; otherwise it installs only what is missing. Needs root (or sudo).
#
# Exit status: 0 ready; 1 installation failed; 2 not Debian/apt or no root.
set -euo pipefail

# Build: Bazel from Debian (works offline with the repo's WORKSPACE).
# Libraries: PMDK, libfabric, rdma-core, liburcu, jemalloc, xxhash.
# Tests and benchmarks: GoogleTest, Google Benchmark.
# Tools: pmempool (pmdk-tools) to inspect pools; clang for libFuzzer targets;
# pkg-config for the installed libraries (tools/install.sh, examples/);
# matplotlib for the benchmark plots (benchmarks/mcas_report.py); spin for the
# index protocol's models (kv/spin/run_models.sh, //kv/spin:all);
# redis-server and memcached, the systems the store is compared with
# (benchmarks/run_kv_compare.sh starts its own instances on free loopback
# ports; a service the packages start is neither used nor touched).
PACKAGES=(
	bazel-bootstrap bazel-platforms bazel-skylib bazel-rules-java
	build-essential clang pkg-config
	libpmem-dev libpmemobj-dev libpmem2-dev libpmempool-dev pmdk-tools
	libfabric-dev libfabric-bin rdma-core libibverbs-dev librdmacm-dev ibverbs-providers
	librpma-dev
	libjemalloc-dev liburcu-dev libxxhash-dev libinih-dev libcrypt-dev iproute2
	libgtest-dev libbenchmark-dev
	python3-matplotlib
	spin
	redis-server memcached
)

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
	echo "setup: this script needs Debian 12 (dpkg and apt-get)" >&2
	exit 2
fi

missing=()
for p in "${PACKAGES[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "setup: all ${#PACKAGES[@]} packages are installed; nothing to do"
	exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		SUDO=(sudo)
	else
		echo "setup: ${#missing[@]} packages missing (${missing[*]}); run as root" >&2
		exit 2
	fi
fi

echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! "${SUDO[@]}" apt-get update -qq ||
	! "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
	echo "setup: apt-get failed; see the messages above" >&2
	exit 1
fi
echo "setup: done"
