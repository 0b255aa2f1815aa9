// SPDX-License-Identifier: BSD-3-Clause
// tests/lincheck/objects_models_test.cc -- CounterModel, QueueModel and
// MapModel (the specifications of onll/objects.h) on hand-written histories
// that must pass or fail, and on small random ones against brute force.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <map>
#include <random>

#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/lincheck_test_util.h"
#include "tests/lincheck/models.h"

namespace {

using lincheck::CounterModel;
using lincheck::CounterOp;
using lincheck::kPending;
using lincheck::MapModel;
using lincheck::MapOp;
using lincheck::Operation;
using lincheck::QueueModel;
using lincheck::QueueOp;
using lincheck_test::At;
using lincheck_test::BruteForce;
using lincheck_test::Spread;

using CounterHistory = std::vector<Operation<CounterOp>>;
using QueueHistory = std::vector<Operation<QueueOp>>;
using MapHistory = std::vector<Operation<MapOp>>;

template <class Model>
bool Ok(const Model &model, const std::vector<Operation<typename Model::Op>> &h)
{
	lincheck::Result r = lincheck::check(model, h);
	EXPECT_FALSE(r.timed_out_or_limit) << r.explanation;
	return r.ok;
}

CounterHistory RandomCounter(std::mt19937_64 &rng, size_t ops, uint64_t spread)
{
	int64_t v = 0;
	CounterHistory h;
	for (size_t k = 0; k < ops; k++) {
		if (rng() % 2) {
			int64_t d = static_cast<int64_t>(rng() % 5) - 1;
			v += d;
			Spread(rng, &h, CounterOp::add(d, v), k, spread);
		} else {
			Spread(rng, &h, CounterOp::get(v), k, spread);
		}
	}
	return h;
}

// Some enqueued values repeat unless @distinct; large histories want distinct
// values (an output then names the one enqueue it came from), and a short
// queue: at most @max_len values (see QueueModel on why).
QueueHistory RandomQueue(std::mt19937_64 &rng, size_t ops, uint64_t spread, bool distinct = false,
	size_t max_len = SIZE_MAX)
{
	std::deque<uint64_t> q;
	uint64_t next = 1;
	QueueHistory h;
	for (size_t k = 0; k < ops; k++) {
		QueueOp op;
		unsigned choice = rng() % 6;
		if (choice < 2 && q.size() >= max_len)
			choice = 2;
		switch (choice) {
		case 0:
		case 1:
			op = QueueOp::enqueue(distinct || rng() % 3 ? next++ : 1);
			q.push_back(op.value);
			break;
		case 2:
		case 3:  // as often as enqueues, so the queue stays short
			op = QueueOp::dequeue(!q.empty(), q.empty() ? 0 : q.front());
			if (!q.empty())
				q.pop_front();
			break;
		default:
			op = rng() % 2 ? QueueOp::front(!q.empty(), q.empty() ? 0 : q.front())
				: QueueOp::size(q.size());
		}
		Spread(rng, &h, op, k, spread, distinct);
	}
	return h;
}

MapHistory RandomMap(std::mt19937_64 &rng, size_t ops, uint64_t keys, uint64_t spread)
{
	std::map<uint64_t, uint64_t> m;
	MapHistory h;
	for (size_t k = 0; k < ops; k++) {
		uint64_t key = rng() % keys;
		bool present = m.count(key) != 0;
		MapOp op;
		switch (rng() % 3) {
		case 0:
			op = MapOp::put(key, rng() % 3, present);
			m[key] = op.value;
			break;
		case 1:
			op = MapOp::remove(key, present);
			m.erase(key);
			break;
		default:
			op = MapOp::get(key, present, present ? m[key] : 0);
		}
		Spread(rng, &h, op, k, spread);
	}
	return h;
}

// ---- counter ----

TEST(Counter, SequentialAndOverlappingHistoriesPass)
{
	EXPECT_TRUE(Ok(CounterModel(), CounterHistory{}));
	CounterHistory h = {
		At(CounterOp::add(5, 5), 0, 1),
		At(CounterOp::get(5), 2, 3),
		At(CounterOp::add(-7, -2), 4, 5),
		At(CounterOp::get(-2), 6, 7),
	};
	EXPECT_TRUE(Ok(CounterModel(), h));
	// Invoked first, took effect second: the outputs say so.
	CounterHistory o = {
		At(CounterOp::add(1, 3), 0, 10),
		At(CounterOp::add(2, 2), 1, 11, 1),
		At(CounterOp::get(3), 12, 13),
	};
	EXPECT_TRUE(Ok(CounterModel(), o));
	EXPECT_TRUE(Ok(CounterModel(10), CounterHistory{At(CounterOp::get(10), 0, 1)}));
}

TEST(Counter, TwoAddsReturningTheSameValueFail)
{
	CounterHistory h = {
		At(CounterOp::add(1, 1), 0, 10),
		At(CounterOp::add(1, 1), 1, 11, 1),  // even overlapping
	};
	EXPECT_FALSE(Ok(CounterModel(), h));
	h[1].op = CounterOp::add(1, 2);
	EXPECT_TRUE(Ok(CounterModel(), h));
}

TEST(Counter, StaleGetAfterCompletedAddFails)
{
	CounterHistory h = {
		At(CounterOp::add(3, 3), 0, 1),
		At(CounterOp::get(0), 2, 3, 1),
	};
	lincheck::Result r = lincheck::check(CounterModel(), h);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.explanation.find("get() -> 0"), std::string::npos) << r.explanation;
	h[1].call = 1;  // intervals are closed: invoked as the add returns, it may go first
	EXPECT_TRUE(Ok(CounterModel(), h));
}

