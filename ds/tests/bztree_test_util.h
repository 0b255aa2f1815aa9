// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/bztree_test_util.h -- a BzTree on a chosen MCAS algorithm,
// volatile or in a real pool, for the bztree tests. A persistent tree's pool
// root holds the tree area followed by the MCAS area, so two adjacent ranges
// cover every persistent byte (what the crash simulator tracks).
#ifndef DS_TESTS_BZTREE_TEST_UTIL_H
#define DS_TESTS_BZTREE_TEST_UTIL_H

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "ds/tests/mcas_variants.h"
#include "pm/tests/test_util.h"

namespace bztest {

using dstest::Variant;

using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;

struct TreeEnv {
	Variant v {};
	mcas_config cfg {};
	ds_bztree_config tcfg {};
	uint64_t nodes = 0;
	std::string path;
	pm_pool *pool = nullptr;
	mcas *m = nullptr;
	ds_bztree *t = nullptr;
	uint64_t tree_off = 0, mcas_off = 0;
	size_t tree_size = 0, mcas_size = 0;
	void *tree_area = nullptr, *mcas_area = nullptr;

	static constexpr const char *kLayout = "ds-bztree-test";

	size_t RootSize() const { return tree_size + mcas_size; }

	// Creates the instance and an empty tree of @capacity records per node
	// (persistent: an arena of @arena nodes). Returns 0 or the failing
	// call's code.
	int Create(const std::string &name, Variant var, const mcas_config &c, unsigned capacity,
		uint64_t arena = 4096)
	{
		v = var;
		cfg = c;
		cfg.algorithm = var.alg;
		ds_bztree_config_init(&tcfg);
		tcfg.node_capacity = capacity;
		nodes = arena;
		if (!v.persistent) {
			int ret = mcas_new(&m, &cfg);
			return ret != 0 ? ret : ds_bztree_new(&t, m, &tcfg);
		}
		path = pmtest::TempPath(name + ".pool");
		tree_size = ds_bztree_pmem_area_size(&tcfg, nodes);
		mcas_size = mcas_pmem_area_size(&cfg);
		if (tree_size == 0 || mcas_size == 0)
			return -EINVAL;
		pm_pool_config pc = PoolConfig();
		int ret = pm_pool_create(&pool, &pc);
		if (ret != 0)
			return ret;
		Locate();
		ret = mcas_pmem_create(&m, pool, mcas_off, &cfg);
		return ret != 0 ? ret : ds_bztree_pmem_create(&t, m, pool, tree_off, &tcfg, nodes);
	}

	// The config of the pool at path, for creating or opening it.
	pm_pool_config PoolConfig() const
	{
		pm_pool_config pc = pmtest::PoolConfig(path, kLayout, RootSize());
		pc.pool_size = std::max(PM_POOL_MIN_SIZE, RootSize() + PM_POOL_MIN_SIZE);
		// Durability is what the crash simulator models.
		pc.durability = PM_DURABILITY_NONE;
		return pc;
	}

	void Locate()
	{
		char *root = static_cast<char *>(pm_pool_root(pool));
		tree_area = root;
		mcas_area = root + tree_size;
		tree_off = pm_pool_off(pool, tree_area);
		mcas_off = pm_pool_off(pool, mcas_area);
	}

	// Closes everything, reopens the pool file and recovers (persistent).
	int Reopen()
	{
		int ret = ds_bztree_close(&t);
		if (ret == 0)
			ret = mcas_close(&m);
		if (ret == 0)
			ret = pmtest::ReopenPool(&pool, PoolConfig());
		if (ret != 0)
			return ret;
		Locate();
		return Recover();
	}

	// Recovery on the pool as it is: mcas first, then the tree.
	int Recover()
	{
		int ret = mcas_pmem_open(&m, pool, mcas_off, &cfg);
		return ret != 0 ? ret : ds_bztree_pmem_open(&t, m, pool, tree_off);
	}

	~TreeEnv()
	{
		ds_bztree_close(&t);
		mcas_close(&m);
		pm_pool_close(&pool);
		if (!path.empty())
			unlink(path.c_str());
	}
};

// Sets up @env for @variant; the test fails if that is impossible.
#define BZ_SETUP(env, name, variant, cfg, ...)                                             \
	do {                                                                               \
		int setup_ret_ = (env).Create((name), (variant), (cfg), ##__VA_ARGS__);    \
		ASSERT_EQ(setup_ret_, 0) << "setup failed: " << pm_strerror(setup_ret_)    \
					 << " / " << pm_errormsg();                \
	} while (0)

// ds_bztree_check as a string: "" when every invariant holds.
inline std::string Check(ds_bztree_thread *h, ds_bztree_stats *st = nullptr)
{
	char buf[512];
	const char *err = ds_bztree_check(h, st, buf, sizeof(buf));
	return err == nullptr ? "" : err;
}

// Up to @max pairs from @start, through ds_bztree_scan.
inline Pairs Scan(ds_bztree_thread *h, uint64_t start = 0, size_t max = SIZE_MAX / 16)
{
	size_t cap = std::min<size_t>(max, 1 << 16);
	std::vector<uint64_t> k(cap), v(cap);
	size_t n = ds_bztree_scan(h, start, cap, k.data(), v.data());
	Pairs r;
	for (size_t i = 0; i < n; i++)
		r.emplace_back(k[i], v[i]);
	return r;
}

// What ds_bztree_scan must return for @model.
inline Pairs ModelScan(const std::map<uint64_t, uint64_t> &model, uint64_t start = 0,
	size_t max = SIZE_MAX / 16)
{
	Pairs r;
	for (auto it = model.lower_bound(start); it != model.end() && r.size() < max; ++it)
		r.push_back(*it);
	return r;
}

} // namespace bztest

#endif
