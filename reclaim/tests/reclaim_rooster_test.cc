// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_rooster_test.cc -- Cadence frees a node only once
// every rooster has woken after its retirement, and delete does not wait for
// sleeping roosters. The roosters are held and released through a test hook
// (reclaim__test_hold_roosters), so what the test asserts follows from
// events it caused, not from how long anything takes.
#include <thread>

#include <gtest/gtest.h>

#include "reclaim/src/reclaim_testing.h"
#include "reclaim_test_util.h"

using namespace reclaimtest;

namespace {

TEST(Cadence, WaitsForEveryRooster)
{
	reclaim_config cfg = TestConfig(RECLAIM_CADENCE);
	cfg.rooster_interval_us = 1000;
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	ASSERT_GT(Stats(d).roosters, 0u);
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);

	// Held: no rooster wakes after the retirement, so the node stays.
	ASSERT_EQ(reclaim__test_hold_roosters(d, true), 0);
	const uint64_t woken = Stats(d).rooster_wakeups;
	FreeLog log(1);
	ASSERT_EQ(reclaim_retire(t, NewIdNode(0, &log), FreeIdNode, &log), 0);
	EXPECT_EQ(reclaim_drain(t), 1u);
	EXPECT_EQ(log.total.load(), 0u);
	EXPECT_EQ(Stats(d).rooster_wakeups, woken);

	// Released: the roosters wake again and the node goes (if it never
	// did, the test would hang until its timeout).
	ASSERT_EQ(reclaim__test_hold_roosters(d, false), 0);
	while (reclaim_drain(t) != 0)
		std::this_thread::yield();
	EXPECT_GT(Stats(d).rooster_wakeups, woken);
	EXPECT_TRUE(log.AllOnce(1));

	// Delete stops parked roosters (a wait for them would hang the test
	// until its timeout).
	FreeLog log2(1);
	ASSERT_EQ(reclaim__test_hold_roosters(d, true), 0);
	ASSERT_EQ(reclaim_retire(t, NewIdNode(0, &log2), FreeIdNode, &log2), 0);
	EXPECT_EQ(reclaim_drain(t), 1u);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_TRUE(log2.AllOnce(1));
}

TEST(Cadence, HoldNeedsRoosters)
{
	reclaim_config cfg = TestConfig(RECLAIM_HP);
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	EXPECT_EQ(reclaim__test_hold_roosters(d, true), -EINVAL);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

} // namespace
