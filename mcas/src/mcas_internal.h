/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcas/src/mcas_internal.h -- what the MCAS core (mcas.c) shares with the
 * algorithms (aopt.c, harris.c, pmwcas.c). Private to the mcas module.
 *
 * The core owns everything the algorithms have in common: building and
 * sorting descriptors, the per-thread descriptor pools, the reclamation
 * pipeline, the persistent area and its header. An algorithm supplies an
 * mcas_algo_ops table. Epochs and grace periods are reclaim/'s epoch
 * flavour (reclaim/reclaim.h), which several instances may share.
 *
 * References. A target word holding a descriptor reference stores
 * (address of the referenced record - m->base) | mark. m->base is 0 for a
 * volatile instance and the pool's base for a persistent one, so the same
 * code stores raw pointers in DRAM and pool-relative offsets in a pool that
 * is mapped elsewhere after a restart (DESIGN.md, pool-relative pointers).
 * The conversions are pm/ptr.h's branch-free pm_off_from_addr() and
 * pm_off_to_addr(): they run on every target word access.
 */
#ifndef MCAS_INTERNAL_H
#define MCAS_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mcas/mcas.h>
#include <pm/ptr.h>
#include <reclaim/reclaim.h>

/* Descriptor status values (thesis Listing 5.1 StatusType). */
#define MCAS_ST_ACTIVE 0u
#define MCAS_ST_SUCCEEDED 1u
#define MCAS_ST_FAILED 2u
/* Persistent AOPT and PMwCAS: the finalized status may not be durable yet. */
#define MCAS_ST_DIRTY 4u
#define MCAS_ST_MASK 3u

/* One target of an operation (thesis Listing 5.1 WordDescriptor). */
struct mcas_word {
	uint64_t addr;   /* the target, as offset from m->base */
	uint64_t old;    /* expected value */
	uint64_t new_;   /* new value */
	uint64_t parent; /* the owning descriptor, as offset from m->base */
};

/* An operation descriptor record (thesis Listing 5.1 MCASDescriptor). Records are
 * 64-byte aligned so the status and header share one cache line and the
 * words follow in whole lines. In a persistent instance the records live in
 * the pool area; only status, n and w[] are meaningful after a crash. */
struct mcas_rec {
	_Atomic uint64_t status;
	uint32_t n;      /* number of targets */
	uint32_t slot;   /* owning thread slot */
	uint64_t spare[6];
	struct mcas_word w[MCAS_MAX_WORDS];
};

#define MCAS_DESC_HEAD 64 /* bytes before w[] */

/* Algorithm interface. Every function runs on the thread @t owns. */
struct mcas_algo_ops {
	const char *name;
	uint64_t value_mask;     /* low bits the algorithm's references use */
	bool volatile_ok;
	bool persistent_ok;
	/* Run @d: sorted, parent offsets set, durable if persistent; called
	 * inside @t's epoch. Return true if the MCAS succeeded. */
	bool (*execute)(struct mcas_thread *t, struct mcas_rec *d);
	/* The value of target word @addr; protects itself with
	 * mcas__protect() before dereferencing a descriptor. */
	uint64_t (*read)(struct mcas_thread *t, const uint64_t *addr);
	/* One grace period after @d was retired: make every target word that
	 * still refers to @d hold its final value, counting CASes in
	 * detach_cas; a persistent instance also flushes each target (the
	 * core fences once per batch). Every record then waits a second
	 * grace period before reuse, even where the algorithm's own cleanup
	 * left nothing to detach: a late helper may still install and undo a
	 * reference after the owner returned, and a reader may have loaded
	 * it (harris.c and pmwcas.c explain their cases). */
	void (*detach)(struct mcas_thread *t, struct mcas_rec *d);
	/* Recovery of one descriptor of a persistent instance, alone in the
	 * process (no other thread runs): every target word that refers to @d
	 * gets its final value (old unless the durable status says succeeded)
	 * and is flushed. The core fences after all descriptors. Must tolerate
	 * garbage in a descriptor no word refers to. */
	void (*recover)(struct mcas *m, struct mcas_rec *d);
};

