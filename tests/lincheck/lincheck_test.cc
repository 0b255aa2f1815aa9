// SPDX-License-Identifier: BSD-3-Clause
// tests/lincheck/lincheck_test.cc -- the checker on hand-written histories
// that must pass or fail, and on random ones against a brute-force oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/lincheck_test_util.h"
#include "tests/lincheck/models.h"

namespace {

using lincheck::kPending;
using lincheck::Operation;
using lincheck::RegisterModel;
using lincheck::SetModel;
using lincheck::SetOp;
using lincheck::WordArrayModel;
using lincheck::WordOp;
using lincheck_test::At;
using lincheck_test::BruteForce;
using lincheck_test::Spread;

using WordHistory = std::vector<Operation<WordOp>>;
using SetHistory = std::vector<Operation<SetOp>>;

WordArrayModel Zeros(size_t n)
{
	return WordArrayModel(std::vector<uint64_t>(n, 0));
}

// A random sequential run of @ops ops spread out in time (see Spread()),
// all returned; then @pending of them never return and lose their output,
// and @pending more "ghost" ops are invoked and never take effect. The
// result is linearizable by construction.
WordHistory RandomWords(std::mt19937_64 &rng, size_t ops, size_t words, uint64_t spread, size_t pending)
{
	std::vector<uint64_t> mem(words, 0);
	WordHistory h;
	auto random_mcas = [&](bool match) {
		std::vector<lincheck::McasEntry> e;
		for (size_t i = 0, n = 1 + rng() % 3; i < n && i < words; i++) {
			size_t w;
			do
				w = rng() % words;
			while (std::any_of(e.begin(), e.end(), [&](const lincheck::McasEntry &x) { return x.index == w; }));
			e.push_back({w, match && rng() % 4 ? mem[w] : rng() % 4, rng() % 4});
		}
		return e;
	};
	for (size_t k = 0; k < ops; k++) {
		WordOp op;
		size_t i = rng() % words;
		switch (rng() % 3) {
		case 0:
			op = WordOp::read(i, mem[i]);
			break;
		case 1:
			op = WordOp::write(i, rng() % 4);
			mem[i] = op.value;
			break;
		default: {
			auto e = random_mcas(true);
			bool ok = std::all_of(e.begin(), e.end(),
				[&](const lincheck::McasEntry &x) { return mem[x.index] == x.expected; });
			if (ok)
				for (const auto &x : e)
					mem[x.index] = x.desired;
			op = WordOp::mcas(e, ok);
		}
		}
		Spread(rng, &h, op, k, spread, true);
	}
	for (size_t k = 0; k < pending && k < ops; k++) {
		size_t i = rng() % ops;  // perhaps the same op twice: fewer pending
		h[i].op.returned = false;
		h[i].ret = kPending;
	}
	for (size_t k = 0; k < pending; k++) {
		uint64_t call = rng() % (10 * ops);
		h.push_back(At(rng() % 2 ? WordOp::write(rng() % words, 100 + k) : WordOp::mcas(random_mcas(false)),
			call, kPending, 4));
	}
	std::shuffle(h.begin(), h.end(), rng);  // check() must not rely on input order
	return h;
}

// The set counterpart of RandomWords (no ghosts), over @keys keys.
SetHistory RandomSet(std::mt19937_64 &rng, size_t ops, uint64_t keys, uint64_t spread)
{
	std::vector<bool> in(keys, false);
	SetHistory h;
	for (size_t k = 0; k < ops; k++) {
		uint64_t key = rng() % keys;
		SetOp op;
		switch (rng() % 3) {
		case 0:
			op = SetOp::insert(key, !in[key]);
			in[key] = true;
			break;
		case 1:
			op = SetOp::remove(key, in[key]);
			in[key] = false;
			break;
		default:
			op = SetOp::contains(key, in[key]);
		}
		Spread(rng, &h, op, k, spread);
	}
	return h;
}

TEST(WordArray, EmptyAndSequentialHistoriesPass)
{
	EXPECT_TRUE(lincheck::check(Zeros(2), WordHistory{}).ok);
	WordHistory h = {
		At(WordOp::write(0, 1), 0, 1),
		At(WordOp::read(0, 1), 2, 3),
		At(WordOp::mcas({{0, 1, 2}, {1, 0, 3}}, true), 4, 5),
		At(WordOp::read(1, 3), 6, 7),
		At(WordOp::mcas({{0, 1, 9}}, false), 8, 9),
		At(WordOp::read(0, 2), 10, 11),
	};
	auto r = lincheck::check(Zeros(2), h);
	EXPECT_TRUE(r.ok) << r.explanation;
	EXPECT_EQ(r.ops, h.size());
	EXPECT_FALSE(r.timed_out_or_limit);
}

TEST(WordArray, OverlapWhereOnlyOneOrderWorks)
{
	// Invoked first but must take effect second: the read sees write 1 last.
	WordHistory h = {
		At(WordOp::write(0, 1), 0, 5),
		At(WordOp::write(0, 2), 1, 6),
		At(WordOp::read(0, 1), 7, 8),
	};
	auto r = lincheck::check(Zeros(1), h);
	EXPECT_TRUE(r.ok) << r.explanation;

	// A chain of three overlapping MCASes, invoked in the reverse of the only
	// order in which all three succeed.
	WordHistory chain = {
		At(WordOp::mcas({{0, 2, 3}, {1, 0, 1}}, true), 0, 10),
		At(WordOp::mcas({{0, 1, 2}}, true), 1, 11),
		At(WordOp::mcas({{0, 0, 1}}, true), 2, 12),
		At(WordOp::read(0, 3), 13, 14),
		At(WordOp::read(1, 1), 15, 16),
	};
	r = lincheck::check(Zeros(2), chain);
	EXPECT_TRUE(r.ok) << r.explanation;
}

TEST(WordArray, PendingOpsMayOrMayNotTakeEffect)
{
	auto write7 = At(WordOp::write(0, 7), 0, kPending, 1);
	EXPECT_TRUE(lincheck::check(Zeros(1), WordHistory{write7, At(WordOp::read(0, 0), 1, 2)}).ok);
	EXPECT_TRUE(lincheck::check(Zeros(1),
		WordHistory{write7, At(WordOp::read(0, 0), 1, 2), At(WordOp::read(0, 7), 3, 4)}).ok);
	// Once seen, an effect cannot be undone.
	EXPECT_FALSE(lincheck::check(Zeros(1),
		WordHistory{write7, At(WordOp::read(0, 7), 1, 2), At(WordOp::read(0, 0), 3, 4)}).ok);

	// A pending MCAS (result unknown) took effect on both words or on none.
	auto mcas = At(WordOp::mcas({{0, 0, 5}, {1, 0, 5}}), 0, kPending, 1);
	EXPECT_TRUE(lincheck::check(Zeros(2),
		WordHistory{mcas, At(WordOp::read(0, 5), 2, 3), At(WordOp::read(1, 5), 4, 5)}).ok);
	EXPECT_TRUE(lincheck::check(Zeros(2),
		WordHistory{mcas, At(WordOp::read(0, 0), 2, 3), At(WordOp::read(1, 0), 4, 5)}).ok);
	EXPECT_FALSE(lincheck::check(Zeros(2),
		WordHistory{mcas, At(WordOp::read(0, 5), 2, 3), At(WordOp::read(1, 0), 4, 5)}).ok);
	// A pending read constrains nothing.
	EXPECT_TRUE(lincheck::check(Zeros(1), WordHistory{At(WordOp::read(0), 0, kPending)}).ok);
}

TEST(WordArray, StaleReadAfterCompletedWriteFails)
{
	WordHistory h = {
		At(WordOp::write(0, 1), 0, 1),
		At(WordOp::read(0, 0), 2, 3, 1),
	};
	auto r = lincheck::check(Zeros(1), h);
	EXPECT_FALSE(r.ok);
	EXPECT_FALSE(r.timed_out_or_limit);
	EXPECT_NE(r.explanation.find("read(0) -> 0"), std::string::npos) << r.explanation;
}

TEST(WordArray, McasSucceedingAfterWriteChangedExpectedFails)
{
	WordHistory h = {
		At(WordOp::write(1, 5), 0, 1),
		At(WordOp::mcas({{0, 0, 1}, {1, 0, 1}}, true), 2, 3, 1),
	};
	EXPECT_FALSE(lincheck::check(Zeros(2), h).ok);
	// Overlapping with the write, it could have gone first: legal.
	h[1].call = 0;
	EXPECT_TRUE(lincheck::check(Zeros(2), h).ok);
}

TEST(WordArray, ReadsSeeingHalfAnMcasFail)
{
	WordHistory h = {
		At(WordOp::mcas({{0, 0, 1}, {1, 0, 1}}, true), 0, 10),
		At(WordOp::read(0, 1), 1, 2, 1),
		At(WordOp::read(1, 0), 3, 4, 1),
	};
	EXPECT_FALSE(lincheck::check(Zeros(2), h).ok);
	// Read in the other order, both are explained by the MCAS landing between them.
	h[1].op = WordOp::read(1, 0);
	h[2].op = WordOp::read(0, 1);
	EXPECT_TRUE(lincheck::check(Zeros(2), h).ok);
}

TEST(WordArray, McasFailingWithoutCauseFails)
{
	// Strong MCAS: it fails only if some word differs.
	WordHistory h = {At(WordOp::mcas({{0, 0, 1}}, false), 0, 1)};
	EXPECT_FALSE(lincheck::check(Zeros(1), h).ok);
}

TEST(Register, ReadWriteCas)
{
	WordHistory h = {
		At(WordOp::cas(0, 3, 4, true), 0, 1),
		At(WordOp::cas(0, 3, 5, false), 2, 3),
		At(WordOp::write(0, 9), 4, 5),
		At(WordOp::read(0, 9), 6, 7),
	};
	EXPECT_TRUE(lincheck::check(RegisterModel(3), h).ok);
	h[1].op = WordOp::cas(0, 3, 5, true);
	EXPECT_FALSE(lincheck::check(RegisterModel(3), h).ok);
}

TEST(Set, ContainsFalseAfterCompletedInsertFails)
{
	SetHistory h = {
		At(SetOp::insert(7, true), 0, 1),
		At(SetOp::contains(7, false), 2, 3, 1),
	};
	EXPECT_FALSE(lincheck::check(SetModel(), h).ok);
	h.push_back(At(SetOp::remove(7, true), 1, 2, 2));  // a remove in between explains it
	EXPECT_TRUE(lincheck::check(SetModel(), h).ok);
}

TEST(Set, TwoSuccessfulInsertsWithoutRemoveFail)
{
	SetHistory h = {
		At(SetOp::insert(7, true), 0, 5),
		At(SetOp::insert(7, true), 1, 6, 1),  // even overlapping
	};
	EXPECT_FALSE(lincheck::check(SetModel(), h).ok);
	EXPECT_FALSE(lincheck::check(SetModel({7}), SetHistory{At(SetOp::insert(7, true), 0, 1)}).ok);
	h[1].op = SetOp::insert(7, false);
	EXPECT_TRUE(lincheck::check(SetModel(), h).ok);
}

TEST(Set, PartitionChecksEachKeyAlone)
{
	std::mt19937_64 rng(7);
	SetHistory h = RandomSet(rng, 20000, 64, 4);
	auto r = lincheck::check(SetModel(), h);
	EXPECT_TRUE(r.ok) << r.explanation;

	h.push_back(At(SetOp::contains(1000, true), 0, 1, 5));  // never inserted
	r = lincheck::check(SetModel(), h);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.explanation.find("sub-history 64 of 65"), std::string::npos) << r.explanation;
	EXPECT_NE(r.explanation.find("contains(1000) -> true"), std::string::npos) << r.explanation;
}

