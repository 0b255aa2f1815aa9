/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/ycsb.h -- the YCSB core workloads as a request generator
 * for the dmkv benchmark driver (private to the tools and benchmarks; not
 * part of the kv library).
 *
 * Workloads (YCSB's core workload files; the store has no range scans, so
 * E is refused):
 *   A  50% read, 50% update               zipfian
 *   B  95% read,  5% update               zipfian
 *   C 100% read                           zipfian
 *   D  95% read,  5% insert               latest
 *   E  95% scan,  5% insert               not supported (-ENOTSUP)
 *   F  50% read, 50% read-modify-write    zipfian
 * Any workload may run with another request distribution instead.
 *
 * Records. The load phase inserts records 0 .. loaded-1; inserts of the
 * run phase take fresh ids from one shared counter, loaded, loaded+1, ...
 * (struct dmkv_ycsb_keyspace). The key of record id is "user" followed by
 * id's decimal digits, zero-padded to a fixed key size (dmkv_ycsb_key).
 *
 * Request distributions, for the ids of reads, updates and RMWs:
 *   zipfian  scrambled zipfian over the loaded records: a zipfian rank r
 *            in [0, loaded) (rank 0 the most popular, P(r) proportional
 *            to 1/(r+1)^theta), drawn by Gray et al.'s method ("Quickly
 *            generating billion-record synthetic databases", SIGMOD'94, as
 *            YCSB's ZipfianGenerator), then id = FNV-1a-64(r) mod loaded,
 *            so the popular records are spread over the key space. Hashing
 *            is not one-to-one: a record may receive several ranks and
 *            others none (about 1/e of them: 352 of 1000). Records
 *            inserted during the run are never drawn (YCSB's scrambled
 *            zipfian also fixes its item count before the run).
 *   uniform  uniform over the ids allocated so far, [0, next_id).
 *   latest   last - r, with last = next_id - 1 the newest allocated id and
 *            r an unscrambled zipfian rank over [0, loaded): the newest
 *            record is the most popular. The rank's range stays the loaded
 *            count while the key space grows (YCSB grows it), so only the
 *            newest `loaded` ids are ever drawn; last - r is never
 *            negative, as r < loaded <= last + 1.
 * "Allocated", not "acknowledged": an id counts as inserted once a thread
 * has taken it from next_id, before the thread's insert has completed. A
 * single thread inserts each id before its next request, so all its
 * requests name records that exist (unless an insert failed); with several
 * threads, a read (most likely under `latest`) can name an id whose insert
 * is still in flight on another thread, which the driver sees as a miss.
 *
 * Gray's method is exact for ranks 0 and 1 and approximate above (it
 * inverts a continuous approximation of the zipfian CDF): with n = 1000
 * and theta = 0.99 it gives ranks 0..9 together 0.398 of the draws where
 * the exact distribution gives 0.382, as YCSB's ZipfianGenerator does.
 *
 * Randomness: each generator has its own xoshiro256** stream, seeded by
 * splitmix64 from (seed, thread), so a run with the same seed, thread
 * count and request order per thread is reproducible (inserts interleave
 * across threads through next_id, so only a single-threaded D run is
 * reproducible id for id).
 *
 * Thread-safety: a keyspace is initialized before the threads start and
 * then shared (dmkv_ycsb_next uses next_id atomically); a generator
 * belongs to one thread. Nothing allocates, prints or aborts.
 */
#ifndef KV_TOOLS_DMKV_YCSB_H
#define KV_TOOLS_DMKV_YCSB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
/* The same 8-byte lock-free word as C's _Atomic uint64_t (C++23 makes
 * <stdatomic.h>'s _Atomic(T) this type). */
#include <atomic>
#else
#include <stdatomic.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Smallest key size: "user" and the 20 digits of UINT64_MAX. */
#define DMKV_YCSB_KEY_MIN 24u

enum dmkv_ycsb_op {
	DMKV_YCSB_READ,
	DMKV_YCSB_UPDATE,
	DMKV_YCSB_INSERT,
	DMKV_YCSB_RMW,    /* read the record, then write it back */
};

enum dmkv_ycsb_dist {
	DMKV_YCSB_ZIPFIAN,  /* scrambled zipfian over the loaded records */
	DMKV_YCSB_UNIFORM,  /* uniform over the allocated ids */
	DMKV_YCSB_LATEST,   /* zipfian back from the newest allocated id */
};

/* A workload: op proportions (each in [0, 1], summing to 1) and its
 * default request distribution. */
struct dmkv_ycsb_workload {
	char name;     /* 'A'..'F' for the core workloads */
	double read, update, insert, rmw;
	enum dmkv_ycsb_dist dist;
};

#ifdef __cplusplus
/* C++ -Wshadow says the function hides the struct's constructor; C
 * callers and C++ callers writing `struct dmkv_ycsb_workload` see both. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
/**
 * dmkv_ycsb_workload -- the core workload @letter ('A'..'F', either case)
 * into *@out (name upper case).
 * Return: 0; -ENOTSUP for E (scans); -EINVAL for any other letter or a
 * NULL @out (*@out unchanged).
 * Thread-safety: any thread; writes only *@out.
 */
int dmkv_ycsb_workload(char letter, struct dmkv_ycsb_workload *out);
#ifdef __cplusplus
#pragma GCC diagnostic pop
#endif