extern const struct mcas_algo_ops mcas__aopt_ops;
extern const struct mcas_algo_ops mcas__harris_ops;
extern const struct mcas_algo_ops mcas__pmwcas_ops;

/* A retired thing waiting for grace periods: a descriptor (fn == NULL) or a
 * user object. */
struct mcas_limbo_entry {
	void *obj;
	mcas_free_fn fn;
	void *ctx;
};

/* A stage of the reclamation pipeline. A thread has at most
 * descs_per_thread records in flight, so an array whose capacity is at least
 * users + descs_per_thread always has room for the next record: mcas_retire()
 * grows it before it appends a user object, and the operation path appends
 * records without allocating. */
struct mcas_limbo {
	struct mcas_limbo_entry *e;
	size_t n, cap;
	size_t users; /* entries that are user objects (fn != NULL) */
};

struct mcas {
	const struct mcas_algo_ops *ops;
	enum mcas_algorithm alg;
	bool persistent;
	uintptr_t base;          /* 0, or the pool's base address */
	size_t size;             /* persistent: the pool's size */
	struct pm_pool *pool;    /* persistent: the pool */
	struct mcas_pmem_header *hdr; /* persistent: the area's header */
	unsigned max_threads;
	unsigned descs_per_thread;
	unsigned reclaim_batch;
	unsigned read_detach_one_in;
	struct mcas_rec *descs; /* max_threads * descs_per_thread records */
	/* Each registered thread's epoch word: the flavour given in the
	 * config, or the process's default one (default_epochs: this
	 * instance holds one of its references, mcas.c). */
	struct reclaim_epochs *epochs;
	bool default_epochs;
	_Atomic int *slot_used;  /* max_threads: descriptor pools taken */
	_Atomic unsigned slots_hwm; /* pools ever taken: mcas_stats_total stops here */
	struct mcas_thread **threads; /* registered handle per slot */
	_Atomic int nregistered;
	/* stats_lock protects retired_stats and the threads[] entries (it
	 * nests inside nothing): mcas_thread_register publishes a handle and
	 * mcas_thread_unregister folds its counts into retired_stats and
	 * clears the entry in one critical section, so mcas_stats_total
	 * counts every thread exactly once and never reads a freed handle. */
	struct mcas_stats retired_stats;
	_Atomic int stats_lock;
};

/* The handle mcas_desc_begin() returns: the record being built. One per
 * thread, embedded in it. */
struct mcas_desc {
	struct mcas_thread *t;
	struct mcas_rec *rec;
};

struct mcas_thread {
	struct mcas *m;
	struct mcas_desc building; /* rec != NULL: a descriptor is begun */
	unsigned slot;           /* the descriptor pool's index */
	struct reclaim_epochs_thread *et; /* epoch word: guards + operations */
	bool read_entered;       /* mcas__protect() entered the epoch for a read */
	struct mcas_rec *descs; /* this slot's records */
	uint32_t *free;          /* stack of free record indices */
	unsigned nfree;
	/* Reclamation pipeline (thesis sect. 5.6): r0 retired since the last
	 * snapshot, r1 retired before it (waiting for the first grace period),
	 * r2 detached before it (waiting for the second). */
	struct mcas_limbo r0, r1, r2;
	struct reclaim_epochs_grace grace; /* started at the last snapshot */
	size_t next_scan;        /* r0 size that triggers the next scan */
	uint64_t rng;
	/* struct mcas_stats, one word per counter. Only the owner writes
	 * (mcas__stat_add); mcas_stats_total reads them from other threads,
	 * so every access is atomic, and relaxed: a counter is a statistic
	 * that orders nothing. */
	_Atomic uint64_t stats[sizeof(struct mcas_stats) / sizeof(uint64_t)];
};

_Static_assert(sizeof(struct mcas_stats) % sizeof(uint64_t) == 0,
	"struct mcas_stats holds only uint64_t counters");

