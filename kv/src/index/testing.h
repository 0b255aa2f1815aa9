/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/testing.h -- test hooks of the index, compiled only into the
 * testonly library //kv:index_testing (KV_IX_TESTING).
 */
#ifndef KV_INDEX_TESTING_H
#define KV_INDEX_TESTING_H

#include <stdbool.h>

#include <kv/index.h>

#include "rdma/src/testing.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * kv__ix_test_inject -- make the handle's connection to member @member
 * suffer @fault (rdma_conn_inject) from its next round on, until another
 * call changes it; RDMA_FAULT_NONE heals it (a partitioned member comes
 * back after the connection timeout, when it is reconnected).
 * Return: 0; -EINVAL for a bad member.
 * Thread-safety: the handle's thread.
 */
int kv__ix_test_inject(struct kv_index *ix, unsigned member, enum rdma_fault fault,
	uint32_t delay_us);

/**
 * kv__ix_test_inject_once -- as kv__ix_test_inject, for the next round
 * that begins only: the round after heals it.
 * Return: 0; -EINVAL for a bad member.
 * Thread-safety: any thread.
 */
int kv__ix_test_inject_once(struct kv_index *ix, unsigned member, enum rdma_fault fault,
	uint32_t delay_us);

/**
 * kv__ix_test_set_timeout -- the handle's operation timeout from now on
 * (opening needs a longer one than the races a test provokes).
 * Return: nothing (void). Thread-safety: the handle's thread.
 */
void kv__ix_test_set_timeout(struct kv_index *ix, unsigned timeout_ms);

/**
 * kv__ix_test_caught_up -- whether a member came back since the handle
 * opened and the handle has walked the whole tree since the last return
 * (ix_catch_up in index.c).
 * Return: true or false. Thread-safety: the handle's thread.
 */
bool kv__ix_test_caught_up(const struct kv_index *ix);

/**
 * kv__ix_test_word_off -- the node offset of word @word (0..15) of bucket
 * @bucket, for tests that damage or inspect words in a node's region.
 * Return: the offset. Thread-safety: the handle's thread.
 */
uint64_t kv__ix_test_word_off(const struct kv_index *ix, uint64_t bucket, unsigned word);

/**
 * kv__ix_test_format_blank -- what a rebuild must not be: make the index
 * region at @region (a node whose pool was lost) look like an empty member
 * at position @member, with the superblock of @other (another member's
 * region) and an empty root, so clients count it at once.
 * Return: 0. Thread-safety: nothing else may use the regions.
 */
int kv__ix_test_format_blank(void *region, const void *other, unsigned member);

/**
 * kv__ix_test_no_commit -- with @on, the handle posts no commits (the
 * background CASes to C words, kv/DESIGN.md "Commit"), as a client whose
 * commits have not landed when a crash comes: over RDMA an operation
 * returns before its commit does, so what it returned on must be durable
 * by the persists of its fast or classic rounds alone. On local: the
 * commit runs at post and would hide their loss.
 * Return: nothing (void). Thread-safety: the handle's thread.
 */
void kv__ix_test_no_commit(struct kv_index *ix, bool on);

/**
 * kv__ix_test_stop_in_fast -- the handle's next fast round reaches only the
 * members in the bit mask @members (their CAS and persist run; the others
 * get nothing) and its operation then returns KV_E_UNAVAILABLE, leaving
 * what a client that died in that round would leave (kv_index_abandon).
 * Return: nothing (void).
 * Thread-safety: the handle's thread.
 */
void kv__ix_test_stop_in_fast(struct kv_index *ix, unsigned members);

/**
 * kv__ix_test_before_resolve -- the handle's next classic round
 * (kv__ix_resolve) first calls @fn(@arg), once, before its first post: a
 * test runs another client's steps there, between the handle's last read
 * of the bucket and its rounds on it.
 * Return: nothing (void). Thread-safety: the handle's thread (@fn runs on
 * it).
 */
void kv__ix_test_before_resolve(struct kv_index *ix, void (*fn)(void *arg), void *arg);

/**
 * kv__ix_test_no_compaction -- with @on, the handle never compacts a
 * bucket in place: a full bucket splits, or fails with -ENOSPC where its
 * children would not fit (the index before compaction, for the test that
 * shows what compaction bounds). Buckets it meets halfway compacted are
 * still finished.
 * Return: nothing (void). Thread-safety: the handle's thread.
 */
void kv__ix_test_no_compaction(struct kv_index *ix, bool on);

/**
 * kv__ix_test_offline -- what a client reading every member would conclude
 * about the mapping (@key -> @loc), computed from the raw index regions of
 * the @n members at @regions (a crash image): walk from the root through
 * chosen forward words and apply the decision rule to every slot of the
 * key's bucket.
 * @present: slots whose current value maps the key to @loc (decided, or
 *           not superseded at the read, or an undecided stage between
 *           values that all map it, as a freeze of the mapping)
 * @maybe:   slots where that depends on an undecided stage
 * Return: 0; PM_E_CORRUPT if the superblocks or the root are not valid.
 * Thread-safety: pure; reads the regions.
 */
int kv__ix_test_offline(void *const *regions, unsigned n, const void *key, size_t len,
	uint64_t loc, unsigned *present, unsigned *maybe);

#ifdef __cplusplus
}
#endif

#endif /* KV_INDEX_TESTING_H */
