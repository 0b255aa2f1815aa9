// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/reclaim_bench.cc -- the thesis's reclamation benchmark (sect.
// 6.7.2-6.7.3, Fig. 6.6): the three lock-free sets of ds/ under every
// scheme of reclaim/reclaim.h, in one process, back to back.
//
// What it measures. For each structure (list: Harris-Michael, 2000 keys of
// the range [0, 4000); skiplist: Fraser, 20000 of 40000, 16 levels; bst:
// Natarajan-Mittal, 2,000,000 of 4,000,000; see benchmarks/reclaim_sets.h
// for the sizes' environment overrides), each thread count (1, 2, 4, 8: the
// machine has 2 cores, 4 and 8 preempt) and each scheme -- none (leaky, the
// baseline) first, then qsbr, ebr, hp, cadence, qsense, urcu-qsbr right
// after it, so every ratio to none is of runs made seconds apart -- a fresh
// domain and structure, filled by one thread (untimed; fill_s says how
// long), then the timed loop: every thread repeats one operation of the
// thesis's mix, a uniform key of the range and 50 % contains, 25 % insert,
// 25 % remove.
//
// Memory. The binary is linked with jemalloc (//benchmarks:reclaim_bench;
// the context's "allocator" says which malloc the process got): the
// thesis's code used its own per-thread allocator, and under the
// reclamation schemes most nodes are freed by another thread than the one
// that allocated them, the case glibc's malloc handles worst. The same
// allocator serves every scheme. //benchmarks:reclaim_bench_glibc is the
// same source with glibc's malloc, for comparison.
//
// Counters (of the run Google Benchmark reports, set by thread 0; the
// reclaim_stats counters are the domain's, differences over the run):
//   ops_per_s         operations per second over the run's span
//                     (bench_util.h; every operation)
//   fence_per_op      full fences of protect / op_begin per operation
//   qs_per_op         quiescent states declared per operation
//   scan_per_op       hazard-pointer scans per operation
//   retired_per_op, freed_per_op   nodes retired / freed per operation
//   pending_end       retired - freed at the end of the run (a snapshot
//                     with every thread between operations)
//   pending_max       the highest pending seen after a retire, over the
//                     domain's life (the fill and every trial run of the
//                     configuration)
//   mode_switches     QSense switches in both directions during the run
//                     (to_fallback, to_fast separately); fallback_end: 1 if
//                     QSense was on its fallback path at the end
//   size_end, size_expected   ds_*_size() after the run (checked runs
//                     only), and the initial size plus successful inserts
//                     minus successful removes
//   R, C              the domain's scan and fallback thresholds at the end
//                     of the run (library defaults, which grow with the
//                     threads registered so far)
//   fill_s, check_s   seconds the fill and the last run's check took
//                     (untimed; run-time budgeting)
//   n_*               raw totals
// After the run Google Benchmark reports, thread 0, while every other thread
// waits between operations, runs the structure's check() and compares its
// size with size_expected: a broken invariant or a lost or doubled update
// fails the run (SkipWithError) instead of producing a number (counter
// checked = 1). The trial runs before it, on the same structure, are not
// checked on their own -- their effects are in the structure the last check
// walks, and walking a 2,000,000-key BST takes 0.4 s: a run is checked when
// its timed loop took at least half of --benchmark_min_time, which only the
// reported run does (Google Benchmark grows the trials until one takes the
// min time).
//
// Run (the full sweep, 84 configurations: see benchmarks/run_reclaim.sh
// for the time it takes):
//   bazel run -c opt //benchmarks:reclaim_bench --
//       --benchmark_out=$PWD/reclaim.json --benchmark_out_format=json
// (one command line) or benchmarks/run_reclaim.sh for the report.
// --benchmark_min_time defaults to 0.3 s; --benchmark_filter=bst/ or
// --benchmark_filter='list/(none|qsense)/' picks a subset;
// RECLAIM_BENCH_BST_SIZE=20000 shrinks the BST for a smoke run.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <benchmark/benchmark.h>

#include <pm/cost.h>

#include "benchmarks/bench_util.h"
#include "benchmarks/reclaim_sets.h" // and <reclaim/reclaim.h>, see there

// jemalloc's control interface, present when the binary is linked with it
// (jemalloc then also provides malloc and free).
extern "C" int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
	size_t newlen) __attribute__((weak));

