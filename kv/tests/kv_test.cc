// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_test.cc -- the store (kv/kv.h) on three in-process memory
// nodes: semantics, exact round trips from the counters, several clients,
// large values, bad input.
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kv/kv.h>
#include <pm/area.h>

#include "kv/src/index/testing.h"
#include "kv/src/store/testing.h"
#include "kv/tests/node_group.h"
#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace {

constexpr uint64_t kDataRegion = 64u << 20;

// The tests' store on the nodes @nodes names (kept alive by the caller).
kv_config TestConfig(const std::vector<const char *> &nodes, kv_replication repl)
{
	kv_config cfg;
	kv_config_init(&cfg);
	cfg.nodes = nodes.data();
	cfg.nnodes = static_cast<unsigned>(nodes.size());
	cfg.max_clients = 8;
	cfg.log_bytes = 4u << 20;
	cfg.chunk_bytes = 1u << 20;
	cfg.timeout_ms = 3000;
	cfg.lease_ms = 20000;
	cfg.repl = repl;
	return cfg;
}

class KvTest : public ::testing::Test {
protected:
	explicit KvTest(unsigned n = 3, kv_replication repl = KV_REPL_SWARM)
		: group_(n, "kv" + std::to_string(repl), kvtest::kIndexRegion, kDataRegion)
	{
		uris_ = group_.Uris();
		for (const auto &u : uris_)
			ptrs_.push_back(u.c_str());
		cfg_ = TestConfig(ptrs_, repl);
	}
	void SetUp() override
	{
		kv_config create = cfg_;
		create.timeout_ms = 20000; // the cluster's longest: some tests use 20 s
		ASSERT_EQ(kv_create(&create), 0) << pm_errormsg();
		ASSERT_EQ(kv_open(&c_, &cfg_), 0) << pm_errormsg();
	}
	void TearDown() override { EXPECT_EQ(kv_close(&c_), 0); }

public:
	static std::string Get(kv_client *c, const std::string &k, int *ret = nullptr)
	{
		std::string v(KV_VALUE_MAX, '\0');
		size_t len = 0;
		int r = kv_get(c, k.data(), k.size(), v.data(), v.size(), &len);
		if (ret != nullptr)
			*ret = r;
		if (r != 0)
			return "<" + std::string(pm_strerror(r)) + ">";
		v.resize(len);
		return v;
	}
	static int Put(kv_client *c, const std::string &k, const std::string &v)
	{
		return kv_put(c, k.data(), k.size(), v.data(), v.size());
	}
	static int Insert(kv_client *c, const std::string &k, const std::string &v)
	{
		return kv_insert(c, k.data(), k.size(), v.data(), v.size());
	}
	static int Update(kv_client *c, const std::string &k, const std::string &v)
	{
		return kv_update(c, k.data(), k.size(), v.data(), v.size());
	}
	static int Delete(kv_client *c, const std::string &k) { return kv_delete(c, k.data(), k.size()); }
	static kv_stats Stats(kv_client *c)
	{
		kv_stats s;
		kv_stats_read(c, &s);
		return s;
	}

protected:
	kvtest::LocalGroup group_;
	std::vector<std::string> uris_;
	std::vector<const char *> ptrs_;
	kv_config cfg_;
	kv_client *c_ = nullptr;
};

TEST_F(KvTest, InsertGetUpdateDeleteReinsert)
{
	int ret;

	EXPECT_EQ(Get(c_, "k", &ret), "<" + std::string(pm_strerror(-ENOENT)) + ">");
	EXPECT_EQ(ret, -ENOENT);
	EXPECT_EQ(Update(c_, "k", "v0"), -ENOENT);
	EXPECT_EQ(Delete(c_, "k"), -ENOENT);
	ASSERT_EQ(Insert(c_, "k", "v1"), 0) << pm_errormsg();
	EXPECT_EQ(Get(c_, "k"), "v1");
	EXPECT_EQ(Insert(c_, "k", "v2"), KV_E_EXISTS);
	EXPECT_EQ(Get(c_, "k"), "v1");
	ASSERT_EQ(Update(c_, "k", "v3"), 0) << pm_errormsg();
	EXPECT_EQ(Get(c_, "k"), "v3");
	ASSERT_EQ(Put(c_, "k", "v4"), 0);
	EXPECT_EQ(Get(c_, "k"), "v4");
	ASSERT_EQ(Delete(c_, "k"), 0) << pm_errormsg();
	EXPECT_EQ(Get(c_, "k", &ret), "<" + std::string(pm_strerror(-ENOENT)) + ">");
	EXPECT_EQ(Delete(c_, "k"), -ENOENT);
	EXPECT_EQ(Update(c_, "k", "v5"), -ENOENT);
	ASSERT_EQ(Insert(c_, "k", "v6"), 0) << pm_errormsg();
	EXPECT_EQ(Get(c_, "k"), "v6");
	ASSERT_EQ(Put(c_, "other", ""), 0);
	EXPECT_EQ(Get(c_, "other"), "");
	EXPECT_EQ(Get(c_, "k"), "v6");
}

TEST_F(KvTest, ManyKeysSurviveReopen)
{
	for (int i = 0; i < 500; i++)
		ASSERT_EQ(Put(c_, "key" + std::to_string(i), "value" + std::to_string(i)), 0)
			<< i << pm_errormsg();
	for (int i = 0; i < 500; i += 2)
		ASSERT_EQ(Update(c_, "key" + std::to_string(i), "again" + std::to_string(i)), 0);
	ASSERT_EQ(kv_close(&c_), 0);
	ASSERT_EQ(kv_open(&c_, &cfg_), 0);
	for (int i = 0; i < 500; i++)
		EXPECT_EQ(Get(c_, "key" + std::to_string(i)),
			(i % 2 ? "value" : "again") + std::to_string(i));
}

// Objects fill chunk after chunk (4 KiB chunks here: about a dozen objects
// each), and a reopened client resumes in its last chunk.
TEST_F(KvTest, ObjectsSpanManyChunks)
{
	kvtest::LocalGroup g2(3, "kvchunks", kvtest::kIndexRegion, kDataRegion);
	std::vector<std::string> uris = g2.Uris();
	std::vector<const char *> ptrs;
	for (const auto &u : uris)
		ptrs.push_back(u.c_str());
	kv_config cfg = cfg_;
	cfg.nodes = ptrs.data();
	cfg.chunk_bytes = 4096;
	kv_client *c = nullptr;
	ASSERT_EQ(kv_create(&cfg), 0) << pm_errormsg();
	ASSERT_EQ(kv_open(&c, &cfg), 0);
	for (int i = 0; i < 150; i++)
		ASSERT_EQ(Insert(c, "c" + std::to_string(i), std::to_string(i)), 0) << i << pm_errormsg();
	ASSERT_EQ(kv_close(&c), 0);
	ASSERT_EQ(kv_open(&c, &cfg), 0);
	for (int i = 150; i < 300; i++)
		ASSERT_EQ(Insert(c, "c" + std::to_string(i), std::to_string(i)), 0) << i << pm_errormsg();
	for (int i = 0; i < 300; i++)
		EXPECT_EQ(Get(c, "c" + std::to_string(i)), std::to_string(i));
	kv_close(&c);
}

