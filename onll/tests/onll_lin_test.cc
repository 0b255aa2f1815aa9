// SPDX-License-Identifier: BSD-3-Clause
// onll/tests/onll_lin_test.cc -- concurrent histories of the ONLL counter,
// queue and map (onll/objects.h) recorded from real threads (more than
// cores) and checked for linearizability by the Wing-Gong-Lowe checker in
// tests/lincheck against CounterModel, QueueModel and MapModel; with the
// default config and with short logs (frequent checkpoints, log reuse and
// log-full waits). Each round's history ends with reads by a fresh thread
// after the workers join, so the checker also sees the state each round
// leaves, which is the next round's initial state. A deliberately corrupted
// history from a real run must fail, so these checks can fail.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <onll/objects.h>
#include <onll/onll.h>
#include <pm/pool.h>

#include "pm/tests/test_util.h"
#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace {

using lincheck::CounterModel;
using lincheck::CounterOp;
using lincheck::MapModel;
using lincheck::MapOp;
using lincheck::QueueModel;
using lincheck::QueueOp;

constexpr unsigned kThreads = 4;   // workers; the machine may have fewer cores
constexpr unsigned kOps = 300;     // ops per worker per round
constexpr unsigned kRounds = 8;
constexpr uint64_t kKeys = 8;      // map keys 1..kKeys: contended

// One config the objects run under.
struct Variant {
	const char *name;
	onll_config cfg;
};

std::vector<Variant> Variants()
{
	onll_config def;
	onll_config_init(&def);
	def.max_threads = kThreads + 1;

	// Eight-entry logs: a checkpoint every four updates of a thread, log
	// entries reused constantly, and a thread whose log fills while another
	// checkpoints waits.
	onll_config small;
	onll_config_init(&small);
	small.max_threads = kThreads + 1;
	small.log_entries = 8;
	small.checkpoint_every = 4;
	small.checkpoint_capacity = 64 << 10;
	return {{"default", def}, {"short_logs", small}};
}

struct VariantNamer {
	std::string operator()(const testing::TestParamInfo<Variant> &info) const
	{
		return info.param.name;
	}
};

// A pool with one ONLL object in an area from pm_pool_alloc().
struct LinEnv {
	std::string path;
	pm_pool *pool = nullptr;
	onll *o = nullptr;

	// Create pool @name and an object of @type with @c. Returns 0 or the
	// failing call's code.
	int Create(const std::string &name, const onll_config &c, const onll_type *type)
	{
		path = pmtest::TempPath(name + ".pool");
		size_t area = onll_area_size(&c);
		if (area == 0)
			return -EINVAL;
		pm_pool_config pc = pmtest::PoolConfig(path, "onll-lin-test", 0);
		pc.durability = PM_DURABILITY_NONE;  // fences are counted, not slow
		pc.pool_size = std::max(pc.pool_size, area + ((size_t)8 << 20));
		int ret = pm_pool_create(&pool, &pc);
		if (ret != 0)
			return ret;
		// PMDK aligns allocations to 16 bytes; the area must be 64-aligned.
		uint64_t off;
		ret = pm_pool_alloc(pool, area + 64, 1, &off);
		if (ret != 0)
			return ret;
		return onll_create(&o, pool, (off + 63) & ~(uint64_t)63, &c, type);
	}

	~LinEnv()
	{
		EXPECT_EQ(onll_close(&o), 0);
		pm_pool_close(&pool);
		if (!path.empty())
			unlink(path.c_str());
	}
};

// Lets the workers start their ops together (registration loads a
// checkpoint and may wait for one), so their ops overlap.
class StartLine {
public:
	explicit StartLine(unsigned n) : left_(n) {}
	void Arrive()
	{
		left_.fetch_sub(1);
		while (left_.load() > 0)
			std::this_thread::yield();
	}

private:
	std::atomic<unsigned> left_;
};

// Runs @body(handle i, seed, thread) on kThreads threads, each registered
// with @o, and joins them. @body returns false on an error it reported.
template <class Body>
void RunWorkers(onll *o, unsigned base_seed, Body body)
{
	StartLine start(kThreads);
	std::vector<std::thread> th;
	for (unsigned i = 0; i < kThreads; i++) {
		th.emplace_back([&, i] {
			onll_thread *t = nullptr;
			int ret = onll_thread_register(o, &t);
			start.Arrive();
			if (ret != 0) {
				ADD_FAILURE() << "thread " << i << ": onll_thread_register = " << ret;
				return;
			}
			body(i, base_seed + i, t);
			EXPECT_EQ(onll_thread_unregister(&t), 0);
		});
	}
	for (auto &x : th)
		x.join();
}

