// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/mcas_crash_test.cc -- persistent MCAS under the crash
// simulator: after recovery every MCAS is all-or-nothing, every completed
// one is present and no target holds a descriptor reference. Every crash
// point of single-threaded sequences (k = 1..4), sampled points of 2-4
// threads, and crashes during recovery itself.
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
#include <pm/pool.h>

#include "mcas/tests/mcas_test_util.h"
#include "pm/tests/test_util.h"

namespace {

constexpr unsigned kTargets = 6; // words the workloads touch

mcas_config SmallConfig(mcas_algorithm alg)
{
	mcas_config c = mcastest::TestConfig(alg, 4, 16, 4);
	c.reclaim_batch = 2; // detach and recycle often, so those paths crash too
	return c;
}

struct Op {
	std::vector<unsigned> idx;
	std::vector<uint64_t> old, new_;
};

// Everything the run and the check share. The check runs in a forked
// process at the crash point, so it sees these fields as they were then.
struct World {
	mcastest::PmemInstance p;
	mcas_algorithm alg;
	// single-threaded: the ops and the model state after each prefix
	std::vector<Op> ops;
	std::vector<std::array<uint64_t, kTargets>> states;
	std::atomic<unsigned> done{0};
	// multi-threaded: per thread, the word sets it adds 8 to, and how many
	// of its increments returned
	unsigned threads = 0;
	std::vector<std::vector<std::vector<unsigned>>> incs;
	std::atomic<unsigned> tdone[4];
	bool nested_recovery = false;
	unsigned nested_runs = 0;
};

// Recover and compare with the model; "" if fine.
std::string CheckNoReferences(World *w)
{
	for (unsigned i = 0; i < mcastest::kWords; i++)
		if (w->p.words[i] & mcas_value_mask(w->p.m))
			return "word " + std::to_string(i) + " still holds a descriptor reference";
	return "";
}

std::string Recover(World *w)
{
	mcas *m = nullptr;
	int ret = mcas_pmem_open(&m, w->p.pool, w->p.area_off, nullptr);
	if (ret != 0)
		return "mcas_pmem_open: " + std::to_string(ret);
	w->p.m = m; // the crashed instance is abandoned, as a dead process's would be
	return CheckNoReferences(w);
}

std::string CheckSingle(World *w)
{
	std::string err = Recover(w);
	if (!err.empty())
		return err;
	unsigned d = w->done.load();
	for (unsigned s = d; s <= d + 1 && s < w->states.size(); s++) {
		bool same = true;
		for (unsigned i = 0; i < kTargets; i++)
			same &= w->p.words[i] == w->states[s][i];
		if (same)
			return "";
	}
	char buf[256];
	std::snprintf(buf, sizeof(buf), "after %u completed ops the words are "
		"%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		", matching neither that prefix nor one more op", d,
		w->p.words[0], w->p.words[1], w->p.words[2], w->p.words[3], w->p.words[4],
		w->p.words[5]);
	return buf;
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

int RunSingle(void *arg)
{
	World *w = static_cast<World *>(arg);
	mcas_thread *t;
	if (mcas_thread_register(w->p.m, &t) != 0)
		return 1;
	for (const Op &op : w->ops) {
		mcas_desc *d;
		if (mcas_desc_begin(t, &d) != 0)
			return 2;
		for (size_t i = 0; i < op.idx.size(); i++)
			mcas_desc_add(d, &w->p.words[op.idx[i]], op.old[i], op.new_[i]);
		mcas_desc_execute(d);
		w->done.fetch_add(1);
	}
	return mcas_thread_unregister(&t) == 0 ? 0 : 3;
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

int NestedRecoveryRun(void *arg)
{
	World *w = static_cast<World *>(arg);
	mcas *m = nullptr;
	return mcas_pmem_open(&m, w->p.pool, w->p.area_off, nullptr) == 0 ? 0 : 1;
}

int NestedRecoveryCheck(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	std::string err = CheckSingle(w);
	std::snprintf(msg, len, "after a crash during recovery: %s", err.c_str());
	return err.empty() ? 0 : 1;
}

int Check(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	if (w->nested_recovery)
		return pmtest::CrashRecovery("mcas-recovery", w->p.words,
			mcastest::kWords * 8 + w->p.area_size, NestedRecoveryRun, NestedRecoveryCheck,
			w, msg, len);
	std::string err = w->threads ? CheckMulti(w) : CheckSingle(w);
	std::snprintf(msg, len, "%s", err.c_str());
	return err.empty() ? 0 : 1;
}

// A seeded single-threaded sequence: k = 1..4 cycling, about one in four
// with a wrong expected value (so failed MCAS are crashed too).
void MakeOps(World *w, unsigned n, unsigned seed)
{
	std::mt19937 rng(seed);
	std::array<uint64_t, kTargets> s{};
	w->states.push_back(s);
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
		w->ops.push_back(op);
		w->states.push_back(s);
	}
}

pmtest::CrashRun Simulate(World *w, const char *name, pm_crashsim_mode mode, unsigned one_in,
	pm_crashsim_run_fn run)
{
	pm_crashsim_config cfg;
	pm_crashsim_config_init(&cfg);
	cfg.name = name;
	cfg.mode = mode;
	if (one_in != 0)
		cfg.sample_one_in = one_in;
	cfg.max_images = 16;
	pmtest::CrashRun r = pmtest::RunCrashSim(cfg, w->p.words,
		mcastest::kWords * 8 + w->p.area_size, run, Check, w);
	std::printf("%-28s events=%" PRIu64 " points=%" PRIu64 " images=%" PRIu64 "\n", name,
		r.st.events, r.st.points, r.st.images);
	return r;
}

class Crash : public ::testing::TestWithParam<mcas_algorithm> {
protected:
	bool Make(World *w, const std::string &name)
	{
		w->alg = GetParam();
		mcas_config c = SmallConfig(w->alg);
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
