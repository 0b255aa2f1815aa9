/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onll/src/onll.c -- the ONLL universal construction (see onll/onll.h).
 *
 * Source: M. Zablotchi, "Distributed Computing with Modern Shared Memory"
 * (EPFL thesis, 2020), ch. 4: alg. 4.2 (execution trace), 4.3 (update), 4.4
 * (read), 4.5 (recovery), sect. 4.8 (local views and checkpoints). Where the
 * listings are ambiguous this file follows one reading: the trace's tail
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
 * A log entry whose index is at most the latest durable checkpoint's is
 * reused: recovery never needs it.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <xxhash.h>

#include <onll/onll.h>
#include <pm/area.h>
#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>

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

static const struct pm_area_type onll_area_type = {
	"ONLL", ONLL_MAGIC, ONLL_PMEM_VERSION, sizeof(struct onll_pmem_header)
};

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

/* ---- sizes and layout ---- */

static size_t
onll_round(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static size_t
onll_entry_size(unsigned max_threads, unsigned max_op_size)
{
	return onll_round(sizeof(struct onll_entry_header) +
		(size_t)max_threads * (sizeof(struct onll_op_rec) + onll_round(max_op_size, 8)), 64);
}

static size_t
onll_ckpt_slot_size(uint64_t capacity)
{
	return 64 + onll_round(capacity, 64);
}

void
onll_config_init(struct onll_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_threads = 16;
	cfg->max_op_size = 64;
	cfg->log_entries = 64;
	cfg->checkpoint_every = 0; /* log_entries / 2 */
	cfg->checkpoint_capacity = 1 << 20;
}

/* onll_config_check -- validate @cfg (NULL: defaults) into @out */
static int
onll_config_check(const struct onll_config *cfg, struct onll_config *out)
{
	if (cfg == NULL)
		onll_config_init(out);
	else
		*out = *cfg;
	if (out->checkpoint_every == 0)
		out->checkpoint_every = out->log_entries / 2;
	if (out->max_threads < 1 || out->max_threads > ONLL_MAX_THREADS ||
	    out->max_op_size < 1 || out->max_op_size > ONLL_MAX_OP ||
	    out->log_entries < 4 || out->log_entries > (1u << 20) ||
	    out->checkpoint_every < 1 || out->checkpoint_every >= out->log_entries ||
	    out->checkpoint_capacity < 8 || out->checkpoint_capacity > (UINT64_C(1) << 40))
		return -EINVAL;
	return 0;
}

size_t
onll_area_size(const struct onll_config *cfg)
{
	struct onll_config c;

	if (onll_config_check(cfg, &c) != 0)
		return 0;
	return 64 + 2 * onll_ckpt_slot_size(c.checkpoint_capacity) +
		(size_t)c.max_threads * c.log_entries *
		onll_entry_size(c.max_threads, c.max_op_size);
}

static uint64_t
onll_type_id(const struct onll_type *type)
{
	return XXH3_64bits(type->name, strlen(type->name));
}

static bool
onll_type_ok(const struct onll_type *t)
{
	return t != NULL && t->name != NULL && t->state_new != NULL && t->state_free != NULL &&
		t->apply != NULL && t->compute != NULL && t->snapshot_size != NULL &&
		t->snapshot_save != NULL && t->snapshot_load != NULL;
}

/* ---- checkpoints and log entries: checksums ---- */

static uint64_t
onll_ckpt_sum(const struct onll_ckpt_header *h, const void *data)
{
	uint64_t seed = XXH3_64bits(h, offsetof(struct onll_ckpt_header, checksum));

	return XXH3_64bits_withSeed(data, (size_t)h->size, seed);
}

/* onll_ckpt_valid -- whether slot @s holds a whole checkpoint */
static bool
onll_ckpt_valid(const struct onll *o, unsigned s)
{
	const struct onll_ckpt_header *h = (const void *)o->ckpt[s];

	return h->size <= o->checkpoint_capacity && h->checksum == onll_ckpt_sum(h, o->ckpt[s] + 64);
}

/*
 * onll_ckpt_write -- save @state (execution index @index) into checkpoint
 * slot @s and flush it, without a fence: the caller's next fence makes it
 * durable, and until then a crash leaves it failing its checksum.
 */
static int
onll_ckpt_write(struct onll *o, unsigned s, const void *state, uint64_t index)
{
	struct onll_ckpt_header *h = (void *)o->ckpt[s];
	size_t size = o->type->snapshot_size(o->type->ctx, state);

	if (size > o->checkpoint_capacity)
		return -ENOSPC;
	o->type->snapshot_save(o->type->ctx, state, o->ckpt[s] + 64);
	h->index = index;
	h->size = size;
	h->checksum = onll_ckpt_sum(h, o->ckpt[s] + 64);
	pm_flush(o->ckpt[s], 64 + size);
	return 0;
}

static unsigned char *
onll_log_entry(const struct onll *o, const struct onll_slot *slot, uint64_t pos)
{
	return slot->log + (pos % o->log_entries) * o->entry_size;
}

static uint64_t
onll_entry_sum(const struct onll_entry_header *h)
{
	uint64_t seed = XXH3_64bits(h, offsetof(struct onll_entry_header, checksum));

	return XXH3_64bits_withSeed(h + 1, h->bytes, seed);
}

/* ---- execution trace (alg. 4.2) ---- */

static bool
onll_available(const struct onll_node *n)
{
	return atomic_load_explicit(&n->available, memory_order_acquire);
}

/* latestAvailable (alg. 4.2 line 15): newest node seen with its flag set */
static struct onll_node *
onll_latest_available(struct onll *o)
{
	struct onll_node *n = atomic_load_explicit(&o->tail, memory_order_acquire);

	while (!onll_available(n))
		n = n->next;
	return n;
}

/* insert (alg. 4.2 line 29): order @node after the current tail */
static void
onll_trace_insert(struct onll *o, struct onll_node *node)
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

static void
onll_count(struct onll_slot *slot, int counter, uint64_t n)
{
	_Atomic uint64_t *c = &slot->stats.n[counter];

	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
		memory_order_relaxed);
}

