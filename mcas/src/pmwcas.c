/* SPDX-License-Identifier: BSD-3-Clause */
/* mcas/src/pmwcas.c -- placeholder until the baseline lands: instances refuse it. */
#include "mcas_internal.h"

const struct mcas_algo_ops mcas__pmwcas_ops = {
	.name = "pmwcas",
	.value_mask = 7,
};
