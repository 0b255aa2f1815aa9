/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/bztree.h -- a lock-free B+-tree map from uint64_t keys to uint64_t
 * values in the style of BzTree (Arulraj et al., VLDB'18), built on
 * multi-word CAS (mcas/mcas.h), in volatile memory or in a pm/ pool.
 *
 * This is the B+-tree of the thesis's MCAS evaluation (sect. 5.7, after the
 * BzTree/PiBench benchmark). It uses nothing but the public MCAS API, so the
 * same tree runs on every MCAS algorithm (AOPT, HARRIS, PMWCAS).
 *
 * Usage, per thread:
 *     struct ds_bztree_thread *h;  ds_bztree_thread_register(tree, &h);
 *     ds_bztree_insert(h, 42, 7);       1: inserted, 0: already present
 *     ds_bztree_lookup(h, 42, &v);      1, v == 7
 *     ds_bztree_remove(h, 42);          1: removed, 0: absent
 *     ds_bztree_thread_unregister(&h);
 *
 * Keys and values are any 64-bit integers (0 .. UINT64_MAX).
 *
 * Nodes. Every node has the same fixed capacity (ds_bztree_config), a
 * status word (frozen bit, slots used, version) and one 24-byte record per
 * slot. A leaf holds a sorted part, written when the leaf was built, and an
 * append area: an update reserves the next slot (an MCAS on the status),
 * writes key and value into it, then publishes it with an MCAS on the
 * status and the slot's metadata word (and the metadata word of the record
 * it replaces). Inner nodes are immutable apart from in-place child swaps.
 * Full leaves are consolidated or split, underfull nodes merged with a
 * sibling or rebalanced; each such structure change builds new nodes
 * privately and installs them with one MCAS that also freezes every node it
 * copied, so a frozen node is never reachable. Lookups and scans only read.
 *
 * Memory. Unlinked nodes are retired with mcas_retire() and reused after a
 * grace period; operations run inside mcas_guard_enter()/exit(). Node
 * memory is type-stable: volatile nodes come from slabs freed only by
 * ds_bztree_close(), persistent nodes from a fixed arena in the pool.
 *
 * Persistence. A persistent tree lives in an area of a pm/ pool next to a
 * persistent MCAS instance of the same pool: a header, the root word and a
 * node arena; node references are pool offsets. New nodes and written
 * records are flushed before the MCAS that makes them reachable, so every
 * update is durable when it returns. Free-node lists are volatile:
 * ds_bztree_pmem_open(), run after mcas_pmem_open() completed or rolled
 * back every interrupted MCAS, walks the tree from the root and frees every
 * arena node it does not reach, so no node leaks across a crash.
 *
 * Errors: 0 or positive on success; -errno or a PM_E_* code (pm/error.h,
 * pm_strerror()) on failure. Constructors, destructors and registration
 * leave a message in pm_errormsg() when they fail (for PM_E_CORRUPT: what
 * recovery found). The library never prints, aborts or exits on bad input.
 */
#ifndef DS_BZTREE_H
#define DS_BZTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mcas;
struct mcas_thread;
struct pm_pool;
struct ds_bztree;
struct ds_bztree_thread;

/* Smallest, default and largest records per node. */
#define DS_BZTREE_MIN_CAPACITY 4u
#define DS_BZTREE_DEFAULT_CAPACITY 64u
#define DS_BZTREE_MAX_CAPACITY 1024u

/* Most levels a tree may have (a deeper path is reported as damage). */
#define DS_BZTREE_MAX_HEIGHT 48u

/* Layout version of the persistent area written by this library. */
#define DS_BZTREE_PMEM_VERSION 3

/* Most nodes a persistent arena may hold. */
#define DS_BZTREE_PMEM_MAX_NODES ((uint64_t)1 << 32)

struct ds_bztree_config {
	/* Records per node (leaf records, or children of an inner node),
	 * DS_BZTREE_MIN_CAPACITY..DS_BZTREE_MAX_CAPACITY; default
	 * DS_BZTREE_DEFAULT_CAPACITY. Small values force structure changes. */
	unsigned node_capacity;
};

