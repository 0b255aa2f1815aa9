/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/kv.h -- the durable, replicated, disaggregated key-value store.
 *
 * Model (kv/DESIGN.md, "Store"). A cluster is 2f+1 memory nodes (rdma/node.h,
 * the dmkv-node daemon, or pool files mapped by every process for the
 * embedded default). Every node holds a replica of every value and of the
 * key index (kv/index.h). Clients reach the nodes with one-sided batches
 * only (rdma/rdma.h): no memory-node CPU, master or lock server is on the
 * data path. Values are replicated with SWARM (Safe-Guess writes and reads
 * over In-n-Out replicas, timestamp locks; seed 000), made durable: the
 * persist rides in the same ordered batch as the write it covers.
 *
 * Guarantees. Operations are linearizable (kv_delete: see there). With at
 * most f nodes crashed, stopped or cut off they complete; with more they
 * return KV_E_UNAVAILABLE within the timeout, never a wrong value, and
 * succeed again once a majority is back. An operation that returned 0 is
 * durable on a majority: killing every node and restarting them from their
 * pools loses none. In the common case (no contention, no failure, clocks
 * in step) a get and an update of a cached key take one round trip, a
 * delete one plus the index's lookup and remove (two each: a delete never
 * uses a cached location), an insert the index's two (the value is written
 * beside them); kv_stats says how many each took. A location
 * is cached for at most lease_ms, then looked up again: the space of
 * deleted keys is reused 3 lease_ms + lease_ms/4 after their delete
 * (kv/DESIGN.md, "Reuse of objects").
 *
 * Client liveness. Each handle holds its client id under a lease that its
 * operations renew through the nodes (kv_config.lease_ms). A client that
 * stops without kv_close (killed, or silent) is taken for dead once its
 * claim word has stood still for D = (L + T) + (L + T)/16 (L = lease_ms,
 * T = timeout_ms at kv_create: 15.9 s by default) -- never sooner -- and
 * its id is freed by the next operation of another client that looks (one
 * looks once a word it watches may be due), and a handle whose id was freed posts
 * nothing more under it: its next operation takes a new id. This rests on
 * clock rates within 3 % of real time and on batches reaching a node
 * within an operation's timeout of being sent (kv/DESIGN.md, "Client
 * liveness").
 *
 * Keys are 1..KV_KEY_MAX bytes, values 0..KV_VALUE_MAX bytes, both binary.
 *
 * Errors: 0 or a negative code: -ENOENT (not found), KV_E_EXISTS,
 * -E2BIG (key or value too large), -EINVAL (bad argument),
 * KV_E_UNAVAILABLE (no majority within the timeout), KV_E_CONFIG (bad
 * cluster config), -ENOSPC (the store region is full), and the transport's
 * codes (one code space, pm/error.h); pm_strerror() names each,
 * pm_errormsg() says what failed. The
 * library never prints, aborts or exits.
 *
 * Thread-safety: a client handle is used by one thread at a time; threads
 * and processes open their own handles (each takes its own client id).
 */
#ifndef KV_KV_H
#define KV_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pm/error.h>
#include <rdma/rdma.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KV_KEY_MAX 1024
#define KV_VALUE_MAX (64u << 10)
/* Most memory nodes in a cluster (2f+1 with f <= 3). */
#define KV_MAX_NODES 7
/* Most client ids (writers) a store can be created for. */
#define KV_MAX_CLIENTS 127

/* How values are replicated (kv_config.repl, chosen at kv_create): SWARM,
 * or a baseline for benchmarks, in the same code and layout. */
enum kv_replication {
	KV_REPL_SWARM = 0, /* Safe-Guess over In-n-Out replicas on 2f+1 nodes */
	KV_REPL_ABD = 1,   /* DM-ABD (the paper's baseline): read the metadata
	                    * of a majority, then write the value out of place
	                    * or read it through the pointer: 2 round trips */
	KV_REPL_RAW = 2,   /* one in-place copy on node 0, no concurrency
	                    * control (an update may resurrect a key deleted
	                    * concurrently; values must fit the in-place copy
	                    * chosen at insert): the latency floor */
};

