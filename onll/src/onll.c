/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onll/src/onll.c -- the ONLL API (see onll/onll.h): update (thesis alg.
 * 4.3), read (alg. 4.4) and query on a local view, thread registration and
 * statistics. The construction and its invariants are described at the top
 * of trace.c; persistence and recovery are in log.c.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <onll/onll.h>
#include <pm/error.h>
#include <pm/persist.h>

#include "onll_internal.h"

/* ---- operations ---- */

/* onll_op_check -- validate the arguments of an update or a read */
static int
onll_op_check(const struct onll_thread *t, const void *op, size_t op_len)
{
	if (t == NULL || op == NULL || op_len == 0)
		return -EINVAL;
	return op_len > t->o->max_op_size ? -E2BIG : 0;
}

/*
 * onll_update -- alg. 4.3 with a local view: insert into the trace (the
 * order), bring the view to just before the node and apply the op (the
 * result), append own and fuzzy ops with one fence (persist), set the
 * available flag (linearize).
 */
int
onll_update(struct onll_thread *t, const void *op, size_t op_len, void *result,
	uint64_t *index)
{
	struct onll *o;
	struct onll_slot *slot;
	struct onll_node *node = NULL;
	unsigned char *entry;
	bool ckpt = false;
	uint32_t nops;
	int ret, applied;

	ret = onll_op_check(t, op, op_len);
	if (ret != 0)
		return ret;
	o = t->o;
	slot = t->slot;
	ret = onll__op_enter(t);
	/* Refuse to grow a state no checkpoint can hold: its log entries
	 * could never be reused, and recovery could not save it. */
	if (ret == 0 && o->type->snapshot_size(o->type->ctx, t->state) > o->checkpoint_capacity)
		ret = -ENOSPC;
	if (ret == 0)
		ret = onll__log_reserve(t);
	if (ret == 0)
		ret = onll__node_alloc(t, &node);
	if (ret != 0) {
		onll__op_exit(t);
		return ret;
	}
	memcpy(node->op, op, op_len);
	node->op_len = (uint32_t)op_len;
	onll__trace_insert(o, node);

	/* From here on the update is ordered and must complete. */
	applied = 0;
	if (node->idx - 1 > t->view)
		applied = onll__view_advance(t, node->next);
	if (applied == 0) {
		applied = o->type->apply(o->type->ctx, t->state, op, op_len, result);
		if (applied == 0)
			t->view = node->idx;
		else
			onll__view_drop(t);
	}

	entry = onll__log_entry(o, slot, slot->log_tail);
	nops = onll__entry_fill(node, o->max_threads, entry);
	/* Piggy-back a checkpoint of the view (which now includes this
	 * update and the fuzzy ops it persists) on the same fence. */
	if (applied == 0 && onll__log_used(t) + 1 >= o->checkpoint_every && onll__ckpt_trylock(o)) {
		ckpt = onll__ckpt_write(o, 1 - o->ckpt_slot, t->state, t->view) == 0;
		if (!ckpt)
			onll__ckpt_unlock(o);
	}
	pm_flush(entry, sizeof(struct onll_entry_header) +
		((const struct onll_entry_header *)entry)->bytes);
	pm_fence();
	slot->log_index[slot->log_tail % o->log_entries] = node->idx;
	slot->log_tail++;

	atomic_store_explicit(&node->available, true, memory_order_seq_cst);
	/* Publish the checkpoint only now: a view loaded from it must not be
	 * ahead of the newest available node. */
	if (ckpt) {
		o->ckpt_slot = 1 - o->ckpt_slot;
		atomic_store_explicit(&o->ckpt_index, node->idx, memory_order_release);
		onll__ckpt_unlock(o);
		onll__count(slot, ST_CKPTS, 1);
	}
	if (applied == 0)
		atomic_store_explicit(&slot->view, t->view, memory_order_release);
	onll__op_exit(t);
	onll__count(slot, ST_UPDATES, 1);
	onll__count(slot, ST_HELPED, nops - 1);
	t->last_index = node->idx;
	if (index != NULL)
		*index = node->idx;
	/* The update is ordered, durable and available whatever apply() did
	 * on this thread's view; only its result is missing. */
	return applied == 0 ? 0 : ONLL_E_RESULT_LOST;
}

/* onll_read_view -- alg. 4.4 with a local view: catch up to latestAvailable */
static int
onll_read_view(struct onll_thread *t)
{
	struct onll_node *latest;
	int ret = onll__op_enter(t);

	if (ret == 0) {
		latest = onll__latest_available(t->o);
		if (latest->idx > t->view) {
			ret = onll__view_advance(t, latest);
			if (ret == 0)
				atomic_store_explicit(&t->slot->view, t->view,
					memory_order_release);
		}
	}
	onll__op_exit(t);
	if (ret == 0)
		onll__count(t->slot, ST_READS, 1);
	return ret;
}

