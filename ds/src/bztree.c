/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/bztree.c -- a BzTree-style lock-free B+-tree (ds/bztree.h) on MCAS.
 *
 * Nodes. A node is a 64-byte header {status, level, n, aux} followed by
 * `cap` 24-byte records {w, key, value}. level is 0 for leaves. status is an
 * MCAS target word: FROZEN (bit 3) and a version bumped by every MCAS that
 * changes what the node holds (inner: bits 16..63); a leaf's also holds the
 * slots used (COUNT, bits 4..15) and its LIVE records (bits 16..27), with the
 * version in bits 28..63 (a leaf sees at most 3 x cap bumps in its life:
 * one per publish, one per remove). Counting live records in the status
 * lets a remove see an underfull leaf without reading every record. level, n and the keys of inner nodes and of a leaf's
 * sorted part are written before the node is published and never again.
 *   leaf:  n = records in the sorted part (built sorted, all live); slots
 *          n..COUNT-1 form the append area. w is the record's metadata word
 *          (MCAS target): 0 (never published), LIVE, or DEAD.
 *   inner: n = children; w = child reference (MCAS target, changed in place
 *          only by a consolidation of that child); key of record 0 = the
 *          node's lower bound, key of record i > 0 = the separator: child i
 *          holds keys in [key_i, key_{i+1}).
 * A node's key range is fixed for its life: it is decided when the node is
 * built, and every structure change that alters a range replaces the nodes.
 *
 * Invariants, between MCASes (each MCAS keeps all of them):
 *   T1  a node is reachable from the root word iff it was installed and is
 *       not frozen: an MCAS that unlinks a node freezes it, atomically;
 *   T2  the reachable leaves' ranges partition the key space, and a child
 *       pointer in any node (reachable or not) refers to a node with the
 *       range that slot describes (so a descent from a stale node still ends
 *       in a leaf whose range holds the key);
 *   T3  a leaf has at most one LIVE record per key;
 *   T4  a status word never takes the same value twice (FROZEN, COUNT and
 *       the version only grow, and every change bumps the version or
 *       COUNT), and every MCAS that changes a node's records or child
 *       pointers changes its status.
 *
 * Leaf updates. insert/upsert/update reserve slot j = COUNT with a 1-word
 * MCAS {status: S -> S + COUNT_ONE}, write key and value into the slot
 * (owned: no one else reserves j), then publish with {status: S' -> S' +
 * VERSION + LIVE_ONE, meta[j]: 0 -> LIVE} (or, for a replacement, S' ->
 * S' + VERSION and {meta[i]: LIVE -> DEAD} for the record it supersedes)
 * after checking, under the same S', that no other
 * LIVE record of the key exists. By T4, if the MCAS succeeds no record of
 * the leaf changed since S' was read, so the check still holds at the MCAS
 * (this replaces BzTree's re-scan for concurrent inserts of the same key,
 * which waits for reserved slots, with a lock-free status comparison). A
 * remove is {status: S -> S + VERSION - LIVE_ONE, meta[i]: LIVE -> DEAD}. Every MCAS
 * expects an unfrozen status, so nothing changes in a frozen node.
 *
 * Structure changes (SMOs). The node X to change (and its sibling Y for a
 * merge) is copied under its status S_X (S_Y): the live records of a leaf,
 * sorted, or the children of an inner node. The copy becomes one new node
 * (consolidation, merge) or two (split, rebalance into even halves). One
 * MCAS installs the result and freezes everything copied:
 *   - one node for one (consolidation): {X.status: S_X -> FROZEN,
 *     P.child[s]: X -> X', P.status: S_P -> S_P + VERSION}, or the root
 *     word instead of P if X is the root;
 *   - otherwise the parent P is copied with the new children in place of
 *     the old ones: {X.status, (Y.status,) P.status: -> FROZEN,
 *     G.child[g]: P -> P', G.status: S_G -> S_G + VERSION}, or the root
 *     word for G; a root that would keep one child is replaced by it; a
 *     split of X at the root makes a new root instead.
 * Because the expected statuses are exactly those the copies were made
 * under (T4), the copies are exact at the MCAS, and the node that is
 * frozen is unlinked by the same MCAS (T1): unlike BzTree, no node is ever
 * frozen and reachable, so no thread waits for another's SMO to finish. A
 * split whose parent is full splits the parent first; a merge whose parent
 * has a single child merges the parent first.
 *
 * Reads and linearization points. A descent reads the root word and, in
 * each inner node, the child pointer of the slot whose range holds the key
 * (T2). In the leaf L it reads status S, the records, and S again; equal
 * (T4) means nothing changed in between. If S is not frozen, L is reachable
 * at the second read (T1) and is the leaf for the key (T2), so a lookup,
 * and a write that returns 0, linearize at that read. A frozen L may be
 * stale: retry from the root (L was unlinked by a successful MCAS, so the
 * retry is lock-free). A successful update linearizes at its publishing
 * MCAS, an SMO (which changes no key) at its MCAS. Every failed MCAS means
 * another one succeeded on a word it expected, so every loop is lock-free.
 * A scan reads one leaf at a time that way and continues from the leaf's
 * upper bound, which yields the properties ds/bztree.h documents.
 *
 * Memory. Unlinked nodes are retired with mcas_retire() after leaving the
 * guard and come back to the retiring handle's cache one grace period
 * later; nodes built for a failed SMO were never reachable and are reused
 * at once. Node memory is type-stable for the reason node_cache.h gives
 * (AOPT detaches finalized descriptors lazily, possibly after the node's
 * grace period), and a reused node's words are written with atomic stores.
 *
 * Persistence. References are pool offsets. A new node is flushed whole,
 * and a reserved slot's key and value, before the MCAS that publishes them;
 * that MCAS's first CAS, issued by this thread, orders the flushes (as in
 * dll.c). A reservation is durable but harmless: an unpublished slot has
 * metadata 0 and is ignored. Free lists are volatile and rebuilt by
 * ds_bztree_pmem_open() from a walk of the tree, after mcas_pmem_open().
 */
#include <errno.h>
#include <sched.h>
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
#include <pm/ptr.h>

#include "node_cache.h"

#define BZ_PMEM_MAGIC 0x45455254345a4244ull /* "DBZ4TREE" */

/* Status word fields (above MCAS_VALUE_PORTABLE_MASK). */
#define BZ_FROZEN ((uint64_t)1 << 3)
#define BZ_COUNT_SHIFT 4
#define BZ_COUNT_ONE ((uint64_t)1 << BZ_COUNT_SHIFT)
#define BZ_COUNT_MASK ((uint64_t)0xfff << BZ_COUNT_SHIFT)
#define BZ_LIVE_SHIFT 16
#define BZ_LIVE_ONE ((uint64_t)1 << BZ_LIVE_SHIFT)
#define BZ_LIVE_MASK ((uint64_t)0xfff << BZ_LIVE_SHIFT)
#define BZ_LEAF_VERSION ((uint64_t)1 << 28)
#define BZ_INNER_VERSION ((uint64_t)1 << 16)

/* Leaf record metadata words. */
#define BZ_META_LIVE ((uint64_t)1 << 3)
#define BZ_META_DEAD ((uint64_t)2 << 3)

#define BZ_HEADER_SIZE 64
#define BZ_REC_SIZE 24
/* Most nodes a handle moves to or from the shared pool at a time. */
#define BZ_BATCH 8
/* Nodes per volatile slab. */
#define BZ_SLAB_NODES 32
/* Most nodes one SMO builds (two halves and a parent) or unlinks. */
#define BZ_SMO_NODES 3

_Static_assert((BZ_FROZEN & MCAS_VALUE_PORTABLE_MASK) == 0, "status bits clear of MCAS's");
_Static_assert((BZ_META_LIVE & MCAS_VALUE_PORTABLE_MASK) == 0, "meta bits clear of MCAS's");
_Static_assert(DS_BZTREE_MAX_CAPACITY < (BZ_COUNT_MASK >> BZ_COUNT_SHIFT),
	"COUNT holds every slot index");
_Static_assert(DS_BZTREE_MAX_CAPACITY < (BZ_LIVE_MASK >> BZ_LIVE_SHIFT),
	"LIVE holds every record count");
_Static_assert(2 * BZ_BATCH <= DS__NODE_CACHE_MAX, "a handle caches two batches");

struct bz_rec {
	uint64_t w;   /* leaf: metadata; inner: child reference */
	uint64_t key;
	uint64_t value;
};

struct bz_node {
	uint64_t status;
	uint64_t level;
	uint64_t n;
	uint64_t aux; /* the node cache's orphan chain (volatile use only) */
	uint64_t pad[4];
	struct bz_rec rec[];
};
_Static_assert(sizeof(struct bz_node) == BZ_HEADER_SIZE, "header is one cache line");
_Static_assert(sizeof(struct bz_rec) == BZ_REC_SIZE, "records are three words");

/* The first cache line of a persistent area; the root word's line and the
 * arena follow. Written once, at creation, header last. */
struct bz_pmem_header {
	struct pm_area_hdr area; /* magic, version, sizes, checksum (pm/area.h) */
	uint32_t capacity;
	uint32_t node_size;
	uint64_t nodes;
	uint64_t area_off;  /* where it was formatted: a moved area is rejected */
	uint64_t reserved;
};
_Static_assert(sizeof(struct bz_pmem_header) == 64, "header is one cache line");

static const struct pm_area_type bz_area_type = {
	"tree", BZ_PMEM_MAGIC, DS_BZTREE_PMEM_VERSION, sizeof(struct bz_pmem_header)
};

struct ds_bztree {
	struct mcas *m;
	bool persistent;
	uintptr_t base;     /* 0, or the pool's base: reference = address - base */
	unsigned cap;
	size_t node_size;
	uint64_t *root;     /* the root word (MCAS target) */
	/* persistent */
	struct pm_pool *pool;
	struct bz_pmem_header *hdr;
	char *arena;
	/* volatile */
	uint64_t *root_line;
	/* Every node (ds_bztree_check() walks the tree under nc.lock). */
	struct ds__node_cache nc;

	/* SMO counts for ds_bztree_check(); relaxed, only summed. */
	_Atomic uint64_t n_consolidate, n_split, n_merge, n_rebalance;
};

/* A key with its value (leaf) or child reference (inner). */
struct bz_kv {
	uint64_t key;
	uint64_t value;
};

struct ds_bztree_thread {
	struct ds_bztree *t;
	struct mcas_thread *mt;
	struct ds__node_cache_thread nc;
	struct bz_kv *scratch; /* 3 * cap entries, owner-only: SMO and scan copies */
};

/* A root-to-node path of a descent. */
struct bz_path {
	unsigned depth;  /* nodes on the path */
	uint64_t root;   /* the root word as read */
	struct bz_node *node[DS_BZTREE_MAX_HEIGHT];
	uint64_t status[DS_BZTREE_MAX_HEIGHT];
	unsigned slot[DS_BZTREE_MAX_HEIGHT]; /* child taken in inner node[i] */
	uint64_t hi;     /* the last node's range is [.., hi), or unbounded */
	bool has_hi;
};

/* ---- words and nodes ---- */

/* bz_load -- relaxed load of a word written before its node was published
 * (ordered by the acquire in the mcas_read() that found the node or
 * record), or of any word while nothing runs concurrently */
static inline uint64_t
bz_load(const uint64_t *p)
{
	return atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)p, memory_order_relaxed);
}

