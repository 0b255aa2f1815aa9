// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/bztree_test.cc -- the BzTree, single-threaded: semantics of every
// operation against std::map on every MCAS algorithm and mode, with nodes
// small enough that consolidations, splits, merges and rebalances happen
// (counted); scans against std::map::lower_bound; key and value extremes;
// persistent reopen and a full arena; API misuse.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/cost.h>
#include <pm/error.h>

#include "ds/tests/bztree_test_util.h"

namespace {

using bztest::Check;
using bztest::ModelScan;
using bztest::Pairs;
using bztest::Scan;
using bztest::TreeEnv;
using dstest::Variant;

class BzTreeTest : public testing::TestWithParam<Variant> {
protected:
	std::string Name(const std::string &tag) const
	{
		return "bz-" + tag + "-" + dstest::VariantName(GetParam());
	}
};

TEST_P(BzTreeTest, EmptyTreeAndExtremes)
{
	TreeEnv env;
	DS_SETUP(env, Name("empty"), GetParam(), dstest::SmallConfig(GetParam().alg), 4);
	ds_bztree_thread *h = nullptr;
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	EXPECT_EQ(ds_bztree_is_persistent(env.ds), GetParam().persistent);
	EXPECT_EQ(ds_bztree_capacity(env.ds), 4u);
	EXPECT_NE(ds_bztree_thread_mcas(h), nullptr);
	ds_bztree_stats st;
	EXPECT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.size, 0u);
	EXPECT_EQ(st.height, 1u);
	EXPECT_EQ(st.leaves, 1u);
	uint64_t v = 99;
	EXPECT_EQ(ds_bztree_lookup(h, 5, &v), 0);
	EXPECT_EQ(v, 99u);
	EXPECT_EQ(ds_bztree_remove(h, 5), 0);
	EXPECT_EQ(ds_bztree_update(h, 5, 1), 0);
	EXPECT_EQ(ds_bztree_size(h), 0u);
	EXPECT_EQ(Scan(h), Pairs{});
	EXPECT_EQ(ds_bztree_scan(h, 0, 0, nullptr, nullptr), 0u);

	// Every key and value is usable, the extremes included.
	EXPECT_EQ(ds_bztree_insert(h, 0, UINT64_MAX), 1);
	EXPECT_EQ(ds_bztree_insert(h, UINT64_MAX, 0), 1);
	EXPECT_EQ(ds_bztree_insert(h, 7, 0x7), 1);
	EXPECT_EQ(ds_bztree_insert(h, 7, 8), 0);
	EXPECT_EQ(ds_bztree_lookup(h, 7, &v), 1);
	EXPECT_EQ(v, 0x7u); // insert does not overwrite
	EXPECT_EQ(ds_bztree_lookup(h, 0, &v), 1);
	EXPECT_EQ(v, UINT64_MAX);
	EXPECT_EQ(ds_bztree_lookup(h, UINT64_MAX, &v), 1);
	EXPECT_EQ(v, 0u);
	EXPECT_EQ(ds_bztree_lookup(h, UINT64_MAX, nullptr), 1);
	EXPECT_EQ(ds_bztree_update(h, 7, 13), 1);
	EXPECT_EQ(ds_bztree_lookup(h, 7, &v), 1);
	EXPECT_EQ(v, 13u);
	EXPECT_EQ(ds_bztree_upsert(h, 7, 14), 0);  // replaced
	EXPECT_EQ(ds_bztree_upsert(h, 8, 15), 1);  // inserted
	EXPECT_EQ(Scan(h), (Pairs{ { 0, UINT64_MAX }, { 7, 14 }, { 8, 15 }, { UINT64_MAX, 0 } }));
	EXPECT_EQ(Scan(h, 8), (Pairs{ { 8, 15 }, { UINT64_MAX, 0 } }));
	EXPECT_EQ(Scan(h, UINT64_MAX), (Pairs{ { UINT64_MAX, 0 } }));
	EXPECT_EQ(Scan(h, 1, 1), (Pairs{ { 7, 14 } }));
	// Keys only, values only.
	uint64_t keys[2];
	EXPECT_EQ(ds_bztree_scan(h, 0, 2, keys, nullptr), 2u);
	EXPECT_EQ(keys[1], 7u);
	EXPECT_EQ(ds_bztree_scan(h, 8, 2, nullptr, keys), 2u);
	EXPECT_EQ(keys[1], 0u);
	EXPECT_EQ(ds_bztree_size(h), 4u);
	EXPECT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.size, 4u);
	EXPECT_EQ(ds_bztree_remove(h, 0), 1);
	EXPECT_EQ(ds_bztree_remove(h, 0), 0);
	EXPECT_EQ(ds_bztree_remove(h, UINT64_MAX), 1);
	EXPECT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.size, 2u);

	EXPECT_EQ(ds_bztree_close(&env.ds), -EBUSY); // a thread is registered
	EXPECT_NE(std::string(pm_errormsg()), "");
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
	EXPECT_EQ(h, nullptr);
	EXPECT_EQ(ds_bztree_thread_unregister(&h), 0); // NULL accepted
}

