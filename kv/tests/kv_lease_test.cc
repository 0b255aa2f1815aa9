// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_lease_test.cc -- client leases (kv/src/store/lease.c) on
// three in-process memory nodes with a short lease: the id of a client
// that stopped without kv_close is freed by the others and reused, its
// hazard words cleared; a client taken for dead is fenced (nothing it
// posts lands) and takes a new id at its next operation.
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kv/kv.h>
#include <pm/error.h>

#include "kv/src/store/layout.h"
#include "kv/src/store/testing.h"
#include "kv/tests/node_group.h"
#include "kv/tests/store_config.h"

namespace {

constexpr uint64_t kDataRegion = 64u << 20;
// L = 2 s, T = 1 s: a silent client's id is freed once its word stood
// still for (L + T) + (L + T)/16 (3.19 s), by the first operation of a
// watcher after that (renewals look every L - T = 1 s). (Opens need the
// timeout on a loaded machine: kv_create's connections missed 150 and 500
// ms beside other tests.)
constexpr unsigned kLeaseMs = 2000, kTimeoutMs = 1000;
// How long a test waits for something that takes about one suspicion time
// (generous: sanitizers and a loaded machine); not a timing assertion.
constexpr auto kPatience = std::chrono::seconds(60);

class KvLeaseTest : public ::testing::Test {
protected:
	KvLeaseTest() : group_(3, "lease", kvtest::kIndexRegion, kDataRegion)
	{
		uris_ = group_.Uris();
		for (const auto &u : uris_)
			ptrs_.push_back(u.c_str());
		cfg_ = kvtest::StoreConfig(ptrs_, 3, 1u << 20, 1u << 20, kTimeoutMs, kLeaseMs);
	}
	void SetUp() override
	{
		ASSERT_EQ(kv_create(&cfg_), 0) << pm_errormsg();
		ASSERT_EQ(kv_open(&c_, &cfg_), 0) << pm_errormsg();
	}
	void TearDown() override { EXPECT_EQ(kv_close(&c_), 0) << pm_errormsg(); }

