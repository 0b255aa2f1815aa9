# SPDX-License-Identifier: BSD-3-Clause
"""report_util.py -- what benchmarks/onll_report.py, mcas_report.py and
reclaim_report.py share: the command line, reading Google Benchmark JSON
into rows, the CSV of every run, the median table, number formatting, the
markdown header and the plot helpers, and main() tying them together.

Not a script: the two reports import it from their own directory (Python
puts a script's directory first on sys.path, so this works from any cwd).

Both reports: every headline number is a ratio of two runs made back to
back in the same process (DESIGN.md sect. 9); absolute rates are in the
CSV. Exit status: 0 everything written; 2 bad usage or no usable input;
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
import statistics
import sys

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_NO_PLOTS = 3

_prog = "report"  # the prefix of log(); set by main()


def log(msg):
    print("%s: %s" % (_prog, msg), file=sys.stderr)


def parse_args(argv, prog, doc, pattern, add_args=None):
    p = argparse.ArgumentParser(
        prog=prog + ".py",
        description=doc.split("\n\n")[0],
        epilog="Exit status: 0 done; 2 bad usage or no usable input; "
               "3 CSV/markdown written but plots skipped (no matplotlib).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*",
                   help="benchmark JSON files (default: %s in --results)" % pattern)
    p.add_argument("--results", default="benchmarks/results",
                   help="directory holding the JSON files (default: %(default)s)")
    p.add_argument("--out", default=None,
                   help="output directory (default: the --results directory)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    if add_args:
        add_args(p)
    return p.parse_args(argv)


def load_docs(paths):
    """(path, document) for every file of @paths that reads as JSON; the
    others are logged and skipped."""
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            log("skipping %s: %s" % (path, e))
            continue
        yield path, doc


def load_runs(paths, parse_name, counters):
    """Rows (dicts) of every per-iteration benchmark entry in @paths, plus
    the context of the first file. @parse_name maps a benchmark name to the
    row's configuration fields, or None for a benchmark the report does not
    know."""
    rows, context = [], None
    for path, doc in load_docs(paths):
        if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
            log("skipping %s: not Google Benchmark JSON" % path)
            continue
        context = context or doc.get("context", {})
        for b in doc["benchmarks"]:
            if b.get("run_type", "iteration") != "iteration":
                continue  # aggregates are recomputed below (median)
            row = parse_name(b.get("name", ""))
            if row is None:
                log("skipping unknown benchmark %r in %s" % (b.get("name"), path))
                continue
            row.update({
                "repetition": b.get("repetition_index", 0),
                "iterations": b.get("iterations", 0),
                "real_time_ns": b.get("real_time", ""),
                "error": b.get("error_message", "") if b.get("error_occurred") else "",
                "file": os.path.basename(path),
            })
            for c in counters:
                row[c] = b.get(c, "")
            rows.append(row)
        log("read %s" % path)
    return rows, context or {}


def write_csv(rows, path, config_cols, counters):
    cols = config_cols + ["repetition", "iterations", "real_time_ns"] + counters + [
        "error", "file"]
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
    """Median over repetitions of every counter, per configuration: the
    values of @key_fields, the thread count last."""

    def __init__(self, rows, key_fields, counters):
        groups = {}
        self.errors = []
        for r in rows:
            if r["error"]:
                self.errors.append(r)
                continue
            groups.setdefault(tuple(r[k] for k in key_fields), []).append(r)
        self.cells = {}
        for key, rs in groups.items():
            self.cells[key] = {c: statistics.median(float(r[c]) for r in rs)
                               for c in counters if all(r[c] != "" for r in rs)}
        self.threads = sorted({k[-1] for k in self.cells})

    def get(self, *key_and_counter):
        cell = self.cells.get(key_and_counter[:-1])
        return cell.get(key_and_counter[-1]) if cell else None


def ratio_cells(t, ratio):
    """The ratios @ratio(threads) at every thread count of @t, formatted,
    and the list of those measured."""
    rs = [ratio(n) for n in t.threads]
    return " | ".join(fmt(r) for r in rs), [r for r in rs if r]


def counter_cells(t, cols, get):
    """One markdown row's cells: per (title, counter, format) of @cols the
    values @get(counter, threads) at every thread count of @t joined by " / "
    ("-" when none is measured); None when no counter is measured at all."""
    vals, present = [], False
    for _, counter, f in cols:
        per = [get(counter, n) for n in t.threads]
        measured = any(x is not None for x in per)
        present |= measured
        vals.append(" / ".join(f(x) for x in per) if measured else "-")
    return " | ".join(vals) if present else None


def target_row(name, rs, ok, sep):
    """A row of a targets table: @ok(@rs) decides whether it is met."""
    if not rs:
        return "| %s | not measured | - |" % name
    return "| %s | min %s%s geomean %s over %d points | %s |" % (
        name, fmt(min(rs)), sep, fmt(geomean(rs)), len(rs), "yes" if ok(rs) else "**no**")


def header(title, intro, context, keys):
    """The first lines of a report: title, @intro, and the values of @keys
    (and the load average) in the JSON @context."""
    out = ["# " + title, "", intro, ""]
    ctx = ["%s: %s" % (k, context[k]) for k in
           ("date", "git_commit", "host_name", "num_cpus", "mhz_per_cpu", "library_build_type",
            "PMEM_IS_PMEM_FORCE", "pool_dir") + keys if k in context]
    if "load_avg" in context:
        ctx.append("load_avg at start: %s" % ", ".join("%.2f" % x for x in context["load_avg"]))
    if ctx:
        out.append("Context: " + "; ".join(ctx) + ".")
    return out


def write_lines(out, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    log("wrote %s" % path)


def axis_threads(ax, threads):
    """A log2 thread-count x axis with a grid."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(threads)
    ax.set_xticklabels([str(n) for n in threads])
    ax.set_xlabel("threads")
    ax.grid(True, alpha=0.3)


