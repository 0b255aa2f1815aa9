// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_membership_test.cc -- threads joining and leaving
// while others run, leftovers handed to the domain, eviction of threads that
// exited without unregistering (and not of live stalled ones), and offline
// threads not holding up grace periods.
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "reclaim/src/reclaim_testing.h"
#include "reclaim_test_util.h"

using namespace reclaimtest;

namespace {

// Hands out node ids and logs their frees.
struct Ledger {
	explicit Ledger(size_t n) : log(n) {}
	FreeLog log;
	std::atomic<size_t> next{0};

	void Retire(reclaim_thread *t)
	{
		size_t id = next.fetch_add(1);
		ASSERT_LT(id, log.count.size());
		reclaim_retire(t, NewIdNode(id, &log), FreeIdNode, &log);
	}
};

// @ops operations, each retiring one node.
void RetireOps(reclaim_thread *t, Ledger &l, int ops)
{
	for (int i = 0; i < ops; i++) {
		reclaim_op_begin(t);
		l.Retire(t);
		reclaim_op_end(t);
	}
}

class Churn : public testing::TestWithParam<reclaim_scheme> {};

// Two threads run throughout while two others join, retire and leave in a
// loop; every node is freed exactly once by delete at the latest.
TEST_P(Churn, JoinAndLeaveWhileOthersRun)
{
	reclaim_config cfg = TestConfig(GetParam());
	cfg.max_threads = 4;
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	Ledger l(2000000);
	std::atomic<bool> stop{false};
	std::atomic<int> rounds{0};
	std::vector<std::thread> th;
	for (int i = 0; i < 2; i++) {
		th.emplace_back([&] {
			reclaim_thread *t;
			ASSERT_EQ(reclaim_thread_register(d, &t), 0);
			while (!stop.load()) {
				RetireOps(t, l, 20);
				std::this_thread::sleep_for(std::chrono::microseconds(100));
			}
			EXPECT_EQ(reclaim_thread_unregister(&t), 0);
		});
	}
	for (int i = 0; i < 2; i++) {
		th.emplace_back([&] {
			for (int r = 0; r < 40; r++) {
				reclaim_thread *t;
				ASSERT_EQ(reclaim_thread_register(d, &t), 0);
				RetireOps(t, l, 50);
				EXPECT_EQ(reclaim_thread_unregister(&t), 0);
				rounds++;
			}
		});
	}
	EXPECT_TRUE(WaitFor([&] { return rounds.load() == 80; }, 60.0));
	stop = true;
	for (auto &x : th)
		x.join();
	reclaim_stats st = Stats(d);
	EXPECT_EQ(st.retired, l.next.load());
	EXPECT_EQ(st.registered, 0u);
	EXPECT_EQ(st.evicted, 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_TRUE(l.log.AllOnce(l.next.load()));
	EXPECT_EQ(l.log.total.load(), l.next.load());
}

INSTANTIATE_TEST_SUITE_P(All, Churn, testing::ValuesIn(AllSchemes()), SchemeName);

// A thread that leaves hands its retired nodes to the domain; the thread
// that stays adopts and frees them long before delete.
TEST(Membership, LeftoversAreAdopted)
{
	for (reclaim_scheme s : {RECLAIM_QSBR, RECLAIM_EBR, RECLAIM_HP,
			RECLAIM_CADENCE, RECLAIM_QSENSE}) {
		reclaim_config cfg = TestConfig(s);
		reclaim_domain *d;
		ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
		Ledger l(100);
		std::thread([&] {
			reclaim_thread *t;
			ASSERT_EQ(reclaim_thread_register(d, &t), 0);
			// One operation: no quiescent state, and the last
			// 100 % R retires come after the last scan.
			reclaim_op_begin(t);
			for (int i = 0; i < 100; i++)
				l.Retire(t);
			reclaim_op_end(t);
			EXPECT_EQ(reclaim_thread_unregister(&t), 0);
		}).join();
		EXPECT_LT(l.log.total.load(), 100u);
		reclaim_thread *t;
		ASSERT_EQ(reclaim_thread_register(d, &t), 0);
		EXPECT_TRUE(WaitFor([&] {
			reclaim_drain(t);
			return l.log.total.load() == 100;
		})) << reclaim_scheme_name(s) << ": orphans never freed";
		EXPECT_TRUE(l.log.AllOnce(100));
		EXPECT_EQ(reclaim_thread_unregister(&t), 0);
		EXPECT_EQ(reclaim_domain_delete(&d), 0);
	}
}

class Eviction : public testing::TestWithParam<reclaim_scheme> {};

// A thread registers, retires, starts an operation and exits without
// unregistering. The survivors' grace periods (or QSense's presence
// checks) find it lagging, see that its OS thread is gone and evict it;
// its nodes are freed by the survivors, and QSense returns to its fast
// path.
TEST_P(Eviction, DeadThreadIsEvicted)
{
	reclaim_scheme scheme = GetParam();
	reclaim_config cfg = TestConfig(scheme);
	// Small C: QSense falls back long before the liveness check fires.
	cfg.fallback_threshold = 16;
	cfg.liveness_check_ms = 200;
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	Ledger l(100000);
	const size_t dead_nodes = 50;
	std::thread([&] {
		reclaim_thread *t;
		ASSERT_EQ(reclaim_thread_register(d, &t), 0);
		RetireOps(t, l, (int)dead_nodes);
		reclaim_op_begin(t);
		// ... and the thread is gone, registered, inside an operation.
	}).join();
	EXPECT_EQ(Stats(d).registered, 1u);

	std::atomic<bool> stop{false};
	std::vector<std::thread> th;
	for (int i = 0; i < 2; i++) {
		th.emplace_back([&] {
			reclaim_thread *t;
			ASSERT_EQ(reclaim_thread_register(d, &t), 0);
			while (!stop.load()) {
				RetireOps(t, l, 8);
				std::this_thread::sleep_for(std::chrono::microseconds(200));
			}
			EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 0; }));
			EXPECT_EQ(reclaim_thread_unregister(&t), 0);
		});
	}
	if (scheme == RECLAIM_QSENSE) {
		EXPECT_TRUE(WaitFor([&] { return Stats(d).to_fallback >= 1; }));
	}
	EXPECT_TRUE(WaitFor([&] { return Stats(d).evicted == 1; }))
		<< "the dead thread was never evicted";
	EXPECT_EQ(Stats(d).registered, 2u);
	uint64_t epochs = Stats(d).epochs;
	EXPECT_TRUE(WaitFor([&] { return Stats(d).epochs >= epochs + 3; }))
		<< "grace periods stay blocked";
	EXPECT_TRUE(WaitFor([&] {
		for (size_t i = 0; i < dead_nodes; i++)
			if (l.log.count[i].load() != 1)
				return false;
		return true;
	})) << "the dead thread's nodes were not freed";
	if (scheme == RECLAIM_QSENSE) {
		EXPECT_TRUE(WaitFor([&] {
			return reclaim_domain_mode(d) == RECLAIM_MODE_FAST;
		})) << "QSense stayed in the fallback";
		EXPECT_GE(Stats(d).to_fast, 1u);
	}
	stop = true;
	for (auto &x : th)
		x.join();
	reclaim_stats st = Stats(d);
	EXPECT_EQ(st.evicted, 1u);
	EXPECT_EQ(st.registered, 0u);
	EXPECT_EQ(st.pending, 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_TRUE(l.log.AllOnce(l.next.load()));
}

