/* SPDX-License-Identifier: BSD-3-Clause */
/* placeholder until the ofi server lands. */
#include <stddef.h>

#include "server.h"

static int
ofi_server_start_placeholder(void **state, const struct rdma__server_env *env)
{
	(void)state;
	(void)env;
	return RDMA_E_NO_DEVICE;
}

const struct rdma__server rdma__server_ofi_tcp = {
	"ofi+tcp", RDMA_NODE_SERVE_TCP, RDMA_WIRE_BACKEND_OFI_TCP,
	ofi_server_start_placeholder, NULL, NULL,
};
const struct rdma__server rdma__server_ofi_shm = {
	"ofi+shm", RDMA_NODE_SERVE_SHM, RDMA_WIRE_BACKEND_OFI_SHM,
	ofi_server_start_placeholder, NULL, NULL,
};