// Reports a failed call (negative return) of thread @i and stops it.
#define LIN_CALL_OK(ret, what, i, n)                                                       \
	do {                                                                               \
		if ((ret) < 0) {                                                           \
			ADD_FAILURE() << "thread " << (i) << " op " << (n) << ": " << (what) \
				<< " = " << (ret);                                         \
			return;                                                    \
		}                                                                          \
	} while (0)

// A unique value for op @n of worker @i in round @round (never 0).
uint64_t Unique(unsigned round, unsigned i, unsigned n)
{
	return ((uint64_t)(round * kThreads + i + 1) << 32) | n;
}

// Ops of @h overlapping an op of another thread: how concurrent the
// history is (printed, not asserted: a one-core machine may run a round
// nearly sequentially).
template <class Op>
size_t Overlapping(const std::vector<lincheck::Operation<Op>> &h)
{
	size_t n = 0;
	for (size_t i = 0; i < h.size(); i++) {
		for (size_t j = 0; j < h.size(); j++) {
			if (h[j].thread != h[i].thread && h[j].call <= h[i].ret && h[i].call <= h[j].ret) {
				n++;
				break;
			}
		}
	}
	return n;
}

// Prints what a round exercised.
template <class Op>
void Report(const std::string &where, onll *o, const std::vector<lincheck::Operation<Op>> &h)
{
	onll_stats st;
	onll_stats_total(o, &st);
	printf("%s: %zu ops, %zu overlapping another thread's; totals so far: %llu updates, "
		"%llu helped, %llu checkpoints, %llu log-full waits, %llu view rebuilds\n",
		where.c_str(), h.size(), Overlapping(h), (unsigned long long)st.updates,
		(unsigned long long)st.helped_ops, (unsigned long long)st.checkpoints,
		(unsigned long long)st.log_full_waits, (unsigned long long)st.view_rebuilds);
}

std::string Where(const char *variant, unsigned round, unsigned seed)
{
	return std::string(variant) + " round " + std::to_string(round) + " (worker seeds " +
		std::to_string(seed) + ".." + std::to_string(seed + kThreads - 1) + ")";
}

// ---- counter ----

using CounterRecorder = lincheck::Recorder<CounterOp>;

// 60% adds of -2..4, now and then one of about 2^62 (so the value wraps
// modulo 2^64 within a round); 40% gets. With @increasing, only adds of
// 1..4: every value is new, so no two adds may return the same one.
void CounterWorker(onll_thread *t, CounterRecorder::Handle *h, unsigned i, unsigned seed, bool increasing)
{
	std::mt19937 rng(seed);
	for (unsigned n = 0; n < kOps; n++) {
		if (increasing || rng() % 5 < 3) {
			int64_t d = increasing ? (int64_t)(1 + rng() % 4) : (int64_t)(rng() % 7) - 2;
			if (!increasing && rng() % 64 == 0)
				d = (int64_t)1 << 62;
			auto tk = h->invoke(CounterOp::add(d));
			int64_t after = 0;
			int ret = onll_counter_add(t, d, &after);
			LIN_CALL_OK(ret, "onll_counter_add", i, n);
			h->complete(tk, CounterOp::add(d, after));
		} else {
			auto tk = h->invoke(CounterOp::get());
			int64_t v = 0;
			int ret = onll_counter_get(t, &v);
			LIN_CALL_OK(ret, "onll_counter_get", i, n);
			h->complete(tk, CounterOp::get(v));
		}
	}
}

// One round on @o from @initial: kThreads workers, then a get by a fresh
// thread (recorded as thread kThreads), whose value is stored in @final.
std::vector<lincheck::Operation<CounterOp>> CounterRound(onll *o, unsigned seed, bool increasing,
	int64_t *final)
{
	CounterRecorder rec(kThreads + 1, kOps);
	RunWorkers(o, seed, [&](unsigned i, unsigned s, onll_thread *t) {
		CounterWorker(t, &rec.handle(i), i, s, increasing);
	});
	onll_thread *t = nullptr;
	EXPECT_EQ(onll_thread_register(o, &t), 0);
	if (t != nullptr) {
		auto &h = rec.handle(kThreads);
		auto tk = h.invoke(CounterOp::get());
		EXPECT_EQ(onll_counter_get(t, final), 0);
		h.complete(tk, CounterOp::get(*final));
		EXPECT_EQ(onll_thread_unregister(&t), 0);
	}
	return rec.history();
}

