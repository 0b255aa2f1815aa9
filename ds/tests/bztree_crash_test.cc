// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/bztree_crash_test.cc -- the persistent BzTree under the crash
// simulator (pm/crashsim.h). At every crash point of small single-threaded
// workloads whose operations split, consolidate, merge and rebalance nodes,
// at sampled points of a 2-thread one, and at every point of the tree's
// creation (on a zeroed area and over a used one), each post-crash image is recovered (mcas_pmem_open, then
// ds_bztree_pmem_open, on the same pool) and must show: the invariants;
// every completed operation and all or nothing of the one in flight per
// thread; every arena node reachable or free (none leaked); and a tree that
// keeps working.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/crashsim.h>
#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>

#include "ds/tests/bztree_test_util.h"
#include "ds/tests/mcas_crash.h"
#include "pm/tests/test_util.h"

namespace {

using bztest::TreeEnv;
using dstest::Variant;

constexpr unsigned kCapacity = 4;
constexpr uint64_t kArena = 40;

using Map = std::map<uint64_t, uint64_t>;

enum class Kind { kInsert, kUpsert, kUpdate, kRemove };

struct Op {
	Kind kind;
	uint64_t key, value;
	int expect; // what the call must return
};

// The tree for dstest::CrashWorld.
struct BzTreeCrash {
	using Thread = ds_bztree_thread;
	using State = Map;
	using Op = ::Op;
	static constexpr const char *kOpen = "ds_bztree_pmem_open";

	static int Register(ds_bztree *t, ds_bztree_thread **hp)
	{
		return ds_bztree_thread_register(t, hp);
	}
	static int Unregister(ds_bztree_thread **hp) { return ds_bztree_thread_unregister(hp); }
	static int Apply(ds_bztree_thread *h, const Op &op)
	{
		return op.kind == Kind::kInsert ? ds_bztree_insert(h, op.key, op.value) :
			op.kind == Kind::kUpsert ? ds_bztree_upsert(h, op.key, op.value) :
			op.kind == Kind::kUpdate ? ds_bztree_update(h, op.key, op.value) :
						   ds_bztree_remove(h, op.key);
	}

	// Thread t owns the keys k with k % threads == t.
	static Map Owned(ds_bztree_thread *h, unsigned t, unsigned threads)
	{
		Map mine;
		for (auto [k, v] : bztest::Scan(h))
			if (k % threads == t)
				mine[k] = v;
		return mine;
	}

	static std::string Describe(const Map &s)
	{
		std::string r = "{";
		for (auto [k, v] : s)
			r += (r.size() > 1 ? "," : "") + std::to_string(k) + ":" + std::to_string(v);
		return r + "}";
	}

	static std::string Recovered(const TreeEnv &, ds_bztree_thread *h)
	{
		ds_bztree_stats st;
		std::string err = bztest::Check(h, &st);
		if (!err.empty())
			return err;
		if (st.retired != 0 || st.leaves + st.inner + st.free != kArena)
			return std::to_string(st.leaves + st.inner) + " reachable + " +
				std::to_string(st.free) + " free != " + std::to_string(kArena) +
				" nodes";
		return "";
	}

	static std::string Fresh(ds_bztree_thread *h)
	{
		ds_bztree_stats st;
		std::string err = bztest::Check(h, &st);
		return !err.empty() || st.size != 0 || st.free != kArena - 1 ? "tree: " + err : "";
	}

	// The recovered tree must still work: a new key in and out.
	static std::string Exercise(ds_bztree_thread *h)
	{
		uint64_t v = 0;
		if (ds_bztree_insert(h, 1000, 1) != 1 || ds_bztree_lookup(h, 1000, &v) != 1 ||
				v != 1 || ds_bztree_remove(h, 1000) != 1)
			return "the recovered tree does not work";
		std::string err = bztest::Check(h);
		return err.empty() ? "" : "after using the recovered tree: " + err;
	}
};

// Everything the workload and the check share. The check runs in a process
// forked at the crash point, so it sees these fields as they were then.
using World = dstest::CrashWorld<bztest::BzTreeOps, BzTreeCrash>;

// Model: the results and states of @ops from @initial, for thread @t.
// Model: the results and states of @ops from @initial, into @out and
// @states.
void PlanInto(std::vector<Op> *out, std::vector<Map> *states, const Map &initial,
	const std::vector<Op> &ops)
{
	Map s = initial;
	states->push_back(s);
	for (Op op : ops) {
		bool present = s.count(op.key) == 1;
		switch (op.kind) {
		case Kind::kInsert:
			op.expect = !present;
			s.emplace(op.key, op.value);
			break;
		case Kind::kUpsert:
			op.expect = !present;
			s[op.key] = op.value;
			break;
		case Kind::kUpdate:
			op.expect = present;
			if (present)
				s[op.key] = op.value;
			break;
		case Kind::kRemove:
			op.expect = present;
			s.erase(op.key);
			break;
		}
		out->push_back(op);
		states->push_back(s);
	}
}

void Plan(World *w, unsigned t, const Map &initial, const std::vector<Op> &ops)
{
	PlanInto(&w->ops[t], &w->states[t], initial, ops);
}

class BzTreeCrashTest : public testing::TestWithParam<Variant> {
protected:
	void SetUp() override
	{
		name = dstest::CrashPoolName("bz");
		DS_SETUP(w.env, name, GetParam(), dstest::CrashConfig(GetParam().alg), kCapacity,
			kArena);
	}