// Random operations against std::map on @range keys i * @stride (an odd
// stride spreads them over the whole 64-bit space), checking invariants,
// contents and scans every @batch ops.
void RunRandom(TreeEnv &env, uint64_t range, uint64_t stride, unsigned ops, uint64_t seed,
	unsigned batch, ds_bztree_stats *out)
{
	ds_bztree_thread *h = nullptr;
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	std::map<uint64_t, uint64_t> model;
	std::mt19937_64 rng(seed);
	uint64_t max_height = 0;
	for (unsigned i = 0; i < ops; i++) {
		// Phases of insert-heavy and delete-heavy mixes grow the tree
		// and shrink it again, so both kinds of SMO happen.
		bool growing = (i / (ops / 6 + 1)) % 2 == 0;
		uint64_t key = rng() % range * stride;
		uint64_t val = rng();
		unsigned r = rng() % 100;
		bool present = model.count(key) == 1;
		if (r < (growing ? 45u : 15u)) {
			ASSERT_EQ(ds_bztree_insert(h, key, val), present ? 0 : 1) << "op " << i;
			model.emplace(key, val);
		} else if (r < 55) {
			ASSERT_EQ(ds_bztree_remove(h, key), present ? 1 : 0) << "op " << i;
			model.erase(key);
		} else if (r < 65) {
			ASSERT_EQ(ds_bztree_upsert(h, key, val), present ? 0 : 1) << "op " << i;
			model[key] = val;
		} else if (r < 75) {
			ASSERT_EQ(ds_bztree_update(h, key, val), present ? 1 : 0) << "op " << i;
			if (present)
				model[key] = val;
		} else if (r < 95) {
			uint64_t v = 0;
			ASSERT_EQ(ds_bztree_lookup(h, key, &v), present ? 1 : 0) << "op " << i;
			if (present) {
				ASSERT_EQ(v, model[key]) << "op " << i;
			}
		} else {
			size_t max = 1 + rng() % 40;
			ASSERT_EQ(Scan(h, key, max), ModelScan(model, key, max)) << "op " << i;
		}
		if (i % batch == 0 || i + 1 == ops) {
			ds_bztree_stats st;
			ASSERT_EQ(Check(h, &st), "") << "after op " << i;
			ASSERT_EQ(st.size, model.size()) << "after op " << i;
			ASSERT_EQ(Scan(h), ModelScan(model)) << "after op " << i;
			max_height = std::max(max_height, st.height);
		}
	}
	ASSERT_EQ(ds_bztree_size(h), model.size());
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
	// Unregistering waited for every retired node.
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	ASSERT_EQ(Check(h, out), "");
	EXPECT_EQ(out->retired, 0u);
	out->height = max_height;
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
}

