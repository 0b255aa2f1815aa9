#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/run_kv_compare.sh -- the store (kv/kv.h) against what users run
# today, in one run: YCSB A (50 % get / 50 % update) and B (95 / 5),
# Zipfian 0.99 over 100000 keys, 64-byte values, 1 and 4 client threads
# with one operation in flight each, on
#   ours      benchmarks/kv_bench, SWARM over 3 in-process memory nodes,
#             reached as local: and over ofi+tcp on 127.0.0.1 (nodes in
#             dmkv-node's default adaptive poll mode, and on tmpfs also
#             polling busily: --node-poll=busy);
#   Redis     redis-server, started here on a free loopback port, durable
#             (appendonly yes, appendfsync always: an fsync before every
#             reply) and with persistence off (save "", appendonly no);
#   memcached started here on a free loopback port (volatile);
#   floors    a loopback TCP echo (64-byte message, echo thread in the
#             benchmark) and a 64-byte copy in memory
# (benchmarks/kv_compare_bench for all but ours), each durable system on
# two media: tmpfs (/dev/shm: our persists are real cache-line flushes,
# PMEM_IS_PMEM_FORCE=1, standing in for persistent memory; Redis's fsync
# costs next to nothing there) and a disk file system (our persists are
# msyncs, Redis's fsyncs). Collects the JSON lines into a results directory
# and writes a CSV, a markdown report and a plot with
# benchmarks/kv_compare_report.py.
#
# Usage: benchmarks/run_kv_compare.sh [-h] [--quick] [RESULTS_DIR]
#   --quick          smoke run: 10000 keys, 0.3 s runs, small logs, ofi+tcp
#                    clients warmed with 100 keys (about 2 minutes)
#   RESULTS_DIR      default benchmarks/results (relative to the repository)
# Environment:
#   BAZEL, BAZEL_STARTUP_FLAGS, PYTHON, SKIP_BUILD=1   as for run_onll.sh
#   BAZEL_BUILD_FLAGS   default "--config=opt --jobs=2"
#   KV_COMPARE_TMPFS    parent of the tmpfs directory (default /dev/shm)
#   KV_COMPARE_DISK     parent of the disk directory (default /var/tmp);
#                       refused if it is on tmpfs
#   KV_RUN_LIMIT_S      a process running longer is killed and recorded as
#                       such (default 600)
#
# How each system runs (benchmarks/README.md, "The store against Redis and
# memcached", says why):
#   - every client busy-polls (non-blocking socket, recv(MSG_DONTWAIT) in a
#     loop), as the store's clients do; one extra row measures Redis GET
#     with blocking clients (workload B, 1 thread, durable Redis on tmpfs),
#     so the cost of sleeping in recv() on this machine is measured;
#   - the servers are pinned to the last CPU (taskset) and the clients to
#     the others, as kv_bench splits the CPUs between its nodes and its
#     clients over tcp; memcached runs one worker thread (-t 1), as Redis
#     and each of our nodes have one;
#   - ours over tcp: create and load go through local: (the same pools; a
#     tcp load of 100000 keys would take most of an hour, see the README),
#     each client warms its cache with the 1000 most popular keys only;
#   - ours on disk: loaded with cache-line flushes, then every pool is
#     written back and reopened with msync durability before the clients
#     open (kv_bench --load-durability pmem): an msync per persist makes a
#     load of 100000 keys take about 10 minutes;
#   - each server starts empty in a fresh directory and is stopped after
#     its runs; a trap stops it (and removes the directories) on any exit,
#     Ctrl-C included. Services the packages may have started are neither
#     used nor touched.
#
# Exit status: 0 done; 1 the build failed, redis-server or memcached is
# missing (run tools/setup.sh), a server did not start, or some run failed
# (its JSON line says how; the report is still written); 2 bad usage; 3
# report written without plots (no matplotlib).
set -euo pipefail

prog=run_kv_compare
quick=0
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	*) args+=("$1") ;;
	esac
	shift
