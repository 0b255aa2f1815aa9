/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/slot.c -- reading a bucket from the group and the per-word
 * consensus steps: the fast round, the classic round (resolve) and the
 * commit (index_internal.h; kv/DESIGN.md "Index", the FCP design study
 * sections 4.4-4.5: "insert", "resolve(j, dflt)").
 *
 * Durability rule, kept by every batch here: a CAS a client will count is
 * followed by a persist of its word in the same ordered batch, and a record
 * is written and persisted before the CAS that publishes it; a client
 * counts a CAS only once its batch completed.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <pm/error.h>

#include "kv/src/index/index_internal.h"

int
kv__ix_deadline_check(struct kv_index *ix)
{
	if (kv__ix_now_ns() < ix->deadline)
		return 0;
	return pm_error_set(KV_E_UNAVAILABLE,
		"kv_index: fewer than %u of %u nodes answered within %u ms", ix->g.f + 1, ix->g.n,
		ix->timeout_ms);
}

/* Sleep a random time that grows with @attempt (duelling resolvers, a
 * quorum that is not back yet). */
static void
ix_backoff(struct kv_index *ix, unsigned attempt)
{
	uint64_t cap = 20000u << (attempt < 8 ? attempt : 8); /* ns */

	ix->rng ^= ix->rng << 13;
	ix->rng ^= ix->rng >> 7;
	ix->rng ^= ix->rng << 17;
	kv__ix_sleep(&ix->g, ix->rng % cap);
}

static uint64_t
word_off(const struct kv_index *ix, uint64_t idx, unsigned word)
{
	return kv_ixb_off(&ix->g.super, idx, word);
}

int
kv__ix_view_records(struct kv_index *ix, struct kv_ix_view *v)
{
	struct kv_ix_group *g = &ix->g;
	unsigned mask, want = 0, ok;
	unsigned char slotof[KV_IX_MAX_N][KV_IXB_WORDS];

	mask = kv__ix_round_begin(g);
	for (unsigned i = 0; i < g->n; i++) {
		unsigned k = 0;

		if (!(v->got >> i & 1))
			continue;
		for (unsigned w = KV_IXB_H1; w < KV_IXB_WORDS; w++) {
			uint64_t p = v->w[i][w];

			if (kv_ixw_tag(p) != KV_IXW_P || v->rec_known[i][w] ||
				!kv_ixw_valid(p, v->gen))
				continue;
			if (!(mask >> i & 1) ||
				rdma_batch_read(&g->m[i].batch, g->region,
					kv_ix_rec_off(&g->super, kv_ixw_rec(p)),
					g->m[i].buf + k * KV_IX_REC_SIZE, KV_IX_REC_SIZE) != 0 ||
				(uint64_t)kv_ixw_rec(p) >=
					(uint64_t)g->super.max_clients * g->super.recs_per_client) {
				/* Not readable now: this member's word is no answer. */
				v->w[i][w] = 0;
				continue;
			}
			slotof[i][k++] = (unsigned char)w;
		}
		if (k > 0)
			want |= 1u << i;
		slotof[i][k] = 0;
	}
	if (want == 0)
		return 0;
	ok = kv__ix_round_run(g, want, (unsigned)__builtin_popcount(want), ix->deadline);
	ix->st.rounds++;
	for (unsigned i = 0; i < g->n; i++) {
		if (!(want >> i & 1))
			continue;
		for (unsigned k = 0; slotof[i][k] != 0; k++) {
			unsigned w = slotof[i][k];
			struct kv_ix_rec r;

			memcpy(&r, g->m[i].buf + k * KV_IX_REC_SIZE, sizeof(r));
			if ((ok >> i & 1) &&
				kv__ix_rec_reply(&r, word_off(ix, v->idx, w), v->w[i][w],
					&v->rep[i][w])) {
				v->rec_known[i][w] = true;
			} else {
				ix->st.bad_words += (ok >> i & 1);
				v->w[i][w] = 0;
			}
		}
	}
	return 0;
}

/* The first f+1 members of @mask counting from @start, cyclically. */
static unsigned
quorum_of(const struct kv_ix_group *g, unsigned mask, unsigned start)
{
	unsigned q = 0, k = 0;

	for (unsigned j = 0; j < g->n && k < g->f + 1; j++) {
		unsigned i = (start + j) % g->n;

		if (mask >> i & 1) {
			q |= 1u << i;
			k++;
		}
	}
	return q;
}