struct kv_config {
	const char *const *nodes; /* URIs of the memory nodes, in cluster order */
	unsigned nnodes;          /* 2f+1: 1, 3, 5 or 7 */
	uint32_t index_region;    /* region of the key index on every node; 0 */
	uint32_t store_region;    /* region of the values on every node; 1 */
	unsigned timeout_ms;      /* an operation's limit; default 5000. At
	                           * kv_create: the cluster's longest (every
	                           * kv_open must stay at or below it), at
	                           * most lease_ms */
	struct rdma_conn_config conn; /* token, connection timeout */
	unsigned cache_entries;   /* location cache entries; default 65536 */
	int64_t clock_skew_us;    /* added to this client's clock (tests) */
	unsigned recycle;         /* reuse value buffers once superseded;
	                           * default 1; 0: never, as the store did
	                           * before (a benchmark baseline: the log
	                           * fills, then writes fail with -ENOSPC) */
	/* kv_create only: */
	unsigned max_clients;     /* concurrent client ids; default 16 */
	uint64_t log_bytes;       /* out-of-place log per client per node;
	                           * default 16 MiB, at most 256 MiB */
	uint64_t chunk_bytes;     /* object chunk; default 1 MiB */
	unsigned tick_ns;         /* timestamp tick; default 10000: 2^42 ticks
	                           * (1.4 years) of timestamps per store */
	unsigned lease_ms;        /* client lease L; default 10000. A client
	                           * renews it on f+1 nodes whenever it would
	                           * not cover its next operation, and posts
	                           * nothing once it ran out; one silent for
	                           * D = (L + T) + (L + T)/16 (T: timeout_ms
	                           * at kv_create) is taken for dead and its
	                           * id freed by the others */
	enum kv_replication repl; /* default KV_REPL_SWARM */
};

/**
 * kv_config_init -- fill @cfg with the defaults above (nodes and nnodes are
 * left for the caller). Thread-safety: any thread; writes only @cfg.
 * Ordering: none (touches no shared memory).
 */
void kv_config_init(struct kv_config *cfg);

/*
 * Cluster config files (kv_config_load()): INI text, LF or CRLF line ends,
 * for example
 *
 *   # a comment; ';' starts one too, and either starts a comment after
 *   # a blank on any line
 *   [cluster]
 *   nodes = local:/dev/shm/n0.pool, local:/dev/shm/n1.pool, local:/dev/shm/n2.pool
 *   f = 1                    ; optional; must equal (number of nodes - 1) / 2
 *   token = secret           ; conn.token, at most RDMA_TOKEN_MAX bytes
 *   timeout_ms = 5000        ; 1..UINT_MAX
 *   connect_timeout_ms = 1000  ; conn.timeout_ms, 1..UINT_MAX
 *   cache_entries = 65536    ; 0..UINT_MAX
 *   index_region = 0
 *   store_region = 1
 *   [create]                 ; read by kv_create() only
 *   max_clients = 16         ; 1..KV_MAX_CLIENTS
 *   log_bytes = 16M          ; 1M..256M; sizes take K, M or G (x 1024^n)
 *   chunk_bytes = 1M         ; 4K..4G
 *   tick_ns = 10000          ; 1..UINT_MAX
 *   lease_ms = 10000         ; 1..UINT_MAX
 *   repl = swarm             ; swarm, abd or raw (kv_replication)
 *
 * Instead of (or after) `nodes`, nodes may be given one per `node = URI`
 * line; both take comma-separated lists and append in file order, which
 * is the cluster order: 1, 3, 5 or 7 nodes, no URI twice. Every other key
 * may be given once; absent keys keep the value @cfg had. Sections may
 * repeat. Keys and section names are lower case. Numbers are decimal.
 * Values are not quoted: leading and trailing blanks are dropped, and a
 * value cannot hold ';' or '#' after a blank, nor a control character.
 */

/* Owns the strings of a loaded config (node URIs, token). */
struct kv_config_file;

