// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/mcas_help_test.cc -- helping, asserted deterministically for
// every algorithm, volatile and persistent: an owner's two-word MCAS is
// frozen between its two acquisitions (mcas/tests/mcas_freeze.h), and
// another thread that meets its descriptor must finish it. The stress test
// (mcas_stress_test.cc) only reports how often helping happened there.
//
// Word placement. Every algorithm acquires its targets in one global order,
// by address: mcas_desc_execute() sorts them by offset (mcas_sort in
// mcas/src/mcas.c; the base is 0 for a volatile instance, the pool's base
// for a persistent one, so offsets order as addresses) before aopt.c,
// harris.c and pmwcas.c run phase 1 over them. So x is placed on a lower
// page than y, and y's page is made read-only: the owner acquires x, loads
// y (readable), and faults on the CAS that would acquire y.
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include <mcas/mcas.h>

#include "mcas/tests/mcas_freeze.h"
#include "mcas/tests/mcas_test_util.h"

namespace {

using mcastest::A;

// What the other thread does when it meets the frozen owner's descriptor
// in x.
enum class Helper {
	kMcas, // a conflicting one-word MCAS on x
	kRead, // mcas_read(x)
};

mcas_config Config(mcas_algorithm alg)
{
	// Read detaching off (AOPT only; the others ignore it): the read
	// variant then only helps.
	return mcastest::TestConfig(alg, 4, 16, 0);
}

// Registers on @m, runs @body(thread) and unregisters; a thread that
// cannot register leaves @body unrun.
template <class F> std::thread Spawn(mcas *m, F body)
{
	return std::thread([m, body] {
		mcas_thread *t = nullptr;
		if (mcas_thread_register(m, &t) != 0)
			return;
		body(t);
		mcas_thread_unregister(&t);
	});
}

// The owner runs {x: 8 -> 16, y: 24 -> 32} and freezes on its CAS on y.
// Another thread meets the owner's descriptor in x (its MCAS {x: 16 -> 40},
// or its read of x) and must complete the owner's operation before its own
// sees x's value: it returns while the owner is still frozen, with helps
// >= 1 and y = 32. The owner, resumed, reports success. A helper that
// waited for the owner instead is reported after 10 s (then the owner is
// resumed and both finish). Requires x < y on different pages and a
// FreezeHandler installed.
void HelpFrozenOwner(mcas *m, uint64_t *x, uint64_t *y, Helper how)
{
	ASSERT_LT(A(x), A(y)) << "x must be acquired first (address order)";
	ASSERT_NE(mcastest::PageOf(x), mcastest::PageOf(y));
	// Plain stores: nobody shares the words yet. Multiples of 8 are values
	// for every algorithm (MCAS_VALUE_PORTABLE_MASK).
	*x = 8;
	*y = 24;
	ASSERT_EQ(mcastest::ProtectPages(y, sizeof(*y), PROT_READ), 0);

	mcastest::Freezer f;
	std::atomic<int> owner_result{-1};
	mcas_stats owner_stats = {};
	std::thread owner = Spawn(m, [&](mcas_thread *t) {
		mcastest::tl_freezer = &f;
		owner_result = mcastest::Mcas(t, {{A(x), 8, 16}, {A(y), 24, 32}});
		mcastest::tl_freezer = nullptr;
		mcas_thread_stats(t, &owner_stats);
	});
	bool frozen = mcastest::WaitFor([&] { return f.frozen.load() >= 1; });
	EXPECT_TRUE(frozen) << "the owner never faulted on y";
	if (frozen) {
		EXPECT_NE(__atomic_load_n(x, __ATOMIC_ACQUIRE) & mcas_value_mask(m), 0u)
			<< "x holds the owner's descriptor";
		EXPECT_EQ(__atomic_load_n(y, __ATOMIC_ACQUIRE), 24u) << "y not acquired yet";
	}
	EXPECT_EQ(mcastest::ProtectPages(y, sizeof(*y), PROT_READ | PROT_WRITE), 0);

	// The helper stays registered until the owner is done: unregistering
	// waits for grace periods, which the frozen owner holds back.
	std::atomic<bool> helped{false}, owner_done{false};
	int helper_result = -1;
	uint64_t helper_x = ~0ull, helper_y = ~0ull, final_x = ~0ull, final_y = ~0ull;
	mcas_stats helper_stats = {};
	std::thread helper = Spawn(m, [&](mcas_thread *t) {
		if (how == Helper::kMcas)
			helper_result = mcastest::Mcas(t, {{A(x), 16, 40}});
		else
			helper_x = mcas_read(t, x);
		mcas_thread_stats(t, &helper_stats);
		helper_y = mcas_read(t, y);
		helped = true;
		while (!owner_done.load())
			std::this_thread::sleep_for(std::chrono::microseconds(200));
		final_x = mcas_read(t, x);
		final_y = mcas_read(t, y);
	});
	bool returned = mcastest::WaitFor([&] { return helped.load(); });
	EXPECT_TRUE(returned) << "the other thread waited for the frozen owner";
	if (returned) {
		// The MCAS expects the owner's new value: it can only succeed
		// after finishing the owner's operation.
		if (how == Helper::kMcas) {
			EXPECT_EQ(helper_result, 1);
		} else {
			EXPECT_EQ(helper_x, 16u);
		}
		EXPECT_GE(helper_stats.helps, 1u) << "the frozen owner's MCAS was not helped";
		EXPECT_EQ(helper_y, 32u) << "the helper did not complete y";
		EXPECT_EQ(f.frozen.load(), 1) << "the owner ran on while frozen";
		EXPECT_EQ(owner_result.load(), -1) << "the owner returned while frozen";
	}
	f.resumed++;
	owner.join();
	owner_done = true;
	helper.join();
	EXPECT_EQ(owner_result.load(), 1) << "the owner's helped MCAS must report success";
	EXPECT_EQ(owner_stats.mcas, 1u);
	EXPECT_EQ(owner_stats.succeeded, 1u);
	EXPECT_EQ(final_x, how == Helper::kMcas ? 40u : 16u);
	EXPECT_EQ(final_y, 32u);
}

// Installs the freezing handler; skipped under TSan (kFreezeNoTsan).
class FreezeTest : public ::testing::TestWithParam<mcas_algorithm> {
protected:
	void SetUp() override
	{
#ifdef MCAS_TEST_TSAN
		GTEST_SKIP() << mcastest::kFreezeNoTsan;
#endif
		ASSERT_EQ(handler_.Install(), 0);
	}