unsigned
kv__ix_view_classify(struct kv_ix_view *v, unsigned n, unsigned f)
{
	uint32_t ep[KV_IX_MAX_N];
	unsigned live = 0, bad = 0, best = 0;
	bool quorum = false;

	for (unsigned i = 0; i < n; i++) {
		bool pending;

		if (!(v->answered >> i & 1) || v->w[i][KV_IXB_H0] == 0)
			continue;
		if (!kv_ixb_h0_parse(v->w[i][KV_IXB_H0], v->idx, &ep[i], &pending))
			bad++;
		else if (pending)
			v->pending |= 1u << i;
		else
			live |= 1u << i;
	}
	/* f+1 members live at one epoch: that incarnation is the bucket's
	 * (two epochs cannot both have f+1 of 2f+1). Else a compaction is
	 * installing the next one: the newest is the bucket's, and its
	 * members' words are decided values (nothing runs on fewer than
	 * f+1), which the others are brought up to (kv__ix_repair). */
	for (unsigned i = 0; i < n && !quorum; i++) {
		unsigned same = 0;

		if (!(live >> i & 1))
			continue;
		for (unsigned j = 0; j < n; j++)
			same += (live >> j & 1) && ep[j] == ep[i];
		if (same >= f + 1) {
			best = i;
			quorum = true;
		} else if (!(live >> best & 1) || kv_ix_epoch_newer(ep[i], ep[best])) {
			best = i;
		}
	}
	if (live != 0) {
		v->epoch = ep[best];
		v->gen = kv_ix_epoch_gen(v->epoch);
	}
	/* A member ahead (the next incarnation is being installed while f+1
	 * still hold this one) is left alone: it lacks nothing. */
	for (unsigned i = 0; i < n; i++) {
		if (!(v->answered >> i & 1) || (v->pending >> i & 1))
			continue;
		if ((live >> i & 1) && ep[i] == v->epoch)
			v->got |= 1u << i;
		else if (!(live >> i & 1))
			v->lack |= 1u << i;
		else if (kv_ix_epoch_newer(v->epoch, ep[i]))
			v->behind |= 1u << i;
	}
	v->lack |= v->behind;
	return bad;
}

/* Read bucket @idx: from every usable member, each read persisted, or
 * (@quorum, a lookup's first read) from f+1 of them on the first attempt
 * and without the persists -- enough for the decision rule, and a third
 * less work for lookups on the local backend, where the client itself does
 * every member's copy and flush (the persist of a read bucket was an
 * eighth of a lookup there). Without the persist, fast-round words decide
 * nothing (rule iv, @v->persisted false); committed words, classic
 * acceptances and "not chosen" need none: a C word is written only once
 * its decision is durable on a quorum, a record before its P word, and a
 * choice made before the read is durable where the read sees it (kv/spin
 * m6: the lookup's READ with or without PERSIST). The round waits for
 * @need replies (and the grace after them). */
static int
view_read(struct kv_index *ix, uint64_t idx, struct kv_ix_view *v, bool quorum, unsigned need)
{
	struct kv_ix_group *g = &ix->g;
	uint64_t off = word_off(ix, idx, 0);
	bool has_p = false;

	for (unsigned attempt = 0;; attempt++) {
		unsigned mask, ok;
		int ret;

		mask = kv__ix_round_begin(g);
		if (quorum && attempt == 0)
			mask = quorum_of(g, mask, ix->cid + (unsigned)ix->st.ops);
		for (unsigned i = 0; i < g->n; i++) {
			if (!(mask >> i & 1))
				continue;
			/* The persist makes what was read durable before the
			 * reply, so fast-round words may be counted (rule iv). */
			if (rdma_batch_read(&g->m[i].batch, g->region, off, g->m[i].buf,
				    KV_IXB_SIZE) != 0 ||
				(!quorum &&
					rdma_batch_persist(&g->m[i].batch, g->region, off,
						KV_IXB_SIZE) != 0))
				mask &= ~(1u << i);
		}
		ok = kv__ix_round_run(g, mask, need, ix->deadline);
		ix->st.rounds++;
		if ((unsigned)__builtin_popcount(ok) >= g->f + 1) {
			kv__ix_view_reset(v, idx, g->n);
			v->persisted = !quorum;
			v->answered = ok;
			for (unsigned i = 0; i < g->n; i++)
				if (ok >> i & 1)
					memcpy(v->w[i], g->m[i].buf, KV_IXB_SIZE);
			ix->st.bad_words += kv__ix_view_classify(v, g->n, g->f);
			break;
		}
		ret = kv__ix_deadline_check(ix);
		if (ret != 0)
			return ret;
		ix_backoff(ix, attempt);
	}
	for (unsigned i = 0; i < g->n; i++)
		for (unsigned w = KV_IXB_H1; w < KV_IXB_WORDS; w++)
			has_p |= (v->got >> i & 1) && kv_ixw_tag(v->w[i][w]) == KV_IXW_P;
	return has_p ? kv__ix_view_records(ix, v) : 0;
}

