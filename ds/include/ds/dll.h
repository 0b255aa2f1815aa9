/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/dll.h -- a lock-free ordered set of uint64_t keys: a sorted
 * doubly-linked list whose every update is one MCAS (mcas/mcas.h), in
 * volatile memory or in a pm/ pool.
 *
 * This is the doubly-linked list of the thesis's MCAS evaluation (sect.
 * 5.7.3, after the PMwCAS doubly_linked_list benchmark): an insert is one
 * 2-word MCAS, a remove one 3-word MCAS, a lookup only reads. It uses
 * nothing but the public MCAS API, so the same list runs on every MCAS
 * algorithm (AOPT, HARRIS, PMWCAS) and benchmarks compare them on it.
 *
 * Usage, per thread:
 *     struct ds_dll_thread *h;  ds_dll_thread_register(list, &h);
 *     ds_dll_insert(h, 42);     1: inserted, 0: already present
 *     ds_dll_contains(h, 42);   true
 *     ds_dll_remove(h, 42);     1: removed, 0: absent
 *     ds_dll_thread_unregister(&h);
 *
 * Keys. Usable keys are DS_DLL_KEY_MIN..DS_DLL_KEY_MAX (1 .. 2^64-2): the
 * head and tail sentinels hold 0 and 2^64-1, so a traversal needs no
 * special case for the ends. Keys are stored raw in a node field that never
 * changes while the node is linked; only the links are MCAS target words.
 *
 * Nodes and links. A node is one 64-byte cache line {key, prev, next}. A
 * link word holds the node's address (volatile) or pool offset
 * (persistent), so its low 6 bits are clear: the low 3 are left to MCAS
 * (MCAS_VALUE_PORTABLE_MASK) and bit 3 (DS_DLL_MARK_DELETED) marks the next
 * link of a removed node, so that an insert or remove that still sees the
 * node as a predecessor fails its MCAS.
 *
 * Memory. Unlinked nodes are retired with mcas_retire() and reused after a
 * grace period; readers traverse inside mcas_guard_enter()/exit(). Node
 * memory is type-stable: volatile nodes come from 64-node slabs that are
 * freed only by ds_dll_close(), persistent nodes from a fixed arena in the
 * pool. (AOPT detaches finalized descriptors lazily and may still load a
 * target word of a node after the node's grace period, so node memory must
 * stay mapped; see dll.c.)
 *
 * Persistence. A persistent list lives in an area of a pm/ pool next to a
 * persistent MCAS instance of the same pool: a header and a fixed-capacity
 * node arena, links stored as pool offsets. An insert or remove is durable
 * when it returns (the MCAS is); free-node lists are volatile and rebuilt by
 * ds_dll_pmem_open(), which after mcas_pmem_open() has completed or rolled
 * back every interrupted MCAS walks the list and frees every node it does
 * not reach, so no node leaks across a crash.
 *
 * Errors: 0 or positive on success; -errno or a PM_E_* code (pm/error.h,
 * pm_strerror()) on failure. Constructors, destructors and registration
 * leave a message in pm_errormsg() when they fail (for PM_E_CORRUPT: what
 * recovery found). The library never prints, aborts or exits on bad input.
 */
#ifndef DS_DLL_H
#define DS_DLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mcas;
struct mcas_thread;
struct pm_pool;
struct ds_dll;
struct ds_dll_thread;

/* Smallest and largest key a list accepts (the sentinels take 0 and 2^64-1). */
#define DS_DLL_KEY_MIN ((uint64_t)1)
#define DS_DLL_KEY_MAX (UINT64_MAX - 1)

/* Mark bit in the next link of a removed node (above MCAS_VALUE_PORTABLE_MASK). */
#define DS_DLL_MARK_DELETED ((uint64_t)0x8)

/* Bytes per node; nodes are aligned to it. */
#define DS_DLL_NODE_SIZE 64

/* Layout version of the persistent area written by this library. */
#define DS_DLL_PMEM_VERSION 2

/* Most nodes a persistent arena may hold. */
#define DS_DLL_PMEM_MAX_CAPACITY ((uint64_t)1 << 32)

