// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/dll_crash_test.cc -- the persistent MCAS doubly-linked list
// under the crash simulator (pm/crashsim.h). At every crash point of a
// small single-threaded workload, at sampled points of a 2-thread one, and
// at every point of the list's creation (on a zeroed area and over a used
// one), each post-crash image is recovered
// (mcas_pmem_open, then ds_dll_pmem_open, on the same pool) and must show:
// the invariants; every completed operation and all or nothing of the one
// in flight per thread; no link word holding an MCAS descriptor; every node
// reachable or free (none leaked); and a list that keeps working.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <ds/dll.h>
#include <mcas/mcas.h>
#include <pm/crashsim.h>
#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>

#include "ds/tests/dll_test_util.h"
#include "ds/tests/mcas_crash.h"
#include "pm/tests/test_util.h"

namespace {

using dlltest::ListEnv;
using dstest::Variant;

constexpr uint64_t kCapacity = 16;

using KeySet = std::set<uint64_t>;

// The list for dstest::CrashWorld.
struct DllCrash {
	using Thread = ds_dll_thread;
	using State = KeySet;
	struct Op {
		bool insert;
		uint64_t key;
		int expect; // what the call must return
	};
	static constexpr const char *kOpen = "ds_dll_pmem_open";

	static int Register(ds_dll *l, ds_dll_thread **hp) { return ds_dll_thread_register(l, hp); }
	static int Unregister(ds_dll_thread **hp) { return ds_dll_thread_unregister(hp); }
	static int Apply(ds_dll_thread *h, const Op &op)
	{
		return op.insert ? ds_dll_insert(h, op.key) : ds_dll_remove(h, op.key);
	}

	// Thread t owns the keys k with (k - 1) % threads == t.
	static KeySet Owned(ds_dll_thread *h, unsigned t, unsigned threads)
	{
		KeySet mine;
		for (uint64_t k : dlltest::Keys(h))
			if ((k - 1) % threads == t)
				mine.insert(k);
		return mine;
	}

	static std::string Describe(const KeySet &s)
	{
		std::string r = "{";
		for (uint64_t k : s)
			r += (r.size() > 1 ? "," : "") + std::to_string(k);
		return r + "}";
	}

	static std::string Recovered(const ListEnv &e, ds_dll_thread *h)
	{
		// No link word of any node, reachable or not, holds a descriptor.
		const uint64_t *words = reinterpret_cast<const uint64_t *>(
			static_cast<const char *>(e.ds_area) + 64);
		for (uint64_t i = 0; i < (kCapacity + 2) * 8; i++)
			if ((i % 8 == 1 || i % 8 == 2) && (words[i] & mcas_value_mask(e.m)) != 0)
				return "node " + std::to_string(i / 8) +
					" holds an MCAS descriptor reference";
		ds_dll_stats st;
		std::string err = dlltest::Check(h, &st);
		if (!err.empty())
			return err;
		if (st.installed != 0 || st.retired != 0 || st.size + st.free != kCapacity)
			return std::to_string(st.size) + " reachable + " + std::to_string(st.free) +
				" free != " + std::to_string(kCapacity) +
				" nodes, or descriptors/retired left";
		return "";
	}

	static std::string Fresh(ds_dll_thread *h)
	{
		ds_dll_stats st;
		std::string err = dlltest::Check(h, &st);
		return !err.empty() || st.size != 0 || st.free != kCapacity ? "list: " + err : "";
	}

	// The recovered list must still work: a new key in and out.
	static std::string Exercise(ds_dll_thread *h)
	{
		if (ds_dll_insert(h, 100) != 1 || !ds_dll_contains(h, 100) ||
				ds_dll_remove(h, 100) != 1)
			return "the recovered list does not work";
		std::string err = dlltest::Check(h);
		return err.empty() ? "" : "after using the recovered list: " + err;
	}
};

using World = dstest::CrashWorld<dlltest::DllOps, DllCrash>;
using Op = DllCrash::Op;

// Model: the results and states of @ops from @initial, into @out and
// @states.
void PlanInto(std::vector<Op> *out, std::vector<KeySet> *states, const KeySet &initial,
	const std::vector<std::pair<bool, uint64_t>> &ops)
{
	KeySet s = initial;
	states->push_back(s);
	for (auto [insert, key] : ops) {
		int expect = insert ? (s.insert(key).second ? 1 : 0) : (s.erase(key) ? 1 : 0);
		out->push_back({ insert, key, expect });
		states->push_back(s);
	}
}

void Plan(World *w, unsigned t, const KeySet &initial, const std::vector<std::pair<bool, uint64_t>> &ops)
{
	PlanInto(&w->ops[t], &w->states[t], initial, ops);
}

class DllCrashTest : public testing::TestWithParam<Variant> {
protected:
	// Sets up w's list for the test's variant, in a pool named after the
	// test (as its simulator is).
	void SetUp() override
	{
		name = dstest::CrashPoolName("dll");
		DS_SETUP(w.env, name, GetParam(), dstest::CrashConfig(GetParam().alg), kCapacity);
	}

	// Every crash point if @one_in is 1, else one in @one_in.
	pm_crashsim_config SimConfig(unsigned one_in, unsigned max_images = 64) const
	{
		return pmtest::SimConfig(name.c_str(), one_in, max_images);
	}