// With no contention and no failure, a cached get and update take one
// round trip on the values; an insert the index's two, the object's write
// running beside the first; a delete one on the values, after the index's
// lookup (a delete never takes its location from the cache) and before
// the index's remove.
TEST_F(KvTest, RoundTripsOnTheCounters)
{
	ASSERT_EQ(Insert(c_, "rt", "v0"), 0);
	kv_stats a = Stats(c_);
	ASSERT_EQ(Update(c_, "rt", "v1"), 0);
	kv_stats b = Stats(c_);
	EXPECT_EQ(b.rounds - a.rounds, 1u);
	EXPECT_EQ(b.index_rounds - a.index_rounds, 0u);
	EXPECT_EQ(b.slow_writes, 0u);
	EXPECT_EQ(Get(c_, "rt"), "v1");
	kv_stats d = Stats(c_);
	EXPECT_EQ(d.rounds - b.rounds, 1u);
	EXPECT_EQ(d.index_rounds - b.index_rounds, 0u);
	EXPECT_EQ(d.oop_reads - b.oop_reads, 0u);
	// The object is written beside the index's first round.
	ASSERT_EQ(Insert(c_, "rt2", "w"), 0);
	kv_stats e = Stats(c_);
	EXPECT_EQ(e.rounds - d.rounds, 0u);
	EXPECT_EQ(e.index_rounds - d.index_rounds, 2u);
	ASSERT_EQ(Delete(c_, "rt2"), 0);
	kv_stats f = Stats(c_);
	EXPECT_EQ(f.rounds - e.rounds, 1u);
	// The lookup's one (the slot; the key is not read back from the
	// object the cache names) and the remove's two.
	EXPECT_EQ(f.index_rounds - e.index_rounds, 3u);
	EXPECT_EQ(f.cache_misses, e.cache_misses);
}

TEST_F(KvTest, LargeValuesAndOutOfPlaceReads)
{
	std::string big(KV_VALUE_MAX, 'x'), mid(20000, 'm'), small(100, 's');
	for (size_t i = 0; i < big.size(); i++)
		big[i] = static_cast<char>(i * 7 + 3);
	ASSERT_EQ(Insert(c_, "big", big), 0) << pm_errormsg();
	EXPECT_EQ(Get(c_, "big"), big);
	// Values larger than the in-place copy are read out of place: one
	// more round trip, two for values above 4 KiB (their length is only
	// known from the buffer's header).
	std::string medium(3000, 'q');
	ASSERT_EQ(Insert(c_, "grow", small), 0);
	ASSERT_EQ(Update(c_, "grow", medium), 0);
	kv_stats a = Stats(c_);
	EXPECT_EQ(Get(c_, "grow"), medium);
	kv_stats b = Stats(c_);
	EXPECT_EQ(b.oop_reads - a.oop_reads, 1u);
	EXPECT_EQ(b.rounds - a.rounds, 2u);
	ASSERT_EQ(Update(c_, "grow", mid), 0);
	EXPECT_EQ(Get(c_, "grow"), mid);
	kv_stats d = Stats(c_);
	EXPECT_EQ(d.rounds - b.rounds, 1u + 3u);
	ASSERT_EQ(Update(c_, "grow", small), 0);
	EXPECT_EQ(Get(c_, "grow"), small);
	std::string key(KV_KEY_MAX, 'k');
	ASSERT_EQ(Insert(c_, key, "long key"), 0);
	EXPECT_EQ(Get(c_, key), "long key");
}

TEST_F(KvTest, BadInputIsRejected)
{
	std::string toolong(KV_KEY_MAX + 1, 'k'), big(KV_VALUE_MAX + 1, 'v');
	size_t len;
	char buf[8];

	EXPECT_EQ(kv_insert(c_, "", 0, "v", 1), -EINVAL);
	EXPECT_EQ(kv_get(c_, nullptr, 0, buf, sizeof(buf), &len), -EINVAL);
	EXPECT_EQ(Insert(c_, toolong, "v"), -E2BIG);
	EXPECT_EQ(Insert(c_, "k", big), -E2BIG);
	EXPECT_EQ(Put(c_, "k", big), -E2BIG);
	EXPECT_EQ(kv_get(c_, "k", 1, buf, sizeof(buf), nullptr), -EINVAL);
	// A value longer than the buffer is cut, and its length reported.
	ASSERT_EQ(Insert(c_, "k", "0123456789"), 0);
	ASSERT_EQ(kv_get(c_, "k", 1, buf, sizeof(buf), &len), 0);
	EXPECT_EQ(len, 10u);
	EXPECT_EQ(std::string(buf, 8), "01234567");

	kv_config bad = cfg_;
	const char *dup[3] = { ptrs_[0], ptrs_[1], ptrs_[0] };
	bad.nodes = dup;
	EXPECT_EQ(kv_create(&bad), KV_E_CONFIG);
	EXPECT_NE(std::string(pm_errormsg()).find("listed twice"), std::string::npos);
	bad = cfg_;
	bad.nnodes = 2;
	EXPECT_EQ(kv_create(&bad), KV_E_CONFIG);
	bad = cfg_;
	bad.max_clients = 0;
	EXPECT_EQ(kv_create(&bad), KV_E_CONFIG);
	bad = cfg_;
	bad.log_bytes = 12345;
	EXPECT_EQ(kv_create(&bad), KV_E_CONFIG);
	EXPECT_EQ(kv_create(&cfg_), -EEXIST);
	bad = cfg_;
	bad.conn.token = "wrong";
	kv_client *x = nullptr;
	EXPECT_NE(kv_open(&x, &bad), 0);
	EXPECT_EQ(x, nullptr);
}

