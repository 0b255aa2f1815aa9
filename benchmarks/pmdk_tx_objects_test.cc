// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/pmdk_tx_objects_test.cc -- the PMDK-transaction baseline of
// onll_bench: sequential semantics against std::deque / std::map, state
// that survives closing and reopening the pool, and the interposed fence
// counter (PMEM_IS_PMEM_FORCE=1 is set by the BUILD rule, so PMDK persists
// with clwb + pmem_drain()).
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>

#include <pm/cost.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "benchmarks/pmdk_tx_objects.h"
#include "pm/tests/test_util.h"

namespace {

constexpr uint64_t kQueueCap = 37;  // not a power of two: the ring wraps oddly
constexpr uint64_t kMapCap = 100;   // 256 slots
constexpr uint64_t kKeyRange = 160; // > kMapCap: puts find the map full

// Areas in the root object: counter, queue, map (64-byte aligned).
struct Layout {
	size_t counter = 0, queue = 0, map = 0, total = 0;
	Layout()
	{
		size_t c = txobj_area_size(TXOBJ_COUNTER, 0);
		size_t q = txobj_area_size(TXOBJ_QUEUE, kQueueCap);
		size_t m = txobj_area_size(TXOBJ_MAP, kMapCap);
		counter = 0;
		queue = counter + c;
		map = queue + q;
		total = map + m;
	}
};

class TxObjects : public ::testing::Test {
 protected:
	void SetUp() override
	{
		path_ = pmtest::TempPath("txobj.pool");
		cfg_ = pmtest::PoolConfig(path_, "txobj-test", layout_.total);
		ASSERT_EQ(pm_pool_create(&pool_, &cfg_), 0) << pm_errormsg();
		ASSERT_EQ(txobj_create(&counter_, pool_, Off(layout_.counter), TXOBJ_COUNTER, 0), 0);
		ASSERT_EQ(txobj_create(&queue_, pool_, Off(layout_.queue), TXOBJ_QUEUE, kQueueCap), 0);
		ASSERT_EQ(txobj_create(&map_, pool_, Off(layout_.map), TXOBJ_MAP, kMapCap), 0);
	}

	void TearDown() override
	{
		CloseAll();
	}

	void CloseAll()
	{
		EXPECT_EQ(txobj_close(&counter_), 0);
		EXPECT_EQ(txobj_close(&queue_), 0);
		EXPECT_EQ(txobj_close(&map_), 0);
		EXPECT_EQ(pm_pool_close(&pool_), 0);
	}

	void Reopen()
	{
		CloseAll();
		ASSERT_EQ(pm_pool_open(&pool_, &cfg_), 0) << pm_errormsg();
		ASSERT_EQ(txobj_open(&counter_, pool_, Off(layout_.counter), TXOBJ_COUNTER), 0);
		ASSERT_EQ(txobj_open(&queue_, pool_, Off(layout_.queue), TXOBJ_QUEUE), 0);
		ASSERT_EQ(txobj_open(&map_, pool_, Off(layout_.map), TXOBJ_MAP), 0);
	}

	uint64_t Off(size_t in_root) const
	{
		return pm_pool_off(pool_, static_cast<char *>(pm_pool_root(pool_)) + in_root);
	}