/* bz_store -- relaxed store into a node or slot nobody else writes; atomic
 * because a stale AOPT detach or a reader of a frozen copy may load it; the
 * publishing MCAS orders it */
static inline void
bz_store(uint64_t *p, uint64_t v)
{
	atomic_store_explicit((_Atomic uint64_t *)(uintptr_t)p, v, memory_order_relaxed);
}

static inline uint64_t
bz_ref(const struct ds_bztree *t, const struct bz_node *n)
{
	return pm_off_from_addr(t->base, n);
}

static inline struct bz_node *
bz_deref(const struct ds_bztree *t, uint64_t v)
{
	return pm_off_to_addr(t->base, v);
}

static inline unsigned
bz_count(uint64_t status)
{
	return (unsigned)((status & BZ_COUNT_MASK) >> BZ_COUNT_SHIFT);
}

static inline unsigned
bz_live(uint64_t status)
{
	return (unsigned)((status & BZ_LIVE_MASK) >> BZ_LIVE_SHIFT);
}

static inline bool
bz_frozen(uint64_t status)
{
	return (status & BZ_FROZEN) != 0;
}

/* ---- descent and leaf reads (inside a guard) ---- */

/* bz_child_slot -- the slot of inner node @n (@m children) whose range
 * holds @key: the last one whose separator is <= @key */
