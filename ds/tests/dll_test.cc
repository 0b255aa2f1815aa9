// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/dll_test.cc -- the MCAS doubly-linked list, single-threaded:
// semantics against std::set on every MCAS algorithm and mode, the number
// of MCASes, CASes and fences per operation, node reuse, persistent
// reopen, recovery of damaged areas, and API misuse.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ds/dll.h>
#include <mcas/mcas.h>
#include <pm/area.h>
#include <pm/cost.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "ds/tests/dll_test_util.h"

namespace {

using dlltest::Check;
using dlltest::Keys;
using dlltest::ListEnv;
using dlltest::Variant;

class DllTest : public testing::TestWithParam<Variant> {};

TEST_P(DllTest, EmptyListAndKeyRange)
{
	ListEnv env;
	DLL_PARAM_SETUP(env, "empty");
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	EXPECT_EQ(ds_dll_is_persistent(env.ds), GetParam().persistent);
	EXPECT_EQ(Check(h), "");
	EXPECT_FALSE(ds_dll_contains(h, 5));
	EXPECT_EQ(ds_dll_remove(h, 5), 0);
	// The sentinels' keys are not usable.
	EXPECT_EQ(ds_dll_insert(h, 0), -EINVAL);
	EXPECT_EQ(ds_dll_insert(h, UINT64_MAX), -EINVAL);
	EXPECT_FALSE(ds_dll_contains(h, 0));
	EXPECT_FALSE(ds_dll_contains(h, UINT64_MAX));
	EXPECT_EQ(ds_dll_remove(h, 0), 0);
	EXPECT_EQ(ds_dll_remove(h, UINT64_MAX), 0);
	// The extremes of the usable range are.
	EXPECT_EQ(ds_dll_insert(h, DS_DLL_KEY_MIN), 1);
	EXPECT_EQ(ds_dll_insert(h, DS_DLL_KEY_MAX), 1);
	EXPECT_EQ(ds_dll_insert(h, DS_DLL_KEY_MAX), 0);
	EXPECT_TRUE(ds_dll_contains(h, DS_DLL_KEY_MIN));
	EXPECT_TRUE(ds_dll_contains(h, DS_DLL_KEY_MAX));
	EXPECT_EQ(Keys(h), (std::vector<uint64_t>{ DS_DLL_KEY_MIN, DS_DLL_KEY_MAX }));
	ds_dll_stats st;
	EXPECT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.size, 2u);
	EXPECT_EQ(ds_dll_remove(h, DS_DLL_KEY_MAX), 1);
	EXPECT_EQ(ds_dll_remove(h, DS_DLL_KEY_MIN), 1);
	EXPECT_EQ(Keys(h), std::vector<uint64_t>{});
	EXPECT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.size, 0u);
	EXPECT_EQ(st.retired, 2u);
	EXPECT_NE(ds_dll_thread_mcas(h), nullptr);
	EXPECT_EQ(ds_dll_close(&env.ds), -EBUSY); // a thread is registered
	EXPECT_NE(std::string(pm_errormsg()), "");
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
	EXPECT_EQ(h, nullptr);
	EXPECT_EQ(ds_dll_thread_unregister(&h), 0); // NULL accepted
}

// Random operations against std::set; the key range decides how long the
// list gets (and, volatile, how many slabs it allocates).
void RunSequential(ListEnv &env, uint64_t range, unsigned ops, uint64_t seed)
{
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	std::set<uint64_t> model;
	std::mt19937_64 rng(seed);
	for (unsigned i = 0; i < ops; i++) {
		uint64_t key = 1 + rng() % range;
		switch (rng() % 3) {
		case 0:
			ASSERT_EQ(ds_dll_insert(h, key), model.insert(key).second ? 1 : 0)
				<< "op " << i << " insert " << key;
			break;
		case 1:
			ASSERT_EQ(ds_dll_remove(h, key), model.erase(key) ? 1 : 0)
				<< "op " << i << " remove " << key;
			break;
		default:
			ASSERT_EQ(ds_dll_contains(h, key), model.count(key) == 1)
				<< "op " << i << " contains " << key;
		}
		if (i % 997 == 0 || i + 1 == ops) {
			ASSERT_EQ(Check(h), "") << "after op " << i;
			ASSERT_EQ(Keys(h), std::vector<uint64_t>(model.begin(), model.end()))
				<< "after op " << i;
		}
	}
	ds_dll_stats st;
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.size, model.size());
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
	// Unregistering waited for every retired node: none is left retired.
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.retired, 0u);
	EXPECT_EQ(st.size + st.free, st.nodes);
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
}

