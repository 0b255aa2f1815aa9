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
NAME_RE = re.compile(
    r"^(?P<bench>array|dll)/(?P<variant>[a-z-]+)/size:(?P<size>\d+)"
    r"(?:/read:(?P<read>\d+))?(?:/.*)?/threads:(?P<threads>\d+)$")


def log(msg):
    print("mcas_report: " + msg, file=sys.stderr)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="mcas_report.py",
        description=__doc__.split("\n\n")[0],
        epilog="Exit status: 0 done; 2 bad usage or no usable input; "
               "3 CSV/markdown written but plots skipped (no matplotlib).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*",
                   help="benchmark JSON files (default: every *.json in --results)")
    p.add_argument("--results", default="benchmarks/results",
                   help="directory holding the JSON files (default: %(default)s)")
    p.add_argument("--out", default=None,
                   help="output directory (default: the --results directory)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    return p.parse_args(argv)


def load_runs(paths):
    """Rows (dicts) of every per-iteration benchmark entry in @paths, plus
    the context of the first file."""
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
            if not m or m.group("variant") not in VARIANTS:
                log("skipping unknown benchmark %r in %s" % (b.get("name"), path))
                continue
            alg, mode = VARIANTS[m.group("variant")]
            row = {
                "bench": m.group("bench"),
                "variant": m.group("variant"),
                "algorithm": alg,
                "mode": mode,
                "size": int(m.group("size")),
                "read_pct": int(m.group("read")) if m.group("read") else "",
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
    cols = ["bench", "variant", "algorithm", "mode", "size", "read_pct", "threads",
            "repetition", "iterations", "real_time_ns"] + COUNTERS + ["error", "file"]
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


class Table:
    """Median over repetitions of every counter, per configuration."""

    def __init__(self, rows):
        groups = {}
        self.errors = []
        for r in rows:
            key = (r["bench"], r["variant"], r["size"], r["read_pct"], r["threads"])
            if r["error"]:
                self.errors.append(r)
                continue
            groups.setdefault(key, []).append(r)
        self.cells = {}
        for key, rs in groups.items():
            self.cells[key] = {c: statistics.median(float(r[c]) for r in rs)
                               for c in COUNTERS if all(r[c] != "" for r in rs)}
        self.threads = sorted({k[4] for k in self.cells})

    def get(self, bench, variant, size, read, threads, counter):
        cell = self.cells.get((bench, variant, size, read, threads))
        return cell.get(counter) if cell else None

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
            rs = [t.ratio(bench, num, den, size, read, n) for n in t.threads]
            good = [r for r in rs if r]
            allr += good
            found[(num, den)][(size, read)] = good
            out.append("| %s | %s | **%s** |" % (
                config_label(bench, size, read),
                " | ".join(fmt(r) for r in rs), fmt(geomean(good))))
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
            ("desc waits", "n_desc_waits", lambda x: "-" if x is None else "%d" % x)]
    head = "| configuration | variant | " + " | ".join(c[0] for c in cols) + " |"
    out.append(head)
    out.append("|---|---|" + "---|" * len(cols))
    for size, read in t.configs(bench):
        for v in VARIANTS:
            vals = []
            present = False
            for _, counter, f in cols:
                per = [t.get(bench, v, size, read, n, counter) for n in t.threads]
                present |= any(x is not None for x in per)
                vals.append(" / ".join(f(x) for x in per))
            if present:
                out.append("| %s | %s | %s |" % (config_label(bench, size, read), v,
                                                 " | ".join(vals)))


def target_section(found, out):
    """The issue's targets, checked against the measured ratios."""
    out.append("\n### Targets\n")
    out.append("| target | measured | met? |")
    out.append("|---|---|---|")

    def line(name, rs, ok):
        if not rs:
            out.append("| %s | not measured | - |" % name)
            return
        out.append("| %s | min %s, geomean %s over %d points | %s |" % (
            name, fmt(min(rs)), fmt(geomean(rs)), len(rs), "yes" if ok(rs) else "**no**"))

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


def write_markdown(t, context, path):
    out = ["# MCAS benchmarks: AOPT against its baselines", ""]
    out.append("Throughput ratios of runs made back to back in one process "
               "(Google Benchmark, wall-clock time; median over repetitions). "
               "> 1 means AOPT is faster. Array: successful 4-word "
               "read-modify-writes per second; list: operations per second.")
    out.append("")
    ctx = ["%s: %s" % (k, context[k]) for k in
           ("date", "git_commit", "host_name", "num_cpus", "mhz_per_cpu", "library_build_type",
            "PMEM_IS_PMEM_FORCE", "pool_dir", "mcas_descs_per_thread",
            "mcas_read_detach_one_in") if k in context]
    if "load_avg" in context:
        ctx.append("load_avg at start: %s" % ", ".join("%.2f" % x for x in context["load_avg"]))
    if ctx:
        out.append("Context: " + "; ".join(ctx) + ".")
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
                    pts = [(n, t.get(bench, v, size, read, n, counter)) for n in t.threads]
                    pts = [(n, y) for n, y in pts if y is not None]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color,
                                linestyle=ls, marker=marker, label=v)
                ax.set_xscale("log", base=2)
                ax.set_xticks(t.threads)
                ax.set_xticklabels([str(n) for n in t.threads])
                ax.set_xlabel("threads")
                if counter == "ops_per_s":
                    ax.set_yscale("log")
                    ax.set_title("size %d" % size)
                    ax.set_ylabel("ops/s (log)" if col == 0 else "")
                else:
                    ax.set_ylabel("helping ratio" if col == 0 else "")
                ax.grid(True, alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.suptitle(title)
        fig.tight_layout()
        path = os.path.join(outdir, name)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        log("wrote %s" % path)

    figure("array", "", "array.png", "Array benchmark, k = 4 (cf. thesis Fig. 5.1)")
    for read in sorted({r for s, r in t.configs("dll")}):
        figure("dll", read, "dll_read%d.png" % read,
               "Doubly-linked list, %d%% reads (cf. thesis Fig. 5.2)" % read)
    return True


def main(argv):
    args = parse_args(argv)
    paths = args.inputs or sorted(glob.glob(os.path.join(args.results, "*.json")))
    if not paths:
        log("no JSON files given or found in %s" % args.results)
        return EXIT_USAGE
    outdir = args.out or (args.results if not args.inputs else os.path.dirname(paths[0]) or ".")
    os.makedirs(outdir, exist_ok=True)
    rows, context = load_runs(paths)
    if not rows:
        log("no MCAS benchmark runs in %s" % ", ".join(paths))
        return EXIT_USAGE
    write_csv(rows, os.path.join(outdir, "mcas_runs.csv"))
    t = Table(rows)
    write_markdown(t, context, os.path.join(outdir, "mcas_report.md"))
    if t.errors:
        log("%d runs failed; see mcas_report.md" % len(t.errors))
    if args.no_plots:
        return EXIT_OK
    return EXIT_OK if plot(t, outdir) else EXIT_NO_PLOTS


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
