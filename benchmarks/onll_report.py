#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""onll_report.py -- turn the JSON of benchmarks/onll_bench into a CSV of
every run, a markdown report of ONLL / PMDK-transaction throughput ratios,
and PNG plots.

Reads Google Benchmark JSON files (--benchmark_out_format=json) written by
benchmarks/onll_bench and writes into the output directory:

  onll_runs.csv   one row per benchmark run: configuration, every counter,
                  and the error message if the run failed
  onll_report.md  throughput ratio ONLL / PMDK per (object, mix, threads)
                  with geometric means, fences per operation and per update
                  of both implementations, ONLL's helping, catch-up and
                  checkpoint counts, and a check of the issue's targets
                  (updates >= 2x PMDK at every thread count, reads >= 10x)
  onll_<object>.png
                  throughput against threads, one panel per mix, one line
                  per implementation
  onll_ratio.png  the ratio against threads, one line per (object, mix)

Every headline number is a ratio of two runs made back to back in the same
process (DESIGN.md sect. 9); absolute rates are in the CSV.

Exit status: 0 everything written; 2 bad usage or no usable input;
3 CSV and markdown written but plots skipped (matplotlib missing: install
python3-matplotlib, which tools/setup.sh does, and run with the system
python3). Progress messages go to stderr.
"""

import argparse
import csv
import glob
import json
import math
import os
import re
import statistics
import sys

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_NO_PLOTS = 3

OBJECTS = ["counter", "queue", "map"]
IMPLS = ["onll", "pmdk-tx"]
MIXES = ["update", "read", "mixed"]
MIX_TITLES = {"update": "update-only", "read": "read-only", "mixed": "50/50"}
COUNTERS = [
    "ops_per_s", "fence_per_op", "fence_per_update", "drain_per_op", "flush_per_op",
    "helped_per_update", "applied_per_op",
    "n_ops", "n_updates", "n_reads", "n_fence", "n_drain", "n_flush", "n_onll_fence",
    "n_helped", "n_applied", "n_checkpoints", "n_checkpoint_fences", "n_log_full_waits",
    "n_view_rebuilds",
]
NAME_RE = re.compile(
    r"^(?P<obj>counter|queue|map)/(?P<impl>onll|pmdk-tx)/(?P<mix>update|read|mixed)"
    r"(?:/.*)?/threads:(?P<threads>\d+)$")
# The targets: minimum ratio ONLL / PMDK at every thread count.
TARGETS = {"update": 2.0, "read": 10.0}


def log(msg):
    print("onll_report: " + msg, file=sys.stderr)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="onll_report.py",
        description=__doc__.split("\n\n")[0],
        epilog="Exit status: 0 done; 2 bad usage or no usable input; "
               "3 CSV/markdown written but plots skipped (no matplotlib).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*",
                   help="benchmark JSON files (default: onll*.json in --results)")
    p.add_argument("--results", default="benchmarks/results",
                   help="directory holding the JSON files (default: %(default)s)")
    p.add_argument("--out", default=None,
                   help="output directory (default: the --results directory)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    return p.parse_args(argv)


def load_runs(paths):
    """Rows (dicts) of every per-iteration entry in @paths, plus the context
    of the first file."""
    rows, context = [], None
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            log("skipping %s: %s" % (path, e))
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
            log("skipping %s: not Google Benchmark JSON" % path)
            continue
        context = context or doc.get("context", {})
        for b in doc["benchmarks"]:
            if b.get("run_type", "iteration") != "iteration":
                continue  # aggregates are recomputed below (median)
            m = NAME_RE.match(b.get("name", ""))
            if not m:
                log("skipping unknown benchmark %r in %s" % (b.get("name"), path))
                continue
            row = {
                "object": m.group("obj"),
                "impl": m.group("impl"),
                "mix": m.group("mix"),
                "threads": int(m.group("threads")),
                "repetition": b.get("repetition_index", 0),
                "iterations": b.get("iterations", 0),
                "real_time_ns": b.get("real_time", ""),
                "error": b.get("error_message", "") if b.get("error_occurred") else "",
                "file": os.path.basename(path),
            }
            for c in COUNTERS:
                row[c] = b.get(c, "")
            rows.append(row)
        log("read %s" % path)
    return rows, context or {}


def write_csv(rows, path):
    cols = ["object", "impl", "mix", "threads", "repetition", "iterations",
            "real_time_ns"] + COUNTERS + ["error", "file"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})
    log("wrote %s (%d runs)" % (path, len(rows)))


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def fmt(x, digits=2):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return "%.*f" % (digits, x)


def fmt_rate(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    for div, unit in ((1e6, "M"), (1e3, "k")):
        if x >= div:
            return "%.2f%s" % (x / div, unit)
    return "%.0f" % x


def fmt_int(x):
    return "-" if x is None else "%d" % x


class Table:
    """Median over repetitions of every counter, per configuration."""

    def __init__(self, rows):
        groups = {}
        self.errors = []
        for r in rows:
            key = (r["object"], r["impl"], r["mix"], r["threads"])
            if r["error"]:
                self.errors.append(r)
                continue
            groups.setdefault(key, []).append(r)
        self.cells = {}
        for key, rs in groups.items():
            self.cells[key] = {c: statistics.median(float(r[c]) for r in rs)
                               for c in COUNTERS if all(r[c] != "" for r in rs)}
        self.threads = sorted({k[3] for k in self.cells})

    def get(self, obj, impl, mix, threads, counter):
        cell = self.cells.get((obj, impl, mix, threads))
        return cell.get(counter) if cell else None

    def has(self, obj, mix):
        return any((obj, i, mix, n) in self.cells for i in IMPLS for n in self.threads)

    def ratio(self, obj, mix, threads):
        a = self.get(obj, "onll", mix, threads, "ops_per_s")
        b = self.get(obj, "pmdk-tx", mix, threads, "ops_per_s")
        return a / b if a and b else None


def ratio_section(t, out):
    """Ratio table; returns {mix: [ratios]} and {(obj, mix): [ratios]}."""
    by_mix, by_cfg = {}, {}
    out.append("\n## Throughput ratio ONLL / PMDK transactions\n")
    out.append("> 1 means ONLL is faster. Rows: object and mix; columns: threads.\n")
    out.append("| object | mix | " + " | ".join("%d thr" % n for n in t.threads) +
               " | geomean |")
    out.append("|---|---|" + "---:|" * (len(t.threads) + 1))
    for mix in MIXES:
        for obj in OBJECTS:
            if not t.has(obj, mix):
                continue
            rs = [t.ratio(obj, mix, n) for n in t.threads]
            good = [r for r in rs if r]
            by_cfg[(obj, mix)] = good
            by_mix.setdefault(mix, []).extend(good)
            out.append("| %s | %s | %s | **%s** |" % (
                obj, MIX_TITLES[mix], " | ".join(fmt(r) for r in rs), fmt(geomean(good))))
    for mix in MIXES:
        if by_mix.get(mix):
            out.append("| **all** | **%s** | %s | **%s** |" % (
                MIX_TITLES[mix], " | ".join("" for _ in t.threads), fmt(geomean(by_mix[mix]))))
    allr = [r for rs in by_mix.values() for r in rs]
    if allr:
        out.append("| **all** | **all** | %s | **%s** |" % (
            " | ".join("" for _ in t.threads), fmt(geomean(allr))))
    return by_mix, by_cfg


def counter_section(t, context, out):
    out.append("\n## Counters (columns: values at %s threads)\n" %
               " / ".join(str(n) for n in t.threads))
    pmdk_fences = context.get("pmdk_fence_counting", "")
    out.append("Fences: ONLL's are pm/cost.h's PM_COST_FENCE; PMDK's are the "
               "calls to libpmem's pmem_drain()/pmem_msync() counted by wrappers "
               "interposed in the benchmark binary (benchmarks/pmdk_tx_objects.c; "
               "%s). drains/op counts the same wrappers for both implementations, "
               "so for ONLL it cross-checks fences/op. Flushes are counted for "
               "ONLL only. helped/upd: ops of other threads an update persisted "
               "in its log entry; applied/op: trace ops applied to a thread's "
               "local view (catch-up); ckpts: checkpoints written (of which with "
               "a fence of their own); log-full: updates that found their log "
               "full.\n" % (pmdk_fences or "method in the JSON context"))
    cols = [("ops/s", "ops_per_s", fmt_rate), ("fences/op", "fence_per_op", fmt),
            ("fences/update", "fence_per_update", fmt),
            ("drains/op", "drain_per_op", fmt), ("flushes/op", "flush_per_op", fmt),
            ("helped/upd", "helped_per_update", lambda x: fmt(x, 3)),
            ("applied/op", "applied_per_op", fmt),
            ("ckpts", "n_checkpoints", fmt_int),
            ("ckpt fences", "n_checkpoint_fences", fmt_int),
            ("log-full", "n_log_full_waits", fmt_int)]
    out.append("| object | mix | impl | " + " | ".join(c[0] for c in cols) + " |")
    out.append("|---|---|---|" + "---|" * len(cols))
    for obj in OBJECTS:
        for mix in MIXES:
            for impl in IMPLS:
                vals, present = [], False
                for _, counter, f in cols:
                    per = [t.get(obj, impl, mix, n, counter) for n in t.threads]
                    present |= any(x is not None for x in per)
                    vals.append(" / ".join(f(x) for x in per) if any(
                        x is not None for x in per) else "-")
                if present:
                    out.append("| %s | %s | %s | %s |" % (obj, MIX_TITLES[mix], impl,
                                                          " | ".join(vals)))


def target_section(by_cfg, out):
    out.append("\n## Targets\n")
    out.append("| target | measured (min over threads; geomean) | met? |")
    out.append("|---|---|---|")
    for mix, need in TARGETS.items():
        for obj in OBJECTS:
            rs = by_cfg.get((obj, mix), [])
            name = "%s %s: ONLL >= %gx PMDK at every thread count" % (
                obj, MIX_TITLES[mix], need)
            if not rs:
                out.append("| %s | not measured | - |" % name)
                continue
            out.append("| %s | min %s; geomean %s over %d points | %s |" % (
                name, fmt(min(rs)), fmt(geomean(rs)), len(rs),
                "yes" if min(rs) >= need else "**no**"))


def write_markdown(t, context, path):
    out = ["# ONLL objects against PMDK transactions", ""]
    out.append("Throughput ratios of runs made back to back in one process "
               "(Google Benchmark, wall-clock time; median over repetitions). "
               "Each configuration gets a fresh pool on a RAM file system with "
               "PMEM_IS_PMEM_FORCE=1 (flushes are real clwb, fences real sfence). "
               "ONLL: onll/objects.h on the ONLL universal construction; PMDK: "
               "benchmarks/pmdk_tx_objects.h, a pthread rwlock plus a libpmemobj "
               "undo-log transaction (TX_BEGIN/TX_ADD/TX_END) per update, reads "
               "under the shared lock. Workloads: counter add/get; queue "
               "preloaded with 1000 values, updates alternate enqueue/dequeue, "
               "reads alternate front/size; map preloaded with 1000 of 2000 keys, "
               "updates put or remove a uniform key, reads get one.")
    out.append("")
    ctx = ["%s: %s" % (k, context[k]) for k in
           ("date", "git_commit", "host_name", "num_cpus", "mhz_per_cpu", "library_build_type",
            "PMEM_IS_PMEM_FORCE", "pool_dir", "pmdk_fence_counting", "onll_max_threads",
            "onll_max_op_size", "onll_log_entries", "onll_checkpoint_every",
            "onll_checkpoint_capacity") if k in context]
    if "load_avg" in context:
        ctx.append("load_avg at start: %s" % ", ".join("%.2f" % x for x in context["load_avg"]))
    if ctx:
        out.append("Context: " + "; ".join(ctx) + ".")
    _, by_cfg = ratio_section(t, out)
    target_section(by_cfg, out)
    counter_section(t, context, out)
    if t.errors:
        out.append("\n## Failed runs\n")
        for r in t.errors:
            out.append("- %s/%s/%s threads %s: %s" % (
                r["object"], r["impl"], r["mix"], r["threads"], r["error"]))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    log("wrote %s" % path)


def plot(t, outdir):
    """PNG plots; returns False if matplotlib is unavailable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not available to %s: plots skipped "
            "(apt-get install python3-matplotlib, run with /usr/bin/python3)" % sys.executable)
        return False
    styles = {"onll": ("tab:blue", "o"), "pmdk-tx": ("tab:red", "^")}

    def axis_threads(ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(t.threads)
        ax.set_xticklabels([str(n) for n in t.threads])
        ax.set_xlabel("threads")
        ax.grid(True, alpha=0.3)

    for obj in OBJECTS:
        mixes = [m for m in MIXES if t.has(obj, m)]
        if not mixes:
            continue
        fig, axes = plt.subplots(1, len(mixes), figsize=(4.2 * len(mixes), 3.6), squeeze=False)
        for col, mix in enumerate(mixes):
            ax = axes[0][col]
            for impl, (color, marker) in styles.items():
                pts = [(n, t.get(obj, impl, mix, n, "ops_per_s")) for n in t.threads]
                pts = [(n, y) for n, y in pts if y is not None]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color,
                            marker=marker, label=impl)
            axis_threads(ax)
            ax.set_yscale("log")
            ax.set_title(MIX_TITLES[mix])
            if col == 0:
                ax.set_ylabel("ops/s (log)")
        axes[0][0].legend(fontsize=8)
        fig.suptitle("%s: ONLL vs PMDK transactions" % obj)
        fig.tight_layout()
        path = os.path.join(outdir, "onll_%s.png" % obj)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        log("wrote %s" % path)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    colors = {"counter": "tab:blue", "queue": "tab:green", "map": "tab:purple"}
    lines = {"update": "-", "read": "--", "mixed": ":"}
    for obj in OBJECTS:
        for mix in MIXES:
            pts = [(n, t.ratio(obj, mix, n)) for n in t.threads]
            pts = [(n, y) for n, y in pts if y]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colors[obj],
                        linestyle=lines[mix], marker="o", label="%s %s" % (obj, MIX_TITLES[mix]))
    for mix, need in TARGETS.items():
        ax.axhline(need, color="gray", linestyle=lines[mix], linewidth=0.8)
    axis_threads(ax)
    ax.set_yscale("log")
    ax.set_ylabel("ONLL / PMDK throughput (log)")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title("Throughput ratio (gray: targets 2x updates, 10x reads)")
    fig.tight_layout()
    path = os.path.join(outdir, "onll_ratio.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    log("wrote %s" % path)
    return True


def main(argv):
    args = parse_args(argv)
    paths = args.inputs or sorted(glob.glob(os.path.join(args.results, "onll*.json")))
    if not paths:
        log("no JSON files given or found in %s" % args.results)
        return EXIT_USAGE
    outdir = args.out or (args.results if not args.inputs else os.path.dirname(paths[0]) or ".")
    os.makedirs(outdir, exist_ok=True)
    rows, context = load_runs(paths)
    if not rows:
        log("no onll_bench runs in %s" % ", ".join(paths))
        return EXIT_USAGE
    write_csv(rows, os.path.join(outdir, "onll_runs.csv"))
    t = Table(rows)
    write_markdown(t, context, os.path.join(outdir, "onll_report.md"))
    if t.errors:
        log("%d runs failed; see onll_report.md" % len(t.errors))
    if args.no_plots:
        return EXIT_OK
    return EXIT_OK if plot(t, outdir) else EXIT_NO_PLOTS


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