TEST(Counter, WrongValueAfterAddFails)
{
	EXPECT_FALSE(Ok(CounterModel(), CounterHistory{At(CounterOp::add(2, 3), 0, 1)}));
	EXPECT_FALSE(Ok(CounterModel(1), CounterHistory{At(CounterOp::add(2, 2), 0, 1)}));
}

TEST(Counter, AdditionWrapsModulo2To64)
{
	CounterHistory h = {
		At(CounterOp::add(1, INT64_MIN), 0, 1),
		At(CounterOp::add(-1, INT64_MAX), 2, 3),
		At(CounterOp::add(INT64_MAX, -2), 4, 5),
	};
	EXPECT_TRUE(Ok(CounterModel(INT64_MAX), h));
}

TEST(Counter, PendingAddMayOrMayNotTakeEffect)
{
	auto pending = At(CounterOp::add(4), 0, kPending, 1);
	EXPECT_TRUE(Ok(CounterModel(), CounterHistory{pending, At(CounterOp::get(0), 1, 2)}));
	EXPECT_TRUE(Ok(CounterModel(), CounterHistory{pending, At(CounterOp::get(4), 1, 2)}));
	EXPECT_TRUE(Ok(CounterModel(), CounterHistory{pending, At(CounterOp::add(1, 5), 1, 2)}));
	EXPECT_FALSE(Ok(CounterModel(), CounterHistory{pending, At(CounterOp::get(3), 1, 2)}));
	// Once seen, it cannot be undone.
	EXPECT_FALSE(Ok(CounterModel(),
		CounterHistory{pending, At(CounterOp::get(4), 1, 2), At(CounterOp::get(0), 3, 4)}));
	EXPECT_TRUE(Ok(CounterModel(), CounterHistory{At(CounterOp::get(), 0, kPending)}));
}

// ---- queue ----

TEST(Queue, SequentialHistoryPasses)
{
	EXPECT_TRUE(Ok(QueueModel(), QueueHistory{}));
	QueueHistory h = {
		At(QueueOp::dequeue(false, 0), 0, 1),
		At(QueueOp::front(false, 0), 2, 3),
		At(QueueOp::enqueue(1), 4, 5),
		At(QueueOp::enqueue(2), 6, 7),
		At(QueueOp::size(2), 8, 9),
		At(QueueOp::front(true, 1), 10, 11),
		At(QueueOp::dequeue(true, 1), 12, 13),
		At(QueueOp::dequeue(true, 2), 14, 15),
		At(QueueOp::size(0), 16, 17),
	};
	EXPECT_TRUE(Ok(QueueModel(), h));
	EXPECT_TRUE(Ok(QueueModel({7, 8}),
		QueueHistory{At(QueueOp::dequeue(true, 7), 0, 1), At(QueueOp::size(1), 2, 3)}));
}

