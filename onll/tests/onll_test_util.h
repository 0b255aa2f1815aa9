// SPDX-License-Identifier: BSD-3-Clause
// onll/tests/onll_test_util.h -- a pm/ pool holding one ONLL object, for the
// onll tests.
#ifndef ONLL_TESTS_ONLL_TEST_UTIL_H
#define ONLL_TESTS_ONLL_TEST_UTIL_H

#include <string>

#include <onll/onll.h>
#include <pm/pool.h>

#include "pm/tests/test_util.h"

namespace onlltest {

// A small config: logs short enough that checkpoints and log reuse happen
// within a few dozen updates.
inline onll_config SmallConfig(unsigned max_threads = 4, unsigned log_entries = 8)
{
	onll_config c;
	onll_config_init(&c);
	c.max_threads = max_threads;
	c.max_op_size = 24;
	c.log_entries = log_entries;
	c.checkpoint_capacity = 4096;
	return c;
}

// A pool whose root is the object's area.
struct Env {
	std::string path;
	pm_pool *pool = nullptr;
	onll *o = nullptr;
	const onll_type *type = nullptr;
	uint64_t area_off = 0;
	size_t area_size = 0;

	// Create a pool named @name and an object of @t with @c in it.
	// Returns 0 or the failing call's code.
	int Create(const std::string &name, const onll_config &c, const onll_type *t)
	{
		type = t;
		path = pmtest::TempPath(name);
		area_size = onll_area_size(&c);
		if (area_size == 0)
			return -22;
		pm_pool_config pc = Config();
		if (area_size + (4 << 20) > pc.pool_size)
			pc.pool_size = area_size + (4 << 20);
		int ret = pm_pool_create(&pool, &pc);
		if (ret != 0)
			return ret;
		area_off = pm_pool_off(pool, pm_pool_root(pool));
		return onll_create(&o, pool, area_off, &c, type);
	}

	// The pool's config (@path must be set).
	pm_pool_config Config() const
	{
		pm_pool_config pc = pmtest::PoolConfig(path, "onll-test", area_size);
		pc.durability = PM_DURABILITY_NONE;
		return pc;
	}

	// The area's first byte.
	unsigned char *Area() const { return static_cast<unsigned char *>(pm_pool_root(pool)); }

	// Close the object and the pool, reopen both and recover the object.
	int Reopen()
	{
		int ret = onll_close(&o);
		if (ret == 0)
			ret = pmtest::ReopenPool(&pool, Config());
		return ret != 0 ? ret : onll_open(&o, pool, area_off, type);
	}

	~Env()
	{
		onll_close(&o);
		pm_pool_close(&pool);
	}
};

} // namespace onlltest

#endif
