// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/pmwcas_test.cc -- the PMwCAS baseline (Wang et al., ICDE'18):
// exact costs (5k+1 CAS and 2k+1 fences per uncontended k-word MCAS, one
// load per clean read), dirty reads, recycling and what recovery does with
// every kind of reference. Crash simulation, linearizability and stress run
// for every algorithm in mcas_crash_test, mcas_lin_test, mcas_stress_test.
#include <array>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <mcas/mcas.h>
#include <pm/cost.h>
#include <pm/persist.h>
#include <pm/pool.h>

#include "mcas/tests/mcas_test_util.h"

namespace {

// Target words used, of the fixture's mcastest::kWords.
constexpr unsigned kTargets = 8;

mcas_config Config(unsigned threads, unsigned descs, unsigned batch)
{
	mcas_config c = mcastest::TestConfig(MCAS_ALG_PMWCAS, threads, descs, 0);
	c.reclaim_batch = batch;
	return c;
}

// ---- semantics and exact costs ----

TEST(Pmwcas, PersistentOnly)
{
	mcas_config c = Config(4, 32, 0);
	mcas *m = nullptr;
	EXPECT_EQ(mcas_new(&m, &c), -EINVAL);
	mcastest::PmemInstance p;
	ASSERT_EQ(p.Create("pmwcas-kind.pool", c), 0);
	EXPECT_TRUE(mcas_is_persistent(p.m));
	EXPECT_EQ(mcas_algorithm_of(p.m), MCAS_ALG_PMWCAS);
	EXPECT_STREQ(mcas_algorithm_name(MCAS_ALG_PMWCAS), "pmwcas");
	EXPECT_EQ(mcas_value_mask(p.m), 7u);
	mcas_thread *t;
	ASSERT_EQ(mcas_thread_register(p.m, &t), 0);
	mcas_desc *d;
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	EXPECT_EQ(mcas_desc_add(d, &p.words[0], 0, 4), -EINVAL); // a reserved bit
	EXPECT_EQ(mcas_desc_add(d, &p.words[0], 1, 8), -EINVAL);
	mcas_desc_abandon(d);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

TEST(Pmwcas, SucceedsAndFailsAtomically)
{
	mcastest::PmemInstance p;
	mcas_thread *t;
	ASSERT_EQ(p.CreateAndRegister("pmwcas-basic.pool", Config(4, 32, 0), &t), 0);
	auto run = [&](std::vector<std::array<uint64_t, 3>> trs) {
		mcas_desc *d;
		EXPECT_EQ(mcas_desc_begin(t, &d), 0);
		for (auto &tr : trs)
			EXPECT_EQ(mcas_desc_add(d, &p.words[tr[0]], tr[1], tr[2]), 0);
		return mcas_desc_execute(d);
	};
	// Added out of address order on purpose: execution sorts.
	EXPECT_EQ(run({{3, 0, 24}, {1, 0, 8}, {2, 0, 16}}), 1);
	EXPECT_EQ(run({{1, 8, 80}, {2, 0, 160}, {3, 24, 240}}), 0); // word 2 differs
	for (unsigned i = 1; i <= 3; i++)
		EXPECT_EQ(mcas_read(t, &p.words[i]), 8u * i) << "word " << i;
	EXPECT_EQ(run({{1, 8, 8}, {2, 16, 32}}), 1); // an unchanged word is fine
	EXPECT_EQ(mcas_read(t, &p.words[2]), 32u);
	// Nothing is left in the words: each holds its plain value.
	EXPECT_EQ(p.words[1], 8u);
	EXPECT_EQ(p.words[2], 32u);
	EXPECT_EQ(p.words[3], 24u);
	mcas_stats st;
	mcas_thread_stats(t, &st);
	EXPECT_EQ(st.mcas, 3u);
	EXPECT_EQ(st.succeeded, 2u);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

// The paper's cost: phase 1 (RDCSS install and complete, then persist and
// clear the dirty bit: 3 CAS, 1 fence per word), the status (1 CAS, 1
// fence), phase 2 (final value dirty, persist, clear: 2 CAS, 1 fence per
// word).
TEST(Pmwcas, UncontendedCostIs5kPlus1CasAnd2kPlus1Fences)
{
	mcastest::PmemInstance p;
	mcas_thread *t;
	ASSERT_EQ(p.CreateAndRegister("pmwcas-cost.pool", Config(4, 32, 0), &t), 0);
	for (unsigned k = 1; k <= 4; k++) {
		for (int round = 0; round < 3; round++) {
			mcas_desc *d;
			ASSERT_EQ(mcas_desc_begin(t, &d), 0);
			for (unsigned i = 0; i < k; i++) {
				uint64_t v = mcas_read(t, &p.words[i]);
				ASSERT_EQ(mcas_desc_add(d, &p.words[i], v, v + 8), 0);
			}
			pm_cost before;
			pm_cost_read_thread(&before);
			ASSERT_EQ(mcas_desc_execute(d), 1);
			EXPECT_EQ(mcastest::CostSince(before, PM_COST_CAS), 5u * k + 1) << "k=" << k;
			EXPECT_EQ(mcastest::CostSince(before, PM_COST_FENCE), 2u * k + 1) << "k=" << k;
			// The record (head line and word lines), each target twice,
			// the status once.
			uint64_t record_lines = 1 + (k * 32 + 63) / 64;
			EXPECT_EQ(mcastest::CostSince(before, PM_COST_FLUSH), record_lines + 2 * k + 1)
				<< "k=" << k;
		}
	}
	// A failure on the first word: only the status is decided and persisted.
	mcas_desc *d;
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	ASSERT_EQ(mcas_desc_add(d, &p.words[0], 8, 16), 0); // word 0 holds 96
	ASSERT_EQ(mcas_desc_add(d, &p.words[1], 72, 80), 0);
	pm_cost before;
	pm_cost_read_thread(&before);
	ASSERT_EQ(mcas_desc_execute(d), 0);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_CAS), 1u);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_FENCE), 1u);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

