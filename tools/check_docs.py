#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fails if a function declared in a public header has no comment right above it.

Usage: check_docs.py HEADER...
A declaration is a line at column 0 that contains '(' and is not a
preprocessor line, a comment, or a continuation; the comment must end on the
line just above the declaration (or above its return-type line).
"""
import re
import sys

DECL = re.compile(r"^(?:[A-Za-z_][\w\s\*]*?[\s\*])?([A-Za-z_]\w*)\s*\(")


def undocumented(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    missing = []
    for i, line in enumerate(lines):
        if not line or line[0] in " \t#/*}{" or line.startswith("typedef"):
            continue
        m = DECL.match(line)
        if m is None:
            # A return type alone on its line ("static inline void").
            continue
        name = m.group(1)
        j = i - 1
        if j >= 0 and re.match(r"^(static inline\s+)?[\w\s\*]+$", lines[j]) and "*/" not in lines[j]:
            j -= 1  # return type on the previous line
        if j < 0 or not lines[j].rstrip().endswith("*/"):
            missing.append(f"{path}:{i + 1}: {name} has no comment")
    return missing


def main():
    problems = [p for path in sys.argv[1:] for p in undocumented(path)]
    for p in problems:
        print(p)
    print(f"check_docs: {len(sys.argv) - 1} headers, {len(problems)} undocumented functions")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
