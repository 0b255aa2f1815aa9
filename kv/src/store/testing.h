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
 * kv__st_test_open -- kv_open() for a client whose waits for the nodes call
 * @yield(@arg) at every step (the hook the asynchronous API's lanes run
 * on), so a test can run other clients in the middle of one of its
 * operations. Return and ownership: as kv_open().
 * Thread-safety: as kv_open(); @yield runs on the client's thread.
 */
int kv__st_test_open(struct kv_client **out, const struct kv_config *cfg,
	void (*yield)(void *), void *arg);

/**
 * kv__st_test_index -- the client's index handle, for the index's test
 * hooks (kv/src/index/testing.h). Owned by @c.
 * Return: the handle. Thread-safety: any thread.
 */
struct kv_index *kv__st_test_index(struct kv_client *c);

#ifdef __cplusplus
}
#endif

#endif /* KV_STORE_TESTING_H */
