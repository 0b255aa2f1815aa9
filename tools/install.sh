#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/install.sh -- build the libraries optimised and install them for C
# and C++ users who do not build with Bazel (README, "Install"): for each
# module (pm, mcas, reclaim, onll, ds, rdma, kv) lib/libdmem-<module>.so.*
# (exporting exactly its public headers' symbols), lib/libdmem-<module>.a,
# include/<module>/*.h and lib/pkgconfig/dmem-<module>.pc; bin/dmkv-node and
# bin/dmkv; share/dmem/ (dmkv's plot script and the list of what was
# installed, which tools/uninstall.sh follows).
#
# Usage: tools/install.sh [--prefix DIR]     (default /usr/local)
#   $DESTDIR, if set, stages the tree under $DESTDIR$PREFIX (packaging).
# Then:  pkg-config --cflags --libs dmem-mcas
# (with a prefix pkg-config does not search: PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig,
# and LD_LIBRARY_PATH=$PREFIX/lib or -Wl,-rpath,$PREFIX/lib to run).
#
# Exit status: 0 done; 1 the build or the copy failed; 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

prog=install
prefix=/usr/local
while [ $# -gt 0 ]; do
	case "$1" in
	--prefix) prefix="${2:-}"; shift ;;
	-h|--help) sed -n '3,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
case "$prefix" in
/*) ;;
*) prefix="$(pwd -P)/$prefix" ;;
esac
probe="${DESTDIR:-}$prefix"
while [ ! -d "$probe" ]; do probe="$(dirname "$probe")"; done
if [ ! -w "$probe" ]; then
	echo "$prog: cannot write under $probe: run as root, or pass --prefix (e.g. --prefix \$HOME/.local)" >&2
	exit 1
fi

bazel build -c opt //tools:dist || exit 1
bin="$(bazel info -c opt bazel-bin)"
exec tools/install_tree.sh --prefix "$prefix" --root "$bin" --root "$(pwd -P)" \
	"$bin"/*/dist/*.manifest
