/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/bztree_recovery.c -- the B+-tree's trees: configuration, volatile
 * and persistent creation, opening a persistent tree (recovery rebuilds the
 * free lists from a walk of the tree), close, and ds_bztree_check(), which
 * walks the tree the same way. The layout and invariants are described at
 * the top of bztree.c.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/area.h>
#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>

#include "bztree_internal.h"
#include "mcas_bind.h"
#include "node_cache.h"

static const struct pm_area_type bz_area_type = {
	"tree", BZ_PMEM_MAGIC, DS_BZTREE_PMEM_VERSION, sizeof(struct bz_pmem_header)
};

/* ---- trees ---- */

/* ds_bztree_config_init -- documented defaults */
void
ds_bztree_config_init(struct ds_bztree_config *cfg)
{
	cfg->node_capacity = DS_BZTREE_DEFAULT_CAPACITY;
}

/* bz_cfg_cap -- the node capacity @cfg asks for, or 0 if invalid */
static unsigned
bz_cfg_cap(const struct ds_bztree_config *cfg)
{
	unsigned cap = cfg != NULL ? cfg->node_capacity : DS_BZTREE_DEFAULT_CAPACITY;

	return cap >= DS_BZTREE_MIN_CAPACITY && cap <= DS_BZTREE_MAX_CAPACITY ? cap : 0;
}

/* bz_node_size -- bytes of a node of @cap records, a multiple of 64 */
static size_t
bz_node_size(unsigned cap)
{
	return (BZ_HEADER_SIZE + (size_t)cap * BZ_REC_SIZE + 63) & ~(size_t)63;
}

/* bz_new -- a tree's volatile part: its nodes are the @nodes at @arena, or
 * volatile slabs if @arena is NULL */
static int
bz_new(struct ds_bztree **out, struct mcas *m, unsigned cap, char *arena, uint64_t nodes)
{
	struct ds_bztree *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return pm_error_set(-ENOMEM, "ds_bztree: out of memory");
	if (ds__node_cache_init(&t->nc, bz_node_size(cap), offsetof(struct bz_node, aux),
			BZ_SLAB_NODES, BZ_BATCH, arena, nodes) != 0) {
		free(t);
		return pm_error_set(-ENOMEM,
			"ds_bztree: out of memory for %llu free-node entries",
			(unsigned long long)nodes);
	}
	t->m = m;
	t->persistent = arena != NULL;
	t->cap = cap;
	t->node_size = bz_node_size(cap);
	t->arena = arena;
	*out = t;
	return 0;
}

/* bz_free -- release what bz_new() and the volatile nodes took */
static void
bz_free(struct ds_bztree *t)
{
	ds__node_cache_fini(&t->nc);
	free(t->root_line);
	free(t);
}

/* ds_bztree_new -- a volatile tree: one empty root leaf */
int
ds_bztree_new(struct ds_bztree **out, struct mcas *m, const struct ds_bztree_config *cfg)
{
	struct ds_bztree *t = NULL;
	void *leaf;
	unsigned cap = bz_cfg_cap(cfg);
	int ret;

	pm_error_clear();
	if (out == NULL)
		return pm_error_set(-EINVAL, "ds_bztree_new: no output pointer");
	if (cap == 0)
		return pm_error_set(-EINVAL,
			"ds_bztree_new: node capacity %u is not in %u..%u", cfg->node_capacity,
			DS_BZTREE_MIN_CAPACITY, DS_BZTREE_MAX_CAPACITY);
	ret = ds__mcas_bind(m, NULL, 0, 0, 0, "ds_bztree", "tree", NULL);
	if (ret != 0)
		return ret;
	ret = bz_new(&t, m, cap, NULL, 0);
	if (ret != 0)
		return ret;
	t->root_line = aligned_alloc(64, 64);
	if (t->root_line == NULL || ds__node_cache_take(&t->nc, &leaf) != 0) {
		bz_free(t);
		return pm_error_set(-ENOMEM, "ds_bztree_new: out of memory");
	}
	t->root = t->root_line;
	ds__bztree_build(t, leaf, 0, NULL, 0);
	ds__word_store(t->root, bz_ref(t, leaf));
	*out = t;
	return 0;
}

