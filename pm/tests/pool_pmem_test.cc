// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/pool_pmem_test.cc -- with PMEM_IS_PMEM_FORCE=1 (set by the BUILD
// rule) pools get PMEM durability: real cache-line flushes and sfence.
#include <gtest/gtest.h>

#include <pm/cost.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "pm/tests/test_util.h"

TEST(PoolPmem, ForcedPmemGetsPmemDurability)
{
	std::string path = pmtest::TempPath("forced.pool");
	pm_pool_config cfg = pmtest::PoolConfig(path, "forced", 256);
	cfg.durability = PM_DURABILITY_PMEM;
	pm_pool *pool = nullptr;
	ASSERT_EQ(pm_pool_create(&pool, &cfg), 0) << pm_errormsg();
	EXPECT_EQ(pm_pool_durability(pool), PM_DURABILITY_PMEM);
	pm_cost before, after, d;
	pm_cost_read_thread(&before);
	pm_persist(pm_pool_root(pool), 256);
	pm_cost_read_thread(&after);
	pm_cost_diff(&after, &before, &d);
	EXPECT_EQ(d.n[PM_COST_FLUSH], 4u);
	EXPECT_EQ(d.n[PM_COST_FENCE], 1u);
	EXPECT_EQ(pm_pool_close(&pool), 0);

	cfg.durability = PM_DURABILITY_NONE; // benchmarks may waive persistence
	ASSERT_EQ(pm_pool_open(&pool, &cfg), 0);
	EXPECT_EQ(pm_pool_durability(pool), PM_DURABILITY_NONE);
	EXPECT_EQ(pm_pool_close(&pool), 0);
}