	Layout layout_;
	std::string path_;
	pm_pool_config cfg_ {};
	pm_pool *pool_ = nullptr;
	txobj *counter_ = nullptr;
	txobj *queue_ = nullptr;
	txobj *map_ = nullptr;
};

TEST(TxObjectsArea, Sizes)
{
	EXPECT_EQ(txobj_area_size(TXOBJ_COUNTER, 0), 128u);
	EXPECT_EQ(txobj_area_size(TXOBJ_QUEUE, 0), 0u);
	EXPECT_EQ(txobj_area_size(TXOBJ_MAP, 0), 0u);
	EXPECT_EQ(txobj_area_size(static_cast<txobj_kind>(9), 10), 0u);
	EXPECT_EQ(txobj_area_size(TXOBJ_QUEUE, 8), 128u + 64u);
	// 3 keys -> 8 slots of 32 bytes.
	EXPECT_EQ(txobj_area_size(TXOBJ_MAP, 3), 128u + 256u);
	EXPECT_EQ(txobj_area_size(TXOBJ_MAP, 5), 128u + 512u);
}

TEST_F(TxObjects, OpenChecksKindAndAlignment)
{
	txobj *o = nullptr;
	EXPECT_EQ(txobj_open(&o, pool_, Off(layout_.queue), TXOBJ_MAP), PM_E_LAYOUT);
	EXPECT_EQ(txobj_open(&o, pool_, Off(layout_.counter) + 64, TXOBJ_COUNTER), PM_E_LAYOUT);
	EXPECT_EQ(txobj_open(&o, pool_, Off(layout_.counter) + 8, TXOBJ_COUNTER), -EINVAL);
	EXPECT_EQ(txobj_create(&o, pool_, Off(layout_.counter), TXOBJ_QUEUE, 0), -EINVAL);
	EXPECT_EQ(txobj_create(&o, pool_, pm_pool_size(pool_) - 64, TXOBJ_QUEUE, 100), -ERANGE);
	EXPECT_EQ(o, nullptr);
	EXPECT_EQ(txobj_capacity(queue_), kQueueCap);
	EXPECT_EQ(txobj_capacity(map_), kMapCap);
}

TEST_F(TxObjects, CounterAddsAndSurvivesReopen)
{
	int64_t v = -1, expect = 0;
	ASSERT_EQ(txobj_counter_get(counter_, &v), 0);
	EXPECT_EQ(v, 0);
	for (int64_t d : { 1, 5, -3, 1000000, -7 }) {
		expect += d;
		ASSERT_EQ(txobj_counter_add(counter_, d, &v), 0);
		EXPECT_EQ(v, expect);
	}
	ASSERT_EQ(txobj_counter_add(counter_, INT64_MAX, nullptr), 0);
	expect = static_cast<int64_t>(static_cast<uint64_t>(expect) + INT64_MAX);
	Reopen();
	ASSERT_EQ(txobj_counter_get(counter_, &v), 0);
	EXPECT_EQ(v, expect);
}

TEST_F(TxObjects, QueueMatchesDequeAndSurvivesReopen)
{
	std::mt19937_64 rng(7);
	std::deque<uint64_t> model;
	uint64_t next = 100;

	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3000; i++) {
			uint64_t v = 0, size = 0;
			// Bias toward enqueue in the first half of each round so the
			// queue fills up (-ENOSPC), toward dequeue in the second.
			bool enq = rng() % 100 < (i < 1500 ? 65u : 35u);
			if (enq) {
				int ret = txobj_queue_enqueue(queue_, next);
				if (model.size() == kQueueCap) {
					ASSERT_EQ(ret, -ENOSPC);
				} else {
					ASSERT_EQ(ret, 0);
					model.push_back(next);
				}
				next++;
			} else {
				int ret = txobj_queue_dequeue(queue_, &v);
				ASSERT_EQ(ret, model.empty() ? 0 : 1);
				if (!model.empty()) {
					ASSERT_EQ(v, model.front());
					model.pop_front();
				}
			}
			ASSERT_EQ(txobj_queue_size(queue_, &size), 0);
			ASSERT_EQ(size, model.size());
			v = 0;
			ASSERT_EQ(txobj_queue_front(queue_, &v), model.empty() ? 0 : 1);
			if (!model.empty()) {
				ASSERT_EQ(v, model.front());
			}
		}
		Reopen();
		uint64_t size = 0;
		ASSERT_EQ(txobj_queue_size(queue_, &size), 0);
		ASSERT_EQ(size, model.size());
	}
	// Drain: FIFO order after the reopens.
	while (!model.empty()) {
		uint64_t v = 0;
		ASSERT_EQ(txobj_queue_dequeue(queue_, &v), 1);
		ASSERT_EQ(v, model.front());
		model.pop_front();
	}
	EXPECT_EQ(txobj_queue_dequeue(queue_, nullptr), 0);
	EXPECT_EQ(txobj_queue_front(queue_, nullptr), 0);
}

void ExpectMapEquals(txobj *m, const std::map<uint64_t, uint64_t> &model, uint64_t range)
{
	uint64_t size = 0;
	ASSERT_EQ(txobj_map_size(m, &size), 0);
	ASSERT_EQ(size, model.size());
	for (uint64_t k = 0; k < range; k++) {
		uint64_t v = 0;
		auto it = model.find(k);
		ASSERT_EQ(txobj_map_get(m, k, &v), it != model.end() ? 1 : 0) << "key " << k;
		if (it != model.end()) {
			ASSERT_EQ(v, it->second) << "key " << k;
		}
	}
}

