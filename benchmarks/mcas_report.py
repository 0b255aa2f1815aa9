#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""mcas_report.py -- turn the JSON of the MCAS benchmarks into a CSV of every
run, a markdown report of ratios against the baselines, and PNG plots.

Reads Google Benchmark JSON files (--benchmark_out_format=json) written by
benchmarks/mcas_array_bench and benchmarks/dll_bench, and writes into the
output directory:

  mcas_runs.csv   one row per benchmark run: configuration, every counter,
                  and the error message if the run failed
  mcas_report.md  ratio tables AOPT/HARRIS (volatile) and AOPT/PMwCAS
                  (persistent) of throughput per (size[, read %], threads),
                  geometric means, the deterministic counters (CAS, fences,
                  flushes per op), helping and detaching ratios, and a check
                  of the issue's targets
  array.png, dll_read<R>.png
                  throughput and helping ratio against threads, one panel
                  per size, one line per variant (thesis Fig. 5.1 / 5.2)

Ratios, exit status and messages as described in report_util.py.
"""

import re
import sys

from report_util import (Table, axis_threads, counter_cells, fmt, fmt_int, fmt_rate, geomean,
                         header, main, plot_line, ratio_cells, save_figure, target_row)

# Variant label -> (algorithm, mode); AOPT first in each pair.
VARIANTS = {
    "aopt-vol": ("aopt", "volatile"),
    "harris-vol": ("harris", "volatile"),
    "aopt-pm": ("aopt", "persistent"),
    "pmwcas-pm": ("pmwcas", "persistent"),
}
# (numerator, denominator, column title)
PAIRS = [
    ("aopt-vol", "harris-vol", "AOPT / HARRIS (volatile)"),
    ("aopt-pm", "pmwcas-pm", "AOPT / PMwCAS (persistent)"),
]
COUNTERS = [
    "ops_per_s", "cas_per_op", "cas_per_mcas", "fence_per_op", "flush_per_op",
    "help_ratio", "detach_ratio", "mcas_success",
    "n_ops", "n_mcas", "n_cas", "n_fence", "n_flush", "n_helps", "n_detach_cas",
    "n_read_detach", "n_desc_waits", "n_updates",
]
CONFIG = ["bench", "variant", "algorithm", "mode", "size", "read_pct", "threads"]
NAME_RE = re.compile(
    r"^(?P<bench>array|dll)/(?P<variant>[a-z-]+)/size:(?P<size>\d+)"
    r"(?:/read:(?P<read>\d+))?(?:/.*)?/threads:(?P<threads>\d+)$")


def parse_name(name):
    m = NAME_RE.match(name)
    if not m or m.group("variant") not in VARIANTS:
        return None
    alg, mode = VARIANTS[m.group("variant")]
    return {"bench": m.group("bench"), "variant": m.group("variant"), "algorithm": alg,
            "mode": mode, "size": int(m.group("size")),
            "read_pct": int(m.group("read")) if m.group("read") else "",
            "threads": int(m.group("threads"))}


class McasTable(Table):
    """Median over repetitions of every counter, per (bench, variant, size,
    read_pct, threads)."""

    def __init__(self, rows):
        super().__init__(rows, ("bench", "variant", "size", "read_pct", "threads"), COUNTERS)

    def configs(self, bench):
        """(size, read) pairs present for @bench, sorted."""
        return sorted({(k[2], k[3]) for k in self.cells if k[0] == bench},
                      key=lambda sr: (sr[1] if sr[1] != "" else -1, sr[0]))

    def ratio(self, bench, num, den, size, read, threads):
        a = self.get(bench, num, size, read, threads, "ops_per_s")
        b = self.get(bench, den, size, read, threads, "ops_per_s")
        return a / b if a and b else None


def config_label(bench, size, read):
    return ("size %d" % size) if bench == "array" else ("size %d, %d%% reads" % (size, read))


def ratio_section(t, bench, out):
    """Markdown ratio tables for @bench; returns {pair: {config: [ratios]}}."""
    found = {}
    for num, den, title in PAIRS:
        configs = [c for c in t.configs(bench)
                   if any(t.ratio(bench, num, den, c[0], c[1], n) for n in t.threads)]
        if not configs:
            continue
        out.append("\n#### %s: throughput ratio %s\n" % (bench, title))
        out.append("| configuration | " + " | ".join("%d thr" % n for n in t.threads) +
                   " | geomean |")
        out.append("|---|" + "---:|" * (len(t.threads) + 1))
        allr = []
        found[(num, den)] = {}
        for size, read in configs:
            cells, good = ratio_cells(t, lambda n: t.ratio(bench, num, den, size, read, n))
            allr += good
            found[(num, den)][(size, read)] = good
            out.append("| %s | %s | **%s** |" % (
                config_label(bench, size, read), cells, fmt(geomean(good))))
        out.append("| **all** | %s | **%s** |" % (" | ".join("" for _ in t.threads),
                                                 fmt(geomean(allr))))
    return found


def counter_section(t, bench, out):
    """Per-variant counters, one row per (configuration, variant)."""
    out.append("\n#### %s: counters per variant (columns: threads)\n" % bench)
    cols = [("ops/s", "ops_per_s", fmt_rate), ("CAS/op", "cas_per_op", fmt),
            ("CAS/MCAS", "cas_per_mcas", fmt), ("fences/op", "fence_per_op", fmt),
            ("flushes/op", "flush_per_op", fmt),
            ("helping", "help_ratio", lambda x: fmt(x, 4)),
            ("detaching", "detach_ratio", lambda x: fmt(x, 4)),
            ("desc waits", "n_desc_waits", fmt_int)]
    head = "| configuration | variant | " + " | ".join(c[0] for c in cols) + " |"
    out.append(head)
    out.append("|---|---|" + "---|" * len(cols))
    for size, read in t.configs(bench):
        for v in VARIANTS:
            cells = counter_cells(t, cols, lambda c, n: t.get(bench, v, size, read, n, c))
            if cells is not None:
                out.append("| %s | %s | %s |" % (config_label(bench, size, read), v, cells))


def target_section(found, out):
    """The issue's targets, checked against the measured ratios."""
    out.append("\n### Targets\n")
    out.append("| target | measured | met? |")
    out.append("|---|---|---|")

    def line(name, rs, ok):
        out.append(target_row(name, rs, ok, ","))

    vol = ("aopt-vol", "harris-vol")
    pm = ("aopt-pm", "pmwcas-pm")
    arr = found.get("array", {}).get(vol, {})
    line("array: AOPT >= 1.5x HARRIS at every size and thread count",
         [r for rs in arr.values() for r in rs], lambda rs: min(rs) >= 1.5)
    dll = found.get("dll", {}).get(vol, {})
    for size in (5, 50):
        line("list size %d, 80%% reads: AOPT >= 2x HARRIS (geomean over threads)" % size,
             dll.get((size, 80), []), lambda rs: geomean(rs) >= 2.0)
    line("list size 500, 80% reads: AOPT at least on par (geomean >= 1)",
         dll.get((500, 80), []), lambda rs: geomean(rs) >= 1.0)
    for bench in ("array", "dll"):
        p = found.get(bench, {}).get(pm, {})
        line("%s: persistent AOPT >= 2x PMwCAS (geomean over all points)" % bench,
             [r for rs in p.values() for r in rs], lambda rs: geomean(rs) >= 2.0)


