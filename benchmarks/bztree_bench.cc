// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/bztree_bench.cc -- the B+-tree benchmark of the thesis's MCAS
// evaluation (sect. 5.7, after BzTree/PiBench; App. D.2), plus YCSB-like
// runs on a large tree against a reader-writer-locked std::map.
//
// Part 1, thesis sweep ("bztree/<variant>/size:S/read:R"). The lock-free
// B+-tree of ds/bztree.h (uint64_t -> uint64_t, node capacity: the
// library's default, DS_BZTREE_DEFAULT_CAPACITY = 64 records per node,
// unless BZTREE_BENCH_CAPACITY says otherwise) is filled with S random keys
// (S = 16, 512, 4096) of a key range of 2S. Each of 1, 2, 4 or 8 threads
// loops: pick a key uniformly in the range and an operation by the read
// percentage R (50, 80, 98, 100): lookup, else insert or delete with equal
// probability, so the size stays near S. The same tree runs on the four
// MCAS variants of mcas_bench.h, back to back per configuration:
// aopt-vol vs harris-vol, aopt-pm vs pmwcas-pm (persistent: tree and MCAS
// area in one pm/ pool on /dev/shm with real flushes).
//
// Part 2, large tree ("ycsb/<backend>/wl:<W>/keys:N"). N keys (default
// 1,000,000; BZTREE_BENCH_LARGE_KEYS overrides), loaded in random order;
// key of record i = Mix(i), a bijective 64-bit mix, so record order and key
// order are unrelated (YCSB's hashed keys). Record choice is Zipfian with
// theta 0.99 over the N loaded records (Gray et al.'s generator as in
// YCSB's ZipfianGenerator, seeded per thread; the hottest records are
// spread over the key space by Mix). Workloads:
//   A  50 % read / 50 % update (replace the value of an existing key)
//   B  95 % read /  5 % update
//   C 100 % read
//   E  95 % scan (start key of a Zipfian record, 1..100 pairs, uniform) /
//       5 % insert of a new record (next record number of a shared
//       counter, so a key never loaded or inserted before)
// Backends, back to back per (workload, threads): aopt-vol (the tree on
// volatile AOPT), rwlock-map (std::map<uint64_t, uint64_t> under a
// std::shared_mutex: shared for read and scan, exclusive for update and
// insert -- what a user would otherwise pick), and, unless
// BZTREE_BENCH_YCSB_PM=0, aopt-pm and pmwcas-pm (the persistent tree).
//
// Counters (totals over the run's threads, set by thread 0):
//   ops_per_s     operations per second over the run's span (bench_util.h;
//                 every operation, whether or not it changed the map)
//   cas_per_op, fence_per_op, flush_per_op, help_ratio, detach_ratio, n_*
//                 as in mcas_bench.h (pm/cost.h, mcas_stats); 0 for the map
//   n_consolidations, n_splits, n_merges, n_rebalances
//                 structure changes installed during the run (from
//                 ds_bztree_check()'s stats, diffed run to run)
//   smo_per_kop   all four per 1000 operations
//   height, leaves, tree_nodes   the tree's shape after the run
//   keys          keys in the map after the run
// After each run thread 0 runs ds_bztree_check() (or walks the map) and
// compares the size with the initial size plus successful inserts minus
// successful deletes; a mismatch or violation fails the run.
//
// Run (the full sweep takes about 4 minutes with 0.2 s runs):
//   benchmarks/run_bztree.sh, or
//   bazel run -c opt //benchmarks:bztree_bench --
//       --benchmark_out=$PWD/bztree.json --benchmark_out_format=json
// --benchmark_filter='^bztree/' or '^ycsb/' picks one part.
// Smoke test: BZTREE_BENCH_LARGE_KEYS=20000 ... --benchmark_min_time=0.05
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <shared_mutex>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <ds/bztree.h>
#include <mcas/mcas.h>
#include <pm/cost.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "benchmarks/bench_util.h"
#include "benchmarks/mcas_bench.h"
#include "benchmarks/zipf.h"

