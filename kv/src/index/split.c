/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/split.c -- growth: freeze a full bucket, install its two
 * children, decide its forward word, make the children live
 * (index_internal.h; kv/DESIGN.md "Splits"; the FCP design study section
 * 4.5.6 "split_or_compact(B) and help_split(B)", with heap-numbered
 * children instead of allocated ones, see layout.h).
 *
 * Any client runs or resumes a split, and every step is safe to repeat or
 * to run late: freezing is per-slot consensus; the children's content is a
 * function of the decided frozen content, installed only over zero memory
 * (CAS from 0, so a late installer never overwrites a child that has moved
 * on); the forward word's only value is FWD, proposed only once the children
 * are installed on f+1 members; children become live (their h0 flips from
 * pending) only after FWD is chosen, so nobody changes a child while the
 * parent's frozen content is still what readers answer from.
 */
#include <errno.h>
#include <string.h>

#include <pm/error.h>

#include "kv/src/index/index_internal.h"

int
kv__ix_flip(struct kv_index *ix, uint64_t idx)
{
	struct kv_ix_group *g = &ix->g;

	for (;;) {
		unsigned mask = kv__ix_round_begin(g), ok;
		int ret;

		for (unsigned i = 0; i < g->n; i++) {
			struct rdma_batch *b = &g->m[i].batch;

			if (!(mask >> i & 1))
				continue;
			for (uint64_t c = 2 * idx; c <= 2 * idx + 1; c++) {
				uint64_t off = kv_ixb_off(&g->super, c, KV_IXB_H0);

				rdma_batch_cas(b, g->region, off, kv_ixb_h0_pending(c), kv_ixb_h0(c, 0),
					NULL);
				rdma_batch_persist(b, g->region, off, 8);
			}
		}
		ok = kv__ix_round_run(g, mask, g->f + 1, ix->deadline);
		ix->st.rounds++;
		if ((unsigned)__builtin_popcount(ok) >= g->f + 1)
			return 0;
		ret = kv__ix_deadline_check(ix);
		if (ret != 0)
			return ret;
	}
}

int
kv__ix_forward_help(struct kv_index *ix, uint64_t idx, struct kv_ix_view *v)
{
	uint64_t fwd = KV_IX_FWD_BODY, dec = 0;
	struct kv_ix_slot sl;
	int ret;

	ret = kv__ix_slot(ix, v, KV_IXB_H1, &sl);
	if (ret != 0)
		return ret;
	if (!(sl.a.verdict == KV_IX_DECIDED && sl.a.stage == 1)) {
		bool won = false;

		if (sl.a.verdict == KV_IX_DECIDED && sl.a.stage == 0) {
			ret = kv__ix_fast(ix, v, KV_IXB_H1, fwd, &won);
			if (ret != 0)
				return ret;
		}
		if (!won) {
			ret = kv__ix_resolve(ix, v, KV_IXB_H1, 1, fwd, &dec);
			if (ret < 0)
				return ret;
		}
	}
	return kv__ix_flip(ix, idx);
}

/* Freeze every slot of incarnation @epoch of bucket @idx; *@v ends as a
 * read in which all are decided frozen. Return: 0; 1 if the forward is
 * already proposed (the freeze was finished by someone); 2 if the bucket
 * is at another incarnation (someone compacted it); 3 if a compaction is
 * halfway installed (finish it); an error. */
