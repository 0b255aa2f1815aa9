#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/run_reclaim.sh -- run the memory-reclamation benchmarks
# optimized: reclaim_bench (list, skip list and BST under none, qsbr, ebr,
# hp, cadence, qsense, urcu-qsbr at 1, 2, 4, 8 threads) into reclaim.json,
# then reclaim_robust (the path-switching experiment: 8 threads, one
# delayed inside an operation again and again) into reclaim_robust.csv and
# once more with 2 threads (one per core) into reclaim_robust_t2.csv, and
# turn it all into a CSV, a markdown report and PNG plots with
# benchmarks/reclaim_report.py.
#
# Usage: benchmarks/run_reclaim.sh [-h] [RESULTS_DIR] [-- BENCHMARK_FLAGS...]
#   RESULTS_DIR      default benchmarks/results (relative to the repository)
#   BENCHMARK_FLAGS  passed to reclaim_bench, e.g. --benchmark_min_time=1
#                    --benchmark_repetitions=3 --benchmark_filter=list/
# Environment:
#   BAZEL                 bazel command (default: bazel)
#   BAZEL_STARTUP_FLAGS   e.g. --output_base=/tmp/ob to keep off a shared server
#   BAZEL_BUILD_FLAGS     default: -c opt
#   PYTHON                interpreter for the report (default: the first of
#                         python3, /usr/bin/python3 that has matplotlib)
#   SKIP_BUILD=1          use the binaries already built
#   RECLAIM_BENCH_LIST_SIZE, RECLAIM_BENCH_SKIPLIST_SIZE, RECLAIM_BENCH_BST_SIZE
#                         initial sizes (default 2000, 20000, 2000000; key
#                         range twice that), e.g. RECLAIM_BENCH_BST_SIZE=20000
#                         for a smoke run; they apply to reclaim_robust too
#   ROBUST_FLAGS          reclaim_robust's flags for the main run (default:
#                         its defaults: 8 threads, list, qsbr,hp,cadence,qsense,
#                         20 s each, delay 2 s every 4 s, 200 ms samples, cap
#                         100000 nodes), e.g. "--duration-s 5 --structure bst"
#   ROBUST2_FLAGS         flags of a second run, one thread per core, where
#                         QSense's fast path is not disturbed by preemption
#                         (default "--threads 2 --scheme qsbr,hp,qsense
#                         --duration-s 12"; "none" skips it)
#   SKIP_ROBUST=1         skips both (the report then has no path-switching
#                         section)
# Run time on the 2-core machine with the thesis sizes (BST 2,000,000
# keys), measured: 4 min 40 s -- reclaim_bench 3 min (100 s of it filling
# the 28 BSTs, 3.7 s each), reclaim_robust 64 s (QSBR stops at the cap
# after ~3 s; 80 s if it does not) and 36 s; with
# -- --benchmark_repetitions=3 about 1.5 minutes more.
# Run it on an otherwise idle machine: 4 and 8 threads oversubscribe the 2
# cores on purpose, and any other load distorts the ratios.
#
# Exit status: 0 done; 1 a build or benchmark failed (reclaim_robust: a
# structure check or setup failed); 2 bad usage; 3 report written without
# plots (no matplotlib; see reclaim_report.py --help).
set -euo pipefail

prog=run_reclaim
# shellcheck source=benchmarks/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_init "$@"

bench_build //benchmarks:reclaim_bench || exit 1
bench_build //benchmarks:reclaim_robust || exit 1
bench_run reclaim reclaim_bench

status=0
robust_args=(--robust none)

robust_run() { # csv flags-variable-name
	local csv="$results/$1" flags
	read -r -a flags <<<"${!2}"
	echo "$prog: running $bench_bin/reclaim_robust ${flags[*]} -> $csv" >&2
	rc=0
	"$bench_bin/reclaim_robust" "${flags[@]}" --out "$csv" || rc=$?
	if [ "$rc" = 64 ]; then
		echo "$prog: reclaim_robust: bad $2" >&2
		exit 2
	elif [ "$rc" != 0 ]; then
		echo "$prog: reclaim_robust failed (exit $rc)" >&2
		status=1
	fi
	robust_args+=(--robust "$csv")
}

if [ "${SKIP_ROBUST:-0}" != 1 ]; then
	robust_args=()
	ROBUST_FLAGS="${ROBUST_FLAGS:-}"
	robust_run reclaim_robust.csv ROBUST_FLAGS
	ROBUST2_FLAGS="${ROBUST2_FLAGS:---threads 2 --scheme qsbr,hp,qsense --duration-s 12}"
	if [ "$ROBUST2_FLAGS" != none ]; then
		robust_run reclaim_robust_t2.csv ROBUST2_FLAGS
	fi
fi

rstatus=0
bench_report reclaim_report.py "${robust_args[@]}" "$results/reclaim.json" || rstatus=$?
[ "$status" = 0 ] && status=$rstatus
echo "$prog: results in $results (reclaim_report.md, reclaim_runs.csv," \
	"reclaim_robust*.csv, reclaim_*.png)" >&2
exit "$status"
