/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/pump.c -- the benchmark drivers' closed loop over an
 * asynchronous handle (pump.h).
 */
#include <errno.h>

#include "kv/tools/dmkv/pump.h"

/* kv_async_open's largest depth: one wait hands out every lane at most. */
#define DMKV_PUMP_BATCH 64u

int
dmkv_pump_run(struct kv_async *a, struct kv_op *const *ops, unsigned n,
	const struct dmkv_pump *p)
{
	struct kv_op *done[DMKV_PUMP_BATCH];
	unsigned inflight = 0, got;
	bool more = n > 0;
	int ret = n > 0 ? 0 : -EINVAL;

	for (unsigned i = 0; i < n && more; i++) {
		if (!(more = p->next(p->ctx, ops[i])))
			break;
		if (kv_async_submit(a, ops[i]) != 0) {
			ret = -EINVAL;
			more = false;
			break;
		}
		inflight++;
	}
	while (inflight > 0) {
		kv_async_wait(a, done, DMKV_PUMP_BATCH, &got);
		for (unsigned i = 0; i < got; i++) {
			struct kv_op *op = done[i];

			inflight--;
			/* The lane @op held is free: the submit cannot be busy. */
			if ((p->done(p->ctx, op) || (more && (more = p->next(p->ctx, op)))) &&
				kv_async_submit(a, op) == 0)
				inflight++;
		}
	}
	return ret;
}
