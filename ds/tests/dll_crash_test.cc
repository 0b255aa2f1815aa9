// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/dll_crash_test.cc -- the persistent MCAS doubly-linked list
// under the crash simulator (pm/crashsim.h). At every crash point of a
// small single-threaded workload, at sampled points of a 2-thread one, and
// at every point of the list's creation, each post-crash image is recovered
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
#include "pm/tests/test_util.h"

namespace {

using dlltest::ListEnv;
using dlltest::Variant;

constexpr uint64_t kCapacity = 16;
constexpr unsigned kMaxThreads = 2;

struct Op {
	bool insert;
	uint64_t key;
	int expect; // what the call must return
};

using KeySet = std::set<uint64_t>;

// Everything the workload and the check share. The check runs in a process
// forked at the crash point, so it sees these fields as they were then.
struct World {
	ListEnv env;
	// Per thread: its operations, the model state after each prefix, and
	// how many operations have returned (written after each return).
	unsigned threads = 1;
	std::vector<std::vector<Op>> ops;
	std::vector<std::vector<KeySet>> states;
	std::atomic<unsigned> done[kMaxThreads];
	// Creation workload: set once ds_dll_pmem_create returned.
	std::atomic<int> created{0};

	void SetThreads(unsigned n)
	{
		threads = n;
		ops.resize(n);
		states.resize(n);
	}
};

// Model: the results and states of @ops from @initial.
void Plan(World *w, unsigned t, const KeySet &initial, const std::vector<std::pair<bool, uint64_t>> &ops)
{
	KeySet s = initial;
	w->states[t].push_back(s);
	for (auto [insert, key] : ops) {
		int expect = insert ? (s.insert(key).second ? 1 : 0) : (s.erase(key) ? 1 : 0);
		w->ops[t].push_back({ insert, key, expect });
		w->states[t].push_back(s);
	}
}

// Recovery plus the checks that hold for any workload; "" if fine. Leaves
// the recovered list open in w->env with a registered handle in *hp.
std::string Recover(World *w, ds_dll_thread **hp, ds_dll_stats *st)
{
	ListEnv &e = w->env;
	// The crashed instances are abandoned, as a dead process's would be.
	e.m = nullptr;
	e.ds = nullptr;
	int ret = mcas_pmem_open(&e.m, e.pool, e.mcas_off, &e.cfg);
	if (ret != 0)
		return "mcas_pmem_open: " + std::string(pm_strerror(ret));
	ret = ds_dll_pmem_open(&e.ds, e.m, e.pool, e.ds_off);
	if (ret != 0)
		return "ds_dll_pmem_open: " + std::string(pm_strerror(ret)) + ": " + pm_errormsg();
	// No link word of any node, reachable or not, holds a descriptor.
	const uint64_t *words = reinterpret_cast<const uint64_t *>(
		static_cast<const char *>(e.ds_area) + 64);
	for (uint64_t i = 0; i < (kCapacity + 2) * 8; i++)
		if ((i % 8 == 1 || i % 8 == 2) && (words[i] & mcas_value_mask(e.m)) != 0)
			return "node " + std::to_string(i / 8) + " holds an MCAS descriptor reference";
	ret = ds_dll_thread_register(e.ds, hp);
	if (ret != 0)
		return "register: " + std::to_string(ret);
	std::string err = dlltest::Check(*hp, st);
	if (!err.empty())
		return "after recovery: " + err;
	if (st->installed != 0 || st->retired != 0 || st->size + st->free != kCapacity)
		return "after recovery: " + std::to_string(st->size) + " reachable + " +
			std::to_string(st->free) + " free != " + std::to_string(kCapacity) +
			" nodes, or descriptors/retired left";
	return "";
}

std::string Describe(const KeySet &s)
{
	std::string r = "{";
	for (uint64_t k : s)
		r += (r.size() > 1 ? "," : "") + std::to_string(k);
	return r + "}";
}

// The recovered list must still work: a new key in and out.
std::string Exercise(ds_dll_thread *h)
{
	if (ds_dll_insert(h, 100) != 1 || !ds_dll_contains(h, 100) || ds_dll_remove(h, 100) != 1)
		return "the recovered list does not work";
	std::string err = dlltest::Check(h);
	return err.empty() ? "" : "after using the recovered list: " + err;
}

std::string Finish(World *w, ds_dll_thread **hp)
{
	if (ds_dll_thread_unregister(hp) != 0 || ds_dll_close(&w->env.ds) != 0 ||
			mcas_close(&w->env.m) != 0)
		return "clean shutdown after recovery failed";
	return "";
}

std::string VerifyOps(World *w)
{
	ds_dll_thread *h = nullptr;
	ds_dll_stats st;
	std::string err = Recover(w, &h, &st);
	if (!err.empty())
		return err;
	std::vector<uint64_t> keys = dlltest::Keys(h);
	// Each thread owns the keys k with (k - 1) % threads == t.
	for (unsigned t = 0; t < w->threads; t++) {
		KeySet mine;
		for (uint64_t k : keys)
			if ((k - 1) % w->threads == t)
				mine.insert(k);
		unsigned d = w->done[t].load();
		bool ok = false;
		for (unsigned s = d; s <= d + 1 && s < w->states[t].size(); s++)
			ok |= mine == w->states[t][s];
		if (!ok)
			return "thread " + std::to_string(t) + ": " + std::to_string(d) +
				" operations returned and the recovered keys are " + Describe(mine) +
				", expected " + Describe(w->states[t][d]) +
				(d + 1 < w->states[t].size() ? " or " + Describe(w->states[t][d + 1]) : "");
	}
	err = Exercise(h);
	if (!err.empty())
		return err;
	return Finish(w, &h);
}

int CheckOps(void *arg, char *msg, size_t len)
{
	std::string err = VerifyOps(static_cast<World *>(arg));
	std::snprintf(msg, len, "%s", err.c_str());
	return err.empty() ? 0 : 1;
}

// One thread's operations; returns 0 or 100 + the index of a wrong result.
int RunThread(World *w, unsigned t)
{
	ds_dll_thread *h = nullptr;
	if (ds_dll_thread_register(w->env.ds, &h) != 0)
		return 1;
	for (size_t i = 0; i < w->ops[t].size(); i++) {
		const Op &op = w->ops[t][i];
		int r = op.insert ? ds_dll_insert(h, op.key) : ds_dll_remove(h, op.key);
		if (r != op.expect)
			return 100 + (int)i;
		w->done[t].store((unsigned)i + 1);
	}
	// Unregistering drains the reclamation pipeline: detaching descriptors
	// (flushes, a fence) is crash-tested too.
	return ds_dll_thread_unregister(&h) == 0 ? 0 : 2;
}

int RunAll(void *arg)
{
	World *w = static_cast<World *>(arg);
	if (w->threads == 1)
		return RunThread(w, 0);
	std::vector<std::thread> th;
	std::atomic<int> failed{0};
	for (unsigned t = 0; t < w->threads; t++)
		th.emplace_back([w, t, &failed] {
			int r = RunThread(w, t);
			if (r != 0)
				failed.store(r);
		});
	for (auto &x : th)
		x.join();
	return failed.load();
}

mcas_config CrashConfig(mcas_algorithm alg)
{
	// 4 threads x 16 descriptors keeps the tracked MCAS area small; a small
	// reclaim batch and frequent efficient-read detaching put those paths
	// (and their flushes) inside the workload.
	mcas_config c = dlltest::SmallConfig(alg, 4, 16);
	c.reclaim_batch = 2;
	c.read_detach_one_in = 4;
	return c;
}

// Runs @run and checks it with @check (both on @w) under a simulator
// configured by @cfg that tracks @len bytes from the start of w's root (the
// list area, then the MCAS area); prints the counts.
pmtest::CrashRun SimulateArea(World *w, const pm_crashsim_config &cfg, size_t len,
	pm_crashsim_run_fn run, pm_crashsim_check_fn check)
{
	pmtest::CrashRun r = pmtest::RunCrashSim(cfg, w->env.ds_area, len, run, check, w);
	std::printf("%-28s events=%" PRIu64 " points=%" PRIu64 " images=%" PRIu64
		" max_dirty_words=%" PRIu64 "\n", cfg.name, r.st.events, r.st.points, r.st.images,
		r.st.max_dirty_words);
	return r;
}

class DllCrashTest : public testing::TestWithParam<Variant> {
protected:
	// Sets up w's list for the test's variant, in a pool named after the
	// test (as its simulator is).
	void SetUp() override
	{
		std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
		std::replace(test.begin(), test.end(), '/', '-');
		name = "dll-" + test;
		DS_SETUP(w.env, name, GetParam(), CrashConfig(GetParam().alg), kCapacity);
	}

