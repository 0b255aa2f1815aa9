// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_bound_test.cc -- robustness: one registered thread
// stalls (blocked, not offline) while the others retire.
//   - QSBR stops freeing altogether: pending grows by exactly what is retired.
//   - QSense switches to its fallback and stays within 2NC (Prop. 6.6.5);
//     Cadence stays within N(K + Y + R) (Prop. 6.6.3).
//   - When the thread resumes, QSense returns to the fast path and pending
//     drops back.
//
// Y, the most nodes one thread retires while the roosters complete one
// round, is what the bounds are stated in. The thesis derives it from the
// retire rate and a rooster round of T + 2 epsilon, which holds only while
// roosters never oversleep by more than epsilon; a loaded machine breaks
// that. So the throttled workers enforce Y themselves, from the roosters'
// progress rather than from sleeps: a worker retires its n-th node only
// once its (n - Y + 1)-th is old enough for Cadence (retired, by the
// worker's clock reading after the call, more than epsilon before every
// rooster's last wake-up; reclaim__test_min_wake). At most Y of a thread's
// nodes are then too young at any time, however the threads are scheduled.
#include <cstdio>
#include <deque>

#include <gtest/gtest.h>

#include "reclaim/src/reclaim_testing.h"
#include "reclaim_test_util.h"

using namespace reclaimtest;

namespace {

constexpr unsigned kWorkers = 3;
constexpr unsigned kThreads = kWorkers + 1; // N: the stalled one counts
constexpr uint64_t kYoung = 11;             // Y: a throttled worker's young nodes
// Without roosters (QSBR) there is no bound to keep, only memory: a
// throttled worker retires at most one node per kPace.
constexpr auto kPace = std::chrono::microseconds(500);

// Retiring threads, each replacing the node of its own slot and retiring
// the old one, one per operation (m = 1).
class Workers {
public:
	// @eps_ns: the domain's epsilon.
	Workers(reclaim_domain *d, unsigned n, uint64_t eps_ns)
		: d_(d), eps_(eps_ns), roosters_(Stats(d).roosters != 0), slot_(n)
	{
		for (unsigned i = 0; i < n; i++) {
			slot_[i].store(NewNode(i));
			th_.emplace_back([this, i] { Run(i); });
		}
	}
	~Workers() { Stop(); }

	// Throttled (at most Y young nodes per worker; without roosters one
	// retire per kPace) or as fast as possible.
	void SetThrottle(bool on) { throttle_ = on; }
	void SetRetiring(bool on) { retiring_ = on; }
	uint64_t retires() const { return retires_.load(); }
	// Stop, drain every worker's list, unregister.
	void Stop()
	{
		stop_ = true;
		for (auto &t : th_)
			if (t.joinable())
				t.join();
		for (auto &s : slot_)
			if (Node *n = s.exchange(nullptr))
				PoisonFree(n, &freed_);
	}
	bool drained() const { return undrained_.load() == 0; }

private:
	void Run(unsigned i)
	{
		reclaim_thread *t;
		std::deque<uint64_t> stamps; // after each retire, newest last
		ASSERT_EQ(reclaim_thread_register(d_, &t), 0);
		while (!stop_) {
			if (throttle_ && retiring_ && roosters_)
				AwaitOldEnough(&stamps);
			else if (throttle_)
				std::this_thread::sleep_for(kPace);
			reclaim_op_begin(t);
			Node *p;
			do {
				p = slot_[i].load();
				reclaim_protect(t, 0, p);
			} while (reclaim_needs_validation(t) && slot_[i].load() != p);
			if (!NodeIntact(p))
				ADD_FAILURE() << "read a freed node";
			if (retiring_) {
				slot_[i].store(NewNode(i));
				reclaim_retire(t, p, PoisonFree, &freed_);
				stamps.push_back(reclaim__test_now());
				retires_++;
			}
			reclaim_protect(t, 0, nullptr);
			reclaim_op_end(t);
			std::this_thread::yield();
		}
		if (!WaitFor([&] { return reclaim_drain(t) == 0; }))
			undrained_++;
		EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	}

	// Between operations (holding no reference): wait until at most
	// Y - 1 of this worker's retired nodes are too young for Cadence.
	void AwaitOldEnough(std::deque<uint64_t> *stamps)
	{
		while (stamps->size() >= kYoung) {
			if (stamps->front() + eps_ < reclaim__test_min_wake(d_)) {
				stamps->pop_front();
				continue;
			}
			if (stop_)
				return;
			std::this_thread::yield();
		}
	}