static int
ix_freeze(struct kv_index *ix, uint64_t idx, uint32_t epoch, struct kv_ix_view *v)
{
	struct kv_ix_group *g = &ix->g;

	for (;;) {
		uint64_t fast_from[KV_IXB_WORDS] = { 0 }, dec;
		unsigned nfast = 0, all = (1u << g->n) - 1, gen;
		bool classic = false; /* fast_from goes by classic rounds */
		bool resolved = false; /* the scan resolved a slot: @v re-read */
		bool done = true;
		struct kv_ix_slot fw;
		int ret;

		ret = kv__ix_deadline_check(ix);
		if (ret != 0)
			return ret;
		ret = kv__ix_view_read(ix, idx, v);
		if (ret != 0)
			return ret;
		if ((unsigned)__builtin_popcount(v->got) < g->f + 1 && v->got != 0 &&
			v->behind != 0) {
			/* The next incarnation is being installed. */
			ret = kv__ix_repair(ix, v, v->lack);
			if (ret != 0)
				return ret;
			continue;
		}
		if (v->got != 0 && v->epoch != epoch)
			return 2;
		if ((unsigned)__builtin_popcount(v->got) < g->f + 1)
			continue;
		if (kv__ix_converting(v))
			return 3; /* frozen and decided: compacting */
		ret = kv__ix_slot(ix, v, KV_IXB_H1, &fw);
		if (ret != 0)
			return ret;
		if (fw.a.stage >= 1)
			return 1;
		/* The fast round below replaces words of this read's
		 * incarnation by words of the same one. A kv__ix_resolve()
		 * in the scan re-reads @v, maybe at the next incarnation;
		 * its gen over a word of this one, landing on a member not
		 * yet converted, made a word of the next incarnation that no
		 * one proposed (an F word of stage 3; the conversion kept it
		 * as higher than its image, and it outvoted a chosen insert:
		 * IndexTcp.ConcurrentClientsTimingOutAreLinearizable). */
		gen = v->gen;
		for (unsigned w = KV_IXB_SLOT0; w < KV_IXB_WORDS && !resolved; w++) {
			struct kv_ix_slot sl;
			uint64_t x;

			ret = kv__ix_slot(ix, v, w, &sl);
			if (ret != 0)
				return ret;
			if (sl.a.verdict == KV_IX_TOO_FEW) {
				done = false;
				continue;
			}
			if (sl.a.verdict == KV_IX_DECIDED && kv_ixw_frz(sl.cur)) {
				/* A frozen slot never changes again: commit
				 * it where a duel of classic rounds left a P
				 * word, before its record is reused. */
				kv__ix_commit_decided(ix, v, w, &sl);
				continue;
			}
			done = false;
			if (sl.a.verdict != KV_IX_DECIDED) {
				/* Mid-change: settle the stage, offering the
				 * freeze of the value before it (or what was
				 * proposed, if that value is not known). */
				uint64_t prev = 0;
				bool known = kv__ix_prev(v, w, sl.a.stage, &prev) || sl.a.stage == 1;

				ret = kv__ix_resolve(ix, v, w, sl.a.stage,
					known ? kv_ix_body_frozen(prev) :
						kv__ix_observed(v, w, sl.a.stage, prev), &dec);
				if (ret < 0)
					return ret;
				resolved = true; /* re-read */
				continue;
			}
			x = kv_ixw_make(KV_IXW_C, gen, sl.cur);
			{
				bool same = true;

				for (unsigned i = 0; i < g->n; i++)
					same &= !(v->got >> i & 1) || v->w[i][w] == x;
				if (same) {
					/* Committed on every member that
					 * counts: frozen with the others. */
					fast_from[w] = x;
					nfast++;
					classic = v->got != all;
					continue;
				}
			}
			ret = kv__ix_resolve(ix, v, w, sl.a.stage + 1, kv_ix_body_frozen(sl.cur), &dec);
			if (ret < 0)
				return ret;
			resolved = true;
		}
		if (done)
			return 0;
		if (nfast > 0 && classic) {
			/* A fast round needs every member. Only after a
			 * scan that re-read nothing: the classic rounds
			 * take their gen and members from @v. */
			if (resolved)
				continue;
			ret = kv__ix_freeze_classic(ix, v, fast_from);
			if (ret != 0)
				return ret;
		} else if (nfast > 0) {
			/* One fast round freezes every committed slot. */
			unsigned mask = kv__ix_round_begin(g), ok;

			if (mask != all)
				continue;
			for (unsigned i = 0; i < g->n; i++) {
				unsigned k = 0;

				for (unsigned w = KV_IXB_SLOT0; w < KV_IXB_WORDS; w++) {
					uint64_t to;

					if (fast_from[w] == 0)
						continue;
					to = kv_ixw_make(KV_IXW_F, gen,
						kv_ix_body_frozen(fast_from[w] & KV_IXW_BODY_MASK));
					rdma_batch_cas(&g->m[i].batch, g->region,
						kv_ixb_off(&g->super, idx, w), fast_from[w], to,
						&g->m[i].old[k++]);
				}
				rdma_batch_persist(&g->m[i].batch, g->region,
					kv_ixb_off(&g->super, idx, 0), KV_IXB_SIZE);
			}
			ix->st.fast++;
			ok = kv__ix_round_run(g, mask, g->n, ix->deadline);
			ix->st.rounds++;
			(void)ok; /* the re-read decides what was won */
		}
	}
}

