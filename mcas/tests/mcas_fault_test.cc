// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/mcas_fault_test.cc -- mcas.h promises that no allocation
// happens inside an operation: with every allocation of the operating
// threads armed to fail (//pm:fault_alloc), thousands of
// mcas_desc_begin/add/execute, mcas_read and guards run (each execute
// retires its descriptor into the reclamation pipeline, which cycles every
// descriptor many times: detached, recycled, reused) and none attempted an
// allocation. Every algorithm, volatile and persistent; one thread, and
// two contending on the same words, so helping can run too. (The constructors'
// and mcas_retire's -ENOMEM paths are swept in ds/tests/bztree_fault_test.)
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <thread>

#include <gtest/gtest.h>

#include <mcas/mcas.h>

#include "mcas/tests/mcas_test_util.h"
#include "pm/tests/fault_alloc.h"

namespace {

constexpr unsigned kDescs = 8;       // descriptors per thread: a short pipeline
constexpr unsigned kOps = 64 * kDescs; // each descriptor reused dozens of times
constexpr unsigned kWords = 4;

// What one thread saw; gtest's assertions may allocate, so they run after
// the thread disarmed.
struct Outcome {
	unsigned executed = 0, succeeded = 0, other = 0;
	int first_other = 0;
	bool fired = false;
};

// kOps MCAS on up to 3 of @words (cycling), each preceded by a guarded
// read of every word, with the calling thread's first allocation armed to
// fail. -EAGAIN from mcas_desc_begin (another thread holds back the grace
// periods for a moment) is retried.
void Run(mcas *m, uint64_t *words, Outcome *out)
{
	mcas_thread *t = nullptr;
	if (mcas_thread_register(m, &t) != 0) {
		out->other = 1;
		return;
	}
	fault_alloc_arm(1);
	for (unsigned i = 0; i < kOps; i++) {
		uint64_t v[kWords];
		mcas_guard_enter(t);
		for (unsigned j = 0; j < kWords; j++)
			v[j] = mcas_read(t, &words[j]);
		mcas_guard_exit(t);
		mcas_desc *d;
		int r;
		while ((r = mcas_desc_begin(t, &d)) == -EAGAIN)
			std::this_thread::yield();
		for (unsigned k = 0; r == 0 && k < 1 + i % 3; k++) {
			unsigned j = (i + k) % kWords;
			r = mcas_desc_add(d, &words[j], v[j], v[j] + 8);
		}
		if (r == 0) {
			r = mcas_desc_execute(d);
		} else {
			mcas_desc_abandon(d);
		}
		out->executed++;
		if (r == 1) {
			out->succeeded++;
		} else if (r != 0) { // 0: a word changed since the read
			if (out->other++ == 0)
				out->first_other = r;
		}
	}
	out->fired = fault_alloc_fired(); // also disarms
	if (mcas_thread_unregister(&t) != 0)
		out->other++;
}

void Check(const Outcome &o)
{
	EXPECT_FALSE(o.fired) << "an operation attempted an allocation";
	EXPECT_EQ(o.executed, kOps);
	EXPECT_EQ(o.other, 0u) << "first unexpected result " << o.first_other;
	EXPECT_GT(o.succeeded, 0u);
}

void RunAll(mcas *m, uint64_t *words, unsigned threads)
{
	Outcome out[2];
	if (threads == 1) {
		Run(m, words, &out[0]);
	} else {
		std::thread a(Run, m, words, &out[0]), b(Run, m, words, &out[1]);
		a.join();
		b.join();
	}
	uint64_t sum = 0, succeeded = 0;
	for (unsigned i = 0; i < threads; i++) {
		Check(out[i]);
		succeeded += out[i].succeeded;
	}
	for (unsigned j = 0; j < kWords; j++)
		sum += words[j];
	// Each success added 8 to 1, 2 or 3 words: the words saw them all.
	EXPECT_GE(sum, 8 * succeeded);
	EXPECT_LE(sum, 3 * 8 * succeeded);
	mcas_stats st;
	mcas_stats_total(m, &st);
	EXPECT_EQ(st.mcas, uint64_t{threads} * kOps);
	EXPECT_EQ(st.succeeded, succeeded);
	EXPECT_GT(st.grace_periods, uint64_t{threads} * kOps / kDescs / 2)
		<< "the descriptors did not go round the pipeline";
}

struct NoAlloc : ::testing::TestWithParam<mcas_algorithm> {};
struct NoAllocPersistent : ::testing::TestWithParam<mcas_algorithm> {};

mcas_config Config(mcas_algorithm alg)
{
	return mcastest::TestConfig(alg, 2, kDescs, 4);
}

TEST_P(NoAlloc, OperationsAllocateNothing)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	for (unsigned threads : {1u, 2u}) {
		SCOPED_TRACE(threads);
		uint64_t words[kWords] = {};
		mcastest::OnVolatile(Config(GetParam()),
			[&](mcas *m) { RunAll(m, words, threads); });
	}
}

TEST_P(NoAllocPersistent, OperationsAllocateNothing)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	for (unsigned threads : {1u, 2u}) {
		SCOPED_TRACE(threads);
		mcastest::PmemInstance p;
		ASSERT_EQ(p.Create(mcastest::PoolName("noalloc" + std::to_string(threads),
					   GetParam()),
				  Config(GetParam())),
			0);
		RunAll(p.m, p.words, threads);
	}
}

INSTANTIATE_TEST_SUITE_P(Algorithms, NoAlloc,
	::testing::ValuesIn(mcastest::VolatileAlgorithms()), mcastest::AlgorithmName());
INSTANTIATE_TEST_SUITE_P(Algorithms, NoAllocPersistent,
	::testing::ValuesIn(mcastest::PersistentAlgorithms()), mcastest::AlgorithmName());

} // namespace