namespace {

using bench::Ratio;
using rsets::Structure;

// --benchmark_min_time in seconds (bench::Main's default 0.3 unless given).
double g_min_time = 0.3;

// Nothing is metered per thread: reclaim_stats are the domain's.
struct NoStats {
	uint64_t unused;
};
void NoThreadStats(reclaim_thread *, NoStats *st)
{
	st->unused = 0;
}

// What one thread did in the timed loop, and the sum over a run's threads.
struct Counts {
	uint64_t ops = 0, inserted = 0, removed = 0, errors = 0;
	pm_cost cost {};
	NoStats st {};
};

// The shared state of one configuration (structure, scheme, threads): a
// fresh domain and structure, filled. Kept across Google Benchmark's trial
// runs of the same configuration.
struct Fixture : bench::FixtureBase<Counts> {
	using Handle = reclaim_thread;
	using Meter = bench::ThreadMeter<reclaim_thread, NoStats, NoThreadStats>;

	rsets::Instance inst;
	uint64_t expect = 0;              // keys the set must hold after a run
	double fill_s = 0;                // how long the fill took
	double run_s = 0;                 // the current run's timed loop, thread 0's clock
	mutable bool checked = false;     // whether Check() checked this run
	mutable double check_s = 0;       // how long the last check took
	mutable uint64_t size_end = 0;    // the size it found
	mutable reclaim_stats prev {};    // the domain's counters at the last run's end

	int Create(Structure st, enum reclaim_scheme scheme)
	{
		auto t0 = std::chrono::steady_clock::now();
		expect = rsets::InitialSize(st);
		error = inst.Open(st, scheme, expect);
		fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		if (!error.empty())
			return -1;
		reclaim_domain_stats(inst.domain(), &prev);
		return 0;
	}

	std::string Register(reclaim_thread **t)
	{
		return rsets::Err(reclaim_thread_register(inst.domain(), t),
			"reclaim_thread_register");
	}
	void Unregister(reclaim_thread **t)
	{
		reclaim_thread_unregister(t);
	}

	void Account() { expect += total.inserted - total.removed; }

	// Only after a run of at least half the min time (see the top of the
	// file); the others are trial runs on the same structure.
	std::string Check(reclaim_thread *) const
	{
		checked = inst.set() != nullptr && run_s >= 0.5 * g_min_time;
		if (!checked)
			return "";
		auto t0 = std::chrono::steady_clock::now();
		std::string bad = inst.Check(expect, &size_end);
		check_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		return bad;
	}

