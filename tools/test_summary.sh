#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/test_summary.sh -- print "tests: N passed, S skipped, D disabled,
# M failed" over the GoogleTest cases recorded in the given bazel-testlogs
# directories (default: this workspace's bazel-testlogs). A skipped case
# (GTEST_SKIP: no RDMA device, ...) ran no assertion, so it is not counted
# as passed. Exits 1 if any case failed.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- bazel-testlogs
find -L "$@" -name test.xml -print0 | xargs -0 -r cat |
	awk 'function attr(name,   v) {
		if (!match($0, name "=\"[0-9]+\""))
			return 0
		v = substr($0, RSTART + length(name) + 2, RLENGTH - length(name) - 3)
		return v + 0
	}
	/<testsuite / {
		t += attr("tests"); f += attr("failures") + attr("errors")
		s += attr("skipped"); d += attr("disabled")
	} END {
		printf "tests: %d passed, %d skipped, %d disabled, %d failed\n", t - f - s - d, s, d, f
		exit f > 0
	}'
