/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/rdma.h -- one-sided access to the memory of a memory node, in ordered
 * batches, over three backends.
 *
 * Model (DESIGN.md sect. 7). A memory node exposes numbered regions of
 * persistent memory. A client opens a connection to the node, learns the
 * regions (id and length), and posts batches of one-sided operations:
 * read, write, 8-byte compare-and-swap, 8-byte fetch-and-add and persist.
 *
 * Ordering. The operations of one batch execute in the order they were added:
 * the effect of a later operation is never visible (nor durable) before the
 * effect of an earlier one, and a persist makes durable every earlier write,
 * CAS and FAA of the batch that it covers. "Write buffer, persist, CAS
 * metadata, persist" in one batch therefore never exposes metadata pointing
 * at a buffer that is not written, nor makes it durable before the buffer.
 * A batch completes with one round trip to the node (rdma_post, then
 * rdma_poll or rdma_wait). Batches to different nodes may be in flight at the
 * same time; one connection holds at most one batch in flight.
 *
 * Backends, chosen by the node's URI:
 *   local:PATH        PATH is a node pool file that every process maps (a DAX
 *                     file on NVDIMM/CXL hosts, /dev/shm in tests). Operations
 *                     are loads, stores, atomics and pm/ flushes done by the
 *                     caller. This is the CXL shared-memory model; no daemon
 *                     has to run (see rdma/node.h for how the file is made).
 *   ofi+tcp://H:P     a memory-node daemon at control address H:P, data over
 *   ofi+shm://H:P     libfabric (tcp;ofi_rxm, shm, or verbs;ofi_rxm where an
 *   ofi+verbs://H:P   RDMA device exists). Batches without persist
 *                     whose ordering the provider guarantees, of at most
 *                     max_provider_ops operations (rdma_conn_config), go
 *                     out as RMA and atomic operations; any other batch is
 *                     shipped in one
 *                     message and executed in order by the node (persistence
 *                     of data delivered over TCP is done on the memory node).
 *                     Either way one round trip; the counters say which.
 *                     ofi+shm endpoints (node and client) each hold a region
 *                     /dev/shm/dmem-NS-PID-START-N; one left by a
 *                     killed process is removed by the next ofi+shm endpoint opened
 *                     on the host. Memory: with libfabric's defaults an
 *                     ofi_rxm endpoint (one per connection, on the client
 *                     and on the node) holds about 60 MB of buffers;
 *                     FI_OFI_RXM_BUFFER_SIZE=4096 in the environment cuts
 *                     that about threefold (the tests set it: .bazelrc).
 *   verbs://H:P       rdma-core RC queue pair: the batch is one chained list
 *                     of work requests posted with one doorbell; persist is an
 *                     8-byte read after the writes on the same queue pair
 *                     (librpma's method: durable where the pool is on a DAX
 *                     mapping of an ADR/eADR platform with DDIO off for it).
 *                     A write or atomic after a read, persist or atomic, and
 *                     a read or persist after an atomic, carry the fence flag.
 *                     Needs an RDMA device.
 *
 * Errors. Functions return 0 or a negative code: -errno or RDMA_E_* (declared
 * in pm/error.h with the suite's other codes; pm_strerror() names them, and
 * pm_errormsg() says what failed). Every access is checked against its
 * region before anything is executed, so a rejected batch has no effect. A batch that fails in flight (dead peer,
 * timeout) may have executed a prefix of its operations, as with real RDMA.
 * After such a failure the connection is broken: every later post returns
 * RDMA_E_CONN until rdma_conn_reconnect() succeeds.
 *
 * Thread-safety: a connection is used by one thread at a time (like a queue
 * pair); threads open their own connections. Distinct connections, also to
 * the same node, may be used concurrently.
 */
#ifndef RDMA_RDMA_H
#define RDMA_RDMA_H

#include <stddef.h>
#include <stdint.h>

#include <pm/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most operations in one batch. */
#define RDMA_BATCH_MAX_OPS 32
/* Most payload bytes (read plus written) in one batch: a 64 KiB value with
 * its key and metadata fits, for the KV store's one-round-trip writes. */
#define RDMA_BATCH_MAX_BYTES (128u << 10)
/* Longest cluster token, in bytes. */
#define RDMA_TOKEN_MAX 256

