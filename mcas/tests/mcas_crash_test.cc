// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/mcas_crash_test.cc -- persistent MCAS under the crash
// simulator: after recovery every MCAS is all-or-nothing, every completed
// one is present and no target holds a descriptor reference. Every crash
// point of single-threaded sequences (k = 1..4), with the targets in one
// cache line and on separate lines; sampled points of 2-4 threads; crashes
// during recovery itself; and crash, recover, run until descriptors are
// reused, crash again (issue 20: a recovery or detach whose writes were not
// made durable shows only once its descriptors serve again); and every point
// of formatting a new instance over the area of a used one.
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <mcas/mcas.h>
#include <pm/crashsim.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "mcas/tests/mcas_test_util.h"
#include "pm/tests/test_util.h"

namespace {

constexpr unsigned kTargets = 6; // words the workloads touch
constexpr unsigned kReuseDescs = 8; // descriptors per thread in the reuse test

mcas_config SmallConfig(mcas_algorithm alg, unsigned descs = 16)
{
	mcas_config c = mcastest::TestConfig(alg, 4, descs, 4);
	c.reclaim_batch = 2; // detach and recycle often, so those paths crash too
	return c;
}

struct Op {
	std::vector<unsigned> idx;
	std::vector<uint64_t> old, new_;
};

using State = std::array<uint64_t, kTargets>;

// Everything the run and the check share. The check runs in a forked
// process at the crash point, so it sees these fields as they were then.
struct World {
	mcastest::PmemInstance p;
	mcas_algorithm alg;
	// single-threaded: the ops and the model state after each prefix
	std::vector<Op> ops;
	std::vector<State> states;
	std::atomic<unsigned> done{0};
	// target i is words[i * stride]: 1 shares cache lines, 8 gives each
	// target its own line (a neighbour's flush then persists nothing else)
	unsigned stride = 1;
	// reuse: after the outer crash, the nested run recovers and runs ops2
	// (enough to reuse every descriptor), and is crashed in turn
	bool reuse = false;
	unsigned reuse_one_in = 1;
	std::vector<Op> ops2;
	std::vector<State> states2;
	std::atomic<unsigned> done2{0};
	// multi-threaded: per thread, the word sets it adds 8 to, and how many
	// of its increments returned
	unsigned threads = 0;
	std::vector<std::vector<std::vector<unsigned>>> incs;
	std::atomic<unsigned> tdone[4];
	bool nested_recovery = false;
	unsigned nested_runs = 0;
	// create over a used area: an instance ran and was closed, leaving the
	// targets in state old and its records in the area; the run formats a
	// new instance over it (created once mcas_pmem_create returned) and
	// runs ops from old
	bool over_used = false;
	State old{};
	std::atomic<int> created{0};
};

// Recover and compare with the model; "" if fine.
std::string CheckNoReferences(World *w)
{
	for (unsigned i = 0; i < mcastest::kWords; i++)
		if (w->p.words[i] & mcas_value_mask(w->p.m))
			return "word " + std::to_string(i) + " still holds a descriptor reference";
	return "";
}

// The config the checks open an image with: the defaults, as a reopen
// without a config has, for the area's algorithm, on a flavour of its own
// (mcastest::AfterCrash says why).
mcas_config AfterCrash(const World *w)
{
	mcas_config c;
	mcas_config_init(&c);
	c.algorithm = w->alg;
	return mcastest::AfterCrash(c);
}

std::string Recover(World *w)
{
	mcas *m = nullptr;
	mcas_config after = AfterCrash(w);
	int ret = mcas_pmem_open(&m, w->p.pool, w->p.area_off, &after);
	if (ret != 0)
		return "mcas_pmem_open: " + std::to_string(ret);
	w->p.m = m; // the crashed instance is abandoned, as a dead process's would be
	return CheckNoReferences(w);
}

uint64_t *Target(World *w, unsigned i)
{
	return &w->p.words[i * w->stride];
}

State Targets(World *w)
{
	State s;
	for (unsigned i = 0; i < kTargets; i++)
		s[i] = *Target(w, i);
	return s;
}

// After recovery the targets hold the state after @d of the ops whose
// states are @states, or after one more.
std::string CheckPrefix(World *w, const std::vector<State> &states, unsigned d)
{
	State now = Targets(w);
	for (unsigned s = d; s <= d + 1 && s < states.size(); s++)
		if (now == states[s])
			return "";
	char buf[256];
	std::snprintf(buf, sizeof(buf), "after %u completed ops the words are "
		"%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		", matching neither that prefix nor one more op", d,
		now[0], now[1], now[2], now[3], now[4], now[5]);
	return buf;
}

std::string CheckSingle(World *w)
{
	std::string err = Recover(w);
	return err.empty() ? CheckPrefix(w, w->states, w->done.load()) : err;
}

std::string CheckMulti(World *w)
{
	std::string err = Recover(w);
	if (!err.empty())
		return err;
	// Each thread's in-flight increment may or may not have taken effect.
	for (unsigned mask = 0; mask < (1u << w->threads); mask++) {
		uint64_t expect[kTargets] = {};
		for (unsigned t = 0; t < w->threads; t++) {
			unsigned n = w->tdone[t].load() + ((mask >> t) & 1);
			if (n > w->incs[t].size())
				goto next;
			for (unsigned o = 0; o < n; o++)
				for (unsigned i : w->incs[t][o])
					expect[i] += 8;
		}
		if (std::memcmp(expect, w->p.words, sizeof(expect)) == 0)
			return "";
	next:;
	}
	return "the words are not the sum of the completed increments plus any "
		"subset of the in-flight ones";
}

// Run @ops on one thread of the current instance, counting them in @done.
int RunOps(World *w, const std::vector<Op> &ops, std::atomic<unsigned> *done)
{
	mcas_thread *t;
	if (mcas_thread_register(w->p.m, &t) != 0)
		return 1;
	for (const Op &op : ops) {
		mcas_desc *d;
		if (mcas_desc_begin(t, &d) != 0)
			return 2;
		for (size_t i = 0; i < op.idx.size(); i++)
			mcas_desc_add(d, Target(w, op.idx[i]), op.old[i], op.new_[i]);
		mcas_desc_execute(d);
		done->fetch_add(1);
	}
	return mcas_thread_unregister(&t) == 0 ? 0 : 3;
}

int RunSingle(void *arg)
{
	World *w = static_cast<World *>(arg);
	return RunOps(w, w->ops, &w->done);
}

int RunMulti(void *arg)
{
	World *w = static_cast<World *>(arg);
	std::vector<std::thread> th;
	std::atomic<int> failures{0};
	for (unsigned tid = 0; tid < w->threads; tid++) {
		th.emplace_back([w, tid, &failures] {
			mcas_thread *t;
			if (mcas_thread_register(w->p.m, &t) != 0) {
				failures++;
				return;
			}
			for (const auto &set : w->incs[tid]) {
				for (;;) {
					mcas_desc *d;
					if (mcas_desc_begin(t, &d) != 0) {
						std::this_thread::yield();
						continue;
					}
					for (unsigned i : set) {
						uint64_t v = mcas_read(t, &w->p.words[i]);
						mcas_desc_add(d, &w->p.words[i], v, v + 8);
					}
					if (mcas_desc_execute(d) == 1)
						break;
				}
				w->tdone[tid].fetch_add(1);
			}
			if (mcas_thread_unregister(&t) != 0)
				failures++;
		});
	}
	for (auto &x : th)
		x.join();
	return failures.load();
}

int RunCreateOverUsed(void *arg)
{
	World *w = static_cast<World *>(arg);
	if (mcas_pmem_create(&w->p.m, w->p.pool, w->p.area_off, &w->p.cfg) != 0)
		return 4;
	w->created.store(1);
	return RunOps(w, w->ops, &w->done);
}

// An image of RunCreateOverUsed: before the create returned, the area may
// read as corrupt (the caller formats again) or open as either instance,
// and the targets must be as the old instance left them; after, the new
// instance's completed ops (or one more) and nothing of the old records.
std::string CheckCreateOverUsed(World *w)
{
	if (w->created.load())
		return CheckSingle(w);
	mcas *m = nullptr;
	mcas_config after = AfterCrash(w);
	int ret = mcas_pmem_open(&m, w->p.pool, w->p.area_off, &after);
	if (ret == PM_E_CORRUPT)
		return "";
	if (ret != 0)
		return "mcas_pmem_open during the create: " + std::to_string(ret);
	w->p.m = m;
	std::string err = CheckNoReferences(w);
	if (err.empty() && Targets(w) != w->old)
		err = "a crash inside the create changed the targets";
	return err;
}

int NestedRecoveryRun(void *arg)
{
	World *w = static_cast<World *>(arg);
	mcas *m = nullptr;
	mcas_config after = AfterCrash(w);
	return mcas_pmem_open(&m, w->p.pool, w->p.area_off, &after) == 0 ? 0 : 1;
}

int NestedRecoveryCheck(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	std::string err = CheckSingle(w);
	std::snprintf(msg, len, "after a crash during recovery: %s", err.c_str());
	return err.empty() ? 0 : 1;
}

// A seeded single-threaded sequence: k = 1..4 cycling, about one in four
// with a wrong expected value (so failed MCAS are crashed too).
void MakeOpsFrom(State s, unsigned n, unsigned seed, std::vector<Op> *ops,
	std::vector<State> *states)
{
	std::mt19937 rng(seed);
	states->push_back(s);
	for (unsigned o = 0; o < n; o++) {
		Op op;
		unsigned k = 1 + o % 4;
		std::vector<unsigned> all = {0, 1, 2, 3, 4, 5};
		std::shuffle(all.begin(), all.end(), rng);
		bool fail = rng() % 4 == 0;
		for (unsigned i = 0; i < k; i++) {
			op.idx.push_back(all[i]);
			op.old.push_back(s[all[i]] + (fail && i == k - 1 ? 8 : 0));
			op.new_.push_back(8 * (1 + rng() % 1000));
		}
		if (!fail)
			for (unsigned i = 0; i < k; i++)
				s[op.idx[i]] = op.new_[i];
		ops->push_back(op);
		states->push_back(s);
	}
}

void MakeOps(World *w, unsigned n, unsigned seed)
{
	MakeOpsFrom(State{}, n, seed, &w->ops, &w->states);
}

// The second life: recover from the outer crash (checking the first run's
// prefix), then run ops2 from whatever state that left -- more ops than the
// thread has descriptors, so records, detaches and statuses of the first
// life are overwritten -- on a thread other than the one that recovered
// (its fences do not make the recovery's flushes durable).
int ReuseRun(void *arg)
{
	World *w = static_cast<World *>(arg);
	if (!CheckSingle(w).empty())
		return 1;
	MakeOpsFrom(Targets(w), 2 * kReuseDescs, 13, &w->ops2, &w->states2);
	int ret = 0;
	std::thread([w, &ret] { ret = RunOps(w, w->ops2, &w->done2); }).join();
	return ret;
}

int ReuseCheck(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	// Crashed before ops2 existed: during the second life's recovery.
	std::string err = w->states2.empty() ? CheckSingle(w) : Recover(w);
	if (err.empty() && !w->states2.empty())
		err = CheckPrefix(w, w->states2, w->done2.load());
	std::snprintf(msg, len, "second crash, after %u ops of the second life: %s",
		w->done2.load(), err.c_str());
	return err.empty() ? 0 : 1;
}

int Check(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	if (w->reuse)
		return pmtest::CrashAgain("mcas-reuse-second", w->reuse_one_in, w->p.words,
			mcastest::kWords * 8 + w->p.area_size, ReuseRun, ReuseCheck, w, msg, len);
	if (w->nested_recovery)
		return pmtest::CrashRecovery("mcas-recovery", w->p.words,
			mcastest::kWords * 8 + w->p.area_size, NestedRecoveryRun, NestedRecoveryCheck,
			w, msg, len);
	std::string err = w->over_used ? CheckCreateOverUsed(w) :
		w->threads ? CheckMulti(w) : CheckSingle(w);
	std::snprintf(msg, len, "%s", err.c_str());
	return err.empty() ? 0 : 1;
}

pmtest::CrashRun Simulate(World *w, const char *name, pm_crashsim_mode mode, unsigned one_in,
	pm_crashsim_run_fn run, unsigned max_images = 16)
{
	pm_crashsim_config cfg;
	pm_crashsim_config_init(&cfg);
	cfg.name = name;
	cfg.mode = mode;
	if (one_in != 0)
		cfg.sample_one_in = one_in;
	cfg.max_images = max_images;
	pmtest::CrashRun r = pmtest::RunCrashSim(cfg, w->p.words,
		mcastest::kWords * 8 + w->p.area_size, run, Check, w);
	std::printf("%-28s events=%" PRIu64 " points=%" PRIu64 " images=%" PRIu64 "\n", name,
		r.st.events, r.st.points, r.st.images);
	return r;
}

class Crash : public ::testing::TestWithParam<mcas_algorithm> {
protected:
	bool Make(World *w, const std::string &name, unsigned descs = 16)
	{
		w->alg = GetParam();
		mcas_config c = SmallConfig(w->alg, descs);
		int ret = w->p.Create(mcastest::PoolName(name, w->alg), c);
		EXPECT_EQ(ret, 0);
		return ret == 0;
	}
};

TEST_P(Crash, EveryPointOfSingleThreadedSequences)
{
	World w;
	if (!Make(&w, "single"))
		return;
	MakeOps(&w, 16, 7);
	pmtest::CrashRun r = Simulate(&w, "mcas-single", PM_CRASHSIM_EVERY, 0, RunSingle);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
	EXPECT_GT(r.st.events, 16u * 4u);
}

// The same with every target on a cache line of its own: a flush of one
// target no longer persists its neighbours by accident.
TEST_P(Crash, EveryPointWithTargetsOnSeparateLines)
{
	World w;
	if (!Make(&w, "lines"))
		return;
	w.stride = 8;
	static_assert(kTargets * 8 <= mcastest::kWords, "targets fit the words");
	MakeOps(&w, 16, 9);
	pmtest::CrashRun r = Simulate(&w, "mcas-lines", PM_CRASHSIM_EVERY, 0, RunSingle);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
}

// Crash, recover, run until every descriptor has served again, crash again:
// sampled points of the first life, and for each, sampled points of the
// second (its recovery included), targets on separate lines, 8 descriptors.
// Two images per point (every word durable, every word newest) keep the
// nested runs within CI's budget.
TEST_P(Crash, CrashRecoverReuseCrashAgain)
{
	World w;
	if (!Make(&w, "reuse", kReuseDescs))
		return;
	w.stride = 8;
	w.reuse = true;
	w.reuse_one_in = 8;
	MakeOps(&w, 2 * kReuseDescs, 5);
	pmtest::CrashRun r = Simulate(&w, "mcas-reuse", PM_CRASHSIM_SAMPLE, 10, RunSingle, 2);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 5u);
}