	reclaim_domain *d_;
	uint64_t eps_;
	bool roosters_;
	std::vector<std::atomic<Node *>> slot_;
	std::vector<std::thread> th_;
	std::atomic<bool> stop_{false};
	std::atomic<bool> throttle_{true};
	std::atomic<bool> retiring_{true};
	std::atomic<uint64_t> retires_{0};
	std::atomic<uint64_t> freed_{0};
	std::atomic<unsigned> undrained_{0};
};

reclaim_config BoundConfig(reclaim_scheme scheme, uint64_t *young)
{
	reclaim_config cfg = TestConfig(scheme);
	cfg.hazards_per_thread = 4;
	cfg.quiescence_threshold = 1;
	cfg.scan_threshold = 16;
	cfg.rooster_interval_us = 1000;
	cfg.epsilon_us = 2000;
	*young = kYoung;
	return cfg;
}

// Samples stats.pending every millisecond until @retires retires were done
// by the workers; returns the largest sample.
uint64_t MaxPendingOver(reclaim_domain *d, Workers &w, uint64_t retires)
{
	uint64_t max = 0;
	uint64_t target = w.retires() + retires;
	bool done = WaitFor([&] {
		max = std::max(max, Stats(d).pending);
		return w.retires() >= target;
	}, 60.0);
	EXPECT_TRUE(done) << "workers stopped retiring";
	return max;
}

TEST(Robustness, QsbrStopsFreeingWhileAThreadStalls)
{
	uint64_t young;
	reclaim_config cfg = BoundConfig(RECLAIM_QSBR, &young);
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	// Stalled from before the first retire: no node is ever two epochs
	// old while it stays (the epoch moves one step at most).
	StalledThread stalled(d);
	ASSERT_EQ(stalled.register_ret(), 0);
	{
		Workers w(d, kWorkers, cfg.epsilon_us * 1000ull);
		uint64_t last = 0;
		// At least 600 retires, and four lookups of the stalled
		// thread in /proc (the only thread that can lag), each after
		// a liveness period: "not evicted" below is relative to them.
		ASSERT_TRUE(WaitFor([&] {
			reclaim_stats st = Stats(d);
			EXPECT_EQ(st.freed, 0u);
			EXPECT_EQ(st.pending, st.retired);
			EXPECT_GE(st.pending, last) << "pending went down";
			last = st.pending;
			return w.retires() >= 600 && st.liveness_checks >= 4;
		}, 60.0));
		reclaim_stats st = Stats(d);
		EXPECT_EQ(st.freed, 0u);
		EXPECT_GE(st.pending, 600u);
		EXPECT_LE(st.epochs, 1u);
		EXPECT_EQ(st.evicted, 0u) << "a live stalled thread was evicted";

		stalled.Resume();
		w.SetThrottle(false);
		EXPECT_TRUE(WaitFor([&] { return Stats(d).freed > 0; }))
			<< "nothing freed after the stalled thread resumed";
		w.SetRetiring(false);
		w.Stop();
		EXPECT_TRUE(w.drained());
	}
	stalled.Stop();
	reclaim_stats st = Stats(d);
	EXPECT_EQ(st.pending, 0u);
	EXPECT_EQ(st.evicted, 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

TEST(Robustness, QsenseFallsBackWithinItsBoundAndRecovers)
{
	uint64_t young;
	reclaim_config cfg = BoundConfig(RECLAIM_QSENSE, &young);
	struct reclaim_bound b;
	// The smallest legal C.
	ASSERT_EQ(reclaim_bound_compute(&cfg, kThreads, 1, young, &b), 0);
	cfg.fallback_threshold = (unsigned)b.c_min;
	ASSERT_EQ(reclaim_bound_compute(&cfg, kThreads, 1, young, &b), 0);
	ASSERT_TRUE(b.c_legal);
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	StalledThread stalled(d);
	ASSERT_EQ(stalled.register_ret(), 0);
	{
		Workers w(d, kWorkers, cfg.epsilon_us * 1000ull);
		EXPECT_TRUE(WaitFor([&] {
			return reclaim_domain_mode(d) == RECLAIM_MODE_FALLBACK;
		})) << "never switched to the fallback";
		// Well past 2NC retires: unbounded growth would show.
		uint64_t max = MaxPendingOver(d, w, 3 * b.qsense);
		reclaim_stats st = Stats(d);
		std::printf("qsense: C %u, pending max %llu sampled, %llu by "
			"retires; 2NC %llu\n", cfg.fallback_threshold,
			(unsigned long long)max, (unsigned long long)st.pending_max,
			(unsigned long long)b.qsense);
		EXPECT_LE(max, b.qsense) << "2NC with C = " << cfg.fallback_threshold;
		EXPECT_LE(st.pending_max, b.qsense);
		EXPECT_GT(st.retired, 3 * b.qsense);
		EXPECT_GE(st.to_fallback, 1u);
		EXPECT_GT(st.scans, 0u);
		EXPECT_EQ(st.mode, RECLAIM_MODE_FALLBACK);
		EXPECT_EQ(st.evicted, 0u) << "a live stalled thread was evicted";

		stalled.Resume();
		w.SetThrottle(false);
		EXPECT_TRUE(WaitFor([&] {
			return reclaim_domain_mode(d) == RECLAIM_MODE_FAST;
		})) << "never returned to the fast path";
		EXPECT_GE(Stats(d).to_fast, 1u);
		w.SetRetiring(false);
		w.Stop();
		EXPECT_TRUE(w.drained());
	}
	stalled.Stop();
	EXPECT_EQ(Stats(d).pending, 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

TEST(Robustness, CadenceStaysWithinItsBound)
{
	uint64_t young;
	reclaim_config cfg = BoundConfig(RECLAIM_CADENCE, &young);
	struct reclaim_bound b;
	ASSERT_EQ(reclaim_bound_compute(&cfg, kThreads, 1, young, &b), 0);
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	StalledThread stalled(d);
	ASSERT_EQ(stalled.register_ret(), 0);
	{
		Workers w(d, kWorkers, cfg.epsilon_us * 1000ull);
		uint64_t max = MaxPendingOver(d, w, 3 * b.cadence);
		reclaim_stats st = Stats(d);
		std::printf("cadence: Y %llu, pending max %llu sampled, %llu by "
			"retires; N(K + Y + R) %llu\n", (unsigned long long)young,
			(unsigned long long)max, (unsigned long long)st.pending_max,
			(unsigned long long)b.cadence);
		EXPECT_LE(max, b.cadence) << "N(K + Y + R) with Y = " << young;
		EXPECT_LE(st.pending_max, b.cadence);
		EXPECT_GT(st.freed, 0u);
		w.SetRetiring(false);
		w.Stop();
		EXPECT_TRUE(w.drained());
	}
	stalled.Stop();
	EXPECT_EQ(Stats(d).pending, 0u);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

} // namespace
