// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/local_test.cc -- the backend-independent connection layer
// (batches, checks, fault injection, counters) on the local backend, whose
// node file is written here directly so no node or pool library is needed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <pm/cost.h>
#include <rdma/rdma.h>

#include "rdma/tests/local_node.h"

extern "C" {
#include "rdma/src/nodefile.h"
#include "rdma/src/testing.h"
}

namespace {

using rdmatest::kFileSize;
using rdmatest::kRegion0Len;
using rdmatest::kRegion0Off;
using rdmatest::kRegion1Len;
using rdmatest::kRegion1Off;
using rdmatest::LocalNode;
using rdmatest::Open;

TEST(RdmaBatch, LimitsAndArguments)
{
	rdma_batch b;
	rdma_batch_init(&b);
	char buf[8];
	uint64_t old;
	EXPECT_EQ(rdma_batch_read(&b, 0, 0, buf, 0), -EINVAL);
	EXPECT_EQ(rdma_batch_read(&b, 0, 0, nullptr, 8), -EINVAL);
	EXPECT_EQ(rdma_batch_write(&b, 0, 0, nullptr, 8), -EINVAL);
	EXPECT_EQ(rdma_batch_cas(&b, 0, 4, 0, 1, &old), -EINVAL);
	EXPECT_EQ(rdma_batch_faa(&b, 0, 12, 1, &old), -EINVAL);
	EXPECT_EQ(rdma_batch_persist(&b, 0, 0, 0), -EINVAL);
	EXPECT_EQ(b.n, 0u);
	for (unsigned i = 0; i < RDMA_BATCH_MAX_OPS; i++)
		ASSERT_EQ(rdma_batch_persist(&b, 0, 0, 1u << 30), 0);
	EXPECT_EQ(rdma_batch_faa(&b, 0, 0, 1, &old), -E2BIG);

	static char big[RDMA_BATCH_MAX_BYTES];
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_write(&b, 0, 0, big, RDMA_BATCH_MAX_BYTES - 8), 0);
	ASSERT_EQ(rdma_batch_cas(&b, 0, 0, 0, 1, &old), 0);
	EXPECT_EQ(rdma_batch_read(&b, 0, 0, buf, 1), -E2BIG);
	EXPECT_EQ(b.bytes, RDMA_BATCH_MAX_BYTES);
}

TEST(RdmaLocal, OpenErrors)
{
	LocalNode node("open_errors");
	rdma_conn *c = nullptr;
	EXPECT_EQ(rdma_conn_open(&c, "nosuch:/x", nullptr), -EINVAL);
	EXPECT_EQ(rdma_conn_open(&c, "local:", nullptr), -EINVAL);
	EXPECT_EQ(rdma_conn_open(&c, ("local:" + node.Path() + "-missing").c_str(), nullptr), -ENOENT);

	rdma_conn_config cfg;
	rdma_conn_config_init(&cfg);
	cfg.token = "wrong";
	EXPECT_EQ(rdma_conn_open(&c, node.Uri().c_str(), &cfg), RDMA_E_AUTH);
	std::string long_token(RDMA_TOKEN_MAX + 1, 'x');
	cfg.token = long_token.c_str();
	EXPECT_EQ(rdma_conn_open(&c, node.Uri().c_str(), &cfg), -EINVAL);
	EXPECT_EQ(c, nullptr);

	// A node file whose region lies beyond the pool file.
	node.Nf().regions[1].offset = kFileSize - 8;
	node.Publish();
	cfg.token = "secret";
	EXPECT_EQ(rdma_conn_open(&c, node.Uri().c_str(), &cfg), RDMA_E_PROTO);
}

