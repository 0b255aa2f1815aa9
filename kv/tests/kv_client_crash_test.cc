// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_client_crash_test.cc -- a client killed after each remote
// operation of its steps, one crash point per client (issue 18, "clients
// killed inside repairable steps"), on three in-process local memory
// nodes. The fault point (kv__st_test_crash_after) lets client A post
// exactly p batches -- counting one per member of a round, on its value
// and index connections -- and nothing after, as a process SIGKILLed right
// after its p-th batch leaves the nodes; then A is dropped without a word
// (kv__st_test_abandon). For every p in the workload below (inserts in
// place and into a buffer, updates of both, a delete, a re-insert, a
// get), on keys of its own, a new client A crashes at p, and the
// surviving client B must at once:
//   - read every key A touched: the value of its last completed operation,
//     or for the key of the operation in flight the state before or after
//     it -- never blocked (a lock word, a GUESSED tuple, an index step left
//     half done), never another value;
//   - write every key and read it back (nothing A held stops a writer).
// Then, once: B frees every dead A's id after its lease ran out
// (kv_stats.ids_freed, the nodes' counters; no id left registered but
// B's), and as many new clients as there were crashes take those ids,
// recover the dead lives' logs, write and read keys, and settle the
// insert each dead life's record names (kv_index_abandon). What each step
// leaves and who repairs it: kv/DESIGN.md, "Repairable steps".
#include <chrono>
#include <cstdio>
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

constexpr uint64_t kIndexRegion = 32u << 20, kDataRegion = 160u << 20; // 127 logs of 1 MiB
// B's timeout, and the lease (it must cover an operation). A's own
// timeout is shorter: each crash ends with one operation of A's failing at
// its deadline.
constexpr unsigned kLeaseMs = 1000, kTimeoutMs = 1000, kCrashedTimeoutMs = 200;
// Ids: B's and one per crash point (the workload takes under 120 posts).
constexpr unsigned kClients = 127;
constexpr auto kPatience = std::chrono::seconds(60);

struct Op {
	enum Kind { kPut, kDelete, kGet } kind;
	std::string key, value;
};

// Inserts in place and into an out-of-place buffer, updates of both, a
// delete and a re-insert, a second key, a get.
std::vector<Op> Workload()
{
	return {
		{Op::kPut, "a", "a1"},
		{Op::kPut, "b", std::string(3000, 'b')},
		{Op::kPut, "a", "a2"},
		{Op::kPut, "b", std::string(3000, 'B')},
		{Op::kDelete, "a", ""},
		{Op::kPut, "a", "a3"},
		{Op::kPut, "c", "c1"},
		{Op::kGet, "b", ""},
	};
}

using Model = std::map<std::string, std::optional<std::string>>;

class KvClientCrash : public ::testing::Test {
protected:
	KvClientCrash() : group_(3, "cc", kIndexRegion, kDataRegion)
	{
		uris_ = group_.Uris();
		for (const auto &u : uris_)
			nodes_.push_back(u.c_str());
		cfg_ = kvtest::StoreConfig(nodes_, kClients, 1u << 20, 64u << 10, kTimeoutMs, kLeaseMs);
		acfg_ = kvtest::StoreConfig(nodes_, kClients, 1u << 20, 64u << 10, kCrashedTimeoutMs,
			kLeaseMs);
	}
	void SetUp() override
	{
		ASSERT_EQ(kv_create(&cfg_), 0) << pm_errormsg();
		ASSERT_EQ(Open(&b_, &cfg_), 0) << pm_errormsg();
	}
	void TearDown() override { EXPECT_EQ(kv_close(&b_), 0) << pm_errormsg(); }

