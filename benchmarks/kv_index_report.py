#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kv_index_report.py -- turn the JSON of benchmarks/run_kv_index.sh (the
lines of benchmarks/kv_index_bench, one per configuration, under a
context) into a CSV of every workload run, a markdown report and a PNG plot.

Writes into the output directory:

  kv_index_runs.csv    one row per configuration x repetition x workload:
                       transport, nodes, down, threads, repetition (rep),
                       ops/s, latency percentiles,
                       round-trip percentiles, per-op counters, errors
  kv_index_report.md   the targets (replicated lookup latency <= 1.3x the
                       unreplicated one at the same transport and threads;
                       round trips per op: lookup 1, insert of a new key 2,
                       insert with one node of three down at most 3), the
                       latency ratios, round trips per op at p50/p99/max,
                       counters per op, absolute numbers, and everything
                       that went wrong (errors, wrong answers, damaged
                       words, hangs, killed runs)
  kv_index_latency.png latency p50 and p99 against threads, per transport
                       and workload, one line per group (1 node, 3 nodes,
                       3 nodes with one down)

The ratios are of medians of repetitions made in turn seconds apart by the
same script (run_kv_index.sh --repeat); the wall-clock numbers come from whatever machine ran them (the committed ones
from a 2-core machine shared with other work: indicative). Round trips are
the index's own counter (kv_index_stats.rounds): with local: nodes they
depend on the threads' interleaving only; over tcp on a slow machine they
also count rounds repeated because one missed its quorum.

