// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_fault_test.cc -- allocation failures (//pm:fault_alloc)
// under every scheme: registration and domain creation fail cleanly, and a
// reclaim_retire() whose list cannot grow returns -ENOMEM and leaves the node
// the caller's (never freed by the domain), while every node it accepted is
// freed exactly once; the epoch flavour's constructors fail cleanly too.
#include <cerrno>
#include <vector>

#include <gtest/gtest.h>

#include <reclaim/reclaim.h>

#include "pm/tests/fault_alloc.h"
#include "reclaim/tests/reclaim_test_util.h"

namespace {

using namespace reclaimtest;

class ReclaimFault : public ::testing::TestWithParam<reclaim_scheme> {};

// A failed allocation is -ENOMEM, or -EAGAIN where it was a rooster
// thread's that pthread_create() could not start (reclaim_domain_new()).
void CreationResult(int r, bool fired)
{
	if (fired)
		EXPECT_TRUE(r == -ENOMEM || r == -EAGAIN) << r;
	else
		EXPECT_EQ(r, 0);
}

// Every scheme but urcu-qsbr: liburcu ends the process when it cannot
// allocate (its urcu_die), which reclaim.h documents for that baseline.
std::vector<reclaim_scheme> OwnSchemes()
{
	std::vector<reclaim_scheme> own;
	for (reclaim_scheme s : AllSchemes())
		if (s != RECLAIM_URCU_QSBR)
			own.push_back(s);
	return own;
}

TEST_P(ReclaimFault, ConstructorsFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	reclaim_config cfg = TestConfig(GetParam());
	EXPECT_GT(pmtest::SweepConstructor<reclaim_domain>(
			  [&](reclaim_domain **d) { return reclaim_domain_new(d, &cfg); },
			  [](reclaim_domain **d) { EXPECT_EQ(reclaim_domain_delete(d), 0); }, CreationResult),
		0u);
	reclaim_domain *d = nullptr;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	pmtest::SweepConstructor<reclaim_thread>(
		[&](reclaim_thread **t) { return reclaim_thread_register(d, t); },
		[](reclaim_thread **t) { EXPECT_EQ(reclaim_thread_unregister(t), 0); }, CreationResult);
	EXPECT_EQ(reclaim_domain_delete(&d), 0);
}

TEST_P(ReclaimFault, RefusedRetiresStayTheCallers)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	constexpr size_t kNodes = 4000;
	reclaim_config cfg = TestConfig(GetParam());
	reclaim_domain *d = nullptr;
	ASSERT_EQ(reclaim_domain_new(&d, &cfg), 0);
	reclaim_thread *t = nullptr;
	ASSERT_EQ(reclaim_thread_register(d, &t), 0);
	FreeLog log(kNodes);
	std::vector<IdNode *> refused;
	size_t accepted = 0;
	for (size_t i = 0; i < kNodes; i++) {
		IdNode *n = NewIdNode(i, &log);
		reclaim_op_begin(t);
		// Every third retire's first allocation fails: the list grows
		// on the others.
		if (i % 3 == 0)
			fault_alloc_arm(1);
		int r = reclaim_retire(t, n, FreeIdNode, &log);
		bool fired = fault_alloc_fired();
		reclaim_op_end(t);
		if (r == -ENOMEM) {
			EXPECT_TRUE(fired);
			refused.push_back(n);
		} else {
			ASSERT_EQ(r, 0);
			accepted++;
		}
	}
	EXPECT_GT(refused.size(), 0u) << "no retire needed to grow its list";
	EXPECT_EQ(Stats(d).retired, accepted);
	EXPECT_EQ(reclaim_thread_unregister(&t), 0);
	EXPECT_EQ(reclaim_domain_delete(&d), 0); // frees what it accepted
	EXPECT_EQ(log.total.load(), accepted);
	for (IdNode *n : refused) {
		EXPECT_EQ(log.count[n->id].load(), 0u) << "a refused node was freed by the domain";
		std::free(n);
	}
}

INSTANTIATE_TEST_SUITE_P(Schemes, ReclaimFault, ::testing::ValuesIn(OwnSchemes()), SchemeName);

// The epoch flavour allocates in its constructor, at a thread's first
// registration (not at a repeated one) and for a grace period's snapshot.
TEST(ReclaimEpochsFault, ConstructorsFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	auto enomem = [](int r, bool fired) { EXPECT_EQ(r, fired ? -ENOMEM : 0); };
	EXPECT_GT(pmtest::SweepConstructor<reclaim_epochs>(
			  [](reclaim_epochs **e) { return reclaim_epochs_new(e, 4); },
			  [](reclaim_epochs **e) { EXPECT_EQ(reclaim_epochs_delete(e), 0); }, enomem),
		0u);
	reclaim_epochs *e = nullptr;
	ASSERT_EQ(reclaim_epochs_new(&e, 4), 0);
	EXPECT_GT(pmtest::SweepConstructor<reclaim_epochs_thread>(
			  [&](reclaim_epochs_thread **t) { return reclaim_epochs_thread_register(e, t); },
			  [](reclaim_epochs_thread **t) {
				  EXPECT_EQ(reclaim_epochs_thread_unregister(t), 0);
			  },
			  enomem),
		0u);
	EXPECT_EQ(reclaim_epochs_registered(e), 0u); // no failed run kept a slot
	reclaim_epochs_grace g;
	fault_alloc_arm(1);
	EXPECT_EQ(reclaim_epochs_grace_init(&g, e), -ENOMEM);
	EXPECT_TRUE(fault_alloc_fired());
	reclaim_epochs_grace_fini(&g); // a failed init is released like a good one
	EXPECT_EQ(reclaim_epochs_delete(&e), 0);
}

} // namespace