/* The words of child @c (0 or 1) of bucket @idx: the decided frozen
 * entries of @v whose hash bit depth(idx) is @c, each at the first free
 * slot of its order. */
static int
ix_child_words(struct kv_index *ix, uint64_t idx, const struct kv_ix_view *v,
	uint64_t words[2][KV_IXB_WORDS])
{
	unsigned d = kv_ixb_depth(idx);

	for (unsigned c = 0; c < 2; c++) {
		for (unsigned w = 0; w < KV_IXB_WORDS; w++)
			words[c][w] = KV_IX_EMPTY_WORD;
		words[c][KV_IXB_H0] = kv_ixb_h0_pending(2 * idx + c);
	}
	for (unsigned w = KV_IXB_SLOT0; w < KV_IXB_WORDS; w++) {
		struct kv_ix_slot sl;
		uint64_t h, live;
		unsigned c, fp;
		int ret;

		ret = kv__ix_slot(ix, v, w, &sl);
		if (ret != 0)
			return ret;
		if (sl.a.verdict != KV_IX_DECIDED || !kv_ixw_frz(sl.cur))
			return -EAGAIN; /* the freeze is not finished */
		if (!kv_ix_body_maps(sl.cur))
			continue; /* EMPTY and DEAD entries stay behind */
		ret = kv__ix_key_hash(ix, kv_ixw_loc(sl.cur), &h);
		if (ret == -ENOENT)
			return pm_error_set(PM_E_CORRUPT, "kv_index: no key at location %llu",
				(unsigned long long)kv_ixw_loc(sl.cur));
		if (ret != 0)
			return ret;
		fp = kv_ixw_fp(sl.cur);
		if ((unsigned)(h >> 48) != fp || kv_ixb_for(h, d) != idx)
			return pm_error_set(PM_E_CORRUPT,
				"kv_index: the key at location %llu does not belong in bucket %llu",
				(unsigned long long)kv_ixw_loc(sl.cur), (unsigned long long)idx);
		c = (unsigned)(h >> d) & 1;
		live = kv_ixw_make(KV_IXW_C, kv_ix_epoch_gen(0),
			kv_ixw_body(1, false, fp, kv_ixw_loc(sl.cur)));
		for (unsigned k = 0; k < KV_IXB_SLOTS; k++) {
			unsigned cw = KV_IXB_SLOT0 + (fp + k) % KV_IXB_SLOTS;

			if (words[c][cw] == KV_IX_EMPTY_WORD) {
				words[c][cw] = live;
				break;
			}
		}
	}
	return 0;
}

/* Install both children on every member that answers (CAS from zero, the
 * header last); succeed once every member that is up holds each, or f+1
 * do at the operation's deadline. Stopping at f+1 (as it first did) left a
 * member that was busy with an earlier batch without the child, for good
 * unless an operation met it there: under load a third of a run's
 * children sat on two of three nodes, and the crash of either made their
 * keys unavailable (a bucket must be on f+1 to be read, and the one copy
 * left cannot be repaired from). */