TEST(RdmaLocal, MalformedNodeFilesAreRejected)
{
	LocalNode node("malformed");
	std::string good;
	{
		std::ifstream in(node.NodeFile());
		good.assign(std::istreambuf_iterator<char>(in), {});
	}
	auto replace = [&](const std::string &from, const std::string &to) {
		std::string s = good;
		size_t at = s.find(from);
		EXPECT_NE(at, std::string::npos) << from;
		s.replace(at, from.size(), to);
		return s;
	};
	const std::string hash = node.Nf().token_hash;
	const std::vector<std::string> bad = {
		"",
		"garbage without sections",
		replace("version = 2", "version = 3"),
		// A version 1 file: an XXH3 token hash and its salt.
		replace("version = 2", "version = 1").replace(good.find("token_hash"),
			std::string("token_hash = ").size() + hash.size(),
			"salt = 42\ntoken_hash = 1234567890"),
		replace("durability = none", "durability = maybe"),
		replace("regions = 2", "regions = 3"),
		replace("regions = 2", "regions = 1"),     // region.1 beyond the count
		replace("regions = 2", "regions = 17"),
		replace("offset = 4096", "offset = 4097"), // misaligned
		replace("offset = 4096", "offset = -4096"),
		replace("length = 4096", "length = 0"),
		replace("length = 4096", "length = 18446744073709551615"),
		replace("token_hash = ", "token_hash = " + hash + "\ntoken_hash = "),
		replace(hash, "1234567890"),                  // not a crypt string
		replace(hash, "$6$salt$" + hash.substr(3)),    // not yescrypt
		replace(hash, hash + std::string(RDMA__TOKEN_HASH_SIZE, 'x')), // too long
		replace(hash, hash.substr(0, 10) + " " + hash.substr(10)),
		replace("token_hash = " + hash + "\n", ""),
		replace("[region.1]", "[region.99]"),
		replace("[node]", "[node]\nextra = 1"),
		good.substr(0, good.size() / 2),
	};
	for (size_t i = 0; i < bad.size(); i++) {
		std::ofstream(node.NodeFile(), std::ios::trunc) << bad[i];
		rdma__nodefile nf;
		EXPECT_EQ(rdma__nodefile_read(node.NodeFile().c_str(), &nf), RDMA_E_PROTO) << i;
		rdma_conn *c = nullptr;
		rdma_conn_config cfg;
		rdma_conn_config_init(&cfg);
		cfg.token = "secret";
		EXPECT_EQ(rdma_conn_open(&c, node.Uri().c_str(), &cfg), RDMA_E_PROTO) << i;
	}
	// A yescrypt string damaged within its alphabet parses, but no token
	// matches it: an unusable one is malformed, a changed hash refuses.
	rdma_conn_config cfg;
	rdma_conn_config_init(&cfg);
	cfg.token = "secret";
	rdma_conn *c = nullptr;
	std::ofstream(node.NodeFile(), std::ios::trunc) << replace(hash, "$y$zz");
	EXPECT_EQ(rdma_conn_open(&c, node.Uri().c_str(), &cfg), RDMA_E_PROTO);
	std::string changed = hash;
	changed.back() = changed.back() == 'A' ? 'B' : 'A';
	std::ofstream(node.NodeFile(), std::ios::trunc) << replace(hash, changed);
	EXPECT_EQ(rdma_conn_open(&c, node.Uri().c_str(), &cfg), RDMA_E_AUTH);
	EXPECT_EQ(c, nullptr);

	std::ofstream(node.NodeFile(), std::ios::trunc) << good;
	rdma__nodefile nf;
	EXPECT_EQ(rdma__nodefile_read(node.NodeFile().c_str(), &nf), 0);
	EXPECT_EQ(nf.regions[1].length, kRegion1Len);
	EXPECT_STREQ(nf.token_hash, hash.c_str());
}

