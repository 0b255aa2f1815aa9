// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/crashsim_test.cc -- the crash simulator finds planted bugs, passes
// correct code at every crash point, counts events exactly, and replays.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <pm/cost.h>
#include <pm/crashsim.h>
#include <pm/error.h>
#include <pm/persist.h>

#include "pm/examples/pmlog.h"
#include "pm/tests/test_util.h"

namespace {

struct Outcome {
	int ret;
	pm_crashsim_stats stats;
	std::string report;
};

Outcome Simulate(enum pmlog_bug bug, unsigned threads, unsigned ops, pm_crashsim_mode mode,
	unsigned one_in = 64)
{
	pm_crashsim_config cfg;
	pm_crashsim_config_init(&cfg);
	std::string name = std::string("pmlog-") + pmlog_variant_name(bug) + "-t" +
		std::to_string(threads);
	cfg.name = name.c_str();
	cfg.mode = mode;
	cfg.sample_one_in = one_in;
	pmlog_run run = {};
	run.bug = bug;
	run.threads = threads;
	run.ops = ops;
	Outcome o = {};
	char report[4096] = "";
	o.ret = pmlog_simulate(pmtest::TempPath(name + ".pool").c_str(), &run, &cfg, &o.stats,
		report, sizeof(report));
	o.report = report;
	std::printf("%-28s ret=%d events=%" PRIu64 " points=%" PRIu64 " images=%" PRIu64
		" max_dirty=%" PRIu64 "\n", name.c_str(), o.ret, o.stats.events, o.stats.points,
		o.stats.images, o.stats.max_dirty_words);
	return o;
}

TEST(CrashsimSelfTest, CorrectCodePassesEveryCrashPoint)
{
	Outcome o = Simulate(PMLOG_CORRECT, 1, 8, PM_CRASHSIM_EVERY);
	ASSERT_EQ(o.ret, 0) << o.report;
	// 8 appends and 8 register updates, each two persists of flush + fence.
	EXPECT_EQ(o.stats.events, 8u * 8u);
	EXPECT_EQ(o.stats.points, o.stats.events + 1);
	EXPECT_GE(o.stats.images, o.stats.points);
	EXPECT_EQ(o.stats.failures, 0u);
}

TEST(CrashsimSelfTest, FindsValidFlagSetBeforeDataIsPersistent)
{
	Outcome o = Simulate(PMLOG_BUG_VALID_BEFORE_DATA, 1, 8, PM_CRASHSIM_EVERY);
	ASSERT_EQ(o.ret, PM_E_CHECK_FAILED);
	EXPECT_EQ(o.stats.failures, 1u);
	EXPECT_NE(o.report.find("is not intact"), std::string::npos) << o.report;
	EXPECT_NE(o.report.find("replay: "), std::string::npos) << o.report;
}

TEST(CrashsimSelfTest, FindsMissingFence)
{
	Outcome o = Simulate(PMLOG_BUG_MISSING_FENCE, 1, 8, PM_CRASHSIM_EVERY);
	ASSERT_EQ(o.ret, PM_E_CHECK_FAILED);
	EXPECT_NE(o.report.find("is not intact"), std::string::npos) << o.report;
}

TEST(CrashsimSelfTest, FindsTornTwoWordUpdate)
{
	Outcome o = Simulate(PMLOG_BUG_TORN_PAIR, 1, 8, PM_CRASHSIM_EVERY);
	ASSERT_EQ(o.ret, PM_E_CHECK_FAILED);
	EXPECT_NE(o.report.find("register torn"), std::string::npos) << o.report;
}

TEST(CrashsimSelfTest, SampledMultiThreadedCorrectPasses)
{
	Outcome o = Simulate(PMLOG_CORRECT, 4, 16, PM_CRASHSIM_SAMPLE, 8);
	ASSERT_EQ(o.ret, 0) << o.report;
	// 4 threads x 16 ops x (8 events + CAS + flush + fence), plus one
	// event per CAS retried under contention.
	EXPECT_GE(o.stats.events, 4u * 16u * 11u);
	EXPECT_GT(o.stats.points, 20u);
}

TEST(CrashsimSelfTest, SampledMultiThreadedFindsBug)
{
	Outcome o = Simulate(PMLOG_BUG_VALID_BEFORE_DATA, 4, 16, PM_CRASHSIM_SAMPLE, 8);
	ASSERT_EQ(o.ret, PM_E_CHECK_FAILED);
	EXPECT_NE(o.report.find("is not intact"), std::string::npos) << o.report;
}

// The report's replay line reproduces exactly the failing image.
TEST(CrashsimSelfTest, ReplayReproducesTheFailure)
{
	Outcome o = Simulate(PMLOG_BUG_TORN_PAIR, 1, 8, PM_CRASHSIM_EVERY);
	ASSERT_EQ(o.ret, PM_E_CHECK_FAILED);
	size_t at = o.report.find("PM_CRASHSIM_REPLAY=");
	ASSERT_NE(at, std::string::npos) << o.report;
	std::string value = o.report.substr(at + std::strlen("PM_CRASHSIM_REPLAY="));
	value = value.substr(0, value.find_first_of(" \n"));
	std::string failure = o.report.substr(0, o.report.find("\nreplay:"));

	ASSERT_EQ(setenv("PM_CRASHSIM_REPLAY", value.c_str(), 1), 0);
	Outcome again = Simulate(PMLOG_BUG_TORN_PAIR, 1, 8, PM_CRASHSIM_EVERY);
	unsetenv("PM_CRASHSIM_REPLAY");
	ASSERT_EQ(again.ret, PM_E_CHECK_FAILED);
	EXPECT_EQ(again.stats.points, 1u);
	EXPECT_EQ(again.stats.images, 1u);
	EXPECT_EQ(again.report.substr(0, again.report.find("\nreplay:")), failure);
}

// ---- small hand-made workloads on anonymous memory ----

struct Cell {
	uint64_t *mem; // page-aligned, tracked
	volatile int flag;
	uint64_t expect; // what mem[0] must durably hold once flag is set
};

Cell *NewCell()
{
	void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_NE(p, MAP_FAILED);
	Cell *c = new Cell;
	c->mem = static_cast<uint64_t *>(p);
	c->flag = 0;
	c->expect = 1;
	return c;
}

void FreeCell(Cell *c)
{
	munmap(c->mem, 4096);
	delete c;
}

int RunSim(const char *name, Cell *c, pm_crashsim_run_fn run, pm_crashsim_check_fn check,
	pm_crashsim_stats *stats, std::string *report = nullptr, unsigned timeout_s = 60)
{
	pm_crashsim_config cfg;
	pm_crashsim_config_init(&cfg);
	cfg.name = name;
	cfg.image_timeout_s = timeout_s;
	pm_crashsim *sim = nullptr;
	EXPECT_EQ(pm_crashsim_new(&sim, &cfg), 0);
	EXPECT_EQ(pm_crashsim_track(sim, c->mem, 64), 0);
	int ret = pm_crashsim_run(sim, run, check, c);
	pm_crashsim_get_stats(sim, stats);
	if (report != nullptr)
		*report = pm_crashsim_report(sim);
	EXPECT_EQ(pm_crashsim_delete(&sim), 0);
	return ret;
}

// Each test runs the simulator over a fresh cell.
class CrashsimModel : public testing::Test {
protected:
	void SetUp() override { c = NewCell(); }
	void TearDown() override { FreeCell(c); }