/* ---- reclamation of trace nodes ---- */

/* onll_reclaim_bound -- nodes with a smaller index are unreachable */
static uint64_t
onll_reclaim_bound(struct onll *o)
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
	 * became active meanwhile (see the top of the file). */
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

static int
onll_node_alloc(struct onll_thread *t, struct onll_node **out)
{
	struct onll_slot *slot = t->slot;
	struct onll_node *n;

	if (slot->free_nodes == NULL && slot->oldest != NULL) {
		uint64_t bound = onll_reclaim_bound(t->o);

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

/* ---- local views (sect. 4.8) ---- */

static void
onll_view_drop(struct onll_thread *t)
{
	if (t->state != NULL)
		t->o->type->state_free(t->o->type->ctx, t->state);
	t->state = NULL;
}

static void
onll_ckpt_lock(struct onll *o)
{
	int expected = 0;

	while (!atomic_compare_exchange_weak_explicit(&o->ckpt_busy, &expected, 1,
		memory_order_acquire, memory_order_relaxed)) {
		expected = 0;
		sched_yield();
	}
}

static bool
onll_ckpt_trylock(struct onll *o)
{
	int expected = 0;

	return atomic_compare_exchange_strong_explicit(&o->ckpt_busy, &expected, 1,
		memory_order_acquire, memory_order_relaxed);
}

static void
onll_ckpt_unlock(struct onll *o)
{
	atomic_store_explicit(&o->ckpt_busy, 0, memory_order_release);
}

/*
 * onll_view_rebuild -- load the latest durable checkpoint as @t's view.
 * Under ckpt_busy the checkpoint cannot change, and the view is published
 * before the next checkpoint index is (see onll_reclaim_bound).
 */
static int
onll_view_rebuild(struct onll_thread *t)
{
	struct onll *o = t->o;
	const struct onll_ckpt_header *h;
	void *state = NULL;
	int ret;

	onll_view_drop(t);
	onll_ckpt_lock(o);
	h = (const void *)o->ckpt[o->ckpt_slot];
	if (!onll_ckpt_valid(o, o->ckpt_slot)) {
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
		onll_count(t->slot, ST_REBUILDS, 1);
	}
	onll_ckpt_unlock(o);
	return ret;
}

/*
 * onll_view_advance -- apply to @t's view the trace ops after it up to and
 * including @upto (which must be at a later index). The trace links go from
 * newer to older, so the nodes are gathered first and applied oldest first.
 */
static int
onll_view_advance(struct onll_thread *t, struct onll_node *upto)
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
	onll_count(t->slot, ST_APPLIED, count);
	if (ret != 0) {
		onll_view_drop(t);
		return ret;
	}
	t->view = upto->idx;
	return 0;
}

/*
 * onll_op_enter -- mark @t inside an operation and make sure it has a view
 * whose trace nodes still exist. Pair with onll_op_exit().
 */
static int
onll_op_enter(struct onll_thread *t)
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
		onll_view_drop(t);
	return t->state != NULL ? 0 : onll_view_rebuild(t);
}