/* ds_bztree_pmem_area_size -- bytes of an area for @nodes nodes; 0 if invalid */
size_t
ds_bztree_pmem_area_size(const struct ds_bztree_config *cfg, uint64_t nodes)
{
	unsigned cap = bz_cfg_cap(cfg);

	if (cap == 0 || nodes < 2 || nodes > DS_BZTREE_PMEM_MAX_NODES)
		return 0;
	return sizeof(struct bz_pmem_header) + 64 + (size_t)nodes * bz_node_size(cap);
}

/* bz_pmem_new -- a persistent tree bound to @m, @pool and the area at @hdr
 * (create and open; ds__mcas_bind checked them) */
static int
bz_pmem_new(struct ds_bztree **out, struct mcas *m, struct pm_pool *pool,
	struct bz_pmem_header *hdr, unsigned cap, uint64_t nodes)
{
	struct ds_bztree *t = NULL;
	uint64_t *root = (uint64_t *)(hdr + 1);
	int ret = bz_new(&t, m, cap, (char *)hdr + 128, nodes);
	if (ret != 0)
		return ret;
	t->pool = pool;
	t->hdr = hdr;
	t->base = (uintptr_t)pm_pool_base(pool);
	t->root = root;
	*out = t;
	return 0;
}

/* bz_arena_node -- node @i of the persistent arena */
static struct bz_node *
bz_arena_node(const struct ds_bztree *t, uint64_t i)
{
	return (struct bz_node *)(t->arena + i * t->node_size);
}

/* ds_bztree_pmem_create -- format the area at @area_off with an empty root leaf */
int
ds_bztree_pmem_create(struct ds_bztree **out, struct mcas *m, struct pm_pool *pool,
	uint64_t area_off, const struct ds_bztree_config *cfg, uint64_t nodes)
{
	size_t len = ds_bztree_pmem_area_size(cfg, nodes);
	struct bz_pmem_header *hdr;
	struct ds_bztree *t = NULL;
	struct bz_node *leaf;
	void *area;
	int ret;

	pm_error_clear();
	if (out == NULL)
		return pm_error_set(-EINVAL, "ds_bztree_pmem_create: no output pointer");
	if (len == 0)
		return pm_error_set(-EINVAL,
			"ds_bztree_pmem_create: node capacity not in %u..%u or %llu nodes not in 2..%llu",
			DS_BZTREE_MIN_CAPACITY, DS_BZTREE_MAX_CAPACITY, (unsigned long long)nodes,
			(unsigned long long)DS_BZTREE_PMEM_MAX_NODES);
	ret = ds__mcas_bind(m, pool, area_off, len, 64, "ds_bztree", "tree", &area);
	if (ret != 0)
		return ret;
	hdr = area;
	ret = bz_pmem_new(&t, m, pool, hdr, bz_cfg_cap(cfg), nodes);
	if (ret != 0)
		return ret;

	/* Invalidate the header, write the empty root leaf and the root word,
	 * then the header: a crash before the end leaves a header that does
	 * not check. Other nodes are not written: recovery ignores them. */
	pm_area_invalidate(&hdr->area);
	leaf = bz_arena_node(t, 0);
	ds__bztree_build(t, leaf, 0, NULL, 0);
	ds__word_store(t->root, bz_ref(t, leaf));
	pm_persist(t->root, sizeof(*t->root));
	hdr->capacity = t->cap;
	hdr->node_size = (uint32_t)t->node_size;
	hdr->nodes = nodes;
	hdr->area_off = area_off;
	hdr->reserved = 0;
	pm_area_seal(&hdr->area, &bz_area_type, len);

	/* Pushed in reverse, so nodes are handed out from the arena's start. */
	for (uint64_t i = nodes; i-- > 1;)
		ds__node_cache_put(&t->nc, bz_arena_node(t, i));
	*out = t;
	return 0;
}

/* ---- walking the whole tree (quiescent: check and recovery) ---- */

struct bz_walk {
	struct ds_bztree *t;
	struct ds_bztree_thread *h; /* NULL: raw loads (recovery) */
	const uintptr_t *slabs;     /* sorted (ds__node_cache_sorted_slabs()) */
	uintptr_t *reach;           /* reachable nodes, in visiting order */
	uint64_t nreach;
	struct bz_kv *keys;         /* one leaf's live keys */
	struct ds_bztree_stats *st;
	char *buf;
	size_t len;
};