/* The records of a run, shared by its generators: ids 0..loaded-1 exist
 * after the load; next_id is the next id an insert takes. The rest are
 * the zipfian constants over loaded (Gray et al.), fixed at init. */
struct dmkv_ycsb_keyspace {
	uint64_t loaded;
#ifdef __cplusplus
	std::atomic<uint64_t> next_id;
	static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t) &&
			std::atomic<uint64_t>::is_always_lock_free,
		"next_id has C's layout");
#else
	_Atomic uint64_t next_id;
#endif
	double theta;
	double zetan;   /* zeta(loaded, theta) = sum of 1/i^theta, i = 1..loaded */
	double zeta2;   /* zeta(2, theta) = 1 + 1/2^theta */
	double alpha;   /* 1 / (1 - theta) */
	double eta;     /* (1 - (2/loaded)^(1-theta)) / (1 - zeta2/zetan) */
};

/**
 * dmkv_ycsb_keyspace_init -- set up @ks for @records loaded records
 * (next_id = @records) and zipfian constant @theta (YCSB's default 0.99).
 * Takes O(@records) time for zeta(n), about 0.15 s per 10^7 records.
 * Return: 0; -EINVAL for @records 0 or above 2^53 (ranks are computed in
 * double), or @theta not inside (0, 1) (@ks unchanged).
 * Thread-safety: before any generator uses @ks; writes only @ks.
 */
int dmkv_ycsb_keyspace_init(struct dmkv_ycsb_keyspace *ks, uint64_t records, double theta);

/**
 * dmkv_ycsb_zipf -- the zipfian rank in [0, ks->loaded) (0 the most popular;
 * Gray et al.'s method, the file comment) of a uniform @u in [0, 1): what
 * the generators draw, for callers with random streams of their own (the
 * C++ benchmarks' benchmarks/zipf.h).
 * Return: the rank. Thread-safety: reads @ks's constants only; any thread.
 */
uint64_t dmkv_ycsb_zipf(const struct dmkv_ycsb_keyspace *ks, double u);

/* One thread's request generator. */
struct dmkv_ycsb_gen {
	const struct dmkv_ycsb_workload *w;
	struct dmkv_ycsb_keyspace *ks;
	enum dmkv_ycsb_dist dist;
	uint64_t rng[4];    /* xoshiro256** state */
};

/**
 * dmkv_ycsb_gen_init -- set up @g to draw requests of workload @w with
 * request distribution @dist (w->dist for the workload's own) over @ks,
 * from the random stream of (@seed, @thread): equal pairs give equal
 * streams, different threads of one seed different ones. @w and @ks must
 * outlive @g.
 * Thread-safety: @g's thread; reads @w, keeps @ks.
 */
void dmkv_ycsb_gen_init(struct dmkv_ycsb_gen *g, const struct dmkv_ycsb_workload *w,
	enum dmkv_ycsb_dist dist, struct dmkv_ycsb_keyspace *ks, uint64_t seed,
	unsigned thread);

/* A request: the operation and its record. */
struct dmkv_ycsb_req {
	enum dmkv_ycsb_op op;
	uint64_t id;
};

/**
 * dmkv_ycsb_next -- draw the next request into *@out: the op by the
 * workload's proportions, then its record. An INSERT takes a fresh id
 * from ks->next_id (each id once across all threads); the other ops draw
 * an id by @g's distribution among the ids allocated so far (see above).
 * Thread-safety: @g's thread; generators of other threads may share the
 * keyspace. Ordering: next_id is taken and read relaxed: an id is a unique
 * ticket and publishes no data (the driver's insert of the record is what
 * another thread's read finds, or does not).
 */
void dmkv_ycsb_next(struct dmkv_ycsb_gen *g, struct dmkv_ycsb_req *out);

/**
 * dmkv_ycsb_rand -- 64 uniform random bits from @g's stream (the one
 * dmkv_ycsb_next draws from), for the caller's own choices (values).
 * Return: the bits.
 * Thread-safety: @g's thread.
 */
uint64_t dmkv_ycsb_rand(struct dmkv_ycsb_gen *g);

/**
 * dmkv_ycsb_key -- write the key of record @id into @buf: "user" and @id's
 * decimal digits, zero-padded to exactly @key_size bytes (no NUL).
 * Deterministic; distinct ids give distinct keys of one size.
 * Return: @key_size; 0 (nothing written) when @key_size is below
 * DMKV_YCSB_KEY_MIN.
 * Thread-safety: any thread; writes only @buf.
 */
size_t dmkv_ycsb_key(uint64_t id, size_t key_size, char *buf);

/**
 * dmkv_ycsb_key_id -- the record id of @key (@klen bytes), the inverse of
 * dmkv_ycsb_key: accepts exactly the keys it writes.
 * Return: 0 and the id in *@id; -EINVAL (*@id unchanged) when @klen is
 * below DMKV_YCSB_KEY_MIN, the key does not start with "user", has other
 * than decimal digits after it, or its number exceeds UINT64_MAX.
 * Thread-safety: any thread; writes only *@id.
 */
int dmkv_ycsb_key_id(const char *key, size_t klen, uint64_t *id);

#ifdef __cplusplus
}
#endif

#endif
