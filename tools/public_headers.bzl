"""Checks every public header of a module: it compiles alone as C, and every
function it declares is documented (tools/check_docs.py)."""

load("@rules_cc//cc:defs.bzl", "cc_library")
load("//tools:copts.bzl", "C_COPTS")

def public_header_checks(name, headers, deps):
    """Declares <name>_standalone (a build-time check) and <name>_docs_test.

    Args:
      name: prefix of the generated targets.
      headers: dict of include path (as users write it) -> label of the header file.
      deps: libraries providing the headers.
    """
    srcs = []
    for include, _ in headers.items():
        src = "%s_%s.c" % (name, include.replace("/", "_").replace(".", "_"))
        native.genrule(
            name = src + "_gen",
            outs = [src],
            cmd = "echo '#include <%s>' > $@ && echo 'int %s_anchor;' >> $@" % (
                include,
                include.replace("/", "_").replace(".", "_"),
            ),
        )
        srcs.append(src)
    cc_library(
        name = name + "_standalone",
        srcs = srcs,
        copts = C_COPTS,
        deps = deps,
    )
    native.sh_test(
        name = name + "_docs_test",
        size = "small",
        srcs = ["//tools:check_docs.sh"],
        args = ["$(location %s)" % h for h in headers.values()],
        data = headers.values() + ["//tools:check_docs.py"],
    )
