/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/reclaim_internal.h -- what the registry (domain.c) shares with
 * the schemes (qsbr.c, ebr.c, hazard.c, qsense.c, urcu.c), the global epoch
 * (epoch.c) and the roosters (roosters.c). Private to the reclaim module.
 *
 * A domain owns a fixed array of max_threads slots, allocated by
 * reclaim_domain_new() and never moved. A slot is a registered thread's whole state; its first member
 * is the public struct reclaim_thread, so a handle converts back to its slot
 * with a cast. The hazard pointers of all slots live in one separate array,
 * hp_stride pointers per slot, so that a scan reads them in one sweep.
 *
 * Every retired node sits in exactly one place until it is handed to its free
 * function: the retired list of the slot that retired or adopted it, the
 * domain's orphan piles, or (urcu) a batch queued to liburcu. Moving nodes
 * between these places never frees or duplicates one, which is what makes
 * "freed exactly once" hold across unregister, eviction and delete.
 */
#ifndef RECLAIM_INTERNAL_H
#define RECLAIM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <reclaim/reclaim.h>

/*
 * Memory model. The code is written for x86-64 and relies on it: TSO (one
 * global order of stores; a store leaves the store buffer in order, and a
 * locked instruction or a context switch drains the buffer), which is what
 * Cadence and QSense build on (hazard.c, roosters.c) and what no C11
 * construct expresses. Where a C11 pattern can say the same thing at no
 * cost it does (reclaim__store_fenced(), seq_cst loads on the scan side),
 * but the whole has been reasoned about, and tested, on x86-64 only.
 */
#if !defined(__x86_64__)
#error "reclaim/ assumes x86-64 TSO (see reclaim/src/reclaim_internal.h, Memory model)"
#endif

#define RECLAIM__CACHELINE 64

/* Slot states, in the low byte of reclaim__slot.sw; the upper bits count
 * claims (a generation), so that a CAS on sw also fails if the slot changed
 * hands since it was read. */
enum {
	RECLAIM__FREE,     /* unused */
	RECLAIM__CLAIMED,  /* a thread is registering into it */
	RECLAIM__ACTIVE,   /* registered */
	RECLAIM__LEAVING,  /* its owner is unregistering */
	RECLAIM__EVICTING, /* another thread is evicting it */
	RECLAIM__EVICTED,  /* its owner died; reusable */
};
#define RECLAIM__SW_STATE(sw) ((unsigned)((sw) & 0xff))
#define RECLAIM__SW_GEN(sw) ((sw) >> 8)
#define RECLAIM__SW(gen, state) (((uint64_t)(gen) << 8) | (state))

/*
 * The epoch word of a slot (QSBR, QSense, EBR): (epoch << 1) | ACTIVE. A slot
 * blocks an epoch advance only while ACTIVE is set and its epoch differs from
 * the global one. QSBR and QSense keep ACTIVE set while the thread is online
 * (every instant between two quiescent states is a critical section); EBR
 * sets it only inside an operation. 0 is "never blocks".
 */
#define RECLAIM__EPOCH_ACTIVE 1u

/* One retired node. */
struct reclaim__entry {
	void *node;
	reclaim_free_fn fn; /* NULL: free(node) */
	void *ctx;
	uint64_t stamp;     /* CLOCK_MONOTONIC ns at retire (Cadence, QSense) */
	uint64_t tag;       /* global epoch at retire (QSBR, QSense, EBR) */
};

/*
 * A growable array of retired nodes with its header in front, so that a
 * whole list changes hands (unregister, eviction, adoption) by moving one
 * pointer, without allocating. len is written by the list's owner with
 * release stores and read with acquire by an evictor, which thereby sees
 * every entry (the owner is dead by then, but the C and TSan memory models
 * still want the edge).
 */
struct reclaim__pile {
	struct reclaim__pile *next; /* in the domain's orphan stack */
	_Atomic size_t len;
	size_t cap;
	uint64_t min_tag;           /* lowest tag in e[0..len) */
	struct reclaim__entry e[];
};

/* Per-slot counters. Each is written by one thread at a time (the slot's
 * owner; a slot passes to its next owner with a release/acquire pair on sw),
 * with relaxed loads and stores (no lock prefix), and read by
 * reclaim_domain_stats(). They are never reset: a slot's counters add up all
 * its owners, so nothing is lost when threads leave. */