/* bz_wread -- a target word during a walk */
static uint64_t
bz_wread(const struct bz_walk *w, const uint64_t *p)
{
	return w->h != NULL ? mcas_read(w->h->mt, p) : ds__word_load(p);
}

/* bz_owns -- the node @v refers to if it is a node of the tree, else NULL */
static struct bz_node *
bz_owns(const struct bz_walk *w, uint64_t v)
{
	uintptr_t p = (uintptr_t)bz_deref(w->t, v);

	return ds__node_cache_owns(&w->t->nc, p, w->slabs) ? (struct bz_node *)p : NULL;
}

#define BZ_FAIL(w, ...) (snprintf((w)->buf, (w)->len, __VA_ARGS__), (w)->buf)

/* bz_walk_node -- check the subtree of @v, at @level (or any level if
 * @level < 0) with range [@lo, @hi) (unbounded if !@has_hi) */
static const char *
bz_walk_node(struct bz_walk *w, uint64_t v, int level, uint64_t lo, uint64_t hi, bool has_hi,
	bool is_root)
{
	struct ds_bztree *t = w->t;
	uint64_t mask = mcas_value_mask(t->m);
	struct bz_node *n = bz_owns(w, v);
	uint64_t s, lv, cnt;

	if ((v & mask) != 0)
		return BZ_FAIL(w, "reference %#llx holds an MCAS descriptor (run mcas_pmem_open() "
			"first)", (unsigned long long)v);
	if (n == NULL)
		return BZ_FAIL(w, "reference %#llx is not a node of the tree", (unsigned long long)v);
	if (w->nreach == t->nc.nodes)
		return BZ_FAIL(w, "more reachable nodes than the tree owns (%llu)",
			(unsigned long long)t->nc.nodes);
	w->reach[w->nreach++] = (uintptr_t)n;
	s = bz_wread(w, &n->status);
	lv = ds__word_load(&n->level);
	cnt = ds__word_load(&n->n);
	if ((s & mask) != 0)
		return BZ_FAIL(w, "a node's status holds an MCAS descriptor");
	if (bz_frozen(s))
		return BZ_FAIL(w, "a frozen node (level %llu) is reachable", (unsigned long long)lv);
	if (level >= 0 ? lv != (uint64_t)level : lv >= DS_BZTREE_MAX_HEIGHT)
		return BZ_FAIL(w, "a node at level %llu where level %d belongs",
			(unsigned long long)lv, level);
	if (is_root)
		w->st->height = lv + 1;
	if (lv > 0) {
		w->st->inner++;
		if (cnt < (is_root ? 2u : 1u) || cnt > t->cap)
			return BZ_FAIL(w, "an inner node at level %llu has %llu children",
				(unsigned long long)lv, (unsigned long long)cnt);
		if (ds__word_load(&n->rec[0].key) != lo)
			return BZ_FAIL(w, "an inner node's lower bound %llu is not its parent's "
				"separator %llu", (unsigned long long)ds__word_load(&n->rec[0].key),
				(unsigned long long)lo);
		for (uint64_t i = 0; i < cnt; i++) {
			uint64_t k = ds__word_load(&n->rec[i].key);
			bool last = i + 1 == cnt;
			uint64_t khi = last ? hi : ds__word_load(&n->rec[i + 1].key);
			const char *err;

			if (i > 0 && (k <= ds__word_load(&n->rec[i - 1].key) || (has_hi && k >= hi)))
				return BZ_FAIL(w, "separator %llu of a level-%llu node is out of order "
					"or outside its range", (unsigned long long)k,
					(unsigned long long)lv);
			err = bz_walk_node(w, bz_wread(w, &n->rec[i].w), (int)lv - 1, k, khi,
				last ? has_hi : true, false);
			if (err != NULL)
				return err;
		}
		return NULL;
	}
	/* A leaf. */
	w->st->leaves++;
	if (bz_count(s) > t->cap || cnt > bz_count(s))
		return BZ_FAIL(w, "a leaf has %u slots used and %llu sorted of %u", bz_count(s),
			(unsigned long long)cnt, t->cap);
	unsigned nlive = 0;

	for (unsigned i = 0; i < bz_count(s); i++) {
		uint64_t meta = bz_wread(w, &n->rec[i].w), k = ds__word_load(&n->rec[i].key);

		if (meta != 0 && meta != BZ_META_LIVE && meta != BZ_META_DEAD)
			return BZ_FAIL(w, "a leaf record's metadata is %#llx", (unsigned long long)meta);
		if (i < cnt && (meta == 0 || (i > 0 && k <= ds__word_load(&n->rec[i - 1].key))))
			return BZ_FAIL(w, "a leaf's sorted part is unsorted or unpublished at slot %u",
				i);
		if (meta != BZ_META_LIVE)
			continue;
		if (k < lo || (has_hi && k >= hi))
			return BZ_FAIL(w, "key %llu is outside its leaf's range [%llu, %s%llu)",
				(unsigned long long)k, (unsigned long long)lo, has_hi ? "" : "inf ",
				(unsigned long long)hi);
		w->keys[nlive].key = k;
		w->keys[nlive++].value = 0;
	}
	if (nlive != bz_live(s))
		return BZ_FAIL(w, "a leaf holds %u live records but its status counts %u", nlive,
			bz_live(s));
	qsort(w->keys, nlive, sizeof(*w->keys), ds__bztree_kv_cmp);
	for (unsigned i = 1; i < nlive; i++)
		if (w->keys[i].key == w->keys[i - 1].key)
			return BZ_FAIL(w, "key %llu is live twice in one leaf",
				(unsigned long long)w->keys[i].key);
	w->st->size += nlive;
	return NULL;
}

