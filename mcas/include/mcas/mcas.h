/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcas/mcas.h -- lock-free multi-word compare-and-swap (MCAS) on 8-byte
 * words, in volatile memory or in a pm/ pool.
 *
 * An MCAS atomically checks that k words hold expected values and, if they
 * all do, writes new values to all of them. Words that may be MCAS targets
 * must be read with mcas_read() (they can hold a descriptor reference while
 * an operation is in progress or not yet cleaned up) and written only
 * through MCAS.
 *
 * Usage, per thread:
 *     struct mcas_thread *t;  mcas_thread_register(m, &t);
 *     struct mcas_desc *d;    mcas_desc_begin(t, &d);
 *     mcas_desc_add(d, &a, a_old, a_new);
 *     mcas_desc_add(d, &b, b_old, b_new);
 *     int r = mcas_desc_execute(d);     1: done, 0: some word differed
 *     uint64_t v = mcas_read(t, &a);
 *
 * Algorithms (one API, chosen per instance, so data structures and
 * benchmarks compare them on the same code):
 *   MCAS_ALG_AOPT    the thesis's algorithm (Guerraoui, Kogan, Marathe,
 *                    Zablotchi, DISC'20; thesis ch. 5, alg. 5.2-5.5): k+1 CAS
 *                    per uncontended k-word MCAS; persistent: 2 persistent
 *                    fences per uncontended call. Descriptors stay installed
 *                    after the operation and are detached lazily (sect. 5.6).
 *   MCAS_ALG_HARRIS  Harris, Fraser and Pratt (DISC'02) with real RDCSS
 *                    descriptors: 3k+1 CAS. Volatile only. Baseline.
 *   MCAS_ALG_PMWCAS  Wang et al., "Easy lock-free indexing in non-volatile
 *                    memory" (ICDE'18): dirty flags, 5k+1 CAS, 2k+1 fences.
 *                    Persistent only. Baseline.
 *
 * Word format. Target words hold either a value or a descriptor reference
 * marked in the low bits; mcas_value_mask() gives the bits an instance
 * reserves (AOPT: 1, HARRIS: 2, PMWCAS: 3 bits). A value with any of those
 * bits set is rejected by mcas_desc_add() (-EINVAL). Values whose low
 * MCAS_VALUE_PORTABLE_MASK bits are clear -- 8-byte-aligned pointers, pool
 * offsets, integers shifted left by 3 -- work with every algorithm. A
 * target word must be 8-byte aligned and must never be written other than
 * by MCAS once it is shared.
 *
 * Memory of target words must stay mapped while the instance lives, and be
 * reused only as memory whose words are again accessed atomically (type-
 * stable memory: node slabs or a pool arena, as ds/dll.c does). AOPT
 * detaches lazily: a word may still refer to a finalized descriptor after
 * the object holding it was unlinked, and the descriptor's owner loads the
 * word when it detaches, possibly after the object's own grace period
 * (mcas_retire) ended. So mcas_retire must not return such objects to the
 * system allocator.
 *
 * Memory management (thesis sect. 5.6): each thread announces, in its epoch
 * word, when it may hold references to descriptors. Descriptors come from a
 * fixed per-thread pool and go back to it after grace periods (AOPT:
 * finalized -> grace -> detached -> grace -> free). No allocation happens
 * inside an operation: mcas_retire() is the only call that may grow a
 * thread's lists, and it keeps room for every descriptor. The same epochs
 * protect user objects retired with mcas_retire() and read inside
 * mcas_guard_enter()/mcas_guard_exit(). The epoch words and grace periods
 * are reclaim/'s epoch flavour (reclaim/reclaim.h): an instance runs on
 * one the caller gives (mcas_config.epochs) or, by default, on the
 * process's default flavour, which every instance created without one
 * shares (made by the first, released when the last is closed). Instances
 * on one flavour share their threads' registrations: a thread holds one
 * epoch word for all of them,
 * a guard on any of them protects what other threads retire through any
 * of them, and a thread inside a guard of one holds back the grace periods
 * of all. (What a thread retires itself is freed only inside its own later
 * mcas_desc_begin() or mcas_thread_unregister(), guard or not, on any
 * instance of the flavour: its handles there are one reader.)
 *
 * Persistence. A persistent instance lives in an area of a pm/ pool
 * (mcas_pmem_area_size() bytes, 64-byte aligned) holding a header and every
 * thread's descriptors, so a crash leaves everything recovery needs inside
 * the pool. mcas_pmem_open() runs recovery (thesis sect. 5.5): operations
 * whose finalized status was not durable are rolled back, finalized ones are
 * completed, and afterwards no target word holds a descriptor reference.
 * Recovery is idempotent, so a crash during recovery is recovered by running
 * it again. An MCAS is durable when mcas_desc_execute() returns; a value
 * returned by mcas_read() is durable when mcas_read() returns.
 *
 * Errors: 0 or positive on success; -errno or a PM_E_* code (pm/error.h,
 * pm_strerror()) on failure. Constructors, mcas_close() and registration
 * leave a message in pm_errormsg() when they fail; the descriptor calls and
 * mcas_read() do not touch it (README, Conventions). The library never
 * prints, aborts or exits on bad input.
 */
#ifndef MCAS_MCAS_H
#define MCAS_MCAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pm_pool;
struct reclaim_epochs;
struct mcas;
struct mcas_thread;
struct mcas_desc;

/* Most words one MCAS may target. */
#define MCAS_MAX_WORDS 16

/* Low bits every algorithm accepts clear (see "Word format" above). */
#define MCAS_VALUE_PORTABLE_MASK ((uint64_t)0x7)

/* Layout version of the persistent area written by this library. */
#define MCAS_PMEM_VERSION 2

enum mcas_algorithm {
	MCAS_ALG_AOPT = 0,
	MCAS_ALG_HARRIS,
	MCAS_ALG_PMWCAS,
};

struct mcas_config {
	/* Which algorithm; default MCAS_ALG_AOPT. */
	enum mcas_algorithm algorithm;
	/* Most threads registered at once; default 64, at most 1024. */
	unsigned max_threads;
	/* Descriptors in each thread's pool; default 512, at least 8. A larger
	 * pool keeps finalized descriptors installed longer, so more of them
	 * are replaced by later operations instead of detached by CAS, and
	 * threads wait less for grace periods (records are 576 bytes;
	 * volatile pools are touched only for slots in use). */
	unsigned descs_per_thread;
	/* Descriptors a thread retires before it tries to advance its
	 * reclamation pipeline (an epoch scan); default descs_per_thread / 8. */
	unsigned reclaim_batch;
	/* Efficient reads (thesis sect. 5.6.2): a read that finds a finalized
	 * descriptor detaches it from the word with probability 1/N, if at
	 * that moment no other thread is inside an operation or guard (so
	 * none can still be helping it); it never waits. Default 64; 0
	 * disables. AOPT only (the baselines clean up eagerly). */
	unsigned read_detach_one_in;
	/* The epoch flavour the instance's grace periods run on
	 * (reclaim_epochs_new()); it must outlive the instance, and its
	 * max_threads bounds the threads of all its instances together.
	 * NULL (the default): the process's default flavour, shared by every
	 * instance created with NULL, for 1024 threads registered at once
	 * across them (mcas_thread_register() answers -EAGAIN beyond). A
	 * thread inside a guard of any of them holds back the grace periods
	 * of all; give an instance a flavour of its own to keep it apart. */
	struct reclaim_epochs *epochs;
};

/* Per-thread operation counts, for benchmarks and tests (thesis sect. 5.7).
 * mcas_read() calls are not counted: at one counter update per read, the
 * count cost list traversals about 3 % more instructions (callgrind), and a
 * caller counts its own reads for free. */
struct mcas_stats {
	uint64_t mcas;          /* MCAS operations executed */
	uint64_t succeeded;     /* ... of which succeeded */
	uint64_t helps;         /* active operations of others helped */
	uint64_t detach_cas;    /* CASes spent detaching descriptors */
	uint64_t read_detaches; /* words cleaned by efficient reads */
	uint64_t scans;         /* epoch scans */
	uint64_t grace_periods; /* scans that found a grace period elapsed */
	uint64_t desc_waits;    /* mcas_desc_begin() calls that found no free descriptor */
};

/**
 * mcas_config_init -- fill @cfg with the defaults documented above.
 * Thread-safety: any thread; writes only @cfg.
 * Ordering: none (touches no shared memory).
 */
void mcas_config_init(struct mcas_config *cfg);

/**
 * mcas_new -- create a volatile instance (targets in ordinary memory).
 * @out: receives the instance; release it with mcas_close().
 * @cfg: NULL for the defaults.
 *
 * Return: 0; -EINVAL for a bad config or an algorithm that is persistent
 * only; -ENOMEM.
 * Thread-safety: any thread, also concurrently with the constructors and
 * mcas_close() of other instances: with @cfg's epochs NULL, the default
 * flavour is made or referenced under a process-wide mutex.
 * Ordering: that mutex orders the flavour's creation before every use of
 * it; hand @out to other threads through something that orders
 * (pthread_create(), a mutex, a release store).
 */
int mcas_new(struct mcas **out, const struct mcas_config *cfg);

/**
 * mcas_pmem_area_size -- bytes of pool memory a persistent instance with
 * config @cfg (NULL: defaults) needs; 0 if @cfg is invalid.
 * Return: the size in bytes; 0 if @cfg is invalid.
 * Thread-safety: any thread; pure.
 * Ordering: none (touches no shared memory).
 */
size_t mcas_pmem_area_size(const struct mcas_config *cfg);

/**
 * mcas_pmem_create -- format a persistent instance in @pool at offset
 * @area_off and open it.
 * @area_off: offset of mcas_pmem_area_size(@cfg) bytes of @pool owned by the
 *            instance from now on, 64-byte aligned (pm_pool_alloc() memory or
 *            part of the root object).
 * @out: receives the instance; release it with mcas_close().
 *
 * The area is durable and valid when this returns; a crash before that
 * leaves it reading as PM_E_CORRUPT to mcas_pmem_open() (the header is
 * written last), so the caller formats again.
 * Return: 0; -EINVAL for a bad config, a volatile-only algorithm or a
 * misaligned area; -ERANGE if the area is not inside the pool; -ENOMEM.
 * Thread-safety: any thread; the area must not be in use.
 * Ordering: as mcas_new().
 */
int mcas_pmem_create(struct mcas **out, struct pm_pool *pool, uint64_t area_off,
	const struct mcas_config *cfg);

/**
 * mcas_pmem_open -- open a persistent instance formatted by
 * mcas_pmem_create() in @pool at @area_off, and recover it.
 * @cfg: NULL, or a config whose reclaim_batch and read_detach_one_in are
 *       used for this run (the algorithm and sizes come from the area).
 *
 * Recovery completes or rolls back every operation a crash interrupted and
 * detaches every descriptor, persistently, before returning.
 * Return: 0; PM_E_CORRUPT if the header is damaged, missing (never
 * formatted, or a create that did not finish) or describes an area that
 * does not fit the pool; PM_E_VERSION for another layout version;
 * PM_E_LAYOUT if the area holds another kind of object (pm/area.h) or @cfg
 * names another algorithm; -ERANGE if the area is not inside the
 * pool; -ENOMEM. On error the pool is not modified.
 * Thread-safety: one caller per area; no other thread may use the area
 * until it returns.
 * Ordering: as mcas_new(); recovery is single-threaded.
 */
int mcas_pmem_open(struct mcas **out, struct pm_pool *pool, uint64_t area_off,
	const struct mcas_config *cfg);

/**
 * mcas_close -- release @*m (NULL accepted) and set it to NULL.
 *
 * Every thread must have unregistered. For a persistent instance the area
 * stays in the pool with every descriptor detached (a clean shutdown needs
 * no recovery work next time).
 * An instance on the default flavour drops its reference to it; the last
 * one releases the flavour.
 * Return: 0; -EBUSY if a thread is still registered: nothing is released
 * and *@m is left as it is.
 * Thread-safety: one caller, ordered after every thread's
 * mcas_thread_unregister() (joined, for example); other instances may be
 * made and closed concurrently.
 * Ordering: the default flavour's reference count is dropped under the
 * mutex mcas_new() takes; otherwise none of its own: the caller's
 * happens-before edge to the unregistrations is what makes releasing safe.
 */
int mcas_close(struct mcas **m);

/**
 * mcas_algorithm_name -- "aopt", "harris" or "pmwcas"; NULL if out of range.
 * Return: a static string, or NULL.
 * Thread-safety: any thread; pure.
 * Ordering: none (touches no shared memory).
 */
const char *mcas_algorithm_name(enum mcas_algorithm alg);

/**
 * mcas_algorithm_of -- the algorithm instance @m runs.
 * Return: the algorithm.
 * Thread-safety: any thread.
 * Ordering: none (reads fields fixed at creation).
 */
enum mcas_algorithm mcas_algorithm_of(const struct mcas *m);

/**
 * mcas_is_persistent -- whether @m lives in a pm/ pool.
 * Return: true for an instance in a pool.
 * Thread-safety: any thread.
 * Ordering: none (reads fields fixed at creation).
 */
bool mcas_is_persistent(const struct mcas *m);

/**
 * mcas_covers -- whether the @len bytes at @addr may hold target words of
 * @m: for a persistent instance, whether they lie in its pool (the check
 * mcas_desc_add() makes, -ERANGE); a volatile instance covers any address.
 * Structures built on @m check their area with it once, at create or open.
 * Return: true if covered.
 * Thread-safety: any thread.
 * Ordering: none (reads fields fixed at creation).
 */
bool mcas_covers(const struct mcas *m, const void *addr, size_t len);

/**
 * mcas_value_mask -- the low bits @m reserves in target words; a value with
 * any of them set cannot be stored by MCAS.
 * Return: the mask (1, 3 or 7).
 * Thread-safety: any thread.
 * Ordering: none (reads fields fixed at creation).
 */
uint64_t mcas_value_mask(const struct mcas *m);

/**
 * mcas_thread_register -- give the calling thread a handle on @m.
 * @out: receives the handle; it belongs to the calling thread, which must
 *       unregister it before exiting.
 *
 * The thread also registers in the instance's epoch flavour, or, if it is
 * registered there already (through another instance on the same flavour,
 * the default one included), reuses that epoch word
 * (reclaim_epochs_thread_register()).
 * Return: 0; -EAGAIN if max_threads threads are registered on @m, or the
 * flavour has no free slot; -ENOMEM.
 * Thread-safety: any thread, concurrently with operations of others.
 * Ordering: the descriptor pool is claimed with a seq_cst CAS; the epoch
 * word as reclaim_epochs_thread_register() says, so every grace period that
 * starts after this returns sees the thread.
 */
int mcas_thread_register(struct mcas *m, struct mcas_thread **out);

/**
 * mcas_thread_unregister -- release @*t and set it to NULL.
 *
 * Descriptors and objects the thread retired are reclaimed first; this waits
 * for grace periods, so it blocks while another thread stays inside an
 * operation. Return: 0; -EBUSY if called inside a guard (of any instance
 * on the same flavour) or with a descriptor begun and not executed.
 * Thread-safety: the owning thread only (the thread that registered).
 * Ordering: the slot is given back with seq_cst stores.
 */
int mcas_thread_unregister(struct mcas_thread **t);

/**
 * mcas_desc_begin -- start building an MCAS on thread @t.
 * @out: receives the descriptor; it belongs to @t until mcas_desc_execute()
 *       or mcas_desc_abandon() consumes it. One at a time per thread.
 *
 * Takes a descriptor from the thread's pool, advancing reclamation if the
 * pool is empty. Return: 0; -EBUSY if @t already has one begun; -EAGAIN if
 * every descriptor of @t still waits for a grace period (another thread is
 * stalled inside an operation): retry later.
 * Thread-safety: the owning thread only.
 * Ordering: none on the descriptor, private until mcas_desc_execute();
 * advancing reclamation loads every thread's epoch (seq_cst), the
 * other side of mcas_guard_enter()'s and mcas_guard_exit()'s stores.
 */
int mcas_desc_begin(struct mcas_thread *t, struct mcas_desc **out);

/**
 * mcas_desc_add -- add target @addr, expected value @expected, new value
 * @desired to @d. Targets may be added in any order; execution sorts them.
 *
 * Return: 0; -EINVAL if @addr is NULL or not 8-byte aligned, or a value has
 * reserved bits set (mcas_value_mask()); -EEXIST if @addr is already a
 * target of @d; -E2BIG beyond MCAS_MAX_WORDS targets; -ERANGE if @m is
 * persistent and [@addr, @addr + 8) is not inside its pool. On error @d is
 * unchanged and can still be executed or abandoned.
 * Thread-safety: the owning thread only.
 * Ordering: none (writes only @d, still private).
 */
int mcas_desc_add(struct mcas_desc *d, uint64_t *addr, uint64_t expected, uint64_t desired);

/**
 * mcas_desc_execute -- run the MCAS @d describes and consume @d.
 *
 * Return: 1 if every target held its expected value and now holds its new
 * value (atomically, linearizable); 0 if some target differed and nothing
 * was written; -EINVAL if @d has no targets (consumed all the same).
 * Persistence: a persistent instance's outcome is durable on return.
 * Progress: lock-free; the calling thread helps operations it meets.
 * Thread-safety: the owning thread only; any other threads may run
 * operations on the same words concurrently.
 * Ordering: on success, seq_cst: every target word's new value is
 * visible to, and ordered with, any later mcas_read() or MCAS of that word
 * (every install CAS and the status CAS that decides the operation are
 * seq_cst pm_cas() calls; mcas_read() and helpers load the words seq_cst
 * and the status with acquire, the other side of the status CAS). On
 * failure (0), seq_cst as well: the status CAS that fails the operation
 * is ordered like a successful one, and no target word changes value. On
 * -EINVAL nothing shared is touched.
 */
int mcas_desc_execute(struct mcas_desc *d);

/**
 * mcas_desc_abandon -- return @d, begun and not executed, to its pool.
 * Thread-safety: the owning thread only.
 * Ordering: none (@d was never published).
 */
void mcas_desc_abandon(struct mcas_desc *d);

/**
 * mcas_read -- the value of target word @addr, on thread @t.
 *
 * Linearizable with respect to every MCAS on the word. If no operation is
 * in progress on the word and none is waiting to be detached, this is one
 * load: no store, no CAS, no fence. Otherwise it helps an operation in
 * progress finish first. Persistence: the value returned is durable.
 * Thread-safety: @t's owning thread; any other threads concurrently.
 * Return: the value the word stands for.
 * Ordering: a seq_cst load of @addr (ordered after this thread's epoch
 * announcement); if it finds a descriptor, an acquire load of its status,
 * the other side of the status CAS in mcas_desc_execute(); any help or
 * detach it does is a seq_cst CAS.
 */
uint64_t mcas_read(struct mcas_thread *t, const uint64_t *addr);

/**
 * mcas_guard_enter -- start a read-side critical section on @t.
 *
 * Objects retired with mcas_retire() by other threads after the calling
 * thread loaded a reference to them are not freed before the matching
 * mcas_guard_exit() (the caller's own are freed only in its own later calls:
 * see "Memory management" above). Guards nest. Costs one sequentially consistent store
 * (outermost guard only); MCAS operations inside a guard skip their own
 * epoch announcement. Keep guards short: a thread inside a guard holds back
 * reclamation for every thread.
 * Thread-safety: the owning thread only.
 * Ordering: the outermost guard's epoch store is seq_cst: a Dekker
 * pair with the seq_cst epoch loads of a reclaiming thread's scan (in
 * mcas_desc_begin()), so no later load of this thread is satisfied
 * before a scan that frees the object can see the guard.
 */
void mcas_guard_enter(struct mcas_thread *t);

/**
 * mcas_guard_exit -- end the innermost guard of @t.
 * Thread-safety: the owning thread only.
 * Ordering: the outermost exit's epoch store is a release: this
 * thread's reads inside the guard happen before a scan that sees the
 * new epoch (seq_cst load) frees or reuses what they read.
 */
void mcas_guard_exit(struct mcas_thread *t);

/* Frees a retired object; @ctx is what was passed to mcas_retire(). The
 * same signature as reclaim_free_fn: the object first, then the context. */
typedef void (*mcas_free_fn)(void *obj, void *ctx);

/**
 * mcas_retire -- free @obj with @free_fn(@obj, @ctx) once no thread can hold
 * a reference loaded before this call (one grace period).
 *
 * The caller must already have made @obj unreachable (for example, unlinked
 * it by MCAS). @free_fn runs later on @t's thread, inside a later
 * mcas_desc_begin() or mcas_thread_unregister() of @t, and must not call
 * mcas_* functions.
 * Return: 0; -ENOMEM if the thread's retire list could not grow (the object
 * is then neither freed nor remembered: the caller still owns it).
 * Thread-safety: the owning thread only.
 * Ordering: none of its own: the object's unlink (an MCAS, seq_cst)
 * precedes this call; the grace period it waits for is the epoch
 * pairing described at mcas_guard_enter()/mcas_guard_exit().
 */
int mcas_retire(struct mcas_thread *t, void *obj, mcas_free_fn free_fn, void *ctx);

/**
 * mcas_thread_stats -- copy @t's counts into @out.
 *
 * Thread-safety: any thread, while @t is registered: mcas_thread_unregister()
 * frees the handle, so read a thread's final counts before it unregisters, or
 * take them from mcas_stats_total(), which keeps them. Called by another
 * thread while @t runs operations, each counter is read atomically but the
 * counters are not one snapshot.
 * Ordering: relaxed loads; orders nothing.
 */
void mcas_thread_stats(const struct mcas_thread *t, struct mcas_stats *out);

/**
 * mcas_stats_total -- the sum of the counts of every thread that used @m,
 * including unregistered ones.
 *
 * Each thread is counted exactly once, even while threads register and
 * unregister concurrently. Counters of threads running operations are read
 * atomically, one by one, so a sum taken while they run is not one instant's;
 * it is exact once they have stopped (for example after joining them).
 * Thread-safety: any thread, at any time while @m exists; briefly excludes
 * mcas_thread_register() and mcas_thread_unregister() on @m (a spin lock,
 * never held across an operation).
 * Ordering: relaxed loads of the counters; orders nothing else.
 */
void mcas_stats_total(const struct mcas *m, struct mcas_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* MCAS_MCAS_H */
