// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/onll_bench.cc -- ONLL's objects (onll/objects.h) against the
// same objects on PMDK transactions (benchmarks/pmdk_tx_objects.h), in one
// process, back to back.
//
// What it measures. Three objects, each in its own fresh pm/ pool on
// /dev/shm (ONLL_BENCH_POOL_DIR or --pool_dir=DIR overrides) with PMEM
// durability under PMEM_IS_PMEM_FORCE=1, so flushes are real clwb and
// fences real sfence:
//   counter  update: add(1); read: get
//   queue    preloaded with 1000 values; update: each thread alternates
//            enqueue and dequeue (the size stays near 1000); read: each
//            thread alternates front and size
//   map      1000 keys preloaded out of the key range [0, 2000); update:
//            put or remove (1/2 each) of a uniform key, so the map stays
//            near 1000 keys; read: get of a uniform key
// in three mixes (update = update-only, read = read-only, mixed = 50/50
// chosen per operation by a per-thread generator), for two
// implementations, ONLL right before PMDK on the same configuration:
//   onll     onll/objects.h on the ONLL universal construction: lock-free,
//            1 persistent fence per update, none per read
//   pmdk-tx  pthread rwlock (writers exclusive) + a libpmemobj undo-log
//            transaction per update; reads under the shared lock
// with 1, 2, 4 and 8 threads (the machine has 2 cores: 4 and 8 preempt).
//
// ONLL config: max_threads 16 (the library default: 8 workers, the setup
// handle, slack), max_op_size ONLL_OBJECTS_MAX_OP (the longest object op),
// log_entries 4096 with checkpoint_every 2048 (the default half): a
// checkpoint of the ~1000-key map serialises and flushes ~16 KB, and at
// log_entries 1024 that cost 27% of single-thread map update throughput;
// checkpoint_capacity 256 KiB (map snapshots are 8 + 16 * keys bytes, at
// most ~32 KB here). The area is then ~46 MB per object. ONLL_BENCH_LOG_ENTRIES and
// ONLL_BENCH_CHECKPOINT_EVERY override those two for diagnosis; the values
// used are in the JSON context. The PMDK objects: queue ring of 4096
// slots, map of 2000 keys (4096 slots), so neither fills up.
//
// Counters (totals over the run's threads, set by thread 0):
//   ops_per_s         operations per second over the run's span (bench_util.h)
//   fence_per_op      persistent fences per operation: ONLL from pm/cost.h
//                     (PM_COST_FENCE); PMDK from the interposed libpmem
//                     pmem_drain()/pmem_msync() (pmdk_tx_objects.h), and
//                     absent if the probe at start-up found the
//                     interposition not working
//   fence_per_update  the same per update operation
//   drain_per_op      libpmem drains per op for both implementations (the
//                     interposition; for ONLL it cross-checks fence_per_op)
//   flush_per_op      cache lines flushed per op (pm/cost.h: ONLL only;
//                     PMDK's flushes are not counted)
//   helped_per_update ONLL: ops of other threads persisted in this
//                     thread's log entries, per update (onll_stats)
//   applied_per_op    ONLL: trace ops applied to local views, per op
//   n_*               raw totals: ops, updates, reads, fences, drains,
//                     flushes, helped, applied, checkpoints (of which
//                     checkpoint_fences with a fence of their own),
//                     log_full_waits, view_rebuilds
// After every run thread 0 checks the object against what the run did:
// the counter equals the adds so far, the queue size equals preload +
// enqueues - dequeues, the map size equals preload + inserts - removes.
// A lost or doubled update fails the run instead of producing a number.
//
// Run (about 45 s on 2 cores):
//   bazel run -c opt //benchmarks:onll_bench --
//       --benchmark_out=$PWD/onll.json --benchmark_out_format=json
// (one command line) or benchmarks/run_onll.sh for the ratio report.
// --benchmark_min_time defaults to 0.3 s; --benchmark_filter=map/ etc.
// picks a subset.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <string>

