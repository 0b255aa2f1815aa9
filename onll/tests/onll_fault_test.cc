// SPDX-License-Identifier: BSD-3-Clause
// onll/tests/onll_fault_test.cc -- every allocation of every ONLL call made
// to fail in turn (//pm:fault_alloc): each call returns -ENOMEM with nothing
// changed, or ONLL_E_RESULT_LOST for an update that took effect without its
// result, or succeeds; the object stays usable and a reopen shows exactly
// the updates that said they took effect.
#include <cstdint>
#include <map>

#include <gtest/gtest.h>

#include <onll/objects.h>
#include <onll/onll.h>
#include <pm/error.h>

#include "onll/tests/onll_test_util.h"
#include "pm/tests/fault_alloc.h"

namespace {

using onlltest::Env;
using onlltest::SmallConfig;

// The map's contents through @t (unarmed).
std::map<uint64_t, uint64_t> Contents(onll_thread *t, uint64_t keys)
{
	std::map<uint64_t, uint64_t> m;
	for (uint64_t k = 1; k <= keys; k++) {
		uint64_t v;
		int r = onll_map_get(t, k, &v);
		EXPECT_GE(r, 0) << pm_strerror(r);
		if (r == 1)
			m[k] = v;
	}
	return m;
}

TEST(OnllFault, CreateOpenAndRegisterFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	Env e;
	onll_config c = SmallConfig();
	ASSERT_EQ(e.Create("fault-create", c, onll_map_type()), 0);
	ASSERT_EQ(onll_close(&e.o), 0);
	auto enomem_iff_fired = [](int r, bool fired) {
		EXPECT_EQ(r, fired ? -ENOMEM : 0) << pm_strerror(r);
	};
	auto close = [](onll **o) { onll_close(o); };
	EXPECT_GT(pmtest::SweepConstructor<onll>(
			  [&](onll **o) { return onll_create(o, e.pool, e.area_off, &c, e.type); }, close,
			  enomem_iff_fired),
		2u);
	EXPECT_GT(pmtest::SweepConstructor<onll>(
			  [&](onll **o) { return onll_open(o, e.pool, e.area_off, e.type); }, close,
			  enomem_iff_fired),
		2u);
	ASSERT_EQ(onll_open(&e.o, e.pool, e.area_off, e.type), 0);
	EXPECT_GT(pmtest::SweepConstructor<onll_thread>(
			  [&](onll_thread **t) { return onll_thread_register(e.o, t); },
			  [](onll_thread **t) { onll_thread_unregister(t); }, enomem_iff_fired),
		0u);
}

// Each update of a sweep puts a new key. -ENOMEM: the key is absent;
// ONLL_E_RESULT_LOST or success: it is present; and after a reopen the map
// is exactly that.
TEST(OnllFault, UpdateTookEffectExactlyWhenItSaysSo)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	Env e;
	ASSERT_EQ(e.Create("fault-update", SmallConfig(4, 8), onll_map_type()), 0);
	onll_thread *t = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	std::map<uint64_t, uint64_t> expect;
	uint64_t key = 0;
	unsigned lost = 0, refused = 0;
	// Several sweeps, so that updates which write a checkpoint or reuse
	// log entries and trace nodes have their allocations failed too.
	for (unsigned round = 0; round < 12; round++) {
		pmtest::SweepAllocFailures(
			[&] {
				key++;
				return onll_map_put(t, key, key * 10);
			},
			[&](int r, bool fired) {
				if (!fired) {
					EXPECT_EQ(r, 0) << pm_strerror(r);
				} else {
					EXPECT_TRUE(r == -ENOMEM || r == ONLL_E_RESULT_LOST || r == 0)
						<< pm_strerror(r);
				}
				if (r == -ENOMEM)
					refused++;
				else
					expect[key] = key * 10;
				lost += r == ONLL_E_RESULT_LOST;
				EXPECT_EQ(Contents(t, key), expect) << "after key " << key;
			});
	}
	EXPECT_GT(refused, 0u);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
	ASSERT_EQ(e.Reopen(), 0);
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	EXPECT_EQ(Contents(t, key), expect);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
	EXPECT_GT(lost, 0u) << "no update lost its result: the apply() failure path did not run";
}

TEST(OnllFault, ReadsAndCheckpointsFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	Env e;
	ASSERT_EQ(e.Create("fault-read", SmallConfig(4, 8), onll_map_type()), 0);
	onll_thread *w = nullptr, *r = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &w), 0);
	ASSERT_EQ(onll_thread_register(e.o, &r), 0);
	for (uint64_t k = 1; k <= 20; k++) {
		ASSERT_EQ(onll_map_put(w, k, k + 100), 0);
		// The reader catches up on the writer's updates, one allocation
		// point at a time.
		pmtest::SweepAllocFailures(
			[&] {
				uint64_t v = 0;
				int ret = onll_map_get(r, k, &v);
				EXPECT_TRUE(ret == -ENOMEM || v == k + 100);
				return ret;
			},
			[](int ret, bool fired) { EXPECT_EQ(ret, fired ? -ENOMEM : 1) << pm_strerror(ret); });
		pmtest::SweepAllocFailures([&] { return onll_checkpoint(w); },
			[](int ret, bool fired) {
				EXPECT_TRUE(ret == 0 || ret == -EBUSY || (fired && ret == -ENOMEM))
					<< pm_strerror(ret);
			});
	}
	ASSERT_EQ(onll_thread_unregister(&r), 0);
	ASSERT_EQ(onll_thread_unregister(&w), 0);
	ASSERT_EQ(e.Reopen(), 0);
	ASSERT_EQ(onll_thread_register(e.o, &r), 0);
	for (uint64_t k = 1; k <= 20; k++) {
		uint64_t v = 0;
		ASSERT_EQ(onll_map_get(r, k, &v), 1);
		EXPECT_EQ(v, k + 100);
	}
	ASSERT_EQ(onll_thread_unregister(&r), 0);
}

} // namespace
