// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/dll_stress_test.cc -- the MCAS doubly-linked list under
// contention: 8 threads (more than the machine's cores, so threads are
// preempted inside operations and guards) on a small key range with many
// updates. Afterwards the invariants hold, no node leaked, and for every key
// the initial presence plus the successful inserts minus the successful
// removes is the final presence (0 or 1): no update was lost or duplicated.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ds/dll.h>
#include <mcas/mcas.h>

#include "ds/tests/dll_test_util.h"
#include "ds/tests/mcas_stress.h"

namespace {

using dlltest::Check;
using dlltest::Keys;
using dlltest::ListEnv;
using dlltest::Variant;

struct Workload {
	unsigned threads;
	uint64_t keys;      // keys 1..keys
	unsigned update_pct; // half inserts, half removes
	unsigned ops;       // per thread
};

// One worker operation: an insert, a remove or a lookup.
void Step(ds_dll_thread *h, const Workload &w, std::mt19937_64 &rng, dstest::StressResult *res)
{
	uint64_t key = 1 + rng() % w.keys;
	unsigned r = rng() % 100;
	int ret;
	if (r < w.update_pct / 2) {
		ret = ds_dll_insert(h, key);
		if (ret < 0)
			res->error = "insert " + std::to_string(key) + ": " + std::to_string(ret);
		res->added[key] += ret == 1;
	} else if (r < w.update_pct) {
		ret = ds_dll_remove(h, key);
		if (ret < 0)
			res->error = "remove " + std::to_string(key) + ": " + std::to_string(ret);
		res->removed[key] += ret == 1;
	} else {
		(void)ds_dll_contains(h, key);
	}
}

class DllStressTest : public testing::TestWithParam<Variant> {
protected:
	void Run(const std::string &name, const Workload &w)
	{
		const Variant v = GetParam();
		ListEnv env;
		DS_SETUP(env, name + "-" + dlltest::VariantName(v), v,
			dlltest::SmallConfig(v.alg, 16, 64), 4096);

		// Every other key present at the start.
		std::vector<int64_t> present(w.keys + 1, 0);
		ds_dll_thread *h = nullptr;
		ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
		for (uint64_t k = 2; k <= w.keys; k += 2) {
			ASSERT_EQ(ds_dll_insert(h, k), 1);
			present[k] = 1;
		}
		ASSERT_EQ(ds_dll_thread_unregister(&h), 0);

		std::vector<dstest::StressResult> res;
		ASSERT_EQ(dstest::RunStress(&res, env.ds, ds_dll_thread_register,
				  ds_dll_thread_unregister, w.threads, w.keys + 1, w.ops,
				  [&w](ds_dll_thread *wh, unsigned, std::mt19937_64 &rng,
					  dstest::StressResult *r) { Step(wh, w, rng, r); }),
			"");

		ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
		ds_dll_stats st;
		ASSERT_EQ(Check(h, &st), "");
		EXPECT_EQ(st.retired, 0u); // every worker unregistered
		std::vector<uint64_t> expect;
		uint64_t updates = 0;
		ASSERT_EQ(dstest::StressReplay(present, res, &expect, &updates), "");
		EXPECT_EQ(Keys(h), expect);
		EXPECT_EQ(st.size, expect.size());
		for (uint64_t k = 1; k <= w.keys; k++)
			EXPECT_EQ(ds_dll_contains(h, k),
				std::find(expect.begin(), expect.end(), k) != expect.end());
		ASSERT_EQ(ds_dll_thread_unregister(&h), 0);

		mcas_stats ms;
		mcas_stats_total(env.m, &ms);
		std::printf("%-16s %-10s %u threads: %" PRIu64 " successful updates, %" PRIu64
			" MCAS (%" PRIu64 " succeeded), %" PRIu64 " helps, %" PRIu64
			" detach CAS, %" PRIu64 " read detaches, %" PRIu64 " descriptor waits\n",
			dlltest::VariantName(v).c_str(), name.c_str(), w.threads, updates, ms.mcas,
			ms.succeeded, ms.helps, ms.detach_cas, ms.read_detaches, ms.desc_waits);
		// Every successful update is exactly one successful MCAS.
		EXPECT_EQ(ms.succeeded, updates + w.keys / 2);
	}
};

TEST_P(DllStressTest, EightThreadsSixteenKeysHalfUpdates)
{
	Run("hot", { 8, 16, 50, 8000 });
}

TEST_P(DllStressTest, EightThreadsWiderRangeFewUpdates)
{
	Run("wide", { 8, 200, 20, 3000 });
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, DllStressTest,
	testing::ValuesIn(dlltest::AllVariants()), dlltest::VariantNamer());

} // namespace