static void
onll_op_exit(struct onll_thread *t)
{
	atomic_store_explicit(&t->slot->active, 0, memory_order_release);
}

/* ---- log ring ---- */

/* onll_log_collect -- reuse the entries the latest checkpoint covers */
static void
onll_log_collect(struct onll_thread *t)
{
	struct onll_slot *slot = t->slot;
	uint64_t covered = atomic_load_explicit(&t->o->ckpt_index, memory_order_acquire);

	while (slot->log_head < slot->log_tail &&
	       slot->log_index[slot->log_head % t->o->log_entries] <= covered)
		slot->log_head++;
}

static uint64_t
onll_log_used(const struct onll_thread *t)
{
	return t->slot->log_tail - t->slot->log_head;
}

/*
 * onll_checkpoint_locked -- with ckpt_busy held: bring @t's view to the
 * newest available state, save it in the spare slot, fence, publish.
 */
static int
onll_checkpoint_locked(struct onll_thread *t)
{
	struct onll *o = t->o;
	struct onll_node *latest = onll_latest_available(o);
	unsigned spare = 1 - o->ckpt_slot;
	int ret = 0;

	if (latest->idx > t->view)
		ret = onll_view_advance(t, latest);
	if (ret == 0)
		atomic_store_explicit(&t->slot->view, t->view, memory_order_release);
	if (ret == 0 && t->view > atomic_load_explicit(&o->ckpt_index, memory_order_relaxed)) {
		ret = onll_ckpt_write(o, spare, t->state, t->view);
		if (ret == 0) {
			pm_fence();
			o->ckpt_slot = spare;
			atomic_store_explicit(&o->ckpt_index, t->view, memory_order_release);
			onll_count(t->slot, ST_CKPTS, 1);
			onll_count(t->slot, ST_CKPT_FENCES, 1);
		}
	}
	return ret;
}

int
onll_checkpoint(struct onll_thread *t)
{
	int ret;

	if (t == NULL)
		return -EINVAL;
	ret = onll_op_enter(t);
	if (ret == 0 && !onll_ckpt_trylock(t->o))
		ret = -EBUSY;
	else if (ret == 0) {
		ret = onll_checkpoint_locked(t);
		onll_ckpt_unlock(t->o);
	}
	onll_op_exit(t);
	return ret;
}

/*
 * onll_log_reserve -- make room for one entry in @t's log. When the log is
 * full, write a checkpoint (the newest available state covers every entry
 * of this thread, whose updates have all completed); wait only while
 * another thread is writing one.
 */