/* A snapshot of a list's bookkeeping, from ds_dll_check(). */
struct ds_dll_stats {
	uint64_t size;      /* keys in the set (reachable nodes, sentinels excluded) */
	uint64_t nodes;     /* nodes the list owns: the arena capacity (persistent)
	                     * or every node allocated so far (volatile) */
	uint64_t free;      /* nodes in the free lists (shared and per-thread) */
	uint64_t retired;   /* unlinked nodes still waiting for a grace period */
	uint64_t installed; /* reachable link words holding an MCAS descriptor
	                     * reference (AOPT leaves finalized descriptors
	                     * installed until they are detached) */
};

/**
 * ds_dll_new -- create an empty volatile list on MCAS instance @m.
 * @out: receives the list; release it with ds_dll_close().
 * @m:   a volatile instance (mcas_new()); the caller keeps ownership and
 *       must destroy it only after the list.
 *
 * Return: 0; -EINVAL if @m is persistent or reserves a bit the list uses
 * (mcas_value_mask() beyond MCAS_VALUE_PORTABLE_MASK); -ENOMEM.
 * Thread-safety: any thread.
 * Ordering: none; hand @out to other threads through something that
 * orders (pthread_create(), a mutex, a release store).
 */
int ds_dll_new(struct ds_dll **out, struct mcas *m);

/**
 * ds_dll_pmem_area_size -- bytes of pool memory a persistent list of
 * @capacity nodes needs (a 64-byte header, the two sentinels and @capacity
 * nodes); 0 if @capacity is 0 or above DS_DLL_PMEM_MAX_CAPACITY.
 *
 * A list holds at most @capacity keys, and fewer while removed nodes wait
 * for a grace period or sit in other threads' free-node caches (each
 * registered thread caches up to 2 * min(32, max(1, @capacity / 64))).
 * Return: the size in bytes; 0 for an invalid argument.
 * Thread-safety: any thread; pure.
 * Ordering: none (touches no shared memory).
 */
size_t ds_dll_pmem_area_size(uint64_t capacity);

/**
 * ds_dll_pmem_create -- format an empty persistent list in @pool at offset
 * @area_off and open it.
 * @out:      receives the list; release it with ds_dll_close().
 * @m:        a persistent MCAS instance in the same @pool (mcas_pmem_create()
 *            or mcas_pmem_open()); the caller keeps ownership and must
 *            destroy it only after the list.
 * @area_off: offset of ds_dll_pmem_area_size(@capacity) bytes of @pool owned
 *            by the list from now on, 64-byte aligned, not overlapping the
 *            MCAS area (pm_pool_alloc() memory or part of the root object).
 * @capacity: nodes in the arena, 1..DS_DLL_PMEM_MAX_CAPACITY.
 *
 * Persistence: the area is durable and valid when this returns; a crash
 * before that leaves it reading as PM_E_CORRUPT to ds_dll_pmem_open() (the
 * header is written last), so the caller formats again. Free nodes are not
 * written: whatever they hold is ignored.
 * Return: 0; -EINVAL if @m is not persistent, is not an instance in @pool,
 * or reserves a bit the list uses, if @capacity is out of range or the area
 * misaligned; -ERANGE if the area is not inside @pool; -EAGAIN if @m has no
 * free thread slot for the pool check; -ENOMEM.
 * Thread-safety: any thread; the area must not be in use.
 * Ordering: as ds_dll_new().
 */
int ds_dll_pmem_create(struct ds_dll **out, struct mcas *m, struct pm_pool *pool,
	uint64_t area_off, uint64_t capacity);

/**
 * ds_dll_pmem_open -- open the persistent list formatted in @pool at
 * @area_off, and recover its free nodes.
 * @out: receives the list; release it with ds_dll_close().
 * @m:   the list's MCAS instance, opened with mcas_pmem_open() first: that
 *       call completes or rolls back every MCAS a crash interrupted, so
 *       every link word holds a value again. Ownership as for create.
 *
 * Recovery walks the list from the head and checks every reachable node
 * (inside the arena, not visited twice, keys strictly increasing, prev
 * links consistent, no deleted mark, no descriptor reference); every node
 * it does not reach -- removed, retired, cached or half-initialized at the
 * crash -- becomes free, whatever it holds. It writes nothing to the pool,
 * so a crash during it needs no special care: open again.
 * Return: 0; PM_E_CORRUPT if the header is missing (never formatted, or a
 * create that did not finish) or damaged, describes an area that does not
 * fit the pool or was moved, or the reachable nodes break an invariant
 * (including a link that still holds an MCAS descriptor, i.e.
 * mcas_pmem_open() was not run); PM_E_VERSION for another layout version;
 * PM_E_LAYOUT if the area holds another kind of object (pm/area.h); -EINVAL if @m is not a persistent instance in @pool; -ERANGE if the area
 * is not inside @pool; -EAGAIN as for create; -ENOMEM. On error nothing is
 * allocated and the pool is not modified.
 * Thread-safety: one caller per area; no other thread may use the list
 * until it returns.
 * Ordering: as ds_dll_new(); recovery is single-threaded.
 */
