// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/bench_util.h -- what the MCAS benchmarks (mcas_array_bench.cc,
// dll_bench.cc) share: the four algorithm variants measured side by side,
// a pm/ pool on /dev/shm with real persistent flushes, per-thread counter
// snapshots (pm_cost + mcas_stats) summed across a run's threads, a barrier,
// a per-thread random generator and a main() that defaults to short runs.
//
// Runs are multi-threaded Google Benchmark runs (->Threads(n)): thread 0 is
// the process's main thread and owns the shared fixture; every thread
// registers its own mcas handle before the timed loop and publishes its
// counts after it. Everything outside `for (auto _ : state)` is untimed.
#ifndef BENCHMARKS_BENCH_UTIL_H
#define BENCHMARKS_BENCH_UTIL_H

#include <unistd.h>

#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <mcas/mcas.h>
#include <pm/cost.h>
#include <pm/error.h>
#include <pm/pool.h>

namespace mcasbench {

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

// The thread counts of DESIGN.md sect. 9 (2 cores: 4 and 8 preempt).
inline const std::vector<int> &ThreadCounts()
{
	static const std::vector<int> t = { 1, 2, 4, 8 };
	return t;
}

// Thread slots per MCAS instance: 8 workers, the main thread's setup
// handle, and slack. Keeps the persistent area small (~4.7 MB with the
// default 512 descriptors per thread).
constexpr unsigned kMaxThreads = 16;

// An unsigned from environment variable @name, or @dflt if it is unset or
// not a number.
inline unsigned EnvUnsigned(const char *name, unsigned dflt)
{
	const char *s = std::getenv(name);
	char *end;

	if (s == nullptr || *s == '\0')
		return dflt;
	unsigned long v = std::strtoul(s, &end, 10);
	return *end == '\0' && v <= 1u << 20 ? static_cast<unsigned>(v) : dflt;
}

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
	c.descs_per_thread = EnvUnsigned("MCAS_BENCH_DESCS_PER_THREAD", c.descs_per_thread);
	c.read_detach_one_in = EnvUnsigned("MCAS_BENCH_READ_DETACH_ONE_IN", c.read_detach_one_in);
	return c;
}

// A pool file on a RAM file system, created with PMEM durability: with
// PMEM_IS_PMEM_FORCE=1 every pm_flush() is a real cache-line write-back
// (clwb/clflushopt) and every pm_fence() an sfence, as on an NVDIMM
// (DESIGN.md sect. 4). The file is removed when the pool is closed.
class BenchPool {
 public:
	BenchPool() = default;
	BenchPool(const BenchPool &) = delete;
	BenchPool &operator=(const BenchPool &) = delete;
	~BenchPool() { Close(); }

	// Creates a pool whose root object holds @root_size bytes. Returns 0
	// or the failing call's code, with a message in *@err.
	int Create(size_t root_size, std::string *err)
	{
		static unsigned seq;
		const char *dir = std::getenv("MCAS_BENCH_POOL_DIR");

		path_ = std::string(dir != nullptr ? dir : "/dev/shm") + "/mcas_bench." +
			std::to_string(getpid()) + "." + std::to_string(seq++) + ".pool";
		unlink(path_.c_str());
		pm_pool_config pc;
		pm_pool_config_init(&pc);
		pc.path = path_.c_str();
		pc.layout = "mcas-bench";
		pc.root_size = root_size;
		// Room for PMDK's heap metadata next to the root object.
		pc.pool_size = root_size + ((size_t)8 << 20);
		if (pc.pool_size < PM_POOL_MIN_SIZE)
			pc.pool_size = PM_POOL_MIN_SIZE;
		pc.durability = PM_DURABILITY_PMEM;
		int ret = pm_pool_create(&pool_, &pc);
		if (ret != 0) {
			*err = "pm_pool_create(" + path_ + "): " + pm_strerror(ret) +
				(ret == PM_E_NOT_PMEM ? " (set PMEM_IS_PMEM_FORCE=1)" : "");
			path_.clear();
			return ret;
		}
		return 0;
	}

	void Close()
	{
		if (pool_ != nullptr)
			pm_pool_close(&pool_);
		if (!path_.empty())
			unlink(path_.c_str());
		path_.clear();
	}

	pm_pool *get() const { return pool_; }
	char *root() const { return static_cast<char *>(pm_pool_root(pool_)); }
	uint64_t off(const void *p) const { return pm_pool_off(pool_, p); }

 private:
	std::string path_;
	pm_pool *pool_ = nullptr;
};

// Rounds @n up to a multiple of 64 (pool areas must be 64-byte aligned).
constexpr size_t Align64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

// xorshift64*: a few cycles per number, per thread, no shared state.
class Rng {
 public:
	explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
	uint64_t Next()
	{
		s_ ^= s_ >> 12;
		s_ ^= s_ << 25;
		s_ ^= s_ >> 27;
		return s_ * 0x2545F4914F6CDD1Dull;
	}
	// Uniform enough in [0, n) for n far below 2^32.
	uint64_t Below(uint64_t n) { return (Next() >> 32) % n; }

 private:
	uint64_t s_;
};