TEST_P(DllTest, SequentialMatchesStdSetSmallRange)
{
	ListEnv env;
	DLL_PARAM_SETUP(env, "seq-small");
	RunSequential(env, 16, 20000, 1);
}

TEST_P(DllTest, SequentialMatchesStdSetLargeRange)
{
	ListEnv env;
	DLL_PARAM_SETUP(env, "seq-large");
	RunSequential(env, 600, 12000, 2);
}

using dstest::Cost;
using dstest::Diff;

Cost Snap(ds_dll_thread *h)
{
	return dstest::Snap(ds_dll_thread_mcas(h));
}

Diff Since(ds_dll_thread *h, const Cost &b)
{
	return dstest::Since(ds_dll_thread_mcas(h), b);
}

// Runs @update (an insert or a remove through @h that must succeed) and
// checks it cost one @k-word MCAS with the CASes and fences of variant @v.
template <class F> Diff ExpectOneMcas(ds_dll_thread *h, const Variant &v, const char *what,
	unsigned k, F update)
{
	return dstest::ExpectMcases(ds_dll_thread_mcas(h), v, what, { k }, update);
}

// An uncontended insert is one 2-word MCAS, a remove one 3-word MCAS, a
// lookup none. Measured on a fresh thread (nothing in its reclamation
// pipeline, so no detaching inside the measured calls) over words that an
// unregistered thread left clean, with efficient-read detaching off so
// that reads are deterministic.
TEST_P(DllTest, OperationCosts)
{
	const Variant v = GetParam();
	mcas_config cfg = dlltest::SmallConfig(v.alg);
	cfg.read_detach_one_in = 0;
	ListEnv env;
	DS_SETUP(env, "costs-" + dlltest::VariantName(v), v, cfg);
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	for (uint64_t k : { 10, 20, 30, 40 })
		ASSERT_EQ(ds_dll_insert(h, k), 1);
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0); // detaches every descriptor
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	ds_dll_stats st;
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.installed, 0u);

	Cost b = Snap(h);
	EXPECT_TRUE(ds_dll_contains(h, 30));
	Diff d = Since(h, b);
	EXPECT_EQ(d.cas, 0u);
	EXPECT_EQ(d.fence, 0u);
	EXPECT_EQ(d.flush, 0u);
	EXPECT_EQ(d.mcas, 0u);

	d = ExpectOneMcas(h, v, "insert", 2, [h] { return ds_dll_insert(h, 25); });
	if (v.persistent)
		EXPECT_GE(d.flush, 1u); // at least the new node's line
	else
		EXPECT_EQ(d.flush, 0u);

	// AOPT leaves the finalized descriptor in both words until it is
	// detached; the baselines clean up before returning.
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.installed, v.alg == MCAS_ALG_AOPT ? 2u : 0u);

	// A lookup through those words still writes nothing (no detaching
	// reads here), and helps nobody: the operation is finalized.
	b = Snap(h);
	EXPECT_TRUE(ds_dll_contains(h, 25));
	EXPECT_TRUE(ds_dll_contains(h, 30));
	d = Since(h, b);
	EXPECT_EQ(d.cas, 0u);
	EXPECT_EQ(d.fence, 0u);
	EXPECT_EQ(d.helps, 0u);

	// Lookups that fail and updates that find nothing to do run no MCAS.
	b = Snap(h);
	EXPECT_EQ(ds_dll_insert(h, 20), 0);
	EXPECT_EQ(ds_dll_remove(h, 26), 0);
	EXPECT_FALSE(ds_dll_contains(h, 26));
	d = Since(h, b);
	EXPECT_EQ(d.mcas, 0u);
	EXPECT_EQ(d.cas, 0u);
	EXPECT_EQ(d.fence, 0u);

	// AOPT: the remove's acquisitions replace the insert's finalized
	// descriptor directly (no detaching CAS first), so still k+1 CASes.
	ExpectOneMcas(h, v, "remove", 3, [h] { return ds_dll_remove(h, 25); });
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.installed, v.alg == MCAS_ALG_AOPT ? 2u : 0u); // 20->next, 30->prev
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
}

