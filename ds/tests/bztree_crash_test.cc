// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/bztree_crash_test.cc -- the persistent BzTree under the crash
// simulator (pm/crashsim.h). At every crash point of small single-threaded
// workloads whose operations split, consolidate, merge and rebalance nodes,
// at sampled points of a 2-thread one, and at every point of the tree's
// creation, each post-crash image is recovered (mcas_pmem_open, then
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
#include "pm/tests/test_util.h"

namespace {

using bztest::TreeEnv;
using dstest::Variant;

constexpr unsigned kCapacity = 4;
constexpr uint64_t kArena = 40;
constexpr unsigned kMaxThreads = 2;

using Map = std::map<uint64_t, uint64_t>;

enum class Kind { kInsert, kUpsert, kUpdate, kRemove };

struct Op {
	Kind kind;
	uint64_t key, value;
	int expect; // what the call must return
};

// Everything the workload and the check share. The check runs in a process
// forked at the crash point, so it sees these fields as they were then.
struct World {
	TreeEnv env;
	unsigned threads = 1;
	std::vector<std::vector<Op>> ops;
	std::vector<std::vector<Map>> states; // per thread, after each prefix
	std::atomic<unsigned> done[kMaxThreads];
	std::atomic<int> created{0};

	void SetThreads(unsigned n)
	{
		threads = n;
		ops.assign(n, {});
		states.assign(n, {});
	}
};

// Model: the results and states of @ops from @initial, for thread @t.
void Plan(World *w, unsigned t, const Map &initial, const std::vector<Op> &ops)
{
	Map s = initial;
	w->states[t].push_back(s);
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
		w->ops[t].push_back(op);
		w->states[t].push_back(s);
	}
}

std::string Describe(const Map &s)
{
	std::string r = "{";
	for (auto [k, v] : s)
		r += (r.size() > 1 ? "," : "") + std::to_string(k) + ":" + std::to_string(v);
	return r + "}";
}

// Recovery plus the checks that hold for any workload; "" if fine. Leaves
// the recovered tree open in w->env with a registered handle in *hp.
std::string Recover(World *w, ds_bztree_thread **hp)
{
	TreeEnv &e = w->env;
	// The crashed instances are abandoned, as a dead process's would be.
	e.m = nullptr;
	e.ds = nullptr;
	int ret = mcas_pmem_open(&e.m, e.pool, e.mcas_off, &e.cfg);
	if (ret != 0)
		return "mcas_pmem_open: " + std::string(pm_strerror(ret));
	ret = ds_bztree_pmem_open(&e.ds, e.m, e.pool, e.ds_off);
	if (ret != 0)
		return "ds_bztree_pmem_open: " + std::string(pm_strerror(ret)) + ": " +
			pm_errormsg();
	ret = ds_bztree_thread_register(e.ds, hp);
	if (ret != 0)
		return "register: " + std::to_string(ret);
	ds_bztree_stats st;
	std::string err = bztest::Check(*hp, &st);
	if (!err.empty())
		return "after recovery: " + err;
	if (st.retired != 0 || st.leaves + st.inner + st.free != kArena)
		return "after recovery: " + std::to_string(st.leaves + st.inner) + " reachable + " +
			std::to_string(st.free) + " free != " + std::to_string(kArena) + " nodes";
	return "";
}

// The recovered tree must still work: a new key in and out.
std::string Exercise(ds_bztree_thread *h)
{
	uint64_t v = 0;
	if (ds_bztree_insert(h, 1000, 1) != 1 || ds_bztree_lookup(h, 1000, &v) != 1 || v != 1 ||
			ds_bztree_remove(h, 1000) != 1)
		return "the recovered tree does not work";
	std::string err = bztest::Check(h);
	return err.empty() ? "" : "after using the recovered tree: " + err;
}

std::string Finish(World *w, ds_bztree_thread **hp)
{
	if (ds_bztree_thread_unregister(hp) != 0 || ds_bztree_close(&w->env.ds) != 0 ||
			mcas_close(&w->env.m) != 0)
		return "clean shutdown after recovery failed";
	return "";
}

std::string VerifyOps(World *w)
{
	ds_bztree_thread *h = nullptr;
	std::string err = Recover(w, &h);
	if (!err.empty())
		return err;
	bztest::Pairs all = bztest::Scan(h);
	// Thread t owns the keys k with k % threads == t.
	for (unsigned t = 0; t < w->threads; t++) {
		Map mine;
		for (auto [k, v] : all)
			if (k % w->threads == t)
				mine[k] = v;
		unsigned d = w->done[t].load();
		bool ok = false;
		for (unsigned s = d; s <= d + 1 && s < w->states[t].size(); s++)
			ok |= mine == w->states[t][s];
		if (!ok)
			return "thread " + std::to_string(t) + ": " + std::to_string(d) +
				" operations returned and the recovered map is " + Describe(mine) +
				", expected " + Describe(w->states[t][d]) +
				(d + 1 < w->states[t].size() ? " or " + Describe(w->states[t][d + 1]) :
							       "");
	}
	err = Exercise(h);
	return err.empty() ? Finish(w, &h) : err;
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
	ds_bztree_thread *h = nullptr;
	if (ds_bztree_thread_register(w->env.ds, &h) != 0)
		return 1;
	for (size_t i = 0; i < w->ops[t].size(); i++) {
		const Op &op = w->ops[t][i];
		int r = op.kind == Kind::kInsert ? ds_bztree_insert(h, op.key, op.value) :
			op.kind == Kind::kUpsert ? ds_bztree_upsert(h, op.key, op.value) :
			op.kind == Kind::kUpdate ? ds_bztree_update(h, op.key, op.value) :
						   ds_bztree_remove(h, op.key);
		if (r != op.expect)
			return 100 + (int)i;
		w->done[t].store((unsigned)i + 1);
	}
	// Unregistering drains the reclamation pipeline: detaching descriptors
	// is crash-tested too.
	return ds_bztree_thread_unregister(&h) == 0 ? 0 : 2;
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
	// As in dll_crash_test: a small area, and reclamation and efficient-read
	// detaching inside the workload.
	mcas_config c = dstest::SmallConfig(alg, 4, 16);
	c.reclaim_batch = 2;
	c.read_detach_one_in = 4;
	return c;
}

