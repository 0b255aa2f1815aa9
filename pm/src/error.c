/* SPDX-License-Identifier: BSD-3-Clause */
/* pm/src/error.c -- the suite's error codes and per-thread messages. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <pm/error.h>

#define PM_ERRORMSG_LEN 512

static __thread char pm_errormsg_buf[PM_ERRORMSG_LEN];

/* pm_strerror -- describe a suite code or a negative errno */
const char *
pm_strerror(int code)
{
	switch (code) {
	case 0:
		return "success";
	case PM_E_CORRUPT:
		return "pool is corrupt or not a pool";
	case PM_E_LAYOUT:
		return "pool has another layout";
	case PM_E_VERSION:
		return "pool has an unsupported layout version";
	case PM_E_NOT_PMEM:
		return "mapping is not persistent memory";
	case PM_E_CHECK_FAILED:
		return "crash-simulator check failed";
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
	case KV_E_UNAVAILABLE:
		return "too few memory nodes of the group answered in time";
	case KV_E_EXISTS:
		return "key already present";
	case KV_E_GROUP:
		return "the memory nodes do not form the configured index group";
	case KV_E_CONFIG:
		return "bad cluster configuration";
	case ONLL_E_RESULT_LOST:
		return "update took effect but its result was lost (out of memory)";
	default:
		break;
	}
	if (code < 0 && code > PM_E_BASE) {
		/* strerror's buffer may be overwritten by other threads; the
		 * common codes are named here so the answer is static. */
		switch (-code) {
		case ENOENT: return "no such file or directory";
		case ENOMEM: return "out of memory";
		case EACCES: return "permission denied";
		case EBUSY: return "resource busy";
		case EEXIST: return "file exists";
		case EINVAL: return "invalid argument";
		case ENOSPC: return "no space left";
		case ERANGE: return "out of range";
		case EIO: return "input/output error";
		case EAGAIN: return "resource temporarily unavailable";
		default: break;
		}
		/* The rest (the transport's -ETIMEDOUT, -EADDRINUSE...): glibc's
		 * static description, which unlike strerror() never writes a
		 * buffer. */
		const char *desc = strerrordesc_np(-code);

		return desc != NULL ? desc : "system error";
	}
	return "unknown error";
}

/* pm_errormsg -- this thread's last message */
const char *
pm_errormsg(void)
{
	return pm_errormsg_buf;
}

/* pm_error_clear -- forget this thread's message */
void
pm_error_clear(void)
{
	pm_errormsg_buf[0] = '\0';
}

/* pm_error_set -- set this thread's message and return the code */
int
pm_error_set(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pm_errormsg_buf, sizeof(pm_errormsg_buf), fmt, ap);
	va_end(ap);
	return code;
}