// Every client id is taken through the nodes; a closed client gives its id
// back.
// A store region whose superblock does not check on any node: kv_open
// names the superblock's problem, not only that no majority was usable, and
// claims nothing. @rewrite changes the 4 KiB superblock read from a node.
void ExpectOpenNames(kv_config cfg, const std::vector<std::string> &uris,
	const std::function<void(unsigned char *)> &rewrite, const std::string &what)
{
	for (const auto &uri : uris) {
		rdma_conn *conn = nullptr;
		ASSERT_EQ(rdma_conn_open(&conn, uri.c_str(), nullptr), 0) << pm_errormsg();
		std::vector<unsigned char> sb(4096);
		rdma_batch b;
		rdma_batch_init(&b);
		ASSERT_EQ(rdma_batch_read(&b, cfg.store_region, 0, sb.data(), sb.size()), 0);
		ASSERT_EQ(rdma_execute(conn, &b), 0) << pm_errormsg();
		rewrite(sb.data());
		rdma_batch_init(&b);
		ASSERT_EQ(rdma_batch_write(&b, cfg.store_region, 0, sb.data(), sb.size()), 0);
		ASSERT_EQ(rdma_execute(conn, &b), 0) << pm_errormsg();
		rdma_conn_close(&conn);
	}
	cfg.timeout_ms = 300;
	kv_client *c = nullptr;
	int ret = kv_open(&c, &cfg);
	EXPECT_EQ(c, nullptr);
	EXPECT_EQ(ret, KV_E_UNAVAILABLE);
	EXPECT_NE(std::string(pm_errormsg()).find(what), std::string::npos)
		<< pm_strerror(ret) << ": " << pm_errormsg();
	std::printf("kv_open: %s: %s\n", pm_strerror(ret), pm_errormsg());
}

TEST_F(KvTest, OpenNamesABadStoreSuperblock)
{
	ASSERT_EQ(kv_close(&c_), 0);
	ExpectOpenNames(cfg_, uris_, [](unsigned char *sb) {
		std::memset(sb, 0, sizeof(uint64_t)); // the area's magic: unformatted
	}, "kv store superblock header: never formatted");
}

// A store made by an earlier layout (version 2, before the hazard words):
// the message names both versions (README, "Using kv/kv.h").
TEST_F(KvTest, OpenNamesAnOlderStoreLayout)
{
	ASSERT_EQ(kv_close(&c_), 0);
	ExpectOpenNames(cfg_, uris_, [](unsigned char *sb) {
		pm_area_hdr h;
		std::memcpy(&h, sb, sizeof(h));
		const pm_area_type older = { "kv store superblock", h.magic, 2, h.hdr_size };
		pm_area_seal(reinterpret_cast<pm_area_hdr *>(sb), &older, h.area_size);
	}, "kv store superblock layout version 2, expected 6");
}

TEST_F(KvTest, ClientIdsAreClaimedAndReturned)
{
	std::vector<kv_client *> cs;
	for (unsigned i = 1; i < cfg_.max_clients; i++) {
		kv_client *x = nullptr;
		ASSERT_EQ(kv_open(&x, &cfg_), 0) << i << pm_errormsg();
		cs.push_back(x);
	}
	kv_client *extra = nullptr;
	EXPECT_EQ(kv_open(&extra, &cfg_), KV_E_UNAVAILABLE);
	EXPECT_NE(std::string(pm_errormsg()).find("taken"), std::string::npos);
	ASSERT_EQ(kv_close(&cs.back()), 0);
	cs.pop_back();
	ASSERT_EQ(kv_open(&extra, &cfg_), 0);
	cs.push_back(extra);
	for (auto &x : cs)
		EXPECT_EQ(kv_close(&x), 0);
}

// Clients racing to insert one key: exactly one wins, the others see it.
TEST_F(KvTest, ConcurrentInsertsOfOneKeyHaveOneWinner)
{
	constexpr int kThreads = 4, kRounds = 20;
	for (int r = 0; r < kRounds; r++) {
		std::string key = "race" + std::to_string(r);
		std::atomic<int> wins{0}, exists{0}, other{0};
		std::vector<std::string> val(kThreads);
		std::vector<std::thread> ts;
		std::vector<kv_client *> cs(kThreads);
		for (int t = 0; t < kThreads; t++)
			ASSERT_EQ(kv_open(&cs[t], &cfg_), 0);
		for (int t = 0; t < kThreads; t++)
			ts.emplace_back([&, t] {
				int ret = Insert(cs[t], key, "from" + std::to_string(t));
				if (ret == 0)
					wins++;
				else if (ret == KV_E_EXISTS)
					exists++;
				else
					other = ret;
			});
		for (auto &t : ts)
			t.join();
		EXPECT_EQ(wins.load(), 1);
		EXPECT_EQ(exists.load(), kThreads - 1) << pm_strerror(other.load());
		std::string v = Get(c_, key);
		for (int t = 0; t < kThreads; t++)
			EXPECT_EQ(Get(cs[t], key), v);
		for (auto &x : cs)
			kv_close(&x);
	}
}

// A location cached by one client stays usable after another deletes the
// key and inserts it again elsewhere: the tombstone sends it to the index.
TEST_F(KvTest, StaleCachedLocationAfterDeleteAndReinsert)
{
	kv_client *d = nullptr;
	ASSERT_EQ(kv_open(&d, &cfg_), 0);
	ASSERT_EQ(Insert(c_, "k", "old"), 0);
	EXPECT_EQ(Get(c_, "k"), "old");     // cached now
	ASSERT_EQ(Delete(d, "k"), 0);
	ASSERT_EQ(Insert(d, "k", "new"), 0);
	EXPECT_EQ(Get(c_, "k"), "new");
	ASSERT_EQ(Update(c_, "k", "newer"), 0);
	EXPECT_EQ(Get(d, "k"), "newer");
	ASSERT_EQ(Delete(d, "k"), 0);
	EXPECT_EQ(Update(c_, "k", "x"), -ENOENT);
	EXPECT_EQ(Delete(c_, "k"), -ENOENT);
	// A delete by a client whose cache holds a dead incarnation deletes
	// the key's current one (a delete looks the key up).
	ASSERT_EQ(Insert(c_, "k2", "a"), 0);
	EXPECT_EQ(Get(c_, "k2"), "a");
	ASSERT_EQ(Delete(d, "k2"), 0);
	ASSERT_EQ(Insert(d, "k2", "b"), 0);
	ASSERT_EQ(Delete(c_, "k2"), 0);
	int ret;
	Get(d, "k2", &ret);
	EXPECT_EQ(ret, -ENOENT);
	EXPECT_EQ(Update(d, "k2", "c"), -ENOENT);
	kv_close(&d);
}

// Losing the replies of a delete's tombstone round. A delete's rounds on
// the values' connections are, with lease renewals off, the read of the
// key for the index's lookup (the key inserted by another client, so the
// deleter's cache does not spare that read) and then the tombstone round;
// the read is
// delayed on every member, so that the client's wait hook runs in it
// (LostTombstoneReplies::Hook) and makes every member lose its replies of
// the round after. The hook's owner may go on in later calls.
struct LostTombstoneReplies {
	kv_client *d = nullptr;
	int phase = -1; // -1: off; 0: in the lookup's read; 1: armed