TEST(RdmaLocal, EveryOperationAndItsCounters)
{
	LocalNode node("ops");
	rdma_conn *c = Open(node);
	ASSERT_NE(c, nullptr);
	EXPECT_STREQ(rdma_conn_backend(c), "local");
	ASSERT_EQ(rdma_conn_region_count(c), 2u);
	rdma_region_info info;
	ASSERT_EQ(rdma_conn_region(c, 1, &info), 0);
	EXPECT_EQ(info.id, 1u);
	EXPECT_EQ(info.length, kRegion1Len);
	EXPECT_EQ(rdma_conn_region(c, 2, &info), -EINVAL);

	rdma_stats s0, s1, d;
	pm_cost c0, c1, cd;
	rdma_stats_read_thread(&s0);
	pm_cost_read_thread(&c0);

	const char msg[] = "hello, memory node";
	char back[sizeof(msg)] = {};
	uint64_t old_cas = 7, old_cas2 = 7, old_faa = 7, word = 0;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_write(&b, 0, 100, msg, sizeof(msg)), 0);
	ASSERT_EQ(rdma_batch_persist(&b, 0, 100, sizeof(msg)), 0);
	ASSERT_EQ(rdma_batch_cas(&b, 1, 0, 0, 5, &old_cas), 0);   // succeeds
	ASSERT_EQ(rdma_batch_cas(&b, 1, 0, 0, 9, &old_cas2), 0);  // fails: word is 5
	ASSERT_EQ(rdma_batch_faa(&b, 1, 0, 10, &old_faa), 0);
	ASSERT_EQ(rdma_batch_read(&b, 0, 100, back, sizeof(back)), 0);
	ASSERT_EQ(rdma_batch_read(&b, 1, 0, &word, 8), 0);
	ASSERT_EQ(rdma_execute(c, &b), 0);
	EXPECT_STREQ(back, msg);
	EXPECT_EQ(old_cas, 0u);
	EXPECT_EQ(old_cas2, 5u);
	EXPECT_EQ(old_faa, 5u);
	EXPECT_EQ(word, 15u);
	EXPECT_EQ(node.Bytes(kRegion0Off + 100, sizeof(msg)), std::string(msg, sizeof(msg)));

	rdma_stats_read_thread(&s1);
	rdma_stats_diff(&s1, &s0, &d);
	EXPECT_EQ(d.batches, 1u);
	EXPECT_EQ(d.round_trips, 1u);
	EXPECT_EQ(d.failed, 0u);
	EXPECT_EQ(d.ops[RDMA_OP_READ], 2u);
	EXPECT_EQ(d.ops[RDMA_OP_WRITE], 1u);
	EXPECT_EQ(d.ops[RDMA_OP_CAS], 2u);
	EXPECT_EQ(d.ops[RDMA_OP_FAA], 1u);
	EXPECT_EQ(d.ops[RDMA_OP_PERSIST], 1u);
	EXPECT_EQ(d.bytes_read, sizeof(msg) + 8);
	EXPECT_EQ(d.bytes_written, sizeof(msg));
	EXPECT_EQ(d.shipped + d.wire_messages + d.provider_ops, 0u);
	pm_cost_read_thread(&c1);
	pm_cost_diff(&c1, &c0, &cd);
	EXPECT_EQ(cd.n[PM_COST_ROUND_TRIP], 1u);
	EXPECT_EQ(cd.n[PM_COST_REMOTE_READ], 2u);
	EXPECT_EQ(cd.n[PM_COST_REMOTE_WRITE], 1u);
	EXPECT_EQ(cd.n[PM_COST_REMOTE_ATOMIC], 3u);
	EXPECT_EQ(cd.n[PM_COST_REMOTE_PERSIST], 1u);
	EXPECT_EQ(cd.n[PM_COST_FENCE], 1u); // the persist's own fence
	rdma_conn_close(&c);
	EXPECT_EQ(c, nullptr);
	rdma_conn_close(&c); // NULL is a no-op
}

