// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/dll_bench.cc -- the doubly-linked-list benchmark of the thesis's
// MCAS evaluation (seed 003, sect. 5.7.3, Fig. 5.2; App. D.2).
//
// What it measures. An ordered set of integers, the MCAS doubly-linked list
// of ds/dll.h (insert = one 2-word MCAS, remove = one 3-word MCAS, lookup =
// reads only), filled with S random keys (S = 5, 50, 500) drawn from a key
// range of 2S. Each of 1, 2, 4 or 8 threads loops: pick a key uniformly in
// the range and an operation by the read percentage R (50, 80, 98, 100;
// the updates split evenly between insert and remove, so the size stays
// near S). The same four variants as the array benchmark run back to back
// per configuration: aopt-vol vs harris-vol, aopt-pm vs pmwcas-pm (the
// persistent list and its MCAS area in one pm/ pool on /dev/shm with real
// flushes, PMEM_IS_PMEM_FORCE=1).
//
// Counters (totals over the run's threads, set by thread 0):
//   ops_per_s     operations per second (every lookup, insert and remove,
//                 whether or not it changed the set; over the run's span,
//                 bench_util.h)
//   cas_per_op    CAS instructions (pm_cost) per operation
//   cas_per_mcas  CAS instructions per MCAS operation (uncontended: AOPT 3
//                 per insert and 4 per remove, HARRIS 7 and 10)
//   fence_per_op, flush_per_op   persistent fences / flushed lines per op
//   help_ratio    helps / MCAS operations; detach_ratio likewise
//   n_*           raw totals; n_desc_waits: descriptor-pool exhaustion
// After each run, thread 0 runs ds_dll_check() and compares the set's size
// with the initial size plus successful inserts minus successful removes.
//
// Run (the sweep takes a few minutes):
//   bazel run -c opt //benchmarks:dll_bench --
//       --benchmark_out=$PWD/dll.json --benchmark_out_format=json
// (one command line; bazel run starts in the runfiles tree, hence $PWD),
// or benchmarks/run_mcas.sh. --benchmark_min_time defaults to 0.3 s;
// --benchmark_filter='size:50/read:80/' picks a subset.
#include <cerrno>
#include <cstdint>
#include <string>

#include <benchmark/benchmark.h>

#include <ds/dll.h>
#include <mcas/mcas.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "benchmarks/bench_util.h"
#include "benchmarks/mcas_bench.h"

namespace {

using mcasbench::Counts;
using mcasbench::Variant;

// ThreadMeter's statistics of a list handle: those of its MCAS handle.
void ListStats(ds_dll_thread *h, mcas_stats *st)
{
	mcas_thread_stats(ds_dll_thread_mcas(h), st);
}

// The list, its MCAS instance and, when persistent, the pool holding both,
// for one configuration (variant, size, read %, threads). Kept across
// Google Benchmark's trial runs of the same configuration.
struct ListFixture : mcasbench::McasFixture {
	using Handle = ds_dll_thread;
	using Meter = bench::ThreadMeter<ds_dll_thread, mcas_stats, ListStats>;

	int size = 0, read_pct = 0;
	ds_dll *l = nullptr;
	uint64_t expected = 0; // keys the set must hold after a run

	int Create(const Variant *v, int sz, int rd)
	{
		size = sz;
		read_pct = rd;
		if (!v->persistent) {
			int ret = CreateMcas(*v, 0);
			if (ret != 0)
				return ret;
			ret = ds_dll_new(&l, m);
			return ret == 0 ? Fill() : Fail(ret, "ds_dll_new");
		}
		// Nodes: the whole key range, plus what each thread may hold
		// back: up to 64 cached and, while a preempted thread delays
		// grace periods, a few descriptor pools' worth of retired ones.
		// The root object holds the list's area, then the MCAS area.
		const uint64_t capacity = 2 * static_cast<uint64_t>(size) +
			static_cast<uint64_t>(mcasbench::kMaxThreads) *
				(64 + 3 * mcasbench::Config(*v).descs_per_thread);
		const size_t dll_bytes = bench::Align64(ds_dll_pmem_area_size(capacity));
		if (dll_bytes == 0)
			return Fail(-EINVAL, "ds_dll_pmem_area_size");
		int ret = CreateMcas(*v, dll_bytes);
		if (ret != 0)
			return ret;
		ret = ds_dll_pmem_create(&l, m, pool.get(), pool.off(pool.root()), capacity);
		return ret == 0 ? Fill() : Fail(ret, "ds_dll_pmem_create");
	}

