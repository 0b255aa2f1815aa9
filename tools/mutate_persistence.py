#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Persistence mutation harness: are a module's crash tests able to see each
persistence step go missing?

For every pm_flush / pm_fence / pm_persist / pm_cas call in MODULE/src/*.c
(for kv, every rdma_batch_persist call in kv/src/*/*.c: the store persists
remote memory only through its batches) it builds one mutant at a time and
runs the module's crash tests on it:

  drop      pm_flush(...), pm_fence(), pm_persist(...) removed (the
            arguments are still evaluated, so nothing else changes);
            rdma_batch_persist(...) posts nothing and returns 0
  no-fence  pm_persist(a, n) becomes pm_flush(a, n)
  no-order  pm_cas(...) becomes a CAS the crash simulator does not see, so
            it no longer orders the thread's earlier flushes

A mutant the tests fail on is "caught"; one they pass is a "survivor": a
step no test needs, which is either a gap in the tests or a redundant step
(the module's design notes must then say why). The source file is restored
after every mutant, also on an interrupt. Run on request, not in CI: each
mutant is a rebuild and a full crash-test run.

Usage: tools/mutate_persistence.py MODULE [--test LABEL]... [--only FILE:LINE]...
           [--timeout S] [--report FILE]
  MODULE     mcas, onll, ds or kv (pm itself defines the calls)
  --test     crash test targets (default: the module's *crash_test targets)
  --only     mutate only these sites (as the report names them)
  --timeout  seconds per mutant's test run (default 900)
  --report   markdown report (default MODULE/MUTATION.md)

Exit status: 0 no survivor; 1 some mutant survived or did not build; 2 bad
usage or the unmutated tests fail.
"""

import argparse
import datetime
import glob
import os
import re
import subprocess
import sys
import time

CALL = re.compile(r"\b(?:pm_(flush|fence|persist|cas)|rdma_batch_(persist))\s*\(")
# Prepended to a mutated file: the replacements below.
PRELUDE = """/* mutate_persistence.py: mutant prelude */
#include <stdbool.h>
#include <stdint.h>
static inline void pm_mutant_nop(int z, ...) { (void)z; }
#define pm_mutant_drop(...) pm_mutant_nop(0, ##__VA_ARGS__)
static inline int rdma_mutant_nop(int z, ...) { (void)z; return 0; }
#define rdma_mutant_drop(...) rdma_mutant_nop(0, ##__VA_ARGS__)
static inline bool pm_mutant_cas(uint64_t *w, uint64_t *e, uint64_t d)
{
	return __atomic_compare_exchange_n(w, e, d, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}
#line 1
"""

DEFAULT_TESTS = {
    "mcas": ["//mcas:mcas_crash_test"],
    "onll": ["//onll:onll_crash_test", "//onll:onll_crash_threads_test"],
    "ds": ["//ds:dll_crash_test", "//ds:bztree_crash_test"],
    "kv": ["//kv:kv_crash_test", "//kv:index_crash_test"],
}


def strip_comments(text):
    """@text with comments blanked out (same length, newlines kept)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, text, flags=re.S)


def sites(path, module):
    """(offset, line, kind, name, call text) of every call in @path's code
    that @module's mutants cover: pm_* in the node-local modules,
    rdma_batch_persist in kv."""
    with open(path) as f:
        text = f.read()
    code = strip_comments(text)
    out = []
    for m in CALL.finditer(code):
        # The call's extent: to the parenthesis that closes it.
        depth, i = 0, m.end() - 1
        while i < len(code):
            if code[i] == "(":
                depth += 1
            elif code[i] == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        remote = m.group(2) is not None
        if remote != (module == "kv"):
            continue
        kind = "remote-persist" if remote else m.group(1)
        callee = code[m.start():m.end() - 1].rstrip()
        line = text.count("\n", 0, m.start()) + 1
        out.append((m.start(), line, kind, callee, text[m.start():i + 1]))
    return text, out


def mutants(kind):
    """The mutant kinds of a call of @kind, with their replacement name."""
    if kind in ("flush", "fence"):
        return [("drop", "pm_mutant_drop")]
    if kind == "persist":
        return [("drop", "pm_mutant_drop"), ("no-fence", "pm_flush")]
    if kind == "remote-persist":
        return [("drop", "rdma_mutant_drop")]
    return [("no-order", "pm_mutant_cas")]


def run_tests(tests, timeout):
    """'pass', 'fail', 'build' (did not compile) or 'timeout', and seconds."""
    start = time.time()
    try:
        r = subprocess.run(["bazel", "test", "--test_output=errors"] + tests,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.time() - start
    took = time.time() - start
    if r.returncode == 0:
        return "pass", took
    if "FAILED TO BUILD" in r.stdout + r.stderr or r.returncode == 1:
        return "build", took
    return "fail", took


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("module")
    ap.add_argument("--test", action="append", default=None)
    ap.add_argument("--only", action="append", default=None)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--report")
    a = ap.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if a.module not in DEFAULT_TESTS:
        ap.error("MODULE must be one of " + ", ".join(sorted(DEFAULT_TESTS)))
    tests = a.test or DEFAULT_TESTS[a.module]
    report = a.report or os.path.join(a.module, "MUTATION.md")

    print("mutate_persistence: the unmutated tests first", file=sys.stderr)
    base, base_s = run_tests(tests, a.timeout)
    if base != "pass":
        print("mutate_persistence: the unmutated tests do not pass (%s)" % base,
              file=sys.stderr)
        return 2

    rows = []
    files = sorted(glob.glob(os.path.join(a.module, "src", "**", "*.c"), recursive=True))
    todo = []
    for path in files:
        text, found = sites(path, a.module)
        for off, line, kind, callee, call in found:
            name = "%s:%d" % (path, line)
            if a.only and name not in a.only:
                continue
            for mkind, repl in mutants(kind):
                todo.append((path, text, off, line, callee, call, mkind, repl))
    for n, (path, text, off, line, callee, call, mkind, repl) in enumerate(todo, 1):
        name = "%s:%d" % (path, line)
        mutated = PRELUDE + text[:off] + repl + text[off + len(callee):]
        print("mutate_persistence: [%d/%d] %s %s %s" % (n, len(todo), name, mkind,
              " ".join(call.split())), file=sys.stderr)
        try:
            with open(path, "w") as f:
                f.write(mutated)
            result, took = run_tests(tests, a.timeout)
        finally:
            with open(path, "w") as f:
                f.write(text)
        verdict = {"fail": "caught", "pass": "SURVIVED", "build": "did not build",
                   "timeout": "caught (timeout)"}[result]
        print("mutate_persistence:   %s (%.0f s)" % (verdict, took), file=sys.stderr)
        rows.append((name, mkind, " ".join(call.split()), verdict, took))

    caught = sum(1 for r in rows if r[3].startswith("caught"))
    survived = [r for r in rows if r[3] == "SURVIVED"]
    unbuilt = [r for r in rows if r[3] == "did not build"]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    with open(report, "w") as f:
        f.write("# Persistence mutants of %s/\n\n" % a.module)
        f.write("`tools/mutate_persistence.py %s` at %s, %s: %d mutants of the "
                "persistence calls in `%s/src/`, each run against %s "
                "(unmutated: %.0f s).\n\n" % (
                    a.module, head, datetime.date.today().isoformat(), len(rows),
                    a.module, ", ".join("`%s`" % t for t in tests), base_s))
        f.write("**%d caught, %d survived, %d did not build.**\n\n" % (
            caught, len(survived), len(unbuilt)))
        f.write("| site | mutant | call | result | s |\n|---|---|---|---|---|\n")
        for name, mkind, call, verdict, took in rows:
            f.write("| `%s` | %s | `%s` | %s | %.0f |\n" % (name, mkind, call, verdict, took))
        if survived:
            f.write("\nEvery survivor is a step no crash test needs: a gap in the "
                    "tests, or a redundant step that the module's design notes "
                    "explain.\n")
    print("mutate_persistence: %d caught, %d survived, %d did not build; report %s" % (
        caught, len(survived), len(unbuilt), report), file=sys.stderr)
    return 0 if not survived and not unbuilt else 1


if __name__ == "__main__":
    sys.exit(main())