static int
ix_install(struct kv_index *ix, uint64_t idx, uint64_t words[2][KV_IXB_WORDS])
{
	struct kv_ix_group *g = &ix->g;

	for (unsigned c = 0; c < 2; c++) {
		uint64_t child = 2 * idx + c;
		unsigned installed = 0, answered = 0;

		for (;;) {
			unsigned mask = kv__ix_round_begin(g), ok, holders = 0;
			unsigned all = (1u << g->n) - 1;
			int ret;

			for (unsigned i = 0; i < g->n; i++) {
				struct rdma_batch *b = &g->m[i].batch;

				if (!(mask >> i & 1))
					continue;
				for (unsigned w = KV_IXB_H1; w < KV_IXB_WORDS; w++)
					rdma_batch_cas(b, g->region, kv_ixb_off(&g->super, child, w), 0,
						words[c][w], NULL);
				rdma_batch_cas(b, g->region, kv_ixb_off(&g->super, child, KV_IXB_H0), 0,
					words[c][KV_IXB_H0], &g->m[i].old[0]);
				rdma_batch_persist(b, g->region, kv_ixb_off(&g->super, child, 0),
					KV_IXB_SIZE);
			}
			ok = kv__ix_round_run(g, mask, g->n, ix->deadline);
			ix->st.rounds++;
			for (unsigned i = 0; i < g->n; i++) {
				uint64_t h0 = g->m[i].old[0];
				uint32_t epoch;
				bool pending;

				if ((ok >> i & 1) &&
					(h0 == 0 || kv_ixb_h0_parse(h0, child, &epoch, &pending)))
					holders |= 1u << i;
			}
			/* Once a member answered, a CAS from 0 cannot change it
			 * again: it holds the child, or what moved on from it. */
			installed |= holders;
			answered |= ok;
			if ((unsigned)__builtin_popcount(installed) >= g->f + 1 &&
				((answered | ~kv__ix_group_up(g)) & all) == all)
				break;
			if ((unsigned)__builtin_popcount(installed) >= g->f + 1 &&
				kv__ix_now_ns() >= ix->deadline)
				break;
			ret = kv__ix_deadline_check(ix);
			if (ret != 0)
				return ret;
		}
	}
	return 0;
}

/* Whether bucket @idx's frozen content in @v calls for a compaction rather
 * than a split: enough slots to free (removed entries, and the EMPTY slots
 * of a bucket frozen before it filled: kv_index_abandon), or no room for
 * children. Every helper decides the same from the same decided content.
 * *@room: the slots that map nothing. */
static int
ix_compacts(struct kv_index *ix, uint64_t idx, const struct kv_ix_view *v, bool *compact,
	unsigned *room)
{
	*room = 0;
	for (unsigned w = KV_IXB_SLOT0; w < KV_IXB_WORDS; w++) {
		struct kv_ix_slot sl;
		int ret = kv__ix_slot(ix, v, w, &sl);

		if (ret != 0)
			return ret;
		if (sl.a.verdict != KV_IX_DECIDED)
			return -EAGAIN;
		*room += !kv_ix_body_maps(sl.cur);
	}
	*compact = *room >= KV_IX_COMPACT_ROOM || 2 * idx + 1 >= ix->g.super.nbuckets;
#ifdef KV_IX_TESTING
	if (ix->test_no_compaction)
		*compact = false;
#endif
	return 0;
}

/* The gen of the words of @v's bucket's next incarnation. */
static unsigned
ix_next_gen(const struct kv_ix_view *v)
{
	return kv_ix_epoch_gen((v->epoch + 1) & (uint32_t)KV_IXB_H0_EPOCH_MASK);
}

bool
kv__ix_converted(const struct kv_ix_view *v, unsigned word, uint64_t *out)
{
	unsigned next = ix_next_gen(v);

	/* Every lookup asks this of every word: the gen test first, as
	 * nearly every word is of the view's own gen. */
	for (unsigned m = v->got; m != 0; m &= m - 1) {
		uint64_t w = v->w[__builtin_ctz(m)][word];

		if (kv_ixw_gen(w) == next && kv_ixw_tag(w) == KV_IXW_C && kv_ixw_valid(w, next)) {
			*out = w;
			return true;
		}
	}
	return false;
}

bool
kv__ix_converting(const struct kv_ix_view *v)
{
	unsigned next = ix_next_gen(v);
	bool next_gen = false;
	uint64_t w;

	/* Asked of every bucket a client locates: first one pass over the
	 * rows for a word of the next gen (nearly never there). */
	for (unsigned m = v->got; m != 0; m &= m - 1) {
		const uint64_t *row = v->w[__builtin_ctz(m)];

		for (unsigned word = KV_IXB_H1; word < KV_IXB_WORDS; word++)
			next_gen |= kv_ixw_gen(row[word]) == next;
	}
	if (!next_gen)
		return false;
	for (unsigned word = KV_IXB_H1; word < KV_IXB_WORDS; word++)
		if (kv__ix_converted(v, word, &w))
			return true;
	return false;
}