namespace {

using mcasbench::Variant;

// The run's totals: mcas_bench.h's counts plus the tree's own.
struct Counts {
	uint64_t ops = 0;
	uint64_t attempts = 0;
	uint64_t updates = 0;  // calls that changed the map
	uint64_t inserted = 0; // successful inserts
	uint64_t removed = 0;  // successful deletes
	uint64_t replaced = 0; // successful value updates (YCSB)
	uint64_t scanned = 0;  // pairs returned by scans (YCSB E)
	uint64_t errors = 0;
	pm_cost cost {};
	mcas_stats st {};
};

// mcas_bench.h's ReportCommon() reads its own Counts; the same fields.
mcasbench::Counts Common(const Counts &c)
{
	mcasbench::Counts m;
	m.ops = c.ops;
	m.attempts = c.attempts;
	m.updates = c.updates;
	m.inserted = c.inserted;
	m.removed = c.removed;
	m.errors = c.errors;
	m.cost = c.cost;
	m.st = c.st;
	return m;
}

void TreeStats(ds_bztree_thread *h, mcas_stats *st)
{
	mcas_thread_stats(ds_bztree_thread_mcas(h), st);
}

unsigned Capacity()
{
	return bench::EnvUnsigned("BZTREE_BENCH_CAPACITY", DS_BZTREE_DEFAULT_CAPACITY,
		DS_BZTREE_MAX_CAPACITY);
}

uint64_t LargeKeys()
{
	return bench::EnvUnsigned("BZTREE_BENCH_LARGE_KEYS", 1000000, 1u << 26);
}

bool YcsbPm()
{
	return bench::EnvUnsigned("BZTREE_BENCH_YCSB_PM", 1, 1) != 0;
}

// splitmix64's finalizer: a bijection on 64-bit integers.
uint64_t Mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	return x;
}

// The tree (ds_bztree), its MCAS instance and, when persistent, the pool
// holding both; or, with no variant, a std::map under a shared_mutex.
// Shared by both parts; a part's fixture adds the fill and the reporting.
struct TreeFixture : mcasbench::McasFixture {
	using Counts = ::Counts;
	using Handle = ds_bztree_thread;
	using Meter = bench::ThreadMeter<ds_bztree_thread, mcas_stats, TreeStats>;

	// McasFixture's FixtureBase is over mcasbench::Counts; ThreadRun adds
	// into this fixture's own total.
	Counts total;

	ds_bztree *t = nullptr;
	std::map<uint64_t, uint64_t> map; // rwlock-map backend
	std::shared_mutex map_mu;
	bool is_map = false;

	uint64_t expected = 0;          // keys the map must hold after a run
	ds_bztree_stats last {};        // stats after the fill or the last check
	ds_bztree_stats now {};         // stats after this run's check
	bool checked = false;

	// Creates an empty tree for variant @v (null: the map) whose
	// persistent arena fits @max_keys keys.
	int CreateTree(const Variant *v, uint64_t max_keys)
	{
		ds_bztree_config cfg;
		ds_bztree_config_init(&cfg);
		cfg.node_capacity = Capacity();
		if (v == nullptr) {
			is_map = true;
			return 0;
		}
		int ret;
		if (!v->persistent) {
			ret = CreateMcas(*v, 0);
			if (ret != 0)
				return ret;
			ret = ds_bztree_new(&t, m, &cfg);
			return ret == 0 ? 0 : Fail(ret, "ds_bztree_new");
		}
		// Leaves at least half full after a split, ~1/3 after merges:
		// 4x the minimal leaf count, plus room for retired nodes
		// waiting for grace periods while threads are preempted.
		const uint64_t nodes = 4 * (max_keys / (cfg.node_capacity / 2) + 1) + 8192;
		const size_t bytes = bench::Align64(ds_bztree_pmem_area_size(&cfg, nodes));
		if (bytes == 0)
			return Fail(-EINVAL, "ds_bztree_pmem_area_size");
		ret = CreateMcas(*v, bytes);
		if (ret != 0)
			return ret;
		ret = ds_bztree_pmem_create(&t, m, pool.get(), pool.off(pool.root()), &cfg, nodes);
		return ret == 0 ? 0 : Fail(ret, "ds_bztree_pmem_create");
	}

	int Fail(int ret, const char *what)
	{
		McasFixture::Fail(ret, what);
		if (!is_map)
			error += std::string(" ") + pm_errormsg();
		return ret;
	}