	// Every crash point if @one_in is 1, else one in @one_in.
	pm_crashsim_config SimConfig(unsigned one_in, unsigned max_images = 16) const
	{
		return pmtest::SimConfig(name.c_str(), one_in, max_images);
	}

	ds_bztree_stats Stats()
	{
		ds_bztree_thread *h = nullptr;
		ds_bztree_stats st {};
		EXPECT_EQ(ds_bztree_thread_register(w.env.ds, &h), 0);
		EXPECT_EQ(bztest::Check(h, &st), "");
		EXPECT_EQ(ds_bztree_thread_unregister(&h), 0);
		return st;
	}

	// Fills the tree with @initial and runs the workload under the
	// simulator over the whole persistent state (tree area, MCAS area).
	pmtest::CrashRun Simulate(const Map &initial, const pm_crashsim_config &cfg,
		pm_crashsim_check_fn check = World::CheckOps)
	{
		ds_bztree_thread *h = nullptr;
		EXPECT_EQ(ds_bztree_thread_register(w.env.ds, &h), 0);
		for (auto [k, v] : initial)
			EXPECT_EQ(ds_bztree_insert(h, k, v), 1);
		EXPECT_EQ(ds_bztree_thread_unregister(&h), 0);
		before = Stats();
		pmtest::CrashRun r = w.Simulate(cfg, w.env.RootSize(), World::RunAll, check);
		after = Stats();
		std::printf("%-40s SMOs in the workload: %" PRIu64 " consolidations, %" PRIu64
			" splits, %" PRIu64 " merges, %" PRIu64 " rebalances\n", cfg.name,
			after.consolidations - before.consolidations, after.splits - before.splits,
			after.merges - before.merges, after.rebalances - before.rebalances);
		return r;
	}

	World w;
	std::string name;
	ds_bztree_stats before {}, after {};
};

// Inserts into full leaves: consolidations and splits up to a new root.
TEST_P(BzTreeCrashTest, EveryCrashPointOfGrowth)
{
	w.SetThreads(1);
	const Map initial = { { 10, 1 }, { 20, 2 }, { 30, 3 } };
	Plan(&w, 0, initial, { { Kind::kInsert, 40, 4 }, { Kind::kUpsert, 20, 22 },
		{ Kind::kInsert, 50, 5 }, { Kind::kInsert, 25, 6 }, { Kind::kRemove, 10, 0 },
		{ Kind::kInsert, 35, 7 }, { Kind::kInsert, 45, 8 }, { Kind::kInsert, 15, 9 } });
	pmtest::CrashRun r = Simulate(initial, SimConfig(1));
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
	EXPECT_EQ(r.st.failures, 0u);
	EXPECT_GT(after.splits, before.splits);
	EXPECT_GT(after.consolidations, before.consolidations);
}

// Removes from a three-level tree: merges, rebalances, the root collapsing.
TEST_P(BzTreeCrashTest, EveryCrashPointOfShrinking)
{
	w.SetThreads(1);
	Map initial;
	for (uint64_t k = 1; k <= 12; k++)
		initial[k * 10] = k;
	Plan(&w, 0, initial, { { Kind::kRemove, 10, 0 }, { Kind::kRemove, 20, 0 },
		{ Kind::kUpdate, 30, 33 }, { Kind::kRemove, 40, 0 }, { Kind::kRemove, 30, 0 },
		{ Kind::kUpdate, 30, 1 }, { Kind::kRemove, 60, 0 }, { Kind::kRemove, 50, 0 },
		{ Kind::kRemove, 90, 0 }, { Kind::kRemove, 80, 0 } });
	pmtest::CrashRun r = Simulate(initial, SimConfig(1));
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
	EXPECT_EQ(r.st.failures, 0u);
	EXPECT_GT(after.merges + after.rebalances, before.merges + before.rebalances);
}

// Crash, recover, run 24 updates on another thread (more MCAS than the
// thread has descriptors; leaves consolidate and split again), crash again:
// sampled points of both lives, two images each (issue 20).
TEST_P(BzTreeCrashTest, CrashRecoverReuseCrashAgain)
{
	w.SetThreads(1);
	const Map initial = { { 10, 1 }, { 20, 2 }, { 30, 3 } };
	Plan(&w, 0, initial, { { Kind::kInsert, 40, 4 }, { Kind::kUpsert, 20, 22 },
		{ Kind::kRemove, 10, 0 }, { Kind::kInsert, 25, 6 } });
	w.plan2 = [](World *x, const Map &from) {
		std::vector<Op> ops;
		for (uint64_t i = 0; i < 24; i++)
			ops.push_back({ i % 3 == 2 ? Kind::kRemove : Kind::kUpsert,
				10 + 5 * (i % 8), 100 + i, 0 });
		PlanInto(&x->ops2, &x->states2, from, ops);
	};
	w.reuse_one_in = 8;
	pmtest::CrashRun r = Simulate(initial, SimConfig(6, 2), World::CheckReuse);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 3u);
}

