#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/run_mcas.sh -- run the MCAS benchmarks (array, then the
# doubly-linked list) optimized, write their JSON into a results directory,
# and turn it into a CSV, a markdown ratio report and PNG plots with
# benchmarks/mcas_report.py.
#
# Usage: benchmarks/run_mcas.sh [-h] [RESULTS_DIR] [-- BENCHMARK_FLAGS...]
#   RESULTS_DIR      default benchmarks/results (relative to the repository)
#   BENCHMARK_FLAGS  passed to both binaries, e.g. --benchmark_min_time=1
#                    --benchmark_repetitions=3 --benchmark_filter=size:10/
# Environment:
#   BAZEL                 bazel command (default: bazel)
#   BAZEL_STARTUP_FLAGS   e.g. --output_base=/tmp/ob to keep off a shared server
#   BAZEL_BUILD_FLAGS     default: -c opt
#   PYTHON                interpreter for the report (default: the first of
#                         python3, /usr/bin/python3 that has matplotlib)
#   SKIP_BUILD=1          use the binaries already in bazel-bin
# The binaries run with PMEM_IS_PMEM_FORCE=1 (persistent variants flush for
# real into a pool on /dev/shm; MCAS_BENCH_POOL_DIR or --pool_dir=DIR
# overrides the directory).
# Run it on an otherwise idle machine: 4 and 8 threads oversubscribe the 2
# cores on purpose, and any other load distorts the ratios.
#
# Exit status: 0 done; 1 a build or benchmark failed (a list benchmark that
# cannot be built is skipped and the array report still written); 2 bad
# usage; 3 report written without plots (no matplotlib; see
# mcas_report.py --help).
set -euo pipefail

prog=run_mcas
# shellcheck source=benchmarks/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_init "$@"

status=0
bench_build //benchmarks:mcas_array_bench || exit 1
have_dll=0
if [ ! -f ds/include/ds/dll.h ]; then
	echo "run_mcas: ds/include/ds/dll.h not found: list benchmark skipped" >&2
	status=1
elif ! bench_build //benchmarks:dll_bench; then
	echo "run_mcas: //benchmarks:dll_bench did not build: list benchmark skipped" >&2
	status=1
else
	have_dll=1
fi

jsons=()
bench_run mcas_array mcas_array_bench
jsons+=("$results/mcas_array.json")
if [ "$have_dll" = 1 ]; then
	bench_run dll dll_bench
	jsons+=("$results/dll.json")
fi

rstatus=0
bench_report mcas_report.py "${jsons[@]}" || rstatus=$?
[ "$status" = 0 ] && status=$rstatus
echo "run_mcas: results in $results (mcas_report.md, mcas_runs.csv, *.png)" >&2
exit "$status"
