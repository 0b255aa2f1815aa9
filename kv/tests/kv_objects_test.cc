// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_objects_test.cc -- the reuse of the objects of deleted keys
// (kv/src/store/objects.c; kv/DESIGN.md, "Reuse of objects") on three
// in-process memory nodes with a short lease: a delete's object is
// zeroed on every node after the grace and taken by a later insert of the
// same size; a client whose cached location is older than the lease looks
// the key up again and cannot write into the reused object (with the
// cache kept for ever, the planted bug, it does: the test must see it); a
// node that is down keeps the objects from reuse until it is back.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <kv/kv.h>
#include <pm/error.h>
#include <rdma/rdma.h>

#include "kv/src/index/testing.h"
#include "kv/src/store/testing.h"
#include "kv/tests/node_group.h"
#include "kv/tests/store_config.h"
#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace {

constexpr uint64_t kDataRegion = 64u << 20;
// L = 1 s: an object is zeroed 3L + L/4 (3.25 s) after its delete.
constexpr unsigned kLeaseMs = 1000, kTimeoutMs = 1000;
// How long a test waits for something that takes about one grace
// (generous: sanitizers and a loaded machine); not a timing assertion.
constexpr auto kPatience = std::chrono::seconds(60);

class KvObjectsTest : public ::testing::Test {
protected:
	KvObjectsTest() : group_(3, "objects", kvtest::kIndexRegion, kDataRegion)
	{
		uris_ = group_.Uris();
		for (const auto &u : uris_)
			ptrs_.push_back(u.c_str());
		cfg_ = kvtest::StoreConfig(ptrs_, 3, 1u << 20, 64u << 10, kTimeoutMs, kLeaseMs);
	}
	void SetUp() override
	{
		ASSERT_EQ(kv_create(&cfg_), 0) << pm_errormsg();
		ASSERT_EQ(kv_open(&a_, &cfg_), 0) << pm_errormsg();
	}
	void TearDown() override
	{
		for (unsigned i = 0; i < 3; i++)
			EXPECT_EQ(rdma_local_fail(group_.Path(i).c_str(), 0), 0);
		EXPECT_EQ(kv_close(&a_), 0) << pm_errormsg();
	}