// An instance runs until every descriptor has served twice (records of
// completed and failed MCAS left in the area) and is closed; then every
// crash point of formatting a new instance over the same area and of 16
// MCAS on the same targets. None of the old records may come back: a
// recovery that rolled one forward would change the targets.
TEST_P(Crash, EveryPointOfACreateOverAUsedArea)
{
	World w;
	if (!Make(&w, "reformat", kReuseDescs))
		return;
	w.stride = 8;
	std::vector<Op> first;
	std::vector<State> first_states;
	MakeOpsFrom(State{}, 2 * kReuseDescs, 15, &first, &first_states);
	std::atomic<unsigned> first_done{0};
	ASSERT_EQ(RunOps(&w, first, &first_done), 0);
	ASSERT_EQ(mcas_close(&w.p.m), 0);
	w.old = Targets(&w);
	ASSERT_EQ(w.old, first_states.back());
	MakeOpsFrom(w.old, 16, 17, &w.ops, &w.states);
	w.over_used = true;
	pmtest::CrashRun r = Simulate(&w, "mcas-reformat", PM_CRASHSIM_EVERY, 0,
		RunCreateOverUsed, 32);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
}

TEST_P(Crash, SampledPointsOfTwoToFourThreads)
{
	for (unsigned threads = 2; threads <= 4; threads++) {
		World w;
		if (!Make(&w, "multi" + std::to_string(threads)))
			return;
		w.threads = threads;
		std::mt19937 rng(threads);
		w.incs.resize(threads);
		for (unsigned t = 0; t < threads; t++) {
			w.tdone[t] = 0;
			for (unsigned o = 0; o < 12; o++) {
				std::vector<unsigned> all = {0, 1, 2, 3, 4, 5};
				std::shuffle(all.begin(), all.end(), rng);
				all.resize(1 + rng() % 4);
				w.incs[t].push_back(all);
			}
		}
		std::string name = "mcas-multi-t" + std::to_string(threads);
		pmtest::CrashRun r = Simulate(&w, name.c_str(), PM_CRASHSIM_SAMPLE, 8, RunMulti);
		ASSERT_EQ(r.ret, 0) << r.report;
		EXPECT_GT(r.st.points, 10u);
	}
}

// Crash the recovery of sampled crash images at every point of recovery.
TEST_P(Crash, CrashDuringRecovery)
{
	World w;
	if (!Make(&w, "nested"))
		return;
	MakeOps(&w, 8, 11);
	w.nested_recovery = true;
	pmtest::CrashRun r = Simulate(&w, "mcas-nested", PM_CRASHSIM_SAMPLE, 6, RunSingle);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 3u);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, Crash,
	::testing::ValuesIn(mcastest::PersistentAlgorithms()), mcastest::AlgorithmName());

} // namespace