struct reclaim__counters {
	_Atomic uint64_t retired;
	_Atomic uint64_t freed;
	_Atomic uint64_t quiescent_states;
	_Atomic uint64_t epochs;
	_Atomic uint64_t scans;
	_Atomic uint64_t fences; /* EBR op_begin (HP counts in the handle) */
	_Atomic uint64_t to_fallback;
	_Atomic uint64_t to_fast;
};

struct reclaim__slot {
	struct reclaim_thread pub; /* first: handles are slot pointers */
	struct reclaim_domain *d;
	unsigned idx;

	/* Read by other threads' grace periods, presence checks and
	 * evictions; written rarely (every Q operations at most). */
	_Alignas(RECLAIM__CACHELINE) _Atomic uint64_t sw; /* state | gen */
	_Atomic uint64_t epoch;     /* (epoch << 1) | RECLAIM__EPOCH_ACTIVE */
	_Atomic unsigned present;   /* QSense presence flag */
	_Atomic int tid;            /* kernel thread id of the owner */
	_Atomic uint64_t start;     /* its start time (/proc stat field 22),
	                             * 0 if unknown: then never evicted */
	/* pthread_self() of the owner: the cheap check, in the slow paths,
	 * that a handle still names its caller's registration (domain.c). */
	_Atomic uintptr_t owner;

	/* Owner-private. */
	/* The retired list, or NULL. Atomic only because an evictor takes
	 * it from a dead owner (release on every change, acquire there). */
	_Alignas(RECLAIM__CACHELINE) struct reclaim__pile *_Atomic ret;
	void **scratch;             /* hazard snapshot, K * max_threads */
	unsigned retires;           /* retires since the last scan/attempt */
	unsigned prev_mode;         /* QSense prev_seen_fallback_flag */
	bool offline;               /* between offline() and online() */
	unsigned lag_idx;           /* lagging slot being timed, or UINT32_MAX */
	uint64_t lag_gen;           /* ...its generation */
	uint64_t lag_since;         /* ...first seen lagging, ns */
	struct reclaim__counters st;
	_Atomic uint64_t inflight;  /* urcu: nodes queued to call_rcu */
};

/* One rooster thread (Alg. 6.3's context-switch source), pinned to a CPU;
 * wake is written only while it runs on that CPU (roosters.c). */
struct reclaim__rooster {
	_Alignas(RECLAIM__CACHELINE) _Atomic uint64_t wake; /* last wake, ns */
	_Atomic uint64_t wakeups;
	struct reclaim_domain *d;
	pthread_t thread;
	int cpu;
	bool resets_presence;
};

/* What distinguishes the schemes. Every hook runs on the slot's owner. */
struct reclaim__scheme {
	unsigned hp_mode;   /* RECLAIM__HP_* */
	bool on_begin;      /* reclaim_op_begin() calls op_begin */
	bool on_end;        /* every reclaim_op_end() calls op_end */
	bool uses_epoch;    /* keeps the epoch word and tags */
	bool uses_clock;    /* timestamps retired nodes */
	bool uses_roosters;
	bool evictable;     /* dead threads may be evicted (not urcu, whose
	                     * own registry would still wait for them) */
	/* Thread joins (after the slot is set up and published ACTIVE,
	 * before its first operation: domain.c explains the order) and
	 * leaves (between operations, before its pile goes to the orphans). */
	void (*join)(struct reclaim__slot *s);
	void (*leave)(struct reclaim__slot *s);
	void (*offline)(struct reclaim__slot *s);
	void (*online)(struct reclaim__slot *s);
	void (*op_begin)(struct reclaim__slot *s);
	/* Called every Q operations, or after every one if on_end. */
	void (*op_end)(struct reclaim__slot *s);
	/* After a node was appended to s->ret. */
	void (*retired)(struct reclaim__slot *s);
	/* reclaim_drain(): returns what this thread still waits for. */
	size_t (*drain)(struct reclaim__slot *s);
};

extern const struct reclaim__scheme reclaim__none_scheme;
extern const struct reclaim__scheme reclaim__qsbr_scheme;
extern const struct reclaim__scheme reclaim__ebr_scheme;
extern const struct reclaim__scheme reclaim__hp_scheme;
extern const struct reclaim__scheme reclaim__cadence_scheme;
extern const struct reclaim__scheme reclaim__qsense_scheme;
extern const struct reclaim__scheme reclaim__urcu_scheme;