// A reusable barrier for the threads of one run (Google Benchmark gives no
// barrier outside its timed loop). Every thread of a run passes the same @n.
class Barrier {
 public:
	void Wait(int n)
	{
		std::unique_lock<std::mutex> lk(mu_);
		uint64_t gen = gen_;

		if (++count_ == n) {
			count_ = 0;
			gen_++;
			cv_.notify_all();
			return;
		}
		cv_.wait(lk, [&] { return gen_ != gen; });
	}

 private:
	std::mutex mu_;
	std::condition_variable cv_;
	int count_ = 0;
	uint64_t gen_ = 0;
};

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

	void Add(const Counts &o)
	{
		ops += o.ops;
		attempts += o.attempts;
		updates += o.updates;
		inserted += o.inserted;
		removed += o.removed;
		errors += o.errors;
		for (int i = 0; i < PM_COST_NCOUNTERS; i++)
			cost.n[i] += o.cost.n[i];
		st.mcas += o.st.mcas;
		st.succeeded += o.st.succeeded;
		st.reads += o.st.reads;
		st.helps += o.st.helps;
		st.detach_cas += o.st.detach_cas;
		st.read_detaches += o.st.read_detaches;
		st.scans += o.st.scans;
		st.grace_periods += o.st.grace_periods;
		st.desc_waits += o.st.desc_waits;
	}
};

// mcas_stats @after - @before, field by field.
inline mcas_stats StatsDiff(const mcas_stats &after, const mcas_stats &before)
{
	mcas_stats d;
	d.mcas = after.mcas - before.mcas;
	d.succeeded = after.succeeded - before.succeeded;
	d.reads = after.reads - before.reads;
	d.helps = after.helps - before.helps;
	d.detach_cas = after.detach_cas - before.detach_cas;
	d.read_detaches = after.read_detaches - before.read_detaches;
	d.scans = after.scans - before.scans;
	d.grace_periods = after.grace_periods - before.grace_periods;
	d.desc_waits = after.desc_waits - before.desc_waits;
	return d;
}

// Snapshots of the calling thread's counters around its timed loop.
class ThreadMeter {
 public:
	void Start(const mcas_thread *t)
	{
		mcas_thread_stats(t, &st0_);
		pm_cost_read_thread(&c0_);
	}
	// Fills @c's cost and st with what happened since Start().
	void Stop(const mcas_thread *t, Counts *c)
	{
		pm_cost c1;
		mcas_stats st1;

		pm_cost_read_thread(&c1);
		mcas_thread_stats(t, &st1);
		pm_cost_diff(&c1, &c0_, &c->cost);
		c->st = StatsDiff(st1, st0_);
	}

 private:
	mcas_stats st0_ {};
	pm_cost c0_ {};
};

inline double Ratio(double num, double den)
{
	return den > 0 ? num / den : 0.0;
}

// Sets the counters every MCAS benchmark reports, from a run's totals, on
// thread 0's State (the only thread that sets counters, so Google
// Benchmark's per-thread sum is the value). Per-op counters divide by
// @c.ops: successful read-modify-writes (array) or all operations (list).
inline void ReportCommon(benchmark::State &state, const Counts &c)
{
	using benchmark::Counter;
	const double ops = static_cast<double>(c.ops);
	const double mcas = static_cast<double>(c.st.mcas);

	state.counters["ops_per_s"] = Counter(ops, Counter::kIsRate);
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

// main() for both benchmarks: forces real persistent flushes on the RAM
// pool (PMEM_IS_PMEM_FORCE=1 unless the caller set it, before libpmem
// first decides what is pmem), defaults --benchmark_min_time to @min_time
// seconds (a later flag on the command line overrides it), runs what
// @register_all registered, then calls @cleanup (releases the last fixture).
inline int Main(int argc, char **argv, const char *min_time, void (*register_all)(),
	void (*cleanup)())
{
	setenv("PMEM_IS_PMEM_FORCE", "1", 0);
	std::string min_flag = std::string("--benchmark_min_time=") + min_time;
	std::vector<char *> args;
	args.push_back(argv[0]);
	args.push_back(&min_flag[0]);
	for (int i = 1; i < argc; i++)
		args.push_back(argv[i]);
	int n = static_cast<int>(args.size());
	args.push_back(nullptr);

	register_all();
	benchmark::Initialize(&n, args.data());
	if (benchmark::ReportUnrecognizedArguments(n, args.data()))
		return 1;
	benchmark::AddCustomContext("PMEM_IS_PMEM_FORCE", std::getenv("PMEM_IS_PMEM_FORCE"));
	const char *dir = std::getenv("MCAS_BENCH_POOL_DIR");
	benchmark::AddCustomContext("pool_dir", dir != nullptr ? dir : "/dev/shm");
	mcas_config c = Config(Variants()[0]);
	benchmark::AddCustomContext("mcas_descs_per_thread", std::to_string(c.descs_per_thread));
	benchmark::AddCustomContext("mcas_read_detach_one_in",
		std::to_string(c.read_detach_one_in));
	benchmark::RunSpecifiedBenchmarks();
	cleanup();
	benchmark::Shutdown();
	return 0;
}

} // namespace mcasbench

#endif