/**
 * kv_config_load -- update @cfg from the cluster config file at @path.
 * @out:  receives the object owning the strings @cfg now points to; owned
 *        by the caller, who releases it with kv_config_file_delete() once
 *        @cfg (and any copy of it) is no longer used. NULL on failure.
 * @cfg:  kv_config_init()ed (and perhaps changed) by the caller; on success
 *        nodes, nnodes and the keys the file gives are set, on failure it
 *        is left untouched.
 * @path: the file; read whole (at most 1 MiB), not kept open.
 * Return: 0; KV_E_CONFIG for a malformed or inconsistent file, with
 * pm_errormsg() "kv_config_load: PATH:LINE: problem" (unknown section or
 * key, key given twice, key before a section, missing '=', bad or
 * out-of-range number, no nodes, more than KV_MAX_NODES, an even number,
 * a URI given twice, f not (nodes-1)/2, token longer than RDMA_TOKEN_MAX,
 * control characters) -- only the first problem is reported; -errno when
 * the file cannot be opened or read (-ENOENT, -EACCES, -EISDIR, ...);
 * -ENOMEM; -EINVAL for a NULL argument.
 * Thread-safety: any thread; writes only @cfg and *@out.
 * Ordering: none (touches no shared memory).
 */
int kv_config_load(struct kv_config_file **out, struct kv_config *cfg, const char *path);

/**
 * kv_config_file_delete -- release *@fp (from kv_config_load()) and set it
 * to NULL; the config it was loaded into must no longer be used.
 * Return: 0 (also for NULL or *@fp NULL).
 * Thread-safety: the caller's object; any thread.
 * Ordering: none (touches no shared memory).
 */
int kv_config_file_delete(struct kv_config_file **fp);

/**
 * kv_create -- format a new, empty store (index and value regions) on
 * every node of the cluster; all must be reachable and hold no store.
 * Regions a store used before need only their superblocks wiped: the
 * store region is read whole below its logs and zeroed wherever it is not
 * zero, so no id claim, mark or object of the old store reaches the new
 * one (the index region is not zeroed; kv/DESIGN.md, "Failures").
 * Persistence: durable on every node when it returns.
 * Return: 0; KV_E_CONFIG for a bad config (pm_errormsg() names the field);
 * -EEXIST if a node already holds a store; -ENOSPC if a region is too
 * small; KV_E_UNAVAILABLE; transport errors; -ENOMEM; -EAGAIN as kv_open().
 * Thread-safety: one creator; nothing else may use the nodes meanwhile.
 * Ordering: every node's regions are formatted and persisted before it
 * returns; ordered with no client (none may run).
 */
int kv_create(const struct kv_config *cfg);

/**
 * kv_region_sizes -- the index and store region sizes each node needs for
 * @keys keys of up to @key_bytes bytes with values of @value_bytes, with
 * @cfg's creation fields (max_clients, log_bytes, chunk_bytes): what to
 * give rdma_node_config.region_size[] or `dmkv-node --region`. Values
 * rewritten larger later need more. A write takes a buffer of its
 * writer's log, reused once a later write of the key is on a majority, so
 * each log must hold the latest values its client wrote plus some slack.
 * @index_bytes, @store_bytes: out; multiples of 1 MiB.
 * Return: 0; -EINVAL (NULL, @key_bytes 0, more than 2^32 keys); -E2BIG.
 * Thread-safety: any thread.
 * Ordering: none (touches no shared memory).
 */
int kv_region_sizes(const struct kv_config *cfg, uint64_t keys, size_t key_bytes,
	size_t value_bytes, uint64_t *index_bytes, uint64_t *store_bytes);

/* What one memory node holds (kv_node_status_read()). */
struct kv_node_status {
	bool reachable;           /* a connection opened */
	bool formatted;           /* it holds this cluster's store */
	uint64_t index_bytes;     /* region sizes */
	uint64_t store_bytes;
	uint64_t index_buckets;   /* index buckets created on this node */
	unsigned index_depth;     /* depth of the deepest (the root is 0) */
	enum kv_replication repl;
	unsigned lease_ms;        /* the clients' lease (kv_config.lease_ms) */
	unsigned timeout_ms;      /* their longest operation timeout
	                           * (kv_config.timeout_ms at kv_create) */
	unsigned max_clients;     /* client ids ... */
	unsigned clients;         /* ... registered now (open, or stopped
	                           * and not yet found out) */
	uint64_t ids_freed;       /* ids of clients taken for dead that
	                           * others freed, as counted on this node */
	uint64_t hazards_cleared; /* their hazard words cleared, likewise */
	uint64_t objects_zeroed;  /* objects of deleted keys zeroed here for
	                           * reuse (kv_stats.objects_reused) */
	uint64_t chunks, chunks_used, chunk_bytes; /* object chunks */
	uint64_t log_bytes;       /* per client */
	uint64_t log_used;        /* reserved in all clients' logs (marks) */
};

