/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/pool.h -- persistent pools: a PMDK libpmemobj pool with a versioned,
 * typed root object, registered with pm/persist.h under a durability mode.
 *
 * Layout. The pmemobj root object starts with a 64-byte pm header -- a
 * pm/area.h header (magic, the caller's layout version, checksum) and the
 * root size -- followed by the caller's root object.
 *
 * Creation is atomic. pm_pool_create() builds the pool under a temporary
 * name, PATH.creating, writes the header, lets the caller format its root
 * (pm_pool_config.format), and only then gives the file its name with a
 * rename that never replaces an existing file, followed by an fsync of the
 * directory. A create interrupted at any point (SIGKILL, SIGTERM, power
 * loss) therefore leaves no file at PATH, only PATH.creating, which the next
 * pm_pool_create() of PATH removes, unless a live create holds it: a create
 * keeps an OFD record lock (fcntl F_OFD_SETLK) on PATH.creating from the
 * moment the file has that name. The header is still written last, so a
 * file that lost its header some other way is reported as corrupt.
 *
 * Untrusted files. PMDK crashes (SIGSEGV/SIGBUS) on some damaged pools and on
 * empty files, and loops forever on others. pm_pool_open() therefore first
 * runs pmemobj_check() and a trial open in a forked child with a time limit;
 * a child that dies or runs out of time turns into PM_E_CORRUPT, so opening
 * never crashes or hangs the caller. The calling process enforces the limit
 * (it kills and reaps the child on expiry), so it holds whatever the
 * caller's signal mask and dispositions are; pm_pool_open() installs no
 * signal handler and waits only for its own child, so a SIGCHLD handler or
 * an ignored SIGCHLD in the caller does not disturb it. PM_POOL_TRUSTED
 * skips that check for large pools whose provenance is known.
 *
 * Multi-threaded callers. The check child is forked without exec and calls
 * PMDK, malloc and stdio, none of which is async-signal-safe. If another
 * thread of the caller holds a lock inside one of them at the moment of the
 * fork (malloc's arena lock, a PMDK-internal lock, stdio's), the child
 * inherits that lock held by a thread that does not exist in it and
 * deadlocks. The parent's time limit then turns the deadlock into
 * PM_E_CORRUPT after check_timeout_s, for a pool that is in fact sound (with
 * check_timeout_s 0 the open hangs). To avoid it, open untrusted pools before
 * starting other threads, or pass PM_POOL_TRUSTED for pools of known origin.
 *
 * Persistence of the caller's data is the caller's business: use
 * pm/persist.h on pointers into the pool; the pool is registered as a region
 * with the durability mode reported by pm_pool_durability().
 */
#ifndef PM_POOL_H
#define PM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <pm/persist.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pm_pool;
struct pmemobjpool; /* PMDK's PMEMobjpool */

/* Pool size used when pm_pool_config.pool_size is 0. */
#define PM_POOL_DEFAULT_SIZE ((size_t)64 << 20)
/* Smallest pool PMDK accepts (PMEMOBJ_MIN_POOL). */
#define PM_POOL_MIN_SIZE ((size_t)8 << 20)
/* Longest layout name, excluding the terminating NUL. */
#define PM_POOL_LAYOUT_MAX 1023

/* Appended to the path of a pool being created (see "Creation is atomic"). */
#define PM_POOL_CREATING_SUFFIX ".creating"

/* Skip the isolated pmemobj_check() at open: faster for large pools, but a
 * damaged pool may then crash the process inside PMDK. */
#define PM_POOL_TRUSTED (1u << 0)

struct pm_pool_config {
	const char *path;    /* pool file; required */
	const char *layout;  /* PMDK layout name; required, 1..PM_POOL_LAYOUT_MAX chars */
	uint32_t version;    /* layout version the caller reads and writes; default 1 */
	size_t root_size;    /* size of the caller's root object; default 0 */
	size_t pool_size;    /* create only; default PM_POOL_DEFAULT_SIZE */
	enum pm_durability durability; /* default PM_DURABILITY_AUTO */
	unsigned flags;      /* PM_POOL_*; default 0 */
	unsigned file_mode;  /* create only; default 0600 */
	unsigned check_timeout_s; /* open: limit in seconds for the isolated check;
				   * default 60, 0 = none (a hung check then hangs the open) */
	/* create only: formats the caller's root (zeroed, header written) on
	 * the pool before it appears at path; its non-zero return fails the
	 * create with that code. Default NULL: the root stays zeroed. */
	int (*format)(struct pm_pool *pool, void *ctx);
	void *format_ctx;    /* passed to format */
};

/**
 * pm_pool_config_init -- fill @cfg with the defaults documented above
 * (path and layout NULL: the caller must set them).
 * Thread-safety: any thread; writes only @cfg.
 */
void pm_pool_config_init(struct pm_pool_config *cfg);

/**
 * pm_pool_create -- create a new pool file and open it.
 * @out: receives the pool; owned by the caller, released by pm_pool_close().
 *
 * The root object is zeroed (then formatted by @cfg->format, if set) and the
 * pool is durable at @cfg->path on return; until then it exists only as
 * PATH.creating (see "Creation is atomic" above), so whatever @cfg->format
 * writes must be persisted by it before it returns.
 * Return: 0; -EINVAL for a bad config (missing path or layout, layout too
 * long, pool_size below PM_POOL_MIN_SIZE); -EEXIST if @cfg->path exists
 * (also when another process created it meanwhile); -EBUSY if another
 * process is creating it (PATH.creating is open there); -ENOMEM if the root
 * object does not fit; PM_E_NOT_PMEM if PMEM durability was requested on a
 * non-pmem mapping; @cfg->format's error; other -errno from the file system.
 * On failure no file is left behind (a stale PATH.creating is gone too) and
 * *@out is unchanged.
 * Thread-safety: any thread; pools are independent. Two processes creating
 * the same path: at most one succeeds.
 */
int pm_pool_create(struct pm_pool **out, const struct pm_pool_config *cfg);

/**
 * pm_pool_open -- open an existing pool, validating it first.
 * @out: receives the pool; owned by the caller, released by pm_pool_close().
 *
 * PMDK recovers interrupted PMDK transactions and allocations during open.
 * Return: 0; -ENOENT if the file is missing; -EINVAL for a bad config;
 * PM_E_CORRUPT if the file is not a pool or is damaged (including damage
 * on which PMDK crashes, or hangs past @cfg->check_timeout_s, and a check
 * child deadlocked by the fork as described under "Multi-threaded callers"
 * above); PM_E_LAYOUT if the pool has another layout name or root size;
 * PM_E_VERSION if its layout version differs from @cfg->version; -EBUSY if
 * the pool is open elsewhere; PM_E_NOT_PMEM as for create; other -errno.
 * pm_errormsg() gives details. On failure *@out is unchanged.
 * Thread-safety: any thread, with the fork hazard described under
 * "Multi-threaded callers" above unless PM_POOL_TRUSTED is set. A pool file
 * may be open once at a time.
 */
int pm_pool_open(struct pm_pool **out, const struct pm_pool_config *cfg);

/**
 * pm_pool_check -- validate a closed pool as pm_pool_open() would, without
 * keeping it open (it is opened and closed, so PMDK recovery runs).
 * Return: 0 if the pool would open; otherwise what pm_pool_open() returns.
 * Thread-safety: any thread; the pool must not be open.
 */
int pm_pool_check(const struct pm_pool_config *cfg);

/**
 * pm_pool_close -- unregister and unmap the pool, set *@pool to NULL.
 *
 * Accepts NULL and a pointer to NULL. Stores already made durable stay
 * durable; stores not yet persisted may or may not be.
 * Return: 0; -EIO if an msync of the pool failed while it was open (some
 * data may not be durable); the pool is closed in either case.
 * Thread-safety: no other thread may use the pool during or after the call.
 */
int pm_pool_close(struct pm_pool **pool);

/**
 * pm_pool_root -- the caller's root object (root_size bytes, 64-byte aligned).
 * Thread-safety: any thread. The pointer is valid until pm_pool_close().
 * Return: the root object's address.
 */
void *pm_pool_root(const struct pm_pool *pool);

/* PM_POOL_ROOT -- the root object as a @type pointer. */
#define PM_POOL_ROOT(pool, type) ((type *)pm_pool_root(pool))

/* pm_pool_root_size -- the root object size recorded at creation.
 * Return: the root object's size in bytes.
 * Thread-safety: any thread, while @pool is open.
 */
size_t pm_pool_root_size(const struct pm_pool *pool);

/* pm_pool_version -- the layout version recorded at creation.
 * Return: the layout version.
 * Thread-safety: any thread, while @pool is open.
 */
uint32_t pm_pool_version(const struct pm_pool *pool);

/* pm_pool_durability -- the mode granted at open (never AUTO).
 * Return: the mode granted at open.
 * Thread-safety: any thread, while @pool is open.
 */
enum pm_durability pm_pool_durability(const struct pm_pool *pool);

/* pm_pool_base -- start of the pool's mapping: offsets are relative to it.
 * Return: the mapping's base address.
 * Thread-safety: any thread, while @pool is open.
 */
void *pm_pool_base(const struct pm_pool *pool);

/* pm_pool_size -- length of the pool's mapping in bytes.
 * Return: the mapping's size in bytes.
 * Thread-safety: any thread, while @pool is open.
 */
size_t pm_pool_size(const struct pm_pool *pool);

/**
 * pm_pool_off -- the pool-relative offset of @ptr (PM_OFF_NULL for NULL).
 * @ptr must point into the pool. Thread-safety: any thread.
 * Return: the offset (see above for pointers outside the pool).
 */
uint64_t pm_pool_off(const struct pm_pool *pool, const void *ptr);

/**
 * pm_pool_ptr -- checked conversion of an offset read from persistent data.
 * @out: receives the address of [@off, @off + @len) in this run's mapping.
 *
 * Return: 0; -ERANGE if @off is PM_OFF_NULL or the range leaves the pool.
 * Thread-safety: any thread.
 */
int pm_pool_ptr(const struct pm_pool *pool, uint64_t off, size_t len, void **out);

/**
 * pm_pool_area -- locate the area a module's persistent object occupies:
 * @len bytes at @off, which must be a multiple of @align (a power of two).
 * @who: the calling function or module, for the message ("mcas").
 * @out: receives the area's address in this run's mapping.
 *
 * What mcas, onll, dll and bztree check at create and open before they read
 * or format an area (its header then goes through pm/area.h).
 * Return: 0; -EINVAL if @off is misaligned; -ERANGE if the area leaves the
 * pool; a message in pm_errormsg() ("@who: ...") on failure.
 * Thread-safety: any thread.
 */
int pm_pool_area(const struct pm_pool *pool, uint64_t off, size_t len, size_t align,
	const char *who, void **out);

/**
 * pm_pool_alloc -- allocate @size zeroed bytes with PMDK's allocator.
 * @type_num: PMDK type number, for finding objects with pmemobj_first/next.
 * @off: receives the object's offset.
 *
 * For setup and large allocations, not for crash-tested operations (the
 * crash simulator cannot see PMDK's internal flushes). The object is durable
 * but not linked anywhere: a crash before the caller persists @off somewhere
 * leaves it reachable only through the type walk.
 * Return: 0; -ENOMEM; -EINVAL for @size 0.
 * Thread-safety: any thread (PMDK's allocator is thread-safe).
 */
int pm_pool_alloc(struct pm_pool *pool, size_t size, uint64_t type_num, uint64_t *off);

/**
 * pm_pool_free -- free an object from pm_pool_alloc() at offset @off.
 * Return: 0; -ERANGE if @off is not inside the pool.
 * Thread-safety: any thread; the object must not be used afterwards.
 */
int pm_pool_free(struct pm_pool *pool, uint64_t off);

/* pm_pool_pmemobj -- the underlying PMDK pool, for PMDK calls pm does not wrap.
 * Return: the libpmemobj handle.
 * Thread-safety: any thread, while @pool is open.
 */
struct pmemobjpool *pm_pool_pmemobj(const struct pm_pool *pool);

#ifdef __cplusplus
}
#endif

#endif /* PM_POOL_H */
