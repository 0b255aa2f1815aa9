/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/nmbst_testing.h -- a test hook of the Natarajan-Mittal BST
 * (nmbst.c); not part of the public interface, and compiled in only by the
 * testonly //ds:nmbst_testing build of nmbst.c (which defines
 * DS_NMBST_TESTING), never by //ds:nmbst.
 *
 * A cleanup whose CAS on the ancestor's edge cuts off a path of several
 * internal nodes needs another cleanup to stall between tagging its sibling
 * edge and its own CAS: a window of a few instructions that a stress test
 * on two cores almost never hits. The hook lets a test hold a cleanup there.
 */
#ifndef DS_SRC_NMBST_TESTING_H
#define DS_SRC_NMBST_TESTING_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef DS_NMBST_TESTING

/* If not NULL, called by every cleanup with its key after it tagged the
 * edge to the node that stays and before its CAS on the ancestor's edge.
 * Read with a relaxed atomic load; set it (with __atomic_store_n) only
 * while no operation runs, and reset it to NULL before the next test. */
extern void (*ds_nmbst__cleanup_hook)(uint64_t key);

/* ds_nmbst__cleanup_point -- called by every cleanup between its tag and
 * its CAS */
void ds_nmbst__cleanup_point(uint64_t key);

#else

/* ds_nmbst__cleanup_point -- production build: nothing; always inlined,
 * so that not even an unoptimised build has a symbol of the hook */
static inline __attribute__((always_inline)) void
ds_nmbst__cleanup_point(uint64_t key)
{
	(void)key;
}

#endif

#ifdef __cplusplus
}
#endif

#endif /* DS_SRC_NMBST_TESTING_H */
