#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""reclaim_report.py -- turn the JSON of benchmarks/reclaim_bench and the CSVs
of benchmarks/reclaim_robust into a CSV of every run, a markdown report of
the reclamation schemes against the leaky baseline and of the
path-switching runs, and PNG plots.

Reads Google Benchmark JSON files (--benchmark_out_format=json) written by
benchmarks/reclaim_bench and, with --robust (repeatable; default:
reclaim_robust.csv in the --results directory when it exists), CSVs of
benchmarks/reclaim_robust, and writes into the output directory:

  reclaim_runs.csv    one row per benchmark run: configuration, every
                      counter, and the error message if the run failed
  reclaim_report.md   throughput per structure x threads x scheme; the
                      overhead of each scheme against none (1 - ops/ops_none,
                      averaged over structures and threads); QSense / HP,
                      Cadence / HP and QSense / QSBR ratios; counters per
                      operation; the structure checks; the path-switching
                      run (max pending, the memory cap, QSense's switches
                      and bound); and the issue's targets, PASS or FAIL
  reclaim_<structure>.png
                      throughput against threads, one line per scheme
  reclaim_robust.png  the path-switching run: throughput and pending nodes
                      over time, one panel per scheme, delays shaded (the
                      first --robust CSV; the others reclaim_robust_<name>.png
                      for reclaim_robust_<name>.csv)

