#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/run_kv_rebuild.sh -- the dip and recovery of a running
# workload when a memory node loses its pool and is rebuilt (issue 18):
# three dmkv-node daemons over ofi+tcp on this machine (`dmkv cluster up`),
# 1000 records loaded, then `dmkv bench` YCSB-A, one client thread, for
# 150 s, while this script, from the side:
#   at 10 s   SIGKILLs node 2, removes its pool, starts it on a new, empty
#             one (`cluster up`) and rebuilds it (`dmkv node rebuild 2`);
#   10 s after the rebuild ends, SIGKILLs node 0 for good: the rebuilt
#             node and node 1 carry the rest of the run.
# The bench's final check reads every record back. Writes to RESULTS_DIR
# kv_rebuild.json (the bench's JSON, with the events), kv_rebuild.csv (its
# timeline) and kv_rebuild.png (benchmarks/kv_report.py --dmkv), and prints
# the throughput of each phase as a ratio to the one before the loss.
# Event times are this script's clock from the bench's start (the bench
# connects first: up to a few tenths of a second early).
#
# Usage: benchmarks/run_kv_rebuild.sh [-h] [RESULTS_DIR]
#   RESULTS_DIR      default benchmarks/results (relative to the repository)
# Environment: BAZEL, BAZEL_STARTUP_FLAGS, BAZEL_BUILD_FLAGS, PYTHON,
# SKIP_BUILD=1 as for run_onll.sh; KV_REBUILD_SECONDS (default 150: the
# rebuild copies each value buffer in three round trips, and the run
# should outlast it).
#
# Exit status: 0 done; 1 the build or a step failed, or the bench found a
# lost or wrong record; 2 bad usage.
set -euo pipefail
prog=run_kv_rebuild.sh
. "$(dirname "$0")/bench_lib.sh"
bench_init "$@"
bench_build //kv:dmkv
bench_build //rdma:dmkv-node
bin="$("$BAZEL" "${startup[@]}" info "${build[@]}" bazel-bin 2>/dev/null)"
export PATH="$bin/rdma:$PATH"
dmkv="$bin/kv/dmkv"
seconds="${KV_REBUILD_SECONDS:-150}"

dir="$(mktemp -d /tmp/kv-rebuild.XXXXXX)"
conf="$dir/dmkv.conf"
cleanup() {
	"$dmkv" --config "$conf" cluster down --purge >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
base=$((20000 + RANDOM % 20000))
printf '[cluster]\nnodes = ofi+tcp://127.0.0.1:%d, ofi+tcp://127.0.0.1:%d, ofi+tcp://127.0.0.1:%d\ntimeout_ms = 3000\n[create]\nmax_clients = 8\nlog_bytes = 8M\nlease_ms = 5000\n' \
	"$base" $((base + 1)) $((base + 2)) >"$conf"
"$dmkv" --config "$conf" cluster up --records 20000 --value-size 100 >&2
"$dmkv" --config "$conf" --quiet load --records 1000 >&2

now() { date +%s.%N; }
"$dmkv" --config "$conf" --quiet bench --records 1000 --duration "$seconds" --warmup 0 \
	--threads 1 --workload A --interval 0.5 --json-out "$results/kv_rebuild.json" \
	--csv-out "$results/kv_rebuild.csv" >"$dir/bench.out" 2>&1 &
bench=$!
start=$(now)
sleep 10
lost=$(now)
kill -9 "$(cat "$conf.d/node2.pid")"
rm "$conf.d/node2.pool"
"$dmkv" --config "$conf" cluster up >&2
"$dmkv" --config "$conf" node rebuild 2 >"$dir/rebuild.out" 2>&1 || {
	cat "$dir/rebuild.out" >&2
	exit 1
}
rebuilt=$(now)
cat "$dir/rebuild.out" >&2
sleep 10
killed=$(now)
kill -9 "$(cat "$conf.d/node0.pid")"
rc=0
wait "$bench" || rc=$?
cat "$dir/bench.out" >&2
[ "$rc" = 0 ] || { echo "$prog: the bench exited $rc" >&2; exit 1; }

# The events, in seconds from the bench's start, into its JSON; the
# phases' throughput from its timeline.
bench_report kv_report.py --dmkv "$results/kv_rebuild.json" --png "$results/kv_rebuild.png" \
	--event "$(awk "BEGIN { print $lost - $start }"):node 2 lost its pool" \
	--event "$(awk "BEGIN { print $rebuilt - $start }"):node 2 rebuilt" \
	--event "$(awk "BEGIN { print $killed - $start }"):node 0 killed"
