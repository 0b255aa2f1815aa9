#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/run_kv_index.sh -- run the replicated key index benchmark
# (kv/index.h: benchmarks/kv_index_bench.cc) optimized over transports
# local and tcp, 1, 2, 4 and 8 client threads, and three groups side by
# side -- 1 node (the unreplicated baseline), 3 nodes, 3 nodes with one
# down --, collect its JSON lines into a results directory and turn them
# into a CSV, a markdown report and a PNG plot with
# benchmarks/kv_index_report.py.
#
# Usage: benchmarks/run_kv_index.sh [-h] [--quick] [--repeat=R] [RESULTS_DIR] [-- BENCH_FLAGS...]
#   --quick          smoke run: 1 and 2 threads, small key sets, short
#                    workloads (1-2 minutes)
#   --repeat=R       run the three groups R times in turn per transport and
#                    thread count (default 3, 1 with --quick); the report
#                    takes each configuration's median: on a shared VM one
#                    run's latencies move by half from minutes to minutes
#   RESULTS_DIR      default benchmarks/results (relative to the repository)
#   BENCH_FLAGS      appended to every kv_index_bench command line (they
#                    override the defaults below), e.g. --duration-ms=2000
# Environment:
#   BAZEL, BAZEL_STARTUP_FLAGS, PYTHON, SKIP_BUILD=1   as for run_onll.sh
#   BAZEL_BUILD_FLAGS     default "-c opt --jobs=1"
#   KV_INDEX_BENCH_POOL_DIR   pool directory (default /dev/shm)
#   KV_INDEX_RUN_LIMIT_S  a run (one process) longer than this is killed
#                         and recorded as such (default 90)
#
# For each transport and thread count the three groups run back to back,
# each in a fresh process on fresh nodes, R times in turn, so every ratio
# compares medians of runs made seconds apart. Defaults per transport:
#   local  4096 keys, warm-up of every 12-bit hash prefix, 1 s per
#          workload (at most 200000 lookups, 40000 inserts)
#   tcp    32 keys, warm-up of the keys the lookups use, 0.3 s per
#          workload (at most 200 inserts): with three nodes in the process
#          a round trip costs milliseconds on a 2-core machine (each node's
#          progress thread spins about 3 ms after every request before it
#          yields the core), so the tcp runs are kept small
# Wall-clock numbers on a 2-core machine shared with other work are
# indicative only; the round trips per operation are counters of the
# index's own (over tcp on a slow machine they include rounds repeated
# after a missed quorum). The full run takes about 4 minutes per repetition
# on an idle machine, more when it is loaded (each run is capped, see
# above).
#
# Exit status: 0 done; 1 the build failed or some run failed (its JSON
# line says how; the report is still written); 2 bad usage; 3 report
# written without plots (no matplotlib).
set -euo pipefail

prog=run_kv_index
quick=0
repeat=
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--repeat=*)
		repeat="${1#--repeat=}"
		case "$repeat" in
		'' | *[!0-9]* | 0)
			echo "$prog: --repeat takes a positive count" >&2
			exit 2
			;;
		esac
		;;
	--) args+=("$@"); break ;;
	*) args+=("$1") ;;
	esac
	shift
done
export BAZEL_BUILD_FLAGS="${BAZEL_BUILD_FLAGS:--c opt --jobs=1}"
# shellcheck source=benchmarks/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_init "${args[@]+"${args[@]}"}"

bench_build //benchmarks:kv_index_bench || exit 1
bench_locate
bin="$bench_bin/kv_index_bench"
limit="${KV_INDEX_RUN_LIMIT_S:-90}"
pool_dir="${KV_INDEX_BENCH_POOL_DIR:-/dev/shm}"

if [ "$quick" = 1 ]; then
	repeat="${repeat:-1}"
	threads=(1 2)
	local_flags=(--keys=1024 --duration-ms=200 --ops=50000 --insert-ops=5000 --region-mb=64)
	tcp_flags=(--keys=16 --absent=16 --warm=keys --duration-ms=200 --insert-ops=50 --region-mb=16)
else
	repeat="${repeat:-3}"
	threads=(1 2 4 8)
	local_flags=(--keys=4096 --duration-ms=1000 --ops=200000 --insert-ops=40000 --region-mb=128)
	tcp_flags=(--keys=32 --absent=32 --warm=keys --duration-ms=300 --insert-ops=200 --region-mb=16)
fi
groups=("1 0" "3 0" "3 1") # nodes down

lines="$(mktemp "${TMPDIR:-/tmp}/kv_index.XXXXXX")"
trap 'rm -f "$lines"' EXIT
status=0
start=$(date +%s)
for transport in local tcp; do
	if [ "$transport" = local ]; then flags=("${local_flags[@]}"); else flags=("${tcp_flags[@]}"); fi
	for t in "${threads[@]}"; do
		for rep in $(seq "$repeat"); do
			for g in "${groups[@]}"; do
				read -r n down <<<"$g"
				killed=$(printf '{"bench":"kv_index","transport":"%s","nodes":%s,"down":%s,"threads":%s,"label":"rep%s","killed_after_s":%s,"ok":false}' \
					"$transport" "$n" "$down" "$t" "$rep" "$limit")
				bench_limited "$limit" "$lines" "$killed" "$bin" --transport="$transport" \
					--nodes="$n" --down="$down" --threads="$t" --pool-dir="$pool_dir" \
					--label="rep$rep" "${flags[@]}" \
					"${bench_flags[@]+"${bench_flags[@]}"}" || true
			done
		done
	done
done
elapsed=$(($(date +%s) - start))

# One JSON document: the context and every configuration's line.
bench_collect "$lines" "$results/kv_index.json" quick="$([ "$quick" = 1 ] && echo true || echo false)" \
	elapsed_s="$elapsed" \
	repeat="$repeat" \
	flags="local: ${local_flags[*]}; tcp: ${tcp_flags[*]}; extra: ${bench_flags[*]+"${bench_flags[*]}"}" \
	note="wall-clock numbers from a 2-core machine shared with other work: indicative only"

rstatus=0
bench_report kv_index_report.py "$results/kv_index.json" || rstatus=$?
echo "run_kv_index: results in $results (kv_index.json, kv_index_runs.csv, kv_index_report.md, kv_index_latency.png)" >&2
[ "$status" != 0 ] && exit "$status"
exit "$rstatus"