TEST(Queue, OverlappingEnqueuesMayTakeEitherOrder)
{
	QueueHistory h = {
		At(QueueOp::enqueue(1), 0, 10),
		At(QueueOp::enqueue(2), 1, 11, 1),
		At(QueueOp::dequeue(true, 2), 12, 13),
		At(QueueOp::dequeue(true, 1), 14, 15),
	};
	EXPECT_TRUE(Ok(QueueModel(), h));
	// Not overlapping, 1 went first and must come out first.
	h[1].call = 11;
	EXPECT_FALSE(Ok(QueueModel(), h));
}

TEST(Queue, DequeueOfValueNeverEnqueuedFails)
{
	QueueHistory h = {
		At(QueueOp::enqueue(1), 0, 1),
		At(QueueOp::dequeue(true, 9), 2, 3, 1),
	};
	lincheck::Result r = lincheck::check(QueueModel(), h);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.explanation.find("dequeue() -> 9"), std::string::npos) << r.explanation;
	// Even concurrent with everything.
	h[1].call = 0;
	EXPECT_FALSE(Ok(QueueModel(), h));
}

TEST(Queue, OutOfFifoOrderFails)
{
	QueueHistory h = {
		At(QueueOp::enqueue(1), 0, 1),
		At(QueueOp::enqueue(2), 2, 3),
		At(QueueOp::dequeue(true, 2), 4, 5, 1),
	};
	EXPECT_FALSE(Ok(QueueModel(), h));
	// front sees the oldest value too.
	h[2].op = QueueOp::front(true, 2);
	EXPECT_FALSE(Ok(QueueModel(), h));
	h[2].op = QueueOp::front(true, 1);
	EXPECT_TRUE(Ok(QueueModel(), h));
}

TEST(Queue, ValueDequeuedTwiceFails)
{
	QueueHistory h = {
		At(QueueOp::enqueue(1), 0, 1),
		At(QueueOp::dequeue(true, 1), 2, 10),
		At(QueueOp::dequeue(true, 1), 3, 11, 1),
	};
	EXPECT_FALSE(Ok(QueueModel(), h));
	h[2].op = QueueOp::dequeue(false, 0);
	EXPECT_TRUE(Ok(QueueModel(), h));
}

TEST(Queue, EmptyAfterCompletedEnqueueFails)
{
	QueueHistory h = {
		At(QueueOp::enqueue(1), 0, 1),
		At(QueueOp::dequeue(false, 0), 2, 3, 1),
	};
	EXPECT_FALSE(Ok(QueueModel(), h));
	h[1].op = QueueOp::front(false, 0);
	EXPECT_FALSE(Ok(QueueModel(), h));
	h[1].op = QueueOp::size(0);
	EXPECT_FALSE(Ok(QueueModel(), h));
	h[1].op = QueueOp::size(1);
	EXPECT_TRUE(Ok(QueueModel(), h));
}

TEST(Queue, PendingOpsMayOrMayNotTakeEffect)
{
	auto enq = At(QueueOp::enqueue(5), 0, kPending, 1);
	EXPECT_TRUE(Ok(QueueModel(), QueueHistory{enq, At(QueueOp::size(0), 1, 2)}));
	EXPECT_TRUE(Ok(QueueModel(), QueueHistory{enq, At(QueueOp::dequeue(true, 5), 1, 2)}));
	auto deq = At(QueueOp::dequeue(), 0, kPending, 1);
	QueueModel one({3});
	EXPECT_TRUE(Ok(one, QueueHistory{deq, At(QueueOp::front(true, 3), 1, 2)}));
	EXPECT_TRUE(Ok(one, QueueHistory{deq, At(QueueOp::front(false, 0), 1, 2)}));
	EXPECT_FALSE(Ok(one, QueueHistory{deq, At(QueueOp::front(false, 0), 1, 2),
		At(QueueOp::size(1), 3, 4)}));
}

