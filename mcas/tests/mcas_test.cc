// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/mcas_test.cc -- single-threaded behaviour of the k+1-CAS MCAS
// (AOPT): semantics, bad input, exact cost counts, reclamation (also of
// instances sharing an epoch flavour, the default one or the caller's),
// persistence across a clean reopen, and a damaged area.
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <mcas/mcas.h>
#include <pm/cost.h>
#include <pm/error.h>
#include <pm/pool.h>
#include <reclaim/reclaim.h>

#include "mcas/tests/mcas_test_util.h"

using mcastest::A;
using mcastest::Mcas;

namespace {

mcas_config Config(unsigned read_detach_one_in = 0)
{
	mcas_config c;
	mcas_config_init(&c);
	c.max_threads = 4;
	c.descs_per_thread = 32;
	c.read_detach_one_in = read_detach_one_in;
	return c;
}

struct Volatile : ::testing::Test {
	mcas *m = nullptr;
	mcas_thread *t = nullptr;
	uint64_t w[16] = {};

	void SetUp() override
	{
		mcas_config c = Config();
		ASSERT_EQ(mcas_new(&m, &c), 0);
		ASSERT_EQ(mcas_thread_register(m, &t), 0);
	}
	void TearDown() override
	{
		EXPECT_EQ(mcas_thread_unregister(&t), 0);
		EXPECT_EQ(mcas_close(&m), 0);
	}
};

TEST_F(Volatile, SucceedsAndFailsAtomically)
{
	EXPECT_EQ(Mcas(t, {{A(&w[0]), 0, 8}, {A(&w[1]), 0, 16}}), 1);
	EXPECT_EQ(mcas_read(t, &w[0]), 8u);
	EXPECT_EQ(mcas_read(t, &w[1]), 16u);
	// The second word differs: nothing is written.
	EXPECT_EQ(Mcas(t, {{A(&w[0]), 8, 24}, {A(&w[1]), 0, 32}}), 0);
	EXPECT_EQ(mcas_read(t, &w[0]), 8u);
	EXPECT_EQ(mcas_read(t, &w[1]), 16u);
	// Targets in any order.
	EXPECT_EQ(Mcas(t, {{A(&w[1]), 16, 40}, {A(&w[0]), 8, 48}}), 1);
	EXPECT_EQ(mcas_read(t, &w[0]), 48u);
	EXPECT_EQ(mcas_read(t, &w[1]), 40u);
}

TEST_F(Volatile, RejectsBadInput)
{
	mcas_desc *d;
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	mcas_desc *d2;
	EXPECT_EQ(mcas_desc_begin(t, &d2), -EBUSY);
	EXPECT_EQ(mcas_value_mask(m), 1u);
	EXPECT_EQ(mcas_desc_add(d, &w[0], 1, 0), -EINVAL); // reserved bit in expected
	EXPECT_EQ(mcas_desc_add(d, &w[0], 0, 3), -EINVAL); // reserved bit in new
	EXPECT_EQ(mcas_desc_add(d, nullptr, 0, 0), -EINVAL);
	EXPECT_EQ(mcas_desc_add(d, reinterpret_cast<uint64_t *>(reinterpret_cast<char *>(&w[0]) + 4), 0, 0),
		-EINVAL);
	EXPECT_EQ(mcas_desc_add(d, &w[0], 0, 2), 0); // AOPT reserves only bit 0
	EXPECT_EQ(mcas_desc_add(d, &w[0], 0, 4), -EEXIST);
	for (int i = 1; i < MCAS_MAX_WORDS; i++)
		ASSERT_EQ(mcas_desc_add(d, &w[i], 0, 0), 0);
	uint64_t extra = 0;
	EXPECT_EQ(mcas_desc_add(d, &extra, 0, 0), -E2BIG);
	// Still executable after the errors.
	EXPECT_EQ(mcas_desc_execute(d), 1);
	EXPECT_EQ(mcas_read(t, &w[0]), 2u);

	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	EXPECT_EQ(mcas_desc_execute(d), -EINVAL); // no targets
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	mcas_desc_abandon(d);
	ASSERT_EQ(mcas_desc_begin(t, &d), 0);
	mcas_desc_abandon(d);
}

TEST(Config, RejectsBadConfigs)
{
	mcas *m = nullptr;
	mcas_config c = Config();
	c.max_threads = 0;
	EXPECT_EQ(mcas_new(&m, &c), -EINVAL);
	c = Config();
	c.descs_per_thread = 4;
	EXPECT_EQ(mcas_new(&m, &c), -EINVAL);
	c = Config();
	c.reclaim_batch = c.descs_per_thread;
	EXPECT_EQ(mcas_new(&m, &c), -EINVAL);
	c = Config();
	c.algorithm = static_cast<mcas_algorithm>(42);
	EXPECT_EQ(mcas_new(&m, &c), -EINVAL);
	EXPECT_EQ(mcas_pmem_area_size(&c), 0u);
	EXPECT_EQ(mcas_algorithm_name(c.algorithm), nullptr);
	EXPECT_STREQ(mcas_algorithm_name(MCAS_ALG_AOPT), "aopt");
}

TEST(Threads, SlotsRunOutAndComeBack)
{
	mcas *m = nullptr;
	mcas_config c = Config();
	c.max_threads = 2;
	ASSERT_EQ(mcas_new(&m, &c), 0);
	mcas_thread *t1, *t2, *t3;
	ASSERT_EQ(mcas_thread_register(m, &t1), 0);
	ASSERT_EQ(mcas_thread_register(m, &t2), 0);
	EXPECT_EQ(mcas_thread_register(m, &t3), -EAGAIN);
	EXPECT_EQ(mcas_close(&m), -EBUSY);
	ASSERT_EQ(mcas_thread_unregister(&t1), 0);
	EXPECT_EQ(t1, nullptr);
	ASSERT_EQ(mcas_thread_register(m, &t3), 0);
	ASSERT_EQ(mcas_thread_unregister(&t2), 0);
	ASSERT_EQ(mcas_thread_unregister(&t3), 0);
	EXPECT_EQ(mcas_close(&m), 0);
	EXPECT_EQ(m, nullptr);
}

// The headline claim: an uncontended k-word MCAS issues k+1 CAS, also when
// the targets still hold finalized descriptors of earlier operations.
TEST_F(Volatile, UncontendedMcasIssuesKPlusOneCas)
{
	for (unsigned k = 1; k <= MCAS_MAX_WORDS; k++) {
		for (int round = 0; round < 3; round++) {
			mcas_desc *d;
			ASSERT_EQ(mcas_desc_begin(t, &d), 0);
			for (unsigned i = 0; i < k; i++)
				ASSERT_EQ(mcas_desc_add(d, &w[i], mcas_read(t, &w[i]),
					mcas_read(t, &w[i]) + 2), 0);
			pm_cost before = mcastest::CostNow();
			ASSERT_EQ(mcas_desc_execute(d), 1);
			EXPECT_EQ(mcastest::CostSince(before, PM_COST_CAS), k + 1) << "k=" << k;
			EXPECT_EQ(mcastest::CostSince(before, PM_COST_FENCE), 0u);
		}
	}
	mcas_stats s;
	mcas_thread_stats(t, &s);
	EXPECT_EQ(s.helps, 0u);
	EXPECT_EQ(s.succeeded, s.mcas);
}

// A failed MCAS stops at the first differing word: it acquired nothing before
// it, so it costs only the status CAS.
TEST_F(Volatile, FailureOnFirstWordCostsOneCas)
{
	pm_cost before = mcastest::CostNow();
	EXPECT_EQ(Mcas(t, {{A(&w[0]), 8, 16}, {A(&w[1]), 0, 16}}), 0);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_CAS), 1u);
}

