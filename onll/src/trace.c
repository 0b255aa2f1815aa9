/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onll/src/trace.c -- the ONLL universal construction (see onll/onll.h):
 * its execution trace, the trace's reclamation floor and the local views.
 * This comment describes the whole construction and its invariants; the
 * other parts (log.c, onll.c, onll_internal.h) point here.
 *
 * Source: M. Zablotchi, "Distributed Computing with Modern Shared Memory"
 * (EPFL thesis, 2020), ch. 4: alg. 4.2 (execution trace), 4.3 (update), 4.4
 * (read), 4.5 (recovery), sect. 4.8 (local views and checkpoints). Where the
 * listings are ambiguous the module follows one reading: the trace's tail
 * starts as a trace node (a sentinel), and next pointers go from newer to
 * older nodes.
 *
 * Persistent area (64-byte aligned, inside a pm/ pool):
 *   header                       one cache line, written last at create
 *   checkpoint slot 0, slot 1    64-byte header + checkpoint_capacity bytes
 *   log of thread slot 0 .. max_threads - 1
 *                                log_entries entries of entry_size bytes
 * A log entry holds the execution index of its first op (the appending
 * update's own), then that op and the fuzzy ops before it, newest first:
 * op k has index (entry index - k) (Listing 4.1).
 *
 * Reclamation. Thread slot s publishes the execution index of its local
 * view in slots[s].view, and whether it is inside an operation in
 * slots[s].active. Every trace node a thread touches has an index at least
 * its published view (its view node is available, so every walk stops there
 * at the latest), and nodes at or after the latest durable checkpoint are
 * kept so a thread can always rebuild its view from that checkpoint. So a
 * node whose index is below min(checkpoint index, every view) is unreachable
 * for everyone; its owner reuses it. A thread idle between operations with a
 * view more than reclaim_lag behind the checkpoint is left out of the
 * minimum, so it cannot pin the trace: the reclaimer raises o->floor first,
 * and the thread, on entering its next operation, finds its view below the
 * floor and rebuilds it from the checkpoint (a Dekker handshake: each side
 * stores, then loads the other's word). The operation side must stay cheap:
 * reads issue no fence, so where the kernel has membarrier(2) the
 * reclaimer, which raises the floor rarely, forces the full barrier on
 * every running thread instead (as liburcu's membarrier flavour does);
 * elsewhere both sides use seq_cst. A thread inside an
 * operation does pin the nodes after its view, as in epoch-based schemes.
 *
 * Why not reclaim/ (the suite's one reclamation service, whose epoch
 * flavour mcas/ runs on): trace nodes die in index order, so one published
 * index per thread says which are dead, where reclaim/ needs a retire call
 * and a list entry per node, and an epoch flavour's section costs a seq_cst
 * store on entry that ONLL's reads avoid (membarrier above); and the same
 * index decides which log entries recovery still needs, which no
 * reclamation scheme knows. The entry's price was measured with
 * //benchmarks:onll_bench_seqcst, onll_bench on //onll:onll_seqcst, whose
 * reads enter with the seq_cst store and load an epoch section would cost
 * (2026-11-29, -c opt, one thread, read-only): callgrind (onll_read
 * inclusive, --toggle-collect=onll_read, the difference between runs of
 * --benchmark_min_time=0.02 and 0.2) sees the same instructions, counter
 * get 137.0 against 140.0 per read, map get 193.5 against 196.5, because
 * an xchg is one instruction like the mov it replaces; the clock sees the
 * locked store: counter get 18.1-21.5 ns against 24.3-28.8 (5 runs each,
 * interleaved: about 35 % more), map get 79-89 ns both (the lookup hides
 * it). A reclaim/-based ONLL, with a retire per node on top, was not built.
 * A log entry whose index is at most the latest durable checkpoint's is
 * reused: recovery never needs it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <onll/onll.h>
#include <pm/error.h>

#include "onll_internal.h"

/*
 * The trace's hot helpers (insert, latestAvailable, the reclamation bound,
 * node allocation, onll__op_enter/onll__op_exit) are static inline in
 * onll_internal.h: the operation paths inline them.
 */

/* ---- local views (sect. 4.8) ---- */

/*
 * onll__view_rebuild -- load the latest durable checkpoint as @t's view.
 * Under ckpt_busy the checkpoint cannot change, and the view is published
 * before the next checkpoint index is (see onll__reclaim_bound).
 */
int
onll__view_rebuild(struct onll_thread *t)
{
	struct onll *o = t->o;
	const struct onll_ckpt_header *h;
	void *state = NULL;
	int ret;

	onll__view_drop(t);
	onll__ckpt_lock(o);
	h = (const void *)o->ckpt[o->ckpt_slot];
	if (!onll__ckpt_valid(o, o->ckpt_slot)) {
		ret = PM_E_CORRUPT;
	} else {
		ret = o->type->snapshot_load(o->type->ctx, o->ckpt[o->ckpt_slot] + 64,
			(size_t)h->size, &state);
		if (ret == -EINVAL)
			ret = PM_E_CORRUPT;
	}
	if (ret == 0) {
		t->state = state;
		t->view = h->index;
		atomic_store_explicit(&t->slot->view, t->view, memory_order_release);
		onll__count(t->slot, ST_REBUILDS, 1);
	}
	onll__ckpt_unlock(o);
	return ret;
}

/*
 * onll__view_advance -- apply to @t's view the trace ops after it up to and
 * including @upto (which must be at a later index). The trace links go from
 * newer to older, so the nodes are gathered first and applied oldest first.
 */
int
onll__view_advance(struct onll_thread *t, struct onll_node *upto)
{
	const struct onll_type *type = t->o->type;
	size_t count = (size_t)(upto->idx - t->view);
	struct onll_node *n = upto;
	int ret = 0;

	if (count > t->scratch_cap) {
		size_t cap = count * 2;
		struct onll_node **s = realloc(t->scratch, cap * sizeof(*s));

		if (s == NULL)
			return -ENOMEM;
		t->scratch = s;
		t->scratch_cap = cap;
	}
	for (size_t i = count; i > 0; i--) {
		t->scratch[i - 1] = n;
		n = n->next;
	}
	for (size_t i = 0; i < count && ret == 0; i++) {
		n = t->scratch[i];
		ret = type->apply(type->ctx, t->state, n->op, n->op_len, NULL);
	}
	onll__count(t->slot, ST_APPLIED, count);
	if (ret != 0) {
		onll__view_drop(t);
		return ret;
	}
	t->view = upto->idx;
	return 0;
}
