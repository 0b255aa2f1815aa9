/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onll/objects.h -- objects shipped on ONLL: a counter, a FIFO queue of
 * 64-bit values and a map from 64-bit keys to 64-bit values.
 *
 * Each comes as a struct onll_type (pass it to onll_create()/onll_open())
 * and typed wrappers around onll_update()/onll_read() that encode the ops.
 * They are examples of writing a type, and the subjects of the tests and of
 * benchmarks/onll_bench against the same objects on PMDK transactions.
 *
 * Every wrapper has the thread-safety, durability and error codes of the
 * onll_update() or onll_read() it calls. Results of the form "1 if present,
 * 0 if not" are returned as the function's non-negative value. When
 * onll_update() returns ONLL_E_RESULT_LOST the update took effect but its
 * result is lost (a dequeue's value, for one); -ENOMEM means it did not.
 *
 * Ops are one opcode byte and up to two native-endian uint64_t arguments
 * (ONLL_OBJECTS_MAX_OP bytes at most). Snapshots are native-endian
 * uint64_t words, so checkpoint_capacity bounds the queue to
 * (capacity - 8) / 8 values and the map to (capacity - 8) / 16 keys; past
 * that, updates fail with -ENOSPC.
 */
#ifndef ONLL_OBJECTS_H
#define ONLL_OBJECTS_H

#include <stdint.h>

#include "onll/onll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest op the objects encode (the map's put): max_op_size must be at
 * least this. */
#define ONLL_OBJECTS_MAX_OP 17

/**
 * onll_counter_type -- a signed 64-bit counter starting at 0 (wraps
 * modulo 2^64). Snapshot: 8 bytes.
 * Return: a static type.
 * Thread-safety: any thread.
 * Ordering: none (touches no shared memory).
 */
const struct onll_type *onll_counter_type(void);

/**
 * onll_counter_add -- add @delta; *@value (NULL: not wanted) receives the
 * value after this update. Return: 0 or onll_update()'s error.
 * Thread-safety, ordering: as onll_update().
 */
int onll_counter_add(struct onll_thread *t, int64_t delta, int64_t *value);

/**
 * onll_counter_get -- read the value into *@value. Return: 0 or
 * onll_read()'s error.
 * Thread-safety, ordering: as onll_read().
 */
int onll_counter_get(struct onll_thread *t, int64_t *value);

/**
 * onll_queue_type -- an unbounded FIFO queue of uint64_t, initially empty.
 * Snapshot: count, then the values front to back.
 * Return: a static type.
 * Thread-safety: any thread.
 * Ordering: none (touches no shared memory).
 */
const struct onll_type *onll_queue_type(void);

/**
 * onll_queue_enqueue -- append @value at the back. Return: 0 or
 * onll_update()'s error.
 * Thread-safety, ordering: as onll_update().
 */
int onll_queue_enqueue(struct onll_thread *t, uint64_t value);

/**
 * onll_queue_dequeue -- remove the front value into *@value (NULL: not
 * wanted). Return: 1 if a value was removed, 0 if the queue was empty, or
 * onll_update()'s error.
 * Thread-safety, ordering: as onll_update().
 */
int onll_queue_dequeue(struct onll_thread *t, uint64_t *value);

/**
 * onll_queue_front -- read the front value into *@value. Return: 1 if the
 * queue is not empty, 0 if it is, or onll_read()'s error.
 * Thread-safety, ordering: as onll_read().
 */
int onll_queue_front(struct onll_thread *t, uint64_t *value);

/**
 * onll_queue_size -- read the number of values into *@size. Return: 0 or
 * onll_read()'s error.
 * Thread-safety, ordering: as onll_read().
 */
int onll_queue_size(struct onll_thread *t, uint64_t *size);

/**
 * onll_map_type -- a map from uint64_t keys to uint64_t values, initially
 * empty (a hash table). Snapshot: count, then (key, value) pairs in
 * increasing key order, so equal maps give equal bytes.
 * Return: a static type.
 * Thread-safety: any thread.
 * Ordering: none (touches no shared memory).
 */
const struct onll_type *onll_map_type(void);

/**
 * onll_map_put -- map @key to @value. Return: 1 if @key was present (its
 * value replaced), 0 if it was inserted, or onll_update()'s error.
 * Thread-safety, ordering: as onll_update().
 */
int onll_map_put(struct onll_thread *t, uint64_t key, uint64_t value);

/**
 * onll_map_remove -- remove @key. Return: 1 if it was present, 0 if not, or
 * onll_update()'s error.
 * Thread-safety, ordering: as onll_update().
 */
int onll_map_remove(struct onll_thread *t, uint64_t key);

/**
 * onll_map_get -- read the value of @key into *@value (NULL: not wanted).
 * Return: 1 if present, 0 if not, or onll_read()'s error.
 * Thread-safety, ordering: as onll_read().
 */
int onll_map_get(struct onll_thread *t, uint64_t key, uint64_t *value);

/**
 * onll_map_size -- read the number of keys into *@size. Return: 0 or
 * onll_read()'s error.
 * Thread-safety, ordering: as onll_read().
 */
int onll_map_size(struct onll_thread *t, uint64_t *size);

#ifdef __cplusplus
}
#endif

#endif /* ONLL_OBJECTS_H */