	// Inserts the keys @key(i), i = 0.., until @n are in, from this thread.
	template <class KeyFn>
	int Fill(uint64_t n, KeyFn key)
	{
		if (is_map) {
			for (uint64_t i = 0; map.size() < n; i++)
				map.emplace(key(i), i);
			expected = map.size();
			return 0;
		}
		ds_bztree_thread *h;
		int ret = ds_bztree_thread_register(t, &h);
		if (ret != 0)
			return Fail(ret, "ds_bztree_thread_register");
		for (uint64_t i = 0; ret >= 0 && expected < n; i++) {
			ret = ds_bztree_insert(h, key(i), i);
			if (ret > 0)
				expected++;
		}
		char buf[256];
		if (ret >= 0 && ds_bztree_check(h, &last, buf, sizeof(buf)) != nullptr) {
			error = std::string("ds_bztree_check after fill: ") + buf;
			ret = -EINVAL;
		}
		int uret = ds_bztree_thread_unregister(&h);
		if (ret < 0)
			return error.empty() ? Fail(ret, "ds_bztree_insert (fill)") : ret;
		return uret == 0 ? 0 : Fail(uret, "ds_bztree_thread_unregister");
	}

	std::string Register(ds_bztree_thread **h)
	{
		if (is_map)
			return "";
		return bench::ErrorOf(ds_bztree_thread_register(t, h), "ds_bztree_thread_register");
	}
	void Unregister(ds_bztree_thread **h) { ds_bztree_thread_unregister(h); }

	void Account()
	{
		expected += total.inserted;
		expected -= total.removed;
		checked = false;
	}

	// ds_bztree_check() (or the map's size) and the size against the
	// inserts and deletes.
	std::string Check(ds_bztree_thread *h)
	{
		uint64_t size;
		if (is_map) {
			size = map.size();
		} else {
			char buf[256];
			if (ds_bztree_check(h, &now, buf, sizeof(buf)) != nullptr)
				return std::string("ds_bztree_check: ") + buf;
			size = now.size;
			checked = true;
		}
		if (size != expected)
			return "map holds " + std::to_string(size) + " keys, expected " +
				std::to_string(expected);
		return "";
	}

	// The counters of both parts; the structure changes since the last
	// checked run.
	void ReportTree(benchmark::State &state)
	{
		mcasbench::ReportCommon(state, Common(total), span_s);
		const double ops = static_cast<double>(total.ops);
		state.counters["n_updates"] = static_cast<double>(total.updates);
		state.counters["keys"] = static_cast<double>(expected);
		if (is_map || !checked)
			return;
		const double cons = static_cast<double>(now.consolidations - last.consolidations);
		const double splits = static_cast<double>(now.splits - last.splits);
		const double merges = static_cast<double>(now.merges - last.merges);
		const double rebal = static_cast<double>(now.rebalances - last.rebalances);
		state.counters["n_consolidations"] = cons;
		state.counters["n_splits"] = splits;
		state.counters["n_merges"] = merges;
		state.counters["n_rebalances"] = rebal;
		state.counters["smo_per_kop"] = bench::Ratio(1000.0 * (cons + splits + merges + rebal), ops);
		state.counters["height"] = static_cast<double>(now.height);
		state.counters["leaves"] = static_cast<double>(now.leaves);
		state.counters["tree_nodes"] = static_cast<double>(now.nodes);
		last = now;
	}

	~TreeFixture() { ds_bztree_close(&t); }
};

// Records a failed operation: ends the loop at its next check (and keeps
// the threads' barriers balanced, unlike break).
void OpError(benchmark::State &state, Counts *c, int ret, const char *what)
{
	c->errors++;
	state.SkipWithError(bench::ErrorOf(ret, what).c_str());
}

// ---- Part 1: the thesis sweep ------------------------------------------

struct SweepFixture : TreeFixture {
	int size = 0, read_pct = 0;

	int Create(const Variant *v, int sz, int rd)
	{
		size = sz;
		read_pct = rd;
		const uint64_t range = 2 * static_cast<uint64_t>(size);
		int ret = CreateTree(v, range);
		if (ret != 0)
			return ret;
		bench::Rng rng(12345);
		return Fill(static_cast<uint64_t>(size), [&](uint64_t) { return 1 + rng.Below(range); });
	}