static int
onll_log_reserve(struct onll_thread *t)
{
	bool counted = false;

	for (;;) {
		int ret;

		onll_log_collect(t);
		if (onll_log_used(t) < t->o->log_entries)
			return 0;
		if (!counted)
			onll_count(t->slot, ST_LOG_FULL, 1);
		counted = true;
		if (!onll_ckpt_trylock(t->o)) {
			sched_yield();
			continue;
		}
		ret = onll_checkpoint_locked(t);
		onll_ckpt_unlock(t->o);
		if (ret != 0)
			return ret;
	}
}

/* ---- operations ---- */

static int
onll_op_check(const struct onll_thread *t, const void *op, size_t op_len)
{
	if (t == NULL || op == NULL || op_len == 0)
		return -EINVAL;
	return op_len > t->o->max_op_size ? -E2BIG : 0;
}

/*
 * onll_entry_fill -- write into @e the log entry of @node: its op, then the
 * ops of the fuzzy window before it (getFuzzyOps, alg. 4.2 line 6). Returns
 * the number of ops. The window holds fewer than max_threads nodes besides
 * @node (Prop. 4.5.2: each slot has at most one update in flight); the
 * bound only keeps a handle shared by two threads, against the rules, from
 * overrunning the entry.
 */
static uint32_t
onll_entry_fill(const struct onll_node *node, uint32_t node_max, unsigned char *e)
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
	for (const struct onll_node *n = node; nops < node_max && !onll_available(n); n = n->next) {
		struct onll_op_rec *rec = (void *)p;

		rec->len = n->op_len;
		rec->reserved = 0;
		memcpy(rec->bytes, n->op, n->op_len);
		p += sizeof(*rec) + onll_round(n->op_len, 8);
		nops++;
	}
	h->index = node->idx;
	h->nops = nops;
	h->bytes = (uint32_t)(p - (e + sizeof(*h)));
	h->reserved = 0;
	h->checksum = onll_entry_sum(h);
	return nops;
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
	ret = onll_op_enter(t);
	/* Refuse to grow a state no checkpoint can hold: its log entries
	 * could never be reused, and recovery could not save it. */
	if (ret == 0 && o->type->snapshot_size(o->type->ctx, t->state) > o->checkpoint_capacity)
		ret = -ENOSPC;
	if (ret == 0)
		ret = onll_log_reserve(t);
	if (ret == 0)
		ret = onll_node_alloc(t, &node);
	if (ret != 0) {
		onll_op_exit(t);
		return ret;
	}
	memcpy(node->op, op, op_len);
	node->op_len = (uint32_t)op_len;
	onll_trace_insert(o, node);

	/* From here on the update is ordered and must complete. */
	applied = 0;
	if (node->idx - 1 > t->view)
		applied = onll_view_advance(t, node->next);
	if (applied == 0) {
		applied = o->type->apply(o->type->ctx, t->state, op, op_len, result);
		if (applied == 0)
			t->view = node->idx;
		else
			onll_view_drop(t);
	}

	entry = onll_log_entry(o, slot, slot->log_tail);
	nops = onll_entry_fill(node, o->max_threads, entry);
	/* Piggy-back a checkpoint of the view (which now includes this
	 * update and the fuzzy ops it persists) on the same fence. */
	if (applied == 0 && onll_log_used(t) + 1 >= o->checkpoint_every && onll_ckpt_trylock(o)) {
		ckpt = onll_ckpt_write(o, 1 - o->ckpt_slot, t->state, t->view) == 0;
		if (!ckpt)
			onll_ckpt_unlock(o);
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
		onll_ckpt_unlock(o);
		onll_count(slot, ST_CKPTS, 1);
	}
	if (applied == 0)
		atomic_store_explicit(&slot->view, t->view, memory_order_release);
	onll_op_exit(t);
	onll_count(slot, ST_UPDATES, 1);
	onll_count(slot, ST_HELPED, nops - 1);
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
	int ret = onll_op_enter(t);

	if (ret == 0) {
		latest = onll_latest_available(t->o);
		if (latest->idx > t->view) {
			ret = onll_view_advance(t, latest);
			if (ret == 0)
				atomic_store_explicit(&t->slot->view, t->view,
					memory_order_release);
		}
	}
	onll_op_exit(t);
	if (ret == 0)
		onll_count(t->slot, ST_READS, 1);
	return ret;
}

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
	ret = onll_view_rebuild(t);
	if (ret != 0) {
		atomic_store_explicit(&t->slot->in_use, 0, memory_order_release);
		free(t);
		return pm_error_set(ret, "onll_thread_register: %s", pm_strerror(ret));
	}
	*out = t;
	return 0;
}

