// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/persist_test.cc -- regions, flush accounting, cost counters.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <pm/cost.h>
#include <pm/error.h>
#include <pm/persist.h>

#include "pm/tests/test_util.h"

namespace {

pm_cost Delta(const pm_cost &before)
{
	pm_cost now, d;
	pm_cost_read_thread(&now);
	pm_cost_diff(&now, &before, &d);
	return d;
}

TEST(Persist, FlushCountsCacheLinesFenceCountsOnce)
{
	alignas(64) static char buf[512];
	pm_cost before;
	pm_cost_read_thread(&before);
	pm_flush(buf, 1);         // 1 line
	pm_flush(buf + 60, 8);    // straddles: 2 lines
	pm_flush(buf, 512);       // 8 lines
	pm_flush(buf, 0);         // nothing
	pm_fence();
	pm_persist(buf + 64, 64); // 1 line + 1 fence
	pm_cost d = Delta(before);
	EXPECT_EQ(d.n[PM_COST_FLUSH], 1u + 2u + 8u + 1u);
	EXPECT_EQ(d.n[PM_COST_FENCE], 2u);
	EXPECT_EQ(d.n[PM_COST_CAS], 0u);
}

TEST(Persist, CasCountsSuccessAndFailure)
{
	uint64_t word = 5, expected = 5;
	pm_cost before;
	pm_cost_read_thread(&before);
	EXPECT_TRUE(pm_cas(&word, &expected, 6));
	EXPECT_EQ(word, 6u);
	expected = 5;
	EXPECT_FALSE(pm_cas(&word, &expected, 7));
	EXPECT_EQ(expected, 6u); // the current value comes back
	EXPECT_EQ(Delta(before).n[PM_COST_CAS], 2u);
}

TEST(Persist, RegionsRouteByModeAndRejectBadRanges)
{
	std::string path = pmtest::TempPath("region.file");
	int fd = open(path.c_str(), O_CREAT | O_RDWR, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(ftruncate(fd, 1 << 16), 0);
	char *map = static_cast<char *>(mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE,
		MAP_SHARED, fd, 0));
	ASSERT_NE(map, MAP_FAILED);

	ASSERT_EQ(pm_region_add(map, 1 << 15, PM_DURABILITY_MSYNC), 0);
	ASSERT_EQ(pm_region_add(map + (1 << 15), 1 << 15, PM_DURABILITY_NONE), 0);
	EXPECT_EQ(pm_region_durability(map + 100), PM_DURABILITY_MSYNC);
	EXPECT_EQ(pm_region_durability(map + (1 << 15)), PM_DURABILITY_NONE);
	EXPECT_EQ(pm_region_durability(&fd), PM_DURABILITY_AUTO); // in no region
	EXPECT_EQ(pm_region_add(map + 100, 10, PM_DURABILITY_PMEM), -EINVAL); // overlap
	EXPECT_EQ(pm_region_add(nullptr, 10, PM_DURABILITY_PMEM), -EINVAL);
	EXPECT_EQ(pm_region_add(map, 0, PM_DURABILITY_PMEM), -EINVAL);
	EXPECT_EQ(pm_region_add(&fd, 4, PM_DURABILITY_AUTO), -EINVAL); // AUTO is not a mode

	// msync mode: the data reaches the file.
	std::strcpy(map + 4096, "durable");
	pm_persist(map + 4096, 8);
	char back[8] = {};
	ASSERT_EQ(pread(fd, back, 8, 4096), 8);
	EXPECT_STREQ(back, "durable");

	EXPECT_EQ(pm_region_remove(map), 0);
	EXPECT_EQ(pm_region_remove(map), -ENOENT);
	EXPECT_EQ(pm_region_remove(map + (1 << 15)), 0);
	EXPECT_EQ(pm_region_durability(map + 100), PM_DURABILITY_AUTO);
	munmap(map, 1 << 16);
	close(fd);
}

TEST(Persist, RegionTableFillsUp)
{
	std::vector<char> mem(PM_REGIONS_MAX + 1);
	int added = 0;
	for (int i = 0; i <= PM_REGIONS_MAX; i++) {
		int ret = pm_region_add(&mem[i], 1, PM_DURABILITY_NONE);
		if (ret == 0)
			added++;
		else
			EXPECT_EQ(ret, -ENOSPC);
	}
	EXPECT_LE(added, PM_REGIONS_MAX);
	for (int i = 0; i <= PM_REGIONS_MAX; i++)
		pm_region_remove(&mem[i]);
	EXPECT_EQ(pm_region_add(&mem[0], 1, PM_DURABILITY_NONE), 0);
	EXPECT_EQ(pm_region_remove(&mem[0]), 0);
}

// Lookups race with registrations of other regions (TSan checks the seqlock).
TEST(Persist, LookupsRaceWithRegistration)
{
	static char stable[4096], churn[PM_REGIONS_MAX / 2][64];
	ASSERT_EQ(pm_region_add(stable, sizeof(stable), PM_DURABILITY_NONE), 0);
	std::atomic<bool> stop{false};
	std::atomic<long> wrong{0};
	std::thread reader([&] {
		while (!stop.load(std::memory_order_relaxed))
			if (pm_region_durability(stable + 100) != PM_DURABILITY_NONE)
				wrong++;
	});
	for (int round = 0; round < 200; round++) {
		for (auto &c : churn)
			ASSERT_EQ(pm_region_add(c, sizeof(c), PM_DURABILITY_MSYNC), 0);
		for (auto &c : churn)
			ASSERT_EQ(pm_region_remove(c), 0);
	}
	stop = true;
	reader.join();
	EXPECT_EQ(wrong.load(), 0);
	EXPECT_EQ(pm_region_remove(stable), 0);
}

TEST(Persist, DurabilityNames)
{
	uint64_t before_dummy = 0;
	EXPECT_STREQ(pm_durability_name(PM_DURABILITY_PMEM), "pmem");
	EXPECT_STREQ(pm_durability_name(PM_DURABILITY_MSYNC), "msync");
	EXPECT_STREQ(pm_durability_name(static_cast<pm_durability>(99)), nullptr);
	EXPECT_EQ(pm_durability_resolve(&before_dummy, 8, static_cast<pm_durability>(99)), -EINVAL);
	for (pm_durability m : { PM_DURABILITY_AUTO, PM_DURABILITY_PMEM, PM_DURABILITY_MSYNC,
		     PM_DURABILITY_NONE }) {
		pm_durability got = static_cast<pm_durability>(99);
		EXPECT_EQ(pm_durability_parse(pm_durability_name(m), &got), 0);
		EXPECT_EQ(got, m);
	}
	pm_durability untouched = PM_DURABILITY_NONE;
	for (const char *bad : { "", "PMEM", "pmem ", "fsync" })
		EXPECT_EQ(pm_durability_parse(bad, &untouched), -EINVAL) << bad;
	EXPECT_EQ(untouched, PM_DURABILITY_NONE);
}

TEST(Cost, TotalsIncludeExitedThreads)
{
	pm_cost before, after, d;
	pm_cost_read_total(&before);
	std::vector<std::thread> ts;
	for (int t = 0; t < 4; t++)
		ts.emplace_back([] {
			for (int i = 0; i < 1000; i++)
				pm_cost_add(PM_COST_ROUND_TRIP, 1);
		});
	for (auto &t : ts)
		t.join();
	pm_cost_read_total(&after);
	pm_cost_diff(&after, &before, &d);
	EXPECT_EQ(d.n[PM_COST_ROUND_TRIP], 4000u);
	EXPECT_STREQ(pm_cost_name(PM_COST_ROUND_TRIP), "round_trip");
	EXPECT_EQ(pm_cost_name(PM_COST_NCOUNTERS), nullptr);
}

TEST(Error, StrerrorCoversCodes)
{
	EXPECT_STREQ(pm_strerror(0), "success");
	EXPECT_STREQ(pm_strerror(-ENOENT), "no such file or directory");
	EXPECT_STRNE(pm_strerror(PM_E_CORRUPT), pm_strerror(PM_E_LAYOUT));
	for (int c = PM_E_LAST; c < PM_E_BASE; c++)
		EXPECT_STRNE(pm_strerror(c), "unknown error") << c;
	for (int c = RDMA_E_LAST; c < RDMA_E_BASE; c++)
		EXPECT_STRNE(pm_strerror(c), "unknown error") << c;
	for (int c = KV_E_LAST; c < KV_E_BASE; c++)
		EXPECT_STRNE(pm_strerror(c), "unknown error") << c;
	for (int c = ONLL_E_LAST; c < ONLL_E_BASE; c++)
		EXPECT_STRNE(pm_strerror(c), "unknown error") << c;
	EXPECT_STREQ(pm_strerror(12345), "unknown error");
}

} // namespace
