#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/run_rdma.sh -- run the transport benchmark (rdma/: local,
# ofi+tcp and ofi+shm backends, per operation type and batch size, next to
# a loopback TCP echo and a cache-line access as floors) optimized, write
# its JSON into a results directory, and turn it into a CSV, a markdown
# report of ratios to the floors and a PNG plot with
# benchmarks/rdma_report.py.
#
# Usage: benchmarks/run_rdma.sh [-h] [RESULTS_DIR] [-- BENCHMARK_FLAGS...]
#   RESULTS_DIR      default benchmarks/results (relative to the repository)
#   BENCHMARK_FLAGS  passed to the binary, e.g. --benchmark_min_time=1
#                    --benchmark_repetitions=3 --benchmark_filter=ofi
# Environment:
#   BAZEL, BAZEL_STARTUP_FLAGS, BAZEL_BUILD_FLAGS (default -c opt), PYTHON,
#   SKIP_BUILD=1          as for run_onll.sh
#   RDMA_BENCH_POOL_DIR   pool directory (default /dev/shm)
#   RDMA_BENCH_POLL       the node's poll mode, busy (default) or adaptive
# The node's progress threads (busy by default) and the client busy-poll,
# so run it on an otherwise idle machine: on 2 cores any other load
# distorts latencies.
# About 40 s.
#
# Exit status: 0 done; 1 the build or the benchmark failed; 2 bad usage;
# 3 report written without plots (no matplotlib).
set -euo pipefail

prog=run_rdma
# shellcheck source=benchmarks/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_init "$@"

bench_build //benchmarks:rdma_bench || exit 1
bench_run rdma rdma_bench
status=0
bench_report rdma_report.py "$results/rdma.json" || status=$?
echo "run_rdma: results in $results (rdma_report.md, rdma_runs.csv, rdma_latency.png)" >&2
exit "$status"
