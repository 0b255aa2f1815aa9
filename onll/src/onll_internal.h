/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onll/src/onll_internal.h -- what the parts of the ONLL universal
 * construction share: the persistent layout, the volatile object and the
 * helpers of the operation paths. Private to the onll module.
 *
 * The construction is split along the algorithm's phases; the top of
 * trace.c describes all of it (layout, reclamation, the floor handshake):
 *   trace.c   execution trace (alg. 4.2), reclamation bound and floor, node
 *             allocation, local views (sect. 4.8), op_enter/op_exit
 *   log.c     checkpoint and log-entry checksums, log ring, checkpoints,
 *             create, open (recovery, alg. 4.5), close
 *   onll.c    the API: update (alg. 4.3), read (alg. 4.4), query, threads,
 *             statistics
 * The helpers onll_update() and onll_read() inline are static inline here,
 * whichever phase they belong to (each section names it), so the split
 * costs the operation paths no call.
 */
#ifndef ONLL_INTERNAL_H
#define ONLL_INTERNAL_H

#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <xxhash.h>

#include <onll/onll.h>
#include <pm/area.h>

#define ONLL_MAGIC 0x4145524c4c4e4f44ull /* "DONLLREA" */
#define ONLL_MAX_THREADS 256
#define ONLL_MAX_OP 4096
#define ONLL_VIEW_NONE UINT64_MAX

/* The first cache line of the area; the entry size follows from
 * max_threads and max_op_size (onll_entry_size()). */
struct onll_pmem_header {
	struct pm_area_hdr area; /* magic, version, sizes, checksum (pm/area.h) */
	uint32_t max_threads;
	uint32_t max_op_size;
	uint32_t log_entries;
	uint32_t checkpoint_every;
	uint64_t checkpoint_capacity;
	uint64_t type_id;  /* XXH3 of the type's name: open with another type fails */
};
_Static_assert(sizeof(struct onll_pmem_header) == 64, "header is one cache line");

/* Head of a checkpoint slot; the saved state follows at the next line. */
struct onll_ckpt_header {
	uint64_t index;    /* execution index of the saved state */
	uint64_t size;     /* bytes of saved state */
	uint64_t checksum; /* XXH3 of index, size and the state */
};

/* Head of a log entry; the op records follow. */
struct onll_entry_header {
	uint64_t index;    /* execution index of op 0 */
	uint32_t nops;     /* 1 .. max_threads */
	uint32_t bytes;    /* bytes of op records after this header */
	uint64_t checksum; /* XXH3 of index, nops, bytes and the records */
	uint64_t reserved;
};
_Static_assert(sizeof(struct onll_entry_header) == 32, "entry header size");

/* An op inside a log entry: its length, then its bytes padded to 8. */
struct onll_op_rec {
	uint32_t len;
	uint32_t reserved;
	unsigned char bytes[];
};

/* A node of the volatile execution trace (alg. 4.2). */
struct onll_node {
	struct onll_node *next;    /* the previous (older) update; set before insertion */
	uint64_t idx;              /* execution index; set before insertion */
	atomic_bool available;     /* persisted and linearized (never cleared) */
	uint32_t op_len;
	struct onll_node *owned;   /* next node in the owner slot's allocation order */
	unsigned char op[];
};

/* Statistics counters of a slot, written by its owner only. */
struct onll_slot_stats {
	_Atomic uint64_t n[8];
};
enum {
	ST_UPDATES, ST_READS, ST_HELPED, ST_APPLIED, ST_CKPTS, ST_CKPT_FENCES, ST_LOG_FULL,
	ST_REBUILDS
};

/*
 * A thread slot: the published view plus everything that outlives one
 * registration (log ring, node pool), handed to the next thread that
 * registers in the slot.
 */
struct onll_slot {
	_Atomic uint64_t view;     /* ONLL_VIEW_NONE when no thread is registered */
	atomic_int active;         /* inside an operation */
	atomic_int in_use;
	/* owner-only below */
	unsigned char *log;        /* log_entries entries of entry_size bytes */
	uint64_t *log_index;       /* index of the entry at each ring position */
	uint64_t log_head;         /* oldest position not known to be covered */
	uint64_t log_tail;         /* next position to write */
	struct onll_node *free_nodes;
	struct onll_node *oldest, *newest; /* nodes in use, in allocation order */
	_Atomic uint64_t nodes;    /* nodes allocated (in use or free) */
	struct onll_slot_stats stats;
} __attribute__((aligned(64)));