// ---- map ----

TEST(Map, SequentialHistoryPasses)
{
	EXPECT_TRUE(Ok(MapModel(), MapHistory{}));
	MapHistory h = {
		At(MapOp::get(1, false, 0), 0, 1),
		At(MapOp::put(1, 10, false), 2, 3),
		At(MapOp::put(1, 11, true), 4, 5),
		At(MapOp::get(1, true, 11), 6, 7),
		At(MapOp::put(2, 20, false), 8, 9),
		At(MapOp::remove(1, true), 10, 11),
		At(MapOp::remove(1, false), 12, 13),
		At(MapOp::get(2, true, 20), 14, 15),
	};
	EXPECT_TRUE(Ok(MapModel(), h));
	EXPECT_TRUE(Ok(MapModel({{3, 30}, {3, 31}}), MapHistory{At(MapOp::get(3, true, 31), 0, 1)}));
}

TEST(Map, GetSeeingRemovedValueAfterRemoveCompletedFails)
{
	MapHistory h = {
		At(MapOp::put(1, 10, false), 0, 1),
		At(MapOp::remove(1, true), 2, 3),
		At(MapOp::get(1, true, 10), 4, 5, 1),
	};
	lincheck::Result r = lincheck::check(MapModel(), h);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.explanation.find("get(1) -> 10"), std::string::npos) << r.explanation;
	h[2].call = 2;  // overlapping the remove: it may read first
	EXPECT_TRUE(Ok(MapModel(), h));
}

TEST(Map, GetSeeingOverwrittenValueFails)
{
	MapHistory h = {
		At(MapOp::put(1, 10, false), 0, 1),
		At(MapOp::put(1, 11, true), 2, 3),
		At(MapOp::get(1, true, 10), 4, 5, 1),
	};
	EXPECT_FALSE(Ok(MapModel(), h));
	h[2].op = MapOp::get(1, true, 11);
	EXPECT_TRUE(Ok(MapModel(), h));
	h[2].op = MapOp::get(1, true, 12);  // never put
	EXPECT_FALSE(Ok(MapModel(), h));
}

TEST(Map, WrongPresenceFails)
{
	// Two puts of an absent key cannot both insert.
	MapHistory h = {
		At(MapOp::put(1, 10, false), 0, 10),
		At(MapOp::put(1, 11, false), 1, 11, 1),
	};
	EXPECT_FALSE(Ok(MapModel(), h));
	h[1].op = MapOp::put(1, 11, true);
	EXPECT_TRUE(Ok(MapModel(), h));
	// Nor two removes both remove it.
	MapHistory rm = {
		At(MapOp::remove(1, true), 0, 10),
		At(MapOp::remove(1, true), 1, 11, 1),
	};
	EXPECT_FALSE(Ok(MapModel({{1, 5}}), rm));
	EXPECT_FALSE(Ok(MapModel(), MapHistory{At(MapOp::remove(1, true), 0, 1)}));
	EXPECT_FALSE(Ok(MapModel({{1, 5}}), MapHistory{At(MapOp::get(1, false, 0), 0, 1)}));
}

TEST(Map, PendingPutMayOrMayNotTakeEffect)
{
	auto put = At(MapOp::put(1, 10), 0, kPending, 1);
	EXPECT_TRUE(Ok(MapModel(), MapHistory{put, At(MapOp::get(1, false, 0), 1, 2)}));
	EXPECT_TRUE(Ok(MapModel(), MapHistory{put, At(MapOp::get(1, true, 10), 1, 2)}));
	EXPECT_FALSE(Ok(MapModel(), MapHistory{put, At(MapOp::get(1, true, 10), 1, 2),
		At(MapOp::get(1, false, 0), 3, 4)}));
	EXPECT_TRUE(Ok(MapModel(), MapHistory{At(MapOp::get(1), 0, kPending)}));
}