TEST(Pmwcas, ReadOfCleanWordIsOneLoadAndDirtyWordIsPersisted)
{
	mcastest::PmemInstance p;
	mcas_thread *t;
	ASSERT_EQ(p.CreateAndRegister("pmwcas-read.pool", Config(4, 32, 0), &t), 0);
	p.words[0] = 40;
	pm_cost before;
	pm_cost_read_thread(&before);
	EXPECT_EQ(mcas_read(t, &p.words[0]), 40u);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_CAS), 0u);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_FENCE), 0u);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_FLUSH), 0u);
	// White box: bit 0 is PMwCAS's dirty flag. A dirty value is made
	// durable (flush, fence) and cleaned (CAS) before it is returned.
	p.words[1] = 48 | 1;
	pm_cost_read_thread(&before);
	EXPECT_EQ(mcas_read(t, &p.words[1]), 48u);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_FENCE), 1u);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_CAS), 1u);
	EXPECT_EQ(p.words[1], 48u);
	// An MCAS expecting the clean value sees through a dirty one.
	p.words[2] = 56 | 1;
	mcas_desc *d;
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	ASSERT_EQ(mcas_desc_add(d, &p.words[2], 56, 64), 0);
	EXPECT_EQ(mcas_desc_execute(d), 1);
	EXPECT_EQ(p.words[2], 64u);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

// Records are recycled (two grace periods: detached, then freed) and the
// values survive a clean close and reopen with nothing left to recover.
TEST(Pmwcas, RecyclesRecordsAndSurvivesReopen)
{
	mcastest::PmemInstance p;
	mcas_thread *t;
	ASSERT_EQ(p.CreateAndRegister("pmwcas-reopen.pool", Config(2, 8, 1), &t), 0);
	for (unsigned n = 0; n < 200; n++) {
		mcas_desc *d;
		ASSERT_EQ(mcas_desc_begin(t, &d), 0);
		for (unsigned i = 0; i < 3; i++) {
			unsigned w = (n + i) % kTargets;
			uint64_t v = mcas_read(t, &p.words[w]);
			ASSERT_EQ(mcas_desc_add(d, &p.words[w], v, v + 8), 0);
		}
		ASSERT_EQ(mcas_desc_execute(d), 1);
	}
	mcas_stats st;
	mcas_thread_stats(t, &st);
	EXPECT_GT(st.grace_periods, 10u);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
	ASSERT_EQ(p.Reopen(), 0);
	for (unsigned i = 0; i < kTargets; i++)
		EXPECT_EQ(p.words[i], 8u * 200 * 3 / kTargets) << "word " << i;
}