#include <benchmark/benchmark.h>

#include <onll/objects.h>
#include <onll/onll.h>
#include <pm/cost.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "benchmarks/bench_util.h"
#include "benchmarks/pmdk_tx_objects.h"

namespace {

using bench::Ratio;

enum class Obj { kCounter, kQueue, kMap };
enum class Impl { kOnll, kPmdkTx };
enum class Mix { kUpdate, kRead, kMixed };

const char *ObjName(Obj o)
{
	return o == Obj::kCounter ? "counter" : o == Obj::kQueue ? "queue" : "map";
}
const char *ImplName(Impl i)
{
	return i == Impl::kOnll ? "onll" : "pmdk-tx";
}
const char *MixName(Mix m)
{
	return m == Mix::kUpdate ? "update" : m == Mix::kRead ? "read" : "mixed";
}

// Workload sizes (see the top of the file).
constexpr uint64_t kQueuePreload = 1000;
constexpr uint64_t kQueueRing = 4096;
constexpr uint64_t kMapPreload = 1000;
constexpr uint64_t kMapRange = 2000;

// Whether the interposed pmem_drain() counts PMDK's fences (probed once).
bool g_drain_counting = false;

onll_config OnllConfig()
{
	onll_config c;
	onll_config_init(&c);
	c.max_threads = 16;
	c.max_op_size = ONLL_OBJECTS_MAX_OP;
	c.log_entries = bench::EnvUnsigned("ONLL_BENCH_LOG_ENTRIES", 4096);
	c.checkpoint_every = bench::EnvUnsigned("ONLL_BENCH_CHECKPOINT_EVERY", c.log_entries / 2);
	c.checkpoint_capacity = 256 << 10;
	return c;
}

const onll_type *OnllType(Obj o)
{
	return o == Obj::kCounter ? onll_counter_type() :
		o == Obj::kQueue ? onll_queue_type() : onll_map_type();
}

txobj_kind TxKind(Obj o)
{
	return o == Obj::kCounter ? TXOBJ_COUNTER : o == Obj::kQueue ? TXOBJ_QUEUE : TXOBJ_MAP;
}

uint64_t TxCapacity(Obj o)
{
	return o == Obj::kCounter ? 0 : o == Obj::kQueue ? kQueueRing : kMapRange;
}

// What one thread did in the timed loop, and the sum over a run's threads.
struct Counts {
	uint64_t ops = 0, updates = 0, reads = 0;
	int64_t size_delta = 0; // queue: enqueues - dequeues; map: inserts - removes
	uint64_t adds = 0;      // counter: adds of 1
	uint64_t errors = 0;
	uint64_t drains = 0;    // interposed pmem_drain/pmem_msync calls
	pm_cost cost {};
	onll_stats st {};
};

// The shared state of one configuration (object, implementation, mix,
// threads): a fresh pool with the object, preloaded. Kept across Google
// Benchmark's trial runs of the same configuration.
struct Fixture : bench::FixtureBase<Counts> {
	using Handle = onll_thread; // none for pmdk-tx
	using Meter = bench::ThreadMeter<const onll_thread, onll_stats, onll_thread_stats>;

	Obj obj = Obj::kCounter;
	Impl impl = Impl::kOnll;
	onll *o = nullptr;
	txobj *x = nullptr;
	int64_t expect_counter = 0; // counter value
	int64_t expect_size = 0;    // queue / map size

	// The mix only tells configurations apart (each gets a fresh pool).
	int Create(Obj ob, Impl im, Mix)
	{
		obj = ob;
		impl = im;
		onll_config cfg = OnllConfig();
		size_t area = im == Impl::kOnll ? onll_area_size(&cfg) :
			txobj_area_size(TxKind(ob), TxCapacity(ob));
		if (area == 0)
			return Fail(-EINVAL, "area size");
		int ret = CreatePool(bench::Align64(area));
		if (ret != 0)
			return ret;
		if (im == Impl::kOnll) {
			ret = onll_create(&o, pool.get(), pool.off(pool.root()), &cfg, OnllType(ob));
			if (ret != 0)
				return Fail(ret, "onll_create");
			return Preload();
		}
		ret = txobj_create(&x, pool.get(), pool.off(pool.root()), TxKind(ob), TxCapacity(ob));
		if (ret != 0)
			return Fail(ret, "txobj_create");
		return Preload();
	}