	// Inserts @size distinct random keys of the range, from the main thread.
	int Fill()
	{
		ds_dll_thread *h;
		int ret = ds_dll_thread_register(l, &h);

		if (ret != 0)
			return Fail(ret, "ds_dll_thread_register");
		bench::Rng rng(12345);
		while (ret >= 0 && expected < static_cast<uint64_t>(size)) {
			ret = ds_dll_insert(h, 1 + rng.Below(2 * static_cast<uint64_t>(size)));
			if (ret > 0)
				expected++;
		}
		int uret = ds_dll_thread_unregister(&h);
		if (ret < 0)
			return Fail(ret, "ds_dll_insert (fill)");
		return uret == 0 ? 0 : Fail(uret, "ds_dll_thread_unregister");
	}

	// A failure of a ds_dll call, with the list's message.
	int Fail(int ret, const char *what)
	{
		McasFixture::Fail(ret, what);
		error += std::string(" ") + pm_errormsg();
		return ret;
	}

	std::string Register(ds_dll_thread **h)
	{
		return bench::ErrorOf(ds_dll_thread_register(l, h), "ds_dll_thread_register");
	}
	void Unregister(ds_dll_thread **h) { ds_dll_thread_unregister(h); }

	void Account()
	{
		expected += total.inserted;
		expected -= total.removed;
	}

	// ds_dll_check(), and the size against the inserts and removes.
	std::string Check(ds_dll_thread *h)
	{
		char buf[256];
		ds_dll_stats st;
		const char *bad = ds_dll_check(h, &st, buf, sizeof(buf));

		if (bad != nullptr)
			return std::string("ds_dll_check: ") + bad;
		if (st.size != expected)
			return "list holds " + std::to_string(st.size) + " keys, expected " +
				std::to_string(expected);
		return "";
	}

	void Report(benchmark::State &state) const
	{
		mcasbench::ReportCommon(state, total, span_s);
		state.counters["size"] = size;
		state.counters["read_pct"] = read_pct;
		state.counters["n_updates"] = static_cast<double>(total.updates);
	}

	~ListFixture() { ds_dll_close(&l); }
};

void BM_List(benchmark::State &state, const Variant *v, int size, int read_pct)
{
	const uint64_t range = 2 * static_cast<uint64_t>(size);
	// r < read_pct: lookup; r < insert_below: insert; else remove.
	const uint64_t insert_below = static_cast<uint64_t>(read_pct + (100 - read_pct) / 2);
	bench::ThreadRun<ListFixture> run(state, v, size, read_pct);
	ds_dll_thread *h = run.handle();
	bench::Rng rng(run.Seed());
	Counts c;

	for (auto _ : state) {
		const uint64_t key = 1 + rng.Below(range);
		const uint64_t r = rng.Below(100);
		int ret;

		if (r < static_cast<uint64_t>(read_pct)) {
			benchmark::DoNotOptimize(ds_dll_contains(h, key));
			c.ops++;
			continue;
		}
		if (r < insert_below) {
			ret = ds_dll_insert(h, key);
			c.inserted += ret > 0;
		} else {
			ret = ds_dll_remove(h, key);
			c.removed += ret > 0;
		}
		if (ret < 0) {
			c.errors++;
			// Ends the loop at its next check (and keeps the
			// threads' start/stop barrier balanced, unlike break).
			state.SkipWithError(bench::ErrorOf(ret, "ds_dll").c_str());
			continue;
		}
		c.ops++;
	}
	c.attempts = c.ops;
	c.updates = c.inserted + c.removed;
	run.Finish(&c);
}

// Sizes, read percentages, thread counts, then variants: the variants of
// one configuration run back to back.
void RegisterAll()
{
	mcasbench::RegisterSizeReadSweep("dll", { 5, 50, 500 }, BM_List);
}

} // namespace

int main(int argc, char **argv)
{
	return bench::Main(argc, argv, { "dll_bench", "MCAS_BENCH_POOL_DIR", RegisterAll,
		mcasbench::AddContext, bench::ThreadRun<ListFixture>::Release });
}
