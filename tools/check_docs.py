#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails if a function declared in a public header is not documented by the
suite's conventions (README.md, Conventions).

Usage: check_docs.py HEADER...
A declaration is a line at column 0 that contains '(' and is not a
preprocessor line, a comment, or a continuation; the comment must end on the
line just above the declaration (or above its return-type line). The comment
must have these sections, each a heading followed by a colon, alone or in a
list ("Ordering, progress, thread-safety: as ds_hmlist_insert()"):
  Return:         unless the function returns void;
  Thread-safety:  always;
  Ordering:       in the headers of the modules whose functions touch shared
                  memory concurrently (mcas, onll, reclaim, ds, kv).
"""
import re
import sys

DECL = re.compile(r"^(?:[A-Za-z_][\w\s\*]*?[\s\*])?([A-Za-z_]\w*)\s*\(")
ORDERED_MODULES = ("mcas", "onll", "reclaim", "ds", "kv")


def has_section(comment, name):
    """Whether @comment has section @name: the name, then possibly more list
    items (words, commas, "and"), then a colon."""
    return re.search(r"(?i)\b" + re.escape(name) + r"\b[\w ,-]*:", comment) is not None


def needs_ordering(path):
    parts = path.replace("\\", "/").split("/")
    # <module>/include/<module>/<header>.h
    return len(parts) >= 3 and parts[-2] in ORDERED_MODULES and parts[-3] == "include"


def comment_above(lines, j):
    """The comment block ending on line @j, or None."""
    if j < 0 or not lines[j].rstrip().endswith("*/"):
        return None
    k = j
    while k >= 0 and "/*" not in lines[k]:
        k -= 1
    return "\n".join(lines[max(k, 0):j + 1])


def problems_of(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    problems = []
    for i, line in enumerate(lines):
        if not line or line[0] in " \t#/*}{" or line.startswith("typedef"):
            continue
        m = DECL.match(line)
        if m is None:
            # A return type alone on its line ("static inline void").
            continue
        name = m.group(1)
        rettype = line[:m.start(1)]
        j = i - 1
        if j >= 0 and re.match(r"^(static inline\s+)?[\w\s\*]+$", lines[j]) and "*/" not in lines[j]:
            rettype = lines[j]
            j -= 1  # return type on the previous line
        comment = comment_above(lines, j)
        if comment is None:
            problems.append(f"{path}:{i + 1}: {name} has no comment")
            continue
        missing = []
        returns_void = re.search(r"\bvoid\s*$", rettype.strip()) is not None
        if not returns_void and not has_section(comment, "Return"):
            missing.append("Return:")
        if not has_section(comment, "Thread-safety"):
            missing.append("Thread-safety:")
        if needs_ordering(path) and not has_section(comment, "Ordering"):
            missing.append("Ordering:")
        if missing:
            problems.append(f"{path}:{i + 1}: {name} lacks {', '.join(missing)}")
    return problems


def main():
    problems = [p for path in sys.argv[1:] for p in problems_of(path)]
    for p in problems:
        print(p)
    print(f"check_docs: {len(sys.argv) - 1} headers, {len(problems)} functions not documented "
          "by the conventions")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