/* onll_read -- alg. 4.4: compute @op on the caught-up local view */
int
onll_read(struct onll_thread *t, const void *op, size_t op_len, void *result)
{
	int ret = onll_op_check(t, op, op_len);

	if (ret == 0)
		ret = onll_read_view(t);
	if (ret == 0)
		t->o->type->compute(t->o->type->ctx, t->state, op, op_len, result);
	return ret;
}

/* onll_query -- call @fn on the caught-up local view */
int
onll_query(struct onll_thread *t, onll_query_fn fn, void *arg)
{
	int ret;

	if (t == NULL || fn == NULL)
		return -EINVAL;
	ret = onll_read_view(t);
	if (ret == 0)
		fn(arg, t->state);
	return ret;
}

/* ---- threads ---- */

/* onll_slot_stats -- add the counters of @slot to @out */
static void
onll_slot_stats(const struct onll_slot *slot, struct onll_stats *out)
{
	const _Atomic uint64_t *n = slot->stats.n;

	out->updates += atomic_load_explicit(&n[ST_UPDATES], memory_order_relaxed);
	out->reads += atomic_load_explicit(&n[ST_READS], memory_order_relaxed);
	out->helped_ops += atomic_load_explicit(&n[ST_HELPED], memory_order_relaxed);
	out->applied_ops += atomic_load_explicit(&n[ST_APPLIED], memory_order_relaxed);
	out->checkpoints += atomic_load_explicit(&n[ST_CKPTS], memory_order_relaxed);
	out->checkpoint_fences += atomic_load_explicit(&n[ST_CKPT_FENCES], memory_order_relaxed);
	out->log_full_waits += atomic_load_explicit(&n[ST_LOG_FULL], memory_order_relaxed);
	out->view_rebuilds += atomic_load_explicit(&n[ST_REBUILDS], memory_order_relaxed);
}

/* onll_thread_register -- take a free slot and build its view */
int
onll_thread_register(struct onll *o, struct onll_thread **out)
{
	struct onll_thread *t;
	int ret;

	pm_error_clear();
	if (o == NULL || out == NULL)
		return pm_error_set(-EINVAL, "onll_thread_register: %s", pm_strerror(-EINVAL));
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return pm_error_set(-ENOMEM, "onll_thread_register: %s", pm_strerror(-ENOMEM));
	t->o = o;
	for (unsigned i = 0; i < o->max_threads && t->slot == NULL; i++) {
		int expected = 0;

		if (atomic_compare_exchange_strong(&o->slots[i].in_use, &expected, 1))
			t->slot = &o->slots[i];
	}
	if (t->slot == NULL) {
		free(t);
		return pm_error_set(-EAGAIN, "onll_thread_register: %s", pm_strerror(-EAGAIN));
	}
	onll_slot_stats(t->slot, &t->base);
	ret = onll__view_rebuild(t);
	if (ret != 0) {
		atomic_store_explicit(&t->slot->in_use, 0, memory_order_release);
		free(t);
		return pm_error_set(ret, "onll_thread_register: %s", pm_strerror(ret));
	}
	*out = t;
	return 0;
}

/* onll_thread_unregister -- withdraw the view and free the slot */
int
onll_thread_unregister(struct onll_thread **tp)
{
	struct onll_thread *t;

	if (tp == NULL || *tp == NULL)
		return 0;
	t = *tp;
	atomic_store_explicit(&t->slot->view, ONLL_VIEW_NONE, memory_order_release);
	onll__view_drop(t);
	free(t->scratch);
	atomic_store_explicit(&t->slot->in_use, 0, memory_order_release);
	free(t);
	*tp = NULL;
	return 0;
}

/* ---- statistics ---- */

/* onll_thread_stats -- this handle's counts since it registered */
void
onll_thread_stats(const struct onll_thread *t, struct onll_stats *out)
{
	uint64_t *o = (uint64_t *)out;
	const uint64_t *b = (const uint64_t *)&t->base;

	memset(out, 0, sizeof(*out));
	onll_slot_stats(t->slot, out);
	/* The slot counts every registration; report this handle's share. */
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] -= b[i];
}

/* onll_stats_total -- the counts of every slot, with trace and log usage */
void
onll_stats_total(const struct onll *o, struct onll_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < o->max_threads; i++) {
		const struct onll_slot *slot = &o->slots[i];

		onll_slot_stats(slot, out);
		out->trace_nodes += atomic_load_explicit(&slot->nodes, memory_order_relaxed);
		/* Owner-only fields: exact when the slot is idle, as documented. */
		out->log_entries_used += __atomic_load_n(&slot->log_tail, __ATOMIC_RELAXED) -
			__atomic_load_n(&slot->log_head, __ATOMIC_RELAXED);
	}
}

/* onll_thread_last_index -- execution index of the latest update that returned */
uint64_t
onll_thread_last_index(const struct onll_thread *t)
{
	return t->last_index;
}

/* onll_recovered_index -- execution index recovery ended at */
uint64_t
onll_recovered_index(const struct onll *o)
{
	return o->recovered_index;
}