int
kv__ix_view_read(struct kv_index *ix, uint64_t idx, struct kv_ix_view *v)
{
	return view_read(ix, idx, v, false, ix->g.f + 1);
}

int
kv__ix_view_read_quorum(struct kv_index *ix, uint64_t idx, struct kv_ix_view *v)
{
	return view_read(ix, idx, v, true, ix->g.f + 1);
}

int
kv__ix_view_read_all(struct kv_index *ix, uint64_t idx, struct kv_ix_view *v)
{
	return view_read(ix, idx, v, false, ix->g.n);
}

/* The replies of @v's members for @word, as analyse and choose take them. */
static unsigned
view_replies(struct kv_index *ix, const struct kv_ix_view *v, unsigned word,
	struct kv_ix_reply *r)
{
	unsigned nr = 0;

	for (unsigned i = 0; i < ix->g.n; i++) {
		uint64_t w;

		if (!(v->got >> i & 1))
			continue;
		w = v->w[i][word];
		if (kv_ixw_tag(w) == KV_IXW_P && v->rec_known[i][word]) {
			r[nr++] = v->rep[i][word];
		} else {
			memset(&r[nr], 0, sizeof(r[nr]));
			r[nr++].word = w;
		}
	}
	return nr;
}

/*
 * The common case of a slot read: at least f+1 members counted and every
 * one of them holds the same committed word of the view's gen. Rule (i) of
 * kv__ix_analyse decides it with that word's value, and nothing is left to
 * commit; deciding it here skips building the replies and the analysis,
 * which were most of a lookup's work per member on the local backend.
 */
static bool
slot_committed(const struct kv_index *ix, const struct kv_ix_view *v, unsigned word,
	struct kv_ix_slot *out)
{
	uint64_t w = 0;
	unsigned k = 0;

	for (unsigned m = v->got; m != 0; m &= m - 1, k++) {
		uint64_t x = v->w[__builtin_ctz(m)][word];

		if (k == 0)
			w = x;
		else if (x != w)
			return false;
	}
	if (k < ix->g.f + 1 || kv_ixw_tag(w) != KV_IXW_C || !kv_ixw_valid(w, v->gen))
		return false;
	out->a.verdict = KV_IX_DECIDED;
	out->a.stage = kv_ixw_stage(w);
	out->a.body = w & KV_IXW_BODY_MASK;
	out->a.members = k;
	out->cur = out->a.body;
	out->in_progress = false;
	out->committed = true;
	return true;
}

int
kv__ix_slot(struct kv_index *ix, const struct kv_ix_view *v, unsigned word,
	struct kv_ix_slot *out)
{
	struct kv_ix_reply r[KV_IX_MAX_N];
	unsigned nr;
	int ret;

	if (slot_committed(ix, v, word, out))
		return 0;
	nr = view_replies(ix, v, word, r);
	/* A word left by an earlier incarnation is no answer, not damage. */
	for (unsigned i = 0; i < nr; i++)
		ix->st.bad_words += r[i].word != 0 && !kv_ixw_valid(r[i].word, kv_ixw_gen(r[i].word));
	ret = kv__ix_analyse(r, nr, ix->g.n, v->gen, v->persisted, &out->a);
	if (ret != 0)
		return ret;
	out->in_progress = out->a.verdict != KV_IX_DECIDED;
	out->cur = out->a.body;
	out->committed = false;
	return 0;
}

bool
kv__ix_word_carries_fp(const struct kv_ix_view *v, unsigned word, unsigned fp)
{
	for (unsigned i = 0; i < KV_IX_MAX_N; i++) {
		uint64_t w = v->w[i][word];

		if (!(v->got >> i & 1) || !kv_ixw_valid(w, v->gen))
			continue;
		if (kv_ixw_tag(w) != KV_IXW_P && kv_ixw_fp(w) == fp)
			return true;
		/* A record's body is the acceptance, or without one the
		 * value of the stage below: either may be the key's. */
		if (kv_ixw_tag(w) == KV_IXW_P && (!v->rec_known[i][word] ||
			kv_ixw_fp(v->rep[i][word].acc_body) == fp))
			return true;
	}
	return false;
}

/* A body some member shows for @word at @stage (a fast acceptance, or a
 * record's acceptance), else the freeze of @prev: what a reader that must
 * settle another client's stage proposes (any proposal of the stage is
 * sound; the value rule keeps one that may have been chosen). */
uint64_t
kv__ix_observed(const struct kv_ix_view *v, unsigned word, unsigned stage, uint64_t prev)
{
	for (unsigned i = 0; i < KV_IX_MAX_N; i++) {
		uint64_t w = v->w[i][word];

		if (!(v->got >> i & 1) || !kv_ixw_valid(w, v->gen) || kv_ixw_stage(w) != stage)
			continue;
		if (kv_ixw_tag(w) == KV_IXW_F)
			return w & KV_IXW_BODY_MASK;
		if (kv_ixw_tag(w) == KV_IXW_P && v->rec_known[i][word] &&
			v->rep[i][word].acc != KV_IX_ACC_NONE)
			return v->rep[i][word].acc_body;
	}
	return kv_ix_body_frozen(prev);
}