struct reclaim_domain {
	struct reclaim_config cfg;  /* as given; R and C of 0 are resolved
	                             * at each use (reclaim__scan_threshold) */
	const struct reclaim__scheme *scheme;
	uint64_t eps_ns;
	uint64_t liveness_ns;
	/* /proc/self/task (O_PATH), opened by reclaim_domain_new() so that
	 * a later chroot or unmount cannot make live threads look dead; -1 if
	 * it could not be opened, and then no thread is ever evicted. Written
	 * only by reclaim_domain_new(), reclaim_domain_delete() and
	 * reclaim__test_task_dir(). */
	int task_dir;
	unsigned hp_stride;         /* hazard pointers per slot, whole lines */
	struct reclaim__slot *slots;
	void **hazards;             /* max_threads * hp_stride */

	/* Slots [0, hwm) have been claimed at least once; scans stop there.
	 * Only grows. Grace periods and hazard scans load hwm (and grace
	 * periods each slot's sw) with seq_cst (an HP scan after its seq_cst
	 * fence; grace periods and Cadence scans issue no fence): the
	 * store-load pattern with the claim's seq_cst CAS of hwm, the
	 * seq_cst store of ACTIVE and the fence that follows the newcomer's
	 * first publication (reclaim__store_fenced()). The loads are acquire
	 * too, so a slot seen ACTIVE is seen set up. Statistics and presence
	 * checks need only that, and use acquire. */
	_Alignas(RECLAIM__CACHELINE) _Atomic unsigned hwm;
	_Atomic unsigned nregistered;
	_Atomic uint64_t evicted;
	_Atomic uint64_t liveness_checks;
	_Atomic uint64_t pending_max;
	_Atomic uint64_t freed_async; /* by liburcu's callbacks (urcu.c) */

	/* The global epoch (QSBR, QSense, EBR); its own line, as every
	 * retire reads it. */
	_Alignas(RECLAIM__CACHELINE) _Atomic uint64_t epoch;
	/* QSense fallback flag: RECLAIM_MODE_FAST or _FALLBACK. */
	_Alignas(RECLAIM__CACHELINE) _Atomic unsigned mode;

	/* orphan_lock protects orphans, a stack of piles handed over by
	 * threads that left or were evicted. It nests inside nothing and
	 * nothing but malloc/free runs under it. norphans mirrors the number
	 * of entries, so that the common "none" check takes no lock. */
	_Alignas(RECLAIM__CACHELINE) pthread_mutex_t orphan_lock;
	struct reclaim__pile *orphans;
	_Atomic size_t norphans;

	/* Roosters (Cadence, QSense). rooster_lock protects rooster_stop
	 * and is what rooster_cond waits with; a rooster holds it only
	 * while not sleeping. */
	pthread_mutex_t rooster_lock;
	pthread_cond_t rooster_cond;
	bool rooster_stop;
#ifdef RECLAIM_TESTING
	/* reclaim__test_hold_roosters(): while rooster_hold, a rooster that
	 * wakes records nothing and parks (rooster_parked counts them). */
	bool rooster_hold;
	unsigned rooster_parked;
#endif
	unsigned nroosters;
	struct reclaim__rooster *roosters;
};

static inline struct reclaim__slot *
reclaim__slot_of(struct reclaim_thread *t)
{
	return (struct reclaim__slot *)t;
}

/* reclaim__now -- CLOCK_MONOTONIC in ns */
uint64_t reclaim__now(void);

/*
 * reclaim__store_fenced -- store @v to @p (release), then a full fence: a
 * publication (an epoch word) that must be visible before the caller's next
 * loads of shared nodes, the store side of a store-load (Dekker) pattern.
 * A seq_cst fence is what C11 needs for that; on x86-64 it is one locked
 * instruction, as cheap as the xchg of a seq_cst store. GCC's
 * ThreadSanitizer rejects atomic_thread_fence() (-Wtsan, an error here) and
 * does not model store-load order anyway, so under TSan the store itself
 * is seq_cst, the same xchg on x86-64.
 */
