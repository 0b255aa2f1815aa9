// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_membership_test.cc -- threads joining and leaving
// while others run, leftovers handed to the domain, eviction of threads that
// exited without unregistering (and not of live stalled ones), and offline
// threads not holding up grace periods.
#include <gtest/gtest.h>

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
// loop; every node is freed exactly once by destroy at the latest.
TEST_P(Churn, JoinAndLeaveWhileOthersRun)
{
	reclaim_config cfg = TestConfig(GetParam());
	cfg.max_threads = 4;
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_create(&cfg, &d), 0);
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
			EXPECT_EQ(reclaim_thread_unregister(t), 0);
		});
	}
	for (int i = 0; i < 2; i++) {
		th.emplace_back([&] {
			for (int r = 0; r < 40; r++) {
				reclaim_thread *t;
				ASSERT_EQ(reclaim_thread_register(d, &t), 0);
				RetireOps(t, l, 50);
				EXPECT_EQ(reclaim_thread_unregister(t), 0);
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
	EXPECT_EQ(reclaim_domain_destroy(d), 0);
	EXPECT_TRUE(l.log.AllOnce(l.next.load()));
	EXPECT_EQ(l.log.total.load(), l.next.load());
}

INSTANTIATE_TEST_SUITE_P(All, Churn, testing::ValuesIn(AllSchemes()), SchemeName);

// A thread that leaves hands its retired nodes to the domain; the thread
// that stays adopts and frees them long before destroy.
TEST(Membership, LeftoversAreAdopted)
{
	for (reclaim_scheme s : {RECLAIM_QSBR, RECLAIM_EBR, RECLAIM_HP,
			RECLAIM_CADENCE, RECLAIM_QSENSE}) {
		reclaim_config cfg = TestConfig(s);
		reclaim_domain *d;
		ASSERT_EQ(reclaim_domain_create(&cfg, &d), 0);
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
			EXPECT_EQ(reclaim_thread_unregister(t), 0);
		}).join();
		EXPECT_LT(l.log.total.load(), 100u);
		reclaim_thread *t;
		ASSERT_EQ(reclaim_thread_register(d, &t), 0);
		EXPECT_TRUE(WaitFor([&] {
			reclaim_drain(t);
			return l.log.total.load() == 100;
		})) << reclaim_scheme_name(s) << ": orphans never freed";
		EXPECT_TRUE(l.log.AllOnce(100));
		EXPECT_EQ(reclaim_thread_unregister(t), 0);
		EXPECT_EQ(reclaim_domain_destroy(d), 0);
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
	ASSERT_EQ(reclaim_domain_create(&cfg, &d), 0);
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
			EXPECT_EQ(reclaim_thread_unregister(t), 0);
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
	EXPECT_EQ(reclaim_domain_destroy(d), 0);
	EXPECT_TRUE(l.log.AllOnce(l.next.load()));
}

INSTANTIATE_TEST_SUITE_P(EpochSchemes, Eviction,
	testing::Values(RECLAIM_QSBR, RECLAIM_EBR, RECLAIM_QSENSE), SchemeName);

// A registered thread that is alive but blocked is never evicted, however
// long it holds up the grace period.
TEST(Eviction, LiveStalledThreadIsNot)
{
	for (reclaim_scheme s : {RECLAIM_QSBR, RECLAIM_QSENSE}) {
		reclaim_config cfg = TestConfig(s);
		cfg.liveness_check_ms = 20;
		reclaim_domain *d;
		ASSERT_EQ(reclaim_domain_create(&cfg, &d), 0);
		StalledThread stalled(d);
		ASSERT_EQ(stalled.register_ret(), 0);
		Ledger l(100000);
		reclaim_thread *t;
		ASSERT_EQ(reclaim_thread_register(d, &t), 0);
		// Ten liveness periods of blocked grace periods.
		auto until = std::chrono::steady_clock::now() +
			std::chrono::milliseconds(10 * cfg.liveness_check_ms);
		while (std::chrono::steady_clock::now() < until) {
			RetireOps(t, l, 8);
			std::this_thread::sleep_for(std::chrono::microseconds(500));
		}
		reclaim_stats st = Stats(d);
		EXPECT_EQ(st.evicted, 0u) << reclaim_scheme_name(s);
		EXPECT_EQ(st.registered, 2u);
		if (s == RECLAIM_QSBR) {
			EXPECT_EQ(st.freed, 0u);
		}
		stalled.Resume();
		EXPECT_TRUE(WaitFor([&] { return reclaim_drain(t) == 0; }));
		EXPECT_EQ(reclaim_thread_unregister(t), 0);
		stalled.Stop();
		EXPECT_EQ(Stats(d).evicted, 0u);
		EXPECT_EQ(reclaim_domain_destroy(d), 0);
		EXPECT_TRUE(l.log.AllOnce(l.next.load()));
	}
}

// An offline thread does not hold up grace periods; back online, it does.
TEST(Offline, DoesNotBlockGracePeriods)
{
	for (reclaim_scheme s : {RECLAIM_QSBR, RECLAIM_QSENSE, RECLAIM_URCU_QSBR}) {
		reclaim_config cfg = TestConfig(s);
		reclaim_domain *d;
		ASSERT_EQ(reclaim_domain_create(&cfg, &d), 0);
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
			EXPECT_EQ(reclaim_thread_unregister(t), 0);
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
		EXPECT_EQ(reclaim_thread_unregister(t), 0);
		EXPECT_EQ(reclaim_domain_destroy(d), 0);
		EXPECT_TRUE(l.log.AllOnce(250));
	}
}

} // namespace
