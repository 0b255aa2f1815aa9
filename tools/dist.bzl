"""Installable libraries for C users who do not build with Bazel (README,
"Install"; tools/install.sh).

dmem_module_dist(name, module, libs, headers, lower) makes, for one module,
the shared library libdmem-<module>.so.<version> (soname
libdmem-<module>.so.<major>, exporting exactly the functions and variables
its public headers declare: tools/public_symbols.py writes the version
script), the static library libdmem-<module>.a, the pkg-config file
dmem-<module>.pc (prefix left as @PREFIX@ for the installer), and a manifest
of what to install where ("<destination>\t<path>" lines, destinations
relative to the prefix, paths relative to the output or source root) that
tools/install_tree.sh follows.

The objects are the PIC objects of the module's own cc_library targets
(lower modules are linked as their shared libraries, so each symbol lives in
one library and pm_errormsg() is one per-thread message, whatever library
set it); the system libraries are those the targets link with (linkopts of
@system_libs), named in the .pc file's Requires.private by their pkg-config
names.
"""

DMEM_VERSION = "0.1.0"
DMEM_SOVERSION = "0"

DmemModuleInfo = provider(
    doc = "One module's installable shared library.",
    fields = {
        "module": "module name (pm, mcas, ...)",
        "shared": "File: libdmem-<module>.so.<version>",
        "manifest": "File: what tools/install_tree.sh installs",
        "files": "depset of the files the manifest names",
        "headers": "depset of its and the lower modules' public headers",
        "system_flags": "list of the system libraries' flags it and the lower modules link with",
    },
)

# Linker flag of a system library -> its pkg-config name (Debian 12's -dev
# packages ship these .pc files).
_SYSTEM_PC = {
    "-lpmem": "libpmem",
    "-lpmemobj": "libpmemobj",
    "-lfabric": "libfabric",
    "-libverbs": "libibverbs",
    "-lrdmacm": "librdmacm",
    "-lurcu-qsbr": "liburcu-qsbr",
    "-lxxhash": "libxxhash",
    "-linih": "inih",
    "-lcrypt": "libcrypt",
}