// Reads never write when no operation is in progress on the word.
TEST_F(Volatile, ReadOfPlainWordIsOneLoad)
{
	w[3] = 24;
	pm_cost before = mcastest::CostNow();
	EXPECT_EQ(mcas_read(t, &w[3]), 24u);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_CAS), 0u);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_FENCE), 0u);
	EXPECT_EQ(w[3], 24u);
	// A finalized descriptor left on the word: still no CAS (efficient-read
	// detaching is off in this config), the value is resolved through it.
	ASSERT_EQ(Mcas(t, {{A(&w[3]), 24, 32}}), 1);
	EXPECT_NE(w[3] & 1, 0u);
	before = mcastest::CostNow();
	EXPECT_EQ(mcas_read(t, &w[3]), 32u);
	EXPECT_EQ(mcastest::CostSince(before, PM_COST_CAS), 0u);
}

// Efficient reads (sect. 5.6.2): with probability 1 a read cleans the word.
TEST(EfficientReads, ReadDetachesFinalizedDescriptor)
{
	mcas *m = nullptr;
	mcas_config c = Config(1);
	ASSERT_EQ(mcas_new(&m, &c), 0);
	mcas_thread *t;
	ASSERT_EQ(mcas_thread_register(m, &t), 0);
	uint64_t w = 0;
	ASSERT_EQ(Mcas(t, {{A(&w), 0, 8}}), 1);
	EXPECT_NE(w & 1, 0u);
	EXPECT_EQ(mcas_read(t, &w), 8u);
	EXPECT_EQ(w, 8u);
	mcas_stats s;
	mcas_thread_stats(t, &s);
	EXPECT_EQ(s.read_detaches, 1u);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
	ASSERT_EQ(mcas_close(&m), 0);
}