	mcastest::FreezeHandler handler_;
};

class HelpVolatile : public FreezeTest {
protected:
	// x and y on two anonymous pages of their own.
	void Run(Helper how)
	{
		mcastest::Pages pages;
		ASSERT_EQ(pages.Map(2), 0);
		mcastest::OnVolatile(Config(GetParam()), [&](mcas *m) {
			ASSERT_NO_FATAL_FAILURE(
				HelpFrozenOwner(m, pages.Word(0), pages.Word(1), how));
		});
	}
};

class HelpPersistent : public FreezeTest {
protected:
	// x and y on two pages of the pool mapping that hold target words
	// only: the root gets three pages of words before the MCAS area, so
	// the first page boundary inside them and the next one both start a
	// page of words (the root is only 64-byte aligned). After a reopen
	// (recovery) the words hold their final values, with nothing left to
	// recover.
	void Run(Helper how, const char *name)
	{
		const size_t per_page = mcastest::PageSize() / sizeof(uint64_t);
		mcastest::PmemInstance p;
		p.nwords = 3 * per_page;
		ASSERT_EQ(p.Create(mcastest::PoolName(name, GetParam()), Config(GetParam())), 0);
		// x: the first word of the first page starting inside the words.
		size_t x_i = 0;
		while (mcastest::PageOf(&p.words[x_i]) != A(&p.words[x_i]))
			x_i++;
		const size_t y_i = x_i + per_page;
		ASSERT_LE(y_i + per_page, p.nwords) << "y's page holds words only";
		ASSERT_NO_FATAL_FAILURE(HelpFrozenOwner(p.m, &p.words[x_i], &p.words[y_i], how));
		ASSERT_EQ(p.Reopen(), 0);
		EXPECT_EQ(p.words[x_i], how == Helper::kMcas ? 40u : 16u);
		EXPECT_EQ(p.words[y_i], 32u);
	}
};

// Another thread's conflicting MCAS meets the frozen owner's descriptor and
// finishes the owner's operation before its own.
TEST_P(HelpVolatile, ConflictingMcasHelpsFrozenOwner)
{
	Run(Helper::kMcas);
}

// A read meets the frozen owner's descriptor, finishes the operation and
// returns the owner's new value.
TEST_P(HelpVolatile, ReadHelpsFrozenOwner)
{
	Run(Helper::kRead);
}

TEST_P(HelpPersistent, ConflictingMcasHelpsFrozenOwner)
{
	Run(Helper::kMcas, "help-mcas");
}

TEST_P(HelpPersistent, ReadHelpsFrozenOwner)
{
	Run(Helper::kRead, "help-read");
}

INSTANTIATE_TEST_SUITE_P(Algorithms, HelpVolatile,
	::testing::ValuesIn(mcastest::VolatileAlgorithms()), mcastest::AlgorithmName());
INSTANTIATE_TEST_SUITE_P(Algorithms, HelpPersistent,
	::testing::ValuesIn(mcastest::PersistentAlgorithms()), mcastest::AlgorithmName());

} // namespace