/* A snapshot of a tree's shape and bookkeeping, from ds_bztree_check(). */
struct ds_bztree_stats {
	uint64_t size;     /* keys in the map */
	uint64_t height;   /* levels (1: the root is a leaf) */
	uint64_t leaves;   /* reachable leaves */
	uint64_t inner;    /* reachable inner nodes */
	uint64_t nodes;    /* nodes the tree owns: the arena (persistent) or
	                    * every node allocated so far (volatile) */
	uint64_t free;     /* nodes in the free lists (shared and per-thread) */
	uint64_t retired;  /* unlinked nodes still waiting for a grace period */
	/* Structure changes installed since the tree was created or opened: */
	uint64_t consolidations; /* a leaf rebuilt without its dead records */
	uint64_t splits;         /* a node replaced by two */
	uint64_t merges;         /* two siblings replaced by one */
	uint64_t rebalances;     /* two siblings replaced by two even halves */
};

/**
 * ds_bztree_config_init -- fill @cfg with the defaults documented above.
 * Thread-safety: any thread; writes only @cfg.
 * Ordering: none (touches no shared memory).
 */
void ds_bztree_config_init(struct ds_bztree_config *cfg);

/**
 * ds_bztree_new -- create an empty volatile tree on MCAS instance @m.
 * @out: receives the tree; release it with ds_bztree_close().
 * @m:   a volatile instance (mcas_new()); the caller keeps ownership and
 *       must destroy it only after the tree.
 * @cfg: NULL for the defaults.
 *
 * Return: 0; -EINVAL if @m is persistent or reserves bits beyond
 * MCAS_VALUE_PORTABLE_MASK, or @cfg is out of range; -ENOMEM.
 * Thread-safety: any thread.
 * Ordering: none; hand @out to other threads through something that
 * orders (pthread_create(), a mutex, a release store).
 */
int ds_bztree_new(struct ds_bztree **out, struct mcas *m, const struct ds_bztree_config *cfg);

/**
 * ds_bztree_pmem_area_size -- bytes of pool memory a persistent tree with
 * config @cfg (NULL: defaults) and an arena of @nodes nodes needs; 0 if
 * @cfg is invalid or @nodes is not in 2..DS_BZTREE_PMEM_MAX_NODES.
 *
 * Every structure change needs up to three free nodes, and a node waits a
 * grace period after it is unlinked, and each registered thread caches up
 * to 2 * min(8, max(1, @nodes / 64)) free nodes: size the arena with room
 * to spare beyond keys / capacity leaves.
 * Return: the size in bytes; 0 for an invalid argument.
 * Thread-safety: any thread; pure.
 * Ordering: none (touches no shared memory).
 */
size_t ds_bztree_pmem_area_size(const struct ds_bztree_config *cfg, uint64_t nodes);

/**
 * ds_bztree_pmem_create -- format an empty persistent tree in @pool at
 * offset @area_off and open it.
 * @out:      receives the tree; release it with ds_bztree_close().
 * @m:        a persistent MCAS instance in the same @pool; the caller keeps
 *            ownership and must destroy it only after the tree.
 * @area_off: offset of ds_bztree_pmem_area_size(@cfg, @nodes) bytes of
 *            @pool owned by the tree from now on, 64-byte aligned, not
 *            overlapping the MCAS area.
 * @cfg:      NULL for the defaults; the capacity is stored in the area.
 * @nodes:    nodes in the arena, 2..DS_BZTREE_PMEM_MAX_NODES.
 *
 * Persistence: the area is durable and valid when this returns; a crash
 * before that leaves it reading as PM_E_CORRUPT to ds_bztree_pmem_open()
 * (the header is written last), so the caller formats again.
 * Return: 0; -EINVAL if @m is not persistent, not an instance in @pool or
 * reserves bits the tree uses, if @cfg or @nodes is out of range or the area
 * misaligned; -ERANGE if the area is not inside @pool; -EAGAIN if @m has no
 * free thread slot for the pool check; -ENOMEM.
 * Thread-safety: any thread; the area must not be in use.
 * Ordering: as ds_bztree_new().
 */