	// Fills w's list with @initial and runs the workload under the
	// simulator, over the whole persistent state.
	pmtest::CrashRun Simulate(const KeySet &initial, const pm_crashsim_config &cfg,
		pm_crashsim_check_fn check = World::CheckOps)
	{
		ds_dll_thread *h = nullptr;
		EXPECT_EQ(ds_dll_thread_register(w.env.ds, &h), 0);
		for (uint64_t k : initial)
			EXPECT_EQ(ds_dll_insert(h, k), 1);
		EXPECT_EQ(ds_dll_thread_unregister(&h), 0);
		return w.Simulate(cfg, w.env.RootSize(), World::RunAll, check);
	}

	World w;
	std::string name;
};

TEST_P(DllCrashTest, EveryCrashPointOfSingleThreadedUpdates)
{
	w.SetThreads(1);
	const KeySet initial = { 1, 3 };
	// Six effective updates on keys 1..4 and two that change nothing.
	Plan(&w, 0, initial, { { true, 2 }, { true, 2 }, { false, 1 }, { true, 4 },
		{ false, 3 }, { false, 3 }, { true, 1 }, { false, 2 } });

	pmtest::CrashRun r = Simulate(initial, SimConfig(1));
	ASSERT_EQ(r.ret, 0) << r.report;
	const pm_crashsim_stats &st = r.st;
	EXPECT_EQ(st.points, st.events + 1);
	EXPECT_GE(st.images, st.points);
	EXPECT_EQ(st.failures, 0u);
	// 6 effective updates, each at least one flush or CAS on tracked memory.
	EXPECT_GE(st.events, 6u * 4u);
}

TEST_P(DllCrashTest, SampledCrashPointsOfTwoThreads)
{
	w.SetThreads(2);
	const KeySet initial = { 1, 2 };
	// Thread t owns keys t+1, t+3, t+5, t+7: their operations contend on
	// neighbouring nodes, and each thread's results are still predictable.
	std::mt19937_64 rng(11);
	for (unsigned t = 0; t < 2; t++) {
		KeySet mine;
		for (uint64_t k : initial)
			if ((k - 1) % 2 == t)
				mine.insert(k);
		std::vector<std::pair<bool, uint64_t>> ops;
		for (unsigned i = 0; i < 16; i++)
			ops.push_back({ rng() % 2 == 0, t + 1 + 2 * (rng() % 4) });
		Plan(&w, t, mine, ops);
	}

	pmtest::CrashRun r = Simulate(initial, SimConfig(6, 32));
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 10u);
	EXPECT_EQ(r.st.failures, 0u);
}

// Crash, recover, run 24 updates on another thread (more MCAS than the
// thread has descriptors, and freed nodes taken again), crash again:
// sampled points of both lives, two images each (issue 20).
TEST_P(DllCrashTest, CrashRecoverReuseCrashAgain)
{
	w.SetThreads(1);
	const KeySet initial = { 1, 3 };
	Plan(&w, 0, initial, { { true, 2 }, { false, 1 }, { true, 4 }, { false, 3 },
		{ true, 1 }, { false, 2 } });
	w.plan2 = [](World *x, const KeySet &from) {
		std::vector<std::pair<bool, uint64_t>> ops;
		for (unsigned i = 0; i < 24; i++)
			ops.push_back({ i % 2 == 0, 1 + (i / 2) % 6 });
		PlanInto(&x->ops2, &x->states2, from, ops);
	};
	w.reuse_one_in = 5;
	pmtest::CrashRun r = Simulate(initial, SimConfig(4, 2), World::CheckReuse);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 5u);
}

// Creation writes the header last: before it is durable the area reads as
// corrupt; after ds_dll_pmem_create returned it must open as an empty list.
TEST_P(DllCrashTest, EveryCrashPointOfCreation)
{
	pmtest::CrashRun r = w.SimulateCreate(SimConfig(1));
	// Fails too if creating the simulator or tracking the area failed.
	ASSERT_EQ(r.ret, 0) << r.report;
	// Three persists (invalidate, sentinels, header) of flush + fence.
	EXPECT_EQ(r.st.events, 6u);
}

// A list that held keys 1..10 and lost 2, 4 and 6 (free nodes with old
// contents) is closed; then every crash point of creating a new list over
// its area. Before the new header is durable the area reads as corrupt or
// as the old list, whole; after, as an empty list.
TEST_P(DllCrashTest, EveryCrashPointOfACreateOverAUsedArea)
{
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(w.env.ds, &h), 0);
	for (uint64_t k = 1; k <= 10; k++)
		ASSERT_EQ(ds_dll_insert(h, k), 1);
	for (uint64_t k : { 2, 4, 6 })
		ASSERT_EQ(ds_dll_remove(h, k), 1);
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
	pmtest::CrashRun r = w.SimulateCreateOverUsed(SimConfig(1));
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(w.old, (KeySet{ 1, 3, 5, 7, 8, 9, 10 }));
	EXPECT_EQ(r.st.events, 6u);
}

INSTANTIATE_TEST_SUITE_P(PersistentAlgorithms, DllCrashTest, testing::ValuesIn(dlltest::PmemVariants()),
	dlltest::VariantNamer());

} // namespace
