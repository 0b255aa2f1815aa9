// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/index_paxos_test.cc -- the classic round's records and value
// rule (paxos.h): records are bound to their slot and promise, and the
// value a resolver proposes is the chosen value whenever one was chosen,
// for every acceptor state and promise quorum of groups of 3 and 5.
#include <cerrno>
#include <string>

#include <gtest/gtest.h>

extern "C" {
#include "kv/src/index/paxos.h"
}

#include "kv/tests/index_test_util.h"

namespace {

using namespace kvixtest;

TEST(IndexRecord, BoundToItsSlotAndPromise)
{
	const uint64_t p = kv_ixw_make_p(kGen, 1, 3, 17, 42);
	kv_ix_rec r;
	kv__ix_rec_seal(&r, 4096, p, KV_IX_ACC_FAST, Value(0));
	kv_ix_reply reply{};
	ASSERT_TRUE(kv__ix_rec_reply(&r, 4096, p, &reply));
	EXPECT_TRUE(reply.rec_known);
	EXPECT_EQ(reply.acc, KV_IX_ACC_FAST);
	EXPECT_EQ(reply.acc_body, Value(0));
	EXPECT_EQ(reply.word, p);
	// The record index is not part of what the record names.
	EXPECT_TRUE(kv__ix_rec_reply(&r, 4096, kv_ixw_make_p(kGen, 1, 3, 17, 43), &reply));
	// Another slot, another promise, another gen, a flipped bit: rejected.
	EXPECT_FALSE(kv__ix_rec_reply(&r, 4104, p, &reply));
	EXPECT_FALSE(kv__ix_rec_reply(&r, 4096, kv_ixw_make_p(kGen, 1, 4, 17, 42), &reply));
	EXPECT_FALSE(kv__ix_rec_reply(&r, 4096, kv_ixw_make_p(kGen + 1, 1, 3, 17, 42), &reply));
	for (unsigned w = 0; w < 4; w++) {
		kv_ix_rec d = r;
		reinterpret_cast<uint64_t *>(&d)[w] ^= 1u << 9;
		EXPECT_FALSE(kv__ix_rec_reply(&d, 4096, p, &reply)) << "word " << w;
	}
	kv_ix_rec zero{};
	EXPECT_FALSE(kv__ix_rec_reply(&zero, 4096, p, &reply)) << "never written";
}

TEST(IndexChoose, RejectsTooFewPromises)
{
	kv_ix_reply q[3] = {Reply(C(0, false, 0, 0)), Reply(C(0, false, 0, 0)), Reply(C(0, false, 0, 0))};
	uint64_t v;
	EXPECT_EQ(kv__ix_choose(q, 1, 3, Value(0), &v), -EINVAL);
	EXPECT_EQ(kv__ix_choose(q, 3, 4, Value(0), &v), -EINVAL);
	ASSERT_EQ(kv__ix_choose(q, 2, 3, Value(1), &v), 0);
	EXPECT_EQ(v, Value(1)) << "a fresh stage takes the resolver's own value";
}

// For every reachable state in which a value was chosen and every promise
// quorum without a commit word (a resolver that sees one stops there), the
// rule proposes the chosen value, whatever the resolver's own value.
void BruteForce(unsigned n, unsigned max_round, uint64_t *checked)
{
	ForEachQuorum(n, max_round, [&](const std::vector<const Acceptor *> &st,
					    const std::set<int> &chosen, unsigned mask) {
		if (chosen.size() != 1)
			return;
		std::vector<kv_ix_reply> q;
		bool committed = false;
		for (unsigned k = 0; k < n; k++) {
			if (mask & (1u << k)) {
				q.push_back(st[k]->reply);
				committed |= st[k]->committed >= 0;
			}
		}
		if (committed)
			return;
		for (int dflt = 0; dflt < 2; dflt++) {
			uint64_t v;
			ASSERT_EQ(kv__ix_choose(q.data(), (unsigned)q.size(), n, Value(dflt), &v), 0);
			(*checked)++;
			if (v == Value(*chosen.begin()))
				continue;
			std::string dump;
			for (unsigned k = 0; k < n; k++)
				dump += std::string(mask & (1u << k) ? " [Q" : " [") + " fast " +
					std::to_string(st[k]->fast) + " classic " +
					std::to_string(st[k]->classic) + "@" + std::to_string(st[k]->ballot) +
					" commit " + std::to_string(st[k]->committed) + "]";
			FAIL() << "proposed another value than the chosen:" << dump;
		}
	});
}

TEST(IndexChoose, ProposesTheChosenValueForEveryStateOfThreeAcceptors)
{
	uint64_t checked = 0;
	BruteForce(3, 2, &checked);
	EXPECT_GT(checked, 0u);
	RecordProperty("choices", std::to_string(checked));
}

TEST(IndexChoose, ProposesTheChosenValueForEveryStateOfFiveAcceptors)
{
	uint64_t checked = 0;
	BruteForce(5, 1, &checked);
	EXPECT_GT(checked, 0u);
	RecordProperty("choices", std::to_string(checked));
}

} // namespace