TEST_P(BzTreeCrashTest, SampledCrashPointsOfTwoThreads)
{
	w.SetThreads(2);
	Map initial;
	for (uint64_t k = 0; k < 8; k++)
		initial[k] = k;
	// Thread t owns the keys k % 2 == t: their operations share leaves and
	// structure changes, and each thread's results stay predictable.
	std::mt19937_64 rng(11);
	for (unsigned t = 0; t < 2; t++) {
		Map mine;
		for (auto [k, v] : initial)
			if (k % 2 == t)
				mine[k] = v;
		std::vector<Op> ops;
		for (unsigned i = 0; i < 16; i++) {
			uint64_t k = t + 2 * (rng() % 10);
			ops.push_back({ static_cast<Kind>(rng() % 4), k, rng() % 1000, 0 });
		}
		Plan(&w, t, mine, ops);
	}
	pmtest::CrashRun r = Simulate(initial, SimConfig(8));
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 10u);
	EXPECT_EQ(r.st.failures, 0u);
}

// A tree that grew to several leaves (splits) and lost half its keys
// (merges; nodes freed with old contents) is closed; then every crash
// point of creating a new tree over its area. Before the new header is
// durable the area reads as corrupt or as the old tree, whole; after, as
// an empty tree.
TEST_P(BzTreeCrashTest, EveryCrashPointOfACreateOverAUsedArea)
{
	ds_bztree_thread *h = nullptr;
	ASSERT_EQ(ds_bztree_thread_register(w.env.ds, &h), 0);
	Map want;
	for (uint64_t k = 1; k <= 24; k++) {
		ASSERT_EQ(ds_bztree_insert(h, k * 10, k), 1);
		want[k * 10] = k;
	}
	for (uint64_t k = 1; k <= 24; k += 2) {
		ASSERT_EQ(ds_bztree_remove(h, k * 10), 1);
		want.erase(k * 10);
	}
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
	ds_bztree_stats st = Stats();
	EXPECT_GT(st.splits, 0u);
	pmtest::CrashRun r = w.SimulateCreateOverUsed(SimConfig(1));
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(w.old, want);
	EXPECT_EQ(r.st.events, 7u);
}

// Creation writes the header last: before it is durable the area reads as
// corrupt; after ds_bztree_pmem_create returned it opens as an empty tree.
TEST_P(BzTreeCrashTest, EveryCrashPointOfCreation)
{
	pmtest::CrashRun r = w.SimulateCreate(SimConfig(1));
	ASSERT_EQ(r.ret, 0) << r.report;
	// Flush + fence for the invalidated header, the root word and the
	// header; the root leaf's flush is fenced with the root word's.
	EXPECT_EQ(r.st.events, 7u);
}

INSTANTIATE_TEST_SUITE_P(PersistentAlgorithms, BzTreeCrashTest,
	testing::ValuesIn(dstest::PmemVariants()), dstest::VariantNamer());

} // namespace
