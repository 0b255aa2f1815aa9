/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/src/pool_testing.h -- test seam of pool.c; not part of the public
 * interface, and compiled in only by the testonly //pm:pool_testing build of
 * pool.c (which defines PM_POOL_TESTING), never by //pm:pool.
 *
 * A pool on which PMDK hangs is hard to make on purpose, so the tests of the
 * check's time limit make the check child hang instead.
 */
#ifndef PM_SRC_POOL_TESTING_H
#define PM_SRC_POOL_TESTING_H

#include <signal.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef PM_POOL_TESTING

/* Non-zero: every isolated check child hangs (sleeps forever, whatever its
 * signal mask) before it calls PMDK. Set it in the parent before
 * pm_pool_open(); the child reads its fork-time copy. */
extern volatile sig_atomic_t pm_pool__testing_hang_check;

/* pm_pool__testing_child_point -- called by the check child before PMDK */
void pm_pool__testing_child_point(void);

#else

/* pm_pool__testing_child_point -- production build: nothing */
static inline void
pm_pool__testing_child_point(void)
{
}

#endif

#ifdef __cplusplus
}
#endif

#endif /* PM_SRC_POOL_TESTING_H */