TEST(Explanation, NamesShortestFailingPrefixAndPartialLinearization)
{
	WordHistory h = {
		At(WordOp::write(0, 1), 0, 1),
		At(WordOp::read(0, 1), 2, 3),
		At(WordOp::read(0, 0), 4, 5, 1),
		At(WordOp::write(0, 2), 6, 7),
		At(WordOp::read(0, 2), 8, 9),
	};
	auto r = lincheck::check(Zeros(1), h);
	ASSERT_FALSE(r.ok);
	const std::string &e = r.explanation;
	EXPECT_NE(e.find("shortest failing prefix is the 3 ops invoked by time 5"), std::string::npos) << e;
	EXPECT_NE(e.find("op #2 (thread 1, [4, 5]) read(0) -> 0 returns"), std::string::npos) << e;
	EXPECT_NE(e.find("write(0, 1)  => [1]"), std::string::npos) << e;
	EXPECT_NE(e.find("from state [1]"), std::string::npos) << e;
}

TEST(Limits, StateLimitIsInconclusiveNeverOk)
{
	std::mt19937_64 rng(1);
	WordHistory h = RandomWords(rng, 50, 4, 3, 0);
	lincheck::Options o;
	o.max_states = 5;
	auto r = lincheck::check(Zeros(4), h, o);
	EXPECT_FALSE(r.ok);
	EXPECT_TRUE(r.timed_out_or_limit);
	EXPECT_EQ(r.explanation.rfind("inconclusive", 0), 0u) << r.explanation;
}

