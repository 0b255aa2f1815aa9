// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/mcas_env.h -- one MCAS-based ds structure (dll, bztree) on a
// chosen MCAS variant, volatile or in a real pool, for the ds tests. A
// persistent structure's pool root holds its area followed by the MCAS area,
// so two adjacent ranges cover every persistent byte (what the crash
// simulator tracks).
#ifndef DS_TESTS_MCAS_ENV_H
#define DS_TESTS_MCAS_ENV_H

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include <mcas/mcas.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "ds/tests/mcas_variants.h"
#include "pm/tests/test_util.h"

namespace dstest {

// An MCAS structure @S, given as a traits class:
//   Type                   the structure (ds_dll, ds_bztree);
//   Params                 what sizes it, constructible from Create()'s
//                          trailing arguments;
//   kLayout                the pool layout name;
//   AreaSize(p)            ds_X_pmem_area_size;
//   New(&s, m, p)          ds_X_new;
//   PmemCreate(&s, m, pool, off, p), PmemOpen(&s, m, pool, off), Close(&s).
template <class S> struct Env {
	using Type = typename S::Type;
	using Params = typename S::Params;

	Variant v {};
	mcas_config cfg {};
	Params params {};
	std::string path;
	pm_pool *pool = nullptr;
	mcas *m = nullptr;
	Type *ds = nullptr;
	uint64_t ds_off = 0, mcas_off = 0;
	size_t ds_size = 0, mcas_size = 0;
	void *ds_area = nullptr, *mcas_area = nullptr;

	size_t RootSize() const { return ds_size + mcas_size; }

	// Creates the instance and an empty structure sized by Params(@args).
	// Returns 0 or the failing call's code.
	template <class... A>
	int Create(const std::string &name, Variant var, const mcas_config &c, A... args)
	{
		v = var;
		cfg = c;
		cfg.algorithm = var.alg;
		params = Params(args...);
		if (!v.persistent) {
			int ret = mcas_new(&m, &cfg);
			return ret != 0 ? ret : S::New(&ds, m, params);
		}
		path = pmtest::TempPath(name + ".pool");
		ds_size = S::AreaSize(params);
		mcas_size = mcas_pmem_area_size(&cfg);
		if (ds_size == 0 || mcas_size == 0)
			return -EINVAL;
		pm_pool_config pc = PoolConfig();
		int ret = pm_pool_create(&pool, &pc);
		if (ret != 0)
			return ret;
		Locate();
		ret = mcas_pmem_create(&m, pool, mcas_off, &cfg);
		return ret != 0 ? ret : S::PmemCreate(&ds, m, pool, ds_off, params);
	}

	// The config of the pool at path, for creating or opening it.
	pm_pool_config PoolConfig() const
	{
		pm_pool_config pc = pmtest::PoolConfig(path, S::kLayout, RootSize());
		pc.pool_size = std::max(PM_POOL_MIN_SIZE, RootSize() + PM_POOL_MIN_SIZE);
		// Durability is what the crash simulator models; real msyncs
		// would only slow the tests down.
		pc.durability = PM_DURABILITY_NONE;
		return pc;
	}

	void Locate()
	{
		char *root = static_cast<char *>(pm_pool_root(pool));
		ds_area = root;
		mcas_area = root + ds_size;
		ds_off = pm_pool_off(pool, ds_area);
		mcas_off = pm_pool_off(pool, mcas_area);
	}

	// Closes everything, reopens the pool file and recovers (persistent).
	int Reopen()
	{
		int ret = S::Close(&ds);
		if (ret == 0)
			ret = mcas_close(&m);
		if (ret == 0)
			ret = pmtest::ReopenPool(&pool, PoolConfig());
		if (ret != 0)
			return ret;
		Locate();
		return Recover();
	}

	// Recovery on the pool as it is: mcas first, then the structure.
	int Recover()
	{
		int ret = mcas_pmem_open(&m, pool, mcas_off, &cfg);
		return ret != 0 ? ret : S::PmemOpen(&ds, m, pool, ds_off);
	}

	~Env()
	{
		S::Close(&ds);
		mcas_close(&m);
		pm_pool_close(&pool);
		if (!path.empty())
			unlink(path.c_str());
	}
};

} // namespace dstest

// Sets up @env for @variant; every variant must set up (a failure is a test
// failure, never a skip).
#define DS_SETUP(env, name, variant, cfg, ...)                                             \
	do {                                                                               \
		int setup_ret_ = (env).Create((name), (variant), (cfg), ##__VA_ARGS__);    \
		ASSERT_EQ(setup_ret_, 0) << "setup failed: " << pm_strerror(setup_ret_)    \
					 << " / " << pm_errormsg();                \
	} while (0)

#endif
