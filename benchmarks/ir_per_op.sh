#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/ir_per_op.sh -- instructions per operation of one benchmark
# configuration at one thread, under callgrind: a count that does not move
# with the load of a shared machine, for same-run before/after comparisons
# (benchmarks/README.md, "Reclamation refactor (issue 22)").
#
# Usage: benchmarks/ir_per_op.sh BINARY NAME OPS_REGEX
#   BINARY     a google-benchmark binary (built with -c opt)
#   NAME       the configuration without "/real_time/threads:1",
#              e.g. array/aopt-vol/size:10
#   OPS_REGEX  the functions one operation calls once (Python regex), e.g.
#              '^mcas_desc_begin$' or '^ds_dll_(insert|remove|contains)$'
# Prints: NAME Ir/op
#
# Two runs, --benchmark_min_time=0.05 and 0.5: the difference of the total
# instructions over the difference of the operations, which are the calls
# to OPS_REGEX made from the benchmark bodies (functions named BM_*), so
# start-up, pool creation and preloading cancel out. google-benchmark
# picks iteration counts by time, so the counts differ between machines;
# the quotient does not (to a few tenths of a percent, more where the mix
# moves a structure's size). Needs valgrind and python3.
set -euo pipefail

if [[ $# -ne 3 ]]; then
	sed -n '2,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 2
fi
bin=$1 name=$2 ops=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PMEM_IS_PMEM_FORCE=1

# count FILE -- "total-Ir operations" of one callgrind output file
count() {
	python3 - "$1" "$ops" <<'EOF'
import re, sys
names, total, calls, cur, callee = {}, 0, 0, '', None
def name(tok):
    m = re.match(r'\((\d+)\)(?: (.*))?', tok)
    if m.group(2):
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), '')
target = re.compile(sys.argv[2])
for line in open(sys.argv[1]):
    if line.startswith('fn='):
        cur, callee = name(line[3:].strip()), None
    elif line.startswith('cfn='):
        callee = name(line[4:].strip())
    elif line.startswith('calls=') and callee is not None:
        if 'BM_' in cur and target.search(callee):
            calls += int(line[6:].split()[0])
        callee = None
    elif line.startswith('summary:'):
        total = int(line.split()[1])
print(total, calls)
EOF
}

set --
for t in 0.05 0.5; do
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$t" "$bin" \
		--benchmark_filter="^$name/real_time/threads:1\$" \
		--benchmark_min_time="$t" >/dev/null 2>&1
	read -r ir n < <(count "$tmp/cg.$t")
	set -- "$@" "$ir" "$n"
done
if [[ $4 -le $2 ]]; then
	echo "ir_per_op.sh: no operations of $name counted (OPS_REGEX?)" >&2
	exit 1
fi
awk -v n="$name" -v a="$1" -v b="$2" -v c="$3" -v d="$4" \
	'BEGIN { printf "%s %.1f\n", n, (c - a) / (d - b) }'
