// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/mcas_bench.h -- what the MCAS benchmarks (mcas_array_bench.cc,
// dll_bench.cc) share on top of bench_util.h: the four algorithm variants
// measured side by side, their mcas_config, per-thread counts (pm_cost +
// mcas_stats), a fixture base holding the variant's MCAS instance, the
// registration of every variant, the counters both report, and their
// context.
#ifndef BENCHMARKS_MCAS_BENCH_H
#define BENCHMARKS_MCAS_BENCH_H

#include <benchmark/benchmark.h>

#include <cerrno>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <mcas/mcas.h>
#include <pm/cost.h>
#include <pm/pool.h>

#include "benchmarks/bench_util.h"

namespace mcasbench {

using bench::Ratio;

// One MCAS algorithm in one memory mode. Each persistent-or-volatile pair is
// a thesis algorithm (AOPT) and the baseline it is compared against.
struct Variant {
	const char *label;       // benchmark name component, e.g. "aopt-vol"
	mcas_algorithm alg;
	bool persistent;
};

// Registration order is measurement order: each AOPT variant runs right
// before its baseline on the same configuration, so a ratio compares two
// runs taken seconds apart on the same machine state.
inline const std::vector<Variant> &Variants()
{
	static const std::vector<Variant> v = {
		{ "aopt-vol", MCAS_ALG_AOPT, false },
		{ "harris-vol", MCAS_ALG_HARRIS, false },
		{ "aopt-pm", MCAS_ALG_AOPT, true },
		{ "pmwcas-pm", MCAS_ALG_PMWCAS, true },
	};
	return v;
}

// Thread slots per MCAS instance: 8 workers, the main thread's setup
// handle, and slack. Keeps the persistent area small (~4.7 MB with the
// default 512 descriptors per thread).
constexpr unsigned kMaxThreads = 16;

// The library's defaults except max_threads. For diagnosis only, the
// environment may override two tunables (headline runs leave them unset):
//   MCAS_BENCH_DESCS_PER_THREAD      mcas_config.descs_per_thread
//   MCAS_BENCH_READ_DETACH_ONE_IN    mcas_config.read_detach_one_in
inline mcas_config Config(const Variant &v)
{
	mcas_config c;
	mcas_config_init(&c);
	c.algorithm = v.alg;
	c.max_threads = kMaxThreads;
	// reclaim_batch stays 0: the library derives it from descs_per_thread.
	c.descs_per_thread =
		bench::EnvUnsigned("MCAS_BENCH_DESCS_PER_THREAD", c.descs_per_thread);
	c.read_detach_one_in =
		bench::EnvUnsigned("MCAS_BENCH_READ_DETACH_ONE_IN", c.read_detach_one_in);
	return c;
}

// What one thread did in the timed loop, and the sum over a run's threads.
struct Counts {
	uint64_t ops = 0;        // benchmark operations (array: successful RMWs)
	uint64_t attempts = 0;   // loop iterations
	uint64_t updates = 0;    // list: insert/remove calls that changed the set
	uint64_t inserted = 0;   // list: successful inserts
	uint64_t removed = 0;    // list: successful removes
	uint64_t errors = 0;     // other negative returns (see the run's error)
	pm_cost cost {};         // pm_cost diff: CAS, flushes, fences
	mcas_stats st {};        // mcas_stats diff
};

using ThreadMeter = bench::ThreadMeter<const mcas_thread, mcas_stats, mcas_thread_stats>;

// A fixture (bench::ThreadRun) whose object works on the variant's MCAS
// instance m: a volatile one, or a persistent one in a new pool whose root
// object holds the benchmark's own data first.
struct McasFixture : bench::FixtureBase<Counts> {
	mcas *m = nullptr;

	// Creates m for variant @v; if persistent, in a new pool after
	// @front_bytes (a multiple of 64) of the root object. Returns 0 or
	// the error (in error).
	int CreateMcas(const Variant &v, size_t front_bytes)
	{
		const mcas_config cfg = Config(v);
		int ret;

		if (!v.persistent) {
			ret = mcas_new(&m, &cfg);
			return ret == 0 ? 0 : Fail(ret, "mcas_new");
		}
		const size_t area = mcas_pmem_area_size(&cfg);
		if (area == 0)
			return Fail(-EINVAL, "mcas_pmem_area_size");
		ret = CreatePool(front_bytes + area);
		if (ret != 0)
			return ret;
		ret = mcas_pmem_create(&m, pool.get(), pool.off(pool.root() + front_bytes), &cfg);
		return ret == 0 ? 0 : Fail(ret, "mcas_pmem_create");
	}

