/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/cost.h -- deterministic per-thread cost counters.
 *
 * The suite proves its complexity claims ("k+1 CAS per k-word MCAS", "2 fences
 * per persistent MCAS", "1 round trip per get") by counting, not timing. Each
 * thread owns one block of counters; incrementing is a thread-local relaxed
 * load and store (no lock prefix, no shared cache line), cheap enough to stay
 * compiled in for benchmarks. A thread reads its own block with
 * pm_cost_read_thread(); pm_cost_read_total() sums every thread that ever
 * counted, including threads that have exited.
 *
 * pm/persist.h counts CAS, flushed cache lines and fences itself; the rdma
 * module counts round trips and remote verbs here too, so one snapshot covers
 * an operation end to end.
 *
 * What PM_COST_CAS counts, exactly: pm_cas() calls, which the suite uses for
 * every CAS on a word that is an MCAS target, a descriptor's or record's
 * status, or persistent. Not counted: atomic read-modify-writes on volatile
 * bookkeeping -- ONLL's CAS that appends an update to its volatile trace
 * (one per update), reclamation's retire lists and epochs -- nor seq_cst
 * stores, which x86 executes as a locked xchg (each MCAS's epoch
 * announcement; ONLL's store of an update's available flag), nor relaxed
 * statistics. Claims of "k+1 CAS" and "0 CAS per
 * read" are about this count; the README states the uncounted locked
 * instructions beside them.
 */
#ifndef PM_COST_H
#define PM_COST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum pm_cost_counter {
	PM_COST_CAS,           /* compare-and-swap instructions issued (success or not) */
	PM_COST_FLUSH,         /* cache lines handed to a persistent flush */
	PM_COST_FENCE,         /* persistent fences (ordering points for flushes) */
	PM_COST_ROUND_TRIP,    /* transport round trips (one per completed batch) */
	PM_COST_REMOTE_READ,   /* one-sided reads posted */
	PM_COST_REMOTE_WRITE,  /* one-sided writes posted */
	PM_COST_REMOTE_ATOMIC, /* one-sided CAS or fetch-and-add posted */
	PM_COST_REMOTE_PERSIST,/* remote persist requests posted */
	PM_COST_NCOUNTERS
};

/* A snapshot of every counter. Plain data: copy, compare and diff freely. */
struct pm_cost {
	uint64_t n[PM_COST_NCOUNTERS];
};

/* Per-thread block; the layout is internal and may change between releases. */
struct pm_cost__thread {
	uint64_t n[PM_COST_NCOUNTERS];
	int registered;
};

extern __thread struct pm_cost__thread pm_cost__self;

/* Links this thread's block into the registry read by pm_cost_read_total().
 * Return: 0; -ENOMEM (the block stays unregistered).
 * Thread-safety: the calling thread's block; takes the registry mutex.
 */
int pm_cost__register(void);

/**
 * pm_cost_thread_prepare -- register the calling thread's block now if it
 * is not yet. The first pm_cost_add() of a thread does it otherwise, which
 * allocates and takes a mutex: a thread registration that promises neither
 * inside later operations (mcas_thread_register()) calls this first.
 * Return: 0; -ENOMEM if the registry entry could not be allocated (the
 * thread still counts, but pm_cost_read_total() misses it until a later
 * call succeeds).
 * Thread-safety: the calling thread's block; takes the registry mutex the
 * first time.
 * Ordering: none of its own (the mutex orders the registry).
 */
static inline int
pm_cost_thread_prepare(void)
{
	if (__builtin_expect(!pm_cost__self.registered, 0))
		return pm_cost__register();
	return 0;
}

/**
 * pm_cost_add -- add @n to counter @c of the calling thread.
 *
 * Thread-safety: any thread. The first call on a thread registers its block
 * (pm_cost_thread_prepare(); again on the next call if that ran out of
 * memory); later calls are wait-free.
 * Ordering: relaxed; counting never orders other memory operations.
 */
static inline void
pm_cost_add(enum pm_cost_counter c, uint64_t n)
{
	struct pm_cost__thread *t = &pm_cost__self;

	/* Counting goes on unregistered if that fails (out of memory): the
	 * next add tries again. */
	(void)pm_cost_thread_prepare();
	/* Only this thread writes its block; other threads read it relaxed in
	 * pm_cost_read_total(), so a plain load/store pair suffices. */
	__atomic_store_n(&t->n[c], __atomic_load_n(&t->n[c], __ATOMIC_RELAXED) + n,
		__ATOMIC_RELAXED);
}

/**
 * pm_cost_read_thread -- snapshot the calling thread's counters into @out.
 * Thread-safety: any thread; reads only the caller's own block.
 */
void pm_cost_read_thread(struct pm_cost *out);

/**
 * pm_cost_read_total -- snapshot the sum over all threads into @out.
 *
 * Counts of threads still running may be read mid-update, so the total is
 * exact only when those threads are quiescent (for example after joining a
 * benchmark's workers). Threads that exited are folded in exactly.
 * Thread-safety: any thread; takes the registry mutex.
 */
void pm_cost_read_total(struct pm_cost *out);

/**
 * pm_cost_diff -- @out = @after - @before, counter by counter.
 * @out may alias either input. Thread-safety: pure function.
 */
void pm_cost_diff(const struct pm_cost *after, const struct pm_cost *before,
	struct pm_cost *out);

/**
 * pm_cost_name -- a short stable name for counter @c ("cas", "flush", ...),
 * suitable as a benchmark counter or CSV column; NULL if @c is out of range.
 * Return: a static string, or NULL.
 * Thread-safety: any thread; pure.
 */
const char *pm_cost_name(enum pm_cost_counter c);

#ifdef __cplusplus
}
#endif

#endif /* PM_COST_H */