	static std::string Key(const char *prefix, unsigned i)
	{
		char k[16];
		std::snprintf(k, sizeof(k), "%s%03u", prefix, i);
		return k;
	}
	static std::string Value(const std::string &k, unsigned round)
	{
		std::string v = k + "." + std::to_string(round) + ".";
		v.resize(100, 'x');
		return v;
	}
	static int Insert(kv_client *c, const std::string &k, const std::string &v)
	{
		return kv_insert(c, k.data(), k.size(), v.data(), v.size());
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
	// Operations through @c, and @also if not NULL (gets of a key never
	// inserted: no object of their own; they keep the clients' leases,
	// and so what they know) until @done, at most kPatience.
	static bool WorkUntil(kv_client *c, const std::function<bool()> &done,
		kv_client *also = nullptr)
	{
		auto end = std::chrono::steady_clock::now() + kPatience;
		int ret;
		while (!done()) {
			if (std::chrono::steady_clock::now() > end)
				return false;
			for (kv_client *x : { c, also }) {
				if (x == nullptr)
					continue;
				Get(x, "none", &ret);
				EXPECT_EQ(ret, -ENOENT) << pm_errormsg();
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
		return true;
	}
	// Work (as above) until the grace before a reuse (3L + L/4) has
	// passed for every object queued so far, with a margin.
	static void PassGrace(kv_client *c, kv_client *also = nullptr)
	{
		auto until = std::chrono::steady_clock::now() +
			std::chrono::milliseconds(kLeaseMs * 13 / 4 + 300);
		WorkUntil(c, [&] { return std::chrono::steady_clock::now() >= until; }, also);
	}
	// A counter summed over the handles @cs.
	static uint64_t Total(const std::vector<kv_client *> &cs, uint64_t kv_stats::*field)
	{
		uint64_t n = 0;
		for (const kv_client *c : cs)
			n += Stats(c).*field;
		return n;
	}
	uint64_t ChunksUsed()
	{
		kv_node_status st;
		EXPECT_EQ(kv_node_status_read(&cfg_, 0, &st), 0) << pm_errormsg();
		return st.chunks_used;
	}

	kvtest::LocalGroup group_;
	std::vector<std::string> uris_;
	std::vector<const char *> ptrs_;
	kv_config cfg_;
	kv_client *a_ = nullptr;
};

// Rounds of 150 inserts and deletes (about 50 KiB of objects each, most of
// a 64 KiB chunk): every round after the first takes the objects the
// round before deleted, so the chunks in use stay as after the first.
TEST_F(KvObjectsTest, DeletedKeysObjectsAreReused)
{
	constexpr unsigned kKeys = 150, kRounds = 3;
	uint64_t chunks = 0;

	for (unsigned r = 0; r < kRounds; r++) {
		for (unsigned i = 0; i < kKeys; i++)
			ASSERT_EQ(Insert(a_, Key("r", r * kKeys + i), Value(Key("r", i), r)), 0)
				<< pm_errormsg();
		EXPECT_EQ(Stats(a_).objects_reused, r * kKeys);
		if (r == 0)
			chunks = ChunksUsed();
		for (unsigned i = 0; i < kKeys; i++) {
			int ret;
			EXPECT_EQ(Get(a_, Key("r", r * kKeys + i), &ret), Value(Key("r", i), r));
			ASSERT_EQ(ret, 0) << pm_errormsg();
		}
		for (unsigned i = 0; i < kKeys; i++) {
			const std::string k = Key("r", r * kKeys + i);
			ASSERT_EQ(kv_delete(a_, k.data(), k.size()), 0) << pm_errormsg();
		}
		EXPECT_EQ(Stats(a_).objects_dead, (r + 1) * kKeys);
		PassGrace(a_);
	}
	EXPECT_EQ(Stats(a_).reregistrations, 0u);
	EXPECT_EQ(ChunksUsed(), chunks);
	for (unsigned i = 0; i < 3; i++) { // dmkv status counts them on every node
		kv_node_status st;
		ASSERT_EQ(kv_node_status_read(&cfg_, i, &st), 0) << pm_errormsg();
		EXPECT_EQ(st.objects_zeroed, (kRounds - 1) * kKeys);
	}
	for (unsigned i = 0; i < kRounds * kKeys; i++) {
		int ret;
		Get(a_, Key("r", i), &ret);
		EXPECT_EQ(ret, -ENOENT) << Key("r", i);
	}
}

// An insert cut short in its index round (its fast round reached one node
// of three, and it returned KV_E_UNAVAILABLE) leaves an object that the
// index may still choose. The client settles it at its next allocation
// (kv_index_abandon: not mapped, so dead for good) and reuses it after the
// grace. Then two such inserts as a life's last, the first still unsettled
// when the client closes (held back, as when the index stays out of
// reach): the id's insert records name both (the
// second insert's record is another than the first's), and the id's next
// holder settles both. With one record per id the second overwrites the
// first, and the dead client's first insert is finished later by
// whoever meets its proposal: another client's insert of k2 finds
// KV_E_EXISTS.
TEST_F(KvObjectsTest, UnsureInsertsAreSettled)
{
	const std::string k = Key("u", 0), k2 = Key("u", 1), k3 = Key("u", 2);
	int ret;

	kv__ix_test_stop_in_fast(kv__st_test_index(a_), 0x1);
	ASSERT_EQ(Insert(a_, k, Value(k, 0)), KV_E_UNAVAILABLE);
	ASSERT_EQ(Insert(a_, Key("v", 0), Value(k, 0)), 0) << pm_errormsg();
	EXPECT_EQ(Stats(a_).objects_abandoned, 1u);
	EXPECT_EQ(Stats(a_).objects_dead, 1u);
	Get(a_, k, &ret);
	EXPECT_EQ(ret, -ENOENT);
	PassGrace(a_);
	ASSERT_EQ(Insert(a_, Key("v", 1), Value(k, 1)), 0) << pm_errormsg();
	EXPECT_EQ(Stats(a_).objects_reused, 1u);
	ASSERT_EQ(Insert(a_, k, Value(k, 2)), 0) << pm_errormsg();
	EXPECT_EQ(Get(a_, k, &ret), Value(k, 2));

	kv__st_test_hold_unsure(a_, true); // as if the index stayed out of reach
	for (const auto &kk : { k2, k3 }) {
		kv__ix_test_stop_in_fast(kv__st_test_index(a_), 0x1);
		ASSERT_EQ(Insert(a_, kk, Value(kk, 0)), KV_E_UNAVAILABLE);
	}
	EXPECT_EQ(Stats(a_).objects_abandoned, 1u);
	EXPECT_EQ(kv_close(&a_), 0) << pm_errormsg();
	std::vector<kv_client *> cs(3, nullptr); // one of them holds a's id
	uint64_t abandoned = 0, settled = 0;
	for (auto &c : cs)
		ASSERT_EQ(kv_open(&c, &cfg_), 0) << pm_errormsg();
	// One settle per allocation, retried later when the index answers
	// KV_E_UNAVAILABLE: inserts until both are settled (bounded).
	for (unsigned j = 0; abandoned < 2 && j < 60; j++) {
		ASSERT_EQ(Insert(cs[j % 3], Key("w", j), Value(k2, 0)), 0) << pm_errormsg();
		abandoned = Total(cs, &kv_stats::objects_abandoned);
		settled = Total(cs, &kv_stats::inserts_settled);
	}
	EXPECT_EQ(abandoned, 2u);
	EXPECT_EQ(settled, 0u);
	for (const auto &kk : { k2, k3 }) {
		Get(cs[0], kk, &ret);
		EXPECT_EQ(ret, -ENOENT) << kk;
		ASSERT_EQ(Insert(cs[1], kk, Value(kk, 1)), 0) << kk << ": " << pm_errormsg();
		EXPECT_EQ(Get(cs[2], kk, &ret), Value(kk, 1));
	}
	for (auto &c : cs)
		EXPECT_EQ(kv_close(&c), 0) << pm_errormsg();
	ASSERT_EQ(kv_open(&a_, &cfg_), 0) << pm_errormsg();
}

// A client that dies right after winning a chunk, before raising its
// object mark (its fault point falls right after the claim): the id's
// next holder takes that chunk as its current one at
// kv_open (claims are numbered, and the chunk's number is above the
// mark's), instead of leaving it taken and unused for good.
TEST_F(KvObjectsTest, ChunkWonAndNeverMarkedIsTaken)
{
	kv_client *b = nullptr;
	const uint64_t before = ChunksUsed();

	ASSERT_EQ(kv_open(&b, &cfg_), 0) << pm_errormsg();
	kv__st_test_crash_at(b, KV_ST_TEST_AT_CLAIM);
	const std::string k = Key("c", 0);
	EXPECT_NE(Insert(b, k, Value(k, 0)), 0);
	kv__st_test_abandon(&b);
	EXPECT_EQ(ChunksUsed(), before + 1);
	ASSERT_TRUE(WorkUntil(a_, [&] { return Stats(a_).ids_freed >= 1; })) << "b's id not freed";
	std::vector<kv_client *> cs(2, nullptr); // one takes b's id, one a fresh one
	uint64_t taken = 0;
	for (unsigned i = 0; i < cs.size(); i++) {
		ASSERT_EQ(kv_open(&cs[i], &cfg_), 0) << pm_errormsg();
		taken += Stats(cs[i]).chunks_taken_unmarked;
		for (unsigned j = 0; j < 20; j++) {
			const std::string kj = Key(i ? "e" : "d", j);
			ASSERT_EQ(Insert(cs[i], kj, Value(kj, 0)), 0) << pm_errormsg();
		}
	}
	EXPECT_EQ(taken, 1u);
	EXPECT_EQ(ChunksUsed(), before + 2) << "b's chunk was left unused";
	for (unsigned i = 0; i < cs.size(); i++) {
		for (unsigned j = 0; j < 20; j++) {
			const std::string kj = Key(i ? "e" : "d", j);
			int ret;
			EXPECT_EQ(Get(a_, kj, &ret), Value(kj, 0)) << kj;
		}
	}
	for (auto &c : cs)
		EXPECT_EQ(kv_close(&c), 0) << pm_errormsg();
}

// A client that dies right after zeroing a dead object for the insert
// that takes it, before creating anything there: the zeroing left a free
// header on every node, so the id's next holder's sweep finds the object
// (objects_free_found) and reuses it with the others b deleted. Without
// the free header the walk sees a gap there and the object is lost for
// good: the next life reuses one object fewer.
TEST_F(KvObjectsTest, ObjectZeroedAndNotTakenIsFound)
{
	constexpr unsigned kKeys = 10;
	kv_client *b = nullptr;
	uint64_t zeroed[3];

	ASSERT_EQ(kv_open(&b, &cfg_), 0) << pm_errormsg();
	for (unsigned i = 0; i < kKeys; i++)
		ASSERT_EQ(Insert(b, Key("f", i), Value(Key("f", i), 0)), 0) << pm_errormsg();
	for (unsigned i = 0; i < kKeys; i++) {
		const std::string k = Key("f", i);
		ASSERT_EQ(kv_delete(b, k.data(), k.size()), 0) << pm_errormsg();
	}
	EXPECT_EQ(Stats(b).objects_dead, kKeys);
	PassGrace(b, a_);
	for (unsigned i = 0; i < 3; i++) {
		kv_node_status st;
		ASSERT_EQ(kv_node_status_read(&cfg_, i, &st), 0) << pm_errormsg();
		zeroed[i] = st.objects_zeroed;
	}
	kv__st_test_crash_at(b, KV_ST_TEST_AT_ZERO);
	const std::string k = Key("g", 0);
	EXPECT_NE(Insert(b, k, Value(k, 0)), 0);
	EXPECT_EQ(Stats(b).objects_reused, 1u); // taken, and nothing created there
	kv__st_test_abandon(&b);
	for (unsigned i = 0; i < 3; i++) { // zeroed on every node, then b died
		kv_node_status st;
		ASSERT_EQ(kv_node_status_read(&cfg_, i, &st), 0) << pm_errormsg();
		EXPECT_EQ(st.objects_zeroed, zeroed[i] + 1) << "node " << i;
	}
	ASSERT_TRUE(WorkUntil(a_, [&] { return Stats(a_).ids_freed >= 1; })) << "b's id not freed";
	std::vector<kv_client *> cs(2, nullptr); // one of them takes b's id
	for (auto &c : cs)
		ASSERT_EQ(kv_open(&c, &cfg_), 0) << pm_errormsg();
	auto total = [&](uint64_t kv_stats::*field) { return Total(cs, field); };
	// Fresh allocations until the sweep has walked b's chunk, then the
	// grace, then inserts of the same size take what it found.
	unsigned n = 0;
	for (; total(&kv_stats::objects_dead) < kKeys && n < 400; n++)
		ASSERT_EQ(Insert(cs[n % 2], Key("h", n), Value(Key("h", n), 0)), 0) << pm_errormsg();
	EXPECT_EQ(total(&kv_stats::objects_free_found), 1u);
	EXPECT_EQ(total(&kv_stats::objects_dead), kKeys) << "after " << n << " inserts";
	PassGrace(cs[0], cs[1]);
	for (unsigned i = 0; i < 2 * kKeys; i++)
		ASSERT_EQ(Insert(cs[i % 2], Key("i", i), Value(Key("i", i), 0)), 0) << pm_errormsg();
	EXPECT_EQ(total(&kv_stats::objects_reused), kKeys);
	for (unsigned i = 0; i < 2 * kKeys; i++) {
		int ret;
		EXPECT_EQ(Get(a_, Key("i", i), &ret), Value(Key("i", i), 0)) << Key("i", i);
	}
	for (unsigned i = 0; i < kKeys; i++) {
		int ret;
		Get(a_, Key("f", i), &ret);
		EXPECT_EQ(ret, -ENOENT) << Key("f", i);
	}
	int ret;
	Get(a_, k, &ret);
	EXPECT_EQ(ret, -ENOENT);
	for (auto &c : cs)
		EXPECT_EQ(kv_close(&c), 0) << pm_errormsg();
}

// Another client deletes a's keys, and a closes with its own deletes not
// yet reused: the next holder of a's id finds all of them by sweeping the
// id's chunks as it allocates, and reuses them after the grace. (Which id
// a client takes is not up to it: three clients hold all three ids.)
TEST_F(KvObjectsTest, SweepFindsObjectsOthersAndEarlierLivesDeleted)
{
	constexpr unsigned kKeys = 120;
	kv_client *b = nullptr;

	ASSERT_EQ(kv_open(&b, &cfg_), 0) << pm_errormsg();
	for (unsigned i = 0; i < kKeys; i++)
		ASSERT_EQ(Insert(a_, Key("a", i), Value(Key("a", i), 0)), 0) << pm_errormsg();
	for (unsigned i = 0; i < kKeys / 2; i++) {
		const std::string k = Key("a", i);
		ASSERT_EQ(kv_delete(b, k.data(), k.size()), 0) << pm_errormsg();
	}
	EXPECT_EQ(Stats(b).objects_dead, 0u); // not b's objects
	EXPECT_EQ(kv_close(&b), 0) << pm_errormsg();
	for (unsigned i = kKeys / 2; i < kKeys; i++) {
		const std::string k = Key("a", i);
		ASSERT_EQ(kv_delete(a_, k.data(), k.size()), 0) << pm_errormsg();
	}
	ASSERT_EQ(kv_close(&a_), 0) << pm_errormsg();
	std::vector<kv_client *> cs(3, nullptr);
	for (auto &c : cs)
		ASSERT_EQ(kv_open(&c, &cfg_), 0) << pm_errormsg();
	auto total = [&](uint64_t kv_stats::*field) { return Total(cs, field); };
	unsigned n = 0;
	for (; total(&kv_stats::objects_dead) < kKeys && n < 3000; n++)
		ASSERT_EQ(Insert(cs[n % 3], Key("s", n), Value(Key("s", n), 0)), 0) << pm_errormsg();
	EXPECT_EQ(total(&kv_stats::objects_dead), kKeys) << "after " << n << " inserts, "
		<< total(&kv_stats::objects_swept) << " windows";
	auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLeaseMs * 13 / 4 + 300);
	ASSERT_TRUE(WorkUntil(cs[0], [&] {
		int ret;
		Get(cs[1], "none", &ret);
		Get(cs[2], "none", &ret);
		return std::chrono::steady_clock::now() >= until;
	}));
	for (unsigned i = 0; i < kKeys; i++)
		for (unsigned j = 0; j < 3; j++)
			ASSERT_EQ(Insert(cs[j], Key("t", 3 * i + j), Value(Key("t", i), 1)), 0)
				<< pm_errormsg();
	EXPECT_EQ(total(&kv_stats::objects_reused), kKeys);
	for (unsigned i = 0; i < kKeys; i++) {
		int ret;
		for (unsigned j = 0; j < 3; j++)
			EXPECT_EQ(Get(cs[0], Key("t", 3 * i + j), &ret), Value(Key("t", i), 1));
		Get(cs[0], Key("a", i), &ret);
		EXPECT_EQ(ret, -ENOENT);
	}
	EXPECT_EQ(total(&kv_stats::reregistrations), 0u);
	for (auto &c : cs)
		EXPECT_EQ(kv_close(&c), 0) << pm_errormsg();
	ASSERT_EQ(kv_open(&a_, &cfg_), 0) << pm_errormsg(); // for TearDown
}

// Client b caches the location of "key"; a deletes it, and after the grace
// reuses its object for "new". b's update of "key" must look it up again
// (-ENOENT) and leave "new" alone. With b's cache kept for ever (the
// planted bug) its write lands in the reused object: caught here.
class KvObjectsStaleTest : public KvObjectsTest, public ::testing::WithParamInterface<bool> {};

TEST_P(KvObjectsStaleTest, CachedClientAndAReusedObject)
{
	const bool bug = GetParam();
	kv_client *b = nullptr;
	int ret;

	ASSERT_EQ(kv_open(&b, &cfg_), 0) << pm_errormsg();
	kv__st_test_cache_forever(b, bug);
	ASSERT_EQ(Insert(a_, "key", Value("key", 1)), 0) << pm_errormsg();
	ASSERT_EQ(Get(b, "key", &ret), Value("key", 1));
	ASSERT_EQ(ret, 0) << pm_errormsg();
	ASSERT_EQ(kv_delete(a_, "key", 3), 0) << pm_errormsg();
	PassGrace(a_, b);
	ASSERT_EQ(Insert(a_, "new", Value("new", 1)), 0) << pm_errormsg();
	ASSERT_EQ(Stats(a_).objects_reused, 1u);
	ASSERT_EQ(Stats(b).reregistrations, 0u); // b kept its id, and its cache

	const std::string stale = Value("key", 2);
	int upd = kv_update(b, "key", 3, stale.data(), stale.size());
	std::string got_a = Get(a_, "new", &ret);
	int ret_b;
	std::string got_b = Get(b, "new", &ret_b);
	const bool wrong = upd != -ENOENT || ret != 0 || got_a != Value("new", 1) ||
		ret_b != 0 || got_b != Value("new", 1);
	if (bug) {
		// As seen: the update "succeeds" (0) and "new" reads b's value.
		EXPECT_TRUE(wrong) << "the stale write into the reused object went unnoticed";
		std::fprintf(stderr, "planted bug: update of \"key\" %d; \"new\" reads %d \"%.12s\"\n",
			upd, ret, got_a.c_str());
	} else {
		EXPECT_EQ(upd, -ENOENT) << pm_errormsg();
		EXPECT_EQ(got_a, Value("new", 1));
		EXPECT_EQ(got_b, Value("new", 1));
		EXPECT_FALSE(wrong);
	}
	EXPECT_EQ(kv_close(&b), 0) << pm_errormsg();
}

INSTANTIATE_TEST_SUITE_P(, KvObjectsStaleTest, ::testing::Values(false, true),
	[](const ::testing::TestParamInfo<bool> &p) {
		return p.param ? std::string("CacheKeptForEver_BugCaught") : std::string("CacheExpires");
	});

// A node down keeps a deleted key's object from reuse (it could not be
// zeroed there, and would show the old tombstone to the key that reuses
// it); once it is back the object is zeroed everywhere and reused, and
// the keys inserted survive the loss of either other node.
TEST_F(KvObjectsTest, ANodeDownKeepsObjectsFromReuse)
{
	std::vector<std::string> keys;
	int ret;

	ASSERT_EQ(Insert(a_, "key", Value("key", 1)), 0) << pm_errormsg();
	ASSERT_EQ(rdma_local_fail(group_.Path(2).c_str(), 1), 0);
	ASSERT_EQ(kv_delete(a_, "key", 3), 0) << pm_errormsg();
	PassGrace(a_);
	ASSERT_EQ(Insert(a_, "n00", Value("n00", 1)), 0) << pm_errormsg();
	keys.push_back("n00");
	EXPECT_GE(Stats(a_).objects_zero_failed, 1u);
	EXPECT_EQ(Stats(a_).objects_reused, 0u);
	ASSERT_EQ(rdma_local_fail(group_.Path(2).c_str(), 0), 0);
	// Until the client has reconnected node 2 and the reuse went through.
	auto end = std::chrono::steady_clock::now() + kPatience;
	for (unsigned i = 1; Stats(a_).objects_reused == 0; i++) {
		ASSERT_LT(std::chrono::steady_clock::now(), end);
		keys.push_back(Key("n", i));
		ASSERT_EQ(Insert(a_, keys.back(), Value(keys.back(), 1)), 0) << pm_errormsg();
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
	for (unsigned lost = 0; lost < 2; lost++) {
		kv_client *c = nullptr;
		ASSERT_EQ(rdma_local_fail(group_.Path(lost).c_str(), 1), 0);
		ASSERT_EQ(kv_open(&c, &cfg_), 0) << pm_errormsg();
		for (const auto &k : keys) {
			EXPECT_EQ(Get(c, k, &ret), Value(k, 1)) << k << ", node " << lost << " lost";
			EXPECT_EQ(ret, 0) << pm_errormsg();
		}
		Get(c, "key", &ret);
		EXPECT_EQ(ret, -ENOENT);
		EXPECT_EQ(kv_close(&c), 0) << pm_errormsg();
		ASSERT_EQ(rdma_local_fail(group_.Path(lost).c_str(), 0), 0);
	}
}

// Three clients insert, update, get and delete a few keys for longer than
// the grace, so objects are deleted and reused while the others hold
// their locations: the history is linearizable, and reuses happened.
TEST_F(KvObjectsTest, ChurnWithReuseIsLinearizable)
{
	constexpr unsigned kThreads = 3, kOps = 1000, kKeys = 6;
	lincheck::Recorder<lincheck::KvOp> rec(kThreads, kOps);
	std::atomic<uint64_t> reused{0}, dead{0};
	ASSERT_EQ(kv_close(&a_), 0) << pm_errormsg(); // its id for a thread
	std::vector<std::thread> threads;
	for (unsigned t = 0; t < kThreads; t++) {
		threads.emplace_back([&, t] {
			kv_client *c = nullptr;
			ASSERT_EQ(kv_open(&c, &cfg_), 0) << pm_errormsg();
			auto &h = rec.handle(t);
			std::mt19937 rng(7000 + t);
			for (unsigned op = 0; op < kOps; op++) {
				const uint64_t key = rng() % kKeys, val = uint64_t{t + 1} << 32 | op;
				const std::string k = "c" + std::to_string(key);
				const std::string v = "v" + std::to_string(val);
				const unsigned kind = rng() % 4;
				lincheck::KvOp call = kind == 0 ? lincheck::KvOp::insert(key, val) :
					kind == 1 ? lincheck::KvOp::update(key, val) :
					kind == 2 ? lincheck::KvOp::get(key) : lincheck::KvOp::del(key);
				auto id = h.invoke(call);
				lincheck::KvOp done;
				int ret;
				switch (kind) {
				case 0:
					ret = Insert(c, k, v);
					done = ret == 0 ? lincheck::KvOp::insert_ok(key, val) :
						lincheck::KvOp::insert_exists(key, val);
					ASSERT_TRUE(ret == 0 || ret == KV_E_EXISTS) << ret;
					break;
				case 1:
					ret = kv_update(c, k.data(), k.size(), v.data(), v.size());
					done = ret == 0 ? lincheck::KvOp::update_ok(key, val) :
						lincheck::KvOp::update_absent(key, val);
					ASSERT_TRUE(ret == 0 || ret == -ENOENT) << ret;
					break;
				case 2: {
					std::string got = Get(c, k, &ret);
					ASSERT_TRUE(ret == 0 || ret == -ENOENT) << ret;
					done = ret == 0 ? lincheck::KvOp::get_found(key,
						std::stoull(got.substr(1))) : lincheck::KvOp::get_absent(key);
					break;
				}
				default:
					ret = kv_delete(c, k.data(), k.size());
					done = ret == 0 ? lincheck::KvOp::del_ok(key) :
						lincheck::KvOp::del_absent(key);
					ASSERT_TRUE(ret == 0 || ret == -ENOENT) << ret;
					break;
				}
				h.complete(id, done);
				std::this_thread::sleep_for(std::chrono::milliseconds(6));
			}
			reused += Stats(c).objects_reused;
			dead += Stats(c).objects_dead;
			kv_close(&c);
		});
	}
	for (auto &th : threads)
		th.join();
	auto result = lincheck::check(lincheck::KvModel(), rec.history());
	EXPECT_TRUE(result.ok) << result.explanation;
	EXPECT_GT(reused.load(), 0u) << dead.load() << " objects died";
	std::printf("%llu objects died, %llu reused\n", (unsigned long long)dead.load(),
		(unsigned long long)reused.load());
	ASSERT_EQ(kv_open(&a_, &cfg_), 0) << pm_errormsg(); // for TearDown
}

}  // namespace
