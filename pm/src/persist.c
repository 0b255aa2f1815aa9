/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/src/persist.c -- flush, fence and CAS routed by region durability mode.
 *
 * Region table. Lookups happen on every flush, registrations when pools open
 * or close. The table is a fixed array guarded by a sequence lock: writers
 * (serialised by pm_regions_lock) make the sequence odd, edit, and make it
 * even again; readers retry if the sequence was odd or changed while they
 * scanned. Fields are atomics read relaxed, so a reader racing a writer reads
 * no torn value and discards what it read. Readers never block or write.
 *
 * Fences. In PMEM mode pm_flush issues clwb-class instructions, and the fence
 * must be an sfence. In MSYNC and NONE modes nothing is pending, so a thread
 * that flushed only such regions skips the sfence (pm_need_drain).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <libpmem.h>

#include <pm/cost.h>
#include <pm/error.h>
#include <pm/persist.h>

#include "persist_internal.h"

struct pm_region_slot {
	_Atomic uintptr_t base;
	_Atomic size_t len; /* 0: slot free */
	_Atomic int mode;
	_Atomic int io_error; /* sticky: an msync of this region failed */
};

static struct pm_region_slot pm_regions[PM_REGIONS_MAX];
static _Atomic unsigned pm_regions_seq;
/* Serialises writers of pm_regions and pm_regions_seq; a leaf lock. */
static pthread_mutex_t pm_regions_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct pm_persist__hooks *_Atomic pm_hooks;

/* Whether this thread has PMEM-mode flushes an sfence must wait for. */
static __thread int pm_need_drain;

/* pm_durability_name -- printable mode */
const char *
pm_durability_name(enum pm_durability mode)
{
	switch (mode) {
	case PM_DURABILITY_AUTO: return "auto";
	case PM_DURABILITY_PMEM: return "pmem";
	case PM_DURABILITY_MSYNC: return "msync";
	case PM_DURABILITY_NONE: return "none";
	}
	return NULL;
}

/* pm_durability_parse -- the inverse of pm_durability_name */
int
pm_durability_parse(const char *name, enum pm_durability *out)
{
	for (int m = PM_DURABILITY_AUTO; m <= PM_DURABILITY_NONE; m++)
		if (strcmp(name, pm_durability_name((enum pm_durability)m)) == 0) {
			*out = (enum pm_durability)m;
			return 0;
		}
	return -EINVAL;
}

/* pm_regions_write_begin -- enter a seqlock write section (lock held) */
static void
pm_regions_write_begin(void)
{
	atomic_fetch_add_explicit(&pm_regions_seq, 1, memory_order_relaxed);
	/* Odd sequence before the slot edits; pairs with the acquire fence in
	 * pm_region_find. */
	atomic_thread_fence(memory_order_release);
}

/* pm_regions_write_end -- leave a seqlock write section (lock held) */
static void
pm_regions_write_end(void)
{
	/* Slot edits before the even sequence; pairs with the acquire load of
	 * the sequence in pm_region_find. */
	atomic_fetch_add_explicit(&pm_regions_seq, 1, memory_order_release);
}

/* pm_region_find -- slot index holding @addr, or -1; lock-free */
static int
pm_region_find(uintptr_t addr, int *mode)
{
	for (;;) {
		unsigned seq = atomic_load_explicit(&pm_regions_seq, memory_order_acquire);
		int found = -1;

		if (seq & 1)
			continue;
		for (int i = 0; i < PM_REGIONS_MAX; i++) {
			size_t len = atomic_load_explicit(&pm_regions[i].len, memory_order_relaxed);
			uintptr_t base;

			if (len == 0)
				continue;
			base = atomic_load_explicit(&pm_regions[i].base, memory_order_relaxed);
			if (addr - base < len) {
				*mode = atomic_load_explicit(&pm_regions[i].mode, memory_order_relaxed);
				found = i;
				break;
			}
		}
		/* Slot reads before the re-check; pairs with the release fence
		 * in pm_regions_write_begin. */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&pm_regions_seq, memory_order_relaxed) == seq)
			return found;
	}
}

/* pm_region_add -- register a region */
int
pm_region_add(void *base, size_t len, enum pm_durability mode)
{
	uintptr_t b = (uintptr_t)base;
	int free_slot = -1;

	pm_error_clear();
	if (base == NULL || len == 0 || b + len < b)
		return pm_error_set(-EINVAL, "region %p+%zu is empty or wraps", base, len);
	if (mode != PM_DURABILITY_PMEM && mode != PM_DURABILITY_MSYNC &&
			mode != PM_DURABILITY_NONE)
		return pm_error_set(-EINVAL, "region durability %d is not pmem, msync or none",
			(int)mode);

	pthread_mutex_lock(&pm_regions_lock);
	for (int i = 0; i < PM_REGIONS_MAX; i++) {
		size_t l = atomic_load_explicit(&pm_regions[i].len, memory_order_relaxed);
		uintptr_t rb = atomic_load_explicit(&pm_regions[i].base, memory_order_relaxed);

		if (l == 0) {
			if (free_slot < 0)
				free_slot = i;
			continue;
		}
		if (b < rb + l && rb < b + len) {
			pthread_mutex_unlock(&pm_regions_lock);
			return pm_error_set(-EINVAL, "region %p+%zu overlaps region %p+%zu",
				base, len, (void *)rb, l);
		}
	}
	if (free_slot < 0) {
		pthread_mutex_unlock(&pm_regions_lock);
		return pm_error_set(-ENOSPC, "all %d region slots are in use", PM_REGIONS_MAX);
	}
	pm_regions_write_begin();
	atomic_store_explicit(&pm_regions[free_slot].base, b, memory_order_relaxed);
	atomic_store_explicit(&pm_regions[free_slot].mode, (int)mode, memory_order_relaxed);
	atomic_store_explicit(&pm_regions[free_slot].io_error, 0, memory_order_relaxed);
	atomic_store_explicit(&pm_regions[free_slot].len, len, memory_order_relaxed);
	pm_regions_write_end();
	pthread_mutex_unlock(&pm_regions_lock);
	return 0;
}

