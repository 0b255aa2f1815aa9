// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_urcu_test.cc -- RECLAIM_URCU_QSBR hands retired
// nodes to liburcu's call_rcu() only while the thread is online in liburcu
// (call_rcu() reads RCU-protected data), also when the thread drains or
// unregisters while offline. The test binary wraps urcu_qsbr_call_rcu (see
// the linker flags in BUILD.bazel) to look at every call.
#include <atomic>

#include <gtest/gtest.h>

#include "reclaim_test_util.h"

using namespace reclaimtest;

struct rcu_head;

extern "C" {
int urcu_qsbr_read_ongoing(void);
void __real_urcu_qsbr_call_rcu(struct rcu_head *head,
	void (*func)(struct rcu_head *head));

std::atomic<int> call_rcu_calls{0};
std::atomic<int> call_rcu_offline{0};

void __wrap_urcu_qsbr_call_rcu(struct rcu_head *head,
	void (*func)(struct rcu_head *head))
{
	call_rcu_calls++;
	if (!urcu_qsbr_read_ongoing())
		call_rcu_offline++;
	__real_urcu_qsbr_call_rcu(head, func);
}
}

namespace {

TEST(UrcuQsbr, CallRcuOnlyWhileOnline)
{
	reclaim_config cfg = TestConfig(RECLAIM_URCU_QSBR);
	cfg.quiescence_threshold = 1000; // no quiescent state before the drain
	reclaim_domain *d;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	FreeLog log(20);
	reclaim_thread *t;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);

	// A drain while offline.
	for (size_t i = 0; i < 10; i++) {
		reclaim_op_begin(t);
		reclaim_retire(t, NewIdNode(i, &log), FreeIdNode, &log);
		reclaim_op_end(t);
	}
	reclaim_thread_offline(t);
	reclaim_drain(t);
	EXPECT_GE(call_rcu_calls.load(), 1);
	EXPECT_EQ(urcu_qsbr_read_ongoing(), 0) << "the drain left the thread online";
	reclaim_thread_online(t);

	// An unregister while offline.
	for (size_t i = 10; i < 20; i++) {
		reclaim_op_begin(t);
		reclaim_retire(t, NewIdNode(i, &log), FreeIdNode, &log);
		reclaim_op_end(t);
	}
	reclaim_thread_offline(t);
	int calls = call_rcu_calls.load();
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_GT(call_rcu_calls.load(), calls);

	EXPECT_EQ(call_rcu_offline.load(), 0) << "call_rcu() from an offline thread";
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
	EXPECT_TRUE(log.AllOnce(20));
}

} // namespace