static unsigned
bz_child_slot(const struct bz_node *n, unsigned m, uint64_t key)
{
	unsigned lo = 1, hi = m;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (bz_load(&n->rec[mid].key) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/*
 * bz_descend -- the path from the root to the node at @level whose range
 * holds @key (or to a higher leaf-most node if the tree is lower), with the
 * last node's status; the statuses of the nodes above it too if
 * @all_status (an SMO expects them; a point operation linearizes on the
 * last node's alone, and skipping the others spares a descriptor
 * indirection per level where AOPT left one installed).
 * Return: 0; -ELOOP if the path is deeper than DS_BZTREE_MAX_HEIGHT.
 */
static int
bz_descend(struct ds_bztree_thread *h, uint64_t key, unsigned level, bool all_status,
	struct bz_path *p)
{
	const struct ds_bztree *t = h->t;
	struct bz_node *n;

	p->depth = 0;
	p->has_hi = false;
	p->hi = 0;
	p->root = mcas_read(h->mt, t->root);
	n = bz_deref(t, p->root);
	for (;;) {
		unsigned d = p->depth++, m, s;

		p->node[d] = n;
		if (bz_load(&n->level) <= level) {
			p->status[d] = mcas_read(h->mt, &n->status);
			return 0;
		}
		/* Never used when not read: 0 would be a plausible status. */
		p->status[d] = all_status ? mcas_read(h->mt, &n->status) : BZ_FROZEN;
		if (p->depth == DS_BZTREE_MAX_HEIGHT)
			return -ELOOP;
		m = (unsigned)bz_load(&n->n);
		s = m > 1 ? bz_child_slot(n, m, key) : 0;
		p->slot[d] = s;
		if (s + 1 < m) {
			/* nested ranges: the child's bound is within ours */
			p->hi = bz_load(&n->rec[s + 1].key);
			p->has_hi = true;
		}
		n = bz_deref(t, mcas_read(h->mt, &n->rec[s].w));
	}
}

/*
 * bz_leaf_find -- the slot of the live record of @key in leaf @l as of
 * status @s, ignoring slot @skip; -1 if none. Meaningful only if @s is
 * still the status afterwards (T4).
 */
static int
bz_leaf_find(struct ds_bztree_thread *h, struct bz_node *l, uint64_t s, uint64_t key, int skip)
{
	unsigned cnt = bz_count(s), ns = (unsigned)bz_load(&l->n);
	unsigned lo = 0, hi = ns;

	/* The sorted part: keys unique and immutable. */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (bz_load(&l->rec[mid].key) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ns && bz_load(&l->rec[lo].key) == key &&
			mcas_read(h->mt, &l->rec[lo].w) == BZ_META_LIVE)
		return (int)lo;
	/* The append area, key first: a slot published as of @s had its key
	 * written before the MCAS that made @s (or an earlier status), which
	 * the acquiring read of @s ordered before this load, so its key is
	 * exact; a slot unpublished as of @s may hold anything, but if it is
	 * LIVE by the metadata read, @s has changed and the caller retries.
	 * Comparing the plain key first spares the metadata read (an MCAS
	 * read, often through an AOPT descriptor) of every other record. */
	for (unsigned i = ns; i < cnt; i++)
		if ((int)i != skip && bz_load(&l->rec[i].key) == key &&
				mcas_read(h->mt, &l->rec[i].w) == BZ_META_LIVE)
			return (int)i;
	return -1;
}

static int
bz_kv_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct bz_kv *)a)->key, y = ((const struct bz_kv *)b)->key;

	return x < y ? -1 : x > y;
}

/* bz_leaf_collect -- the live records of leaf @l as of status @s with key
 * >= @from, sorted, into @out; returns how many */
static unsigned
bz_leaf_collect(struct ds_bztree_thread *h, struct bz_node *l, uint64_t s, uint64_t from,
	struct bz_kv *out)
{
	unsigned cnt = bz_count(s), ns = (unsigned)bz_load(&l->n), k = 0;

	for (unsigned i = 0; i < cnt; i++) {
		uint64_t key;

		if (mcas_read(h->mt, &l->rec[i].w) != BZ_META_LIVE)
			continue;
		key = bz_load(&l->rec[i].key);
		if (key < from)
			continue;
		out[k].key = key;
		out[k].value = bz_load(&l->rec[i].value);
		k++;
	}
	/* The sorted part comes first and stays sorted; only an append area
	 * needs sorting. */
	if (cnt > ns)
		qsort(out, k, sizeof(*out), bz_kv_cmp);
	return k;
}

/* bz_inner_collect -- the children of inner node @n (as of its status) */
static unsigned
bz_inner_collect(struct ds_bztree_thread *h, struct bz_node *n, struct bz_kv *out)
{
	unsigned m = (unsigned)bz_load(&n->n);

	for (unsigned i = 0; i < m; i++) {
		out[i].key = bz_load(&n->rec[i].key);
		out[i].value = mcas_read(h->mt, &n->rec[i].w);
	}
	return m;
}

/*
 * bz_begin -- mcas_desc_begin() inside @h's guard. On -EAGAIN (every
 * descriptor waits for a grace period) leave the guard before yielding, as
 * dll.c explains; the caller must then start again from the root.
 */
