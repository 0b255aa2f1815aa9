// SPDX-License-Identifier: BSD-3-Clause
// onll/tests/onll_test.cc -- the ONLL core: API errors, fence and flush
// counts (1 fence per update, 0 per read, alone and under contention),
// recovery across reopen, damaged areas, bounded memory over long runs,
// thread slots.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <algorithm>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <onll/objects.h>
#include <onll/onll.h>
#include <pm/area.h>
#include <pm/cost.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "onll/tests/onll_test_util.h"

namespace {

using onlltest::Env;
using onlltest::SmallConfig;

onll_stats Total(const onll *o)
{
	onll_stats s;
	onll_stats_total(o, &s);
	return s;
}

// The persistence costs this thread incurs running @body.
template <class Body>
pm_cost CostOf(Body body)
{
	pm_cost before, after, d;
	pm_cost_read_thread(&before);
	body();
	pm_cost_read_thread(&after);
	pm_cost_diff(&after, &before, &d);
	return d;
}

// A counter named @name with config @c in @e, thread *@t registered on it,
// and @adds adds of @delta through it. Call under ASSERT_NO_FATAL_FAILURE.
void CounterAfterAdds(Env *e, const char *name, const onll_config &c, onll_thread **t, int adds,
	int64_t delta)
{
	ASSERT_EQ(e->Create(name, c, onll_counter_type()), 0);
	ASSERT_EQ(onll_thread_register(e->o, t), 0);
	for (int i = 0; i < adds; i++)
		ASSERT_EQ(onll_counter_add(*t, delta, nullptr), 0);
}

TEST(OnllConfig, DefaultsAndBounds)
{
	onll_config c;
	onll_config_init(&c);
	EXPECT_GT(onll_area_size(&c), 0u);
	EXPECT_EQ(onll_area_size(nullptr), onll_area_size(&c));
	onll_config bad = c;
	bad.max_threads = 0;
	EXPECT_EQ(onll_area_size(&bad), 0u);
	bad = c;
	bad.max_op_size = 5000;
	EXPECT_EQ(onll_area_size(&bad), 0u);
	bad = c;
	bad.log_entries = 3;
	EXPECT_EQ(onll_area_size(&bad), 0u);
	bad = c;
	bad.checkpoint_every = bad.log_entries;
	EXPECT_EQ(onll_area_size(&bad), 0u);
	bad = c;
	bad.checkpoint_capacity = 4;
	EXPECT_EQ(onll_area_size(&bad), 0u);
}

TEST(OnllCreate, RejectsBadArguments)
{
	Env e;
	onll_config c = SmallConfig();
	ASSERT_EQ(e.Create("create-args", c, onll_counter_type()), 0);
	ASSERT_EQ(onll_close(&e.o), 0);
	onll *o = nullptr;
	EXPECT_EQ(onll_create(&o, e.pool, e.area_off, &c, nullptr), -EINVAL);
	onll_type partial = *onll_counter_type();
	partial.apply = nullptr;
	EXPECT_EQ(onll_create(&o, e.pool, e.area_off, &c, &partial), -EINVAL);
	EXPECT_EQ(onll_create(&o, e.pool, e.area_off + 8, &c, onll_counter_type()), -EINVAL);
	EXPECT_EQ(onll_create(&o, e.pool, pm_pool_size(e.pool) - 64, &c, onll_counter_type()),
		-ERANGE);
	onll_config bad = c;
	bad.max_threads = 0;
	EXPECT_EQ(onll_create(&o, e.pool, e.area_off, &bad, onll_counter_type()), -EINVAL);
	EXPECT_EQ(o, nullptr);
}

TEST(OnllOps, RejectsBadOps)
{
	Env e;
	ASSERT_EQ(e.Create("bad-ops", SmallConfig(), onll_counter_type()), 0);
	onll_thread *t = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	unsigned char op[64] = {};
	EXPECT_EQ(onll_update(t, op, 0, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(onll_update(t, nullptr, 4, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(onll_update(t, op, 25, nullptr, nullptr), -E2BIG);
	EXPECT_EQ(onll_read(t, op, 25, nullptr), -E2BIG);
	EXPECT_EQ(onll_query(t, nullptr, nullptr), -EINVAL);
	EXPECT_EQ(Total(e.o).updates, 0u);
	EXPECT_EQ(onll_close(&e.o), -EBUSY);
	EXPECT_EQ(onll_thread_unregister(&t), 0);
}

// Updates cost exactly one persistent fence, reads none and no flush,
// including the updates that write checkpoints (a short log makes one in
// every four updates checkpoint).
TEST(OnllCost, OneFencePerUpdateNonePerRead)
{
	Env e;
	ASSERT_EQ(e.Create("cost", SmallConfig(4, 8), onll_map_type()), 0);
	onll_thread *t = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	for (uint64_t i = 0; i < 200; i++) {
		pm_cost d = CostOf([&] { EXPECT_GE(onll_map_put(t, i % 37, i), 0); });
		ASSERT_EQ(d.n[PM_COST_FENCE], 1u) << "update " << i;
		ASSERT_GE(d.n[PM_COST_FLUSH], 1u);
		ASSERT_EQ(d.n[PM_COST_CAS], 0u); // the trace CAS is volatile

		uint64_t v = 0;
		d = CostOf([&] { EXPECT_EQ(onll_map_get(t, i % 37, &v), 1); });
		ASSERT_EQ(v, i);
		ASSERT_EQ(d.n[PM_COST_FENCE], 0u);
		ASSERT_EQ(d.n[PM_COST_FLUSH], 0u);
	}
	onll_stats s;
	onll_thread_stats(t, &s);
	EXPECT_EQ(s.updates, 200u);
	EXPECT_EQ(s.reads, 200u);
	EXPECT_GE(s.checkpoints, 200u / 4 - 1);
	EXPECT_EQ(s.checkpoint_fences, 0u);
	EXPECT_EQ(s.helped_ops, 0u); // alone: no fuzzy window to help
	ASSERT_EQ(onll_thread_unregister(&t), 0);
}

// Under contention (more threads than cores): every thread's fences equal
// its updates plus the checkpoints it had to write with their own fence
// (a full log); readers never fence or flush; updates help each other.
TEST(OnllCost, ContendedFencesEqualUpdates)
{
	constexpr unsigned kThreads = 4, kOps = 3000;
	Env e;
	ASSERT_EQ(e.Create("cost-mt", SmallConfig(kThreads + 1, 16), onll_counter_type()), 0);
	std::atomic<bool> ok{true};
	std::atomic<uint64_t> standalone{0}, helped{0};
	std::vector<std::thread> th;
	for (unsigned i = 0; i < kThreads; i++)
		th.emplace_back([&, i] {
			onll_thread *t = nullptr;
			if (onll_thread_register(e.o, &t) != 0) {
				ok = false;
				return;
			}
			pm_cost d = CostOf([&] {
				for (unsigned k = 0; k < kOps; k++) {
					int64_t v;
					if (onll_counter_add(t, 1, &v) != 0)
						ok = false;
				}
			});
			onll_stats s;
			onll_thread_stats(t, &s);
			if (d.n[PM_COST_FENCE] != s.updates + s.checkpoint_fences || s.updates != kOps)
				ok = false;
			standalone += s.checkpoint_fences;
			helped += s.helped_ops;
			onll_thread_unregister(&t);
		});
	// A reader thread alongside.
	th.emplace_back([&] {
		onll_thread *t = nullptr;
		if (onll_thread_register(e.o, &t) != 0) {
			ok = false;
			return;
		}
		pm_cost d = CostOf([&] {
			int64_t last = 0;
			for (unsigned k = 0; k < kOps; k++) {
				int64_t v;
				if (onll_counter_get(t, &v) != 0 || v < last)
					ok = false;
				last = v;
			}
		});
		if (d.n[PM_COST_FENCE] != 0 || d.n[PM_COST_FLUSH] != 0)
			ok = false;
		onll_thread_unregister(&t);
	});
	for (auto &x : th)
		x.join();
	ASSERT_TRUE(ok.load());
	onll_thread *t = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	int64_t v = 0;
	ASSERT_EQ(onll_counter_get(t, &v), 0);
	EXPECT_EQ(v, int64_t(kThreads) * kOps);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
	RecordProperty("checkpoint_fences", std::to_string(standalone.load()));
	RecordProperty("helped_ops", std::to_string(helped.load()));
	// A checkpoint with its own fence needs a thread to find its log full:
	// rare, so almost every update pays exactly one fence.
	EXPECT_LT(standalone.load(), uint64_t(kThreads) * kOps / 100);
}

TEST(OnllRecovery, StateSurvivesReopen)
{
	Env e;
	ASSERT_EQ(e.Create("reopen", SmallConfig(), onll_queue_type()), 0);
	onll_thread *t = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	for (uint64_t i = 1; i <= 50; i++)
		ASSERT_EQ(onll_queue_enqueue(t, i), 0);
	uint64_t v = 0, index = 0;
	for (uint64_t i = 1; i <= 20; i++) {
		ASSERT_EQ(onll_queue_dequeue(t, &v), 1);
		ASSERT_EQ(v, i);
	}
	ASSERT_EQ(onll_thread_unregister(&t), 0);
	ASSERT_EQ(e.Reopen(), 0);
	EXPECT_EQ(onll_recovered_index(e.o), 70u);
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	uint64_t size = 0;
	ASSERT_EQ(onll_queue_size(t, &size), 0);
	EXPECT_EQ(size, 30u);
	ASSERT_EQ(onll_queue_front(t, &v), 1);
	EXPECT_EQ(v, 21u);
	// Later updates continue the execution indexes.
	ASSERT_EQ(onll_queue_enqueue(t, 99), 0);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
	ASSERT_EQ(e.Reopen(), 0);
	EXPECT_EQ(onll_recovered_index(e.o), 71u);
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	ASSERT_EQ(onll_queue_size(t, &size), 0);
	EXPECT_EQ(size, 31u);
	ASSERT_EQ(onll_update(t, "\x7f", 1, nullptr, &index), 0); // malformed op: no-op
	EXPECT_EQ(index, 72u);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
}

// Damaged areas are reported with a PM_E_* code and nothing is written.
TEST(OnllRecovery, DamagedAreas)
{
	Env e;
	onll_thread *t = nullptr;
	ASSERT_NO_FATAL_FAILURE(CounterAfterAdds(&e, "damaged", SmallConfig(), &t, 10, 5));
	ASSERT_EQ(onll_thread_unregister(&t), 0);
	ASSERT_EQ(onll_close(&e.o), 0);
	unsigned char *a = e.Area();
	std::vector<unsigned char> saved(a, a + e.area_size);
	auto restore = [&] { std::memcpy(a, saved.data(), saved.size()); };
	onll *o = nullptr;

	pm_area_hdr *hdr = reinterpret_cast<pm_area_hdr *>(a);
	std::memset(a, 0, 64); // no header: never formatted, or an unfinished create
	EXPECT_EQ(onll_open(&o, e.pool, e.area_off, onll_counter_type()), PM_E_CORRUPT);
	restore();
	hdr->magic ^= 1; // another kind of object
	EXPECT_EQ(onll_open(&o, e.pool, e.area_off, onll_counter_type()), PM_E_LAYOUT);
	restore();
	a[40] ^= 1; // a body field without its checksum
	EXPECT_EQ(onll_open(&o, e.pool, e.area_off, onll_counter_type()), PM_E_CORRUPT);
	restore();
	EXPECT_EQ(onll_open(&o, e.pool, e.area_off, onll_queue_type()), PM_E_LAYOUT);
	hdr->version = ONLL_PMEM_VERSION + 1; // another layout version, correctly summed
	hdr->checksum = pm_area_sum(hdr);
	EXPECT_EQ(onll_open(&o, e.pool, e.area_off, onll_counter_type()), PM_E_VERSION);
	restore();
	hdr->area_size += 64; // summed, but not the size the body implies
	hdr->checksum = pm_area_sum(hdr);
	EXPECT_EQ(onll_open(&o, e.pool, e.area_off, onll_counter_type()), PM_E_CORRUPT);
	restore();
	// Both checkpoint slots damaged (10 updates with checkpoints every 4:
	// slot 1 holds index 4, slot 0 index 8).
	size_t slot = 64 + 4096;
	a[64 + 64] ^= 0xff;
	a[64 + slot + 64] ^= 0xff;
	EXPECT_EQ(onll_open(&o, e.pool, e.area_off, onll_counter_type()), PM_E_CORRUPT);
	EXPECT_EQ(std::memcmp(a + 64, saved.data() + 64, 64), 0) << "nothing written";
	restore();
	EXPECT_EQ(o, nullptr);
	ASSERT_EQ(onll_open(&e.o, e.pool, e.area_off, onll_counter_type()), 0);
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	int64_t v = 0;
	ASSERT_EQ(onll_counter_get(t, &v), 0);
	EXPECT_EQ(v, 50);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
}

// A state that outgrows the checkpoint slot stops taking updates (-ENOSPC,
// nothing applied) instead of filling the log for good.
TEST(OnllCapacity, FullStateRefusesUpdates)
{
	Env e;
	onll_config c = SmallConfig();
	c.checkpoint_capacity = 8 + 8 * 20; // a queue of 20 values
	ASSERT_EQ(e.Create("capacity", c, onll_queue_type()), 0);
	onll_thread *t = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	int ret = 0;
	uint64_t n = 0;
	for (; n < 100 && (ret = onll_queue_enqueue(t, n)) == 0; n++)
		;
	EXPECT_EQ(ret, -ENOSPC);
	EXPECT_EQ(n, 21u); // the 21st still saw a state that fits
	uint64_t size = 0;
	ASSERT_EQ(onll_queue_size(t, &size), 0);
	EXPECT_EQ(size, n);
	uint64_t v = 0;
	ASSERT_EQ(onll_queue_dequeue(t, &v), -ENOSPC);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
	// Over capacity by one value: recovery cannot checkpoint it.
	EXPECT_EQ(e.Reopen(), -ENOSPC);
}

TEST(OnllThreads, SlotsAreLimitedAndReused)
{
	Env e;
	ASSERT_EQ(e.Create("slots", SmallConfig(2), onll_counter_type()), 0);
	onll_thread *a = nullptr, *b = nullptr, *c = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &a), 0);
	ASSERT_EQ(onll_thread_register(e.o, &b), 0);
	EXPECT_EQ(onll_thread_register(e.o, &c), -EAGAIN);
	for (int i = 0; i < 30; i++)
		ASSERT_EQ(onll_counter_add(a, 1, nullptr), 0);
	ASSERT_EQ(onll_thread_unregister(&a), 0);
	EXPECT_EQ(a, nullptr);
	// The new handle starts from the latest checkpoint plus the trace.
	ASSERT_EQ(onll_thread_register(e.o, &c), 0);
	int64_t v = 0;
	ASSERT_EQ(onll_counter_get(c, &v), 0);
	EXPECT_EQ(v, 30);
	ASSERT_EQ(onll_counter_get(b, &v), 0);
	EXPECT_EQ(v, 30);
	ASSERT_EQ(onll_thread_unregister(&b), 0);
	ASSERT_EQ(onll_thread_unregister(&c), 0);
	EXPECT_EQ(onll_thread_unregister(&c), 0);
}

// A reusable barrier (threads here outnumber the cores, so it blocks).
class Barrier {
public:
	explicit Barrier(unsigned n) : n_(n) {}
	void Wait()
	{
		std::unique_lock<std::mutex> l(m_);
		unsigned gen = gen_;
		if (++count_ == n_) {
			count_ = 0;
			gen_++;
			cv_.notify_all();
			return;
		}
		cv_.wait(l, [&] { return gen != gen_; });
	}

private:
	std::mutex m_;
	std::condition_variable cv_;
	unsigned n_, count_ = 0, gen_ = 0;
};

// Memory stays bounded over a long run with threads joining and leaving:
// trace nodes and log entries in use do not grow with the number of
// updates. Threads meet at a barrier every kWindow operations, so a thread
// preempted inside an operation (which keeps the nodes inserted since its
// view, as in epoch-based reclamation) is passed by at most kWindow
// operations of each other thread; between operations it pins nothing.
TEST(OnllMemory, BoundedOverLongRun)
{
	constexpr unsigned kThreads = 4, kRounds = 4, kOps = 5000, kWindow = 32;
	constexpr unsigned kLog = 16;
	Env e;
	ASSERT_EQ(e.Create("bounded", SmallConfig(kThreads, kLog), onll_map_type()), 0);
	std::atomic<bool> ok{true};
	uint64_t max_nodes = 0;
	for (unsigned r = 0; r < kRounds; r++) {
		Barrier barrier(kThreads);
		std::vector<std::thread> th;
		for (unsigned i = 0; i < kThreads; i++)
			th.emplace_back([&, i] {
				onll_thread *t = nullptr;
				if (onll_thread_register(e.o, &t) != 0)
					ok = false;
				std::mt19937_64 rng(r * 100 + i);
				for (unsigned k = 0; k < kOps; k++) {
					if (k % kWindow == 0)
						barrier.Wait();
					if (t == nullptr)
						continue;
					uint64_t key = rng() % 64;
					int ret = rng() % 4 == 0 ? onll_map_get(t, key, nullptr)
						: rng() % 2 ? onll_map_put(t, key, k) : onll_map_remove(t, key);
					if (ret < 0)
						ok = false;
				}
				onll_thread_unregister(&t);
			});
		for (auto &x : th)
			x.join();
		onll_stats s = Total(e.o);
		max_nodes = std::max(max_nodes, s.trace_nodes);
		EXPECT_LE(s.log_entries_used, uint64_t(kThreads) * kLog);
	}
	ASSERT_TRUE(ok.load());
	onll_stats s = Total(e.o);
	RecordProperty("trace_nodes", std::to_string(max_nodes));
	RecordProperty("updates", std::to_string(s.updates));
	EXPECT_GT(s.updates, uint64_t(kThreads) * kRounds * kOps / 2);
	// Each thread's nodes since the oldest pinned view: two windows of
	// every thread plus the checkpoint cadence, whatever the run length.
	EXPECT_LE(max_nodes, uint64_t(kThreads) * (kThreads * 2 * kWindow + 2 * kLog));
	EXPECT_GT(s.checkpoints, s.updates / kLog);
	// The reopened object agrees, and recovery started from a checkpoint
	// at most the logs behind.
	onll_thread *t = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	uint64_t before = 0, after = 0;
	ASSERT_EQ(onll_map_size(t, &before), 0);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
	ASSERT_EQ(e.Reopen(), 0);
	ASSERT_EQ(onll_thread_register(e.o, &t), 0);
	ASSERT_EQ(onll_map_size(t, &after), 0);
	EXPECT_EQ(before, after);
	EXPECT_EQ(onll_recovered_index(e.o), s.updates);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
}

// A registered thread that stops operating does not pin the trace: once it
// falls behind it is left out, and its next operation reloads its view from
// the checkpoint and sees every update.
TEST(OnllMemory, IdleThreadDoesNotPin)
{
	Env e;
	ASSERT_EQ(e.Create("idle", SmallConfig(2, 8), onll_counter_type()), 0);
	onll_thread *idle = nullptr, *busy = nullptr;
	ASSERT_EQ(onll_thread_register(e.o, &idle), 0);
	ASSERT_EQ(onll_counter_add(idle, 1, nullptr), 0);
	ASSERT_EQ(onll_thread_register(e.o, &busy), 0);
	for (int i = 0; i < 20000; i++)
		ASSERT_EQ(onll_counter_add(busy, 1, nullptr), 0);
	EXPECT_LE(Total(e.o).trace_nodes, 2u * 8 + 2 * 8 + 8);
	int64_t v = 0;
	ASSERT_EQ(onll_counter_get(idle, &v), 0);
	EXPECT_EQ(v, 20001);
	onll_stats s;
	onll_thread_stats(idle, &s);
	EXPECT_EQ(s.view_rebuilds, 2u); // registration, and after falling behind
	ASSERT_EQ(onll_thread_unregister(&idle), 0);
	ASSERT_EQ(onll_thread_unregister(&busy), 0);
}

// Single-threaded, memory is exactly bounded by the log and checkpoint
// cadence, whatever the number of updates.
TEST(OnllMemory, SingleThreadExactBound)
{
	Env e;
	onll_thread *t = nullptr;
	ASSERT_NO_FATAL_FAILURE(CounterAfterAdds(&e, "bounded1", SmallConfig(1, 8), &t, 10000, 1));
	onll_stats s = Total(e.o);
	EXPECT_LE(s.log_entries_used, 4u);
	EXPECT_LE(s.trace_nodes, 8u);
	EXPECT_EQ(s.checkpoints, 10000u / 4);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
}

TEST(OnllCheckpoint, ExplicitCheckpointShortensRecovery)
{
	Env e;
	onll_thread *t = nullptr;
	ASSERT_NO_FATAL_FAILURE(CounterAfterAdds(&e, "explicit", SmallConfig(2, 64), &t, 20, 2));
	pm_cost d = CostOf([&] { EXPECT_EQ(onll_checkpoint(t), 0); });
	EXPECT_EQ(d.n[PM_COST_FENCE], 1u);
	EXPECT_EQ(Total(e.o).log_entries_used, 20u); // collected lazily by the next update
	ASSERT_EQ(onll_counter_add(t, 2, nullptr), 0);
	EXPECT_EQ(Total(e.o).log_entries_used, 1u);
	onll_stats s;
	onll_thread_stats(t, &s);
	EXPECT_EQ(s.checkpoint_fences, 1u);
	// Nothing new: no fence.
	d = CostOf([&] {
		EXPECT_EQ(onll_checkpoint(t), 0);
		EXPECT_EQ(onll_checkpoint(t), 0);
	});
	EXPECT_EQ(d.n[PM_COST_FENCE], 1u);
	ASSERT_EQ(onll_thread_unregister(&t), 0);
	ASSERT_EQ(e.Reopen(), 0);
	EXPECT_EQ(onll_recovered_index(e.o), 21u);
}

} // namespace
