/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/pump.h -- a closed loop over an asynchronous handle
 * (kv/kv.h, kv_async_*) for the benchmark drivers (dmkv bench and
 * benchmarks/kv_bench; private to the tools and benchmarks, not part of
 * the kv library).
 *
 * Each of @n caller-owned operations is a lane: the pump asks @next to
 * fill it, submits it, and on its completion asks @done what became of
 * it; @done may rewrite the op as a second stage (a read-modify-write's
 * write) and resubmit it, otherwise the lane asks @next again. The pump
 * stops asking once @next says no more, and returns when every lane is
 * idle. So a thread keeps @n operations in flight with no idle gap
 * between one completing and the next starting.
 *
 * Thread-safety: the handle's thread; @next and @done run on it.
 */
#ifndef KV_TOOLS_DMKV_PUMP_H
#define KV_TOOLS_DMKV_PUMP_H

#include <stdbool.h>

#include <kv/kv.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dmkv_pump {
	/* Fill @op (fields and op->user are the callee's) with the next
	 * operation; false: none is left, the lane stays idle. */
	bool (*next)(void *ctx, struct kv_op *op);
	/* @op completed (op->ret); true: @op was rewritten, submit it again. */
	bool (*done)(void *ctx, struct kv_op *op);
	void *ctx;
};

/**
 * dmkv_pump_run -- run the closed loop of @p over @a with the lanes
 * @ops[0..@n), @n at most @a's depth, until @p->next says no more and every
 * lane's operation has completed.
 * Return: 0; -EINVAL if @n is 0 or more than the handle runs at once
 * (kv_async_submit() said busy: the lane @p->next had just filled is not
 * run, and those submitted before it complete).
 */
int dmkv_pump_run(struct kv_async *a, struct kv_op *const *ops, unsigned n,
	const struct dmkv_pump *p);

#ifdef __cplusplus
}
#endif

#endif /* KV_TOOLS_DMKV_PUMP_H */
