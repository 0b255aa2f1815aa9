/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/node_cache.c -- free nodes of the MCAS structures (node_cache.h):
 * slabs, the shared pool, per-thread caches, retirement and accounting.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_cache.h"

_Static_assert(DS__NODE_CACHE_MAX % 2 == 0, "a cache holds two batches");

/* nc_next_orphan -- the orphan after @n on its chain */
static inline void *
nc_next_orphan(const struct ds__node_cache *nc, void *n)
{
	return (void *)(uintptr_t)*(uint64_t *)((char *)n + nc->aux_off);
}

/* ds__node_cache_init -- see node_cache.h */
int
ds__node_cache_init(struct ds__node_cache *nc, size_t node_size, size_t aux_off,
	unsigned slab_nodes, unsigned batch_max, void *arena, uint64_t arena_nodes)
{
	memset(nc, 0, sizeof(*nc));
	if (arena != NULL) {
		nc->free_v = malloc(arena_nodes * sizeof(*nc->free_v));
		if (nc->free_v == NULL)
			return -ENOMEM;
		nc->free_cap = arena_nodes;
	}
	pthread_mutex_init(&nc->lock, NULL);
	nc->node_size = node_size;
	nc->aux_off = aux_off;
	nc->slab_nodes = slab_nodes;
	nc->persistent = arena != NULL;
	nc->arena = arena;
	nc->arena_nodes = arena_nodes;
	nc->nodes = arena_nodes;
	nc->batch = batch_max;
	if (arena != NULL && arena_nodes / 64 < batch_max)
		nc->batch = arena_nodes / 64 > 0 ? (unsigned)(arena_nodes / 64) : 1;
	return 0;
}

/* ds__node_cache_fini -- see node_cache.h */
void
ds__node_cache_fini(struct ds__node_cache *nc)
{
	for (size_t i = 0; i < nc->nslabs; i++)
		free(nc->slabs[i]);
	free(nc->slabs);
	free(nc->free_v);
	pthread_mutex_destroy(&nc->lock);
}

/* nc_slab_add_locked -- allocate a volatile slab into the shared pool
 * (nc->lock held, or nothing else runs) */
static int
nc_slab_add_locked(struct ds__node_cache *nc)
{
	size_t need = nc->nodes + nc->slab_nodes;
	char *slab;

	if (need > nc->free_cap) {
		size_t ncap = nc->free_cap * 2 > need ? nc->free_cap * 2 : need;
		void **nv = realloc(nc->free_v, ncap * sizeof(*nv));

		if (nv == NULL)
			return -ENOMEM;
		nc->free_v = nv;
		nc->free_cap = ncap;
	}
	if (nc->nslabs == nc->slabs_cap) {
		size_t ncap = nc->slabs_cap ? nc->slabs_cap * 2 : 16;
		void **ns = realloc(nc->slabs, ncap * sizeof(*ns));

		if (ns == NULL)
			return -ENOMEM;
		nc->slabs = ns;
		nc->slabs_cap = ncap;
	}
	slab = aligned_alloc(64, nc->slab_nodes * nc->node_size);
	if (slab == NULL)
		return -ENOMEM;
	memset(slab, 0, nc->slab_nodes * nc->node_size);
	nc->slabs[nc->nslabs++] = slab;
	nc->nodes += nc->slab_nodes;
	/* Pushed in reverse, so nodes are handed out from the slab's start. */
	for (unsigned i = nc->slab_nodes; i-- > 0;)
		nc->free_v[nc->free_n++] = slab + i * nc->node_size;
	return 0;
}

/* nc_grow_locked -- make the shared pool non-empty (nc->lock held) */
static int
nc_grow_locked(struct ds__node_cache *nc)
{
	if (nc->free_n > 0)
		return 0;
	return nc->persistent ? -ENOSPC : nc_slab_add_locked(nc);
}

/* ds__node_cache_take -- see node_cache.h */
int
ds__node_cache_take(struct ds__node_cache *nc, void **out)
{
	int ret;

	pthread_mutex_lock(&nc->lock);
	ret = nc_grow_locked(nc);
	if (ret == 0)
		*out = nc->free_v[--nc->free_n];
	pthread_mutex_unlock(&nc->lock);
	return ret;
}

