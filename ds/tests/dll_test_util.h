// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/dll_test_util.h -- the MCAS doubly-linked list in the ds tests'
// environment (mcas_env.h), and reading it back: keys, check.
#ifndef DS_TESTS_DLL_TEST_UTIL_H
#define DS_TESTS_DLL_TEST_UTIL_H

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ds/dll.h>
#include <mcas/mcas.h>
#include <pm/pool.h>

#include "ds/tests/mcas_env.h"
#include "ds/tests/mcas_variants.h"

namespace dlltest {

using dstest::AllVariants;
using dstest::PmemVariants;
using dstest::SmallConfig;
using dstest::Variant;
using dstest::VariantName;
using dstest::VariantNamer;

// ds_dll for dstest::Env: Create(name, variant, cfg[, capacity]).
struct DllOps {
	using Type = ds_dll;
	struct Params {
		Params(uint64_t cap = 4096) : capacity(cap) {}
		uint64_t capacity; // persistent: the arena's nodes
	};
	static constexpr const char *kLayout = "ds-dll-test";

	static size_t AreaSize(const Params &p) { return ds_dll_pmem_area_size(p.capacity); }
	static int New(ds_dll **l, mcas *m, const Params &) { return ds_dll_new(l, m); }
	static int PmemCreate(ds_dll **l, mcas *m, pm_pool *pool, uint64_t off, const Params &p)
	{
		return ds_dll_pmem_create(l, m, pool, off, p.capacity);
	}
	static int PmemOpen(ds_dll **l, mcas *m, pm_pool *pool, uint64_t off)
	{
		return ds_dll_pmem_open(l, m, pool, off);
	}
	static int Close(ds_dll **l) { return ds_dll_close(l); }
};

using ListEnv = dstest::Env<DllOps>;

// DS_SETUP in a test parametrised by Variant: GetParam()'s variant
// with SmallConfig, its pool named "@tag-<variant>".
#define DLL_PARAM_SETUP(env, tag, ...)                                          \
	DS_SETUP(env, std::string(tag) + "-" + dlltest::VariantName(GetParam()), \
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