// ---- queue ----

using QueueRecorder = lincheck::Recorder<QueueOp>;

// 35% enqueues of unique values, 40% dequeues, 15% fronts, 10% sizes; an
// enqueue becomes a dequeue while @length (the test's own relaxed count of
// values in the queue) is kQueueCap or more. So the queue is often empty
// ("empty" answers race with enqueues) and never long: QueueModel's search
// is exponential in the number of queued values whose enqueues overlapped,
// and without the cap a round's queue wanders to 50 values now and then,
// beyond the checker's max_states.
constexpr int64_t kQueueCap = 8;

void QueueWorker(onll_thread *t, QueueRecorder::Handle *h, std::atomic<int64_t> *length, unsigned round,
	unsigned i, unsigned seed)
{
	std::mt19937 rng(seed);
	for (unsigned n = 0; n < kOps; n++) {
		unsigned c = rng() % 20;
		if (c < 7 && length->load(std::memory_order_relaxed) < kQueueCap) {
			uint64_t v = Unique(round, i, n);
			auto tk = h->invoke(QueueOp::enqueue(v));
			int ret = onll_queue_enqueue(t, v);
			LIN_CALL_OK(ret, "onll_queue_enqueue", i, n);
			h->complete(tk);
			length->fetch_add(1, std::memory_order_relaxed);
		} else if (c < 15) {
			auto tk = h->invoke(QueueOp::dequeue());
			uint64_t v = 0;
			int ret = onll_queue_dequeue(t, &v);
			LIN_CALL_OK(ret, "onll_queue_dequeue", i, n);
			h->complete(tk, QueueOp::dequeue(ret == 1, v));
			if (ret == 1)
				length->fetch_sub(1, std::memory_order_relaxed);
		} else if (c < 18) {
			auto tk = h->invoke(QueueOp::front());
			uint64_t v = 0;
			int ret = onll_queue_front(t, &v);
			LIN_CALL_OK(ret, "onll_queue_front", i, n);
			h->complete(tk, QueueOp::front(ret == 1, v));
		} else {
			auto tk = h->invoke(QueueOp::size());
			uint64_t s = 0;
			int ret = onll_queue_size(t, &s);
			LIN_CALL_OK(ret, "onll_queue_size", i, n);
			h->complete(tk, QueueOp::size(s));
		}
	}
}

// One round on @o: kThreads workers, then a fresh thread (recorded as
// thread kThreads) reads the size and dequeues until empty, so the next
// round starts from an empty queue and this history ends with the state
// the round left.
std::vector<lincheck::Operation<QueueOp>> QueueRound(onll *o, unsigned round, unsigned seed)
{
	QueueRecorder rec(kThreads + 1, kOps);
	std::atomic<int64_t> length{0};  // rounds start empty
	RunWorkers(o, seed, [&](unsigned i, unsigned s, onll_thread *t) {
		QueueWorker(t, &rec.handle(i), &length, round, i, s);
	});
	onll_thread *t = nullptr;
	EXPECT_EQ(onll_thread_register(o, &t), 0);
	if (t == nullptr)
		return rec.history();
	auto &h = rec.handle(kThreads);
	auto tk = h.invoke(QueueOp::size());
	uint64_t size = 0;
	EXPECT_EQ(onll_queue_size(t, &size), 0);
	h.complete(tk, QueueOp::size(size));
	for (uint64_t k = 0; k <= size; k++) {  // one more: must find it empty
		tk = h.invoke(QueueOp::dequeue());
		uint64_t v = 0;
		int ret = onll_queue_dequeue(t, &v);
		EXPECT_GE(ret, 0);
		h.complete(tk, QueueOp::dequeue(ret == 1, v));
		if (ret != 1)
			break;
	}
	EXPECT_EQ(onll_thread_unregister(&t), 0);
	return rec.history();
}

// ---- map ----

using MapRecorder = lincheck::Recorder<MapOp>;

