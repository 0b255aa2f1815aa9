/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/index.h -- the KV store's replicated key index: a map from a key to
 * the 35-bit location of its value, held in the persistent pools of 2f+1
 * memory nodes and used only through one-sided batches (rdma/rdma.h).
 *
 * Model (kv/DESIGN.md, "Index"). Every memory node of the group holds the
 * same layout in one region. A key hashes to a bucket of 14 slots; each
 * slot is a sequence of consensus instances whose acceptors are one 8-byte
 * word per node, changed by compare-and-swap with a persist in the same
 * ordered batch (Fast Paxos over CAS words). A full bucket is compacted
 * in place when removed entries fill it, else split, by any client, while
 * others keep operating. No memory-node CPU, master or
 * lock takes part; a client that crashes mid-operation leaves nothing that
 * the next client cannot finish or undo.
 *
 * Guarantees. Operations are linearizable. With at most f of the 2f+1 nodes
 * crashed, stopped or cut off they complete; with more they return
 * KV_E_UNAVAILABLE within the timeout, never a wrong answer, and succeed
 * again once a majority is back. Every completed insert and remove is
 * durable on a majority: killing every node and restarting them from their
 * pools loses none. A node restarted from its pool rejoins at once; a node
 * whose pool was lost is left out until kv_index_rebuild() restores it.
 *
 * Keys. The index stores a 16-bit fingerprint of each key, not the key: the
 * caller stores the key next to its value, and answers kv_index_config's
 * key_at() with the key stored at a location. Keys are 1..KV_INDEX_KEY_MAX
 * bytes.
 *
 * Errors: 0 or a negative code: -errno, or KV_E_* and the suite's other
 * codes (pm/error.h; pm_strerror() names them, pm_errormsg() says what
 * failed).
 *
 * Thread-safety: a handle is one client: one thread uses it at a time, and
 * concurrent clients (threads or processes) open their own handles with
 * distinct client ids. Handles of one process share nothing.
 */
#ifndef KV_INDEX_H
#define KV_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include <pm/error.h>
#include <rdma/rdma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest key, in bytes. */
#define KV_INDEX_KEY_MAX 1024
/* Locations are 35-bit numbers chosen by the caller (placement group and
 * block, for the store). */
#define KV_INDEX_LOC_MAX ((UINT64_C(1) << 35) - 1)
/* Most memory nodes in a group. */
#define KV_INDEX_MAX_NODES 7

/*
 * key_at -- copy the key stored at location @loc into @buf (@cap bytes) and
 * its length into *@len. Called by kv_index_* when a fingerprint matches
 * and when a bucket splits.
 * Return: 0; -ENOENT if no key is stored at @loc (the entry does not
 * match); another negative code to fail the operation with it.
 */
typedef int (*kv_index_key_fn)(void *ctx, uint64_t loc, void *buf, size_t cap,
	size_t *len);

/*
 * publish -- kv_index_insert() calls it once, before the first round that can
 * make @loc visible to another client, so a caller may write the key (what
 * key_at() answers for @loc) in parallel with the insert's first round and
 * finish that write here. Return: 0, or a negative code to fail the insert
 * with it (nothing was published).
 */
typedef int (*kv_index_publish_fn)(void *ctx, uint64_t loc);

struct kv_index_config {
	const char *const *nodes; /* URIs of the group's nodes, in group order */
	unsigned nnodes;          /* 2f+1: 1, 3, 5 or 7 */
	uint32_t region;          /* region id holding the index on every node; 0 */
	unsigned client_id;       /* unique among concurrent clients, < max_clients */
	unsigned timeout_ms;      /* an operation's limit; default 5000 */
	struct rdma_conn_config conn; /* token, connection timeout (default 1000 ms) */
	kv_index_key_fn key_at;   /* required */
	void *key_ctx;            /* passed to key_at and publish */
	kv_index_publish_fn publish; /* NULL: the key is stored before the insert */
	/* Called instead of spinning whenever the handle waits for the nodes,
	 * so one thread can run several handles as coroutines; NULL: spin. */
	void (*yield)(void *arg);
	void *yield_arg;
	unsigned cache_entries;   /* per-key hint cache entries; default 4096; 0 = none */
	/* kv_index_create only: */
	unsigned max_clients;     /* client ids; default 64, at most 1024 */
	unsigned recs_per_client; /* classic-round records per client; default 4096 */
};

/**
 * kv_index_config_init -- fill @cfg with the defaults above (nodes, nnodes
 * and key_at are left for the caller).
 * Return: nothing (void). Thread-safety: any thread; writes only @cfg.
 * Ordering: none (touches no shared memory).
 */
void kv_index_config_init(struct kv_index_config *cfg);

struct kv_index;