static int
bz_begin(struct ds_bztree_thread *h, struct mcas_desc **d)
{
	int ret = mcas_desc_begin(h->mt, d);

	if (ret == -EAGAIN) {
		mcas_guard_exit(h->mt);
		sched_yield();
		mcas_guard_enter(h->mt);
	}
	return ret;
}

/* ---- building nodes ---- */

/* bz_build -- write a private node: a leaf of @n live records or an inner
 * node at @level of @n children, from @kv; flushed if persistent */
static void
bz_build(struct ds_bztree *t, struct bz_node *node, unsigned level, const struct bz_kv *kv,
	unsigned n)
{
	bz_store(&node->status,
		level == 0 ? (uint64_t)n << BZ_COUNT_SHIFT | (uint64_t)n << BZ_LIVE_SHIFT : 0);
	bz_store(&node->level, level);
	bz_store(&node->n, n);
	for (unsigned i = 0; i < n; i++) {
		bz_store(&node->rec[i].w, level == 0 ? BZ_META_LIVE : kv[i].value);
		bz_store(&node->rec[i].key, kv[i].key);
		bz_store(&node->rec[i].value, level == 0 ? kv[i].value : 0);
	}
	/* Unused slots of a reused node must not look published. */
	for (unsigned i = n; i < t->cap; i++)
		bz_store(&node->rec[i].w, 0);
	/* Durable before the MCAS that links it: its first CAS orders this. */
	if (t->persistent)
		pm_flush(node, t->node_size);
}

/* ---- structure modifications ---- */

enum bz_smo_kind {
	BZ_SMO_FULL,      /* a full leaf, or an inner node with no room */
	BZ_SMO_UNDERFULL, /* merge or rebalance with a sibling */
};

/* bz_add -- mcas_desc_add, counting failures into @ret (first one kept) */
static void
bz_add(struct mcas_desc *d, int *ret, uint64_t *addr, uint64_t old, uint64_t new_)
{
	if (*ret == 0)
		*ret = mcas_desc_add(d, addr, old, new_);
}

/* bz_link -- the MCAS entries that make the slot pointing to path node
 * @d refer to @to instead: the root word, or the parent's child pointer
 * with a version bump of the parent's status */
static void
bz_link(struct ds_bztree_thread *h, struct mcas_desc *d, int *ret, const struct bz_path *p,
	unsigned depth, struct bz_node *to)
{
	struct ds_bztree *t = h->t;

	if (depth == 0) {
		bz_add(d, ret, t->root, p->root, bz_ref(t, to));
		return;
	}
	struct bz_node *g = p->node[depth - 1];

	bz_add(d, ret, &g->rec[p->slot[depth - 1]].w, bz_ref(t, p->node[depth]), bz_ref(t, to));
	bz_add(d, ret, &g->status, p->status[depth - 1], p->status[depth - 1] + BZ_INNER_VERSION);
}

static int bz_restructure(struct ds_bztree_thread *h, uint64_t key, unsigned level,
	enum bz_smo_kind kind);

/*
 * bz_smo_try -- one attempt (inside the guard) of an SMO of @kind on the
 * node at @level on @key's path. Return: 1 done (nodes to retire in
 * @unlinked[*@nunlinked]); 0 not needed; 2 failed, try again; 3 the parent
 * must first get room (split); 4 the parent must first be merged; -errno.
 */
static int
bz_smo_try(struct ds_bztree_thread *h, uint64_t key, unsigned level, enum bz_smo_kind kind,
	struct bz_node **unlinked, unsigned *nunlinked, unsigned *parent_children)
{
	struct ds_bztree *t = h->t;
	struct bz_path p;
	struct bz_node *x, *y = NULL, *built[BZ_SMO_NODES];
	struct bz_kv *kv = h->scratch;
	unsigned d, n, k = 1, j, first = 0, nbuilt = 0, m = 0;
	uint64_t sx, sy = 0;
	struct mcas_desc *desc;
	int ret;

	ret = bz_descend(h, key, level, true, &p);
	if (ret != 0)
		return ret;
	d = p.depth - 1;
	x = p.node[d];
	sx = p.status[d];
	if (bz_load(&x->level) != level)
		return 0; /* the tree no longer has that level */
	if (bz_frozen(sx))
		return 2;
	for (unsigned i = 0; i < d; i++)
		if (bz_frozen(p.status[i]))
			return 2;
	if (d > 0)
		m = (unsigned)bz_load(&p.node[d - 1]->n);

	if (kind == BZ_SMO_FULL) {
		if (level == 0 ? bz_count(sx) < t->cap : bz_load(&x->n) < t->cap)
			return 0;
		n = level == 0 ? bz_leaf_collect(h, x, sx, 0, kv) : bz_inner_collect(h, x, kv);
		first = d > 0 ? p.slot[d - 1] : 0;
	} else {
		unsigned nx = level == 0 ? bz_live(sx) : (unsigned)bz_load(&x->n);

		if (d == 0 || nx > t->cap / 4)
			return 0;
		if (m < 2)
			return 4;
		unsigned s = p.slot[d - 1];
		struct bz_node *left, *right;
		uint64_t sl, sr;

		first = s + 1 < m ? s : s - 1;
		y = bz_deref(t, mcas_read(h->mt, &p.node[d - 1]->rec[s + 1 < m ? s + 1 : s - 1].w));
		sy = mcas_read(h->mt, &y->status);
		if (bz_frozen(sy))
			return 2;
		left = s + 1 < m ? x : y;
		right = s + 1 < m ? y : x;
		sl = left == x ? sx : sy;
		sr = right == x ? sx : sy;
		n = level == 0 ? bz_leaf_collect(h, left, sl, 0, kv) : bz_inner_collect(h, left, kv);
		n += level == 0 ? bz_leaf_collect(h, right, sr, 0, kv + n) :
				  bz_inner_collect(h, right, kv + n);
		k = 2;
	}
	/* One node if it leaves a quarter free, else two even halves (which a
	 * full inner node always needs). */
	j = n > t->cap * 3 / 4 ? 2 : 1;
	if (d > 0 && m - k + j > t->cap) {
		*parent_children = m;
		return 3;
	}