Ratios, exit status and messages as described in report_util.py.
"""

import csv
import os
import re
import statistics
import sys

from report_util import (Table, axis_threads, counter_cells, fmt, fmt_int, fmt_rate, geomean,
                         header, log, main, plot_line, save_figure)

STRUCTURES = ["list", "skiplist", "bst"]
SCHEMES = ["none", "qsbr", "ebr", "hp", "cadence", "qsense", "urcu-qsbr"]
COUNTERS = [
    "ops_per_s", "fence_per_op", "qs_per_op", "scan_per_op", "retired_per_op", "freed_per_op",
    "pending_end", "pending_max", "mode_switches", "to_fallback", "to_fast", "fallback_end",
    "size_end", "size_expected", "checked", "fill_s", "check_s", "R", "C",
    "n_ops", "n_inserted", "n_removed", "n_retired", "n_freed", "n_fences", "n_qs", "n_scans",
    "n_epochs", "n_rooster_wakeups", "n_evicted",
]
CONFIG = ["structure", "scheme", "threads"]
NAME_RE = re.compile(
    r"^(?P<st>list|skiplist|bst)/(?P<sc>[a-z-]+)(?:/.*)?/threads:(?P<threads>\d+)$")
# The thesis's averages (sect. 6.7.3), for comparison.
THESIS_OVERHEAD = {"qsbr": 0.023, "hp": 0.80, "qsense": 0.29}
# The targets.
QSENSE_MAX_OVERHEAD = 0.15
QSENSE_MIN_HP_RATIO = 2.0

# The path-switching CSVs (reclaim_robust): (path, rows) each, read by on_args().
robust = {"runs": [], "missing": []}


def parse_name(name):
    m = NAME_RE.match(name)
    if not m or m.group("sc") not in SCHEMES:
        return None
    return {"structure": m.group("st"), "scheme": m.group("sc"),
            "threads": int(m.group("threads"))}


class ReclaimTable(Table):
    """Median over repetitions of every counter, per (structure, scheme,
    threads)."""

    def __init__(self, rows):
        super().__init__(rows, CONFIG, COUNTERS)
        self.rows = rows

    def structures(self):
        return [s for s in STRUCTURES if any(k[0] == s for k in self.cells)]

    def schemes(self, st):
        return [s for s in SCHEMES if any(k[0] == st and k[1] == s for k in self.cells)]

    def ops(self, st, sc, n):
        return self.get(st, sc, n, "ops_per_s")

    def ratio(self, st, num, den, n):
        a, b = self.ops(st, num, n), self.ops(st, den, n)
        return a / b if a and b else None

    def overheads(self, sc, st=None):
        """1 - ops/ops_none at every measured (structure, threads) point."""
        out = []
        for s in ([st] if st else self.structures()):
            for n in self.threads:
                r = self.ratio(s, sc, "none", n)
                if r is not None:
                    out.append(1.0 - r)
        return out


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def fmt_count(x):
    return "-" if x is None else "%d" % x


def pct(x):
    return "-" if x is None else "%.1f %%" % (100.0 * x)


def throughput_section(t, out):
    out.append("\n## Throughput\n")
    out.append("ops/s (all threads, wall clock), and in parentheses the ratio to `none` "
               "of the same structure and thread count (run right before).\n")
    for st in t.structures():
        out.append("\n### %s\n" % st)
        out.append("| scheme | " + " | ".join("%d thr" % n for n in t.threads) + " |")
        out.append("|---|" + "---:|" * len(t.threads))
        for sc in t.schemes(st):
            cells = []
            for n in t.threads:
                v = t.ops(st, sc, n)
                r = t.ratio(st, sc, "none", n)
                cells.append("-" if v is None else (
                    fmt_rate(v) + ("" if sc == "none" or r is None else " (%s)" % fmt(r))))
            out.append("| %s | %s |" % (sc, " | ".join(cells)))


def overhead_section(t, out):
    out.append("\n## Overhead against none\n")
    out.append("Overhead = 1 - ops/ops_none per (structure, threads), averaged "
               "(arithmetic mean) over the thread counts per structure and over every "
               "structure and thread count in the last column; negative means faster "
               "than the leaky baseline.\n")
    out.append("Reading it: `none` never frees, so every insert gets a node from fresh "
               "memory and the set's live nodes spread over ever more cache lines, while "
               "a scheme that frees lets the allocator (jemalloc, whose thread cache "
               "returns the most recently freed block first) recycle the same few "
               "thousand blocks. On the 2000-key list, where an operation walks about "
               "1000 nodes, that locality can outweigh the whole cost of reclamation, "
               "so `none` is not an upper bound there; QSense / QSBR below compares two "
               "schemes that both recycle. Single runs of 0.3 s on 2 cores, 4 and 8 "
               "threads preempting each other, vary by tens of percent from run to run "
               "(more repetitions: `-- --benchmark_repetitions=3`).\n")
    sts = t.structures()
    out.append("| scheme | " + " | ".join(sts) + " | **average** | thesis (average) |")
    out.append("|---|" + "---:|" * (len(sts) + 2))
    for sc in SCHEMES[1:]:
        per = [mean(t.overheads(sc, st)) for st in sts]
        allv = t.overheads(sc)
        if not allv:
            continue
        out.append("| %s | %s | **%s** | %s |" % (
            sc, " | ".join(pct(x) for x in per), pct(mean(allv)),
            pct(THESIS_OVERHEAD.get(sc)) if sc in THESIS_OVERHEAD else "-"))


def ratio_section(t, out):
    """Scheme-to-scheme throughput ratios; returns the QSense / HP ratios."""
    out.append("\n## Scheme against scheme\n")
    out.append("Throughput ratios at each thread count; geomean over thread counts, "
               "and over everything in the **all** rows. HP's cost is its fences, one "
               "per node an operation visits (fences/op in the counters below, a "
               "deterministic count); what a fence costs in time depends on the CPU and "
               "on how much of the operation is cache misses anyway.\n")
    pairs = [("qsense", "hp", "QSense / HP (thesis: 2-3x)"),
             ("cadence", "hp", "Cadence / HP (the fallback path against HP)"),
             ("qsense", "qsbr", "QSense / QSBR (thesis: close, below 1)"),
             ("qsbr", "urcu-qsbr", "QSBR / urcu-qsbr (this library against liburcu)")]
    found = {}
    for num, den, title in pairs:
        out.append("\n### %s\n" % title)
        out.append("| structure | " + " | ".join("%d thr" % n for n in t.threads) +
                   " | geomean |")
        out.append("|---|" + "---:|" * (len(t.threads) + 1))
        allr = []
        for st in t.structures():
            rs = [t.ratio(st, num, den, n) for n in t.threads]
            good = [r for r in rs if r]
            allr += good
            out.append("| %s | %s | **%s** |" % (st, " | ".join(fmt(r) for r in rs),
                                                 fmt(geomean(good))))
        out.append("| **all** | %s | **%s** |" % (" | ".join("" for _ in t.threads),
                                                 fmt(geomean(allr))))
        found[(num, den)] = allr
    return found[("qsense", "hp")]


def counter_section(t, out):
    out.append("\n## Counters (columns: values at %s threads)\n" %
               " / ".join(str(n) for n in t.threads))
    out.append("Per operation, from reclaim_domain_stats() differences over the run "
               "Google Benchmark reports. fences: full fences of reclaim_protect() (HP) "
               "and reclaim_op_begin() (EBR); QS: quiescent states; scans: hazard-pointer "
               "scans; pending end: retired - freed after the run; pending max: the most "
               "seen over the domain's life (fill and every trial run); switches: QSense "
               "fast <-> fallback during the run; C: QSense's fallback threshold (library "
               "default 4R + KH, H the threads registered so far).\n")
    cols = [("ops/s", "ops_per_s", fmt_rate), ("fences/op", "fence_per_op", fmt),
            ("QS/op", "qs_per_op", lambda x: fmt(x, 4)),
            ("scans/op", "scan_per_op", lambda x: fmt(x, 4)),
            ("retired/op", "retired_per_op", lambda x: fmt(x, 3)),
            ("freed/op", "freed_per_op", lambda x: fmt(x, 3)),
            ("pending end", "pending_end", fmt_count),
            ("pending max", "pending_max", fmt_count),
            ("switches", "mode_switches", fmt_count), ("C", "C", fmt_count)]
    out.append("| structure | scheme | " + " | ".join(c[0] for c in cols) + " |")
    out.append("|---|---|" + "---|" * len(cols))
    for st in t.structures():
        for sc in t.schemes(st):
            cells = counter_cells(t, cols, lambda c, n: t.get(st, sc, n, c))
            if cells is not None:
                out.append("| %s | %s | %s |" % (st, sc, cells))


def check_section(t, out):
    out.append("\n## Structure checks\n")
    ok = [r for r in t.rows if not r["error"]]
    checked = [r for r in ok if r["checked"] not in ("", None) and float(r["checked"]) == 1]
    mismatch = [r for r in checked if r["size_end"] != "" and r["size_expected"] != "" and
                float(r["size_end"]) != float(r["size_expected"])]
    fills = {}
    for r in ok:
        if r["fill_s"] != "":
            fills.setdefault(r["structure"], []).append(float(r["fill_s"]))
    out.append("After the run Google Benchmark reports (the trial runs before it act on "
               "the same structure), thread 0 ran the structure's check() and compared its "
               "size with the initial size plus successful inserts minus successful "
               "removes; a failure fails the run. %d runs reported, %d of them checked and "
               "passed, %d failed, %d with a size mismatch. Fill time (untimed, one thread) "
               "per configuration: %s.\n" % (
                   len(ok), len(checked), len(t.errors), len(mismatch),
                   "; ".join("%s %.2f s (max %.2f)" % (st, mean(v), max(v))
                             for st, v in sorted(fills.items()))))
    if t.errors:
        out.append("### Failed runs\n")
        for r in t.errors:
            out.append("- %s/%s threads %s: %s" % (r["structure"], r["scheme"], r["threads"],
                                                  r["error"]))


# --- the path-switching run ---------------------------------------------------

def read_robust(path):
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            try:
                for k in ("t_ms", "ops_in_sample", "ops_per_s", "pending", "delayed",
                          "to_fallback", "to_fast", "retired", "freed", "cap"):
                    r[k] = float(r[k])
            except (KeyError, ValueError) as e:
                log("skipping %s: bad row %r (%s)" % (path, r, e))
                return []
            rows.append(r)
    return rows


def robust_schemes(rows):
    seen = []
    for r in rows:
        if r["scheme"] not in seen:
            seen.append(r["scheme"])
    return seen


def robust_threads(rows):
    ts = {r.get("threads", "") for r in rows}
    return ", ".join(sorted(t for t in ts if t)) or "?"


def robust_summary(rows, sc):
    rs = [r for r in rows if r["scheme"] == sc]
    if not rs:
        return None
    oom = [r for r in rs if r.get("event") == "oom"]
    delayed = [r["ops_per_s"] for r in rs if r["delayed"]]
    undelayed = [r["ops_per_s"] for r in rs if not r["delayed"]]
    fallback = [r["ops_per_s"] for r in rs if r["mode"] == "fallback"]
    fast = [r["ops_per_s"] for r in rs if r["mode"] == "fast"]
    # Pending growth over each stretch of delayed samples.
    growth, start = [], None
    for i, r in enumerate(rs):
        if r["delayed"] and start is None:
            start = rs[i - 1] if i > 0 else r
        if start is not None and (not r["delayed"] or i == len(rs) - 1):
            end = r if r["delayed"] else rs[i - 1]
            if end["t_ms"] > start["t_ms"]:
                growth.append((end["pending"] - start["pending"]) /
                              ((end["t_ms"] - start["t_ms"]) / 1000.0))
            start = None
    bound = rs[-1].get("bound", "")
    return {
        "samples": len(rs), "t_end": rs[-1]["t_ms"] / 1000.0,
        "max_pending": max(r["pending"] for r in rs), "cap": rs[-1]["cap"],
        "oom_t": oom[0]["t_ms"] / 1000.0 if oom else None,
        "to_fallback": rs[-1]["to_fallback"], "to_fast": rs[-1]["to_fast"],
        "bound": float(bound) if bound not in ("", None) else None,
        "c_legal": rs[-1].get("c_legal", ""),
        "mean": mean([r["ops_per_s"] for r in rs]), "delayed": mean(delayed),
        "undelayed": mean(undelayed), "fallback": mean(fallback), "fast": mean(fast),
        "n_fallback": len(fallback), "growth": max(growth) if growth else None,
    }


def robust_section(out):
    """One table per reclaim_robust CSV; returns [(label, {scheme: summary})]."""
    out.append("\n## Path switching (reclaim_robust)\n")
    if not robust["runs"]:
        out.append("No reclaim_robust CSV%s.\n" % (
            " (%s unreadable or empty)" % ", ".join(robust["missing"])
            if robust["missing"] else ""))
        return []
    out.append("One worker sleeps inside an operation (registered, after reclaim_op_begin) "
               "during the delay windows (delayed = 1 in the CSV, shaded in the plots); a "
               "scheme's run stops early when pending (retired - freed) exceeds the memory "
               "cap (\"out of memory budget\", standing in for the thesis's OOM). Bound: "
               "Cadence N(K+Y+R), QSense 2NC (Prop. 6.6.3/6.6.5; reclaim_bound_compute() "
               "with Y, the nodes one thread retires in one rooster round, estimated as "
               "the highest per-thread retire rate of a sample times the longest rooster "
               "round of a sample, at least T + epsilon); C legal: whether C exceeds "
               "max(mQ, NK+Y, (K+Y+R)/2) for that Y. Growth: the fastest rise of pending "
               "over one delay window. Throughput columns: mean ops/s over all samples, "
               "over the samples with a thread delayed, without, and over the samples "
               "that ended with QSense on its fallback path.\n")
    found = []
    for path, rows in robust["runs"]:
        label = "%s threads" % robust_threads(rows)
        cap = rows[0]["cap"]
        out.append("\n### `%s`: %s, samples of %.0f ms, cap %s nodes\n" % (
            os.path.basename(path), label,
            statistics.median(b["t_ms"] - a["t_ms"] for a, b in zip(rows, rows[1:])
                              if a["scheme"] == b["scheme"]) if len(rows) > 1 else rows[0]["t_ms"],
            fmt_int(int(cap)) if cap else "none"))
        out.append("| scheme | ran (s) | out of memory budget | max pending | bound | C legal | "
                   "pending growth while delayed (nodes/s) | switches to fallback / to fast | "
                   "samples in fallback | ops/s mean | delayed | not delayed | in fallback |")
        out.append("|---|---:|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|")
        sums = {}
        for sc in robust_schemes(rows):
            x = robust_summary(rows, sc)
            sums[sc] = x
            out.append("| %s | %.1f | %s | %s | %s | %s | %s | %d / %d | %d of %d | %s | %s | "
                       "%s | %s |" % (
                           sc, x["t_end"],
                           "at t=%.1f s" % x["oom_t"] if x["oom_t"] is not None else "no",
                           fmt_int(int(x["max_pending"])),
                           fmt_int(int(x["bound"])) if x["bound"] is not None else "-",
                           {"1": "yes", "0": "**no**"}.get(x["c_legal"], "-"),
                           fmt_int(int(x["growth"])) if x["growth"] is not None else "-",
                           x["to_fallback"], x["to_fast"], x["n_fallback"], x["samples"],
                           fmt_rate(x["mean"]), fmt_rate(x["delayed"]),
                           fmt_rate(x["undelayed"]), fmt_rate(x["fallback"])))
        q, h = sums.get("qsense"), sums.get("hp")
        if q and h and q["fallback"] and h["delayed"]:
            out.append("\nQSense on its fallback path against HP while a thread is delayed: "
                       "%s ops/s against %s ops/s, ratio %s (thesis: Cadence about 3x HP).\n" % (
                           fmt_rate(q["fallback"]), fmt_rate(h["delayed"]),
                           fmt(q["fallback"] / h["delayed"])))
        found.append((label, sums))
    return found


def target_section(t, qhp, robust_sums, out):
    out.append("\n## Targets\n")
    out.append("| target | measured | result |")
    out.append("|---|---|---|")
    ov = t.overheads("qsense")
    if ov:
        m = mean(ov)
        out.append("| QSense overhead against none <= %d %% on average (thesis: 29 %%) | "
                   "%s over %d points (per structure: %s) | %s |" % (
                       100 * QSENSE_MAX_OVERHEAD, pct(m), len(ov),
                       ", ".join("%s %s" % (st, pct(mean(t.overheads("qsense", st))))
                                 for st in t.structures()),
                       "PASS" if m <= QSENSE_MAX_OVERHEAD else "**FAIL**"))
    else:
        out.append("| QSense overhead against none <= 15 %% on average | not measured | - |")
    if qhp:
        g = geomean(qhp)
        out.append("| QSense >= %gx HP throughput (geomean over structures and threads) | "
                   "geomean %s, min %s, max %s over %d points | %s |" % (
                       QSENSE_MIN_HP_RATIO, fmt(g), fmt(min(qhp)), fmt(max(qhp)), len(qhp),
                       "PASS" if g >= QSENSE_MIN_HP_RATIO else "**FAIL**"))
    else:
        out.append("| QSense >= 2x HP throughput | not measured | - |")
    measured = False
    for label, sums in robust_sums:
        q, b = sums.get("qsense"), sums.get("qsbr")
        if not (q and b):
            continue
        measured = True
        q_ok = q["oom_t"] is None and (q["bound"] is None or q["max_pending"] <= q["bound"])
        # QSBR unbounded: it hit the cap, or went 10x past QSense's bound.
        b_unbounded = b["oom_t"] is not None or (
            q["bound"] is not None and b["max_pending"] > 10 * q["bound"])
        out.append("| Path switching, %s: QSense's pending stays bounded (no cap hit, max <= "
                   "2NC) where QSBR's does not (hits the cap or exceeds 10x 2NC) | QSense max "
                   "pending %s (2NC %s, %s); QSBR max pending %s (%s; growth %s nodes/s while "
                   "a thread is delayed) | %s |" % (
                       label, fmt_int(int(q["max_pending"])),
                       fmt_int(int(q["bound"])) if q["bound"] is not None else "-",
                       "cap hit at t=%.1f s" % q["oom_t"] if q["oom_t"] is not None
                       else "cap %s not hit" % fmt_int(int(q["cap"])),
                       fmt_int(int(b["max_pending"])),
                       "cap hit at t=%.1f s" % b["oom_t"] if b["oom_t"] is not None
                       else "cap %s not hit" % fmt_int(int(b["cap"])),
                       fmt_int(int(b["growth"])) if b["growth"] is not None else "-",
                       "PASS" if q_ok and b_unbounded else "**FAIL**"))
    if not measured:
        out.append("| Path switching: QSense bounded where QSBR is not | not measured "
                   "(needs qsense and qsbr in a reclaim_robust CSV) | - |")


def markdown(t, context):
    out = header(
        "Memory reclamation: schemes against the leaky baseline",
        "Throughput of the three lock-free sets of ds/ (Harris-Michael list, Fraser "
        "skip list, Natarajan-Mittal BST) under every scheme of reclaim/, in one "
        "process; each (structure, threads) runs `none` (leaky) first and every other "
        "scheme right after it, each configuration on a fresh domain and structure "
        "filled by one thread (Google Benchmark, wall-clock time; median over "
        "repetitions). Thesis setup (sect. 6.7): initial size 2000 / 20000 / "
        "2,000,000, key range twice that, 50 % contains, 25 % insert, 25 % remove, "
        "uniform keys. The machine has 2 cores: 4 and 8 threads preempt, which is "
        "what QSense's fallback is for.",
        context, ("allocator", "workload", "reclaim_list", "reclaim_skiplist", "reclaim_bst"))
    throughput_section(t, out)
    overhead_section(t, out)
    qhp = ratio_section(t, out)
    robust_sums = robust_section(out)
    target_section(t, qhp, robust_sums, out)
    counter_section(t, out)
    check_section(t, out)
    return out


STYLES = {"none": ("black", "-", "o"), "qsbr": ("tab:green", "-", "s"),
          "ebr": ("tab:olive", "--", "v"), "hp": ("tab:red", "-", "^"),
          "cadence": ("tab:purple", "--", "D"), "qsense": ("tab:blue", "-", "o"),
          "urcu-qsbr": ("tab:gray", ":", "x")}


def plot(plt, t, outdir):
    for st in t.structures():
        fig, ax = plt.subplots(figsize=(6.5, 4.2))
        for sc in t.schemes(st):
            color, ls, marker = STYLES[sc]
            plot_line(ax, t.threads, lambda n: t.ops(st, sc, n), color=color, linestyle=ls,
                      marker=marker, label=sc)
        axis_threads(ax, t.threads)
        ax.set_yscale("log")
        ax.set_ylabel("ops/s (log)")
        ax.set_title("%s: throughput per scheme (2 cores; 4, 8 threads preempt)" % st)
        ax.legend(fontsize=7, ncol=2)
        save_figure(plt, fig, outdir, "reclaim_%s.png" % st)
    plot_robust(plt, outdir)


def plot_robust(plt, outdir):
    for i, (path, rows) in enumerate(robust["runs"]):
        name = "reclaim_robust.png" if i == 0 else "reclaim_robust_%s.png" % (
            os.path.splitext(os.path.basename(path))[0].replace("reclaim_robust_", ""))
        plot_robust_run(plt, outdir, rows, name, "%s threads" % robust_threads(rows))


def plot_robust_run(plt, outdir, rows, name, label):
    schemes = robust_schemes(rows)
    if not schemes:
        return
    tmax = max(r["t_ms"] for r in rows) / 1000.0
    # One pending scale for every panel, the cap included.
    ptop = 2 * max([r["pending"] for r in rows] + [r["cap"] for r in rows])
    fig, axes = plt.subplots(len(schemes), 1, figsize=(8, 2.3 * len(schemes)), sharex=True,
                             squeeze=False)
    for i, sc in enumerate(schemes):
        rs = [r for r in rows if r["scheme"] == sc]
        ax = axes[i][0]
        ts = [r["t_ms"] / 1000.0 for r in rs]
        dt = ts[0] if ts else 0
        for r, x in zip(rs, ts):
            if r["delayed"]:
                ax.axvspan(x - dt, x, color="0.85", linewidth=0)
            if r["mode"] == "fallback":
                ax.axvspan(x - dt, x, ymin=0, ymax=0.05, color="tab:orange", linewidth=0)
        ax.plot(ts, [r["ops_per_s"] for r in rs], color=STYLES.get(sc, ("k",))[0],
                label="ops/s")
        ax.set_ylabel("ops/s")
        ax.set_ylim(bottom=0)
        ax.set_xlim(0, tmax)
        ax.grid(True, alpha=0.3)
        ax2 = ax.twinx()
        ax2.plot(ts, [r["pending"] for r in rs], color="tab:brown", linestyle="--",
                 label="pending")
        cap = rs[0]["cap"] if rs else 0
        if cap:
            ax2.axhline(cap, color="tab:brown", linewidth=0.7, linestyle=":")
        ax2.set_yscale("symlog", linthresh=100)
        ax2.set_ylim(0, max(ptop, 1000))
        ax2.set_ylabel("pending nodes")
        oom = [r for r in rs if r.get("event") == "oom"]
        title = "%s, %s" % (sc, label) + (
            " -- out of memory budget at t=%.1f s" % (oom[0]["t_ms"] / 1000.0) if oom else "")
        ax.set_title(title, fontsize=9)
        if i == 0:
            h1, l1 = ax.get_legend_handles_labels()
            h2, l2 = ax2.get_legend_handles_labels()
            ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
    axes[-1][0].set_xlabel("time (s); gray: a thread is delayed; orange ticks: QSense "
                           "on its fallback; dotted: memory cap")
    save_figure(plt, fig, outdir, name)


def add_args(p):
    p.add_argument("--robust", action="append", default=None,
                   help="CSV of reclaim_robust, repeatable (default: reclaim_robust.csv in "
                        "the --results directory, if it exists; none: no path-switching "
                        "section)")


def on_args(args):
    paths = args.robust or [os.path.join(args.results, "reclaim_robust.csv")]
    for path in paths:
        if path == "none":
            continue
        if not os.path.exists(path):
            if args.robust:
                log("%s not found: left out of the path-switching section" % path)
                robust["missing"].append(path)
            continue
        try:
            rows = read_robust(path)
            log("read %s" % path)
        except OSError as e:
            log("skipping %s: %s" % (path, e))
            robust["missing"].append(path)
            continue
        if rows:
            robust["runs"].append((path, rows))
        else:
            robust["missing"].append(path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], "reclaim", __doc__, "reclaim*.json", "reclaim_bench",
                  parse_name, CONFIG, COUNTERS, ReclaimTable, markdown, plot,
                  add_args=add_args, on_args=on_args))
