// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/dll_test_util.h -- an MCAS doubly-linked list on a chosen MCAS
// algorithm, volatile or in a real pool, for the ds tests. A persistent
// list's pool root holds the list area followed by the MCAS area, so two
// adjacent ranges cover every persistent byte (what the crash simulator
// tracks).
#ifndef DS_TESTS_DLL_TEST_UTIL_H
#define DS_TESTS_DLL_TEST_UTIL_H

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ds/dll.h>
#include <mcas/mcas.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "ds/tests/mcas_variants.h"
#include "pm/tests/test_util.h"

namespace dlltest {

using dstest::AllVariants;
using dstest::PmemVariants;
using dstest::SmallConfig;
using dstest::Variant;
using dstest::VariantName;
using dstest::VariantNamer;

struct ListEnv {
	Variant v {};
	mcas_config cfg {};
	uint64_t capacity = 0;
	std::string path;
	pm_pool *pool = nullptr;
	mcas *m = nullptr;
	ds_dll *l = nullptr;
	uint64_t dll_off = 0, mcas_off = 0;
	size_t dll_size = 0, mcas_size = 0;
	void *dll_area = nullptr, *mcas_area = nullptr;

	static constexpr const char *kLayout = "ds-dll-test";

	size_t RootSize() const { return dll_size + mcas_size; }

	// Creates the instance and an empty list. Returns 0 or the failing
	// call's code.
	int Create(const std::string &name, Variant var, const mcas_config &c, uint64_t cap = 4096)
	{
		v = var;
		cfg = c;
		cfg.algorithm = var.alg;
		capacity = cap;
		if (!v.persistent) {
			int ret = mcas_new(&m, &cfg);
			if (ret != 0)
				return ret;
			return ds_dll_new(&l, m);
		}
		path = pmtest::TempPath(name + ".pool");
		dll_size = ds_dll_pmem_area_size(capacity);
		mcas_size = mcas_pmem_area_size(&cfg);
		if (dll_size == 0 || mcas_size == 0)
			return -EINVAL;
		pm_pool_config pc = PoolConfig();
		int ret = pm_pool_create(&pool, &pc);
		if (ret != 0)
			return ret;
		Locate();
		ret = mcas_pmem_create(&m, pool, mcas_off, &cfg);
		if (ret != 0)
			return ret;
		return ds_dll_pmem_create(&l, m, pool, dll_off, capacity);
	}

	// The config of the pool at path, for creating or opening it.
	pm_pool_config PoolConfig() const
	{
		pm_pool_config pc = pmtest::PoolConfig(path, kLayout, RootSize());
		// Durability is what the crash simulator models; real msyncs
		// would only slow the tests down.
		pc.durability = PM_DURABILITY_NONE;
		return pc;
	}

	void Locate()
	{
		char *root = static_cast<char *>(pm_pool_root(pool));
		dll_area = root;
		mcas_area = root + dll_size;
		dll_off = pm_pool_off(pool, dll_area);
		mcas_off = pm_pool_off(pool, mcas_area);
	}

	// Closes everything, reopens the pool file and recovers (persistent).
	int Reopen()
	{
		int ret = ds_dll_close(&l);
		if (ret == 0)
			ret = mcas_close(&m);
		if (ret == 0)
			ret = pmtest::ReopenPool(&pool, PoolConfig());
		if (ret != 0)
			return ret;
		Locate();
		return Recover();
	}

	// Recovery on the pool as it is: mcas first, then the list.
	int Recover()
	{
		int ret = mcas_pmem_open(&m, pool, mcas_off, &cfg);
		if (ret != 0)
			return ret;
		return ds_dll_pmem_open(&l, m, pool, dll_off);
	}

	~ListEnv()
	{
		ds_dll_close(&l);
		mcas_close(&m);
		pm_pool_close(&pool);
		if (!path.empty())
			unlink(path.c_str());
	}
};

// Sets up env for a variant; every variant must set up (a failure is a
// test failure, never a skip).
#define DLL_SETUP(env, name, variant, cfg, ...)                                              \
	do {                                                                                 \
		int setup_ret_ = (env).Create((name), (variant), (cfg), ##__VA_ARGS__);           \
		ASSERT_EQ(setup_ret_, 0) << "setup failed: " << pm_strerror(setup_ret_) << " / " \
					 << pm_errormsg();                                 \
	} while (0)

// DLL_SETUP in a test parametrised by Variant: GetParam()'s variant
// with SmallConfig, its pool named "@tag-<variant>".
#define DLL_PARAM_SETUP(env, tag, ...)                                           \
	DLL_SETUP(env, std::string(tag) + "-" + dlltest::VariantName(GetParam()), \
		GetParam(), dlltest::SmallConfig(GetParam().alg), ##__VA_ARGS__)

// The keys of the list, through @h (quiescent).
inline std::vector<uint64_t> Keys(ds_dll_thread *h)
{
	std::vector<uint64_t> keys(1024);
	size_t n = ds_dll_keys(h, keys.data(), keys.size());
	if (n > keys.size()) {
		keys.resize(n);
		n = ds_dll_keys(h, keys.data(), keys.size());
	}
	keys.resize(n);
	return keys;
}

// ds_dll_check as a string: "" when every invariant holds.
inline std::string Check(ds_dll_thread *h, ds_dll_stats *st = nullptr)
{
	char buf[512];
	const char *err = ds_dll_check(h, st, buf, sizeof(buf));
	return err == nullptr ? "" : err;
}

// The invariants hold through *@hp, which is then unregistered.
inline void CheckAndUnregister(ds_dll_thread **hp)
{
	ASSERT_EQ(Check(*hp), "");
	ASSERT_EQ(ds_dll_thread_unregister(hp), 0);
}

} // namespace dlltest

#endif