	/* Build: the new nodes, then the parent's copy or a new root. */
	bool in_place = k == 1 && j == 1;
	bool collapse = d == 1 && m - k + j == 1; /* the root keeps one child */
	bool new_root = d == 0 && j == 2;
	unsigned need = j + (new_root || (!in_place && d > 0 && !collapse));

	for (; nbuilt < need; nbuilt++) {
		void *fresh;

		ret = ds__node_cache_alloc(&h->nc, &fresh);
		if (ret != 0)
			goto out_free;
		built[nbuilt] = fresh;
	}
	uint64_t sep = kv[n / 2].key;

	if (j == 1) {
		bz_build(t, built[0], level, kv, n);
	} else {
		bz_build(t, built[0], level, kv, n / 2);
		bz_build(t, built[1], level, kv + n / 2, n - n / 2);
	}
	if (new_root) {
		struct bz_kv r[2] = { { 0, bz_ref(t, built[0]) }, { sep, bz_ref(t, built[1]) } };

		bz_build(t, built[2], level + 1, r, 2);
	} else if (!in_place && !collapse) {
		struct bz_node *pn = p.node[d - 1];
		struct bz_kv *pkv = kv + n; /* room: n + m <= 3 * cap */
		unsigned q = 0;

		for (unsigned i = 0; i < first; i++, q++) {
			pkv[q].key = bz_load(&pn->rec[i].key);
			pkv[q].value = mcas_read(h->mt, &pn->rec[i].w);
		}
		pkv[q].key = bz_load(&pn->rec[first].key);
		pkv[q++].value = bz_ref(t, built[0]);
		if (j == 2) {
			pkv[q].key = sep;
			pkv[q++].value = bz_ref(t, built[1]);
		}
		for (unsigned i = first + k; i < m; i++, q++) {
			pkv[q].key = bz_load(&pn->rec[i].key);
			pkv[q].value = mcas_read(h->mt, &pn->rec[i].w);
		}
		bz_build(t, built[j], level + 1, pkv, q);
	}

	ret = bz_begin(h, &desc);
	if (ret == -EAGAIN) {
		ret = 2;
		goto out_free;
	}
	if (ret != 0)
		goto out_free;
	ret = 0;
	bz_add(desc, &ret, &x->status, sx, sx | BZ_FROZEN);
	if (y != NULL)
		bz_add(desc, &ret, &y->status, sy, sy | BZ_FROZEN);
	if (in_place) {
		bz_link(h, desc, &ret, &p, d, built[0]);
	} else if (new_root) {
		bz_link(h, desc, &ret, &p, 0, built[2]);
	} else {
		bz_add(desc, &ret, &p.node[d - 1]->status, p.status[d - 1],
			p.status[d - 1] | BZ_FROZEN);
		bz_link(h, desc, &ret, &p, d - 1, collapse ? built[0] : built[j]);
	}
	if (ret != 0) {
		mcas_desc_abandon(desc);
		goto out_free;
	}
	ret = mcas_desc_execute(desc);
	if (ret != 1) {
		ret = ret == 0 ? 2 : ret;
		goto out_free;
	}
	*nunlinked = 0;
	unlinked[(*nunlinked)++] = x;
	if (y != NULL)
		unlinked[(*nunlinked)++] = y;
	if (!in_place && !new_root)
		unlinked[(*nunlinked)++] = p.node[d - 1];
	if (k == 1)
		atomic_fetch_add_explicit(j == 1 ? &t->n_consolidate : &t->n_split, 1,
			memory_order_relaxed);
	else
		atomic_fetch_add_explicit(j == 1 ? &t->n_merge : &t->n_rebalance, 1,
			memory_order_relaxed);
	/* Tell the caller whether the new parent is underfull in turn. */
	*parent_children = in_place || new_root || collapse ? t->cap : m - k + j;
	return 1;

out_free:
	/* Never reachable: free at once. */
	while (nbuilt > 0)
		ds__node_cache_free(&h->nc, built[--nbuilt]);
	return ret;
}

/*
 * bz_restructure -- run an SMO of @kind on the node at @level on @key's
 * path until it is done or no longer needed. Return: 0; -errno (-ENOSPC,
 * -ENOMEM, -EBUSY, -ELOOP).
 */
static int
bz_restructure(struct ds_bztree_thread *h, uint64_t key, unsigned level, enum bz_smo_kind kind)
{
	for (;;) {
		struct bz_node *unlinked[BZ_SMO_NODES];
		unsigned nunlinked = 0, parent_children = 0;
		int ret;

		mcas_guard_enter(h->mt);
		ret = bz_smo_try(h, key, level, kind, unlinked, &nunlinked, &parent_children);
		mcas_guard_exit(h->mt);
		/* After the guard: every reference to them was loaded before. */
		for (unsigned i = 0; i < nunlinked; i++)
			ds__node_cache_retire(&h->nc, h->mt, unlinked[i]);
		switch (ret) {
		case 0:
			return 0;
		case 1:
			if (kind == BZ_SMO_UNDERFULL && parent_children <= h->t->cap / 4)
				return bz_restructure(h, key, level + 1, BZ_SMO_UNDERFULL);
			return 0;
		case 2:
			continue;
		case 3:
			ret = bz_restructure(h, key, level + 1, BZ_SMO_FULL);
			if (ret != 0)
				return ret;
			continue;
		case 4:
			/* A lone child: merge the parent instead, and leave this
			 * node as it is (merges are best effort). */
			return bz_restructure(h, key, level + 1, BZ_SMO_UNDERFULL);
		default:
			return ret;
		}
	}
}

/* ---- operations ---- */

/* Where a point operation's descent ended. */
struct bz_spot {
	struct bz_node *leaf;
	uint64_t status; /* the leaf's, as the descent read it */
	int slot;        /* of the key's live record as of status; -1: none */
	unsigned depth;  /* nodes on the path: 1 if the leaf is the root */
};

