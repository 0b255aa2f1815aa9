#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kv_report.py -- turn the JSON of benchmarks/run_kv.sh (the lines of
benchmarks/kv_bench, one per configuration and system, under a context)
into a CSV, a markdown report of same-run ratios and PNG plots.

Writes into the output directory:

  kv_runs.csv         one row per configuration x system x op type (get,
                      update, all): transport, workload, value size,
                      threads, system, ops, ops/s, latency p50/p90/p99/
                      p99.9/max, round trips p50/p99/p99.9/max/mean, the
                      kv_stats totals of the run, errors, operations in
                      flight per thread
  kv_report.md        the targets (median get within 1.3x RAW, median
                      update within 2x RAW, DM-ABD median at least 1.5x
                      SWARM's, SWARM get and update at 1 round trip at p99)
                      with whether each is met, the ratios per
                      configuration, round trips per op type, counters,
                      absolute numbers, and everything that went wrong
  kv_latency.png      median and p99 latency of get and update per system
                      (bars), per transport, workload and value size, at
                      the smallest thread count and operations in flight
  kv_throughput.png   ops/s against threads per system and operations in
                      flight per thread

Every ratio is of two systems run back to back by the same kv_bench
process on fresh clusters loaded with the same keys (DESIGN.md sect. 9).
Round trips are kv_stats (rounds + index_rounds) differences around each
operation, which do not depend on the machine's speed with local: nodes
except through the interleaving of the threads; with several operations
in flight per thread (kv_async) only their mean over all operations is
known, from the run's totals.

With --dmkv RUN.json --png FILE, it draws instead the plot of one run of
`dmkv bench` or `dmkv demo` (kv/tools/dmkv): throughput and p50/p99
latency over time with the node crash and restore marked and failed
operations shown, and the latency CDF of each operation type before,
during and after the crash.

Exit status: 0 done; 2 bad usage or no usable input; 3 CSV and markdown
written but plots skipped (no matplotlib).
"""

import argparse
import json
import os
import sys

from report_util import (EXIT_NO_PLOTS, EXIT_OK, axis_threads, fmt, fmt_rate, header, pyplot,
                         save_figure)
import report_util

SYSTEMS = ["swarm", "abd", "raw"]
NAME = {"swarm": "SWARM", "abd": "DM-ABD", "raw": "RAW"}
TYPES = ["get", "update"]
TRANSPORTS = ["local", "tcp"]
GET_RAW_TARGET, UPDATE_RAW_TARGET, ABD_TARGET, RT_TARGET = 1.3, 2.0, 1.5, 1
TOTALS = ["rounds", "index_rounds", "slow_writes", "lock_calls", "write_backs", "read_iters",
          "oop_reads", "fallbacks", "cache_misses", "unavailable"]
COLS = (["transport", "workload", "value_size", "threads", "system", "op", "ops", "secs",
         "ops_per_s", "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_p999_ns", "lat_max_ns",
         "lat_mean_ns", "rt_p50", "rt_p99", "rt_p999", "rt_max", "rt_mean"] + TOTALS +
        ["capped", "errors", "wrong", "first_error", "run_ok", "setup_ms", "load_s", "warm_s",
         "inflight"])

report_util._prog = "kv_report"
log = report_util.log


def rows_of(runs):
    rows = []
    for r in runs:
        ph = r.get("phases") or {}
        run = ph.get("run")
        if not run:
            continue
        for op in TYPES + ["all"]:
            v = run[op]
            # With several operations in flight a run has round trips
            # only as a mean over all types (from the counters' totals).
            lat, rt = v["lat_ns"], v["rounds"] or {}
            row = {
                "transport": r["transport"], "workload": r["workload"],
                "value_size": r["value_size"], "threads": r["threads"], "system": r["system"],
                "op": op, "ops": v["ops"], "secs": run["secs"], "ops_per_s": v["ops_per_s"],
                "lat_p50_ns": lat["p50"], "lat_p90_ns": lat["p90"], "lat_p99_ns": lat["p99"],
                "lat_p999_ns": lat["p999"], "lat_max_ns": lat["max"], "lat_mean_ns": lat["mean"],
                "rt_p50": rt.get("p50"), "rt_p99": rt.get("p99"), "rt_p999": rt.get("p999"),
                "rt_max": rt.get("max"), "rt_mean": rt.get("mean"), "hist": rt.get("hist", {}),
                "capped": run["capped"], "errors": sum(run["errors"].values()),
                "wrong": run["wrong"], "first_error": run.get("first_error", ""),
                "run_ok": r.get("ok"), "setup_ms": r.get("setup_ms"),
                "load_s": ph.get("load", {}).get("secs"), "warm_s": ph.get("warm", {}).get("secs"),
                "inflight": r.get("inflight", 1),
            }
            for k in TOTALS:
                row[k] = run["totals"][k]
            rows.append(row)
    return rows


class Index:
    def __init__(self, rows):
        self.cells = {(r["transport"], r["workload"], r["value_size"], r["threads"],
                       r["inflight"], r["system"], r["op"]): r for r in rows if r["ops"] > 0}
        self.transports = [t for t in TRANSPORTS if any(r["transport"] == t for r in rows)]
        self.configs = sorted({(r["transport"], r["workload"], r["value_size"], r["threads"],
                                r["inflight"]) for r in rows},
                              key=lambda c: (TRANSPORTS.index(c[0]),) + c[1:])

    def get(self, cfg, system, op, field):
        c = self.cells.get(cfg + (system, op))
        return None if c is None else c[field]

    def ratio(self, cfg, num, den, op, field="lat_p50_ns"):
        a, b = self.get(cfg, num, op, field), self.get(cfg, den, op, field)
        return a / b if a and b else None


def us(ns):
    return "-" if ns is None else "%.1f" % (ns / 1000.0)


def bold_if(x, bad):
    if x is None:
        return "-"
    s = fmt(x)
    return "**%s**" % s if bad(x) else s


def target_lines(ix):
    out = ["| target | measured (min .. max over configurations) | met |", "|---|---|---|"]

    def row(name, vals, ok_fn, worst_fn):
        vals = [v for v in vals if v[1] is not None]
        if not vals:
            out.append("| %s | not measured | - |" % name)
            return
        worst = worst_fn(vals, key=lambda v: v[1])
        met = all(ok_fn(v[1]) for v in vals)
        bad = [v for v in vals if not ok_fn(v[1])]
        out.append("| %s | %s .. %s over %d%s | %s |" % (
            name, fmt(min(v[1] for v in vals)), fmt(max(v[1] for v in vals)), len(vals),
            "" if met else "; missed in %d (worst: %s)" % (len(bad), cfg_name(worst[0])),
            "yes" if met else "**no**"))

    for tr in ix.transports:
        cfgs = [c for c in ix.configs if c[0] == tr]
        row("%s: SWARM / RAW median get <= %.1fx" % (tr, GET_RAW_TARGET),
            [(c, ix.ratio(c, "swarm", "raw", "get")) for c in cfgs],
            lambda x: x <= GET_RAW_TARGET, max)
        row("%s: SWARM / RAW median update <= %.1fx" % (tr, UPDATE_RAW_TARGET),
            [(c, ix.ratio(c, "swarm", "raw", "update")) for c in cfgs],
            lambda x: x <= UPDATE_RAW_TARGET, max)
        for op in TYPES:
            row("%s: DM-ABD / SWARM median %s >= %.1fx" % (tr, op, ABD_TARGET),
                [(c, ix.ratio(c, "abd", "swarm", op)) for c in cfgs],
                lambda x: x >= ABD_TARGET, min)
        for op in TYPES:
            row("%s: SWARM %s round trips at p99 = %d" % (tr, op, RT_TARGET),
                [(c, ix.get(c, "swarm", op, "rt_p99")) for c in cfgs],
                lambda x: x <= RT_TARGET, max)
    return out


def cfg_name(c):
    return "%s %s %dB %dt x%d" % c


# A configuration's first table cells: transport, workload, value, threads,
# in flight (CFG_HEAD names them).
CFG_HEAD = "| transport | workload | value | threads | in flight | "


def cfg_cells(c):
    return "| %s | %s | %d | %d | %d" % c


def markdown(ix, rows, runs, context):
    out = header(
        "Store (kv/kv.h): SWARM vs DM-ABD vs RAW",
        "benchmarks/kv_bench via benchmarks/run_kv.sh: YCSB A (50 % get / 50 % update) and B "
        "(95 / 5), keys drawn Zipfian 0.99, 64 B and 1 KiB values, 3 memory nodes in the "
        "benchmark's process on /dev/shm pools (PMEM durability: real clwb + sfence), reached "
        "as `local:` or over `ofi+tcp` on 127.0.0.1, 1-8 client threads each with its own "
        "`kv_client` and 1 operation in flight, or (\"in flight\" N > 1) a `kv_async` handle "
        "of N clients kept full in a closed loop. For each configuration SWARM, DM-ABD and "
        "RAW run back to back in one process, each on a freshly created cluster loaded with "
        "the same keys; every client first gets every key once (warm cache), then runs for a "
        "fixed time. Latency is CLOCK_MONOTONIC per operation, submit to completion; round "
        "trips are the difference of `kv_stats` rounds + index_rounds around each operation "
        "(with N > 1 in flight, their mean from the run's totals). On `local:` a round "
        "completes inside the call that posts it, so operations in flight do not overlap any "
        "wait: N of them share one thread and each one's latency is about N operations' "
        "work; the asynchronous API pays off where rounds wait on a network (tcp).",
        context, ("quick", "elapsed_s"))
    out.append("")
    out.append("**Wall-clock numbers are indicative only** (%s). With `local:` a client thread "
               "executes every node's part of a round itself, one node after the other, so a "
               "replicated round costs about three nodes' memory work: the ratios to RAW (one "
               "node) reflect that serial execution, not network overlap. Round trips per "
               "operation are the store's own counters and the numbers to judge the protocol "
               "by." % context.get("note", "machine unknown"))
    if context.get("flags"):
        out.append("")
        out.append("Bench flags: `%s`." % context["flags"])

    out.append("\n## Targets\n")
    out.extend(target_lines(ix))

    out.append("\n## Same-run ratios of median latency\n")
    out.append("SWARM / RAW (targets: get <= %.1f, update <= %.1f) and DM-ABD / SWARM (target "
               ">= %.1f); bold: missed. Then the medians in us (SWARM / DM-ABD / RAW)." % (
                   GET_RAW_TARGET, UPDATE_RAW_TARGET, ABD_TARGET))
    out.append("\n" + CFG_HEAD + "get SW/RAW | update SW/RAW | "
               "get ABD/SW | update ABD/SW | get p50 us | update p50 us |")
    out.append("|---" * 11 + "|")
    for c in ix.configs:
        cells = [
            bold_if(ix.ratio(c, "swarm", "raw", "get"), lambda x: x > GET_RAW_TARGET),
            bold_if(ix.ratio(c, "swarm", "raw", "update"), lambda x: x > UPDATE_RAW_TARGET),
            bold_if(ix.ratio(c, "abd", "swarm", "get"), lambda x: x < ABD_TARGET),
            bold_if(ix.ratio(c, "abd", "swarm", "update"), lambda x: x < ABD_TARGET),
        ]
        for op in TYPES:
            cells.append(" / ".join(us(ix.get(c, s, op, "lat_p50_ns")) for s in SYSTEMS))
        out.append("%s | %s |" % (cfg_cells(c), " | ".join(cells)))

    out.append("\n## Round trips per operation (p50 / p99 / p99.9 / max)\n")
    out.append("Bold: SWARM above 1 at p99. DM-ABD's protocol takes 2, RAW's 1; a location "
               "cache miss adds the index lookup (2 round trips on a cached depth).")
    out.append("\n" + CFG_HEAD + "SWARM get | SWARM update | "
               "DM-ABD get | DM-ABD update | RAW get | RAW update |")
    out.append("|---" * 11 + "|")
    for c in ix.configs:
        cells = []
        for s in SYSTEMS:
            for op in TYPES:
                p50 = ix.get(c, s, op, "rt_p50")
                if p50 is None:
                    mean = ix.get(c, s, "all", "rt_mean")
                    cells.append("-" if mean is None else "mean %s (all)" % fmt(mean))
                    continue
                v = [ix.get(c, s, op, f) for f in ("rt_p50", "rt_p99", "rt_p999", "rt_max")]
                cell = " / ".join("%d" % x for x in v)
                cells.append("**%s**" % cell if s == "swarm" and v[1] > RT_TARGET else cell)
        out.append("%s | %s |" % (cfg_cells(c), " | ".join(cells)))

    miss = {}
    for c in ix.configs:
        for s in SYSTEMS:
            r = ix.cells.get(c + (s, "all"))
            if r is not None and r["ops"]:
                miss.setdefault(s, []).append(100.0 * r["cache_misses"] / r["ops"])
    if miss:
        out.append("")
        out.append("Location-cache misses (each adds the index lookup's round trips to the "
                   "operation; the cache is 4-way set associative by key hash): %s %% of the "
                   "measured operations. "
                   "Where they exceed 1 %% they alone put p99 above 1 round trip for every "
                   "system, RAW included." % "; ".join(
                       "%s %s..%s" % (NAME[s], fmt(min(v)), fmt(max(v))) for s, v in miss.items()))

    out.append("\n## Counters of the measured run (totals over its threads)\n")
    out.append("From kv_stats: slow writes (stale guess, Safe-Guess S9), write-backs (reads that "
               "replicated a value), out-of-place reads, read iterations beyond the first, lock "
               "calls, location-cache misses (the cache is 4-way set associative; "
               "`cache_entries` is in the bench flags), widened rounds, unavailable.")
    out.append("\n" + CFG_HEAD + "system | ops | slow_writes | "
               "write_backs | oop_reads | read_iters | lock_calls | cache_misses (% of ops) | "
               "fallbacks | unavailable | capped threads |")
    out.append("|---" * 16 + "|")
    for c in ix.configs:
        for s in SYSTEMS:
            r = ix.cells.get(c + (s, "all"))
            if r is None:
                continue
            cells = ["%d" % r[k] for k in ("slow_writes", "write_backs", "oop_reads",
                                           "read_iters", "lock_calls")]
            cells.append("%d (%s)" % (r["cache_misses"], fmt(100.0 * r["cache_misses"] / r["ops"])))
            cells += ["%d" % r[k] for k in ("fallbacks", "unavailable")]
            out.append("%s | %s | %d | %s | %d |" % (
                cfg_cells(c), NAME[s], r["ops"], " | ".join(cells), r["capped"]))

    out.append("\n## Absolute numbers (indicative)\n")
    out.append("ops/s of the run (all threads, both op types); latency p50 / p99 / p99.9 in us "
               "per op type.")
    out.append("\n" + CFG_HEAD + "system | ops/s | get p50/p99/p99.9 | "
               "update p50/p99/p99.9 |")
    out.append("|---" * 9 + "|")
    for c in ix.configs:
        for s in SYSTEMS:
            if ix.get(c, s, "all", "ops") is None:
                continue
            lat = []
            for op in TYPES:
                if ix.get(c, s, op, "ops") is None:
                    lat.append("-")
                else:
                    lat.append(" / ".join(us(ix.get(c, s, op, f)) for f in
                                          ("lat_p50_ns", "lat_p99_ns", "lat_p999_ns")))
            out.append("%s | %s | %s | %s | %s |" % (
                cfg_cells(c), NAME[s], fmt_rate(ix.get(c, s, "all", "ops_per_s")), lat[0],
                lat[1]))

    out.append("\n## What went wrong\n")
    problems = []
    for r in runs:
        name = "%s %s %sB %st x%s %s" % (r.get("transport"), r.get("workload"),
                                         r.get("value_size"), r.get("threads"),
                                         r.get("inflight", 1),
                                         NAME.get(r.get("system"), r.get("system")))
        if r.get("setup_error"):
            problems.append("- %s: setup failed: %s" % (name, r["setup_error"]))
        if r.get("open_error"):
            problems.append("- %s: kv_open failed: %s" % (name, r["open_error"]))
        if r.get("killed_after_s"):
            problems.append("- %s: killed at the run limit (%s s)" % (name, r["killed_after_s"]))
        for ph, v in (r.get("phases") or {}).items():
            bits = []
            if v["errors"]:
                bits.append("errors " + ", ".join("%s x%d" % kv for kv in v["errors"].items()))
            if v["wrong"]:
                bits.append("%d wrong values (first: %s)" % (v["wrong"], v.get("first_wrong")))
            if v["totals"]["unavailable"]:
                bits.append("%d unavailable" % v["totals"]["unavailable"])
            if v.get("capped"):
                bits.append("%d threads stopped early at the log cap (%s updates)" % (
                    v["capped"], r.get("update_cap")))
            if bits:
                first = (" (first error: %s)" % v["first_error"]) if v.get("first_error") else ""
                problems.append("- %s, %s: %s%s" % (name, ph, "; ".join(bits), first))
    out.extend(problems or ["Nothing: no errors, wrong values, unavailable operations, failed "
                            "setups or early stops."])
    return out


COLORS = {"swarm": "tab:blue", "abd": "tab:red", "raw": "tab:gray"}


def plot(plt, ix, outdir):
    groups = sorted({c[:3] for c in ix.configs},
                    key=lambda g: (TRANSPORTS.index(g[0]), g[1], g[2]))
    if not groups:
        return
    # Latency bars at the smallest thread count of each group.
    ncol = min(4, len(groups))
    nrow = (len(groups) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 3.6 * nrow), squeeze=False)
    for k, g in enumerate(groups):
        ax = axes[k // ncol][k % ncol]
        c = min(c for c in ix.configs if c[:3] == g)
        t = c[3]
        width = 0.27
        for i, s in enumerate(SYSTEMS):
            p50 = [(ix.get(c, s, op, "lat_p50_ns") or 0) / 1000.0 for op in TYPES]
            p99 = [(ix.get(c, s, op, "lat_p99_ns") or 0) / 1000.0 for op in TYPES]
            xs = [j + (i - 1) * width for j in range(len(TYPES))]
            ax.bar(xs, p99, width, color=COLORS[s], alpha=0.3)
            ax.bar(xs, p50, width, color=COLORS[s], label=NAME[s])
        ax.set_xticks(range(len(TYPES)))
        ax.set_xticklabels(TYPES)
        ax.set_ylabel("latency (us)")
        ax.set_title("%s %s %dB, %d thread%s x %d in flight" % (
            g + (t, "" if t == 1 else "s", c[4])), fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
        if k == 0:
            ax.legend(fontsize=7)
    for k in range(len(groups), nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
    fig.suptitle("kv/kv.h median latency (solid) and p99 (light) per system; 2-core shared "
                 "machine: indicative", fontsize=10)
    save_figure(plt, fig, outdir, "kv_latency.png")

    fig, axes = plt.subplots(nrow, ncol, figsize=(4 * ncol, 3.6 * nrow), squeeze=False)
    for k, g in enumerate(groups):
        ax = axes[k // ncol][k % ncol]
        threads = sorted({c[3] for c in ix.configs if c[:3] == g})
        depths = sorted({c[4] for c in ix.configs if c[:3] == g})
        for s in SYSTEMS:
            for f in depths:
                pts = [(n, ix.get(g + (n, f), s, "all", "ops_per_s")) for n in threads]
                pts = [(n, v) for n, v in pts if v]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] / 1000.0 for p in pts],
                            marker="o" if f == 1 else "s", linestyle="-" if f == 1 else "--",
                            color=COLORS[s], label=NAME[s] + ("" if f == 1 else " x%d" % f))
        axis_threads(ax, threads)
        ax.set_ylabel("kops/s")
        ax.set_title("%s %s %dB" % g, fontsize=9)
        if k == 0:
            ax.legend(fontsize=7)
    for k in range(len(groups), nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
    fig.suptitle("kv/kv.h throughput vs client threads (solid: 1 op in flight each; dashed: "
                 "xN in flight; 2 cores: 4 and 8 threads oversubscribe)", fontsize=10)
    save_figure(plt, fig, outdir, "kv_throughput.png")


def print_event_phases(doc):
    """The throughput between the run's events, as ratios to the first."""
    events = sorted(doc.get("events", []), key=lambda e: e["t_s"])
    tl = doc.get("timeline", [])
    if not events or not tl:
        return
    edges = [0.0] + [e["t_s"] for e in events] + [float("inf")]
    names = ["before"] + ["after %s" % e["what"] for e in events]
    first = None
    print("%-34s %8s %10s %8s %9s" % ("phase", "seconds", "ops/s", "ratio", "failed"))
    for name, lo, hi in zip(names, edges, edges[1:]):
        # Interval ends inside the phase (a point covers the interval
        # before its t_s).
        pts = [p for p in tl if lo < p["t_s"] <= hi]
        if not pts:
            continue
        span = len(pts) * doc["config"]["interval_ms"] / 1e3
        rate = sum(p["ops"] for p in pts) / span
        first = rate if first is None else first
        print("%-34s %8.1f %10.1f %8.3f %9d" % (name, span, rate, rate / first if first else 0,
                                               sum(p["failed"] for p in pts)))


def plot_dmkv(plt, doc, png):
    """The plot of one dmkv bench/demo run (its JSON document)."""
    cfg, tl = doc["config"], doc.get("timeline", [])
    fig, (ax_t, ax_l, ax_c) = plt.subplots(1, 3, figsize=(16, 4.5))
    t = [p["t_s"] for p in tl]
    logs = any(p.get("log_bytes") for p in tl)
    if logs:
        # The clients' value logs (kv_stats.log_used): flat once buffers
        # are reused, rising with every write when they are not.
        ax_g = ax_t.twinx()
        ax_g.plot(t, [p.get("log_bytes", 0) / 2**20 for p in tl], color="tab:gray",
                  linestyle="-.", label="value logs in use (right)")
        ax_g.set_ylabel("MiB of value logs handed out, all clients")
        ax_g.set_ylim(0, 2 * max(p.get("log_bytes", 0) for p in tl) / 2**20)
        ax_g.legend(fontsize=7, loc="lower right")
    ax_t.plot(t, [p["ops_per_s"] / 1e3 for p in tl], color="tab:blue", label="throughput")
    fails = [(p["t_s"], p["ops_per_s"] / 1e3) for p in tl if p["failed"]]
    if fails:
        ax_t.scatter(*zip(*fails), color="red", marker="x", label="failed operations", zorder=3)
    ax_l.plot(t, [p["p50_ns"] / 1e3 for p in tl], label="p50")
    ax_l.plot(t, [p["p99_ns"] / 1e3 for p in tl], label="p99")
    ax_l.set_yscale("log")
    for ax in (ax_t, ax_l):
        if "fail_at_ms" in cfg:
            ax.axvline(cfg["fail_at_ms"] / 1e3, color="red", linestyle="--",
                       label="node %d crashed" % cfg["fail_node"])
        if "restore_at_ms" in cfg:
            ax.axvline(cfg["restore_at_ms"] / 1e3, color="green", linestyle="--",
                       label="node %d restored" % cfg["restore_node"])
        for k, e in enumerate(doc.get("events", [])):
            ax.axvline(e["t_s"], color=("tab:red", "tab:green", "tab:purple", "tab:brown")[k % 4],
                       linestyle=":", label=e["what"])
        ax.set_xlabel("seconds into the run")
        ax.grid(alpha=0.3)
        # Clear of the value logs' legend (lower right) when there is one.
        ax.legend(fontsize=7, loc="upper left" if ax is ax_t and logs else "best")
    ax_t.set_ylabel("thousand ops/s (interval of %.2f s)" % (cfg["interval_ms"] / 1e3))
    ax_t.set_ylim(bottom=0)
    ax_l.set_ylabel("latency, microseconds (all operations)")
    styles = {"before": "-", "during": "--", "after": ":", "run": "-"}
    for ph in doc["phases"]:
        for op, d in sorted(ph["by_op"].items()):
            pts = [(ns / 1e3, 1 - q) for q, ns in d["latency"]["cdf"] if q < 1]
            if pts:
                ax_c.plot([x for x, _ in pts], [y for _, y in pts], linestyle=styles[ph["name"]],
                          label="%s %s" % (op, ph["name"]))
    ax_c.set_xscale("log")
    ax_c.set_yscale("log")
    ax_c.set_xlabel("latency, microseconds")
    ax_c.set_ylabel("fraction of operations slower")
    ax_c.grid(alpha=0.3, which="both")
    ax_c.legend(fontsize=7)
    nodes = cfg.get("nodes", [])
    fig.suptitle("dmkv: YCSB-%s, %d records, %d threads x %d in flight, %d nodes (%s); "
                 "failed operations %d, lost writes %s" % (
                     cfg["workload"], cfg["records"], cfg["threads"], cfg["inflight"],
                     len(nodes), nodes[0].split(":")[0] if nodes else "?", doc.get("failed", 0),
                     doc.get("verify", {}).get("lost", "not checked")), fontsize=10)
    save_figure(plt, fig, os.path.dirname(png) or ".", os.path.basename(png))


def main(argv):
    if "--dmkv" in argv:
        p = argparse.ArgumentParser(prog="kv_report.py --dmkv")
        p.add_argument("--dmkv", required=True, help="the JSON of dmkv bench --json-out")
        p.add_argument("--png", required=True)
        p.add_argument("--event", action="append", default=[], metavar="SECONDS:LABEL",
                       help="something done to the cluster from outside the bench, at SECONDS"
                            " from its start (kept in the JSON; repeatable)")
        p.add_argument("--out", default=None, help="ignored (the run scripts pass it)")
        args = p.parse_args(argv)
        with open(args.dmkv, encoding="utf-8") as f:
            doc = json.load(f)
        if args.event:
            doc["events"] = [{"t_s": float(e.split(":", 1)[0]), "what": e.split(":", 1)[1]}
                             for e in args.event]
            with open(args.dmkv, "w", encoding="utf-8") as f:
                json.dump(doc, f)
        print_event_phases(doc)
        plt = pyplot()
        if plt is None:
            return EXIT_NO_PLOTS
        plot_dmkv(plt, doc, args.png)
        return EXIT_OK
    p = argparse.ArgumentParser(prog="kv_report.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="kv.json files (default: kv.json in --results)")
    p.add_argument("--results", default="benchmarks/results")
    p.add_argument("--out", default=None, help="output directory (default: --results)")
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args(argv)
    return report_util.report_lines(args, "kv", rows_of, COLS, Index, markdown, plot)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