	static int Put(kv_client *c, const std::string &k, const std::string &v)
	{
		return kv_put(c, k.data(), k.size(), v.data(), v.size());
	}
	static std::string Get(kv_client *c, const std::string &k, int *ret)
	{
		std::string v(256, '\0');
		size_t len = 0;
		*ret = kv_get(c, k.data(), k.size(), v.data(), v.size(), &len);
		v.resize(*ret == 0 ? len : 0);
		return v;
	}
	static kv_stats Stats(const kv_client *c)
	{
		kv_stats s;
		kv_stats_read(c, &s);
		return s;
	}
	// Operations through @c (the watcher) until @done, at most kPatience.
	static bool WorkUntil(kv_client *c, const std::function<bool()> &done)
	{
		auto end = std::chrono::steady_clock::now() + kPatience;
		for (unsigned i = 0; !done(); i++) {
			if (std::chrono::steady_clock::now() > end)
				return false;
			EXPECT_EQ(Put(c, "watch", std::to_string(i)), 0) << pm_errormsg();
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
		return true;
	}
	// The store region of node @i as words, at @off.
	uint64_t Word(unsigned i, uint64_t off)
	{
		return Words(i, off, 1)[0];
	}
	std::vector<uint64_t> Words(unsigned i, uint64_t off, unsigned n)
	{
		std::vector<uint64_t> w(n);
		rdma_conn *conn = nullptr;
		EXPECT_EQ(rdma_conn_open(&conn, uris_[i].c_str(), nullptr), 0) << pm_errormsg();
		rdma_batch b;
		rdma_batch_init(&b);
		EXPECT_EQ(rdma_batch_read(&b, cfg_.store_region, off, w.data(), 8u * n), 0);
		EXPECT_EQ(rdma_execute(conn, &b), 0) << pm_errormsg();
		rdma_conn_close(&conn);
		return w;
	}
	void Write(unsigned i, uint64_t off, uint64_t word)
	{
		rdma_conn *conn = nullptr;
		ASSERT_EQ(rdma_conn_open(&conn, uris_[i].c_str(), nullptr), 0) << pm_errormsg();
		rdma_batch b;
		rdma_batch_init(&b);
		ASSERT_EQ(rdma_batch_write(&b, cfg_.store_region, off, &word, 8), 0);
		ASSERT_EQ(rdma_batch_persist(&b, cfg_.store_region, off, 8), 0);
		ASSERT_EQ(rdma_execute(conn, &b), 0) << pm_errormsg();
		rdma_conn_close(&conn);
	}
	kv_st_super Super()
	{
		kv_st_super sb;
		auto w = Words(0, 0, sizeof(sb) / 8);
		std::memcpy(&sb, w.data(), sizeof(sb));
		return sb;
	}
	// The ids claimed on f+1 nodes.
	std::vector<bool> Claimed()
	{
		kv_st_super sb = Super();
		std::vector<bool> out(sb.max_clients);
		for (unsigned id = 0; id < sb.max_clients; id++) {
			unsigned k = 0;
			for (unsigned i = 0; i < 3; i++)
				k += Word(i, sb.id_off + 8u * id) != 0;
			out[id] = k >= 2;
		}
		return out;
	}

	kvtest::LocalGroup group_;
	std::vector<std::string> uris_;
	std::vector<const char *> ptrs_;
	kv_config cfg_;
	kv_client *c_ = nullptr;
};

TEST_F(KvLeaseTest, ConfigMustLetTheLeaseCoverAnOperation)
{
	kv_config cfg = cfg_;
	// Above the cluster's timeout (kv_create's), which the suspicion
	// time D = (L + T) + (L + T)/16 rests on.
	cfg.timeout_ms = kTimeoutMs + 1;
	kv_client *c = nullptr;
	EXPECT_EQ(kv_open(&c, &cfg), KV_E_CONFIG);
	EXPECT_NE(std::string(pm_errormsg()).find("at kv_create"), std::string::npos)
		<< pm_errormsg();
	EXPECT_EQ(c, nullptr);
	cfg.timeout_ms = kLeaseMs + 1;
	EXPECT_EQ(kv_create(&cfg), KV_E_CONFIG);
	EXPECT_NE(std::string(pm_errormsg()).find("lease_ms"), std::string::npos) << pm_errormsg();
	cfg.timeout_ms = kTimeoutMs;
	cfg.lease_ms = 0;
	EXPECT_EQ(kv_create(&cfg), KV_E_CONFIG);
}

// A busy client renews its lease and keeps its id: nobody frees it.
TEST_F(KvLeaseTest, BusyClientsKeepTheirIds)
{
	kv_client *a = nullptr;
	ASSERT_EQ(kv_open(&a, &cfg_), 0) << pm_errormsg();
	auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(4 * kLeaseMs);
	for (unsigned i = 0; std::chrono::steady_clock::now() < end; i++) {
		ASSERT_EQ(Put(a, "a", std::to_string(i)), 0) << pm_errormsg();
		ASSERT_EQ(Put(c_, "c", std::to_string(i)), 0) << pm_errormsg();
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	EXPECT_GE(Stats(a).lease_renewals, 2u);
	EXPECT_GE(Stats(c_).lease_renewals, 2u);
	EXPECT_EQ(Stats(a).ids_freed + Stats(c_).ids_freed, 0u);
	EXPECT_EQ(Stats(a).reregistrations + Stats(c_).reregistrations, 0u);
	EXPECT_EQ(kv_close(&a), 0) << pm_errormsg();
}

// With a node down, the words a client last saw there stand still, yet
// looking at them cannot zero them: they make no look due. Two clients
// work through two suspicion times with node 2 down; each renews only
// when its lease would not cover an operation -- at most once per
// L - T of the time that passed (a bound from the renewal rule, not a
// timing: a slow machine only makes the time longer) -- where a word
// kept due would add a look every L/16.
TEST_F(KvLeaseTest, NodeDownMakesNoWordDue)
{
	kv_client *a = nullptr;
	ASSERT_EQ(kv_open(&a, &cfg_), 0) << pm_errormsg();
	ASSERT_EQ(Put(a, "a", "0"), 0) << pm_errormsg();
	ASSERT_EQ(Put(c_, "c", "0"), 0) << pm_errormsg(); // has seen a's word
	ASSERT_EQ(rdma_local_fail(group_.Path(2).c_str(), 1), 0);
	const uint64_t before = Stats(c_).lease_renewals;
	const auto start = std::chrono::steady_clock::now();
	const auto work = std::chrono::milliseconds(2 * (kLeaseMs + kTimeoutMs) * 17 / 16);
	for (unsigned i = 0; std::chrono::steady_clock::now() < start + work; i++) {
		ASSERT_EQ(Put(a, "a", std::to_string(i)), 0) << pm_errormsg();
		ASSERT_EQ(Put(c_, "c", std::to_string(i)), 0) << pm_errormsg();
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
		std::chrono::steady_clock::now() - start);
	const uint64_t renewals = Stats(c_).lease_renewals - before;
	printf("node 2 down for %lld ms: %llu renewals\n", (long long)took.count(),
		(unsigned long long)renewals);
	EXPECT_LE(renewals, (uint64_t)took.count() / (kLeaseMs - kTimeoutMs) + 1);
	EXPECT_EQ(Stats(a).ids_freed + Stats(c_).ids_freed, 0u);
	ASSERT_EQ(rdma_local_fail(group_.Path(2).c_str(), 0), 0);
	EXPECT_EQ(kv_close(&a), 0) << pm_errormsg();
}

// kv_close releases the id on every node that answers, a slow one too:
// with node 2 answering each batch 200 ms late, the stores of the marks
// return at f+1 and leave node 2 busy when the release begins. The
// release used to skip it (its word stayed registered there: the last
// client of kv_proc_ofi_test left an id nobody freed).
TEST_F(KvLeaseTest, CloseReleasesTheIdOnASlowNode)
{
	const kv_st_super sb = Super();
	auto registered = [&](unsigned node) {
		unsigned k = 0;
		for (uint64_t w : Words(node, sb.id_off, sb.max_clients))
			k += w != 0;
		return k;
	};
	kv_client *a = nullptr;
	ASSERT_EQ(kv_open(&a, &cfg_), 0) << pm_errormsg();
	ASSERT_EQ(Put(a, "a", "0"), 0) << pm_errormsg();
	for (unsigned i = 0; i < 3; i++)
		ASSERT_EQ(registered(i), 2u) << "node " << i;
	ASSERT_EQ(kv__st_test_inject(a, 2, RDMA_FAULT_DELAY, 200000), 0);
	EXPECT_EQ(kv_close(&a), 0) << pm_errormsg();
	for (unsigned i = 0; i < 3; i++)
		EXPECT_EQ(registered(i), 1u) << "node " << i;
}

// A client that stops without kv_close (SIGKILL): the others free its id
// after the suspicion time, clear the hazard words it left up, and a new
// client reuses the id; what the dead client wrote stays readable.
TEST_F(KvLeaseTest, DeadClientsIdIsFreedAndReused)
{
	kv_client *a = nullptr, *b = nullptr, *x = nullptr;
	ASSERT_EQ(kv_open(&a, &cfg_), 0) << pm_errormsg();
	ASSERT_EQ(Put(a, "a", "from a"), 0) << pm_errormsg();
	ASSERT_EQ(kv_open(&b, &cfg_), 0) << pm_errormsg();
	kv_client *probe = nullptr;
	EXPECT_EQ(kv_open(&probe, &cfg_), KV_E_UNAVAILABLE); // all 3 taken
	ASSERT_EQ(kv_close(&b), 0) << pm_errormsg();
	kv_st_super sb = Super();
	auto claimed = Claimed();
	std::vector<unsigned> held; // the watcher's id and a's
	for (unsigned id = 0; id < sb.max_clients; id++)
		if (claimed[id])
			held.push_back(id);
	ASSERT_EQ(held.size(), 2u);
	// A hazard word left up in slot 3 of both (naming writer 0's buffer
	// 5): the watcher, alive, keeps its own; a's is cleared.
	const uint64_t hz = UINT64_C(77) << 32 | kv_st_hz(0, 5);
	for (unsigned id : held)
		for (unsigned i = 0; i < 3; i++)
			Write(i, sb.hz_off + 8u * (uint64_t)id * KV_ST_HZ + 8u * 3, hz);
	kv__st_test_abandon(&a);
	ASSERT_EQ(a, nullptr);
	ASSERT_EQ(kv_open(&b, &cfg_), 0) << pm_errormsg(); // the free id
	ASSERT_EQ(kv_open(&x, &cfg_), KV_E_UNAVAILABLE);     // a's is held
	EXPECT_NE(std::string(pm_errormsg()).find("taken"), std::string::npos) << pm_errormsg();
	// An idle client is taken for dead too: b leaves.
	ASSERT_EQ(kv_close(&b), 0) << pm_errormsg();
	ASSERT_TRUE(WorkUntil(c_, [&] { return Stats(c_).ids_freed >= 1; }))
		<< "a's id was never freed";
	EXPECT_EQ(Stats(c_).ids_freed, 1u);
	// a's slot was cleared on every node, the watcher's left alone; each
	// node counts the repair (dmkv status).
	for (unsigned i = 0; i < 3; i++) {
		kv_node_status ns;
		ASSERT_EQ(kv_node_status_read(&cfg_, i, &ns), 0) << pm_errormsg();
		EXPECT_EQ(ns.ids_freed, 1u);
		EXPECT_EQ(ns.hazards_cleared, 1u);
	}
	unsigned cleared = 0;
	for (unsigned id : held)
		for (unsigned i = 0; i < 3; i++)
			cleared += Word(i, sb.hz_off + 8u * (uint64_t)id * KV_ST_HZ + 8u * 3) == 0;
	EXPECT_EQ(cleared, 3u);
	ASSERT_EQ(kv_open(&x, &cfg_), 0) << pm_errormsg();
	int ret = 0;
	EXPECT_EQ(Get(x, "a", &ret), "from a");
	EXPECT_EQ(ret, 0) << pm_errormsg();
	ASSERT_EQ(Put(x, "x", "from x"), 0) << pm_errormsg();
	EXPECT_EQ(Get(c_, "x", &ret), "from x");
	EXPECT_EQ(kv_close(&x), 0) << pm_errormsg();
}

// A dead client's word that watchers zero later on one node than on the
// others (here: its last renewal landed there alone, a second after the
// rest): once the id is given up on the other two, the one freeing it
// clears that word too, instead of leaving the id registered there for
// another suspicion time (or for good, with no client running) and the
// next holder of the id unable to hold that node.
TEST_F(KvLeaseTest, DeadClientsLateWordIsClearedWhenItsIdIsFreed)
{
	const std::vector<bool> before = Claimed();
	kv_client *a = nullptr;
	ASSERT_EQ(kv_open(&a, &cfg_), 0) << pm_errormsg();
	const std::vector<bool> after = Claimed();
	unsigned id = 0;
	while (id < after.size() && !(after[id] && !before[id]))
		id++;
	ASSERT_LT(id, after.size());
	const kv_st_super sb = Super();
	const uint64_t word = Word(2, sb.id_off + 8u * id);
	ASSERT_NE(word, 0u);
	kv__st_test_abandon(&a);
	ASSERT_TRUE(WorkUntil(c_, [&] { return Stats(c_).lease_renewals >= 2; }));
	Write(2, sb.id_off + 8u * id, kv_st_claim(kv_st_claim_tag(word), 1000));
	ASSERT_TRUE(WorkUntil(c_, [&] { return Stats(c_).ids_freed >= 1; }))
		<< "a's id was never freed";
	for (unsigned i = 0; i < 3; i++)
		EXPECT_EQ(Word(i, sb.id_off + 8u * id), 0u) << "node " << i;
	kv_node_status ns;
	ASSERT_EQ(kv_node_status_read(&cfg_, 2, &ns), 0) << pm_errormsg();
	EXPECT_EQ(ns.clients, 1u); // the watcher alone
}

// A client taken for dead (silent past the suspicion time) whose id went
// to another client: an operation that starts without renewing (paused
// between its check and its post) posts nothing -- the value it would have
// written never lands; its next operation finds its id gone and takes a
// new one, and works.
TEST_F(KvLeaseTest, ClientTakenForDeadIsFencedThenRegistersAgain)
{
	kv_client *a = nullptr, *b = nullptr;
	ASSERT_EQ(kv_open(&a, &cfg_), 0) << pm_errormsg();
	ASSERT_EQ(Put(a, "k", "old"), 0) << pm_errormsg();
	ASSERT_TRUE(WorkUntil(c_, [&] { return Stats(c_).ids_freed >= 1; }))
		<< "a's id was never freed";
	ASSERT_EQ(kv_open(&b, &cfg_), 0) << pm_errormsg();
	kv__st_test_skip_renewal(a, true);
	EXPECT_EQ(Put(a, "k", "late"), KV_E_UNAVAILABLE);
	EXPECT_GT(Stats(a).fenced_posts, 0u);
	int ret = 0;
	EXPECT_EQ(Get(c_, "k", &ret), "old");
	EXPECT_EQ(Get(b, "k", &ret), "old");
	kv__st_test_skip_renewal(a, false);
	ASSERT_EQ(Put(a, "k", "new"), 0) << pm_errormsg();
	EXPECT_EQ(Stats(a).reregistrations, 1u);
	EXPECT_EQ(Get(c_, "k", &ret), "new");
	EXPECT_EQ(ret, 0) << pm_errormsg();
	ASSERT_EQ(Put(b, "k", "from b"), 0) << pm_errormsg();
	EXPECT_EQ(Get(a, "k", &ret), "from b");
	EXPECT_EQ(kv_close(&b), 0) << pm_errormsg();
	EXPECT_EQ(kv_close(&a), 0) << pm_errormsg();
}

} // namespace
