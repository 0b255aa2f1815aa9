/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/recycle.h -- what a client knows of its own out-of-place
 * buffers, so it can reuse them (private to kv/; kv/DESIGN.md,
 * "Recycling").
 *
 * A buffer of a client's log holds one write of one object. The client
 * keeps every buffer it wrote and has not reused in a table by object
 * (live), and moves a buffer to the retired list once the write it holds
 * is superseded on f+1 nodes: a word above it in the Safe-Guess order
 * (kv_st_order) on each of f+1 nodes, persisted, so no read can return it
 * again, even after f node losses. A retired buffer becomes free (reused
 * for a later write) once
 *  - every batch the client had posted when it was retired has settled
 *    (kv__ix_settled: the client's own late batches cannot land in it), and
 *  - a read of the hazard words on f+1 nodes, after that, shows no reader
 *    writing a value back into it (layout.h, "Hazard word").
 * A reader that fetches a buffer reused meanwhile sees a header naming
 * another write (I13) and reads again.
 *
 * Why not reclaim/: its schemes protect memory of one process, through
 * epoch words and hazard slots in that process's memory. Here the readers
 * are clients in other processes and their hazards must outlive them, so
 * the hazard words live in the memory nodes, read and written one-sided
 * like everything else of the store.
 *
 * Thread-safety: a struct kv_recycle belongs to one client (its thread).
 */
#ifndef KV_STORE_RECYCLE_H
#define KV_STORE_RECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kv/src/index/group.h"

/* A buffer and what it holds. */
struct kv_rc_buf {
	uint64_t loc;    /* the object; 0 marks an empty table slot */
	uint64_t ord;    /* kv_st_order() of its write, VERIFIED */
	uint32_t ptr;    /* first 128-byte unit in the client's log */
	uint32_t units;
};

struct kv_recycle {
	struct kv_rc_buf *live;     /* open addressing by loc, duplicates allowed */
	size_t live_cap, live_n;    /* cap: a power of two */
	struct kv_rc_buf *retired;
	size_t retired_n, retired_cap;
	uint64_t retired_units;
	uint64_t kept_units;        /* of those, the ones the last reclaim kept
	                             * (named by a hazard, or not yet sealed) */
	size_t kept_n;              /* and how many buffers they are */
	size_t sealed;              /* retired[0, sealed) were retired before
	                             * the batches in @posted were posted */
	struct kv_ix_posted posted;
	/* Free buffers: a list per size, linked through next[] by first unit,
	 * so freeing never allocates (it runs after a write took effect). */
	uint32_t *head;             /* head[u]: a free buffer of u units, or NONE */
	uint32_t *next;             /* next[ptr]: the one after ptr in its list */
	uint32_t ncls, nunits;
	uint64_t free_units;
	uint64_t *hz;               /* the reclaim's copy of the hazard words */
	struct kv_rc_buf *unverified; /* live buffers to check for supersession:
	                             * found by the recovery at kv_open, or
	                             * taken from the table by the sweep */
	size_t unverified_n, unverified_cap;
	size_t sweep;               /* the sweep's next slot of live[] */
};

/* Recovered buffers a reclaim checks, at most (two operations each of its
 * batch, beside the hazard read: RDMA_BATCH_MAX_OPS). */
#define KV_RC_VERIFY 15u

/* Buffers retired since the last reclaim that make the next one (a round
 * trip, whatever it frees) worth its cost. The reclaim runs at the end of
 * an operation, which then takes one round trip more: one write in
 * KV_RC_BATCH pays it, so updates stay at one round trip at p99 whatever
 * the value size (64 units, the threshold before 2026-11-30, put it on
 * 1.6 % of 64-byte updates and 14 % of 1 KiB ones). */
#define KV_RC_BATCH 256u

/**
 * kv__rc_due -- whether a reclaim is worth its round trip: KV_RC_BATCH
 * buffers retired since the last one, or a sixteenth of the log (so that
 * a small log is recycled long before it fills). Buffers the last reclaim
 * kept (named by a hazard) do not count again.
 * Return: true or false. Thread-safety: the owner's thread.
 */
static inline bool
kv__rc_due(const struct kv_recycle *rc)
{
	return rc->retired_n >= rc->kept_n + KV_RC_BATCH ||
		rc->retired_units >= rc->kept_units + rc->nunits / 16;
}

/**
 * kv__rc_init -- an empty *@rc for a log of @nunits units and buffers of
 * at most @max_units units.
 * Return: 0; -ENOMEM. Thread-safety: any thread, on its own @rc.
 */
int kv__rc_init(struct kv_recycle *rc, uint32_t nunits, uint32_t max_units);

/**
 * kv__rc_fini -- release what @rc holds (not the buffers on the nodes).
 * Return: nothing (void).
 */
void kv__rc_fini(struct kv_recycle *rc);

/**
 * kv__rc_reserve -- make room to hold one more buffer of @loc and to retire
 * every buffer of @loc, so that nothing allocates once a write to @loc has
 * taken effect. Return: 0; -ENOMEM (nothing changed).
 */
int kv__rc_reserve(struct kv_recycle *rc, uint64_t loc);

/**
 * kv__rc_sweep -- add to the unverified list the next live buffers of the
 * table (round robin), up to KV_RC_VERIFY in the list, to check whether
 * other clients superseded them: the writes of keys this client does not
 * touch again, overwritten or deleted by others. Never allocates.
 * Return: nothing (void).
 */
void kv__rc_sweep(struct kv_recycle *rc);

/**
 * kv__rc_take -- a free buffer of @units units into *@ptr: one of that
 * size, else the front of the smallest larger one (the rest stays free).
 * Return: 0; -ENOENT if none is free.
 */
int kv__rc_take(struct kv_recycle *rc, uint32_t units, uint32_t *ptr);

/**
 * kv__rc_hold -- buffer @ptr (@units) now holds the write of order @ord to
 * @loc. Call kv__rc_reserve() for @loc first. Return: nothing (void).
 */
void kv__rc_hold(struct kv_recycle *rc, uint64_t loc, uint64_t ord, uint32_t ptr,
	uint32_t units);

/**
 * kv__rc_superseded -- a word of order @ord is on f+1 nodes of @loc, each
 * holding it or more, persisted: retire this client's buffers of @loc
 * whose writes are below it, as far as the retired list has room (the
 * rest stay live for a later chance; never allocates).
 * Return: nothing (void).
 */
void kv__rc_superseded(struct kv_recycle *rc, uint64_t loc, uint64_t ord);

/**
 * kv__rc_freed -- put buffer @ptr (@units) on its free list (never
 * allocates). Return: nothing (void).
 */
void kv__rc_freed(struct kv_recycle *rc, uint32_t ptr, uint32_t units);

#endif /* KV_STORE_RECYCLE_H */