/*
 * bz_locate -- inside @h's guard: the leaf for @key, its status and the
 * slot of @key's live record in it, into @at.
 * Return: 0; 1 the leaf was frozen (stale: leave the guard and start again
 * from the root); -ELOOP from bz_descend().
 */
static int
bz_locate(struct ds_bztree_thread *h, uint64_t key, struct bz_spot *at)
{
	struct bz_path p;
	int ret = bz_descend(h, key, 0, false, &p);

	if (ret != 0)
		return ret;
	at->leaf = p.node[p.depth - 1];
	at->status = p.status[p.depth - 1];
	at->depth = p.depth;
	if (bz_frozen(at->status))
		return 1;
	at->slot = bz_leaf_find(h, at->leaf, at->status, key, -1);
	return 0;
}

/* bz_unchanged -- whether @at's leaf still has the status the descent read:
 * then nothing in it changed in between (T4), and it was reachable (T1) and
 * the key's leaf (T2) at this read, where a read-only outcome linearizes */
static bool
bz_unchanged(struct ds_bztree_thread *h, const struct bz_spot *at)
{
	return mcas_read(h->mt, &at->leaf->status) == at->status;
}

enum bz_write_mode { BZ_INSERT, BZ_UPDATE, BZ_UPSERT };

/* bz_write -- insert, update or upsert (see ds/bztree.h) */
static int
bz_write(struct ds_bztree_thread *h, uint64_t key, uint64_t value, enum bz_write_mode mode)
{
	struct ds_bztree *t = h->t;
	int ret;

	ds__node_cache_retry(&h->nc, h->mt);
	for (;;) {
		struct bz_spot at;
		struct bz_node *l;
		struct mcas_desc *d;
		uint64_t s;
		unsigned slot;
		int i;

		mcas_guard_enter(h->mt);
		ret = bz_locate(h, key, &at);
		if (ret < 0)
			break;
		if (ret == 1) {
			mcas_guard_exit(h->mt);
			continue;
		}
		l = at.leaf;
		s = at.status;
		i = at.slot;
		if ((i >= 0 && mode == BZ_INSERT) || (i < 0 && mode == BZ_UPDATE)) {
			if (!bz_unchanged(h, &at)) {
				mcas_guard_exit(h->mt);
				continue;
			}
			ret = 0; /* linearized at that read */
			break;
		}
		if (bz_count(s) == t->cap) {
			mcas_guard_exit(h->mt);
			ret = bz_restructure(h, key, 0, BZ_SMO_FULL);
			if (ret != 0)
				return ret;
			continue;
		}
		/* Reserve slot COUNT. */
		ret = bz_begin(h, &d);
		if (ret == -EAGAIN) {
			mcas_guard_exit(h->mt);
			continue;
		}
		if (ret != 0)
			break;
		ret = mcas_desc_add(d, &l->status, s, s + BZ_COUNT_ONE);
		if (ret != 0) {
			mcas_desc_abandon(d);
			break;
		}
		ret = mcas_desc_execute(d);
		if (ret != 1) {
			if (ret < 0)
				break;
			mcas_guard_exit(h->mt);
			continue;
		}
		slot = bz_count(s);
		s += BZ_COUNT_ONE;
		bz_store(&l->rec[slot].key, key);
		bz_store(&l->rec[slot].value, value);
		/* Durable before the publishing MCAS, whose first CAS orders it. */
		if (t->persistent)
			pm_flush(&l->rec[slot].key, 2 * sizeof(uint64_t));
		/* Publish; the slot stays ours while the leaf is not frozen. */
		for (;;) {
			i = bz_leaf_find(h, l, s, key, (int)slot);
			if ((i >= 0 && mode == BZ_INSERT) || (i < 0 && mode == BZ_UPDATE)) {
				uint64_t now = mcas_read(h->mt, &l->status);

				if (now == s) {
					ret = 0; /* the slot stays unpublished */
					break;
				}
				s = now;
			} else {
				ret = bz_begin(h, &d);
				if (ret == -EAGAIN) {
					ret = 2; /* references are stale: start over */
					break;
				}
				if (ret != 0)
					break;
				/* A replacement keeps the live count. */
				ret = mcas_desc_add(d, &l->status, s,
					s + BZ_LEAF_VERSION + (i >= 0 ? 0 : BZ_LIVE_ONE));
				if (ret == 0)
					ret = mcas_desc_add(d, &l->rec[slot].w, 0, BZ_META_LIVE);
				if (ret == 0 && i >= 0)
					ret = mcas_desc_add(d, &l->rec[i].w, BZ_META_LIVE,
						BZ_META_DEAD);
				if (ret != 0) {
					mcas_desc_abandon(d);
					break;
				}
				ret = mcas_desc_execute(d);
				if (ret == 1) {
					ret = mode == BZ_UPSERT ? i < 0 : 1;
					break;
				}
				if (ret < 0)
					break;
				s = mcas_read(h->mt, &l->status);
			}
			if (bz_frozen(s)) {
				ret = 2; /* the leaf was replaced: the slot is lost */
				break;
			}
		}
		if (ret != 2)
			break;
		mcas_guard_exit(h->mt);
	}
	mcas_guard_exit(h->mt);
	return ret;
}

int
ds_bztree_insert(struct ds_bztree_thread *h, uint64_t key, uint64_t value)
{
	return bz_write(h, key, value, BZ_INSERT);
}

int
ds_bztree_upsert(struct ds_bztree_thread *h, uint64_t key, uint64_t value)
{
	return bz_write(h, key, value, BZ_UPSERT);
}

int
ds_bztree_update(struct ds_bztree_thread *h, uint64_t key, uint64_t value)
{
	return bz_write(h, key, value, BZ_UPDATE);
}

