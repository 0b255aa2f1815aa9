#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# //kv/spin:models_test -- run_models.sh under Bazel, with the host's spin and
# gcc. A missing spin is a failure with the fix named, never a silent skip.
set -uo pipefail
PATH="$PATH:/usr/bin:/bin"
if ! command -v spin >/dev/null; then
	echo "models_test: FAIL: spin not found (PATH=$PATH)." >&2
	echo "models_test: install the Debian package 'spin' with tools/setup.sh (as root), then rerun." >&2
	exit 1
fi
if ! command -v gcc >/dev/null; then
	echo "models_test: FAIL: gcc not found; run tools/setup.sh (build-essential)." >&2
	exit 1
fi
dir=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
[ -f "${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}/kv/spin/run_models.sh" ] &&
	dir="$TEST_SRCDIR/$TEST_WORKSPACE/kv/spin"
exec "$dir/run_models.sh" "$@"