/* The stage-@stage-1 value the replies imply for @word, if they do. */
bool
kv__ix_prev(const struct kv_ix_view *v, unsigned word, unsigned stage, uint64_t *prev)
{
	for (unsigned i = 0; i < KV_IX_MAX_N; i++) {
		struct kv_ix_reply r = { v->w[i][word], false, 0, 0 };

		if (!(v->got >> i & 1) || !kv_ixw_valid(r.word, v->gen))
			continue;
		if (kv_ixw_tag(r.word) == KV_IXW_P && v->rec_known[i][word])
			r = v->rep[i][word];
		if (kv__ix_reply_prev(&r, stage, prev))
			return true;
	}
	return false;
}

/* The members of @mask a commit goes to (none in a test that loses every
 * commit, kv__ix_test_no_commit): commits are background, posted once the
 * previous round's batches drained. */
static unsigned
ix_commit_begin(struct kv_index *ix, unsigned mask)
{
#ifdef KV_IX_TESTING
	if (ix->test_no_commit)
		return 0;
#endif
	return mask & kv__ix_round_begin(&ix->g);
}

/* Append to member @i's batch the commit of @body at @word over @cur: the
 * CAS to C(@body), persisted. Return: 0; -E2BIG if the batch is full. */
static int
ix_commit_add(struct kv_index *ix, const struct kv_ix_view *v, unsigned i, unsigned word,
	uint64_t cur, uint64_t body)
{
	struct kv_ix_group *g = &ix->g;
	uint64_t off = word_off(ix, v->idx, word);

	if (rdma_batch_cas(&g->m[i].batch, g->region, off, cur,
		    kv_ixw_make(KV_IXW_C, v->gen, body), NULL) != 0 ||
		rdma_batch_persist(&g->m[i].batch, g->region, off, 8) != 0)
		return -E2BIG;
	return 0;
}

/* Post the commit of @body at @word on the members of @mask whose word is
 * @cur[i] (background: completes while the client goes on; kv/DESIGN.md,
 * "Commit"). Only a client that knows the value is chosen calls it. */
static void
ix_commit(struct kv_index *ix, const struct kv_ix_view *v, unsigned word, unsigned mask,
	const uint64_t *cur, uint64_t body)
{
	mask = ix_commit_begin(ix, mask);
	for (unsigned i = 0; i < ix->g.n; i++)
		if ((mask >> i & 1) && ix_commit_add(ix, v, i, word, cur[i], body) != 0)
			rdma_batch_init(&ix->g.m[i].batch);
	kv__ix_round_post(&ix->g, mask);
}

void
kv__ix_commit_decided(struct kv_index *ix, const struct kv_ix_view *v, unsigned word,
	const struct kv_ix_slot *sl)
{
	uint64_t cur[KV_IX_MAX_N];
	unsigned mask = 0;

	if (sl->a.verdict != KV_IX_DECIDED || sl->committed)
		return;
	for (unsigned i = 0; i < ix->g.n; i++) {
		uint64_t w = v->w[i][word];

		if ((v->got >> i & 1) && kv_ixw_valid(w, v->gen) &&
			kv_ixw_stage(w) == sl->a.stage && kv_ixw_tag(w) != KV_IXW_C) {
			cur[i] = w;
			mask |= 1u << i;
		}
	}
	if (mask != 0)
		ix_commit(ix, v, word, mask, cur, sl->a.body);
}

