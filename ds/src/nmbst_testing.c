/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/nmbst_testing.c -- the test hook of nmbst_testing.h, linked only
 * into the testonly //ds:nmbst_testing library.
 */
#include <stddef.h>

#include "ds/src/nmbst_testing.h"

void (*ds_nmbst__cleanup_hook)(uint64_t key);

/* ds_nmbst__cleanup_point -- call the hook the test set, if any */
void
ds_nmbst__cleanup_point(uint64_t key)
{
	void (*hook)(uint64_t) = __atomic_load_n(&ds_nmbst__cleanup_hook,
		__ATOMIC_RELAXED);

	if (hook != NULL)
		hook(key);
}
