/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/persist.h -- persistence primitives: flush, fence, persist and
 * compare-and-swap on persistent memory, with a durability mode per region.
 *
 * Model. A store reaches the persistence domain only after it is flushed
 * (pm_flush) and the flushing thread then executes a fence (pm_fence).
 * Before that it may or may not be durable: the hardware may write back any
 * dirty cache line at any time. Aligned 8-byte stores are never torn. Code
 * whose correctness after a crash matters issues every persistent store's
 * flush and fence through this header, so that:
 *   - the same code runs on NVDIMM/CXL mappings (CPU cache flushes), on
 *     ordinary file mappings (msync) and in benchmarks without persistence;
 *   - the crash simulator (pm/crashsim.h) sees every persistence event;
 *   - the cost counters (pm/cost.h) count every CAS, flushed line and fence.
 *
 * Regions. Each persistent mapping is registered as a region with a
 * durability mode; pm/pool.h registers its pools itself. pm_flush() looks the
 * address up in the (small) region table. Flushing memory outside every
 * region issues CPU cache flushes, which are harmless on DRAM.
 *
 * Durability modes:
 *   PM_DURABILITY_PMEM  flushes are CPU cache write-backs (clwb, clflushopt or
 *                       clflush, chosen by libpmem) and fences are sfence.
 *                       Correct only where the mapping is persistent memory
 *                       (DAX on NVDIMM or CXL memory); pm/pool.h checks that.
 *   PM_DURABILITY_MSYNC each flush is msync(MS_SYNC) of its pages, so it is
 *                       durable when pm_flush returns; fences add nothing.
 *   PM_DURABILITY_NONE  no persistence at all: for benchmarks that say so.
 * Counters count the same in every mode, so algorithmic costs compare across
 * modes.
 */
#ifndef PM_PERSIST_H
#define PM_PERSIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum pm_durability {
	/* Request only: PMEM where libpmem reports persistent memory, else MSYNC. */
	PM_DURABILITY_AUTO = 0,
	PM_DURABILITY_PMEM,
	PM_DURABILITY_MSYNC,
	PM_DURABILITY_NONE,
};

/* Maximum number of regions registered at once. */
#define PM_REGIONS_MAX 64

/* Cache line size assumed by flush accounting and the crash simulator. */
#define PM_CACHELINE 64

/**
 * pm_durability_name -- "auto", "pmem", "msync" or "none"; NULL if out of range.
 * Return: a static string.
 * Thread-safety: any thread; pure.
 */
const char *pm_durability_name(enum pm_durability mode);

/**
 * pm_durability_parse -- the mode named @name ("auto", "pmem", "msync" or
 * "none", as pm_durability_name() prints them) into *@out.
 * Return: 0; -EINVAL for any other string (*@out unchanged).
 * Thread-safety: pure function.
 */
int pm_durability_parse(const char *name, enum pm_durability *out);

/**
 * pm_region_add -- register [@base, @base + @len) with durability @mode.
 * @mode: PM_DURABILITY_PMEM, _MSYNC or _NONE (AUTO is resolved by the caller,
 *        see pm_durability_resolve()).
 *
 * Return: 0; -EINVAL for a NULL or empty range, an invalid mode, or a range
 * overlapping a registered region; -ENOSPC when PM_REGIONS_MAX are registered.
 * Thread-safety: any thread; concurrent flushes to other regions proceed.
 * The caller owns the memory; the region table only refers to it.
 */
int pm_region_add(void *base, size_t len, enum pm_durability mode);

/**
 * pm_region_remove -- unregister the region starting at @base.
 *
 * Return: 0 if every flush of the region succeeded; -EIO if an msync of the
 * region failed since it was added (the data may not be durable); -ENOENT
 * if no region starts at @base. The region is removed in every case but
 * -ENOENT.
 * Thread-safety: no thread may flush the region concurrently or afterwards.
 */
int pm_region_remove(void *base);

/**
 * pm_region_durability -- the mode of the region holding @addr, or
 * PM_DURABILITY_AUTO if @addr lies in no region.
 * Thread-safety: any thread.
 * Return: the region's mode, or PM_DURABILITY_AUTO.
 */
enum pm_durability pm_region_durability(const void *addr);

/**
 * pm_durability_resolve -- the mode a mapping [@addr, @addr + @len) gets
 * when @requested is asked for.
 *
 * AUTO becomes PMEM if libpmem reports the range as persistent memory
 * (pmem_is_pmem(), which PMEM_IS_PMEM_FORCE=1 overrides) and MSYNC
 * otherwise; MSYNC and NONE are granted as asked.
 * Return: the mode; -PM_E_NOT_PMEM (as a negative int) if PMEM is requested
 * for a range that is not persistent memory; -EINVAL for an unknown mode.
 * Thread-safety: any thread.
 */
int pm_durability_resolve(const void *addr, size_t len, enum pm_durability requested);

/**
 * pm_flush -- start writing back the cache lines covering [@addr, @addr + @len).
 *
 * Nothing is guaranteed durable until the calling thread's next pm_fence()
 * (in MSYNC mode it is durable on return). Counts the covered cache lines as
 * PM_COST_FLUSH. A failed msync cannot be reported here; it is remembered and
 * returned by pm_region_remove() (and so by pm_pool_close()).
 * Thread-safety: any thread. Ordering: none by itself.
 */
void pm_flush(const void *addr, size_t len);

/**
 * pm_fence -- wait until every pm_flush() issued by the calling thread is
 * durable. Counts one PM_COST_FENCE.
 * Thread-safety: any thread; orders only the caller's own flushes (as sfence
 * does). Ordering: also a store fence for the caller's stores.
 */
void pm_fence(void);

/**
 * pm_persist -- pm_flush(@addr, @len) then pm_fence(): the range is durable
 * on return (stores to it made after the call are not covered).
 * Thread-safety, ordering: as pm_flush() then pm_fence().
 */
void pm_persist(const void *addr, size_t len);

/**
 * pm_memcpy_persist -- copy @len bytes from @src to @dst and persist @dst.
 * Return: @dst. Thread-safety: as memcpy plus pm_persist.
 */
void *pm_memcpy_persist(void *dst, const void *src, size_t len);

/**
 * pm_cas -- compare-and-swap the 8-byte word @word from *@expected to @desired.
 *
 * On failure *@expected receives the current value. Counts one PM_COST_CAS in
 * either case. The CAS does not flush: persisting the new value is the
 * caller's pm_flush/pm_fence, which is exactly what persistent algorithms
 * count. In the crash simulator a CAS on a tracked word is a crash point.
 * Return: true if the word held *@expected and now holds @desired.
 * Thread-safety: any thread; @word must be 8-byte aligned.
 * Ordering: sequentially consistent on success and on failure. Persistence:
 * the caller's earlier pm_flush()es are durable before the CAS takes effect,
 * as for pm_fence() but not counted as one: on x86-64 a LOCK-prefixed
 * instruction orders earlier clwb/clflushopt (Intel SDM, CLWB: "ordered by
 * ... LOCK-prefixed instructions"), and the crash simulator models exactly
 * that. Persistent MCAS relies on it (thesis sect. 5.2.2).
 */
bool pm_cas(uint64_t *word, uint64_t *expected, uint64_t desired);

#ifdef __cplusplus
}
#endif

#endif /* PM_PERSIST_H */