static inline void
reclaim__store_fenced(_Atomic uint64_t *p, uint64_t v)
{
#if defined(__SANITIZE_THREAD__)
	atomic_store_explicit(p, v, memory_order_seq_cst);
#else
	atomic_store_explicit(p, v, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* reclaim__stat_add -- bump an owner-written counter (plain load + store) */
static inline void
reclaim__stat_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
		memory_order_relaxed);
}

/* Effective R and C for the domain's current high-water mark. */
unsigned reclaim__scan_threshold(const struct reclaim_domain *d);
unsigned reclaim__fallback_threshold(const struct reclaim_domain *d);

/* reclaim__ret_len -- length of s's retired list (owner) */
static inline size_t
reclaim__ret_len(const struct reclaim__slot *s)
{
	struct reclaim__pile *p = atomic_load_explicit(&s->ret, memory_order_relaxed);

	return p ? atomic_load_explicit(&p->len, memory_order_relaxed) : 0;
}

/* reclaim__pile_append -- add @e to s's list; false if it cannot grow */
bool reclaim__pile_append(struct reclaim__slot *s, const struct reclaim__entry *e);

/*
 * reclaim__sweep -- hand every entry of s's retired list for which @keep
 * returns false to its free function (counted in s's freed), keeping the
 * others in order. The list is settled before the first free function
 * runs, so a thread that ends inside one leaves nothing to free twice.
 * Returns how many were freed.
 */
size_t reclaim__sweep(struct reclaim__slot *s,
	bool (*keep)(const struct reclaim__entry *e, void *arg), void *arg);

/* reclaim__free_entry -- hand one node to its free function */
void reclaim__free_entry(const struct reclaim__entry *e);

/* reclaim__pile_free -- free every node on @p, then @p; returns how many */
uint64_t reclaim__pile_free(struct reclaim__pile *p);

/* reclaim__hand_over -- move s's retired nodes, if any, to the orphans */
void reclaim__hand_over(struct reclaim__slot *s);

/*
 * reclaim__adopt_orphans -- move the domain's orphan piles into s's retired
 * list (the entries keep their tags and stamps, so they get the same grace
 * period or scan treatment as if s had retired them). Cheap when there are
 * none. Leaves them orphaned if the list cannot grow.
 */
void reclaim__adopt_orphans(struct reclaim__slot *s);

/* reclaim__clear_hazards -- NULL every hazard slot of s (release) */
void reclaim__clear_hazards(struct reclaim__slot *s);

/*
 * reclaim__lagging -- @me found slot @i holding back a grace period or a
 * presence check. After it has done so for liveness_check_ms (same slot,
 * same owner), checks whether the owner's OS thread still exists and evicts
 * the slot if not. Returns true if slot @i no longer counts (evicted, by
 * @me or another thread), false if the caller must keep waiting for it.
 */
bool reclaim__lagging(struct reclaim__slot *me, unsigned i);

/* reclaim__lag_clear -- @me's grace period or presence check succeeded */
static inline void
reclaim__lag_clear(struct reclaim__slot *me)
{
	me->lag_idx = UINT32_MAX;
}

/* epoch.c: the global epoch shared by QSBR, QSense and EBR. */
uint64_t reclaim__epoch_try_advance(struct reclaim__slot *me);
size_t reclaim__epoch_free(struct reclaim__slot *me, uint64_t global);
void reclaim__epoch_announce(struct reclaim__slot *s);

/* qsbr.c: a quiescent state (sect. 6.3.1), shared by QSBR and QSense. */
void reclaim__qsbr_quiesce(struct reclaim__slot *s);
void reclaim__qsbr_offline(struct reclaim__slot *s);
void reclaim__qsbr_online(struct reclaim__slot *s);

/* hazard.c: the hazard-pointer scan (Alg. 6.3 lines 14-33), shared by HP,
 * Cadence and QSense's fallback; @cadence adds the age condition. */
void reclaim__hazard_scan(struct reclaim__slot *s, bool cadence);

/* roosters.c */
int reclaim__roosters_start(struct reclaim_domain *d);
void reclaim__roosters_stop(struct reclaim_domain *d);
uint64_t reclaim__roosters_min_wake(const struct reclaim_domain *d);

/* qsense.c: the roosters' periodic presence reset (Alg. 6.5 line 19). */
void reclaim__qsense_reset_presence(struct reclaim_domain *d);

/* urcu.c: wait for every queued callback (domain delete). */
void reclaim__urcu_barrier(void);

#endif /* RECLAIM_INTERNAL_H */
