// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/mcas_array_bench.cc -- the array benchmark of the thesis's MCAS
// evaluation (seed 003, sect. 5.7.2, Fig. 5.1).
//
// What it measures. An array of N 8-byte words (N = 10, 100, 1000: high,
// medium and low contention) shared by 1, 2, 4 or 8 threads. Each thread
// loops: pick k = 4 distinct random words, read each with mcas_read(), and
// try to add 8 to all four with one 4-word MCAS (a read-modify-write; +8
// keeps the low bits every algorithm reserves clear). Four variants run
// side by side, each AOPT right before its baseline on the same
// configuration:
//   aopt-vol    MCAS_ALG_AOPT,   volatile  (thesis, k+1 = 5 CAS)
//   harris-vol  MCAS_ALG_HARRIS, volatile  (baseline, 3k+1 = 13 CAS)
//   aopt-pm     MCAS_ALG_AOPT,   persistent (k+1 CAS, 2 fences per MCAS)
//   pmwcas-pm   MCAS_ALG_PMWCAS, persistent (baseline, 5k+1 = 21 CAS and
//               2k+1 = 9 fences)
// Persistent variants keep the array and the MCAS area in one pm/ pool on
// /dev/shm (MCAS_BENCH_POOL_DIR overrides) with PMEM durability and
// PMEM_IS_PMEM_FORCE=1, so flushes and fences are real clwb/sfence.
//
// Counters (totals over the run's threads, set by thread 0):
//   ops_per_s     successful read-modify-writes per second over the run's
//                 span (bench_util.h)
//   cas_per_op    CAS instructions (pm_cost) per successful RMW
//   fence_per_op  persistent fences per successful RMW
//   flush_per_op  flushed cache lines per successful RMW
//   help_ratio    helps / MCAS operations (thesis: ongoing operations met
//                 and helped during reads or MCAS, over all MCAS operations)
//   detach_ratio  detaching CASes / MCAS operations
//   cas_per_mcas  CAS instructions per MCAS operation (failed ones too)
//   mcas_success  successful / attempted MCAS operations
//   n_*           the raw totals the ratios come from; n_desc_waits counts
//                 mcas_desc_begin() calls that returned -EAGAIN (the loop
//                 yields and tries again)
// After each run, thread 0 checks that the words sum to 8 * k * (successful
// RMWs so far): a lost or doubled update fails the run.
//
// Run (the sweep takes about a minute):
//   bazel run -c opt //benchmarks:mcas_array_bench --
//       --benchmark_out=$PWD/array.json --benchmark_out_format=json
// (one command line; bazel run starts in the runfiles tree, hence $PWD)
// or benchmarks/run_mcas.sh for both benchmarks plus the ratio report.
// --benchmark_min_time defaults to 0.3 s; --benchmark_filter=size:10/ etc.
// picks a subset.
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

#include <benchmark/benchmark.h>

#include <mcas/mcas.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "benchmarks/bench_util.h"
#include "benchmarks/mcas_bench.h"

namespace {

using mcasbench::Counts;
using mcasbench::Variant;

// Words per MCAS (the thesis's k).
constexpr int kWordsPerOp = 4;
// Added to each word by a successful RMW.
constexpr uint64_t kIncrement = 8;

// The shared state of one configuration (variant, N, threads): the array,
// the MCAS instance and, when persistent, the pool holding both. Kept
// across Google Benchmark's trial runs of the same configuration.
struct ArrayFixture : mcasbench::McasFixture {
	using Handle = mcas_thread;
	using Meter = mcasbench::ThreadMeter;

	size_t n = 0;
	uint64_t *vwords = nullptr; // volatile array (aligned_alloc), else null
	uint64_t *words = nullptr;
	uint64_t expected_sum = 0; // what the words must sum to