def _module_dist_impl(ctx):
    module = ctx.attr.module
    lib = "libdmem-%s" % module
    objects = []
    flags = []
    seen = {}
    for dep in ctx.attr.libs:
        for li in dep[CcInfo].linking_context.linker_inputs.to_list():
            owner = str(li.owner)
            if owner in seen:
                continue
            seen[owner] = True
            if li.owner.workspace_name == "system_libs":
                flags += li.user_link_flags
                continue
            if li.owner.package != module:
                continue
            flags += li.user_link_flags
            for l in li.libraries:
                objs = l.pic_objects if l.pic_objects else l.objects
                objects += [o for o in objs if o not in objects]
    lower = [d[DmemModuleInfo] for d in ctx.attr.lower]
    headers = depset(ctx.files.headers, transitive = [l.headers for l in lower])
    system_flags = []
    requires_private = []
    libs_private = []
    below = [f for l in lower for f in l.system_flags]
    for f in flags:
        if f in system_flags:
            continue
        system_flags.append(f)
        if f in below:
            continue  # the lower module's .pc file names it
        if f in _SYSTEM_PC:
            requires_private.append(_SYSTEM_PC[f])
        else:
            libs_private.append(f)

    # Under --config=asan/tsan/fuzz the objects call the sanitizer's
    # runtime, which only an executable links: the library is linked with
    # the same flag and without -z defs (install.sh builds without them).
    sanitize = [f for f in ctx.fragments.cpp.linkopts if f.startswith("-fsanitize")]
    so = ctx.actions.declare_file("dist/%s.so.%s" % (lib, DMEM_VERSION))
    ar = ctx.actions.declare_file("dist/%s.a" % lib)
    pc = ctx.actions.declare_file("dist/dmem-%s.pc" % module)
    vmap = ctx.actions.declare_file("dist/%s.map" % lib)
    manifest = ctx.actions.declare_file("dist/%s.manifest" % lib)

    # The version script: exactly what the public headers declare.
    ctx.actions.run_shell(
        outputs = [vmap],
        inputs = depset([ctx.file._symbols], transitive = [headers]),
        command = "python3 \"$@\"",
        arguments = [ctx.file._symbols.path, "--map", vmap.path] +
                    ["-I%s" % d for d in _include_dirs(headers.to_list())] +
                    [h.path for h in ctx.files.headers],
        mnemonic = "DmemSymbols",
        progress_message = "Listing the public symbols of %s" % lib,
        use_default_shell_env = True,
    )

    # -z defs: every symbol the library uses resolves at link time, against
    # the lower modules' libraries and the system libraries.
    strict = [] if sanitize else ["-Wl,-z,defs"]
    ctx.actions.run_shell(
        outputs = [so, ar],
        inputs = objects + [vmap] + [l.shared for l in lower],
        command = ("set -e; cc -shared {san} -o {so} -Wl,-soname,{soname} " +
                   "-Wl,--version-script={vmap} {strict} -Wl,--as-needed {objs} {lower} " +
                   "{sys} && ar rcs {ar} {objs}").format(
            san = " ".join(sanitize),
            strict = " ".join(strict),
            so = so.path,
            soname = "%s.so.%s" % (lib, DMEM_SOVERSION),
            vmap = vmap.path,
            objs = " ".join([o.path for o in objects]),
            lower = " ".join([l.shared.path for l in lower]),
            sys = " ".join(system_flags),
            ar = ar.path,
        ),
        mnemonic = "DmemLink",
        progress_message = "Linking %s" % lib,
        use_default_shell_env = True,
    )

    requires = ["dmem-%s" % l.module for l in lower]
    ctx.actions.write(pc, "\n".join([
        "prefix=@PREFIX@",
        "libdir=${prefix}/lib",
        "includedir=${prefix}/include",
        "",
        "Name: dmem-%s" % module,
        "Description: %s" % ctx.attr.description,
        "Version: %s" % DMEM_VERSION,
        "Requires: %s" % " ".join(requires),
        "Requires.private: %s" % " ".join(requires_private),
        "Cflags: -I${includedir}",
        "Libs: -L${libdir} -ldmem-%s" % module,
        "Libs.private: %s" % " ".join(libs_private),
        "",
    ]))

    lines = [
        "lib/%s.so.%s\t%s" % (lib, DMEM_VERSION, so.short_path),
        "lib/%s.so.%s\t->%s.so.%s" % (lib, DMEM_SOVERSION, lib, DMEM_VERSION),
        "lib/%s.so\t->%s.so.%s" % (lib, lib, DMEM_SOVERSION),
        "lib/%s.a\t%s" % (lib, ar.short_path),
        "lib/pkgconfig/dmem-%s.pc\t%s" % (module, pc.short_path),
    ]
    for h in ctx.files.headers:
        lines.append("include/%s/%s\t%s" % (module, h.basename, h.short_path))
    for b in ctx.files.bins:
        lines.append("bin/%s\t%s" % (b.basename, b.short_path))
    for s in ctx.files.share:
        lines.append("share/dmem/%s\t%s" % (s.basename, s.short_path))
    ctx.actions.write(manifest, "\n".join(lines) + "\n")

    # The sanitizer flags a program linked with this build needs
    # (//tools:install_test reads them; empty for install.sh's build).
    flags_file = ctx.actions.declare_file("dist/%s.sanitize" % lib)
    ctx.actions.write(flags_file, " ".join(sanitize) + "\n")

    files = depset([so, ar, pc, manifest, flags_file] + ctx.files.headers + ctx.files.bins + ctx.files.share)
    return [
        DefaultInfo(files = files, runfiles = ctx.runfiles(transitive_files = files)),
        DmemModuleInfo(
            module = module,
            shared = so,
            manifest = manifest,
            files = files,
            headers = headers,
            system_flags = system_flags + below,
        ),
    ]

def _include_dirs(headers):
    dirs = []
    for h in headers:
        # <module>/include/<module>/x.h -> <module>/include
        d = h.dirname.rsplit("/", 1)[0]
        if d not in dirs:
            dirs.append(d)
    return dirs

dmem_module_dist = rule(
    implementation = _module_dist_impl,
    fragments = ["cpp"],
    doc = "One module's shared and static library, pkg-config file and install manifest.",
    attrs = {
        "module": attr.string(mandatory = True, doc = "the module's directory and name"),
        "description": attr.string(mandatory = True, doc = "the .pc file's Description"),
        "libs": attr.label_list(providers = [CcInfo], doc = "the module's public cc_library targets"),
        "headers": attr.label_list(allow_files = [".h"], doc = "the module's public headers"),
        "lower": attr.label_list(providers = [DmemModuleInfo], doc = "dists of the modules it links against"),
        "bins": attr.label_list(allow_files = True, doc = "programs installed to bin/"),
        "share": attr.label_list(allow_files = True, doc = "files installed to share/dmem/"),
        "_symbols": attr.label(
            default = "//tools:public_symbols.py",
            allow_single_file = True,
        ),
    },
)