int
onll_thread_unregister(struct onll_thread **tp)
{
	struct onll_thread *t;

	if (tp == NULL || *tp == NULL)
		return 0;
	t = *tp;
	atomic_store_explicit(&t->slot->view, ONLL_VIEW_NONE, memory_order_release);
	onll_view_drop(t);
	free(t->scratch);
	atomic_store_explicit(&t->slot->in_use, 0, memory_order_release);
	free(t);
	*tp = NULL;
	return 0;
}

/* ---- statistics ---- */


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

uint64_t
onll_thread_last_index(const struct onll_thread *t)
{
	return t->last_index;
}

uint64_t
onll_recovered_index(const struct onll *o)
{
	return o->recovered_index;
}

/* ---- create, open (recovery, alg. 4.5), close ---- */

/* onll_area -- locate @area_off of @len bytes in @pool */
static int
onll_area(struct pm_pool *pool, uint64_t area_off, size_t len, void **out)
{
	if (area_off % 64 != 0)
		return -EINVAL;
	return pm_pool_ptr(pool, area_off, len, out) == 0 ? 0 : -ERANGE;
}

static void
onll_free(struct onll *o)
{
	if (o == NULL)
		return;
	for (unsigned i = 0; o->slots != NULL && i < o->max_threads; i++) {
		struct onll_slot *slot = &o->slots[i];
		struct onll_node *n, *next;

		for (n = slot->oldest; n != NULL; n = next) {
			next = n->owned;
			free(n);
		}
		for (n = slot->free_nodes; n != NULL; n = next) {
			next = n->owned;
			free(n);
		}
		free(slot->log_index);
	}
	free(o->slots);
	free(o->sentinel);
	free(o);
}

/*
 * onll_start -- let @o run from execution index @index, the checkpoint in
 * slot @ckpt_slot: the trace holds one available sentinel at @index.
 */
static void
onll_start(struct onll *o, uint64_t index, unsigned ckpt_slot)
{
	o->recovered_index = index;
	o->ckpt_slot = ckpt_slot;
	atomic_store(&o->ckpt_index, index);
	o->sentinel->idx = index;
}

/*
 * onll_alloc -- the volatile object for header @hdr (whose body must be
 * set), started at index 0 from slot 0.
 */
