#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/run_onll.sh -- run the ONLL benchmark (ONLL's counter, queue
# and map against the same objects on PMDK transactions) optimized, write
# its JSON into a results directory, and turn it into a CSV, a markdown
# ratio report and PNG plots with benchmarks/onll_report.py.
#
# Usage: benchmarks/run_onll.sh [-h] [RESULTS_DIR] [-- BENCHMARK_FLAGS...]
#   RESULTS_DIR      default benchmarks/results (relative to the repository)
#   BENCHMARK_FLAGS  passed to the binary, e.g. --benchmark_min_time=1
#                    --benchmark_repetitions=3 --benchmark_filter=map/
#                    --pool_dir=/mnt/pmem
# Environment:
#   BAZEL                 bazel command (default: bazel)
#   BAZEL_STARTUP_FLAGS   e.g. --output_base=/tmp/ob to keep off a shared server
#   BAZEL_BUILD_FLAGS     default: -c opt
#   PYTHON                interpreter for the report (default: the first of
#                         python3, /usr/bin/python3 that has matplotlib)
#   SKIP_BUILD=1          use the binary already built
#   ONLL_BENCH_POOL_DIR   pool directory (default /dev/shm)
# The binary runs with PMEM_IS_PMEM_FORCE=1: pools on /dev/shm get real
# clwb flushes and sfence fences, for ONLL and for PMDK alike. The full
# sweep (72 configurations, 0.3 s each) takes about a minute. Run it on
# an otherwise idle machine: 4 and 8 threads oversubscribe the 2 cores on
# purpose, and any other load distorts the ratios.
#
# Exit status: 0 done; 1 the build or the benchmark failed; 2 bad usage;
# 3 report written without plots (no matplotlib; see onll_report.py --help).
set -euo pipefail

prog=run_onll
# shellcheck source=benchmarks/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_init "$@"

bench_build //benchmarks:onll_bench || exit 1
bench_run onll onll_bench
status=0
bench_report onll_report.py "$results/onll.json" || status=$?
echo "run_onll: results in $results (onll_report.md, onll_runs.csv, onll_*.png)" >&2
exit "$status"
