// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/bztree_stress_test.cc -- the BzTree under contention, more
// threads than cores (so threads are preempted inside operations and
// guards), nodes of 4 or 8 records so that structure changes race with
// updates and with each other:
//   - updates: the final map equals the replay of every thread's successful
//     inserts and deletes per key, every value read names its key, and the
//     invariants hold with no node leaked;
//   - scans: keys present for the whole run (inserted first, only ever
//     rewritten with the same value) appear in every scan that covers them,
//     keys come out strictly ascending, and every pair is one the map held.
// Every MCAS algorithm and mode.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>

#include "ds/tests/bztree_test_util.h"
#include "ds/tests/mcas_stress.h"

namespace {

using bztest::Check;
using bztest::TreeEnv;
using dstest::Variant;

// Values name their key (and the writer), so a read can be checked.
uint64_t ValueOf(uint64_t key, unsigned thread)
{
	return key << 8 | thread;
}

struct Workload {
	unsigned threads;
	unsigned capacity;
	uint64_t keys;       // keys 0..keys-1
	unsigned update_pct; // inserts, deletes and upserts, evenly
	unsigned ops;        // per thread
};

// One operation of worker @id: an insert, delete or upsert of a value
// naming the key and the worker, or a lookup whose value must name its key.
void Step(ds_bztree_thread *h, const Workload &w, unsigned id, std::mt19937_64 &rng,
	dstest::StressResult *res)
{
	uint64_t key = rng() % w.keys, v = 0;
	unsigned r = rng() % 100;
	int ret;
	if (r < w.update_pct / 3) {
		ret = ds_bztree_insert(h, key, ValueOf(key, id));
		res->added[key] += ret == 1;
	} else if (r < w.update_pct * 2 / 3) {
		ret = ds_bztree_remove(h, key);
		res->removed[key] += ret == 1;
	} else if (r < w.update_pct) {
		ret = ds_bztree_upsert(h, key, ValueOf(key, id));
		res->added[key] += ret == 1;
	} else {
		ret = ds_bztree_lookup(h, key, &v);
		if (ret == 1 && v >> 8 != key)
			res->error = "key " + std::to_string(key) + " has value " + std::to_string(v);
	}
	if (ret < 0)
		res->error = "op on key " + std::to_string(key) + ": " + std::to_string(ret);
}

class BzTreeStress : public testing::TestWithParam<Variant> {
protected:
	void Setup(const std::string &name, unsigned capacity)
	{
		DS_SETUP(env, "bz-" + name + "-" + dstest::VariantName(GetParam()), GetParam(),
			dstest::SmallConfig(GetParam().alg, 16, 64), capacity, 4096);
	}

	void RunUpdates(const std::string &name, const Workload &w)
	{
		Setup(name, w.capacity);
		// Every other key present at the start.
		std::vector<int64_t> present(w.keys, 0);
		ds_bztree_thread *h = nullptr;
		ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
		for (uint64_t k = 0; k < w.keys; k += 2) {
			ASSERT_EQ(ds_bztree_insert(h, k, ValueOf(k, 99)), 1);
			present[k] = 1;
		}
		ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);

		std::vector<dstest::StressResult> res;
		ASSERT_EQ(dstest::RunStress(&res, env.ds, ds_bztree_thread_register,
				  ds_bztree_thread_unregister, w.threads, w.keys, w.ops,
				  [&w](ds_bztree_thread *wh, unsigned id, std::mt19937_64 &rng,
					  dstest::StressResult *r) { Step(wh, w, id, rng, r); }),
			"");

		ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
		ds_bztree_stats st;
		ASSERT_EQ(Check(h, &st), "");
		EXPECT_EQ(st.retired, 0u); // every worker unregistered
		EXPECT_EQ(st.leaves + st.inner + st.free, st.nodes);
		std::vector<uint64_t> expect;
		uint64_t updates = 0;
		ASSERT_EQ(dstest::StressReplay(present, res, &expect, &updates), "");
		bztest::Pairs all = bztest::Scan(h);
		ASSERT_EQ(all.size(), expect.size());
		for (size_t i = 0; i < all.size(); i++) {
			EXPECT_EQ(all[i].first, expect[i]);
			EXPECT_EQ(all[i].second >> 8, expect[i]);
		}
		EXPECT_EQ(st.size, expect.size());
		EXPECT_EQ(ds_bztree_size(h), expect.size());
		ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
		std::printf("%-16s %-8s %u threads: %" PRIu64 " consolidations, %" PRIu64
			" splits, %" PRIu64 " merges, %" PRIu64 " rebalances, final height %" PRIu64
			"\n", dstest::VariantName(GetParam()).c_str(), name.c_str(), w.threads,
			st.consolidations, st.splits, st.merges, st.rebalances, st.height);
		EXPECT_GT(st.splits, 0u);
		EXPECT_GT(st.merges + st.rebalances, 0u);
	}