/**
 * kv_index_create -- format a new, empty index on every node of the group
 * (all must be reachable and hold no index) and open it.
 * @out: receives the handle; owned by the caller, kv_index_close().
 * Persistence: the index is durable on every node when this returns.
 * Return: 0; -EINVAL for a bad config; -EEXIST if a node already holds an
 * index; -ENOSPC if the region is too small; KV_E_UNAVAILABLE if a node
 * cannot be reached; transport errors; -ENOMEM; -EAGAIN as kv_index_open().
 * Thread-safety: one creator per group; nothing else may use the nodes
 * until it returns.
 * Ordering: every node's index region is formatted and persisted before
 * it returns; ordered with no client (none may run).
 */
int kv_index_create(struct kv_index **out, const struct kv_index_config *cfg);

/**
 * kv_index_open -- open the index on its group as client @cfg->client_id.
 * Needs f+1 nodes that hold the group's index, and waits at most the
 * connection timeout (cfg->conn.timeout_ms) more for the others; nodes that
 * are not up join when they are reachable again.
 * @out: receives the handle; owned by the caller, kv_index_close().
 * Return: 0; -EINVAL for a bad config; KV_E_UNAVAILABLE if fewer than f+1
 * nodes answer with the index in time; -ENOMEM; -EAGAIN if the thread that
 * connects the nodes cannot be started (pthread_create(), which also fails
 * so when it cannot allocate).
 * Thread-safety: any thread.
 * Ordering: as kv_open() for the client id it claims.
 */
int kv_index_open(struct kv_index **out, const struct kv_index_config *cfg);

/**
 * kv_index_close -- release *@ixp (background commits in flight are
 * abandoned; other clients finish them) and set it to NULL.
 * Return: 0 (also for NULL). Thread-safety: the handle's thread.
 * Ordering: the handle's operations that returned precede the release
 * of its id.
 */
int kv_index_close(struct kv_index **ixp);

/**
 * kv_index_lookup -- the location @key maps to, into *@loc.
 * Return: 0; -ENOENT if @key is absent; -EINVAL for a bad key;
 * KV_E_UNAVAILABLE; an error of key_at.
 * Linearizable; writes nothing to the nodes unless it meets a crashed
 * client's unfinished change, which it finishes first.
 * Thread-safety: the handle's thread.
 * Ordering: linearizable: takes effect at one instant between call and
 * return (kv/DESIGN.md, "Linearization points"), after every insert and
 * remove of any client that returned before the call.
 */
int kv_index_lookup(struct kv_index *ix, const void *key, size_t len, uint64_t *loc);

/**
 * kv_index_lookup_known -- kv_index_lookup() for a caller that knows a
 * location holding @key: @known, if not NULL, is a location whose key_at()
 * answers @key from before the call until it returns (the store's cache
 * entry younger than the grace before an object is reused). A decided
 * mapping of the key's fingerprint to *@known is then taken without
 * reading the key back, one round trip less; the answer is wrong if the
 * caller's claim is.
 * Return: as kv_index_lookup().
 * Thread-safety: the handle's thread.
 * Ordering: as kv_index_lookup().
 */
int kv_index_lookup_known(struct kv_index *ix, const void *key, size_t len,
	const uint64_t *known, uint64_t *loc);

/**
 * kv_index_hint -- the location the handle's cache last saw for @key,
 * without a round trip. A hint, never an answer: the caller must check the
 * key stored at *@loc (and that it is still live there) and fall back to
 * kv_index_lookup() if it is not.
 * Return: 0; -ENOENT if the cache holds nothing for @key.
 * Thread-safety: the handle's thread.
 * Ordering: none: a hint from this handle's cache, not linearizable.
 */
int kv_index_hint(struct kv_index *ix, const void *key, size_t len, uint64_t *loc);

/**
 * kv_index_insert -- map @key to @loc if @key is absent (insert-if-absent).
 * The caller stores @key at @loc first (key_at must answer it), or by the
 * time the config's publish() returns.
 * @existing: if not NULL, receives the present location on KV_E_EXISTS.
 * Persistence: on 0 the mapping is durable on a majority of the nodes.
 * Return: 0; KV_E_EXISTS; -EINVAL for a bad key or @loc; -ENOSPC if the
 * key's bucket is full of live entries and cannot split further (the
 * region is full there);
 * KV_E_UNAVAILABLE (the insert may or may not have taken effect: look the
 * key up); errors of key_at.
 * Thread-safety: the handle's thread.
 * Ordering: as kv_index_lookup(); after KV_E_UNAVAILABLE it may have
 * taken effect.
 */
int kv_index_insert(struct kv_index *ix, const void *key, size_t len, uint64_t loc,
	uint64_t *existing);