TEST(RdmaLocal, RejectedBatchHasNoEffect)
{
	LocalNode node("rejected");
	rdma_conn *c = Open(node);
	ASSERT_NE(c, nullptr);
	const std::string before = node.Bytes(0, kFileSize);
	const char data[16] = "must not appear";
	struct Case {
		uint32_t region;
		uint64_t off;
		uint32_t len;
		int want;
	} cases[] = {
		{ 0, kRegion0Len, 1, RDMA_E_BOUNDS },
		{ 0, kRegion0Len - 8, 9, RDMA_E_BOUNDS },
		{ 0, UINT64_MAX - 4, 16, RDMA_E_BOUNDS },
		{ 1, kRegion1Len, 8, RDMA_E_BOUNDS },
		{ 2, 0, 8, RDMA_E_NO_REGION },
		{ UINT32_MAX, 0, 8, RDMA_E_NO_REGION },
	};
	for (const Case &k : cases) {
		rdma_batch b;
		rdma_batch_init(&b);
		ASSERT_EQ(rdma_batch_write(&b, 0, 0, data, sizeof(data)), 0); // valid
		ASSERT_EQ(rdma_batch_write(&b, k.region, k.off, data, k.len), 0);
		EXPECT_EQ(rdma_post(c, &b), k.want);
		EXPECT_EQ(rdma_poll(c), -EINVAL); // nothing in flight
	}
	rdma_batch empty;
	rdma_batch_init(&empty);
	EXPECT_EQ(rdma_post(c, &empty), -EINVAL);
	EXPECT_EQ(node.Bytes(0, kFileSize), before);
	rdma_stats s;
	rdma_stats_read_thread(&s);
	rdma_conn_close(&c);
}

TEST(RdmaLocal, InjectedFaults)
{
	LocalNode node("faults");
	rdma_conn *c = Open(node, "secret", 100);
	ASSERT_NE(c, nullptr);
	uint64_t one = 1, got = 0;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_write(&b, 1, 0, &one, 8), 0);

	EXPECT_EQ(rdma_conn_inject(c, (rdma_fault)99, 0), -EINVAL);
	ASSERT_EQ(rdma_conn_inject(c, RDMA_FAULT_FAIL, 0), 0);
	EXPECT_EQ(rdma_post(c, &b), RDMA_E_INJECTED);

	// Partition: accepted, never delivered, times out, connection broken.
	ASSERT_EQ(rdma_conn_inject(c, RDMA_FAULT_PARTITION, 0), 0);
	ASSERT_EQ(rdma_post(c, &b), 0);
	EXPECT_EQ(rdma_poll(c), -EINPROGRESS);
	EXPECT_EQ(rdma_post(c, &b), -EBUSY);
	EXPECT_EQ(rdma_wait(c), -ETIMEDOUT);
	EXPECT_EQ(rdma_post(c, &b), RDMA_E_CONN);
	EXPECT_EQ(node.Bytes(kRegion1Off, 8), std::string(8, '\0'));
	ASSERT_EQ(rdma_conn_inject(c, RDMA_FAULT_NONE, 0), 0);
	ASSERT_EQ(rdma_conn_reconnect(c), 0);

	// Delay: nothing happens until the delay has passed, then it executes.
	ASSERT_EQ(rdma_conn_inject(c, RDMA_FAULT_DELAY, 2000000), 0);
	ASSERT_EQ(rdma_post(c, &b), 0);
	EXPECT_EQ(rdma_poll(c), -EINPROGRESS);
	EXPECT_EQ(node.Bytes(kRegion1Off, 8), std::string(8, '\0'));
	EXPECT_EQ(rdma_wait(c), 0); // the timeout (100 ms) runs after the delay
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_read(&b, 1, 0, &got, 8), 0);
	ASSERT_EQ(rdma_conn_inject(c, RDMA_FAULT_NONE, 0), 0);
	ASSERT_EQ(rdma_execute(c, &b), 0);
	EXPECT_EQ(got, 1u);

	// Dropped reply: the batch runs at once, the wait still times out.
	uint64_t two = 2;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_write(&b, 1, 0, &two, 8), 0);
	ASSERT_EQ(rdma_conn_inject(c, RDMA_FAULT_DROP_REPLY, 0), 0);
	ASSERT_EQ(rdma_post(c, &b), 0);
	EXPECT_EQ(node.Bytes(kRegion1Off, 8), std::string(reinterpret_cast<const char *>(&two), 8));
	EXPECT_EQ(rdma_poll(c), -EINPROGRESS);
	EXPECT_EQ(rdma_wait(c), -ETIMEDOUT);
	EXPECT_EQ(rdma_post(c, &b), RDMA_E_CONN);
	ASSERT_EQ(rdma_conn_inject(c, RDMA_FAULT_NONE, 0), 0);
	ASSERT_EQ(rdma_conn_reconnect(c), 0);

	// Split: the CAS runs at the post, the first poll answers "in
	// progress" (another connection sees the new word meanwhile), the
	// second runs the persist and the read after it and completes.
	uint64_t old = 0, seen = 0, after = 0;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_cas(&b, 1, 0, two, 3, &old), 0);
	ASSERT_EQ(rdma_batch_persist(&b, 1, 0, 8), 0);
	ASSERT_EQ(rdma_batch_read(&b, 1, 0, &after, 8), 0);
	ASSERT_EQ(rdma_conn_inject(c, RDMA_FAULT_SPLIT, 0), 0);
	ASSERT_EQ(rdma_post(c, &b), 0);
	EXPECT_EQ(old, two);
	EXPECT_EQ(after, 0u);
	EXPECT_EQ(rdma_poll(c), -EINPROGRESS);
	EXPECT_EQ(after, 0u);
	rdma_conn *d = Open(node, "secret", 100);
	ASSERT_NE(d, nullptr);
	rdma_batch r;
	rdma_batch_init(&r);
	ASSERT_EQ(rdma_batch_read(&r, 1, 0, &seen, 8), 0);
	ASSERT_EQ(rdma_execute(d, &r), 0);
	EXPECT_EQ(seen, 3u);
	rdma_conn_close(&d);
	EXPECT_EQ(rdma_poll(c), 0);
	EXPECT_EQ(after, 3u);
	// A batch without a persist, or whose only persist comes first, runs whole.
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_read(&b, 1, 0, &after, 8), 0);
	ASSERT_EQ(rdma_post(c, &b), 0);
	EXPECT_EQ(rdma_poll(c), 0);
	ASSERT_EQ(rdma_conn_inject(c, RDMA_FAULT_NONE, 0), 0);
	rdma_conn_close(&c);
}