def markdown(t, context):
    out = header(
        "MCAS benchmarks: AOPT against its baselines",
        "Throughput ratios of runs made back to back in one process "
        "(Google Benchmark, wall-clock time; median over repetitions). "
        "> 1 means AOPT is faster. Array: successful 4-word "
        "read-modify-writes per second; list: operations per second.",
        context, ("mcas_descs_per_thread", "mcas_read_detach_one_in"))
    found = {}
    for bench in ("array", "dll"):
        if not t.configs(bench):
            continue
        out.append("\n## %s benchmark\n" % ("Array" if bench == "array" else "Doubly-linked list"))
        found[bench] = ratio_section(t, bench, out)
        counter_section(t, bench, out)
    target_section(found, out)
    if t.errors:
        out.append("\n### Failed runs\n")
        for r in t.errors:
            out.append("- %s/%s size %s read %s threads %s: %s" % (
                r["bench"], r["variant"], r["size"], r["read_pct"], r["threads"], r["error"]))
    return out


def plot(plt, t, outdir):
    styles = {"aopt-vol": ("tab:blue", "-", "o"), "harris-vol": ("tab:orange", "-", "s"),
              "aopt-pm": ("tab:blue", "--", "o"), "pmwcas-pm": ("tab:red", "--", "^")}

    def figure(bench, read, name, title):
        sizes = sorted({s for s, r in t.configs(bench) if r == read})
        if not sizes:
            return
        fig, axes = plt.subplots(2, len(sizes), figsize=(4.2 * len(sizes), 6.5), squeeze=False)
        for col, size in enumerate(sizes):
            for row, counter in enumerate(("ops_per_s", "help_ratio")):
                ax = axes[row][col]
                for v, (color, ls, marker) in styles.items():
                    plot_line(ax, t.threads, lambda n: t.get(bench, v, size, read, n, counter),
                              color=color, linestyle=ls, marker=marker, label=v)
                axis_threads(ax, t.threads)
                if counter == "ops_per_s":
                    ax.set_yscale("log")
                    ax.set_title("size %d" % size)
                    ax.set_ylabel("ops/s (log)" if col == 0 else "")
                else:
                    ax.set_ylabel("helping ratio" if col == 0 else "")
        axes[0][0].legend(fontsize=8)
        fig.suptitle(title)
        save_figure(plt, fig, outdir, name)

    figure("array", "", "array.png", "Array benchmark, k = 4 (cf. thesis Fig. 5.1)")
    for read in sorted({r for s, r in t.configs("dll")}):
        figure("dll", read, "dll_read%d.png" % read,
               "Doubly-linked list, %d%% reads (cf. thesis Fig. 5.2)" % read)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], "mcas", __doc__, "*.json", "MCAS benchmark", parse_name, CONFIG,
                  COUNTERS, McasTable, markdown, plot))
