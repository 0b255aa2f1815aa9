/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/bztree_smo.c -- the B+-tree's structure modifications: building
 * nodes, then consolidation, split, merge and rebalance, each installed
 * with the nodes it replaces frozen by one MCAS. The algorithm and its
 * invariants (T1-T4, "Structure changes") are described at the top of
 * bztree.c.
 */
#include <errno.h>
#include <stdatomic.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/persist.h>

#include "bztree_internal.h"
#include "node_cache.h"

/* ---- building nodes ---- */

/* ds__bztree_build -- write a private node: a leaf of @n live records or an inner
 * node at @level of @n children, from @kv; flushed if persistent */
void
ds__bztree_build(struct ds_bztree *t, struct bz_node *node, unsigned level, const struct bz_kv *kv,
	unsigned n)
{
	ds__word_store(&node->status,
		level == 0 ? (uint64_t)n << BZ_COUNT_SHIFT | (uint64_t)n << BZ_LIVE_SHIFT : 0);
	ds__word_store(&node->level, level);
	ds__word_store(&node->n, n);
	for (unsigned i = 0; i < n; i++) {
		ds__word_store(&node->rec[i].w, level == 0 ? BZ_META_LIVE : kv[i].value);
		ds__word_store(&node->rec[i].key, kv[i].key);
		ds__word_store(&node->rec[i].value, level == 0 ? kv[i].value : 0);
	}
	/* Unused slots of a reused node must not look published. */
	for (unsigned i = n; i < t->cap; i++)
		ds__word_store(&node->rec[i].w, 0);
	/* Durable before the MCAS that links it: its first CAS orders this. */
	if (t->persistent)
		pm_flush(node, t->node_size);
}

/* ---- structure modifications ---- */

/* bz_inner_collect -- the children of inner node @n (as of its status) */
static unsigned
bz_inner_collect(struct ds_bztree_thread *h, struct bz_node *n, struct bz_kv *out)
{
	unsigned m = (unsigned)ds__word_load(&n->n);

	for (unsigned i = 0; i < m; i++) {
		out[i].key = ds__word_load(&n->rec[i].key);
		out[i].value = mcas_read(h->mt, &n->rec[i].w);
	}
	return m;
}

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

	ret = ds__bztree_descend(h, key, level, true, &p);
	if (ret != 0)
		return ret;
	d = p.depth - 1;
	x = p.node[d];
	sx = p.status[d];
	if (ds__word_load(&x->level) != level)
		return 0; /* the tree no longer has that level */
	if (bz_frozen(sx))
		return 2;
	for (unsigned i = 0; i < d; i++)
		if (bz_frozen(p.status[i]))
			return 2;
	if (d > 0)
		m = (unsigned)ds__word_load(&p.node[d - 1]->n);

	if (kind == BZ_SMO_FULL) {
		if (level == 0 ? bz_count(sx) < t->cap : ds__word_load(&x->n) < t->cap)
			return 0;
		n = level == 0 ? ds__bztree_leaf_collect(h, x, sx, 0, kv) :
				  bz_inner_collect(h, x, kv);
		first = d > 0 ? p.slot[d - 1] : 0;
	} else {
		unsigned nx = level == 0 ? bz_live(sx) : (unsigned)ds__word_load(&x->n);

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
		n = level == 0 ? ds__bztree_leaf_collect(h, left, sl, 0, kv) :
				  bz_inner_collect(h, left, kv);
		n += level == 0 ? ds__bztree_leaf_collect(h, right, sr, 0, kv + n) :
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
		ds__bztree_build(t, built[0], level, kv, n);
	} else {
		ds__bztree_build(t, built[0], level, kv, n / 2);
		ds__bztree_build(t, built[1], level, kv + n / 2, n - n / 2);
	}
	if (new_root) {
		struct bz_kv r[2] = { { 0, bz_ref(t, built[0]) }, { sep, bz_ref(t, built[1]) } };

		ds__bztree_build(t, built[2], level + 1, r, 2);
	} else if (!in_place && !collapse) {
		struct bz_node *pn = p.node[d - 1];
		struct bz_kv *pkv = kv + n; /* room: n + m <= 3 * cap */
		unsigned q = 0;

		for (unsigned i = 0; i < first; i++, q++) {
			pkv[q].key = ds__word_load(&pn->rec[i].key);
			pkv[q].value = mcas_read(h->mt, &pn->rec[i].w);
		}
		pkv[q].key = ds__word_load(&pn->rec[first].key);
		pkv[q++].value = bz_ref(t, built[0]);
		if (j == 2) {
			pkv[q].key = sep;
			pkv[q++].value = bz_ref(t, built[1]);
		}
		for (unsigned i = first + k; i < m; i++, q++) {
			pkv[q].key = ds__word_load(&pn->rec[i].key);
			pkv[q].value = mcas_read(h->mt, &pn->rec[i].w);
		}
		ds__bztree_build(t, built[j], level + 1, pkv, q);
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
 * ds__bztree_restructure -- run an SMO of @kind on the node at @level on @key's
 * path until it is done or no longer needed. Return: 0; -errno (-ENOSPC,
 * -ENOMEM, -EBUSY, -ELOOP).
 */
int
ds__bztree_restructure(struct ds_bztree_thread *h, uint64_t key, unsigned level,
	enum bz_smo_kind kind)
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
				return ds__bztree_restructure(h, key, level + 1, BZ_SMO_UNDERFULL);
			return 0;
		case 2:
			continue;
		case 3:
			ret = ds__bztree_restructure(h, key, level + 1, BZ_SMO_FULL);
			if (ret != 0)
				return ret;
			continue;
		case 4:
			/* A lone child: merge the parent instead, and leave this
			 * node as it is (merges are best effort). */
			return ds__bztree_restructure(h, key, level + 1, BZ_SMO_UNDERFULL);
		default:
			return ret;
		}
	}
}
