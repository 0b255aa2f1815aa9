// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/mcas_lin_test.cc -- concurrent histories of MCAS and reads over
// a small array, recorded from real threads (more than cores) and checked
// for linearizability by the Wing-Gong-Lowe checker in tests/lincheck, for
// every algorithm, volatile and persistent.
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <mcas/mcas.h>

#include "mcas/tests/mcas_test_util.h"
#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace {

constexpr unsigned kThreads = 4;
constexpr unsigned kArray = 4;
constexpr unsigned kOps = 120;

using Recorder = lincheck::Recorder<lincheck::WordOp>;

void Worker(mcas *m, uint64_t *words, Recorder::Handle *h, unsigned id, unsigned seed)
{
	mcas_thread *t;
	ASSERT_EQ(mcas_thread_register(m, &t), 0);
	std::mt19937 rng(seed * 131 + id);
	uint64_t seen[kArray] = {};
	for (unsigned n = 0; n < kOps; n++) {
		if (rng() % 5 < 2) {
			unsigned i = rng() % kArray;
			auto ticket = h->invoke(lincheck::WordOp::read(i));
			uint64_t v = mcas_read(t, &words[i]);
			h->complete(ticket, lincheck::WordOp::read(i, v));
			seen[i] = v;
			continue;
		}
		// k = 1..3 distinct words; expected values are what this thread
		// saw last (often stale under contention, so some MCAS fail);
		// new values are unique, so the checker can tell writes apart.
		std::vector<unsigned> idx = {0, 1, 2, 3};
		std::shuffle(idx.begin(), idx.end(), rng);
		idx.resize(1 + rng() % 3);
		std::vector<lincheck::McasEntry> e;
		mcas_desc *d;
		int ret;
		while ((ret = mcas_desc_begin(t, &d)) == -EAGAIN)
			std::this_thread::yield();
		ASSERT_EQ(ret, 0);
		for (unsigned i : idx) {
			uint64_t nv = (((uint64_t)(id + 1) << 32) | (n * 4 + e.size())) << 3;
			e.push_back({i, seen[i], nv});
			ASSERT_EQ(mcas_desc_add(d, &words[i], seen[i], nv), 0);
		}
		auto ticket = h->invoke(lincheck::WordOp::mcas(e));
		ret = mcas_desc_execute(d);
		h->complete(ticket, lincheck::WordOp::mcas(e, ret == 1));
		ASSERT_GE(ret, 0);
		if (ret == 1)
			for (const auto &x : e)
				seen[x.index] = x.desired;
	}
	ASSERT_EQ(mcas_thread_unregister(&t), 0);
}

void CheckRounds(mcas *m, uint64_t *words, unsigned rounds)
{
	for (unsigned r = 0; r < rounds; r++) {
		mcas_thread *t;
		ASSERT_EQ(mcas_thread_register(m, &t), 0);
		std::vector<uint64_t> initial(kArray);
		for (unsigned i = 0; i < kArray; i++)
			initial[i] = mcas_read(t, &words[i]);
		ASSERT_EQ(mcas_thread_unregister(&t), 0);

		Recorder rec(kThreads, kOps);
		std::vector<std::thread> th;
		for (unsigned i = 0; i < kThreads; i++)
			th.emplace_back(Worker, m, words, &rec.handle(i), i, r);
		for (auto &x : th)
			x.join();
		auto history = rec.history();
		lincheck::Result res = lincheck::check(lincheck::WordArrayModel(initial), history);
		ASSERT_TRUE(res.ok) << "round " << r << ": " << res.explanation;
		ASSERT_FALSE(res.timed_out_or_limit);
	}
}

// Efficient-read detaching often (1 in 4), to exercise it.
mcas_config Config(mcas_algorithm alg)
{
	return mcastest::TestConfig(alg, kThreads + 1, 32, 4);
}

class LinVolatile : public ::testing::TestWithParam<mcas_algorithm> {};
class LinPersistent : public ::testing::TestWithParam<mcas_algorithm> {};

TEST_P(LinVolatile, HistoriesAreLinearizable)
{
	uint64_t words[kArray] = {};
	mcastest::OnVolatile(Config(GetParam()), [&words](mcas *m) { CheckRounds(m, words, 12); });
}

TEST_P(LinPersistent, HistoriesAreLinearizable)
{
	mcastest::PmemInstance p;
	ASSERT_EQ(p.Create(mcastest::PoolName("lin", GetParam()), Config(GetParam())), 0);
	CheckRounds(p.m, p.words, 6);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LinVolatile,
	::testing::ValuesIn(mcastest::VolatileAlgorithms()), mcastest::AlgorithmName());
INSTANTIATE_TEST_SUITE_P(Algorithms, LinPersistent,
	::testing::ValuesIn(mcastest::PersistentAlgorithms()), mcastest::AlgorithmName());

} // namespace