/* ds__node_cache_refill -- move a batch from the shared pool into @ct's
 * empty cache (ds__node_cache_alloc()'s slow path) */
int
ds__node_cache_refill(struct ds__node_cache_thread *ct)
{
	struct ds__node_cache *nc = ct->nc;
	int ret;

	pthread_mutex_lock(&nc->lock);
	ret = nc_grow_locked(nc);
	while (ret == 0 && ct->ncache < nc->batch && nc->free_n > 0)
		ct->cache[ct->ncache++] = nc->free_v[--nc->free_n];
	pthread_mutex_unlock(&nc->lock);
	return ret;
}

/* ds__node_cache_spill -- move a batch from @ct's full cache to the shared
 * pool (ds__node_cache_free()'s slow path) */
void
ds__node_cache_spill(struct ds__node_cache_thread *ct)
{
	struct ds__node_cache *nc = ct->nc;

	pthread_mutex_lock(&nc->lock);
	for (unsigned i = 0; i < nc->batch; i++)
		nc->free_v[nc->free_n++] = ct->cache[--ct->ncache];
	pthread_mutex_unlock(&nc->lock);
}

/* nc_reclaim -- mcas_free_fn for retired nodes: runs on @ctx's owner
 * (inside its mcas_desc_begin() or mcas_thread_unregister()) one grace
 * period after the node was retired, so nobody holds a reference */
static void
nc_reclaim(void *obj, void *ctx)
{
	struct ds__node_cache_thread *ct = ctx;

	ct->retired--;
	ds__node_cache_free(ct, obj);
}

/* ds__node_cache_retire -- see node_cache.h */
void
ds__node_cache_retire(struct ds__node_cache_thread *ct, struct mcas_thread *mt, void *n)
{
	ct->retired++;
	if (mcas_retire(mt, n, nc_reclaim, ct) != 0) {
		*(uint64_t *)((char *)n + ct->nc->aux_off) = (uint64_t)(uintptr_t)ct->orphans;
		ct->orphans = n;
	}
}

/* ds__node_cache_retry_orphans -- ds__node_cache_retry()'s slow path */
void
ds__node_cache_retry_orphans(struct ds__node_cache_thread *ct, struct mcas_thread *mt)
{
	while (ct->orphans != NULL) {
		void *n = ct->orphans;

		if (mcas_retire(mt, n, nc_reclaim, ct) != 0)
			return;
		ct->orphans = nc_next_orphan(ct->nc, n);
	}
}

/* ds__node_cache_thread_add -- see node_cache.h */
void
ds__node_cache_thread_add(struct ds__node_cache *nc, struct ds__node_cache_thread *ct)
{
	ct->nc = nc;
	pthread_mutex_lock(&nc->lock);
	ct->reg_next = nc->threads;
	if (nc->threads != NULL)
		nc->threads->reg_prev = ct;
	nc->threads = ct;
	nc->nthreads++;
	pthread_mutex_unlock(&nc->lock);
}

/* ds__node_cache_thread_remove -- see node_cache.h */
int
ds__node_cache_thread_remove(struct ds__node_cache_thread *ct, struct mcas_thread **mtp)
{
	struct ds__node_cache *nc = ct->nc;
	uint64_t lost = 0;
	int ret;

	ds__node_cache_retry(ct, *mtp);
	for (void *n = ct->orphans; n != NULL; n = nc_next_orphan(nc, n))
		lost++;
	/* Runs without nc->lock: its reclamation calls nc_reclaim(). */
	ret = mcas_thread_unregister(mtp);
	if (ret != 0)
		return ret;
	pthread_mutex_lock(&nc->lock);
	while (ct->ncache > 0)
		nc->free_v[nc->free_n++] = ct->cache[--ct->ncache];
	nc->lost += lost;
	if (ct->reg_prev != NULL)
		ct->reg_prev->reg_next = ct->reg_next;
	else
		nc->threads = ct->reg_next;
	if (ct->reg_next != NULL)
		ct->reg_next->reg_prev = ct->reg_prev;
	nc->nthreads--;
	pthread_mutex_unlock(&nc->lock);
	return 0;
}