// With the default efficient reads (detach one in 64), lookups over words
// holding finalized descriptors sometimes write: measured, not asserted
// beyond "at most one CAS per detaching read".
TEST_P(DllTest, LookupCasesWithEfficientReads)
{
	const Variant v = GetParam();
	ListEnv env;
	DLL_PARAM_SETUP(env, "reads");
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	for (uint64_t k = 1; k <= 32; k++)
		ASSERT_EQ(ds_dll_insert(h, k), 1);
	ds_dll_stats st;
	ASSERT_EQ(Check(h, &st), "");
	uint64_t installed_before = st.installed;
	Cost b = Snap(h);
	for (unsigned i = 0; i < 200; i++)
		ASSERT_TRUE(ds_dll_contains(h, 32));
	Diff d = Since(h, b);
	ASSERT_EQ(Check(h, &st), "");
	std::printf("%-16s 200 lookups of the last key over %" PRIu64 " installed words: %" PRIu64
		" CAS (%" PRIu64 " read detaches), %" PRIu64 " installed after\n",
		dlltest::VariantName(v).c_str(), installed_before, d.cas, d.read_detaches,
		st.installed);
	EXPECT_EQ(d.cas, d.read_detaches);
	EXPECT_EQ(d.mcas, 0u);
	EXPECT_LE(st.installed, installed_before);
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
}

// Removed nodes come back after their grace period: a small persistent
// arena (or a volatile list that stops growing) serves many cycles.
TEST_P(DllTest, NodesAreReused)
{
	const Variant v = GetParam();
	ListEnv env;
	DLL_PARAM_SETUP(env, "reuse", 160);
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	for (unsigned round = 0; round < 3000; round++) {
		for (uint64_t k = 1; k <= 8; k++)
			ASSERT_EQ(ds_dll_insert(h, k), 1) << "round " << round;
		for (uint64_t k = 1; k <= 8; k++)
			ASSERT_EQ(ds_dll_remove(h, k), 1) << "round " << round;
	}
	ds_dll_stats st;
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.size, 0u);
	if (!v.persistent) {
		EXPECT_LE(st.nodes, 256u) << "volatile nodes are not being reused";
	}
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, DllTest, testing::ValuesIn(dlltest::AllVariants()),
	dlltest::VariantNamer());

// ---- persistent lists ----

class DllPmemTest : public testing::TestWithParam<Variant> {
protected:
	// Byte layout of the area (dll.c): a 64-byte header, then 64-byte
	// nodes {key, prev, next, ...}: head at index 0, tail at 1.
	struct RawNode {
		uint64_t key, prev, next, aux, pad[4];
	};
	struct RawHeader {
		pm_area_hdr area;
		uint32_t node_size, reserved;
		uint64_t capacity, area_off, spare;
	};
	static RawHeader *Header(ListEnv &env) { return static_cast<RawHeader *>(env.ds_area); }
	static RawNode *Node(ListEnv &env, uint64_t i)
	{
		return reinterpret_cast<RawNode *>(static_cast<char *>(env.ds_area) + 64) + i;
	}
	static uint64_t Link(ListEnv &env, uint64_t i)
	{
		return pm_pool_off(env.pool, Node(env, i));
	}
	static uint64_t Index(ListEnv &env, uint64_t link)
	{
		return (link - Link(env, 0)) / 64;
	}
	// Arena indices of the reachable nodes, head to tail exclusive.
	static std::vector<uint64_t> Reachable(ListEnv &env)
	{
		std::vector<uint64_t> r;
		for (uint64_t i = Index(env, Node(env, 0)->next); i != 1 && r.size() <= env.params.capacity;
				i = Index(env, Node(env, i)->next))
			r.push_back(i);
		return r;
	}
	// Closes the list only (the instance stays open), so tests can damage
	// the area and open it again.
	static void CloseList(ListEnv &env) { ASSERT_EQ(ds_dll_close(&env.ds), 0); }
	static int OpenList(ListEnv &env) { return ds_dll_pmem_open(&env.ds, env.m, env.pool, env.ds_off); }