	static int Open(kv_client **c, const kv_config *cfg)
	{
		// A loaded machine may miss a connection within the timeout.
		int ret = 0;
		for (int i = 0; i < 5; i++)
			if ((ret = kv_open(c, cfg)) == 0)
				break;
		return ret;
	}
	static int Run(kv_client *c, const std::string &prefix, const Op &op)
	{
		const std::string k = prefix + op.key;

		switch (op.kind) {
		case Op::kPut:
			return kv_put(c, k.data(), k.size(), op.value.data(), op.value.size());
		case Op::kDelete:
			return kv_delete(c, k.data(), k.size());
		default: {
			char v[4096];
			size_t len = 0;
			return kv_get(c, k.data(), k.size(), v, sizeof(v), &len);
		}
		}
	}
	// The key's value through @c; nullopt if absent. *@ret: kv_get's.
	static std::optional<std::string> Get(kv_client *c, const std::string &k, int *ret)
	{
		std::string v(4096, '\0');
		size_t len = 0;
		*ret = kv_get(c, k.data(), k.size(), v.data(), v.size(), &len);
		if (*ret != 0)
			return std::nullopt;
		v.resize(len);
		return v;
	}
	static void Apply(Model *m, const Op &op)
	{
		if (op.kind == Op::kPut)
			(*m)[op.key] = op.value;
		else if (op.kind == Op::kDelete)
			(*m)[op.key] = std::nullopt;
	}
	static std::string Show(const std::optional<std::string> &v)
	{
		if (!v)
			return "(absent)";
		return v->size() > 16 ? v->substr(0, 4) + "... (" + std::to_string(v->size()) + " bytes)" : *v;
	}

	// A new client A runs the workload on keys "<p>/..." and crashes after
	// @p posts; B checks what it left. Return: whether A crashed inside
	// the workload (false: the workload needs fewer posts).
	bool CrashAt(uint64_t p)
	{
		SCOPED_TRACE("crash point " + std::to_string(p));
		const std::string prefix = std::to_string(p) + "/";
		kv_client *a = nullptr;
		EXPECT_EQ(Open(&a, &acfg_), 0) << pm_errormsg();
		if (a == nullptr)
			return false;
		Model before;
		std::optional<size_t> flight;
		const std::vector<Op> ops = Workload();
		kv__st_test_crash_after(a, p);
		for (size_t i = 0; i < ops.size(); i++) {
			Model next = before;
			Apply(&next, ops[i]);
			int ret = Run(a, prefix, ops[i]);
			if (ret != 0 && ret != -ENOENT) {
				flight = i;
				break;
			}
			before = next;
		}
		kv__st_test_abandon(&a);
		if (!flight)
			return false; // A finished (and was dropped all the same)
		Model after = before;
		Apply(&after, ops[*flight]);
		crashed_in_[ops[*flight].kind]++;

		// B reads every key at once: before or after, never blocked.
		for (const auto &[key, v] : after) {
			const std::string k = prefix + key;
			int ret = 0;
			std::optional<std::string> got = Get(b_, k, &ret);
			EXPECT_TRUE(ret == 0 || ret == -ENOENT) << k << ": " << pm_errormsg();
			const std::optional<std::string> old =
				before.count(key) ? before.at(key) : std::nullopt;
			EXPECT_TRUE(got == v || (key == ops[*flight].key && got == old))
				<< "key " << k << " reads " << Show(got) << "; expected " << Show(v)
				<< (key == ops[*flight].key ? " or " + Show(old) : "") << " (op "
				<< *flight << " in flight)";
		}
		// ... and writes them: no lock or half-done step stops it.
		for (const auto &[key, v] : after) {
			const std::string k = prefix + key, nv = "b wrote " + k;
			EXPECT_EQ(kv_put(b_, k.data(), k.size(), nv.data(), nv.size()), 0)
				<< k << ": " << pm_errormsg();
			int ret = 0;
			EXPECT_EQ(Get(b_, k, &ret), nv) << k;
		}
		return true;
	}

	kvtest::LocalGroup group_;
	std::vector<std::string> uris_;
	std::vector<const char *> nodes_;
	kv_config cfg_, acfg_;
	kv_client *b_ = nullptr;
	std::map<int, unsigned> crashed_in_;
};