// A failed device fails every connection of the process to it, refuses new
// ones, and comes back with its contents; other devices are untouched.
TEST(RdmaLocal, DeviceFailureAndRestore)
{
	LocalNode node("devfail"), other("devfail_other");
	rdma_conn *c = Open(node), *d = Open(node), *o = Open(other);
	ASSERT_NE(c, nullptr);
	ASSERT_NE(d, nullptr);
	ASSERT_NE(o, nullptr);
	uint64_t seven = 7, got = 0;
	rdma_batch w, r;
	rdma_batch_init(&w);
	ASSERT_EQ(rdma_batch_write(&w, 1, 0, &seven, 8), 0);
	rdma_batch_init(&r);
	ASSERT_EQ(rdma_batch_read(&r, 1, 0, &got, 8), 0);
	ASSERT_EQ(rdma_execute(c, &w), 0);

	EXPECT_EQ(rdma_local_fail(nullptr, 1), -EINVAL);
	EXPECT_EQ(rdma_local_fail("/nonexistent/dmem.pool", 1), -ENOENT);
	ASSERT_EQ(rdma_local_fail(node.Path().c_str(), 1), 0);
	ASSERT_EQ(rdma_local_fail(node.Path().c_str(), 1), 0); // idempotent
	EXPECT_EQ(rdma_execute(c, &r), RDMA_E_CONN);
	EXPECT_EQ(rdma_execute(d, &r), RDMA_E_CONN);
	EXPECT_EQ(rdma_post(c, &r), RDMA_E_CONN); // broken until reconnected
	EXPECT_EQ(rdma_conn_reconnect(c), RDMA_E_CONN);
	rdma_conn_config cfg;
	rdma_conn_config_init(&cfg);
	cfg.token = "secret";
	rdma_conn *e = nullptr;
	EXPECT_EQ(rdma_conn_open(&e, node.Uri().c_str(), &cfg), RDMA_E_CONN);
	EXPECT_EQ(e, nullptr);
	ASSERT_EQ(rdma_execute(o, &w), 0);

	// Every connection of the failed device closes while it is failed; the
	// failure outlives its mappings.
	rdma_conn_close(&c);
	rdma_conn_close(&d);
	ASSERT_EQ(rdma_local_fail(node.Path().c_str(), 0), 0);
	c = Open(node);
	ASSERT_NE(c, nullptr);
	ASSERT_EQ(rdma_execute(c, &r), 0);
	EXPECT_EQ(got, 7u);
	ASSERT_EQ(rdma_local_fail(node.Path().c_str(), 0), 0);
	rdma_conn_close(&c);
	rdma_conn_close(&o);
}

