# SPDX-License-Identifier: BSD-3-Clause
# benchmarks/bench_lib.sh -- what the run_*.sh scripts share: the command
# line, the build, running a benchmark binary into a JSON file, and the
# report. Sourced by them (bash, set -euo pipefail), not run.
#
# The sourcing script sets prog (the prefix of its messages), then calls
#   bench_init "$@"             --help (the script's header comment), the
#                               RESULTS_DIR and -- BENCHMARK_FLAGS arguments;
#                               sets results, bench_flags, repo; cd's to repo
#   bench_build TARGET          builds TARGET unless SKIP_BUILD=1
#   bench_locate                sets bench_bin (bazel-bin/benchmarks) and
#                               bench_commit (short hash, "+changes" if dirty)
#   bench_run NAME BINARY       runs bazel-bin/benchmarks/BINARY with
#                               PMEM_IS_PMEM_FORCE=1 into $results/NAME.json
#                               (exit 1 if it fails)
#   bench_report SCRIPT JSON... runs benchmarks/SCRIPT on the JSON files into
#                               $results; returns the report's status
#   bench_collect LINES OUT K=V...  one JSON document at OUT: a context (date,
#                               commit, host, CPUs, load average, then each
#                               K=V, V as JSON if it parses, else a string)
#                               and "runs", the JSON lines of the file LINES
#                               (the command-line benchmarks' output)
# Environment: BAZEL, BAZEL_STARTUP_FLAGS, BAZEL_BUILD_FLAGS, PYTHON,
# SKIP_BUILD (see the scripts' --help).

bench_init() {
	results=""
	bench_flags=()
	while [ $# -gt 0 ]; do
		case "$1" in
		-h | --help)
			# The script's header comment from line 3 on.
			awk 'NR >= 3 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "$0"
			exit 0
			;;
		--) shift; bench_flags=("$@"); break ;;
		-*) echo "$prog: unknown option $1 (try --help)" >&2; exit 2 ;;
		*)
			if [ -n "$results" ]; then
				echo "$prog: more than one results directory (try --help)" >&2
				exit 2
			fi
			results="$1"
			;;
		esac
		shift
	done

	repo="$(cd "$(dirname "$0")/.." && pwd)"
	results="${results:-$repo/benchmarks/results}"
	mkdir -p "$results"
	results="$(cd "$results" && pwd)"

	BAZEL="${BAZEL:-bazel}"
	read -r -a startup <<<"${BAZEL_STARTUP_FLAGS:-}"
	read -r -a build <<<"${BAZEL_BUILD_FLAGS:--c opt}"
	cd "$repo"
}

bench_build() { # target
	[ "${SKIP_BUILD:-0}" = 1 ] && return 0
	echo "$prog: building $1 (${build[*]})" >&2
	"$BAZEL" "${startup[@]}" build "${build[@]}" "$1" >&2
}

bench_locate() { # sets bench_bin (the binaries' directory) and bench_commit
	[ -n "${bench_bin:-}" ] && return 0
	bench_bin="$("$BAZEL" "${startup[@]}" info "${build[@]}" bazel-bin 2>/dev/null)/benchmarks"
	# Which code was measured: the commit, marked when the tree has changes.
	bench_commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		bench_commit="$bench_commit+changes"
	fi
}

bench_run() { # name binary
	bench_locate
	local out="$results/$1.json"
	echo "$prog: running $bench_bin/$2 -> $out" >&2
	PMEM_IS_PMEM_FORCE=1 "$bench_bin/$2" --benchmark_out="$out" --benchmark_out_format=json \
		--benchmark_context=git_commit="$bench_commit" \
		"${bench_flags[@]}" >&2 || { echo "$prog: $2 failed" >&2; exit 1; }
}

# bench_limited LIMIT LINES KILLED CMD... -- run CMD for at most LIMIT
# seconds, its stdout appended to LINES; a run killed at the limit leaves
# no line of its own, so the JSON line KILLED is appended for it. On
# failure it says so and sets the caller's status to 1. Returns CMD's exit
# status (137: killed at the limit).
bench_limited() {
	local limit="$1" lines="$2" killed="$3" rc=0
	shift 3
	echo "$prog: $*" >&2
	timeout --signal=KILL "$limit" "$@" >>"$lines" || rc=$?
	if [ "$rc" != 0 ]; then
		status=1
		echo "$prog: exit status $rc" >&2
		if [ "$rc" = 137 ]; then
			printf '%s\n' "$killed" >>"$lines"
		fi
	fi
	return "$rc"
}

bench_report() { # script json...
	local script="$1"
	shift
	# The system python3 has Debian's matplotlib; a pyenv python3 may not.
	if [ -z "${PYTHON:-}" ]; then
		PYTHON=python3
		for p in python3 /usr/bin/python3; do
			if command -v "$p" >/dev/null && "$p" -c 'import matplotlib' 2>/dev/null; then
				PYTHON="$p"
				break
			fi
		done
	fi
	echo "$prog: report with $PYTHON" >&2
	"$PYTHON" "$repo/benchmarks/$script" --out "$results" "$@"
}

bench_collect() { # lines out key=value...
	bench_locate
	python3 - "$prog" "$bench_commit" "$@" <<'PY'
import datetime, json, os, socket, sys
prog, commit, lines, out = sys.argv[1:5]
context = {
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "git_commit": commit,
    "host_name": socket.gethostname(),
    "num_cpus": os.cpu_count(),
    "load_avg": list(os.getloadavg()),
}
for kv in sys.argv[5:]:
    k, _, v = kv.partition("=")
    try:
        context[k] = json.loads(v)
    except ValueError:
        context[k] = v
runs = []
for line in open(lines, encoding="utf-8"):
    line = line.strip()
    if line:
        runs.append(json.loads(line))
with open(out, "w", encoding="utf-8") as f:
    json.dump({"context": context, "runs": runs}, f, indent=1)
    f.write("\n")
print("%s: wrote %s (%d runs)" % (prog, out, len(runs)), file=sys.stderr)
PY
}