int
ds_bztree_remove(struct ds_bztree_thread *h, uint64_t key)
{
	struct ds_bztree *t = h->t;
	bool underfull = false;
	int ret;

	ds__node_cache_retry(&h->nc, h->mt);
	for (;;) {
		struct bz_spot at;
		struct bz_node *l;
		struct mcas_desc *d;
		uint64_t s;
		int i;

		mcas_guard_enter(h->mt);
		ret = bz_locate(h, key, &at);
		if (ret < 0)
			break;
		if (ret == 1) {
			mcas_guard_exit(h->mt);
			continue;
		}
		l = at.leaf;
		s = at.status;
		i = at.slot;
		if (i < 0) {
			if (!bz_unchanged(h, &at)) {
				mcas_guard_exit(h->mt);
				continue;
			}
			ret = 0; /* linearized at that read */
			break;
		}
		ret = bz_begin(h, &d);
		if (ret == -EAGAIN) {
			mcas_guard_exit(h->mt);
			continue;
		}
		if (ret != 0)
			break;
		ret = mcas_desc_add(d, &l->status, s, s + BZ_LEAF_VERSION - BZ_LIVE_ONE);
		if (ret == 0)
			ret = mcas_desc_add(d, &l->rec[i].w, BZ_META_LIVE, BZ_META_DEAD);
		if (ret != 0) {
			mcas_desc_abandon(d);
			break;
		}
		ret = mcas_desc_execute(d);
		if (ret == 1) {
			underfull = at.depth > 1 && bz_live(s) - 1 <= t->cap / 4;
			break;
		}
		if (ret < 0)
			break;
		mcas_guard_exit(h->mt);
	}
	mcas_guard_exit(h->mt);
	/* Best effort: the key is gone whether or not the leaf is merged. */
	if (underfull)
		(void)bz_restructure(h, key, 0, BZ_SMO_UNDERFULL);
	return ret;
}

int
ds_bztree_lookup(struct ds_bztree_thread *h, uint64_t key, uint64_t *value)
{
	int ret;

	for (;;) {
		struct bz_spot at;
		uint64_t v = 0;

		mcas_guard_enter(h->mt);
		ret = bz_locate(h, key, &at);
		if (ret < 0)
			break;
		if (ret == 0) {
			if (at.slot >= 0)
				v = bz_load(&at.leaf->rec[at.slot].value);
			if (bz_unchanged(h, &at)) {
				ret = at.slot >= 0;
				if (at.slot >= 0 && value != NULL)
					*value = v;
				break;
			}
		}
		mcas_guard_exit(h->mt);
	}
	mcas_guard_exit(h->mt);
	return ret;
}

/* bz_scan -- ds_bztree_scan() with a 64-bit @max (ds_bztree_size() counts
 * with both arrays NULL) */
static uint64_t
bz_scan(struct ds_bztree_thread *h, uint64_t start, uint64_t max, uint64_t *keys,
	uint64_t *values)
{
	uint64_t n = 0, from = start;

	while (n < max) {
		struct bz_path p;
		struct bz_node *l;
		uint64_t s;
		unsigned k;

		mcas_guard_enter(h->mt);
		if (bz_descend(h, from, 0, false, &p) != 0) {
			mcas_guard_exit(h->mt);
			return n;
		}
		l = p.node[p.depth - 1];
		s = p.status[p.depth - 1];
		if (bz_frozen(s)) {
			mcas_guard_exit(h->mt);
			continue;
		}
		k = bz_leaf_collect(h, l, s, from, h->scratch);
		if (mcas_read(h->mt, &l->status) != s) {
			mcas_guard_exit(h->mt);
			continue;
		}
		mcas_guard_exit(h->mt);
		for (unsigned i = 0; i < k && n < max; i++, n++) {
			if (keys != NULL)
				keys[n] = h->scratch[i].key;
			if (values != NULL)
				values[n] = h->scratch[i].value;
		}
		if (!p.has_hi)
			break;
		from = p.hi;
	}
	return n;
}

size_t
ds_bztree_scan(struct ds_bztree_thread *h, uint64_t start, size_t max, uint64_t *keys,
	uint64_t *values)
{
	return (size_t)bz_scan(h, start, max, keys, values);
}

uint64_t
ds_bztree_size(struct ds_bztree_thread *h)
{
	return bz_scan(h, 0, UINT64_MAX, NULL, NULL);
}

/* ---- trees ---- */

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

static size_t
bz_node_size(unsigned cap)
{
	return (BZ_HEADER_SIZE + (size_t)cap * BZ_REC_SIZE + 63) & ~(size_t)63;
}

/* bz_mcas_ok -- whether @m suits a tree of the given kind */
static int
bz_mcas_ok(struct mcas *m, bool persistent)
{
	if (m == NULL)
		return pm_error_set(-EINVAL, "ds_bztree: no MCAS instance");
	if (mcas_is_persistent(m) != persistent)
		return pm_error_set(-EINVAL, "ds_bztree: a %s tree needs a %s MCAS instance",
			persistent ? "persistent" : "volatile",
			persistent ? "persistent" : "volatile");
	if ((mcas_value_mask(m) & ~MCAS_VALUE_PORTABLE_MASK) != 0)
		return pm_error_set(-EINVAL, "ds_bztree: MCAS algorithm %s reserves bits beyond "
			"MCAS_VALUE_PORTABLE_MASK", mcas_algorithm_name(mcas_algorithm_of(m)));
	return 0;
}

/* bz_probe_pool -- whether @word may be an MCAS target of @m (see
 * dll_probe_pool() in dll.c: mcas.h has no getter for an instance's pool) */
static int
bz_probe_pool(struct mcas *m, uint64_t *word)
{
	struct mcas_thread *mt;
	struct mcas_desc *d;
	int ret = mcas_thread_register(m, &mt);

	if (ret != 0)
		return pm_error_set(ret,
			"ds_bztree: cannot register a thread on the MCAS instance: %d", ret);
	ret = mcas_desc_begin(mt, &d);
	if (ret == 0) {
		ret = mcas_desc_add(d, word, 0, 0);
		mcas_desc_abandon(d);
	}
	mcas_thread_unregister(&mt);
	if (ret == -ERANGE)
		return pm_error_set(-EINVAL,
			"ds_bztree: the MCAS instance is not in the tree's pool");
	if (ret != 0)
		return pm_error_set(ret, "ds_bztree: probing the MCAS instance failed: %d", ret);
	return 0;
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
	ret = bz_mcas_ok(m, false);
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
	bz_build(t, leaf, 0, NULL, 0);
	bz_store(t->root, bz_ref(t, leaf));
	*out = t;
	return 0;
}

