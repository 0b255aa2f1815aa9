#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""rdma_report.py -- turn the JSON of benchmarks/rdma_bench into a CSV of
every run, a markdown report of transport latencies as ratios to their
floors, and a PNG plot.

Writes into the output directory:

  rdma_runs.csv   one row per benchmark run: configuration, every counter,
                  and the error message if the run failed
  rdma_report.md  per backend (local, ofi+tcp, ofi+shm; and ofi+tcp:rma,
                  ofi+shm:rma: batches of 8 run as provider operations
                  where the order allows, which the default ships), operation and
                  batch size: latency per batch, its ratio to the floor
                  measured in the same run (a random cache-line access for
                  local, a busy-polled loopback TCP echo of the same order of
                  size for ofi), operations per second, and what a batch
                  cost from the transport counters (round trips, messages,
                  provider operations, shipped batches)
  rdma_latency.png
                  latency per operation (batch of 1) per backend, log
                  scale, with the floors as lines

Ratios, exit status and messages as described in report_util.py.
"""

import re
import sys

from report_util import Table, fmt, fmt_rate, header, main, save_figure

BACKENDS = ["local", "ofi+tcp", "ofi+shm", "ofi+tcp:rma", "ofi+shm:rma"]
PLOT_BACKENDS = BACKENDS[:3]
OPS = ["read8", "read4k", "write8", "write4k", "cas", "faa", "persist64", "kv"]
COUNTERS = ["items_per_second", "rt_per_batch", "msgs_per_batch", "provider_ops_per_batch",
            "shipped_per_batch", "ops_per_batch", "bytes_per_batch"]
CONFIG = ["backend", "op", "batch"]
RDMA_RE = re.compile(r"^rdma/(?P<be>[^/]+)/(?P<op>[^/]+)/batch:(?P<n>\d+)(?:/.*)?$")
ECHO_RE = re.compile(r"^floor/tcp_echo/bytes:(?P<n>\d+)(?:/.*)?$")
LINE_RE = re.compile(r"^floor/cacheline/(?P<op>[^/]+)(?:/.*)?$")


def parse_name(name):
    m = RDMA_RE.match(name)
    if m:
        return {"backend": m.group("be"), "op": m.group("op"), "batch": int(m.group("n"))}
    m = ECHO_RE.match(name)
    if m:
        return {"backend": "floor", "op": "tcp_echo%s" % m.group("n"), "batch": 1}
    m = LINE_RE.match(name)
    if m:
        return {"backend": "floor", "op": "cacheline_" + m.group("op"), "batch": 1}
    return None


class RdmaTable(Table):
    def __init__(self, rows):
        super().__init__(rows, CONFIG, COUNTERS + ["real_time_ns"])

    def ns(self, be, op, batch):
        return self.get(be, op, batch, "real_time_ns")


def floor_of(be, op):
    """The floor a backend's operation is compared with."""
    if be == "local":
        return "cacheline_cas" if op in ("cas", "faa", "kv") else "cacheline_read8"
    return "tcp_echo4096" if op in ("read4k", "write4k", "kv") else "tcp_echo64"


def markdown(t, context):
    out = header("Transport latency (rdma/)",
                 "One client thread, one in-process memory node (busy-polling progress "
                 "threads), pool on /dev/shm with real clwb+sfence persists. Latency is per "
                 "batch (one iteration); ratio = latency / the floor measured in the same run.",
                 context, ())
    out.append("\n## Floors\n")
    out.append("| floor | latency |")
    out.append("|---|---|")
    for op, title in (("cacheline_read8", "random cache-line read (local floor)"),
                      ("cacheline_cas", "random cache-line CAS (local floor for atomics)"),
                      ("tcp_echo64", "loopback TCP echo, 64 B, busy-polled (ofi floor)"),
                      ("tcp_echo4096", "loopback TCP echo, 4 KiB, busy-polled")):
        out.append("| %s | %s ns |" % (title, fmt(t.ns("floor", op, 1), 1)))
    for be in BACKENDS:
        if not any(k[0] == be for k in t.cells):
            continue
        out.append("\n## %s\n" % be)
        out.append("| op | batch | latency/batch | ratio to floor (floor) | ops/s | "
                   "round trips | messages | provider ops | shipped |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for op in OPS:
            for n in sorted({k[2] for k in t.cells if k[0] == be and k[1] == op}):
                ns = t.ns(be, op, n)
                fl = floor_of(be, op)
                floor_ns = t.ns("floor", fl, 1)
                g = lambda c: t.get(be, op, n, c)
                out.append("| %s | %d | %s ns | %s (%s) | %s | %s | %s | %s | %s |" % (
                    op, n, fmt(ns, 0), fmt(ns / floor_ns if ns and floor_ns else None), fl,
                    fmt_rate(g("items_per_second")), fmt(g("rt_per_batch")),
                    fmt(g("msgs_per_batch")), fmt(g("provider_ops_per_batch")),
                    fmt(g("shipped_per_batch"))))
    if t.errors:
        out.append("\n## Failed runs\n")
        for r in t.errors:
            out.append("- %s/%s/batch:%s: %s" % (r["backend"], r["op"], r["batch"], r["error"]))
    return out


def plot(plt, t, outdir):
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(PLOT_BACKENDS)
    for i, be in enumerate(PLOT_BACKENDS):
        xs, ys = [], []
        for j, op in enumerate(OPS):
            n = 4 if op == "kv" else 1
            ns = t.ns(be, op, n)
            if ns:
                xs.append(j + (i - 1) * width)
                ys.append(ns / 1000.0)
        if xs:
            ax.bar(xs, ys, width, label=be)
    for op, style in (("cacheline_read8", ":"), ("tcp_echo64", "--")):
        ns = t.ns("floor", op, 1)
        if ns:
            ax.axhline(ns / 1000.0, linestyle=style, color="gray", label="floor: " + op)
    ax.set_yscale("log")
    ax.set_xticks(range(len(OPS)))
    ax.set_xticklabels([op + (" (4 ops)" if op == "kv" else "") for op in OPS])
    ax.set_ylabel("latency per batch (us, log)")
    ax.set_title("rdma/ transport: one batch of one operation")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(plt, fig, outdir, "rdma_latency.png")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], "rdma", __doc__, "rdma.json", "rdma_bench", parse_name,
                  CONFIG, COUNTERS, RdmaTable, markdown, plot))
