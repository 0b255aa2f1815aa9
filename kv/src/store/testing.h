/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/testing.h -- test hooks of the store, compiled only into the
 * testonly library //kv:kv_testing (KV_ST_TESTING).
 */
#ifndef KV_STORE_TESTING_H
#define KV_STORE_TESTING_H

#include <stdbool.h>

#include <kv/kv.h>
#include <rdma/rdma.h>

#include "rdma/src/testing.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * kv__st_test_no_verify -- with @on, the client's writes that take the
 * fast path leave their tuple GUESSED (no background VERIFY, no in-place
 * copy), as a writer that crashed right after S6 would: readers must
 * complete it (double read, READ lock, VERIFY: R15-R18).
 * Return: nothing (void). Thread-safety: the handle's thread.
 */
void kv__st_test_no_verify(struct kv_client *c, bool on);

/**
 * kv__st_test_inject_once -- make the client's store connection to member
 * @member suffer @fault (rdma_conn_inject) in the next round that begins,
 * and heal it in the round after (the index's connections are not
 * touched).
 * Return: 0; -EINVAL for a bad member.
 * Thread-safety: any thread.
 */
int kv__st_test_inject_once(struct kv_client *c, unsigned member, enum rdma_fault fault,
	uint32_t delay_us);

/**
 * kv__st_test_inject -- as kv__st_test_inject_once, from the next round on
 * until another call changes it (RDMA_FAULT_NONE heals it).
 * Return: 0; -EINVAL for a bad member.
 * Thread-safety: any thread.
 */
int kv__st_test_inject(struct kv_client *c, unsigned member, enum rdma_fault fault,
	uint32_t delay_us);

/**
 * kv__st_test_open -- kv_open() for a client whose waits for the nodes call
 * @yield(@arg) at every step (the hook the asynchronous API's lanes run
 * on), so a test can run other clients in the middle of one of its
 * operations. Return and ownership: as kv_open().
 * Thread-safety: as kv_open(); @yield runs on the client's thread.
 */
int kv__st_test_open(struct kv_client **out, const struct kv_config *cfg,
	void (*yield)(void *), void *arg);

/**
 * kv__st_test_write_back_hook -- call @hook(@arg) (NULL: none) on the
 * client's thread whenever a write-back has fetched the value it copies
 * and is about to write it to the members that lack it: the moment a slow
 * reader stalls before its late WRITE. With @unsafe, write-backs skip the
 * hazard word and the check that follows it (the planted bug of Spin's
 * kv/spin/m9.pml, MUT_NOHAZARD): a test must catch the late WRITE.
 * Return: nothing (void). Thread-safety: the handle's thread.
 */
void kv__st_test_write_back_hook(struct kv_client *c, void (*hook)(void *), void *arg,
	bool unsafe);

/**
 * kv__st_test_cache_forever -- with @on, the client uses a cached location
 * however long ago it was looked up: the planted bug against the reuse of
 * objects (objects.c; Spin kv/spin/m13.pml): a test must catch its writes
 * landing in an object reused for another key.
 * Return: nothing (void). Thread-safety: the handle's thread.
 */
void kv__st_test_cache_forever(struct kv_client *c, bool on);

/**
 * kv__st_test_reclaim -- free every retired buffer of the client that can
 * be freed now (kv__st_reclaim with waiting, twice: the buffers retired
 * after the last seal too).
 * Return: 0; KV_E_UNAVAILABLE. Thread-safety: the handle's thread.
 */
int kv__st_test_reclaim(struct kv_client *c);

/**
 * kv__st_test_index -- the client's index handle, for the index's test
 * hooks (kv/src/index/testing.h). Owned by @c.
 * Return: the handle. Thread-safety: any thread.
 */
struct kv_index *kv__st_test_index(struct kv_client *c);

/**
 * kv__st_test_set_timeout -- the client's operation timeout from now on,
 * for its store rounds and its index handle (opening needs a longer one
 * than the races a test provokes). At most the cluster's timeout.
 * Return: nothing (void). Thread-safety: the handle's thread.
 */
void kv__st_test_set_timeout(struct kv_client *c, unsigned timeout_ms);

/**
 * kv__st_test_abandon -- release *@cp and its connections without a word
 * to the nodes, as a client killed with SIGKILL leaves them: its id stays
 * claimed until the others find its lease run out. Sets *@cp to NULL.
 * Thread-safety: the handle's thread.
 */
void kv__st_test_abandon(struct kv_client **cp);

/**
 * kv__st_test_skip_renewal -- with @on, the client's operations start
 * without looking at their lease: what a client paused between its lease
 * check and the post it guards does. The fence must still stop every
 * post once the lease ran out. Thread-safety: the handle's thread.
 */
void kv__st_test_skip_renewal(struct kv_client *c, bool on);

/* The fault points of kv__st_test_crash_at(). */
enum kv_st_test_point {
	/* right after the client's next chunk claim wins (its object mark is
	 * never raised for that chunk) */
	KV_ST_TEST_AT_CLAIM = 1,
	/* right after it zeroed a dead object for an insert that takes it,
	 * before the insert creates anything there (the object is left
	 * zeroed and untaken) */
	KV_ST_TEST_AT_ZERO,
};

/**
 * kv__st_test_crash_at -- fault point: as kv__st_test_crash_after,
 * falling right after step @at of the client, the next time it runs.
 * Thread-safety: the handle's thread.
 */
void kv__st_test_crash_at(struct kv_client *c, enum kv_st_test_point at);

/**
 * kv__st_test_hold_unsure -- with @on, the client settles none of its
 * inserts of unknown outcome (objects.c), as when the index stays out of
 * its reach while its values do not: they wait, each keeping its insert
 * record. Thread-safety: the handle's thread.
 */
void kv__st_test_hold_unsure(struct kv_client *c, bool on);

/**
 * kv__st_test_no_grace -- with @on, the client reuses a dead object
 * without waiting the grace G (objects.c) for the locations other
 * clients cached: for a single-process crash test, whose leases are
 * hours long. Thread-safety: the handle's thread.
 */
void kv__st_test_no_grace(struct kv_client *c, bool on);

/**
 * kv__st_test_crash_after -- fault point: the client posts @posts more
 * batches (on its value and index connections; one per member of a
 * round), then nothing ever again, silently: the nodes hold what a client
 * killed at that point leaves. Its calls go on failing (KV_E_UNAVAILABLE)
 * without reaching a node; kv__st_test_abandon() then drops the handle.
 * UINT64_MAX counts posts without a crash (kv__st_test_posts_left).
 * Thread-safety: the handle's thread.
 */
void kv__st_test_crash_after(struct kv_client *c, uint64_t posts);

/**
 * kv__st_test_rebuild_no_values -- with @on, kv_rebuild() restores the
 * index and writes the store superblock, and copies nothing else: the
 * planted bug of a rebuild that lets a node vote with its words at zero
 * (kv_rebuild_test must catch it). Thread-safety: no rebuild running.
 */
void kv__st_test_rebuild_no_values(bool on);

/**
 * kv__st_test_posts_left -- the posts left before the fault point of
 * kv__st_test_crash_after(). Thread-safety: the handle's thread.
 */
uint64_t kv__st_test_posts_left(const struct kv_client *c);

#ifdef __cplusplus
}
#endif

#endif /* KV_STORE_TESTING_H */