int ds_bztree_pmem_create(struct ds_bztree **out, struct mcas *m, struct pm_pool *pool,
	uint64_t area_off, const struct ds_bztree_config *cfg, uint64_t nodes);

/**
 * ds_bztree_pmem_open -- open the persistent tree formatted in @pool at
 * @area_off, and recover its free nodes.
 * @out: receives the tree; release it with ds_bztree_close().
 * @m:   the tree's MCAS instance, opened with mcas_pmem_open() first: that
 *       call completes or rolls back every MCAS a crash interrupted.
 *       Ownership as for create.
 *
 * Recovery walks the tree from the root and checks every reachable node
 * (inside the arena, reached once, not frozen, levels and key ranges
 * consistent, no duplicate key, no MCAS descriptor reference); every arena
 * node it does not reach -- unlinked, retired, cached or half-built at the
 * crash -- becomes free. It writes nothing to the pool.
 * Return: 0; PM_E_CORRUPT if the header is missing (never formatted, or a
 * create that did not finish) or damaged, describes an area that does not
 * fit the pool or was moved, or the reachable nodes break an invariant;
 * PM_E_VERSION for another layout version; PM_E_LAYOUT if the area holds
 * another kind of object (pm/area.h); -EINVAL if @m is not
 * a persistent instance in @pool; -ERANGE if the area is not inside @pool;
 * -EAGAIN as for create; -ENOMEM. On error nothing is allocated and the
 * pool is not modified.
 * Thread-safety: one caller per area; no other thread may use the tree
 * until it returns.
 * Ordering: as ds_bztree_new(); recovery is single-threaded.
 */
int ds_bztree_pmem_open(struct ds_bztree **out, struct mcas *m, struct pm_pool *pool,
	uint64_t area_off);

/**
 * ds_bztree_close -- release @*t (NULL accepted) and set it to NULL.
 *
 * Every thread must have unregistered. A volatile tree frees every node; a
 * persistent tree leaves its area in the pool as it is.
 * Return: 0; -EBUSY (nothing released) if a thread is still registered.
 * Thread-safety: no other call on the tree may run concurrently.
 * On -EBUSY *@t is left as it is.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
int ds_bztree_close(struct ds_bztree **t);

/**
 * ds_bztree_is_persistent -- whether @t lives in a pm/ pool.
 * Thread-safety: any thread.
 * Return: true for a tree in a pool.
 * Ordering: none (reads fields fixed at creation).
 */
bool ds_bztree_is_persistent(const struct ds_bztree *t);

/**
 * ds_bztree_capacity -- records per node of @t.
 * Thread-safety: any thread.
 * Return: the capacity.
 * Ordering: none (reads fields fixed at creation).
 */
unsigned ds_bztree_capacity(const struct ds_bztree *t);

/**
 * ds_bztree_thread_register -- give the calling thread a handle on @t.
 * @out: receives the handle; it belongs to the calling thread, which must
 *       unregister it before exiting.
 *
 * The handle registers its own mcas_thread on the tree's instance (one of
 * its max_threads slots): nodes it retires come back to the handle when
 * their grace period ends, as late as mcas_thread_unregister().
 * Return: 0; -EAGAIN if the instance has no free thread slot; -ENOMEM.
 * Thread-safety: any thread, concurrently with operations of others.
 * Ordering: as mcas_thread_register() for its mcas_thread; the
 * handle is linked into the registry under a mutex.
 */
int ds_bztree_thread_register(struct ds_bztree *t, struct ds_bztree_thread **out);

