/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/src/pool_testing.c -- the test seam of pool_testing.h, linked only into
 * the testonly //pm:pool_testing library.
 */
#include <unistd.h>

#include "pool_testing.h"

volatile sig_atomic_t pm_pool__testing_hang_check;

/* pm_pool__testing_child_point -- hang like PMDK on a looping pool */
void
pm_pool__testing_child_point(void)
{
	if (!pm_pool__testing_hang_check)
		return;
	for (;;)
		pause();
}
