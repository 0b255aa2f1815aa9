// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_test.cc -- single-threaded behaviour: configuration,
// names, bounds, registration limits, delete, and that every scheme frees
// every retired node exactly once.
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "reclaim_test_util.h"

using namespace reclaimtest;

namespace {

TEST(ReclaimConfig, Defaults)
{
	reclaim_config cfg;
	reclaim_config_init(&cfg, RECLAIM_QSENSE);
	EXPECT_EQ(cfg.scheme, RECLAIM_QSENSE);
	EXPECT_EQ(cfg.max_threads, 128u);
	EXPECT_EQ(cfg.hazards_per_thread, 8u);
	EXPECT_EQ(cfg.quiescence_threshold, 64u);
	EXPECT_EQ(cfg.scan_threshold, 0u);
	EXPECT_EQ(cfg.fallback_threshold, 0u);
	EXPECT_EQ(cfg.rooster_interval_us, 10000u);
	EXPECT_EQ(cfg.epsilon_us, 1000u);
	EXPECT_EQ(cfg.liveness_check_ms, 100u);
}

TEST(ReclaimConfig, InvalidIsRejected)
{
	std::vector<std::function<void(reclaim_config &)>> breakers = {
		[](reclaim_config &c) { c.scheme = RECLAIM_NSCHEMES; },
		[](reclaim_config &c) { c.max_threads = 0; },
		[](reclaim_config &c) { c.max_threads = 4097; },
		[](reclaim_config &c) { c.hazards_per_thread = 0; },
		[](reclaim_config &c) { c.hazards_per_thread = RECLAIM_MAX_HAZARDS + 1; },
		[](reclaim_config &c) { c.quiescence_threshold = 0; },
		[](reclaim_config &c) { c.rooster_interval_us = 0; },
	};
	for (size_t i = 0; i < breakers.size(); i++) {
		reclaim_config cfg;
		reclaim_config_init(&cfg, RECLAIM_HP);
		breakers[i](cfg);
		reclaim_domain *d = nullptr;
		EXPECT_EQ(reclaim_domain_new(&d, &cfg), -EINVAL) << "case " << i;
		EXPECT_EQ(d, nullptr);
		struct reclaim_bound b;
		EXPECT_EQ(reclaim_bound_compute(&cfg, 4, 1, 10, &b), -EINVAL) << "case " << i;
	}
	// The limits themselves are fine.
	reclaim_config cfg;
	reclaim_config_init(&cfg, RECLAIM_HP);
	cfg.max_threads = 4096;
	cfg.hazards_per_thread = RECLAIM_MAX_HAZARDS;
	reclaim_domain *d = nullptr;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

// A derived threshold that would not fit in 32 bits is rejected, by create
// and by reclaim_bound_compute() alike: R = 2^30 makes the default
// C = 4R + K * max_threads wrap. With C given, nothing is derived, and the
// running domain reports the C that the bound uses.
TEST(ReclaimConfig, OverflowingThresholdsAreRejected)
{
	reclaim_config cfg;
	reclaim_config_init(&cfg, RECLAIM_QSENSE);
	cfg.max_threads = 4;
	cfg.scan_threshold = 1u << 30;
	reclaim_domain *d = nullptr;
	EXPECT_EQ(reclaim_domain_new(&d, &cfg), -EINVAL);
	EXPECT_EQ(d, nullptr);
	reclaim_bound b;
	EXPECT_EQ(reclaim_bound_compute(&cfg, 1, 1, 0, &b), -EINVAL);

	// The largest R whose default C fits for max_threads threads.
	cfg.scan_threshold = (UINT32_MAX - cfg.hazards_per_thread * cfg.max_threads) / 4;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	reclaim_config got;
	reclaim_domain_config(d, &got);
	EXPECT_EQ(got.fallback_threshold, 4 * cfg.scan_threshold + cfg.hazards_per_thread);
	ASSERT_EQ(reclaim_bound_compute(&cfg, 1, 1, 0, &b), 0);
	EXPECT_EQ(b.qsense, 2ull * got.fallback_threshold);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);

	cfg.scan_threshold = 1u << 30;
	cfg.fallback_threshold = 1u << 31;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	reclaim_domain_config(d, &got);
	EXPECT_EQ(got.scan_threshold, 1u << 30);
	EXPECT_EQ(got.fallback_threshold, 1u << 31);
	ASSERT_EQ(reclaim_bound_compute(&cfg, 1, 1, 0, &b), 0);
	EXPECT_EQ(b.qsense, 2ull << 31);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

TEST(ReclaimConfig, NamesRoundTrip)
{
	for (reclaim_scheme s : AllSchemes()) {
		reclaim_scheme back = RECLAIM_NSCHEMES;
		ASSERT_EQ(reclaim_scheme_parse(reclaim_scheme_name(s), &back), 0);
		EXPECT_EQ(back, s);
	}
	EXPECT_STREQ(reclaim_scheme_name(RECLAIM_URCU_QSBR), "urcu-qsbr");
	EXPECT_STREQ(reclaim_scheme_name(RECLAIM_NSCHEMES), "?");
	reclaim_scheme out = RECLAIM_HP;
	EXPECT_EQ(reclaim_scheme_parse("rcu", &out), -EINVAL);
	EXPECT_EQ(reclaim_scheme_parse("?", &out), -EINVAL);
	EXPECT_EQ(reclaim_scheme_parse(nullptr, &out), -EINVAL);
	EXPECT_EQ(out, RECLAIM_HP);
}

TEST(ReclaimBound, Formulas)
{
	reclaim_config cfg;
	reclaim_config_init(&cfg, RECLAIM_QSENSE);
	cfg.hazards_per_thread = 2;
	cfg.quiescence_threshold = 10;
	cfg.scan_threshold = 50;
	cfg.fallback_threshold = 100;
	struct reclaim_bound b;
	// N = 4, K = 2, R = 50, C = 100, Q = 10, m = 3, Y = 20.
	ASSERT_EQ(reclaim_bound_compute(&cfg, 4, 3, 20, &b), 0);
	EXPECT_EQ(b.cadence, 4u * (2 + 20 + 50));
	EXPECT_EQ(b.qsense, 2u * 4 * 100);
	// max(mQ = 30, NK + Y = 28, (K + Y + R) / 2 = 36) + 1
	EXPECT_EQ(b.c_min, 37u);
	EXPECT_TRUE(b.c_legal);
	cfg.fallback_threshold = 36;
	ASSERT_EQ(reclaim_bound_compute(&cfg, 4, 3, 20, &b), 0);
	EXPECT_FALSE(b.c_legal);
	EXPECT_EQ(b.qsense, 2u * 4 * 36);

	// Defaults: R = max(64, 2KN), C = 4R + KN.
	reclaim_config_init(&cfg, RECLAIM_QSENSE);
	ASSERT_EQ(reclaim_bound_compute(&cfg, 2, 1, 0, &b), 0);
	EXPECT_EQ(b.cadence, 2u * (8 + 0 + 64));
	EXPECT_EQ(b.qsense, 2u * 2 * (4 * 64 + 16));
	ASSERT_EQ(reclaim_bound_compute(&cfg, 16, 1, 0, &b), 0);
	EXPECT_EQ(b.cadence, 16u * (8 + 256));
	EXPECT_EQ(b.qsense, 2u * 16 * (4 * 256 + 128));
	EXPECT_EQ(b.c_min, (8u + 256) / 2 + 1); // > NK = 128 and mQ = 64
	EXPECT_TRUE(b.c_legal);
}

TEST(ReclaimDomain, ConfigResolvesThresholds)
{
	reclaim_config cfg = TestConfig(RECLAIM_HP);
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	reclaim_config got;
	reclaim_domain_config(d, &got);
	EXPECT_EQ(got.scan_threshold, 64u);
	EXPECT_EQ(got.fallback_threshold, 4u * 64);
	EXPECT_EQ(got.max_threads, cfg.max_threads);
	// Nine threads registered at once: R = 2 * K * 9 = 72 > 64.
	std::vector<reclaim_thread *> ts(9);
	std::vector<std::thread> th;
	std::atomic<int> joined{0};
	std::atomic<bool> leave{false};
	for (auto &t : ts) {
		th.emplace_back([&] {
			EXPECT_EQ(reclaim_thread_register(d, &t), 0);
			joined++;
			while (!leave.load())
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
			EXPECT_EQ(reclaim_thread_unregister(&t), 0);
		});
	}
	ASSERT_TRUE(WaitFor([&] { return joined.load() == 9; }));
	reclaim_domain_config(d, &got);
	EXPECT_EQ(got.scan_threshold, 72u);
	EXPECT_EQ(got.fallback_threshold, 4u * 72 + 4 * 9);
	leave = true;
	for (auto &x : th)
		x.join();
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

TEST(ReclaimDomain, RegistrationLimits)
{
	reclaim_config cfg = TestConfig(RECLAIM_QSBR);
	cfg.max_threads = 2;
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	reclaim_thread *t = nullptr, *t2 = nullptr;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	EXPECT_EQ(reclaim_thread_register(d, &t2), -EEXIST);
	EXPECT_EQ(Stats(d).registered, 1u);

	std::mutex mu;
	std::condition_variable cv;
	bool leave = false;
	int other = 1;
	std::thread th([&] {
		reclaim_thread *o;
		int ret = reclaim_thread_register(d, &o);
		std::unique_lock<std::mutex> lk(mu);
		other = ret;
		cv.notify_all();
		cv.wait(lk, [&] { return leave; });
		if (ret == 0) {
			EXPECT_EQ(reclaim_thread_unregister(&o), 0);
		}
	});
	{
		std::unique_lock<std::mutex> lk(mu);
		cv.wait(lk, [&] { return other != 1; });
	}
	EXPECT_EQ(other, 0);
	EXPECT_EQ(Stats(d).registered, 2u);
	int third = 1;
	std::thread([&] { third = reclaim_thread_register(d, &t2); }).join();
	EXPECT_EQ(third, -ENOSPC);

	EXPECT_EQ(reclaim_domain_delete(&d), -EBUSY);
	{
		std::lock_guard<std::mutex> lk(mu);
		leave = true;
		cv.notify_all();
	}
	th.join();
	EXPECT_EQ(reclaim_domain_delete(&d), -EBUSY);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(Stats(d).registered, 0u);
	// Slots are reusable, and the same thread may register again.
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(t, nullptr);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(Stats(d).evicted, 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_EQ(d, nullptr);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_EQ(reclaim_domain_delete(nullptr), 0);
}

// The CPUs a thread of this process can be pinned to: online and in its
// cpuset (a helper thread tries each; the caller's affinity is unchanged).
unsigned UsableCpus()
{
	unsigned n = 0;
	std::thread([&] {
		long conf = sysconf(_SC_NPROCESSORS_CONF);
		for (long c = 0; c < conf && c < CPU_SETSIZE; c++) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			if (sched_setaffinity(0, sizeof(one), &one) == 0)
				n++;
		}
	}).join();
	return n;
}

// Cadence and QSense start one rooster per CPU a worker may run on, however
// the creating thread is pinned: a benchmark that pins its main thread to
// one CPU before creating the domain still gets every CPU covered.
TEST(Roosters, OnePerCpuWhateverTheCreatorsAffinity)
{
	unsigned usable = UsableCpus();
	ASSERT_GE(usable, 1u);
	EXPECT_LE(usable, (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	for (reclaim_scheme s : {RECLAIM_CADENCE, RECLAIM_QSENSE}) {
		std::thread([&] {
			cpu_set_t set, one;
			ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
			int cpu = 0;
			while (!CPU_ISSET(cpu, &set))
				cpu++;
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
			reclaim_config cfg = TestConfig(s);
			reclaim_domain *d;
			ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
			EXPECT_EQ(Stats(d).roosters, usable) << reclaim_scheme_name(s);
			EXPECT_EQ(reclaim_domain_delete(&d), 0);
		}).join();
	}
	// The other schemes have none.
	reclaim_config cfg = TestConfig(RECLAIM_HP);
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	EXPECT_EQ(Stats(d).roosters, 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

// Counts this process's threads named "reclaim-rooster"; with @check,
// expects each to block the usual process-directed signals.
unsigned CheckRoosterSignals(bool check)
{
	unsigned found = 0;
	DIR *dir = opendir("/proc/self/task");
	if (dir == nullptr)
		return 0;
	while (struct dirent *e = readdir(dir)) {
		if (e->d_name[0] == '.')
			continue;
		std::string base = std::string("/proc/self/task/") + e->d_name;
		std::ifstream comm(base + "/comm");
		std::string name;
		std::getline(comm, name);
		if (name != "reclaim-rooster")
			continue;
		found++;
		if (!check)
			continue;
		std::ifstream status(base + "/status");
		std::string line;
		uint64_t blocked = 0;
		while (std::getline(status, line))
			if (line.rfind("SigBlk:", 0) == 0)
				blocked = std::stoull(line.substr(7), nullptr, 16);
		for (int sig : {SIGINT, SIGTERM, SIGALRM, SIGUSR1, SIGCHLD, SIGHUP})
			EXPECT_TRUE(blocked & (1ull << (sig - 1)))
				<< "rooster " << e->d_name << " takes signal " << sig;
	}
	closedir(dir);
	return found;
}

// Roosters block every signal: a process-directed signal (SIGINT, SIGTERM,
// a timer's SIGALRM) must reach a thread of the application, not a rooster
// that inherited its creator's empty mask.
TEST(Roosters, BlockEverySignal)
{
	std::thread([] {
		sigset_t none;
		sigemptyset(&none);
		ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &none, nullptr), 0);
		reclaim_config cfg = TestConfig(RECLAIM_CADENCE);
		reclaim_domain *d;
		ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
		// A rooster names itself when it first runs.
		unsigned found = 0;
		EXPECT_TRUE(WaitFor([&] {
			found = CheckRoosterSignals(false);
			return found == Stats(d).roosters;
		}));
		CheckRoosterSignals(true);
		EXPECT_EQ(reclaim_domain_delete(&d), 0);
	}).join();
}

TEST(ReclaimDomain, SeveralDomainsPerThread)
{
	for (reclaim_scheme s : AllSchemes()) {
		reclaim_config cfg = TestConfig(s);
		reclaim_domain *a, *b;
		ASSERT_EQ(reclaim_domain_new(&a, &cfg), 0);
		ASSERT_EQ(reclaim_domain_new(&b, &cfg), 0);
		reclaim_thread *ta, *tb;
		ASSERT_EQ(reclaim_thread_register(a, &ta), 0);
		ASSERT_EQ(reclaim_thread_register(b, &tb), 0);
		reclaim_op_begin(ta);
		reclaim_op_end(ta);
		reclaim_op_begin(tb);
		reclaim_op_end(tb);
		EXPECT_EQ(reclaim_thread_unregister(&ta), 0);
		// a has no threads left; b still has this one (urcu: still
		// registered with liburcu, so delete must step offline).
		EXPECT_EQ(reclaim_domain_delete(&a), 0) << reclaim_scheme_name(s);
		EXPECT_EQ(reclaim_thread_unregister(&tb), 0);
		EXPECT_EQ(reclaim_domain_delete(&b), 0) << reclaim_scheme_name(s);
	}
}

TEST(ReclaimDomain, NoneFreesOnlyAtDelete)
{
	reclaim_config cfg = TestConfig(RECLAIM_NONE);
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	FreeLog log(1000);
	for (size_t i = 0; i < 1000; i++) {
		reclaim_op_begin(t);
		reclaim_retire(t, NewIdNode(i, &log), FreeIdNode, &log);
		reclaim_op_end(t);
	}
	EXPECT_EQ(reclaim_drain(t), 1000u);
	reclaim_stats st = Stats(d);
	EXPECT_EQ(st.retired, 1000u);
	EXPECT_EQ(st.freed, 0u);
	EXPECT_EQ(st.pending, 1000u);
	EXPECT_EQ(log.total.load(), 0u);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(log.total.load(), 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_TRUE(log.AllOnce(1000));
}

class EveryScheme : public testing::TestWithParam<reclaim_scheme> {};

// Single thread: each retired node reaches its free function, with its ctx,
// exactly once; every scheme but NONE frees before delete once the thread
// keeps draining.
TEST_P(EveryScheme, FreesEachNodeOnce)
{
	const size_t n = 5000;
	reclaim_config cfg = TestConfig(GetParam());
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	FreeLog log(n);
	for (size_t i = 0; i < n; i++) {
		reclaim_op_begin(t);
		reclaim_retire(t, NewIdNode(i, &log), FreeIdNode, &log);
		reclaim_op_end(t);
	}
	EXPECT_EQ(Stats(d).retired, n);
	if (GetParam() != RECLAIM_NONE) {
		bool done = WaitFor([&] { return reclaim_drain(t) == 0; });
		EXPECT_TRUE(done) << "drain never got to 0";
		EXPECT_TRUE(WaitFor([&] { return log.total.load() == n; }));
		reclaim_stats st = Stats(d);
		EXPECT_EQ(st.freed, n);
		EXPECT_EQ(st.pending, 0u);
	}
	// Half of a second batch is left for unregister and delete.
	for (size_t i = 0; i < n / 2; i++)
		reclaim_retire(t, std::malloc(32), nullptr, nullptr);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_TRUE(log.AllOnce(n));
}

TEST_P(EveryScheme, CountersAndMode)
{
	reclaim_config cfg = TestConfig(GetParam());
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	int x;
	for (int i = 0; i < 80; i++) {
		reclaim_op_begin(t);
		reclaim_protect(t, 0, &x);
		reclaim_protect(t, 1, nullptr);
		reclaim_op_end(t);
	}
	reclaim_stats st = Stats(d);
	EXPECT_EQ(st.registered, 1u);
	EXPECT_EQ(st.mode, RECLAIM_MODE_FAST);
	EXPECT_EQ(reclaim_domain_mode(d), RECLAIM_MODE_FAST);
	switch (GetParam()) {
	case RECLAIM_HP:
		EXPECT_EQ(st.fences, 160u);
		EXPECT_TRUE(reclaim_needs_validation(t));
		break;
	case RECLAIM_EBR:
		EXPECT_EQ(st.fences, 80u);
		EXPECT_FALSE(reclaim_needs_validation(t));
		break;
	case RECLAIM_CADENCE:
	case RECLAIM_QSENSE:
		EXPECT_EQ(st.fences, 0u);
		EXPECT_TRUE(reclaim_needs_validation(t));
		break;
	default:
		EXPECT_EQ(st.fences, 0u);
		EXPECT_FALSE(reclaim_needs_validation(t));
	}
	if (GetParam() == RECLAIM_QSBR || GetParam() == RECLAIM_QSENSE ||
			GetParam() == RECLAIM_URCU_QSBR) {
		EXPECT_EQ(st.quiescent_states, 80u / cfg.quiescence_threshold);
	}
	if (GetParam() == RECLAIM_QSBR || GetParam() == RECLAIM_QSENSE) {
		EXPECT_GE(st.epochs, 1u) << "a lone thread advances the epoch";
	}
	if (GetParam() == RECLAIM_CADENCE || GetParam() == RECLAIM_QSENSE) {
		EXPECT_TRUE(WaitFor([&] { return Stats(d).rooster_wakeups >= 2; }));
	} else {
		EXPECT_EQ(st.rooster_wakeups, 0u);
	}
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

INSTANTIATE_TEST_SUITE_P(All, EveryScheme, testing::ValuesIn(AllSchemes()),
	SchemeName);

class HazardSchemes : public testing::TestWithParam<reclaim_scheme> {};

// A node named by a hazard pointer survives scans; clearing the pointer,
// or going offline, lets it go. An unprotected witness retired after the
// two protected nodes marks the scan they must survive: a scan sweeps the
// whole list, and the witness is the youngest (for Cadence, the last to
// become old enough), so the scan that frees it found the other two
// freeable but for their hazard pointers.
TEST_P(HazardSchemes, HazardPointerProtects)
{
	reclaim_config cfg = TestConfig(GetParam());
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	FreeLog log(3);
	IdNode *a = NewIdNode(0, &log), *b = NewIdNode(1, &log);

	reclaim_op_begin(t);
	reclaim_protect(t, 0, a);
	reclaim_protect(t, 3, b);
	reclaim_retire(t, a, FreeIdNode, &log);
	reclaim_retire(t, b, FreeIdNode, &log);
	reclaim_retire(t, NewIdNode(2, &log), FreeIdNode, &log);
	reclaim_op_end(t);
	EXPECT_TRUE(WaitFor([&] {
		reclaim_drain(t);
		return log.count[2].load() == 1;
	})) << "the unprotected witness was never freed";
	EXPECT_EQ(reclaim_drain(t), 2u);
	EXPECT_EQ(log.total.load(), 1u);

	reclaim_op_begin(t);
	reclaim_protect(t, 0, nullptr);
	reclaim_op_end(t);
	EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 1; }));
	EXPECT_EQ(log.count[0].load(), 1u);
	EXPECT_EQ(log.count[1].load(), 0u);

	reclaim_thread_offline(t);
	EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 0; }));
	reclaim_thread_online(t);
	EXPECT_TRUE(log.AllOnce(3));
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

INSTANTIATE_TEST_SUITE_P(Hazards, HazardSchemes,
	testing::Values(RECLAIM_HP, RECLAIM_CADENCE), SchemeName);

} // namespace
