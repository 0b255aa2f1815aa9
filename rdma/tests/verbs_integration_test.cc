// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/verbs_integration_test.cc -- the verbs backend end to end: an
// in-process memory node serving verbs and a client on "verbs://". Needs an
// RDMA device (a NIC, or Soft-RoCE: rdma link add rxe0 type rxe netdev
// eth0); without one every test that needs it skips with that message, and
// the NoDevice tests check that both sides fail cleanly instead.
//
// The node binds to $RDMA_VERBS_TEST_HOST if set, else to the IPv4 address
// of the netdev of the first RoCE/Soft-RoCE port (sysfs), else 127.0.0.1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <rdma/node.h>
#include <rdma/rdma.h>

#include "pm/tests/test_util.h"
#include "rdma/tests/node_proc.h"

namespace {

constexpr uint64_t kRegion0 = 1 << 20;
constexpr uint64_t kRegion1 = 64 << 10;
constexpr const char *kToken = "verbs-secret";

int DeviceCount()
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	if (list == nullptr)
		return 0;
	ibv_free_device_list(list);
	return n;
}

#define SKIP_WITHOUT_DEVICE()                                                  \
	do {                                                                   \
		if (DeviceCount() == 0)                                        \
			GTEST_SKIP() << "no RDMA device (ibv_get_device_list " \
				"found 0): verbs integration tests need an "   \
				"RDMA NIC or Soft-RoCE (rdma link add rxe0 "   \
				"type rxe netdev eth0)";                       \
	} while (0)

rdma_node_config NodeConfig(const std::string &path)
{
	return rdmatest::TwoRegionNodeConfig(path, kRegion0, kRegion1, kToken);
}

// Runs here, device or not: the client must fail cleanly and leak nothing
// (the asan config checks leaks) when it cannot run.
TEST(VerbsNoDevice, ConnOpenFailsCleanly)
{
	rdma_conn *c = nullptr;
	int ret = rdma_conn_open(&c, "verbs://127.0.0.1:1", nullptr);

	EXPECT_EQ(nullptr, c);
	if (DeviceCount() == 0) {
		EXPECT_EQ(RDMA_E_NO_DEVICE, ret) << pm_strerror(ret);
	} else {
		// Nothing listens on port 1: refused, never a hang or success.
		EXPECT_NE(0, ret);
	}
	// Malformed targets are refused before any device is looked at.
	EXPECT_EQ(-EINVAL, rdma_conn_open(&c, "verbs://", nullptr));
	EXPECT_EQ(-EINVAL, rdma_conn_open(&c, "verbs://nohostport", nullptr));
	EXPECT_EQ(nullptr, c);
}

// The node side without a device: serving only verbs is RDMA_E_NO_DEVICE
// and the node stays usable and closes cleanly.
TEST(VerbsNoDevice, NodeServeVerbsOnly)
{
	std::string path = pmtest::TempPath("verbs_nodev.pool");
	rdma_node_config cfg = NodeConfig(path);
	rdma_node *n = nullptr;
	ASSERT_EQ(0, rdma_node_open(&n, &cfg));

	rdma_node_serve_config scfg = rdmatest::ServeConfig(rdmatest::RdmaTestHost(), RDMA_NODE_SERVE_VERBS);
	int ret = rdma_node_serve(n, &scfg);
	struct rdma_node_status st;
	if (DeviceCount() == 0) {
		EXPECT_EQ(RDMA_E_NO_DEVICE, ret) << pm_strerror(ret);
	} else {
		ASSERT_EQ(0, ret) << pm_strerror(ret);
		rdma_node_get_status(n, &st);
		EXPECT_EQ((unsigned)RDMA_NODE_SERVE_VERBS, st.backends);
	}
	EXPECT_EQ(0, rdma_node_close(&n));
	EXPECT_EQ(nullptr, n);
}

