// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_rebuild_test.cc -- kv_rebuild (kv/src/store/rebuild.c) on
// three in-process memory nodes: a node whose pool was lost is rebuilt
// from the other two while a client keeps writing, and then carries the
// values: with another node gone, every acknowledged write -- including
// those that only the lost node and one other held -- reads back from
// the rebuilt node and the third. A node that was not lost is refused, and
// a rebuild without every other node fails cleanly.
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kv/kv.h>
#include <pm/error.h>

#include "kv/src/store/testing.h"
#include "kv/tests/node_group.h"
#include "kv/tests/store_config.h"

namespace {

constexpr uint64_t kDataRegion = 64u << 20;
// The rebuild waits T in the index (1 s), the suspicion time
// (L + T)(1 + 1/16) (3.19 s), and T more before it admits the node.
constexpr unsigned kLeaseMs = 2000, kTimeoutMs = 1000;

using Model = std::map<std::string, std::optional<std::string>>;

class KvRebuild : public ::testing::Test {
protected:
	KvRebuild() : group_(3, "rb", kvtest::kIndexRegion, kDataRegion)
	{
		uris_ = group_.Uris();
		for (const auto &u : uris_)
			ptrs_.push_back(u.c_str());
		cfg_ = kvtest::StoreConfig(ptrs_, 4, 4u << 20, 1u << 20, kTimeoutMs, kLeaseMs);
	}
	void SetUp() override { ASSERT_EQ(kv_create(&cfg_), 0) << pm_errormsg(); }
	void TearDown() override
	{
		for (unsigned i = 0; i < 3; i++)
			Fail(i, false);
	}

	// The node's device fails for every connection of this process (the
	// local backend's model of a node crashing), or comes back from its
	// pool.
	void Fail(unsigned i, bool failed)
	{
		EXPECT_EQ(rdma_local_fail(group_.Path(i).c_str(), failed ? 1 : 0), 0);
	}
	// kv_scrub, again until the node that came back is reconnected (as
	// `dmkv scrub` says: run it again when they are up).
	static int Scrub(kv_client *c)
	{
		int ret = 0;
		for (int i = 0; i < 100; i++) {
			if ((ret = kv_scrub(c)) != KV_E_UNAVAILABLE)
				break;
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
		}
		return ret;
	}
	// Node @i's pool is lost: the node crashes and restarts on a new,
	// empty pool.
	void Lose(unsigned i)
	{
		Fail(i, true);
		ASSERT_EQ(group_.Wipe(i), 0);
	}

	static std::string Value(unsigned i, unsigned round)
	{
		// Every third value is too big for an in-place copy here
		// (buffers only); the others have both.
		std::string v = "v" + std::to_string(round) + "." + std::to_string(i) + ".";
		v.resize(i % 3 == 0 ? 3000 : 40, static_cast<char>('a' + (i + round) % 26));
		return v;
	}
	static int Put(kv_client *c, const std::string &k, const std::string &v)
	{
		return kv_put(c, k.data(), k.size(), v.data(), v.size());
	}
	// Write round @round of keys [from, to) through @c into @m.
	static void Write(kv_client *c, Model *m, unsigned from, unsigned to, unsigned round)
	{
		for (unsigned i = from; i < to; i++) {
			const std::string k = "k" + std::to_string(i);
			if (round > 0 && i % 7 == 0 && m->count(k) != 0 && (*m)[k]) {
				ASSERT_EQ(kv_delete(c, k.data(), k.size()), 0) << pm_errormsg();
				(*m)[k] = std::nullopt;
				continue;
			}
			ASSERT_EQ(Put(c, k, Value(i, round)), 0) << k << ": " << pm_errormsg();
			(*m)[k] = Value(i, round);
		}
	}
	// The keys of @m that do not read as @m says through @c (a new client
	// if nullptr); each wrong one is reported with @report.
	unsigned Wrong(const Model &m, kv_client *c, bool report)
	{
		kv_client *own = nullptr;
		if (c == nullptr) {
			EXPECT_EQ(kv_open(&own, &cfg_), 0) << pm_errormsg();
			if (own == nullptr)
				return static_cast<unsigned>(m.size());
			c = own;
		}
		std::string v(4096, '\0');
		unsigned wrong = 0;
		for (const auto &[k, want] : m) {
			size_t len = 0;
			int ret = kv_get(c, k.data(), k.size(), v.data(), v.size(), &len);
			bool ok = want ? ret == 0 && v.substr(0, len) == *want : ret == -ENOENT;
			wrong += !ok;
			if (!ok && report)
				ADD_FAILURE() << k << ": kv_get " << ret << " (" << pm_errormsg() << ")"
					      << (want ? "" : "; it was deleted");
		}
		EXPECT_EQ(kv_close(&own), 0) << pm_errormsg();
		return wrong;
	}
	// Round 0 on keys [0, @to0), then round 1 on [@from1, @to1) while node
	// 1 is down (those values sit on nodes 0 and 2 only), then node 1 back
	// and given the index buckets split meanwhile (kv_scrub; dmkv scrub),
	// as an operator does before taking another node down.
	void WriteWithNode1Down(kv_client *a, Model *m, unsigned to0, unsigned from1, unsigned to1)
	{
		Write(a, m, 0, to0, 0);
		Fail(1, true);
		Write(a, m, from1, to1, 1);
		Fail(1, false);
		ASSERT_EQ(Scrub(a), 0) << pm_errormsg();
	}