// A replicated operation posts to every node first and then waits: batches
// to several nodes are in flight at once, each one round trip.
TEST(RdmaLocal, BatchesToSeveralNodesInFlightAtOnce)
{
	LocalNode n1("several1"), n2("several2"), n3("several3");
	rdma_conn *c[3] = { Open(n1), Open(n2), Open(n3) };
	uint64_t v = 77, old[3] = { 1, 1, 1 };
	rdma_batch b[3];
	rdma_stats s0, s1, d;
	rdma_stats_read_thread(&s0);
	for (int i = 0; i < 3; i++) {
		ASSERT_NE(c[i], nullptr);
		// A delay keeps each batch in flight until all are posted.
		ASSERT_EQ(rdma_conn_inject(c[i], RDMA_FAULT_DELAY, 2000000), 0);
		rdma_batch_init(&b[i]);
		ASSERT_EQ(rdma_batch_write(&b[i], 0, 64, &v, 8), 0);
		ASSERT_EQ(rdma_batch_cas(&b[i], 1, 0, 0, 5, &old[i]), 0);
		ASSERT_EQ(rdma_post(c[i], &b[i]), 0);
	}
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(rdma_poll(c[i]), -EINPROGRESS) << i;
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(rdma_wait(c[i]), 0) << i;
		EXPECT_EQ(old[i], 0u) << i;
	}
	rdma_stats_read_thread(&s1);
	rdma_stats_diff(&s1, &s0, &d);
	EXPECT_EQ(d.batches, 3u);
	EXPECT_EQ(d.round_trips, 3u); // one per node, not one per operation
	EXPECT_EQ(n2.Bytes(kRegion0Off + 64, 8), std::string((const char *)&v, 8));
	for (rdma_conn *&x : c)
		rdma_conn_close(&x);
}

TEST(RdmaLocal, ReconnectRefusesAChangedRegionTable)
{
	LocalNode node("reconnect");
	rdma_conn *c = Open(node);
	ASSERT_NE(c, nullptr);
	node.Nf().regions[1].length = 2048;
	node.Publish();
	EXPECT_EQ(rdma_conn_reconnect(c), RDMA_E_PROTO);
	rdma_region_info info;
	ASSERT_EQ(rdma_conn_region(c, 1, &info), 0);
	EXPECT_EQ(info.length, kRegion1Len); // the old table stays
	uint64_t v = 0;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_read(&b, 1, 0, &v, 8), 0);
	EXPECT_EQ(rdma_post(c, &b), RDMA_E_CONN);
	node.Nf().regions[1].length = kRegion1Len;
	node.Publish();
	EXPECT_EQ(rdma_conn_reconnect(c), 0);
	EXPECT_EQ(rdma_execute(c, &b), 0);
	rdma_conn_close(&c);
}