done
export BAZEL_BUILD_FLAGS="${BAZEL_BUILD_FLAGS:---config=opt --jobs=2}"
# shellcheck source=benchmarks/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
bench_init "${args[@]+"${args[@]}"}"
if [ ${#bench_flags[@]} -gt 0 ]; then
	echo "$prog: no benchmark flags are taken (try --help)" >&2
	exit 2
fi

for tool in redis-server memcached taskset; do
	if ! command -v "$tool" >/dev/null; then
		echo "$prog: $tool not found; run tools/setup.sh (as root) first" >&2
		exit 1
	fi
done

bench_build //benchmarks:kv_bench || exit 1
bench_build //benchmarks:kv_compare_bench || exit 1
bench_locate
limit="${KV_RUN_LIMIT_S:-600}"
last_cpu=$(($(nproc) - 1))

if [ "$quick" = 1 ]; then
	keys=10000 duration=300 tcp_warm=100 ours=(--max-clients=12 --log-mb=8)
else
	keys=100000 duration=3000 tcp_warm=1000 ours=()
fi
common=(--workloads=A,B --threads=1,4 --keys="$keys" --duration-ms="$duration")

# Everything this script starts or makes, for the trap: the benchmark
# process running (timeout passes a SIGTERM on to it), the server, the
# directories.
bench_pid=""
server_pid=""
dirs=()
lines="$(mktemp "${TMPDIR:-/tmp}/kv_compare.XXXXXX")"
cleanup() {
	local pid
	for pid in "$bench_pid" "$server_pid"; do
		if [ -n "$pid" ]; then
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	bench_pid="" server_pid=""
	rm -rf "${dirs[@]+"${dirs[@]}"}" "$lines" "$lines.one"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tmpfs_dir="$(mktemp -d "${KV_COMPARE_TMPFS:-/dev/shm}/kv_compare.XXXXXX")"
dirs+=("$tmpfs_dir")
disk_dir="$(mktemp -d "${KV_COMPARE_DISK:-/var/tmp}/kv_compare.XXXXXX")"
dirs+=("$disk_dir")
tmpfs_fs="$(stat -f -c %T "$tmpfs_dir")"
disk_fs="$(stat -f -c %T "$disk_dir")"
if [ "$disk_fs" = tmpfs ] || [ "$disk_fs" = ramfs ]; then
	echo "$prog: $disk_dir is on $disk_fs, not a disk file system (set KV_COMPARE_DISK)" >&2
	exit 2
fi
echo "$prog: tmpfs medium $tmpfs_dir ($tmpfs_fs), disk medium $disk_dir ($disk_fs)" >&2

status=0
# run NAME CMD...: one benchmark process into $lines, within the limit; a
# killed one leaves a line saying so. Each line gets the 1-minute load
# average at the process's end ("load_avg_1m"): other work on the machine
# moves the numbers, and the report shows by how much it was there. In the
# background, so that Ctrl-C interrupts the wait at once (timeout runs it
# in a process group of its own, which the terminal's signal does not
# reach).
run() {
	local name="$1" rc=0 load _
	shift
	echo "$prog: $*" >&2
	timeout --signal=KILL "$limit" "$@" >"$lines.one" &
	bench_pid=$!
	wait "$bench_pid" || rc=$?
	bench_pid=""
	read -r load _ </proc/loadavg
	if [ "$rc" = 137 ]; then
		printf '{"bench":"%s","killed_after_s":%s,"ok":false}\n' "$name" "$limit" >>"$lines.one"
		# a killed kv_bench leaves its pools
		rm -f "$tmpfs_dir"/kv_bench.* "$disk_dir"/kv_bench.*
	fi
	sed "s/^{/{\"load_avg_1m\":$load,/" "$lines.one" >>"$lines"
	if [ "$rc" != 0 ]; then
		status=1
		echo "$prog: exit status $rc" >&2
	fi
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server NAME CMD...: CMD (with the port in $port) on the last CPU;
# waits until it accepts connections. Tries three ports.
start_server() {
	local name="$1" try i
	shift
	for try in 1 2 3; do
		port="$(free_port)"
		taskset -c "$last_cpu" "${@//@PORT@/$port}" &
		server_pid=$!
		for i in $(seq 100); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				echo "$prog: $name on 127.0.0.1:$port (pid $server_pid, cpu $last_cpu)" >&2
				return 0
			fi
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=""
	done
	echo "$prog: $name did not start" >&2
	return 1
}

stop_server() {
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

# redis MEDIUM DIR DURABLE: Redis in a fresh directory under DIR, the
# workloads against it, stopped.
redis() {
	local medium="$1" dir="$2/redis.$1.$3" persist
	mkdir -p "$dir"
	if [ "$3" = durable ]; then
		persist=(--appendonly yes --appendfsync always --save '')
	else
		persist=(--appendonly no --save '')
	fi
	start_server "redis ($3, $medium)" redis-server --port @PORT@ --bind 127.0.0.1 \
		--dir "$dir" "${persist[@]}" --daemonize no --logfile "$dir/redis.log" || {
		status=1
		return 0
	}
	run kv_compare "$bench_bin/kv_compare_bench" --target=redis --addr="127.0.0.1:$port" \
		--label="$medium" "${common[@]}"
	if [ "$3" = durable ] && [ "$medium" = tmpfs ]; then
		run kv_compare "$bench_bin/kv_compare_bench" --target=redis --addr="127.0.0.1:$port" \
			--label="$medium" --poll=block --workloads=B --threads=1 --keys="$keys" \
			--duration-ms="$duration"
	fi
	stop_server
}

start=$(date +%s)
load_start="$(python3 -c 'import json, os; print(json.dumps(list(os.getloadavg())))')"
for medium in tmpfs disk; do
	if [ "$medium" = tmpfs ]; then
		dir="$tmpfs_dir" durability=(--durability=pmem)
	else
		dir="$disk_dir" durability=(--durability=msync --load-durability=pmem)
	fi
	run kv "$bench_bin/kv_bench" --transport=local --systems=swarm --value-sizes=64 \
		--pool-dir="$dir" "${durability[@]}" --label="$medium" "${common[@]}" \
		"${ours[@]+"${ours[@]}"}"
	run kv "$bench_bin/kv_bench" --transport=tcp --load-local --warm="$tcp_warm" \
		--systems=swarm --value-sizes=64 --pool-dir="$dir" "${durability[@]}" \
		--label="$medium" "${common[@]}" "${ours[@]+"${ours[@]}"}"
	if [ "$medium" = tmpfs ]; then
		run kv "$bench_bin/kv_bench" --transport=tcp --node-poll=busy --load-local \
			--warm="$tcp_warm" --systems=swarm --value-sizes=64 --pool-dir="$dir" \
			"${durability[@]}" --label="$medium" "${common[@]}" "${ours[@]+"${ours[@]}"}"
	fi
	redis "$medium" "$dir" durable
done
redis none "$tmpfs_dir" volatile
mc_user=()
[ "$(id -u)" = 0 ] && mc_user=(-u root) # memcached refuses root without it
if start_server memcached memcached -l 127.0.0.1 -p @PORT@ -U 0 -t 1 -m 1024 \
	"${mc_user[@]+"${mc_user[@]}"}"; then
	run kv_compare "$bench_bin/kv_compare_bench" --target=memcached --addr="127.0.0.1:$port" \
		--label=none "${common[@]}"
	stop_server
else
	status=1
fi
run kv_compare "$bench_bin/kv_compare_bench" --target=echo --label=none "${common[@]}"
run kv_compare "$bench_bin/kv_compare_bench" --target=cacheline --label=none "${common[@]}"
elapsed=$(($(date +%s) - start))
ours_flags="${ours[*]+"${ours[*]}"}"

bench_collect "$lines" "$results/kv_compare.json" \
	load_avg="$load_start" quick="$([ "$quick" = 1 ] && echo true || echo false)" \
	elapsed_s="$elapsed" \
	flags="${common[*]}; ours: ${ours_flags:-the defaults}; tcp: --load-local --warm=$tcp_warm; disk: --durability=msync --load-durability=pmem" \
	tmpfs_dir="$tmpfs_dir ($tmpfs_fs)" disk_dir="$disk_dir ($disk_fs)" \
	load_avg_end="$(python3 -c 'import json, os; print(json.dumps(list(os.getloadavg())))')" \
	servers_cpu="$last_cpu" \
	note="wall-clock numbers from a 2-core machine shared with other work: indicative only; 4 client threads share one core with busy polling"

rstatus=0
bench_report kv_compare_report.py "$results/kv_compare.json" || rstatus=$?
echo "$prog: results in $results (kv_compare.json, kv_compare_runs.csv, kv_compare_report.md, kv_compare_latency.png)" >&2
[ "$status" != 0 ] && exit "$status"
exit "$rstatus"