	void Start()
	{
		kv__st_test_skip_renewal(d, true);
		for (unsigned m = 0; m < 3; m++)
			ASSERT_EQ(kv__st_test_inject_once(d, m, RDMA_FAULT_DELAY, 2000), 0);
		phase = 0;
	}
	void Stop() { kv__st_test_skip_renewal(d, false); }
	// Arms the loss on the first call of the delete; true if it did.
	bool Hook()
	{
		if (phase != 0)
			return false;
		for (unsigned m = 0; m < 3; m++)
			kv__st_test_inject_once(d, m, RDMA_FAULT_DROP_REPLY, 0);
		phase = 1;
		return true;
	}
	static void HookOnly(void *arg) { static_cast<LostTombstoneReplies *>(arg)->Hook(); }
};

// A delete whose tombstone round ran on the nodes but whose replies were
// lost finds its own tombstone when it asks again: that is not "deleted
// before", so it deletes and reports 0, and the key is gone. (It reported
// -ENOENT.)
TEST_F(KvTest, DeleteWhoseRepliesWereLostIsNotAbsent)
{
	kv_config cfg = cfg_;
	cfg.conn.timeout_ms = 200; // the lost replies are given up soon
	LostTombstoneReplies lost;
	ASSERT_EQ(kv__st_test_open(&lost.d, &cfg, LostTombstoneReplies::HookOnly, &lost), 0)
		<< pm_errormsg();
	kv_client *d = lost.d;
	for (int round = 0; round < 3; round++) {
		const std::string k = "lost-" + std::to_string(round);
		ASSERT_EQ(Insert(c_, k, "v"), 0);
		kv_stats before = Stats(d);
		lost.Start();
		EXPECT_EQ(Delete(d, k), 0) << pm_errormsg();
		lost.Stop();
		kv_stats after = Stats(d);
		EXPECT_EQ(lost.phase, 1);
		EXPECT_GE(after.rounds - before.rounds, 2u) << "the tombstone round was lost and retried";
		int ret = 0;
		Get(c_, k, &ret);
		EXPECT_EQ(ret, -ENOENT);
		EXPECT_EQ(Delete(c_, k), -ENOENT);
	}
	kv_close(&d);
}

// A delete whose replies are lost, overtaken meanwhile by another client's
// delete -- which must report the key absent, the first delete's
// tombstones having come first -- and by a re-insert: the first delete
// removed the old incarnation, and must not remove the new one too.
// (ConcurrentClientsWithOneRoundFaultsAreLinearizable failed so in 1 TSan
// run of 24: the retry read the other delete's tombstone as earlier.)
TEST_F(KvTest, DeleteOvertakenAfterLostRepliesSparesTheReinsertedKey)
{
	struct Overtake {
		LostTombstoneReplies lost;
		kv_client *other;
		uint64_t rounds; // d's value rounds before its delete
		bool done;
		int del_ret, put_ret;
	} ov{{}, c_, 0, false, 1, 1};
	kv_config cfg = cfg_;
	cfg.conn.timeout_ms = 200; // the lost replies are given up soon
	// Runs on d's thread while d waits for the nodes.
	auto overtake = [](void *arg) {
		auto *o = static_cast<Overtake *>(arg);
		if (o->lost.Hook() || o->lost.phase != 1 || o->done ||
				Stats(o->lost.d).rounds == o->rounds)
			return;
		o->done = true; // in the tombstone round, its batches landed
		o->del_ret = Delete(o->other, "k");
		o->put_ret = Put(o->other, "k", "new");
	};
	ASSERT_EQ(kv__st_test_open(&ov.lost.d, &cfg, overtake, &ov), 0) << pm_errormsg();
	kv_client *d = ov.lost.d;
	ASSERT_EQ(Insert(c_, "k", "old"), 0);
	ov.rounds = Stats(d).rounds;
	ov.lost.Start();
	EXPECT_EQ(Delete(d, "k"), 0) << pm_errormsg();
	ov.lost.Stop();
	EXPECT_TRUE(ov.done) << "the other client ran inside the tombstone round";
	EXPECT_EQ(ov.del_ret, -ENOENT) << "the first delete's tombstones came first";
	EXPECT_EQ(ov.put_ret, 0);
	EXPECT_EQ(Get(c_, "k"), "new");
	EXPECT_EQ(Get(d, "k"), "new");
	EXPECT_EQ(kv_close(&d), 0);
}

// Two clients overwrite a few keys many times more than their logs hold:
// each update retires the buffer of the same client's previous write of
// that key, and retired buffers are reused (recycle.h), so nothing runs out
// and the logs' marks stay near what the live values need.
TEST_F(KvTest, UpdatesReuseTheirBuffers)
{
	kv_client *d = nullptr;
	ASSERT_EQ(kv_open(&d, &cfg_), 0) << pm_errormsg();
	const unsigned keys = 8;
	// 20-byte values take one 128-byte unit with the header; a 4 MiB log
	// holds 32768 of them.
	const unsigned rounds = 40000 / keys;
	for (unsigned r = 0; r < rounds; r++) {
		for (unsigned k = 0; k < keys; k++) {
			kv_client *w = (r + k) % 2 ? c_ : d;
			char v[21];
			std::snprintf(v, sizeof(v), "r%07u-k%02u-xxxxxxx", r, k);
			ASSERT_EQ(Put(w, "key" + std::to_string(k), v), 0)
				<< r << " " << k << ": " << pm_errormsg();
		}
		if (r % 512 == 0) {
			char v[21];
			std::snprintf(v, sizeof(v), "r%07u-k%02u-xxxxxxx", r, 3u);
			EXPECT_EQ(Get(c_, "key3"), v);
		}
	}
	for (unsigned k = 0; k < keys; k++) {
		char v[21];
		std::snprintf(v, sizeof(v), "r%07u-k%02u-xxxxxxx", rounds - 1, k);
		EXPECT_EQ(Get(d, "key" + std::to_string(k)), v);
	}
	kv_stats sc = Stats(c_), sd = Stats(d);
	EXPECT_GT(sc.recycled, 15000u);
	EXPECT_GT(sd.recycled, 15000u);
	EXPECT_GT(sc.reclaims, 0u);
	std::printf("recycled %llu + %llu buffers in %llu + %llu reclaims\n",
		(unsigned long long)sc.recycled, (unsigned long long)sd.recycled,
		(unsigned long long)sc.reclaims, (unsigned long long)sd.reclaims);
	EXPECT_EQ(kv_close(&d), 0);
	kv_node_status st;
	ASSERT_EQ(kv_node_status_read(&cfg_, 0, &st), 0) << pm_errormsg();
	// Every client's mark, after kv_close lowered the closed one's to
	// what it used: at most one reservation step each beyond its live
	// values and the buffers retired but not yet reclaimed.
	EXPECT_LE(st.log_used, 2u * (512u << 10)) << "the logs grew: buffers not reused";
}

