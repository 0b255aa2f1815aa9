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
# real into a pool on /dev/shm; MCAS_BENCH_POOL_DIR overrides the directory).
# Run it on an otherwise idle machine: 4 and 8 threads oversubscribe the 2
# cores on purpose, and any other load distorts the ratios.
#
# Exit status: 0 done; 1 a build or benchmark failed (a list benchmark that
# cannot be built is skipped and the array report still written); 2 bad
# usage; 3 report written without plots (no matplotlib; see
# mcas_report.py --help).
set -euo pipefail

usage() {
	sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'
}

results=""
bench_flags=()
while [ $# -gt 0 ]; do
	case "$1" in
	-h | --help) usage; exit 0 ;;
	--) shift; bench_flags=("$@"); break ;;
	-*) echo "run_mcas: unknown option $1 (try --help)" >&2; exit 2 ;;
	*)
		if [ -n "$results" ]; then
			echo "run_mcas: more than one results directory (try --help)" >&2
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
status=0
build_target() { # target
	[ "${SKIP_BUILD:-0}" = 1 ] && return 0
	echo "run_mcas: building $1 (${build[*]})" >&2
	"$BAZEL" "${startup[@]}" build "${build[@]}" "$1" >&2
}
build_target //benchmarks:mcas_array_bench || exit 1
have_dll=0
if [ ! -f ds/include/ds/dll.h ]; then
	echo "run_mcas: ds/include/ds/dll.h not found: list benchmark skipped" >&2
	status=1
elif ! build_target //benchmarks:dll_bench; then
	echo "run_mcas: //benchmarks:dll_bench did not build: list benchmark skipped" >&2
	status=1
else
	have_dll=1
fi
bin="$("$BAZEL" "${startup[@]}" info "${build[@]}" bazel-bin 2>/dev/null)/benchmarks"

# Which code was measured: the commit, marked when the tree has changes.
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	commit="$commit+changes"
fi

export PMEM_IS_PMEM_FORCE=1
run() { # name binary
	local out="$results/$1.json"
	echo "run_mcas: running $2 -> $out" >&2
	"$bin/$2" --benchmark_out="$out" --benchmark_out_format=json \
		--benchmark_context=git_commit="$commit" \
		"${bench_flags[@]}" >&2 || { echo "run_mcas: $2 failed" >&2; exit 1; }
}
jsons=()
run mcas_array mcas_array_bench
jsons+=("$results/mcas_array.json")
if [ "$have_dll" = 1 ]; then
	run dll dll_bench
	jsons+=("$results/dll.json")
fi

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
echo "run_mcas: report with $PYTHON" >&2
rstatus=0
"$PYTHON" "$repo/benchmarks/mcas_report.py" --out "$results" "${jsons[@]}" || rstatus=$?
[ "$status" = 0 ] && status=$rstatus
echo "run_mcas: results in $results (mcas_report.md, mcas_runs.csv, *.png)" >&2
exit "$status"
