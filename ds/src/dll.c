/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/dll.c -- the MCAS doubly-linked list (ds/dll.h): an ordered set
 * whose insert is one 2-word MCAS and whose remove is one 3-word MCAS.
 *
 * Shape. head <-> n1 <-> ... <-> nk <-> tail, keys strictly increasing, the
 * sentinels holding 0 and 2^64-1. Each node is {key, prev, next} in one cache
 * line; prev and next are MCAS target words ("links"), read only with
 * mcas_read() and written only by MCAS once the node is linked. The key is
 * written before the node is linked and never while it is reachable.
 *
 * Invariants, between MCASes (each MCAS keeps all of them):
 *   I1  for adjacent linked nodes A -> B: A->next == B and B->prev == A;
 *   I2  a linked node's next link is unmarked; a removed node's next link is
 *       marked DS_DLL_MARK_DELETED, and holds the successor it had when it
 *       was removed, forever (no MCAS expects a marked value);
 *   I3  keys increase strictly from head to tail.
 * insert(k) between pred and succ: {pred->next: succ -> new, succ->prev:
 * pred -> new}, new = {k, pred, succ} written (and flushed) before. Both
 * expected values hold only if pred and succ are still adjacent and pred is
 * not removed (a removed pred's next is marked), so the MCAS preserves I1-I3.
 * remove(k) of curr with pred and succ: {pred->next: curr -> succ,
 * succ->prev: curr -> pred, curr->next: succ -> succ|DELETED}. Marking in
 * the same MCAS is what makes a concurrent insert after curr (which expects
 * curr->next == its succ, unmarked) fail instead of linking a node behind a
 * removed one. Unlinking and marking are one atomic step, so "marked" is
 * exactly "not in the list" for a node that was ever linked.
 *
 * Traversal. A traversal starts at the head and follows next links,
 * stripping the mark. Every node it visits was in the list at some moment
 * during the traversal: the head always is; if X was, and the traversal
 * reads X->next == Y later, then either X is still linked (so Y is, by I1)
 * or X was removed in between and Y was linked at that removal (I2). So a
 * lookup that finds key k in a node whose next link it reads unmarked saw k
 * present at that read; one that finds it marked saw it removed during the
 * traversal; one that reaches a larger key without k linearizes as in the
 * lazy list (Heller et al., OPODIS'05), whose argument carries over since
 * marking and unlinking are simultaneous here. An update linearizes at its
 * successful MCAS, or where its lookup did when it returns 0. A failed MCAS
 * means another update succeeded on one of the words, so retrying from the
 * head is lock-free.
 *
 * Memory. A removed node is retired with mcas_retire() after its MCAS
 * returns (outside the traversal's guard), and handed back to the handle's
 * free-node cache when the MCAS epochs show one grace period. Traversals
 * run inside mcas_guard_enter()/exit(), and by the traversal argument above
 * a traversal only reaches nodes that were linked after it began, i.e. not
 * retired before it began, which is what the grace period protects.
 * Nodes, their caches and why their memory is type-stable (a reused node's
 * links are written with atomic stores) are node_cache.h's; a handle moves
 * DLL_BATCH nodes at a time.
 *
 * Persistence. Links hold pool offsets (address - pool base), so they stay
 * valid when the pool is mapped elsewhere, and a persistent MCAS instance
 * accepts the targets because they are in its pool. A new node's line is
 * pm_flush()ed before the linking MCAS; no fence of our own is needed,
 * because that MCAS's first CAS, a LOCK-prefixed instruction issued by this
 * thread, orders the flush before any word can refer to the node
 * (pm/persist.h pm_cas, thesis sect. 5.2.2). The MCAS is durable on return,
 * so an update is durable on return; a lookup only reports what mcas_read()
 * returned, which is durable. Nothing else of the list is written to the
 * pool after ds_dll_pmem_create(): free lists, caches and counters are
 * volatile, and ds_dll_pmem_open() rebuilds them from a walk of the durable
 * list after mcas_pmem_open() resolved every interrupted MCAS, so a node is
 * either reachable or free after a crash, never lost.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ds/dll.h>
#include <mcas/mcas.h>
#include <pm/area.h>
#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>
#include <pm/ptr.h>

#include "mcas_bind.h"
#include "node_cache.h"
#include "node_word.h"

#define DLL_PMEM_MAGIC 0x54534c4c44534d44ull /* "DMSDLLST" */
/* Most nodes a handle moves to or from the shared pool at a time. */
#define DLL_BATCH 32
/* Nodes per volatile slab: 4 KiB. */
#define DLL_SLAB_NODES 64
/* The low bits a node reference never has set. */
#define DLL_ALIGN_MASK ((uint64_t)DS_DLL_NODE_SIZE - 1)

_Static_assert((DS_DLL_MARK_DELETED & MCAS_VALUE_PORTABLE_MASK) == 0,
	"the deleted mark must not collide with MCAS's reserved bits");
_Static_assert(DS_DLL_MARK_DELETED < DS_DLL_NODE_SIZE,
	"the deleted mark must be below the node alignment");
_Static_assert(2 * DLL_BATCH <= DS__NODE_CACHE_MAX && 2 * DLL_BATCH <= 64,
	"ds/dll.h documents at most 64 cached nodes");

/* A node: one cache line. key, prev and next are what the algorithm uses;
 * aux is the node cache's orphan chain (volatile use only, never read after
 * a crash). */
struct ds_dll_node {
	uint64_t key;
	uint64_t prev;
	uint64_t next;
	uint64_t aux;
	uint64_t pad[4];
};
_Static_assert(sizeof(struct ds_dll_node) == DS_DLL_NODE_SIZE, "one cache line per node");

/* The first cache line of a persistent area; head, tail and the arena
 * follow. Written once, at creation, header last. */
struct ds_dll_pmem_header {
	struct pm_area_hdr area; /* magic, version, sizes, checksum (pm/area.h) */
	uint32_t node_size;
	uint32_t reserved;
	uint64_t capacity;  /* nodes besides the two sentinels */
	uint64_t area_off;  /* where it was formatted: a moved area is rejected */
	uint64_t spare;
};
_Static_assert(sizeof(struct ds_dll_pmem_header) == 64, "header is one cache line");

static const struct pm_area_type dll_area_type = {
	"list", DLL_PMEM_MAGIC, DS_DLL_PMEM_VERSION, sizeof(struct ds_dll_pmem_header)
};

struct ds_dll {
	struct mcas *m;
	bool persistent;
	uintptr_t base;          /* 0, or the pool's base: link = address - base */
	struct ds_dll_node *head, *tail;
	/* persistent */
	struct pm_pool *pool;
	struct ds_dll_pmem_header *hdr;
	struct ds_dll_node *arena; /* head, tail, then capacity nodes */
	uint64_t capacity;
	/* volatile */
	struct ds_dll_node *sentinels;
	/* The nodes besides the sentinels (ds_dll_check() calls only
	 * mcas_read() and mcas_value_mask() under nc.lock). */
	struct ds__node_cache nc;
};

struct ds_dll_thread {
	struct ds_dll *l;
	struct mcas_thread *t;
	struct ds__node_cache_thread nc;
};

/* ---- nodes and links ---- */

/* dll_link -- the link word value referring to @n */
static inline uint64_t
dll_link(const struct ds_dll *l, const struct ds_dll_node *n)
{
	return pm_off_from_addr(l->base, n);
}

/* dll_deref -- the node link @v refers to (mark stripped) */
static inline struct ds_dll_node *
dll_deref(const struct ds_dll *l, uint64_t v)
{
	return pm_off_to_addr(l->base, v & ~DLL_ALIGN_MASK);
}

/* dll_key -- a reachable node's key: written before the MCAS that published
 * the node, which the acquire load in mcas_read() that found it orders */
static inline uint64_t
dll_key(const struct ds_dll_node *n)
{
	return ds__word_load(&n->key);
}

/* ---- operations ---- */

/*
 * dll_find -- inside @h's guard: the first node whose key is >= @key, and
 * in *@predp the node whose next link led to it. pred may have been removed
 * meanwhile; the caller's MCAS expects pred->next unmarked and so detects it.
 */
static struct ds_dll_node *
dll_find(struct ds_dll_thread *h, uint64_t key, struct ds_dll_node **predp)
{
	const struct ds_dll *l = h->l;
	struct ds_dll_node *pred = l->head;
	struct ds_dll_node *curr = dll_deref(l, mcas_read(h->t, &pred->next));

	/* Terminates at the tail at the latest: its key exceeds every key. */
	while (dll_key(curr) < key) {
		pred = curr;
		curr = dll_deref(l, mcas_read(h->t, &curr->next));
	}
	*predp = pred;
	return curr;
}

/*
 * dll_begin -- mcas_desc_begin() inside @h's guard. When every descriptor
 * of the thread waits for a grace period (-EAGAIN), leave the guard before
 * yielding: two threads waiting inside guards would each hold back the
 * grace period the other waits for. The caller must then look again, since
 * references loaded before are no longer protected.
 */
static int
dll_begin(struct ds_dll_thread *h, struct mcas_desc **d)
{
	int ret = mcas_desc_begin(h->t, d);

	if (ret == -EAGAIN) {
		mcas_guard_exit(h->t);
		sched_yield();
		mcas_guard_enter(h->t);
	}
	return ret;
}

int
ds_dll_insert(struct ds_dll_thread *h, uint64_t key)
{
	struct ds_dll *l = h->l;
	struct ds_dll_node *node = NULL, *pred, *curr;
	int ret;

	if (key < DS_DLL_KEY_MIN || key > DS_DLL_KEY_MAX)
		return -EINVAL;
	ds__node_cache_retry(&h->nc, h->t);
	mcas_guard_enter(h->t);
	for (;;) {
		struct mcas_desc *d;

		curr = dll_find(h, key, &pred);
		if (dll_key(curr) == key) {
			if ((mcas_read(h->t, &curr->next) & DS_DLL_MARK_DELETED) == 0) {
				ret = 0; /* present: linked at this read (I2) */
				break;
			}
			/* Removed since we reached it, so it is unlinked too, and
			 * a new traversal will not reach it: look again. */
			continue;
		}
		/* Only now a node: a full arena must not fail an insert of a
		 * present key. */
		if (node == NULL) {
			void *fresh;

			ret = ds__node_cache_alloc(&h->nc, &fresh);
			if (ret != 0)
				break;
			node = fresh;
			ds__word_store(&node->key, key);
		}
		ds__word_store(&node->prev, dll_link(l, pred));
		ds__word_store(&node->next, dll_link(l, curr));
		/* The node's line is durable before any link can refer to it:
		 * the MCAS's first CAS, ours, orders this flush (no fence). */
		if (l->persistent)
			pm_flush(node, offsetof(struct ds_dll_node, aux));
		ret = dll_begin(h, &d);
		if (ret == -EAGAIN)
			continue;
		if (ret != 0)
			break;
		ret = mcas_desc_add(d, &pred->next, dll_link(l, curr), dll_link(l, node));
		if (ret == 0)
			ret = mcas_desc_add(d, &curr->prev, dll_link(l, pred), dll_link(l, node));
		if (ret != 0) {
			mcas_desc_abandon(d);
			break;
		}
		ret = mcas_desc_execute(d);
		if (ret != 0)
			break; /* 1: linked */
		/* 0: pred and curr are no longer adjacent, or pred was removed */
	}
	mcas_guard_exit(h->t);
	/* Not linked: nobody dereferenced the node (a failed descriptor's new
	 * values are never followed), so it is free at once. */
	if (ret != 1 && node != NULL)
		ds__node_cache_free(&h->nc, node);
	return ret;
}

int
ds_dll_remove(struct ds_dll_thread *h, uint64_t key)
{
	struct ds_dll *l = h->l;
	struct ds_dll_node *pred, *curr;
	int ret;

	if (key < DS_DLL_KEY_MIN || key > DS_DLL_KEY_MAX)
		return 0;
	ds__node_cache_retry(&h->nc, h->t);
	mcas_guard_enter(h->t);
	for (;;) {
		struct mcas_desc *d;
		struct ds_dll_node *succ;
		uint64_t next;

		curr = dll_find(h, key, &pred);
		if (dll_key(curr) != key) {
			ret = 0;
			break;
		}
		next = mcas_read(h->t, &curr->next);
		if (next & DS_DLL_MARK_DELETED)
			continue; /* removed by another thread: look again */
		succ = dll_deref(l, next);
		ret = dll_begin(h, &d);
		if (ret == -EAGAIN)
			continue;
		if (ret != 0)
			break;
		ret = mcas_desc_add(d, &pred->next, dll_link(l, curr), next);
		if (ret == 0)
			ret = mcas_desc_add(d, &succ->prev, dll_link(l, curr), dll_link(l, pred));
		if (ret == 0)
			ret = mcas_desc_add(d, &curr->next, next, next | DS_DLL_MARK_DELETED);
		if (ret != 0) {
			mcas_desc_abandon(d);
			break;
		}
		ret = mcas_desc_execute(d);
		if (ret != 0)
			break; /* 1: unlinked and marked */
	}
	mcas_guard_exit(h->t);
	/* Retired after leaving the guard: every traversal that may hold a
	 * reference started before this call, which is all mcas_retire()
	 * requires. */
	if (ret == 1)
		ds__node_cache_retire(&h->nc, h->t, curr);
	return ret;
}

bool
ds_dll_contains(struct ds_dll_thread *h, uint64_t key)
{
	struct ds_dll_node *pred, *curr;
	bool found;

	if (key < DS_DLL_KEY_MIN || key > DS_DLL_KEY_MAX)
		return false;
	mcas_guard_enter(h->t);
	curr = dll_find(h, key, &pred);
	found = dll_key(curr) == key &&
		(mcas_read(h->t, &curr->next) & DS_DLL_MARK_DELETED) == 0;
	mcas_guard_exit(h->t);
	return found;
}

/* ---- lists ---- */

/* dll_new -- a list's volatile part: its nodes are the @capacity at
 * @arena, or volatile slabs if @arena is NULL */
static int
dll_new(struct ds_dll **out, struct mcas *m, struct ds_dll_node *arena, uint64_t capacity)
{
	struct ds_dll *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return pm_error_set(-ENOMEM, "ds_dll: out of memory");
	if (ds__node_cache_init(&l->nc, sizeof(struct ds_dll_node),
			offsetof(struct ds_dll_node, aux), DLL_SLAB_NODES, DLL_BATCH, arena,
			capacity) != 0) {
		free(l);
		return pm_error_set(-ENOMEM, "ds_dll: out of memory for %llu free-node entries",
			(unsigned long long)capacity);
	}
	l->m = m;
	l->persistent = arena != NULL;
	*out = l;
	return 0;
}

/* dll_free -- release what dll_new() and the volatile nodes took */
static void
dll_free(struct ds_dll *l)
{
	ds__node_cache_fini(&l->nc);
	free(l->sentinels);
	free(l);
}

/* dll_sentinels_init -- an empty list: head <-> tail (single-threaded) */
static void
dll_sentinels_init(struct ds_dll *l)
{
	memset(l->head, 0, sizeof(*l->head));
	memset(l->tail, 0, sizeof(*l->tail));
	l->head->key = 0;
	l->head->next = dll_link(l, l->tail);
	l->tail->key = UINT64_MAX;
	l->tail->prev = dll_link(l, l->head);
}

int
ds_dll_new(struct ds_dll **out, struct mcas *m)
{
	struct ds_dll *l = NULL;
	int ret;

	pm_error_clear();
	if (out == NULL)
		return pm_error_set(-EINVAL, "ds_dll_new: no output pointer");
	ret = ds__mcas_bind(m, NULL, 0, 0, 0, "ds_dll", "list", NULL);
	if (ret != 0)
		return ret;
	ret = dll_new(&l, m, NULL, 0);
	if (ret != 0)
		return ret;
	l->sentinels = aligned_alloc(DS_DLL_NODE_SIZE, 2 * sizeof(struct ds_dll_node));
	if (l->sentinels == NULL) {
		dll_free(l);
		return pm_error_set(-ENOMEM, "ds_dll_new: out of memory");
	}
	l->base = 0;
	l->head = &l->sentinels[0];
	l->tail = &l->sentinels[1];
	dll_sentinels_init(l);
	*out = l;
	return 0;
}

size_t
ds_dll_pmem_area_size(uint64_t capacity)
{
	if (capacity == 0 || capacity > DS_DLL_PMEM_MAX_CAPACITY)
		return 0;
	return sizeof(struct ds_dll_pmem_header) +
		(size_t)(capacity + 2) * sizeof(struct ds_dll_node);
}

/* dll_pmem_new -- a persistent list bound to @m, @pool and the area at
 * @hdr (create and open; ds__mcas_bind checked them) */
static int
dll_pmem_new(struct ds_dll **out, struct mcas *m, struct pm_pool *pool,
	struct ds_dll_pmem_header *hdr, uint64_t capacity)
{
	struct ds_dll *l = NULL;
	int ret = dll_new(&l, m, (struct ds_dll_node *)(hdr + 1) + 2, capacity);
	if (ret != 0)
		return ret;
	l->pool = pool;
	l->hdr = hdr;
	l->base = (uintptr_t)pm_pool_base(pool);
	l->arena = (struct ds_dll_node *)(hdr + 1);
	l->head = &l->arena[0];
	l->tail = &l->arena[1];
	l->capacity = capacity;
	*out = l;
	return 0;
}

int
ds_dll_pmem_create(struct ds_dll **out, struct mcas *m, struct pm_pool *pool,
	uint64_t area_off, uint64_t capacity)
{
	size_t len = ds_dll_pmem_area_size(capacity);
	struct ds_dll_pmem_header *hdr;
	struct ds_dll *l = NULL;
	void *area;
	int ret;

	pm_error_clear();
	if (out == NULL)
		return pm_error_set(-EINVAL, "ds_dll_pmem_create: no output pointer");
	if (len == 0)
		return pm_error_set(-EINVAL, "ds_dll_pmem_create: capacity %llu is not in 1..%llu",
			(unsigned long long)capacity,
			(unsigned long long)DS_DLL_PMEM_MAX_CAPACITY);
	ret = ds__mcas_bind(m, pool, area_off, len, DS_DLL_NODE_SIZE, "ds_dll", "list", &area);
	if (ret != 0)
		return ret;
	hdr = area;
	ret = dll_pmem_new(&l, m, pool, hdr, capacity);
	if (ret != 0)
		return ret;

	/* Invalidate the header first, then the sentinels, then the header:
	 * a crash anywhere before the end leaves a header that does not
	 * check. Free nodes are not written: recovery ignores them. */
	pm_area_invalidate(&hdr->area);
	dll_sentinels_init(l);
	pm_persist(l->arena, 2 * sizeof(struct ds_dll_node));
	hdr->node_size = DS_DLL_NODE_SIZE;
	hdr->reserved = 0;
	hdr->capacity = capacity;
	hdr->area_off = area_off;
	hdr->spare = 0;
	pm_area_seal(&hdr->area, &dll_area_type, len);

	/* Pushed in reverse, so nodes are handed out from the arena's start. */
	for (uint64_t i = capacity + 2; i-- > 2;)
		ds__node_cache_put(&l->nc, &l->arena[i]);
	*out = l;
	return 0;
}

/*
 * dll_recover -- walk the durable list of @l from the head, marking every
 * node reached in @seen (indexed by arena position), and check it; every
 * unmarked node is then free. Raw loads: no other thread runs, and
 * mcas_pmem_open() left no descriptor reference in any word.
 */
static int
dll_recover(struct ds_dll *l, uint8_t *seen, uint64_t *size)
{
	uint64_t arena_link = dll_link(l, l->arena);
	uint64_t n = l->capacity + 2;
	struct ds_dll_node *prev = l->head;
	uint64_t count = 0;

	if (ds__word_load(&l->head->key) != 0 || ds__word_load(&l->head->prev) != 0)
		return pm_error_set(PM_E_CORRUPT, "ds_dll: the head sentinel is damaged");
	seen[0] = 1;
	for (;;) {
		uint64_t v = ds__word_load(&prev->next), idx, key;
		struct ds_dll_node *curr;

		if (v & DS_DLL_MARK_DELETED)
			return pm_error_set(PM_E_CORRUPT,
				"ds_dll: a reachable node (key %llu) is marked deleted",
				(unsigned long long)ds__word_load(&prev->key));
		if (v & DLL_ALIGN_MASK)
			return pm_error_set(PM_E_CORRUPT,
				"ds_dll: link %#llx after key %llu is not a node "
				"(an MCAS descriptor left by a crash? run mcas_pmem_open() first)",
				(unsigned long long)v, (unsigned long long)ds__word_load(&prev->key));
		if (v < arena_link || (v - arena_link) / DS_DLL_NODE_SIZE >= n)
			return pm_error_set(PM_E_CORRUPT,
				"ds_dll: link %#llx after key %llu leaves the arena",
				(unsigned long long)v, (unsigned long long)ds__word_load(&prev->key));
		idx = (v - arena_link) / DS_DLL_NODE_SIZE;
		curr = &l->arena[idx];
		if (seen[idx])
			return pm_error_set(PM_E_CORRUPT, "ds_dll: node %llu is reached twice",
				(unsigned long long)idx);
		if (ds__word_load(&curr->prev) != dll_link(l, prev))
			return pm_error_set(PM_E_CORRUPT,
				"ds_dll: the prev link of node %llu (key %llu) is "
				"%#llx, not its predecessor", (unsigned long long)idx,
				(unsigned long long)ds__word_load(&curr->key),
				(unsigned long long)ds__word_load(&curr->prev));
		seen[idx] = 1;
		key = ds__word_load(&curr->key);
		if (curr == l->tail) {
			if (key != UINT64_MAX || ds__word_load(&curr->next) != 0)
				return pm_error_set(PM_E_CORRUPT,
					"ds_dll: the tail sentinel is damaged");
			break;
		}
		if (key <= ds__word_load(&prev->key) || key > DS_DLL_KEY_MAX)
			return pm_error_set(PM_E_CORRUPT, "ds_dll: key %llu follows key %llu",
				(unsigned long long)key, (unsigned long long)ds__word_load(&prev->key));
		count++;
		prev = curr;
	}
	*size = count;
	return 0;
}

int
ds_dll_pmem_open(struct ds_dll **out, struct mcas *m, struct pm_pool *pool,
	uint64_t area_off)
{
	struct ds_dll_pmem_header *hdr;
	struct ds_dll *l = NULL;
	uint64_t capacity, size;
	uint8_t *seen;
	void *area;
	int ret;

	pm_error_clear();
	if (out == NULL)
		return pm_error_set(-EINVAL, "ds_dll_pmem_open: no output pointer");
	ret = ds__mcas_bind(m, pool, area_off, sizeof(*hdr), DS_DLL_NODE_SIZE, "ds_dll",
		"list", &area);
	if (ret != 0)
		return ret;
	hdr = area;
	ret = pm_area_check(&hdr->area, &dll_area_type, "ds_dll_pmem_open");
	if (ret != 0)
		return ret;
	capacity = hdr->capacity;
	if (hdr->node_size != DS_DLL_NODE_SIZE || ds_dll_pmem_area_size(capacity) == 0 ||
			hdr->area.area_size != ds_dll_pmem_area_size(capacity))
		return pm_error_set(PM_E_CORRUPT,
			"ds_dll_pmem_open: the list header describes an impossible area");
	if (hdr->area_off != area_off)
		return pm_error_set(PM_E_CORRUPT,
			"ds_dll_pmem_open: the list area was formatted at %#llx, not %#llx",
			(unsigned long long)hdr->area_off, (unsigned long long)area_off);
	if (pm_pool_ptr(pool, area_off, hdr->area.area_size, &area) != 0)
		return pm_error_set(PM_E_CORRUPT,
			"ds_dll_pmem_open: the list area does not fit the pool");
	ret = dll_pmem_new(&l, m, pool, hdr, capacity);
	if (ret != 0)
		return ret;
	seen = calloc(capacity + 2, 1);
	if (seen == NULL) {
		dll_free(l);
		return pm_error_set(-ENOMEM, "ds_dll_pmem_open: out of memory");
	}
	ret = dll_recover(l, seen, &size);
	if (ret == 0) {
		for (uint64_t i = capacity + 2; i-- > 2;)
			if (!seen[i])
				ds__node_cache_put(&l->nc, &l->arena[i]);
	}
	free(seen);
	if (ret != 0) {
		dll_free(l);
		return ret;
	}
	*out = l;
	return 0;
}

int
ds_dll_close(struct ds_dll **lp)
{
	struct ds_dll *l = lp ? *lp : NULL;
	unsigned n;

	pm_error_clear();
	if (l == NULL)
		return 0;
	n = ds__node_cache_nthreads(&l->nc);
	if (n != 0)
		return pm_error_set(-EBUSY, "ds_dll_close: %u threads are still registered", n);
	/* Every handle unregistered its mcas_thread, which detached every
	 * descriptor it had: no reclamation step can touch a node any more. */
	dll_free(l);
	*lp = NULL;
	return 0;
}

bool
ds_dll_is_persistent(const struct ds_dll *l)
{
	return l->persistent;
}

/* ---- threads ---- */

int
ds_dll_thread_register(struct ds_dll *l, struct ds_dll_thread **out)
{
	struct ds_dll_thread *h;
	int ret;

	pm_error_clear();
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return pm_error_set(-ENOMEM, "ds_dll_thread_register: out of memory");
	ret = mcas_thread_register(l->m, &h->t);
	if (ret != 0) {
		free(h);
		return pm_error_set(ret, "ds_dll_thread_register: mcas_thread_register: %d", ret);
	}
	h->l = l;
	ds__node_cache_thread_add(&l->nc, &h->nc);
	*out = h;
	return 0;
}

int
ds_dll_thread_unregister(struct ds_dll_thread **hp)
{
	struct ds_dll_thread *h = hp ? *hp : NULL;
	int ret;

	pm_error_clear();
	if (h == NULL)
		return 0;
	ret = ds__node_cache_thread_remove(&h->nc, &h->t);
	if (ret != 0)
		return pm_error_set(ret,
			"ds_dll_thread_unregister: mcas_thread_unregister: %d", ret);
	free(h);
	*hp = NULL;
	return 0;
}

struct mcas_thread *
ds_dll_thread_mcas(struct ds_dll_thread *h)
{
	return h->t;
}

/* ---- whole-list inspection (quiescent) ---- */

size_t
ds_dll_keys(struct ds_dll_thread *h, uint64_t *keys, size_t max)
{
	const struct ds_dll *l = h->l;
	struct ds_dll_node *curr;
	size_t n = 0;

	mcas_guard_enter(h->t);
	curr = dll_deref(l, mcas_read(h->t, &l->head->next));
	/* Bounded: a damaged list must not loop forever. */
	while (curr != l->tail && n <= l->nc.nodes) {
		if (n < max)
			keys[n] = dll_key(curr);
		n++;
		curr = dll_deref(l, mcas_read(h->t, &curr->next));
	}
	mcas_guard_exit(h->t);
	return n > l->nc.nodes ? 0 : n;
}

/* dll_owns -- whether @n is a node of @l: a sentinel or one of its node
 * cache's (@slabs: from ds__node_cache_sorted_slabs()) */
static bool
dll_owns(const struct ds_dll *l, const struct ds_dll_node *n, const uintptr_t *slabs)
{
	return n == l->head || n == l->tail || ds__node_cache_owns(&l->nc, (uintptr_t)n, slabs);
}

/* dll_check_walk -- the link checks of ds_dll_check(); fills @reach (sorted
 * afterwards by the caller) with the reachable nodes */
static const char *
dll_check_walk(struct ds_dll_thread *h, const uintptr_t *slabs, uintptr_t *reach,
	struct ds_dll_stats *st, char *buf, size_t len)
{
	const struct ds_dll *l = h->l;
	uint64_t mask = mcas_value_mask(l->m);
	struct ds_dll_node *prev = l->head, *curr;

	if (dll_key(l->head) != 0 || mcas_read(h->t, &l->head->prev) != 0)
		return snprintf(buf, len, "the head sentinel is damaged"), buf;
	for (;;) {
		uint64_t raw = ds__word_load(&prev->next);
		uint64_t v = mcas_read(h->t, &prev->next);

		st->installed += (raw & mask) != 0;
		if (v & DS_DLL_MARK_DELETED)
			return snprintf(buf, len, "node with key %llu is reachable but marked deleted",
				(unsigned long long)dll_key(prev)), buf;
		curr = dll_deref(l, v);
		if ((v & DLL_ALIGN_MASK) != 0 || !dll_owns(l, curr, slabs))
			return snprintf(buf, len, "link %#llx after key %llu is not a node of the list",
				(unsigned long long)v, (unsigned long long)dll_key(prev)), buf;
		raw = ds__word_load(&curr->prev);
		st->installed += (raw & mask) != 0;
		if (mcas_read(h->t, &curr->prev) != dll_link(l, prev))
			return snprintf(buf, len, "prev link of key %llu does not lead back to key %llu",
				(unsigned long long)dll_key(curr), (unsigned long long)dll_key(prev)),
				buf;
		if (curr == l->tail)
			break;
		if (dll_key(curr) <= dll_key(prev))
			return snprintf(buf, len, "key %llu follows key %llu: not strictly increasing",
				(unsigned long long)dll_key(curr), (unsigned long long)dll_key(prev)),
				buf;
		if (st->size == l->nc.nodes)
			return snprintf(buf, len, "more reachable nodes than the list owns (%llu)",
				(unsigned long long)l->nc.nodes), buf;
		reach[st->size++] = (uintptr_t)curr;
		prev = curr;
	}
	if (dll_key(l->tail) != UINT64_MAX || mcas_read(h->t, &l->tail->next) != 0)
		return snprintf(buf, len, "the tail sentinel is damaged"), buf;
	return NULL;
}

const char *
ds_dll_check(struct ds_dll_thread *h, struct ds_dll_stats *stp, char *buf, size_t len)
{
	struct ds_dll *l = h->l;
	struct ds_dll_stats st = { 0 };
	uintptr_t *slabs = NULL, *reach = NULL;
	const char *err = NULL;

	if (len == 0)
		return "";
	buf[0] = '\0';
	ds__node_cache_lock(&l->nc);
	st.nodes = l->nc.nodes;
	reach = malloc((l->nc.nodes + 1) * sizeof(*reach));
	slabs = ds__node_cache_sorted_slabs(&l->nc);
	if (reach == NULL || slabs == NULL) {
		err = (snprintf(buf, len, "out of memory for the check"), buf);
		goto out;
	}
	err = dll_check_walk(h, slabs, reach, &st, buf, len);
	if (err != NULL)
		goto out;
	qsort(reach, st.size, sizeof(*reach), ds__node_cache_ptr_cmp);
	err = ds__node_cache_check(&l->nc, slabs, reach, st.size, "list", &st.free, &st.retired,
		buf, len);
out:
	ds__node_cache_unlock(&l->nc);
	free(reach);
	free(slabs);
	if (stp != NULL)
		*stp = st;
	return err;
}
