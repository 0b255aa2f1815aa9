"""Compiler flags for the project's own code (system headers are not affected)."""

# Warnings are errors in project code; the flags are ones GCC 12 and Clang 14 share.
WARN_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow",
    "-Wpointer-arith",
    "-Wno-missing-field-initializers",
]

# Linux-only code: glibc's full interface (pipe2, MAP_FIXED_NOREPLACE, ...).
C_COPTS = WARN_COPTS + [
    "-D_GNU_SOURCE",
    "-Wstrict-prototypes",
    "-Wmissing-prototypes",
]

CC_COPTS = WARN_COPTS