// The counted cost of each operation on a leaf that needs no structure
// change (thesis Table 5.1 per MCAS): a new key is a 1-word reservation and
// a 2-word publish; a replacement (upsert, update) a reservation and a
// 3-word publish that also retires the old record; a remove one 2-word
// MCAS; lookups, scans and updates that find nothing to do no MCAS and no
// CAS. Measured on a fresh handle over words an unregistered one left
// clean, with efficient-read detaching off so reads are deterministic, and
// a descriptor pool large enough that no reclamation (so no detaching) runs
// inside the measured calls. AOPT's publish replaces the reservation's
// finalized descriptor in the status word directly: still k+1 CASes.
TEST_P(BzTreeTest, OperationCosts)
{
	const Variant v = GetParam();
	mcas_config cfg = dstest::SmallConfig(v.alg, 16, 256);
	cfg.read_detach_one_in = 0;
	TreeEnv env;
	DS_SETUP(env, Name("costs"), v, cfg, 64);
	ds_bztree_thread *h = nullptr;
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	for (uint64_t k : { 10, 20, 30, 40 })
		ASSERT_EQ(ds_bztree_insert(h, k, k), 1);
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0); // detaches every descriptor
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	mcas_thread *mt = ds_bztree_thread_mcas(h);
	ds_bztree_stats before;
	ASSERT_EQ(Check(h, &before), "");

	auto expect_free = [&](const char *what, auto op) {
		dstest::Cost b = dstest::Snap(mt);
		op();
		dstest::Diff d = dstest::Since(mt, b);
		EXPECT_EQ(d.mcas, 0u) << what;
		EXPECT_EQ(d.cas, 0u) << what;
		EXPECT_EQ(d.fence, 0u) << what;
		EXPECT_EQ(d.flush, 0u) << what;
		EXPECT_EQ(d.helps, 0u) << what;
	};
	uint64_t val = 0;
	expect_free("lookup", [&] { EXPECT_EQ(ds_bztree_lookup(h, 30, &val), 1); });

	dstest::Diff d = dstest::ExpectMcases(mt, v, "insert", { 1, 2 },
		[h] { return ds_bztree_insert(h, 25, 1); });
	EXPECT_EQ(d.flush == 0, !v.persistent); // the slot's key and value
	dstest::ExpectMcases(mt, v, "upsert (replace)", { 1, 3 },
		[h] { return ds_bztree_upsert(h, 25, 2) == 0 ? 1 : 0; });
	dstest::ExpectMcases(mt, v, "update", { 1, 3 }, [h] { return ds_bztree_update(h, 25, 3); });
	EXPECT_EQ(ds_bztree_lookup(h, 25, &val), 1);
	EXPECT_EQ(val, 3u);
	dstest::ExpectMcases(mt, v, "remove", { 2 }, [h] { return ds_bztree_remove(h, 25); });

	// Through words AOPT left referring to finalized descriptors, reads
	// still write nothing and help nobody; misses run no MCAS.
	expect_free("lookups, scan and misses", [&] {
		EXPECT_EQ(ds_bztree_lookup(h, 25, &val), 0);
		EXPECT_EQ(ds_bztree_lookup(h, 40, &val), 1);
		EXPECT_EQ(Scan(h), (Pairs{ { 10, 10 }, { 20, 20 }, { 30, 30 }, { 40, 40 } }));
		EXPECT_EQ(ds_bztree_insert(h, 20, 0), 0);
		EXPECT_EQ(ds_bztree_update(h, 26, 0), 0);
		EXPECT_EQ(ds_bztree_remove(h, 26), 0);
	});
	ds_bztree_stats after;
	ASSERT_EQ(Check(h, &after), "");
	EXPECT_EQ(after.consolidations + after.splits + after.merges + after.rebalances,
		before.consolidations + before.splits + before.merges + before.rebalances);
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
}

TEST_P(BzTreeTest, RandomOpsCapacity4)
{
	TreeEnv env;
	DS_SETUP(env, Name("rand4"), GetParam(), dstest::SmallConfig(GetParam().alg), 4);
	ds_bztree_stats st;
	RunRandom(env, 1000, 1, 12000, 1, 97, &st);
	std::printf("%s cap 4: max height %" PRIu64 ", %" PRIu64 " consolidations, %" PRIu64
		" splits, %" PRIu64 " merges, %" PRIu64 " rebalances\n",
		dstest::VariantName(GetParam()).c_str(), st.height, st.consolidations, st.splits,
		st.merges, st.rebalances);
	EXPECT_GE(st.height, 4u);
	EXPECT_GT(st.consolidations, 0u);
	EXPECT_GT(st.splits, 0u);
	EXPECT_GT(st.merges, 0u);
	EXPECT_GT(st.rebalances, 0u);
}

