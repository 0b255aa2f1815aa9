// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/bztree_fault_test.cc -- allocation failures (//pm:fault_alloc)
// under the volatile B+-tree and its MCAS instance: every allocation point
// of mcas_new, mcas_thread_register, mcas_retire, ds_bztree_new,
// ds_bztree_thread_register and of inserts and removes that split, merge
// and retire nodes is made to fail in turn. Each call returns -ENOMEM with
// the map unchanged, or succeeds; nodes whose retirement failed are kept
// and retired later (bztree's orphan list); the tree stays valid.
#include <cerrno>
#include <map>

#include <gtest/gtest.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/error.h>

#include "pm/tests/fault_alloc.h"

namespace {

// The sweep's check for a constructor-like call: -ENOMEM exactly when an
// allocation failed, success otherwise.
void EnomemIffFired(int r, bool fired)
{
	EXPECT_EQ(r, fired ? -ENOMEM : 0) << pm_strerror(r);
}

TEST(McasFault, ConstructorsRegistrationAndRetireFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	mcas_config cfg;
	mcas_config_init(&cfg);
	EXPECT_GT(pmtest::SweepConstructor<mcas>([&](mcas **m) { return mcas_new(m, &cfg); },
			  [](mcas **m) { mcas_close(m); }, EnomemIffFired),
		0u);
	mcas *m = nullptr;
	ASSERT_EQ(mcas_new(&m, &cfg), 0);
	EXPECT_GT(pmtest::SweepConstructor<mcas_thread>(
			  [&](mcas_thread **t) { return mcas_thread_register(m, t); },
			  [](mcas_thread **t) { mcas_thread_unregister(t); }, EnomemIffFired),
		0u);
	// mcas_retire grows its list; a refusal leaves the object with the
	// caller, who still owns it.
	mcas_thread *t = nullptr;
	ASSERT_EQ(mcas_thread_register(m, &t), 0);
	static int freed;
	freed = 0;
	unsigned refused = 0, retired = 0;
	for (unsigned i = 0; i < 4096; i++) {
		int *obj = new int(1);
		// Every other retire may fail, so the list still grows.
		if (i % 2 == 0)
			fault_alloc_arm(1);
		int r = mcas_retire(t, obj, [](void *o, void *) { freed++; delete static_cast<int *>(o); },
			nullptr);
		bool fired = fault_alloc_fired();
		EnomemIffFired(r, fired);
		if (r != 0) {
			delete obj;
			refused++;
		} else {
			retired++;
		}
	}
	EXPECT_GT(refused, 0u);
	EXPECT_GT(retired, refused);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
	EXPECT_EQ(freed, static_cast<int>(retired));
	ASSERT_EQ(mcas_close(&m), 0);
}

struct Tree {
	mcas *m = nullptr;
	ds_bztree *t = nullptr;
	ds_bztree_thread *h = nullptr;

	~Tree()
	{
		ds_bztree_thread_unregister(&h);
		ds_bztree_close(&t);
		mcas_close(&m);
	}
};

TEST(BztreeFault, ConstructorsAndRegistrationFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	Tree w;
	ASSERT_EQ(mcas_new(&w.m, nullptr), 0);
	ds_bztree_config cfg;
	ds_bztree_config_init(&cfg);
	cfg.node_capacity = DS_BZTREE_MIN_CAPACITY;
	EXPECT_GT(pmtest::SweepConstructor<ds_bztree>(
			  [&](ds_bztree **t) { return ds_bztree_new(t, w.m, &cfg); },
			  [](ds_bztree **t) { ds_bztree_close(t); }, EnomemIffFired),
		0u);
	ASSERT_EQ(ds_bztree_new(&w.t, w.m, &cfg), 0);
	EXPECT_GT(pmtest::SweepConstructor<ds_bztree_thread>(
			  [&](ds_bztree_thread **h) { return ds_bztree_thread_register(w.t, h); },
			  [](ds_bztree_thread **h) { ds_bztree_thread_unregister(h); }, EnomemIffFired),
		0u);
}

// Small nodes, so that inserts split and removes merge often; every
// allocation of each operation fails in turn, then the operation runs.
TEST(BztreeFault, OperationsFailWithTheMapUnchanged)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	Tree w;
	ASSERT_EQ(mcas_new(&w.m, nullptr), 0);
	ds_bztree_config cfg;
	ds_bztree_config_init(&cfg);
	cfg.node_capacity = DS_BZTREE_MIN_CAPACITY;
	ASSERT_EQ(ds_bztree_new(&w.t, w.m, &cfg), 0);
	ASSERT_EQ(ds_bztree_thread_register(w.t, &w.h), 0);
	std::map<uint64_t, uint64_t> model;
	unsigned refused = 0;
	auto check_map = [&] {
		char buf[256];
		const char *why = ds_bztree_check(w.h, nullptr, buf, sizeof(buf));
		ASSERT_EQ(why, nullptr) << why;
		for (uint64_t k = 1; k <= 200; k++) {
			uint64_t v = 0;
			int r = ds_bztree_lookup(w.h, k * 8, &v);
			auto it = model.find(k * 8);
			ASSERT_EQ(r, it != model.end() ? 1 : 0) << "key " << k * 8;
			if (r == 1) {
				ASSERT_EQ(v, it->second);
			}
		}
	};
	for (uint64_t k = 1; k <= 200; k++) {
		uint64_t key = (k * 37 % 200 + 1) * 8;
		pmtest::SweepAllocFailures([&] { return ds_bztree_insert(w.h, key, key + 1); },
			[&](int r, bool fired) {
				// A run whose failed allocation was absorbed inserts
				// the key, and the sweep's next run finds it present.
				if (r == 1) {
					EXPECT_EQ(model.count(key), 0u) << "key " << key;
					model[key] = key + 1;
				} else if (r == 0) {
					EXPECT_EQ(model.count(key), 1u) << "key " << key;
				} else {
					EXPECT_EQ(r, -ENOMEM) << pm_strerror(r) << (fired ? " (fired)" : "");
				}
				refused += r == -ENOMEM;
			});
		if (k % 25 == 0)
			check_map();
	}
	for (uint64_t k = 1; k <= 200; k += 2) {
		uint64_t key = k * 8;
		pmtest::SweepAllocFailures([&] { return ds_bztree_remove(w.h, key); },
			[&](int r, bool fired) {
				if (r == 1) {
					EXPECT_EQ(model.erase(key), 1u) << "key " << key;
				} else if (r == 0) {
					EXPECT_EQ(model.count(key), 0u) << "key " << key;
				} else {
					EXPECT_EQ(r, -ENOMEM) << pm_strerror(r) << (fired ? " (fired)" : "");
				}
				refused += r == -ENOMEM;
			});
	}
	check_map();
	EXPECT_GT(refused, 0u);
}

} // namespace