size_t
ds_bztree_pmem_area_size(const struct ds_bztree_config *cfg, uint64_t nodes)
{
	unsigned cap = bz_cfg_cap(cfg);

	if (cap == 0 || nodes < 2 || nodes > DS_BZTREE_PMEM_MAX_NODES)
		return 0;
	return sizeof(struct bz_pmem_header) + 64 + (size_t)nodes * bz_node_size(cap);
}

/* bz_pmem_new -- a persistent tree bound to @m, @pool and the area at @hdr */
static int
bz_pmem_new(struct ds_bztree **out, struct mcas *m, struct pm_pool *pool,
	struct bz_pmem_header *hdr, unsigned cap, uint64_t nodes)
{
	struct ds_bztree *t = NULL;
	uint64_t *root = (uint64_t *)(hdr + 1);
	int ret = bz_probe_pool(m, root);

	if (ret != 0)
		return ret;
	ret = bz_new(&t, m, cap, (char *)hdr + 128, nodes);
	if (ret != 0)
		return ret;
	t->pool = pool;
	t->hdr = hdr;
	t->base = (uintptr_t)pm_pool_base(pool);
	t->root = root;
	*out = t;
	return 0;
}

static struct bz_node *
bz_arena_node(const struct ds_bztree *t, uint64_t i)
{
	return (struct bz_node *)(t->arena + i * t->node_size);
}

/* bz_pmem_area -- locate the area and check the instance */
static int
bz_pmem_area(struct mcas *m, struct pm_pool *pool, uint64_t area_off, size_t len, void **area)
{
	int ret;

	if (pool == NULL)
		return pm_error_set(-EINVAL, "ds_bztree: no pool");
	if (area_off % 64 != 0)
		return pm_error_set(-EINVAL, "ds_bztree: area offset %#llx is not 64-byte aligned",
			(unsigned long long)area_off);
	ret = bz_mcas_ok(m, true);
	if (ret != 0)
		return ret;
	if (pm_pool_ptr(pool, area_off, len, area) != 0)
		return pm_error_set(-ERANGE, "ds_bztree: area [%#llx, +%zu) is not inside the pool",
			(unsigned long long)area_off, len);
	return 0;
}

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
	ret = bz_pmem_area(m, pool, area_off, len, &area);
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
	bz_build(t, leaf, 0, NULL, 0);
	bz_store(t->root, bz_ref(t, leaf));
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
	return w->h != NULL ? mcas_read(w->h->mt, p) : bz_load(p);
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
	lv = bz_load(&n->level);
	cnt = bz_load(&n->n);
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
		if (bz_load(&n->rec[0].key) != lo)
			return BZ_FAIL(w, "an inner node's lower bound %llu is not its parent's "
				"separator %llu", (unsigned long long)bz_load(&n->rec[0].key),
				(unsigned long long)lo);
		for (uint64_t i = 0; i < cnt; i++) {
			uint64_t k = bz_load(&n->rec[i].key);
			bool last = i + 1 == cnt;
			uint64_t khi = last ? hi : bz_load(&n->rec[i + 1].key);
			const char *err;

			if (i > 0 && (k <= bz_load(&n->rec[i - 1].key) || (has_hi && k >= hi)))
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
		uint64_t meta = bz_wread(w, &n->rec[i].w), k = bz_load(&n->rec[i].key);

		if (meta != 0 && meta != BZ_META_LIVE && meta != BZ_META_DEAD)
			return BZ_FAIL(w, "a leaf record's metadata is %#llx", (unsigned long long)meta);
		if (i < cnt && (meta == 0 || (i > 0 && k <= bz_load(&n->rec[i - 1].key))))
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
	qsort(w->keys, nlive, sizeof(*w->keys), bz_kv_cmp);
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
	ret = bz_pmem_area(m, pool, area_off, sizeof(*hdr), &area);
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

bool
ds_bztree_is_persistent(const struct ds_bztree *t)
{
	return t->persistent;
}

unsigned
ds_bztree_capacity(const struct ds_bztree *t)
{
	return t->cap;
}

/* ---- threads ---- */

int
ds_bztree_thread_register(struct ds_bztree *t, struct ds_bztree_thread **out)
{
	struct ds_bztree_thread *h;
	int ret;

	pm_error_clear();
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return pm_error_set(-ENOMEM, "ds_bztree_thread_register: out of memory");
	/* An SMO copies up to two nodes' records plus the parent's children. */
	h->scratch = malloc(3 * (size_t)t->cap * sizeof(*h->scratch));
	if (h->scratch == NULL) {
		free(h);
		return pm_error_set(-ENOMEM, "ds_bztree_thread_register: out of memory");
	}
	ret = mcas_thread_register(t->m, &h->mt);
	if (ret != 0) {
		free(h->scratch);
		free(h);
		return pm_error_set(ret,
			"ds_bztree_thread_register: mcas_thread_register: %d", ret);
	}
	h->t = t;
	ds__node_cache_thread_add(&t->nc, &h->nc);
	*out = h;
	return 0;
}

int
ds_bztree_thread_unregister(struct ds_bztree_thread **hp)
{
	struct ds_bztree_thread *h = hp ? *hp : NULL;
	int ret;

	pm_error_clear();
	if (h == NULL)
		return 0;
	ret = ds__node_cache_thread_remove(&h->nc, &h->mt);
	if (ret != 0)
		return pm_error_set(ret,
			"ds_bztree_thread_unregister: mcas_thread_unregister: %d", ret);
	free(h->scratch);
	free(h);
	*hp = NULL;
	return 0;
}

struct mcas_thread *
ds_bztree_thread_mcas(struct ds_bztree_thread *h)
{
	return h->mt;
}

/* ---- check ---- */

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