/**
 * kv_index_remove -- remove the mapping of @key if it is @loc.
 * Persistence: on return the removal is durable on a majority.
 * Return: 0 if @key no longer maps to @loc (removed by this call, or by a
 * concurrent remove of the same mapping: both may return 0); -ENOENT if
 * @key did not map to @loc; -EINVAL; KV_E_UNAVAILABLE (may or may not
 * have taken effect); errors of key_at.
 * Thread-safety: the handle's thread.
 * Ordering: as kv_index_insert().
 */
int kv_index_remove(struct kv_index *ix, const void *key, size_t len, uint64_t loc);

/**
 * kv_index_abandon -- an insert of @key at @loc has stopped for good (its
 * client died, or the call returned KV_E_UNAVAILABLE and will not be
 * retried): settle whether it took effect. If @key maps to @loc, nothing
 * changes; otherwise the key's bucket is moved on to its next incarnation
 * (a compaction in place, or a split), which decides every slot of it, so
 * no slot can choose @loc afterwards and the caller may reuse what lies
 * there (kv/DESIGN.md, "Abandoned inserts"). Meant for rare use: each call
 * that finds @loc unmapped costs a freeze and an install.
 * Persistence: on return the verdict is durable on a majority.
 * Return: 0 if @key maps to @loc (the insert took effect); -ENOENT if @loc
 * is not mapped and never will be; -EINVAL; -ENOSPC (the bucket is full of
 * live entries and cannot split); KV_E_UNAVAILABLE (nothing settled: call
 * again later); errors of key_at.
 * Thread-safety: the handle's thread.
 * Ordering: as kv_index_insert(); the verdict holds for ever once given.
 */
int kv_index_abandon(struct kv_index *ix, const void *key, size_t len, uint64_t loc);

/**
 * kv_index_rebuild -- restore node @node of the group from the others after
 * its pool was lost (a new, zero pool at the same URI): wait one operation
 * timeout (cfg->timeout_ms) for client rounds begun before the loss to end,
 * copy every decided word, finishing undecided ones among the others first,
 * then write its superblock, after which clients count it again. Needs
 * every other node. Runs as client cfg->client_id, which no other client
 * may use meanwhile.
 * Persistence: the rebuilt node's words are durable before its superblock.
 * Return: 0; -EINVAL; -EEXIST if the node already holds the group's
 * superblock; KV_E_UNAVAILABLE; transport errors.
 * Thread-safety: one rebuilder per node; clients may keep operating.
 * Ordering: copies what a majority decided before it read each bucket;
 * the superblock, written last, is what makes clients count the node.
 */
int kv_index_rebuild(const struct kv_index_config *cfg, unsigned node);

/**
 * kv_index_scrub -- walk every bucket and give each member that lacks it,
 * or lags behind, the decided words (a member that was down while buckets
 * split misses them; until it has them, those buckets need every other
 * member up). Operations do the same for the buckets they meet.
 * Return: 0 when every member answered and is up to date;
 * KV_E_UNAVAILABLE if some member did not answer everywhere (run it again).
 * Thread-safety: the handle's thread; other clients may keep operating.
 * Ordering: as kv_scrub() (kv.h).
 */
int kv_index_scrub(struct kv_index *ix);

/* Per-handle counters (kv_index_stats_read()). */
struct kv_index_stats {
	uint64_t ops;           /* lookups, inserts, removes */
	uint64_t rounds;        /* round trips waited for (parallel batches) */
	uint64_t fast;          /* fast rounds tried */
	uint64_t fast_won;      /* ... that decided the proposal */
	uint64_t resolves;      /* classic rounds (promise and accept) */
	uint64_t splits;        /* splits this client took part in */
	uint64_t batch_frozen;  /* slots a freeze decided by classic rounds
	                         * carried together (a member down) */
	uint64_t compactions;   /* compactions in place it installed (removed
	                         * entries' slots made EMPTY again) */
	uint64_t unsure;        /* inserts that returned KV_E_UNAVAILABLE because
	                         * a compaction hid their outcome */
	uint64_t abandoned;     /* kv_index_abandon calls that found the
	                         * location unmapped and moved the bucket on */
	uint64_t key_reads;     /* key_at calls */
	uint64_t forwards;      /* buckets left through a forward word */
	uint64_t unavailable;   /* operations that returned KV_E_UNAVAILABLE */
	uint64_t bad_words;     /* words that failed validation (damaged or foreign) */
	uint64_t repairs;       /* buckets whose lagging members got decided words */
};

/**
 * kv_index_stats_read -- the handle's counters so far into *@out.
 * Return: nothing (void). Thread-safety: the handle's thread.
 * Ordering: none (the handle's own counters).
 */
void kv_index_stats_read(const struct kv_index *ix, struct kv_index_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* KV_INDEX_H */
