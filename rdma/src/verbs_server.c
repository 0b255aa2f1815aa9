/* SPDX-License-Identifier: BSD-3-Clause */
/* placeholder until the verbs server lands. */
#include <stddef.h>

#include "server.h"

static int
verbs_server_start_placeholder(void **state, const struct rdma__server_env *env)
{
	(void)state;
	(void)env;
	return RDMA_E_NO_DEVICE;
}

const struct rdma__server rdma__server_verbs = {
	"verbs", RDMA_NODE_SERVE_VERBS, RDMA_WIRE_BACKEND_VERBS,
	verbs_server_start_placeholder, NULL, NULL,
};