TEST_P(BzTreeTest, RandomOpsCapacity8WideKeys)
{
	TreeEnv env;
	DS_SETUP(env, Name("rand8"), GetParam(), dstest::SmallConfig(GetParam().alg), 8);
	ds_bztree_stats st;
	RunRandom(env, 2000, 0x9e3779b97f4a7c15ull, 8000, 2, 211, &st);
	EXPECT_GE(st.height, 3u);
	EXPECT_GT(st.splits, 0u);
	EXPECT_GT(st.merges + st.rebalances, 0u);
}

TEST_P(BzTreeTest, RandomOpsDefaultCapacity)
{
	TreeEnv env;
	DS_SETUP(env, Name("rand64"), GetParam(), dstest::SmallConfig(GetParam().alg),
		DS_BZTREE_DEFAULT_CAPACITY, 1024);
	ds_bztree_stats st;
	RunRandom(env, 3000, 1, 12000, 3, 1999, &st);
	EXPECT_GE(st.height, 2u);
	EXPECT_GT(st.splits, 0u);
}

// Ascending and descending fills and drains: the degenerate shapes of a
// B+-tree, down to a single empty leaf again with every node back.
TEST_P(BzTreeTest, SortedFillAndDrain)
{
	TreeEnv env;
	DS_SETUP(env, Name("sorted"), GetParam(), dstest::SmallConfig(GetParam().alg), 4);
	ds_bztree_thread *h = nullptr;
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	const uint64_t n = 400;
	for (int round = 0; round < 2; round++) {
		for (uint64_t i = 0; i < n; i++) {
			uint64_t k = round == 0 ? i : n - 1 - i;
			ASSERT_EQ(ds_bztree_insert(h, k * 8, k), 1) << k;
		}
		ds_bztree_stats st;
		ASSERT_EQ(Check(h, &st), "");
		EXPECT_EQ(st.size, n);
		EXPECT_GE(st.height, 5u);
		Pairs all = Scan(h);
		ASSERT_EQ(all.size(), n);
		for (uint64_t i = 0; i < n; i++)
			ASSERT_EQ(all[i], std::make_pair(i * 8, i));
		for (uint64_t i = 0; i < n; i++) {
			uint64_t k = round == 0 ? i : n - 1 - i;
			ASSERT_EQ(ds_bztree_remove(h, k * 8), 1) << k;
			if (i % 37 == 0) {
				ASSERT_EQ(Check(h), "") << "after deleting " << k;
			}
		}
		ASSERT_EQ(Check(h, &st), "");
		EXPECT_EQ(st.size, 0u);
		// Merges collapse the tree to one leaf (or nearly: a merge
		// is skipped when the sibling is too full to take it).
		EXPECT_LE(st.height, 2u);
	}
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	ds_bztree_stats st;
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.retired, 0u);
	EXPECT_EQ(st.free + st.leaves + st.inner, st.nodes);
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, BzTreeTest, testing::ValuesIn(dstest::AllVariants()),
	dstest::VariantNamer());

class BzTreePmemTest : public BzTreeTest {};