static int
onll_alloc(struct onll **out, struct pm_pool *pool, struct onll_pmem_header *hdr,
	const struct onll_type *type)
{
	/* aligned_alloc: the tail and checkpoint words have lines of their own. */
	struct onll *o = aligned_alloc(64, onll_round(sizeof(*o), 64));
	unsigned char *base = (unsigned char *)hdr;
	unsigned char *logs;

	if (o == NULL)
		return -ENOMEM;
	memset(o, 0, sizeof(*o));
	o->pool = pool;
	o->type = type;
	o->hdr = hdr;
	o->max_threads = hdr->max_threads;
	o->max_op_size = hdr->max_op_size;
	o->log_entries = hdr->log_entries;
	o->checkpoint_every = hdr->checkpoint_every;
	o->entry_size = onll_entry_size(o->max_threads, o->max_op_size);
	o->checkpoint_capacity = hdr->checkpoint_capacity;
	o->node_size = sizeof(struct onll_node) + o->max_op_size;
	o->ckpt[0] = base + 64;
	o->ckpt[1] = o->ckpt[0] + onll_ckpt_slot_size(o->checkpoint_capacity);
	logs = o->ckpt[1] + onll_ckpt_slot_size(o->checkpoint_capacity);
	atomic_init(&o->ckpt_index, 0);
	atomic_init(&o->floor, 0);
	o->reclaim_lag = (uint64_t)o->max_threads * o->log_entries;
#ifdef ONLL_NO_MEMBARRIER
	/* Test builds only (//onll:onll_seqcst): the seq_cst handshake, so its
	 * tests run that path on kernels that have membarrier(2). */
	o->membarrier = false;
#else
	o->membarrier = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
	atomic_init(&o->ckpt_busy, 0);
	o->slots = aligned_alloc(64, sizeof(*o->slots) * o->max_threads);
	o->sentinel = calloc(1, o->node_size);
	if (o->slots == NULL || o->sentinel == NULL) {
		free(o->slots);
		o->slots = NULL;
		onll_free(o);
		return -ENOMEM;
	}
	memset(o->slots, 0, sizeof(*o->slots) * o->max_threads);
	for (unsigned i = 0; i < o->max_threads; i++) {
		struct onll_slot *slot = &o->slots[i];

		atomic_init(&slot->view, ONLL_VIEW_NONE);
		slot->log = logs + (size_t)i * o->log_entries * o->entry_size;
		slot->log_index = calloc(o->log_entries, sizeof(uint64_t));
		if (slot->log_index == NULL) {
			onll_free(o);
			return -ENOMEM;
		}
	}
	atomic_init(&o->sentinel->available, true);
	atomic_init(&o->tail, o->sentinel);
	*out = o;
	return 0;
}

int
onll_create(struct onll **out, struct pm_pool *pool, uint64_t area_off,
	const struct onll_config *cfg, const struct onll_type *type)
{
	struct onll_config c;
	struct onll_pmem_header *hdr;
	struct onll_ckpt_header *ck;
	struct onll *o = NULL;
	void *area, *state = NULL;
	int ret;

	pm_error_clear();
	if (out == NULL || pool == NULL || !onll_type_ok(type) || onll_config_check(cfg, &c) != 0)
		return pm_error_set(-EINVAL, "onll_create: %s", pm_strerror(-EINVAL));
	ret = onll_area(pool, area_off, onll_area_size(&c), &area);
	if (ret != 0)
		return pm_error_set(ret, "onll_create: %s", pm_strerror(ret));
	hdr = area;

	/* Invalidate the header first, so a crash while formatting a reused
	 * area reads as "no object", never as the old object half-reset; the
	 * body describes the layout the object is built on (sealed last). */
	pm_area_invalidate(&hdr->area);
	hdr->max_threads = c.max_threads;
	hdr->max_op_size = c.max_op_size;
	hdr->log_entries = c.log_entries;
	hdr->checkpoint_every = c.checkpoint_every;
	hdr->checkpoint_capacity = c.checkpoint_capacity;
	hdr->type_id = onll_type_id(type);
	ret = onll_alloc(&o, pool, hdr, type);
	if (ret != 0)
		return pm_error_set(ret, "onll_create: %s", pm_strerror(ret));

	ret = type->state_new(type->ctx, &state);
	if (ret == 0) {
		ret = onll_ckpt_write(o, 0, state, 0);
		type->state_free(type->ctx, state);
	}
	if (ret != 0) {
		onll_free(o);
		return pm_error_set(ret, "onll_create: %s", pm_strerror(ret));
	}
	/* Slot 1 and every log entry start invalid (a stale entry from an
	 * earlier use of the area would be replayed otherwise). */
	ck = (void *)o->ckpt[1];
	ck->index = 0;
	ck->size = UINT64_MAX;
	ck->checksum = 0;
	pm_flush(ck, sizeof(*ck));
	for (unsigned i = 0; i < o->max_threads; i++) {
		for (uint64_t pos = 0; pos < o->log_entries; pos++) {
			struct onll_entry_header *e = (void *)onll_log_entry(o, &o->slots[i], pos);

			memset(e, 0, sizeof(*e));
			pm_flush(e, sizeof(*e));
		}
	}
	pm_fence();

	pm_area_seal(&hdr->area, &onll_area_type, onll_area_size(&c));
	*out = o;
	return 0;
}