TEST_F(KvClientCrash, EveryCrashPointOfTheWorkload)
{
	uint64_t points = 0;
	while (points < kClients - 1 && CrashAt(points))
		points++;
	ASSERT_LT(points, kClients - 1) << "the workload needs more ids than the store has";
	printf("%llu crash points: in puts %u, in the delete %u, in the get %u\n",
		(unsigned long long)points, crashed_in_[Op::kPut], crashed_in_[Op::kDelete],
		crashed_in_[Op::kGet]);
	EXPECT_GT(points, 20u);
	EXPECT_GT(crashed_in_[Op::kDelete], 0u);

	// B frees every dead A's id once its lease ran out: the A that
	// finished the workload was dropped too, and an open that failed on
	// a loaded machine may have left its claim.
	const uint64_t dead = points + 1;
	auto end = std::chrono::steady_clock::now() + kPatience;
	unsigned registered = 0;
	for (unsigned i = 0; std::chrono::steady_clock::now() < end; i++) {
		const std::string v = std::to_string(i);
		ASSERT_EQ(kv_put(b_, "w", 1, v.data(), v.size()), 0) << pm_errormsg();
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		if (i % 25 != 0)
			continue;
		registered = 0;
		for (unsigned n = 0; n < 3; n++) {
			kv_node_status ns;
			ASSERT_EQ(kv_node_status_read(&cfg_, n, &ns), 0) << pm_errormsg();
			registered += ns.clients;
		}
		if (registered == 3)
			break;
	}
	EXPECT_EQ(registered, 3u) << "B alone should hold an id, on each node";
	kv_stats st;
	kv_stats_read(b_, &st);
	EXPECT_GE(st.ids_freed, dead);
	for (unsigned i = 0; i < 3; i++) {
		kv_node_status ns;
		ASSERT_EQ(kv_node_status_read(&cfg_, i, &ns), 0) << pm_errormsg();
		EXPECT_EQ(ns.ids_freed, st.ids_freed) << "node " << i;
	}
	// Every other id, taken at once: each dead life's log is recovered
	// by its id's next holder, which writes and reads a key.
	std::vector<kv_client *> cs(kClients - 1, nullptr);
	for (size_t i = 0; i < cs.size(); i++)
		ASSERT_EQ(Open(&cs[i], &cfg_), 0) << "client " << i << ": " << pm_errormsg();
	uint64_t settled = 0, abandoned = 0, dropped = 0;
	for (size_t i = 0; i < cs.size(); i++) {
		const std::string k = std::to_string(i % points) + "/a", v(2000, 'a' + i % 26);
		EXPECT_EQ(kv_put(cs[i], k.data(), k.size(), v.data(), v.size()), 0) << pm_errormsg();
		int ret = 0;
		EXPECT_EQ(Get(b_, k, &ret), v) << k;
		// A new key: its allocation settles the insert the dead life's
		// record names (kv_index_abandon: finished by B's reads, or
		// never proposed and now dead for good).
		const std::string fresh = "fresh/" + std::to_string(i);
		EXPECT_EQ(kv_insert(cs[i], fresh.data(), fresh.size(), v.data(), 100), 0)
			<< pm_errormsg();
		kv_stats cst;
		kv_stats_read(cs[i], &cst);
		settled += cst.inserts_settled;
		abandoned += cst.objects_abandoned;
		dropped += cst.objects_unsure_dropped;
	}
	printf("inserts of the dead lives settled by their ids' next holders: %llu had taken "
	       "effect, %llu never will (their objects queued for reuse), %llu named an "
	       "object on fewer than f+1 nodes\n", (unsigned long long)settled,
		(unsigned long long)abandoned, (unsigned long long)dropped);
	EXPECT_GT(settled, 0u);
	EXPECT_GT(abandoned, 0u);
	for (auto &c : cs)
		EXPECT_EQ(kv_close(&c), 0) << pm_errormsg();
}

} // namespace
