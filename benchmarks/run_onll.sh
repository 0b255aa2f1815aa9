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

usage() {
	sed -n '3,31p' "$0" | sed 's/^# \{0,1\}//'
}

results=""
bench_flags=()
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) usage; exit 0 ;;
	--) shift; bench_flags=("$@"); break ;;
	-*) echo "run_onll: unknown option $1 (try --help)" >&2; exit 2 ;;
	*)
		if [ -n "$results" ]; then
			echo "run_onll: more than one results directory (try --help)" >&2
			exit 2
		fi
		results="$1"
		;;
	esac
	shift
done

repo="$(cd "$(dirname "$0")/.." && pwd)"
results="${results:-$repo/benchmarks/results}"
mkdir -p "$results"
results="$(cd "$results" && pwd)"

BAZEL="${BAZEL:-bazel}"
read -r -a startup <<<"${BAZEL_STARTUP_FLAGS:-}"
read -r -a build <<<"${BAZEL_BUILD_FLAGS:--c opt}"

cd "$repo"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
	echo "run_onll: building //benchmarks:onll_bench (${build[*]})" >&2
	"$BAZEL" "${startup[@]}" build "${build[@]}" //benchmarks:onll_bench >&2 || exit 1
fi
bin="$("$BAZEL" "${startup[@]}" info "${build[@]}" bazel-bin 2>/dev/null)/benchmarks"

# Which code was measured: the commit, marked when the tree has changes.
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	commit="$commit+changes"
fi

export PMEM_IS_PMEM_FORCE=1
out="$results/onll.json"
echo "run_onll: running $bin/onll_bench -> $out" >&2
"$bin/onll_bench" --benchmark_out="$out" --benchmark_out_format=json \
	--benchmark_context=git_commit="$commit" \
	"${bench_flags[@]}" >&2 || { echo "run_onll: onll_bench failed" >&2; exit 1; }

# The system python3 has Debian's matplotlib; a pyenv python3 may not.
if [ -z "${PYTHON:-}" ]; then
	PYTHON=python3
	for p in python3 /usr/bin/python3; do
		if command -v "$p" >/dev/null && "$p" -c 'import matplotlib' 2>/dev/null; then
			PYTHON="$p"
			break
		fi
	done
fi
echo "run_onll: report with $PYTHON" >&2
status=0
"$PYTHON" "$repo/benchmarks/onll_report.py" --out "$results" "$out" || status=$?
echo "run_onll: results in $results (onll_report.md, onll_runs.csv, onll_*.png)" >&2
exit "$status"