// Many more operations than descriptors: records are recycled through the
// pipeline, and unregistering detaches everything still installed.
TEST_F(Volatile, RecyclesDescriptorsAndDetachesOnUnregister)
{
	for (int i = 0; i < 2000; i++) {
		uint64_t *a = &w[i % 5], *b = &w[5 + (i + 2) % 7];
		ASSERT_EQ(Mcas(t, {{A(a), mcas_read(t, a), mcas_read(t, a) + 2},
			{A(b), mcas_read(t, b), mcas_read(t, b) + 4}}), 1) << i;
	}
	mcas_stats s;
	mcas_thread_stats(t, &s);
	EXPECT_EQ(s.mcas, 2000u);
	EXPECT_GT(s.grace_periods, 10u);
	EXPECT_EQ(s.desc_waits, 0u);
	uint64_t expect[16] = {};
	for (int i = 0; i < 2000; i++) {
		expect[i % 5] += 2;
		expect[5 + (i + 2) % 7] += 4;
	}
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
	for (int i = 0; i < 16; i++)
		EXPECT_EQ(w[i], expect[i]) << i; // plain values: all detached
	ASSERT_EQ(mcas_thread_register(m, &t), 0);
}

int g_freed;
void CountFree(void *obj, void *ctx)
{
	(void)ctx;
	delete static_cast<int *>(obj);
	g_freed++;
}

TEST_F(Volatile, RetiredObjectsAreFreedAfterGracePeriods)
{
	g_freed = 0;
	for (int i = 0; i < 10; i++) {
		mcas_guard_enter(t);
		ASSERT_EQ(mcas_retire(t, new int(i), CountFree, nullptr), 0);
		mcas_guard_exit(t);
	}
	int *kept = new int(0);
	EXPECT_EQ(mcas_retire(t, kept, nullptr, nullptr), -EINVAL); // still ours
	delete kept;
	EXPECT_EQ(g_freed, 0);
	mcas_guard_enter(t);
	EXPECT_EQ(mcas_thread_unregister(&t), -EBUSY); // inside a guard
	mcas_guard_exit(t);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
	EXPECT_EQ(g_freed, 10);
	ASSERT_EQ(mcas_thread_register(m, &t), 0);
}

// Two instances on one epoch flavour: a thread holds one epoch word for
// both, a guard on either is a guard on both, and a thread inside a guard of
// one holds back the other's grace periods, so neither its descriptors nor
// the objects retired on it come back early. The flavour is either the
// caller's (mcas_config.epochs, param false) or the default one that
// instances created without a flavour share (param true); the default is
// not reachable from outside, so its registration count is checked only on
// the caller's (the shared word shows in the guard's -EBUSY either way).
// Two instances a and b on one flavour, this thread registered in both (ta,
// tb); each test unregisters them itself, then calls Close().
struct SharedFlavour : ::testing::TestWithParam<bool> {
	reclaim_epochs *e = nullptr;
	mcas_config c = Config();
	mcas *a = nullptr, *b = nullptr;
	mcas_thread *ta = nullptr, *tb = nullptr;