	void Fill(ListEnv &env, std::initializer_list<uint64_t> keys)
	{
		ds_dll_thread *h = nullptr;
		ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
		for (uint64_t k : keys)
			ASSERT_EQ(ds_dll_insert(h, k), 1);
		ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
	}

	// Fills the list with 5, 6, 7 and closes it; reach gets the arena
	// indices of their nodes.
	void FillAndClose(ListEnv &env)
	{
		Fill(env, { 5, 6, 7 });
		CloseList(env);
		reach = Reachable(env);
		ASSERT_EQ(reach.size(), 3u);
	}

	std::vector<uint64_t> reach;
};

TEST_P(DllPmemTest, ReopenKeepsTheSetAndFreesTheRest)
{
	ListEnv env;
	DLL_PARAM_SETUP(env, "reopen", 64);
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	std::set<uint64_t> model;
	std::mt19937_64 rng(7);
	for (unsigned i = 0; i < 500; i++) {
		uint64_t key = 1 + rng() % 40;
		if (rng() % 2) {
			ASSERT_EQ(ds_dll_insert(h, key), model.insert(key).second ? 1 : 0);
		} else {
			ASSERT_EQ(ds_dll_remove(h, key), model.erase(key) ? 1 : 0);
		}
	}
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
	ASSERT_EQ(env.Reopen(), 0) << pm_errormsg();
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	ds_dll_stats st;
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(Keys(h), std::vector<uint64_t>(model.begin(), model.end()));
	EXPECT_EQ(st.size, model.size());
	EXPECT_EQ(st.free, 64u - model.size());
	EXPECT_EQ(st.retired, 0u);
	EXPECT_EQ(st.installed, 0u);
	// And it keeps working.
	for (uint64_t k = 41; k <= 45; k++)
		ASSERT_EQ(ds_dll_insert(h, k), 1);
	ASSERT_EQ(ds_dll_remove(h, 43), 1);
	dlltest::CheckAndUnregister(&h);
}

// A crash leaves nodes that were cached, retired or being initialized with
// any content; recovery must not care what unreachable nodes hold.
TEST_P(DllPmemTest, GarbageInUnreachableNodesIsIgnored)
{
	ListEnv env;
	DLL_PARAM_SETUP(env, "garbage", 32);
	ASSERT_NO_FATAL_FAILURE(FillAndClose(env));
	std::mt19937_64 rng(3);
	for (uint64_t i = 2; i < env.params.capacity + 2; i++) {
		if (std::find(reach.begin(), reach.end(), i) != reach.end())
			continue;
		RawNode *n = Node(env, i);
		// Anything at all, including marks, descriptor bits and links
		// into the live list.
		n->key = rng();
		n->prev = (i % 4 == 0) ? Link(env, reach[1]) : rng();
		n->next = (i % 3 == 0) ? Link(env, reach[0]) : rng();
		n->aux = rng();
	}
	pm_cost before, after, d;
	pm_cost_read_thread(&before);
	ASSERT_EQ(OpenList(env), 0) << pm_errormsg();
	pm_cost_read_thread(&after);
	pm_cost_diff(&after, &before, &d);
	// Recovery only reads the pool: nothing to crash-test in it.
	EXPECT_EQ(d.n[PM_COST_FLUSH], 0u);
	EXPECT_EQ(d.n[PM_COST_FENCE], 0u);
	EXPECT_EQ(d.n[PM_COST_CAS], 0u);
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	ds_dll_stats st;
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_EQ(st.free, env.params.capacity - 3);
	for (uint64_t k = 10; k < 30; k++) // uses every garbage node
		ASSERT_EQ(ds_dll_insert(h, k), 1);
	EXPECT_EQ(Keys(h).size(), 23u);
	dlltest::CheckAndUnregister(&h);
}

