/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/async.c -- the asynchronous API of kv/kv.h: several clients
 * run as coroutines (ucontext) on the caller's thread.
 *
 * Each lane is a whole client (its own id, connections and index handle:
 * Safe-Guess needs one writer per operation in flight, App. C assumption
 * 2), opened with a yield hook. Wherever a client waits for the nodes (a
 * round, a background drain, a backoff; kv__ix_pause/kv__ix_sleep), the
 * hook switches back to the scheduler, which resumes the next lane. So the
 * batches of several operations are in flight at once on one thread, and
 * nothing is shared between lanes but the thread.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <pm/error.h>

#include "kv/src/store/store_internal.h"

#define KV_ASYNC_MAX_DEPTH 64u
/* A lane's stack: the deepest path (a read's view and a write-back inside
 * an index call) uses a few tens of KiB. */
#define KV_ASYNC_STACK (256u << 10)

struct kv_async;

struct kv_lane {
	struct kv_async *a;
	struct kv_client *c;
	ucontext_t ctx;
	void *stack;
	struct kv_op *op;   /* in flight, or NULL */
	bool done;          /* op finished; not yet handed out */
};

struct kv_async {
	ucontext_t sched;
	struct kv_lane *cur; /* the lane running, NULL in the scheduler */
	unsigned depth;
	struct kv_lane lane[];
};

/* The clients' yield hook: back to the scheduler, if called from a lane
 * (opening a client waits on the caller's own stack: spin then). */
static void
lane_yield(void *arg)
{
	struct kv_lane *l = arg;

	if (l->a->cur != l) {
		__builtin_ia32_pause();
		return;
	}
	swapcontext(&l->ctx, &l->a->sched);
}

int
kv_op_run(struct kv_client *c, struct kv_op *op)
{
	switch (op->kind) {
	case KV_OP_GET:
		op->ret = kv_get(c, op->key, op->klen, op->buf, op->cap, &op->len);
		break;
	case KV_OP_INSERT:
		op->ret = kv_insert(c, op->key, op->klen, op->val, op->vlen);
		break;
	case KV_OP_UPDATE:
		op->ret = kv_update(c, op->key, op->klen, op->val, op->vlen);
		break;
	case KV_OP_PUT:
		op->ret = kv_put(c, op->key, op->klen, op->val, op->vlen);
		break;
	case KV_OP_DELETE:
		op->ret = kv_delete(c, op->key, op->klen);
		break;
	default:
		op->ret = pm_error_set(-EINVAL, "kv_op_run: unknown kind %d", (int)op->kind);
		break;
	}
	return op->ret;
}

static void
lane_run(struct kv_lane *l)
{
	kv_op_run(l->c, l->op);
	l->done = true;
}

/* makecontext passes ints: the lane's address in two halves. */
static void
lane_main(unsigned hi, unsigned lo)
{
	lane_run((struct kv_lane *)(uintptr_t)((uint64_t)hi << 32 | lo));
}

/* Run lane @l until it waits or finishes. */
static void
lane_resume(struct kv_async *a, struct kv_lane *l)
{
	a->cur = l;
	swapcontext(&a->sched, &l->ctx);
	a->cur = NULL;
}

int
kv_async_open(struct kv_async **out, const struct kv_config *cfg, unsigned depth)
{
	struct kv_async *a;
	int ret = 0;

	pm_error_clear();
	*out = NULL;
	if (depth == 0 || depth > KV_ASYNC_MAX_DEPTH)
		return pm_error_set(-EINVAL, "kv_async_open: depth %u is not in 1..%u", depth,
			KV_ASYNC_MAX_DEPTH);
	a = calloc(1, sizeof(*a) + depth * sizeof(a->lane[0]));
	if (a == NULL)
		return pm_error_set(-ENOMEM, "kv_async_open: no memory for %u lanes", depth);
	a->depth = depth;
	for (unsigned i = 0; i < depth && ret == 0; i++) {
		struct kv_lane *l = &a->lane[i];

		l->a = a;
		l->stack = malloc(KV_ASYNC_STACK);
		ret = l->stack == NULL ?
			pm_error_set(-ENOMEM, "kv_async_open: no memory for a lane's stack") :
			kv__st_open(&l->c, cfg, lane_yield, l);
	}
	if (ret != 0) {
		kv_async_close(&a);
		return ret;
	}
	*out = a;
	return 0;
}

int
kv_async_submit(struct kv_async *a, struct kv_op *op)
{
	for (unsigned i = 0; i < a->depth; i++) {
		struct kv_lane *l = &a->lane[i];
		uintptr_t p = (uintptr_t)l;

		if (l->op != NULL)
			continue;
		l->op = op;
		l->done = false;
		getcontext(&l->ctx);
		l->ctx.uc_stack.ss_sp = l->stack;
		l->ctx.uc_stack.ss_size = KV_ASYNC_STACK;
		l->ctx.uc_link = &a->sched;
		makecontext(&l->ctx, (void (*)(void))lane_main, 2, (unsigned)((uint64_t)p >> 32),
			(unsigned)p);
		lane_resume(a, l);
		return 0;
	}
	return -EBUSY;
}

int
kv_async_poll(struct kv_async *a, struct kv_op **done, unsigned max, unsigned *n)
{
	*n = 0;
	for (unsigned i = 0; i < a->depth; i++) {
		struct kv_lane *l = &a->lane[i];

		if (l->op != NULL && !l->done)
			lane_resume(a, l);
		if (l->op != NULL && l->done && *n < max) {
			done[(*n)++] = l->op;
			l->op = NULL;
		}
	}
	return 0;
}

int
kv_async_wait(struct kv_async *a, struct kv_op **done, unsigned max, unsigned *n)
{
	for (;;) {
		bool busy = false;

		kv_async_poll(a, done, max, n);
		if (*n > 0 || max == 0)
			return 0;
		for (unsigned i = 0; i < a->depth; i++)
			busy |= a->lane[i].op != NULL;
		if (!busy)
			return 0;
	}
}

int
kv_async_close(struct kv_async **ap)
{
	struct kv_async *a;
	int ret = 0;

	if (ap == NULL || *ap == NULL)
		return 0;
	a = *ap;
	for (;;) {
		struct kv_op *done[KV_ASYNC_MAX_DEPTH];
		unsigned n;
		bool busy = false;

		kv_async_poll(a, done, KV_ASYNC_MAX_DEPTH, &n);
		for (unsigned i = 0; i < a->depth; i++)
			busy |= a->lane[i].op != NULL;
		if (!busy)
			break;
	}
	for (unsigned i = 0; i < a->depth; i++) {
		int r = kv_close(&a->lane[i].c);

		if (ret == 0)
			ret = r;
		free(a->lane[i].stack);
	}
	free(a);
	*ap = NULL;
	return ret;
}

void
kv_async_stats_read(const struct kv_async *a, struct kv_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < a->depth; i++) {
		struct kv_stats s;

		if (a->lane[i].c == NULL)
			continue;
		kv_stats_read(a->lane[i].c, &s);
		/* Every field is a uint64_t (kv.h). */
		_Static_assert(sizeof(s) % sizeof(uint64_t) == 0, "kv_stats holds uint64_t only");
		for (size_t j = 0; j < sizeof(s) / sizeof(uint64_t); j++)
			((uint64_t *)out)[j] += ((const uint64_t *)&s)[j];
	}
}