// White box: a crash image written by hand, one word per kind of content
// recovery must map. Layout (mcas_internal.h): the area's 64-byte header,
// then 576-byte records {status, n, slot, spare[6], w[16]}, each word entry
// {addr, old, new_, parent} 32 bytes at record + 64; marks: 1 dirty, 2
// record reference, 4 RDCSS (entry) reference, whose high bits carry a tag.
TEST(Pmwcas, RecoveryMapsEveryKindOfReference)
{
	mcastest::PmemInstance p;
	ASSERT_EQ(p.Create("pmwcas-recover.pool", Config(2, 8, 0)), 0);
	ASSERT_EQ(mcas_close(&p.m), 0); // "crash": write the image, then recover
	char *area = reinterpret_cast<char *>(p.words + mcastest::kWords);
	auto rec = [&](unsigned r) { return reinterpret_cast<uint64_t *>(area + 64 + r * 576); };
	auto entry = [&](unsigned r, unsigned i) { return rec(r) + 8 + 4 * i; };
	auto off = [&](const void *x) { return pm_pool_off(p.pool, x); };
	auto set_entry = [&](unsigned r, unsigned i, unsigned word, uint64_t o, uint64_t n) {
		uint64_t *e = entry(r, i);
		e[0] = off(&p.words[word]);
		e[1] = o;
		e[2] = n;
		e[3] = off(rec(r));
	};
	const uint64_t tag = (uint64_t)1 << 60;
	// Record 0 decided SUCCEEDED; its status reached memory with the dirty
	// flag still set (it is written only after every reference was durable).
	rec(0)[0] = 1 | 4;
	rec(0)[1] = 4; // n = 4, slot 0
	for (unsigned i = 0; i < 4; i++)
		set_entry(0, i, i, 8 * (i + 1), 80 * (i + 1));
	p.words[0] = off(rec(0)) | 2;                // record reference: new
	p.words[1] = off(rec(0)) | 2 | 1;            // dirty record reference: new
	p.words[2] = off(entry(0, 2)) | 4 | tag;     // a late RDCSS install: old
	p.words[3] = 320 | 1;                        // phase 2 done, still dirty
	// Record 1 still ACTIVE: roll back.
	rec(1)[0] = 0;
	rec(1)[1] = 2;
	set_entry(1, 0, 4, 40, 400);
	set_entry(1, 1, 5, 48, 480);
	p.words[4] = off(rec(1)) | 2 | 1;
	p.words[5] = off(entry(1, 1)) | 4;
	// Record 2 is garbage no word refers to: it must not hurt, not even
	// with a "target" inside the area: record 3's status, 1 (SUCCEEDED),
	// looks like a dirty 0.
	rec(2)[0] = 0x123456789;
	rec(2)[1] = 1000;
	set_entry(2, 0, 6, 56, 560);
	set_entry(2, 1, 0, 0, 0);
	entry(2, 1)[0] = off(rec(3));
	rec(3)[0] = 1;
	p.words[6] = 56;
	p.words[7] = 64;
	const uint64_t expect[kTargets] = {80, 160, 24, 320, 40, 48, 56, 64};
	for (int pass = 0; pass < 2; pass++) { // idempotent
		ASSERT_EQ(mcas_pmem_open(&p.m, p.pool, p.area_off, nullptr), 0);
		for (unsigned i = 0; i < kTargets; i++)
			EXPECT_EQ(p.words[i], expect[i]) << "word " << i << ", pass " << pass;
		EXPECT_EQ(rec(3)[0], 1u);
		ASSERT_EQ(mcas_close(&p.m), 0);
	}
}

} // namespace
