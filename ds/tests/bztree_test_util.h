// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/bztree_test_util.h -- the BzTree in the ds tests' environment
// (mcas_env.h), and reading it back: check, scans against a model.
#ifndef DS_TESTS_BZTREE_TEST_UTIL_H
#define DS_TESTS_BZTREE_TEST_UTIL_H

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/pool.h>

#include "ds/tests/mcas_env.h"
#include "ds/tests/mcas_variants.h"

namespace bztest {

using dstest::Variant;

using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;

// ds_bztree for dstest::Env: Create(name, variant, cfg, records per node[,
// arena nodes]).
struct BzTreeOps {
	using Type = ds_bztree;
	struct Params {
		Params(unsigned capacity = DS_BZTREE_DEFAULT_CAPACITY, uint64_t arena = 4096)
			: nodes(arena)
		{
			ds_bztree_config_init(&tcfg);
			tcfg.node_capacity = capacity;
		}
		ds_bztree_config tcfg;
		uint64_t nodes; // persistent: the arena's nodes
	};
	static constexpr const char *kLayout = "ds-bztree-test";

	static size_t AreaSize(const Params &p) { return ds_bztree_pmem_area_size(&p.tcfg, p.nodes); }
	static int New(ds_bztree **t, mcas *m, const Params &p) { return ds_bztree_new(t, m, &p.tcfg); }
	static int PmemCreate(ds_bztree **t, mcas *m, pm_pool *pool, uint64_t off, const Params &p)
	{
		return ds_bztree_pmem_create(t, m, pool, off, &p.tcfg, p.nodes);
	}
	static int PmemOpen(ds_bztree **t, mcas *m, pm_pool *pool, uint64_t off)
	{
		return ds_bztree_pmem_open(t, m, pool, off);
	}
	static int Close(ds_bztree **t) { return ds_bztree_close(t); }
};

using TreeEnv = dstest::Env<BzTreeOps>;

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
	// Left uninitialised: zeroing 1 MiB for every scan was 40% of a crash
	// test's time (each image's check scans); only what the scan writes
	// is touched.
	std::unique_ptr<uint64_t[]> k(new uint64_t[cap]), v(new uint64_t[cap]);
	size_t n = ds_bztree_scan(h, start, cap, k.get(), v.get());
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