struct onll {
	struct pm_pool *pool;
	const struct onll_type *type;
	struct onll_pmem_header *hdr;
	unsigned char *ckpt[2];
	unsigned max_threads, max_op_size, log_entries, checkpoint_every;
	size_t entry_size;
	uint64_t checkpoint_capacity;
	size_t node_size;
	uint64_t recovered_index;

	_Atomic(struct onll_node *) tail __attribute__((aligned(64)));
	_Atomic uint64_t ckpt_index __attribute__((aligned(64))); /* latest durable checkpoint */
	_Atomic uint64_t floor;    /* views below it may have lost their nodes */
	uint64_t reclaim_lag;      /* how far behind an idle thread's view may be left */
	bool membarrier;           /* the reclaimer issues the handshake's barriers */
	atomic_int ckpt_busy;      /* try-flag serialising checkpoint writers */
	unsigned ckpt_slot;        /* slot holding ckpt_index; under ckpt_busy */
	struct onll_node *sentinel;
	struct onll_slot *slots;
};

struct onll_thread {
	struct onll *o;
	struct onll_slot *slot;
	struct onll_stats base;    /* the slot's counts at registration */
	uint64_t last_index;       /* of the latest update that returned */
	void *state;               /* local view; NULL when it must be rebuilt */
	uint64_t view;             /* execution index of state */
	struct onll_node **scratch;
	size_t scratch_cap;
};

/* ---- sizes ---- */

/* onll__round -- @n rounded up to a multiple of @to */
static inline size_t
onll__round(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

/* ---- execution trace, alg. 4.2 (trace.c) ---- */

/* onll__available -- whether node @n's update is persisted and linearized */
static inline bool
onll__available(const struct onll_node *n)
{
	return atomic_load_explicit(&n->available, memory_order_acquire);
}

/* onll__latest_available -- latestAvailable (alg. 4.2 line 15): the newest
 * node seen with its flag set */
static inline struct onll_node *
onll__latest_available(struct onll *o)
{
	struct onll_node *n = atomic_load_explicit(&o->tail, memory_order_acquire);

	while (!onll__available(n))
		n = n->next;
	return n;
}

/* onll__trace_insert -- insert (alg. 4.2 line 29): order @node after the
 * current tail */
static inline void
onll__trace_insert(struct onll *o, struct onll_node *node)
{
	struct onll_node *tail = atomic_load_explicit(&o->tail, memory_order_acquire);

	atomic_store_explicit(&node->available, false, memory_order_relaxed);
	do {
		node->idx = tail->idx + 1;
		node->next = tail;
	} while (!atomic_compare_exchange_weak_explicit(&o->tail, &tail, node,
		memory_order_acq_rel, memory_order_acquire));
}

/* ---- statistics ---- */

/* onll__count -- add @n to a counter of @slot (owner only) */
static inline void
onll__count(struct onll_slot *slot, int counter, uint64_t n)
{
	_Atomic uint64_t *c = &slot->stats.n[counter];

	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
		memory_order_relaxed);
}

/* ---- reclamation of trace nodes (trace.c) ---- */