TEST_P(BzTreePmemTest, ReopenKeepsContents)
{
	TreeEnv env;
	DS_SETUP(env, Name("reopen"), GetParam(), dstest::SmallConfig(GetParam().alg), 4, 512);
	ds_bztree_thread *h = nullptr;
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	std::map<uint64_t, uint64_t> model;
	for (uint64_t k = 0; k < 150; k++) {
		ASSERT_EQ(ds_bztree_insert(h, k * 3, k), 1);
		model[k * 3] = k;
	}
	for (uint64_t k = 0; k < 150; k += 4) {
		ASSERT_EQ(ds_bztree_remove(h, k * 3), 1);
		model.erase(k * 3);
	}
	ASSERT_EQ(ds_bztree_upsert(h, 3, 333), 0);
	model[3] = 333;
	ds_bztree_stats before;
	ASSERT_EQ(Check(h, &before), "");
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
	// Reopen by hand to count the tree's own recovery: it only reads the
	// pool, so a crash inside it needs nothing beyond running it again
	// (mcas_pmem_open's recovery is crash-tested in mcas/).
	ASSERT_EQ(ds_bztree_close(&env.ds), 0);
	ASSERT_EQ(mcas_close(&env.m), 0);
	ASSERT_EQ(pmtest::ReopenPool(&env.pool, env.PoolConfig()), 0);
	env.Locate();
	ASSERT_EQ(mcas_pmem_open(&env.m, env.pool, env.mcas_off, &env.cfg), 0);
	pm_cost c0, c1, d;
	pm_cost_read_thread(&c0);
	ASSERT_EQ(ds_bztree_pmem_open(&env.ds, env.m, env.pool, env.ds_off), 0)
		<< pm_errormsg();
	pm_cost_read_thread(&c1);
	pm_cost_diff(&c1, &c0, &d);
	EXPECT_EQ(d.n[PM_COST_FLUSH], 0u);
	EXPECT_EQ(d.n[PM_COST_FENCE], 0u);
	EXPECT_EQ(d.n[PM_COST_CAS], 0u);
	EXPECT_EQ(ds_bztree_capacity(env.ds), 4u);
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	ds_bztree_stats after;
	ASSERT_EQ(Check(h, &after), "");
	EXPECT_EQ(Scan(h), ModelScan(model));
	EXPECT_EQ(after.size, model.size());
	EXPECT_EQ(after.height, before.height);
	// Every node not in the tree is free again.
	EXPECT_EQ(after.leaves + after.inner + after.free, env.params.nodes);
	EXPECT_EQ(ds_bztree_insert(h, 1, 1), 1);
	EXPECT_EQ(Check(h), "");
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
}

TEST_P(BzTreePmemTest, FullArenaFailsCleanly)
{
	TreeEnv env;
	DS_SETUP(env, Name("full"), GetParam(), dstest::SmallConfig(GetParam().alg), 4, 8);
	ds_bztree_thread *h = nullptr;
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	std::map<uint64_t, uint64_t> model;
	int ret = 0;
	uint64_t k = 0;
	for (; k < 1000 && (ret = ds_bztree_insert(h, k, k)) == 1; k++)
		model[k] = k;
	EXPECT_EQ(ret, -ENOSPC);
	EXPECT_GT(k, 4u);
	EXPECT_EQ(Check(h), "");
	EXPECT_EQ(Scan(h), ModelScan(model));
	// Present keys still answer, and deletes still work.
	EXPECT_EQ(ds_bztree_insert(h, 0, 5), 0);
	EXPECT_EQ(ds_bztree_update(h, 0, 5), 1);
	EXPECT_EQ(ds_bztree_remove(h, 1), 1);
	EXPECT_EQ(Check(h), "");
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
}

TEST_P(BzTreePmemTest, DamagedAreasAreRejected)
{
	TreeEnv env;
	DS_SETUP(env, Name("damaged"), GetParam(), dstest::SmallConfig(GetParam().alg), 4, 64);
	ASSERT_EQ(ds_bztree_close(&env.ds), 0);
	ds_bztree *t = nullptr;
	// No tree header there (the root word's line), then a damaged header,
	// then a root word out of the arena.
	EXPECT_EQ(ds_bztree_pmem_open(&t, env.m, env.pool, env.ds_off + 64), PM_E_LAYOUT);
	uint64_t *words = static_cast<uint64_t *>(env.ds_area);
	const uint64_t env_magic = words[0];
	words[1] ^= 1;
	EXPECT_EQ(ds_bztree_pmem_open(&t, env.m, env.pool, env.ds_off), PM_E_CORRUPT);
	words[1] ^= 1;
	words[0] ^= 1; // another kind of object (pm/area.h)
	EXPECT_EQ(ds_bztree_pmem_open(&t, env.m, env.pool, env.ds_off), PM_E_LAYOUT);
	words[0] = 0; // never formatted, or an unfinished create
	EXPECT_EQ(ds_bztree_pmem_open(&t, env.m, env.pool, env.ds_off), PM_E_CORRUPT);
	words[0] = env_magic;
	uint64_t root = words[8];
	words[8] = 8;
	EXPECT_EQ(ds_bztree_pmem_open(&t, env.m, env.pool, env.ds_off), PM_E_CORRUPT);
	EXPECT_NE(std::string(pm_errormsg()), "");
	words[8] = root;
	ASSERT_EQ(ds_bztree_pmem_open(&t, env.m, env.pool, env.ds_off), 0);
	env.ds = t;
}

