// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/bench_util.h -- what every benchmark binary (mcas_array_bench,
// dll_bench, onll_bench, reclaim_bench) shares: a pm/ pool on a RAM file
// system with real persistent flushes, the thread counts, a barrier, a
// per-thread random generator, counter structs summed across a run's
// threads, per-thread snapshots of pm_cost and a library's statistics, the
// outline of one thread's part in a run on a shared fixture (ThreadRun),
// registration, and a main() that forces PMEM_IS_PMEM_FORCE=1 (for the
// binaries with pools) and defaults to short runs.
// benchmarks/mcas_bench.h adds what the two MCAS benchmarks share.
//
// Runs are multi-threaded Google Benchmark runs (->Threads(n)): thread 0 is
// the process's main thread and owns the shared fixture; every thread
// registers its own handle before the timed loop and publishes its counts
// after it. Everything outside `for (auto _ : state)` is untimed.
//
// Throughput is operations over the run's span: from the moment every
// thread has registered to the moment the last one leaves its timed loop
// (FixtureBase::span_s, PerSecond()). Google Benchmark's own rate counters
// divide by the mean of the threads' own times instead, and every thread
// runs the same number of iterations, so when threads outnumber cores those
// that were scheduled early stop their clocks early: measured here, that
// overstated the B+-tree's 4- and 8-thread throughput by 20-25 %, by a
// different amount for each MCAS algorithm.
#ifndef BENCHMARKS_BENCH_UTIL_H
#define BENCHMARKS_BENCH_UTIL_H

#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <pm/cost.h>
#include <pm/error.h>
#include <pm/pool.h>

namespace bench {

// The thread counts of DESIGN.md sect. 9 (2 cores: 4 and 8 preempt).
inline const std::vector<int> &ThreadCounts()
{
	static const std::vector<int> t = { 1, 2, 4, 8 };
	return t;
}

// An unsigned from environment variable @name, or @dflt if it is unset, not
// a number or above @max.
inline unsigned EnvUnsigned(const char *name, unsigned dflt, unsigned max = 1u << 20)
{
	const char *s = std::getenv(name);
	char *end;

	if (s == nullptr || *s == '\0')
		return dflt;
	unsigned long v = std::strtoul(s, &end, 10);
	return *end == '\0' && v <= max ? static_cast<unsigned>(v) : dflt;
}

// The binary's name (messages, pool file names) and the directory of its
// pools; Main() sets both before any benchmark runs.
struct Settings {
	std::string name = "bench";
	std::string pool_dir = "/dev/shm";
};

inline Settings &Global()
{
	static Settings s;
	return s;
}

// A pool file in Global().pool_dir (a RAM file system by default), created
// with PMEM durability: with PMEM_IS_PMEM_FORCE=1 every pm_flush() is a
// real cache-line write-back (clwb/clflushopt) and every pm_fence() an
// sfence, as on an NVDIMM (DESIGN.md sect. 4). The file is removed when
// the pool is closed.
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
		const Settings &g = Global();

		path_ = g.pool_dir + "/" + g.name + "." + std::to_string(getpid()) + "." +
			std::to_string(seq++) + ".pool";
		unlink(path_.c_str());
		pm_pool_config pc;
		pm_pool_config_init(&pc);
		pc.path = path_.c_str();
		pc.layout = g.name.c_str();
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
		}
		return ret;
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

// Counter structs made of 64-bit integers only (pm_cost, mcas_stats,
// onll_stats, a benchmark's Counts of them): the counters one by one.
template <class S>
constexpr size_t NumCounters()
{
	static_assert(std::is_trivially_copyable<S>::value && sizeof(S) % sizeof(uint64_t) == 0,
		"a counter struct holds 64-bit integers only");
	return sizeof(S) / sizeof(uint64_t);
}

// *@a += @b, counter by counter (signed ones wrap to the same sum).
template <class S>
void AddCounters(S *a, const S &b)
{
	uint64_t x[NumCounters<S>()], y[NumCounters<S>()];

	std::memcpy(x, a, sizeof(S));
	std::memcpy(y, &b, sizeof(S));
	for (size_t i = 0; i < NumCounters<S>(); i++)
		x[i] += y[i];
	std::memcpy(a, x, sizeof(S));
}