/* mcas__stat_add -- add @d to the owner's counter @field of struct
 * mcas_stats. A load and a store, not a read-modify-write: the owner is the
 * only writer, so no increment is lost, and the hot path pays no LOCK. */
#define mcas__stat_add(t, field, d) \
	mcas__counter_add(&(t)->stats[offsetof(struct mcas_stats, field) / sizeof(uint64_t)], (d))

static inline void
mcas__counter_add(_Atomic uint64_t *c, uint64_t d)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + d,
		memory_order_relaxed);
}

/* ---- references ---- */

/* mcas__ref -- the word a target holds to refer to record @p with @mark */
static inline uint64_t
mcas__ref(const struct mcas *m, const void *p, uint64_t mark)
{
	return pm_off_from_addr(m->base, p) | mark;
}

/* mcas__deref -- the record a reference word @w (any mark) points to */
static inline void *
mcas__deref(const struct mcas *m, uint64_t w)
{
	return pm_off_to_addr(m->base, w & ~m->ops->value_mask);
}

/* mcas__target -- the target word of @w */
static inline _Atomic uint64_t *
mcas__target(const struct mcas *m, const struct mcas_word *w)
{
	return pm_off_to_addr(m->base, w->addr);
}

/* mcas__parent -- the descriptor @w belongs to */
static inline struct mcas_rec *
mcas__parent(const struct mcas *m, const struct mcas_word *w)
{
	return pm_off_to_addr(m->base, w->parent);
}

/* mcas__cas -- the counted, crash-simulator-visible CAS on a target or status
 * word (pm_cas). */
bool mcas__cas(_Atomic uint64_t *word, uint64_t expected, uint64_t desired);

/* ---- epochs ---- */

/* mcas__epoch_enter -- make the thread's epoch odd (outermost level only);
 * sequentially consistent, so the loads that follow cannot be satisfied
 * before a scanner can see the announcement (reclaim_epochs_enter()). */
static inline void
mcas__epoch_enter(struct mcas_thread *t)
{
	reclaim_epochs_enter(t->et);
}

/* mcas__epoch_exit -- leave one level; the outermost makes the epoch even
 * with a release store (reclaim_epochs_exit()). */
static inline void
mcas__epoch_exit(struct mcas_thread *t)
{
	reclaim_epochs_exit(t->et);
}

/* mcas__protect -- called by a read path that found a descriptor reference
 * outside any epoch: announce, so the caller must load the word again
 * before dereferencing. Return: true if the caller must re-load (it was not
 * protected before); mcas_read() leaves the epoch on return (read_entered).
 * Only the read paths meet a descriptor outside an epoch: execute runs
 * inside one. */
static inline bool
mcas__protect(struct mcas_thread *t)
{
	if (reclaim_epochs_inside(t->et))
		return false;
	mcas__epoch_enter(t);
	t->read_entered = true;
	return true;
}

/* mcas__others_outside_epochs -- efficient reads (thesis sect. 5.6.2): true if no
 * other thread is inside an epoch now, so none can still be helping an
 * operation the caller saw finalized (a thread entering later sees it
 * finalized too); false means "do not detach this time". */
static inline bool
mcas__others_outside_epochs(struct mcas_thread *t)
{
	return reclaim_epochs_others_outside(t->et);
}

/* mcas__random_one_in -- true with probability 1/@n (per-thread xorshift;
 * @n 0: never). Inline, and a multiplication instead of a 64-bit modulo:
 * an AOPT read that meets a descriptor tosses it (sect. 5.6.2). */
static inline bool
mcas__random_one_in(struct mcas_thread *t, unsigned n)
{
	uint64_t x = t->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	t->rng = x;
	/* x < 2^64 / n, the top word of x * n being 0 */
	return n != 0 && (uint64_t)(((unsigned __int128)x * n) >> 64) == 0;
}

#endif /* MCAS_INTERNAL_H */
