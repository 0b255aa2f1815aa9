/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/nmbst.c -- Natarajan and Mittal's lock-free external BST
 * (ds/nmbst.h) on reclaim/.
 *
 * Sources. A. Natarajan and N. Mittal, "Fast Concurrent Lock-Free Binary
 * Search Trees", PPoPP 2014, Algorithms 1-4 (seek record, flag/tag bits in
 * child edges, injection and cleanup); ASCYLIB's bst-aravind.c, the base of
 * the thesis's evaluation (sect. 6.7). ASCYLIB's cleanup frees the leaf and
 * the successor, which is neither the set of nodes its CAS cuts off nor safe
 * under hazard pointers; what is retired here, and the seek's validation,
 * are ours and argued below.
 *
 * Shape. Internal nodes have two children, leaves none (both child words
 * NULL). A key below an internal node's key goes left, any other right. The
 * sentinel frame is the paper's: R(inf2) -> {S(inf1), leaf inf2}, S ->
 * {leaf inf0, leaf inf1}; user keys are below inf0, so they all live in S's
 * left subtree, and S.left is never flagged or tagged (a real leaf is never
 * S's child: the first insert puts an internal node there). An edge word is
 * the child's address with bit 0 FLAG (the child leaf is being removed) and
 * bit 1 TAG (the edge's node is being removed).
 *
 * Invariants:
 *   E1  an edge that is flagged or tagged never changes its address again,
 *       and only gains bits: every CAS on an edge expects a clean value
 *       (insert: leaf -> new internal; injection: leaf -> leaf|FLAG;
 *       cleanup: successor -> sibling), the tag is set by fetch_or;
 *   E2  a flagged edge points to a leaf; a tagged edge's sibling edge is
 *       flagged (cleanup tags the sibling of a flagged edge, or the edge it
 *       was called on when that one is tagged already -- cleanup runs only
 *       on an edge that is flagged or tagged);
 *   E3  the cleanup CAS on the ancestor's edge, expecting the successor
 *       clean, cuts off exactly the nodes of the successor's subtree outside
 *       the sibling's subtree: the internal nodes on the seek path from the
 *       successor down to the parent (every edge on it is tagged, E2 makes
 *       each one's other edge flagged) and, for each of them, its child off
 *       that path and off the sibling edge, a flagged leaf (E2). All those
 *       edges are frozen (E1), so the set is the same when the CAS succeeds
 *       as when the seek read it;
 *   E4  hence every internal node that is no longer in the tree has all its
 *       edges flagged or tagged; a node never re-enters the tree (a cleanup
 *       moves the sibling up, it does not re-attach anything cut off).
 *
 * Single retirement. Exactly the thread whose cleanup CAS succeeded retires
 * the nodes of E3, walking the frozen path from the successor by the key
 * (nm_retire_cut()). No node is in two such sets: once cut off, all its
 * edges are frozen (E4), so no later CAS can succeed on an edge of it, and
 * a CAS cutting a subtree off needs it attached. Leaves are retired only
 * when flagged, so the sentinel leaves never are; R and S never leave the
 * tree.
 *
 * Hazard pointers and validation. The seek keeps ancestor, successor,
 * parent and leaf protected; a node keeps its slot while it moves from role
 * to role, and the next node takes the slot of one that dropped out, so four
 * slots suffice and no protection is ever copied between slots (a copy
 * could slip past a scan that reads the slots one at a time). A remove that
 * flagged its leaf keeps that slot reserved and seeks with the other four.
 * After protecting the next node cur (read from leaf's edge e), the seek
 * restarts unless one of these holds at a re-read (only when
 * reclaim_needs_validation()):
 *   - e is clean: leaf's edge e still holds the same clean value. A node
 *     with a clean edge is in the tree (E4), so cur, its child, is too.
 *   - e is flagged or tagged (frozen, E1, so leaf may already be cut off):
 *     the updated record's ancestor edge still points to its successor,
 *     clean. Then the ancestor is in the tree (E4), the successor below it,
 *     and the path from the successor to leaf and on to cur consists of
 *     tagged or flagged, hence frozen, edges (the seek moves the successor
 *     down at every untagged edge), so cur is in the tree.
 *   (S.left, read first, is re-read like a clean edge; R and S need no
 *   protection.) Either way cur was in the tree after its hazard pointer was
 *   published, hence not retired then, so it stays safe until the slot is
 *   reused. Cleanup dereferences only the record's nodes (protected) and,
 *   after its CAS succeeds, nodes only it can retire.
 * Under the epoch-based schemes the operation's bracket makes every node it
 * reaches safe and the re-reads are skipped.
 *
 * Linearization: as in the paper. The abstract set is the keys of leaves in
 * the tree; a flagged leaf still counts until it is cut off, which happens
 * before its remove returns 1.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ds/nmbst.h>
#include <pm/error.h>

#include "lf_link.h"
#include <reclaim/reclaim.h>

#include "ds/src/nmbst_testing.h"

#define NM_FLAG ((uintptr_t)1)
#define NM_TAG ((uintptr_t)2)
#define NM_BITS (NM_FLAG | NM_TAG)

#define NM_INF0 (UINT64_MAX - 2)
#define NM_INF1 (UINT64_MAX - 1)
#define NM_INF2 UINT64_MAX

/* Hazard slots: the seek uses 4 of these 5; NM_NOSLOT marks a sentinel. */
#define NM_SLOTS_ALL 0x1fu
#define NM_NOSLOT 8u

_Static_assert(DS_NMBST_KEY_MAX < NM_INF0, "user keys must route left of the sentinels");
_Static_assert(DS_NMBST_HAZARDS == 5, "four seek slots plus the flagged leaf's");
_Static_assert(_Alignof(max_align_t) >= 4, "malloc must leave two low pointer bits clear");

struct nm_node {
	uint64_t key;
	_Atomic uintptr_t child[2]; /* [0] left, [1] right; NULL in a leaf */
};

struct ds_nmbst {
	struct nm_node *r, *s;            /* the paper's R (inf2) and S (inf1) */
	struct nm_node *leaf[3];          /* the sentinel leaves inf0..inf2 */
	struct reclaim_domain *domain;
	reclaim_free_fn free_fn;
	void *free_ctx;
};

/* The seek record (the paper's), with the hazard slot of each node. */
struct nm_seek {
	struct nm_node *anc, *succ, *par, *leaf;
	uintptr_t pf;                     /* the edge par -> leaf as read */
	unsigned sa, ss, sp, sl;          /* slots, NM_NOSLOT for R and S */
};

static inline struct nm_node *
nm_ptr(uintptr_t w)
{
	return (struct nm_node *)(w & ~NM_BITS);
}

static inline unsigned
nm_dir(uint64_t key, uint64_t node_key)
{
	return key < node_key ? 0u : 1u;
}

static inline unsigned
nm_bit(unsigned slot)
{
	return 1u << slot;
}

/* nm_free -- the tree's release of a non-sentinel node. */
static void
nm_free(const struct ds_nmbst *b, struct nm_node *n)
{
	if (b->free_fn)
		b->free_fn(n, b->free_ctx);
	else
		free(n);
}

/* nm_retire -- hand a cut-off node to the domain. */
static inline void
nm_retire(const struct ds_nmbst *b, struct reclaim_thread *t, struct nm_node *n)
{
	ds__retire(t, n, b->free_fn, b->free_ctx);
}

/*
 * nm_seek -- the paper's seek (Algorithm 1) for @key, with hazard pointers
 * in the slots of @allowed (four of them) and the validation of the file
 * comment when @validate.
 */
static void
nm_seek(const struct ds_nmbst *b, struct reclaim_thread *t, bool validate, uint64_t key,
	unsigned allowed, struct nm_seek *r)
{
	struct nm_node *anc, *succ, *par, *leaf;
	unsigned sa, ss, sp, sl;
	uintptr_t pf;
retry:
	anc = b->r;
	succ = par = b->s;
	sa = ss = sp = NM_NOSLOT;
	pf = ds__link_load(&b->s->child[0]);
	leaf = nm_ptr(pf);
	sl = (unsigned)__builtin_ctz(allowed);
	if (validate) {
		reclaim_protect(t, sl, leaf);
		if (ds__link_load(&b->s->child[0]) != pf)
			goto retry;
	}
	for (;;) {
		unsigned d = nm_dir(key, leaf->key);
		uintptr_t cf = ds__link_load(&leaf->child[d]);
		struct nm_node *cur = nm_ptr(cf);
		if (cur == NULL)
			break; /* leaf is a leaf */
		/* The record after this step: ancestor and successor move down
		 * across an untagged edge par -> leaf. */
		struct nm_node *nanc = anc, *nsucc = succ;
		unsigned nsa = sa, nss = ss;
		if (!(pf & NM_TAG)) {
			nanc = par;
			nsa = sp;
			nsucc = leaf;
			nss = sl;
		}
		unsigned cs = NM_NOSLOT;
		if (validate) {
			cs = (unsigned)__builtin_ctz(allowed &
				~(nm_bit(nsa) | nm_bit(nss) | nm_bit(sl)));
			reclaim_protect(t, cs, cur);
			/* Re-read after publishing (reclaim.h). */
			if (!(cf & NM_BITS)) {
				if (ds__link_load(&leaf->child[d]) != cf)
					goto retry;
			} else if (ds__link_load(&nanc->child[nm_dir(key, nanc->key)]) !=
				   (uintptr_t)nsucc) {
				goto retry;
			}
		}
		anc = nanc;
		sa = nsa;
		succ = nsucc;
		ss = nss;
		par = leaf;
		sp = sl;
		leaf = cur;
		sl = cs;
		pf = cf;
	}
	r->anc = anc;
	r->succ = succ;
	r->par = par;
	r->leaf = leaf;
	r->pf = pf;
	r->sa = sa;
	r->ss = ss;
	r->sp = sp;
	r->sl = sl;
}

/*
 * nm_retire_cut -- after a successful cleanup CAS: retire the nodes it cut
 * off (E3): the path from @succ down to @par by @key, each path node's
 * off-path child, and @par's child on side @gone (the flagged leaf; the
 * other child is the sibling that moved up). Only this thread can retire
 * them, so reading them here is safe.
 */
static void
nm_retire_cut(const struct ds_nmbst *b, struct reclaim_thread *t, uint64_t key,
	struct nm_node *succ, struct nm_node *par, unsigned gone)
{
	struct nm_node *x = succ;
	while (x != par) {
		unsigned d = nm_dir(key, x->key);
		struct nm_node *off = nm_ptr(ds__link_load(&x->child[d ^ 1u]));  /* flagged leaf */
		struct nm_node *next = nm_ptr(ds__link_load(&x->child[d]));      /* tagged edge */
		nm_retire(b, t, off);
		nm_retire(b, t, x);
		x = next;
	}
	nm_retire(b, t, nm_ptr(ds__link_load(&par->child[gone])));
	nm_retire(b, t, par);
}

/*
 * nm_cleanup -- the paper's cleanup (Algorithm 4) on record @r, whose edge
 * par -> leaf (in @key's direction) is flagged or tagged: tag the edge to
 * the node that stays, then swing the ancestor's edge from the successor to
 * it (keeping its flag). Returns true if this CAS succeeded (and then has
 * retired what it cut off).
 */
static bool
nm_cleanup(const struct ds_nmbst *b, struct reclaim_thread *t, uint64_t key,
	const struct nm_seek *r)
{
	struct nm_node *anc = r->anc, *succ = r->succ, *par = r->par;
	_Atomic uintptr_t *succ_addr = &anc->child[nm_dir(key, anc->key)];
	unsigned d = nm_dir(key, par->key);
	_Atomic uintptr_t *child_addr = &par->child[d];
	_Atomic uintptr_t *sib_addr = &par->child[d ^ 1u];
	unsigned gone = d;
	uintptr_t cv = ds__link_load(child_addr);
	if (!(cv & NM_BITS))
		return false; /* not a cleanup situation (cannot happen, see callers) */
	if (!(cv & NM_FLAG)) {
		/* Our edge is only tagged: it is the sibling of a flagged edge
		 * (E2), whose leaf goes; ours stays. */
		sib_addr = child_addr;
		gone = d ^ 1u;
	}
	/* Freeze the edge to the node that stays (E1); release pairs with the
	 * acquire loads of seeks that read the tag. */
	atomic_fetch_or_explicit(sib_addr, NM_TAG, memory_order_acq_rel);
	ds_nmbst__cleanup_point(key);
	uintptr_t sv = ds__link_load(sib_addr);
	uintptr_t nv = (sv & ~NM_BITS) | (sv & NM_FLAG);
	if (!ds__link_cas(succ_addr, (uintptr_t)succ, nv))
		return false;
	nm_retire_cut(b, t, key, succ, par, gone);
	return true;
}

/* nm_node_new -- a malloc()ed node with @key and children @l, @r. */
static struct nm_node *
nm_node_new(uint64_t key, struct nm_node *l, struct nm_node *r)
{
	struct nm_node *n = malloc(sizeof(*n));
	if (n == NULL)
		return NULL;
	n->key = key;
	atomic_init(&n->child[0], (uintptr_t)l);
	atomic_init(&n->child[1], (uintptr_t)r);
	return n;
}

int
ds_nmbst_new(struct ds_nmbst **out, struct reclaim_domain *d, reclaim_free_fn free_fn,
	void *free_ctx)
{
	pm_error_clear();
	if (d == NULL || out == NULL)
		return pm_error_set(-EINVAL, "ds_nmbst_new: %s", pm_strerror(-EINVAL));
	*out = NULL;
	if (!ds__domain_has_hazards(d, DS_NMBST_HAZARDS))
		return pm_error_set(-EINVAL, "ds_nmbst_new: %s", pm_strerror(-EINVAL));
	struct ds_nmbst *b = calloc(1, sizeof(*b));
	if (b == NULL)
		return pm_error_set(-ENOMEM, "ds_nmbst_new: %s", pm_strerror(-ENOMEM));
	b->leaf[0] = nm_node_new(NM_INF0, NULL, NULL);
	b->leaf[1] = nm_node_new(NM_INF1, NULL, NULL);
	b->leaf[2] = nm_node_new(NM_INF2, NULL, NULL);
	if (b->leaf[0] && b->leaf[1])
		b->s = nm_node_new(NM_INF1, b->leaf[0], b->leaf[1]);
	if (b->s && b->leaf[2])
		b->r = nm_node_new(NM_INF2, b->s, b->leaf[2]);
	if (b->r == NULL) {
		free(b->leaf[0]);
		free(b->leaf[1]);
		free(b->leaf[2]);
		free(b->s);
		free(b);
		return pm_error_set(-ENOMEM, "ds_nmbst_new: %s", pm_strerror(-ENOMEM));
	}
	b->domain = d;
	b->free_fn = free_fn;
	b->free_ctx = free_ctx;
	*out = b;
	return 0;
}

/* nm_is_sentinel -- whether @n is one of the five nodes ds_nmbst_new() made. */
static bool
nm_is_sentinel(const struct ds_nmbst *b, const struct nm_node *n)
{
	return n == b->r || n == b->s || n == b->leaf[0] || n == b->leaf[1] || n == b->leaf[2];
}

int
ds_nmbst_delete(struct ds_nmbst **bp)
{
	if (bp == NULL || *bp == NULL)
		return 0;
	struct ds_nmbst *b = *bp;
	/* Free by right rotations: no recursion, no stack, O(n). */
	struct nm_node *n = b->r;
	while (n != NULL) {
		struct nm_node *l = nm_ptr(atomic_load_explicit(&n->child[0], memory_order_acquire));
		if (l != NULL) {
			atomic_store_explicit(&n->child[0], atomic_load_explicit(&l->child[1],
				memory_order_relaxed), memory_order_relaxed);
			atomic_store_explicit(&l->child[1], (uintptr_t)n, memory_order_relaxed);
			n = l;
		} else {
			struct nm_node *next = nm_ptr(atomic_load_explicit(&n->child[1],
				memory_order_acquire));
			if (nm_is_sentinel(b, n))
				free(n);
			else
				nm_free(b, n);
			n = next;
		}
	}
	free(b);
	*bp = NULL;
	return 0;
}

int
ds_nmbst_insert(struct ds_nmbst *b, struct reclaim_thread *t, uint64_t key)
{
	if (b == NULL || t == NULL || key > DS_NMBST_KEY_MAX)
		return -EINVAL;
	const bool validate = reclaim_needs_validation(t);
	struct nm_node *ni = NULL, *nl = NULL;
	struct nm_seek r;
	int ret;
	reclaim_op_begin(t);
	for (;;) {
		nm_seek(b, t, validate, key, NM_SLOTS_ALL & ~nm_bit(4), &r);
		struct nm_node *leaf = r.leaf;
		if (leaf->key == key) {
			ret = 0;
			break;
		}
		_Atomic uintptr_t *child_addr = &r.par->child[nm_dir(key, r.par->key)];
		if (ni == NULL) {
			nl = nm_node_new(key, NULL, NULL);
			ni = nl ? nm_node_new(0, NULL, NULL) : NULL;
			if (ni == NULL) {
				ret = -ENOMEM;
				break;
			}
		}
		ni->key = key > leaf->key ? key : leaf->key;
		atomic_store_explicit(&ni->child[nm_dir(key, ni->key)], (uintptr_t)nl,
			memory_order_relaxed);
		atomic_store_explicit(&ni->child[nm_dir(leaf->key, ni->key)], (uintptr_t)leaf,
			memory_order_relaxed);
		/* The linearization point. Release: publishes ni and nl (pairs
		 * with the acquire in ds__link_load()). */
		if (ds__link_cas(child_addr, (uintptr_t)leaf, (uintptr_t)ni)) {
			ni = nl = NULL;
			ret = 1;
			break;
		}
		/* Help the remove that flagged or tagged this edge, if it still
		 * points to our leaf, then retry. */
		uintptr_t cv = ds__link_load(child_addr);
		if (nm_ptr(cv) == leaf && (cv & NM_BITS))
			(void)nm_cleanup(b, t, key, &r);
	}
	reclaim_op_end(t);
	free(ni); /* never published */
	free(nl);
	return ret;
}

int
ds_nmbst_remove(struct ds_nmbst *b, struct reclaim_thread *t, uint64_t key)
{
	if (b == NULL || t == NULL)
		return -EINVAL;
	if (key > DS_NMBST_KEY_MAX)
		return 0;
	const bool validate = reclaim_needs_validation(t);
	struct nm_node *flagged = NULL; /* our leaf once injected (the paper's CLEANUP mode) */
	unsigned allowed = NM_SLOTS_ALL & ~nm_bit(4);
	struct nm_seek r;
	int ret;
	reclaim_op_begin(t);
	for (;;) {
		nm_seek(b, t, validate, key, allowed, &r);
		if (flagged == NULL) {
			struct nm_node *leaf = r.leaf;
			if (leaf->key != key) {
				ret = 0;
				break;
			}
			_Atomic uintptr_t *child_addr = &r.par->child[nm_dir(key, r.par->key)];
			/* Injection: the flag makes the remove irrevocable. */
			if (ds__link_cas(child_addr, (uintptr_t)leaf, (uintptr_t)leaf | NM_FLAG)) {
				flagged = leaf;
				/* Keep it protected where it is: later seeks use
				 * the other four slots (no copy, see above). */
				allowed = NM_SLOTS_ALL & ~nm_bit(r.sl);
				if (nm_cleanup(b, t, key, &r)) {
					ret = 1;
					break;
				}
			} else {
				uintptr_t cv = ds__link_load(child_addr);
				if (nm_ptr(cv) == leaf && (cv & NM_BITS))
					(void)nm_cleanup(b, t, key, &r);
			}
		} else {
			/* Our leaf is gone once a seek no longer ends at it (it
			 * cannot come back, E4; it cannot be reused while our
			 * hazard pointer names it). */
			if (r.leaf != flagged) {
				ret = 1;
				break;
			}
			if (nm_cleanup(b, t, key, &r)) {
				ret = 1;
				break;
			}
		}
	}
	reclaim_op_end(t);
	return ret;
}

int
ds_nmbst_contains(struct ds_nmbst *b, struct reclaim_thread *t, uint64_t key)
{
	if (b == NULL || t == NULL)
		return -EINVAL;
	if (key > DS_NMBST_KEY_MAX)
		return 0;
	struct nm_seek r;
	reclaim_op_begin(t);
	nm_seek(b, t, reclaim_needs_validation(t), key, NM_SLOTS_ALL & ~nm_bit(4), &r);
	int ret = r.leaf->key == key;
	reclaim_op_end(t);
	return ret;
}

/* One pending subtree of the walk: every key in it must be in [lo, hi]. */
struct nm_frame {
	const struct nm_node *n;
	uint64_t lo, hi;
};

/*
 * nm_walk -- visit every node from R depth-first, leaves left to right,
 * counting the user leaves in *@count; with @check, verify the invariants
 * of ds_nmbst_check(). Returns 0, -EUCLEAN or -ENOMEM.
 */
static int
nm_walk(const struct ds_nmbst *b, bool check, size_t *count, char *buf, size_t buflen)
{
	size_t cap = 64, top = 0, leaves = 0, users = 0;
	struct nm_frame *st = malloc(cap * sizeof(*st));
	if (st == NULL)
		return -ENOMEM;
	int ret = 0;
	uint64_t prev = 0;
	st[top++] = (struct nm_frame){ b->r, 0, UINT64_MAX };
	while (top > 0) {
		struct nm_frame f = st[--top];
		const struct nm_node *n = f.n;
		uintptr_t l = atomic_load_explicit(&n->child[0], memory_order_acquire);
		uintptr_t r = atomic_load_explicit(&n->child[1], memory_order_acquire);
		if (check && ((l | r) & NM_BITS)) {
			ret = ds__check_fail(buf, buflen, "node %llu has a flagged or tagged edge",
				(unsigned long long)n->key);
			break;
		}
		if (check && (n->key < f.lo || n->key > f.hi)) {
			ret = ds__check_fail(buf, buflen, "node %llu outside its range [%llu, %llu]",
				(unsigned long long)n->key, (unsigned long long)f.lo,
				(unsigned long long)f.hi);
			break;
		}
		if (l == 0 && r == 0) {
			if (check && leaves > 0 && n->key <= prev) {
				ret = ds__check_fail(buf, buflen, "leaf %llu after leaf %llu in order",
					(unsigned long long)n->key, (unsigned long long)prev);
				break;
			}
			if (n->key < NM_INF0)
				users++;
			prev = n->key;
			leaves++;
			continue;
		}
		if (check && (l == 0 || r == 0)) {
			ret = ds__check_fail(buf, buflen, "internal node %llu has one child",
				(unsigned long long)n->key);
			break;
		}
		if (check && n->key <= f.lo) {
			ret = ds__check_fail(buf, buflen, "internal node %llu leaves no key to its left",
				(unsigned long long)n->key);
			break;
		}
		if (top + 2 > cap) {
			struct nm_frame *g = realloc(st, 2 * cap * sizeof(*st));
			if (g == NULL) {
				ret = -ENOMEM;
				break;
			}
			st = g;
			cap *= 2;
		}
		/* Right first, so the left subtree is visited first. */
		st[top++] = (struct nm_frame){ nm_ptr(r), n->key, f.hi };
		st[top++] = (struct nm_frame){ nm_ptr(l), f.lo, n->key - 1 };
	}
	free(st);
	if (ret == 0 && check) {
		/* The frame: R(inf2) -> {S(inf1), inf2}, S -> {..., inf1}, and the
		 * last three leaves in order are inf0, inf1, inf2. */
		const struct nm_node *s = nm_ptr(atomic_load_explicit(&b->r->child[0],
			memory_order_acquire));
		if (b->r->key != NM_INF2 || s != b->s || s->key != NM_INF1 ||
		    nm_ptr(atomic_load_explicit(&b->r->child[1], memory_order_acquire)) !=
			    b->leaf[2] ||
		    nm_ptr(atomic_load_explicit(&s->child[1], memory_order_acquire)) !=
			    b->leaf[1] ||
		    b->leaf[0]->key != NM_INF0 || b->leaf[1]->key != NM_INF1 ||
		    b->leaf[2]->key != NM_INF2)
			ret = ds__check_fail(buf, buflen, "sentinel frame broken");
		else if (leaves != users + 3)
			ret = ds__check_fail(buf, buflen, "%zu leaves, %zu user keys: sentinel leaves "
				"missing or duplicated", leaves, users);
	}
	*count = users;
	return ret;
}

size_t
ds_nmbst_size(const struct ds_nmbst *b)
{
	size_t n = 0;
	if (b == NULL || nm_walk(b, false, &n, NULL, 0) != 0)
		return 0;
	return n;
}

int
ds_nmbst_check(const struct ds_nmbst *b, char *buf, size_t buflen)
{
	if (buf != NULL && buflen > 0)
		buf[0] = '\0';
	if (b == NULL)
		return -EINVAL;
	size_t n;
	return nm_walk(b, true, &n, buf, buflen);
}
