// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/index_analyse_test.cc -- the index's word layout (word.h) and the
// readers' decision rule (analyse.h): field round trips, validity, the
// order on words, and the rule checked by brute force against Fast Paxos's
// definition of "chosen" over every combination of acceptor states and
// every set of replies, for groups of 3 and 5.
#include <cerrno>
#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "kv/tests/index_test_util.h"

namespace {

using namespace kvixtest;

TEST(IndexWord, FieldsRoundTrip)
{
	const uint64_t loc = (UINT64_C(1) << 35) - 1;
	uint64_t w = kv_ixw_make(KV_IXW_F, 255, kv_ixw_body(2, true, 0xffff, loc));
	EXPECT_EQ(kv_ixw_tag(w), KV_IXW_F);
	EXPECT_EQ(kv_ixw_gen(w), 255u);
	EXPECT_EQ(kv_ixw_stage(w), 2u);
	EXPECT_TRUE(kv_ixw_frz(w));
	EXPECT_EQ(kv_ixw_fp(w), 0xffffu);
	EXPECT_EQ(kv_ixw_loc(w), loc);
	uint64_t p = kv_ixw_make_p(1, 3, KV_IXW_MAX_ROUND, 1023, (1u << 28) - 1);
	EXPECT_EQ(kv_ixw_tag(p), KV_IXW_P);
	EXPECT_EQ(kv_ixw_gen(p), 1u);
	EXPECT_EQ(kv_ixw_stage(p), 3u);
	EXPECT_EQ(kv_ixw_round(p), KV_IXW_MAX_ROUND);
	EXPECT_EQ(kv_ixw_cid(p), 1023u);
	EXPECT_EQ(kv_ixw_rec(p), (1u << 28) - 1);
}

TEST(IndexWord, ValidityRejectsWhatReadersMustNotFollow)
{
	EXPECT_TRUE(kv_ixw_valid(C(0, false, 0, 0), kGen));
	EXPECT_FALSE(kv_ixw_valid(0, kGen)) << "zero-filled memory (a lost pool)";
	EXPECT_FALSE(kv_ixw_valid(C(0, false, 0, 0), kGen + 1)) << "another incarnation";
	EXPECT_FALSE(kv_ixw_valid(C(0, false, 0, 0), 0));
	EXPECT_FALSE(kv_ixw_valid(C(0, false, 0, 0) | UINT64_C(3) << 62, kGen)) << "tag 11";
	EXPECT_TRUE(kv_ixw_valid(C(0, false, 1, 7), kGen))
		<< "an EMPTY a compaction made keeps the removed entry (word.h)";
	EXPECT_FALSE(kv_ixw_valid(C(0, true, 0, 0), kGen)) << "stage 0 cannot be frozen";
	EXPECT_FALSE(kv_ixw_valid(C(3, false, 1, 1), kGen)) << "stage 3 is FROZEN-DEAD only";
	EXPECT_FALSE(kv_ixw_valid(F(0, false, 0, 0), kGen)) << "no fast round at stage 0";
	EXPECT_FALSE(kv_ixw_valid(kv_ixw_make_p(kGen, 0, 1, 1, 1), kGen)) << "no P at stage 0";
	EXPECT_FALSE(kv_ixw_valid(kv_ixw_make_p(kGen, 1, 0, 1, 1), kGen)) << "round 0";
	EXPECT_TRUE(kv_ixw_valid(kv_ixw_make_p(kGen, 1, 1, 0, 0), kGen));
	EXPECT_TRUE(kv_ixw_valid(C(3, true, 5, 9), kGen));
}

TEST(IndexWord, WordsOfOneGenAreTotallyOrderedByStageFormAndBallot)
{
	// C(s-1) < F(s) < P(s, b1) < P(s, b2) < C(s) < F(s+1)
	std::vector<uint64_t> up = {
		C(0, false, 0, 0),
		F(1, false, 3, 4),
		kv_ixw_make_p(kGen, 1, 1, 9, 0),
		kv_ixw_make_p(kGen, 1, 2, 1, 0),
		kv_ixw_make_p(kGen, 1, 2, 2, 0),
		C(1, false, 3, 4),
		F(2, false, 3, 4),
		kv_ixw_make_p(kGen, 2, 1, 0, 0),
		C(2, true, 3, 4),
		F(3, true, 3, 4),
		C(3, true, 3, 4),
	};
	for (size_t i = 0; i < up.size(); i++)
		for (size_t j = 0; j < up.size(); j++)
			EXPECT_EQ(kv_ixw_cmp(up[i], up[j]), i < j ? -1 : i > j ? 1 : 0) << i << " vs " << j;
}

TEST(IndexWord, ImpliedPredecessor)
{
	uint64_t b;
	ASSERT_TRUE(kv_ixw_implied(F(1, false, 3, 4), &b));
	EXPECT_EQ(b, kv_ixw_body(0, false, 0, 0));
	ASSERT_TRUE(kv_ixw_implied(C(1, true, 0, 0), &b)); // FROZEN-EMPTY
	EXPECT_EQ(b, kv_ixw_body(0, false, 0, 0));
	ASSERT_TRUE(kv_ixw_implied(F(2, false, 3, 4), &b)); // DEAD -> LIVE
	EXPECT_EQ(b, kv_ixw_body(1, false, 3, 4));
	ASSERT_TRUE(kv_ixw_implied(C(2, true, 3, 4), &b)); // FROZEN-LIVE -> LIVE
	EXPECT_EQ(b, kv_ixw_body(1, false, 3, 4));
	ASSERT_TRUE(kv_ixw_implied(F(3, true, 3, 4), &b)); // FROZEN-DEAD -> DEAD
	EXPECT_EQ(b, kv_ixw_body(2, false, 3, 4));
	ASSERT_TRUE(kv_ixw_implied(kv_ixw_make_p(kGen, 1, 1, 1, 1), &b));
	EXPECT_FALSE(kv_ixw_implied(kv_ixw_make_p(kGen, 2, 1, 1, 1), &b)) << "in the record";
}

kv_ix_analysis Analyse(const std::vector<kv_ix_reply> &r, unsigned n, bool persisted)
{
	kv_ix_analysis a;
	EXPECT_EQ(kv__ix_analyse(r.data(), (unsigned)r.size(), n, kGen, persisted, &a), 0);
	return a;
}

TEST(IndexAnalyse, TheRulesOnTypicalReplies)
{
	const uint64_t live = kv_ixw_body(1, false, 3, 4), empty = kv_ixw_body(0, false, 0, 0);
	// All EMPTY.
	auto a = Analyse({Reply(C(0, false, 0, 0)), Reply(C(0, false, 0, 0))}, 3, false);
	EXPECT_EQ(a.verdict, KV_IX_DECIDED);
	EXPECT_EQ(a.body, empty);
	// A committed LIVE beside a lagging EMPTY.
	a = Analyse({Reply(C(0, false, 0, 0)), Reply(C(1, false, 3, 4))}, 3, false);
	EXPECT_EQ(a.verdict, KV_IX_DECIDED);
	EXPECT_EQ(a.body, live);
	// All three fast-accepted: decided only with the read's persist.
	std::vector<kv_ix_reply> fff = {Reply(F(1, false, 3, 4)), Reply(F(1, false, 3, 4)),
		Reply(F(1, false, 3, 4))};
	EXPECT_EQ(Analyse(fff, 3, true).verdict, KV_IX_DECIDED);
	EXPECT_EQ(Analyse(fff, 3, false).verdict, KV_IX_UNDETERMINED);
	// Two of two fast-accepted, the third unknown: possibly chosen.
	a = Analyse({Reply(F(1, false, 3, 4)), Reply(F(1, false, 3, 4))}, 3, true);
	EXPECT_EQ(a.verdict, KV_IX_UNDETERMINED);
	// One fast acceptance of two replies: not chosen; EMPTY is current.
	a = Analyse({Reply(F(1, false, 3, 4)), Reply(C(0, false, 0, 0))}, 3, true);
	EXPECT_EQ(a.verdict, KV_IX_NOT_CHOSEN);
	EXPECT_EQ(a.body, empty);
	// A P word whose record is unknown.
	a = Analyse({Reply(kv_ixw_make_p(kGen, 1, 1, 2, 5)), Reply(C(0, false, 0, 0))}, 3, true);
	EXPECT_EQ(a.verdict, KV_IX_NEED_RECORDS);
	// Classic acceptances of one ballot by a majority.
	const uint32_t ballot = 1u << KV_IXW_CID_BITS | 2; // round 1, client 2
	a = Analyse({Promise(1, 1, 2, ballot + 2, live), Promise(1, 1, 2, ballot + 2, live)}, 3, false);
	EXPECT_EQ(a.verdict, KV_IX_DECIDED);
	EXPECT_EQ(a.body, live);
	// A remove (stage 2) fast-accepted by one of three over a decided
	// LIVE: stage 2 was not chosen, the LIVE is current.
	a = Analyse({Reply(F(2, false, 3, 4)), Reply(C(1, false, 3, 4)), Reply(C(1, false, 3, 4))},
		3, true);
	EXPECT_EQ(a.verdict, KV_IX_NOT_CHOSEN);
	EXPECT_EQ(a.stage, 2u);
	EXPECT_EQ(a.body, live);
}

TEST(IndexAnalyse, DamagedAndForeignWordsDoNotCount)
{
	auto a = Analyse({Reply(0), Reply(C(1, false, 3, 4)), Reply(UINT64_MAX)}, 3, true);
	EXPECT_EQ(a.verdict, KV_IX_TOO_FEW);
	EXPECT_EQ(a.members, 1u);
	uint64_t other = kv_ixw_make(KV_IXW_C, kGen + 1, kv_ixw_body(1, false, 3, 4));
	a = Analyse({Reply(other), Reply(C(0, false, 0, 0))}, 3, true);
	EXPECT_EQ(a.verdict, KV_IX_TOO_FEW);
	kv_ix_analysis out;
	kv_ix_reply r[3] = {};
	EXPECT_EQ(kv__ix_analyse(r, 3, 4, kGen, true, &out), -EINVAL);
	EXPECT_EQ(kv__ix_analyse(r, 4, 3, kGen, true, &out), -EINVAL);
	EXPECT_EQ(kv__ix_analyse(r, 3, 3, kGen, true, nullptr), -EINVAL);
}

// Every state of @n acceptors with at most one value chosen, every set of
// at least f+1 replies, with and without the read's persist: a "decided v"
// verdict means v is chosen, a "not chosen" verdict means nothing is.
void BruteForce(unsigned n, unsigned max_round, uint64_t *checked, uint64_t *decided,
	uint64_t *not_chosen)
{
	ForEachQuorum(n, max_round, [&](const std::vector<const Acceptor *> &st,
					    const std::set<int> &chosen, unsigned mask) {
		std::vector<kv_ix_reply> r;
		for (unsigned k = 0; k < n; k++)
			if (mask & (1u << k))
				r.push_back(st[k]->reply);
		for (bool persisted : {false, true}) {
			kv_ix_analysis a;
			ASSERT_EQ(kv__ix_analyse(r.data(), (unsigned)r.size(), n, kGen, persisted, &a), 0);
			(*checked)++;
			if (a.verdict == KV_IX_DECIDED && a.stage == 0) {
				// Stage 0 is always EMPTY: stage 1 must not be chosen.
				ASSERT_TRUE(chosen.empty()) << "EMPTY, but a value was chosen";
				ASSERT_EQ(a.body, kv_ixw_body(0, false, 0, 0));
			} else if (a.verdict == KV_IX_DECIDED) {
				(*decided)++;
				ASSERT_EQ(chosen.size(), 1u) << "decided, but nothing was chosen";
				ASSERT_EQ(a.body, Value(*chosen.begin())) << "decided the wrong value";
			} else if (a.verdict == KV_IX_NOT_CHOSEN) {
				(*not_chosen)++;
				ASSERT_TRUE(chosen.empty()) << "said not chosen, but a value was";
				ASSERT_EQ(a.body, kv_ixw_body(0, false, 0, 0));
			} else {
				ASSERT_TRUE(a.verdict == KV_IX_UNDETERMINED) << a.verdict;
			}
		}
	});
}

TEST(IndexAnalyse, SoundForEveryStateOfThreeAcceptors)
{
	uint64_t checked = 0, decided = 0, not_chosen = 0;
	BruteForce(3, 2, &checked, &decided, &not_chosen);
	EXPECT_GT(decided, 0u);
	EXPECT_GT(not_chosen, 0u);
	RecordProperty("verdicts", std::to_string(checked));
}

TEST(IndexAnalyse, SoundForEveryStateOfFiveAcceptors)
{
	uint64_t checked = 0, decided = 0, not_chosen = 0;
	BruteForce(5, 1, &checked, &decided, &not_chosen);
	EXPECT_GT(decided, 0u);
	EXPECT_GT(not_chosen, 0u);
	RecordProperty("verdicts", std::to_string(checked));
}

} // namespace