/* ds__node_cache_nthreads -- see node_cache.h */
unsigned
ds__node_cache_nthreads(struct ds__node_cache *nc)
{
	unsigned n;

	pthread_mutex_lock(&nc->lock);
	n = nc->nthreads;
	pthread_mutex_unlock(&nc->lock);
	return n;
}

/* ds__node_cache_lock -- take nc->lock for a check */
void
ds__node_cache_lock(struct ds__node_cache *nc)
{
	pthread_mutex_lock(&nc->lock);
}

/* ds__node_cache_unlock -- release nc->lock after a check */
void
ds__node_cache_unlock(struct ds__node_cache *nc)
{
	pthread_mutex_unlock(&nc->lock);
}

/* ds__node_cache_ptr_cmp -- see node_cache.h */
int
ds__node_cache_ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* ds__node_cache_sorted_slabs -- see node_cache.h */
uintptr_t *
ds__node_cache_sorted_slabs(const struct ds__node_cache *nc)
{
	uintptr_t *slabs = malloc((nc->nslabs + 1) * sizeof(*slabs));

	if (slabs == NULL)
		return NULL;
	for (size_t i = 0; i < nc->nslabs; i++)
		slabs[i] = (uintptr_t)nc->slabs[i];
	qsort(slabs, nc->nslabs, sizeof(*slabs), ds__node_cache_ptr_cmp);
	return slabs;
}

/* ds__node_cache_owns -- see node_cache.h */
bool
ds__node_cache_owns(const struct ds__node_cache *nc, uintptr_t p, const uintptr_t *slabs)
{
	if (nc->persistent) {
		uintptr_t a = (uintptr_t)nc->arena;

		return p >= a && (p - a) % nc->node_size == 0 &&
			(p - a) / nc->node_size < nc->arena_nodes;
	}
	/* the last slab starting at or below p */
	size_t lo = 0, hi = nc->nslabs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (slabs[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && p < slabs[lo - 1] + nc->slab_nodes * nc->node_size &&
		(p - slabs[lo - 1]) % nc->node_size == 0;
}

/* nc_check_free -- @n, counted as free or retired, must be a node of @nc
 * and not reachable */
static const char *
nc_check_free(const struct ds__node_cache *nc, const void *n, const uintptr_t *slabs,
	const uintptr_t *reach, uint64_t nreach, const char *where, const char *what,
	char *buf, size_t len)
{
	uintptr_t p = (uintptr_t)n;

	if (!ds__node_cache_owns(nc, p, slabs))
		return snprintf(buf, len, "%s holds %p, not a node of the %s", where, n, what),
			buf;
	if (bsearch(&p, reach, nreach, sizeof(*reach), ds__node_cache_ptr_cmp) != NULL)
		return snprintf(buf, len, "%s holds the reachable node %p", where, n), buf;
	return NULL;
}

/* ds__node_cache_check -- see node_cache.h */
const char *
ds__node_cache_check(const struct ds__node_cache *nc, const uintptr_t *slabs,
	const uintptr_t *reach, uint64_t nreach, const char *what, uint64_t *free,
	uint64_t *retired, char *buf, size_t len)
{
	const char *err = NULL;

	for (size_t i = 0; i < nc->free_n && err == NULL; i++)
		err = nc_check_free(nc, nc->free_v[i], slabs, reach, nreach, "the shared pool",
			what, buf, len);
	*free = nc->free_n;
	*retired = nc->lost;
	for (const struct ds__node_cache_thread *t = nc->threads; t != NULL && err == NULL;
			t = t->reg_next) {
		for (unsigned i = 0; i < t->ncache && err == NULL; i++)
			err = nc_check_free(nc, t->cache[i], slabs, reach, nreach,
				"a thread's cache", what, buf, len);
		for (void *n = t->orphans; n != NULL && err == NULL; n = nc_next_orphan(nc, n))
			err = nc_check_free(nc, n, slabs, reach, nreach, "a thread's orphans",
				what, buf, len);
		*free += t->ncache;
		*retired += t->retired;
	}
	if (err == NULL && nreach + *free + *retired != nc->nodes)
		err = (snprintf(buf, len, "%llu reachable + %llu free + %llu retired nodes != "
			"%llu owned: nodes leaked or counted twice", (unsigned long long)nreach,
			(unsigned long long)*free, (unsigned long long)*retired,
			(unsigned long long)nc->nodes), buf);
	return err;
}
