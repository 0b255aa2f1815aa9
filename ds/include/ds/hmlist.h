/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/hmlist.h -- a lock-free ordered set of uint64_t keys: the Harris-Michael
 * sorted linked list, with its nodes reclaimed through reclaim/reclaim.h.
 *
 * This is the linked list of the thesis's reclamation evaluation (sect.
 * 6.7, App. E.2): Harris's list (DISC 2001) -- a remove first marks the
 * removed node's next pointer, then unlinks the node with a CAS on its
 * predecessor -- with Michael's traversal (SPAA 2002), which never walks
 * past a marked node: it unlinks the node with one CAS (and retires it) or,
 * when that CAS fails, restarts from the head. That is what makes the list
 * safe under hazard pointers, where a node may be freed as soon as it is
 * unlinked and no hazard pointer names it.
 *
 * Reclamation. Every operation brackets itself with reclaim_op_begin() and
 * reclaim_op_end() on the caller's reclaim_thread, publishes hazard pointers
 * with reclaim_protect() (slots 0 and 1, see DS_HMLIST_HAZARDS) and
 * validates them only when reclaim_needs_validation(), so that QSBR, EBR,
 * urcu-qsbr and the leaky scheme pay nothing for hazard pointers. Each
 * unlinked node is retired exactly once, by the thread whose CAS unlinked
 * it. Hazard slots are left as they are at the end of an operation (at most
 * two stale entries per thread delay a free; they never make it unsafe).
 *
 * Usage, per thread registered in the list's domain:
 *     ds_hmlist_insert(l, t, 42);     1: inserted, 0: already present
 *     ds_hmlist_contains(l, t, 42);   1
 *     ds_hmlist_remove(l, t, 42);     1: removed, 0: absent
 *
 * Keys. Usable keys are DS_HMLIST_KEY_MIN..DS_HMLIST_KEY_MAX (0 .. 2^64-2):
 * the tail sentinel holds 2^64-1 so a traversal needs no end test.
 *
 * Memory. Each key is one malloc()ed node {key, next} (16 bytes, malloc's
 * 16-byte alignment leaves bit 0 of a pointer free for the mark). An insert
 * allocates at most one node and a remove none; an operation makes no
 * system call of its own (reclaim_op_end() and reclaim_retire() may, as
 * their scheme needs). Retired nodes are handed to the domain with the
 * list's free function and freed by the domain, possibly after
 * ds_hmlist_delete(), so the domain must be deleted after the list's last
 * operation and the free function (and its context) must stay valid until
 * reclaim_domain_delete() returns.
 *
 * Errors: 0 or positive on success, -errno on failure; ds_hmlist_new() also
 * leaves a message in pm_errormsg() (pm/error.h). The library never prints,
 * aborts or exits.
 */
#ifndef DS_HMLIST_H
#define DS_HMLIST_H

#include <stddef.h>
#include <stdint.h>

#include <reclaim/reclaim.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ds_hmlist;

/* Smallest and largest key the list accepts (the tail sentinel takes 2^64-1). */
#define DS_HMLIST_KEY_MIN ((uint64_t)0)
#define DS_HMLIST_KEY_MAX (UINT64_MAX - 1)

/* Hazard slots an operation uses (slots 0 .. DS_HMLIST_HAZARDS - 1): the
 * predecessor and the current node of the traversal, which alternate
 * between the two slots. A domain with a hazard-pointer scheme needs
 * reclaim_config.hazards_per_thread >= this. */
#define DS_HMLIST_HAZARDS 2u

/**
 * ds_hmlist_new -- create an empty list whose nodes are reclaimed through
 * domain @d.
 * @out:      receives the list; release it with ds_hmlist_delete().
 * @d:        the reclamation domain; the caller keeps ownership and deletes
 *            it after the list (retired nodes live in the domain until freed).
 * @free_fn:  called once on every node the list stops using: by the domain
 *            when a retired node is safe, and by ds_hmlist_delete() on the
 *            nodes still linked. Nodes come from malloc(), so @free_fn must
 *            release them with free() (it may first poison or count them;
 *            malloc_usable_size() gives the size). NULL means free().
 * @free_ctx: passed to @free_fn; must stay valid until both the list and
 *            the domain are deleted.
 *
 * Return: 0; -EINVAL if @out or @d is NULL, or if @d's scheme keeps hazard
 * pointers (HP, Cadence, QSense) with fewer than DS_HMLIST_HAZARDS slots per
 * thread; -ENOMEM.
 * Thread-safety: any thread.
 * Ordering: none; hand @out to other threads through something that
 * orders (pthread_create(), a mutex, a release store).
 */