def plot_line(ax, threads, y, **style):
    """The points (n, @y(n)) of @threads where y is measured, as one line."""
    pts = [(n, y(n)) for n in threads]
    pts = [(n, v) for n, v in pts if v is not None]
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], **style)


def save_figure(plt, fig, outdir, name):
    fig.tight_layout()
    path = os.path.join(outdir, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    log("wrote %s" % path)


def report_lines(args, stem, rows_of, cols, index_of, markdown, plot):
    """The report of a command-line benchmark's JSON document(s) (kv_bench,
    kv_index_bench, kv_compare_bench): its runs (args.inputs, default
    <args.results>/<stem>.json) as rows into <stem>_runs.csv, the markdown
    report <stem>_report.md and the plots, in args.out (default
    args.results). rows_of(runs) gives the rows, index_of(rows) what
    markdown(index, rows, runs, context) and plot(plt, index, outdir) take.
    Returns the exit status."""
    paths = args.inputs or [os.path.join(args.results, stem + ".json")]
    runs, context = [], {}
    for _, doc in load_docs(paths):
        context = context or doc.get("context", {})
        runs.extend(doc.get("runs", []))
    if not runs:
        log("no runs in %s" % ", ".join(paths))
        return EXIT_USAGE
    outdir = args.out or args.results
    os.makedirs(outdir, exist_ok=True)
    rows = rows_of(runs)
    path = os.path.join(outdir, stem + "_runs.csv")
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    log("wrote %s (%d rows)" % (path, len(rows)))
    ix = index_of(rows)
    write_lines(markdown(ix, rows, runs, context), os.path.join(outdir, stem + "_report.md"))
    if args.no_plots:
        return EXIT_OK
    plt = pyplot()
    if plt is None:
        return EXIT_NO_PLOTS
    plot(plt, ix, outdir)
    return EXIT_OK


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None if unavailable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not available to %s: plots skipped "
            "(apt-get install python3-matplotlib, run with /usr/bin/python3)" % sys.executable)
        return None
    return plt


def main(argv, name, doc, pattern, what, parse_name, config_cols, counters, table,
         markdown, plot, add_args=None, on_args=None):
    """The script <@name>_report.py: reads the JSON (@argv's files, or the
    @pattern ones in --results), writes <@name>_runs.csv with @config_cols,
    the @table of the rows, <@name>_report.md (@markdown(table, context)
    gives its lines) and the plots (@plot(plt, table, outdir)). Returns the
    exit status; @what names the runs in the message when there are none.
    A report with more inputs than the JSON adds its options with
    @add_args(parser) and reads them in @on_args(args), called before the
    JSON is read."""
    global _prog
    _prog = name + "_report"
    args = parse_args(argv, _prog, doc, pattern, add_args)
    if on_args:
        on_args(args)
    paths = args.inputs or sorted(glob.glob(os.path.join(args.results, pattern)))
    if not paths:
        log("no JSON files given or found in %s" % args.results)
        return EXIT_USAGE
    outdir = args.out or (args.results if not args.inputs else os.path.dirname(paths[0]) or ".")
    os.makedirs(outdir, exist_ok=True)
    rows, context = load_runs(paths, parse_name, counters)
    if not rows:
        log("no %s runs in %s" % (what, ", ".join(paths)))
        return EXIT_USAGE
    write_csv(rows, os.path.join(outdir, name + "_runs.csv"), config_cols, counters)
    t = table(rows)
    write_lines(markdown(t, context), os.path.join(outdir, name + "_report.md"))
    if t.errors:
        log("%d runs failed; see %s_report.md" % (len(t.errors), name))
    if args.no_plots:
        return EXIT_OK
    plt = pyplot()
    if plt is None:
        return EXIT_NO_PLOTS
    plot(plt, t, outdir)
    return EXIT_OK