/* onll__reclaim_bound -- nodes with a smaller index are unreachable */
static inline uint64_t
onll__reclaim_bound(struct onll *o)
{
	/* The checkpoint index first: a thread that registers publishes its
	 * view before a later checkpoint index is published (both under
	 * ckpt_busy), so reading the index first guarantees seeing that view. */
	uint64_t ckpt = atomic_load_explicit(&o->ckpt_index, memory_order_acquire);
	uint64_t bound = ckpt, all = ckpt; /* without / with the idle laggards */
	bool skipped = false;

	for (unsigned i = 0; i < o->max_threads; i++) {
		struct onll_slot *slot = &o->slots[i];
		uint64_t v = atomic_load_explicit(&slot->view, memory_order_acquire);

		if (v < all)
			all = v;
		if (v >= bound)
			continue;
		if (ckpt - v > o->reclaim_lag &&
		    !atomic_load_explicit(&slot->active, memory_order_seq_cst))
			skipped = true;
		else
			bound = v;
	}
	if (!skipped)
		return bound;
	/* Tell the idle threads left out, then look again at those that
	 * became active meanwhile (see the top of trace.c). */
	uint64_t floor = atomic_load_explicit(&o->floor, memory_order_relaxed);

	while (floor < bound && !atomic_compare_exchange_weak_explicit(&o->floor, &floor, bound,
		memory_order_seq_cst, memory_order_relaxed))
		;
	if (o->membarrier && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
		return all; /* cannot happen once registered; if it does, skip nobody */
	for (unsigned i = 0; i < o->max_threads; i++) {
		struct onll_slot *slot = &o->slots[i];

		if (atomic_load_explicit(&slot->active, memory_order_seq_cst)) {
			uint64_t v = atomic_load_explicit(&slot->view, memory_order_acquire);

			if (v < bound)
				bound = v;
		}
	}
	return bound;
}

/* onll__node_alloc -- a trace node for @t: its slot's free list, reclaimed nodes, or calloc */
static inline int
onll__node_alloc(struct onll_thread *t, struct onll_node **out)
{
	struct onll_slot *slot = t->slot;
	struct onll_node *n;

	if (slot->free_nodes == NULL && slot->oldest != NULL) {
		uint64_t bound = onll__reclaim_bound(t->o);

		/* The slot's nodes are in allocation order, which is index
		 * order: its thread inserts one at a time. */
		while (slot->oldest != NULL && slot->oldest != slot->newest &&
		       slot->oldest->idx < bound) {
			n = slot->oldest;
			slot->oldest = n->owned;
			n->owned = slot->free_nodes;
			slot->free_nodes = n;
		}
	}
	n = slot->free_nodes;
	if (n != NULL) {
		slot->free_nodes = n->owned;
	} else {
		n = calloc(1, t->o->node_size);
		if (n == NULL)
			return -ENOMEM;
		atomic_fetch_add_explicit(&slot->nodes, 1, memory_order_relaxed);
	}
	n->owned = NULL;
	if (slot->newest != NULL)
		slot->newest->owned = n;
	else
		slot->oldest = n;
	slot->newest = n;
	*out = n;
	return 0;
}

/* ---- checkpoints: checksum and the writers' flag (log.c) ---- */

/* onll__ckpt_sum -- checksum of a checkpoint: its header fields and @data */
static inline uint64_t
onll__ckpt_sum(const struct onll_ckpt_header *h, const void *data)
{
	uint64_t seed = XXH3_64bits(h, offsetof(struct onll_ckpt_header, checksum));

	return XXH3_64bits_withSeed(data, (size_t)h->size, seed);
}

/* onll__ckpt_valid -- whether slot @s holds a whole checkpoint */
static inline bool
onll__ckpt_valid(const struct onll *o, unsigned s)
{
	const struct onll_ckpt_header *h = (const void *)o->ckpt[s];

	return h->size <= o->checkpoint_capacity &&
		h->checksum == onll__ckpt_sum(h, o->ckpt[s] + 64);
}

/* onll__ckpt_lock -- take ckpt_busy, yielding while another writer has it */
static inline void
onll__ckpt_lock(struct onll *o)
{
	int expected = 0;

	while (!atomic_compare_exchange_weak_explicit(&o->ckpt_busy, &expected, 1,
		memory_order_acquire, memory_order_relaxed)) {
		expected = 0;
		sched_yield();
	}
}

/* onll__ckpt_trylock -- take ckpt_busy if it is free */
static inline bool
onll__ckpt_trylock(struct onll *o)
{
	int expected = 0;

	return atomic_compare_exchange_strong_explicit(&o->ckpt_busy, &expected, 1,
		memory_order_acquire, memory_order_relaxed);
}

/* onll__ckpt_unlock -- release ckpt_busy */
static inline void
onll__ckpt_unlock(struct onll *o)
{
	atomic_store_explicit(&o->ckpt_busy, 0, memory_order_release);
}

/* ---- local views, sect. 4.8 (trace.c) ---- */

/* onll__view_drop -- free @t's local view; it must be rebuilt before use */
static inline void
onll__view_drop(struct onll_thread *t)
{
	if (t->state != NULL)
		t->o->type->state_free(t->o->type->ctx, t->state);
	t->state = NULL;
}

/* onll__view_rebuild -- load the latest durable checkpoint as @t's view */
int onll__view_rebuild(struct onll_thread *t);

/* onll__view_advance -- apply to @t's view the trace ops up to @upto */
int onll__view_advance(struct onll_thread *t, struct onll_node *upto);

/*
 * onll__op_enter -- mark @t inside an operation and make sure it has a view
 * whose trace nodes still exist. Pair with onll__op_exit().
 */
static inline int
onll__op_enter(struct onll_thread *t)
{
	struct onll *o = t->o;
	uint64_t floor;

	if (o->membarrier) {
		/* The reclaimer's membarrier() orders these two for us. */
		atomic_store_explicit(&t->slot->active, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		floor = atomic_load_explicit(&o->floor, memory_order_acquire);
	} else {
		atomic_store_explicit(&t->slot->active, 1, memory_order_seq_cst);
		floor = atomic_load_explicit(&o->floor, memory_order_seq_cst);
	}
	if (t->state != NULL && t->view < floor)
		onll__view_drop(t);
	return t->state != NULL ? 0 : onll__view_rebuild(t);
}

/* onll__op_exit -- mark @t outside an operation (pairs with onll__op_enter) */
static inline void
onll__op_exit(struct onll_thread *t)
{
	atomic_store_explicit(&t->slot->active, 0, memory_order_release);
}

/* ---- log ring (log.c) ---- */

/* onll__ckpt_write -- save @state (index @index) into slot @s, flushed, unfenced */
int onll__ckpt_write(struct onll *o, unsigned s, const void *state, uint64_t index);

/* onll__checkpoint_locked -- with ckpt_busy held: checkpoint the newest state */
int onll__checkpoint_locked(struct onll_thread *t);

/* onll__log_entry -- address of position @pos of @slot's log ring */
static inline unsigned char *
onll__log_entry(const struct onll *o, const struct onll_slot *slot, uint64_t pos)
{
	return slot->log + (pos % o->log_entries) * o->entry_size;
}

/* onll__entry_sum -- checksum of a log entry: its header fields and records */
static inline uint64_t
onll__entry_sum(const struct onll_entry_header *h)
{
	uint64_t seed = XXH3_64bits(h, offsetof(struct onll_entry_header, checksum));

	return XXH3_64bits_withSeed(h + 1, h->bytes, seed);
}

/* onll__log_collect -- reuse the entries the latest checkpoint covers */
static inline void
onll__log_collect(struct onll_thread *t)
{
	struct onll_slot *slot = t->slot;
	uint64_t covered = atomic_load_explicit(&t->o->ckpt_index, memory_order_acquire);

	while (slot->log_head < slot->log_tail &&
	       slot->log_index[slot->log_head % t->o->log_entries] <= covered)
		slot->log_head++;
}

/* onll__log_used -- entries of @t's log ring not yet known to be covered */
static inline uint64_t
onll__log_used(const struct onll_thread *t)
{
	return t->slot->log_tail - t->slot->log_head;
}

/*
 * onll__log_reserve -- make room for one entry in @t's log. When the log is
 * full, write a checkpoint (the newest available state covers every entry
 * of this thread, whose updates have all completed); wait only while
 * another thread is writing one.
 */
static inline int
onll__log_reserve(struct onll_thread *t)
{
	bool counted = false;

	for (;;) {
		int ret;

		onll__log_collect(t);
		if (onll__log_used(t) < t->o->log_entries)
			return 0;
		if (!counted)
			onll__count(t->slot, ST_LOG_FULL, 1);
		counted = true;
		if (!onll__ckpt_trylock(t->o)) {
			sched_yield();
			continue;
		}
		ret = onll__checkpoint_locked(t);
		onll__ckpt_unlock(t->o);
		if (ret != 0)
			return ret;
	}
}

/*
 * onll__entry_fill -- write into @e the log entry of @node: its op, then the
 * ops of the fuzzy window before it (getFuzzyOps, alg. 4.2 line 6). Returns
 * the number of ops. The window holds fewer than max_threads nodes besides
 * @node (Prop. 4.5.2: each slot has at most one update in flight); the
 * bound only keeps a handle shared by two threads, against the rules, from
 * overrunning the entry.
 */
static inline uint32_t
onll__entry_fill(const struct onll_node *node, uint32_t node_max, unsigned char *e)
{
	struct onll_entry_header *h = (void *)e;
	unsigned char *p = e + sizeof(*h);
	uint32_t nops = 0;

#ifdef ONLL_MUTANT_NO_HELPING
	/* Planted bug, test builds only (//onll:onll_nohelp): each entry holds
	 * only its own op, so an update can be durable while an earlier one it
	 * observed is not. //onll:onll_crash_nohelp_test must catch it. */
	node_max = 1;
#endif
	for (const struct onll_node *n = node; nops < node_max && !onll__available(n);
	     n = n->next) {
		struct onll_op_rec *rec = (void *)p;

		rec->len = n->op_len;
		rec->reserved = 0;
		memcpy(rec->bytes, n->op, n->op_len);
		p += sizeof(*rec) + onll__round(n->op_len, 8);
		nops++;
	}
	h->index = node->idx;
	h->nops = nops;
	h->bytes = (uint32_t)(p - (e + sizeof(*h)));
	h->reserved = 0;
	h->checksum = onll__entry_sum(h);
	return nops;
}

#endif /* ONLL_INTERNAL_H */