/* bz_walk_tree -- walk from the root; on success w->reach is sorted and
 * checked for nodes reached twice */
static const char *
bz_walk_tree(struct bz_walk *w)
{
	const char *err;

	err = bz_walk_node(w, bz_wread(w, w->t->root), -1, 0, 0, false, true);
	if (err != NULL)
		return err;
	qsort(w->reach, w->nreach, sizeof(*w->reach), ds__node_cache_ptr_cmp);
	for (uint64_t i = 1; i < w->nreach; i++)
		if (w->reach[i] == w->reach[i - 1])
			return BZ_FAIL(w, "a node is reached twice");
	return NULL;
}

/* ds_bztree_pmem_open -- check the header, walk the tree, rebuild the free lists */
int
ds_bztree_pmem_open(struct ds_bztree **out, struct mcas *m, struct pm_pool *pool,
	uint64_t area_off)
{
	struct bz_pmem_header *hdr;
	struct ds_bztree *t = NULL;
	struct ds_bztree_stats st = { 0 };
	char msg[200];
	struct bz_walk w = { 0 };
	const char *err;
	unsigned cap;
	void *area;
	int ret;

	pm_error_clear();
	if (out == NULL)
		return pm_error_set(-EINVAL, "ds_bztree_pmem_open: no output pointer");
	ret = ds__mcas_bind(m, pool, area_off, sizeof(*hdr), 64, "ds_bztree", "tree",
		&area);
	if (ret != 0)
		return ret;
	hdr = area;
	ret = pm_area_check(&hdr->area, &bz_area_type, "ds_bztree_pmem_open");
	if (ret != 0)
		return ret;
	struct ds_bztree_config cfg = { .node_capacity = hdr->capacity };

	cap = bz_cfg_cap(&cfg);
	if (cap == 0 || hdr->node_size != bz_node_size(cap) ||
			ds_bztree_pmem_area_size(&cfg, hdr->nodes) == 0 ||
			hdr->area.area_size != ds_bztree_pmem_area_size(&cfg, hdr->nodes))
		return pm_error_set(PM_E_CORRUPT,
			"ds_bztree_pmem_open: the tree header describes an impossible area");
	if (hdr->area_off != area_off)
		return pm_error_set(PM_E_CORRUPT,
			"ds_bztree_pmem_open: the tree area was formatted at %#llx, not %#llx",
			(unsigned long long)hdr->area_off, (unsigned long long)area_off);
	if (pm_pool_ptr(pool, area_off, hdr->area.area_size, &area) != 0)
		return pm_error_set(PM_E_CORRUPT,
			"ds_bztree_pmem_open: the tree area does not fit the pool");
	ret = bz_pmem_new(&t, m, pool, hdr, cap, hdr->nodes);
	if (ret != 0)
		return ret;
	w.t = t;
	w.st = &st;
	w.buf = msg;
	w.len = sizeof(msg);
	w.reach = malloc(t->nc.nodes * sizeof(*w.reach));
	w.keys = malloc(cap * sizeof(*w.keys));
	if (w.reach == NULL || w.keys == NULL) {
		ret = pm_error_set(-ENOMEM, "ds_bztree_pmem_open: out of memory");
		goto out;
	}
	err = bz_walk_tree(&w);
	if (err != NULL) {
		ret = pm_error_set(PM_E_CORRUPT, "ds_bztree_pmem_open: %s", err);
		goto out;
	}
	/* Every node not reached is free; w.reach is sorted. */
	for (uint64_t i = t->nc.nodes, r = w.nreach; i-- > 0;) {
		uintptr_t p = (uintptr_t)bz_arena_node(t, i);

		if (r > 0 && w.reach[r - 1] == p)
			r--;
		else
			ds__node_cache_put(&t->nc, (void *)p);
	}
out:
	free(w.reach);
	free(w.keys);
	if (ret != 0) {
		bz_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

/* ds_bztree_close -- release @t unless a thread is still registered */
int
ds_bztree_close(struct ds_bztree **tp)
{
	struct ds_bztree *t = tp ? *tp : NULL;
	unsigned n;

	pm_error_clear();
	if (t == NULL)
		return 0;
	n = ds__node_cache_nthreads(&t->nc);
	if (n != 0)
		return pm_error_set(-EBUSY, "ds_bztree_close: %u threads are still registered", n);
	bz_free(t);
	*tp = NULL;
	return 0;
}

/* ds_bztree_is_persistent -- whether @t lives in a pool */
bool
ds_bztree_is_persistent(const struct ds_bztree *t)
{
	return t->persistent;
}

/* ds_bztree_capacity -- records per node */
unsigned
ds_bztree_capacity(const struct ds_bztree *t)
{
	return t->cap;
}

/* ---- check ---- */

/* ds_bztree_check -- walk the tree (under the node cache's lock) and check it */
const char *
ds_bztree_check(struct ds_bztree_thread *h, struct ds_bztree_stats *stp, char *buf, size_t len)
{
	struct ds_bztree *t = h->t;
	struct ds_bztree_stats st = { 0 };
	struct bz_walk w = { 0 };
	uintptr_t *slabs = NULL;
	const char *err = NULL;

	if (len == 0)
		return "";
	buf[0] = '\0';
	w.t = t;
	w.h = h;
	w.st = &st;
	w.buf = buf;
	w.len = len;
	ds__node_cache_lock(&t->nc);
	st.nodes = t->nc.nodes;
	w.reach = malloc((t->nc.nodes + 1) * sizeof(*w.reach));
	w.keys = malloc(t->cap * sizeof(*w.keys));
	slabs = ds__node_cache_sorted_slabs(&t->nc);
	if (w.reach == NULL || w.keys == NULL || slabs == NULL) {
		err = BZ_FAIL(&w, "out of memory for the check");
		goto out;
	}
	w.slabs = slabs;
	mcas_guard_enter(h->mt);
	err = bz_walk_tree(&w);
	mcas_guard_exit(h->mt);
	if (err != NULL)
		goto out;
	err = ds__node_cache_check(&t->nc, slabs, w.reach, w.nreach, "tree", &st.free,
		&st.retired, buf, len);
out:
	ds__node_cache_unlock(&t->nc);
	st.consolidations = atomic_load_explicit(&t->n_consolidate, memory_order_relaxed);
	st.splits = atomic_load_explicit(&t->n_split, memory_order_relaxed);
	st.merges = atomic_load_explicit(&t->n_merge, memory_order_relaxed);
	st.rebalances = atomic_load_explicit(&t->n_rebalance, memory_order_relaxed);
	free(w.reach);
	free(w.keys);
	free(slabs);
	if (stp != NULL)
		*stp = st;
	return err;
}