// @after - @before, counter by counter.
template <class S>
S DiffCounters(const S &after, const S &before)
{
	uint64_t x[NumCounters<S>()], y[NumCounters<S>()];
	S d;

	std::memcpy(x, &after, sizeof(S));
	std::memcpy(y, &before, sizeof(S));
	for (size_t i = 0; i < NumCounters<S>(); i++)
		x[i] -= y[i];
	std::memcpy(&d, x, sizeof(S));
	return d;
}

// Snapshots of the calling thread's pm_cost counters and of its library
// statistics (@Stats of a @Thread handle, read by @read_stats; not read
// while the handle is null) around its timed loop. @Thread may be const.
template <class Thread, class Stats, void (*read_stats)(Thread *, Stats *)>
class ThreadMeter {
 public:
	void Start(Thread *t)
	{
		if (t != nullptr)
			read_stats(t, &st0_);
		pm_cost_read_thread(&c0_);
	}
	// Sets @c->cost and @c->st to what happened since Start().
	template <class Counts>
	void Stop(Thread *t, Counts *c)
	{
		pm_cost c1;
		Stats st1;

		pm_cost_read_thread(&c1);
		pm_cost_diff(&c1, &c0_, &c->cost);
		if (t != nullptr) {
			read_stats(t, &st1);
			c->st = DiffCounters(st1, st0_);
		}
	}

 private:
	Stats st0_ {};
	pm_cost c0_ {};
};

// "" if @ret is 0, else "@what: <pm_strerror(@ret)>".
inline std::string ErrorOf(int ret, const std::string &what)
{
	return ret == 0 ? std::string() : what + ": " + pm_strerror(ret);
}

// What the shared fixture of every benchmark holds besides its object: the
// pool, the setup error, the runs so far and the counts of the current run
// (@CountsT: a counter struct, see NumCounters(), with an `errors` count).
// A benchmark's fixture derives from it; see ThreadRun.
template <class CountsT>
struct FixtureBase {
	using Counts = CountsT;

	BenchPool pool;
	std::string error; // setup failure: every thread skips the run
	uint64_t runs = 0; // finished runs of this configuration

	std::mutex mu;
	Counts total; // this run's, under mu
	// This run's span in seconds, for Report(): from the barrier after
	// every thread registered to the last thread's end of its timed loop.
	double span_s = 0;

	// Records a setup failure. Returns @ret.
	int Fail(int ret, const std::string &what)
	{
		error = ErrorOf(ret, what);
		return ret;
	}

	// Creates the pool, its root object @root_size bytes, and checks that
	// it got PMEM durability. Returns 0 or the error (also in error).
	int CreatePool(size_t root_size)
	{
		int ret = pool.Create(root_size, &error);

		if (ret != 0)
			return ret;
		if (pm_pool_durability(pool.get()) != PM_DURABILITY_PMEM)
			return Fail(PM_E_NOT_PMEM, "pool durability is not PMEM");
		return 0;
	}
};

// One thread's part in one run of a benchmark on a shared @Fixture, the
// outline every benchmark follows:
//   constructor  thread 0 keeps the fixture of the same configuration (a
//                later trial run) or replaces it (one pool at a time); all
//                threads wait; each registers its handle, or skips the run
//                with the setup or registration error (the timed loop then
//                runs 0 times); its meter starts
//   the benchmark's timed loop, with a generator seeded by Seed(), into a
//                Counts of the thread's own
//   Finish()     the meter stops; the thread's counts go into the
//                fixture's total; once every thread's are in, thread 0
//                counts the run, lets the fixture account for it, checks
//                the object (unless the setup, its registration or an
//                operation failed) while every other handle is idle at the
//                barrier, and reports; all wait; the handle is released.
// A @Fixture derives from FixtureBase<Counts> and has:
//   using Handle = ...;                 a thread's handle on the object
//   using Meter = ThreadMeter<...>;     what a thread meters, on its Handle
//   int Create(config...);              builds the object; on failure Fail()
//   std::string Register(Handle **h);   "" or the error; *h may stay null
//   void Unregister(Handle **h);
//   void Account();                     folds total into the expectations
//   std::string Check(Handle *h);       "" or what is wrong with the object
//   void Report(benchmark::State &state) const;  sets the counters, of total
template <class Fixture>
class ThreadRun {
 public:
	using Handle = typename Fixture::Handle;
	using Counts = typename Fixture::Counts;