	TreeEnv env;
};

TEST_P(BzTreeStress, SixThreadsCapacity4)
{
	RunUpdates("hot4", { 6, 4, 64, 60, 20000 });
}

TEST_P(BzTreeStress, EightThreadsCapacity8)
{
	RunUpdates("wide8", { 8, 8, 400, 40, 15000 });
}

// Writers churn odd keys (insert, delete) and rewrite even keys with their
// own value (upsert), which forces consolidations and splits under the
// scans; scanners check what every scan returns.
TEST_P(BzTreeStress, ScansSeeStableKeys)
{
	constexpr uint64_t kKeys = 256;
	constexpr unsigned kWriters = 3, kScanners = 3, kScans = 1500;
	Setup("scan", 4);
	ds_bztree_thread *h = nullptr;
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	for (uint64_t k = 0; k < kKeys; k += 2)
		ASSERT_EQ(ds_bztree_insert(h, k, ValueOf(k, 0)), 1);
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);

	std::atomic<bool> stop{false};
	std::atomic<unsigned> scans_done{0};
	std::vector<std::string> errors(kWriters + kScanners);
	std::vector<std::thread> th;
	for (unsigned i = 0; i < kWriters; i++)
		th.emplace_back([&, i] {
			ds_bztree_thread *wh;
			if (ds_bztree_thread_register(env.ds, &wh) != 0) {
				errors[i] = "register";
				return;
			}
			std::mt19937_64 rng(7 + i);
			while (!stop.load() && errors[i].empty()) {
				uint64_t k = rng() % kKeys;
				int r = k % 2 == 0 ? ds_bztree_upsert(wh, k, ValueOf(k, 0)) :
					rng() % 2 ? ds_bztree_insert(wh, k, ValueOf(k, i + 1)) :
						    ds_bztree_remove(wh, k);
				if (r < 0 || (k % 2 == 0 && r != 0))
					errors[i] = "writer op on " + std::to_string(k) + ": " +
						std::to_string(r);
			}
			if (ds_bztree_thread_unregister(&wh) != 0)
				errors[i] = "unregister";
		});
	for (unsigned i = 0; i < kScanners; i++)
		th.emplace_back([&, i] {
			std::string &err = errors[kWriters + i];
			ds_bztree_thread *sh;
			if (ds_bztree_thread_register(env.ds, &sh) != 0) {
				err = "register";
				return;
			}
			std::mt19937_64 rng(77 + i);
			for (unsigned n = 0; n < kScans && err.empty(); n++) {
				uint64_t start = rng() % kKeys;
				size_t max = 1 + rng() % 200;
				bztest::Pairs got = bztest::Scan(sh, start, max);
				// Every even key from start up to the last key
				// returned (or to the end if the scan stopped
				// short) must be there, with its one value.
				uint64_t end = got.size() == max ? got.back().first + 1 : kKeys;
				size_t j = 0;
				for (uint64_t k = start + start % 2; k < end && err.empty(); k += 2) {
					while (j < got.size() && got[j].first < k)
						j++;
					if (j == got.size() || got[j].first != k ||
							got[j].second != ValueOf(k, 0))
						err = "scan from " + std::to_string(start) +
							" missed stable key " + std::to_string(k);
				}
				for (size_t q = 0; q < got.size() && err.empty(); q++) {
					if (got[q].first < start || got[q].first >= kKeys ||
							(q > 0 && got[q].first <= got[q - 1].first))
						err = "scan from " + std::to_string(start) +
							": keys out of order or range at " +
							std::to_string(q);
					else if (got[q].second >> 8 != got[q].first)
						err = "scan returned a value of another key";
				}
			}
			scans_done.fetch_add(1);
			if (ds_bztree_thread_unregister(&sh) != 0)
				err = "unregister";
		});
	while (scans_done.load() < kScanners)
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
	stop.store(true);
	for (auto &x : th)
		x.join();
	for (size_t i = 0; i < errors.size(); i++)
		EXPECT_EQ(errors[i], "") << "thread " << i;
	ASSERT_EQ(ds_bztree_thread_register(env.ds, &h), 0);
	ds_bztree_stats st;
	ASSERT_EQ(Check(h, &st), "");
	EXPECT_GT(st.consolidations + st.splits, 0u);
	ASSERT_EQ(ds_bztree_thread_unregister(&h), 0);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, BzTreeStress, testing::ValuesIn(dstest::AllVariants()),
	dstest::VariantNamer());

} // namespace