/**
 * kv_node_status_read -- read what node @node of @cfg holds, through one
 * connection of its own: the index superblock and every bucket header, the
 * store superblock, the client id, log mark and chunk tables (one pass over
 * the index region: a few round trips per MiB). A snapshot; no client id
 * is taken and nothing is written.
 * Return: 0 (*@out filled); the transport's error if the node cannot be
 * reached (out->reachable false); PM_E_CORRUPT, PM_E_LAYOUT, PM_E_VERSION,
 * KV_E_GROUP if it does not hold a store of this cluster at that position
 * (out->formatted false, the index fields may be set); -EINVAL; -ENOMEM.
 * Thread-safety: any thread.
 * Ordering: none: each word is read once, so a snapshot taken while
 * clients run may mix states of different moments.
 */
int kv_node_status_read(const struct kv_config *cfg, unsigned node, struct kv_node_status *out);

struct kv_client;

/**
 * kv_open -- connect to the cluster and take a free client id (claimed on
 * a majority of the nodes, no coordinator) with a lease that its
 * operations renew (kv_config.lease_ms; a handle left idle longer than
 * the suspicion time D of kv_config.lease_ms is taken for dead and
 * registers again under a new id at its next operation). An id used before is taken
 * with what its last holder left in its value log: the open reads the
 * used part of that log on every node (one round trip per 90 KiB) to
 * reuse the buffers that no longer hold a value (kv/DESIGN.md,
 * "Recycling of value buffers").
 * @out: receives the handle; owned by the caller, kv_close().
 * Return: 0; KV_E_CONFIG (also timeout_ms above the cluster's: the one
 * kv_create was given);
 * KV_E_UNAVAILABLE (no majority, or every client id is taken); transport
 * errors; -ENOMEM; -EAGAIN as kv_index_open() (kv/index.h).
 * Thread-safety: any thread.
 * Ordering: the id is claimed (CAS, persisted) on a majority before it
 * returns; the handle's operations follow it.
 */
int kv_open(struct kv_client **out, const struct kv_config *cfg);

/**
 * kv_close -- give the client id back and release *@cp; set it to NULL.
 * The id is released on every node that answers within the handle's
 * timeout, slow ones too; a node down keeps it registered until another
 * client's watch zeroes it, D later.
 * Background writes in flight are abandoned (readers finish them).
 * Return: 0 (also for NULL); KV_E_UNAVAILABLE if the id could not be
 * released on a majority (it stays taken until the other clients find
 * its lease run out). Thread-safety: the handle's.
 * Ordering: the handle's operations that returned precede the release
 * of its id; background writes abandoned are finished by readers.
 */
int kv_close(struct kv_client **cp);

/**
 * kv_scrub -- give memory nodes that were down, restarted or cut off what
 * the others decided while they were away: the index buckets created
 * meanwhile. Until a node has them, those buckets need every other node,
 * so one more fault would make their keys unavailable. Clients do the same
 * by themselves, a few buckets after each operation, once they reconnect a
 * node; kv_scrub does all of it now (`dmkv scrub`: after restarting a node,
 * before taking another down). Values need nothing: each is a majority
 * register, and reads write back what a node lacks.
 * Return: 0 when every node answered and is up to date; KV_E_UNAVAILABLE if
 * some node did not answer everywhere (run it again once it is up).
 * Thread-safety: the handle's thread; other clients may keep operating.
 * Ordering: each bucket it copies is one a majority decided before it
 * read it; no client operation is ordered by it.
 */
int kv_scrub(struct kv_client *c);

