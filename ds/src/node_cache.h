/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/node_cache.h -- the free-node management the two MCAS structures
 * (dll.c, bztree*.c) share: volatile slabs or a persistent arena of
 * fixed-size nodes, a shared free pool under a lock, a per-thread cache,
 * retiring unlinked nodes through mcas_retire() with a fallback chain for
 * what it refuses, the registry of handles, and the accounting their
 * check() functions verify. Not installed.
 *
 * Type-stable memory. Node memory is never returned to the system
 * allocator while its structure exists (slabs are freed only by
 * ds__node_cache_fini(), the arena is the pool's), because of how AOPT
 * detaches: a finalized descriptor D whose target word lies in node X stays
 * in its owner's reclamation pipeline, and the owner's detach step loads
 * (and, when persistent, flushes) that word one grace period after *D* was
 * retired -- which can be after X itself was unlinked, retired and freed by
 * another thread whose pipeline moved faster. The load is harmless on
 * reused node memory (the word no longer refers to D, since the operation
 * that unlinked X replaced D's reference, and D is never re-installed after
 * finalization), but it would be a use-after-free on memory given back to
 * malloc. For the same reason the structures write a reused node's words
 * with atomic stores.
 *
 * Free nodes. Each handle caches up to 2 * batch nodes; it refills batch at
 * a time from the shared pool and spills batch back when full. batch is the
 * structure's maximum, or less for a small arena, so that caches cannot
 * hoard most of it (arena nodes / 64, at least 1). The shared pool is an
 * array big enough for every node the structure owns, so a spill never
 * allocates (a spill also runs inside mcas's reclamation, from
 * ds__node_cache_reclaim()). Everything here is volatile: a persistent
 * structure rebuilds its free pool from a walk of its durable nodes when it
 * is opened (ds__node_cache_put()), so a node is reachable or free after a
 * crash, never lost.
 */
#ifndef DS_SRC_NODE_CACHE_H
#define DS_SRC_NODE_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mcas/mcas.h>

/* Most nodes a handle caches: 2 * the largest batch. */
#define DS__NODE_CACHE_MAX 64

struct ds__node_cache_thread;

struct ds__node_cache {
	size_t node_size;     /* a multiple of 64 */
	size_t aux_off;       /* a node's word for the orphan chain (see below) */
	unsigned slab_nodes;  /* nodes per volatile slab */
	unsigned batch;       /* refill/spill size, 1..DS__NODE_CACHE_MAX / 2 */
	bool persistent;
	/* persistent: the arena, arena_nodes nodes from arena */
	char *arena;
	uint64_t arena_nodes;
	/* volatile */
	void **slabs;
	size_t nslabs, slabs_cap;

	/*
	 * lock protects the shared free pool (free_v, free_n, free_cap), the
	 * slabs, nodes, lost and the registry of handles (threads, nthreads,
	 * and through it every handle's cache, retired count and orphans for
	 * a check). It is a leaf lock: nothing called with it held takes it
	 * again; in particular no mcas_desc_begin() or
	 * mcas_thread_unregister(), whose reclamation runs
	 * ds__node_cache_reclaim() (a structure's check walks its nodes under
	 * it with mcas_read() and mcas_guard_*() only).
	 */
	pthread_mutex_t lock;
	void **free_v;
	size_t free_n, free_cap; /* free_cap >= nodes, so pushes never grow */
	uint64_t nodes;          /* nodes owned */
	uint64_t lost;           /* retired nodes whose handle unregistered
	                          * before mcas_retire() took them */
	struct ds__node_cache_thread *threads;
	unsigned nthreads;
};

struct ds__node_cache_thread {
	struct ds__node_cache *nc;
	/* Owner-only state (ds__node_cache_reclaim() runs on the owner too). */
	void *cache[DS__NODE_CACHE_MAX];
	unsigned ncache;
	uint64_t retired; /* retired, not yet handed back */
	/* Unlinked nodes mcas_retire() refused, chained through their aux
	 * word: a word no reader of an unlinked node looks at, which the
	 * orphan may still be to concurrent traversals. */
	void *orphans;
	/* Registry links, under nc->lock. */
	struct ds__node_cache_thread *reg_prev, *reg_next;
};

/*
 * ds__node_cache_init -- an empty cache of @node_size-byte nodes, chained
 * through the word at @aux_off when orphaned, moved @batch_max at a time.
 * Volatile (@arena NULL): nodes come from slabs of @slab_nodes. Persistent:
 * the @arena_nodes nodes at @arena, all owned, none free yet (the caller
 * ds__node_cache_put()s the free ones).
 * Return: 0; -ENOMEM (nothing to ds__node_cache_fini()).
 */
int ds__node_cache_init(struct ds__node_cache *nc, size_t node_size, size_t aux_off,
	unsigned slab_nodes, unsigned batch_max, void *arena, uint64_t arena_nodes);

/* ds__node_cache_fini -- free the slabs and the pool (no handle left) */
void ds__node_cache_fini(struct ds__node_cache *nc);

/* ds__node_cache_put -- free node @n into the shared pool, while nothing
 * else runs (creation, recovery) */
static inline void
ds__node_cache_put(struct ds__node_cache *nc, void *n)
{
	nc->free_v[nc->free_n++] = n;
}

/* ds__node_cache_take -- a free node from the shared pool, a new slab if
 * volatile and empty. Return: 0; -ENOSPC (persistent), -ENOMEM. */
int ds__node_cache_take(struct ds__node_cache *nc, void **out);

/* ---- handles ---- */

/* ds__node_cache_thread_add -- register @ct (zeroed) with @nc */
void ds__node_cache_thread_add(struct ds__node_cache *nc, struct ds__node_cache_thread *ct);

/*
 * ds__node_cache_thread_remove -- retire @ct's orphans once more, then
 * mcas_thread_unregister(@mtp), which waits for the grace periods of
 * everything @ct retired (the nodes come back into @ct's cache), then give
 * the cache back and deregister @ct. Orphans mcas never took stay unusable
 * until the structure is destroyed (volatile) or reopened (persistent:
 * recovery frees them).
 * Return: 0; mcas_thread_unregister()'s error, with @ct still registered.
 */
int ds__node_cache_thread_remove(struct ds__node_cache_thread *ct, struct mcas_thread **mtp);

/* ds__node_cache_nthreads -- handles registered now */
unsigned ds__node_cache_nthreads(struct ds__node_cache *nc);

/* ---- allocation and retirement (owner thread only) ---- */

/* The slow paths of ds__node_cache_alloc() and ds__node_cache_free(). */
int ds__node_cache_refill(struct ds__node_cache_thread *ct);
void ds__node_cache_spill(struct ds__node_cache_thread *ct);

/* ds__node_cache_alloc -- a free node for @ct's owner; only it can reach
 * the node. Return: 0; -ENOSPC (persistent arena used up), -ENOMEM. */
static inline int
ds__node_cache_alloc(struct ds__node_cache_thread *ct, void **out)
{
	if (ct->ncache == 0) {
		int ret = ds__node_cache_refill(ct);

		if (ret != 0)
			return ret;
	}
	*out = ct->cache[--ct->ncache];
	return 0;
}

/* ds__node_cache_free -- give free node @n (never reachable, or one grace
 * period past its retirement) to @ct's cache, spilling a batch to the
 * shared pool when the cache is full */
static inline void
ds__node_cache_free(struct ds__node_cache_thread *ct, void *n)
{
	if (ct->ncache == 2 * ct->nc->batch)
		ds__node_cache_spill(ct);
	ct->cache[ct->ncache++] = n;
}

/* ds__node_cache_retire -- retire unlinked node @n through @mt (@ct's
 * owner's MCAS handle), outside any guard; if mcas cannot take it now (out
 * of memory), keep it on the orphan chain: ds__node_cache_retry() retires
 * it later, which only lengthens its grace period */
void ds__node_cache_retire(struct ds__node_cache_thread *ct, struct mcas_thread *mt, void *n);

/* The slow path of ds__node_cache_retry(). */
void ds__node_cache_retry_orphans(struct ds__node_cache_thread *ct, struct mcas_thread *mt);

/* ds__node_cache_retry -- retire what ds__node_cache_retire() could not;
 * at the start of every operation that may retire */
static inline void
ds__node_cache_retry(struct ds__node_cache_thread *ct, struct mcas_thread *mt)
{
	if (ct->orphans != NULL)
		ds__node_cache_retry_orphans(ct, mt);
}

/* ---- checks (under nc->lock, quiescent) ---- */

void ds__node_cache_lock(struct ds__node_cache *nc);
void ds__node_cache_unlock(struct ds__node_cache *nc);

/* ds__node_cache_ptr_cmp -- qsort()/bsearch() order of uintptr_t */
int ds__node_cache_ptr_cmp(const void *a, const void *b);

/* ds__node_cache_sorted_slabs -- a malloc()ed sorted copy of the slab
 * addresses, for ds__node_cache_owns(); NULL when out of memory */
uintptr_t *ds__node_cache_sorted_slabs(const struct ds__node_cache *nc);

/* ds__node_cache_owns -- whether @p is the start of a node of @nc (@slabs:
 * from ds__node_cache_sorted_slabs()) */
bool ds__node_cache_owns(const struct ds__node_cache *nc, uintptr_t p, const uintptr_t *slabs);

/*
 * ds__node_cache_check -- every node in the shared pool, a handle's cache
 * or its orphans must be a node of @nc not in @reach (@nreach reachable
 * nodes, sorted), and reachable + free + retired must be the nodes owned.
 * Sets *@free and *@retired (orphans and nodes in a grace period).
 * Return: NULL, or @buf describing the violation (@what names the
 * structure: "list", "tree").
 */
const char *ds__node_cache_check(const struct ds__node_cache *nc, const uintptr_t *slabs,
	const uintptr_t *reach, uint64_t nreach, const char *what, uint64_t *free,
	uint64_t *retired, char *buf, size_t len);

#endif
