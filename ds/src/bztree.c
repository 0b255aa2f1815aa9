/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/bztree.c -- a BzTree-style lock-free B+-tree (ds/bztree.h) on MCAS:
 * its operations (lookup, insert/upsert/update, remove, scan) and thread
 * handles. This comment describes the whole tree; structure modifications
 * are in bztree_smo.c, trees, recovery and checking in bztree_recovery.c,
 * what they share in bztree_internal.h.
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
#include <stdlib.h>
#include <string.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/error.h>
#include <pm/persist.h>

#include "bztree_internal.h"
#include "node_cache.h"

/* ---- descent and leaf reads (inside a guard) ---- */

/* bz_child_slot -- the slot of inner node @n (@m children) whose range
 * holds @key: the last one whose separator is <= @key */
static unsigned
bz_child_slot(const struct bz_node *n, unsigned m, uint64_t key)
{
	unsigned lo = 1, hi = m;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (ds__word_load(&n->rec[mid].key) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/*
 * ds__bztree_descend -- the path from the root to the node at @level whose range
 * holds @key (or to a higher leaf-most node if the tree is lower), with the
 * last node's status; the statuses of the nodes above it too if
 * @all_status (an SMO expects them; a point operation linearizes on the
 * last node's alone, and skipping the others spares a descriptor
 * indirection per level where AOPT left one installed).
 * Return: 0; -ELOOP if the path is deeper than DS_BZTREE_MAX_HEIGHT.
 */
int
ds__bztree_descend(struct ds_bztree_thread *h, uint64_t key, unsigned level, bool all_status,
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
		if (ds__word_load(&n->level) <= level) {
			p->status[d] = mcas_read(h->mt, &n->status);
			return 0;
		}
		/* Never used when not read: 0 would be a plausible status. */
		p->status[d] = all_status ? mcas_read(h->mt, &n->status) : BZ_FROZEN;
		if (p->depth == DS_BZTREE_MAX_HEIGHT)
			return -ELOOP;
		m = (unsigned)ds__word_load(&n->n);
		s = m > 1 ? bz_child_slot(n, m, key) : 0;
		p->slot[d] = s;
		if (s + 1 < m) {
			/* nested ranges: the child's bound is within ours */
			p->hi = ds__word_load(&n->rec[s + 1].key);
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
	unsigned cnt = bz_count(s), ns = (unsigned)ds__word_load(&l->n);
	unsigned lo = 0, hi = ns;

	/* The sorted part: keys unique and immutable. */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (ds__word_load(&l->rec[mid].key) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ns && ds__word_load(&l->rec[lo].key) == key &&
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
		if ((int)i != skip && ds__word_load(&l->rec[i].key) == key &&
				mcas_read(h->mt, &l->rec[i].w) == BZ_META_LIVE)
			return (int)i;
	return -1;
}

/* ds__bztree_kv_cmp -- qsort() order of struct bz_kv by key */
int
ds__bztree_kv_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct bz_kv *)a)->key, y = ((const struct bz_kv *)b)->key;

	return x < y ? -1 : x > y;
}

/* ds__bztree_leaf_collect -- the live records of leaf @l as of status @s with key
 * >= @from, sorted, into @out; returns how many */
unsigned
ds__bztree_leaf_collect(struct ds_bztree_thread *h, struct bz_node *l, uint64_t s, uint64_t from,
	struct bz_kv *out)
{
	unsigned cnt = bz_count(s), ns = (unsigned)ds__word_load(&l->n), k = 0;

	for (unsigned i = 0; i < cnt; i++) {
		uint64_t key;

		if (mcas_read(h->mt, &l->rec[i].w) != BZ_META_LIVE)
			continue;
		key = ds__word_load(&l->rec[i].key);
		if (key < from)
			continue;
		out[k].key = key;
		out[k].value = ds__word_load(&l->rec[i].value);
		k++;
	}
	/* The sorted part comes first and stays sorted; only an append area
	 * needs sorting. */
	if (cnt > ns)
		qsort(out, k, sizeof(*out), ds__bztree_kv_cmp);
	return k;
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
 * from the root); -ELOOP from ds__bztree_descend().
 */
static int
bz_locate(struct ds_bztree_thread *h, uint64_t key, struct bz_spot *at)
{
	struct bz_path p;
	int ret = ds__bztree_descend(h, key, 0, false, &p);

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
			ret = ds__bztree_restructure(h, key, 0, BZ_SMO_FULL);
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
		ds__word_store(&l->rec[slot].key, key);
		ds__word_store(&l->rec[slot].value, value);
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

/* ds_bztree_insert -- add @key unless present */
int
ds_bztree_insert(struct ds_bztree_thread *h, uint64_t key, uint64_t value)
{
	return bz_write(h, key, value, BZ_INSERT);
}

/* ds_bztree_upsert -- add @key or replace its value */
int
ds_bztree_upsert(struct ds_bztree_thread *h, uint64_t key, uint64_t value)
{
	return bz_write(h, key, value, BZ_UPSERT);
}

/* ds_bztree_update -- replace the value of @key if present */
int
ds_bztree_update(struct ds_bztree_thread *h, uint64_t key, uint64_t value)
{
	return bz_write(h, key, value, BZ_UPDATE);
}

/* ds_bztree_remove -- remove @key; merge its leaf if that leaves it underfull */
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
		(void)ds__bztree_restructure(h, key, 0, BZ_SMO_UNDERFULL);
	return ret;
}

/* ds_bztree_lookup -- whether @key is present, and its value */
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
				v = ds__word_load(&at.leaf->rec[at.slot].value);
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
		if (ds__bztree_descend(h, from, 0, false, &p) != 0) {
			mcas_guard_exit(h->mt);
			return n;
		}
		l = p.node[p.depth - 1];
		s = p.status[p.depth - 1];
		if (bz_frozen(s)) {
			mcas_guard_exit(h->mt);
			continue;
		}
		k = ds__bztree_leaf_collect(h, l, s, from, h->scratch);
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

/* ds_bztree_scan -- up to @max keys from @start in order, one leaf at a time */
size_t
ds_bztree_scan(struct ds_bztree_thread *h, uint64_t start, size_t max, uint64_t *keys,
	uint64_t *values)
{
	return (size_t)bz_scan(h, start, max, keys, values);
}

/* ds_bztree_size -- the number of keys, by a scan of the whole tree */
uint64_t
ds_bztree_size(struct ds_bztree_thread *h)
{
	return bz_scan(h, 0, UINT64_MAX, NULL, NULL);
}

/* ---- threads ---- */

/* ds_bztree_thread_register -- a handle with its scratch, MCAS thread and node cache */
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

/* ds_bztree_thread_unregister -- release a handle; its cached nodes go back to the tree */
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

/* ds_bztree_thread_mcas -- the handle's MCAS thread */
struct mcas_thread *
ds_bztree_thread_mcas(struct ds_bztree_thread *h)
{
	return h->mt;
}
