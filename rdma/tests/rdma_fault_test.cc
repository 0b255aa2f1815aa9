// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/rdma_fault_test.cc -- allocation failures (//pm:fault_alloc)
// under the client on the local: backend: every allocation point of
// rdma_conn_open, rdma_conn_reconnect and rdma_local_fail is made to fail in
// turn, and batches are checked to allocate nothing. A failed open returns
// -ENOMEM with no connection made; a failed reconnect leaves a broken
// connection broken (and reconnectable); a failed rdma_local_fail leaves the
// device as it was.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include <pm/error.h>
#include <rdma/rdma.h>

#include "pm/tests/fault_alloc.h"
#include "rdma/tests/local_node.h"

namespace {

using rdmatest::LocalNode;
using rdmatest::Open;

// The sweep's check for a call that only allocates: -ENOMEM exactly when an
// allocation failed, success otherwise.
void EnomemIffFired(int r, bool fired)
{
	EXPECT_EQ(r, fired ? -ENOMEM : 0) << pm_strerror(r) << ": " << pm_errormsg();
}

// The same for a call that reads the node file: glibc's stdio reads a file
// unbuffered when it cannot allocate the FILE's buffer, so that failed
// allocation is absorbed and the call succeeds.
void EnomemUnlessAbsorbed(int r, bool fired)
{
	if (fired && r == 0)
		return;
	EnomemIffFired(r, fired);
}

// Logs the allocation points a sweep of @what exercised, and returns them.
unsigned Points(const char *what, unsigned n)
{
	std::printf("%s: %u allocation points\n", what, n);
	return n;
}

// Writes @v to region 1 offset 0 and reads it back through @c; the
// execute's result.
int WriteRead(rdma_conn *c, uint64_t v)
{
	uint64_t got = ~v;
	rdma_batch b;
	rdma_batch_init(&b);
	EXPECT_EQ(rdma_batch_write(&b, 1, 0, &v, 8), 0);
	EXPECT_EQ(rdma_batch_read(&b, 1, 0, &got, 8), 0);
	int r = rdma_execute(c, &b);
	if (r == 0) {
		EXPECT_EQ(got, v);
	}
	return r;
}

TEST(RdmaFault, OpenFailsCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	LocalNode node("fault_open");
	const std::string uri = node.Uri();
	rdma_conn_config cfg;
	rdma_conn_config_init(&cfg);
	cfg.token = "secret";
	// Twice: with no mapping of the pool yet, and with one shared with a
	// connection already open.
	EXPECT_GT(Points("rdma_conn_open", pmtest::SweepConstructor<rdma_conn>(
			  [&](rdma_conn **c) { return rdma_conn_open(c, uri.c_str(), &cfg); },
			  [](rdma_conn **c) { EXPECT_EQ(rdma_conn_close(c), 0); }, EnomemUnlessAbsorbed)),
		0u);
	rdma_conn *c = Open(node);
	ASSERT_NE(c, nullptr);
	EXPECT_GT(Points("rdma_conn_open (mapped)", pmtest::SweepConstructor<rdma_conn>(
			  [&](rdma_conn **d) { return rdma_conn_open(d, uri.c_str(), &cfg); },
			  [](rdma_conn **d) { EXPECT_EQ(rdma_conn_close(d), 0); }, EnomemUnlessAbsorbed)),
		0u);
	EXPECT_EQ(WriteRead(c, 42), 0);
	EXPECT_EQ(rdma_conn_close(&c), 0);
}

// A batch on the local backend runs inside rdma_post with loads, stores and
// atomics: no allocation point at all.
TEST(RdmaFault, BatchesAllocateNothing)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	LocalNode node("fault_batch");
	rdma_conn *c = Open(node);
	ASSERT_NE(c, nullptr);
	uint64_t old_cas = 0, old_faa = 0, word = 0, expect = 0;
	const char msg[] = "one batch";
	char back[sizeof(msg)] = {};
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_write(&b, 0, 64, msg, sizeof(msg)), 0);
	ASSERT_EQ(rdma_batch_persist(&b, 0, 64, sizeof(msg)), 0);
	ASSERT_EQ(rdma_batch_faa(&b, 1, 0, 3, &old_faa), 0);
	ASSERT_EQ(rdma_batch_cas(&b, 1, 8, 0, 1, &old_cas), 0);
	ASSERT_EQ(rdma_batch_read(&b, 0, 64, back, sizeof(back)), 0);
	ASSERT_EQ(rdma_batch_read(&b, 1, 0, &word, 8), 0);
	// The thread's first batch links its pm/cost.h counters into the
	// registry, an allocation pm_cost_add() absorbs: not the client's.
	ASSERT_EQ(rdma_execute(c, &b), 0);
	expect = 3;
	EXPECT_EQ(Points("rdma_execute", pmtest::SweepAllocFailures([&] { return rdma_execute(c, &b); },
			  [&](int r, bool fired) {
				  EXPECT_FALSE(fired);
				  EXPECT_EQ(r, 0) << pm_strerror(r);
				  expect += 3;
				  EXPECT_EQ(word, expect);
				  EXPECT_STREQ(back, msg);
			  })),
		0u);
	EXPECT_EQ(Points("rdma_post + rdma_wait", pmtest::SweepAllocFailures(
			  [&] {
				  int r = rdma_post(c, &b);
				  return r != 0 ? r : rdma_wait(c);
			  },
			  [&](int r, bool fired) {
				  EXPECT_FALSE(fired);
				  EXPECT_EQ(r, 0) << pm_strerror(r);
			  })),
		0u);
	EXPECT_EQ(rdma_conn_close(&c), 0);
}