	int Create(const Variant *v, size_t nwords)
	{
		n = nwords;
		// Persistent: the root object holds the array, then the MCAS area.
		const size_t array_bytes = bench::Align64(n * sizeof(uint64_t));
		int ret = CreateMcas(*v, array_bytes);

		if (ret != 0)
			return ret;
		if (v->persistent) {
			words = reinterpret_cast<uint64_t *>(pool.root());
			return 0;
		}
		vwords = static_cast<uint64_t *>(aligned_alloc(64, array_bytes));
		if (vwords == nullptr)
			return Fail(-ENOMEM, "aligned_alloc");
		std::fill(vwords, vwords + array_bytes / sizeof(uint64_t), 0);
		words = vwords;
		return 0;
	}

	std::string Register(mcas_thread **t)
	{
		return bench::ErrorOf(mcas_thread_register(m, t), "mcas_thread_register");
	}
	void Unregister(mcas_thread **t) { mcas_thread_unregister(t); }

	void Account() { expected_sum += kIncrement * kWordsPerOp * total.ops; }

	// The words must hold every successful increment.
	std::string Check(mcas_thread *t)
	{
		uint64_t sum = 0;

		for (size_t i = 0; i < n; i++)
			sum += mcas_read(t, &words[i]);
		if (sum == expected_sum)
			return "";
		return "array sum " + std::to_string(sum) + " != expected " +
			std::to_string(expected_sum) + " (lost or doubled update)";
	}

	void Report(benchmark::State &state) const
	{
		mcasbench::ReportCommon(state, total, span_s);
		state.counters["size"] = static_cast<double>(n);
	}

	~ArrayFixture() { free(vwords); }
};

// kWordsPerOp distinct indices below @n, uniformly (rejection: n >= 10).
void PickDistinct(bench::Rng *rng, size_t n, size_t *idx)
{
	for (int i = 0; i < kWordsPerOp; i++) {
		bool dup;
		do {
			idx[i] = rng->Below(n);
			dup = false;
			for (int j = 0; j < i; j++)
				dup |= idx[j] == idx[i];
		} while (dup);
	}
}

void BM_Array(benchmark::State &state, const Variant *v, size_t n)
{
	bench::ThreadRun<ArrayFixture> run(state, v, n);
	ArrayFixture *f = run.fixture();
	mcas_thread *t = run.handle();
	bench::Rng rng(run.Seed());
	Counts c;

	for (auto _ : state) {
		size_t idx[kWordsPerOp];
		uint64_t val[kWordsPerOp];
		mcas_desc *d;

		c.attempts++;
		PickDistinct(&rng, n, idx);
		for (int i = 0; i < kWordsPerOp; i++)
			val[i] = mcas_read(t, &f->words[idx[i]]);
		int ret = mcas_desc_begin(t, &d);
		if (ret == -EAGAIN) {
			// Every descriptor waits for a grace period: a preempted
			// thread is inside an operation. Let it run.
			sched_yield();
			continue;
		}
		for (int i = 0; ret == 0 && i < kWordsPerOp; i++)
			ret = mcas_desc_add(d, &f->words[idx[i]], val[i], val[i] + kIncrement);
		if (ret == 0)
			ret = mcas_desc_execute(d);
		else
			mcas_desc_abandon(d);
		if (ret < 0) {
			c.errors++;
			// Ends the loop at its next check (and keeps the
			// threads' start/stop barrier balanced, unlike break).
			state.SkipWithError(bench::ErrorOf(ret, "mcas").c_str());
			continue;
		}
		c.ops += static_cast<uint64_t>(ret);
	}
	run.Finish(&c);
}

// Sizes, then thread counts, then variants: the variants of one
// configuration run back to back.
void RegisterAll()
{
	static const size_t kSizes[] = { 10, 100, 1000 };

	for (size_t n : kSizes)
		mcasbench::RegisterVariants("array", "/size:" + std::to_string(n), BM_Array, n);
}

} // namespace

int main(int argc, char **argv)
{
	return bench::Main(argc, argv, { "mcas_array_bench", "MCAS_BENCH_POOL_DIR", RegisterAll,
		mcasbench::AddContext, bench::ThreadRun<ArrayFixture>::Release });
}
