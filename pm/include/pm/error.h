/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/error.h -- error codes and per-thread error messages of the pm module.
 *
 * Every pm function that can fail returns 0 on success and a negative code on
 * failure: either -errno (for example -ENOENT, -EINVAL) or one of the PM_E_*
 * codes below, which live in their own range so they never collide with errno.
 * A failing call also leaves a human-readable message, retrievable on the same
 * thread with pm_errormsg() until the next pm call that can fail.
 */
#ifndef PM_ERROR_H
#define PM_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* First code of the pm range; codes count down from here. */
#define PM_E_BASE (-10000)

/* The file is not a pool, or its PMDK or pm metadata is damaged. */
#define PM_E_CORRUPT (PM_E_BASE - 1)
/* The pool was created with another layout name or root object size. */
#define PM_E_LAYOUT (PM_E_BASE - 2)
/* The pool's layout version is not the one the caller understands. */
#define PM_E_VERSION (PM_E_BASE - 3)
/* PM_DURABILITY_PMEM was requested but the mapping is not persistent memory. */
#define PM_E_NOT_PMEM (PM_E_BASE - 4)
/* A crash-simulator check failed; pm_crashsim_report() says where. */
#define PM_E_CHECK_FAILED (PM_E_BASE - 5)
/* Lowest code of the pm range (for range tests). */
#define PM_E_LAST PM_E_CHECK_FAILED

/**
 * pm_strerror -- a static description of an error code.
 * @code: 0, a negative errno, or a PM_E_* code.
 *
 * Return: a string with static storage duration; never NULL (unknown codes
 * get a generic text).
 * Thread-safety: may be called from any thread at any time.
 */
const char *pm_strerror(int code);

/**
 * pm_errormsg -- the message left by the last failing pm call on this thread.
 *
 * Return: a NUL-terminated string owned by the library, valid until the next
 * pm call on this thread; "" if the last call that can fail succeeded.
 * Thread-safety: the message is per thread.
 */
const char *pm_errormsg(void);

#ifdef __cplusplus
}
#endif

#endif /* PM_ERROR_H */