/**
 * ds_bztree_thread_unregister -- release @*h (NULL accepted) and set it to
 * NULL.
 *
 * Unregisters the handle's mcas_thread first, which waits for the grace
 * periods of everything the thread retired (it blocks while another thread
 * stays inside an operation), then gives the thread's free nodes back.
 * Return: 0; -EBUSY if mcas_thread_unregister() refused (the handle's
 * mcas_thread is inside a guard or building a descriptor); the handle is
 * then still valid.
 * Thread-safety: the owning thread only.
 * Ordering: as mcas_thread_unregister(); the free nodes go back
 * under a mutex.
 */
int ds_bztree_thread_unregister(struct ds_bztree_thread **h);

/**
 * ds_bztree_thread_mcas -- the mcas_thread @h registered, for
 * mcas_thread_stats(). Owned by @h: never unregister it directly.
 * Thread-safety: the owning thread only.
 * Return: the mcas_thread.
 * Ordering: none.
 */
struct mcas_thread *ds_bztree_thread_mcas(struct ds_bztree_thread *h);

/**
 * ds_bztree_insert -- map @key to @value if @key is absent.
 * @h: the calling thread's handle.
 *
 * Reserves a slot of the key's leaf (a 1-word MCAS on its status), writes
 * the record, publishes it (a 2-word MCAS on the status and the slot's
 * metadata); a full leaf is first consolidated or split (one MCAS of 2-5
 * words, see the file comment).
 * Return: 1 if inserted; 0 if @key was present (its value unchanged);
 * -ENOSPC if a persistent arena has no free node; -ENOMEM if a volatile
 * tree cannot allocate one; -EBUSY if the handle's mcas_thread has a
 * descriptor begun; -ELOOP if the tree is damaged (deeper than
 * DS_BZTREE_MAX_HEIGHT). On error the map is unchanged.
 * Persistence: durable on return; a crash before that leaves the key
 * either inserted or not.
 * Ordering: linearizable. Every MCAS it executes (reservation,
 * publication, removal, structure change) is seq_cst on success and on
 * failure (mcas_desc_execute()). The record's key and value are relaxed
 * stores between the reserving and the publishing MCAS, and a structure
 * change writes its new nodes (relaxed) before the MCAS that installs them;
 * that MCAS's seq_cst install CAS is the release, and a reader's mcas_read()
 * of the leaf's status or the slot's metadata word (a seq_cst load, acquire
 * on a descriptor's status) that sees it is the other side. The operation
 * runs inside mcas_guard_enter() (seq_cst epoch store) and
 * mcas_guard_exit() (release); unlinked nodes are retired with
 * mcas_retire() after the guard.
 * Progress: lock-free, except that while another thread stalls inside an
 * operation this thread may run out of MCAS descriptors and then waits
 * (yielding, outside any guard) for it, as mcas_desc_begin() requires.
 * Thread-safety: @h's owning thread; any threads concurrently with their
 * own handles.
 */
int ds_bztree_insert(struct ds_bztree_thread *h, uint64_t key, uint64_t value);

/**
 * ds_bztree_upsert -- map @key to @value, whether or not it was present.
 * @h: the calling thread's handle.
 *
 * A replacement appends the new record and marks the old one deleted in
 * one 3-word MCAS (status and both metadata words).
 * Return: 1 if @key was absent (inserted); 0 if its value was replaced;
 * errors as ds_bztree_insert().
 * Persistence, ordering, progress, thread-safety: as ds_bztree_insert().
 */
int ds_bztree_upsert(struct ds_bztree_thread *h, uint64_t key, uint64_t value);

/**
 * ds_bztree_update -- replace the value of @key if it is present.
 * @h: the calling thread's handle.
 *
 * Return: 1 if replaced; 0 if @key was absent (nothing written); errors as
 * ds_bztree_insert().
 * Persistence, ordering, progress, thread-safety: as ds_bztree_insert().
 */
int ds_bztree_update(struct ds_bztree_thread *h, uint64_t key, uint64_t value);

