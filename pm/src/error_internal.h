/* SPDX-License-Identifier: BSD-3-Clause */
/* pm/src/error_internal.h -- setting the per-thread message (pm module only). */
#ifndef PM_ERROR_INTERNAL_H
#define PM_ERROR_INTERNAL_H

/* Clears this thread's message; every public entry point that can fail calls it first. */
void pm__err_clear(void);

/* Formats this thread's message and returns @code, so callers can write
 * "return pm__err(-EINVAL, "...")". */
int pm__err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
