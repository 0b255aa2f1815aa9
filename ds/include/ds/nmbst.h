/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/nmbst.h -- a lock-free ordered set of uint64_t keys: Natarajan and
 * Mittal's lock-free external binary search tree, with its nodes reclaimed
 * through reclaim/reclaim.h.
 *
 * This is the BST of the thesis's reclamation evaluation (sect. 6.7:
 * A. Natarajan and N. Mittal, "Fast Concurrent Lock-Free Binary Search
 * Trees", PPoPP 2014, as in ASCYLIB's bst-aravind). Keys live in the leaves;
 * internal nodes route (left: smaller keys, right: greater or equal). A
 * remove flags the edge to its leaf (the injection), then cleanup tags the
 * sibling edge and swings the edge from the "ancestor" to the "successor"
 * so that it points to the sibling: one CAS removes the leaf, its parent and
 * every node on the tagged path between successor and parent. The tree is
 * not balanced.
 *
 * Reclamation. Every operation brackets itself with reclaim_op_begin() and
 * reclaim_op_end(), uses hazard slots 0 .. DS_NMBST_HAZARDS - 1 (four for
 * the seek record's ancestor, successor, parent and leaf, which rotate
 * among them, and one for the leaf a remove has flagged), and validates
 * after reclaim_protect() only when reclaim_needs_validation(). The thread
 * whose CAS on the ancestor's edge succeeds retires every node that CAS cut
 * off, each exactly once (see nmbst.c). Hazard slots are left as they are
 * at the end of an operation.
 *
 * Keys. Usable keys are DS_NMBST_KEY_MIN..DS_NMBST_KEY_MAX (0 .. 2^64-4):
 * the sentinels hold the three largest values (the paper's infinity0..2).
 *
 * Memory. Each key is one malloc()ed leaf plus one internal node (24 bytes
 * each); an insert allocates those two and a remove nothing; no operation
 * makes a system call of its own. Retired nodes are freed by the domain,
 * possibly after ds_nmbst_delete(), so the domain must be deleted after
 * the tree's last operation.
 *
 * Errors: 0 or positive on success, -errno on failure; ds_nmbst_new() also
 * leaves a message in pm_errormsg() (pm/error.h). The library never prints,
 * aborts or exits.
 */
#ifndef DS_NMBST_H
#define DS_NMBST_H

#include <stddef.h>
#include <stdint.h>

#include <reclaim/reclaim.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ds_nmbst;

/* Smallest and largest key the tree accepts (sentinels take 2^64-3 .. 2^64-1). */
#define DS_NMBST_KEY_MIN ((uint64_t)0)
#define DS_NMBST_KEY_MAX (UINT64_MAX - 3)

/* Hazard slots an operation uses (slots 0 .. DS_NMBST_HAZARDS - 1). A domain
 * with a hazard-pointer scheme needs reclaim_config.hazards_per_thread >=
 * this. (The thesis's code uses 6; the seek here keeps its four record
 * nodes in four slots by reusing the slot of whichever node drops out.) */
#define DS_NMBST_HAZARDS 5u

/**
 * ds_nmbst_new -- create an empty tree whose nodes are reclaimed through
 * domain @d.
 * @out:      receives the tree; release it with ds_nmbst_delete().
 * @d:        the reclamation domain; the caller keeps ownership and deletes
 *            it after the tree (retired nodes live in the domain until freed).
 * @free_fn:  called once on every node the tree stops using: by the domain
 *            when a retired node is safe, and by ds_nmbst_delete() on the
 *            nodes still in the tree. Nodes come from malloc(), so @free_fn
 *            must release them with free() (it may first poison or count
 *            them; malloc_usable_size() gives the size). NULL means free().
 * @free_ctx: passed to @free_fn; must stay valid until both the tree and
 *            the domain are deleted.
 *
 * Return: 0; -EINVAL if @out or @d is NULL, or if @d's scheme keeps hazard
 * pointers (HP, Cadence, QSense) with fewer than DS_NMBST_HAZARDS slots per
 * thread; -ENOMEM.
 * Thread-safety: any thread.
 * Ordering: none; hand @out to other threads through something that
 * orders (pthread_create(), a mutex, a release store).
 */
int ds_nmbst_new(struct ds_nmbst **out, struct reclaim_domain *d,
	reclaim_free_fn free_fn, void *free_ctx);

/**
 * ds_nmbst_delete -- free the nodes still in the tree (sentinels included)
 * and the tree *@bp, and set *@bp to NULL (@bp or *@bp NULL: nothing to
 * do). Nodes already retired belong to the domain, which frees them. Uses no recursion (an unbalanced tree may be
 * deep).
 * Return: 0 (it cannot refuse).
 * Thread-safety: no operation may run on the tree concurrently or later.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
int ds_nmbst_delete(struct ds_nmbst **bp);

/**
 * ds_nmbst_insert -- add @key to the set.
 * @t: the calling thread's registration in the tree's domain, between
 *     operations (this call runs reclaim_op_begin()/reclaim_op_end()).
 *
 * Replaces the leaf where the seek ends by a new internal node whose
 * children are that leaf and a new leaf for @key, with one CAS on the
 * parent's edge (the linearization point); when the edge is flagged or
 * tagged it helps that remove's cleanup, then retries.
 * Return: 1 if @key was inserted; 0 if it was present (a leaf a remove has
 * flagged but not yet cut off still counts as present); -EINVAL if @key is
 * above DS_NMBST_KEY_MAX or @b or @t is NULL; -ENOMEM if the nodes cannot be
 * allocated. On error the set is unchanged and nothing is leaked.
 * Ordering: linearizable. Every CAS on an edge (insert, injection,
 * cleanup) is acq_rel, acquire on failure, the tag is set by an acq_rel
 * fetch_or, and every edge is loaded with acquire, the other side. The new
 * leaf and internal node are written (plain, relaxed) before the inserting
 * CAS, so a seek that reaches them reads their keys and children and is
 * ordered after the insert's earlier writes. A hazard pointer is published
 * before the acquire re-load that validates it; the operation runs between
 * reclaim_op_begin() and reclaim_op_end() (reclaim.h). The nodes a cleanup
 * cuts off are retired after its own acq_rel CAS: a locked instruction,
 * which is what reclaim_retire() needs on x86-64 (in C11 terms it would have
 * to be seq_cst).
 * Progress: lock-free.
 * Thread-safety: any number of threads concurrently, each with its own @t.
 */
int ds_nmbst_insert(struct ds_nmbst *b, struct reclaim_thread *t, uint64_t key);

/**
 * ds_nmbst_remove -- take @key out of the set.
 * @t: as for ds_nmbst_insert().
 *
 * Flags the edge to @key's leaf, then runs (or lets helpers run) cleanup
 * until the leaf is cut off; returns only once it is.
 * A remove that finds the leaf flagged by another helps that one's cleanup
 * and seeks again.
 * Return: 1 if @key was removed; 0 if it was absent (including keys above
 * DS_NMBST_KEY_MAX); -EINVAL if @b or @t is NULL.
 * Ordering, progress, thread-safety: as ds_nmbst_insert().
 */
int ds_nmbst_remove(struct ds_nmbst *b, struct reclaim_thread *t, uint64_t key);

/**
 * ds_nmbst_contains -- whether @key is in the set: a seek, no write.
 * @t: as for ds_nmbst_insert().
 * Return: 1 if present; 0 if absent (including keys above
 * DS_NMBST_KEY_MAX); -EINVAL if @b or @t is NULL.
 * Ordering, progress, thread-safety: as ds_nmbst_insert().
 */
int ds_nmbst_contains(struct ds_nmbst *b, struct reclaim_thread *t, uint64_t key);

/**
 * ds_nmbst_size -- the number of keys in the set (leaves below the
 * sentinels).
 * Return: the count, or 0 if the scratch stack cannot be allocated.
 * Thread-safety: quiescent only: no operation may run concurrently.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
size_t ds_nmbst_size(const struct ds_nmbst *b);

/**
 * ds_nmbst_check -- check the tree's invariants.
 * @buf:    receives a description of the first violation, NUL-terminated
 *          (may be NULL);
 * @buflen: size of @buf.
 *
 * Checks the sentinel frame (root infinity2 with the infinity2 leaf on the
 * right, its left child infinity1 with the infinity1 leaf on the right, the
 * infinity0 leaf rightmost below it), that every internal node has two
 * children and routes correctly (left subtree keys below its key, right
 * subtree keys at or above), that leaf keys strictly increase in order (no
 * duplicates), and that no reachable edge is flagged or tagged (every
 * remove cut off its leaf before returning). Uses an explicit stack.
 * Return: 0 if every invariant holds; -EUCLEAN otherwise (@buf says why);
 * -ENOMEM if the scratch stack cannot be allocated; -EINVAL if @b is NULL.
 * Thread-safety: quiescent only: no operation may run concurrently, and
 * every thread that operated must be joined (or otherwise ordered before
 * the caller).
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
int ds_nmbst_check(const struct ds_nmbst *b, char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* DS_NMBST_H */