	void Report(benchmark::State &state)
	{
		ReportTree(state);
		state.counters["size"] = size;
		state.counters["read_pct"] = read_pct;
	}
};

void BM_Sweep(benchmark::State &state, const Variant *v, int size, int read_pct)
{
	const uint64_t range = 2 * static_cast<uint64_t>(size);
	// r < read_pct: lookup; r < insert_below: insert; else delete.
	const uint64_t insert_below = static_cast<uint64_t>(read_pct + (100 - read_pct) / 2);
	bench::ThreadRun<SweepFixture> run(state, v, size, read_pct);
	ds_bztree_thread *h = run.handle();
	bench::Rng rng(run.Seed());
	Counts c;

	for (auto _ : state) {
		const uint64_t key = 1 + rng.Below(range);
		const uint64_t r = rng.Below(100);
		int ret;

		if (r < static_cast<uint64_t>(read_pct)) {
			uint64_t val;
			ret = ds_bztree_lookup(h, key, &val);
			benchmark::DoNotOptimize(val);
		} else if (r < insert_below) {
			ret = ds_bztree_insert(h, key, key);
			c.inserted += ret > 0;
		} else {
			ret = ds_bztree_remove(h, key);
			c.removed += ret > 0;
		}
		if (ret < 0) {
			OpError(state, &c, ret, "ds_bztree");
			continue;
		}
		c.ops++;
	}
	c.attempts = c.ops;
	c.updates = c.inserted + c.removed;
	run.Finish(&c);
}

// ---- Part 2: YCSB-like mixes on a large tree ----------------------------

using bench::Zipf; // benchmarks/zipf.h

constexpr double kZipfTheta = 0.99;
constexpr unsigned kMaxScan = 100;

struct Workload {
	char name;
	unsigned read_pct;   // A/B/C: reads, the rest updates
	bool scan_insert;    // E: scans, the rest inserts
};

const std::vector<Workload> &Workloads()
{
	static const std::vector<Workload> w = {
		{ 'A', 50, false }, { 'B', 95, false }, { 'C', 100, false }, { 'E', 95, true },
	};
	return w;
}

// A backend of part 2: a tree variant, or the map (variant null).
struct Backend {
	std::string label;
	const Variant *variant;
};

const std::vector<Backend> &Backends()
{
	static const std::vector<Backend> b = [] {
		std::vector<Backend> r;
		const auto &v = mcasbench::Variants();
		r.push_back({ "aopt-vol", &v[0] });
		r.push_back({ "rwlock-map", nullptr });
		if (YcsbPm()) {
			r.push_back({ "aopt-pm", &v[2] });
			r.push_back({ "pmwcas-pm", &v[3] });
		}
		return r;
	}();
	return b;
}

struct YcsbFixture : TreeFixture {
	uint64_t records = 0;                // loaded records
	std::atomic<uint64_t> next_record;   // E: the next record to insert
	std::unique_ptr<Zipf> zipf;
	char wl = 'A';

	int Create(const Backend *b, const Workload *w, uint64_t n)
	{
		records = n;
		wl = w->name;
		next_record = n;
		zipf = std::make_unique<Zipf>(n, kZipfTheta);
		// E inserts: room for a quarter more keys in a persistent arena.
		int ret = CreateTree(b->variant, n + n / 4 + 65536);
		if (ret != 0)
			return ret;
		// Load the records in a random order (a permutation by a
		// multiplier coprime with n, i.e. odd and not sharing a factor).
		uint64_t mult = 0x9E3779B97F4A7C15ull % n | 1;
		while (std::gcd(mult, n) != 1)
			mult += 2;
		return Fill(n, [&](uint64_t i) {
			return Mix(static_cast<uint64_t>((static_cast<unsigned __int128>(i) * mult) % n));
		});
	}

	void Report(benchmark::State &state)
	{
		ReportTree(state);
		state.counters["records"] = static_cast<double>(records);
		state.counters["scan_pairs_per_op"] = bench::Ratio(total.scanned, total.ops);
	}
};