// Keys 1..kKeys. 35% puts of unique values, 25% removes, 30% gets, 10%
// sizes. MapModel has no size (it would join every key's sub-history), so
// a concurrent size is only checked to be within 0..kKeys, and the size
// at the end of the round exactly.
void MapWorker(onll_thread *t, MapRecorder::Handle *h, unsigned round, unsigned i, unsigned seed)
{
	std::mt19937 rng(seed);
	for (unsigned n = 0; n < kOps; n++) {
		uint64_t k = 1 + rng() % kKeys;
		unsigned c = rng() % 20;
		if (c < 7) {
			uint64_t v = Unique(round, i, n);
			auto tk = h->invoke(MapOp::put(k, v));
			int ret = onll_map_put(t, k, v);
			LIN_CALL_OK(ret, "onll_map_put", i, n);
			h->complete(tk, MapOp::put(k, v, ret == 1));
		} else if (c < 12) {
			auto tk = h->invoke(MapOp::remove(k));
			int ret = onll_map_remove(t, k);
			LIN_CALL_OK(ret, "onll_map_remove", i, n);
			h->complete(tk, MapOp::remove(k, ret == 1));
		} else if (c < 18) {
			auto tk = h->invoke(MapOp::get(k));
			uint64_t v = 0;
			int ret = onll_map_get(t, k, &v);
			LIN_CALL_OK(ret, "onll_map_get", i, n);
			h->complete(tk, MapOp::get(k, ret == 1, v));
		} else {
			uint64_t s = 0;
			int ret = onll_map_size(t, &s);
			LIN_CALL_OK(ret, "onll_map_size", i, n);
			EXPECT_LE(s, kKeys) << "thread " << i << " op " << n;
		}
	}
}

// One round on @o: kThreads workers, then a fresh thread (recorded as
// thread kThreads) gets every key, which gives @final (the next round's
// initial map), and checks the size against it.
std::vector<lincheck::Operation<MapOp>> MapRound(onll *o, unsigned round, unsigned seed,
	std::vector<std::pair<uint64_t, uint64_t>> *final)
{
	MapRecorder rec(kThreads + 1, kOps);
	RunWorkers(o, seed, [&](unsigned i, unsigned s, onll_thread *t) {
		MapWorker(t, &rec.handle(i), round, i, s);
	});
	final->clear();
	onll_thread *t = nullptr;
	EXPECT_EQ(onll_thread_register(o, &t), 0);
	if (t == nullptr)
		return rec.history();
	auto &h = rec.handle(kThreads);
	for (uint64_t k = 1; k <= kKeys; k++) {
		auto tk = h.invoke(MapOp::get(k));
		uint64_t v = 0;
		int ret = onll_map_get(t, k, &v);
		EXPECT_GE(ret, 0);
		h.complete(tk, MapOp::get(k, ret == 1, v));
		if (ret == 1)
			final->push_back({k, v});
	}
	uint64_t size = 0;
	EXPECT_EQ(onll_map_size(t, &size), 0);
	EXPECT_EQ(size, final->size()) << "quiescent size after round " << round;
	EXPECT_EQ(onll_thread_unregister(&t), 0);
	return rec.history();
}

// ---- tests ----

class OnllLin : public ::testing::TestWithParam<Variant> {};

TEST_P(OnllLin, CounterHistoriesAreLinearizable)
{
	const Variant &v = GetParam();
	LinEnv env;
	ASSERT_EQ(env.Create(std::string("lin-counter-") + v.name, v.cfg, onll_counter_type()), 0);
	int64_t initial = 0;
	for (unsigned round = 0; round < kRounds; round++) {
		unsigned seed = 1000 + round * 100;
		int64_t final = 0;
		auto history = CounterRound(env.o, seed, false, &final);
		ASSERT_FALSE(HasFailure()) << Where(v.name, round, seed);
		Report(Where(v.name, round, seed), env.o, history);
		lincheck::Result r = lincheck::check(CounterModel(initial), history);
		ASSERT_TRUE(r.ok) << Where(v.name, round, seed) << ": " << r.explanation;
		initial = final;
	}
}

TEST_P(OnllLin, QueueHistoriesAreLinearizable)
{
	const Variant &v = GetParam();
	LinEnv env;
	ASSERT_EQ(env.Create(std::string("lin-queue-") + v.name, v.cfg, onll_queue_type()), 0);
	for (unsigned round = 0; round < kRounds; round++) {
		unsigned seed = 2000 + round * 100;
		auto history = QueueRound(env.o, round, seed);
		ASSERT_FALSE(HasFailure()) << Where(v.name, round, seed);
		Report(Where(v.name, round, seed), env.o, history);
		lincheck::Result r = lincheck::check(QueueModel(), history);  // each round starts empty
		ASSERT_TRUE(r.ok) << Where(v.name, round, seed) << ": " << r.explanation;
	}
}

