#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/run_bztree.sh -- run the B+-tree benchmark (thesis sweep of
# ds/bztree.h on the four MCAS variants, then YCSB-like mixes on a large
# tree against a std::shared_mutex-protected std::map) optimized, write its
# JSON into a results directory, and turn it into a CSV, a markdown ratio
# report and PNG plots with benchmarks/bztree_report.py.
#
# Usage: benchmarks/run_bztree.sh [-h] [RESULTS_DIR] [-- BENCHMARK_FLAGS...]
#   RESULTS_DIR      default benchmarks/results (relative to the repository)
#   BENCHMARK_FLAGS  passed to the binary after --benchmark_min_time=0.2,
#                    e.g. --benchmark_min_time=1 --benchmark_repetitions=3
#                    --benchmark_filter='^bztree/' (thesis sweep only) or
#                    '^ycsb/' (large tree only)
# Environment:
#   BAZEL                 bazel command (default: bazel)
#   BAZEL_STARTUP_FLAGS   e.g. --output_base=/tmp/ob to keep off a shared server
#   BAZEL_BUILD_FLAGS     default: -c opt
#   PYTHON                interpreter for the report (default: the first of
#                         python3, /usr/bin/python3 that has matplotlib)
#   SKIP_BUILD=1          use the binary already built
#   BZTREE_BENCH_LARGE_KEYS   keys of the YCSB tree (default 1000000)
#   BZTREE_BENCH_YCSB_PM=0    skip the persistent trees in the YCSB part
#   BZTREE_BENCH_CAPACITY     node capacity (default: the library's, 64)
#   MCAS_BENCH_POOL_DIR       pool directory (default /dev/shm)
# The binary runs with PMEM_IS_PMEM_FORCE=1 (persistent variants flush for
# real into a pool on /dev/shm). The full sweep (192 thesis configurations
# + 64 YCSB ones, 0.2 s each, plus a 1M-key load per YCSB configuration)
# takes about 4 minutes. Run it on an otherwise idle machine: 4 and 8
# threads oversubscribe the 2 cores on purpose, and any other load distorts
# the ratios.
#
# Exit status: 0 done; 1 the build or the benchmark failed; 2 bad usage;
# 3 report written without plots (no matplotlib; see bztree_report.py --help).
set -euo pipefail

prog=run_bztree
# shellcheck source=benchmarks/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_init "$@"
bench_flags=(--benchmark_min_time=0.2 "${bench_flags[@]}")

bench_build //benchmarks:bztree_bench || exit 1
bench_run bztree bztree_bench
status=0
bench_report bztree_report.py "$results/bztree.json" || status=$?
echo "run_bztree: results in $results (bztree_report.md, bztree_runs.csv, bztree_*.png)" >&2
exit "$status"