INSTANTIATE_TEST_SUITE_P(EpochSchemes, Eviction,
	testing::Values(RECLAIM_QSBR, RECLAIM_EBR, RECLAIM_QSENSE), SchemeName);

// Blocked grace periods until the waiting thread has looked the stalled
// one up in /proc kChecks times (stats.liveness_checks: the stalled thread
// is the only one that can lag), each after a liveness period; @step runs
// some operations. WaitFor polls at most once a millisecond, so its 20 s
// guard bounds the nodes a Ledger of kLedger must hold.
constexpr uint64_t kChecks = 3;
constexpr size_t kLedger = 200000;

bool BlockUntilChecked(reclaim_domain *d, const std::function<void()> &step)
{
	return WaitFor([&] {
		step();
		return Stats(d).liveness_checks >= kChecks;
	});
}

// A registered thread that is alive but blocked is never evicted, however
// often it is found holding up the grace period.
TEST(Eviction, LiveStalledThreadIsNot)
{
	for (reclaim_scheme s : {RECLAIM_QSBR, RECLAIM_QSENSE}) {
		reclaim_config cfg = TestConfig(s);
		cfg.liveness_check_ms = 20;
		reclaim_domain *d;
		ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
		StalledThread stalled(d);
		ASSERT_EQ(stalled.register_ret(), 0);
		Ledger l(kLedger);
		reclaim_thread *t;
		ASSERT_EQ(reclaim_thread_register(d, &t), 0);
		ASSERT_TRUE(BlockUntilChecked(d, [&] { RetireOps(t, l, 8); }))
			<< reclaim_scheme_name(s) << ": the stalled thread was never checked";
		reclaim_stats st = Stats(d);
		EXPECT_EQ(st.evicted, 0u) << reclaim_scheme_name(s);
		EXPECT_EQ(st.registered, 2u);
		if (s == RECLAIM_QSBR) {
			EXPECT_EQ(st.freed, 0u);
		}
		stalled.Resume();
		EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 0; }));
		EXPECT_EQ(reclaim_thread_unregister(&t), 0);
		stalled.Stop();
		EXPECT_EQ(Stats(d).evicted, 0u);
		EXPECT_EQ(reclaim_domain_delete(&d), 0);
		EXPECT_TRUE(l.log.AllOnce(l.next.load()));
	}
}