	~McasFixture() { mcas_close(&m); }
};

// Registers @fn(state, &variant, @args...) as "@prefix/<variant>@config"
// for every thread count and, innermost, every variant: the variants of
// one configuration run back to back.
template <class Fn, class... Args>
void RegisterVariants(const std::string &prefix, const std::string &config, Fn fn,
	const Args &...args)
{
	for (int threads : bench::ThreadCounts())
		for (const Variant &v : Variants())
			bench::Register(prefix + "/" + v.label + config, threads, fn, &v, args...);
}

// Registers @fn(state, variant, size, read_pct) for the thesis's data-
// structure sweep (sect. 5.7): as "<prefix>/<variant>/size:S/read:R" for
// every S of @sizes and R of 50/80/98/100 % lookups, through
// RegisterVariants() (sizes, read percentages, thread counts, then the
// variants of one configuration back to back).
template <class Fn>
void RegisterSizeReadSweep(const std::string &prefix, std::initializer_list<int> sizes, Fn fn)
{
	static const int kReadPcts[] = { 50, 80, 98, 100 };

	for (int size : sizes)
		for (int read_pct : kReadPcts)
			RegisterVariants(prefix,
				"/size:" + std::to_string(size) + "/read:" + std::to_string(read_pct),
				fn, size, read_pct);
}

// Sets the counters every MCAS benchmark reports, from a run's totals, on
// thread 0's State (the only thread that sets counters, so Google
// Benchmark's per-thread sum is the value). Per-op counters divide by
// @c.ops: successful read-modify-writes (array) or all operations (list);
// ops_per_s divides them by the run's span @span_s (bench_util.h).
inline void ReportCommon(benchmark::State &state, const Counts &c, double span_s)
{
	const double ops = static_cast<double>(c.ops);
	const double mcas = static_cast<double>(c.st.mcas);

	state.counters["ops_per_s"] = bench::PerSecond(ops, span_s);
	state.counters["cas_per_op"] = Ratio(c.cost.n[PM_COST_CAS], ops);
	state.counters["fence_per_op"] = Ratio(c.cost.n[PM_COST_FENCE], ops);
	state.counters["flush_per_op"] = Ratio(c.cost.n[PM_COST_FLUSH], ops);
	state.counters["help_ratio"] = Ratio(c.st.helps, mcas);
	state.counters["detach_ratio"] = Ratio(c.st.detach_cas, mcas);
	state.counters["cas_per_mcas"] = Ratio(c.cost.n[PM_COST_CAS], mcas);
	state.counters["mcas_success"] = Ratio(c.st.succeeded, mcas);
	// Raw totals, so the report can recompute any ratio.
	state.counters["n_ops"] = ops;
	state.counters["n_mcas"] = mcas;
	state.counters["n_cas"] = static_cast<double>(c.cost.n[PM_COST_CAS]);
	state.counters["n_fence"] = static_cast<double>(c.cost.n[PM_COST_FENCE]);
	state.counters["n_flush"] = static_cast<double>(c.cost.n[PM_COST_FLUSH]);
	state.counters["n_helps"] = static_cast<double>(c.st.helps);
	state.counters["n_detach_cas"] = static_cast<double>(c.st.detach_cas);
	state.counters["n_read_detach"] = static_cast<double>(c.st.read_detaches);
	// mcas_desc_begin() found every descriptor of the thread waiting for a
	// grace period (-EAGAIN): some thread was preempted inside an operation.
	state.counters["n_desc_waits"] = static_cast<double>(c.st.desc_waits);
}

// The context entries of both benchmarks: the mcas_config tunables used.
inline void AddContext()
{
	mcas_config c = Config(Variants()[0]);
	benchmark::AddCustomContext("mcas_descs_per_thread", std::to_string(c.descs_per_thread));
	benchmark::AddCustomContext("mcas_read_detach_one_in",
		std::to_string(c.read_detach_one_in));
}

} // namespace mcasbench

#endif