// A client id used by one process after another: each life finds the
// writes the earlier ones left in its log (kv__st_log_recover), keeps the
// latest of each key and reuses the rest, so the log does not grow from
// life to life, and the values written last are there.
TEST_F(KvTest, RestartedClientReusesItsLog)
{
	// Every other id taken, so each life gets the same one.
	std::vector<kv_client *> others(cfg_.max_clients - 2);
	for (auto &o : others)
		ASSERT_EQ(kv_open(&o, &cfg_), 0) << pm_errormsg();
	uint64_t first_life = 0; // the log a life needs: its marks after it
	for (unsigned life = 0; life < 12; life++) {
		kv_client *d = nullptr;
		ASSERT_EQ(kv_open(&d, &cfg_), 0) << life << ": " << pm_errormsg();
		if (life > 0) {
			EXPECT_GE(Stats(d).recovered, 8u) << "the latest value of each key";
		}
		for (unsigned r = 0; r < 400; r++) {
			for (unsigned k = 0; k < 8; k++) {
				char v[21];
				std::snprintf(v, sizeof(v), "l%02u-r%04u-k%02u-xxxx", life, r, k);
				ASSERT_EQ(Put(d, "key" + std::to_string(k), v), 0)
					<< life << " " << r << ": " << pm_errormsg();
			}
		}
		ASSERT_EQ(kv_close(&d), 0);
		if (life == 0) {
			kv_node_status st;
			ASSERT_EQ(kv_node_status_read(&cfg_, 0, &st), 0) << pm_errormsg();
			first_life = st.log_used;
		}
		for (unsigned k = 0; k < 8; k++) {
			char v[21];
			std::snprintf(v, sizeof(v), "l%02u-r%04u-k%02u-xxxx", life, 399u, k);
			EXPECT_EQ(Get(c_, "key" + std::to_string(k)), v);
		}
	}
	for (auto &o : others)
		EXPECT_EQ(kv_close(&o), 0);
	kv_node_status st;
	ASSERT_EQ(kv_node_status_read(&cfg_, 0, &st), 0) << pm_errormsg();
	// A life's 3,200 updates need about 70 KiB of buffers (8 live values
	// and up to two reclaim batches retired, KV_RC_BATCH), the rest reused;
	// without the recovery each life adds that much again.
	EXPECT_GT(first_life, 0u);
	EXPECT_LE(st.log_used, 2 * first_life) << "an earlier life's log was not reused";
}

// A client whose keys another client overwrote and that never touches them
// again: once its log is pressed, its sweep finds those buffers superseded
// and reuses them, so it can go on inserting where its log alone would be
// full (values of 1 KiB: 9 units each, 3640 in a 4 MiB log).
TEST_F(KvTest, SweepReusesBuffersOthersSuperseded)
{
	kv_client *d = nullptr;
	ASSERT_EQ(kv_open(&d, &cfg_), 0) << pm_errormsg();
	const std::string big(1000, 'v');
	for (unsigned k = 0; k < 2500; k++)
		ASSERT_EQ(Insert(d, "a" + std::to_string(k), big), 0) << k << ": " << pm_errormsg();
	for (unsigned k = 0; k < 2500; k++)
		ASSERT_EQ(Put(c_, "a" + std::to_string(k), "w"), 0) << k << ": " << pm_errormsg();
	for (unsigned k = 0; k < 1500; k++)
		ASSERT_EQ(Insert(d, "b" + std::to_string(k), big), 0) << k << ": " << pm_errormsg();
	EXPECT_GT(Stats(d).recycled, 300u);
	EXPECT_EQ(Get(d, "a7"), "w");
	EXPECT_EQ(Get(c_, "b1499"), big);
	EXPECT_EQ(kv_close(&d), 0);
}

// A reader that fetched a value to write back, then stalls while its
// writer supersedes that write and reuses buffers, then copies the value
// into the writer's buffer on the member that lacked it (the late WRITE of
// kv/DESIGN.md, "Recycling"). With the hazard word the writer keeps that
// buffer, and the newest value survives the loss of the one other member
// holding it; without it (the planted bug), the copy lands on the newest
// value's buffer and that loss leaves no intact copy.
class KvLateWriteBackTest : public KvTest, public ::testing::WithParamInterface<bool> {};

TEST_P(KvLateWriteBackTest, NewerValueSurvives)
{
	const bool unsafe = GetParam();
	kv_config cfg = cfg_;
	cfg.conn.timeout_ms = 200;
	cfg.timeout_ms = 1500;
	kv_client *w = nullptr, *r = nullptr;
	ASSERT_EQ(kv_open(&w, &cfg), 0) << pm_errormsg();
	ASSERT_EQ(Insert(w, "k", "v0"), 0) << pm_errormsg();
	uint64_t loc = 0;
	ASSERT_EQ(kv_index_lookup(kv__st_test_index(w), "k", 1, &loc), 0);
	const unsigned p = (unsigned)((loc >> 4) % 3), q = (p + 1) % 3;
	// v1 misses member q (one failed post), so it is on p and p + 2; a
	// reader of the majority {p, q} finds it on p alone and writes it back
	// to q.
	ASSERT_EQ(kv__st_test_inject_once(w, q, RDMA_FAULT_FAIL, 0), 0);
	ASSERT_EQ(Put(w, "k", "v1"), 0) << pm_errormsg();
	struct Stall {
		kv_client *w;
		unsigned third; // p + 2
		bool armed;
		int rets[4];
	} st{w, (p + 2) % 3, true, {1, 1, 1, 1}};
	auto stall = [](void *arg) {
		auto *s = static_cast<Stall *>(arg);
		if (!s->armed)
			return;
		s->armed = false;
		// v2 supersedes v1 on f+1 members: v1's buffer is retired and
		// reclaimed unless a hazard names it; v3 takes a freed buffer,
		// and misses member p + 2 (one failed post): it is on p and q
		// only, whatever q's reconnection timing (on a loaded machine
		// v3 reached all three and nothing was left to catch).
		s->rets[0] = Put(s->w, "k", "v2");
		s->rets[1] = kv__st_test_reclaim(s->w);
		s->rets[2] = kv__st_test_inject_once(s->w, s->third, RDMA_FAULT_FAIL, 0);
		s->rets[3] = Put(s->w, "k", "v3");
	};
	ASSERT_EQ(kv_open(&r, &cfg), 0) << pm_errormsg();
	kv__st_test_write_back_hook(r, stall, &st, unsafe);
	const std::string got = Get(r, "k");
	EXPECT_FALSE(st.armed) << "the reader wrote back";
	EXPECT_EQ(st.rets[0], 0);
	EXPECT_EQ(st.rets[1], 0);
	EXPECT_EQ(st.rets[2], 0);
	EXPECT_EQ(st.rets[3], 0);
	EXPECT_TRUE(got == "v1" || got == "v3") << got;
	// Member p fails: v3 must still be readable from q (and p + 2).
	ASSERT_EQ(rdma_local_fail(group_.Path(p).c_str(), 1), 0);
	kv_client *x = nullptr;
	ASSERT_EQ(kv_open(&x, &cfg), 0) << pm_errormsg();
	int ret = 0;
	const std::string after = Get(x, "k", &ret);
	// The hazard kept v1's buffer from reuse: the writer freed v0's only.
	EXPECT_EQ(Stats(w).recycled, unsafe ? 2u : 1u);
	if (unsafe) {
		EXPECT_NE(after, "v3") << "the planted bug was not caught";
	} else {
		EXPECT_EQ(after, "v3") << pm_errormsg();
	}
	EXPECT_EQ(kv_close(&x), 0);
	ASSERT_EQ(rdma_local_fail(group_.Path(p).c_str(), 0), 0);
	EXPECT_EQ(kv_close(&r), 0);
	EXPECT_EQ(kv_close(&w), 0);
}