/*
 * onll_entry_valid -- whether @e is a whole log entry of @o whose op
 * records all lie inside it.
 */
static bool
onll_entry_valid(const struct onll *o, const unsigned char *e)
{
	const struct onll_entry_header *h = (const void *)e;
	size_t off = 0;

	if (h->index == 0 || h->nops == 0 || h->nops > o->max_threads ||
	    h->bytes > o->entry_size - sizeof(*h) || h->checksum != onll_entry_sum(h))
		return false;
	for (uint32_t k = 0; k < h->nops; k++) {
		const struct onll_op_rec *rec = (const void *)(e + sizeof(*h) + off);

		if (off + sizeof(*rec) > h->bytes || rec->len == 0 || rec->len > o->max_op_size ||
		    off + sizeof(*rec) + onll_round(rec->len, 8) > h->bytes)
			return false;
		off += sizeof(*rec) + onll_round(rec->len, 8);
	}
	return off == h->bytes;
}

/*
 * onll_recover -- alg. 4.5 from the newest valid checkpoint: gather from
 * every valid log entry the ops after it by execution index, and replay
 * them in order until the first index no log holds. A later index after
 * such a gap cannot occur (an entry holds every op back to an available
 * one, and an available op's own entry was durable), so it means damage.
 */
static int
onll_recover(struct onll *o, unsigned *ckpt_slot, void **state_out, uint64_t *index_out)
{
	const struct onll_type *type = o->type;
	const struct onll_op_rec **ops = NULL;
	unsigned char *logs = o->ckpt[1] + onll_ckpt_slot_size(o->checkpoint_capacity);
	size_t nentries = (size_t)o->max_threads * o->log_entries;
	const struct onll_ckpt_header *ck;
	uint64_t c, last = 0, n;
	void *state = NULL;
	int valid0 = onll_ckpt_valid(o, 0), valid1 = onll_ckpt_valid(o, 1);
	int ret;

	if (!valid0 && !valid1)
		return PM_E_CORRUPT;
	*ckpt_slot = (!valid0 || (valid1 &&
		((const struct onll_ckpt_header *)o->ckpt[1])->index >
		((const struct onll_ckpt_header *)o->ckpt[0])->index)) ? 1 : 0;
	ck = (const void *)o->ckpt[*ckpt_slot];
	c = ck->index;
	ret = type->snapshot_load(type->ctx, o->ckpt[*ckpt_slot] + 64, (size_t)ck->size, &state);
	if (ret != 0)
		return ret == -EINVAL ? PM_E_CORRUPT : ret;

	for (size_t i = 0; i < nentries; i++) {
		const struct onll_entry_header *h = (const void *)(logs + i * o->entry_size);

		if (onll_entry_valid(o, (const void *)h) && h->index > last)
			last = h->index;
	}
	if (last > c) {
		/* At most every entry's ops are after c: the array is bounded. */
		if (last - c > (uint64_t)nentries * o->max_threads) {
			ret = PM_E_CORRUPT;
			goto out;
		}
		ops = calloc((size_t)(last - c), sizeof(*ops));
		if (ops == NULL) {
			ret = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < nentries && last > c; i++) {
		const unsigned char *e = logs + i * o->entry_size;
		const struct onll_entry_header *h = (const void *)e;
		size_t off = sizeof(*h);

		if (!onll_entry_valid(o, e))
			continue;
		for (uint32_t k = 0; k < h->nops && h->index - k > c; k++) {
			const struct onll_op_rec *rec = (const void *)(e + off);

			ops[h->index - k - c - 1] = rec;
			off += sizeof(*rec) + onll_round(rec->len, 8);
		}
	}
	for (n = c; n < last && ops[n - c] != NULL; n++) {
		ret = type->apply(type->ctx, state, ops[n - c]->bytes, ops[n - c]->len, NULL);
		if (ret != 0)
			goto out;
	}
	if (n < last)
		ret = PM_E_CORRUPT;
out:
	free(ops);
	if (ret != 0) {
		type->state_free(type->ctx, state);
		return ret;
	}
	*state_out = state;
	*index_out = n;
	return 0;
}

int
onll_open(struct onll **out, struct pm_pool *pool, uint64_t area_off,
	const struct onll_type *type)
{
	struct onll_pmem_header *hdr;
	struct onll_config c;
	struct onll *o = NULL;
	unsigned ckpt_slot;
	uint64_t index;
	void *area, *state;
	int ret;

	pm_error_clear();
	if (out == NULL || pool == NULL || !onll_type_ok(type))
		return pm_error_set(-EINVAL, "onll_open: %s", pm_strerror(-EINVAL));
	ret = onll_area(pool, area_off, sizeof(*hdr), &area);
	if (ret != 0)
		return pm_error_set(ret, "onll_open: %s", pm_strerror(ret));
	hdr = area;
	ret = pm_area_check(&hdr->area, &onll_area_type, "onll_open");
	if (ret != 0)
		return ret;
	if (hdr->type_id != onll_type_id(type))
		return pm_error_set(PM_E_LAYOUT, "onll_open: the area holds an object of "
			"another type than %s", type->name);
	onll_config_init(&c);
	c.max_threads = hdr->max_threads;
	c.max_op_size = hdr->max_op_size;
	c.log_entries = hdr->log_entries;
	c.checkpoint_every = hdr->checkpoint_every;
	c.checkpoint_capacity = hdr->checkpoint_capacity;
	if (onll_config_check(&c, &c) != 0 || hdr->area.area_size != onll_area_size(&c) ||
	    onll_area(pool, area_off, hdr->area.area_size, &area) != 0)
		return pm_error_set(PM_E_CORRUPT, "onll_open: %s", pm_strerror(PM_E_CORRUPT));

	ret = onll_alloc(&o, pool, hdr, type);
	if (ret != 0)
		return pm_error_set(ret, "onll_open: %s", pm_strerror(ret));
	ret = onll_recover(o, &ckpt_slot, &state, &index);
	if (ret == 0) {
		const struct onll_ckpt_header *ck = (const void *)o->ckpt[ckpt_slot];

		/* Make the recovered state the checkpoint, so every log entry
		 * is covered and the logs start empty. Written to the other
		 * slot: a crash now leaves the old checkpoint and logs intact
		 * and recovery finds the same state again. */
		if (index > ck->index) {
			ckpt_slot = 1 - ckpt_slot;
			ret = onll_ckpt_write(o, ckpt_slot, state, index);
			if (ret == 0)
				pm_fence();
		}
		type->state_free(type->ctx, state);
	}
	if (ret != 0) {
		onll_free(o);
		return pm_error_set(ret, "onll_open: %s", pm_strerror(ret));
	}
	onll_start(o, index, ckpt_slot);
	*out = o;
	return 0;
}

int
onll_close(struct onll **op)
{
	struct onll *o;

	pm_error_clear();
	if (op == NULL || *op == NULL)
		return 0;
	o = *op;
	for (unsigned i = 0; i < o->max_threads; i++)
		if (atomic_load(&o->slots[i].in_use))
			return pm_error_set(-EBUSY, "onll_close: %s", pm_strerror(-EBUSY));
	onll_free(o);
	*op = NULL;
	return 0;
}