/* What kv_rebuild() did. */
struct kv_rebuild_report {
	bool index_rebuilt;  /* the index was rebuilt too (false: an earlier
	                      * kv_rebuild had done it) */
	uint64_t grace_ms;   /* waited, all with the cluster's timeout T:
	                      * T in the index (if rebuilt), the suspicion
	                      * time (L + T)(1 + 1/16) before copying, T
	                      * before admitting */
	uint64_t chunks;     /* object chunks copied */
	uint64_t objects;    /* objects found in them */
	uint64_t buffers;    /* value buffers copied */
	uint64_t bytes;      /* bytes written to the node */
};

/**
 * kv_rebuild -- restore node @node of the cluster @cfg after its pool was
 * lost (its daemon restarted on a new, empty pool), from the other nodes,
 * while clients keep operating (`dmkv node rebuild`). Until it finishes
 * the node counts towards no majority (clients admit a node only once it
 * holds its store superblock, which is written last), so the cluster runs
 * with one fault fewer in hand: every other node must stay up.
 * It rebuilds the index (kv_index_rebuild, waiting the cluster's timeout
 * T) unless an earlier call did; waits the suspicion time (the lease plus
 * T, and a sixteenth for clock rates), so that no operation begun before
 * the loss is still deciding and no lease counts on the lost words;
 * then copies the per-client tables (marks as their maximum; claim and
 * hazard words start empty), every claimed object chunk -- per object the
 * header and key, each writer's metadata word and timestamp lock as their
 * maximum over the others, the first delete word, the in-place copy --
 * and the value buffer each metadata word names, before the words that
 * name it; waits another T; and last writes the
 * superblock (kv/DESIGN.md, "Rebuilding a lost node"). Safe to run again
 * after a failure.
 * @out: filled (may be NULL).
 * Return: 0; -EEXIST if the node still holds a store superblock (it was
 * not lost: a restart from its own pool needs no rebuild); KV_E_UNAVAILABLE
 * if another node did not answer (run it again); KV_E_CONFIG (also for a
 * @cfg->timeout_ms above the cluster's, as kv_open()), -EINVAL,
 * -ENOMEM, -ENOSPC (the new pool's region is smaller than the cluster's).
 * Thread-safety: one rebuild per node at a time; clients may keep
 * operating. Persistence: each word is persisted before the superblock.
 * Ordering: no client operation is ordered by it; every write a client
 * saw acknowledged, before or during the rebuild, stays readable with
 * any f nodes down once it returned 0.
 */
int kv_rebuild(const struct kv_config *cfg, unsigned node, struct kv_rebuild_report *out);

/**
 * kv_insert -- store @val under @key if @key is absent.
 * Persistence: on 0 key and value are durable on a majority.
 * Return: 0; KV_E_EXISTS; -E2BIG; -EINVAL (empty key); -ENOSPC;
 * KV_E_UNAVAILABLE (may or may not have taken effect).
 * Thread-safety: the handle's thread.
 * Ordering: linearizable (kv.h, "Guarantees"): takes effect at one instant
 * between call and return, after every operation of any client that
 * returned before the call, before every one called after it returns;
 * after KV_E_UNAVAILABLE it may have taken effect, ordered where a later
 * operation that sees it places it.
 */
int kv_insert(struct kv_client *c, const void *key, size_t klen, const void *val,
	size_t vlen);

/**
 * kv_update -- replace the value of @key if @key is present.
 * Persistence: on 0 the value is durable on a majority.
 * Return: 0; -ENOENT; -E2BIG; -EINVAL; -ENOSPC; KV_E_UNAVAILABLE.
 * Thread-safety: the handle's thread.
 * Ordering: as kv_insert().
 */
int kv_update(struct kv_client *c, const void *key, size_t klen, const void *val,
	size_t vlen);

/**
 * kv_put -- store @val under @key, present or not (insert, else update).
 * Return: as kv_insert() and kv_update(), never KV_E_EXISTS or -ENOENT.
 * Thread-safety: the handle's thread.
 * Ordering: as kv_insert().
 */
int kv_put(struct kv_client *c, const void *key, size_t klen, const void *val,
	size_t vlen);

/**
 * kv_get -- the value of @key into @buf (@cap bytes) and its length into
 * *@vlen. A value longer than @cap is cut to @cap (*@vlen says how long it
 * is). Writes nothing to the nodes unless it meets a write that another
 * client left unfinished or unreplicated, which it completes first.
 * Return: 0; -ENOENT; -EINVAL; KV_E_UNAVAILABLE.
 * Thread-safety: the handle's thread.
 * Ordering: as kv_insert(); a get that completes another client's write
 * orders it before itself.
 */