TEST_P(DllPmemTest, DamagedAreasAreCorrupt)
{
	ListEnv env;
	DLL_PARAM_SETUP(env, "damage", 32);
	ASSERT_NO_FATAL_FAILURE(FillAndClose(env));
	RawHeader *hdr = Header(env);
	RawHeader saved_hdr = *hdr;
	RawNode *head = Node(env, 0), *a = Node(env, reach[0]), *b = Node(env, reach[1]);
	const RawNode saved_head = *head, saved_a = *a, saved_b = *b;
	auto restore = [&] {
		*hdr = saved_hdr;
		*head = saved_head;
		*a = saved_a;
		*b = saved_b;
	};
	auto expect_open = [&](int code, const char *what, const char *msg) {
		EXPECT_EQ(OpenList(env), code) << what << ": " << pm_errormsg();
		if (msg != nullptr) {
			EXPECT_NE(std::string(pm_errormsg()).find(msg), std::string::npos)
				<< what << ": " << pm_errormsg();
		}
		if (env.ds != nullptr)
			CloseList(env);
		restore();
	};

	hdr->capacity++; // checksum no longer matches
	expect_open(PM_E_CORRUPT, "header", "header");
	hdr->area.magic = 0; // never formatted, or an unfinished create
	expect_open(PM_E_CORRUPT, "magic", "header");
	hdr->area.magic ^= 1; // another kind of object (pm/area.h)
	expect_open(PM_E_LAYOUT, "another magic", "header");
	hdr->area.version = DS_DLL_PMEM_VERSION + 1;
	hdr->area.checksum = pm_area_sum(&hdr->area);
	expect_open(PM_E_VERSION, "version", "version");
	hdr->area_off += 64;
	hdr->area.checksum = pm_area_sum(&hdr->area);
	expect_open(PM_E_CORRUPT, "moved area", "formatted at");
	hdr->area.area_size += 64;
	hdr->area.checksum = pm_area_sum(&hdr->area);
	expect_open(PM_E_CORRUPT, "area size", "impossible");

	head->next |= 1; // an AOPT descriptor reference: mcas_pmem_open not run
	expect_open(PM_E_CORRUPT, "descriptor in a link", "mcas_pmem_open");
	head->next |= DS_DLL_MARK_DELETED;
	expect_open(PM_E_CORRUPT, "deleted mark", "marked deleted");
	head->next = 64; // the pool's own header
	expect_open(PM_E_CORRUPT, "link outside", "leaves the arena");
	head->next = Link(env, env.params.capacity + 2); // one past the arena
	expect_open(PM_E_CORRUPT, "link past the arena", "leaves the arena");
	std::swap(a->key, b->key);
	expect_open(PM_E_CORRUPT, "unsorted", "follows");
	a->next = Link(env, reach[0]); // a -> a
	expect_open(PM_E_CORRUPT, "self loop", nullptr);
	b->next = Link(env, reach[0]); // a -> b -> a
	b->prev = Link(env, reach[0]);
	a->prev = Link(env, reach[1]);
	expect_open(PM_E_CORRUPT, "cycle", nullptr);
	b->prev = Link(env, 0); // b's prev is the head, not a
	expect_open(PM_E_CORRUPT, "prev link", "prev link");
	head->key = 1;
	expect_open(PM_E_CORRUPT, "head", "head");

	// Undamaged again: opens, with the set intact.
	ASSERT_EQ(OpenList(env), 0) << pm_errormsg();
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	EXPECT_EQ(Keys(h), (std::vector<uint64_t>{ 5, 6, 7 }));
	EXPECT_EQ(Check(h), "");
	ASSERT_EQ(ds_dll_thread_unregister(&h), 0);
}

TEST_P(DllPmemTest, ArenaExhaustion)
{
	ListEnv env;
	DLL_PARAM_SETUP(env, "full", 4);
	ds_dll_thread *h = nullptr;
	ASSERT_EQ(ds_dll_thread_register(env.ds, &h), 0);
	for (uint64_t k = 1; k <= 4; k++)
		ASSERT_EQ(ds_dll_insert(h, k), 1);
	EXPECT_EQ(ds_dll_insert(h, 9), -ENOSPC);
	EXPECT_EQ(ds_dll_insert(h, 3), 0); // present: needs no node
	EXPECT_EQ(Keys(h), (std::vector<uint64_t>{ 1, 2, 3, 4 }));
	dlltest::CheckAndUnregister(&h);
}

