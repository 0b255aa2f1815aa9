#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/uninstall.sh -- remove exactly what tools/install.sh installed under
# a prefix: the files and links its list names, then the directories it
# created if they are empty now (never one that existed before).
#
# Usage: tools/uninstall.sh [--prefix DIR]     (default /usr/local; $DESTDIR honoured)
#
# Exit status: 0 done; 1 nothing installed there (no list) or a file could
# not be removed; 2 bad usage.
set -euo pipefail

prog=uninstall
prefix=/usr/local
while [ $# -gt 0 ]; do
	case "$1" in
	--prefix) prefix="${2:-}"; shift ;;
	-h|--help) sed -n '3,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
list="${DESTDIR:-}$prefix/share/dmem/install-manifest.txt"
if [ ! -f "$list" ]; then
	echo "$prog: $list not found: nothing installed under $prefix" >&2
	exit 1
fi
status=0
files=0
dirs=()
while read -r line; do
	case "$line" in
	"dir "*) dirs+=("${DESTDIR:-}${line#dir }") ;;
	?*)
		if [ -e "${DESTDIR:-}$line" ] || [ -L "${DESTDIR:-}$line" ]; then
			rm -f "${DESTDIR:-}$line" || status=1
			files=$((files + 1))
		fi ;;
	esac
done <"$list"
for d in "${dirs[@]+"${dirs[@]}"}"; do
	rmdir "$d" 2>/dev/null || true
done
echo "$prog: removed $files files and links under ${DESTDIR:-}$prefix" >&2
exit "$status"
