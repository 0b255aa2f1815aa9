/* SPDX-License-Identifier: BSD-3-Clause */
/* mcas/src/harris.c -- placeholder until the baseline lands: instances refuse it. */
#include "mcas_internal.h"

const struct mcas_algo_ops mcas__harris_ops = {
	.name = "harris",
	.value_mask = 7,
};