	pm_crashsim_config SimConfig(pm_crashsim_mode mode) const
	{
		pm_crashsim_config cfg;
		pm_crashsim_config_init(&cfg);
		cfg.name = name.c_str();
		cfg.mode = mode;
		return cfg;
	}

	// Fills w's list with @initial and runs the workload under the
	// simulator, over the whole persistent state.
	pmtest::CrashRun Simulate(const KeySet &initial, const pm_crashsim_config &cfg)
	{
		ds_dll_thread *h = nullptr;
		EXPECT_EQ(ds_dll_thread_register(w.env.ds, &h), 0);
		for (uint64_t k : initial)
			EXPECT_EQ(ds_dll_insert(h, k), 1);
		EXPECT_EQ(ds_dll_thread_unregister(&h), 0);
		for (unsigned t = 0; t < kMaxThreads; t++)
			w.done[t].store(0);
		return SimulateArea(&w, cfg, w.env.RootSize(), RunAll, CheckOps);
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

	pmtest::CrashRun r = Simulate(initial, SimConfig(PM_CRASHSIM_EVERY));
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

	pm_crashsim_config cfg = SimConfig(PM_CRASHSIM_SAMPLE);
	cfg.sample_one_in = 6;
	cfg.max_images = 32;
	pmtest::CrashRun r = Simulate(initial, cfg);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 10u);
	EXPECT_EQ(r.st.failures, 0u);
}

// Creation writes the header last: before it is durable the area reads as
// corrupt; after ds_dll_pmem_create returned it must open as an empty list.
int RunCreate(void *arg)
{
	World *w = static_cast<World *>(arg);
	int ret = ds_dll_pmem_create(&w->env.ds, w->env.m, w->env.pool, w->env.ds_off, kCapacity);
	if (ret != 0)
		return 1;
	w->created.store(1);
	return 0;
}

int CheckCreate(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	ListEnv &e = w->env;
	std::string err;
	e.m = nullptr;
	e.ds = nullptr;
	int ret = mcas_pmem_open(&e.m, e.pool, e.mcas_off, &e.cfg);
	if (ret != 0) {
		err = "mcas_pmem_open: " + std::string(pm_strerror(ret));
	} else {
		ret = ds_dll_pmem_open(&e.ds, e.m, e.pool, e.ds_off);
		if (ret == PM_E_CORRUPT && !w->created.load())
			return 0; // not formatted yet: the caller formats again
		if (ret != 0) {
			err = "ds_dll_pmem_open: " + std::string(pm_strerror(ret)) + ": " +
				pm_errormsg();
		} else {
			ds_dll_thread *h = nullptr;
			ds_dll_stats st;
			if (ds_dll_thread_register(e.ds, &h) != 0)
				err = "register failed";
			else if (!(err = dlltest::Check(h, &st)).empty() || st.size != 0 ||
					st.free != kCapacity)
				err = "a newly created list is not empty and whole: " + err;
			else
				err = Exercise(h);
			if (err.empty())
				err = Finish(w, &h);
		}
	}
	std::snprintf(msg, len, "%s", err.c_str());
	return err.empty() ? 0 : 1;
}

TEST_P(DllCrashTest, EveryCrashPointOfCreation)
{
	// Start from an area that was never formatted.
	ASSERT_EQ(ds_dll_close(&w.env.ds), 0);
	std::memset(w.env.ds_area, 0, w.env.ds_size);
	pm_persist(w.env.ds_area, w.env.ds_size);

	// Only the list area: creating the list writes nothing else.
	pmtest::CrashRun r = SimulateArea(&w, SimConfig(PM_CRASHSIM_EVERY), w.env.ds_size,
		RunCreate, CheckCreate);
	// Fails too if creating the simulator or tracking the area failed.
	ASSERT_EQ(r.ret, 0) << r.report;
	// Three persists (invalidate, sentinels, header) of flush + fence.
	EXPECT_EQ(r.st.events, 6u);
}

INSTANTIATE_TEST_SUITE_P(PersistentAlgorithms, DllCrashTest, testing::ValuesIn(dlltest::PmemVariants()),
	dlltest::VariantNamer());

} // namespace