enum rdma_op_type {
	RDMA_OP_READ,
	RDMA_OP_WRITE,
	RDMA_OP_CAS,
	RDMA_OP_FAA,
	RDMA_OP_PERSIST,
	RDMA_OP_NTYPES
};

/* One operation; filled by the rdma_batch_* helpers, read-only to callers. */
struct rdma_op {
	uint8_t type;        /* enum rdma_op_type */
	uint32_t region;     /* region id */
	uint64_t offset;     /* byte offset in the region */
	uint32_t len;        /* bytes; 8 for CAS and FAA */
	void *local;         /* READ: destination; WRITE: source */
	uint64_t compare;    /* CAS: expected value */
	uint64_t operand;    /* CAS: new value; FAA: addend */
	uint64_t *result;    /* CAS/FAA: receives the old value (may be NULL) */
};

/*
 * An ordered batch. Caller-owned, typically on the stack; between rdma_post
 * and completion neither the batch nor the buffers it points to may be
 * touched. Reusable after rdma_batch_init().
 */
struct rdma_batch {
	unsigned n;                           /* operations added */
	uint32_t bytes;                       /* payload bytes added */
	struct rdma_op ops[RDMA_BATCH_MAX_OPS];
};

/**
 * rdma_batch_init -- make @b an empty batch. Thread-safety: touches @b only.
 */
void rdma_batch_init(struct rdma_batch *b);

/**
 * rdma_batch_read -- append "read @len bytes at (@region, @offset) into @dst".
 *
 * Return: 0; -EINVAL for @len 0 or a NULL @dst; -E2BIG if the batch is full
 * (RDMA_BATCH_MAX_OPS or RDMA_BATCH_MAX_BYTES). Bounds are checked at post.
 * A read concurrent with writes to the same bytes may return any mix of old
 * and new 8-byte words (as RDMA does); validate with a checksum if needed.
 * Thread-safety: touches @b only.
 */
int rdma_batch_read(struct rdma_batch *b, uint32_t region, uint64_t offset,
	void *dst, uint32_t len);

/**
 * rdma_batch_write -- append "write @len bytes from @src to (@region, @offset)".
 * @src is read when the batch executes, not when it is added.
 * Return: as rdma_batch_read().
 * Thread-safety: touches @b only.
 */
int rdma_batch_write(struct rdma_batch *b, uint32_t region, uint64_t offset,
	const void *src, uint32_t len);

/**
 * rdma_batch_cas -- append an 8-byte compare-and-swap: if the word at
 * (@region, @offset) equals @expected it becomes @desired. *@old (if not
 * NULL) receives the previous value at completion, so the CAS succeeded iff
 * *@old == @expected.
 * Return: 0; -EINVAL if @offset is not 8-byte aligned; -E2BIG if full.
 * Thread-safety: touches @b only.
 */
int rdma_batch_cas(struct rdma_batch *b, uint32_t region, uint64_t offset,
	uint64_t expected, uint64_t desired, uint64_t *old);

/**
 * rdma_batch_faa -- append an 8-byte fetch-and-add of @add (wrapping).
 * *@old (if not NULL) receives the previous value at completion.
 * Return: as rdma_batch_cas().
 * Thread-safety: touches @b only.
 */
int rdma_batch_faa(struct rdma_batch *b, uint32_t region, uint64_t offset,
	uint64_t add, uint64_t *old);

/**
 * rdma_batch_persist -- append "make [@offset, @offset + @len) of @region
 * durable": every earlier operation of the batch on that range is in the
 * node's persistence domain before any later operation takes effect.
 * Writes of earlier, completed batches of this connection to the range are
 * covered too (on local and ofi also other connections' completed writes;
 * on verbs only this queue pair's).
 * Return: as rdma_batch_read() (no buffer).
 * Thread-safety: touches @b only.
 */
int rdma_batch_persist(struct rdma_batch *b, uint32_t region, uint64_t offset,
	uint32_t len);

/* What rdma_conn_region() reports. */
struct rdma_region_info {
	uint32_t id;
	uint64_t length;
};

