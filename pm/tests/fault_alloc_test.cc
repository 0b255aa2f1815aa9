// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/fault_alloc_test.cc -- the allocation fault injector itself: the
// n-th allocation of the arming thread fails, and only that one.
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "pm/tests/fault_alloc.h"

namespace {

TEST(FaultAlloc, FailsTheNthAllocationOfThisThreadOnly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	std::atomic<int> go{0};
	std::thread other([&go] {
		while (go.load() == 0)
			std::this_thread::yield();
		void *p = malloc(16); // another thread's allocations do not count
		EXPECT_NE(p, nullptr);
		free(p);
		go.store(2);
	});
	fault_alloc_arm(2);
	void *a = malloc(16);
	go.store(1);
	while (go.load() != 2)
		std::this_thread::yield();
	errno = 0;
	void *b = calloc(1, 16);
	int err = errno;
	void *c = realloc(nullptr, 16);
	EXPECT_TRUE(fault_alloc_fired());
	EXPECT_NE(a, nullptr);
	EXPECT_EQ(b, nullptr);
	EXPECT_EQ(err, ENOMEM);
	EXPECT_NE(c, nullptr);
	free(a);
	free(c);
	other.join();
}

TEST(FaultAlloc, EveryEntryPointCanFail)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	void *p = nullptr;
	fault_alloc_arm(1);
	EXPECT_EQ(aligned_alloc(64, 64), nullptr);
	fault_alloc_arm(1);
	EXPECT_EQ(posix_memalign(&p, 64, 64), ENOMEM);
	fault_alloc_arm(1);
	EXPECT_EQ(malloc(1), nullptr);
	EXPECT_TRUE(fault_alloc_fired());
	EXPECT_EQ(posix_memalign(&p, 64, 64), 0);
	free(p);
}

TEST(FaultAlloc, SweepVisitsEveryAllocationPoint)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	unsigned failures = 0, successes = 0;
	unsigned points = pmtest::SweepAllocFailures(
		[] {
			void *x = malloc(8), *y = malloc(8), *z = malloc(8);
			bool ok = x && y && z;
			free(x);
			free(y);
			free(z);
			return ok;
		},
		[&](bool ok, bool fired) {
			EXPECT_EQ(ok, !fired);
			(fired ? failures : successes)++;
		});
	EXPECT_EQ(points, 3u);
	EXPECT_EQ(failures, 3u);
	EXPECT_EQ(successes, 1u);
}

} // namespace
