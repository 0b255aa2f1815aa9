// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/set_stress_test.cc -- more threads than cores on a small key
// range, for each of the three lock-free sets under every reclamation
// scheme, with nodes poisoned (0xdd) as they are freed and reclamation
// intervals short enough that it really happens during the run.
//
// What is checked, none of it timing-dependent:
//   - keys of three kinds: shared even keys (every thread inserts and
//     removes them), odd keys that nobody ever inserts (a lookup or remove
//     of one must always fail -- a search must never "find" a key no node
//     could hold, e.g. by reading a poisoned or reused node), and keys
//     private to one thread (every result on them must match that thread's
//     own record exactly, since nobody else touches them);
//   - at the end: check(), size == initial + successful inserts - successful
//     removes, the keys present, every successful remove having retired
//     exactly its nodes once (domain stats), and, after the domain is
//     deleted, every node ever linked having been freed exactly once.
#include <atomic>
#include <cstdio>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <reclaim/reclaim.h>

#include "ds/tests/set_test_util.h"

namespace {

using settest::Env;
using settest::Param;
using settest::Registration;

constexpr unsigned kThreads = 6;  // more than the 2 cores of the CI machines
constexpr unsigned kOps = 200000 / settest::kSlowdown;  // per thread
constexpr uint64_t kShared = 64;           // keys 0 .. 63: even shared, odd never inserted
constexpr uint64_t kPrivateBase = 1000;
constexpr uint64_t kPrivatePerThread = 16;

uint64_t PrivateKey(unsigned tid, uint64_t i)
{
	return kPrivateBase + tid * 100 + i;
}

struct Counts {
	uint64_t inserts = 0;
	uint64_t removes = 0;
};

void Worker(Env *env, unsigned tid, Counts *out, std::atomic<unsigned> *ready)
{
	Registration reg(env->d);
	ASSERT_EQ(reg.rc(), 0);
	reclaim_thread *t = reg.get();
	settest::Set &s = *env->set;
	std::mt19937_64 rng(tid * 7919 + 17);
	std::vector<bool> mine(kPrivatePerThread, false);
	Counts c;
	ready->fetch_add(1);
	while (ready->load() < kThreads)
		std::this_thread::yield();
	for (unsigned n = 0; n < kOps; n++) {
		const uint64_t r = rng();
		const unsigned op = r % 5;        // 0-1 insert, 2-3 remove, 4 contains
		const unsigned cls = (r >> 8) % 10; // 0-5 shared, 6 never inserted, 7-9 private
		if (cls < 6) {
			const uint64_t k = 2 * ((r >> 16) % (kShared / 2));
			int res = op < 2 ? s.Insert(t, k) : op < 4 ? s.Remove(t, k) : s.Contains(t, k);
			ASSERT_TRUE(res == 0 || res == 1) << "op " << op << " key " << k << ": " << res;
			if (op < 2)
				c.inserts += res;
			else if (op < 4)
				c.removes += res;
		} else if (cls == 6) {
			const uint64_t k = 2 * ((r >> 16) % (kShared / 2)) + 1;
			ASSERT_EQ(op % 2 ? s.Remove(t, k) : s.Contains(t, k), 0)
				<< "key " << k << " was never inserted";
		} else {
			const uint64_t i = (r >> 16) % kPrivatePerThread;
			const uint64_t k = PrivateKey(tid, i);
			if (op < 2) {
				ASSERT_EQ(s.Insert(t, k), mine[i] ? 0 : 1) << "private key " << k;
				c.inserts += !mine[i];
				mine[i] = true;
			} else if (op < 4) {
				ASSERT_EQ(s.Remove(t, k), mine[i] ? 1 : 0) << "private key " << k;
				c.removes += mine[i];
				mine[i] = false;
			} else {
				ASSERT_EQ(s.Contains(t, k), mine[i] ? 1 : 0) << "private key " << k;
			}
		}
	}
	for (uint64_t i = 0; i < kPrivatePerThread; i++)
		ASSERT_EQ(s.Contains(t, PrivateKey(tid, i)), mine[i] ? 1 : 0);
	*out = c;
}

class SetStress : public ::testing::TestWithParam<Param> {};

TEST_P(SetStress, MixedOperations)
{
	const Param p = GetParam();
	Env env;
	ASSERT_EQ(env.Create(p), 0);
	uint64_t inserts = 0, removes = 0;
	{
		Registration reg(env.d);
		ASSERT_EQ(reg.rc(), 0);
		for (uint64_t k = 0; k < kShared; k += 4) {
			ASSERT_EQ(env.set->Insert(reg.get(), k), 1);
			inserts++;
		}
	}
	std::vector<Counts> counts(kThreads);
	std::atomic<unsigned> ready{0};
	std::vector<std::thread> th;
	for (unsigned i = 0; i < kThreads; i++)
		th.emplace_back(Worker, &env, i, &counts[i], &ready);
	for (auto &x : th)
		x.join();
	ASSERT_FALSE(HasFatalFailure());
	for (const Counts &c : counts) {
		inserts += c.inserts;
		removes += c.removes;
	}
	std::string why;
	ASSERT_EQ(env.set->Check(&why), 0) << why;
	ASSERT_EQ(env.set->Size(), inserts - removes);
	{
		Registration reg(env.d);
		ASSERT_EQ(reg.rc(), 0);
		size_t present = 0;
		for (uint64_t k = 0; k < kShared; k++) {
			int r = env.set->Contains(reg.get(), k);
			ASSERT_EQ(r, k % 2 ? 0 : r);
			present += r == 1;
		}
		for (unsigned tid = 0; tid < kThreads; tid++)
			for (uint64_t i = 0; i < kPrivatePerThread; i++)
				present += env.set->Contains(reg.get(), PrivateKey(tid, i)) == 1;
		ASSERT_EQ(present, inserts - removes);
	}
	const unsigned npk = settest::NodesPerKey(p.kind);
	reclaim_stats st = env.Stats();
	// How much was really freed (and poisoned) while the threads ran,
	// for the log; how much depends on the schedule, so it is not asserted.
	std::printf("%s: %llu removes, %llu nodes retired, %llu freed before delete, "
		"pending max %llu, %llu scans, %llu epochs, %llu fallback switches\n",
		settest::ParamName(p).c_str(), (unsigned long long)removes,
		(unsigned long long)st.retired, (unsigned long long)st.freed,
		(unsigned long long)st.pending_max, (unsigned long long)st.scans,
		(unsigned long long)st.epochs, (unsigned long long)st.to_fallback);
	EXPECT_EQ(st.retired, npk * removes) << "a node retired twice or not at all";
	EXPECT_LE(st.freed, st.retired);
	ASSERT_EQ(env.DeleteAll(), 0);
	EXPECT_EQ(env.frees.freed.load(), npk * inserts) << "a node freed twice or leaked";
}

INSTANTIATE_TEST_SUITE_P(All, SetStress, ::testing::ValuesIn(settest::AllParams()),
	settest::ParamNamer());

}  // namespace
