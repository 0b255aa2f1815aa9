/* SPDX-License-Identifier: BSD-3-Clause */
/* pm/src/error.c -- error codes and per-thread messages. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <pm/error.h>

#include "error_internal.h"

#define PM_ERRORMSG_LEN 512

static __thread char pm_errormsg_buf[PM_ERRORMSG_LEN];

/* pm_strerror -- describe a PM_E_* code or a negative errno */
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
		default: return "system error";
		}
	}
	return "unknown error";
}

/* pm_errormsg -- this thread's last message */
const char *
pm_errormsg(void)
{
	return pm_errormsg_buf;
}

/* pm__err_clear -- forget this thread's message */
void
pm__err_clear(void)
{
	pm_errormsg_buf[0] = '\0';
}

/* pm__err -- set this thread's message and return the code */
int
pm__err(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pm_errormsg_buf, sizeof(pm_errormsg_buf), fmt, ap);
	va_end(ap);
	return code;
}