TEST(Limits, MalformedHistoryIsRejected)
{
	auto r = lincheck::check(Zeros(1), WordHistory{At(WordOp::read(0, 0), 5, 4)});
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.explanation.find("malformed"), std::string::npos);
}

// Small random histories, correct and with one output changed, checked by
// the search and by brute force: the verdicts must agree.
TEST(Random, SmallHistoriesAgreeWithBruteForce)
{
	std::mt19937_64 rng(42);
	int mutated = 0, detected = 0;
	for (int iter = 0; iter < 300; iter++) {
		WordHistory h = RandomWords(rng, 7, 2, 2, iter % 3);
		ASSERT_TRUE(BruteForce(Zeros(2), h));
		auto r = lincheck::check(Zeros(2), h);
		ASSERT_TRUE(r.ok) << "iteration " << iter << ": " << r.explanation;

		std::vector<size_t> outputs;
		for (size_t i = 0; i < h.size(); i++)
			if (h[i].op.returned && h[i].op.kind != WordOp::Kind::kWrite)
				outputs.push_back(i);
		if (outputs.empty())
			continue;
		WordOp &op = h[outputs[rng() % outputs.size()]].op;
		if (op.kind == WordOp::Kind::kRead)
			op.value = (op.value + 1 + rng() % 3) % 4;
		else
			op.success = !op.success;
		bool truth = BruteForce(Zeros(2), h);
		r = lincheck::check(Zeros(2), h);
		ASSERT_EQ(r.ok, truth) << "iteration " << iter << ": " << r.explanation;
		ASSERT_FALSE(r.timed_out_or_limit);
		mutated++;
		detected += !truth;
	}
	// Most changed outputs are impossible; if none were, this test tests nothing.
	EXPECT_GT(detected, mutated / 4);
}