	void Report(benchmark::State &state) const;
};

void Fixture::Report(benchmark::State &state) const
{
	const Counts &c = total;
	const double ops = static_cast<double>(c.ops);
	reclaim_stats now;

	if (inst.domain() == nullptr)
		return;
	reclaim_domain_stats(inst.domain(), &now);
	auto d = [&](uint64_t reclaim_stats::*f) {
		return static_cast<double>(now.*f - prev.*f);
	};
	state.counters["ops_per_s"] = bench::PerSecond(ops, span_s);
	state.counters["fence_per_op"] = Ratio(d(&reclaim_stats::fences), ops);
	state.counters["qs_per_op"] = Ratio(d(&reclaim_stats::quiescent_states), ops);
	state.counters["scan_per_op"] = Ratio(d(&reclaim_stats::scans), ops);
	state.counters["retired_per_op"] = Ratio(d(&reclaim_stats::retired), ops);
	state.counters["freed_per_op"] = Ratio(d(&reclaim_stats::freed), ops);
	state.counters["pending_end"] = static_cast<double>(now.pending);
	state.counters["pending_max"] = static_cast<double>(now.pending_max);
	state.counters["mode_switches"] = d(&reclaim_stats::to_fallback) + d(&reclaim_stats::to_fast);
	state.counters["to_fallback"] = d(&reclaim_stats::to_fallback);
	state.counters["to_fast"] = d(&reclaim_stats::to_fast);
	state.counters["fallback_end"] = now.mode == RECLAIM_MODE_FALLBACK ? 1 : 0;
	if (checked)
		state.counters["size_end"] = static_cast<double>(size_end);
	state.counters["size_expected"] = static_cast<double>(expect);
	state.counters["fill_s"] = fill_s;
	state.counters["checked"] = checked ? 1 : 0;
	state.counters["check_s"] = checked ? check_s : 0;
	state.counters["n_ops"] = ops;
	state.counters["n_inserted"] = static_cast<double>(c.inserted);
	state.counters["n_removed"] = static_cast<double>(c.removed);
	state.counters["n_retired"] = d(&reclaim_stats::retired);
	state.counters["n_freed"] = d(&reclaim_stats::freed);
	state.counters["n_fences"] = d(&reclaim_stats::fences);
	state.counters["n_qs"] = d(&reclaim_stats::quiescent_states);
	state.counters["n_scans"] = d(&reclaim_stats::scans);
	state.counters["n_epochs"] = d(&reclaim_stats::epochs);
	state.counters["n_rooster_wakeups"] = d(&reclaim_stats::rooster_wakeups);
	state.counters["n_evicted"] = static_cast<double>(now.evicted);
	reclaim_config cfg;
	reclaim_domain_config(inst.domain(), &cfg); // R and C grow with the threads seen
	state.counters["R"] = cfg.scan_threshold;
	state.counters["C"] = cfg.fallback_threshold;
	prev = now;
}

void BM_Set(benchmark::State &state, Structure st, enum reclaim_scheme scheme)
{
	bench::ThreadRun<Fixture> run(state, st, scheme);
	Fixture *f = run.fixture();
	reclaim_thread *t = run.handle();
	bench::Rng rng(run.Seed());
	rsets::OpCounts oc;
	const rsets::SetOps &o = rsets::Ops(st);
	void *s = f->inst.set();
	const uint64_t range = f->inst.range();
	auto t0 = std::chrono::steady_clock::now();

	for (auto _ : state) {
		rsets::MixedOp(o, s, t, range, &rng, &oc);
		if (oc.errors != 0) {
			state.SkipWithError(rsets::Err(oc.last_error, "operation").c_str());
			continue; // the loop ends after SkipWithError
		}
	}
	if (state.thread_index() == 0)
		f->run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	Counts c;
	c.ops = oc.ops;
	c.inserted = oc.inserted;
	c.removed = oc.removed;
	c.errors = oc.errors;
	run.Finish(&c);
}

// Structures, then thread counts, then schemes, none first: every scheme
// of a (structure, threads) runs right after its baseline.
void RegisterAll()
{
	for (Structure st : { Structure::kList, Structure::kSkipList, Structure::kBst })
		for (int threads : bench::ThreadCounts())
			for (enum reclaim_scheme sc : rsets::kSchemes)
				bench::Register(std::string(rsets::Ops(st).name) + "/" +
					reclaim_scheme_name(sc), threads, BM_Set, st, sc);
}

// The malloc the process got: "jemalloc <version>" or "glibc".
std::string Allocator()
{
	const char *v = nullptr;
	size_t len = sizeof(v);

	if (mallctl == nullptr)
		return "glibc";
	if (mallctl("version", &v, &len, nullptr, 0) != 0 || v == nullptr)
		return "jemalloc";
	return std::string("jemalloc ") + v;
}

// The allocator, the sizes and every structure's parameters (R and C are
// the library's defaults, which grow with the threads registered so far, H:
// R = max(64, 2KH), C = 4R + KH; each run reports the values it ended with).
void AddContext()
{
	benchmark::AddCustomContext("allocator", Allocator());
	benchmark::AddCustomContext("workload",
		"50% contains, 25% insert, 25% remove; uniform keys in [0, 2 size)");
	for (Structure st : { Structure::kList, Structure::kSkipList, Structure::kBst }) {
		const rsets::SetOps &o = rsets::Ops(st);
		reclaim_config c = rsets::DomainConfig(RECLAIM_QSENSE, o.hazards);
		char buf[256];
		std::snprintf(buf, sizeof(buf),
			"size %llu range %llu; K %u max_threads %u Q %u T %u us eps %u us; "
			"R, C library defaults",
			static_cast<unsigned long long>(rsets::InitialSize(st)),
			static_cast<unsigned long long>(2 * rsets::InitialSize(st)), c.hazards_per_thread,
			c.max_threads, c.quiescence_threshold, c.rooster_interval_us, c.epsilon_us);
		benchmark::AddCustomContext(std::string("reclaim_") + o.name, buf);
	}
}

} // namespace

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (std::strncmp(argv[i], "--benchmark_min_time=", 21) == 0)
			g_min_time = std::strtod(argv[i] + 21, nullptr); // 0 if unparsable: check all
	return bench::Main(argc, argv,
		{ "reclaim_bench", nullptr, RegisterAll, AddContext,
		bench::ThreadRun<Fixture>::Release });
}