TEST(Map, PartitionChecksEachKeyAlone)
{
	std::mt19937_64 rng(11);
	MapHistory h = RandomMap(rng, 20000, 16, 4);
	lincheck::Result r = lincheck::check(MapModel(), h);
	EXPECT_TRUE(r.ok) << r.explanation;

	h.push_back(At(MapOp::get(1000, true, 1), 0, 1, 5));  // never put
	r = lincheck::check(MapModel(), h);
	EXPECT_FALSE(r.ok);
	EXPECT_NE(r.explanation.find("sub-history 16 of 17"), std::string::npos) << r.explanation;
	EXPECT_NE(r.explanation.find("get(1000) -> 1"), std::string::npos) << r.explanation;
}

// ---- random histories against brute force ----

// 300 random histories from @random(rng), and each with one recorded output
// of a returned op changed by @change(rng, op): whether it is still
// linearizable is up to brute force, and the search must agree (and find
// enough of them not, or the test tests nothing).
template <class Model, class Random, class Change>
void AgreesWithBruteForce(const Model &model, uint64_t seed, Random random, Change change)
{
	std::mt19937_64 rng(seed);
	int detected = 0;
	for (int iter = 0; iter < 300; iter++) {
		std::vector<Operation<typename Model::Op>> h = random(rng);
		ASSERT_TRUE(BruteForce(model, h)) << iter;
		ASSERT_TRUE(Ok(model, h)) << iter;
		typename Model::Op &op = h[rng() % h.size()].op;
		change(rng, op);
		op.returned = true;
		bool truth = BruteForce(model, h);
		ASSERT_EQ(Ok(model, h), truth) << iter;
		detected += !truth;
	}
	EXPECT_GT(detected, 50);
}

TEST(Random, SmallCounterHistoriesAgreeWithBruteForce)
{
	AgreesWithBruteForce(CounterModel(), 51, [](std::mt19937_64 &rng) { return RandomCounter(rng, 8, 2); },
		[](std::mt19937_64 &rng, CounterOp &op) { op.value += 1 + static_cast<int64_t>(rng() % 2); });
}

TEST(Random, SmallQueueHistoriesAgreeWithBruteForce)
{
	AgreesWithBruteForce(QueueModel(), 52, [](std::mt19937_64 &rng) { return RandomQueue(rng, 8, 2); },
		[](std::mt19937_64 &rng, QueueOp &op) {
			switch (op.kind) {
			case QueueOp::Kind::kEnqueue:
				op.value += 1;
				break;
			case QueueOp::Kind::kSize:
				op.count += 1;
				break;
			default:
				if (op.found && rng() % 2)
					op.value += 1;
				else
					op.found = !op.found;
			}
		});
}

TEST(Random, SmallMapHistoriesAgreeWithBruteForce)
{
	AgreesWithBruteForce(MapModel(), 53, [](std::mt19937_64 &rng) { return RandomMap(rng, 8, 3, 2); },
		[](std::mt19937_64 &rng, MapOp &op) {
			if (op.kind == MapOp::Kind::kGet && op.present && rng() % 2)
				op.value += 1;
			else
				op.present = !op.present;
		});
}

// Large queue histories (the model without a partition) stay fast while the
// queue stays short, and one dequeue changed to a value never enqueued is
// reported.
TEST(Random, LargeQueueHistoriesPassAndImpossibleDequeuesFail)
{
	std::mt19937_64 rng(54);
	for (int iter = 0; iter < 5; iter++) {
		QueueHistory h = RandomQueue(rng, 2000, 3, true, 8);
		lincheck::Result r = lincheck::check(QueueModel(), h);
		ASSERT_TRUE(r.ok) << iter << ": " << r.explanation;
		std::vector<size_t> deq;
		for (size_t i = 0; i < h.size(); i++)
			if (h[i].op.kind == QueueOp::Kind::kDequeue && h[i].op.returned && h[i].op.found)
				deq.push_back(i);
		ASSERT_FALSE(deq.empty());
		h[deq[rng() % deq.size()]].op.value = 1u << 30;
		r = lincheck::check(QueueModel(), h);
		ASSERT_FALSE(r.ok) << iter;
		ASSERT_FALSE(r.timed_out_or_limit) << r.explanation;
		EXPECT_NE(r.explanation.find("dequeue() -> " + std::to_string(1u << 30)), std::string::npos)
			<< r.explanation;
	}
}

}  // namespace