	void Open(unsigned max_threads)
	{
		if (!GetParam()) {
			ASSERT_EQ(reclaim_epochs_new(&e, 4), 0);
		}
		c.epochs = e;
		c.max_threads = max_threads;
		ASSERT_EQ(mcas_new(&a, &c), 0);
		ASSERT_EQ(mcas_new(&b, &c), 0);
		ASSERT_EQ(mcas_thread_register(a, &ta), 0);
		ASSERT_EQ(mcas_thread_register(b, &tb), 0);
	}
	void ExpectRegistered(unsigned n)
	{
		if (e != nullptr) {
			EXPECT_EQ(reclaim_epochs_registered(e), n);
		}
	}
	void Close()
	{
		ExpectRegistered(0);
		EXPECT_EQ(mcas_close(&a), 0);
		EXPECT_EQ(mcas_close(&b), 0);
		EXPECT_EQ(reclaim_epochs_delete(&e), 0);
	}
};

INSTANTIATE_TEST_SUITE_P(, SharedFlavour, ::testing::Values(false, true),
	[](const ::testing::TestParamInfo<bool> &i) {
		return std::string(i.param ? "Default" : "Given");
	});

TEST_P(SharedFlavour, InstancesShareTheThreadsEpochWordAndGracePeriods)
{
	ASSERT_NO_FATAL_FAILURE(Open(Config().max_threads));
	ExpectRegistered(1);
	mcas_guard_enter(ta);
	EXPECT_EQ(mcas_thread_unregister(&tb), -EBUSY); // inside a's guard
	mcas_guard_exit(ta);

	std::atomic<bool> inside{false}, leave{false};
	std::thread x([&] {
		mcas_thread *tx = nullptr;
		if (mcas_thread_register(b, &tx) != 0) {
			ADD_FAILURE() << "register: " << pm_errormsg();
			inside.store(true); // the main thread must not wait forever
			return;
		}
		mcas_guard_enter(tx);
		inside.store(true);
		while (!leave.load())
			std::this_thread::yield();
		mcas_guard_exit(tx);
		EXPECT_EQ(mcas_thread_unregister(&tx), 0);
	});
	while (!inside.load())
		std::this_thread::yield();
	ExpectRegistered(2);
	g_freed = 0;
	ASSERT_EQ(mcas_retire(ta, new int(1), CountFree, nullptr), 0);
	uint64_t w = 0;
	int r = 1;
	unsigned done = 0;
	// Every record of a's pool waits for the grace period x holds up.
	for (; done <= c.descs_per_thread && r == 1; done++) {
		uint64_t v = mcas_read(ta, &w);
		r = Mcas(ta, {{A(&w), v, v + 8}});
	}
	EXPECT_EQ(r, -EAGAIN);
	EXPECT_GE(done, c.descs_per_thread / 2);
	EXPECT_EQ(g_freed, 0);
	leave.store(true);
	x.join();
	// Grace periods elapse again (each -EAGAIN advanced the pipeline one
	// step): operations run, the object is freed.
	unsigned ran = 0;
	for (done = 0; done < 8 * c.descs_per_thread && ran < 2 * c.descs_per_thread;
			done++) {
		r = Mcas(ta, {{A(&w), mcas_read(ta, &w), 0}});
		ASSERT_TRUE(r == 1 || r == -EAGAIN) << r;
		ran += r == 1;
	}
	EXPECT_EQ(g_freed, 1);
	EXPECT_EQ(ran, 2 * c.descs_per_thread);

	if (e != nullptr) {
		EXPECT_EQ(reclaim_epochs_delete(&e), -EBUSY);
	}
	EXPECT_EQ(mcas_thread_unregister(&ta), 0);
	ExpectRegistered(1); // tb still holds it
	EXPECT_EQ(mcas_thread_unregister(&tb), 0);
	Close();
}

