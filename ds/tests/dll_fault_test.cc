// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/dll_fault_test.cc -- allocation failures (//pm:fault_alloc) under
// the MCAS doubly-linked list, on every MCAS algorithm and mode: every
// allocation point of ds_dll_new, ds_dll_pmem_create, ds_dll_pmem_open,
// ds_dll_thread_register and of inserts (new slabs) and removes (retiring)
// is made to fail in turn. Constructors return -ENOMEM with nothing made and
// the pool area untouched; an insert returns -ENOMEM with the set unchanged;
// a remove never fails for memory (a node mcas_retire() refuses is kept and
// retired later); the list stays valid, no node leaked.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ds/dll.h>
#include <mcas/mcas.h>
#include <pm/error.h>

#include "ds/tests/dll_test_util.h"
#include "pm/tests/fault_alloc.h"

namespace {

using dlltest::Check;
using dlltest::Keys;
using dlltest::ListEnv;
using dlltest::Variant;

constexpr uint64_t kCapacity = 256; // persistent arena: room for every key

// The sweep's check for a constructor: -ENOMEM exactly when an allocation
// failed, success otherwise.
void EnomemIffFired(int r, bool fired)
{
	EXPECT_EQ(r, fired ? -ENOMEM : 0) << pm_strerror(r);
}

// Logs the allocation points a sweep of @what exercised, and returns them.
unsigned Points(const std::string &what, unsigned n)
{
	std::printf("%s: %u allocation points\n", what.c_str(), n);
	return n;
}

class DllFault : public testing::TestWithParam<Variant> {};

TEST_P(DllFault, ConstructorsAndRegistrationFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	ListEnv env;
	DLL_PARAM_SETUP(env, "fault-ctor", kCapacity);
	auto close = [](ds_dll **l) { EXPECT_EQ(ds_dll_close(l), 0); };
	if (!GetParam().persistent) {
		EXPECT_GT(Points("ds_dll_new", pmtest::SweepConstructor<ds_dll>(
				  [&](ds_dll **l) { return ds_dll_new(l, env.m); }, close, EnomemIffFired)),
			0u);
	} else {
		// A failed create or open must not have written the area.
		std::vector<char> before(env.ds_size);
		auto unchanged = [&](int r, bool fired) {
			EnomemIffFired(r, fired);
			if (r != 0) {
				EXPECT_EQ(memcmp(before.data(), env.ds_area, env.ds_size), 0)
					<< "the area changed under " << pm_strerror(r);
			}
		};
		ASSERT_EQ(ds_dll_close(&env.ds), 0);
		EXPECT_GT(Points("ds_dll_pmem_create", pmtest::SweepConstructor<ds_dll>(
				  [&](ds_dll **l) {
					  memcpy(before.data(), env.ds_area, env.ds_size);
					  return ds_dll_pmem_create(l, env.m, env.pool, env.ds_off,
						  kCapacity);
				  },
				  close, unchanged)),
			0u);
		// Open a list that holds keys, and find them after the sweep.
		ASSERT_EQ(ds_dll_pmem_open(&env.ds, env.m, env.pool, env.ds_off), 0);
		ds_dll_thread *h = nullptr;
		ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
		for (uint64_t k = 1; k <= 20; k++)
			ASSERT_EQ(ds_dll_insert(h, k * 3), 1);
		ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
		ASSERT_EQ(ds_dll_close(&env.ds), 0);
		EXPECT_GT(Points("ds_dll_pmem_open", pmtest::SweepConstructor<ds_dll>(
				  [&](ds_dll **l) {
					  memcpy(before.data(), env.ds_area, env.ds_size);
					  return ds_dll_pmem_open(l, env.m, env.pool, env.ds_off);
				  },
				  close, unchanged)),
			0u);
		ASSERT_EQ(ds_dll_pmem_open(&env.ds, env.m, env.pool, env.ds_off), 0);
		ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
		EXPECT_EQ(Keys(h).size(), 20u);
		EXPECT_EQ(Check(h), "");
		ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
	}
	EXPECT_GT(Points("ds_dll_thread_register", pmtest::SweepConstructor<ds_dll_thread>(
			  [&](ds_dll_thread **h) { return ds_dll_thread_register(env.ds, h); },
			  [](ds_dll_thread **h) { EXPECT_EQ(ds_dll_thread_unregister(h), 0); },
			  EnomemIffFired)),
		0u);
}

// Enough keys for several volatile slabs (64 nodes each) and for removes
// whose retirement grows the MCAS limbo lists; every allocation of each
// operation fails in turn, then the operation runs.
TEST_P(DllFault, OperationsFailWithTheSetUnchanged)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	constexpr uint64_t kKeys = 200;
	ListEnv env;
	DLL_PARAM_SETUP(env, "fault-ops", kCapacity);
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	std::set<uint64_t> model;
	unsigned refused = 0, inserts = 0, removes = 0;
	auto check_set = [&] {
		ASSERT_EQ(Check(h), "");
		ASSERT_EQ(Keys(h), std::vector<uint64_t>(model.begin(), model.end()));
	};
	for (uint64_t k = 1; k <= kKeys; k++) {
		uint64_t key = k * 37 % kKeys + 1;
		inserts += pmtest::SweepAllocFailures([&] { return ds_dll_insert(h, key); },
			[&](int r, bool fired) {
				if (r == 1) {
					EXPECT_EQ(model.count(key), 0u) << "key " << key;
					model.insert(key);
				} else if (r == 0) {
					EXPECT_EQ(model.count(key), 1u) << "key " << key;
				} else {
					EXPECT_EQ(r, -ENOMEM) << pm_strerror(r) << (fired ? " (fired)" : "");
					EXPECT_TRUE(fired);
					EXPECT_FALSE(ds_dll_contains(h, key)) << "key " << key;
				}
				refused += r == -ENOMEM;
			});
		if (k % 25 == 0)
			check_set();
	}
	for (uint64_t k = 1; k <= kKeys; k += 2) {
		removes += pmtest::SweepAllocFailures([&] { return ds_dll_remove(h, k); },
			[&](int r, bool fired) {
				// A refused retirement keeps the node for later: the
				// remove took effect, and the sweep's next run finds
				// the key absent.
				EXPECT_EQ(r, model.count(k) ? 1 : 0)
					<< pm_strerror(r) << (fired ? " (fired)" : "");
				if (r == 1)
					model.erase(k);
			});
		if (k % 25 == 0)
			check_set();
	}
	check_set();
	Points("ds_dll_insert", inserts);
	Points("ds_dll_remove", removes);
	if (!GetParam().persistent) {
		EXPECT_GT(refused, 0u) << "no insert needed a new slab";
	}
	EXPECT_GT(removes, 0u) << "no remove grew the MCAS limbo list";
	// Afterwards: it still works, and unregistering retires what was kept.
	ASSERT_EQ(ds_dll_insert(h, kKeys + 1), 1);
	model.insert(kKeys + 1);
	check_set();
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	ds_dll_stats st;
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.size, model.size());
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
	EXPECT_EQ(ds_dll_close(&env.ds), 0);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, DllFault, testing::ValuesIn(dlltest::AllVariants()),
	dlltest::VariantNamer());

} // namespace