void BM_Ycsb(benchmark::State &state, const Backend *b, const Workload *w, uint64_t n)
{
	bench::ThreadRun<YcsbFixture> run(state, b, w, n);
	YcsbFixture *f = run.fixture();
	ds_bztree_thread *h = run.handle();
	const bool map = b->variant == nullptr;
	bench::Rng rng(run.Seed());
	Counts c;
	uint64_t keys[kMaxScan], vals[kMaxScan];

	for (auto _ : state) {
		const uint64_t r = rng.Below(100);
		int ret = 0;

		if (w->scan_insert && r >= w->read_pct) {
			// Insert a new record.
			const uint64_t rec = f->next_record.fetch_add(1, std::memory_order_relaxed);
			const uint64_t key = Mix(rec);
			if (map) {
				std::unique_lock<std::shared_mutex> lk(f->map_mu);
				ret = f->map.emplace(key, rec).second ? 1 : 0;
			} else {
				ret = ds_bztree_insert(h, key, rec);
			}
			c.inserted += ret > 0;
		} else {
			const uint64_t key = Mix(f->zipf->Next(rng));
			if (w->scan_insert) {
				const size_t len = 1 + rng.Below(kMaxScan);
				size_t got = 0;
				if (map) {
					std::shared_lock<std::shared_mutex> lk(f->map_mu);
					for (auto it = f->map.lower_bound(key);
					     it != f->map.end() && got < len; ++it, ++got) {
						keys[got] = it->first;
						vals[got] = it->second;
					}
				} else {
					got = ds_bztree_scan(h, key, len, keys, vals);
				}
				benchmark::DoNotOptimize(keys);
				benchmark::DoNotOptimize(vals);
				c.scanned += got;
			} else if (r < w->read_pct) {
				uint64_t val = 0;
				if (map) {
					std::shared_lock<std::shared_mutex> lk(f->map_mu);
					auto it = f->map.find(key);
					ret = it != f->map.end();
					if (ret)
						val = it->second;
				} else {
					ret = ds_bztree_lookup(h, key, &val);
				}
				benchmark::DoNotOptimize(val);
			} else {
				const uint64_t val = rng.Next();
				if (map) {
					std::unique_lock<std::shared_mutex> lk(f->map_mu);
					auto it = f->map.find(key);
					ret = it != f->map.end();
					if (ret)
						it->second = val;
				} else {
					ret = ds_bztree_update(h, key, val);
				}
				c.replaced += ret > 0;
			}
		}
		if (ret < 0) {
			OpError(state, &c, ret, "ds_bztree");
			continue;
		}
		c.ops++;
	}
	c.attempts = c.ops;
	c.updates = c.inserted + c.replaced;
	run.Finish(&c);
}

// Part 1: sizes, read percentages, thread counts, then the variants (each
// AOPT right before its baseline). Part 2: workloads, thread counts, then
// the backends (aopt-vol right before rwlock-map, aopt-pm before pmwcas-pm).
void RegisterAll()
{
	mcasbench::RegisterSizeReadSweep("bztree", { 16, 512, 4096 }, BM_Sweep);
	const uint64_t n = LargeKeys();
	for (const Workload &w : Workloads())
		for (int threads : bench::ThreadCounts())
			for (const Backend &b : Backends())
				bench::Register("ycsb/" + b.label + "/wl:" + std::string(1, w.name) +
						"/keys:" + std::to_string(n),
					threads, BM_Ycsb, &b, &w, n);
}

void AddContext()
{
	mcasbench::AddContext();
	benchmark::AddCustomContext("bztree_node_capacity", std::to_string(Capacity()));
	benchmark::AddCustomContext("bztree_large_keys", std::to_string(LargeKeys()));
	benchmark::AddCustomContext("ycsb_zipf_theta", "0.99");
}

void Cleanup()
{
	bench::ThreadRun<SweepFixture>::Release();
	bench::ThreadRun<YcsbFixture>::Release();
}

} // namespace

int main(int argc, char **argv)
{
	return bench::Main(argc, argv,
		{ "bztree_bench", "MCAS_BENCH_POOL_DIR", RegisterAll, AddContext, Cleanup });
}
