// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/sets_fault_test.cc -- allocation failures (//pm:fault_alloc)
// under the three lock-free sets on reclaim/ (ds/hmlist.h, ds/skiplist.h,
// ds/nmbst.h), every structure x every scheme but urcu-qsbr: every
// allocation point of the constructors, of inserts (new nodes) and of
// removes (reclaim_retire() growing its list) is made to fail in turn. A
// constructor returns -ENOMEM with nothing made; an insert returns -ENOMEM
// with the set unchanged; a remove never fails for memory (a node the domain
// refuses is leaked, as the sets document); every node the domain accepted
// is freed exactly once.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ds/hmlist.h>
#include <ds/nmbst.h>
#include <ds/skiplist.h>
#include <pm/error.h>
#include <reclaim/reclaim.h>

#include "ds/tests/set_test_util.h"
#include "pm/tests/fault_alloc.h"

namespace {

using settest::Env;
using settest::Kind;
using settest::Param;
using settest::Registration;

// The sweep's check for a constructor: -ENOMEM exactly when an allocation
// failed, success otherwise.
void EnomemIffFired(int r, bool fired)
{
	EXPECT_EQ(r, fired ? -ENOMEM : 0) << pm_strerror(r);
}

// Every structure x every scheme but urcu-qsbr: liburcu ends the process
// when it cannot allocate (its urcu_die), which reclaim.h documents for
// that baseline.
std::vector<Param> FaultParams()
{
	std::vector<reclaim_scheme> own;
	for (reclaim_scheme s : settest::AllSchemes())
		if (s != RECLAIM_URCU_QSBR)
			own.push_back(s);
	return settest::Params(own);
}

// Sweeps the constructor of @k on @d; returns the allocation points.
unsigned SweepNew(Kind k, reclaim_domain *d)
{
	switch (k) {
	case Kind::kHmList:
		return pmtest::SweepConstructor<ds_hmlist>(
			[&](ds_hmlist **l) { return ds_hmlist_new(l, d, nullptr, nullptr); },
			[](ds_hmlist **l) { EXPECT_EQ(ds_hmlist_delete(l), 0); }, EnomemIffFired);
	case Kind::kSkipList:
		return pmtest::SweepConstructor<ds_skiplist>(
			[&](ds_skiplist **s) {
				return ds_skiplist_new(s, d, settest::kLevels, nullptr, nullptr);
			},
			[](ds_skiplist **s) { EXPECT_EQ(ds_skiplist_delete(s), 0); }, EnomemIffFired);
	case Kind::kNmBst:
		return pmtest::SweepConstructor<ds_nmbst>(
			[&](ds_nmbst **b) { return ds_nmbst_new(b, d, nullptr, nullptr); },
			[](ds_nmbst **b) { EXPECT_EQ(ds_nmbst_delete(b), 0); }, EnomemIffFired);
	}
	return 0;
}

class SetFault : public testing::TestWithParam<Param> {};

TEST_P(SetFault, ConstructorsFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	const Param p = GetParam();
	reclaim_config cfg = settest::TestConfig(p.scheme, p.kind);
	reclaim_domain *d = nullptr;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	unsigned points = SweepNew(p.kind, d);
	std::printf("%s: new, %u allocation points\n", settest::ParamName(p).c_str(), points);
	EXPECT_GT(points, 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

// Every allocation of each insert and remove fails in turn, then the
// operation runs; the set always holds what the model says.
TEST_P(SetFault, OperationsFailWithTheSetUnchanged)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	constexpr uint64_t kKeys = 150;
	const Param p = GetParam();
	Env env;
	ASSERT_EQ(env.Create(p), 0);
	std::set<uint64_t> model;
	uint64_t inserted = 0, removed = 0;
	unsigned refused = 0, inserts = 0, removes = 0;
	{
		Registration reg(env.d);
		ASSERT_EQ(reg.rc(), 0);
		reclaim_thread *t = reg.get();
		auto check_set = [&] {
			std::string why;
			ASSERT_EQ(env.set->Check(&why), 0) << why;
			ASSERT_EQ(env.set->Size(), model.size());
			ASSERT_EQ(settest::Keys(*env.set, t, kKeys + 2),
				std::vector<uint64_t>(model.begin(), model.end()));
		};
		for (uint64_t k = 0; k < kKeys; k++) {
			uint64_t key = k * 37 % kKeys;
			inserts += pmtest::SweepAllocFailures([&] { return env.set->Insert(t, key); },
				[&](int r, bool fired) {
					if (r == 1) {
						EXPECT_EQ(model.count(key), 0u) << "key " << key;
						model.insert(key);
						inserted++;
					} else if (r == 0) {
						EXPECT_EQ(model.count(key), 1u) << "key " << key;
					} else {
						EXPECT_EQ(r, -ENOMEM) << pm_strerror(r);
						EXPECT_TRUE(fired);
						EXPECT_EQ(env.set->Contains(t, key), 0) << "key " << key;
					}
					refused += r == -ENOMEM;
				});
			if (k % 25 == 0)
				check_set();
		}
		for (uint64_t key = 0; key < kKeys; key += 2) {
			// Every other remove runs unarmed, so that the domain's
			// list grows and accepts retired nodes too.
			if (key % 4 == 2) {
				ASSERT_EQ(env.set->Remove(t, key), 1) << "key " << key;
				model.erase(key);
				removed++;
				continue;
			}
			removes += pmtest::SweepAllocFailures([&] { return env.set->Remove(t, key); },
				[&](int r, bool fired) {
					// A run whose retire was refused removed the key
					// (the node leaked); the sweep's next run finds
					// it absent.
					EXPECT_EQ(r, model.count(key) ? 1 : 0)
						<< pm_strerror(r) << (fired ? " (fired)" : "");
					if (r == 1) {
						model.erase(key);
						removed++;
					}
				});
			if (key % 25 == 0)
				check_set();
		}
		check_set();
		// Afterwards the set still works.
		ASSERT_EQ(env.set->Insert(t, kKeys), 1);
		model.insert(kKeys);
		inserted++;
		check_set();
	}
	std::printf("%s: insert, %u allocation points (%u refused); remove, %u\n",
		settest::ParamName(p).c_str(), inserts, refused, removes);
	EXPECT_GT(refused, 0u);
	// The nodes the domain refused are leaked; every other one is freed
	// once: by the domain if it was retired, by the set's delete if not.
	const unsigned per_key = settest::NodesPerKey(p.kind);
	uint64_t accepted = env.Stats().retired;
	EXPECT_GT(accepted, 0u);
	EXPECT_LE(accepted, per_key * removed);
	ASSERT_EQ(env.DeleteAll(), 0);
	EXPECT_EQ(env.frees.freed.load(), per_key * (inserted - removed) + accepted);
}

INSTANTIATE_TEST_SUITE_P(Sets, SetFault, testing::ValuesIn(FaultParams()),
	settest::ParamNamer());

} // namespace
