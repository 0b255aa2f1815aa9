// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/set_test.cc -- single-threaded behaviour of the three lock-free
// sets (ds/hmlist.h, ds/skiplist.h, ds/nmbst.h) under every reclamation
// scheme: random operation sequences against std::set, invariants after
// every batch, exact retire and free counts (each removed node retired
// once, every node freed once), key-range edges, degenerate shapes, API
// misuse.
#include <cerrno>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ds/hmlist.h>
#include <ds/nmbst.h>
#include <ds/skiplist.h>
#include <reclaim/reclaim.h>

#include "ds/tests/set_test_util.h"

namespace {

using settest::Env;
using settest::Kind;
using settest::Param;
using settest::Registration;

class SetSeq : public ::testing::TestWithParam<Param> {};

#define SET_CHECK(env)                                                        \
	do {                                                                  \
		std::string why_;                                             \
		ASSERT_EQ((env).set->Check(&why_), 0) << why_;                \
	} while (0)

// Random inserts, removes and lookups on a small key range (so that every
// outcome is frequent), each result compared with std::set; the structure's
// check() and size after every batch; then every retire and free counted.
TEST_P(SetSeq, MatchesStdSet)
{
	const Param p = GetParam();
	Env env;
	ASSERT_EQ(env.Create(p), 0);
	uint64_t inserted = 0, removed = 0;
	{
		Registration reg(env.d);
		ASSERT_EQ(reg.rc(), 0);
		reclaim_thread *t = reg.get();
		std::set<uint64_t> model;
		std::mt19937_64 rng(1234 + static_cast<unsigned>(p.kind) * 7 + p.scheme);
		const uint64_t range = 300;
		for (unsigned batch = 0; batch < 40; batch++) {
			for (unsigned i = 0; i < 500; i++) {
				uint64_t k = rng() % range;
				unsigned op = rng() % 8;
				if (op < 3) {
					int r = env.set->Insert(t, k);
					bool fresh = model.insert(k).second;
					ASSERT_EQ(r, fresh ? 1 : 0) << "insert " << k;
					inserted += r == 1;
				} else if (op < 6) {
					int r = env.set->Remove(t, k);
					bool was = model.erase(k) == 1;
					ASSERT_EQ(r, was ? 1 : 0) << "remove " << k;
					removed += r == 1;
				} else {
					ASSERT_EQ(env.set->Contains(t, k), model.count(k) ? 1 : 0)
						<< "contains " << k;
				}
			}
			SET_CHECK(env);
			ASSERT_EQ(env.set->Size(), model.size());
		}
		std::vector<uint64_t> want(model.begin(), model.end());
		ASSERT_EQ(settest::Keys(*env.set, t, range), want);
		// Empty it: every remaining key is removed once.
		for (uint64_t k : want) {
			ASSERT_EQ(env.set->Remove(t, k), 1);
			removed++;
		}
		ASSERT_EQ(env.set->Size(), 0u);
		SET_CHECK(env);
		for (uint64_t k = 0; k < range; k++)
			ASSERT_EQ(env.set->Contains(t, k), 0);
	}
	const unsigned npk = settest::NodesPerKey(p.kind);
	// Each successful remove retired exactly its nodes, once.
	reclaim_stats st = env.Stats();
	EXPECT_EQ(st.retired, npk * removed);
	EXPECT_LE(st.freed, st.retired);
	// Every node ever linked reaches the free function exactly once: the
	// retired ones through the domain, the linked ones through delete
	// (none are left here).
	ASSERT_EQ(env.DeleteAll(), 0);
	EXPECT_EQ(env.frees.freed.load(), npk * inserted);
	EXPECT_EQ(inserted, removed);
}

// Nodes still linked at delete go to the free function too, and nothing
// is freed twice (ASan would see it).
TEST_P(SetSeq, DeleteFreesLinkedNodes)
{
	const Param p = GetParam();
	Env env;
	ASSERT_EQ(env.Create(p), 0);
	{
		Registration reg(env.d);
		ASSERT_EQ(reg.rc(), 0);
		for (uint64_t k = 0; k < 200; k++)
			ASSERT_EQ(env.set->Insert(reg.get(), k * 3), 1);
		for (uint64_t k = 0; k < 200; k += 2)
			ASSERT_EQ(env.set->Remove(reg.get(), k * 3), 1);
		ASSERT_EQ(env.set->Size(), 100u);
		SET_CHECK(env);
	}
	ASSERT_EQ(env.DeleteAll(), 0);
	EXPECT_EQ(env.frees.freed.load(), settest::NodesPerKey(p.kind) * 200u);
}

// The ends of the key range, and the first key above it.
TEST_P(SetSeq, KeyRangeEdges)
{
	const Param p = GetParam();
	Env env;
	ASSERT_EQ(env.Create(p), 0);
	Registration reg(env.d);
	ASSERT_EQ(reg.rc(), 0);
	reclaim_thread *t = reg.get();
	const uint64_t max = settest::KeyMax(p.kind);
	for (uint64_t k : { uint64_t{0}, max, max - 1, uint64_t{1} }) {
		ASSERT_EQ(env.set->Contains(t, k), 0);
		ASSERT_EQ(env.set->Insert(t, k), 1) << k;
		ASSERT_EQ(env.set->Insert(t, k), 0) << k;
		ASSERT_EQ(env.set->Contains(t, k), 1) << k;
	}
	SET_CHECK(env);
	for (uint64_t k = max + 1; k != 0; k++) {
		EXPECT_EQ(env.set->Insert(t, k), -EINVAL) << k;
		EXPECT_EQ(env.set->Remove(t, k), 0) << k;
		EXPECT_EQ(env.set->Contains(t, k), 0) << k;
	}
	ASSERT_EQ(env.set->Size(), 4u);
	for (uint64_t k : { max, uint64_t{0}, uint64_t{1}, max - 1 }) {
		ASSERT_EQ(env.set->Remove(t, k), 1) << k;
		ASSERT_EQ(env.set->Remove(t, k), 0) << k;
	}
	ASSERT_EQ(env.set->Size(), 0u);
	SET_CHECK(env);
}

// Increasing and decreasing key orders: the list's worst case, and a
// degenerate (path-shaped) BST, which check(), size() and delete() must
// walk without recursion.
TEST_P(SetSeq, SortedInsertions)
{
	const Param p = GetParam();
	Env env;
	ASSERT_EQ(env.Create(p), 0);
	Registration reg(env.d);
	ASSERT_EQ(reg.rc(), 0);
	// Quadratic for the list and the degenerate tree: keep those small.
	const uint64_t n = p.kind == Kind::kSkipList ? 20000 : p.kind == Kind::kNmBst ? 2000 : 1000;
	for (uint64_t k = 0; k < n; k++)
		ASSERT_EQ(env.set->Insert(reg.get(), 2 * n + k), 1);
	for (uint64_t k = n; k-- > 0;)
		ASSERT_EQ(env.set->Insert(reg.get(), k), 1);
	ASSERT_EQ(env.set->Size(), 2 * n);
	SET_CHECK(env);
	for (uint64_t k = 0; k < n; k += 3)
		ASSERT_EQ(env.set->Remove(reg.get(), 2 * n + k), 1);
	SET_CHECK(env);
	ASSERT_EQ(env.set->Contains(reg.get(), 2 * n + 1), 1);
	ASSERT_EQ(env.set->Contains(reg.get(), 2 * n + 3), 0);
}

INSTANTIATE_TEST_SUITE_P(All, SetSeq, ::testing::ValuesIn(settest::AllParams()),
	settest::ParamNamer());

// A domain of one scheme for the API tests.
struct Domain {
	reclaim_domain *d = nullptr;
	Domain(reclaim_scheme s, unsigned hazards)
	{
		reclaim_config c;
		reclaim_config_init(&c, s);
		c.hazards_per_thread = hazards;
		c.max_threads = 4;
		EXPECT_EQ(reclaim_domain_new(&d, &c), 0);
	}
	~Domain() { EXPECT_EQ(reclaim_domain_delete(&d), 0); }
};

// Under a hazard-pointer scheme each structure refuses a domain with fewer
// slots than it uses; under the others the slot count does not matter.
TEST(SetApi, HazardSlotRequirement)
{
	EXPECT_EQ(ds_skiplist_hazards(0), 2 * DS_SKIPLIST_DEFAULT_LEVELS);
	EXPECT_EQ(ds_skiplist_hazards(16), 32u);
	EXPECT_EQ(ds_skiplist_hazards(1), 2u);
	EXPECT_EQ(ds_skiplist_hazards(DS_SKIPLIST_MAX_LEVELS), 2 * DS_SKIPLIST_MAX_LEVELS);
	EXPECT_EQ(ds_skiplist_hazards(DS_SKIPLIST_MAX_LEVELS + 1), 0u);
	for (reclaim_scheme s : settest::AllSchemes()) {
		SCOPED_TRACE(reclaim_scheme_name(s));
		const bool hp = settest::UsesHazards(s);
		{
			Domain small(s, 1);
			ds_hmlist *l = nullptr;
			EXPECT_EQ(ds_hmlist_new(&l, small.d, nullptr, nullptr), hp ? -EINVAL : 0);
			EXPECT_EQ(ds_hmlist_delete(&l), 0);
			ds_nmbst *b = nullptr;
			EXPECT_EQ(ds_nmbst_new(&b, small.d, nullptr, nullptr), hp ? -EINVAL : 0);
			EXPECT_EQ(ds_nmbst_delete(&b), 0);
			ds_skiplist *sl = nullptr;
			EXPECT_EQ(ds_skiplist_new(&sl, small.d, 4, nullptr, nullptr), hp ? -EINVAL : 0);
			EXPECT_EQ(ds_skiplist_delete(&sl), 0);
		}
		{
			Domain exact(s, 8);
			ds_hmlist *l = nullptr;
			EXPECT_EQ(ds_hmlist_new(&l, exact.d, nullptr, nullptr), 0);
			EXPECT_EQ(ds_hmlist_delete(&l), 0);
			ds_nmbst *b = nullptr;
			EXPECT_EQ(ds_nmbst_new(&b, exact.d, nullptr, nullptr), 0);
			EXPECT_EQ(ds_nmbst_delete(&b), 0);
			ds_skiplist *sl = nullptr;
			EXPECT_EQ(ds_skiplist_new(&sl, exact.d, 4, nullptr, nullptr), 0);
			EXPECT_EQ(ds_skiplist_levels(sl), 4u);
			EXPECT_EQ(ds_skiplist_delete(&sl), 0);
			EXPECT_EQ(ds_skiplist_new(&sl, exact.d, 5, nullptr, nullptr), hp ? -EINVAL : 0);
			EXPECT_EQ(ds_skiplist_delete(&sl), 0);
		}
	}
}

TEST(SetApi, BadArguments)
{
	Domain dom(RECLAIM_HP, 2 * DS_SKIPLIST_MAX_LEVELS);
	ds_hmlist *l = nullptr;
	ds_skiplist *s = nullptr;
	ds_nmbst *b = nullptr;
	EXPECT_EQ(ds_hmlist_new(&l, nullptr, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(ds_hmlist_new(nullptr, dom.d, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(ds_nmbst_new(&b, nullptr, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(ds_nmbst_new(nullptr, dom.d, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(ds_skiplist_new(&s, nullptr, 0, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(ds_skiplist_new(nullptr, dom.d, 0, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(ds_skiplist_new(&s, dom.d, DS_SKIPLIST_MAX_LEVELS + 1, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(s, nullptr);
	EXPECT_EQ(ds_hmlist_delete(nullptr), 0);
	EXPECT_EQ(ds_skiplist_delete(nullptr), 0);
	EXPECT_EQ(ds_nmbst_delete(nullptr), 0);
	EXPECT_EQ(ds_hmlist_check(nullptr, nullptr, 0), -EINVAL);
	EXPECT_EQ(ds_skiplist_check(nullptr, nullptr, 0), -EINVAL);
	EXPECT_EQ(ds_nmbst_check(nullptr, nullptr, 0), -EINVAL);
	EXPECT_EQ(ds_skiplist_levels(nullptr), 0u);

	ASSERT_EQ(ds_hmlist_new(&l, dom.d, nullptr, nullptr), 0);
	ASSERT_EQ(ds_skiplist_new(&s, dom.d, 0, nullptr, nullptr), 0);
	ASSERT_EQ(ds_nmbst_new(&b, dom.d, nullptr, nullptr), 0);
	EXPECT_EQ(ds_skiplist_levels(s), DS_SKIPLIST_DEFAULT_LEVELS);
	{
		Registration reg(dom.d);
		ASSERT_EQ(reg.rc(), 0);
		reclaim_thread *t = reg.get();
		EXPECT_EQ(ds_hmlist_insert(nullptr, t, 1), -EINVAL);
		EXPECT_EQ(ds_hmlist_insert(l, nullptr, 1), -EINVAL);
		EXPECT_EQ(ds_hmlist_remove(l, nullptr, 1), -EINVAL);
		EXPECT_EQ(ds_hmlist_contains(l, nullptr, 1), -EINVAL);
		EXPECT_EQ(ds_skiplist_insert(nullptr, t, 1), -EINVAL);
		EXPECT_EQ(ds_skiplist_remove(s, nullptr, 1), -EINVAL);
		EXPECT_EQ(ds_skiplist_contains(s, nullptr, 1), -EINVAL);
		EXPECT_EQ(ds_nmbst_insert(nullptr, t, 1), -EINVAL);
		EXPECT_EQ(ds_nmbst_remove(b, nullptr, 1), -EINVAL);
		EXPECT_EQ(ds_nmbst_contains(b, nullptr, 1), -EINVAL);
		EXPECT_EQ(ds_hmlist_insert(l, t, UINT64_MAX), -EINVAL);
		EXPECT_EQ(ds_skiplist_insert(s, t, UINT64_MAX), -EINVAL);
		EXPECT_EQ(ds_nmbst_insert(b, t, DS_NMBST_KEY_MAX + 1), -EINVAL);
		EXPECT_EQ(ds_hmlist_size(l), 0u);
		EXPECT_EQ(ds_skiplist_size(s), 0u);
		EXPECT_EQ(ds_nmbst_size(b), 0u);
	}
	char buf[8] = "junk";
	EXPECT_EQ(ds_hmlist_check(l, buf, sizeof(buf)), 0);
	EXPECT_STREQ(buf, "");
	EXPECT_EQ(ds_skiplist_check(s, buf, sizeof(buf)), 0);
	EXPECT_EQ(ds_nmbst_check(b, buf, sizeof(buf)), 0);
	EXPECT_EQ(ds_hmlist_delete(&l), 0);
	EXPECT_EQ(ds_skiplist_delete(&s), 0);
	EXPECT_EQ(ds_nmbst_delete(&b), 0);
}

// Skip lists of 1 level (a plain Harris-Michael list) and of the most
// levels: the same semantics, every level consistent.
TEST(SkipListLevels, OneAndMaxLevels)
{
	for (unsigned levels : { 1u, 2u, DS_SKIPLIST_MAX_LEVELS }) {
		for (reclaim_scheme sch : { RECLAIM_HP, RECLAIM_QSBR }) {
			SCOPED_TRACE(std::to_string(levels) + " levels, " + reclaim_scheme_name(sch));
			Env env;
			ASSERT_EQ(env.Create({ Kind::kSkipList, sch }, 16, levels), 0);
			uint64_t inserted = 0;
			{
				Registration reg(env.d);
				ASSERT_EQ(reg.rc(), 0);
				std::set<uint64_t> model;
				std::mt19937_64 rng(levels);
				for (unsigned i = 0; i < 6000; i++) {
					uint64_t k = rng() % 500;
					if (rng() % 2) {
						int r = env.set->Insert(reg.get(), k);
						ASSERT_EQ(r, model.insert(k).second ? 1 : 0);
						inserted += r == 1;
					} else {
						ASSERT_EQ(env.set->Remove(reg.get(), k),
							model.erase(k) ? 1 : 0);
					}
				}
				SET_CHECK(env);
				ASSERT_EQ(env.set->Size(), model.size());
			}
			ASSERT_EQ(env.DeleteAll(), 0);
			EXPECT_EQ(env.frees.freed.load(), inserted);
		}
	}
}

}  // namespace