/* Install the next incarnation of bucket @v->idx over its frozen one (all
 * slots of @v decided frozen): each entry stays in its slot, as LIVE;
 * removed and empty slots become EMPTY, keeping the fingerprint and
 * location of what was removed (word.h); h1 NONE; h0 last. A function of the
 * decided frozen content only, so every helper installs the same words;
 * by CAS from what each member held when read, so a late helper cannot
 * undo a member that has moved on. Members already at a later epoch are
 * left alone; any left behind are brought up by whoever meets them
 * (kv__ix_repair from one member: the new words are all decided). */
static int
ix_compact(struct kv_index *ix, const struct kv_ix_view *v)
{
	uint32_t next = (v->epoch + 1) & (uint32_t)KV_IXB_H0_EPOCH_MASK;
	unsigned gen = kv_ix_epoch_gen(next);
	uint64_t inst[KV_IXB_WORDS];
	bool known[KV_IXB_WORDS];
	int ret;

	for (unsigned w = KV_IXB_H1; w < KV_IXB_WORDS; w++) {
		struct kv_ix_slot sl;
		uint64_t body = kv_ixw_body(0, false, 0, 0);

		known[w] = true;
		if (kv__ix_converted(v, w, &inst[w]))
			continue; /* a helper that stopped halfway installed it */
		if (w >= KV_IXB_SLOT0) {
			ret = kv__ix_slot(ix, v, w, &sl);
			if (ret != 0)
				return ret;
			if (sl.a.verdict != KV_IX_DECIDED || !kv_ixw_frz(sl.cur))
				return -EAGAIN;
			if (kv_ix_body_maps(sl.cur))
				body = kv_ixw_body(1, false, kv_ixw_fp(sl.cur), kv_ixw_loc(sl.cur));
			else /* what was removed there, for an insert in flight */
				body = kv_ixw_body(0, false, kv_ixw_fp(sl.cur), kv_ixw_loc(sl.cur));
		}
		inst[w] = kv_ixw_make(KV_IXW_C, gen, body);
	}
	inst[KV_IXB_H0] = kv_ixb_h0(v->idx, next);
	ix->st.compactions++;
	ret = kv__ix_install(ix, v, inst, known, v->got | v->lack, v->got | v->lack, NULL);
	return ret < 0 ? ret : 0;
}

int
kv__ix_split(struct kv_index *ix, uint64_t idx, uint32_t epoch)
{
	uint64_t words[2][KV_IXB_WORDS];
	struct kv_ix_view v;
	bool fits = 2 * idx + 1 < ix->g.super.nbuckets, compact = false;
	unsigned room = 0;
	int ret;

	if (!fits) {
		/* Only a compaction can make room: not worth a freeze
		 * without a slot it would free. */
		ret = kv__ix_view_read(ix, idx, &v);
		if (ret != 0)
			return ret;
		ret = ix_compacts(ix, idx, &v, &compact, &room);
		if (ret == 0 && !compact)
			room = 0; /* kv__ix_test_no_compaction */
		if (ret == 0 && room == 0)
			return pm_error_set(-ENOSPC, "kv_index: bucket %llu is full, holds no removed"
				" entry and the region has no room for its children",
				(unsigned long long)idx);
	}
	for (;;) {
		ret = ix_freeze(ix, idx, epoch, &v);
		if (ret < 0)
			return ret;
		if (ret == 2)
			return 0; /* compacted by someone: re-read */
		if (ret == 1)
			break; /* forward proposed: children installed */
		if (ret == 3) {
			ret = ix_compact(ix, &v);
			if (ret == -EAGAIN)
				continue;
			return ret;
		}
		ret = ix_compacts(ix, idx, &v, &compact, &room);
		if (ret == -EAGAIN)
			continue;
		if (ret != 0)
			return ret;
		if (compact) {
			ret = ix_compact(ix, &v);
			if (ret == -EAGAIN)
				continue;
			return ret;
		}
		if (!fits) /* kv__ix_test_no_compaction */
			return pm_error_set(-ENOSPC, "kv_index: bucket %llu is full and the region"
				" has no room for its children", (unsigned long long)idx);
		ix->st.splits++;
		ret = ix_child_words(ix, idx, &v, words);
		if (ret == -EAGAIN)
			continue;
		if (ret != 0)
			return ret;
		ret = ix_install(ix, idx, words);
		if (ret != 0)
			return ret;
		break;
	}
	ret = kv__ix_view_read(ix, idx, &v);
	if (ret != 0)
		return ret;
	return kv__ix_forward_help(ix, idx, &v);
}
