// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/set_lin_test.cc -- many short concurrent histories of the three
// lock-free sets (4 threads, a few operations each, 4 keys, started
// together from a spin barrier so that their operations overlap), recorded
// with timestamps and checked for linearizability against a set
// (tests/lincheck), under every reclamation scheme.
#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <reclaim/reclaim.h>

#include "ds/tests/set_test_util.h"
#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace {

using settest::Env;
using settest::Param;
using settest::Registration;

constexpr unsigned kThreads = 4;
constexpr unsigned kOps = 12;      // per thread and round
constexpr uint64_t kKeys = 4;
constexpr unsigned kRounds = 600 / settest::kSlowdown;

using Recorder = lincheck::Recorder<lincheck::SetOp>;

// Worker -- register, wait for every worker, run kOps random operations
// through @h, unregister. Results are checked by the caller (the history),
// errors here.
void Worker(Env *env, Recorder::Handle *h, std::atomic<unsigned> *ready, unsigned seed)
{
	Registration reg(env->d);
	ASSERT_EQ(reg.rc(), 0);
	reclaim_thread *t = reg.get();
	std::mt19937 rng(seed);
	ready->fetch_add(1);
	while (ready->load() < kThreads)
		std::this_thread::yield();
	for (unsigned n = 0; n < kOps; n++) {
		uint64_t k = rng() % kKeys;
		switch (rng() % 3) {
		case 0: {
			auto tk = h->invoke(lincheck::SetOp::insert(k));
			int r = env->set->Insert(t, k);
			ASSERT_GE(r, 0);
			h->complete(tk, lincheck::SetOp::insert(k, r == 1));
			break;
		}
		case 1: {
			auto tk = h->invoke(lincheck::SetOp::remove(k));
			int r = env->set->Remove(t, k);
			ASSERT_GE(r, 0);
			h->complete(tk, lincheck::SetOp::remove(k, r == 1));
			break;
		}
		default: {
			auto tk = h->invoke(lincheck::SetOp::contains(k));
			int r = env->set->Contains(t, k);
			ASSERT_GE(r, 0);
			h->complete(tk, lincheck::SetOp::contains(k, r == 1));
			break;
		}
		}
	}
}

class SetLin : public ::testing::TestWithParam<Param> {};

TEST_P(SetLin, ShortHistoriesAreLinearizable)
{
	const Param p = GetParam();
	Env env;
	ASSERT_EQ(env.Create(p), 0);
	std::vector<uint64_t> initial;
	{
		Registration reg(env.d);
		ASSERT_EQ(reg.rc(), 0);
		for (uint64_t k = 0; k < kKeys; k += 2) {
			ASSERT_EQ(env.set->Insert(reg.get(), k), 1);
			initial.push_back(k);
		}
	}
	size_t ops = 0;
	for (unsigned round = 0; round < kRounds; round++) {
		Recorder rec(kThreads, kOps);
		std::atomic<unsigned> ready{0};
		std::vector<std::thread> th;
		for (unsigned i = 0; i < kThreads; i++)
			th.emplace_back(Worker, &env, &rec.handle(i), &ready,
				round * 1000 + i + 77 * static_cast<unsigned>(p.kind));
		for (auto &x : th)
			x.join();
		if (HasFatalFailure())
			return;
		auto hist = rec.history();
		ops += hist.size();
		lincheck::Result r = lincheck::check(lincheck::SetModel(initial), hist);
		ASSERT_TRUE(r.ok) << "round " << round << ": " << r.explanation;
		// The next round starts from what this one left.
		Registration reg(env.d);
		ASSERT_EQ(reg.rc(), 0);
		initial = settest::Keys(*env.set, reg.get(), kKeys);
		std::string why;
		ASSERT_EQ(env.set->Check(&why), 0) << "round " << round << ": " << why;
		ASSERT_EQ(env.set->Size(), initial.size());
	}
	EXPECT_EQ(ops, size_t{kRounds} * kThreads * kOps);
}

INSTANTIATE_TEST_SUITE_P(All, SetLin, ::testing::ValuesIn(settest::AllParams()),
	settest::ParamNamer());

}  // namespace