// rdma_conn_reconnect closes the old connection before it opens the new one
// (a batch in flight is abandoned), so the case a failed allocation cannot
// change is the one reconnect exists for: a broken connection stays broken,
// and a later reconnect repairs it. Every run starts from a broken one.
TEST(RdmaFault, ReconnectFailsCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	LocalNode node("fault_reconnect");
	rdma_conn *c = Open(node);
	ASSERT_NE(c, nullptr);
	ASSERT_EQ(WriteRead(c, 7), 0);
	// The device fails under a batch, then comes back.
	auto break_it = [&] {
		ASSERT_EQ(rdma_local_fail(node.Path().c_str(), 1), 0);
		ASSERT_EQ(WriteRead(c, 8), RDMA_E_CONN);
		ASSERT_EQ(rdma_local_fail(node.Path().c_str(), 0), 0);
	};
	break_it();
	EXPECT_GT(Points("rdma_conn_reconnect",
			  pmtest::SweepAllocFailures([&] { return rdma_conn_reconnect(c); },
				  [&](int r, bool fired) {
					  EnomemUnlessAbsorbed(r, fired);
					  EXPECT_EQ(rdma_conn_region_count(c), 2u);
					  if (r != 0) {
						  EXPECT_EQ(WriteRead(c, 9), RDMA_E_CONN);
					  } else if (fired) {
						  EXPECT_EQ(WriteRead(c, 9), 0);
						  break_it();
					  }
				  })),
		0u);
	EXPECT_EQ(WriteRead(c, 10), 0);
	EXPECT_EQ(rdma_conn_close(&c), 0);
}

// A device whose failure could not be recorded has not failed; restoring
// allocates nothing.
TEST(RdmaFault, LocalFailFailsCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	LocalNode node("fault_devfail");
	const char *path = node.Path().c_str();
	// Twice: with no connection (no mapping), then with one.
	EXPECT_GT(Points("rdma_local_fail (unmapped)",
			  pmtest::SweepAllocFailures([&] { return rdma_local_fail(path, 1); },
				  [&](int r, bool fired) {
					  EnomemIffFired(r, fired);
					  rdma_conn_config cfg;
					  rdma_conn_config_init(&cfg);
					  cfg.token = "secret";
					  rdma_conn *d = nullptr;
					  EXPECT_EQ(rdma_conn_open(&d, node.Uri().c_str(), &cfg),
						  r == 0 ? RDMA_E_CONN : 0);
					  EXPECT_EQ(rdma_conn_close(&d), 0);
				  })),
		0u);
	EXPECT_EQ(Points("rdma_local_fail (restore)",
			  pmtest::SweepAllocFailures([&] { return rdma_local_fail(path, 0); },
				  EnomemIffFired)),
		0u);
	rdma_conn *c = Open(node);
	ASSERT_NE(c, nullptr);
	EXPECT_GT(Points("rdma_local_fail",
			  pmtest::SweepAllocFailures([&] { return rdma_local_fail(path, 1); },
				  [&](int r, bool fired) {
					  EnomemIffFired(r, fired);
					  EXPECT_EQ(WriteRead(c, 11), r == 0 ? RDMA_E_CONN : 0);
				  })),
		0u);
	ASSERT_EQ(rdma_local_fail(path, 0), 0);
	ASSERT_EQ(rdma_conn_reconnect(c), 0);
	EXPECT_EQ(WriteRead(c, 12), 0);
	EXPECT_EQ(rdma_conn_close(&c), 0);
}

} // namespace