/**
 * ds_bztree_remove -- remove @key.
 * @h: the calling thread's handle.
 *
 * Marks the key's record deleted (a 2-word MCAS on the leaf's status and
 * the record's metadata); a leaf left underfull is then merged with a
 * sibling or rebalanced, best effort (the remove has already succeeded).
 * Return: 1 if removed; 0 if absent; -EBUSY or -ELOOP as for
 * ds_bztree_insert(); on error the map is unchanged.
 * Persistence, ordering, progress, thread-safety: as ds_bztree_insert().
 */
int ds_bztree_remove(struct ds_bztree_thread *h, uint64_t key);

/**
 * ds_bztree_lookup -- the value of @key.
 * @h:     the calling thread's handle.
 * @value: receives the value if found (may be NULL).
 *
 * Reads only (mcas_read() inside a guard): the leaf's status, the key's
 * record, and the status again, retrying if the leaf changed in between.
 * Return: 1 if found; 0 if absent; -ELOOP as for ds_bztree_insert().
 * Persistence: what it observed is durable.
 * Ordering: linearizable; mcas_read() of the root, child, status and
 * metadata words (seq_cst loads, acquire on a descriptor's status) inside a
 * guard, and relaxed loads of keys and values, ordered by the mcas_read()
 * of the status or metadata word that the publishing MCAS wrote (as
 * ds_bztree_insert()).
 * Progress: lock-free (it retries only after another operation changed
 * the leaf). Thread-safety: as ds_bztree_insert().
 */
int ds_bztree_lookup(struct ds_bztree_thread *h, uint64_t key, uint64_t *value);

/**
 * ds_bztree_scan -- copy up to @max pairs with keys >= @start, in
 * ascending key order, into @keys[] and @values[] (either may be NULL).
 * @h: the calling thread's handle.
 *
 * Leaf by leaf: each leaf is copied consistently (as a lookup reads it),
 * and the scan continues from the leaf's upper bound, re-descending from
 * the root. Not atomic as a whole, but: keys come out strictly ascending,
 * each at most once; every key present (with one value) during the whole
 * scan is reported, with that value; a reported pair was in the map at
 * some moment during the scan.
 * Return: the number of pairs copied (0 if @max is 0 or on -ELOOP damage).
 * Progress, thread-safety: as ds_bztree_lookup().
 * Ordering: each leaf as ds_bztree_lookup() reads it (mcas_read()); no
 * order across leaves beyond that.
 */
size_t ds_bztree_scan(struct ds_bztree_thread *h, uint64_t start, size_t max, uint64_t *keys,
	uint64_t *values);

/**
 * ds_bztree_size -- the number of keys, counted leaf by leaf as
 * ds_bztree_scan() walks them: exact when no update runs concurrently.
 * @h: the calling thread's handle. Thread-safety: as ds_bztree_lookup().
 * Return: the count.
 * Ordering: as ds_bztree_scan().
 */
uint64_t ds_bztree_size(struct ds_bztree_thread *h);

/**
 * ds_bztree_check -- check the tree's invariants and fill @st (may be NULL).
 * @h:      a handle on the tree (its mcas_thread reads the words).
 * @buf:    receives the first violation found, NUL-terminated.
 * @buflen: size of @buf; at least 1.
 *
 * Checks that every reachable node is a node of the tree reached once and
 * not frozen; levels decrease by one per edge (all leaves at one depth);
 * inner nodes have 1..capacity children (the root at least 2), strictly
 * increasing separators within the node's key range, and each child's
 * lower bound equal to its separator; leaf slot counts within capacity,
 * the sorted part sorted, metadata words valid, live keys within the
 * leaf's range and unique; and reachable + free + retired == owned nodes.
 * Return: NULL if every invariant holds; otherwise @buf.
 * Thread-safety: no operation may run on the tree concurrently, and every
 * registered handle's thread must be quiescent; @h's owning thread.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
const char *ds_bztree_check(struct ds_bztree_thread *h, struct ds_bztree_stats *st, char *buf,
	size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* DS_BZTREE_H */
