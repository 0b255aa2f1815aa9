/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/analyse.c -- the readers' decision rule (analyse.h), from the
 * FCP design's "analyse(R, j)" with Fast Paxos's definition of "chosen":
 *
 *   s* := the highest stage among the replies
 *   (i)   a C word of stage s*                      -> decided, its value
 *         (C words are written only once the decision is durable)
 *   (ii)  a P word of stage s* whose record is unknown -> read the records
 *   (iii) a value accepted at one classic ballot by a classic quorum
 *         (f+1; records are persistent before they are published) -> decided
 *   (iv)  a value fast-accepted by a fast quorum, read with a persist
 *                                                   -> decided
 *   (v)   every value fast-accepted by fewer than q_f - (n - |R|) replies
 *         and no classic acceptance                 -> not chosen when read:
 *         the value of stage s*-1 is current
 *   (vi)  otherwise                                 -> undetermined
 *
 * Why (v) is sound: a fast choice needs q_f ballot-0 acceptances, of which
 * at most n - |R| are outside the replies; a classic choice needs f+1
 * acceptances at one ballot, which intersect any f+1 replies. Both are
 * durable before anyone counts them and words never move down, so a choice
 * made before the read shows in it.
 */
#include <errno.h>
#include <string.h>

#include "kv/src/index/analyse.h"
#include "kv/src/index/word.h"

/* One value's acceptances among the replies. */
struct kv_ix_tally {
	uint64_t body;
	unsigned fast;
};

/* kv_ix_count_fast -- add a fast acceptance of @body to @t (@nt distinct
 * values so far) */
static void
kv_ix_count_fast(struct kv_ix_tally *t, unsigned *nt, uint64_t body)
{
	for (unsigned i = 0; i < *nt; i++) {
		if (t[i].body == body) {
			t[i].fast++;
			return;
		}
	}
	t[*nt].body = body;
	t[*nt].fast = 1;
	(*nt)++;
}

/* kv_ix_classic_decided -- whether f+1 replies accepted one value at one
 * classic ballot; the value in *@body */
static bool
kv_ix_classic_decided(const struct kv_ix_reply *const *at, unsigned nat, unsigned qc,
	uint64_t *body)
{
	for (unsigned i = 0; i < nat; i++) {
		unsigned same = 0;

		if (at[i]->acc < 2)
			continue;
		for (unsigned j = 0; j < nat; j++)
			same += at[j]->acc == at[i]->acc && at[j]->acc_body == at[i]->acc_body;
		if (same >= qc) {
			*body = at[i]->acc_body;
			return true;
		}
	}
	return false;
}

bool
kv__ix_reply_prev(const struct kv_ix_reply *r, unsigned s, uint64_t *body)
{
	uint64_t w = r->word;

	if (s == 0)
		return false;
	if (kv_ixw_tag(w) == KV_IXW_C && kv_ixw_stage(w) + 1 == s) {
		*body = w & KV_IXW_BODY_MASK;
		return true;
	}
	if (kv_ixw_stage(w) != s)
		return false;
	if (kv_ixw_tag(w) != KV_IXW_P)
		return kv_ixw_implied(w, body);
	if (!r->rec_known)
		return false;
	if (r->acc != KV_IX_ACC_NONE)
		return kv_ixw_implied(kv_ixw_make(KV_IXW_C, kv_ixw_gen(w), r->acc_body), body);
	if (kv_ixw_stage(r->acc_body) + 1 != s || !kv_ixw_body_valid(r->acc_body))
		return false;
	*body = r->acc_body;
	return true;
}

/* kv_ix_previous -- the decided value of stage @s - 1 as the replies show it */
static bool
kv_ix_previous(const struct kv_ix_reply *const *valid, unsigned nv, unsigned s, uint64_t *body)
{
	for (unsigned i = 0; i < nv; i++)
		if (kv__ix_reply_prev(valid[i], s, body))
			return true;
	return false;
}

int
kv__ix_analyse(const struct kv_ix_reply *r, unsigned nr, unsigned n, unsigned gen,
	bool persisted, struct kv_ix_analysis *out)
{
	const struct kv_ix_reply *valid[15], *at[15];
	struct kv_ix_tally tally[15];
	unsigned nv = 0, nat = 0, nt = 0, qc, qf, s = 0;
	bool classic = false;

	if (n == 0 || n > 15 || n % 2 == 0 || nr > n || out == NULL || (nr > 0 && r == NULL))
		return -EINVAL;
	qc = n / 2 + 1;
	qf = kv__ix_fast_quorum(n);
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < nr; i++) {
		if (!kv_ixw_valid(r[i].word, gen))
			continue;
		valid[nv++] = &r[i];
		if (kv_ixw_stage(r[i].word) > s)
			s = kv_ixw_stage(r[i].word);
	}
	out->members = nv;
	out->stage = s;
	if (nv < qc) {
		out->verdict = KV_IX_TOO_FEW;
		return 0;
	}
	/* The replies at stage s*; the rest lag and count as no acceptance. */
	for (unsigned i = 0; i < nv; i++) {
		uint64_t w = valid[i]->word;

		if (kv_ixw_stage(w) != s)
			continue;
		if (kv_ixw_tag(w) == KV_IXW_C) { /* (i) */
			out->verdict = KV_IX_DECIDED;
			out->body = w & KV_IXW_BODY_MASK;
			return 0;
		}
		at[nat++] = valid[i];
	}
	for (unsigned i = 0; i < nat; i++) {
		uint64_t w = at[i]->word;

		if (kv_ixw_tag(w) == KV_IXW_F) {
			kv_ix_count_fast(tally, &nt, w & KV_IXW_BODY_MASK);
		} else if (!at[i]->rec_known) { /* (ii) */
			out->verdict = KV_IX_NEED_RECORDS;
			return 0;
		} else if (at[i]->acc == KV_IX_ACC_FAST) {
			kv_ix_count_fast(tally, &nt, at[i]->acc_body);
		} else if (at[i]->acc >= 2) {
			classic = true;
		}
	}
	if (classic && kv_ix_classic_decided(at, nat, qc, &out->body)) { /* (iii) */
		out->verdict = KV_IX_DECIDED;
		return 0;
	}
	for (unsigned i = 0; i < nt; i++) {
		if (persisted && tally[i].fast >= qf) { /* (iv) */
			out->verdict = KV_IX_DECIDED;
			out->body = tally[i].body;
			return 0;
		}
	}
	if (!classic) { /* (v) */
		bool possible = false;

		for (unsigned i = 0; i < nt; i++)
			possible |= tally[i].fast + (n - nv) >= qf;
		if (!possible && s > 0 && kv_ix_previous(valid, nv, s, &out->body)) {
			out->verdict = KV_IX_NOT_CHOSEN;
			return 0;
		}
	}
	out->verdict = KV_IX_UNDETERMINED; /* (vi) */
	return 0;
}
