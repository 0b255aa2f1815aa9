/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/bztree_internal.h -- what the parts of the BzTree-style B+-tree
 * share: node and tree layout, word helpers, descent paths. Private to
 * the ds module.
 *
 * The tree is split along its algorithm's phases; the top of bztree.c
 * describes all of it (node layout, invariants T1-T4, leaf updates, SMOs,
 * linearization, memory, persistence):
 *   bztree.c           operations: lookup, insert/upsert/update, remove,
 *                      scan, and the descent they share; thread handles
 *   bztree_smo.c       structure modifications: consolidate, split, merge,
 *                      rebalance, each frozen and installed by one MCAS
 *   bztree_recovery.c  trees: new, pmem create, pmem open (recovery walk),
 *                      close, ds_bztree_check
 * Static inline helpers keep the bz_ prefix (they are static); functions
 * shared across the files are ds__bztree_*.
 */
#ifndef DS_BZTREE_INTERNAL_H
#define DS_BZTREE_INTERNAL_H

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/area.h>
#include <pm/ptr.h>

#include "node_cache.h"
#include "node_word.h"

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

/* bz_ref -- the reference to node @n stored in target words */
static inline uint64_t
bz_ref(const struct ds_bztree *t, const struct bz_node *n)
{
	return pm_off_from_addr(t->base, n);
}

/* bz_deref -- the node reference @v refers to */
static inline struct bz_node *
bz_deref(const struct ds_bztree *t, uint64_t v)
{
	return pm_off_to_addr(t->base, v);
}

/* bz_count -- slots used of a leaf's status */
static inline unsigned
bz_count(uint64_t status)
{
	return (unsigned)((status & BZ_COUNT_MASK) >> BZ_COUNT_SHIFT);
}

/* bz_live -- live records of a leaf's status */
static inline unsigned
bz_live(uint64_t status)
{
	return (unsigned)((status & BZ_LIVE_MASK) >> BZ_LIVE_SHIFT);
}

/* bz_frozen -- whether a status is frozen */
static inline bool
bz_frozen(uint64_t status)
{
	return (status & BZ_FROZEN) != 0;
}

/*
 * bz_begin -- mcas_desc_begin() inside @h's guard. On -EAGAIN (every
 * descriptor waits for a grace period) leave the guard before yielding, as
 * dll.c explains; the caller must then start again from the root.
 */
static inline int
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

/* ---- descent and leaf reads (bztree.c) ---- */

/* ds__bztree_descend -- the path from the root to the node at @level on @key's path */
int ds__bztree_descend(struct ds_bztree_thread *h, uint64_t key, unsigned level, bool all_status,
	struct bz_path *p);

/* ds__bztree_kv_cmp -- qsort() order of struct bz_kv by key */
int ds__bztree_kv_cmp(const void *a, const void *b);

/* ds__bztree_leaf_collect -- the live records of leaf @l as of status @s, key >= @from */
unsigned ds__bztree_leaf_collect(struct ds_bztree_thread *h, struct bz_node *l, uint64_t s,
	uint64_t from, struct bz_kv *out);

/* ---- structure modifications (bztree_smo.c) ---- */

enum bz_smo_kind {
	BZ_SMO_FULL,      /* a full leaf, or an inner node with no room */
	BZ_SMO_UNDERFULL, /* merge or rebalance with a sibling */
};

/* ds__bztree_build -- write a private node from @kv; flushed if persistent */
void ds__bztree_build(struct ds_bztree *t, struct bz_node *node, unsigned level,
	const struct bz_kv *kv, unsigned n);

/* ds__bztree_restructure -- run an SMO of @kind at @level on @key's path until done */
int ds__bztree_restructure(struct ds_bztree_thread *h, uint64_t key, unsigned level,
	enum bz_smo_kind kind);

#endif /* DS_BZTREE_INTERNAL_H */
