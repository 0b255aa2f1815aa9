#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tools/install_test.sh (//tools:install_test) -- what a C user who does not
# use Bazel meets: install the test's build of every module into a temporary
# prefix with the installer tools/install.sh uses (tools/install_tree.sh),
# and check that
#   - a DESTDIR stage puts the same tree under $DESTDIR$PREFIX, with .pc
#     files naming PREFIX;
#   - each shared library has its soname and exports exactly the functions
#     and variables of its installed public headers (tools/public_symbols.py);
#   - examples/ builds with plain make through pkg-config and runs (counter
#     on ONLL, a 4-word persistent MCAS), and the same programs linked with
#     the static libraries need no libdmem at run time;
#   - the installed programs answer --help;
#   - tools/uninstall.sh removes exactly what was installed.
set -euo pipefail
# Pipelines into grep let it read to the end ("grep PATTERN >/dev/null"):
# "grep -q" stops at the first match, the producer then dies of SIGPIPE,
# and pipefail turns the match into a failure (the ldd check of counter
# failed so in a CI rehearsal).

root="${TEST_SRCDIR}/${TEST_WORKSPACE}"
tmp="${TEST_TMPDIR}"
modules=(pm mcas reclaim onll ds rdma kv)
manifests=()
for m in "${modules[@]}"; do
	manifests+=("$root/$m/dist/libdmem-$m.manifest")
done
fail() {
	echo "install_test: FAIL: $*" >&2
	exit 1
}

# A stage: the tree lands under DESTDIR, the .pc files name the prefix.
DESTDIR="$tmp/stage" "$root/tools/install_tree.sh" --prefix /opt/dmem --root "$root" "${manifests[@]}"
[ -f "$tmp/stage/opt/dmem/include/mcas/mcas.h" ] || fail "DESTDIR: no staged header"
grep -qx 'prefix=/opt/dmem' "$tmp/stage/opt/dmem/lib/pkgconfig/dmem-mcas.pc" ||
	fail "DESTDIR: the .pc file does not name the prefix"

# The real install, into a prefix with one directory of its own already
# there (uninstall must leave it).
prefix="$tmp/prefix"
mkdir -p "$prefix/lib"
touch "$prefix/lib/keep"
"$root/tools/install_tree.sh" --prefix "$prefix" --root "$root" "${manifests[@]}"
echo "install tree:"
(cd "$prefix" && find . \( -type f -o -type l \) | sort | sed 's/^/  /')

for m in "${modules[@]}"; do
	so="$prefix/lib/libdmem-$m.so"
	readelf -d "$so" | grep "Library soname: \[libdmem-$m.so.0\]" >/dev/null || fail "$so: soname"
	python3 "$root/tools/public_symbols.py" -I "$prefix/include" --check "$so" \
		"$prefix/include/$m/"*.h || fail "$so: exported symbols differ from the headers"
done

# The example project, shared. Under --config=asan the libraries need the
# sanitizer's runtime in the program (tools/dist.bzl).
san="$(cat "$root/pm/dist/libdmem-pm.sanitize")"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
ex="$tmp/examples"
mkdir -p "$ex"
cp "$root/examples/"{Makefile,counter.c,example.h,kcas.c} "$ex/"
for m in "${modules[@]}"; do
	pkg-config --exists "dmem-$m" || fail "pkg-config does not find dmem-$m: $(pkg-config --print-errors --exists "dmem-$m" 2>&1)"
done
LD_LIBRARY_PATH="$prefix/lib" make -C "$ex" check POOLDIR="$tmp" CFLAGS="-O2 -g -Wall -Wextra -Werror $san"
LD_LIBRARY_PATH="$prefix/lib" ldd "$ex/counter" | grep "libdmem-onll.so.0 => $prefix/lib/" >/dev/null || fail "counter does not use the installed libdmem-onll"

# The same programs, static (the system libraries stay shared).
static() { # NAME MODULE
	cc -O2 -Wall -Werror $san $(pkg-config --cflags "dmem-$2") -o "$ex/$1-static" "$ex/$1.c" \
		-Wl,-Bstatic $(pkg-config --static --libs-only-l "dmem-$2" | grep -o -- '-ldmem-[a-z]*' | tr '\n' ' ') \
		-Wl,-Bdynamic -L"$prefix/lib" \
		$(pkg-config --static --libs "dmem-$2" | sed 's/-ldmem-[a-z]*//g; s/-L[^ ]*//g')
	if ldd "$ex/$1-static" | grep libdmem >/dev/null; then
		fail "$1-static still needs a libdmem shared library"
	fi
}
static counter onll
static kcas mcas
rm -f "$tmp"/static-*.pool
[ "$("$ex/counter-static" "$tmp/static-c.pool" 5)" = "counter: 5" ] || fail "counter-static"
[ "$("$ex/kcas-static" "$tmp/static-k.pool")" = "kcas: swapped: 1 1 1 1" ] || fail "kcas-static"

for b in dmkv dmkv-node; do
	"$prefix/bin/$b" --help >/dev/null || fail "$b --help"
done

# Uninstall: nothing of ours is left; what was there before stays.
"$root/tools/uninstall.sh" --prefix "$prefix"
left="$(cd "$prefix" && find . -mindepth 1 | sort | tr '\n' ' ')"
[ "$left" = "./lib ./lib/keep " ] || fail "after uninstall, left: $left"
echo "install_test: PASS"
