// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/harris_test.cc -- the Harris, Fraser and Pratt baseline
// (MCAS_ALG_HARRIS): CAS counts, API semantics, concurrent increments, and
// helping and RDCSS scenarios forced by freezing threads on page faults.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <mcas/mcas.h>
#include <pm/cost.h>

#include "mcas/tests/mcas_freeze.h"
#include "mcas/tests/mcas_test_util.h"

namespace {

mcas *NewHarris(unsigned max_threads = 64, unsigned descs = 128)
{
	mcas_config cfg;
	mcas_config_init(&cfg);
	cfg.algorithm = MCAS_ALG_HARRIS;
	cfg.max_threads = max_threads;
	cfg.descs_per_thread = descs;
	mcas *m = nullptr;
	EXPECT_EQ(mcas_new(&m, &cfg), 0);
	return m;
}

mcas_thread *Register(mcas *m)
{
	mcas_thread *t = nullptr;
	EXPECT_EQ(mcas_thread_register(m, &t), 0);
	return t;
}

// A Harris instance with the calling thread registered; unregistering and
// destroying it must succeed when it goes out of scope.
struct OneThread {
	mcas *m;
	mcas_thread *t;

	explicit OneThread(unsigned max_threads = 64, unsigned descs = 128)
		: m(NewHarris(max_threads, descs)), t(Register(m))
	{
	}
	~OneThread()
	{
		EXPECT_EQ(mcas_thread_unregister(&t), 0);
		EXPECT_EQ(mcas_close(&m), 0);
	}

