// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/dll_lin_test.cc -- recorded concurrent histories of the MCAS
// doubly-linked list (insert, remove, contains on a small key range, more
// threads than cores) checked for linearizability against a set, for every
// MCAS variant.
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <ds/dll.h>

#include "ds/tests/dll_test_util.h"
#include "ds/tests/mcas_lin.h"
#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace {

constexpr unsigned kThreads = 4;
constexpr unsigned kOps = 300;
constexpr uint64_t kKeys = 8;

using Recorder = lincheck::Recorder<lincheck::SetOp>;

void Worker(ds_dll *l, Recorder::Handle *h, unsigned seed)
{
	ds_dll_thread *t;
	ASSERT_EQ(ds_dll_thread_register(l, &t), 0);
	std::mt19937 rng(seed);
	for (unsigned n = 0; n < kOps; n++)
		dstest::SetStep(h, rng, 1 + rng() % kKeys,
			[t](uint64_t k) { return ds_dll_insert(t, k); },
			[t](uint64_t k) { return ds_dll_remove(t, k); },
			[t](uint64_t k) { return ds_dll_contains(t, k) ? 1 : 0; });
	ASSERT_EQ(ds_dll_thread_unregister(&t), 0);
}

class DllLin : public ::testing::TestWithParam<dlltest::Variant> {};

TEST_P(DllLin, HistoriesAreLinearizable)
{
	const dlltest::Variant v = GetParam();
	dlltest::ListEnv env;
	DS_SETUP(env, "lin-" + dlltest::VariantName(v), v,
		dlltest::SmallConfig(v.alg, kThreads + 1, 64));
	std::vector<uint64_t> initial;
	{
		ds_dll_thread *t;
		ASSERT_EQ(ds_dll_thread_register(env.ds, &t), 0);
		for (uint64_t k = 1; k <= kKeys; k += 2) {
			ASSERT_EQ(ds_dll_insert(t, k), 1);
			initial.push_back(k);
		}
		ASSERT_EQ(ds_dll_thread_unregister(&t), 0);
	}
	for (unsigned round = 0; round < 4; round++) {
		Recorder rec(kThreads, kOps);
		std::vector<std::thread> th;
		for (unsigned i = 0; i < kThreads; i++)
			th.emplace_back(Worker, env.ds, &rec.handle(i), round * 100 + i);
		for (auto &x : th)
			x.join();
		lincheck::Result r = lincheck::check(lincheck::SetModel(initial), rec.history());
		ASSERT_TRUE(r.ok) << "round " << round << ": " << r.explanation;
		// The next round starts from what this one left.
		ds_dll_thread *t;
		ASSERT_EQ(ds_dll_thread_register(env.ds, &t), 0);
		initial = dlltest::Keys(t);
		ASSERT_EQ(ds_dll_thread_unregister(&t), 0);
	}
}

INSTANTIATE_TEST_SUITE_P(Variants, DllLin, ::testing::ValuesIn(dlltest::AllVariants()),
	dlltest::VariantNamer());

} // namespace