int
kv__ix_fast(struct kv_index *ix, const struct kv_ix_view *v, unsigned word, uint64_t body,
	bool *won)
{
	struct kv_ix_group *g = &ix->g;
	uint64_t off = word_off(ix, v->idx, word);
	uint64_t expect = v->w[0][word];
	uint64_t f = kv_ixw_make(KV_IXW_F, v->gen, body);
	uint64_t cur[KV_IX_MAX_N];
	unsigned all = (1u << g->n) - 1, mask, ok;

	*won = false;
	/* Fast only when every member shows the same committed word of the
	 * stage below: a lagging or missing member cannot make a fast
	 * quorum of all (n = 3), and catching it up costs what a classic
	 * round costs. */
	if (v->got != all || kv_ixw_tag(expect) != KV_IXW_C ||
		kv_ixw_stage(expect) + 1 != kv_ixw_stage(body))
		return 0;
	for (unsigned i = 1; i < g->n; i++)
		if (v->w[i][word] != expect)
			return 0;
	mask = kv__ix_round_begin(g);
	if (mask != all)
		return 0;
	for (unsigned i = 0; i < g->n; i++)
		if (rdma_batch_cas(&g->m[i].batch, g->region, off, expect, f, &g->m[i].old[0]) != 0 ||
			rdma_batch_persist(&g->m[i].batch, g->region, off, 8) != 0)
			return -EINVAL;
	ix->st.fast++;
#ifdef KV_IX_TESTING
	if (ix->test_stop_fast != 0) {
		/* kv__ix_test_stop_in_fast: the client dies once its round
		 * reached these members; the others' batches are never sent. */
		mask = ix->test_stop_fast & all;
		ix->test_stop_fast = 0;
		for (unsigned i = 0; i < g->n; i++)
			if (!(mask >> i & 1))
				rdma_batch_init(&g->m[i].batch);
		(void)kv__ix_round_run(g, mask, (unsigned)__builtin_popcount(mask), ix->deadline);
		return pm_error_set(KV_E_UNAVAILABLE, "kv_index: stopped in a fast round (test)");
	}
#endif
	ok = kv__ix_round_run(g, all, g->n, ix->deadline);
	ix->st.rounds++;
	if (body == ix->offer) {
		/* Choosable later only if fast-accepted by as many as
		 * kv__ix_choose needs of a smallest promise quorum (a reply
		 * not seen may be an acceptance). */
		unsigned acc = 0;

		for (unsigned i = 0; i < g->n; i++)
			acc += !(ok >> i & 1) || g->m[i].old[0] == expect;
		ix->offered |= acc + g->f >= kv__ix_fast_quorum(g->n);
	}
	if (ok != all)
		return 0;
	for (unsigned i = 0; i < g->n; i++) {
		if (g->m[i].old[0] != expect)
			return 0;
		cur[i] = f;
	}
	*won = true;
	ix->st.fast_won++;
	ix_commit(ix, v, word, all, cur, body);
	return 0;
}

int
kv__ix_rec_reserve(struct kv_index *ix, unsigned need)
{
	uint64_t mark = ix->rec_mark + KV_IX_REC_CHUNK;
	int ret;

	if (ix->rec_mark - ix->rec_next >= need)
		return 0;
	ret = kv__ix_word_store(&ix->g, ix->g.region,
		ix->g.super.mark_off + (uint64_t)ix->cid * 8, mark, ix->deadline);
	ix->st.rounds++;
	if (ret != 0)
		return ret;
	ix->rec_mark = mark;
	return 0;
}

static uint32_t
ix_rec_take(struct kv_index *ix)
{
	const struct kv_ix_super *s = &ix->g.super;

	return (uint32_t)(ix->cid * s->recs_per_client + ix->rec_next++ % s->recs_per_client);
}

/* Append "write record @r at @rec, persist it, CAS the word from @expect to
 * @p, persist the word" to @b. */
static int
ix_batch_publish(struct kv_index *ix, struct kv_ix_member *m, unsigned k, uint32_t rec,
	const struct kv_ix_rec *r, uint64_t off, uint64_t expect, uint64_t p)
{
	const struct kv_ix_super *s = &ix->g.super;
	uint32_t region = ix->g.region;
	unsigned char *dst = m->buf + k * KV_IX_REC_SIZE;

	memcpy(dst, r, sizeof(*r));
	if (rdma_batch_write(&m->batch, region, kv_ix_rec_off(s, rec), dst, KV_IX_REC_SIZE) != 0 ||
		rdma_batch_persist(&m->batch, region, kv_ix_rec_off(s, rec), KV_IX_REC_SIZE) != 0 ||
		rdma_batch_cas(&m->batch, region, off, expect, p, &m->old[k]) != 0 ||
		rdma_batch_persist(&m->batch, region, off, 8) != 0)
		return -E2BIG;
	return 0;
}

/*
 * kv__ix_resolve -- decide stage @stage of @word of bucket @v->idx with
 * classic rounds (promise, then accept), proposing @dflt (a body of that
 * stage) unless the value rule (paxos.h) forces another; then commit it.
 * @v: the last read of the bucket; re-read between attempts.
 * Return: 0 with *@decided the stage's value; 1 if the stage is decided but
 * its value was not learnt (a later stage exists, or the bucket was
 * compacted: re-read it); KV_E_UNAVAILABLE at the deadline.
 */