int ds_dll_pmem_open(struct ds_dll **out, struct mcas *m, struct pm_pool *pool,
	uint64_t area_off);

/**
 * ds_dll_close -- release @*l (NULL accepted) and set it to NULL.
 *
 * Every thread must have unregistered. A volatile list frees every node; a
 * persistent list leaves its area in the pool as it is (nothing needs to be
 * written for a clean shutdown) and does not touch the MCAS instance.
 * Return: 0; -EBUSY (nothing released) if a thread is still registered.
 * Thread-safety: one caller, ordered after every
 * ds_dll_thread_unregister() (joined, for example).
 * On -EBUSY *@l is left as it is.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
int ds_dll_close(struct ds_dll **l);

/**
 * ds_dll_is_persistent -- whether @l lives in a pm/ pool.
 * Thread-safety: any thread.
 * Return: true for a list in a pool.
 * Ordering: none (reads fields fixed at creation).
 */
bool ds_dll_is_persistent(const struct ds_dll *l);

/**
 * ds_dll_thread_register -- give the calling thread a handle on @l.
 * @out: receives the handle; it belongs to the calling thread, which must
 *       unregister it before exiting.
 *
 * The handle registers its own mcas_thread on the list's instance (one of
 * the instance's max_threads slots): nodes it retires are handed back to
 * the handle when their grace period ends, which may be as late as
 * mcas_thread_unregister(), so the handle must own that registration.
 * Return: 0; -EAGAIN if the instance has no free thread slot; -ENOMEM.
 * Thread-safety: any thread, concurrently with operations of others.
 * Ordering: as mcas_thread_register() for its mcas_thread; the
 * handle is linked into the registry under a mutex.
 */
int ds_dll_thread_register(struct ds_dll *l, struct ds_dll_thread **out);

/**
 * ds_dll_thread_unregister -- release @*h (NULL accepted) and set it to NULL.
 *
 * Unregisters the handle's mcas_thread first, which waits for the grace
 * periods of everything the thread retired (it blocks while another thread
 * stays inside an operation), then gives the thread's free nodes back to
 * the list. Return: 0; -EBUSY if mcas_thread_unregister() refused (the
 * thread's mcas_thread is inside a guard or building a descriptor); the
 * handle is then still valid.
 * Thread-safety: the owning thread only.
 * Ordering: as mcas_thread_unregister(); the free nodes go back
 * under a mutex.
 */
int ds_dll_thread_unregister(struct ds_dll_thread **h);

/**
 * ds_dll_thread_mcas -- the mcas_thread @h registered, for mcas_thread_stats()
 * and for other MCAS operations of the same thread. Owned by @h: never
 * unregister it directly. Thread-safety: the owning thread only.
 * Return: the mcas_thread.
 * Ordering: none.
 */
struct mcas_thread *ds_dll_thread_mcas(struct ds_dll_thread *h);

