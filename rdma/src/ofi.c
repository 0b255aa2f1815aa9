/* SPDX-License-Identifier: BSD-3-Clause */
/* placeholder until the ofi backend lands: every open fails cleanly. */
#include <stddef.h>

#include "core.h"

static int
ofi_open_placeholder(struct rdma_conn *c, const char *target)
{
	(void)c;
	(void)target;
	return RDMA_E_NO_DEVICE;
}

const struct rdma__backend rdma__backend_ofi_tcp = {
	"ofi+tcp", ofi_open_placeholder, NULL, NULL, NULL,
};
const struct rdma__backend rdma__backend_ofi_shm = {
	"ofi+shm", ofi_open_placeholder, NULL, NULL, NULL,
};
