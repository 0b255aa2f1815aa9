#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/install_tree.sh -- install what the modules' dist manifests name
# (tools/dist.bzl) under a prefix. tools/install.sh builds and calls this;
# tools:install_test calls it on the test's own build.
#
# Usage: tools/install_tree.sh --prefix DIR --root DIR [--root DIR]... MANIFEST...
#   --prefix DIR   where the files go (absolute); $DESTDIR, if set, is put
#                  in front of it for staging, while the pkg-config files
#                  still name DIR
#   --root DIR     where the manifests' paths are found (the first root
#                  holding a path wins): Bazel's output tree, the source tree
# Writes $DESTDIR$PREFIX/share/dmem/install-manifest.txt: every file and
# link it installed, then every directory it had to create (prefixed "dir "),
# for tools/uninstall.sh.
#
# Exit status: 0 done; 1 a file could not be installed; 2 bad usage.
set -euo pipefail

prog=install_tree
prefix=
roots=()
manifests=()
while [ $# -gt 0 ]; do
	case "$1" in
	--prefix) prefix="${2:-}"; shift ;;
	--root) roots+=("${2:-}"); shift ;;
	-h|--help) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "$prog: unknown option $1" >&2; exit 2 ;;
	*) manifests+=("$1") ;;
	esac
	shift
done
case "$prefix" in
/*) ;;
*) echo "$prog: --prefix must be an absolute path (got '$prefix')" >&2; exit 2 ;;
esac
if [ ${#roots[@]} -eq 0 ] || [ ${#manifests[@]} -eq 0 ]; then
	echo "$prog: need --root and at least one manifest" >&2
	exit 2
fi
dest="${DESTDIR:-}$prefix"

find_src() {
	local r
	for r in "${roots[@]}"; do
		if [ -e "$r/$1" ]; then
			echo "$r/$1"
			return 0
		fi
	done
	echo "$prog: $1 not found under ${roots[*]}" >&2
	return 1
}

created=()
make_dir() {
	local d="$1" missing=()
	while [ ! -d "$d" ]; do
		missing=("$d" "${missing[@]+"${missing[@]}"}")
		d="$(dirname "$d")"
	done
	if [ ${#missing[@]} -gt 0 ]; then
		mkdir -p "${missing[-1]}" || return 1
		created+=("${missing[@]}")
	fi
}

installed=()
for m in "${manifests[@]}"; do
	while IFS=$'\t' read -r to from; do
		[ -n "$to" ] || continue
		target="$dest/$to"
		make_dir "$(dirname "$target")" || exit 1
		case "$from" in
		"->"*)
			ln -sfn "${from#->}" "$target" || exit 1 ;;
		*)
			src="$(find_src "$from")" || exit 1
			case "$to" in
			bin/*|lib/*.so.*) mode=0755 ;;
			*) mode=0644 ;;
			esac
			if [[ "$to" == *.pc ]]; then
				sed "s|@PREFIX@|$prefix|" "$src" >"$target.tmp" &&
					chmod "$mode" "$target.tmp" && mv -f "$target.tmp" "$target" || exit 1
			else
				install -m "$mode" "$src" "$target" || exit 1
			fi ;;
		esac
		installed+=("$prefix/$to")
	done <"$m"
done

list="$dest/share/dmem/install-manifest.txt"
make_dir "$(dirname "$list")" || exit 1
{
	printf '%s\n' "${installed[@]}" "$prefix/share/dmem/install-manifest.txt"
	# Deepest first, so uninstall can remove them in order.
	for ((i = ${#created[@]} - 1; i >= 0; i--)); do
		printf 'dir %s\n' "${created[$i]#"${DESTDIR:-}"}"
	done
} >"$list"
echo "$prog: installed ${#installed[@]} files and links under $dest (list: $list)" >&2