class BzTreeCrashTest : public testing::TestWithParam<Variant> {
protected:
	void SetUp() override
	{
		std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
		std::replace(test.begin(), test.end(), '/', '-');
		name = "bz-" + test;
		DS_SETUP(w.env, name, GetParam(), CrashConfig(GetParam().alg), kCapacity, kArena);
	}

	pm_crashsim_config SimConfig(pm_crashsim_mode mode) const
	{
		pm_crashsim_config cfg;
		pm_crashsim_config_init(&cfg);
		cfg.name = name.c_str();
		cfg.mode = mode;
		cfg.max_images = 16;
		return cfg;
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
	pmtest::CrashRun Simulate(const Map &initial, const pm_crashsim_config &cfg)
	{
		ds_bztree_thread *h = nullptr;
		EXPECT_EQ(ds_bztree_thread_register(w.env.ds, &h), 0);
		for (auto [k, v] : initial)
			EXPECT_EQ(ds_bztree_insert(h, k, v), 1);
		EXPECT_EQ(ds_bztree_thread_unregister(&h), 0);
		for (unsigned t = 0; t < kMaxThreads; t++)
			w.done[t].store(0);
		before = Stats();
		pmtest::CrashRun r = pmtest::RunCrashSim(cfg, w.env.ds_area, w.env.RootSize(),
			RunAll, CheckOps, &w);
		after = Stats();
		std::printf("%-40s events=%" PRIu64 " points=%" PRIu64 " images=%" PRIu64
			" | SMOs in the workload: %" PRIu64 " consolidations, %" PRIu64 " splits, %"
			PRIu64 " merges, %" PRIu64 " rebalances\n", cfg.name, r.st.events,
			r.st.points, r.st.images, after.consolidations - before.consolidations,
			after.splits - before.splits, after.merges - before.merges,
			after.rebalances - before.rebalances);
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
	pmtest::CrashRun r = Simulate(initial, SimConfig(PM_CRASHSIM_EVERY));
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
	pmtest::CrashRun r = Simulate(initial, SimConfig(PM_CRASHSIM_EVERY));
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
	EXPECT_EQ(r.st.failures, 0u);
	EXPECT_GT(after.merges + after.rebalances, before.merges + before.rebalances);
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
	pm_crashsim_config cfg = SimConfig(PM_CRASHSIM_SAMPLE);
	cfg.sample_one_in = 8;
	pmtest::CrashRun r = Simulate(initial, cfg);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 10u);
	EXPECT_EQ(r.st.failures, 0u);
}

// Creation writes the header last: before it is durable the area reads as
// corrupt; after ds_bztree_pmem_create returned it opens as an empty tree.
int RunCreate(void *arg)
{
	World *w = static_cast<World *>(arg);
	TreeEnv &e = w->env;
	if (ds_bztree_pmem_create(&e.ds, e.m, e.pool, e.ds_off, &e.params.tcfg, kArena) != 0)
		return 1;
	w->created.store(1);
	return 0;
}

int CheckCreate(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	TreeEnv &e = w->env;
	std::string err;
	e.m = nullptr;
	e.ds = nullptr;
	int ret = mcas_pmem_open(&e.m, e.pool, e.mcas_off, &e.cfg);
	if (ret != 0) {
		err = "mcas_pmem_open: " + std::string(pm_strerror(ret));
	} else {
		ret = ds_bztree_pmem_open(&e.ds, e.m, e.pool, e.ds_off);
		if (ret == PM_E_CORRUPT && !w->created.load())
			return 0; // not formatted yet: the caller formats again
		ds_bztree_thread *h = nullptr;
		ds_bztree_stats st;
		if (ret != 0)
			err = "ds_bztree_pmem_open: " + std::string(pm_strerror(ret)) + ": " +
				pm_errormsg();
		else if (ds_bztree_thread_register(e.ds, &h) != 0)
			err = "register failed";
		else if (!(err = bztest::Check(h, &st)).empty() || st.size != 0 ||
				st.free != kArena - 1)
			err = "a newly created tree is not empty and whole: " + err;
		else if ((err = Exercise(h)).empty())
			err = Finish(w, &h);
	}
	std::snprintf(msg, len, "%s", err.c_str());
	return err.empty() ? 0 : 1;
}

TEST_P(BzTreeCrashTest, EveryCrashPointOfCreation)
{
	ASSERT_EQ(ds_bztree_close(&w.env.ds), 0);
	std::memset(w.env.ds_area, 0, w.env.ds_size);
	pm_persist(w.env.ds_area, w.env.ds_size);
	pm_crashsim_config cfg = SimConfig(PM_CRASHSIM_EVERY);
	pmtest::CrashRun r = pmtest::RunCrashSim(cfg, w.env.ds_area, w.env.ds_size, RunCreate,
		CheckCreate, &w);
	ASSERT_EQ(r.ret, 0) << r.report;
	// Flush + fence for the invalidated header, the root word and the
	// header; the root leaf's flush is fenced with the root word's.
	EXPECT_EQ(r.st.events, 7u);
}

INSTANTIATE_TEST_SUITE_P(PersistentAlgorithms, BzTreeCrashTest,
	testing::ValuesIn(dstest::PmemVariants()), dstest::VariantNamer());

} // namespace
