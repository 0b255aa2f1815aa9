// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_stress_test.cc -- safety under concurrency, every
// scheme: threads read nodes through a small shared array while others swap
// them out and retire them; a freed node is poisoned, so a reader that sees
// one (or ASan, which sees the access) fails the test. More threads than
// cores; some of them go offline and online between operations.
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "reclaim_test_util.h"

using namespace reclaimtest;

namespace {

constexpr int kSlots = 4;
constexpr int kThreads = 6;
constexpr int kMaxIters = 400000;
constexpr auto kBudget = std::chrono::milliseconds(700);

struct Shared {
	reclaim_scheme scheme;
	std::atomic<Node *> slot[kSlots];
	std::atomic<uint64_t> created{0};
	std::atomic<uint64_t> freed{0};
	std::atomic<uint64_t> bad{0};
	std::atomic<uint64_t> undrained{0};
	std::atomic<unsigned> writing{0};     // writers still in their loop
	std::atomic<uint64_t> holds{0};       // references held across reclamation
	std::atomic<uint64_t> holds_stuck{0}; // ... during which it never ran
};

// Whether a reader holding its references since @before has let the
// reclamation it must survive happen: the writers retired more nodes than
// there are slots (so likely those it holds), and the scheme's reclaimer
// ran meanwhile: two rooster rounds (Cadence, QSense), a hazard scan (HP).
// The epoch schemes cannot advance past a reader inside an operation, which
// is what holding tests for them, so for them the retires are the event.
bool HeldAcrossReclamation(const Shared &sh, const reclaim_stats &before,
	const reclaim_stats &now)
{
	if (now.retired < before.retired + 2 * kSlots)
		return false;
	switch (sh.scheme) {
	case RECLAIM_CADENCE:
	case RECLAIM_QSENSE:
		return now.rooster_wakeups >= before.rooster_wakeups + 2;
	case RECLAIM_HP:
		return now.scans > before.scans;
	default:
		return true;
	}
}

// protect_slot -- a reference to the node in slot @i that stays valid until
// hazard @hp is reused or the operation ends (the header's protocol)
Node *ProtectSlot(reclaim_thread *t, Shared &sh, int i, unsigned hp)
{
	for (;;) {
		Node *p = sh.slot[i].load();
		reclaim_protect(t, hp, p);
		if (!reclaim_needs_validation(t) || sh.slot[i].load() == p)
			return p;
	}
}

void Worker(reclaim_domain *d, Shared &sh, unsigned seed, bool writer, bool leaky)
{
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	std::minstd_rand rng(seed);
	auto until = std::chrono::steady_clock::now() + kBudget;
	sh.writing += writer;

	for (int it = 0; it < kMaxIters; it++) {
		if ((it & 255) == 0 && std::chrono::steady_clock::now() > until)
			break;
		reclaim_op_begin(t);
		int i = (int)(rng() % kSlots);
		Node *p = ProtectSlot(t, sh, i, 0);
		Node *q = ProtectSlot(t, sh, (i + 1) % kSlots, 1);
		if (!NodeIntact(p) || !NodeIntact(q))
			sh.bad++;
		if (!writer && it % 64 == 63) {
			// Hold the references while writers retire the nodes
			// and the reclaimer runs (HeldAcrossReclamation).
			// Once the writers are done there is nothing to wait for.
			const reclaim_stats before = Stats(d);
			bool held = false;
			if (!WaitFor([&] {
				    held = HeldAcrossReclamation(sh, before, Stats(d));
				    return held || sh.writing.load() == 0;
			    }, 5.0))
				sh.holds_stuck++;
			sh.holds += held;
			if (!NodeIntact(p))
				sh.bad++;
		}
		if (writer && rng() % 2 == 0) {
			Node *n = NewNode(rng());
			if (sh.slot[i].compare_exchange_strong(p, n)) {
				sh.created++;
				reclaim_retire(t, p, PoisonFree, &sh.freed);
			} else {
				std::free(n);
			}
		}
		// Read again after the retire: p is still protected.
		if (!NodeIntact(q))
			sh.bad++;
		reclaim_op_end(t);
		if (it % 512 == 511) {
			reclaim_thread_offline(t);
			std::this_thread::yield();
			reclaim_thread_online(t);
		}
	}
	sh.writing -= writer;
	// Drop this thread's own hazards, then wait for its retired nodes to
	// go (the other threads finish or move on).
	reclaim_op_begin(t);
	reclaim_protect(t, 0, nullptr);
	reclaim_protect(t, 1, nullptr);
	reclaim_op_end(t);
	if (!leaky && !WaitFor([&] { return reclaim_drain(t) == 0; }))
		sh.undrained++;
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
}

class Stress : public testing::TestWithParam<reclaim_scheme> {};

TEST_P(Stress, ReadersNeverSeeFreedNodes)
{
	reclaim_scheme scheme = GetParam();
	reclaim_config cfg = TestConfig(scheme);
	cfg.hazards_per_thread = 2;
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	Shared sh;
	sh.scheme = scheme;
	for (auto &s : sh.slot) {
		s.store(NewNode(0));
		sh.created++;
	}
	std::vector<std::thread> th;
	for (int i = 0; i < kThreads; i++)
		th.emplace_back(Worker, d, std::ref(sh), 1234u + i, i >= 2,
			scheme == RECLAIM_NONE);
	for (auto &x : th)
		x.join();

	reclaim_stats st = Stats(d);
	std::printf("%s: retired %llu, epochs %llu, scans %llu, fences %llu\n",
		reclaim_scheme_name(scheme), (unsigned long long)st.retired,
		(unsigned long long)st.epochs, (unsigned long long)st.scans,
		(unsigned long long)st.fences);
	EXPECT_EQ(sh.bad.load(), 0u) << "a reader saw a freed node";
	EXPECT_GT(sh.holds.load(), 0u);
	EXPECT_EQ(sh.holds_stuck.load(), 0u)
		<< "holds during which the writers or the reclaimer did not run";
	EXPECT_EQ(st.retired, sh.created.load() - kSlots);
	EXPECT_GT(st.retired, 100u);
	EXPECT_EQ(st.registered, 0u);
	EXPECT_EQ(st.evicted, 0u);
	if (scheme == RECLAIM_NONE) {
		EXPECT_EQ(st.freed, 0u);
	} else {
		EXPECT_EQ(sh.undrained.load(), 0u)
			<< "a thread's retired nodes were never freed";
		EXPECT_TRUE(WaitFor([&] { return sh.freed.load() == st.retired; }));
		EXPECT_EQ(Stats(d).pending, 0u);
	}
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_EQ(sh.freed.load(), st.retired) << "freed exactly once by delete";
	for (auto &s : sh.slot)
		PoisonFree(s.load(), &sh.freed);
}

INSTANTIATE_TEST_SUITE_P(All, Stress, testing::ValuesIn(AllSchemes()), SchemeName);

} // namespace
