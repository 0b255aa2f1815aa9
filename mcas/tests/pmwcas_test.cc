// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/pmwcas_test.cc -- the PMwCAS baseline (Wang et al., ICDE'18):
// exact costs (5k+1 CAS and 2k+1 fences per uncontended k-word MCAS, one
// load per clean read), every crash point of single-threaded k = 1..4
// sequences and sampled points of two threads under the crash simulator,
// and concurrent increments (tag "concurrency": run under TSan).
#include <unistd.h>

#include <array>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <mcas/mcas.h>
#include <pm/cost.h>
#include <pm/crashsim.h>
#include <pm/persist.h>
#include <pm/pool.h>

#include "pm/tests/test_util.h"

namespace {

// Target words, each alone on its cache line so that a flush of one never
// persists another by accident (the durability argument must not rely on
// neighbours being flushed).
constexpr unsigned kTargets = 8;
constexpr size_t kTargetBytes = kTargets * PM_CACHELINE;

mcas_config Config(unsigned threads, unsigned descs, unsigned batch)
{
	mcas_config c;
	mcas_config_init(&c);
	c.algorithm = MCAS_ALG_PMWCAS;
	c.max_threads = threads;
	c.descs_per_thread = descs;
	c.reclaim_batch = batch;
	return c;
}

// A pool whose root holds the targets followed by the MCAS area, so one
// range covers every persistent byte the algorithm touches.
struct Instance {
	std::string path;
	pm_pool *pool = nullptr;
	mcas *m = nullptr;
	char *root = nullptr;
	uint64_t area_off = 0;
	size_t area_size = 0;

	int Create(const std::string &name, const mcas_config &c,
		pm_durability durability = PM_DURABILITY_NONE)
	{
		path = pmtest::TempPath(name);
		area_size = mcas_pmem_area_size(&c);
		if (area_size == 0)
			return -EINVAL;
		pm_pool_config pc = pmtest::PoolConfig(path, "pmwcas-test",
			kTargetBytes + area_size);
		pc.durability = durability;
		int ret = pm_pool_create(&pool, &pc);
		if (ret != 0)
			return ret;
		root = static_cast<char *>(pm_pool_root(pool));
		area_off = pm_pool_off(pool, root + kTargetBytes); // root is 64-byte aligned
		return mcas_pmem_create(&m, pool, area_off, &c);
	}

	uint64_t *Word(unsigned i) const
	{
		return reinterpret_cast<uint64_t *>(root + i * PM_CACHELINE);
	}