TEST_P(DllPmemTest, Misuse)
{
	const Variant v = GetParam();
	ListEnv env;
	DLL_PARAM_SETUP(env, "misuse", 8);
	CloseList(env);
	ds_dll *l = nullptr;
	EXPECT_EQ(ds_dll_pmem_area_size(0), 0u);
	EXPECT_EQ(ds_dll_pmem_area_size(DS_DLL_PMEM_MAX_CAPACITY + 1), 0u);
	EXPECT_EQ(ds_dll_pmem_area_size(1), 64u + 3 * 64);
	EXPECT_EQ(ds_dll_pmem_create(&l, env.m, env.pool, env.ds_off, 0), -EINVAL);
	EXPECT_EQ(ds_dll_pmem_create(&l, env.m, env.pool, env.ds_off + 8, 4), -EINVAL);
	EXPECT_EQ(ds_dll_pmem_create(&l, env.m, env.pool, pm_pool_size(env.pool) - 64, 4),
		-ERANGE);
	EXPECT_EQ(ds_dll_pmem_create(&l, env.m, nullptr, env.ds_off, 4), -EINVAL);
	EXPECT_EQ(ds_dll_pmem_create(&l, nullptr, env.pool, env.ds_off, 4), -EINVAL);
	EXPECT_EQ(ds_dll_pmem_open(&l, env.m, env.pool, env.ds_off + 8), -EINVAL);
	EXPECT_EQ(ds_dll_new(&l, env.m), -EINVAL); // persistent instance, volatile list
	EXPECT_NE(std::string(pm_errormsg()).find("volatile"), std::string::npos);
	// An area that was never formatted.
	EXPECT_EQ(ds_dll_pmem_open(&l, env.m, env.pool, env.mcas_off + env.mcas_size - 64 * 4),
		PM_E_CORRUPT);

	// An instance of another pool is refused: its targets must be in its pool.
	ListEnv other;
	ASSERT_EQ(other.Create("misuse-other-" + dlltest::VariantName(v), v,
		dlltest::SmallConfig(v.alg), 8), 0);
	EXPECT_EQ(ds_dll_pmem_create(&l, other.m, env.pool, env.ds_off, 8), -EINVAL);
	EXPECT_NE(std::string(pm_errormsg()).find("not in the list's pool"), std::string::npos);
	EXPECT_EQ(ds_dll_pmem_open(&l, other.m, env.pool, env.ds_off), -EINVAL);
	EXPECT_EQ(l, nullptr);
	EXPECT_EQ(OpenList(env), 0); // untouched by the refused calls
	EXPECT_EQ(ds_dll_close(&l), 0); // NULL list accepted
}

INSTANTIATE_TEST_SUITE_P(PersistentAlgorithms, DllPmemTest, testing::ValuesIn(dlltest::PmemVariants()),
	dlltest::VariantNamer());

// A volatile list refuses a persistent instance and vice versa.
TEST(DllApi, VolatileListNeedsVolatileInstance)
{
	ListEnv env;
	ASSERT_EQ(env.Create("api", { MCAS_ALG_AOPT, false }, dlltest::SmallConfig(MCAS_ALG_AOPT)),
		0);
	ListEnv penv;
	ASSERT_EQ(penv.Create("api-pmem", { MCAS_ALG_AOPT, true },
		dlltest::SmallConfig(MCAS_ALG_AOPT), 8), 0);
	ds_dll *l = nullptr;
	EXPECT_EQ(ds_dll_pmem_create(&l, env.m, penv.pool, penv.ds_off, 8), -EINVAL);
	EXPECT_EQ(ds_dll_new(&l, nullptr), -EINVAL);
	EXPECT_EQ(ds_dll_new(nullptr, env.m), -EINVAL);
	EXPECT_EQ(l, nullptr);
}

} // namespace
