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

Ratios, exit status and messages as described in report_util.py.
"""

import re
import sys

from report_util import (Table, axis_threads, counter_cells, fmt, fmt_int, fmt_rate, geomean,
                         header, main, plot_line, ratio_cells, save_figure, target_row)

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
CONFIG = ["object", "impl", "mix", "threads"]
NAME_RE = re.compile(
    r"^(?P<obj>counter|queue|map)/(?P<impl>onll|pmdk-tx)/(?P<mix>update|read|mixed)"
    r"(?:/.*)?/threads:(?P<threads>\d+)$")
# The targets: minimum ratio ONLL / PMDK at every thread count.
TARGETS = {"update": 2.0, "read": 10.0}


def parse_name(name):
    m = NAME_RE.match(name)
    if not m:
        return None
    return {"object": m.group("obj"), "impl": m.group("impl"), "mix": m.group("mix"),
            "threads": int(m.group("threads"))}


class OnllTable(Table):
    """Median over repetitions of every counter, per (object, impl, mix,
    threads)."""

    def __init__(self, rows):
        super().__init__(rows, CONFIG, COUNTERS)

    def has(self, obj, mix):
        return any((obj, i, mix, n) in self.cells for i in IMPLS for n in self.threads)

    def ratio(self, obj, mix, threads):
        a = self.get(obj, "onll", mix, threads, "ops_per_s")
        b = self.get(obj, "pmdk-tx", mix, threads, "ops_per_s")
        return a / b if a and b else None


def ratio_section(t, out):
    """Ratio table; returns {(obj, mix): [ratios]}."""
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
            cells, good = ratio_cells(t, lambda n: t.ratio(obj, mix, n))
            by_cfg[(obj, mix)] = good
            by_mix.setdefault(mix, []).extend(good)
            out.append("| %s | %s | %s | **%s** |" % (
                obj, MIX_TITLES[mix], cells, fmt(geomean(good))))
    for mix in MIXES:
        if by_mix.get(mix):
            out.append("| **all** | **%s** | %s | **%s** |" % (
                MIX_TITLES[mix], " | ".join("" for _ in t.threads), fmt(geomean(by_mix[mix]))))
    allr = [r for rs in by_mix.values() for r in rs]
    if allr:
        out.append("| **all** | **all** | %s | **%s** |" % (
            " | ".join("" for _ in t.threads), fmt(geomean(allr))))
    return by_cfg


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
                cells = counter_cells(t, cols, lambda c, n: t.get(obj, impl, mix, n, c))
                if cells is not None:
                    out.append("| %s | %s | %s | %s |" % (obj, MIX_TITLES[mix], impl, cells))


def target_section(by_cfg, out):
    out.append("\n## Targets\n")
    out.append("| target | measured (min over threads; geomean) | met? |")
    out.append("|---|---|---|")
    for mix, need in TARGETS.items():
        for obj in OBJECTS:
            name = "%s %s: ONLL >= %gx PMDK at every thread count" % (
                obj, MIX_TITLES[mix], need)
            out.append(target_row(name, by_cfg.get((obj, mix), []),
                                  lambda rs: min(rs) >= need, ";"))


def markdown(t, context):
    out = header(
        "ONLL objects against PMDK transactions",
        "Throughput ratios of runs made back to back in one process "
        "(Google Benchmark, wall-clock time; median over repetitions). "
        "Each configuration gets a fresh pool on a RAM file system with "
        "PMEM_IS_PMEM_FORCE=1 (flushes are real clwb, fences real sfence). "
        "ONLL: onll/objects.h on the ONLL universal construction; PMDK: "
        "benchmarks/pmdk_tx_objects.h, a pthread rwlock plus a libpmemobj "
        "undo-log transaction (TX_BEGIN/TX_ADD/TX_END) per update, reads "
        "under the shared lock. Workloads: counter add/get; queue "
        "preloaded with 1000 values, updates alternate enqueue/dequeue, "
        "reads alternate front/size; map preloaded with 1000 of 2000 keys, "
        "updates put or remove a uniform key, reads get one.",
        context, ("pmdk_fence_counting", "onll_max_threads", "onll_max_op_size",
                  "onll_log_entries", "onll_checkpoint_every", "onll_checkpoint_capacity"))
    by_cfg = ratio_section(t, out)
    target_section(by_cfg, out)
    counter_section(t, context, out)
    if t.errors:
        out.append("\n## Failed runs\n")
        for r in t.errors:
            out.append("- %s/%s/%s threads %s: %s" % (
                r["object"], r["impl"], r["mix"], r["threads"], r["error"]))
    return out


def plot(plt, t, outdir):
    styles = {"onll": ("tab:blue", "o"), "pmdk-tx": ("tab:red", "^")}
    for obj in OBJECTS:
        mixes = [m for m in MIXES if t.has(obj, m)]
        if not mixes:
            continue
        fig, axes = plt.subplots(1, len(mixes), figsize=(4.2 * len(mixes), 3.6), squeeze=False)
        for col, mix in enumerate(mixes):
            ax = axes[0][col]
            for impl, (color, marker) in styles.items():
                plot_line(ax, t.threads, lambda n: t.get(obj, impl, mix, n, "ops_per_s"),
                          color=color, marker=marker, label=impl)
            axis_threads(ax, t.threads)
            ax.set_yscale("log")
            ax.set_title(MIX_TITLES[mix])
            if col == 0:
                ax.set_ylabel("ops/s (log)")
        axes[0][0].legend(fontsize=8)
        fig.suptitle("%s: ONLL vs PMDK transactions" % obj)
        save_figure(plt, fig, outdir, "onll_%s.png" % obj)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    colors = {"counter": "tab:blue", "queue": "tab:green", "map": "tab:purple"}
    lines = {"update": "-", "read": "--", "mixed": ":"}
    for obj in OBJECTS:
        for mix in MIXES:
            plot_line(ax, t.threads, lambda n: t.ratio(obj, mix, n), color=colors[obj],
                      linestyle=lines[mix], marker="o", label="%s %s" % (obj, MIX_TITLES[mix]))
    for mix, need in TARGETS.items():
        ax.axhline(need, color="gray", linestyle=lines[mix], linewidth=0.8)
    axis_threads(ax, t.threads)
    ax.set_yscale("log")
    ax.set_ylabel("ONLL / PMDK throughput (log)")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title("Throughput ratio (gray: targets 2x updates, 10x reads)")
    save_figure(plt, fig, outdir, "onll_ratio.png")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], "onll", __doc__, "onll*.json", "onll_bench", parse_name, CONFIG,
                  COUNTERS, OnllTable, markdown, plot))