	// The queue gets kQueuePreload values, the map kMapPreload distinct
	// keys of [0, kMapRange); ONLL then checkpoints, so runs start with
	// empty logs.
	int Preload()
	{
		onll_thread *t = nullptr;
		int ret = 0;

		if (o != nullptr && (ret = onll_thread_register(o, &t)) != 0)
			return Fail(ret, "onll_thread_register");
		if (obj == Obj::kQueue) {
			for (uint64_t i = 0; ret >= 0 && i < kQueuePreload; i++)
				ret = t != nullptr ? onll_queue_enqueue(t, i) : txobj_queue_enqueue(x, i);
			expect_size = kQueuePreload;
		} else if (obj == Obj::kMap) {
			bench::Rng rng(12345);
			uint64_t n = 0;
			while (ret >= 0 && n < kMapPreload) {
				uint64_t k = rng.Below(kMapRange);
				ret = t != nullptr ? onll_map_put(t, k, k) : txobj_map_put(x, k, k);
				n += ret == 0; // 0: inserted, 1: replaced
			}
			expect_size = kMapPreload;
		}
		if (ret < 0) {
			onll_thread_unregister(&t);
			return Fail(ret, "preload");
		}
		if (t != nullptr) {
			ret = onll_checkpoint(t);
			onll_thread_unregister(&t);
			if (ret != 0)
				return Fail(ret, "onll_checkpoint");
		}
		return 0;
	}

	std::string Register(onll_thread **t)
	{
		return o == nullptr ? "" :
			bench::ErrorOf(onll_thread_register(o, t), "onll_thread_register");
	}
	void Unregister(onll_thread **t) { onll_thread_unregister(t); }

	void Account()
	{
		expect_counter += static_cast<int64_t>(total.adds);
		expect_size += total.size_delta;
	}

	std::string Check(onll_thread *t) const;
	void Report(benchmark::State &state) const;

	~Fixture()
	{
		onll_close(&o);
		txobj_close(&x);
	}
};

// One thread's view of the fixture's object: ONLL handle or PMDK object.
struct Worker {
	Fixture *f;
	onll_thread *t;
	bench::Rng rng;
	uint64_t nupd = 0, nread = 0;
	Counts c;

	Worker(Fixture *fx, onll_thread *th, uint64_t seed) : f(fx), t(th), rng(seed) {}

	// One update; returns a negative code on failure.
	int Update()
	{
		int ret = 0;
		c.updates++;
		switch (f->obj) {
		case Obj::kCounter:
			ret = t != nullptr ? onll_counter_add(t, 1, nullptr) :
				txobj_counter_add(f->x, 1, nullptr);
			c.adds += ret == 0;
			break;
		case Obj::kQueue:
			if ((nupd++ & 1) == 0) {
				ret = t != nullptr ? onll_queue_enqueue(t, nupd) :
					txobj_queue_enqueue(f->x, nupd);
				c.size_delta += ret == 0;
			} else {
				uint64_t v;
				ret = t != nullptr ? onll_queue_dequeue(t, &v) :
					txobj_queue_dequeue(f->x, &v);
				c.size_delta -= ret == 1;
			}
			break;
		case Obj::kMap: {
			uint64_t r = rng.Next();
			uint64_t key = (r >> 32) % kMapRange;
			if (r & 1) {
				ret = t != nullptr ? onll_map_put(t, key, r) :
					txobj_map_put(f->x, key, r);
				c.size_delta += ret == 0;
			} else {
				ret = t != nullptr ? onll_map_remove(t, key) :
					txobj_map_remove(f->x, key);
				c.size_delta += ret == 1 ? -1 : 0;
			}
			break;
		}
		}
		return ret;
	}