	// @config: the arguments of Fixture::Create(), which with the thread
	// count make the configuration.
	template <class... Config>
	ThreadRun(benchmark::State &state, const Config &...config) : state_(state)
	{
		if (state.thread_index() == 0)
			Prepare(state.threads(), config...);
		Shared().barrier.Wait(state.threads());
		f_ = Shared().fixture.get();
		std::string err = f_->error;
		if (err.empty())
			err = f_->Register(&h_);
		ok_ = err.empty();
		if (!ok_)
			state.SkipWithError(err.c_str()); // the timed loop runs 0 times
		meter_.Start(h_);
		// Registration is outside the span; the span starts for all once
		// the last thread is ready (thread 0's clock after the barrier).
		Shared().barrier.Wait(state.threads());
		if (state.thread_index() == 0)
			Shared().start = Clock::now();
	}
	ThreadRun(const ThreadRun &) = delete;
	ThreadRun &operator=(const ThreadRun &) = delete;

	Fixture *fixture() const { return f_; }
	// Null if registration failed or the fixture needs none.
	Handle *handle() const { return h_; }
	// A seed for this thread's generator, different in every run.
	uint64_t Seed() const
	{
		return (f_->runs + 1) * 1000003 + static_cast<uint64_t>(state_.thread_index());
	}

	// After the timed loop, with what this thread did in *@c.
	void Finish(Counts *c)
	{
		const int nthreads = state_.threads();
		Barrier &barrier = Shared().barrier;

		const Clock::time_point end = Clock::now();

		meter_.Stop(h_, c);
		{
			std::lock_guard<std::mutex> lk(f_->mu);
			AddCounters(&f_->total, *c);
			if (end > Shared().end)
				Shared().end = end;
		}
		barrier.Wait(nthreads); // every thread's counts are in total
		if (state_.thread_index() == 0) {
			f_->span_s = std::chrono::duration<double>(Shared().end - Shared().start).count();
			Shared().end = Clock::time_point();
			f_->runs++;
			f_->Account();
			if (ok_ && f_->total.errors == 0) {
				std::string bad = f_->Check(h_);
				if (!bad.empty())
					state_.SkipWithError(bad.c_str());
			}
			f_->Report(state_);
			f_->total = Counts();
		}
		barrier.Wait(nthreads); // the check ran while every handle was idle
		if (h_ != nullptr)
			f_->Unregister(&h_);
	}

	// After the runs: releases the last fixture (a Program's cleanup).
	static void Release() { Shared().fixture.reset(); }

 private:
	using Clock = std::chrono::steady_clock;

	struct SharedState {
		std::unique_ptr<Fixture> fixture;
		Barrier barrier;
		Clock::time_point start; // set by thread 0 once all registered
		Clock::time_point end;   // latest end of a timed loop, under fixture->mu
	};
	static SharedState &Shared()
	{
		static SharedState s;
		return s;
	}

	// Thread 0, before a run: keeps the fixture if it was made for the
	// same @threads and @config, else replaces it with a new one set up by
	// Fixture::Create(@config).
	template <class... Config>
	static void Prepare(int threads, const Config &...config)
	{
		static std::tuple<Config..., int> made_for;
		std::unique_ptr<Fixture> &f = Shared().fixture;
		const std::tuple<Config..., int> key(config..., threads);

		if (f != nullptr && key == made_for)
			return;
		f.reset(); // one pool at a time
		f = std::make_unique<Fixture>();
		made_for = key;
		f->Create(config...);
	}

	benchmark::State &state_;
	Fixture *f_ = nullptr;
	Handle *h_ = nullptr;
	bool ok_ = false;
	typename Fixture::Meter meter_;
};