// A registration that fails inside a guard of another instance on the same
// flavour (its own pool slots are all taken) gives everything back: the
// flavour counts the thread once, and can be deleted once both handles go.
TEST_P(SharedFlavour, FailedRegistrationInsideAGuardLeavesNothing)
{
	ASSERT_NO_FATAL_FAILURE(Open(1));
	mcas_thread *extra = nullptr;
	mcas_guard_enter(ta);
	EXPECT_EQ(mcas_thread_register(b, &extra), -EAGAIN);
	EXPECT_NE(std::string(pm_errormsg()).find("slots in use"), std::string::npos)
		<< pm_errormsg();
	mcas_guard_exit(ta);
	ExpectRegistered(1);
	EXPECT_EQ(mcas_thread_unregister(&tb), 0);
	EXPECT_EQ(mcas_thread_unregister(&ta), 0);
	Close();
}

// The default flavour lives while some instance created without a flavour
// does: an instance made after another was closed still shares the one the
// remaining instance holds, and once all are closed a new instance makes a
// new one that works as before.
TEST(DefaultFlavour, OutlivesEachInstanceButNotTheLast)
{
	mcas_config c = Config();
	mcas *a = nullptr, *b = nullptr, *d = nullptr;
	mcas_thread *tb = nullptr, *td = nullptr;
	uint64_t w = 0;

	ASSERT_EQ(mcas_new(&a, &c), 0);
	ASSERT_EQ(mcas_new(&b, &c), 0);
	ASSERT_EQ(mcas_close(&a), 0);
	ASSERT_EQ(mcas_new(&d, &c), 0);
	ASSERT_EQ(mcas_thread_register(b, &tb), 0);
	ASSERT_EQ(mcas_thread_register(d, &td), 0);
	mcas_guard_enter(tb);
	EXPECT_EQ(mcas_thread_unregister(&td), -EBUSY); // one word: b's guard is d's
	mcas_guard_exit(tb);
	EXPECT_EQ(mcas_thread_unregister(&tb), 0);
	EXPECT_EQ(mcas_thread_unregister(&td), 0);
	EXPECT_EQ(mcas_close(&b), 0);
	EXPECT_EQ(mcas_close(&d), 0);

	// All closed: the next instance makes the flavour again.
	ASSERT_EQ(mcas_new(&a, &c), 0);
	ASSERT_EQ(mcas_thread_register(a, &tb), 0);
	for (unsigned i = 0; i < 4 * c.descs_per_thread; i++)
		ASSERT_EQ(Mcas(tb, {{A(&w), 8 * (uint64_t)i, 8 * (uint64_t)(i + 1)}}), 1);
	EXPECT_EQ(mcas_thread_unregister(&tb), 0);
	EXPECT_EQ(mcas_close(&a), 0);
}

// ---- persistent ----

