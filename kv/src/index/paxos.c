/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/paxos.c -- records and the coordinator's value rule
 * (paxos.h).
 *
 * Why the rule is safe (Fast Paxos, cardinality quorums with
 * q_c + 2 q_f > 2n): if a value v was chosen at a lower ballot, every
 * promise quorum Q (|Q| >= q_c) reports it. A classic choice at ballot b
 * put v in f+1 records of ballot b, which intersect Q, and every classic
 * acceptance above b is of v too, so the highest classic ballot in Q
 * carries v. A fast choice had q_f acceptors accept v in ballot 0; at
 * least q_f - (n - |Q|) of them are in Q, and no other value can reach
 * that count in Q, because two values would need more than |Q| members.
 * Acceptors do not lose acceptances: a P word's record carries the
 * acceptance the word it replaced held.
 */
#include <errno.h>
#include <stddef.h>

#include <xxhash.h>

#include "kv/src/index/paxos.h"
#include "kv/src/index/word.h"

/* kv_ix_rec_sum -- the checksum of @r's first three words and @slot_off */
static uint64_t
kv_ix_rec_sum(const struct kv_ix_rec *r, uint64_t slot_off)
{
	uint64_t w[4] = { slot_off, r->promise, r->acc, r->body };

	return XXH3_64bits(w, sizeof(w));
}

/* kv_ix_promise_key -- @p_word without its record index: what a record
 * names, since the record's own index is only known once it is allocated */
static uint64_t
kv_ix_promise_key(uint64_t p_word)
{
	return p_word & ~KV_IXW_MASK(KV_IXW_REC_BITS);
}

void
kv__ix_rec_seal(struct kv_ix_rec *r, uint64_t slot_off, uint64_t p_word, uint32_t acc,
	uint64_t body)
{
	r->promise = kv_ix_promise_key(p_word);
	r->acc = acc;
	r->body = body & KV_IXW_BODY_MASK;
	r->sum = kv_ix_rec_sum(r, slot_off);
}

bool
kv__ix_rec_reply(const struct kv_ix_rec *r, uint64_t slot_off, uint64_t p_word,
	struct kv_ix_reply *reply)
{
	if (r->sum != kv_ix_rec_sum(r, slot_off) || r->promise != kv_ix_promise_key(p_word))
		return false;
	if (r->acc > UINT32_MAX || (r->body != 0 && !kv_ixw_body_valid(r->body)))
		return false;
	reply->word = p_word;
	reply->rec_known = true;
	reply->acc = (uint32_t)r->acc;
	reply->acc_body = r->body;
	return true;
}

int
kv__ix_choose(const struct kv_ix_reply *q, unsigned nq, unsigned n, uint64_t dflt,
	uint64_t *out)
{
	uint32_t best_ballot = 0;
	uint64_t best = 0;
	bool classic = false;
	unsigned qf;

	if (n == 0 || n > 15 || n % 2 == 0 || nq < n / 2 + 1 || nq > n || q == NULL || out == NULL)
		return -EINVAL;
	qf = kv__ix_fast_quorum(n);
	for (unsigned i = 0; i < nq; i++) {
		if (kv_ixw_tag(q[i].word) == KV_IXW_P && q[i].rec_known && q[i].acc >= 2 &&
		    (!classic || q[i].acc - 2 > best_ballot)) {
			classic = true;
			best_ballot = q[i].acc - 2;
			best = q[i].acc_body;
		}
	}
	if (classic) {
		*out = best;
		return 0;
	}
	for (unsigned i = 0; i < nq; i++) {
		uint64_t v;
		unsigned same = 0;

		if (kv_ixw_tag(q[i].word) == KV_IXW_F)
			v = q[i].word & KV_IXW_BODY_MASK;
		else if (kv_ixw_tag(q[i].word) == KV_IXW_P && q[i].rec_known &&
			 q[i].acc == KV_IX_ACC_FAST)
			v = q[i].acc_body;
		else
			continue;
		for (unsigned j = 0; j < nq; j++) {
			if (kv_ixw_tag(q[j].word) == KV_IXW_F)
				same += (q[j].word & KV_IXW_BODY_MASK) == v;
			else if (kv_ixw_tag(q[j].word) == KV_IXW_P && q[j].rec_known &&
				 q[j].acc == KV_IX_ACC_FAST)
				same += q[j].acc_body == v;
		}
		if (same + (n - nq) >= qf) {
			*out = v;
			return 0;
		}
	}
	*out = dflt & KV_IXW_BODY_MASK;
	return 0;
}