INSTANTIATE_TEST_SUITE_P(HazardOrPlantedBug, KvLateWriteBackTest, ::testing::Values(false, true),
	[](const ::testing::TestParamInfo<bool> &i) {
		return std::string(i.param ? "WithoutHazard_BugCaught" : "WithHazard");
	});

// One client, every operation kind, and before each operation one or two
// store members whose next round runs on the node but loses its reply: the
// results are exactly those of a map (one client: no concurrency to
// excuse anything), and nothing reports unavailable.
TEST_F(KvTest, LostRepliesChangeNoResult)
{
	kv_config cfg = cfg_;
	cfg.conn.timeout_ms = 100;
	kv_client *d = nullptr;
	ASSERT_EQ(kv_open(&d, &cfg), 0) << pm_errormsg();
	std::map<std::string, std::string> model;
	std::mt19937 rng(7);
	for (int i = 0; i < 48; i++) {
		const std::string k = "r" + std::to_string(rng() % 5);
		const std::string v = "v" + std::to_string(i) + std::string(rng() % 300, 'x');
		const bool has = model.count(k) != 0;
		const unsigned m = rng() % 3;
		ASSERT_EQ(kv__st_test_inject_once(d, m, RDMA_FAULT_DROP_REPLY, 0), 0);
		if (rng() % 2) {
			ASSERT_EQ(kv__st_test_inject_once(d, (m + 1) % 3, RDMA_FAULT_DROP_REPLY, 0), 0);
		}
		int ret = 0;
		switch (rng() % 5) {
		case 0:
			EXPECT_EQ(Insert(d, k, v), has ? KV_E_EXISTS : 0) << i;
			if (!has)
				model[k] = v;
			break;
		case 1:
			EXPECT_EQ(Update(d, k, v), has ? 0 : -ENOENT) << i;
			if (has)
				model[k] = v;
			break;
		case 2:
			EXPECT_EQ(Put(d, k, v), 0) << i;
			model[k] = v;
			break;
		case 3:
			EXPECT_EQ(Get(d, k, &ret), has ? model[k] : "<" + std::string(pm_strerror(-ENOENT)) + ">")
				<< i;
			break;
		default:
			EXPECT_EQ(Delete(d, k), has ? 0 : -ENOENT) << i;
			model.erase(k);
			break;
		}
	}
	EXPECT_EQ(Stats(d).unavailable, 0u);
	for (const auto &[k, v] : model)
		EXPECT_EQ(Get(c_, k), v);
	kv_close(&d);
}

// How ConcurrentKv's clients meet faults.
enum class KvFaults {
	// Before about one operation in three, a fault on one member for one
	// round -- a lost reply (the batch ran), a failed post, or a delay
	// past the connection timeout -- on the store or index connections.
	kOneRound,
	// Member 2 failed for even clients and slow (300 us a batch) for odd
	// ones, on both connections, for the whole run.
	kNode2,
};