Exit status: 0 done; 2 bad usage or no usable input; 3 CSV and markdown
written but plots skipped (no matplotlib).
"""

import argparse
import statistics
import sys

from report_util import axis_threads, fmt, fmt_rate, header, save_figure
import report_util

TRANSPORTS = ["local", "tcp"]
GROUPS = [(1, 0), (3, 0), (3, 1)]
GROUP_NAME = {(1, 0): "1 node", (3, 0): "3 nodes", (3, 1): "3 nodes, 1 down"}
WORKLOADS = ["lookup_hit", "lookup_miss", "insert"]
ALL_WORKLOADS = ["load", "warm"] + WORKLOADS + ["check"]
RATIO_TARGET = 1.3
# Round trips per operation the issue asks for: (group, workload) -> at most.
RT_TARGET = {
    ((3, 0), "lookup_hit"): 1, ((3, 0), "lookup_miss"): 1, ((3, 0), "insert"): 2,
    ((3, 1), "lookup_hit"): 1, ((3, 1), "lookup_miss"): 1, ((3, 1), "insert"): 3,
    ((1, 0), "lookup_hit"): 1, ((1, 0), "lookup_miss"): 1, ((1, 0), "insert"): 2,
}
COLS = ["transport", "nodes", "down", "threads", "rep", "workload", "ops", "secs", "ops_per_s",
        "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_max_ns", "lat_mean_ns",
        "rt_p50", "rt_p90", "rt_p99", "rt_max", "rt_mean",
        "fast", "fast_won", "resolves", "splits", "key_reads", "forwards",
        "errors", "wrong", "bad_words", "unavailable", "first_error", "run_ok", "pin"]

report_util._prog = "kv_index_report"
log = report_util.log


def rows_of(runs):
    """One dict per configuration x workload; runs that produced no
    workloads (setup error, hang, killed) give none."""
    rows = []
    for r in runs:
        for w, v in (r.get("workloads") or {}).items():
            lat, rt, per, tot = v["lat_ns"], v["rounds"], v["per_op"], v["totals"]
            rows.append({
                "transport": r["transport"], "nodes": r["nodes"], "down": r["down"],
                "threads": r["threads"], "rep": r.get("label", ""), "workload": w,
                "ops": v["ops"], "secs": v["secs"],
                "ops_per_s": v["ops_per_s"],
                "lat_p50_ns": lat["p50"], "lat_p90_ns": lat["p90"], "lat_p99_ns": lat["p99"],
                "lat_max_ns": lat["max"], "lat_mean_ns": lat["mean"],
                "rt_p50": rt["p50"], "rt_p90": rt["p90"], "rt_p99": rt["p99"],
                "rt_max": rt["max"], "rt_mean": rt["mean"], "hist": rt.get("hist", {}),
                "fast": per["fast"], "fast_won": per["fast_won"], "resolves": per["resolves"],
                "splits": per["splits"], "key_reads": per["key_reads"],
                "forwards": per["forwards"],
                "errors": sum(v["errors"].values()),
                "error_kinds": v["errors"], "wrong": v["wrong"],
                "bad_words": tot["bad_words"], "unavailable": tot["unavailable"],
                "first_error": v.get("first_error", ""), "run_ok": r.get("ok"),
                "pin": r.get("pin", ""),
            })
    return rows


def merged(reps):
    """One configuration's repetitions (run_kv_index.sh --repeat) as one
    row: the median of each latency and rate, so that a ratio compares
    medians of runs made in turn seconds apart; round trips at their worst;
    failures summed."""
    m = dict(reps[-1])
    for f in ("secs", "ops_per_s", "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_mean_ns"):
        m[f] = statistics.median(r[f] for r in reps)
    for f in ("lat_max_ns", "rt_p50", "rt_p90", "rt_p99", "rt_max", "rt_mean"):
        m[f] = max(r[f] for r in reps)
    for f in ("errors", "wrong", "bad_words", "unavailable"):
        m[f] = sum(r[f] for r in reps)
    m["reps"] = len(reps)
    return m


class Index:
    def __init__(self, rows):
        by_cell = {}
        for r in rows:
            if r["ops"] > 0:
                key = (r["transport"], r["nodes"], r["down"], r["threads"], r["workload"])
                by_cell.setdefault(key, []).append(r)
        self.cells = {k: merged(v) for k, v in by_cell.items()}
        self.threads = sorted({r["threads"] for r in rows})
        self.transports = [t for t in TRANSPORTS if any(r["transport"] == t for r in rows)]

    def get(self, tr, g, n, w, field):
        c = self.cells.get((tr, g[0], g[1], n, w))
        return None if c is None else c[field]

    def ratio(self, tr, g, n, w, field):
        num, den = self.get(tr, g, n, w, field), self.get(tr, (1, 0), n, w, field)
        return num / den if num and den else None


def us(ns):
    return "-" if ns is None else ("%.1f" % (ns / 1000.0) if ns < 1e7 else "%.0f" % (ns / 1000.0))


def fmt_ratio(x):
    if x is None:
        return "-"
    s = fmt(x)
    return s if x <= RATIO_TARGET else "**%s**" % s


def rt_cell(ix, tr, g, n, w):
    p50, p99, mx = (ix.get(tr, g, n, w, f) for f in ("rt_p50", "rt_p99", "rt_max"))
    if p50 is None:
        return "-"
    tgt = RT_TARGET.get((g, w))
    cell = "%d / %d / %d" % (p50, p99, mx)
    return "**%s**" % cell if tgt is not None and p99 > tgt else cell


def targets(ix):
    out = ["| target | measured | met |", "|---|---|---|"]
    for tr in ix.transports:
        for g in [(3, 0), (3, 1)]:
            for pct in ("lat_p50_ns", "lat_p99_ns"):
                rs = [(n, w, ix.ratio(tr, g, n, w, pct)) for n in ix.threads
                      for w in ("lookup_hit", "lookup_miss")]
                rs = [x for x in rs if x[2] is not None]
                if not rs:
                    continue
                worst = max(rs, key=lambda x: x[2])
                out.append("| %s lookup %s latency, %s / 1 node <= %.1fx (indicative) | "
                           "%s..%s over %d points (worst: %s, %d threads) | %s |" % (
                               tr, pct[4:7], GROUP_NAME[g], RATIO_TARGET,
                               fmt(min(x[2] for x in rs)), fmt(worst[2]), len(rs), worst[1],
                               worst[0], "yes" if worst[2] <= RATIO_TARGET else "**no**"))
    for g in [(3, 0), (3, 1), (1, 0)]:
        for w in WORKLOADS:
            tgt = RT_TARGET[(g, w)]
            for pct in ("rt_p50", "rt_p99"):
                vals = [(tr, n, ix.get(tr, g, n, w, pct)) for tr in ix.transports
                        for n in ix.threads]
                vals = [v for v in vals if v[2] is not None]
                if not vals:
                    continue
                hi = max(vals, key=lambda v: v[2])
                out.append("| %s, %s round trips %s <= %d | %d..%d over %d runs%s | %s |" % (
                    GROUP_NAME[g], w, pct[3:], tgt, min(v[2] for v in vals), hi[2], len(vals),
                    "" if hi[2] <= tgt else " (highest: %s, %d threads)" % (hi[0], hi[1]),
                    "yes" if hi[2] <= tgt else "**no**"))
    return out


def markdown(ix, rows, runs, context):
    out = header(
        "Replicated key index (kv/index.h)",
        "benchmarks/kv_index_bench via benchmarks/run_kv_index.sh: lookups of loaded keys "
        "(lookup_hit), lookups of absent keys (lookup_miss) and inserts of new keys (insert) on "
        "1 memory node (the unreplicated baseline), 3 nodes, and 3 nodes with one down from the "
        "start, with 1-8 client threads (one kv_index handle each), nodes in the benchmark's "
        "process on /dev/shm pools (PMEM durability, real clwb+sfence), reached as `local:` or "
        "over `ofi+tcp` on 127.0.0.1. Latency is CLOCK_MONOTONIC per operation; round trips are "
        "the difference of `kv_index_stats.rounds` around each operation. The three groups of a "
        "transport and thread count run back to back, `repeat` times in turn; each cell is the "
        "median of a configuration's repetitions (round trips: the worst), so every ratio "
        "compares medians of runs made seconds apart.",
        context, ("quick", "repeat", "elapsed_s"))
    out.append("")
    out.append("**Wall-clock numbers are indicative only** (%s). Round trips per operation are "
               "the index's own counter: with `local:` they depend on the interleaving of the "
               "threads only; over tcp on a loaded machine they also count the retries that slow "
               "rounds cause (a round that misses its quorum is counted and repeated)." %
               context.get("note", "machine unknown"))
    if context.get("flags"):
        out.append("")
        out.append("Bench flags: `%s`." % context["flags"])
    pins = sorted({r.get("pin", "") for r in runs if r.get("pin") and r["pin"] != "none"})
    if pins:
        out.append("")
        out.append("CPU placement for tcp: %s (a node thread sharing a core with a spinning "
                   "client waits for the scheduler tick on every round trip)." % "; ".join(pins))

    out.append("\n## Targets\n")
    out.extend(targets(ix))

    out.append("\n## Lookup latency, replicated / unreplicated\n")
    out.append("Latency of the group over the 1-node latency at the same transport and thread "
               "count (p50 and p99); above %.1fx in bold. Last columns: the 1-node baseline "
               "in us." % RATIO_TARGET)
    for tr in ix.transports:
        out.append("\n### %s\n" % tr)
        out.append("| threads | hit p50 3n | hit p99 3n | miss p50 3n | miss p99 3n | "
                   "hit p50 3n-1 | hit p99 3n-1 | miss p50 3n-1 | miss p99 3n-1 | "
                   "insert p50 3n | insert p50 3n-1 | 1n hit p50/p99 us | 1n miss p50/p99 us |")
        out.append("|---" * 13 + "|")
        for n in ix.threads:
            cells = []
            for g in [(3, 0), (3, 1)]:
                for w in ("lookup_hit", "lookup_miss"):
                    for pct in ("lat_p50_ns", "lat_p99_ns"):
                        cells.append(fmt_ratio(ix.ratio(tr, g, n, w, pct)))
            ins = [fmt(ix.ratio(tr, g, n, "insert", "lat_p50_ns")) for g in [(3, 0), (3, 1)]]
            base = ["%s / %s" % (us(ix.get(tr, (1, 0), n, w, "lat_p50_ns")),
                                 us(ix.get(tr, (1, 0), n, w, "lat_p99_ns")))
                    for w in ("lookup_hit", "lookup_miss")]
            out.append("| %d | %s |" % (n, " | ".join(cells + ins + base)))

    out.append("\n## Round trips per operation (p50 / p99 / max)\n")
    out.append("From kv_index_stats.rounds around each operation. Bold: p99 above the target "
               "(lookup 1; insert 2, or 3 with one node down).")
    for tr in ix.transports:
        out.append("\n### %s\n" % tr)
        out.append("| group | threads | load | warm | lookup_hit | lookup_miss | insert | "
                   "insert: fast / won / resolves / splits / forwards per op |")
        out.append("|---|---|---|---|---|---|---|---|")
        for g in GROUPS:
            for n in ix.threads:
                if ix.get(tr, g, n, "lookup_hit", "rt_p50") is None and \
                        ix.get(tr, g, n, "load", "rt_p50") is None:
                    continue
                per = "-"
                if ix.get(tr, g, n, "insert", "ops"):
                    per = " / ".join(fmt(ix.get(tr, g, n, "insert", f)) for f in
                                     ("fast", "fast_won", "resolves", "splits", "forwards"))
                out.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
                    GROUP_NAME[g], n, rt_cell(ix, tr, g, n, "load"),
                    rt_cell(ix, tr, g, n, "warm"), rt_cell(ix, tr, g, n, "lookup_hit"),
                    rt_cell(ix, tr, g, n, "lookup_miss"), rt_cell(ix, tr, g, n, "insert"),
                    per))

    out.append("\n## Insert round-trip distribution\n")
    out.append("Share of inserts by round trips (all thread counts of a group together).")
    out.append("\n| transport | group | inserts | 2 | 3 | 4 | 5-9 | 10-19 | 20-99 | >= 100 |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for tr in ix.transports:
        for g in GROUPS:
            hist = {}
            for r in rows:
                if (r["transport"], r["nodes"], r["down"], r["workload"]) == (tr, g[0], g[1],
                                                                              "insert"):
                    for k, c in r["hist"].items():
                        hist[int(k)] = hist.get(int(k), 0) + c
            total = sum(hist.values())
            if not total:
                continue
            bins = [(0, 2), (3, 3), (4, 4), (5, 9), (10, 19), (20, 99), (100, 1 << 62)]
            cells = ["%.1f%%" % (100.0 * sum(c for k, c in hist.items() if lo <= k <= hi) / total)
                     for lo, hi in bins]
            out.append("| %s | %s | %d | %s |" % (tr, GROUP_NAME[g], total, " | ".join(cells)))

    out.append("\n## Absolute numbers (indicative)\n")
    out.append("ops/s over the run's span (all threads), latency p50 / p90 / p99 / max in us.")
    for tr in ix.transports:
        out.append("\n### %s\n" % tr)
        out.append("| group | threads | workload | ops | ops/s | p50 | p90 | p99 | max |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for g in GROUPS:
            for n in ix.threads:
                for w in WORKLOADS:
                    ops = ix.get(tr, g, n, w, "ops")
                    if not ops:
                        continue
                    out.append("| %s | %d | %s | %d | %s | %s | %s | %s | %s |" % (
                        GROUP_NAME[g], n, w, ops, fmt_rate(ix.get(tr, g, n, w, "ops_per_s")),
                        us(ix.get(tr, g, n, w, "lat_p50_ns")), us(ix.get(tr, g, n, w, "lat_p90_ns")),
                        us(ix.get(tr, g, n, w, "lat_p99_ns")), us(ix.get(tr, g, n, w, "lat_max_ns"))))

    out.append("\n## What went wrong\n")
    problems = []
    for r in runs:
        name = "%s, %s, %d threads%s" % (r.get("transport"), GROUP_NAME.get(
            (r.get("nodes"), r.get("down")), "%s nodes %s down" % (r.get("nodes"), r.get("down"))),
            r.get("threads", 0), ", " + r["label"] if r.get("label") else "")
        if r.get("setup_error"):
            problems.append("- %s: setup failed: %s" % (name, r["setup_error"]))
        if r.get("open_error"):
            problems.append("- %s: kv_index_open failed: %s" % (name, r["open_error"]))
        if r.get("hang"):
            h = r["hang"]
            problems.append("- %s: **hang**: thread %s in %s, one call running for %s ms after "
                            "%s calls of that phase" % (name, h.get("thread"), h.get("phase"),
                                                         h.get("call_ms"),
                                                         h.get("calls_done_in_phase")))
        if r.get("killed_after_s"):
            problems.append("- %s: killed at the run limit (%s s)" % (name, r["killed_after_s"]))
        for w, v in (r.get("workloads") or {}).items():
            bits = []
            if v["errors"]:
                bits.append("errors " + ", ".join("%s x%d" % kv for kv in v["errors"].items()))
            if v["wrong"]:
                bits.append("%d wrong answers" % v["wrong"])
            if v["totals"]["bad_words"]:
                bits.append("%d words failed validation (kv_index_stats.bad_words)" %
                            v["totals"]["bad_words"])
            if bits:
                first = (" (first error: %s)" % v["first_error"]) if v.get("first_error") else ""
                if v.get("first_wrong"):
                    first += " (first wrong answer: %s)" % v["first_wrong"]
                problems.append("- %s, %s: %s%s" % (name, w, "; ".join(bits), first))
    out.extend(problems or ["Nothing: no errors, wrong answers, damaged words, hangs or failed "
                            "setups."])
    return out


def plot(plt, ix, outdir):
    trs = ix.transports
    fig, axes = plt.subplots(len(trs), len(WORKLOADS), figsize=(13, 4 * len(trs)), squeeze=False)
    colors = {(1, 0): "tab:gray", (3, 0): "tab:blue", (3, 1): "tab:red"}
    for i, tr in enumerate(trs):
        for j, w in enumerate(WORKLOADS):
            ax = axes[i][j]
            for g in GROUPS:
                for pct, style in (("lat_p50_ns", "-"), ("lat_p99_ns", ":")):
                    pts = [(n, ix.get(tr, g, n, w, pct)) for n in ix.threads]
                    pts = [(n, v / 1000.0) for n, v in pts if v]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                                color=colors[g],
                                label="%s %s" % (GROUP_NAME[g], pct[4:7]))
            axis_threads(ax, ix.threads)
            ax.set_yscale("log")
            ax.set_ylabel("latency (us, log)")
            ax.set_title("%s: %s" % (tr, w))
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.suptitle("kv/index.h latency vs threads (p50 solid, p99 dotted; 2-core shared machine: "
                 "indicative)", fontsize=10)
    save_figure(plt, fig, outdir, "kv_index_latency.png")


def main(argv):
    p = argparse.ArgumentParser(prog="kv_index_report.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="kv_index.json files (default: "
                   "kv_index.json in --results)")
    p.add_argument("--results", default="benchmarks/results")
    p.add_argument("--out", default=None, help="output directory (default: --results)")
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args(argv)
    return report_util.report_lines(args, "kv_index", rows_of, COLS, Index, markdown, plot)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