// A free function that ends its thread (pthread_exit(), or a cancellation
// point with cancellation enabled) may do so in the middle of a sweep. The
// nodes already handed to free functions must not be handed over again when
// the dead thread is evicted; the ones not yet reached are leaked (never
// freed twice).
struct ExitingFreeLog {
	static constexpr int kNodes = 10;
	static constexpr int kExitAt = 5; // the 5th free function call exits
	int ids[kNodes];
	std::atomic<int> count[kNodes] {};
	std::atomic<int> calls{0};
	reclaim_domain *d;
	std::atomic<int> registered{0};
};

void ExitingFree(void *node, void *ctx)
{
	ExitingFreeLog *log = static_cast<ExitingFreeLog *>(ctx);
	log->count[*static_cast<int *>(node)]++;
	if (++log->calls == ExitingFreeLog::kExitAt)
		pthread_exit(nullptr);
}

// Started with pthread_create: pthread_exit() must not unwind through a
// std::thread.
void *RetireThenDieInFree(void *arg)
{
	ExitingFreeLog *log = static_cast<ExitingFreeLog *>(arg);
	reclaim_thread *t;
	if (reclaim_thread_register(log->d, &t) != 0)
		return nullptr;
	log->registered = 1;
	reclaim_op_begin(t);
	for (int i = 0; i < ExitingFreeLog::kNodes; i++)
		reclaim_retire(t, &log->ids[i], ExitingFree, log);
	reclaim_op_end(t);
	// Alone in the domain, Q = 1: a few quiescent states advance the
	// epoch twice and free all ten nodes in one sweep.
	for (int i = 0; i < 100; i++) {
		reclaim_op_begin(t);
		reclaim_op_end(t);
	}
	log->registered = 2; // not reached
	return nullptr;
}

TEST(Eviction, ThreadExitingInFreeFunctionFreesNothingTwice)
{
	reclaim_config cfg = TestConfig(RECLAIM_QSBR);
	cfg.quiescence_threshold = 1;
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	ExitingFreeLog log;
	for (int i = 0; i < ExitingFreeLog::kNodes; i++)
		log.ids[i] = i;
	log.d = d;
	pthread_t th;
	ASSERT_EQ(pthread_create(&th, nullptr, RetireThenDieInFree, &log), 0);
	ASSERT_EQ(pthread_join(th, nullptr), 0);
	ASSERT_EQ(log.registered.load(), 1);
	ASSERT_EQ(log.calls.load(), ExitingFreeLog::kExitAt);

	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	EXPECT_TRUE(WaitFor([&] {
		reclaim_op_begin(t);
		reclaim_op_end(t);
		return Stats(d).evicted == 1;
	})) << "the dead thread was never evicted";
	// Whatever the evictor took over is freed within a few epochs.
	EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 0; }));
	int total = 0;
	for (int i = 0; i < ExitingFreeLog::kNodes; i++) {
		EXPECT_LE(log.count[i].load(), 1) << "node " << i << " freed twice";
		total += log.count[i].load();
	}
	EXPECT_EQ(total, ExitingFreeLog::kExitAt);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_LE(log.calls.load(), ExitingFreeLog::kExitAt + ExitingFreeLog::kNodes);
}

// A fresh empty directory under the test's temporary directory.
std::string TempDir(const char *name)
{
	const char *tmp = std::getenv("TEST_TMPDIR");
	std::string pat = std::string(tmp ? tmp : "/tmp") + "/" + name + "XXXXXX";
	std::vector<char> buf(pat.begin(), pat.end());
	buf.push_back('\0');
	EXPECT_NE(mkdtemp(buf.data()), nullptr);
	return buf.data();
}