int
kv__ix_resolve(struct kv_index *ix, struct kv_ix_view *v, unsigned word, unsigned stage,
	uint64_t dflt, uint64_t *decided)
{
	struct kv_ix_group *g = &ix->g;
	uint64_t off = word_off(ix, v->idx, word);
	uint32_t round = 0, epoch = v->epoch;
	int ret;

	if (kv_ixw_stage(dflt) != stage || !kv_ixw_body_valid(dflt))
		return 1; /* no proposal of this stage is known: re-read */
	ix->st.resolves++;
#ifdef KV_IX_TESTING
	if (ix->test_before_resolve != NULL) {
		void (*fn)(void *arg) = ix->test_before_resolve;

		ix->test_before_resolve = NULL;
		fn(ix->test_before_resolve_arg);
	}
#endif
	for (unsigned attempt = 0;; attempt++) {
		struct kv_ix_reply q[KV_IX_MAX_N];
		struct kv_ix_slot sl;
		uint64_t prev = 0, expect[KV_IX_MAX_N], p[KV_IX_MAX_N], val;
		unsigned mask, used = 0, ok, promised = 0, nq = 0, accepted = 0;
		bool have_prev = false;

		if (attempt > 0) {
			ret = kv__ix_deadline_check(ix);
			if (ret != 0)
				return ret;
			ix_backoff(ix, attempt);
			ret = kv__ix_view_read(ix, v->idx, v);
			if (ret != 0)
				return ret;
			/* Compacted meanwhile: the stage belongs to an
			 * incarnation that is over (its decision is in the
			 * new one's words); the caller scans again. */
			if (v->epoch != epoch)
				return 1;
		}
		/* What the replies already say about the stage. */
		for (unsigned i = 0; i < g->n; i++) {
			uint64_t w = v->w[i][word];

			if (!(v->got >> i & 1) || !kv_ixw_valid(w, v->gen))
				continue;
			if (kv_ixw_stage(w) > stage) {
				if (kv_ixw_stage(w) == stage + 1 && kv_ixw_implied(w, decided))
					return 0;
				return 1;
			}
			if (kv_ixw_stage(w) == stage && kv_ixw_tag(w) == KV_IXW_C) {
				*decided = w & KV_IXW_BODY_MASK;
				return 0;
			}
			if (kv_ixw_tag(w) == KV_IXW_P && kv_ixw_stage(w) == stage &&
				kv_ixw_round(w) > round)
				round = kv_ixw_round(w);
			if (!have_prev && kv_ixw_stage(w) == stage && kv_ixw_implied(w, &prev))
				have_prev = true;
			if (!have_prev && kv_ixw_tag(w) == KV_IXW_C && kv_ixw_stage(w) + 1 == stage) {
				prev = w & KV_IXW_BODY_MASK;
				have_prev = true;
			}
		}
		ret = kv__ix_slot(ix, v, word, &sl);
		if (ret != 0)
			return ret;
		if (sl.a.verdict == KV_IX_DECIDED && sl.a.stage == stage) {
			*decided = sl.a.body;
			return 0;
		}
		if (sl.a.verdict == KV_IX_TOO_FEW)
			continue;
		if (!have_prev && sl.a.verdict == KV_IX_DECIDED && sl.a.stage + 1 == stage) {
			/* The stage below was chosen but nobody committed it
			 * (fast words on every member: its proposer stopped
			 * before its commit): catch the members up to it. */
			prev = sl.a.body;
			have_prev = true;
		}
		if (round >= KV_IXW_MAX_ROUND)
			return pm_error_set(KV_E_UNAVAILABLE, "kv_index: ballots exhausted on a word");
		round++;
		ret = kv__ix_rec_reserve(ix, 2 * g->n);
		if (ret != 0)
			return ret;

		/* Phase 1: promise ballot (round, cid) on every member whose
		 * word allows it, catching a lagging member up to the decided
		 * value of the stage below first. */
		mask = kv__ix_round_begin(g) & v->got;
		for (unsigned i = 0; i < g->n; i++) {
			struct kv_ix_member *m = &g->m[i];
			uint64_t w = v->w[i][word], c_prev;
			uint32_t acc, rec;
			uint64_t acc_body = 0;
			struct kv_ix_rec r;

			if (!(mask >> i & 1) || !kv_ixw_valid(w, v->gen))
				continue;
			c_prev = kv_ixw_make(KV_IXW_C, v->gen, prev);
			expect[i] = w;
			if (kv_ixw_stage(w) == stage && kv_ixw_tag(w) == KV_IXW_F) {
				acc = KV_IX_ACC_FAST;
				acc_body = w & KV_IXW_BODY_MASK;
			} else if (kv_ixw_stage(w) == stage && kv_ixw_tag(w) == KV_IXW_P) {
				if (!v->rec_known[i][word])
					continue;
				acc = v->rep[i][word].acc;
				acc_body = v->rep[i][word].acc_body;
			} else if (kv_ixw_stage(w) + 1 == stage && kv_ixw_tag(w) == KV_IXW_C) {
				acc = KV_IX_ACC_NONE;
				acc_body = w & KV_IXW_BODY_MASK; /* the stage below */
			} else if (have_prev) {
				/* Lagging below the decided stage - 1: catch up. */
				if (rdma_batch_cas(&m->batch, g->region, off, w, c_prev, NULL) != 0)
					continue;
				expect[i] = c_prev;
				acc = KV_IX_ACC_NONE;
				acc_body = prev;
			} else {
				continue;
			}
			rec = ix_rec_take(ix);
			p[i] = kv_ixw_make_p(v->gen, stage, round, ix->cid, rec);
			kv__ix_rec_seal(&r, off, p[i], acc, acc_body);
			if (ix_batch_publish(ix, m, 0, rec, &r, off, expect[i], p[i]) != 0)
				continue;
			q[i].word = acc == KV_IX_ACC_NONE ? c_prev : p[i];
			q[i].rec_known = true;
			q[i].acc = acc;
			q[i].acc_body = acc_body;
			if (acc == KV_IX_ACC_NONE && kv_ixw_tag(expect[i]) == KV_IXW_C)
				q[i].word = expect[i];
			used |= 1u << i;
		}
		ok = kv__ix_round_run(g, used, g->f + 1, ix->deadline);
		ix->st.rounds++;
		for (unsigned i = 0; i < g->n; i++) {
			/* The promise CAS is the last CAS of the batch. */
			if ((ok >> i & 1) && (used >> i & 1) && g->m[i].old[0] == expect[i]) {
				promised |= 1u << i;
				q[nq++] = q[i];
			}
		}
		if ((unsigned)__builtin_popcount(promised) < g->f + 1)
			continue;
		ret = kv__ix_choose(q, nq, g->n, dflt, &val);
		if (ret != 0)
			return ret;

		/* Phase 2: accept (round, cid) with @val where the promise
		 * still stands. */
		mask = kv__ix_round_begin(g) & promised;
		used = 0;
		for (unsigned i = 0; i < g->n; i++) {
			struct kv_ix_rec r;
			uint32_t rec;
			uint64_t p2;

			if (!(mask >> i & 1))
				continue;
			rec = ix_rec_take(ix);
			p2 = kv_ixw_make_p(v->gen, stage, round, ix->cid, rec);
			kv__ix_rec_seal(&r, off, p2, kv_ixw_ballot(p[i]) + 2, val);
			if (ix_batch_publish(ix, &g->m[i], 0, rec, &r, off, p[i], p2) != 0)
				continue;
			expect[i] = p2;
			used |= 1u << i;
		}
		ok = kv__ix_round_run(g, used, g->f + 1, ix->deadline);
		ix->st.rounds++;
		for (unsigned i = 0; i < g->n; i++) {
			if ((ok >> i & 1) && (used >> i & 1) && g->m[i].old[0] == p[i])
				accepted |= 1u << i;
			/* an acceptance, or a reply not seen */
			if ((used >> i & 1) && (!(ok >> i & 1) || g->m[i].old[0] == p[i]))
				ix->offered |= val == ix->offer;
		}
		if ((unsigned)__builtin_popcount(accepted) >= g->f + 1) {
			*decided = val;
			ix_commit(ix, v, word, accepted, expect, val);
			return 0;
		}
	}
}

