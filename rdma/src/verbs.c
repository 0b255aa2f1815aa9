/* SPDX-License-Identifier: BSD-3-Clause */
/* placeholder until the verbs backend lands: every open fails cleanly. */
#include <stddef.h>

#include "core.h"

static int
verbs_open_placeholder(struct rdma_conn *c, const char *target)
{
	(void)c;
	(void)target;
	return RDMA_E_NO_DEVICE;
}

const struct rdma__backend rdma__backend_verbs = {
	"verbs", verbs_open_placeholder, NULL, NULL, NULL,
};