int kv_get(struct kv_client *c, const void *key, size_t klen, void *buf, size_t cap,
	size_t *vlen);

/**
 * kv_delete -- remove @key.
 * The key's location comes from the index (never from the location
 * cache), and the delete acts on that incarnation only.
 * Return: 0 if @key was present when the call began, or was removed by a
 * delete overlapping this one (two overlapping deletes may both return 0),
 * or by earlier overlapping deletes that split the nodes between them (a
 * node unreachable, or three deletes; kv/DESIGN.md, "Delete"); -ENOENT if
 * @key was absent; -EINVAL; KV_E_UNAVAILABLE.
 * Persistence: on 0 the removal is durable on a majority.
 * Thread-safety: the handle's thread.
 * Ordering: as kv_insert(), except that two overlapping deletes may
 * both return 0 (above).
 */
int kv_delete(struct kv_client *c, const void *key, size_t klen);

/*
 * The asynchronous API: one thread keeps up to @depth operations in flight
 * across the nodes, as SWARM-KV's clients do (sect. 6). An asynchronous
 * handle runs @depth clients (each with its own client id) as coroutines on
 * the caller's thread: an operation runs until it waits for the nodes, and
 * kv_async_poll()/kv_async_wait() run the others meanwhile. Operations in
 * flight together are concurrent (linearizable in any order); submit one
 * after another completes to order them.
 */
enum kv_op_kind {
	KV_OP_GET,
	KV_OP_INSERT,
	KV_OP_UPDATE,
	KV_OP_PUT,
	KV_OP_DELETE,
};

/* One operation; caller-owned, untouched by the caller while in flight. */
struct kv_op {
	enum kv_op_kind kind;
	const void *key;
	size_t klen;
	const void *val;   /* insert, update, put */
	size_t vlen;
	void *buf;         /* get: the value goes here ... */
	size_t cap;        /* ... up to cap bytes */
	size_t len;        /* get: out, the value's length */
	int ret;           /* out: the result, as the synchronous call's */
	void *user;        /* the caller's */
};

/**
 * kv_op_run -- run @op synchronously on @c: the call its kind names, with
 * its arguments; the result goes to op->ret (a get's length to op->len).
 * Return: op->ret; -EINVAL for an unknown kind.
 * Persistence, thread-safety, ordering: as that call's.
 */
int kv_op_run(struct kv_client *c, struct kv_op *op);

struct kv_async;

/**
 * kv_async_open -- an asynchronous handle of @depth (1..64) clients.
 * @out: receives it; owned by the caller, kv_async_close().
 * Return: as kv_open(); -EINVAL for a bad @depth; -ENOMEM.
 * Thread-safety: any thread; the handle is then used by one thread at a
 * time.
 * Ordering: as kv_open(), for each of its clients.
 */
int kv_async_open(struct kv_async **out, const struct kv_config *cfg, unsigned depth);

/**
 * kv_async_close -- finish the operations in flight, close the clients and
 * set *@ap to NULL. Return: 0, or the first error of kv_close().
 * Thread-safety: the handle's thread.
 * Ordering: the operations in flight complete before the ids are released.
 */
int kv_async_close(struct kv_async **ap);

/**
 * kv_async_submit -- start @op (it runs until it first waits for the
 * nodes). Its arguments are checked as the synchronous call's are; an op
 * rejected at once completes like any other, with its error in ret.
 * Return: 0; -EBUSY if depth operations are in flight (poll first).
 * Thread-safety: the handle's thread.
 * Ordering: an op is linearizable like its synchronous call, concurrent
 * with every other op in flight on the handle (above).
 */
int kv_async_submit(struct kv_async *a, struct kv_op *op);

/**
 * kv_async_poll -- run every operation in flight once, until it waits
 * again, and store up to @max completed ones into @done, their number into
 * *@n. Return: 0. Persistence: a completed op is as durable as its
 * synchronous call's. Thread-safety: the handle's thread.
 * Ordering: an op's effect is ordered when it completes, as above.
 */