// A node serving verbs in this process, so tests can look at its memory.
class VerbsNode : public ::testing::Test {
protected:
	void SetUp() override
	{
		SKIP_WITHOUT_DEVICE();
		path_ = pmtest::TempPath("verbs_it.pool");
		rdma_node_config cfg = NodeConfig(path_);
		ASSERT_EQ(0, rdma_node_open(&node_, &cfg));
		rdma_node_serve_config scfg = rdmatest::ServeConfig(rdmatest::RdmaTestHost(), RDMA_NODE_SERVE_VERBS);
		int ret = rdma_node_serve(node_, &scfg);
		ASSERT_EQ(0, ret) << pm_strerror(ret) << " (node host " << rdmatest::RdmaTestHost()
				  << "; set RDMA_VERBS_TEST_HOST to the RDMA netdev's address)";
		for (unsigned i = 0; i < 2; i++)
			ASSERT_EQ(0, rdma_node_region(node_, i, &info_[i], &mem_[i]));
		uri_ = std::string("verbs://") + rdmatest::RdmaTestHost() + ":" +
			std::to_string(rdma_node_port(node_));
		ASSERT_EQ(0, Open(&c_, kToken));
	}

	void TearDown() override
	{
		rdma_conn_close(&c_);
		if (node_ != nullptr) {
			EXPECT_EQ(0, rdma_node_close(&node_));
		}
	}

	int Open(rdma_conn **c, const char *token)
	{
		rdma_conn_config cfg;
		rdma_conn_config_init(&cfg);
		cfg.token = token;
		cfg.timeout_ms = 3000;
		return rdma_conn_open(c, uri_.c_str(), &cfg);
	}

	uint8_t *Mem(unsigned region, uint64_t off)
	{
		return static_cast<uint8_t *>(mem_[region]) + off;
	}

	uint64_t Word(unsigned region, uint64_t off)
	{
		uint64_t v;
		memcpy(&v, Mem(region, off), 8);
		return v;
	}

	std::string path_, uri_;
	rdma_node *node_ = nullptr;
	rdma_conn *c_ = nullptr;
	rdma_region_info info_[2];
	void *mem_[2];
};

TEST_F(VerbsNode, RegionsAndBackend)
{
	EXPECT_STREQ("verbs", rdma_conn_backend(c_));
	ASSERT_EQ(2u, rdma_conn_region_count(c_));
	for (unsigned i = 0; i < 2; i++) {
		rdma_region_info r;
		ASSERT_EQ(0, rdma_conn_region(c_, i, &r));
		EXPECT_EQ(info_[i].id, r.id);
		EXPECT_EQ(info_[i].length, r.length);
	}
}

TEST_F(VerbsNode, EveryOperationType)
{
	std::vector<uint8_t> src(1000), dst(1000);
	for (size_t i = 0; i < src.size(); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	rdma_batch b;

	// WRITE (not inline) and a small inline one, then PERSIST.
	uint64_t small = 0x1122334455667788ull;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 24, src.data(), src.size()));
	ASSERT_EQ(0, rdma_batch_write(&b, 1, 8, &small, 8));
	ASSERT_EQ(0, rdma_batch_persist(&b, 0, 24, src.size()));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(0, memcmp(Mem(0, 24), src.data(), src.size()));
	EXPECT_EQ(small, Word(1, 8));

	// READ back through the NIC.
	uint64_t small_back = 0;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_read(&b, 0, 24, dst.data(), dst.size()));
	ASSERT_EQ(0, rdma_batch_read(&b, 1, 8, &small_back, 8));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(src, dst);
	EXPECT_EQ(small, small_back);

	// CAS that succeeds, CAS that fails, FAA twice: old values in host order.
	uint64_t old1 = 1, old2 = 1, old3 = 1, old4 = 1;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_cas(&b, 1, 64, 0, 0xdeadbeefcafef00dull, &old1));
	ASSERT_EQ(0, rdma_batch_cas(&b, 1, 64, 0, 5, &old2));
	ASSERT_EQ(0, rdma_batch_faa(&b, 1, 72, 0x100, &old3));
	ASSERT_EQ(0, rdma_batch_faa(&b, 1, 72, 0x1, &old4));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(0u, old1);
	EXPECT_EQ(0xdeadbeefcafef00dull, old2);
	EXPECT_EQ(0u, old3);
	EXPECT_EQ(0x100u, old4);
	EXPECT_EQ(0xdeadbeefcafef00dull, Word(1, 64));
	EXPECT_EQ(0x101u, Word(1, 72));

	// The largest batch payload, across a region's end.
	std::vector<uint8_t> big(RDMA_BATCH_MAX_BYTES / 2, 0xa5), big_back(big.size());
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, kRegion0 - big.size(), big.data(), big.size()));
	ASSERT_EQ(0, rdma_batch_read(&b, 0, kRegion0 - big.size(), big_back.data(),
		big_back.size()));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(big, big_back);
}