	kvtest::LocalGroup group_;
	std::vector<std::string> uris_;
	std::vector<const char *> ptrs_;
	kv_config cfg_;
};

// Node 1 down for a while (values written then sit on nodes 0 and 2
// only), back from its pool; node 2's pool lost; rebuilt while a client
// writes; then node 0 gone: nodes 1 and 2 must hold everything.
TEST_F(KvRebuild, LostNodeIsRebuiltWhileClientsWriteAndCarriesEveryValue)
{
	kv_client *a = nullptr;
	ASSERT_EQ(kv_open(&a, &cfg_), 0) << pm_errormsg();
	Model m;
	// Updates, deletes and inserts on {0, 2}.
	ASSERT_NO_FATAL_FAILURE(WriteWithNode1Down(a, &m, 200, 100, 300));
	Lose(2);

	// A client writes all through the rebuild (on nodes 0 and 1).
	std::atomic<bool> stop{false};
	Model live;
	std::thread writer([&] {
		for (unsigned i = 0; !stop.load(); i++) {
			const std::string k = "live" + std::to_string(i % 50);
			const std::string v = Value(i, 2);
			if (Put(a, k, v) != 0) {
				ADD_FAILURE() << k << ": " << pm_errormsg();
				return;
			}
			live[k] = v;
		}
	});
	// A rebuilder whose timeout is above the cluster's is refused, and
	// one with a shorter timeout still waits the cluster's T (its own
	// rounds are not the ones that must end).
	kv_config rcfg = cfg_;
	kv_rebuild_report rep;
	rcfg.timeout_ms = kTimeoutMs + 1;
	EXPECT_EQ(kv_rebuild(&rcfg, 2, &rep), KV_E_CONFIG);
	rcfg.timeout_ms = kTimeoutMs / 2;
	int ret = kv_rebuild(&rcfg, 2, &rep);
	stop.store(true);
	writer.join();
	ASSERT_EQ(ret, 0) << pm_errormsg();
	printf("rebuilt node 2: index %s, waited %llu ms, %llu chunks, %llu objects, %llu "
	       "buffers, %llu bytes; %zu keys written meanwhile\n",
		rep.index_rebuilt ? "rebuilt" : "kept", (unsigned long long)rep.grace_ms,
		(unsigned long long)rep.chunks, (unsigned long long)rep.objects,
		(unsigned long long)rep.buffers, (unsigned long long)rep.bytes, live.size());
	EXPECT_TRUE(rep.index_rebuilt);
	// T in the index, D = (L + T)(1 + 1/16) before the copy, T after.
	const uint64_t d_ns = (kLeaseMs + kTimeoutMs) * 1000000ull * 17 / 16;
	EXPECT_EQ(rep.grace_ms, kTimeoutMs + (d_ns + 999999) / 1000000 + kTimeoutMs);
	EXPECT_GE(rep.objects, 300u);
	EXPECT_GE(rep.buffers, 100u);
	for (const auto &[k, v] : live)
		m[k] = v;

	// Admitted: it counts now. Node 0 gone, nodes 1 and 2 answer all,
	// to a new client and to the one that wrote through the rebuild.
	Fail(0, true);
	EXPECT_EQ(Wrong(m, nullptr, true), 0u);
	EXPECT_EQ(Wrong(m, a, true), 0u);
	EXPECT_EQ(kv_close(&a), 0) << pm_errormsg();
	kv_node_status ns;
	ASSERT_EQ(kv_node_status_read(&cfg_, 2, &ns), 0) << pm_errormsg();
	EXPECT_TRUE(ns.formatted);
	EXPECT_GE(ns.chunks_used, 1u);
}

// The check above can fail: a node that only got its superblocks back
// (the index rebuilt, the store superblock written, no values:
// kv__st_test_rebuild_no_values) votes with zeros, and values that only it
// and node 0 held are lost with node 0.
TEST_F(KvRebuild, NodeAdmittedWithoutItsValuesLosesWrites)
{
	kv_client *a = nullptr;
	ASSERT_EQ(kv_open(&a, &cfg_), 0) << pm_errormsg();
	Model m;
	ASSERT_NO_FATAL_FAILURE(WriteWithNode1Down(a, &m, 100, 0, 100));
	EXPECT_EQ(kv_close(&a), 0) << pm_errormsg();
	Lose(2);
	kv__st_test_rebuild_no_values(true);
	kv_rebuild_report rep;
	int ret = kv_rebuild(&cfg_, 2, &rep);
	kv__st_test_rebuild_no_values(false);
	ASSERT_EQ(ret, 0) << pm_errormsg();
	EXPECT_EQ(rep.chunks, 0u);

	Fail(0, true);
	const unsigned wrong = Wrong(m, nullptr, false);
	printf("%u of %zu keys read wrong from a node admitted without its values\n", wrong,
		m.size());
	EXPECT_GT(wrong, 0u);
}

// A node restarted from its own pool needs no rebuild, and is refused one.
TEST_F(KvRebuild, NodeThatKeptItsPoolIsRefused)
{
	kv_rebuild_report rep;
	EXPECT_EQ(kv_rebuild(&cfg_, 1, &rep), -EEXIST);
	EXPECT_NE(std::string(pm_errormsg()).find("superblock"), std::string::npos)
		<< pm_errormsg();
	EXPECT_EQ(rep.chunks, 0u);
	EXPECT_EQ(kv_rebuild(&cfg_, 3, &rep), -EINVAL);
}

// Every other node must answer; a failed rebuild can run again.
TEST_F(KvRebuild, NeedsEveryOtherNodeAndCanRunAgain)
{
	Lose(2);
	Fail(0, true);
	kv_rebuild_report rep;
	EXPECT_EQ(kv_rebuild(&cfg_, 2, &rep), KV_E_UNAVAILABLE) << pm_errormsg();
	Fail(0, false);
	ASSERT_EQ(kv_rebuild(&cfg_, 2, &rep), 0) << pm_errormsg();
	EXPECT_EQ(kv_rebuild(&cfg_, 2, &rep), -EEXIST);
}

} // namespace
