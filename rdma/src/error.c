/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/error.c -- rdma_strerror.
 */
#include <string.h>

#include <pm/error.h>

#include "core.h"

const char *
rdma_strerror(int code)
{
	switch (code) {
	case RDMA_E_BOUNDS:
		return "access outside the region";
	case RDMA_E_NO_REGION:
		return "no such region on the node";
	case RDMA_E_AUTH:
		return "cluster token refused by the node";
	case RDMA_E_PROTO:
		return "malformed or unexpected message";
	case RDMA_E_CONN:
		return "connection lost or node dead";
	case RDMA_E_INJECTED:
		return "failure injected for testing";
	case RDMA_E_NO_DEVICE:
		return "backend unavailable on this machine (no device or provider)";
	default:
		break;
	}
	if (code <= PM_E_BASE && code >= PM_E_LAST)
		return pm_strerror(code);
	/* strerror() is not thread-safe in general, but glibc returns static
	 * strings for every errno value it knows. */
	return code <= 0 ? strerror(-code) : "unknown error";
}
