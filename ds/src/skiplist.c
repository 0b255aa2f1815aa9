/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/skiplist.c -- Fraser's lock-free skip list (ds/skiplist.h) on
 * reclaim/.
 *
 * Sources. K. Fraser, "Practical lock-freedom", PhD thesis, Cambridge 2004,
 * sect. 4.3.3 and its skip_lock_free.c (search that unlinks marked nodes,
 * bottom-up insertion with re-search on failure, top-down marking, and the
 * READY_FOR_FREE handshake by which the last of inserter and remover
 * triggers the full delete); ASCYLIB's skiplist-fraser (fraser.c), the base
 * of the thesis's evaluation (sect. 6.7); M. Michael, SPAA 2002, for the
 * hazard-pointer-safe traversal: never step past a marked node -- unlink it
 * with a CAS on an unmarked predecessor or restart.
 *
 * Shape. The head sentinel has every level and is never compared; the tail
 * holds UINT64_MAX. A node of height h has next[0 .. h-1]; next[i] is its
 * successor at level i, with bit 0 (MARK) set once the node is deleted at
 * level i. Keys are immutable; height is immutable.
 *
 * Invariants (per level i, as for the Harris list, ds/src/hmlist.c):
 *   I1  a marked next[i] never changes again (every CAS on next[i] expects
 *       an unmarked value), and next[0] is marked only after every upper
 *       level of the node is;
 *   I2  a node is unlinked at level i only after next[i] is marked, by a CAS
 *       on a predecessor whose next[i] is unmarked;
 *   I3  a node X is linked at level i only by its inserter (pred->next[i]:
 *       succ -> X), bottom-up, level i after level i-1; every other CAS that
 *       installs a pointer to X replaces a pointer to X or unlinks X's
 *       predecessor, so it needs X linked at level i at that moment. Hence,
 *       once X's inserter has stopped linking, X is never linked again at a
 *       level where it is not linked;
 *   I4  at every level, keys are non-decreasing along the list, and a
 *       deleted node precedes any other node with the same key (a new node
 *       with that key can reach level 0 only after the old one is marked
 *       there, hence at every level, and its own search at level i unlinks
 *       the old node before choosing its position; the old node's inserter,
 *       still linking, never links next to a node of its own key --
 *       Fraser's "unique key values at every level" check).
 *
 * Single retirement and unreachability. Each node carries two bits in
 * `state`: INSERTED (its inserter stopped linking upper levels: all linked,
 * or it found the node marked) and DELETED (the remover that won the level-0
 * mark finished marking: every level is marked, I1). Nodes of height 1 start
 * INSERTED. Inserter and winning remover each set their bit with one
 * fetch_or; exactly one of them sees the other's bit already set, and that
 * one -- only that one -- runs the full delete: a search for the node's key,
 * then reclaim_retire(). So a node is retired exactly once. At that point no
 * new link to it can appear (I3: its inserter stopped), and the search
 * leaves it unlinked at every level: at level i the search ends with pred,
 * whose next[i] it read unmarked and equal to cur, pred->key < key <=
 * cur->key, cur unmarked; were the node linked at level i at that read, it
 * would lie between pred and cur (I4), i.e. be cur, which is unmarked while
 * the node is marked at every level. Marked nodes met on the way are
 * unlinked by the search itself. (Fraser's own code retires through an epoch
 * scheme and may skip a run of marked nodes; a hazard-pointer scheme needs
 * both of the above.)
 *
 * Hazard pointers. Slots 2i and 2i+1 belong to level i. The search at level
 * i starts from the predecessor found at level i+1 (still protected in that
 * level's slot, or the head) and alternates pred and cur between its two
 * slots, so every visited node costs one reclaim_protect(), and when the
 * level is done preds[i] and succs[i] stay protected in them -- the insert
 * later dereferences and CASes them when it links upper levels. Validation
 * (only when reclaim_needs_validation()): after protecting cur the search
 * re-reads pred->next[i] and restarts from the top unless it still equals
 * cur, unmarked. pred was linked at level i when it was reached (by a
 * traversal of level i, or of level i+1, which implies level i by I3's
 * bottom-up order), and next[i] unmarked means it has not been unlinked
 * there since (I2); so cur is linked at level i at the re-read, hence not
 * retired (retirement follows the unlink at every level), and the hazard
 * published before the re-read keeps it from being freed. The sentinels
 * need no protection. An operation's own new node needs none either: it
 * cannot be retired before its inserter sets INSERTED. The remover keeps
 * the node it marks protected in its level-0 slot until the handshake, and
 * whoever runs the full delete owns the node until it retires it.
 *
 * Linearization. insert: the level-0 link CAS (returning 0: the read of
 * the found node's unmarked next[0]); remove: the winning level-0 mark
 * (returning 0: the search's read, or the other remover's mark, as in
 * hmlist.c); contains: the read of preds[0]->next[0] that made succs[0]
 * adjacent.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ds/skiplist.h>
#include <pm/error.h>

#include "lf_link.h"
#include <reclaim/reclaim.h>

#define SL_MARK ((uintptr_t)1)

/* state bits: see the handshake above. */
#define SL_INSERTED 1u
#define SL_DELETED 2u

_Static_assert(DS_SKIPLIST_HAZARDS(DS_SKIPLIST_MAX_LEVELS) <= RECLAIM_MAX_HAZARDS,
	"the tallest list must fit in the hazard slots reclaim/ allows");
_Static_assert(alignof(max_align_t) >= 2, "malloc must leave bit 0 of a node pointer clear");

struct sl_node {
	uint64_t key;
	uint32_t height;
	_Atomic uint32_t state;
	_Atomic uintptr_t next[];
};

struct ds_skiplist {
	struct sl_node *head;
	struct sl_node *tail;
	unsigned levels;
	struct reclaim_domain *domain;
	reclaim_free_fn free_fn;
	void *free_ctx;
};

static inline struct sl_node *
sl_ptr(uintptr_t w)
{
	return (struct sl_node *)(w & ~SL_MARK);
}

/* Per-thread xorshift64* state for node heights; 0 = not seeded yet. */
static _Thread_local uint64_t sl_rng;
static _Atomic uint64_t sl_seed;

/* sl_random_height -- geometric height, p = 1/2, in 1 .. @levels. */
static unsigned
sl_random_height(unsigned levels)
{
	uint64_t x = sl_rng;
	if (x == 0) {
		/* splitmix64 of a per-thread value: no system call. */
		uint64_t z = atomic_fetch_add_explicit(&sl_seed, 0x9e3779b97f4a7c15ull,
			memory_order_relaxed) ^ (uint64_t)(uintptr_t)&sl_rng;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		x = (z ^ (z >> 31)) | 1;
	}
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	sl_rng = x;
	uint64_t r = (x * 0x2545f4914f6cdd1dull) >> 32; /* the well-mixed half */
	return 1 + (unsigned)__builtin_ctzll(r | (1ull << (levels - 1)));
}

/* sl_node_new -- a malloc()ed node of @height levels, or NULL. */
static struct sl_node *
sl_node_new(uint64_t key, unsigned height)
{
	struct sl_node *n = malloc(sizeof(*n) + (size_t)height * sizeof(n->next[0]));
	if (n == NULL)
		return NULL;
	n->key = key;
	n->height = height;
	atomic_init(&n->state, height == 1 ? SL_INSERTED : 0u);
	return n;
}

/* sl_free -- the list's node release. */
static void
sl_free(const struct ds_skiplist *s, struct sl_node *n)
{
	if (s->free_fn)
		s->free_fn(n, s->free_ctx);
	else
		free(n);
}

/*
 * sl_search -- for every level i, from the top: preds[i], the last node
 * with key < @key, and succs[i], its successor, unmarked when read (the
 * tail at worst). Unlinks each marked node it meets, one at a time; restarts
 * from the top when an unlink CAS or a validation fails. On return preds[i]
 * and succs[i] are protected in slots 2i and 2i+1 (in some order) or in a
 * higher level's slots (see the file comment).
 */
static void
sl_search(const struct ds_skiplist *s, struct reclaim_thread *t, bool validate, uint64_t key,
	struct sl_node **preds, struct sl_node **succs)
{
	struct sl_node *const head = s->head, *const tail = s->tail;
	struct sl_node *pred, *cur;
retry:
	pred = head;
	for (int i = (int)s->levels - 1; i >= 0; i--) {
		uintptr_t w = ds__link_load(&pred->next[i]);
		if (w & SL_MARK)
			goto retry; /* pred is being deleted at this level */
		cur = (struct sl_node *)w;
		unsigned cslot = 2u * (unsigned)i;
		for (;;) {
			if (cur == tail)
				break;
			if (validate) {
				reclaim_protect(t, cslot, cur);
				/* Re-read after publishing (reclaim.h): cur is
				 * still linked here, behind an unmarked pred. */
				if (ds__link_load(&pred->next[i]) != (uintptr_t)cur)
					goto retry;
			}
			uintptr_t nw = ds__link_load(&cur->next[i]);
			if (nw & SL_MARK) {
				/* cur is deleted at level i: unlink it (I2). Its
				 * retirement is the full delete's business. */
				if (!ds__link_cas(&pred->next[i], (uintptr_t)cur, nw & ~SL_MARK))
					goto retry;
				cur = sl_ptr(nw);
				continue;
			}
			if (cur->key >= key)
				break;
			pred = cur;   /* keeps its slot */
			cslot ^= 1u;  /* the other slot of this level is free */
			cur = (struct sl_node *)nw;
		}
		preds[i] = pred;
		succs[i] = cur;
	}
}

/*
 * sl_full_delete -- @x is marked at every level and its inserter has
 * stopped; unlink it everywhere with a search, then retire it (the caller
 * is the one thread the handshake picked).
 */
static void
sl_full_delete(const struct ds_skiplist *s, struct reclaim_thread *t, bool validate,
	struct sl_node *x)
{
	struct sl_node *preds[DS_SKIPLIST_MAX_LEVELS], *succs[DS_SKIPLIST_MAX_LEVELS];
	sl_search(s, t, validate, x->key, preds, succs);
	ds__retire(t, x, s->free_fn, s->free_ctx);
}

unsigned
ds_skiplist_hazards(unsigned levels)
{
	if (levels == 0)
		levels = DS_SKIPLIST_DEFAULT_LEVELS;
	if (levels > DS_SKIPLIST_MAX_LEVELS)
		return 0;
	return DS_SKIPLIST_HAZARDS(levels);
}

int
ds_skiplist_new(struct ds_skiplist **out, struct reclaim_domain *d, unsigned levels,
	reclaim_free_fn free_fn, void *free_ctx)
{
	pm_error_clear();
	if (d == NULL || out == NULL)
		return pm_error_set(-EINVAL, "ds_skiplist_new: %s", pm_strerror(-EINVAL));
	*out = NULL;
	if (levels == 0)
		levels = DS_SKIPLIST_DEFAULT_LEVELS;
	if (levels < DS_SKIPLIST_MIN_LEVELS || levels > DS_SKIPLIST_MAX_LEVELS)
		return pm_error_set(-EINVAL, "ds_skiplist_new: %s", pm_strerror(-EINVAL));
	if (!ds__domain_has_hazards(d, DS_SKIPLIST_HAZARDS(levels)))
		return pm_error_set(-EINVAL, "ds_skiplist_new: %s", pm_strerror(-EINVAL));
	struct ds_skiplist *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return pm_error_set(-ENOMEM, "ds_skiplist_new: %s", pm_strerror(-ENOMEM));
	s->head = sl_node_new(0, levels);
	s->tail = sl_node_new(UINT64_MAX, levels);
	if (s->head == NULL || s->tail == NULL) {
		free(s->head);
		free(s->tail);
		free(s);
		return pm_error_set(-ENOMEM, "ds_skiplist_new: %s", pm_strerror(-ENOMEM));
	}
	for (unsigned i = 0; i < levels; i++) {
		atomic_init(&s->tail->next[i], 0);
		atomic_init(&s->head->next[i], (uintptr_t)s->tail);
	}
	s->levels = levels;
	s->domain = d;
	s->free_fn = free_fn;
	s->free_ctx = free_ctx;
	*out = s;
	return 0;
}

int
ds_skiplist_delete(struct ds_skiplist **sp)
{
	if (sp == NULL || *sp == NULL)
		return 0;
	struct ds_skiplist *s = *sp;
	/* Quiescent: every node still linked anywhere is linked at level 0
	 * and was never retired (retirement follows the unlink everywhere). */
	struct sl_node *n = sl_ptr(atomic_load_explicit(&s->head->next[0], memory_order_acquire));
	while (n != s->tail) {
		struct sl_node *next = sl_ptr(atomic_load_explicit(&n->next[0],
			memory_order_acquire));
		sl_free(s, n);
		n = next;
	}
	free(s->head);
	free(s->tail);
	free(s);
	*sp = NULL;
	return 0;
}

unsigned
ds_skiplist_levels(const struct ds_skiplist *s)
{
	return s == NULL ? 0 : s->levels;
}

int
ds_skiplist_insert(struct ds_skiplist *s, struct reclaim_thread *t, uint64_t key)
{
	if (s == NULL || t == NULL || key > DS_SKIPLIST_KEY_MAX)
		return -EINVAL;
	const bool validate = reclaim_needs_validation(t);
	struct sl_node *preds[DS_SKIPLIST_MAX_LEVELS], *succs[DS_SKIPLIST_MAX_LEVELS];
	struct sl_node *node = NULL;
	unsigned h = 0;
	int ret;
	reclaim_op_begin(t);
	for (;;) {
		sl_search(s, t, validate, key, preds, succs);
		if (succs[0]->key == key) {
			ret = 0;
			goto out;
		}
		if (node == NULL) {
			h = sl_random_height(s->levels);
			node = sl_node_new(key, h);
			if (node == NULL) {
				ret = -ENOMEM;
				goto out;
			}
		}
		for (unsigned i = 0; i < h; i++)
			atomic_store_explicit(&node->next[i], (uintptr_t)succs[i],
				memory_order_relaxed);
		/* The linearization point. Release: publishes key, height,
		 * state and next[] (pairs with the acquire in
		 * ds__link_load()). */
		if (ds__link_cas(&preds[0]->next[0], (uintptr_t)succs[0], (uintptr_t)node))
			break;
	}
	ret = 1;
	/* Link the upper levels bottom-up (Fraser's insert). Only this thread
	 * writes node->next[i] other than to mark it. */
	for (unsigned i = 1; i < h; i++) {
		for (;;) {
			struct sl_node *pred = preds[i], *succ = succs[i];
			uintptr_t nw = ds__link_load(&node->next[i]);
			if (nw & SL_MARK)
				goto linked; /* being removed: stop linking */
			/* Make next[i] the current successor before linking; a
			 * failure means a remover marked it. */
			if (nw != (uintptr_t)succ && !ds__link_cas(&node->next[i], nw, (uintptr_t)succ))
				goto linked;
			/* succ->key == key: our node was deleted and the key
			 * inserted again (I4); never link next to it -- the next
			 * round finds next[i] marked. */
			if (succ->key != key &&
			    ds__link_cas(&pred->next[i], (uintptr_t)succ, (uintptr_t)node))
				break;
			sl_search(s, t, validate, key, preds, succs);
		}
	}
linked:
	/* The handshake: the second of inserter and remover deletes. */
	if (h > 1 && (atomic_fetch_or_explicit(&node->state, SL_INSERTED,
		memory_order_acq_rel) & SL_DELETED))
		sl_full_delete(s, t, validate, node);
	node = NULL;
out:
	reclaim_op_end(t);
	free(node); /* never published */
	return ret;
}

int
ds_skiplist_remove(struct ds_skiplist *s, struct reclaim_thread *t, uint64_t key)
{
	if (s == NULL || t == NULL)
		return -EINVAL;
	if (key > DS_SKIPLIST_KEY_MAX)
		return 0;
	const bool validate = reclaim_needs_validation(t);
	struct sl_node *preds[DS_SKIPLIST_MAX_LEVELS], *succs[DS_SKIPLIST_MAX_LEVELS];
	int ret = 0;
	reclaim_op_begin(t);
	sl_search(s, t, validate, key, preds, succs);
	struct sl_node *x = succs[0]; /* protected in slot 0 or 1 until we return */
	if (x->key != key)
		goto out;
	/* Mark top-down (I1), so that a marked level 0 implies every level. */
	for (unsigned i = x->height - 1; i >= 1; i--) {
		uintptr_t w = ds__link_load(&x->next[i]);
		while (!(w & SL_MARK) &&
		       !atomic_compare_exchange_weak_explicit(&x->next[i], &w, w | SL_MARK,
			       memory_order_acq_rel, memory_order_acquire))
			;
	}
	uintptr_t w = ds__link_load(&x->next[0]);
	for (;;) {
		if (w & SL_MARK)
			goto out; /* another remover won: the key was absent after its mark */
		/* The linearization point. */
		if (atomic_compare_exchange_weak_explicit(&x->next[0], &w, w | SL_MARK,
			memory_order_acq_rel, memory_order_acquire))
			break;
	}
	ret = 1;
	if (atomic_fetch_or_explicit(&x->state, SL_DELETED, memory_order_acq_rel) & SL_INSERTED)
		sl_full_delete(s, t, validate, x);
out:
	reclaim_op_end(t);
	return ret;
}

int
ds_skiplist_contains(struct ds_skiplist *s, struct reclaim_thread *t, uint64_t key)
{
	if (s == NULL || t == NULL)
		return -EINVAL;
	if (key > DS_SKIPLIST_KEY_MAX)
		return 0;
	struct sl_node *preds[DS_SKIPLIST_MAX_LEVELS], *succs[DS_SKIPLIST_MAX_LEVELS];
	reclaim_op_begin(t);
	sl_search(s, t, reclaim_needs_validation(t), key, preds, succs);
	int ret = succs[0]->key == key;
	reclaim_op_end(t);
	return ret;
}

size_t
ds_skiplist_size(const struct ds_skiplist *s)
{
	if (s == NULL)
		return 0;
	size_t n = 0;
	const struct sl_node *p = sl_ptr(atomic_load_explicit(&s->head->next[0],
		memory_order_acquire));
	while (p != s->tail) {
		uintptr_t next = atomic_load_explicit(&p->next[0], memory_order_acquire);
		if (!(next & SL_MARK))
			n++;
		p = sl_ptr(next);
	}
	return n;
}

/*
 * sl_walk -- walk level @i, checking order, marks and heights; if @below is
 * not NULL, every node must appear, in order, in @below[0 .. @nbelow-1]
 * (the level below). Stores the nodes in @out (if not NULL) and their count
 * in *@n. Returns 0 or -EUCLEAN.
 */
static int
sl_walk(const struct ds_skiplist *s, unsigned i, const struct sl_node **below, size_t nbelow,
	const struct sl_node **out, size_t *n, char *buf, size_t buflen)
{
	size_t cnt = 0, j = 0;
	bool first = true;
	uint64_t prev = 0;
	uintptr_t w = atomic_load_explicit(&s->head->next[i], memory_order_acquire);
	if (w & SL_MARK)
		return ds__check_fail(buf, buflen, "level %u: head's next pointer is marked", i);
	const struct sl_node *p = sl_ptr(w);
	while (p != s->tail) {
		if (p == NULL)
			return ds__check_fail(buf, buflen, "level %u, node %zu: NULL link before the tail",
				i, cnt);
		if (p->height <= i || p->height > s->levels)
			return ds__check_fail(buf, buflen, "level %u, node %zu (key %llu): height %u",
				i, cnt, (unsigned long long)p->key, p->height);
		if (p->key > DS_SKIPLIST_KEY_MAX)
			return ds__check_fail(buf, buflen, "level %u, node %zu: key %llu out of range",
				i, cnt, (unsigned long long)p->key);
		if (!first && p->key <= prev)
			return ds__check_fail(buf, buflen,
				"level %u, node %zu: key %llu after %llu (not strictly increasing)",
				i, cnt, (unsigned long long)p->key, (unsigned long long)prev);
		w = atomic_load_explicit(&p->next[i], memory_order_acquire);
		if (w & SL_MARK)
			return ds__check_fail(buf, buflen,
				"level %u, node %zu (key %llu) is marked but still linked",
				i, cnt, (unsigned long long)p->key);
		if (below != NULL) {
			while (j < nbelow && below[j] != p)
				j++;
			if (j == nbelow)
				return ds__check_fail(buf, buflen,
					"level %u: node with key %llu is not linked at level %u",
					i, (unsigned long long)p->key, i - 1);
			j++;
		}
		if (out != NULL)
			out[cnt] = p;
		cnt++;
		prev = p->key;
		first = false;
		p = sl_ptr(w);
	}
	*n = cnt;
	return 0;
}

int
ds_skiplist_check(const struct ds_skiplist *s, char *buf, size_t buflen)
{
	if (buf != NULL && buflen > 0)
		buf[0] = '\0';
	if (s == NULL)
		return -EINVAL;
	if (s->head->height != s->levels || s->tail->key != UINT64_MAX)
		return ds__check_fail(buf, buflen, "sentinels overwritten");
	for (unsigned i = 0; i < s->levels; i++)
		if (atomic_load_explicit(&s->tail->next[i], memory_order_relaxed) != 0)
			return ds__check_fail(buf, buflen, "tail's next pointer at level %u is set", i);
	size_t n0;
	int ret = sl_walk(s, 0, NULL, 0, NULL, &n0, buf, buflen);
	if (ret != 0)
		return ret;
	const struct sl_node **a = malloc((n0 + 1) * sizeof(*a));
	const struct sl_node **b = malloc((n0 + 1) * sizeof(*b));
	if (a == NULL || b == NULL) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	size_t na;
	ret = sl_walk(s, 0, NULL, 0, a, &na, buf, buflen);
	if (ret == 0 && na != n0)
		ret = ds__check_fail(buf, buflen, "level 0 changed during the check");
	for (unsigned i = 1; ret == 0 && i < s->levels; i++) {
		size_t nb;
		ret = sl_walk(s, i, a, na, b, &nb, buf, buflen);
		const struct sl_node **tmp = a;
		a = b;
		b = tmp;
		na = nb;
	}
	free(a);
	free(b);
	return ret;
}