TEST(Random, SmallSetHistoriesAgreeWithBruteForce)
{
	std::mt19937_64 rng(43);
	for (int iter = 0; iter < 300; iter++) {
		SetHistory h = RandomSet(rng, 8, 3, 2);
		ASSERT_TRUE(lincheck::check(SetModel(), h).ok) << iter;
		SetOp &op = h[rng() % h.size()].op;
		op.result = !op.result;
		op.returned = true;
		ASSERT_EQ(lincheck::check(SetModel(), h).ok, BruteForce(SetModel(), h)) << iter;
	}
}

// Large random histories pass; with one read changed to a value no op ever
// writes, they are impossible and must never be reported ok.
TEST(Random, LargeHistoriesPassAndImpossibleReadsFail)
{
	std::mt19937_64 rng(44);
	for (int iter = 0; iter < 10; iter++) {
		WordHistory h = RandomWords(rng, 400, 8, 3, 4);
		auto r = lincheck::check(Zeros(8), h);
		ASSERT_TRUE(r.ok) << "iteration " << iter << ": " << r.explanation;

		std::vector<size_t> reads;
		for (size_t i = 0; i < h.size(); i++)
			if (h[i].op.kind == WordOp::Kind::kRead && h[i].op.returned)
				reads.push_back(i);
		ASSERT_FALSE(reads.empty());
		size_t victim = reads[rng() % reads.size()];
		h[victim].op.value = 1000;
		r = lincheck::check(Zeros(8), h);
		ASSERT_FALSE(r.ok) << "iteration " << iter;
		ASSERT_FALSE(r.timed_out_or_limit) << r.explanation;
		EXPECT_NE(r.explanation.find("read(" + std::to_string(h[victim].op.index) + ") -> 1000"),
			std::string::npos) << r.explanation;
	}
}

}  // namespace