	// RunSim on c; *@cost gets how much the calling thread's cost
	// counters grew meanwhile.
	int RunSimCosted(const char *name, pm_crashsim_run_fn run, pm_crashsim_check_fn check,
		pm_cost *cost)
	{
		pm_cost before, after;
		pm_cost_read_thread(&before);
		int ret = RunSim(name, c, run, check, &st);
		pm_cost_read_thread(&after);
		pm_cost_diff(&after, &before, cost);
		return ret;
	}

	Cell *c = nullptr;
	pm_crashsim_stats st;
	std::string report;
};

int FlushNoFence(void *arg)
{
	Cell *c = static_cast<Cell *>(arg);
	c->mem[0] = 1;
	pm_flush(&c->mem[0], 8);
	c->flag = 1;
	return 0;
}

int PersistThenFlag(void *arg)
{
	Cell *c = static_cast<Cell *>(arg);
	c->mem[0] = 1;
	pm_persist(&c->mem[0], 8);
	c->flag = 1;
	return 0;
}

int FlagMeansDurable(void *arg, char *msg, size_t len)
{
	Cell *c = static_cast<Cell *>(arg);
	if (c->flag && c->mem[0] != c->expect) {
		std::snprintf(msg, len, "lost: word is %llu, not %llu",
			(unsigned long long)c->mem[0], (unsigned long long)c->expect);
		return 1;
	}
	return 0;
}

// A flush without a fence does not make data durable.
TEST_F(CrashsimModel, UnfencedFlushMayBeLost)
{
	EXPECT_EQ(RunSim("unfenced", c, FlushNoFence, FlagMeansDurable, &st, &report),
		PM_E_CHECK_FAILED);
	EXPECT_NE(report.find("lost: word is 0, not 1"), std::string::npos) << report;
}

// Flush plus fence does; and the event count is exact: one flush, one fence.
TEST_F(CrashsimModel, PersistIsDurableAndEventsAreExact)
{
	EXPECT_EQ(RunSim("persisted", c, PersistThenFlag, FlagMeansDurable, &st), 0);
	EXPECT_EQ(st.events, 2u);
	EXPECT_EQ(st.points, 3u);
}

int FlushThenCas(void *arg)
{
	Cell *c = static_cast<Cell *>(arg);
	uint64_t untracked = 0, expected = 0;
	c->mem[0] = 1;
	pm_flush(&c->mem[0], 8);
	pm_cas(&untracked, &expected, 8); // a LOCK-prefixed CAS, even on DRAM
	c->flag = 1;
	return 0;
}

// A CAS orders the thread's earlier flushes like a fence (x86 LOCK
// semantics, see pm_cas), without counting as one.
TEST_F(CrashsimModel, CasMakesEarlierFlushesDurable)
{
	pm_cost d;
	EXPECT_EQ(RunSimCosted("flush-cas", FlushThenCas, FlagMeansDurable, &d), 0);
	EXPECT_EQ(d.n[PM_COST_FENCE], 0u);
	EXPECT_EQ(st.events, 1u); // the flush; the CAS is on untracked memory
}

int CasWorkload(void *arg)
{
	Cell *c = static_cast<Cell *>(arg);
	uint64_t untracked = 0, expected = 0;
	for (uint64_t i = 0; i < 3; i++) {
		expected = i;
		if (!pm_cas(&c->mem[1], &expected, i + 1))
			return 1;
	}
	expected = 0;
	pm_cas(&untracked, &expected, 5); // not tracked: not an event
	pm_flush(&untracked, 8);          // not tracked: not an event
	pm_persist(&c->mem[1], 8);
	c->flag = 1;
	return 0;
}

int CasCheck(void *arg, char *msg, size_t len)
{
	Cell *c = static_cast<Cell *>(arg);
	if (c->mem[1] > 3 || (c->flag && c->mem[1] != 3)) {
		std::snprintf(msg, len, "cas word %llu", (unsigned long long)c->mem[1]);
		return 1;
	}
	return 0;
}

TEST_F(CrashsimModel, CasOnTrackedWordsIsAnEventAndCounted)
{
	pm_cost d;
	EXPECT_EQ(RunSimCosted("cas", CasWorkload, CasCheck, &d), 0);
	EXPECT_EQ(st.events, 3u + 2u);
	EXPECT_EQ(d.n[PM_COST_CAS], 4u);
	EXPECT_EQ(d.n[PM_COST_FLUSH], 2u);
	EXPECT_EQ(d.n[PM_COST_FENCE], 1u);
}

// Thread A flushes x=1 but fences only after thread B persisted x=2: A's
// stale snapshot must not make durable memory go back to 1.
int StaleSnapshot(void *arg)
{
	Cell *c = static_cast<Cell *>(arg);
	std::atomic<int> step{0};
	std::thread a([&] {
		c->mem[0] = 1;
		pm_flush(&c->mem[0], 8);
		step.store(1);
		while (step.load() != 2)
			;
		pm_fence();
		c->flag = 1;
	});
	std::thread b([&] {
		while (step.load() != 1)
			;
		__atomic_store_n(&c->mem[0], 2, __ATOMIC_RELAXED);
		pm_persist(&c->mem[0], 8);
		step.store(2);
	});
	a.join();
	b.join();
	return 0;
}

TEST_F(CrashsimModel, DurableMemoryNeverGoesBackwards)
{
	c->expect = 2;
	EXPECT_EQ(RunSim("stale", c, StaleSnapshot, FlagMeansDurable, &st, &report), 0) << report;
	EXPECT_EQ(st.events, 4u);
}

int Nothing(void *) { return 0; }

// Recovery for FlushNoFence's state: make the word 1 and durable. Idempotent,
// so a crash in the middle of it and a second run must still end with 1.
int Recover(void *arg)
{
	Cell *c = static_cast<Cell *>(arg);
	c->mem[0] = 1;
	pm_persist(&c->mem[0], 8);
	c->flag = 1;
	return 0;
}

int RecoverThenCheck(void *arg, char *msg, size_t len)
{
	Recover(arg);
	return FlagMeansDurable(arg, msg, len);
}

// The check of the outer run crash-tests the recovery itself: a simulator
// runs inside an image process, over the (private) image memory.
int RecoveryIsCrashTested(void *arg, char *msg, size_t len)
{
	Cell *c = static_cast<Cell *>(arg);
	c->flag = 0;
	pm_crashsim_stats st;
	std::string report;
	int ret = RunSim("recovery", c, Recover, RecoverThenCheck, &st, &report);
	if (ret != 0 || st.points != 3) {
		std::snprintf(msg, len, "nested run: %d, %llu points: %s", ret,
			(unsigned long long)st.points, report.c_str());
		return 1;
	}
	return 0;
}

TEST_F(CrashsimModel, CrashesDuringRecoveryCanBeSimulated)
{
	EXPECT_EQ(RunSim("outer-recovery", c, FlushNoFence, RecoveryIsCrashTested, &st, &report), 0)
		<< report;
	EXPECT_EQ(st.points, 2u);
}

// At FlushNoFence's final point two images differ in mem[0]: image 0
// (durable: 0) is checked in a process of its own, image 1 (newest: 1), the
// last, in the point's process. FlagMeansDurable rejects whichever differs
// from c->expect; a failure of either names its image and the check's
// message.
TEST_F(CrashsimModel, AFailureNamesItsImageForkedOrLast)
{
	EXPECT_EQ(RunSim("durable", c, FlushNoFence, FlagMeansDurable, &st, &report),
		PM_E_CHECK_FAILED);
	EXPECT_NE(report.find("image 0 "), std::string::npos) << report;
	EXPECT_NE(report.find("lost: word is 0, not 1"), std::string::npos) << report;
	EXPECT_EQ(st.failures, 1u);

	FreeCell(c);
	c = NewCell();
	c->expect = 0;
	EXPECT_EQ(RunSim("newest", c, FlushNoFence, FlagMeansDurable, &st, &report),
		PM_E_CHECK_FAILED);
	EXPECT_NE(report.find("image 1 "), std::string::npos) << report;
	EXPECT_NE(report.find("lost: word is 1, not 0"), std::string::npos) << report;
	EXPECT_EQ(st.failures, 1u);
}

int Crashes(void *, char *, size_t)
{
	raise(SIGSEGV);
	return 0;
}

int Hangs(void *, char *, size_t)
{
	for (;;)
		pause();
}

TEST_F(CrashsimModel, CrashingOrHangingChecksAreFailures)
{
	EXPECT_EQ(RunSim("crashes", c, Nothing, Crashes, &st, &report), PM_E_CHECK_FAILED);
	// Plain builds see SIGSEGV; sanitizers turn it into SIGABRT or an exit status.
	EXPECT_TRUE(report.find("crashed with signal") != std::string::npos ||
		report.find("exited with status") != std::string::npos) << report;
	EXPECT_EQ(RunSim("hangs", c, Nothing, Hangs, &st, &report, 1), PM_E_CHECK_FAILED);
	EXPECT_NE(report.find("timed out"), std::string::npos) << report;
}

int Nested(void *arg)
{
	Cell *c = static_cast<Cell *>(arg);
	pm_crashsim_stats st;
	// A second simulator cannot run while one is running.
	return RunSim("inner", c, Nothing, FlagMeansDurable, &st) == -EBUSY ? 0 : 1;
}

TEST(CrashsimApi, RejectsBadUse)
{
	pm_crashsim_config cfg;
	pm_crashsim *sim = nullptr;
	pm_crashsim_config_init(&cfg);
	EXPECT_EQ(pm_crashsim_new(&sim, &cfg), -EINVAL); // no name
	cfg.name = "a:b";
	EXPECT_EQ(pm_crashsim_new(&sim, &cfg), -EINVAL);
	cfg.name = "ok";
	cfg.max_images = 1;
	EXPECT_EQ(pm_crashsim_new(&sim, &cfg), -EINVAL);
	cfg.max_images = 8;
	ASSERT_EQ(pm_crashsim_new(&sim, &cfg), 0);
	EXPECT_EQ(pm_crashsim_run(sim, Nothing, FlagMeansDurable, nullptr), -EINVAL); // nothing tracked
	Cell *c = NewCell();
	EXPECT_EQ(pm_crashsim_track(sim, c->mem, 64), 0);
	EXPECT_EQ(pm_crashsim_track(sim, c->mem + 4, 8), -EINVAL); // overlap
	EXPECT_EQ(pm_crashsim_track(sim, nullptr, 8), -EINVAL);
	EXPECT_EQ(pm_crashsim_delete(&sim), 0);
	EXPECT_EQ(sim, nullptr);
	EXPECT_EQ(pm_crashsim_delete(&sim), 0);

	pm_crashsim_stats st;
	EXPECT_EQ(RunSim("outer", c, Nested, FlagMeansDurable, &st), 0);

	ASSERT_EQ(setenv("PM_CRASHSIM_REPLAY", "outer:1:x", 1), 0);
	EXPECT_EQ(RunSim("outer", c, Nothing, FlagMeansDurable, &st), -EINVAL);
	unsetenv("PM_CRASHSIM_REPLAY");
	FreeCell(c);
}

} // namespace