TEST_P(OnllLin, MapHistoriesAreLinearizable)
{
	const Variant &v = GetParam();
	LinEnv env;
	ASSERT_EQ(env.Create(std::string("lin-map-") + v.name, v.cfg, onll_map_type()), 0);
	std::vector<std::pair<uint64_t, uint64_t>> initial;
	for (unsigned round = 0; round < kRounds; round++) {
		unsigned seed = 3000 + round * 100;
		std::vector<std::pair<uint64_t, uint64_t>> final;
		auto history = MapRound(env.o, round, seed, &final);
		ASSERT_FALSE(HasFailure()) << Where(v.name, round, seed);
		Report(Where(v.name, round, seed), env.o, history);
		lincheck::Result r = lincheck::check(MapModel(initial), history);
		ASSERT_TRUE(r.ok) << Where(v.name, round, seed) << ": " << r.explanation;
		initial = std::move(final);
	}
}

INSTANTIATE_TEST_SUITE_P(Configs, OnllLin, ::testing::ValuesIn(Variants()), VariantNamer());

// The checks above can fail: real histories with one output corrupted are
// reported, each with the corrupted op in the explanation.

// @h, a real history with the output of op @bad corrupted, fails against
// @model, and the explanation names @bad.
template <class Model>
void ExpectCaught(const Model &model, const std::vector<lincheck::Operation<typename Model::Op>> &h,
	const typename Model::Op &bad)
{
	lincheck::Result r = lincheck::check(model, h);
	EXPECT_FALSE(r.ok);
	EXPECT_FALSE(r.timed_out_or_limit) << r.explanation;
	EXPECT_NE(r.explanation.find(model.describe(bad)), std::string::npos) << r.explanation;
}

TEST(OnllLinCorrupted, CounterTwoAddsReturningTheSameValueFail)
{
	onll_config c = Variants()[1].cfg;
	LinEnv env;
	ASSERT_EQ(env.Create("lin-corrupt-counter", c, onll_counter_type()), 0);
	int64_t final = 0;
	auto history = CounterRound(env.o, 77, true, &final);
	ASSERT_FALSE(HasFailure());
	lincheck::Result r = lincheck::check(CounterModel(), history);
	ASSERT_TRUE(r.ok) << r.explanation;

	// Adds of 1..4 from 0: every add returns a value no other add may. Give
	// the last-invoked add the first-invoked add's value.
	size_t first = history.size(), last = 0;
	for (size_t i = 0; i < history.size(); i++) {
		if (history[i].op.kind != CounterOp::Kind::kAdd)
			continue;
		first = std::min(first, i);
		last = i;
	}
	ASSERT_LT(first, last);
	history[last].op.value = history[first].op.value;
	ExpectCaught(CounterModel(), history, history[last].op);
}

TEST(OnllLinCorrupted, QueueDequeueOfValueNeverEnqueuedFails)
{
	onll_config c = Variants()[1].cfg;
	LinEnv env;
	ASSERT_EQ(env.Create("lin-corrupt-queue", c, onll_queue_type()), 0);
	auto history = QueueRound(env.o, 0, 78);
	ASSERT_FALSE(HasFailure());
	lincheck::Result r = lincheck::check(QueueModel(), history);
	ASSERT_TRUE(r.ok) << r.explanation;

	std::vector<size_t> found;
	for (size_t i = 0; i < history.size(); i++)
		if (history[i].op.kind == QueueOp::Kind::kDequeue && history[i].op.found)
			found.push_back(i);
	ASSERT_FALSE(found.empty());
	// An early one: ruling out every linearization of a long queue prefix
	// is what a failing check costs (seconds for the middle of a round).
	QueueOp &op = history[found[std::min<size_t>(found.size() - 1, 10)]].op;
	op.value = 12345;  // Unique() values are >= 2^32
	ExpectCaught(QueueModel(), history, op);
}

TEST(OnllLinCorrupted, MapGetOfValueNeverPutFails)
{
	onll_config c = Variants()[1].cfg;
	LinEnv env;
	ASSERT_EQ(env.Create("lin-corrupt-map", c, onll_map_type()), 0);
	std::vector<std::pair<uint64_t, uint64_t>> final;
	auto history = MapRound(env.o, 0, 79, &final);
	ASSERT_FALSE(HasFailure());
	lincheck::Result r = lincheck::check(MapModel(), history);
	ASSERT_TRUE(r.ok) << r.explanation;

	std::vector<size_t> hits;
	for (size_t i = 0; i < history.size(); i++)
		if (history[i].op.kind == MapOp::Kind::kGet && history[i].op.present)
			hits.push_back(i);
	ASSERT_FALSE(hits.empty());
	MapOp &op = history[hits[hits.size() / 2]].op;
	op.value = 12345;  // Unique() values are >= 2^32
	ExpectCaught(MapModel(), history, op);
}

} // namespace