INSTANTIATE_TEST_SUITE_P(PersistentAlgorithms, BzTreePmemTest,
	testing::ValuesIn(dstest::PmemVariants()), dstest::VariantNamer());

TEST(BzTreeApi, BadArguments)
{
	mcas *m = nullptr;
	ASSERT_EQ(mcas_new(&m, nullptr), 0);
	ds_bztree *t = nullptr;
	ds_bztree_config cfg;
	ds_bztree_config_init(&cfg);
	EXPECT_EQ(cfg.node_capacity, DS_BZTREE_DEFAULT_CAPACITY);
	EXPECT_EQ(ds_bztree_new(nullptr, m, &cfg), -EINVAL);
	EXPECT_EQ(ds_bztree_new(&t, nullptr, &cfg), -EINVAL);
	cfg.node_capacity = DS_BZTREE_MIN_CAPACITY - 1;
	EXPECT_EQ(ds_bztree_new(&t, m, &cfg), -EINVAL);
	EXPECT_NE(std::string(pm_errormsg()), "");
	EXPECT_EQ(ds_bztree_pmem_area_size(&cfg, 100), 0u);
	cfg.node_capacity = DS_BZTREE_MAX_CAPACITY + 1;
	EXPECT_EQ(ds_bztree_new(&t, m, &cfg), -EINVAL);
	cfg.node_capacity = DS_BZTREE_MAX_CAPACITY;
	EXPECT_EQ(ds_bztree_pmem_area_size(&cfg, 1), 0u);
	EXPECT_EQ(ds_bztree_pmem_area_size(&cfg, DS_BZTREE_PMEM_MAX_NODES + 1), 0u);
	EXPECT_GT(ds_bztree_pmem_area_size(nullptr, 2), 0u);
	// A volatile instance cannot back a persistent tree.
	EXPECT_EQ(ds_bztree_pmem_create(&t, m, nullptr, 0, nullptr, 16), -EINVAL);
	ASSERT_EQ(ds_bztree_new(&t, m, nullptr), 0);
	EXPECT_STREQ(pm_errormsg(), "");
	EXPECT_EQ(ds_bztree_capacity(t), DS_BZTREE_DEFAULT_CAPACITY);
	EXPECT_EQ(ds_bztree_close(&t), 0);
	EXPECT_EQ(t, nullptr);
	EXPECT_EQ(ds_bztree_close(&t), 0); // NULL accepted
	EXPECT_EQ(mcas_close(&m), 0);
}

TEST(BzTreeApi, PersistentInstanceCannotBackVolatileTree)
{
	TreeEnv env;
	DS_SETUP(env, "bz-api-pmem", (Variant{ MCAS_ALG_AOPT, true }),
		dstest::SmallConfig(MCAS_ALG_AOPT), 4, 16);
	ds_bztree *t = nullptr;
	EXPECT_EQ(ds_bztree_new(&t, env.m, nullptr), -EINVAL);
	EXPECT_EQ(ds_bztree_pmem_create(&t, env.m, env.pool, env.ds_off + 1, nullptr, 16),
		-EINVAL);
	EXPECT_EQ(ds_bztree_pmem_create(&t, env.m, env.pool, UINT64_MAX - 63, nullptr, 16),
		-ERANGE);
}

} // namespace
