/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/paxos.h -- the pure parts of the index's classic rounds
 * (private to kv/; FCP design, "resolve(j, dflt)"): the 32-byte records a
 * P word publishes, and the value a resolver proposes after its promises.
 *
 * A record is written and persisted on a node before the CAS that
 * publishes it (in the same ordered batch), and never changed afterwards:
 * a later promise or acceptance writes a new record. Its checksum binds it
 * to the slot's address, so a record read through a stale or damaged P
 * word (a reused record index, memory that was never written) is detected
 * and treated as no answer.
 */
#ifndef KV_INDEX_PAXOS_H
#define KV_INDEX_PAXOS_H

#include <stdbool.h>
#include <stdint.h>

#include "kv/src/index/analyse.h"

/* A record as stored on a node (little-endian words, 32 bytes). */
struct kv_ix_rec {
	uint64_t promise;  /* the P word it belongs to, record index field 0 */
	uint64_t acc;      /* KV_IX_ACC_NONE, KV_IX_ACC_FAST, or classic ballot + 2 */
	uint64_t body;     /* the accepted value body (word.h); with no acceptance,
	                    * the decided value of the stage below, so a P word
	                    * never hides what its slot held (0 if unknown) */
	uint64_t sum;      /* XXH3-64 of the slot address and the words above */
};

/**
 * kv__ix_rec_seal -- fill @r for a promise at @p_word (a P word; its record
 * index is ignored) of the slot at node offset @slot_off, carrying the
 * acceptance (@acc, @body) the node had.
 * Return: nothing (void). Thread-safety: pure.
 */
void kv__ix_rec_seal(struct kv_ix_rec *r, uint64_t slot_off, uint64_t p_word, uint32_t acc,
	uint64_t body);

/**
 * kv__ix_rec_reply -- check record @r read through P word @p_word of the
 * slot at @slot_off and, if it is the record of that promise, fill @reply
 * (its word, rec_known, acc and acc_body).
 * Return: true if @r is intact and belongs to @p_word; false otherwise
 * (@reply untouched). Thread-safety: pure.
 */
bool kv__ix_rec_reply(const struct kv_ix_rec *r, uint64_t slot_off, uint64_t p_word,
	struct kv_ix_reply *reply);

/**
 * kv__ix_choose -- the value a resolver proposes in its accept phase, from
 * the acceptances its @nq promises reported (Fast Paxos's coordinator rule
 * for cardinality quorums): the value of the highest classic ballot if any;
 * else a value fast-accepted by at least q_f - (n - nq) of them (at most one
 * can be, for nq >= f+1); else @dflt.
 * @q: the promising members' replies for the stage being resolved: F words
 *     (a fast acceptance), P words with rec_known (their record's
 *     acceptance), or C words of the previous stage (no acceptance).
 * Return: 0 and *@out set; -EINVAL if @n is not odd in 1..15 or @nq is
 * below f+1 or above @n. Thread-safety: pure.
 */
int kv__ix_choose(const struct kv_ix_reply *q, unsigned nq, unsigned n, uint64_t dflt,
	uint64_t *out);

#endif /* KV_INDEX_PAXOS_H */