// Client threads on a few keys, each its own client opened with @base, its
// operations limited to @op_timeout_ms: the history is linearizable. An
// operation answering KV_E_UNAVAILABLE stays pending (it may have taken
// effect). Return: how many did.
unsigned ConcurrentKv(const kv_config &base, KvFaults faults, unsigned op_timeout_ms)
{
	constexpr unsigned kThreads = 4, kOps = 150, kKeys = 6;
	const rdma_fault kinds[] = { RDMA_FAULT_DROP_REPLY, RDMA_FAULT_DROP_REPLY, RDMA_FAULT_FAIL,
		RDMA_FAULT_DELAY };
	lincheck::Recorder<lincheck::KvOp> rec(kThreads, kOps);
	std::atomic<unsigned> unavailable{0};
	std::vector<std::thread> threads;
	for (unsigned t = 0; t < kThreads; t++) {
		threads.emplace_back([&, t] {
			kv_config cfg = base;
			// Short connection timeouts make the one-round delays
			// count as faults. The open has the cluster's timeout
			// (connecting under TSan takes longer than the races).
			if (faults == KvFaults::kOneRound)
				cfg.conn.timeout_ms = 30;
			kv_client *c = nullptr;
			ASSERT_EQ(kv_open(&c, &cfg), 0) << pm_errormsg();
			kv__st_test_set_timeout(c, op_timeout_ms);
			if (faults == KvFaults::kNode2) {
				const rdma_fault f = t % 2 ? RDMA_FAULT_DELAY : RDMA_FAULT_FAIL;
				ASSERT_EQ(kv__st_test_inject(c, 2, f, 300), 0);
				ASSERT_EQ(kv__ix_test_inject(kv__st_test_index(c), 2, f, 300), 0);
			}
			auto &h = rec.handle(t);
			std::mt19937 rng(1000 + t);
			for (unsigned op = 0; op < kOps; op++) {
				if (faults == KvFaults::kOneRound && rng() % 3 == 0) {
					unsigned m = rng() % 3;
					rdma_fault f = kinds[rng() % 4];
					unsigned where = rng() % 2;
					if (where)
						ASSERT_EQ(kv__st_test_inject_once(c, m, f, 60000), 0);
					else
						ASSERT_EQ(kv__ix_test_inject_once(kv__st_test_index(c), m, f,
							60000), 0);
				}
				const uint64_t key = rng() % kKeys, val = uint64_t{t + 1} << 32 | op;
				const std::string k = "c" + std::to_string(key);
				const std::string v = "v" + std::to_string(val);
				const unsigned kind = rng() % 5;
				lincheck::KvOp call = kind == 0 ? lincheck::KvOp::insert(key, val) :
					kind == 1 ? lincheck::KvOp::update(key, val) :
					kind == 2 ? lincheck::KvOp::put(key, val) :
					kind == 3 ? lincheck::KvOp::get(key) : lincheck::KvOp::del(key);
				auto id = h.invoke(call);
				int ret = 0;
				lincheck::KvOp done;
				switch (kind) {
				case 0:
					ret = KvTest::Insert(c, k, v);
					done = ret == 0 ? lincheck::KvOp::insert_ok(key, val) :
						lincheck::KvOp::insert_exists(key, val);
					ASSERT_TRUE(ret == 0 || ret == KV_E_EXISTS || ret == KV_E_UNAVAILABLE)
						<< ret;
					break;
				case 1:
					ret = KvTest::Update(c, k, v);
					done = ret == 0 ? lincheck::KvOp::update_ok(key, val) :
						lincheck::KvOp::update_absent(key, val);
					ASSERT_TRUE(ret == 0 || ret == -ENOENT || ret == KV_E_UNAVAILABLE)
						<< ret;
					break;
				case 2:
					ret = KvTest::Put(c, k, v);
					done = lincheck::KvOp::put_ok(key, val);
					ASSERT_TRUE(ret == 0 || ret == KV_E_UNAVAILABLE) << ret;
					break;
				case 3: {
					std::string got = KvTest::Get(c, k, &ret);
					ASSERT_TRUE(ret == 0 || ret == -ENOENT || ret == KV_E_UNAVAILABLE)
						<< ret;
					done = ret == 0 ? lincheck::KvOp::get_found(key,
						std::stoull(got.substr(1))) : lincheck::KvOp::get_absent(key);
					break;
				}
				default:
					ret = KvTest::Delete(c, k);
					done = ret == 0 ? lincheck::KvOp::del_ok(key) :
						lincheck::KvOp::del_absent(key);
					ASSERT_TRUE(ret == 0 || ret == -ENOENT || ret == KV_E_UNAVAILABLE)
						<< ret;
					break;
				}
				if (ret == KV_E_UNAVAILABLE)
					unavailable++; // stays pending: it may have taken effect
				else
					h.complete(id, done);
			}
			kv_close(&c);
		});
	}
	for (auto &th : threads)
		th.join();
	auto result = lincheck::check(lincheck::KvModel(), rec.history());
	EXPECT_TRUE(result.ok) << result.explanation;
	std::printf("%u of %u operations unanswered (pending)\n", unavailable.load(),
		kThreads * kOps);
	return unavailable.load();
}

TEST_F(KvTest, ConcurrentClientsWithOneRoundFaultsAreLinearizable)
{
	// The timeout is long: one member at a time is faulty (f = 1), so
	// nothing should ever be unavailable (under TSan too).
	kv_config cfg = cfg_;
	cfg.timeout_ms = 20000;
	EXPECT_EQ(ConcurrentKv(cfg, KvFaults::kOneRound, cfg.timeout_ms), 0u);
}

// Over ofi+tcp with member 2 failed or slow and a 50 ms limit: operations
// give up mid-protocol (SWARM's rounds, the index's classic rounds) and
// their batches land late on the nodes, as the index's
// IndexTcp.ConcurrentClientsTimingOutAreLinearizable does for the index.
// Under TSan, where operations run several times slower, the same limit
// left 255 of 600 pending with another TSan test beside it, more than the
// checker can search (inconclusive after 209 s): the limit grows with the
// slowdown.
#if defined(__SANITIZE_THREAD__)
constexpr unsigned kTcpOpTimeoutMs = 300;
#else
constexpr unsigned kTcpOpTimeoutMs = 50;
#endif

TEST(KvTcp, ConcurrentClientsTimingOutAreLinearizable)
{
	kvtest::LocalGroup group(3, "kvtcp", kvtest::kIndexRegion, kDataRegion);
	ASSERT_EQ(group.ServeTcp(), 0) << pm_errormsg();
	const std::vector<std::string> uris = group.TcpUris();
	std::vector<const char *> ptrs;
	for (const auto &u : uris)
		ptrs.push_back(u.c_str());
	kv_config cfg = TestConfig(ptrs, KV_REPL_SWARM);
	cfg.timeout_ms = 20000; // the open's; the operations get kTcpOpTimeoutMs
	ASSERT_EQ(kv_create(&cfg), 0) << pm_errormsg();
	const unsigned unanswered = ConcurrentKv(cfg, KvFaults::kNode2, kTcpOpTimeoutMs);
	EXPECT_LT(unanswered, 600u) << "nothing was answered: the check means nothing";
}

// A writer whose clock runs behind guesses stale timestamps: its writes
// take the slow path (timestamp lock, fresh timestamp) and still win over
// the values written before them.
TEST_F(KvTest, SkewedClockTakesTheSlowPathAndStaysOrdered)
{
	kv_config lag = cfg_;
	lag.clock_skew_us = -2000000;  // two seconds behind
	kv_client *slow = nullptr;
	ASSERT_EQ(kv_open(&slow, &lag), 0);
	ASSERT_EQ(Insert(c_, "k", "fast"), 0);
	ASSERT_EQ(Update(slow, "k", "slow1"), 0);
	EXPECT_EQ(Get(c_, "k"), "slow1");
	EXPECT_EQ(Get(slow, "k"), "slow1");
	kv_stats s = Stats(slow);
	EXPECT_EQ(s.slow_writes, 1u);
	EXPECT_GE(s.lock_calls, 1u);
	// Re-synchronised: the next write guesses right.
	ASSERT_EQ(Update(slow, "k", "slow2"), 0);
	EXPECT_EQ(Stats(slow).slow_writes, 1u);
	EXPECT_EQ(Get(c_, "k"), "slow2");
	kv_close(&slow);
}