int ds_hmlist_new(struct ds_hmlist **out, struct reclaim_domain *d,
	reclaim_free_fn free_fn, void *free_ctx);

/**
 * ds_hmlist_delete -- free the nodes still linked and the list *@lp, and set
 * *@lp to NULL (@lp or *@lp NULL: nothing to do). Nodes already retired
 * belong to the domain, which frees them.
 * Return: 0 (it cannot refuse).
 * Thread-safety: no operation may run on the list concurrently or later
 * (join the workers first).
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
int ds_hmlist_delete(struct ds_hmlist **lp);

/**
 * ds_hmlist_insert -- add @key to the set.
 * @t: the calling thread's registration in the list's domain, between
 *     operations (this call runs reclaim_op_begin()/reclaim_op_end()).
 *
 * The new node is linked with one CAS on its predecessor's next pointer;
 * when it fails the search restarts from the head.
 * Return: 1 if @key was inserted; 0 if it was present; -EINVAL if @key is
 * above DS_HMLIST_KEY_MAX or @l or @t is NULL; -ENOMEM if the node cannot be
 * allocated. On error the set is unchanged and nothing is leaked.
 * Ordering: linearizable. Every CAS on a link (linking, marking,
 * unlinking) is acq_rel, acquire on failure; every link is loaded with
 * acquire, the other side. The new node's key and next are written (plain,
 * relaxed) before the linking CAS, so a call that reaches the node through
 * any link reads its key and is ordered after the insert's earlier writes.
 * A hazard pointer is published (reclaim_protect()) before the acquire
 * re-load that validates it. The operation runs between reclaim_op_begin()
 * and reclaim_op_end(), whose order depends on the scheme (reclaim.h). The
 * unlink before reclaim_retire() is this thread's acq_rel CAS: a locked
 * instruction, which is what reclaim_retire() needs on x86-64 (in C11 terms
 * it would have to be seq_cst).
 * Progress: lock-free.
 * Thread-safety: any number of threads concurrently, each with its own @t.
 */
int ds_hmlist_insert(struct ds_hmlist *l, struct reclaim_thread *t, uint64_t key);

/**
 * ds_hmlist_remove -- take @key out of the set.
 * @t: as for ds_hmlist_insert().
 *
 * Marks the node's next pointer (the linearization point), then unlinks it
 * with a CAS on the predecessor, or with a search when that CAS fails; the
 * thread whose CAS unlinks a node retires it.
 * Return: 1 if @key was removed; 0 if it was absent (including keys above
 * DS_HMLIST_KEY_MAX); -EINVAL if @l or @t is NULL.
 * Ordering, progress, thread-safety: as ds_hmlist_insert().
 */
int ds_hmlist_remove(struct ds_hmlist *l, struct reclaim_thread *t, uint64_t key);

/**
 * ds_hmlist_contains -- whether @key is in the set.
 * @t: as for ds_hmlist_insert().
 *
 * The same search as the updates: it unlinks (and retires) the marked nodes
 * it meets, which hazard pointers require.
 * Return: 1 if present; 0 if absent (including keys above
 * DS_HMLIST_KEY_MAX); -EINVAL if @l or @t is NULL.
 * Ordering, progress, thread-safety: as ds_hmlist_insert().
 */
int ds_hmlist_contains(struct ds_hmlist *l, struct reclaim_thread *t, uint64_t key);

/**
 * ds_hmlist_size -- the number of keys in the set (unmarked linked nodes).
 * Thread-safety: quiescent only: no operation may run concurrently.
 * Return: the count.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
size_t ds_hmlist_size(const struct ds_hmlist *l);

/**
 * ds_hmlist_check -- check the list's invariants.
 * @buf:    receives a description of the first violation, NUL-terminated
 *          (may be NULL);
 * @buflen: size of @buf.
 *
 * Checks that the walk from the head reaches the tail, that keys strictly
 * increase (so no duplicates and no cycle), that every key is in range and
 * that no reachable node is marked (every remove that marked a node has
 * unlinked it before returning).
 * Return: 0 if every invariant holds; -EUCLEAN otherwise (@buf says why);
 * -EINVAL if @l is NULL.
 * Thread-safety: quiescent only: no operation may run concurrently, and
 * every thread that operated must be joined (or otherwise ordered before
 * the caller).
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
int ds_hmlist_check(const struct ds_hmlist *l, char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* DS_HMLIST_H */