TEST_F(TxObjects, MapMatchesStdMapAndSurvivesReopen)
{
	std::mt19937_64 rng(11);
	std::map<uint64_t, uint64_t> model;

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 4000; i++) {
			// Keys 0..kKeyRange-1, plus the extremes of uint64_t.
			uint64_t key = rng() % (kKeyRange + 2);
			if (key == kKeyRange)
				key = UINT64_MAX;
			else if (key == kKeyRange + 1)
				key = UINT64_MAX - 1;
			uint64_t val = rng();
			// Mostly puts early (fill to -ENOSPC), mostly removes late.
			bool put = rng() % 100 < (i < 2000 ? 70u : 40u);
			if (put) {
				int ret = txobj_map_put(map_, key, val);
				bool present = model.count(key) != 0;
				if (!present && model.size() == kMapCap) {
					ASSERT_EQ(ret, -ENOSPC);
				} else {
					ASSERT_EQ(ret, present ? 1 : 0);
					model[key] = val;
				}
			} else {
				ASSERT_EQ(txobj_map_remove(map_, key), model.erase(key) ? 1 : 0);
			}
			if (i % 97 == 0)
				ExpectMapEquals(map_, model, kKeyRange);
		}
		ExpectMapEquals(map_, model, kKeyRange);
		Reopen();
		ExpectMapEquals(map_, model, kKeyRange);
		for (uint64_t k : { UINT64_MAX, UINT64_MAX - 1 }) {
			uint64_t v = 0;
			auto it = model.find(k);
			ASSERT_EQ(txobj_map_get(map_, k, &v), it != model.end() ? 1 : 0);
			if (it != model.end()) {
				ASSERT_EQ(v, it->second);
			}
		}
	}
}

// A dense table (90 keys in 256 slots) has long probe clusters: removing in
// every rotation order exercises backward-shift deletion, and every
// survivor must stay findable.
TEST_F(TxObjects, MapRemoveKeepsClustersFindable)
{
	for (uint64_t start = 0; start < 40; start++) {
		std::map<uint64_t, uint64_t> model;
		for (uint64_t k = 0; k < 90; k++) {
			ASSERT_EQ(txobj_map_put(map_, k * 7 + 3, k), 0);
			model[k * 7 + 3] = k;
		}
		for (uint64_t k = start; k < 90 + start; k++) {
			uint64_t key = (k % 90) * 7 + 3;
			ASSERT_EQ(txobj_map_remove(map_, key), 1);
			model.erase(key);
			if (k % 9 == 0)
				ExpectMapEquals(map_, model, 90 * 7 + 3);
		}
		ExpectMapEquals(map_, model, 90 * 7 + 3);
	}
}

// The interposed pmem_drain()/pmem_msync() see PMDK's fences: every counter
// transaction issues the same small number > 0, reads none.
TEST_F(TxObjects, FencesOfPmdkAreCounted)
{
	ASSERT_EQ(pm_pool_durability(pool_), PM_DURABILITY_PMEM)
		<< "PMEM_IS_PMEM_FORCE=1 is not in effect";
	ASSERT_TRUE(txobj_fence_counting_works(pool_));

	// pm/'s own fence (pm_persist) reaches the wrapper once as well.
	uint64_t f0 = txobj_fences_thread();
	pm_persist(pm_pool_root(pool_), 8);
	EXPECT_EQ(txobj_fences_thread() - f0, 1u);

	ASSERT_EQ(txobj_counter_add(counter_, 1, nullptr), 0); // warm the lane
	uint64_t per_op = 0;
	for (int i = 0; i < 50; i++) {
		uint64_t before = txobj_fences_thread();
		ASSERT_EQ(txobj_counter_add(counter_, 1, nullptr), 0);
		uint64_t d = txobj_fences_thread() - before;
		if (i == 0)
			per_op = d;
		EXPECT_EQ(d, per_op) << "op " << i;
	}
	EXPECT_GE(per_op, 1u);
	EXPECT_LE(per_op, 16u);
	std::printf("PMDK counter transaction: %llu fences (pmem_drain calls)\n",
		static_cast<unsigned long long>(per_op));

	uint64_t before = txobj_fences_thread();
	int64_t v;
	uint64_t s;
	for (int i = 0; i < 50; i++) {
		ASSERT_EQ(txobj_counter_get(counter_, &v), 0);
		ASSERT_EQ(txobj_map_get(map_, i, nullptr), 0);
		ASSERT_EQ(txobj_queue_size(queue_, &s), 0);
	}
	EXPECT_EQ(txobj_fences_thread(), before);
}

} // namespace
