#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# kv/tests/dmkv_demo_test.sh TRANSPORT [DEMO OPTIONS] -- the README's main
# job in its short mode must pass its own checks: exit 0, no failed
# operation, no wrong value, every acknowledged write read back after a
# node was crashed and restored mid-run, and no daemon left behind.
set -u

DMKV="$TEST_SRCDIR/dmem/kv/dmkv"
export DMKV_NODE="$TEST_SRCDIR/dmem/rdma/dmkv-node"
transport=$1
shift
out="$TEST_TMPDIR/demo"
log="$TEST_TMPDIR/demo.log"

"$DMKV" --quiet demo --short --no-plot --transport "$transport" --out "$out" "$@" >"$log" 2>&1
rc=$?
cat "$log"
[ "$rc" = 0 ] || { echo "FAIL: dmkv demo exited $rc"; exit 1; }
for want in '"ok":true' '"failed":0' '"wrong_values":0' '"stale_reads":0' '"lost":0' \
	'"wrong":0' '"unreadable":0' '"name":"during"' '"name":"after"'; do
	grep -qF "$want" "$out.json" || { echo "FAIL: $want not in $out.json"; exit 1; }
done
grep -q '^PASS' "$log" || { echo "FAIL: no PASS line"; exit 1; }
# Operations ran in every phase, and the crash phase saw the node down.
python3 - "$out.json" <<'PY' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
for ph in doc["phases"]:
    assert ph["ops"] > 0, "no operations in phase %s" % ph["name"]
assert doc["acked_writes"] > 0, "no acknowledged writes"
assert doc["verify"]["checked"] == doc["config"]["records"], doc["verify"]
PY
if pgrep -f "dmkv-demo\." >/dev/null && [ "$transport" = ofi+tcp ]; then
	pgrep -af "dmkv-demo\."
	echo "FAIL: a daemon outlived the demo"
	exit 1
fi
echo PASS
