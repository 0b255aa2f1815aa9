/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onll/onll.h -- ONLL: any deterministic sequential object made lock-free
 * and durably linearizable, with one persistent fence per update and none
 * per read (Cohen, Guerraoui, Zablotchi, SPAA'18; thesis ch. 4, alg.
 * 4.2-4.5).
 *
 * The user describes the object with a struct onll_type: how to make the
 * initial state, apply(state, op) for updates, compute(state, op) for
 * reads, and how to save a state to bytes and load it back (checkpoints).
 * Operations are opaque byte strings of at most max_op_size bytes.
 *
 * How it works.
 *   - A volatile *execution trace* (a lock-free list, newest node first)
 *     orders every update: inserting a node by CAS on the tail gives it its
 *     *execution index* (tail's index + 1).
 *   - An update then persists its own op together with every earlier op of
 *     the *fuzzy window* (nodes not yet marked available) in ONE append to
 *     its thread's persistent log, issues ONE persistent fence, and sets its
 *     node's available flag: that store is its linearization point. Helping
 *     earlier ops persist means no update waits for a slower thread.
 *   - A read finds the newest available node and answers from the state as
 *     of that node. It writes no shared data and issues no persistent
 *     fence. It does mark its own thread slot active while it runs (a word
 *     only the trace reclaimer reads): a plain store where the kernel has
 *     membarrier(2), whose barrier the rare reclaimer then forces on every
 *     running thread, and otherwise a seq_cst store, which is a full fence
 *     on x86 (see onll_read()).
 *   - Per-thread local views (thesis sect. 4.8): each thread keeps its own
 *     copy of the state at some execution index and, per operation, applies
 *     only the trace nodes since then, not the whole history.
 *   - Checkpoints (sect. 4.8): from time to time an update also writes its
 *     local view into one of two checkpoint slots, flushed before the same
 *     single fence as its log entry. Log entries and trace nodes older than
 *     the latest durable checkpoint are then reused, so memory and recovery
 *     time stay bounded. Persistent memory is fixed at creation. Trace nodes
 *     are reused once every thread's view has passed them, as in epoch-
 *     based reclamation: a thread idle between operations never holds them
 *     back (if it falls too far behind it reloads its view from the
 *     checkpoint), but a thread preempted inside an operation keeps the
 *     nodes inserted since its view until it runs again.
 *   - Recovery (alg. 4.5) loads the newest valid checkpoint and re-applies,
 *     in execution-index order, the logged ops after it until the first
 *     index no log holds; then it writes a checkpoint of the result.
 *
 * Torn log entries and checkpoints are detected with an XXH3 checksum over
 * the whole entry, not with OOPSLA'17 per-cache-line validity bits: x86
 * guarantees only 8-byte failure atomicity (a cache line can persist in
 * part), and a checksum needs no reserved bit in every word of user ops.
 *
 * Persistence: when onll_update() returns, the update is durable and every
 * update it may have observed is too. A crash keeps a prefix (in execution
 * order) of the updates that had started, including every one that had
 * returned.
 *
 * Progress: updates and reads are lock-free while checkpoints keep up.
 * Checkpoint writing is serialised by a try-flag that is never waited for
 * on the common path. A thread waits for it (spinning with sched_yield)
 * only:
 *   - in an update whose thread's log is full while another thread holds
 *     the flag (a checkpointer preempted for as long as it takes this
 *     thread to fill log_entries - checkpoint_every entries);
 *   - in any operation, read or update, that must first rebuild its
 *     thread's local view from the checkpoint: the first operation after
 *     registration, the one after an apply() or snapshot_load() failed,
 *     and the first after the thread sat idle while the trace reclaimer
 *     moved more than max_threads x log_entries updates past its view;
 *   - in onll_thread_register().
 *
 * Errors: 0 or positive on success; -errno or a PM_E_* code (pm/error.h) on
 * failure. onll_create(), onll_open(), onll_close() and registration leave
 * a message in pm_errormsg() when they fail; the per-operation calls do not
 * touch it (README, Conventions). The library never prints, aborts or exits
 * on bad input.
 */
#ifndef ONLL_ONLL_H
#define ONLL_ONLL_H

#include <stddef.h>
#include <stdint.h>

#include <pm/error.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pm_pool;
struct onll;
struct onll_thread;

/* Layout version of the persistent area written by this library. */
#define ONLL_PMEM_VERSION 2

/*
 * struct onll_type -- the sequential object. Every callback gets @ctx.
 * Callbacks run on the calling thread, on a state only that thread touches
 * (each thread has its own copy), so they need no synchronisation.
 *
 * apply() and compute() must be deterministic functions of (state, op):
 * every thread and recovery replays the same ops in the same order and must
 * reach the same state. They must accept any op bytes a caller may pass (a
 * malformed op should leave the state alone and report it in @result).
 */
struct onll_type {
	/* Identifies the type: a hash of it is stored in the area, and
	 * onll_open() with a type of another name fails with PM_E_LAYOUT, so
	 * renaming a type makes existing areas unopenable. */
	const char *name;
	void *ctx;
	/* Make the initial state. Return 0 or -ENOMEM. */
	int (*state_new)(void *ctx, void **state);
	/* Free a state made by state_new() or snapshot_load(). */
	void (*state_free)(void *ctx, void *state);
	/* Apply update @op to @state and write its result to @result (may be
	 * NULL when replaying). Return 0, or -ENOMEM if the state could not
	 * grow; the state must then still be valid to free (the library drops
	 * it and rebuilds this thread's view; the update stays applied in the
	 * object). */
	int (*apply)(void *ctx, void *state, const void *op, size_t op_len, void *result);
	/* Answer read-only @op from @state into @result (the caller's buffer,
	 * NULL if the caller passed NULL); must not modify @state. */
	void (*compute)(void *ctx, const void *state, const void *op, size_t op_len,
		void *result);
	/* Bytes snapshot_save() writes for @state. */
	size_t (*snapshot_size)(void *ctx, const void *state);
	/* Write @state to @buf (snapshot_size() bytes). Equal states must give
	 * equal bytes. */
	void (*snapshot_save)(void *ctx, const void *state, void *buf);
	/* Build a state from @len bytes at @buf. Return 0; -EINVAL if the
	 * bytes are not a valid snapshot; -ENOMEM. */
	int (*snapshot_load)(void *ctx, const void *buf, size_t len, void **state);
};

struct onll_config {
	/* Most threads registered at once; also the most ops one log entry
	 * holds (the fuzzy window is shorter than this, Prop. 4.5.2).
	 * Default 16, at most 256. */
	unsigned max_threads;
	/* Largest op in bytes; default 64, at most 4096. */
	unsigned max_op_size;
	/* Entries in each thread's persistent log; default 64, at least 4. */
	unsigned log_entries;
	/* An update checkpoints when its thread has this many log entries not
	 * yet covered by a durable checkpoint; 0 (default) means
	 * log_entries / 2; otherwise between 1 and log_entries - 1. */
	unsigned checkpoint_every;
	/* Bytes of each of the two checkpoint slots: the largest saved state.
	 * Default 1 MiB. */
	uint64_t checkpoint_capacity;
};

/* Counts for tests and benchmarks. */
struct onll_stats {
	uint64_t updates;         /* onll_update() calls that succeeded */
	uint64_t reads;           /* onll_read() and onll_query() calls */
	uint64_t helped_ops;      /* ops of others persisted in this thread's log entries */
	uint64_t applied_ops;     /* trace ops applied to local views (catch-up) */
	uint64_t checkpoints;     /* checkpoints written */
	uint64_t checkpoint_fences; /* ... of which with a fence of their own
	                             * (onll_checkpoint(), or a full log); the
	                             * rest shared an update's fence */
	uint64_t log_full_waits;  /* updates that found their log full */
	uint64_t view_rebuilds;   /* local views loaded from a checkpoint */
	uint64_t trace_nodes;     /* trace nodes allocated and not freed (total only) */
	uint64_t log_entries_used;/* log entries not yet covered by a durable checkpoint (total only) */
};

/**
 * onll_config_init -- fill @cfg with the defaults documented above.
 * Thread-safety: any thread; writes only @cfg.
 * Ordering: none (touches no shared memory).
 */
void onll_config_init(struct onll_config *cfg);

/**
 * onll_area_size -- bytes of pool memory an object with config @cfg (NULL:
 * defaults) needs; 0 if @cfg is invalid.
 * Return: the size in bytes; 0 if @cfg is invalid.
 * Thread-safety: any thread; pure.
 * Ordering: none (touches no shared memory).
 */
size_t onll_area_size(const struct onll_config *cfg);

/**
 * onll_create -- format an object of type @type in @pool at offset
 * @area_off and open it.
 * @area_off: offset of onll_area_size(@cfg) bytes of @pool owned by the
 *            object from now on, 64-byte aligned.
 * @type: must stay valid until onll_close(); copied by pointer.
 * @out: receives the object; release it with onll_close().
 *
 * Writes the initial state as checkpoint 0. The area is durable and valid
 * when this returns; a crash before leaves it reading as PM_E_CORRUPT to
 * onll_open() (the header is written last, pm/area.h).
 * Return: 0; -EINVAL for a bad config, type or misaligned area; -ERANGE if
 * the area is not inside the pool; -ENOSPC if the initial state does not
 * fit checkpoint_capacity; -ENOMEM.
 * Thread-safety: any thread; the area must not be in use.
 * Ordering: none; hand @out to other threads through something that
 * orders (pthread_create(), a mutex, a release store).
 */
int onll_create(struct onll **out, struct pm_pool *pool, uint64_t area_off,
	const struct onll_config *cfg, const struct onll_type *type);

/**
 * onll_open -- open the object formatted by onll_create() in @pool at
 * @area_off, and recover it (alg. 4.5).
 * @type: the same type the object was created with.
 *
 * Recovery rebuilds the state from the newest valid checkpoint and the logs
 * and makes it durable as a new checkpoint before returning; a crash during
 * recovery is recovered by opening again.
 * Return: 0; PM_E_LAYOUT if the area holds another kind of object
 * (pm/area.h) or an object of a type with another name; PM_E_VERSION for
 * another layout version; PM_E_CORRUPT if the header is missing (never
 * formatted, or a create that did not finish) or damaged, if every
 * checkpoint or the logs are damaged, or if the checkpoint is not a valid
 * snapshot of @type;
 * -ERANGE if the area is not inside the pool; -ENOSPC if the recovered state
 * does not fit checkpoint_capacity; -ENOMEM. On error nothing is written to
 * the pool (the object can be opened again, losing nothing).
 * Thread-safety: one caller per area; nothing else may use the area until
 * it returns.
 * Ordering: as onll_create(); recovery is single-threaded.
 */
int onll_open(struct onll **out, struct pm_pool *pool, uint64_t area_off,
	const struct onll_type *type);

/**
 * onll_close -- release @*o (NULL accepted) and set it to NULL. Nothing is
 * written: every completed update is already durable.
 * Return: 0; -EBUSY (nothing released) while a thread is registered.
 * Thread-safety: one caller, ordered after every
 * onll_thread_unregister() (joined, for example).
 * Ordering: none of its own (see Thread-safety). On -EBUSY *@o is
 * left as it is.
 */
int onll_close(struct onll **o);

/**
 * onll_recovered_index -- the execution index the object was opened at: the
 * number of updates in its history when onll_open() recovered it (0 after
 * onll_create()). Later updates get the following indexes.
 * Thread-safety: any thread.
 * Return: the index.
 * Ordering: none (reads fields fixed at creation).
 */
uint64_t onll_recovered_index(const struct onll *o);

/**
 * onll_thread_register -- give the calling thread a handle on @o.
 * @out: receives the handle; it belongs to the calling thread (or to one
 *       thread at a time), which releases it with onll_thread_unregister().
 *
 * The thread's local view starts from the latest durable checkpoint, so
 * this costs a snapshot_load() and waits for a checkpoint in progress.
 * Return: 0; -EAGAIN if max_threads handles exist; PM_E_CORRUPT if the
 * checkpoint does not load; -ENOMEM.
 * Thread-safety: any thread, concurrently with operations of others.
 * Ordering: the slot is claimed by CAS and the thread's view
 * published with a release store, the other side of the acquire loads
 * with which updates compute which trace nodes can be reused.
 */
int onll_thread_register(struct onll *o, struct onll_thread **out);

/**
 * onll_thread_unregister -- release @*t (NULL accepted) and set it to NULL.
 * The thread's log and trace memory go to the next thread that registers.
 * Return: 0.
 * Thread-safety: the owning thread only.
 * Ordering: release stores of the slot's view and in_use flag: the
 * thread's last reads of trace nodes happen before their reuse by an
 * update that loads them (acquire).
 */
int onll_thread_unregister(struct onll_thread **t);

/**
 * onll_update -- apply update @op (@op_len bytes) to the object.
 * @result: receives apply()'s result; NULL if not wanted.
 * @index: receives the update's execution index; NULL if not wanted.
 *
 * Durable and linearized when it returns: one persistent fence (log entry
 * and, sometimes, a checkpoint flushed before it), no other fence -- except
 * that a thread whose log is full because other threads held the checkpoint
 * flag for its last log_entries - checkpoint_every updates first writes a
 * checkpoint with a fence of its own (counted in checkpoint_fences).
 * snapshot_size() is called on every update, so it should be cheap.
 * Return: 0; -EINVAL if @op_len is 0 or @op is NULL; -E2BIG if @op_len
 * exceeds max_op_size; -ENOSPC if the state as this thread sees it no longer
 * fits checkpoint_capacity (nothing was applied; leave room for max_threads
 * more updates, which may be ordered before this check takes effect, or
 * onll_open() fails with -ENOSPC after a crash); -ENOMEM if memory for the
 * update or for this thread's view ran out before the update was ordered
 * (nothing was applied; retrying is safe); ONLL_E_RESULT_LOST if the update
 * was ordered and is durable and linearized, but apply() or bringing the
 * thread's view up to date failed, so @result is not set (the view is
 * rebuilt by the thread's next operation; do not retry the update).
 * Thread-safety: the owning thread of @t; any number of threads at once.
 * Ordering: on success, the trace node is inserted with an acq_rel CAS
 * on the trace tail (release publishes the op and its index; acquire
 * sees every earlier update), and after the persistent fence its
 * available flag is set with a seq_cst store, the linearization point:
 * it pairs with the acquire loads of the trace tail and of available
 * flags in onll_read(), onll_query() and other threads' updates, so a
 * reader that sees the update sees its op and every earlier one. A
 * checkpoint written on the way is published after that store (release
 * of the checkpoint index, acquire in registration and view rebuilds).
 * -ENOMEM after apply(): as success (the update is published). On any
 * other failure nothing is published (no trace node, no log entry).
 */
int onll_update(struct onll_thread *t, const void *op, size_t op_len, void *result,
	uint64_t *index);

/**
 * onll_read -- answer read-only @op from the newest available state.
 * @result: receives compute()'s result.
 *
 * Writes no shared data and issues no persistent fence; costs the updates
 * since this thread's previous operation. Waits for the checkpoint flag
 * only when the thread's view must be rebuilt (see Progress at the top).
 * Return: 0; -EINVAL, -E2BIG as onll_update(); -ENOMEM if the view could not
 * be brought up to date.
 * Thread-safety: the owning thread of @t.
 * Ordering: entering stores this thread's active flag: relaxed, followed by
 * a compiler barrier, where membarrier(2) is registered (the reclaimer's
 * membarrier in onll_reclaim_bound orders it with the floor it raised),
 * otherwise seq_cst, paired with the reclaimer's seq_cst floor CAS and
 * active-flag load; either way the floor is loaded after it. The answer
 * comes from nodes whose available flag was read with acquire, pairing
 * with the seq_cst store that makes an update available in onll_update();
 * so every update linearized before it is reflected. Leaving stores the
 * flag with release. The same on failure.
 */
int onll_read(struct onll_thread *t, const void *op, size_t op_len, void *result);

/**
 * onll_thread_last_index -- the execution index of the latest update that
 * returned on @t (0 if none). After a crash, the update is reflected iff
 * this index is at most onll_recovered_index() of the reopened object (keep
 * it somewhere durable to detect which of your updates survived).
 * Thread-safety: the owning thread of @t.
 * Return: the index, or 0.
 * Ordering: none (thread-local).
 */
uint64_t onll_thread_last_index(const struct onll_thread *t);

/* Callback of onll_query(): reads @state, which it must not modify. */
typedef void (*onll_query_fn)(void *arg, const void *state);

/**
 * onll_query -- run @fn(@arg, state) on the newest available state, as a
 * read (for questions an op encoding does not cover: iteration, dumps).
 * Return: as onll_read(). Thread-safety: the owning thread of @t.
 * Ordering: as onll_read().
 */
int onll_query(struct onll_thread *t, onll_query_fn fn, void *arg);

/**
 * onll_checkpoint -- write a checkpoint of the newest available state now
 * (one persistent fence), so older log entries and trace nodes can be
 * reused. Updates do this on their own; call it before a long idle period
 * to shorten the next recovery.
 * Return: 0; -EBUSY if another checkpoint is being written; -ENOSPC if the
 * state exceeds checkpoint_capacity; -ENOMEM.
 * Thread-safety: the owning thread of @t.
 * Ordering: the checkpoint index is published with a release store
 * after the fence, the other side of the acquire load in registration
 * and view rebuilds; the checkpoint flag is taken with an acquire CAS
 * and given back with a release store around the write.
 */
int onll_checkpoint(struct onll_thread *t);

/**
 * onll_thread_stats -- counts of thread @t (trace_nodes and
 * log_entries_used are left 0). Thread-safety: the owning thread of @t.
 * Ordering: none (relaxed counters).
 */
void onll_thread_stats(const struct onll_thread *t, struct onll_stats *out);

/**
 * onll_stats_total -- counts summed over every thread slot, with the
 * object's trace_nodes and log_entries_used. Exact when no thread is
 * operating; otherwise a racy snapshot. Thread-safety: any thread.
 * Ordering: relaxed loads of every slot's counters.
 */
void onll_stats_total(const struct onll *o, struct onll_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* ONLL_ONLL_H */