// The ordering contract under concurrency: a writer publishes buffer
// version v and then CASes the metadata word from v-1 to v in ONE batch;
// readers read metadata then buffer in one batch and must never see the
// metadata ahead of the buffer. Run under TSan by CI (tag concurrency).
TEST(RdmaLocal, OrderedBatchesUnderConcurrency)
{
	LocalNode node("ordering");
	constexpr unsigned kWords = 64, kVersions = 3000, kReaders = 3;
	std::atomic<bool> stop{false};
	std::atomic<unsigned> violations{0}, reads{0}, ready{0};

	std::vector<std::thread> readers;
	for (unsigned r = 0; r < kReaders; r++)
		readers.emplace_back([&] {
			rdma_conn *c = Open(node);
			uint64_t meta = 0, buf[kWords];
			while (!stop.load()) {
				rdma_batch b;
				rdma_batch_init(&b);
				rdma_batch_read(&b, 1, 0, &meta, 8);
				rdma_batch_read(&b, 0, 0, buf, sizeof(buf));
				if (rdma_execute(c, &b) != 0) {
					violations++;
					break;
				}
				for (uint64_t w : buf)
					if (w < meta)
						violations++;
				if (reads++ == 0)
					ready++;
			}
			rdma_conn_close(&c);
		});
	rdma_conn *w = Open(node);
	uint64_t buf[kWords];
	// Start writing only once a reader runs, so reads overlap the writes
	// however the threads are scheduled.
	while (ready.load() == 0)
		std::this_thread::yield();
	for (uint64_t v = 1; v <= kVersions; v++) {
		for (uint64_t &x : buf)
			x = v;
		uint64_t old = 0;
		rdma_batch b;
		rdma_batch_init(&b);
		ASSERT_EQ(rdma_batch_write(&b, 0, 0, buf, sizeof(buf)), 0);
		ASSERT_EQ(rdma_batch_cas(&b, 1, 0, v - 1, v, &old), 0);
		ASSERT_EQ(rdma_execute(w, &b), 0);
		ASSERT_EQ(old, v - 1);
	}
	stop = true;
	for (auto &t : readers)
		t.join();
	rdma_conn_close(&w);
	EXPECT_EQ(violations.load(), 0u);
	EXPECT_GT(reads.load(), 0u);
}

// Separate processes, each with its own mapping, share the node: their
// fetch-and-adds on one word lose nothing.
TEST(RdmaLocal, ProcessesShareTheNode)
{
	LocalNode node("processes");
	constexpr int kProcs = 4, kAdds = 5000;
	std::vector<pid_t> kids;
	for (int p = 0; p < kProcs; p++) {
		pid_t pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			rdma_conn *c = nullptr;
			rdma_conn_config cfg;
			rdma_conn_config_init(&cfg);
			cfg.token = "secret";
			if (rdma_conn_open(&c, node.Uri().c_str(), &cfg) != 0)
				_exit(2);
			for (int i = 0; i < kAdds; i++) {
				rdma_batch b;
				rdma_batch_init(&b);
				rdma_batch_faa(&b, 1, 8, 1, nullptr);
				if (rdma_execute(c, &b) != 0)
					_exit(3);
			}
			rdma_conn_close(&c);
			_exit(0);
		}
		kids.push_back(pid);
	}
	for (pid_t pid : kids) {
		int st = 0;
		ASSERT_EQ(waitpid(pid, &st, 0), pid);
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
	}
	uint64_t total;
	std::string bytes = node.Bytes(kRegion1Off + 8, 8);
	memcpy(&total, bytes.data(), 8);
	EXPECT_EQ(total, (uint64_t)kProcs * kAdds);
}

void SomeHandler(int) {}

// In a forked child (dispositions are process-wide): a handler on SIGTERM
// (as libinfinipath's constructor installs) goes back to SIG_DFL, SIGINT
// ignored stays ignored, and the child then dies of SIGTERM, not exit 1.
TEST(RdmaSignals, RestoreResetsHandlersAndKeepsIgnore)
{
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct sigaction sa = {};
		sa.sa_handler = SomeHandler;
		sigaction(SIGTERM, &sa, nullptr);
		signal(SIGINT, SIG_IGN);
		if (rdma_signals_restore() != 0)
			_exit(10);
		struct sigaction term, intr;
		sigaction(SIGTERM, nullptr, &term);
		sigaction(SIGINT, nullptr, &intr);
		if (term.sa_handler != SIG_DFL)
			_exit(11);
		if (intr.sa_handler != SIG_IGN)
			_exit(12);
		raise(SIGINT);
		raise(SIGTERM);
		_exit(13);
	}
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
	EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(RdmaError, Strings)
{
	for (int code = RDMA_E_LAST; code <= RDMA_E_BASE - 1; code++)
		EXPECT_STRNE(pm_strerror(code), "unknown error");
	EXPECT_STREQ(pm_strerror(RDMA_E_BOUNDS), "access outside the region");
	EXPECT_NE(std::string(pm_strerror(-ENOENT)).size(), 0u);
	EXPECT_STREQ(pm_strerror(1), "unknown error");
}

} // namespace