// A writer that leaves its tuple GUESSED (as if it crashed right after
// writing it): a reader reads it twice, locks its timestamp in READ mode,
// returns it and VERIFIES it, so the next reader needs one round trip.
TEST_F(KvTest, ReadersCompleteAGuessedWrite)
{
	kv_client *w = nullptr, *r = nullptr;
	ASSERT_EQ(kv_open(&w, &cfg_), 0);
	ASSERT_EQ(kv_open(&r, &cfg_), 0);
	ASSERT_EQ(Insert(w, "g", "v0"), 0);
	kv__st_test_no_verify(w, true);
	ASSERT_EQ(Update(w, "g", "guessed"), 0);
	kv_stats a = Stats(r);
	EXPECT_EQ(Get(r, "g"), "guessed");
	kv_stats b = Stats(r);
	EXPECT_EQ(b.read_iters - a.read_iters, 1u) << "the double read";
	EXPECT_EQ(b.lock_calls - a.lock_calls, 1u) << "the READ lock";
	EXPECT_EQ(b.oop_reads - a.oop_reads, 1u) << "no in-place copy of a GUESSED write";
	kv_stats c0 = Stats(c_);
	EXPECT_EQ(Get(c_, "g"), "guessed");
	kv_stats c1 = Stats(c_);
	EXPECT_EQ(c1.lock_calls - c0.lock_calls, 0u) << "VERIFIED by the first reader";
	EXPECT_EQ(c1.read_iters - c0.read_iters, 0u);
	// A second GUESSED write of the same writer: still one value.
	ASSERT_EQ(Update(w, "g", "guessed2"), 0);
	EXPECT_EQ(Get(r, "g"), "guessed2");
	EXPECT_EQ(Get(c_, "g"), "guessed2");
	kv__st_test_no_verify(w, false);
	ASSERT_EQ(Update(w, "g", "verified"), 0);
	EXPECT_EQ(Get(r, "g"), "verified");
	kv_close(&w);
	kv_close(&r);
}

// The baselines share the layout and the API; their round trips are the
// paper's: DM-ABD 2 per get and update, RAW 1.
class KvAbdTest : public KvTest {
protected:
	KvAbdTest() : KvTest(3, KV_REPL_ABD) {}
};

class KvRawTest : public KvTest {
protected:
	KvRawTest() : KvTest(3, KV_REPL_RAW) {}
};

void BaselineRun(KvTest *t, kv_client *c, uint64_t rounds_per_op)
{
	ASSERT_EQ(KvTest::Insert(c, "k", "v0"), 0) << pm_errormsg();
	kv_stats a = KvTest::Stats(c);
	ASSERT_EQ(KvTest::Update(c, "k", "v1"), 0) << pm_errormsg();
	kv_stats b = KvTest::Stats(c);
	EXPECT_EQ(t->Get(c, "k"), "v1");
	kv_stats d = KvTest::Stats(c);
	EXPECT_EQ(b.rounds - a.rounds, rounds_per_op);
	EXPECT_EQ(d.rounds - b.rounds, rounds_per_op);
	EXPECT_EQ(KvTest::Insert(c, "k", "v2"), KV_E_EXISTS);
	ASSERT_EQ(KvTest::Delete(c, "k"), 0);
	int ret;
	t->Get(c, "k", &ret);
	EXPECT_EQ(ret, -ENOENT);
	EXPECT_EQ(KvTest::Delete(c, "k"), -ENOENT);
	ASSERT_EQ(KvTest::Insert(c, "k", "v3"), 0);
	EXPECT_EQ(t->Get(c, "k"), "v3");
	for (int i = 0; i < 50; i++)
		ASSERT_EQ(KvTest::Put(c, "p" + std::to_string(i % 7), std::to_string(i)), 0);
	for (int i = 43; i < 50; i++)
		EXPECT_EQ(t->Get(c, "p" + std::to_string(i % 7)), std::to_string(i));
}

TEST_F(KvAbdTest, SemanticsAndTwoRoundTrips)
{
	BaselineRun(this, c_, 2);
}

TEST_F(KvRawTest, SemanticsAndOneRoundTrip)
{
	BaselineRun(this, c_, 1);
	std::string big(KV_VALUE_MAX, 'b');
	EXPECT_EQ(Insert(c_, "big", big), -E2BIG);
}

// RAW keeps its one copy on member 0: an insert whose creation missed
// member 0 (its batch failed there, or landed after f+1 others answered)
// is not done, since nothing would ever write the copy there. Before, it
// returned 0 and every get of the key found no copy until its timeout
// (kv_bench over tcp, one key of 200).
TEST_F(KvRawTest, InsertWaitsForTheCopyOnMemberZero)
{
	for (int round = 0; round < 3; round++) {
		const std::string k = "m0-" + std::to_string(round), v = "v" + std::to_string(round);
		ASSERT_EQ(kv__st_test_inject_once(c_, 0, RDMA_FAULT_FAIL, 0), 0);
		ASSERT_EQ(Insert(c_, k, v), 0) << pm_errormsg();
		int ret = 0;
		EXPECT_EQ(Get(c_, k, &ret), v) << pm_strerror(ret);
	}
}

// RAW has no concurrency control: two updates of one key that overlap can
// interleave their bytes in its one copy. The write that finishes last
// reads the torn copy back and writes again, so every get after the
// updates finds a whole value (before, two threads updating a hot key in
// kv_bench left a copy no get accepted until both timed out reading it).
TEST_F(KvRawTest, OverlappingUpdatesLeaveAWholeCopy)
{
	constexpr int kThreads = 2, kRounds = 3000;
	// RAW's copy is sized at the insert: the larger value first.
	std::vector<std::string> vals = { std::string(200, 'a'), std::string(300, 'b') };
	ASSERT_EQ(Insert(c_, "hot", vals[1]), 0) << pm_errormsg();
	std::vector<kv_client *> cs(kThreads);
	for (auto &c : cs)
		ASSERT_EQ(kv_open(&c, &cfg_), 0) << pm_errormsg();
	std::atomic<int> bad{0};
	std::string first_bad;
	std::vector<std::thread> ts;
	for (int t = 0; t < kThreads; t++)
		ts.emplace_back([&, t] {
			for (int i = 0; i < kRounds && bad.load() == 0; i++) {
				int ret = Update(cs[t], "hot", vals[t]);
				std::string v = ret == 0 ? Get(cs[t], "hot", &ret) : "";
				if (ret != 0 || (v != vals[0] && v != vals[1])) {
					if (bad++ == 0)
						first_bad = "round " + std::to_string(i) + ": " +
							pm_strerror(ret) + " " + v.substr(0, 16);
				}
			}
		});
	for (auto &t : ts)
		t.join();
	EXPECT_EQ(bad.load(), 0) << first_bad;
	for (auto &c : cs)
		kv_close(&c);
}

}  // namespace
