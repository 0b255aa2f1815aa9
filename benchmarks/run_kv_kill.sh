#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/run_kv_kill.sh -- the dip and recovery of a running workload
# when a *client* is SIGKILLed under load (issue 18): three dmkv-node
# daemons over ofi+tcp on this machine (`dmkv cluster up`), a short client
# lease (lease_ms = 2000, timeout_ms = 1000: the others free a silent
# client's id after D = (L + T) + (L + T)/16 = 3.19 s), 1000 records loaded, then two
# `dmkv bench` processes, YCSB-A, one client thread each, on the same
# records: the measured one for 40 s, and a victim (another seed, its
# output discarded) that this script SIGKILLs 10 s into the measured run.
#
# When the victim's id is freed, two ways:
# - the measured bench's timeline: its client is the only one left to
#   watch the victim's claim word, and each 0.5 s interval carries the ids
#   it has freed so far (kv_stats.ids_freed, "ids_freed" in the JSON): the
#   first interval after the kill where that rises is the repair, to
#   within the interval;
# - the nodes: from before the benches start to the measured one's end,
#   `dmkv --json status` in a loop (0.25 s between polls; a poll takes 1-4 s
#   here, most of it libfabric's setup of its four connections, and opens a
#   client of its own, with the cluster's 1 s operation timeout) for the client ids
#   registered, ids_freed and hazards_cleared on every node: the first
#   poll after the kill showing ids_freed risen and an id fewer registered
#   on a majority brackets the repair (with the poll before), and confirms
#   it. The polls cost CPU in every phase alike.
#
# The measured bench's final check reads every record back. Writes to
# RESULTS_DIR kv_kill.json (the measured bench's JSON, with the events and,
# under "client_kill", the repair and the polls), kv_kill.csv (its
# timeline) and kv_kill.png (benchmarks/kv_report.py --dmkv), and prints
# the throughput of each phase (before the kill, from the kill until the
# id is freed, after) as a ratio to the one before, and the repair time
# (kill -> id freed) against L and D. Event times are this script's clock
# from the measured bench's start (the bench connects first: up to a few
# tenths of a second early). The victim shares the 2 cores: once it is
# dead the survivor may run faster, which the ratios then show and the
# summary says.
#
# Usage: benchmarks/run_kv_kill.sh [-h] [RESULTS_DIR]
#   RESULTS_DIR      default benchmarks/results (relative to the repository)
# Environment: BAZEL, BAZEL_STARTUP_FLAGS, BAZEL_BUILD_FLAGS, PYTHON,
# SKIP_BUILD=1 as for run_onll.sh; KV_KILL_SECONDS (default 40: the
# measured run), KV_KILL_AT (default 10: seconds into it of the kill).
#
# Exit status: 0 done; 1 the build or a step failed, the victim's id was
# not freed by the end of the run, or the bench found a lost or wrong
# record; 2 bad usage.
set -euo pipefail
prog=run_kv_kill.sh
. "$(dirname "$0")/bench_lib.sh"
bench_init "$@"
bench_build //kv:dmkv
bench_build //rdma:dmkv-node
bin="$("$BAZEL" "${startup[@]}" info "${build[@]}" bazel-bin 2>/dev/null)"
export PATH="$bin/rdma:$PATH"
dmkv="$bin/kv/dmkv"
seconds="${KV_KILL_SECONDS:-40}"
kill_at="${KV_KILL_AT:-10}"
lease_ms=2000
timeout_ms=1000

load0="$(cut -d' ' -f1-3 /proc/loadavg)"
bench_locate # bench_commit, for the JSON

