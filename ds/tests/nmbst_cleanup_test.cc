// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/nmbst_cleanup_test.cc -- the Natarajan-Mittal BST's cleanup
// that cuts off a path of several internal nodes at once, made to happen
// deterministically with the cleanup hook (ds/src/nmbst_testing.h), under
// every reclamation scheme.
//
// Keys 10, 20, ..., 10(L+1) inserted in increasing order make a chain
//     S.left = I1(inf0){ I2(20){ leaf10, I3(30){ leaf20, I4(40){ leaf30, ... }}}, leaf inf0 }
// Thread j (j = 1 .. L-1) removes 10j: it flags I(j+1).left, tags
// I(j+1).right and is held in the hook before its CAS on I1.left. Then the
// main thread removes 10L: its seek crosses the tagged edges, so its record
// is (ancestor I1, successor I2, parent I(L+1)), and its one CAS cuts off
// I2 .. I(L+1) and leaves 10 .. 10L -- 2L nodes, which it alone retires.
// Released, each held thread's CAS fails and its next seek no longer finds
// its leaf, so it returns 1 without retiring anything.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <reclaim/reclaim.h>

#include "ds/src/nmbst_testing.h"
#include "ds/tests/set_test_util.h"

namespace {

using settest::Env;
using settest::Kind;
using settest::Registration;

// Hook state: a thread removing 10j (j < kMaxHeld) waits in its first
// cleanup until released.
constexpr unsigned kMaxHeld = 4;
std::atomic<int> g_reached[kMaxHeld + 1];
std::atomic<bool> g_release{false};
std::atomic<unsigned> g_held{0};  // keys 10 .. 10 * g_held are held

void HoldingHook(uint64_t key)
{
	if (key % 10 != 0 || key / 10 == 0 || key / 10 > g_held.load())
		return;
	if (g_reached[key / 10].fetch_add(1) != 0)
		return;  // hold only the first cleanup of each held key
	while (!g_release.load())
		std::this_thread::yield();
}

struct Case {
	reclaim_scheme scheme;
	unsigned length;  // internal nodes the main thread's CAS cuts off
};

std::string CaseName(const testing::TestParamInfo<Case> &info)
{
	std::string s = std::string(reclaim_scheme_name(info.param.scheme)) + "_path" +
		std::to_string(info.param.length);
	for (char &c : s)
		if (c == '-')
			c = '_';
	return s;
}

std::vector<Case> Cases()
{
	std::vector<Case> v;
	for (reclaim_scheme s : settest::AllSchemes())
		for (unsigned len : { 2u, 3u, 4u })
			v.push_back({ s, len });
	return v;
}

class NmBstCleanup : public ::testing::TestWithParam<Case> {
protected:
	void TearDown() override { __atomic_store_n(&ds_nmbst__cleanup_hook, nullptr, __ATOMIC_SEQ_CST); }
};

TEST_P(NmBstCleanup, OneCasCutsOffATaggedPath)
{
	const Case c = GetParam();
	const unsigned L = c.length;
	Env env;
	ASSERT_EQ(env.Create({ Kind::kNmBst, c.scheme }), 0);
	{
		Registration reg(env.d);
		ASSERT_EQ(reg.rc(), 0);
		for (uint64_t j = 1; j <= L + 1; j++)
			ASSERT_EQ(env.set->Insert(reg.get(), 10 * j), 1);
	}
	for (auto &r : g_reached)
		r.store(0);
	g_release.store(false);
	g_held.store(L - 1);
	__atomic_store_n(&ds_nmbst__cleanup_hook, &HoldingHook, __ATOMIC_SEQ_CST);

	// Start the held removes one at a time, each once the previous one
	// waits in its cleanup (so that each one's seek sees the tags before).
	std::vector<std::thread> held;
	std::vector<int> results(L, -1);
	for (unsigned j = 1; j < L; j++) {
		held.emplace_back([&env, &results, j] {
			Registration reg(env.d);
			ASSERT_EQ(reg.rc(), 0);
			results[j] = env.set->Remove(reg.get(), 10 * j);
		});
		while (g_reached[j].load() == 0)
			std::this_thread::yield();
	}
	{
		Registration reg(env.d);
		ASSERT_EQ(reg.rc(), 0);
		ASSERT_EQ(env.Stats().retired, 0u);
		ASSERT_EQ(env.set->Remove(reg.get(), 10 * L), 1);
		// The one CAS retired the whole path and every leaf on it.
		EXPECT_EQ(env.Stats().retired, 2u * L);
		for (unsigned j = 1; j <= L; j++)
			EXPECT_EQ(env.set->Contains(reg.get(), 10 * j), 0) << 10 * j;
		EXPECT_EQ(env.set->Contains(reg.get(), 10 * (L + 1)), 1);
	}
	g_release.store(true);
	for (auto &t : held)
		t.join();
	__atomic_store_n(&ds_nmbst__cleanup_hook, nullptr, __ATOMIC_SEQ_CST);
	for (unsigned j = 1; j < L; j++) {
		EXPECT_EQ(results[j], 1) << "remove " << 10 * j;
		EXPECT_EQ(g_reached[j].load(), 1) << "key " << 10 * j;
	}
	// The held removes retired nothing more: each node once.
	EXPECT_EQ(env.Stats().retired, 2u * L);
	std::string why;
	ASSERT_EQ(env.set->Check(&why), 0) << why;
	ASSERT_EQ(env.set->Size(), 1u);
	ASSERT_EQ(env.DeleteAll(), 0);
	EXPECT_EQ(env.frees.freed.load(), 2u * (L + 1));
}

INSTANTIATE_TEST_SUITE_P(All, NmBstCleanup, ::testing::ValuesIn(Cases()), CaseName);

}  // namespace