/* Slots one batch of kv__ix_freeze_classic carries: each slot's publish is
 * four verbs (ix_batch_publish). */
#define IX_FREEZE_CHUNK (RDMA_BATCH_MAX_OPS / 4)

/* kv__ix_freeze_classic for the slots @w[0..k) (k <= IX_FREEZE_CHUNK), slot
 * @w[j] showing @from[j] on every member of @v->got: kv__ix_resolve's two
 * rounds for a stage nobody has touched yet, slot j's verbs at batch
 * position j. */
static int
ix_freeze_chunk(struct kv_index *ix, const struct kv_ix_view *v, const unsigned *w,
	const uint64_t *from, unsigned k)
{
	struct kv_ix_group *g = &ix->g;
	struct kv_ix_reply q[IX_FREEZE_CHUNK][KV_IX_MAX_N];
	uint64_t p1[IX_FREEZE_CHUNK][KV_IX_MAX_N], p2[IX_FREEZE_CHUNK][KV_IX_MAX_N];
	uint64_t val[IX_FREEZE_CHUNK];
	unsigned nq[IX_FREEZE_CHUNK] = { 0 }, promised[IX_FREEZE_CHUNK] = { 0 };
	unsigned sent[IX_FREEZE_CHUNK] = { 0 }, mask, used = 0, ok;
	int ret;

	ret = kv__ix_rec_reserve(ix, 2 * g->n * k);
	if (ret != 0)
		return ret;

	/* Phase 1: promise ballot (1, cid) at stage s+1 over the committed
	 * word of stage s: such a member has accepted nothing at s+1, and
	 * one that moved on fails the CAS. */
	mask = kv__ix_round_begin(g) & v->got;
	for (unsigned i = 0; i < g->n; i++) {
		if (!(mask >> i & 1))
			continue;
		for (unsigned j = 0; j < k; j++) {
			uint64_t off = word_off(ix, v->idx, w[j]);
			uint32_t rec = ix_rec_take(ix);
			struct kv_ix_rec r;

			p1[j][i] = kv_ixw_make_p(v->gen, kv_ixw_stage(from[j]) + 1, 1, ix->cid, rec);
			kv__ix_rec_seal(&r, off, p1[j][i], KV_IX_ACC_NONE, from[j] & KV_IXW_BODY_MASK);
			if (ix_batch_publish(ix, &g->m[i], j, rec, &r, off, from[j], p1[j][i]) != 0)
				return pm_error_set(-E2BIG, "kv_index: a freeze batch overflowed");
		}
		used |= 1u << i;
	}
	ok = kv__ix_round_run(g, used, g->f + 1, ix->deadline) & used;
	ix->st.rounds++;
	for (unsigned j = 0; j < k; j++) {
		for (unsigned i = 0; i < g->n; i++) {
			if (!(ok >> i & 1) || g->m[i].old[j] != from[j])
				continue;
			promised[j] |= 1u << i;
			q[j][nq[j]++] = (struct kv_ix_reply){ .word = from[j], .rec_known = true,
				.acc = KV_IX_ACC_NONE, .acc_body = from[j] & KV_IXW_BODY_MASK };
		}
		if (nq[j] < g->f + 1) {
			promised[j] = 0; /* left to the next scan */
			continue;
		}
		ret = kv__ix_choose(q[j], nq[j], g->n,
			kv_ix_body_frozen(from[j] & KV_IXW_BODY_MASK), &val[j]);
		if (ret != 0)
			return ret;
	}

	/* Phase 2: accept where the promise stands. */
	mask = kv__ix_round_begin(g);
	used = 0;
	for (unsigned i = 0; i < g->n; i++) {
		if (!(mask >> i & 1))
			continue;
		for (unsigned j = 0; j < k; j++) {
			uint64_t off = word_off(ix, v->idx, w[j]);
			struct kv_ix_rec r;
			uint32_t rec;

			if (!(promised[j] >> i & 1))
				continue;
			rec = ix_rec_take(ix);
			p2[j][i] = kv_ixw_make_p(v->gen, kv_ixw_stage(from[j]) + 1, 1, ix->cid, rec);
			kv__ix_rec_seal(&r, off, p2[j][i], kv_ixw_ballot(p1[j][i]) + 2, val[j]);
			if (ix_batch_publish(ix, &g->m[i], j, rec, &r, off, p1[j][i], p2[j][i]) != 0)
				return pm_error_set(-E2BIG, "kv_index: a freeze batch overflowed");
			sent[j] |= 1u << i;
			used |= 1u << i;
		}
	}
	if (used == 0)
		return 0;
	ok = kv__ix_round_run(g, used, g->f + 1, ix->deadline) & used;
	ix->st.rounds++;

	/* Commit what f+1 accepted, in one background batch per member. */
	mask = ix_commit_begin(ix, (1u << g->n) - 1);
	for (unsigned j = 0; j < k; j++) {
		unsigned accepted = 0;

		for (unsigned i = 0; i < g->n; i++)
			if ((ok & sent[j]) >> i & 1 && g->m[i].old[j] == p1[j][i])
				accepted |= 1u << i;
		if ((unsigned)__builtin_popcount(accepted) < g->f + 1)
			continue;
		ix->st.batch_frozen++;
		for (unsigned i = 0; i < g->n; i++) {
			if (((mask & accepted) >> i & 1) &&
				ix_commit_add(ix, v, i, w[j], p2[j][i], val[j]) != 0) {
				rdma_batch_init(&g->m[i].batch);
				mask &= ~(1u << i);
			}
		}
	}
	kv__ix_round_post(g, mask);
	return 0;
}

int
kv__ix_freeze_classic(struct kv_index *ix, const struct kv_ix_view *v,
	const uint64_t from[KV_IXB_WORDS])
{
	unsigned w[IX_FREEZE_CHUNK], k = 0;
	uint64_t f[IX_FREEZE_CHUNK];

	for (unsigned word = KV_IXB_SLOT0; word < KV_IXB_WORDS; word++) {
		int ret;

		if (from[word] == 0)
			continue;
		w[k] = word;
		f[k++] = from[word];
		if (k < IX_FREEZE_CHUNK)
			continue;
		ret = ix_freeze_chunk(ix, v, w, f, k);
		if (ret != 0)
			return ret;
		k = 0;
	}
	return k > 0 ? ix_freeze_chunk(ix, v, w, f, k) : 0;
}
