/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * benchmarks/pmdk_tx_objects.h -- BASELINE FOR BENCHMARKS ONLY: the objects
 * of onll/objects.h (a counter, a FIFO queue of uint64_t and a map from
 * uint64_t to uint64_t) written the way a PMDK user would write them: data
 * in a libpmemobj pool, every update under an exclusive lock inside a PMDK
 * undo-log transaction (TX_BEGIN, TX_ADD of the words it changes, TX_END),
 * every read under a shared lock with no transaction. benchmarks/onll_bench
 * runs it side by side with ONLL; nothing else should link it.
 *
 * Locking: one pthread rwlock per object, in DRAM (writers exclusive, reads
 * shared; glibc's default reader preference). The lock is volatile state: a
 * crash releases it, and PMDK's transaction recovery at pool open rolls back
 * an update that was in flight.
 *
 * Layout: each object owns an area of the pool (like onll_create()): a
 * 64-byte header (magic, kind, capacity) and the object's persistent data.
 * The area is formatted without a transaction and the header's magic is
 * persisted last, so a crash during txobj_create() leaves an area
 * txobj_open() rejects.
 *   counter  one int64_t.
 *   queue    a ring buffer of @capacity values with monotonic head (values
 *            dequeued) and tail (values enqueued) counts: enqueue TX_ADDs
 *            the slot it writes and the tail; dequeue TX_ADDs the head.
 *            Enqueue on a full queue returns -ENOSPC (a fixed-capacity ring
 *            is what a PMDK user writes when the bound is known: no
 *            transactional allocation per element).
 *   map      an open-addressing hash table (linear probing, backward-shift
 *            deletion, so no tombstones pile up) with room for @capacity
 *            keys in the next power of two >= 2 * @capacity slots (load
 *            factor <= 1/2), plus a count. Put TX_ADDs the slot it writes
 *            and, on insert, the count; remove TX_ADDs every slot it
 *            shifts or clears and the count. Put of a new key into a full
 *            map returns -ENOSPC.
 *
 * Return conventions follow onll/objects.h: 0 or a non-negative "1 if
 * present, 0 if not"; negative errno or PM_E_* on failure.
 *
 * Fence counting. PMDK's fences are not counted in pm/cost.h. This file
 * therefore interposes libpmem's exported pmem_drain() and pmem_msync():
 * a program that links it (the library is alwayslink) defines both symbols,
 * the dynamic linker binds libpmemobj's and libpmem's references to them
 * (libpmemobj takes their addresses through the GOT; libpmem's own
 * pmem_persist/pmem_memcpy/... reach pmem_drain through its PLT), and the
 * wrappers count one fence per call on the calling thread before calling
 * the real function found with dlsym(RTLD_NEXT). Every sfence PMDK issues
 * for durability goes through pmem_drain() (libpmemobj 1.12 contains no
 * fence instruction of its own), so the count is exact for PMDK. pm/'s
 * pm_fence() also ends in pmem_drain() when it has flushes to drain, so
 * ONLL's fences show up here too, which cross-checks PM_COST_FENCE.
 */
#ifndef BENCHMARKS_PMDK_TX_OBJECTS_H
#define BENCHMARKS_PMDK_TX_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pm_pool;
struct txobj;

/* The object an area holds. */
enum txobj_kind {
	TXOBJ_COUNTER = 1,
	TXOBJ_QUEUE = 2,
	TXOBJ_MAP = 3,
};

/**
 * txobj_area_size -- bytes of pool memory an object of @kind with
 * @capacity (queue: values; map: keys; counter: ignored) needs; 0 if the
 * capacity is 0 (queue, map) or too large.
 */
size_t txobj_area_size(enum txobj_kind kind, uint64_t capacity);

/**
 * txobj_create -- format an empty object of @kind with @capacity in @pool
 * at @area_off (64-byte aligned, txobj_area_size() bytes) and open it.
 * @out: receives the object; release it with txobj_close().
 * Return: 0; -EINVAL for a bad kind, capacity or misaligned offset; -ERANGE
 * if the area is not inside the pool; -ENOMEM.
 * Thread-safety: any thread; the area must not be in use.
 */
int txobj_create(struct txobj **out, struct pm_pool *pool, uint64_t area_off,
	enum txobj_kind kind, uint64_t capacity);

/**
 * txobj_open -- open the object of @kind that txobj_create() formatted at
 * @area_off (PMDK already rolled back any interrupted transaction when the
 * pool was opened).
 * Return: 0; PM_E_LAYOUT if the area holds no object of @kind; PM_E_CORRUPT
 * if its header is inconsistent; -ERANGE; -ENOMEM.
 * Thread-safety: one caller per area.
 */
int txobj_open(struct txobj **out, struct pm_pool *pool, uint64_t area_off,
	enum txobj_kind kind);

/**
 * txobj_close -- release @*o (NULL accepted) and set it to NULL. Writes
 * nothing: every completed update is durable. Return: 0.
 * Thread-safety: no other thread may use the object.
 */
int txobj_close(struct txobj **o);

/**
 * txobj_capacity -- the capacity given to txobj_create().
 */
uint64_t txobj_capacity(const struct txobj *o);

/**
 * txobj_counter_add -- add @delta (wrapping modulo 2^64); *@value (NULL:
 * not wanted) receives the value after the update. Return: 0 or the
 * transaction's negative errno.
 * Thread-safety (every operation below): any thread.
 */
int txobj_counter_add(struct txobj *o, int64_t delta, int64_t *value);

/**
 * txobj_counter_get -- read the value into *@value. Return: 0.
 */
int txobj_counter_get(struct txobj *o, int64_t *value);

/**
 * txobj_queue_enqueue -- append @value at the back. Return: 0; -ENOSPC if
 * the queue holds capacity values; the transaction's negative errno.
 */
int txobj_queue_enqueue(struct txobj *o, uint64_t value);

/**
 * txobj_queue_dequeue -- remove the front value into *@value (NULL: not
 * wanted). Return: 1 if a value was removed, 0 if the queue was empty, or
 * the transaction's negative errno.
 */
int txobj_queue_dequeue(struct txobj *o, uint64_t *value);

/**
 * txobj_queue_front -- read the front value into *@value (NULL: not
 * wanted). Return: 1 if the queue is not empty, 0 if it is.
 */
int txobj_queue_front(struct txobj *o, uint64_t *value);

/**
 * txobj_queue_size -- read the number of values into *@size. Return: 0.
 */
int txobj_queue_size(struct txobj *o, uint64_t *size);

/**
 * txobj_map_put -- map @key to @value. Return: 1 if @key was present (its
 * value replaced), 0 if it was inserted; -ENOSPC if it is new and the map
 * holds capacity keys; the transaction's negative errno.
 */
int txobj_map_put(struct txobj *o, uint64_t key, uint64_t value);

/**
 * txobj_map_remove -- remove @key. Return: 1 if it was present, 0 if not,
 * or the transaction's negative errno.
 */
int txobj_map_remove(struct txobj *o, uint64_t key);

/**
 * txobj_map_get -- read the value of @key into *@value (NULL: not wanted).
 * Return: 1 if present, 0 if not.
 */
int txobj_map_get(struct txobj *o, uint64_t key, uint64_t *value);

/**
 * txobj_map_size -- read the number of keys into *@size. Return: 0.
 */
int txobj_map_size(struct txobj *o, uint64_t *size);

/**
 * txobj_fences_thread -- persistent fences the calling thread has issued
 * through libpmem since it started: pmem_drain() and pmem_msync() calls,
 * counted by the interposing wrappers described at the top of this file
 * (PMDK's and, through pm_fence(), pm/'s).
 * Thread-safety: reads the caller's own count.
 */
uint64_t txobj_fences_thread(void);

/**
 * txobj_fence_counting_works -- 1 if the wrappers are live in this process
 * (checked with a pmemobj_persist() of the first bytes of @pool's root
 * object, which changes nothing and must reach pmem_drain() or
 * pmem_msync() on this thread); 0 if PMDK
 * calls bypass them (for example a statically linked libpmem), in which
 * case txobj_fences_thread() must not be reported.
 * Thread-safety: any thread.
 */
int txobj_fence_counting_works(struct pm_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* BENCHMARKS_PMDK_TX_OBJECTS_H */