	~Instance()
	{
		mcas_destroy(&m);
		pm_pool_close(&pool);
		if (!path.empty())
			unlink(path.c_str());
	}
};

uint64_t CostSince(const pm_cost &before, pm_cost_counter c)
{
	pm_cost now, d;
	pm_cost_read_thread(&now);
	pm_cost_diff(&now, &before, &d);
	return d.n[c];
}

// ---- semantics and exact costs ----

TEST(Pmwcas, PersistentOnly)
{
	mcas_config c = Config(4, 32, 0);
	mcas *m = nullptr;
	EXPECT_EQ(mcas_create(&m, &c), -EINVAL);
	Instance p;
	ASSERT_EQ(p.Create("pmwcas-kind.pool", c), 0);
	EXPECT_TRUE(mcas_is_persistent(p.m));
	EXPECT_EQ(mcas_algorithm_of(p.m), MCAS_ALG_PMWCAS);
	EXPECT_STREQ(mcas_algorithm_name(MCAS_ALG_PMWCAS), "pmwcas");
	EXPECT_EQ(mcas_value_mask(p.m), 7u);
	mcas_thread *t;
	ASSERT_EQ(mcas_thread_register(p.m, &t), 0);
	mcas_desc *d;
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	EXPECT_EQ(mcas_desc_add(d, p.Word(0), 0, 4), -EINVAL); // a reserved bit
	EXPECT_EQ(mcas_desc_add(d, p.Word(0), 1, 8), -EINVAL);
	mcas_desc_abandon(d);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

TEST(Pmwcas, SucceedsAndFailsAtomically)
{
	Instance p;
	ASSERT_EQ(p.Create("pmwcas-basic.pool", Config(4, 32, 0)), 0);
	mcas_thread *t;
	ASSERT_EQ(mcas_thread_register(p.m, &t), 0);
	auto run = [&](std::vector<std::array<uint64_t, 3>> trs) {
		mcas_desc *d;
		EXPECT_EQ(mcas_desc_begin(t, &d), 0);
		for (auto &tr : trs)
			EXPECT_EQ(mcas_desc_add(d, p.Word(tr[0]), tr[1], tr[2]), 0);
		return mcas_desc_execute(d);
	};
	// Added out of address order on purpose: execution sorts.
	EXPECT_EQ(run({{3, 0, 24}, {1, 0, 8}, {2, 0, 16}}), 1);
	EXPECT_EQ(run({{1, 8, 80}, {2, 0, 160}, {3, 24, 240}}), 0); // word 2 differs
	for (unsigned i = 1; i <= 3; i++)
		EXPECT_EQ(mcas_read(t, p.Word(i)), 8u * i) << "word " << i;
	EXPECT_EQ(run({{1, 8, 8}, {2, 16, 32}}), 1); // an unchanged word is fine
	EXPECT_EQ(mcas_read(t, p.Word(2)), 32u);
	// Nothing is left in the words: each holds its plain value.
	EXPECT_EQ(*p.Word(1), 8u);
	EXPECT_EQ(*p.Word(2), 32u);
	EXPECT_EQ(*p.Word(3), 24u);
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
	Instance p;
	ASSERT_EQ(p.Create("pmwcas-cost.pool", Config(4, 32, 0)), 0);
	mcas_thread *t;
	ASSERT_EQ(mcas_thread_register(p.m, &t), 0);
	for (unsigned k = 1; k <= 4; k++) {
		for (int round = 0; round < 3; round++) {
			mcas_desc *d;
			ASSERT_EQ(mcas_desc_begin(t, &d), 0);
			for (unsigned i = 0; i < k; i++) {
				uint64_t v = mcas_read(t, p.Word(i));
				ASSERT_EQ(mcas_desc_add(d, p.Word(i), v, v + 8), 0);
			}
			pm_cost before;
			pm_cost_read_thread(&before);
			ASSERT_EQ(mcas_desc_execute(d), 1);
			EXPECT_EQ(CostSince(before, PM_COST_CAS), 5u * k + 1) << "k=" << k;
			EXPECT_EQ(CostSince(before, PM_COST_FENCE), 2u * k + 1) << "k=" << k;
			// The record (head line and word lines), each target twice,
			// the status once.
			uint64_t record_lines = 1 + (k * 32 + 63) / 64;
			EXPECT_EQ(CostSince(before, PM_COST_FLUSH), record_lines + 2 * k + 1)
				<< "k=" << k;
		}
	}
	// A failure on the first word: only the status is decided and persisted.
	mcas_desc *d;
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	ASSERT_EQ(mcas_desc_add(d, p.Word(0), 8, 16), 0); // word 0 holds 96
	ASSERT_EQ(mcas_desc_add(d, p.Word(1), 72, 80), 0);
	pm_cost before;
	pm_cost_read_thread(&before);
	ASSERT_EQ(mcas_desc_execute(d), 0);
	EXPECT_EQ(CostSince(before, PM_COST_CAS), 1u);
	EXPECT_EQ(CostSince(before, PM_COST_FENCE), 1u);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

TEST(Pmwcas, ReadOfCleanWordIsOneLoadAndDirtyWordIsPersisted)
{
	Instance p;
	ASSERT_EQ(p.Create("pmwcas-read.pool", Config(4, 32, 0)), 0);
	mcas_thread *t;
	ASSERT_EQ(mcas_thread_register(p.m, &t), 0);
	*p.Word(0) = 40;
	pm_cost before;
	pm_cost_read_thread(&before);
	EXPECT_EQ(mcas_read(t, p.Word(0)), 40u);
	EXPECT_EQ(CostSince(before, PM_COST_CAS), 0u);
	EXPECT_EQ(CostSince(before, PM_COST_FENCE), 0u);
	EXPECT_EQ(CostSince(before, PM_COST_FLUSH), 0u);
	// White box: bit 0 is PMwCAS's dirty flag. A dirty value is made
	// durable (flush, fence) and cleaned (CAS) before it is returned.
	*p.Word(1) = 48 | 1;
	pm_cost_read_thread(&before);
	EXPECT_EQ(mcas_read(t, p.Word(1)), 48u);
	EXPECT_EQ(CostSince(before, PM_COST_FENCE), 1u);
	EXPECT_EQ(CostSince(before, PM_COST_CAS), 1u);
	EXPECT_EQ(*p.Word(1), 48u);
	// An MCAS expecting the clean value sees through a dirty one.
	*p.Word(2) = 56 | 1;
	mcas_desc *d;
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	ASSERT_EQ(mcas_desc_add(d, p.Word(2), 56, 64), 0);
	EXPECT_EQ(mcas_desc_execute(d), 1);
	EXPECT_EQ(*p.Word(2), 64u);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

// Records are recycled (two grace periods: detached, then freed) and the
// values survive a clean close and reopen with nothing left to recover.
TEST(Pmwcas, RecyclesRecordsAndSurvivesReopen)
{
	Instance p;
	ASSERT_EQ(p.Create("pmwcas-reopen.pool", Config(2, 8, 1)), 0);
	mcas_thread *t;
	ASSERT_EQ(mcas_thread_register(p.m, &t), 0);
	for (unsigned n = 0; n < 200; n++) {
		mcas_desc *d;
		ASSERT_EQ(mcas_desc_begin(t, &d), 0);
		for (unsigned i = 0; i < 3; i++) {
			unsigned w = (n + i) % kTargets;
			uint64_t v = mcas_read(t, p.Word(w));
			ASSERT_EQ(mcas_desc_add(d, p.Word(w), v, v + 8), 0);
		}
		ASSERT_EQ(mcas_desc_execute(d), 1);
	}
	mcas_stats st;
	mcas_thread_stats(t, &st);
	EXPECT_GT(st.grace_periods, 10u);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
	ASSERT_EQ(mcas_destroy(&p.m), 0);
	ASSERT_EQ(pm_pool_close(&p.pool), 0);
	pm_pool_config pc = pmtest::PoolConfig(p.path, "pmwcas-test", kTargetBytes + p.area_size);
	pc.durability = PM_DURABILITY_NONE;
	ASSERT_EQ(pm_pool_open(&p.pool, &pc), 0);
	p.root = static_cast<char *>(pm_pool_root(p.pool));
	ASSERT_EQ(mcas_pmem_open(&p.m, p.pool, p.area_off, nullptr), 0);
	for (unsigned i = 0; i < kTargets; i++)
		EXPECT_EQ(*p.Word(i), 8u * 200 * 3 / kTargets) << "word " << i;
}

// White box: a crash image written by hand, one word per kind of content
// recovery must map. Layout (mcas_internal.h): the area's 64-byte header,
// then 576-byte records {status, n, slot, spare[6], w[16]}, each word entry
// {addr, old, new_, parent} 32 bytes at record + 64; marks: 1 dirty, 2
// record reference, 4 RDCSS (entry) reference, whose high bits carry a tag.
TEST(Pmwcas, RecoveryMapsEveryKindOfReference)
{
	Instance p;
	ASSERT_EQ(p.Create("pmwcas-recover.pool", Config(2, 8, 0)), 0);
	ASSERT_EQ(mcas_destroy(&p.m), 0); // "crash": write the image, then recover
	char *area = p.root + kTargetBytes;
	auto rec = [&](unsigned r) { return reinterpret_cast<uint64_t *>(area + 64 + r * 576); };
	auto entry = [&](unsigned r, unsigned i) { return rec(r) + 8 + 4 * i; };
	auto off = [&](const void *x) { return pm_pool_off(p.pool, x); };
	auto set_entry = [&](unsigned r, unsigned i, unsigned word, uint64_t o, uint64_t n) {
		uint64_t *e = entry(r, i);
		e[0] = off(p.Word(word));
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
	*p.Word(0) = off(rec(0)) | 2;                // record reference: new
	*p.Word(1) = off(rec(0)) | 2 | 1;            // dirty record reference: new
	*p.Word(2) = off(entry(0, 2)) | 4 | tag;     // a late RDCSS install: old
	*p.Word(3) = 320 | 1;                        // phase 2 done, still dirty
	// Record 1 still ACTIVE: roll back.
	rec(1)[0] = 0;
	rec(1)[1] = 2;
	set_entry(1, 0, 4, 40, 400);
	set_entry(1, 1, 5, 48, 480);
	*p.Word(4) = off(rec(1)) | 2 | 1;
	*p.Word(5) = off(entry(1, 1)) | 4;
	// Record 2 is garbage no word refers to: it must not hurt, not even
	// with a "target" inside the area: record 3's status, 1 (SUCCEEDED),
	// looks like a dirty 0.
	rec(2)[0] = 0x123456789;
	rec(2)[1] = 1000;
	set_entry(2, 0, 6, 56, 560);
	set_entry(2, 1, 0, 0, 0);
	entry(2, 1)[0] = off(rec(3));
	rec(3)[0] = 1;
	*p.Word(6) = 56;
	*p.Word(7) = 64;
	const uint64_t expect[kTargets] = {80, 160, 24, 320, 40, 48, 56, 64};
	for (int pass = 0; pass < 2; pass++) { // idempotent
		ASSERT_EQ(mcas_pmem_open(&p.m, p.pool, p.area_off, nullptr), 0);
		for (unsigned i = 0; i < kTargets; i++)
			EXPECT_EQ(*p.Word(i), expect[i]) << "word " << i << ", pass " << pass;
		EXPECT_EQ(rec(3)[0], 1u);
		ASSERT_EQ(mcas_destroy(&p.m), 0);
	}
}

// ---- crash simulation ----

struct Op {
	std::vector<unsigned> idx;
	std::vector<uint64_t> old, new_;
};

// What the run and the checks share. A check runs in a process forked at
// the crash point, so it sees these fields as they were then.
struct World {
	Instance p;
	// Single-threaded: the operations and the model after each prefix.
	std::vector<Op> ops;
	std::vector<std::array<uint64_t, kTargets>> states;
	std::atomic<unsigned> done{0};
	// Multi-threaded: per thread, the word sets it adds 8 to, and how many
	// of its increments returned.
	unsigned threads = 0;
	std::vector<std::vector<std::vector<unsigned>>> incs;
	std::atomic<unsigned> tdone[2];
};

// Recovery as a restarted process would run it, on the crash image, twice
// (idempotence), then the recovered instance must read what it holds.
std::string Recover(World *w, std::array<uint64_t, kTargets> *out)
{
	for (int pass = 0; pass < 2; pass++) {
		mcas *m = nullptr;
		int ret = mcas_pmem_open(&m, w->p.pool, w->p.area_off, nullptr);
		if (ret != 0)
			return "mcas_pmem_open: " + std::to_string(ret);
		std::array<uint64_t, kTargets> v;
		for (unsigned i = 0; i < kTargets; i++) {
			v[i] = *w->p.Word(i);
			if (v[i] & mcas_value_mask(m))
				return "word " + std::to_string(i) + " holds marked " +
					std::to_string(v[i]) + " after recovery";
		}
		if (pass == 1 && v != *out)
			return "a second recovery changed the words";
		*out = v;
		mcas_thread *t;
		if (mcas_thread_register(m, &t) != 0)
			return "register after recovery";
		for (unsigned i = 0; i < kTargets; i++)
			if (mcas_read(t, w->p.Word(i)) != v[i])
				return "mcas_read disagrees with word " + std::to_string(i);
		mcas_thread_unregister(&t);
		mcas_destroy(&m);
	}
	return "";
}

std::string WordsText(const std::array<uint64_t, kTargets> &v)
{
	std::string s;
	for (uint64_t x : v)
		s += (s.empty() ? "" : ",") + std::to_string(x);
	return s;
}

std::string CheckSingle(World *w)
{
	std::array<uint64_t, kTargets> v{};
	std::string err = Recover(w, &v);
	if (!err.empty())
		return err;
	unsigned d = w->done.load();
	// The in-flight operation (number d) may or may not have taken effect.
	for (unsigned s = d; s <= d + 1 && s < w->states.size(); s++)
		if (v == w->states[s])
			return "";
	return "after " + std::to_string(d) + " completed operations the words are " +
		WordsText(v) + ": neither that prefix (" + WordsText(w->states[d]) +
		") nor one more operation";
}

std::string CheckMulti(World *w)
{
	std::array<uint64_t, kTargets> v{};
	std::string err = Recover(w, &v);
	if (!err.empty())
		return err;
	// Each thread's in-flight increment may or may not have taken effect.
	for (unsigned mask = 0; mask < (1u << w->threads); mask++) {
		std::array<uint64_t, kTargets> expect{};
		bool possible = true;
		for (unsigned t = 0; t < w->threads; t++) {
			unsigned n = w->tdone[t].load() + ((mask >> t) & 1);
			if (n > w->incs[t].size()) {
				possible = false;
				break;
			}
			for (unsigned o = 0; o < n; o++)
				for (unsigned i : w->incs[t][o])
					expect[i] += 8;
		}
		if (possible && expect == v)
			return "";
	}
	return "the words " + WordsText(v) + " are not the completed increments plus "
		"a subset of the in-flight ones";
}

int Check(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	std::string err = w->threads ? CheckMulti(w) : CheckSingle(w);
	std::snprintf(msg, len, "%s", err.c_str());
	return err.empty() ? 0 : 1;
}

int RunSingle(void *arg)
{
	World *w = static_cast<World *>(arg);
	mcas_thread *t;
	if (mcas_thread_register(w->p.m, &t) != 0)
		return 1;
	for (const Op &op : w->ops) {
		mcas_desc *d;
		if (mcas_desc_begin(t, &d) != 0)
			return 2;
		for (size_t i = 0; i < op.idx.size(); i++)
			if (mcas_desc_add(d, w->p.Word(op.idx[i]), op.old[i], op.new_[i]) != 0)
				return 3;
		mcas_desc_execute(d);
		w->done.fetch_add(1);
	}
	// Unregistering drains the reclamation pipeline: detaching and
	// recycling are crashed too.
	return mcas_thread_unregister(&t) == 0 ? 0 : 4;
}

int RunMulti(void *arg)
{
	World *w = static_cast<World *>(arg);
	std::vector<std::thread> th;
	std::atomic<int> failures{0};
	for (unsigned tid = 0; tid < w->threads; tid++) {
		th.emplace_back([w, tid, &failures] {
			mcas_thread *t;
			if (mcas_thread_register(w->p.m, &t) != 0) {
				failures++;
				return;
			}
			for (const auto &set : w->incs[tid]) {
				for (;;) {
					mcas_desc *d;
					if (mcas_desc_begin(t, &d) != 0) {
						std::this_thread::yield();
						continue;
					}
					for (unsigned i : set) {
						uint64_t v = mcas_read(t, w->p.Word(i));
						mcas_desc_add(d, w->p.Word(i), v, v + 8);
					}
					if (mcas_desc_execute(d) == 1)
						break;
				}
				w->tdone[tid].fetch_add(1);
			}
			if (mcas_thread_unregister(&t) != 0)
				failures++;
		});
	}
	for (auto &x : th)
		x.join();
	return failures.load();
}

// @n operations of @k words each, about one in four expecting a wrong value
// in one of its words (failed operations are crashed too).
void MakeOps(World *w, unsigned k, unsigned n, unsigned seed)
{
	std::mt19937 rng(seed);
	std::array<uint64_t, kTargets> s{};
	w->states.push_back(s);
	for (unsigned o = 0; o < n; o++) {
		Op op;
		std::vector<unsigned> all(kTargets);
		for (unsigned i = 0; i < kTargets; i++)
			all[i] = i;
		std::shuffle(all.begin(), all.end(), rng);
		bool fail = rng() % 4 == 0;
		unsigned wrong = rng() % k;
		for (unsigned i = 0; i < k; i++) {
			op.idx.push_back(all[i]);
			op.old.push_back(s[all[i]] + (fail && i == wrong ? 8 : 0));
			op.new_.push_back(8 * (1 + rng() % 1000));
		}
		if (!fail)
			for (unsigned i = 0; i < k; i++)
				s[op.idx[i]] = op.new_[i];
		w->ops.push_back(op);
		w->states.push_back(s);
	}
}

struct SimResult {
	int ret;
	pm_crashsim_stats st;
	std::string report;
};

SimResult Simulate(World *w, const std::string &name, pm_crashsim_mode mode,
	unsigned one_in, pm_crashsim_run_fn run)
{
	pm_crashsim_config cfg;
	pm_crashsim_config_init(&cfg);
	cfg.name = name.c_str();
	cfg.mode = mode;
	if (one_in != 0)
		cfg.sample_one_in = one_in;
	cfg.max_images = 16;
	pm_crashsim *sim = nullptr;
	SimResult r = {};
	EXPECT_EQ(pm_crashsim_new(&sim, &cfg), 0);
	// The targets and the area: everything persistent the algorithm
	// writes (records, status, targets), nothing else.
	EXPECT_EQ(pm_crashsim_track(sim, w->p.root, kTargetBytes + w->p.area_size), 0);
	r.ret = pm_crashsim_run(sim, run, Check, w);
	pm_crashsim_get_stats(sim, &r.st);
	r.report = pm_crashsim_report(sim);
	pm_crashsim_delete(&sim);
	std::printf("%-22s events=%" PRIu64 " points=%" PRIu64 " images=%" PRIu64
		" max_dirty_words=%" PRIu64 "\n", name.c_str(), r.st.events, r.st.points,
		r.st.images, r.st.max_dirty_words);
	return r;
}

class CrashSingle : public ::testing::TestWithParam<unsigned> {};

// Every crash point of a sequence of k-word operations. Few records and a
// batch of one, so records are detached and reused inside the run.
TEST_P(CrashSingle, EveryPointIsAllOrNothing)
{
	unsigned k = GetParam();
	World w;
	ASSERT_EQ(w.p.Create("pmwcas-crash-k" + std::to_string(k) + ".pool", Config(2, 8, 1)),
		0);
	const unsigned n = 8;
	MakeOps(&w, k, n, 100 + k);
	SimResult r = Simulate(&w, "pmwcas-k" + std::to_string(k), PM_CRASHSIM_EVERY, 0,
		RunSingle);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
	// At least the uncontended events of the successful operations: 5k+1
	// CAS, 2k+1 fences and 2k+2 flushes each.
	EXPECT_GT(r.st.events, (uint64_t)n / 2 * (9 * k + 4));
	EXPECT_EQ(r.st.failures, 0u);
}

INSTANTIATE_TEST_SUITE_P(K, CrashSingle, ::testing::Values(1u, 2u, 3u, 4u),
	[](const ::testing::TestParamInfo<unsigned> &i) {
		return "k" + std::to_string(i.param);
	});

// Two threads incrementing overlapping word sets: the simulator serialises
// their persistence events, so they interleave and help each other.
TEST(CrashMulti, SampledPointsOfTwoThreads)
{
	World w;
	ASSERT_EQ(w.p.Create("pmwcas-crash-mt.pool", Config(2, 16, 2)), 0);
	w.threads = 2;
	std::mt19937 rng(5);
	w.incs.resize(w.threads);
	for (unsigned t = 0; t < w.threads; t++) {
		w.tdone[t] = 0;
		for (unsigned o = 0; o < 16; o++) {
			std::vector<unsigned> all = {0, 1, 2, 3}; // few words: contention
			std::shuffle(all.begin(), all.end(), rng);
			all.resize(1 + rng() % 4);
			w.incs[t].push_back(all);
		}
	}
	SimResult r = Simulate(&w, "pmwcas-mt2", PM_CRASHSIM_SAMPLE, 8, RunMulti);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 20u);
}

// ---- concurrency ----

// Four threads add 8 to random sets of 1..4 of 8 words, with reads in
// between; every increment must land exactly once. Tagged "concurrency".
TEST(Concurrency, FourThreadsIncrementEightWords)
{
	constexpr unsigned kThreads = 4, kOps = 3000;
	Instance p;
	ASSERT_EQ(p.Create("pmwcas-conc.pool", Config(kThreads + 1, 64, 0)), 0);
	std::atomic<uint64_t> adds[kTargets];
	for (auto &a : adds)
		a = 0;
	std::vector<std::thread> th;
	for (unsigned id = 0; id < kThreads; id++) {
		th.emplace_back([&p, &adds, id] {
			mcas_thread *t;
			ASSERT_EQ(mcas_thread_register(p.m, &t), 0);
			std::mt19937 rng(id + 1);
			for (unsigned n = 0; n < kOps; n++) {
				if (rng() % 4 == 0) {
					uint64_t v = mcas_read(t, p.Word(rng() % kTargets));
					ASSERT_EQ(v % 8, 0u);
					continue;
				}
				std::vector<unsigned> all(kTargets);
				for (unsigned i = 0; i < kTargets; i++)
					all[i] = i;
				std::shuffle(all.begin(), all.end(), rng);
				all.resize(1 + rng() % 4);
				for (;;) {
					mcas_desc *d;
					int ret = mcas_desc_begin(t, &d);
					if (ret == -EAGAIN) {
						std::this_thread::yield();
						continue;
					}
					ASSERT_EQ(ret, 0);
					for (unsigned i : all) {
						uint64_t v = mcas_read(t, p.Word(i));
						ASSERT_EQ(mcas_desc_add(d, p.Word(i), v, v + 8), 0);
					}
					if (mcas_desc_execute(d) == 1)
						break;
				}
				for (unsigned i : all)
					adds[i].fetch_add(1);
			}
			ASSERT_EQ(mcas_thread_unregister(&t), 0);
		});
	}
	for (auto &x : th)
		x.join();
	mcas_stats st;
	mcas_stats_total(p.m, &st);
	std::printf("pmwcas: %" PRIu64 " MCAS, %" PRIu64 " succeeded, %" PRIu64 " helps\n",
		st.mcas, st.succeeded, st.helps);
	for (unsigned i = 0; i < kTargets; i++)
		EXPECT_EQ(*p.Word(i), 8 * adds[i].load()) << "word " << i;
	// A restart finds nothing to do and the same values.
	mcas *m2 = nullptr;
	ASSERT_EQ(mcas_destroy(&p.m), 0);
	ASSERT_EQ(mcas_pmem_open(&m2, p.pool, p.area_off, nullptr), 0);
	p.m = m2;
	for (unsigned i = 0; i < kTargets; i++)
		EXPECT_EQ(*p.Word(i), 8 * adds[i].load()) << "word " << i;
}

} // namespace
