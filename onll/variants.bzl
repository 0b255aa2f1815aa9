# SPDX-License-Identifier: BSD-3-Clause
"""onll_libraries: //onll:onll and //onll:objects, and onll_variant: the
same built again from the same sources with private defines, for tests only
(a code path the host would not take, or a planted bug a test must catch)."""

load("@rules_cc//cc:defs.bzl", "cc_library")
load("//tools:copts.bzl", "C_COPTS")

# The sources of //onll:onll, which every variant compiles too: one list, so
# a variant cannot drift from the library it stands for.
ONLL_SRCS = [
    "src/log.c",
    "src/onll.c",
    "src/onll_internal.h",
    "src/trace.c",
]

def onll_libraries(suffix = "", defines = [], testonly = False):
    """Defines onll<suffix> and objects<suffix> from ONLL_SRCS.

    The production libraries are onll_libraries() (//onll:onll and
    //onll:objects); a test variant passes a suffix, its defines and
    testonly = True, so it differs from them only in what it says.

    Args:
      suffix: appended to both names ("" for the production libraries).
      defines: preprocessor symbols ONLL_SRCS are compiled with.
      testonly: whether only tests may depend on them.
    """
    cc_library(
        name = "onll" + suffix,
        testonly = testonly,
        srcs = ONLL_SRCS,
        hdrs = ["include/onll/onll.h"],
        copts = C_COPTS,
        linkopts = ["-lpthread"],
        local_defines = defines,
        strip_include_prefix = "include",
        deps = [
            "//pm:area",
            "//pm:error",
            "//pm:persist",
            "//pm:pool",
            "@system_libs//:xxhash",
        ],
    )
    cc_library(
        name = "objects" + suffix,
        testonly = testonly,
        srcs = ["src/objects.c"],
        hdrs = ["include/onll/objects.h"],
        copts = C_COPTS,
        strip_include_prefix = "include",
        deps = [":onll" + suffix],
    )

def onll_variant(name, defines):
    """Defines testonly libraries onll_<name> and objects_<name>.

    Args:
      name: the variant's suffix.
      defines: preprocessor symbols ONLL_SRCS are compiled with.
    """
    onll_libraries(suffix = "_" + name, defines = defines, testonly = True)
