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
//                 whether or not it changed the set; wall clock)
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
#include <memory>
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

// The list, its MCAS instance and, when persistent, the pool holding both,
// for one configuration (variant, size, read %, threads). Kept across
// Google Benchmark's trial runs of the same configuration.
struct ListFixture {
	const Variant *v = nullptr;
	int size = 0, read_pct = 0, threads = 0;
	bench::BenchPool pool;
	mcas *m = nullptr;
	ds_dll *l = nullptr;
	std::string error;      // setup failure: every thread skips the run
	uint64_t expected = 0;  // keys the set must hold after a run
	uint64_t runs = 0;

	std::mutex mu;
	Counts total; // this run's, under mu

	int Create(const Variant &var, int sz, int rd, int nthreads)
	{
		v = &var;
		size = sz;
		read_pct = rd;
		threads = nthreads;
		mcas_config cfg = mcasbench::Config(var);
		int ret;

		if (!var.persistent) {
			ret = mcas_create(&m, &cfg);
			if (ret != 0)
				return Fail(ret, "mcas_create");
			ret = ds_dll_create(&l, m);
			if (ret != 0)
				return Fail(ret, "ds_dll_create");
			return Fill();
		}
		// Nodes: the whole key range, plus what each thread may hold
		// back: up to 64 cached and, while a preempted thread delays
		// grace periods, a few descriptor pools' worth of retired ones.
		const uint64_t capacity = 2 * static_cast<uint64_t>(size) +
			static_cast<uint64_t>(mcasbench::kMaxThreads) * (64 + 3 * cfg.descs_per_thread);
		const size_t dll_bytes = bench::Align64(ds_dll_pmem_area_size(capacity));
		const size_t mcas_bytes = mcas_pmem_area_size(&cfg);
		if (dll_bytes == 0 || mcas_bytes == 0)
			return Fail(-EINVAL, "area size");
		ret = pool.Create(dll_bytes + mcas_bytes, &error);
		if (ret != 0)
			return ret;
		if (pm_pool_durability(pool.get()) != PM_DURABILITY_PMEM)
			return Fail(PM_E_NOT_PMEM, "pool durability is not PMEM");
		char *root = pool.root();
		ret = mcas_pmem_create(&m, pool.get(), pool.off(root + dll_bytes), &cfg);
		if (ret != 0)
			return Fail(ret, "mcas_pmem_create");
		ret = ds_dll_pmem_create(&l, m, pool.get(), pool.off(root), capacity);
		if (ret != 0)
			return Fail(ret, "ds_dll_pmem_create");
		return Fill();
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

	int Fail(int ret, const char *what)
	{
		error = std::string(what) + ": " + pm_strerror(ret) + " " + ds_dll_errormsg();
		return ret;
	}

	~ListFixture()
	{
		ds_dll_destroy(&l);
		mcas_destroy(&m);
		pool.Close();
	}
};

std::unique_ptr<ListFixture> g_fixture;
bench::Barrier g_barrier;

// Thread 0, before a run: reuse the fixture of the same configuration (a
// later trial run), or replace it.
ListFixture *PrepareFixture(const Variant &v, int size, int read_pct, int threads)
{
	ListFixture *f = g_fixture.get();

	if (f != nullptr && f->v == &v && f->size == size && f->read_pct == read_pct &&
			f->threads == threads)
		return f;
	g_fixture.reset(); // one pool at a time
	g_fixture = std::make_unique<ListFixture>();
	g_fixture->Create(v, size, read_pct, threads);
	return g_fixture.get();
}

// Thread 0, after a run, with every other thread quiescent at the barrier.
std::string CheckList(ListFixture *f, ds_dll_thread *h)
{
	char buf[256];
	ds_dll_stats st;
	const char *bad = ds_dll_check(h, &st, buf, sizeof(buf));

	if (bad != nullptr)
		return std::string("ds_dll_check: ") + bad;
	if (st.size != f->expected)
		return "list holds " + std::to_string(st.size) + " keys, expected " +
			std::to_string(f->expected);
	return "";
}

void BM_List(benchmark::State &state, const Variant *v, int size, int read_pct)
{
	const int nthreads = state.threads();
	const bool leader = state.thread_index() == 0;
	const uint64_t range = 2 * static_cast<uint64_t>(size);
	// r < read_pct: lookup; r < insert_below: insert; else remove.
	const uint64_t insert_below = static_cast<uint64_t>(read_pct + (100 - read_pct) / 2);

	if (leader)
		PrepareFixture(*v, size, read_pct, nthreads);
	g_barrier.Wait(nthreads);
	ListFixture *f = g_fixture.get();
	std::string err = f->error;
	ds_dll_thread *h = nullptr;
	if (err.empty()) {
		int ret = ds_dll_thread_register(f->l, &h);
		if (ret != 0)
			err = std::string("ds_dll_thread_register: ") + pm_strerror(ret);
	}
	if (!err.empty())
		state.SkipWithError(err.c_str()); // the loop below runs 0 times

	bench::Rng rng((f->runs + 1) * 1000003 + static_cast<uint64_t>(state.thread_index()));
	mcasbench::ThreadMeter meter;
	mcas_thread *t = h != nullptr ? ds_dll_thread_mcas(h) : nullptr;
	Counts c;
	if (t != nullptr)
		meter.Start(t);
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
			state.SkipWithError((std::string("ds_dll: ") + pm_strerror(ret)).c_str());
			continue;
		}
		c.ops++;
	}
	c.attempts = c.ops;
	c.updates = c.inserted + c.removed;
	if (t != nullptr)
		meter.Stop(t, &c);
	{
		std::lock_guard<std::mutex> lk(f->mu);
		bench::AddCounters(&f->total, c);
	}
	g_barrier.Wait(nthreads); // every thread's counts are in f->total
	if (leader) {
		f->runs++;
		f->expected += f->total.inserted;
		f->expected -= f->total.removed;
		if (h != nullptr && f->total.errors == 0) {
			std::string bad = CheckList(f, h);
			if (!bad.empty())
				state.SkipWithError(bad.c_str());
		}
		mcasbench::ReportCommon(state, f->total);
		state.counters["size"] = size;
		state.counters["read_pct"] = read_pct;
		state.counters["n_updates"] = static_cast<double>(f->total.updates);
		f->total = Counts();
	}
	g_barrier.Wait(nthreads); // the check ran while every handle was idle
	if (h != nullptr)
		ds_dll_thread_unregister(&h);
}

// Sizes, read percentages, thread counts, then variants: the variants of
// one configuration run back to back.
void RegisterAll()
{
	static const int kSizes[] = { 5, 50, 500 };
	static const int kReadPcts[] = { 50, 80, 98, 100 };

	for (int size : kSizes)
		for (int read_pct : kReadPcts)
			for (int threads : bench::ThreadCounts())
				for (const Variant &v : mcasbench::Variants()) {
					std::string name = std::string("dll/") + v.label +
						"/size:" + std::to_string(size) +
						"/read:" + std::to_string(read_pct);
					benchmark::RegisterBenchmark(name.c_str(), BM_List, &v, size,
						read_pct)
						->Threads(threads)
						->UseRealTime();
				}
}

void Cleanup()
{
	g_fixture.reset();
}

} // namespace

int main(int argc, char **argv)
{
	return bench::Main(argc, argv, { "dll_bench", "MCAS_BENCH_POOL_DIR", RegisterAll,
		mcasbench::AddContext, Cleanup });
}