dir="$(mktemp -d /tmp/kv-kill.XXXXXX)"
conf="$dir/dmkv.conf"
victim=""
poller=""
cleanup() {
	[ -z "$victim" ] || kill -9 "$victim" 2>/dev/null || true
	if [ -n "$poller" ]; then
		: >"$dir/stop"
		wait "$poller" 2>/dev/null || true
	fi
	"$dmkv" --config "$conf" cluster down --purge >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
base=$((20000 + RANDOM % 20000))
# connect_timeout_ms: libfabric's setup of a connection takes most of a
# second on this loaded 2-core machine, and a client that cannot connect
# to a majority within it fails to open (exit 69).
printf '[cluster]\nnodes = ofi+tcp://127.0.0.1:%d, ofi+tcp://127.0.0.1:%d, ofi+tcp://127.0.0.1:%d\ntimeout_ms = %d\nconnect_timeout_ms = 5000\n[create]\nmax_clients = 8\nlog_bytes = 8M\nlease_ms = %d\n' \
	"$base" $((base + 1)) $((base + 2)) "$timeout_ms" "$lease_ms" >"$conf"
"$dmkv" --config "$conf" cluster up --records 20000 --value-size 100 >&2
# One loader: four miss the 1 s operation timeout on a loaded machine.
"$dmkv" --config "$conf" --quiet load --records 1000 --loaders 1 >&2

now() { date +%s.%N; }
# One line per poll: its start, its end, its exit status, `dmkv --json
# status` (one line); its messages to polls.err.
poll() {
	local t0 out rc
	while [ ! -e "$dir/stop" ]; do
		t0=$(now)
		rc=0
		out="$("$dmkv" --config "$conf" --json status 2>>"$dir/polls.err")" || rc=$?
		[ -n "$out" ] || out='{}'
		echo "$t0 $(now) $rc $out" >>"$dir/polls"
		sleep 0.25
	done
}
poll &
poller=$!
# start_bench OUT ARGS...: `dmkv bench ARGS` in the background, its pid in
# $started, its start time in $launched; again (three tries) if it exits
# within 3 s: opening a client can fail on a loaded machine (exit 69).
start_bench() {
	local out="$1" try
	shift
	for try in 1 2 3; do
		launched=$(now)
		"$dmkv" --config "$conf" --quiet bench "$@" >"$out" 2>&1 &
		started=$!
		sleep 3
		kill -0 "$started" 2>/dev/null && return 0
		wait "$started" || true
		echo "$prog: a bench did not start (try $try):" >&2
		cat "$out" >&2
	done
	echo "$prog: giving up" >&2
	return 1
}
start_bench "$dir/victim.out" --records 1000 --duration $((seconds + 60)) --warmup 0 \
	--threads 1 --workload A --seed 2 --no-verify
victim=$started
start_bench "$dir/bench.out" --records 1000 --duration "$seconds" --warmup 0 --threads 1 \
	--workload A --interval 0.5 --json-out "$results/kv_kill.json" \
	--csv-out "$results/kv_kill.csv"
bench=$started
start=$launched
sleep "$(awk "BEGIN { t = $start + $kill_at - $(now); print (t > 0 ? t : 0) }")"
kill -0 "$victim" 2>/dev/null || {
	cat "$dir/victim.out" >&2
	echo "$prog: the victim bench exited before the kill" >&2
	exit 1
}
killed=$(now)
kill -9 "$victim"
wait "$victim" 2>/dev/null || true
victim=""
rc=0
wait "$bench" || rc=$?
: >"$dir/stop"
wait "$poller" || true
poller=""
cat "$dir/bench.out" >&2
[ "$rc" = 0 ] || { echo "$prog: the bench exited $rc" >&2; exit 1; }

# The repair: from the measured bench's timeline (the first interval after
# the kill whose ids_freed is above the last one before it) and from the
# polls (the first begun after the kill that shows ids_freed summed over
# the nodes above the last poll ended before it, and fewer ids registered
# than then on a majority: an id left behind by something else and freed
# meanwhile would not do both). Into the JSON under "client_kill"; prints
# the --event arguments.
mapfile -t events < <(python3 - "$dir/polls" "$results/kv_kill.json" "$start" "$killed" \
	"$lease_ms" "$timeout_ms" "$bench_commit" "$load0" "$dir/polls.err" <<'PY'
import datetime, json, os, sys
polls_path, json_path = sys.argv[1:3]
start, killed = float(sys.argv[3]), float(sys.argv[4])
lease_ms, timeout_ms = int(sys.argv[5]), int(sys.argv[6])
context = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "git_commit": sys.argv[7], "num_cpus": os.cpu_count(),
           "load_avg_start": [float(x) for x in sys.argv[8].split()],
           "load_avg_end": list(os.getloadavg())}
with open(json_path, encoding="utf-8") as f:
    doc = json.load(f)
k = killed - start
iv = doc["config"]["interval_ms"] / 1e3
out = {"context": context, "lease_ms": lease_ms, "timeout_ms": timeout_ms,
       "suspicion_s": (lease_ms + timeout_ms) * 17 / 16e3, "kill_t_s": round(k, 3)}

# The survivor's timeline.
tl = [p for p in doc.get("timeline", []) if "ids_freed" in p]
if tl:
    before = [p["ids_freed"] for p in tl if p["t_s"] <= k]
    b = before[-1] if before else 0
    after = [p for p in tl if p["t_s"] > k and p["ids_freed"] > b]
    out["survivor_freed_after_kill"] = tl[-1]["ids_freed"] - b
    if after:
        # Read at the end of operations, up to 8 times an interval: freed
        # within it, or in the last eighth of the one before.
        lo, hi = max(after[0]["t_s"] - 1.125 * iv, k), after[0]["t_s"]
        out["freed"] = {"by": "timeline", "after_t_s": round(lo, 3), "by_t_s": round(hi, 3),
                        "t_s": round((lo + hi) / 2, 3), "repair_s": round((lo + hi) / 2 - k, 3),
                        "repair_lo_s": round(lo - k, 3), "repair_hi_s": round(hi - k, 3)}

# The nodes' view.
polls = []
for line in open(polls_path, encoding="utf-8"):
    t0, t1, rc, pdoc = line.split(" ", 3)
    nodes = json.loads(pdoc).get("nodes", [])
    polls.append({"t0_s": round(float(t0) - start, 3), "t1_s": round(float(t1) - start, 3),
                  "exit": int(rc), "clients": [n.get("clients") for n in nodes],
                  "ids_freed": [n.get("ids_freed") for n in nodes],
                  "hazards_cleared": [n.get("hazards_cleared") for n in nodes]})
def total(p, f):
    return sum(x or 0 for x in p[f])
base = ([p for p in polls if p["t1_s"] <= k and p["clients"]] or [None])[-1]
prev = None
for p in polls:
    fewer = sum(1 for a, c in zip(p["clients"], base["clients"] if base else [])
                if a is not None and c is not None and a < c)
    if (p["t0_s"] > k and base and p["ids_freed"] and
            total(p, "ids_freed") > total(base, "ids_freed") and fewer > len(p["clients"]) // 2):
        lo, hi = max(prev["t0_s"], k), p["t1_s"]
        out["freed_polls"] = {"after_t_s": lo, "by_t_s": hi, "repair_lo_s": round(lo - k, 3),
                              "repair_hi_s": round(hi - k, 3)}
        break
    prev = p
if "freed" not in out and "freed_polls" in out:
    fp = out["freed_polls"]
    out["freed"] = dict(fp, by="polls", t_s=round((fp["after_t_s"] + fp["by_t_s"]) / 2, 3),
                        repair_s=round((fp["after_t_s"] + fp["by_t_s"]) / 2 - k, 3))
errs = [l.strip() for l in open(sys.argv[9], encoding="utf-8", errors="replace") if l.strip()]
out.update({"before_kill": base, "poll_messages": errs[:20], "polls": polls})
doc["client_kill"] = out
with open(json_path, "w", encoding="utf-8") as f:
    json.dump(doc, f)
print("%.3f:victim SIGKILLed" % k)
if "freed" in out:
    print("%.3f:victim's id freed" % out["freed"]["t_s"])
PY
)
args=()
for e in "${events[@]}"; do args+=(--event "$e"); done
bench_report kv_report.py --dmkv "$results/kv_kill.json" --png "$results/kv_kill.png" "${args[@]}"

# The summary: repair time against L and D, what the nodes and the
# survivor counted, and whether the survivor sped up.
python3 - "$results/kv_kill.json" <<'PY' || { echo "$prog: the victim's id was not freed" >&2; exit 1; }
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
ck, tl, iv = doc["client_kill"], doc["timeline"], doc["config"]["interval_ms"] / 1e3
L, D, k = ck["lease_ms"] / 1e3, ck["suspicion_s"], ck["kill_t_s"]
c, polls = ck["context"], ck["polls"]
print("\n%s, commit %s, %d CPUs, load average %s at the start, %s at the end" % (
    c["date"], c["git_commit"], c["num_cpus"], c["load_avg_start"],
    [round(x, 2) for x in c["load_avg_end"]]))
print("L = %.2f s (lease_ms), D = (L + T) + (L + T)/16 = %.2f s, operation timeout T %.2f s" % (
    L, D, ck["timeout_ms"] / 1e3))
fr = ck.get("freed")
if fr:
    print("victim killed at %.2f s; its id freed at %.2f s (%s): repair %.2f s (%.2f to %.2f s) "
          "= %.2f L = %.2f D" % (k, fr["t_s"], "the survivor's timeline" if fr["by"] ==
          "timeline" else "dmkv status polls", fr["repair_s"], fr["repair_lo_s"],
          fr["repair_hi_s"], fr["repair_s"] / L, fr["repair_s"] / D))
else:
    print("victim killed at %.2f s; its id was NOT freed by the end of the run" % k)
if "survivor_freed_after_kill" in ck and ck["survivor_freed_after_kill"] != 1:
    print("note: the survivor freed %d ids after the kill, not 1 (an id left behind by a poll "
          "or a client that failed to open is freed the same way)" %
          ck["survivor_freed_after_kill"])
if polls:
    print("polls: %d, %.2f s each on average, %d exited non-zero, %d messages%s" % (
        len(polls), sum(p["t1_s"] - p["t0_s"] for p in polls) / len(polls),
        sum(1 for p in polls if p["exit"]), len(ck["poll_messages"]),
        (": " + "; ".join(ck["poll_messages"][:3])) if ck["poll_messages"] else ""))
base, fp = ck["before_kill"], ck.get("freed_polls")
if base:
    print("  last poll before the kill: client ids registered per node %s, ids_freed %s" % (
        base["clients"], base["ids_freed"]))
print("  the polls saw the id freed %s" % (
    "between %.2f and %.2f s after the kill" % (fp["repair_lo_s"], fp["repair_hi_s"]) if fp
    else "not at all"))
if polls:
    last = polls[-1]
    print("  last poll (%.1f-%.1f s): client ids registered per node %s, ids_freed %s, "
          "hazards_cleared %s" % (last["t0_s"], last["t1_s"], last["clients"],
                                  last["ids_freed"], last["hazards_cleared"]))
st = [ph["stats"] for ph in doc["phases"]]
print("the measured client: ids_freed %d, reregistrations %d, fenced_posts %d, lease renewals %d"
      % tuple(sum(s[f] for s in st) for f in ("ids_freed", "reregistrations", "fenced_posts",
                                               "lease_renewals")))
v = doc.get("verify", {})
print("acknowledged writes %d, failed operations %d, wrong values %d, stale reads %d; final "
      "check: %s records read back, %s lost, %s wrong, %s unreadable" % (
          doc["acked_writes"], doc["failed"], doc["wrong_values"], doc["stale_reads"],
          v.get("checked"), v.get("lost"), v.get("wrong"), v.get("unreadable")))
def rate(lo, hi):
    pts = [p for p in tl if lo < p["t_s"] <= hi]
    return sum(p["ops"] for p in pts) / (len(pts) * iv) if pts else None
pre = rate(0, k)
post = rate(fr["t_s"], float("inf")) if fr else rate(k, float("inf"))
if pre and post:
    r = post / pre
    print("throughput after / before the kill: %.2f%s" % (r, (
        ": the survivor runs faster once the victim is dead -- on 2 shared cores the victim's "
        "CPU and its contention on the same records are gone, nothing the repair did")
        if r > 1.05 else ""))
sys.exit(0 if fr else 1)
PY