// DESIGN.md sect. 7: "write, persist, CAS, persist" in one round trip, and
// the CAS only after the buffer is written.
TEST_F(VerbsNode, WritePersistCasPersistOneRoundTrip)
{
	std::vector<uint8_t> buf(512, 0x3c);
	uint64_t old = 99;
	rdma_batch b;
	rdma_stats before, after, d;

	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 4096, buf.data(), buf.size()));
	ASSERT_EQ(0, rdma_batch_persist(&b, 0, 4096, buf.size()));
	ASSERT_EQ(0, rdma_batch_cas(&b, 0, 0, 0, 4096, &old));
	ASSERT_EQ(0, rdma_batch_persist(&b, 0, 0, 8));
	rdma_stats_read_thread(&before);
	ASSERT_EQ(0, rdma_execute(c_, &b));
	rdma_stats_read_thread(&after);
	rdma_stats_diff(&after, &before, &d);
	EXPECT_EQ(1u, d.batches);
	EXPECT_EQ(1u, d.round_trips);
	EXPECT_EQ(0u, d.failed);
	EXPECT_EQ(4u, d.provider_ops); // one work request per operation
	EXPECT_EQ(0u, d.wire_messages);
	EXPECT_EQ(0u, d.shipped);
	EXPECT_EQ(0u, old);
	EXPECT_EQ(4096u, Word(0, 0));
	EXPECT_EQ(0, memcmp(Mem(0, 4096), buf.data(), buf.size()));
}

TEST_F(VerbsNode, BoundsAndRegionsRejectedBeforeAnything)
{
	uint64_t v = 7, old = 0;
	rdma_batch b;

	memset(Mem(1, kRegion1 - 8), 0, 8);
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 1, kRegion1 - 8, &v, 8));
	ASSERT_EQ(0, rdma_batch_read(&b, 1, kRegion1 - 4, &old, 8)); // crosses the end
	EXPECT_EQ(RDMA_E_BOUNDS, rdma_post(c_, &b));
	EXPECT_EQ(0u, Word(1, kRegion1 - 8)); // the valid write did not run

	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_cas(&b, 2, 0, 0, 1, &old));
	EXPECT_EQ(RDMA_E_NO_REGION, rdma_post(c_, &b));

	// The connection is still good.
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 1, kRegion1 - 8, &v, 8));
	ASSERT_EQ(0, rdma_execute(c_, &b));
	EXPECT_EQ(7u, Word(1, kRegion1 - 8));
}

// Many batches: sequence numbers, send-queue slots of unsignalled requests
// and completions are reused correctly.
TEST_F(VerbsNode, ManyBatches)
{
	rdma_batch b;
	uint64_t old = 0;
	for (uint64_t i = 0; i < 500; i++) {
		rdma_batch_init(&b);
		for (unsigned k = 0; k < RDMA_BATCH_MAX_OPS; k++)
			ASSERT_EQ(0, rdma_batch_faa(&b, 0, 128, 1, k + 1 == RDMA_BATCH_MAX_OPS ?
				&old : nullptr));
		ASSERT_EQ(0, rdma_execute(c_, &b)) << i;
		ASSERT_EQ((i + 1) * RDMA_BATCH_MAX_OPS - 1, old);
	}
}

TEST_F(VerbsNode, WrongTokenRefused)
{
	rdma_conn *c = nullptr;
	EXPECT_EQ(RDMA_E_AUTH, Open(&c, "not-the-token"));
	EXPECT_EQ(nullptr, c);
}

TEST_F(VerbsNode, ReconnectAndNodeStop)
{
	uint64_t v = 1;
	rdma_batch b;

	ASSERT_EQ(0, rdma_conn_reconnect(c_));
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 0, &v, 8));
	ASSERT_EQ(0, rdma_execute(c_, &b));

	// The node goes away: the next batch fails (broken connection or
	// timeout), never hangs, and later posts say RDMA_E_CONN.
	ASSERT_EQ(0, rdma_node_close(&node_));
	int ret = rdma_execute(c_, &b);
	EXPECT_TRUE(ret == RDMA_E_CONN || ret == -ETIMEDOUT || ret == -EIO)
		<< pm_strerror(ret);
	EXPECT_EQ(RDMA_E_CONN, rdma_post(c_, &b));
	EXPECT_NE(0, rdma_conn_reconnect(c_));
}

} // namespace