TEST(Persistent, TwoFencesAndKPlusOneCasPerMcas)
{
	mcastest::PmemInstance p;
	mcas_thread *t;
	ASSERT_EQ(p.CreateAndRegister("fences.pool", Config(), &t), 0);
	for (unsigned k = 1; k <= 8; k++) {
		for (int round = 0; round < 3; round++) {
			mcas_desc *d;
			ASSERT_EQ(mcas_desc_begin(t, &d), 0);
			for (unsigned i = 0; i < k; i++)
				ASSERT_EQ(mcas_desc_add(d, &p.words[i], mcas_read(t, &p.words[i]),
					mcas_read(t, &p.words[i]) + 8), 0);
			pm_cost before = mcastest::CostNow();
			ASSERT_EQ(mcas_desc_execute(d), 1);
			EXPECT_EQ(mcastest::CostSince(before, PM_COST_CAS), k + 1) << "k=" << k;
			EXPECT_EQ(mcastest::CostSince(before, PM_COST_FENCE), 2u) << "k=" << k;
			// The record (one head line and the word lines), the k
			// targets and the status.
			uint64_t record_lines = 1 + (k * 32 + 63) / 64;
			EXPECT_EQ(mcastest::CostSince(before, PM_COST_FLUSH), record_lines + k + 1) << "k=" << k;
		}
	}
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

TEST(Persistent, ValuesSurviveReopen)
{
	mcastest::PmemInstance p;
	mcas_thread *t;
	ASSERT_EQ(p.CreateAndRegister("reopen.pool", Config(), &t), 0);
	EXPECT_EQ(Mcas(t, {{A(&p.words[0]), 0, 8}, {A(&p.words[1]), 0, 16}}), 1);
	EXPECT_EQ(Mcas(t, {{A(&p.words[2]), 0, 24}}), 1);
	uint64_t outside = 0;
	EXPECT_EQ(Mcas(t, {{A(&outside), 0, 8}}), -ERANGE);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
	ASSERT_EQ(p.Reopen(), 0);
	EXPECT_EQ(p.words[0], 8u);
	EXPECT_EQ(p.words[1], 16u);
	EXPECT_EQ(p.words[2], 24u);
	EXPECT_TRUE(mcas_is_persistent(p.m));
	EXPECT_EQ(mcas_algorithm_of(p.m), MCAS_ALG_AOPT);
	// mcas_covers says what mcas_desc_add accepts: the pool, not beyond.
	EXPECT_TRUE(mcas_covers(p.m, &p.words[0], 3 * sizeof(uint64_t)));
	EXPECT_FALSE(mcas_covers(p.m, &outside, sizeof(outside)));
}

TEST_F(Volatile, CoversAnyAddress)
{
	uint64_t word = 0;
	EXPECT_TRUE(mcas_covers(m, &word, sizeof(word)));
}

// Recovery after an "unclean" stop: descriptors still installed (a thread
// that never unregistered) are detached by mcas_pmem_open.
TEST(Persistent, OpenDetachesInstalledDescriptors)
{
	mcastest::PmemInstance p;
	mcas_thread *t;
	ASSERT_EQ(p.CreateAndRegister("unclean.pool", Config(), &t), 0);
	EXPECT_EQ(Mcas(t, {{A(&p.words[0]), 0, 8}, {A(&p.words[1]), 0, 16}}), 1);
	EXPECT_EQ(Mcas(t, {{A(&p.words[1]), 16, 24}, {A(&p.words[2]), 8, 24}}), 0);
	EXPECT_NE(p.words[0] & 1, 0u);
	// Simulate the process dying: open the same area again without
	// unregistering (the old instance is leaked on purpose).
	mcas *m2 = nullptr;
	ASSERT_EQ(mcas_pmem_open(&m2, p.pool, p.area_off, nullptr), 0);
	EXPECT_EQ(p.words[0], 8u);
	EXPECT_EQ(p.words[1], 16u);
	EXPECT_EQ(p.words[2], 0u);
	ASSERT_EQ(mcas_close(&m2), 0);
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

TEST(Persistent, DamagedAreaIsRejected)
{
	mcastest::PmemInstance p;
	ASSERT_EQ(p.Create("damaged.pool", Config()), 0);
	mcas *m2 = nullptr;
	mcas_config other = Config();
	other.algorithm = MCAS_ALG_HARRIS;
	EXPECT_EQ(mcas_pmem_open(&m2, p.pool, p.area_off, &other), PM_E_LAYOUT);
	EXPECT_EQ(mcas_pmem_open(&m2, p.pool, p.area_off + 8, nullptr), -EINVAL);
	EXPECT_EQ(mcas_pmem_open(&m2, p.pool, (uint64_t)1 << 40, nullptr), -ERANGE);
	uint64_t *hdr = p.words + mcastest::kWords;
	hdr[2] ^= 1; // a header field: the checksum no longer matches
	EXPECT_EQ(mcas_pmem_open(&m2, p.pool, p.area_off, nullptr), PM_E_CORRUPT);
	hdr[2] ^= 1;
	uint64_t magic = hdr[0];
	hdr[0] = 0; // never formatted, or a create that did not finish
	EXPECT_EQ(mcas_pmem_open(&m2, p.pool, p.area_off, nullptr), PM_E_CORRUPT);
	hdr[0] = magic ^ 1; // another kind of object (pm/area.h)
	EXPECT_EQ(mcas_pmem_open(&m2, p.pool, p.area_off, nullptr), PM_E_LAYOUT);
	hdr[0] = magic;
	ASSERT_EQ(mcas_pmem_open(&m2, p.pool, p.area_off, nullptr), 0);
	ASSERT_EQ(mcas_close(&m2), 0);
}

} // namespace