/**
 * ds_dll_insert -- add @key to the set.
 * @h: the calling thread's handle.
 *
 * One 2-word MCAS links a new node between its predecessor and successor
 * (pred->next and succ->prev); it is retried from the head when it fails.
 * Return: 1 if @key was inserted; 0 if it was present; -EINVAL if @key is
 * outside DS_DLL_KEY_MIN..DS_DLL_KEY_MAX; -ENOSPC if a persistent list has
 * no free node (see ds_dll_pmem_area_size()); -ENOMEM if a volatile list
 * cannot allocate one; -EBUSY if the handle's mcas_thread has a descriptor
 * begun (see ds_dll_thread_mcas()); -ERANGE or -EINVAL from
 * mcas_desc_add() if the list and its instance were set up
 * inconsistently. On error the set is unchanged.
 * Persistence: durable on return (the node was flushed before the MCAS that
 * links it, and the MCAS is durable on return); a crash before that leaves
 * the key either inserted or not, never a half-linked node.
 * Ordering: linearizable. Every MCAS it executes is seq_cst on success and
 * on failure (mcas_desc_execute()). The new node's key, prev and next are
 * relaxed stores before the linking MCAS, whose seq_cst install CAS is the
 * release; a traversal reaches the node through mcas_read() (a seq_cst load,
 * acquire on a descriptor's status), the other side, so it reads the key
 * (a relaxed load) as written. The operation runs inside mcas_guard_enter()
 * (seq_cst epoch store) and mcas_guard_exit() (release); a removed node is
 * retired with mcas_retire() after the guard.
 * Progress: lock-free, except that while another thread stalls inside an
 * operation this thread may run out of MCAS descriptors and then waits
 * (yielding, outside any guard) for it, as mcas_desc_begin() requires.
 * Thread-safety: @h's owning thread; any threads concurrently with their
 * own handles.
 */
int ds_dll_insert(struct ds_dll_thread *h, uint64_t key);

/**
 * ds_dll_remove -- take @key out of the set.
 * @h: the calling thread's handle.
 *
 * One 3-word MCAS sets pred->next to succ, succ->prev to pred and marks the
 * node's own next link deleted; the node is then retired with
 * mcas_retire() and reused after a grace period.
 * Return: 1 if @key was removed; 0 if it was absent (including keys outside
 * DS_DLL_KEY_MIN..DS_DLL_KEY_MAX); -EBUSY, -ERANGE or -EINVAL as for
 * ds_dll_insert(); on error the set is unchanged.
 * Persistence, ordering, progress and thread-safety: as ds_dll_insert().
 */
int ds_dll_remove(struct ds_dll_thread *h, uint64_t key);

/**
 * ds_dll_contains -- whether @key is in the set.
 * @h: the calling thread's handle.
 *
 * A traversal with mcas_read() inside an mcas guard; no MCAS. It writes
 * shared memory only inside mcas_read(): helping an MCAS in progress, or
 * (AOPT) detaching a finalized descriptor, one CAS with probability
 * 1/read_detach_one_in. With neither, it issues no CAS, flush or fence.
 * Return: true if present; false if absent or outside the key range.
 * Persistence: what it observed is durable (mcas_read() guarantees it).
 * Ordering: linearizable; mcas_read() of the links (seq_cst loads,
 * acquire on a descriptor's status; a help or detach is a seq_cst CAS)
 * inside a guard, and relaxed loads of the keys, ordered by the mcas_read()
 * that found each node (as ds_dll_insert()).
 * Thread-safety: as ds_dll_insert().
 */
bool ds_dll_contains(struct ds_dll_thread *h, uint64_t key);

/**
 * ds_dll_keys -- copy the keys of the set, in increasing order, into
 * @keys[0 .. @max - 1].
 * @h: a handle on the list (its mcas_thread reads the links).
 *
 * Return: the number of keys in the set (which may exceed @max: only @max
 * are copied), or 0 if the walk does not reach the tail within as many
 * steps as the list has nodes (a damaged list; ds_dll_check() says more).
 * Thread-safety: no operation may run on the list concurrently (call it
 * after joining the workers); @h's owning thread.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
size_t ds_dll_keys(struct ds_dll_thread *h, uint64_t *keys, size_t max);

/**
 * ds_dll_check -- check the list's invariants and fill @st (may be NULL).
 * @h:      a handle on the list (its mcas_thread reads the links).
 * @buf:    receives the first violation found, NUL-terminated.
 * @buflen: size of @buf; at least 1.
 *
 * Checks that the nodes from head to tail are inside the list's memory,
 * visited once, with keys strictly increasing; that every prev link is the
 * inverse of a next link; that no reachable node is marked deleted; and
 * that size + free + retired == nodes (no node leaked or counted twice).
 * Return: NULL if every invariant holds; otherwise @buf.
 * Thread-safety: no operation may run on the list concurrently, and every
 * registered handle's thread must be quiescent (joined, or between
 * operations with a happens-before edge to the caller); @h's owning thread.
 * Ordering: none; the caller's join of the workers orders it after their operations.
 */
const char *ds_dll_check(struct ds_dll_thread *h, struct ds_dll_stats *st, char *buf,
	size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* DS_DLL_H */
