// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/bztree_lin_test.cc -- recorded concurrent histories of the
// BzTree with 4-record nodes (so concurrent operations race with
// consolidations, splits and merges), checked for linearizability: upsert,
// remove and lookup against a map, insert, remove and lookup against a set;
// every MCAS algorithm and mode.
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <ds/bztree.h>

#include "ds/tests/bztree_test_util.h"
#include "ds/tests/mcas_lin.h"
#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace {

using bztest::TreeEnv;
using dstest::Variant;

constexpr unsigned kThreads = 4;
constexpr unsigned kOps = 250;
constexpr uint64_t kKeys = 24;
constexpr unsigned kRounds = 10;

using MapRecorder = lincheck::Recorder<lincheck::MapOp>;
using SetRecorder = lincheck::Recorder<lincheck::SetOp>;

void MapWorker(ds_bztree *t, MapRecorder::Handle *rec, unsigned id, unsigned seed)
{
	ds_bztree_thread *h;
	ASSERT_EQ(ds_bztree_thread_register(t, &h), 0);
	std::mt19937 rng(seed);
	for (unsigned n = 0; n < kOps; n++) {
		uint64_t k = rng() % kKeys;
		unsigned kind = rng() % 3;
		if (kind == 0) {
			uint64_t v = (uint64_t)id << 32 | n;
			auto tk = rec->invoke(lincheck::MapOp::put(k, v));
			int r = ds_bztree_upsert(h, k, v);
			ASSERT_GE(r, 0);
			rec->complete(tk, lincheck::MapOp::put(k, v, r == 0));
		} else if (kind == 1) {
			auto tk = rec->invoke(lincheck::MapOp::remove(k));
			int r = ds_bztree_remove(h, k);
			ASSERT_GE(r, 0);
			rec->complete(tk, lincheck::MapOp::remove(k, r == 1));
		} else {
			uint64_t v = 0;
			auto tk = rec->invoke(lincheck::MapOp::get(k));
			int r = ds_bztree_lookup(h, k, &v);
			ASSERT_GE(r, 0);
			rec->complete(tk, lincheck::MapOp::get(k, r == 1, v));
		}
	}
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
}

void SetWorker(ds_bztree *t, SetRecorder::Handle *rec, unsigned seed)
{
	ds_bztree_thread *h;
	ASSERT_EQ(ds_bztree_thread_register(t, &h), 0);
	std::mt19937 rng(seed);
	for (unsigned n = 0; n < kOps; n++)
		dstest::SetStep(rec, rng, rng() % kKeys,
			[h](uint64_t k) { return ds_bztree_insert(h, k, k); },
			[h](uint64_t k) { return ds_bztree_remove(h, k); },
			[h](uint64_t k) { return ds_bztree_lookup(h, k, nullptr); });
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
}

class BzTreeLin : public ::testing::TestWithParam<Variant> {
protected:
	void SetUp() override
	{
		DS_SETUP(env, "bz-lin-" + dstest::VariantName(GetParam()), GetParam(),
			dstest::SmallConfig(GetParam().alg, kThreads + 1, 64), 4, 2048);
	}

	// The tree's contents, through a fresh handle (quiescent), after
	// checking its invariants.
	bztest::Pairs Contents()
	{
		ds_bztree_thread *h;
		EXPECT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
		EXPECT_EQ(bztest::Check(h), "");
		bztest::Pairs p = bztest::Scan(h);
		EXPECT_EQ(ds_bztree_thread_unregister(&h), 0);
		return p;
	}

	TreeEnv env;
};

TEST_P(BzTreeLin, MapHistoriesAreLinearizable)
{
	{
		ds_bztree_thread *h;
		ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
		for (uint64_t k = 0; k < kKeys; k += 2)
			ASSERT_EQ(ds_bztree_insert(h, k, 1000 + k), 1);
		ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
	}
	for (unsigned round = 0; round < kRounds; round++) {
		bztest::Pairs initial = Contents();
		MapRecorder rec(kThreads, kOps);
		std::vector<std::thread> th;
		for (unsigned i = 0; i < kThreads; i++)
			th.emplace_back(MapWorker, env.ds, &rec.handle(i), i, round * 100 + i);
		for (auto &x : th)
			x.join();
		lincheck::Result r = lincheck::check(lincheck::MapModel(initial), rec.history());
		ASSERT_TRUE(r.ok) << "round " << round << ": " << r.explanation;
	}
	ds_bztree_thread *h;
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	ds_bztree_stats st;
	ASSERT_EQ(bztest::Check(h, &st), "");
	EXPECT_GT(st.splits + st.consolidations, 0u);
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
}

TEST_P(BzTreeLin, SetHistoriesAreLinearizable)
{
	for (unsigned round = 0; round < kRounds; round++) {
		std::vector<uint64_t> initial;
		for (const auto &kv : Contents())
			initial.push_back(kv.first);
		SetRecorder rec(kThreads, kOps);
		std::vector<std::thread> th;
		for (unsigned i = 0; i < kThreads; i++)
			th.emplace_back(SetWorker, env.ds, &rec.handle(i), round * 100 + 50 + i);
		for (auto &x : th)
			x.join();
		lincheck::Result r = lincheck::check(lincheck::SetModel(initial), rec.history());
		ASSERT_TRUE(r.ok) << "round " << round << ": " << r.explanation;
	}
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, BzTreeLin, ::testing::ValuesIn(dstest::AllVariants()),
	dstest::VariantNamer());

} // namespace