int kv_async_poll(struct kv_async *a, struct kv_op **done, unsigned max, unsigned *n);

/**
 * kv_async_wait -- kv_async_poll() until at least one operation completed
 * (or none is in flight: *@n = 0). Return: 0. Thread-safety: the handle's
 * thread.
 * Ordering: as kv_async_poll().
 */
int kv_async_wait(struct kv_async *a, struct kv_op **done, unsigned max, unsigned *n);

/* Per-handle counters (kv_stats_read()). */
struct kv_stats {
	uint64_t ops;           /* operations */
	uint64_t rounds;        /* round trips waited for on values (parallel
	                         * batches to several nodes count once) */
	uint64_t index_rounds;  /* round trips spent in the index */
	uint64_t slow_writes;   /* writes whose guess was stale (Safe-Guess S9) */
	uint64_t lock_calls;    /* TRYLOCK calls (readers and writers) */
	uint64_t write_backs;   /* reads that replicated a value to a majority */
	uint64_t read_iters;    /* Safe-Guess read iterations beyond the first */
	uint64_t oop_reads;     /* values read out of place (in-place invalid) */
	uint64_t fallbacks;     /* rounds widened from a majority to all nodes */
	uint64_t cache_misses;  /* keys looked up in the index */
	uint64_t unavailable;   /* operations that returned KV_E_UNAVAILABLE */
	uint64_t write_back_restarts; /* write-backs begun again: the value was
	                         * superseded meanwhile, or its buffer reused */
	uint64_t stale_fetches; /* value buffers found reused by their writer
	                         * (the read starts over) */
	uint64_t reclaims;      /* reads of the hazard words to free buffers */
	uint64_t recycled;      /* this client's buffers freed for reuse */
	uint64_t recovered;     /* buffers of an earlier life of its client id
	                         * found holding writes at kv_open */
	uint64_t lease_renewals; /* renewals of the client's lease */
	uint64_t ids_freed;     /* ids of clients silent past the suspicion
	                         * time that this client gave up (and whose
	                         * hazard words it cleared) */
	uint64_t reregistrations; /* times this client found its own id given
	                         * up (it was silent too long) and took a new
	                         * one */
	uint64_t fenced_posts;  /* batches not sent because the lease had run
	                         * out (a level of the handle's groups) */
	uint64_t objects_dead;  /* objects of deleted keys (and of lost
	                         * inserts) in the chunks of this client's
	                         * id, queued for reuse after the grace */
	uint64_t objects_swept; /* windows of its chunks read to find those
	                         * that other clients (or an earlier life)
	                         * deleted */
	uint64_t objects_zero_failed; /* reuses put off: an object could not
	                         * be zeroed on every node (one was away) */
	uint64_t objects_reused; /* inserts that took a dead object */
	uint64_t objects_free_found; /* objects an earlier life of the id
	                         * zeroed for reuse and did not take, found
	                         * by the sweep and queued again */
	uint64_t chunks_taken_unmarked; /* chunks an earlier life of the id won
	                         * and died before using, taken at kv_open */
	uint64_t inserts_settled; /* inserts of unknown outcome (this life's
	                         * that failed undecided, or the last one of
	                         * the id's earlier life) found to have
	                         * taken effect (kv_index_abandon) ... */
	uint64_t objects_abandoned; /* ... or found never to take effect: their
	                         * objects queued for reuse */
	uint64_t objects_unsure_dropped; /* inserts of unknown outcome not
	                         * kept (KV_OBJ_UNSURE were waiting) */
	uint64_t log_used;      /* a level, not a count: bytes of its value log
	                         * handed out so far (by this life and earlier
	                         * ones of its id), what its log takes of each
	                         * node's store region */
};

/**
 * kv_stats_read -- the handle's counters so far (and its log_used level)
 * into *@out.
 * Thread-safety: the handle's thread.
 * Ordering: none (the handle's own counters).
 */
void kv_stats_read(const struct kv_client *c, struct kv_stats *out);

/**
 * kv_async_stats_read -- the sum of the counters of @a's clients.
 * Return: nothing (void). Thread-safety: the handle's thread.
 * Ordering: none (the handle's own counters).
 */
void kv_async_stats_read(const struct kv_async *a, struct kv_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* KV_KV_H */
