#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/test_summary.sh -- print "tests: N passed, M failed" over the
# GoogleTest cases recorded in the given bazel-testlogs directories
# (default: this workspace's bazel-testlogs). Exits 1 if any case failed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- bazel-testlogs
find -L "$@" -name test.xml -print0 | xargs -0 -r cat |
	awk '/<testsuite / {
		match($0, /tests="[0-9]+"/); t += substr($0, RSTART + 7, RLENGTH - 8)
		match($0, /failures="[0-9]+"/); f += substr($0, RSTART + 10, RLENGTH - 11)
		match($0, /errors="[0-9]+"/); f += substr($0, RSTART + 8, RLENGTH - 9)
	} END { printf "tests: %d passed, %d failed\n", t - f, f; exit f > 0 }'