// Registers @fn(state, @args...) as @name, run by @threads threads and
// timed by the wall clock.
template <class Fn, class... Args>
void Register(const std::string &name, int threads, Fn fn, const Args &...args)
{
	benchmark::RegisterBenchmark(name.c_str(), fn, args...)->Threads(threads)->UseRealTime();
}

inline double Ratio(double num, double den)
{
	return den > 0 ? num / den : 0.0;
}

// @n events over a run's span (FixtureBase::span_s) as a counter.
inline benchmark::Counter PerSecond(double n, double span_s)
{
	return benchmark::Counter(Ratio(n, span_s));
}

// What Main() needs of one benchmark binary.
struct Program {
	const char *name;         // e.g. "onll_bench": messages, pool file names
	const char *pool_dir_env; // environment variable naming the pool directory;
	                          // null for a binary without pools (reclaim_bench):
	                          // no PMEM forcing, no --pool_dir, no pool context
	void (*register_all)();   // registers the benchmarks
	void (*add_context)();    // after the flags: the binary's own context
	void (*cleanup)();        // after the runs: releases the last fixture
};

// PMEM_IS_PMEM_FORCE=1, unless the caller set it otherwise (with a
// warning): without it the RAM file system is not pmem to libpmem and
// every pool creation fails. libpmem reads the variable on its first
// pmem_is_pmem(), so setting it in main() still works.
inline void ForcePmem(const char *name)
{
	const char *force = std::getenv("PMEM_IS_PMEM_FORCE");

	if (force != nullptr && std::strcmp(force, "1") == 0)
		return;
	std::fprintf(stderr, "%s: WARNING: PMEM_IS_PMEM_FORCE is %s%s%s, not 1: %s\n", name,
		force ? "\"" : "", force ? force : "unset", force ? "\"" : "",
		force ? "pools on a RAM file system will not get PMEM durability "
			"and the runs will fail" :
			"setting it to 1 for this process (flushes are real clwb + sfence)");
	if (force == nullptr)
		setenv("PMEM_IS_PMEM_FORCE", "1", 1);
}

// main() of every benchmark: forces real persistent flushes (ForcePmem()),
// takes the pool directory from $@p.pool_dir_env or --pool_dir=DIR (default
// /dev/shm) -- both skipped when @p.pool_dir_env is null --, defaults
// --benchmark_min_time to 0.3 s (a later flag on the command line
// overrides it), runs what @p.register_all registered with the context
// PMEM_IS_PMEM_FORCE, pool_dir (with pools) and what @p.add_context adds,
// then calls @p.cleanup.
inline int Main(int argc, char **argv, const Program &p)
{
	Settings &g = Global();

	g.name = p.name;
	const bool pools = p.pool_dir_env != nullptr;
	if (pools) {
		ForcePmem(p.name);
		const char *dir = std::getenv(p.pool_dir_env);
		if (dir != nullptr && *dir != '\0')
			g.pool_dir = dir;
	}

	std::string min_flag = "--benchmark_min_time=0.3";
	std::vector<char *> args;
	args.push_back(argv[0]);
	args.push_back(&min_flag[0]);
	for (int i = 1; i < argc; i++) {
		if (pools && std::strncmp(argv[i], "--pool_dir=", 11) == 0)
			g.pool_dir = argv[i] + 11;
		else
			args.push_back(argv[i]);
	}
	int n = static_cast<int>(args.size());
	args.push_back(nullptr);

	p.register_all();
	benchmark::Initialize(&n, args.data());
	if (benchmark::ReportUnrecognizedArguments(n, args.data()))
		return 1;
	if (pools) {
		const char *force = std::getenv("PMEM_IS_PMEM_FORCE");
		benchmark::AddCustomContext("PMEM_IS_PMEM_FORCE", force != nullptr ? force : "unset");
		benchmark::AddCustomContext("pool_dir", g.pool_dir);
	}
	p.add_context();
	benchmark::RunSpecifiedBenchmarks();
	p.cleanup();
	benchmark::Shutdown();
	return 0;
}

} // namespace bench

#endif
