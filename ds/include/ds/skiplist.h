/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/skiplist.h -- a lock-free ordered set of uint64_t keys: Fraser's
 * lock-free skip list, with its nodes reclaimed through reclaim/reclaim.h.
 *
 * This is the skip list of the thesis's reclamation evaluation (sect. 6.7:
 * Fraser, "Practical lock-freedom", PhD thesis, Cambridge 2004, as in
 * ASCYLIB's skiplist-fraser). A node of height h is linked in the lists of
 * levels 0 .. h-1; each level is a Harris list (a marked next pointer means
 * "deleted at this level"). Heights are geometric with p = 1/2, drawn from a
 * per-thread xorshift generator, and capped by the list's level count.
 *
 * Differences from Fraser's code, for hazard pointers: the search unlinks
 * marked nodes one at a time and restarts from the top when a CAS or a
 * validation fails (Michael's rule, SPAA 2002), instead of skipping a run of
 * marked nodes; and the key is deleted by marking level 0 (after the upper
 * levels), not by clearing a value field. As in Fraser's code, a node is
 * freed only when both its inserter has stopped linking it and its remover
 * has marked it, by whichever of the two finishes second, after a search
 * has unlinked it at every level (see skiplist.c for why that makes it
 * unreachable, and why it is retired exactly once).
 *
 * Reclamation. Every operation brackets itself with reclaim_op_begin() and
 * reclaim_op_end(), uses hazard slots 0 .. ds_skiplist_hazards(levels) - 1
 * (two per level: the predecessor and successor found at that level), and
 * validates after reclaim_protect() only when reclaim_needs_validation().
 * Hazard slots are left as they are at the end of an operation.
 *
 * Keys. Usable keys are DS_SKIPLIST_KEY_MIN..DS_SKIPLIST_KEY_MAX
 * (0 .. 2^64-2): the tail sentinel holds 2^64-1.
 *
 * Memory. Each key is one malloc()ed node of 16 + 8 * height bytes
 * (2 words on average). An insert allocates at most one node and a remove
 * none; no operation makes a system call of its own. Retired nodes are
 * freed by the domain, possibly after ds_skiplist_delete(), so the domain
 * must be deleted after the list's last operation.
 *
 * Errors: 0 or positive on success, -errno on failure; ds_skiplist_new() also
 * leaves a message in pm_errormsg() (pm/error.h). The library never prints,
 * aborts or exits.
 */
#ifndef DS_SKIPLIST_H
#define DS_SKIPLIST_H

#include <stddef.h>
#include <stdint.h>

#include <reclaim/reclaim.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ds_skiplist;

/* Smallest and largest key the list accepts (the tail sentinel takes 2^64-1). */
#define DS_SKIPLIST_KEY_MIN ((uint64_t)0)
#define DS_SKIPLIST_KEY_MAX (UINT64_MAX - 1)

/* Level counts a list may have, and the default (the thesis's levelmax for
 * a key range of 40000: log2(40000) rounded up to 16). */
#define DS_SKIPLIST_MIN_LEVELS 1u
#define DS_SKIPLIST_MAX_LEVELS 32u
#define DS_SKIPLIST_DEFAULT_LEVELS 16u

/* Hazard slots an operation of a @levels-level list uses: two per level
 * (the thesis counts up to 2 * levels + 3 = 35 for 16 levels; this
 * traversal needs no extra slot, see skiplist.c). */
#define DS_SKIPLIST_HAZARDS(levels) (2u * (levels))

/**
 * ds_skiplist_hazards -- hazard slots per thread a @levels-level list needs
 * (DS_SKIPLIST_HAZARDS; @levels 0 means DS_SKIPLIST_DEFAULT_LEVELS).
 * Return: the count, or 0 if @levels is above DS_SKIPLIST_MAX_LEVELS.
 * Thread-safety: any thread; pure.
 * Ordering: none (touches no shared memory).
 */
unsigned ds_skiplist_hazards(unsigned levels);

/**
 * ds_skiplist_new -- create an empty skip list whose nodes are reclaimed
 * through domain @d.
 * @out:      receives the list; release it with ds_skiplist_delete().
 * @d:        the reclamation domain; the caller keeps ownership and deletes
 *            it after the list (retired nodes live in the domain until freed).
 * @levels:   DS_SKIPLIST_MIN_LEVELS..DS_SKIPLIST_MAX_LEVELS, or 0 for
 *            DS_SKIPLIST_DEFAULT_LEVELS; about log2 of the expected size.
 * @free_fn:  called once on every node the list stops using: by the domain
 *            when a retired node is safe, and by ds_skiplist_delete() on
 *            the nodes still linked. Nodes come from malloc(), so @free_fn
 *            must release them with free() (it may first poison or count
 *            them; malloc_usable_size() gives the size). NULL means free().
 * @free_ctx: passed to @free_fn; must stay valid until both the list and
 *            the domain are deleted.
 *
 * Return: 0; -EINVAL if @out or @d is NULL, @levels is out of range, or @d's
 * scheme keeps hazard pointers (HP, Cadence, QSense) with fewer than
 * ds_skiplist_hazards(@levels) slots per thread; -ENOMEM.
 * Thread-safety: any thread.
 * Ordering: none; hand @out to other threads through something that
 * orders (pthread_create(), a mutex, a release store).
 */
int ds_skiplist_new(struct ds_skiplist **out, struct reclaim_domain *d, unsigned levels,
	reclaim_free_fn free_fn, void *free_ctx);

/**
 * ds_skiplist_delete -- free the nodes still linked and the list *@sp, and
 * set *@sp to NULL (@sp or *@sp NULL: nothing to do). Nodes already retired
 * belong to the domain, which frees them.
 * Return: 0 (it cannot refuse).
 * Thread-safety: no operation may run on the list concurrently or later.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
int ds_skiplist_delete(struct ds_skiplist **sp);

/**
 * ds_skiplist_levels -- the list's level count (its maximum node height).
 * Thread-safety: any thread.
 * Return: the level count (0 for NULL).
 * Ordering: none (reads fields fixed at creation).
 */
unsigned ds_skiplist_levels(const struct ds_skiplist *s);

/**
 * ds_skiplist_insert -- add @key to the set.
 * @t: the calling thread's registration in the list's domain, between
 *     operations (this call runs reclaim_op_begin()/reclaim_op_end()).
 *
 * Links the new node at level 0 with one CAS (the linearization point),
 * then at levels 1 .. height-1 bottom-up, searching again when a CAS fails.
 * Return: 1 if @key was inserted; 0 if it was present; -EINVAL if @key is
 * above DS_SKIPLIST_KEY_MAX or @s or @t is NULL; -ENOMEM if the node cannot
 * be allocated. On error the set is unchanged and nothing is leaked.
 * Ordering: linearizable. Every CAS on a link (linking at any level,
 * marking, unlinking) is acq_rel, acquire on failure, and every link is
 * loaded with acquire, the other side. The new node's key, height, state and
 * next[] are written (plain, relaxed) before the level-0 linking CAS, so a
 * call that reaches the node through any link reads them and is ordered
 * after the insert's earlier writes. The inserter's and the remover's
 * fetch_or on the node's state are acq_rel, so whichever runs the full
 * delete is ordered after the other's last link or mark. A hazard pointer
 * is published before the acquire re-load that validates it; the operation
 * runs between reclaim_op_begin() and reclaim_op_end() (reclaim.h). The full
 * delete retires the node after a search that saw it unlinked at every
 * level, some unlinks perhaps by other threads' CASes: reclaim_retire()'s
 * requirement then holds by x86-64's locked CASes and in-order loads, not by
 * C11 (which would want a seq_cst fence before the retire).
 * Progress: lock-free.
 * Thread-safety: any number of threads concurrently, each with its own @t.
 */
int ds_skiplist_insert(struct ds_skiplist *s, struct reclaim_thread *t, uint64_t key);

/**
 * ds_skiplist_remove -- take @key out of the set.
 * @t: as for ds_skiplist_insert().
 *
 * Marks the node's next pointers from the top level down; the CAS that
 * marks level 0 deletes the key (one remover wins it). The winner then
 * searches for the key, which unlinks the node at every level, and retires
 * it -- unless the node's inserter is still linking upper levels, in which
 * case the inserter does so when it stops.
 * Return: 1 if @key was removed; 0 if it was absent (including keys above
 * DS_SKIPLIST_KEY_MAX); -EINVAL if @s or @t is NULL.
 * Ordering, progress, thread-safety: as ds_skiplist_insert().
 */
int ds_skiplist_remove(struct ds_skiplist *s, struct reclaim_thread *t, uint64_t key);

/**
 * ds_skiplist_contains -- whether @key is in the set.
 * @t: as for ds_skiplist_insert().
 *
 * The same search as the updates (it unlinks the marked nodes it meets, as
 * hazard pointers require).
 * Return: 1 if present; 0 if absent (including keys above
 * DS_SKIPLIST_KEY_MAX); -EINVAL if @s or @t is NULL.
 * Ordering, progress, thread-safety: as ds_skiplist_insert().
 */
int ds_skiplist_contains(struct ds_skiplist *s, struct reclaim_thread *t, uint64_t key);

/**
 * ds_skiplist_size -- the number of keys in the set (level-0 nodes not
 * marked).
 * Thread-safety: quiescent only: no operation may run concurrently.
 * Return: the count.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
size_t ds_skiplist_size(const struct ds_skiplist *s);

/**
 * ds_skiplist_check -- check the list's invariants.
 * @buf:    receives a description of the first violation, NUL-terminated
 *          (may be NULL);
 * @buflen: size of @buf.
 *
 * Checks, at every level, that the walk from the head reaches the tail with
 * strictly increasing keys, that no reachable node is marked, that every
 * node reachable at a level is at least that tall and is also reachable at
 * the level below, and that heights and keys are in range.
 * Return: 0 if every invariant holds; -EUCLEAN otherwise (@buf says why);
 * -ENOMEM if the check cannot allocate its scratch array; -EINVAL if @s is
 * NULL.
 * Thread-safety: quiescent only: no operation may run concurrently, and
 * every thread that operated must be joined (or otherwise ordered before
 * the caller).
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
int ds_skiplist_check(const struct ds_skiplist *s, char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* DS_SKIPLIST_H */