/* Connection options; rdma_conn_config_init() gives the defaults. */
struct rdma_conn_config {
	const char *token;     /* cluster token; default "" (nodes without token) */
	unsigned timeout_ms;   /* rdma_wait and connect limit; default 5000 */
	/*
	 * ofi backends: the most operations a batch may hand to the provider
	 * as separate RMA and atomic operations; a longer batch is shipped in
	 * one message even where the provider could keep its order. 0 (the
	 * default) = the provider's own limit: 1 for tcp;ofi_rxm and shm,
	 * where libfabric 1.17 completes a batch's operations one after
	 * another (8 reads cost 9x one read on tcp, while a shipped batch of
	 * 8 costs 1.5-3.5x: benchmarks/results/rdma_report.md), and
	 * RDMA_BATCH_MAX_OPS for verbs;ofi_rxm, where the NIC pipelines
	 * them. Other backends ignore it.
	 */
	unsigned max_provider_ops;
};

/**
 * rdma_conn_config_init -- fill @cfg with the defaults documented above.
 * Thread-safety: any thread; writes only @cfg.
 */
void rdma_conn_config_init(struct rdma_conn_config *cfg);

struct rdma_conn;

/**
 * rdma_conn_open -- connect to the memory node at @uri (see the top of this
 * file for the URI forms).
 * @out: receives the connection; owned by the caller, rdma_conn_close().
 * @cfg: options; NULL for the defaults. Copied (the token too).
 *
 * Return: 0; -EINVAL for a malformed URI or config; -ENOENT for a local
 * node file that does not exist; RDMA_E_PROTO for a damaged node file or
 * answer; RDMA_E_AUTH for a refused token; RDMA_E_CONN or -ETIMEDOUT if the
 * node does not answer; RDMA_E_NO_DEVICE if the backend cannot run here;
 * -ENOMEM.
 * Thread-safety: any thread.
 */
int rdma_conn_open(struct rdma_conn **out, const char *uri,
	const struct rdma_conn_config *cfg);

/**
 * rdma_conn_close -- release *@cp (waiting at most timeout_ms for a batch in
 * flight, whose completion is then lost) and set *@cp to NULL.
 *
 * Return: 0 (also for @cp or *@cp NULL); or the error with which that batch
 * in flight ended, the last teardown step that can fail (-ETIMEDOUT,
 * RDMA_E_CONN, ...; the backend's release of its provider objects reports
 * nothing). The handle is freed and *@cp set to NULL either way.
 * Thread-safety: the thread using the connection.
 */
int rdma_conn_close(struct rdma_conn **cp);

/**
 * rdma_conn_reconnect -- reopen a broken (or healthy) connection to the
 * same URI with the same options, for example after the node restarted.
 * Region ids and lengths must be unchanged, else RDMA_E_PROTO and the
 * connection stays broken. A batch in flight is abandoned.
 * Return: as rdma_conn_open().
 * Thread-safety: the thread using @c (one at a time).
 */
int rdma_conn_reconnect(struct rdma_conn *c);

/**
 * rdma_conn_backend -- "local", "ofi+tcp", "ofi+shm", "ofi+verbs" or "verbs".
 * Return: a static string.
 * Thread-safety: any thread.
 */
const char *rdma_conn_backend(const struct rdma_conn *c);

/**
 * rdma_conn_region_count -- number of regions the node exposes.
 * Return: the count.
 * Thread-safety: the thread using @c (one at a time).
 */
unsigned rdma_conn_region_count(const struct rdma_conn *c);

/**
 * rdma_conn_region -- describe the @index-th region (0-based) in *@out.
 * Return: 0; -EINVAL if @index is out of range.
 * Thread-safety: the thread using @c (one at a time).
 */
int rdma_conn_region(const struct rdma_conn *c, unsigned index,
	struct rdma_region_info *out);

/**
 * rdma_post -- validate batch @b and start executing it on @c's node.
 *
 * Every operation is checked against its region first; on any error nothing
 * executes. The local backend executes the whole batch inside this call.
 * Return: 0 (the batch is in flight); -EINVAL for an empty batch;
 * RDMA_E_NO_REGION or RDMA_E_BOUNDS; -EBUSY if a batch is already in flight
 * on @c; RDMA_E_CONN if @c is broken.
 * Thread-safety: the thread using @c (one at a time).
 */
int rdma_post(struct rdma_conn *c, struct rdma_batch *b);