	mcas_stats Stats() const
	{
		mcas_stats s;
		mcas_thread_stats(t, &s);
		return s;
	}
};

struct Target {
	uint64_t *addr;
	uint64_t expected, desired;
};

// Run one MCAS; -EAGAIN from begin (pool waiting for a grace period) is
// retried, as the API asks.
int Mcas(mcas_thread *t, const std::vector<Target> &targets)
{
	mcas_desc *d;
	int r;
	while ((r = mcas_desc_begin(t, &d)) == -EAGAIN)
		sched_yield();
	if (r != 0)
		return r;
	for (const Target &x : targets) {
		r = mcas_desc_add(d, x.addr, x.expected, x.desired);
		if (r != 0) {
			mcas_desc_abandon(d);
			return r;
		}
	}
	return mcas_desc_execute(d);
}

uint64_t CasSince(const pm_cost &before)
{
	return mcastest::CostSince(before, PM_COST_CAS);
}

uint64_t Raw(const uint64_t *w)
{
	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

// ---- CAS counts ----

// An uncontended k-word MCAS: k RDCSS installs, k Completes, one status
// CAS, k releases.
TEST(HarrisCost, UncontendedKWordMcasIs3kPlus1Cas)
{
	alignas(64) uint64_t w[16] = {};
	OneThread inst;
	mcas_thread *t = inst.t;

	for (unsigned k = 1; k <= 16; k++) {
		mcas_desc *d;
		ASSERT_EQ(mcas_desc_begin(t, &d), 0);
		for (unsigned i = k; i-- > 0;) // reverse order: the core sorts
			ASSERT_EQ(mcas_desc_add(d, &w[i], w[i], w[i] + 8), 0);
		pm_cost before;
		pm_cost_read_thread(&before);
		ASSERT_EQ(mcas_desc_execute(d), 1);
		uint64_t cas = CasSince(before);
		EXPECT_EQ(cas, 3u * k + 1) << "k = " << k;
		if (k <= 8)
			RecordProperty("cas_k" + std::to_string(k), std::to_string(cas));
	}
	// Word i took part in the MCASes with k > i: 16 - i of them.
	for (unsigned i = 0; i < 16; i++)
		EXPECT_EQ(Raw(&w[i]), 8u * (16 - i)) << i;
}

// Phase 1 loads before it CASes and phase 2 only CASes words it holds, so an
// MCAS whose first word differs costs the status CAS alone; one failing on
// its last word costs 3(k-1) + 1.
TEST(HarrisCost, FailingMcasIssuesFewerCas)
{
	alignas(64) uint64_t w[8] = {};
	OneThread inst;
	mcas_thread *t = inst.t;

	for (unsigned k = 1; k <= 8; k++) {
		std::vector<Target> first, last;
		for (unsigned i = 0; i < k; i++) {
			first.push_back({&w[i], i == 0 ? 8u : 0u, 16});
			last.push_back({&w[i], i == k - 1 ? 8u : 0u, 16});
		}
		pm_cost before;
		pm_cost_read_thread(&before);
		ASSERT_EQ(Mcas(t, first), 0);
		uint64_t cas_first = CasSince(before);
		EXPECT_EQ(cas_first, 1u) << "k = " << k;
		EXPECT_LT(cas_first, 3u * k + 1);
		pm_cost_read_thread(&before);
		ASSERT_EQ(Mcas(t, last), 0);
		EXPECT_EQ(CasSince(before), 3u * (k - 1) + 1) << "k = " << k;
		for (unsigned i = 0; i < 8; i++)
			ASSERT_EQ(Raw(&w[i]), 0u) << "a failed MCAS wrote word " << i;
	}
}

// A read of a plain word is one load; after an uncontended MCAS its words
// are plain again (nothing left for readers to help).
TEST(HarrisCost, ReadOfPlainWordIssuesNoCas)
{
	alignas(64) uint64_t a = 40, b = 48;
	OneThread inst;
	mcas_thread *t = inst.t;

	pm_cost before;
	pm_cost_read_thread(&before);
	EXPECT_EQ(mcas_read(t, &a), 40u);
	EXPECT_EQ(CasSince(before), 0u);
	ASSERT_EQ(Mcas(t, {{&a, 40, 56}, {&b, 48, 64}}), 1);
	EXPECT_EQ(Raw(&a), 56u);
	EXPECT_EQ(Raw(&b), 64u);
	pm_cost_read_thread(&before);
	EXPECT_EQ(mcas_read(t, &a), 56u);
	EXPECT_EQ(mcas_read(t, &b), 64u);
	EXPECT_EQ(CasSince(before), 0u);
	mcas_stats s = inst.Stats();
	EXPECT_EQ(s.helps, 0u);
}

// ---- semantics through the public API ----

TEST(HarrisApi, InstanceProperties)
{
	mcas *m = NewHarris();
	EXPECT_EQ(mcas_algorithm_of(m), MCAS_ALG_HARRIS);
	EXPECT_STREQ(mcas_algorithm_name(MCAS_ALG_HARRIS), "harris");
	EXPECT_FALSE(mcas_is_persistent(m));
	EXPECT_EQ(mcas_value_mask(m), 3u);
	EXPECT_EQ(mcas_value_mask(m) & ~MCAS_VALUE_PORTABLE_MASK, 0u);
	EXPECT_EQ(mcas_close(&m), 0);
	EXPECT_EQ(m, nullptr);

	// Volatile only: no persistent area for it.
	mcas_config cfg;
	mcas_config_init(&cfg);
	cfg.algorithm = MCAS_ALG_HARRIS;
	EXPECT_EQ(mcas_pmem_area_size(&cfg), 0u);
}

TEST(HarrisApi, SuccessFailureAndValues)
{
	alignas(64) uint64_t a = 0, b = 8, c = 16;
	OneThread inst;
	mcas_thread *t = inst.t;

	EXPECT_EQ(Mcas(t, {{&c, 16, 160}, {&a, 0, 4}, {&b, 8, 80}}), 1);
	EXPECT_EQ(mcas_read(t, &a), 4u); // bit 2 is a value bit here
	EXPECT_EQ(mcas_read(t, &b), 80u);
	EXPECT_EQ(mcas_read(t, &c), 160u);

	// One stale expectation: nothing is written.
	EXPECT_EQ(Mcas(t, {{&a, 4, 12}, {&b, 8, 88}, {&c, 160, 168}}), 0);
	EXPECT_EQ(mcas_read(t, &a), 4u);
	EXPECT_EQ(mcas_read(t, &b), 80u);
	EXPECT_EQ(mcas_read(t, &c), 160u);

	// old == new is a compare-only MCAS.
	EXPECT_EQ(Mcas(t, {{&a, 4, 4}, {&b, 80, 80}}), 1);
	EXPECT_EQ(mcas_read(t, &a), 4u);

	// Full-width values: only the two low bits are reserved.
	uint64_t big = 0xfffffffffffffffcull;
	EXPECT_EQ(Mcas(t, {{&a, 4, big}}), 1);
	EXPECT_EQ(mcas_read(t, &a), big);
	EXPECT_EQ(Mcas(t, {{&a, big, 0}}), 1);

	mcas_stats s = inst.Stats();
	EXPECT_EQ(s.mcas, 5u);
	EXPECT_EQ(s.succeeded, 4u);
}

TEST(HarrisApi, BadArgumentsAreRejected)
{
	alignas(64) uint64_t w[MCAS_MAX_WORDS + 1] = {};
	OneThread inst;
	mcas_thread *t = inst.t;
	mcas_desc *d;

	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	mcas_desc *d2;
	EXPECT_EQ(mcas_desc_begin(t, &d2), -EBUSY);
	EXPECT_EQ(mcas_desc_add(d, &w[0], 1, 0), -EINVAL); // reserved bit 0
	EXPECT_EQ(mcas_desc_add(d, &w[0], 0, 2), -EINVAL); // reserved bit 1
	EXPECT_EQ(mcas_desc_add(d, &w[0], 3, 3), -EINVAL);
	EXPECT_EQ(mcas_desc_add(d, nullptr, 0, 0), -EINVAL);
	EXPECT_EQ(mcas_desc_add(d, (uint64_t *)((char *)&w[0] + 4), 0, 0), -EINVAL);
	for (unsigned i = 0; i < MCAS_MAX_WORDS; i++)
		ASSERT_EQ(mcas_desc_add(d, &w[i], 0, 8), 0);
	EXPECT_EQ(mcas_desc_add(d, &w[3], 0, 8), -EEXIST);
	EXPECT_EQ(mcas_desc_add(d, &w[MCAS_MAX_WORDS], 0, 8), -E2BIG);
	// The errors left d usable: the 16-word MCAS runs.
	EXPECT_EQ(mcas_desc_execute(d), 1);
	for (unsigned i = 0; i < MCAS_MAX_WORDS; i++)
		EXPECT_EQ(mcas_read(t, &w[i]), 8u);
	EXPECT_EQ(mcas_read(t, &w[MCAS_MAX_WORDS]), 0u);

	// Empty: consumed, -EINVAL.
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	EXPECT_EQ(mcas_desc_execute(d), -EINVAL);
	// Abandoned: nothing written, a new one can begin.
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	ASSERT_EQ(mcas_desc_add(d, &w[0], 8, 16), 0);
	mcas_desc_abandon(d);
	EXPECT_EQ(mcas_read(t, &w[0]), 8u);
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	mcas_desc_abandon(d);
}

// Many operations on one thread cycle the records through the two-grace
// pipeline (detach is a no-op that buys the second grace period); the pool
// must never run dry with nobody else in an epoch.
TEST(HarrisApi, RecordsAreRecycled)
{
	alignas(64) uint64_t a = 0, b = 0;
	OneThread inst(4, 8);
	mcas_thread *t = inst.t;

	for (uint64_t i = 0; i < 20000; i++) {
		mcas_desc *d;
		ASSERT_EQ(mcas_desc_begin(t, &d), 0) << i;
		ASSERT_EQ(mcas_desc_add(d, &a, 8 * i, 8 * i + 8), 0);
		ASSERT_EQ(mcas_desc_add(d, &b, 16 * i, 16 * i + 16), 0);
		ASSERT_EQ(mcas_desc_execute(d), 1);
	}
	EXPECT_EQ(mcas_read(t, &a), 8u * 20000);
	EXPECT_EQ(mcas_read(t, &b), 16u * 20000);
	mcas_stats s = inst.Stats();
	EXPECT_EQ(s.desc_waits, 0u);
	EXPECT_EQ(s.detach_cas, 0u);
}

// ---- concurrency ----

struct StressResult {
	uint64_t helps, mcas, succeeded;
};

// @writers threads each run @ops successful MCASes adding 8 to 2..4
// distinct random words of @nwords, retrying failures; @readers threads
// check that every value they read is a multiple of 8 (never a reference)
// and never decreases. At the end each word is 8 * (successful MCASes that
// touched it).
StressResult Stress(unsigned writers, unsigned readers, unsigned nwords, unsigned ops,
	bool yield)
{
	mcas *m = NewHarris(writers + readers + 1, 64);
	std::vector<uint64_t> words(nwords, 0); // 8-byte aligned
	uint64_t *w = words.data();
	std::vector<std::vector<uint64_t>> touched(writers, std::vector<uint64_t>(nwords, 0));
	std::vector<uint64_t> ks(writers, 0);
	std::atomic<unsigned> writers_left{writers};
	std::atomic<bool> bad{false};
	std::vector<std::thread> th;

	for (unsigned id = 0; id < writers; id++) {
		th.emplace_back([&, id] {
			mcas_thread *t = Register(m);
			std::mt19937_64 rng(0x5eed + id);
			for (unsigned n = 0; n < ops; n++) {
				unsigned k = 2 + rng() % 3;
				std::vector<unsigned> idx;
				while (idx.size() < k) {
					unsigned i = rng() % nwords;
					bool dup = false;
					for (unsigned j : idx)
						dup |= j == i;
					if (!dup)
						idx.push_back(i);
				}
				for (;;) {
					std::vector<Target> tg;
					for (unsigned i : idx) {
						uint64_t v = mcas_read(t, &w[i]);
						tg.push_back({&w[i], v, v + 8});
					}
					int r = Mcas(t, tg);
					if (r < 0)
						bad = true;
					if (r != 0)
						break;
					if (yield)
						sched_yield();
				}
				for (unsigned i : idx)
					touched[id][i]++;
				ks[id] += k;
				if (yield && n % 4 == 0)
					sched_yield();
			}
			mcas_thread_unregister(&t);
			writers_left--;
		});
	}
	for (unsigned id = 0; id < readers; id++) {
		th.emplace_back([&] {
			mcas_thread *t = Register(m);
			std::vector<uint64_t> last(nwords, 0);
			while (writers_left.load() > 0) {
				for (unsigned i = 0; i < nwords; i++) {
					uint64_t v = mcas_read(t, &w[i]);
					if (v % 8 != 0 || v < last[i])
						bad = true;
					last[i] = v;
				}
				if (yield)
					sched_yield();
			}
			mcas_thread_unregister(&t);
		});
	}
	for (std::thread &x : th)
		x.join();

	EXPECT_FALSE(bad.load());
	uint64_t sum = 0, expect_sum = 0;
	for (unsigned i = 0; i < nwords; i++) {
		uint64_t n = 0;
		for (unsigned id = 0; id < writers; id++)
			n += touched[id][i];
		EXPECT_EQ(Raw(&w[i]), 8 * n) << "word " << i;
		sum += Raw(&w[i]);
	}
	for (unsigned id = 0; id < writers; id++)
		expect_sum += 8 * ks[id];
	EXPECT_EQ(sum, expect_sum);

	mcas_stats s;
	mcas_stats_total(m, &s);
	EXPECT_EQ(s.succeeded, (uint64_t)writers * ops);
	EXPECT_EQ(mcas_close(&m), 0);
	return {s.helps, s.mcas, s.succeeded};
}

#ifdef MCAS_TEST_TSAN
constexpr unsigned kStressOps = 6000;
#else
constexpr unsigned kStressOps = 20000;
#endif

// 8 writers and 2 readers on 2 cores: threads are preempted mid-operation.
TEST(HarrisConcurrency, RandomIncrementsOnEightWords)
{
	StressResult r = Stress(8, 2, 8, kStressOps, false);
	std::printf("[ harris  ] 8 writers x %u MCAS on 8 words: %llu attempts, %llu helps\n",
		kStressOps, (unsigned long long)r.mcas, (unsigned long long)r.helps);
	RecordProperty("helps", std::to_string(r.helps));
}

// More threads than words, yielding between attempts: helping happens a lot
// but not deterministically, so the count is reported, not asserted (the
// Freeze tests below assert it).
TEST(HarrisConcurrency, YieldingThreadsOnFourWords)
{
	StressResult r = Stress(16, 4, 4, kStressOps / 4, true);
	std::printf("[ harris  ] 16 writers x %u MCAS on 4 words: %llu attempts, %llu helps\n",
		kStressOps / 4, (unsigned long long)r.mcas, (unsigned long long)r.helps);
	RecordProperty("helps", std::to_string(r.helps));
}

// ---- deterministic interleavings: threads frozen on page faults ----
//
// mcas/tests/mcas_freeze.h: a thread whose CAS (or load) hits a page the
// test made read-only (or inaccessible) is parked by the SIGSEGV handler
// until the test resumes it. Not under TSan (mcastest::kFreezeNoTsan).

using mcastest::Freezer;
using mcastest::tl_freezer;
using mcastest::WaitFor;

class HarrisFreeze : public ::testing::Test {
protected:
	void SetUp() override
	{
#ifdef MCAS_TEST_TSAN
		GTEST_SKIP() << mcastest::kFreezeNoTsan;
#endif
		ASSERT_EQ(pages_.Map(2), 0);
		// x on the first page, y on the second: x sorts first.
		x_ = pages_.Word(0);
		y_ = pages_.Word(1);
		ASSERT_EQ(handler_.Install(), 0);
		// Records of a slot span whole pages (64 * 576 B) and the array
		// is big enough to be a mapping of its own.
		m_ = NewHarris(8, 64);
	}

	void TearDown() override
	{
		handler_.Uninstall();
		if (m_ != nullptr) {
			EXPECT_EQ(mcas_close(&m_), 0);
		}
	}

	void ProtectY(int prot) { ASSERT_EQ(mcastest::ProtectPages(y_, 8, prot), 0); }

	// The pages holding the record that @ref (an MCAS reference) names.
	void ProtectRecord(uint64_t ref, int prot)
	{
		ASSERT_EQ(mcastest::ProtectPages((const void *)(uintptr_t)(ref & ~3ull), 576, prot),
			0);
	}

	mcastest::Pages pages_;
	mcastest::FreezeHandler handler_;
	uint64_t *x_ = nullptr, *y_ = nullptr;
	mcas *m_ = nullptr;
};

// The owner stops right before acquiring its second word; a reader of the
// first word finds the operation UNDECIDED and finishes it (1 help), and the
// owner, resumed, finds its operation done and reports success.
TEST_F(HarrisFreeze, ReaderHelpsPreemptedOwner)
{
	mcas_thread *me = Register(m_);
	*x_ = 8;
	*y_ = 24;
	ProtectY(PROT_READ);

	Freezer f1;
	std::atomic<int> r1{-1};
	std::thread owner([&] {
		mcas_thread *t = Register(m_);
		tl_freezer = &f1;
		r1 = Mcas(t, {{x_, 8, 16}, {y_, 24, 32}});
		tl_freezer = nullptr;
		mcas_thread_unregister(&t);
	});
	ASSERT_TRUE(WaitFor([&] { return f1.frozen.load() >= 1; }));
	EXPECT_EQ(Raw(x_) & 3, 1u) << "x holds the owner's MCAS reference";
	EXPECT_EQ(Raw(y_), 24u);
	ProtectY(PROT_READ | PROT_WRITE);

	pm_cost before;
	pm_cost_read_thread(&before);
	EXPECT_EQ(mcas_read(me, x_), 16u);
	// The help: install + Complete on y, the status, two releases.
	EXPECT_EQ(CasSince(before), 5u);
	mcas_stats s;
	mcas_thread_stats(me, &s);
	EXPECT_EQ(s.helps, 1u);
	EXPECT_EQ(Raw(x_), 16u);
	EXPECT_EQ(Raw(y_), 32u);

	f1.resumed++;
	owner.join();
	EXPECT_EQ(r1.load(), 1);
	EXPECT_EQ(mcas_read(me, y_), 32u);
	EXPECT_EQ(mcas_thread_unregister(&me), 0);
}

// The scenario RDCSS exists for, plus the stale Complete the tag exists for.
//  1. Owner T and helper H both stop right before installing on y (A).
//  2. T installs its RDCSS reference I1 on y and stops before Completing it.
//  3. Reader C loads I1, reads UNDECIDED and stops right before its CAS
//     I1 -> A.
//  4. T finishes A (y = 32) and returns; B sets y back to 24 (ABA).
//  5. H, resumed, installs its RDCSS reference I2 on y (y held A's old
//     value again) and stops before Completing it.
//  6. C, resumed, CASes I1 -> A. If I2 == I1 (one descriptor per
//     (operation, word), untagged) this succeeds and H's phase 2 then writes
//     32 over B's 24. Tagged, it fails; Complete sees A decided and restores
//     24.
TEST_F(HarrisFreeze, StaleCompleteFailsOnLaterInstall)
{
	mcas_thread *me = Register(m_);
	*x_ = 8;
	*y_ = 24;
	ProtectY(PROT_READ);

	Freezer ft, fh, fc;
	std::atomic<int> rt{-1};
	std::atomic<bool> t_may_exit{false};
	std::atomic<uint64_t> h_read{~0ull}, c_read{~0ull};
	std::thread owner([&] {
		mcas_thread *t = Register(m_);
		tl_freezer = &ft;
		rt = Mcas(t, {{x_, 8, 16}, {y_, 24, 32}});
		tl_freezer = nullptr;
		// Unregistering waits for H and C to leave their epochs.
		while (!t_may_exit.load())
			std::this_thread::sleep_for(std::chrono::microseconds(200));
		mcas_thread_unregister(&t);
	});
	ASSERT_TRUE(WaitFor([&] { return ft.frozen.load() >= 1; }));
	uint64_t a_ref = Raw(x_);
	ASSERT_EQ(a_ref & 3, 1u);

	std::thread helper([&] {
		mcas_thread *t = Register(m_);
		tl_freezer = &fh;
		h_read = mcas_read(t, x_); // meets A UNDECIDED, helps
		tl_freezer = nullptr;
		mcas_thread_unregister(&t);
	});
	ASSERT_TRUE(WaitFor([&] { return fh.frozen.load() >= 1; }));

	// 2. T installs I1, then faults on its record in Complete.
	ProtectRecord(a_ref, PROT_NONE);
	ProtectY(PROT_READ | PROT_WRITE);
	ft.resumed++;
	ASSERT_TRUE(WaitFor([&] { return ft.frozen.load() >= 2; }));
	uint64_t i1 = Raw(y_);
	EXPECT_EQ(i1 & 3, 2u) << "y holds T's RDCSS reference";
	ProtectRecord(a_ref, PROT_READ | PROT_WRITE);

	// 3. C loads I1, reads UNDECIDED, faults on its CAS.
	ProtectY(PROT_READ);
	std::atomic<bool> c_done{false};
	std::thread reader([&] {
		mcas_thread *t = Register(m_);
		tl_freezer = &fc;
		c_read = mcas_read(t, y_);
		tl_freezer = nullptr;
		c_done = true;
		mcas_thread_unregister(&t);
	});
	ASSERT_TRUE(WaitFor([&] { return fc.frozen.load() >= 1; }));
	EXPECT_EQ(Raw(y_), i1);

	// 4. T finishes A; B puts y's old value back.
	ProtectY(PROT_READ | PROT_WRITE);
	ft.resumed++;
	ASSERT_TRUE(WaitFor([&] { return rt.load() >= 0; }));
	EXPECT_EQ(rt.load(), 1);
	EXPECT_EQ(Raw(x_), 16u);
	EXPECT_EQ(Raw(y_), 32u);
	ASSERT_EQ(Mcas(me, {{y_, 32, 24}}), 1);
	EXPECT_EQ(Raw(y_), 24u);

	// 5. H installs I2 and faults on the record in Complete.
	ProtectRecord(a_ref, PROT_NONE);
	fh.resumed++;
	ASSERT_TRUE(WaitFor([&] { return fh.frozen.load() >= 2; }));
	uint64_t i2 = Raw(y_);
	EXPECT_EQ(i2 & 3, 2u) << "y holds H's RDCSS reference";
	EXPECT_NE(i2, i1) << "a later installation reuses the acquiring one's reference";

	// 6. C's stale CAS; either way C then faults on the record again.
	fc.resumed++;
	ASSERT_TRUE(WaitFor([&] { return fc.frozen.load() >= 2 || c_done.load(); }));
	ProtectRecord(a_ref, PROT_READ | PROT_WRITE);
	fc.resumed += 4;
	fh.resumed += 4;
	reader.join();
	helper.join();
	t_may_exit = true;
	owner.join();

	EXPECT_EQ(Raw(y_), 24u) << "B's write was lost";
	EXPECT_EQ(Raw(x_), 16u);
	EXPECT_EQ(c_read.load(), 24u);
	EXPECT_EQ(h_read.load(), 16u);
	mcas_stats s;
	mcas_stats_total(m_, &s);
	EXPECT_GE(s.helps, 1u);
	EXPECT_EQ(mcas_thread_unregister(&me), 0);
}

} // namespace