	int Read()
	{
		int ret = 0;
		c.reads++;
		switch (f->obj) {
		case Obj::kCounter: {
			int64_t v;
			ret = t != nullptr ? onll_counter_get(t, &v) : txobj_counter_get(f->x, &v);
			benchmark::DoNotOptimize(v);
			break;
		}
		case Obj::kQueue: {
			uint64_t v = 0;
			if ((nread++ & 1) == 0)
				ret = t != nullptr ? onll_queue_front(t, &v) : txobj_queue_front(f->x, &v);
			else
				ret = t != nullptr ? onll_queue_size(t, &v) : txobj_queue_size(f->x, &v);
			benchmark::DoNotOptimize(v);
			break;
		}
		case Obj::kMap: {
			uint64_t v = 0;
			uint64_t key = rng.Below(kMapRange);
			ret = t != nullptr ? onll_map_get(t, key, &v) : txobj_map_get(f->x, key, &v);
			benchmark::DoNotOptimize(v);
			break;
		}
		}
		return ret;
	}
};

// The object must reflect every update of the runs.
std::string Fixture::Check(onll_thread *t) const
{
	int64_t v = 0;
	uint64_t size = 0;
	int ret = 0;

	switch (obj) {
	case Obj::kCounter:
		ret = t != nullptr ? onll_counter_get(t, &v) : txobj_counter_get(x, &v);
		if (ret < 0)
			return std::string("counter get: ") + pm_strerror(ret);
		if (v != expect_counter)
			return "counter " + std::to_string(v) + " != expected " +
				std::to_string(expect_counter) + " (lost or doubled update)";
		return "";
	case Obj::kQueue:
		ret = t != nullptr ? onll_queue_size(t, &size) : txobj_queue_size(x, &size);
		break;
	case Obj::kMap:
		ret = t != nullptr ? onll_map_size(t, &size) : txobj_map_size(x, &size);
		break;
	}
	if (ret < 0)
		return std::string("size: ") + pm_strerror(ret);
	if (static_cast<int64_t>(size) != expect_size)
		return std::string(ObjName(obj)) + " size " + std::to_string(size) +
			" != expected " + std::to_string(expect_size) +
			" (lost or doubled update)";
	return "";
}

void Fixture::Report(benchmark::State &state) const
{
	const Counts &c = total;
	const double ops = static_cast<double>(c.ops);
	const double upd = static_cast<double>(c.updates);
	const bool onll = impl == Impl::kOnll;
	const double fences = onll ? static_cast<double>(c.cost.n[PM_COST_FENCE]) :
		static_cast<double>(c.drains);

	state.counters["ops_per_s"] = bench::PerSecond(ops, span_s);
	if (onll || g_drain_counting) {
		state.counters["fence_per_op"] = Ratio(fences, ops);
		state.counters["fence_per_update"] = Ratio(fences, upd);
		state.counters["n_fence"] = fences;
	}
	if (g_drain_counting) {
		state.counters["drain_per_op"] = Ratio(static_cast<double>(c.drains), ops);
		state.counters["n_drain"] = static_cast<double>(c.drains);
	}
	state.counters["flush_per_op"] = Ratio(static_cast<double>(c.cost.n[PM_COST_FLUSH]), ops);
	state.counters["n_ops"] = ops;
	state.counters["n_updates"] = upd;
	state.counters["n_reads"] = static_cast<double>(c.reads);
	state.counters["n_flush"] = static_cast<double>(c.cost.n[PM_COST_FLUSH]);
	if (onll) {
		state.counters["helped_per_update"] = Ratio(static_cast<double>(c.st.helped_ops), upd);
		state.counters["applied_per_op"] = Ratio(static_cast<double>(c.st.applied_ops), ops);
		state.counters["n_onll_fence"] = static_cast<double>(c.cost.n[PM_COST_FENCE]);
		state.counters["n_helped"] = static_cast<double>(c.st.helped_ops);
		state.counters["n_applied"] = static_cast<double>(c.st.applied_ops);
		state.counters["n_checkpoints"] = static_cast<double>(c.st.checkpoints);
		state.counters["n_checkpoint_fences"] = static_cast<double>(c.st.checkpoint_fences);
		state.counters["n_log_full_waits"] = static_cast<double>(c.st.log_full_waits);
		state.counters["n_view_rebuilds"] = static_cast<double>(c.st.view_rebuilds);
	}
}

void BM_Object(benchmark::State &state, Obj ob, Impl im, Mix mx)
{
	bench::ThreadRun<Fixture> run(state, ob, im, mx);
	Worker w(run.fixture(), run.handle(), run.Seed());
	const uint64_t d0 = txobj_fences_thread();

	for (auto _ : state) {
		bool update = mx == Mix::kUpdate || (mx == Mix::kMixed && (w.rng.Next() & 1));
		int ret = update ? w.Update() : w.Read();
		w.c.ops++;
		if (ret < 0) {
			w.c.errors++;
			state.SkipWithError(bench::ErrorOf(ret, update ? "update" : "read").c_str());
			continue;
		}
	}
	w.c.drains = txobj_fences_thread() - d0;
	run.Finish(&w.c);
}

// Objects, then mixes, then thread counts, then implementations: ONLL and
// PMDK of one configuration run back to back.
void RegisterAll()
{
	for (Obj ob : { Obj::kCounter, Obj::kQueue, Obj::kMap })
		for (Mix mx : { Mix::kUpdate, Mix::kRead, Mix::kMixed })
			for (int threads : bench::ThreadCounts())
				for (Impl im : { Impl::kOnll, Impl::kPmdkTx }) {
					bench::Register(std::string(ObjName(ob)) + "/" + ImplName(im) +
						"/" + MixName(mx), threads, BM_Object, ob, im, mx);
				}
}

// Whether PMDK's fences reach the interposed pmem_drain(): one small pool.
bool ProbeDrainCounting(std::string *err)
{
	bench::BenchPool p;
	if (p.Create(64, err) != 0)
		return false;
	return txobj_fence_counting_works(p.get()) != 0;
}

// The probe's result and the ONLL configuration used.
void AddContext()
{
	std::string err;
	g_drain_counting = ProbeDrainCounting(&err);
	if (!err.empty())
		std::fprintf(stderr, "onll_bench: probe pool: %s\n", err.c_str());
	if (!g_drain_counting)
		std::fprintf(stderr, "onll_bench: WARNING: PMDK's fences do not reach the "
			"interposed pmem_drain(): no fence counts for pmdk-tx\n");

	onll_config c = OnllConfig();
	benchmark::AddCustomContext("pmdk_fence_counting",
		g_drain_counting ? "interposed pmem_drain/pmem_msync (probe ok)" : "unavailable");
	benchmark::AddCustomContext("onll_max_threads", std::to_string(c.max_threads));
	benchmark::AddCustomContext("onll_max_op_size", std::to_string(c.max_op_size));
	benchmark::AddCustomContext("onll_log_entries", std::to_string(c.log_entries));
	benchmark::AddCustomContext("onll_checkpoint_every", std::to_string(c.checkpoint_every));
	benchmark::AddCustomContext("onll_checkpoint_capacity",
		std::to_string(c.checkpoint_capacity));
	benchmark::AddCustomContext("workload",
		"queue preload 1000 (pmdk ring 4096); map preload 1000 keys, range 2000 "
		"(pmdk capacity 2000)");
}

} // namespace

int main(int argc, char **argv)
{
	return bench::Main(argc, argv,
		{ "onll_bench", "ONLL_BENCH_POOL_DIR", RegisterAll, AddContext,
		bench::ThreadRun<Fixture>::Release });
}