/* pm_region_remove -- unregister a region, reporting sticky msync failures */
int
pm_region_remove(void *base)
{
	int ret = pm_error_set(-ENOENT, "no region starts at %p", base);

	pthread_mutex_lock(&pm_regions_lock);
	for (int i = 0; i < PM_REGIONS_MAX; i++) {
		if (atomic_load_explicit(&pm_regions[i].len, memory_order_relaxed) == 0 ||
				atomic_load_explicit(&pm_regions[i].base, memory_order_relaxed) !=
				(uintptr_t)base)
			continue;
		pm_error_clear();
		ret = 0;
		if (atomic_load_explicit(&pm_regions[i].io_error, memory_order_relaxed))
			ret = pm_error_set(-EIO, "an msync of region %p failed; its data may not be durable",
				base);
		pm_regions_write_begin();
		atomic_store_explicit(&pm_regions[i].len, 0, memory_order_relaxed);
		atomic_store_explicit(&pm_regions[i].base, 0, memory_order_relaxed);
		pm_regions_write_end();
		break;
	}
	pthread_mutex_unlock(&pm_regions_lock);
	return ret;
}

/* pm_region_durability -- mode of the region holding addr */
enum pm_durability
pm_region_durability(const void *addr)
{
	int mode;

	if (pm_region_find((uintptr_t)addr, &mode) < 0)
		return PM_DURABILITY_AUTO;
	return (enum pm_durability)mode;
}

/* pm_durability_resolve -- turn a requested mode into the granted one */
int
pm_durability_resolve(const void *addr, size_t len, enum pm_durability requested)
{
	pm_error_clear();
	switch (requested) {
	case PM_DURABILITY_AUTO:
		return pmem_is_pmem(addr, len) ? PM_DURABILITY_PMEM : PM_DURABILITY_MSYNC;
	case PM_DURABILITY_PMEM:
		if (!pmem_is_pmem(addr, len))
			return pm_error_set(PM_E_NOT_PMEM,
				"PMEM durability requested but the mapping is not persistent memory "
				"(set PMEM_IS_PMEM_FORCE=1 to treat it as such)");
		return PM_DURABILITY_PMEM;
	case PM_DURABILITY_MSYNC:
	case PM_DURABILITY_NONE:
		return requested;
	}
	return pm_error_set(-EINVAL, "unknown durability mode %d", (int)requested);
}

/* pm_flush -- write back cache lines according to the region's mode */
void
pm_flush(const void *addr, size_t len)
{
	const struct pm_persist__hooks *hooks;
	uintptr_t a = (uintptr_t)addr;
	int mode = PM_DURABILITY_PMEM;
	int slot;

	if (len == 0)
		return;
	pm_cost_add(PM_COST_FLUSH,
		(a + len - 1) / PM_CACHELINE - a / PM_CACHELINE + 1);
	/* Pairs with the release store in pm_persist__set_hooks. */
	hooks = atomic_load_explicit(&pm_hooks, memory_order_acquire);
	if (hooks != NULL)
		hooks->flush(addr, len);

	slot = pm_region_find(a, &mode);
	switch (mode) {
	case PM_DURABILITY_PMEM:
		pmem_flush(addr, len);
		pm_need_drain = 1;
		break;
	case PM_DURABILITY_MSYNC:
		if (pmem_msync(addr, len) != 0 && slot >= 0)
			atomic_store_explicit(&pm_regions[slot].io_error, 1,
				memory_order_relaxed);
		break;
	default:
		break;
	}
}

/* pm_fence -- make the calling thread's flushes durable */
void
pm_fence(void)
{
	const struct pm_persist__hooks *hooks;

	pm_cost_add(PM_COST_FENCE, 1);
	hooks = atomic_load_explicit(&pm_hooks, memory_order_acquire);
	if (hooks != NULL)
		hooks->fence();
	if (pm_need_drain) {
		pmem_drain();
		pm_need_drain = 0;
	}
}

/* pm_persist -- flush and fence */
void
pm_persist(const void *addr, size_t len)
{
	pm_flush(addr, len);
	pm_fence();
}

/* pm_memcpy_persist -- copy then persist the destination */
void *
pm_memcpy_persist(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	pm_persist(dst, len);
	return dst;
}

/* pm_cas -- counted compare-and-swap, visible to the crash simulator */
bool
pm_cas(uint64_t *word, uint64_t *expected, uint64_t desired)
{
	const struct pm_persist__hooks *hooks;

	pm_cost_add(PM_COST_CAS, 1);
	hooks = atomic_load_explicit(&pm_hooks, memory_order_acquire);
	if (hooks != NULL)
		return hooks->cas(word, expected, desired);
	return pm__cas_seq_cst(word, expected, desired);
}

/* pm_persist__set_hooks -- install or remove the crash simulator's hooks */
void
pm_persist__set_hooks(const struct pm_persist__hooks *hooks)
{
	/* Publishes the hook table; pairs with the acquire loads above. */
	atomic_store_explicit(&pm_hooks, hooks, memory_order_release);
}
