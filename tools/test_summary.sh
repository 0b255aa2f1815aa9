#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/test_summary.sh -- print "N passed, M failed" over the GoogleTest cases
# of the latest `bazel test` results (bazel-testlogs/**/test.xml).
set -euo pipefail
cd "$(dirname "$0")/.."
find -L bazel-testlogs/ -name test.xml -print0 | xargs -0 cat |
	awk '/<testsuites / {
		match($0, /tests="[0-9]+"/); t += substr($0, RSTART + 7, RLENGTH - 8)
		match($0, /failures="[0-9]+"/); f += substr($0, RSTART + 10, RLENGTH - 11)
		match($0, /errors="[0-9]+"/); f += substr($0, RSTART + 8, RLENGTH - 9)
	} END { printf "tests: %d passed, %d failed\n", t - f, f; exit f > 0 }'