/**
 * rdma_poll -- make progress on @c's batch without blocking.
 * Return: 0 if it completed (results and read buffers are filled);
 * -EINPROGRESS if not yet; -EINVAL if nothing is in flight; a negative code
 * if it failed (the connection is then broken, see the top of this file).
 * Thread-safety: the thread using @c (one at a time).
 */
int rdma_poll(struct rdma_conn *c);

/**
 * rdma_wait -- poll @c (busy, as RDMA clients do) until its batch completes
 * or the connection's timeout passes.
 * Return: as rdma_poll(), or -ETIMEDOUT (connection broken) instead of
 * -EINPROGRESS.
 * Thread-safety: the thread using @c (one at a time).
 */
int rdma_wait(struct rdma_conn *c);

/**
 * rdma_execute -- rdma_post() then rdma_wait(): one batch, one round trip.
 * Return: as rdma_post(), then as rdma_wait().
 * Thread-safety: the thread using @c (one at a time).
 */
int rdma_execute(struct rdma_conn *c, struct rdma_batch *b);

/**
 * rdma_local_fail -- fail (@failed nonzero) or restore (0) the device
 * behind the local: pool file @path, for every connection of this process:
 * the model of a memory node crashing on the local backend. While failed,
 * every post on a connection to it fails with RDMA_E_CONN (the connection
 * is then broken) and opening or reconnecting one fails with RDMA_E_CONN.
 * Once restored, connections open again and see the pool's contents as
 * the failure left them (a node restarted from its pool). Other processes
 * mapping the file are not affected.
 * Return: 0 (also when already in that state); -errno if @path cannot be
 * stat()ed; -EINVAL for NULL; -ENOMEM.
 * Thread-safety: any thread. Ordering: none; a batch racing the call may
 * run before or after the failure.
 */
int rdma_local_fail(const char *path, int failed);

/*
 * Per-thread transport counters. Each posted batch is charged to the
 * thread that posts it. round_trips counts batches that completed with one
 * exchange with the node (all of them, on every backend); wire_messages and
 * provider_ops show what that exchange really cost.
 */
struct rdma_stats {
	uint64_t batches;          /* batches posted (accepted by rdma_post) */
	uint64_t round_trips;      /* batches completed */
	uint64_t failed;           /* batches that completed with an error */
	uint64_t ops[RDMA_OP_NTYPES]; /* operations posted, by type */
	uint64_t bytes_read;       /* payload read */
	uint64_t bytes_written;    /* payload written */
	uint64_t shipped;          /* batches executed by the node (ofi) */
	uint64_t wire_messages;    /* messages the client sent for batches */
	uint64_t provider_ops;     /* RMA/atomic ops or work requests handed to
	                            * the provider or NIC */
};

/**
 * rdma_stats_read_thread -- the calling thread's counters into *@out.
 * The transport also adds to pm/cost.h (PM_COST_ROUND_TRIP, REMOTE_*), so
 * one pm_cost snapshot covers an operation end to end.
 * Thread-safety: any thread; reads its own counters.
 */
void rdma_stats_read_thread(struct rdma_stats *out);

/**
 * rdma_stats_diff -- @out = @after - @before, field by field (may alias).
 * Thread-safety: any thread; pure.
 */
void rdma_stats_diff(const struct rdma_stats *after,
	const struct rdma_stats *before, struct rdma_stats *out);

/**
 * rdma_signals_restore -- give SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGINT and
 * SIGTERM back their default disposition where a handler is installed.
 *
 * Why: Debian's libfabric depends on libinfinipath (PSM), whose constructor
 * runs in every process that links the transport and installs, for those
 * six signals, one handler that exits with status 1. The process then
 * cannot be told apart from one that failed: SIGTERM during a long start-up
 * and a crash both end in "exit 1", and a SIGINT its shell meant it to
 * ignore (a background job) ends it. Programs that care call this first in
 * main(), before installing handlers of their own; dmkv-node and dmkv do.
 * A disposition of SIG_IGN or SIG_DFL is left as it is; one the constructor
 * overwrote (SIG_IGN for SIGINT in a background job) cannot be recovered.
 * Return: 0; -errno from sigaction(2).
 * Thread-safety: before other threads exist (dispositions are process-wide).
 */
int rdma_signals_restore(void);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_RDMA_H */
