/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/testing.h -- test hooks of the store, compiled only into the
 * testonly library //kv:kv_testing (KV_ST_TESTING).
 */
#ifndef KV_STORE_TESTING_H
#define KV_STORE_TESTING_H

#include <stdbool.h>

#include <kv/kv.h>

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

#ifdef __cplusplus
}
#endif

#endif /* KV_STORE_TESTING_H */
