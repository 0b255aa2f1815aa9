#!/usr/bin/env bash
# Runs check_docs.py from the test's runfiles (python3 is a bazel-bootstrap dependency).
exec python3 "${TEST_SRCDIR}/${TEST_WORKSPACE}/tools/check_docs.py" "$@"