// Makes thread @tid look alive in a directory that stands for
// /proc/self/task (reclaim__test_task_dir()): a copy of its stat file.
void MirrorTask(const std::string &dir, int tid)
{
	std::string sub = dir + "/" + std::to_string(tid);
	ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
	std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
	std::ofstream out(sub + "/stat");
	out << in.rdbuf();
}

// ... and dead.
void ForgetTask(const std::string &dir, int tid)
{
	std::string sub = dir + "/" + std::to_string(tid);
	ASSERT_EQ(unlink((sub + "/stat").c_str()), 0);
	ASSERT_EQ(rmdir(sub.c_str()), 0);
}

// A process that loses /proc (a chroot or an unmount after start-up) must
// not take its live threads for dead. The domain keeps the directory it
// opened at create, and a missing entry counts as a death only if the
// caller's own entry is there; an empty directory stands for a /proc that
// lists nothing. (reclaim_chroot_test does the same with a real chroot.)
TEST(Eviction, LiveThreadWithoutProcIsNot)
{
	for (reclaim_scheme s : {RECLAIM_QSBR, RECLAIM_QSENSE}) {
		reclaim_config cfg = TestConfig(s);
		cfg.liveness_check_ms = 10;
		cfg.quiescence_threshold = 1;
		reclaim_domain *d;
		ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
		// Registered while /proc works: its start time is known.
		StalledThread stalled(d);
		ASSERT_EQ(stalled.register_ret(), 0);
		// Nobody else is inside the domain yet.
		ASSERT_EQ(reclaim__test_task_dir(d, TempDir("empty").c_str()), 0);
		Ledger l(kLedger);
		reclaim_thread *t;
		ASSERT_EQ(reclaim_thread_register(d, &t), 0);
		ASSERT_TRUE(BlockUntilChecked(d, [&] {
			RetireOps(t, l, 8);
			reclaim_drain(t);
		})) << reclaim_scheme_name(s) << ": the stalled thread was never checked";
		reclaim_stats st = Stats(d);
		EXPECT_EQ(st.evicted, 0u) << reclaim_scheme_name(s);
		EXPECT_EQ(st.registered, 2u);
		if (s == RECLAIM_QSBR) {
			EXPECT_EQ(st.freed, 0u);
		}
		stalled.Resume();
		EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 0; }));
		EXPECT_EQ(reclaim_thread_unregister(&t), 0);
		stalled.Stop();
		EXPECT_EQ(Stats(d).evicted, 0u);
		EXPECT_EQ(reclaim_domain_delete(&d), 0);
		EXPECT_TRUE(l.log.AllOnce(l.next.load()));
	}
}

// If a live thread is ever evicted anyway, its handle must not control the
// slot's next owner: its unregister returns -ESRCH and leaves the new
// owner registered, and its slow paths (here a quiescent state) do nothing.
TEST(Eviction, StaleHandleLeavesTheNewOwnerAlone)
{
	reclaim_config cfg = TestConfig(RECLAIM_QSBR);
	cfg.liveness_check_ms = 10;
	cfg.quiescence_threshold = 1;
	cfg.max_threads = 4;
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	std::string fake = TempDir("tasks");
	ASSERT_EQ(reclaim__test_task_dir(d, fake.c_str()), 0);
	MirrorTask(fake, gettid());
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);

	std::atomic<int> stage{0};
	std::atomic<int> victim_tid{0};
	reclaim_thread *victim = nullptr, *z = nullptr;
	int victim_unregister = 1, victim_retire = 1, z_register = 1, z_unregister = 1;
	static int kept; // what the stale handle tries to retire
	std::thread v([&] {
		victim_tid = gettid();
		MirrorTask(fake, victim_tid);
		ASSERT_EQ(reclaim_thread_register(d, &victim), 0);
		reclaim_op_begin(victim); // stalls inside an operation
		stage = 1;
		while (stage.load() < 3)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		reclaim_op_end(victim); // Q = 1: the slow path
		victim_retire = reclaim_retire(victim, &kept, [](void *, void *) {}, nullptr);
		victim_unregister = reclaim_thread_unregister(&victim);
		stage = 4;
	});
	ASSERT_TRUE(WaitFor([&] { return stage.load() == 1; }));
	ForgetTask(fake, victim_tid); // alive, but now looks dead
	EXPECT_TRUE(WaitFor([&] {
		reclaim_op_begin(t);
		reclaim_op_end(t);
		return Stats(d).evicted == 1;
	}));

	std::thread zt([&] {
		MirrorTask(fake, gettid());
		z_register = reclaim_thread_register(d, &z);
		stage = 2;
		// Only after the main thread's check that the stale handle's
		// unregister left this one registered.
		while (stage.load() < 5)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		if (z_register != 0)
			return;
		for (int i = 0; i < 10; i++) {
			reclaim_op_begin(z);
			reclaim_op_end(z);
		}
		z_unregister = reclaim_thread_unregister(&z);
	});
	ASSERT_TRUE(WaitFor([&] { return stage.load() == 2; }));
	ASSERT_EQ(z_register, 0);
	EXPECT_EQ(z, victim) << "the new owner did not reuse the evicted slot";
	EXPECT_EQ(Stats(d).registered, 2u);
	stage = 3;
	v.join();
	EXPECT_EQ(victim_retire, -ESRCH) << "the stale handle retired a node";
	EXPECT_EQ(victim_unregister, -ESRCH);
	EXPECT_EQ(Stats(d).registered, 2u) << "the stale handle unregistered the new owner";
	stage = 5;
	zt.join();
	EXPECT_EQ(z_unregister, 0);
	EXPECT_EQ(Stats(d).registered, 1u);

	// Grace periods still work for the survivor.
	Ledger l(100);
	RetireOps(t, l, 10);
	EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 0; }));
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_TRUE(l.log.AllOnce(10));
}

