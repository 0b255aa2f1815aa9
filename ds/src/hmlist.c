/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/hmlist.c -- the Harris-Michael lock-free sorted linked list
 * (ds/hmlist.h) on reclaim/.
 *
 * Sources. T. Harris, "A Pragmatic Implementation of Non-Blocking
 * Linked-Lists", DISC 2001 (logical deletion by marking the next pointer,
 * physical deletion by a CAS on the predecessor); M. Michael, "High
 * Performance Dynamic Lock-Free Hash Tables and List-Based Sets", SPAA 2002,
 * Fig. 9 (a traversal that unlinks each marked node it meets, one at a time,
 * and restarts from the head when that CAS fails, so that it is sound under
 * hazard pointers); the QSense-instrumented version of the thesis, App. E.2
 * (Zablotchi's EPFL thesis, 2020, Alg. E.1-E.3: two hazard pointers, left and right,
 * validated by re-reading left->next).
 *
 * Shape. head -> n1 -> ... -> nk -> tail, keys strictly increasing; head is
 * never compared, tail holds UINT64_MAX. A node's next word is its
 * successor's address with bit 0 (MARK) set once the node is logically
 * deleted. Both sentinels live inside struct ds_hmlist and are never
 * marked, unlinked or retired.
 *
 * Invariants:
 *   I1  a marked next word never changes again (every CAS on a next word
 *       expects an unmarked value);
 *   I2  a node is unlinked only after it is marked, by a CAS on an
 *       unmarked predecessor (so the predecessor is linked at that moment);
 *   I3  a node is never linked again once unlinked: the only CASes that
 *       install a pointer to an existing node X replace a pointer to X
 *       (insert: pred->next X -> new with new->next == X) or unlink X's
 *       predecessor (pred->next P -> X where P->next == X|MARK, frozen by
 *       I1), and both need X linked at that moment.
 * By I2 and I3 exactly one CAS unlinks a node; that CAS's thread retires it,
 * so every node is retired exactly once, after it is unreachable.
 *
 * Hazard pointers. The traversal holds (left, right) with left->next ==
 * right observed; left and right alternate between slots 0 and 1 as the
 * traversal advances, so each visited node costs one reclaim_protect().
 * Validation (only when reclaim_needs_validation()): after protecting right
 * the traversal re-reads left->next and restarts unless it still equals
 * right, unmarked. Left was itself validated when it was the right node, so
 * it was linked then; left->next unmarked now means left has not been
 * unlinked since (I2), so right is linked now, hence not retired, and the
 * hazard pointer published before this re-read keeps it from being freed.
 * The tail needs no protection (it is never freed). Under the epoch-based
 * schemes the bracket reclaim_op_begin()/reclaim_op_end() alone makes every
 * node reachable during the operation safe, and the re-read is skipped.
 *
 * Linearization. insert: the linking CAS (or, returning 0, the read of the
 * found node's unmarked next word); remove: the marking CAS (or, returning
 * 0, the read that found a larger key, or the marking CAS of the thread
 * that marked the node first); contains: the read of left->next that made
 * right adjacent (Michael's argument, Sect. 4).
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ds/hmlist.h>
#include <pm/error.h>

#include "lf_link.h"
#include <reclaim/reclaim.h>

#define HM_MARK ((uintptr_t)1)

struct hm_node {
	uint64_t key;
	_Atomic uintptr_t next;
};

struct ds_hmlist {
	alignas(64) struct hm_node head; /* written by every insert/remove at the front */
	alignas(64) struct hm_node tail; /* read-only */
	struct reclaim_domain *domain;
	reclaim_free_fn free_fn;
	void *free_ctx;
};

_Static_assert(alignof(max_align_t) >= 2, "malloc must leave bit 0 of a node pointer clear");

static inline struct hm_node *
hm_ptr(uintptr_t w)
{
	return (struct hm_node *)(w & ~HM_MARK);
}

/* hm_free -- the list's node release. */
static void
hm_free(struct ds_hmlist *l, struct hm_node *n)
{
	if (l->free_fn)
		l->free_fn(n, l->free_ctx);
	else
		free(n);
}

/*
 * hm_search -- Michael's Find (SPAA 2002, Fig. 9) in the two-hazard form of
 * the thesis's Alg. E.3: return the first unmarked node with key >= @key and
 * its predecessor in *@leftp, adjacent when observed. Unlinks and retires
 * every marked node it meets; restarts from the head when such a CAS fails
 * or a validation finds the pair changed.
 */
static struct hm_node *
hm_search(struct ds_hmlist *l, struct reclaim_thread *t, bool validate, uint64_t key,
	struct hm_node **leftp)
{
	struct hm_node *const tail = &l->tail;
	struct hm_node *left, *right;
	unsigned rslot;
retry:
	left = &l->head;
	rslot = 0;
	right = hm_ptr(ds__link_load(&left->next)); /* the head is never marked */
	for (;;) {
		if (right == tail)
			break;
		if (validate) {
			reclaim_protect(t, rslot, right);
			/* Re-read after publishing (reclaim.h): right is still
			 * linked, behind an unmarked left. */
			if (ds__link_load(&left->next) != (uintptr_t)right)
				goto retry;
		}
		uintptr_t rnext = ds__link_load(&right->next);
		if (rnext & HM_MARK) {
			/* right is logically deleted: unlink it (I2). */
			if (!ds__link_cas(&left->next, (uintptr_t)right, rnext & ~HM_MARK))
				goto retry;
			/* Our CAS unlinked it, so we retire it (I3: only once).
			 * It stays protected by rslot until overwritten. */
			ds__retire(t, right, l->free_fn, l->free_ctx);
			right = hm_ptr(rnext);
			continue;
		}
		if (right->key >= key)
			break;
		left = right;          /* keeps its slot */
		rslot ^= 1;            /* the old left's slot is free */
		right = (struct hm_node *)rnext;
	}
	*leftp = left;
	return right;
}

int
ds_hmlist_new(struct ds_hmlist **out, struct reclaim_domain *d, reclaim_free_fn free_fn,
	void *free_ctx)
{
	pm_error_clear();
	if (d == NULL || out == NULL)
		return pm_error_set(-EINVAL, "ds_hmlist_new: %s", pm_strerror(-EINVAL));
	*out = NULL;
	if (!ds__domain_has_hazards(d, DS_HMLIST_HAZARDS))
		return pm_error_set(-EINVAL, "ds_hmlist_new: %s", pm_strerror(-EINVAL));
	struct ds_hmlist *l = aligned_alloc(64, sizeof(*l));
	if (l == NULL)
		return pm_error_set(-ENOMEM, "ds_hmlist_new: %s", pm_strerror(-ENOMEM));
	memset(l, 0, sizeof(*l));
	l->domain = d;
	l->free_fn = free_fn;
	l->free_ctx = free_ctx;
	l->tail.key = UINT64_MAX;
	atomic_init(&l->tail.next, 0);
	l->head.key = 0;
	atomic_init(&l->head.next, (uintptr_t)&l->tail);
	*out = l;
	return 0;
}

int
ds_hmlist_delete(struct ds_hmlist **lp)
{
	if (lp == NULL || *lp == NULL)
		return 0;
	struct ds_hmlist *l = *lp;
	struct hm_node *n = hm_ptr(atomic_load_explicit(&l->head.next, memory_order_acquire));
	while (n != &l->tail) {
		struct hm_node *next = hm_ptr(atomic_load_explicit(&n->next, memory_order_acquire));
		hm_free(l, n);
		n = next;
	}
	free(l);
	*lp = NULL;
	return 0;
}

int
ds_hmlist_insert(struct ds_hmlist *l, struct reclaim_thread *t, uint64_t key)
{
	if (l == NULL || t == NULL || key > DS_HMLIST_KEY_MAX)
		return -EINVAL;
	const bool validate = reclaim_needs_validation(t);
	struct hm_node *node = NULL, *left, *right;
	int ret;
	reclaim_op_begin(t);
	for (;;) {
		right = hm_search(l, t, validate, key, &left);
		if (right->key == key) {
			ret = 0;
			break;
		}
		if (node == NULL) {
			node = malloc(sizeof(*node));
			if (node == NULL) {
				ret = -ENOMEM;
				break;
			}
			node->key = key;
		}
		atomic_store_explicit(&node->next, (uintptr_t)right, memory_order_relaxed);
		/* Release: publishes key and next (pairs with the acquire in
		 * ds__link_load()). Fails if left was marked or right is no
		 * longer its successor. */
		if (ds__link_cas(&left->next, (uintptr_t)right, (uintptr_t)node)) {
			node = NULL;
			ret = 1;
			break;
		}
	}
	reclaim_op_end(t);
	free(node); /* never published */
	return ret;
}

int
ds_hmlist_remove(struct ds_hmlist *l, struct reclaim_thread *t, uint64_t key)
{
	if (l == NULL || t == NULL)
		return -EINVAL;
	if (key > DS_HMLIST_KEY_MAX)
		return 0;
	const bool validate = reclaim_needs_validation(t);
	struct hm_node *left, *right;
	uintptr_t rnext;
	int ret;
	reclaim_op_begin(t);
	right = hm_search(l, t, validate, key, &left);
	if (right->key != key) {
		ret = 0;
		goto out;
	}
	rnext = ds__link_load(&right->next);
	while (!(rnext & HM_MARK)) {
		/* The linearization point: right is logically deleted. A
		 * failure reloads rnext (a node was inserted after right, or
		 * right was marked). */
		if (atomic_compare_exchange_strong_explicit(&right->next, &rnext,
			rnext | HM_MARK, memory_order_acq_rel, memory_order_acquire))
			goto marked;
	}
	/* Another remove marked it after our search saw it unmarked:
	 * linearize right after that marking, when the key was absent. */
	ret = 0;
	goto out;
marked:
	ret = 1;
	/* Unlink it ourselves, or let a search do it (and retire it): the
	 * search for @key cannot get past a marked node with key @key. */
	if (ds__link_cas(&left->next, (uintptr_t)right, rnext))
		ds__retire(t, right, l->free_fn, l->free_ctx);
	else
		(void)hm_search(l, t, validate, key, &left);
out:
	reclaim_op_end(t);
	return ret;
}

int
ds_hmlist_contains(struct ds_hmlist *l, struct reclaim_thread *t, uint64_t key)
{
	if (l == NULL || t == NULL)
		return -EINVAL;
	if (key > DS_HMLIST_KEY_MAX)
		return 0;
	struct hm_node *left;
	reclaim_op_begin(t);
	struct hm_node *right = hm_search(l, t, reclaim_needs_validation(t), key, &left);
	int ret = right->key == key;
	reclaim_op_end(t);
	return ret;
}

size_t
ds_hmlist_size(const struct ds_hmlist *l)
{
	if (l == NULL)
		return 0;
	size_t n = 0;
	const struct hm_node *p = hm_ptr(atomic_load_explicit(&l->head.next, memory_order_acquire));
	while (p != &l->tail) {
		uintptr_t next = atomic_load_explicit(&p->next, memory_order_acquire);
		if (!(next & HM_MARK))
			n++;
		p = hm_ptr(next);
	}
	return n;
}

int
ds_hmlist_check(const struct ds_hmlist *l, char *buf, size_t buflen)
{
	if (buf != NULL && buflen > 0)
		buf[0] = '\0';
	if (l == NULL)
		return -EINVAL;
	uintptr_t w = atomic_load_explicit(&l->head.next, memory_order_acquire);
	if (w & HM_MARK)
		return ds__check_fail(buf, buflen, "head's next pointer is marked");
	if (l->tail.key != UINT64_MAX || atomic_load_explicit(&l->tail.next,
		memory_order_relaxed) != 0)
		return ds__check_fail(buf, buflen, "tail sentinel overwritten");
	size_t i = 0;
	bool first = true;
	uint64_t prev = 0;
	const struct hm_node *p = hm_ptr(w);
	while (p != &l->tail) {
		if (p == NULL)
			return ds__check_fail(buf, buflen, "node %zu: NULL link before the tail", i);
		if (p->key > DS_HMLIST_KEY_MAX)
			return ds__check_fail(buf, buflen, "node %zu: key %llu out of range", i,
				(unsigned long long)p->key);
		if (!first && p->key <= prev)
			return ds__check_fail(buf, buflen,
				"node %zu: key %llu after %llu (not strictly increasing)", i,
				(unsigned long long)p->key, (unsigned long long)prev);
		w = atomic_load_explicit(&p->next, memory_order_acquire);
		if (w & HM_MARK)
			return ds__check_fail(buf, buflen, "node %zu (key %llu) is marked but still linked",
				i, (unsigned long long)p->key);
		prev = p->key;
		first = false;
		p = hm_ptr(w);
		i++;
	}
	return 0;
}
