#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kv_compare_report.py -- turn the JSON of benchmarks/run_kv_compare.sh
(kv_bench lines for our store, kv_compare_bench lines for Redis, memcached
and the floors, under one context) into a CSV, a markdown report and a plot
of the store against what users run today.

Writes into the output directory:

  kv_compare_runs.csv     one row per run x op type (get, update, all):
                          system, medium, workload, threads, client polling,
                          ops, ops/s, latency p50/p90/p99/p99.9/max/mean,
                          durable, errors, our location-cache misses
  kv_compare_report.md    the issue's targets (reported, not asserted), a
                          table per workload with p50/p99/ops/s per system x
                          medium x threads and the ratios to durable Redis
                          (p50, same medium) and to memcached (gets), the
                          busy-polled against the blocking Redis client, and
                          everything that went wrong
  kv_compare_latency.png  p50 (solid) and p99 (light) of get and update per
                          system and medium, log scale, per workload and
                          thread count

A system's identity comes from the line itself: kv_bench's transport,
kv_compare_bench's target, the durability Redis reported for itself
("durable": appendonly yes + appendfsync always) and the client's polling;
the medium is the line's label (tmpfs, disk, or none for volatile systems
and floors).

Exit status: 0 done; 2 bad usage or no usable input; 3 CSV and markdown
written but plots skipped (no matplotlib).
"""

import math
import sys

from report_util import fmt, fmt_rate, header, parse_args, save_figure
import report_util

# Display order and names.
SYSTEMS = ["ours-local", "ours-tcp", "ours-tcp-busy", "redis-aof", "redis-aof-block", "redis-volatile",
           "memcached", "echo", "cacheline"]
NAME = {
    "ours-local": "ours, local: (SWARM, 3 nodes)",
    "ours-tcp": "ours, ofi+tcp (SWARM, 3 nodes)",
    "ours-tcp-busy": "ours, ofi+tcp, nodes polling busily",
    "redis-aof": "Redis, AOF fsync always",
    "redis-aof-block": "Redis, AOF always, blocking client",
    "redis-volatile": "Redis, no persistence",
    "memcached": "memcached",
    "echo": "floor: loopback TCP echo",
    "cacheline": "floor: 64-byte copy in memory",
}
MEDIA = ["tmpfs", "disk", "none"]
TYPES = ["get", "update"]
# The targets.
TCP_UPDATE_VS_REDIS = 1.0   # ours ofi+tcp update p50 below durable Redis's
TCP_GET_VS_MEMCACHED = 1.5  # ours ofi+tcp get p50 within 1.5x memcached's
LOCAL_P50_NS = 2000         # ours local: get and update p50 under 2 us
COLS = ["system", "system_name", "medium", "transport", "workload", "threads", "poll", "op",
        "ops", "secs", "ops_per_s", "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_p999_ns",
        "lat_max_ns", "lat_mean_ns", "durable", "ok", "errors", "wrong", "cache_misses",
        "capped", "warm", "durability", "load_avg_1m", "first_error"]

report_util._prog = "kv_compare_report"
log = report_util.log


def system_of(r):
    """Our key for the system of run line @r, or None if unknown."""
    if r.get("bench") == "kv":
        busy = r.get("transport") == "tcp" and r.get("node_poll") == "busy"
        return "ours-" + r.get("transport", "?") + ("-busy" if busy else "")
    target = r.get("target")
    if target == "redis":
        if not r.get("durable"):
            return "redis-volatile"
        return "redis-aof-block" if r.get("poll") == "block" else "redis-aof"
    return target


def rows_of(runs):
    rows = []
    for r in runs:
        run = (r.get("phases") or {}).get("run")
        system = system_of(r)
        if not run or system not in NAME:
            continue
        totals = run.get("totals", {})
        for op in TYPES + ["all"]:
            v = run.get(op)
            if not v or not v["ops"]:
                continue
            lat = v["lat_ns"]
            rows.append({
                "system": system, "system_name": NAME[system], "medium": r.get("label", "none"),
                "transport": r.get("transport"), "workload": r["workload"],
                "threads": r["threads"], "poll": r.get("poll", "busy"), "op": op,
                "ops": v["ops"], "secs": run["secs"], "ops_per_s": v["ops_per_s"],
                "lat_p50_ns": lat["p50"], "lat_p90_ns": lat["p90"], "lat_p99_ns": lat["p99"],
                "lat_p999_ns": lat["p999"], "lat_max_ns": lat["max"],
                "lat_mean_ns": lat["mean"],
                "durable": r.get("durable", r.get("bench") == "kv" or ""),
                "ok": r.get("ok"), "errors": sum(run["errors"].values()),
                "wrong": run["wrong"], "cache_misses": totals.get("cache_misses", ""),
                "capped": run.get("capped", ""), "warm": r.get("warm", ""),
                "durability": r.get("durability", ""),
                "load_avg_1m": r.get("load_avg_1m"),
                "first_error": run.get("first_error", ""),
            })
    return rows


class Index:
    def __init__(self, rows):
        self.cells = {(r["system"], r["medium"], r["workload"], r["threads"], r["op"]): r
                      for r in rows}
        self.workloads = sorted({r["workload"] for r in rows})
        self.threads = sorted({r["threads"] for r in rows})

    def get(self, system, medium, wl, threads, op, field="lat_p50_ns"):
        c = self.cells.get((system, medium, wl, threads, op))
        return None if c is None else c[field]

    def keys(self, wl, threads):
        """(system, medium) of every run of @wl at @threads, in display order."""
        have = {(k[0], k[1]) for k in self.cells if k[2] == wl and k[3] == threads}
        return [(s, m) for s in SYSTEMS for m in MEDIA if (s, m) in have]


def us(ns):
    """Latency in microseconds, to about three significant digits."""
    if ns is None:
        return "-"
    x = ns / 1000.0
    return "%.3f" % x if x < 1 else "%.2f" % x if x < 10 else "%.1f" % x if x < 1000 else "%.0f" % x


def ratio(a, b):
    return a / b if a and b else None


def redis_medium(medium):
    """The durable Redis a row compares with: the same medium; tmpfs for
    rows without one."""
    return medium if medium in ("tmpfs", "disk") else "tmpfs"


def target_lines(ix):
    out = ["| target | workload | threads | medium | ours | reference | ratio | met |",
           "|---" * 8 + "|"]
    counts = {}

    def row(name, wl, t, medium, mine, ref, ok):
        met = None if mine is None or ref is None else ok(mine, ref)
        counts.setdefault(name, []).append(met)
        r = ratio(mine, ref) if ref else None
        out.append("| %s | %s | %d | %s | %s us | %s | %s | %s |" % (
            name, wl, t, medium, us(mine), "-" if ref is None else us(ref) + " us",
            fmt(r), "-" if met is None else "yes" if met else "**no**"))

    for wl in ix.workloads:
        for t in ix.threads:
            # The nodes as dmkv-node runs them by default (adaptive), and
            # polling busily (where they have a core: tmpfs only).
            for s, media, what in (("ours-tcp", ("tmpfs", "disk"), "ofi+tcp"),
                                   ("ours-tcp-busy", ("tmpfs",), "ofi+tcp, nodes busy,")):
                for m in media:
                    row("%s update p50 < durable Redis update p50" % what, wl, t, m,
                        ix.get(s, m, wl, t, "update"),
                        ix.get("redis-aof", m, wl, t, "update"),
                        lambda a, b: a < b * TCP_UPDATE_VS_REDIS)
                for m in media:
                    row("%s get p50 <= %.1fx memcached get p50" % (what, TCP_GET_VS_MEMCACHED),
                        wl, t, m, ix.get(s, m, wl, t, "get"),
                        ix.get("memcached", "none", wl, t, "get"),
                        lambda a, b: a <= b * TCP_GET_VS_MEMCACHED)
            for m in ("tmpfs", "disk"):
                for op in TYPES:
                    row("local: %s p50 < %.0f us" % (op, LOCAL_P50_NS / 1000.0), wl, t, m,
                        ix.get("ours-local", m, wl, t, op), LOCAL_P50_NS,
                        lambda a, b: a < b)
    summary = ["| target | met in |", "|---|---|"]
    for name, mets in counts.items():
        measured = [x for x in mets if x is not None]
        summary.append("| %s | %d of %d configurations%s |" % (
            name, sum(measured), len(measured),
            "" if len(measured) == len(mets) else " (%d not measured)" % (len(mets) -
                                                                         len(measured))))
    return summary + [""] + out


def workload_table(ix, wl):
    out = ["| system | medium | threads | get p50 / p99 us | update p50 / p99 us | ops/s | "
           "get p50 / durable Redis | update p50 / durable Redis | get p50 / memcached | load |",
           "|---" * 10 + "|"]
    for t in ix.threads:
        for s, m in ix.keys(wl, t):
            lat = []
            for op in TYPES:
                p50, p99 = ix.get(s, m, wl, t, op), ix.get(s, m, wl, t, op, "lat_p99_ns")
                lat.append("-" if p50 is None else "%s / %s" % (us(p50), us(p99)))
            rm = redis_medium(m)
            vs_redis = [fmt(ratio(ix.get(s, m, wl, t, op), ix.get("redis-aof", rm, wl, t, op)))
                        for op in TYPES]
            if m != rm:
                vs_redis = [x + " (tmpfs)" if x != "-" else x for x in vs_redis]
            vs_mc = fmt(ratio(ix.get(s, m, wl, t, "get"), ix.get("memcached", "none", wl, t, "get")))
            flag = "" if ix.get(s, m, wl, t, "all", "ok") else " (!)"
            out.append("| %s%s | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                NAME[s], flag, m, t, lat[0], lat[1], fmt_rate(ix.get(s, m, wl, t, "all", "ops_per_s")),
                vs_redis[0], vs_redis[1], vs_mc, fmt(ix.get(s, m, wl, t, "all", "load_avg_1m"),
                                                      1)))
    return out


def blocking_lines(ix):
    out = []
    for wl in ix.workloads:
        for t in ix.threads:
            block = ix.cells.get(("redis-aof-block", "tmpfs", wl, t, "get"))
            busy = ix.cells.get(("redis-aof", "tmpfs", wl, t, "get"))
            if block is None or busy is None:
                continue
            if not out:
                out = ["| Redis GET (AOF always, tmpfs) | workload | threads | p50 us | p90 us | "
                       "p99 us | mean us |", "|---" * 7 + "|"]
            for name, c in (("busy-polled client", busy), ("blocking client", block)):
                out.append("| %s | %s | %d | %s | %s | %s | %s |" % (
                    name, wl, t, us(c["lat_p50_ns"]), us(c["lat_p90_ns"]), us(c["lat_p99_ns"]),
                    us(c["lat_mean_ns"])))
            out.append("| blocking / busy | | | %s | %s | %s | %s |" % tuple(
                fmt(ratio(block[f], busy[f])) for f in
                ("lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_mean_ns")))
    return out or ["Not measured."]


def problems(runs, rows):
    out = []
    for r in runs:
        name = "%s %s %s %st" % (NAME.get(system_of(r), r.get("bench")), r.get("label", ""),
                                 r.get("workload", ""), r.get("threads", ""))
        if r.get("setup_error"):
            out.append("- %s: setup failed: %s" % (name, r["setup_error"]))
        if r.get("open_error"):
            out.append("- %s: a client did not open: %s" % (name, r["open_error"]))
        if r.get("killed_after_s"):
            out.append("- %s: killed at the run limit (%s s); the configurations it had not "
                       "finished have no line" % (r.get("bench"), r["killed_after_s"]))
        for ph, v in (r.get("phases") or {}).items():
            bits = []
            if v.get("errors"):
                bits.append("errors " + ", ".join("%s x%d" % e for e in v["errors"].items()))
            if v.get("wrong"):
                bits.append("%d wrong values (first: %s)" % (v["wrong"], v.get("first_wrong")))
            if v.get("totals", {}).get("unavailable"):
                bits.append("%d unavailable" % v["totals"]["unavailable"])
            if v.get("capped"):
                bits.append("%d threads stopped early at the log cap" % v["capped"])
            if bits:
                first = (" (first error: %s)" % v["first_error"]) if v.get("first_error") else ""
                out.append("- %s, %s: %s%s" % (name, ph, "; ".join(bits), first))
    for r in rows:
        if r["system"].startswith("ours-tcp") and r["op"] == "all" and r["cache_misses"] != "":
            out.append("- %s %s %s %dt: %d location-cache misses in %d operations (%s %%; warm "
                       "= %s keys): each adds the index lookup's round trips" % (
                           NAME[r["system"]], r["medium"], r["workload"], r["threads"],
                           r["cache_misses"], r["ops"],
                           fmt(100.0 * r["cache_misses"] / r["ops"]), r["warm"]))
    return out or ["Nothing: no errors, wrong values, failed setups or early stops."]


def markdown(ix, rows, runs, context):
    out = header(
        "The store against Redis and memcached",
        "benchmarks/run_kv_compare.sh: YCSB A (50 %% get / 50 %% update) and B (95 / 5), keys "
        "drawn Zipfian 0.99 over %s keys, 64-byte values, 1 and 4 client threads, **one "
        "operation in flight** per thread, every system in one run with the same key stream "
        "(benchmarks/ycsb.h) and the same per-operation CLOCK_MONOTONIC loop. Ours: "
        "benchmarks/kv_bench, SWARM replication over 3 memory nodes in the benchmark's "
        "process, reached as `local:` (the client thread does every node's memory work) or "
        "over `ofi+tcp` on 127.0.0.1. Redis and memcached: benchmarks/kv_compare_bench over "
        "loopback TCP (RESP; memcached's text protocol); an update is `SET k v XX` / "
        "`replace`, which like `kv_update` only replaces an existing key. Floors: a 64-byte "
        "loopback TCP echo to a busy-polling thread, and a 64-byte copy in memory." % (
            next((r.get("keys") for r in runs if r.get("keys")), "?")),
        context, ("quick", "elapsed_s", "tmpfs_dir", "disk_dir", "servers_cpu"))
    if "load_avg_end" in context:
        out[-1] += " Load average at the end: %s." % ", ".join(
            "%.2f" % x for x in context["load_avg_end"])
    versions = sorted({"%s %s" % (r["server"]["name"], r["server"].get("version", ""))
                       for r in runs if isinstance(r.get("server"), dict) and
                       r["server"].get("name") in ("redis", "memcached")})
    if versions:
        out.append("")
        out.append("Servers: %s (Debian packages), started by the script on free loopback "
                   "ports and pinned to CPU %s, as are the echo thread and, over `ofi+tcp`, "
                   "our nodes' progress threads; their clients run on the other CPU (ours "
                   "over `local:` and the memory floor use both)." % (
                       ", ".join(versions), context.get("servers_cpu", "?")))
    out += [
        "",
        "**Media.** `tmpfs`: our pools and Redis's append-only file on /dev/shm. Our "
        "persists are real cache-line flushes (clwb + sfence, `PMEM_IS_PMEM_FORCE=1`), "
        "standing in for persistent memory; Redis's fsync of a tmpfs file costs next to "
        "nothing. `disk`: both on a disk file system (see `disk_dir`). Our persists are then "
        "msyncs of the pages they touch, on each of the 3 nodes; Redis's are one fsync per "
        "event-loop iteration (`appendfsync always`: before any reply to a write). `none`: "
        "no persistence (Redis with `save \"\"` and `appendonly no`, memcached) or a floor. "
        "A Redis row is durable when the server itself reported `appendonly yes` and "
        "`appendfsync always`.",
        "",
        "**Polling.** Every client busy-polls, as the store's do: a non-blocking socket and "
        "`recv(MSG_DONTWAIT)` in a loop. This machine halts idle vCPUs, so a client sleeping "
        "in `recv()` pays the wake-up on every reply; the blocking row below measures that "
        "cost. Redis and memcached themselves sleep in `epoll_wait` between requests, as "
        "users run them; our nodes' progress threads poll.",
        "",
        "**Reading the numbers.** %s. The servers have one core; with 4 client threads on the "
        "other core, busy-polling clients take turns at the scheduler's pace. Over `ofi+tcp` "
        "our three nodes' progress threads share the servers' core; they poll while "
        "requests come and sleep on the provider's wait fd when none do (`dmkv-node --poll "
        "adaptive`, the default), and a round trip waits for the majority's threads to be "
        "scheduled and woken. The row \"nodes polling busily\" runs them with `--poll busy` "
        "instead: they never sleep and yield the core to each other after every empty poll, "
        "as nodes with a core of their own (or an RDMA NIC, which needs no CPU) would serve. The `ofi+tcp` clients warmed their location cache "
        "with the most popular keys only (a get of every key over tcp costs minutes here); "
        "their cache misses are under \"What went wrong\"." % context.get(
            "note", "machine unknown").capitalize(),
    ]
    if context.get("flags"):
        out += ["", "Flags: `%s`." % context["flags"]]

    out += ["", "## Targets (reported, not asserted)", ""]
    out += target_lines(ix)
    for wl in ix.workloads:
        out += ["", "## Workload %s (%s)" % (wl, "50 % get / 50 % update" if wl == "A" else
                                             "95 % get / 5 % update"), ""]
        out.append("Latency p50 / p99 in us per op type; ops/s of all threads; ratios of p50 "
                   "to durable Redis on the same medium (rows without a medium: to Redis on "
                   "tmpfs) and of the get p50 to memcached's, at the same thread count "
                   "(below 1: faster); the machine's 1-minute load average when the row's "
                   "process ended (2 CPUs: above 2, other work competed for them). (!): the "
                   "run had errors or a client that did not open, see \"What went wrong\".")
        out.append("")
        out += workload_table(ix, wl)
    out += ["", "## Busy-polled against blocking clients", ""]
    out.append("The same durable Redis on tmpfs, one run after the other; only the client's "
               "wait differs.")
    out.append("")
    out += blocking_lines(ix)
    out += ["", "## What went wrong", ""]
    out += problems(runs, rows)
    return out


COLORS = {"get": "tab:blue", "update": "tab:orange"}


def plot(plt, ix, outdir):
    panels = [(wl, t) for wl in ix.workloads for t in ix.threads]
    if not panels:
        return
    ncol = len(ix.threads)
    nrow = len(ix.workloads)
    fig, axes = plt.subplots(nrow, ncol, figsize=(7.5 * ncol, 5.5 * nrow), squeeze=False)
    for k, (wl, t) in enumerate(panels):
        ax = axes[k // ncol][k % ncol]
        keys = ix.keys(wl, t)
        labels = ["%s (%s)" % (NAME[s], m) if m != "none" else NAME[s] for s, m in keys]
        h = 0.38
        for j, op in enumerate(TYPES):
            ys = [i + (j - 0.5) * h for i in range(len(keys))]
            p50 = [(ix.get(s, m, wl, t, op) or math.nan) / 1000.0 for s, m in keys]
            p99 = [(ix.get(s, m, wl, t, op, "lat_p99_ns") or math.nan) / 1000.0
                   for s, m in keys]
            ax.barh(ys, p99, h, color=COLORS[op], alpha=0.3)
            ax.barh(ys, p50, h, color=COLORS[op], label=op + " p50 (p99 light)")
        ax.set_yticks(range(len(keys)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("latency (us, log)")
        ax.set_title("workload %s, %d thread%s" % (wl, t, "" if t == 1 else "s"), fontsize=9)
        ax.grid(True, axis="x", alpha=0.3)
        if k == 0:
            ax.legend(fontsize=7)
    fig.suptitle("kv/kv.h against Redis, memcached and the floors (1 op in flight per thread; "
                 "2-core shared machine: indicative)", fontsize=10)
    save_figure(plt, fig, outdir, "kv_compare_latency.png")


def main(argv):
    args = parse_args(argv, "kv_compare_report", __doc__, "kv_compare.json")
    return report_util.report_lines(args, "kv_compare", rows_of, COLS, Index, markdown, plot)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