// A thread that died half-registered was never counted: delete evicts its
// slot without uncounting anyone (here it then stops at a live thread).
TEST(DomainDelete, HalfRegisteredDeadThreadIsNotCounted)
{
	reclaim_config cfg = TestConfig(RECLAIM_QSBR);
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	int tid = 0;
	std::thread([&] {
		tid = gettid();
		EXPECT_EQ(reclaim__test_claim(d), 0);
	}).join();
	std::string task = "/proc/self/task/" + std::to_string(tid);
	ASSERT_TRUE(WaitFor([&] { return access(task.c_str(), F_OK) != 0; }));
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	EXPECT_EQ(Stats(d).registered, 1u);
	EXPECT_EQ(reclaim_domain_delete(&d), -EBUSY);
	EXPECT_EQ(Stats(d).registered, 1u);
	EXPECT_EQ(Stats(d).evicted, 0u);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(Stats(d).registered, 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

// An offline thread does not hold up grace periods; back online, it does.
TEST(Offline, DoesNotBlockGracePeriods)
{
	for (reclaim_scheme s : {RECLAIM_QSBR, RECLAIM_QSENSE, RECLAIM_URCU_QSBR}) {
		reclaim_config cfg = TestConfig(s);
		reclaim_domain *d;
		ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
		std::mutex mu;
		std::condition_variable cv;
		int phase = 0; // 1: offline, 2: may come online, 3: online
		std::thread sleeper([&] {
			reclaim_thread *t;
			ASSERT_EQ(reclaim_thread_register(d, &t), 0);
			reclaim_thread_offline(t);
			std::unique_lock<std::mutex> lk(mu);
			phase = 1;
			cv.notify_all();
			cv.wait(lk, [&] { return phase == 2; });
			reclaim_thread_online(t);
			phase = 3;
			cv.notify_all();
			cv.wait(lk, [&] { return phase == 4; });
			lk.unlock();
			EXPECT_EQ(reclaim_thread_unregister(&t), 0);
		});
		{
			std::unique_lock<std::mutex> lk(mu);
			cv.wait(lk, [&] { return phase == 1; });
		}
		Ledger l(10000);
		reclaim_thread *t;
		ASSERT_EQ(reclaim_thread_register(d, &t), 0);
		RetireOps(t, l, 200);
		EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 0; }))
			<< reclaim_scheme_name(s) << ": the offline thread blocked";
		EXPECT_EQ(l.log.total.load(), 200u);

		{
			std::unique_lock<std::mutex> lk(mu);
			phase = 2;
			cv.notify_all();
			cv.wait(lk, [&] { return phase == 3; });
		}
		// Online but idle: nothing retired from now on is freed
		// (QSBR; QSense would fall back, urcu is liburcu's).
		RetireOps(t, l, 50);
		if (s == RECLAIM_QSBR) {
			for (int i = 0; i < 20; i++)
				reclaim_drain(t);
			EXPECT_EQ(l.log.total.load(), 200u);
		}
		{
			std::lock_guard<std::mutex> lk(mu);
			phase = 4;
			cv.notify_all();
		}
		sleeper.join();
		EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 0; }));
		EXPECT_EQ(reclaim_thread_unregister(&t), 0);
		EXPECT_EQ(reclaim_domain_delete(&d), 0);
		EXPECT_TRUE(l.log.AllOnce(250));
	}
}

} // namespace
