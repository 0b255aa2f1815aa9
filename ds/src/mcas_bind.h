/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/mcas_bind.h -- the checks the two MCAS structures (dll.c,
 * bztree*.c) make before they bind to an MCAS instance and, when
 * persistent, to an area of a pool. Not installed.
 */
#ifndef DS_SRC_MCAS_BIND_H
#define DS_SRC_MCAS_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mcas/mcas.h>
#include <pm/pool.h>

/**
 * ds__mcas_bind -- whether @m suits a volatile (@pool NULL) or persistent
 * structure; for a persistent one also locate its area of @len bytes at
 * @area_off in @pool (@align-aligned) into *@area, and check that @m lives
 * in the same pool, since every word of the area is an MCAS target of @m.
 * @what names the structure in messages ("ds_dll"), @kind its kind
 * ("list").
 * Return: 0; -EINVAL (no instance, wrong kind of instance, an algorithm that
 * reserves bits beyond MCAS_VALUE_PORTABLE_MASK, misaligned area, instance
 * from another pool); -ERANGE if the area is not inside @pool; the message
 * is set (pm_errormsg()).
 * Thread-safety: any thread. Ordering: none.
 */
int ds__mcas_bind(struct mcas *m, struct pm_pool *pool, uint64_t area_off, size_t len,
	size_t align, const char *what, const char *kind, void **area);

#endif /* DS_SRC_MCAS_BIND_H */
