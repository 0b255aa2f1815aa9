/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * examples/example.h -- what both examples do the same way: open a pool,
 * creating it on first use, and report an error with the library's
 * message. Header-only, so each example stays one plain C file to build.
 */
#ifndef DMEM_EXAMPLE_H
#define DMEM_EXAMPLE_H

#include <errno.h>
#include <stdio.h>

#include <pm/error.h>
#include <pm/pool.h>

/* Print "PROG: WHAT: code description (message)"; return exit status 1. */
static inline int
example_fail(const char *prog, const char *what, int ret)
{
	fprintf(stderr, "%s: %s: %s (%s)\n", prog, what, pm_strerror(ret), pm_errormsg());
	return 1;
}

/* Open the pool @pc describes, or create it if the file does not exist
 * (*@fresh = 1: the root is zeroed and the caller formats its objects).
 * Return: 0, or the error of pm_pool_open() / pm_pool_create(). */
static inline int
example_pool(struct pm_pool **out, const struct pm_pool_config *pc, int *fresh)
{
	int ret = pm_pool_open(out, pc);

	*fresh = ret == -ENOENT;
	if (*fresh)
		ret = pm_pool_create(out, pc);
	return ret;
}

#endif /* DMEM_EXAMPLE_H */
