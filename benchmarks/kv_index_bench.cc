// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/kv_index_bench.cc -- latency, throughput and round trips of
// the replicated key index (kv/index.h) on 1 or 3 memory nodes, some of
// them down, with 1..8 client threads.
//
// One configuration = transport x nodes x down x threads. For each, the
// bench makes fresh nodes in this process (rdma/node.h: pools in
// --pool-dir, default /dev/shm, one index region, PMEM durability with
// PMEM_IS_PMEM_FORCE=1 so persists are real clwb + sfence):
//   local  clients reach the pools as "local:<pool>" (the CXL model: the
//          client thread does every load, CAS and flush itself);
//   tcp    each node also serves ofi+tcp on 127.0.0.1 (rdma_node_serve,
//          TCP backend only, one busy-polling progress thread per node,
//          in this process -- not daemons), clients use ofi+tcp://.
// kv_index_create formats the group (client id 0, closed again). Then the
// last --down nodes are taken away, so every client sees them down from
// its open on: local -- the node is closed and its pool and node file are
// removed (the URI names a pool that does not exist); tcp -- the node is
// closed, so its control port is closed. Nodes are never restarted.
//
// Every thread opens its own handle (client id 1 + thread index), waits
// --settle-ms (kv_index_open returns once f+1 nodes are connected; the
// others join moments later, and the operations before that take the
// classic path and leave those nodes' words behind), and runs the
// workloads one after another, all threads together, between barriers:
//   load         insert --keys keys (thread t the ids = t mod threads),
//                from an empty index: splits included, hints cold;
//   warm         untimed warm-up lookups, each thread in its own order.
//                A handle keeps a depth hint per 12-bit hash prefix
//                (kv/src/index/index.c, ix_locate) and starts a lookup of a
//                prefix it has not seen at the root, one round trip per
//                level of the tree. --warm full: 4096 lookups of absent
//                keys, one for each value of the low 12 bits of the hash
//                (the bench computes it as the index does, XXH3_64bits of
//                the key), so every later operation starts at the right
//                depth; --warm keys: every key the lookups will use once
//                (the loaded keys and the absent pool), so the lookups are
//                in their steady state but inserts of new keys may still
//                meet unseen prefixes; --warm off. The warm workload's own
//                numbers show the cold cost;
//   lookup_hit   lookups of random loaded keys (expect their location);
//   lookup_miss  lookups of random keys of a pool of --absent keys never
//                inserted (expect -ENOENT);
//   insert       inserts of new keys at new locations (expect 0).
// A workload runs for --duration-ms or until its op count (--ops for the
// lookups, --insert-ops for inserts; totals split evenly over the threads)
// is done, whichever is first. The random choices come from --seed.
//
// Keys live in a table in this process indexed by location, which key_at
// answers from: a location is owned by one thread, which writes the key
// there before it inserts it and never rewrites it; the key's length is
// published with a release store that key_at's acquire load pairs with, so
// a reader either sees length 0 (-ENOENT) or the whole key.
//
// Per operation: CLOCK_MONOTONIC latency, and the difference of
// kv_index_stats.rounds around it (round trips; the transport counts one
// per parallel batch, whatever the node count). Per workload: ops/s (ops
// over the span from the barrier to the last thread's end), latency
// p50/p90/p99/max, round trips p50/p99/max, a round-trip histogram, the
// mean per op of fast rounds, fast rounds won, classic resolves, splits,
// key_at calls and forwards followed, errors by code and wrong answers.
// Output: one JSON line per configuration on stdout (progress on stderr).
//
// CPUs (--pin): with tcp, every node's progress thread busy-polls, and so
// does every client waiting for a round; on a 2-core machine a node thread
// that shares a core with a spinning client waits for the scheduler tick
// (4 ms) on every round. --pin split (the default for tcp) runs the nodes'
// threads (created inside rdma_node_serve, which inherit the creating
// thread's CPU mask) on the last CPU and the clients on the others.
//
// A watchdog ends the process (exit 3, after printing a JSON line with
// "hang") if one index call runs longer than --stall-ms: the index's own
// limit is timeout_ms (5000 by default), after which it must return
// KV_E_UNAVAILABLE.
//
// Exit status: 0 done (errors of the index are in the JSON, "ok": false);
// 1 setup failed; 3 an index call hung; 64 bad usage.
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <xxhash.h>

#include <kv/index.h>
#include <pm/error.h>
#include <rdma/node.h>
#include <rdma/rdma.h>

#include "benchmarks/node_bench.h"

namespace {

using nodebench::BadValue;
using nodebench::Barrier;
using nodebench::CpuSplit;
using nodebench::JsonStr;
using nodebench::Mix;
using nodebench::Nodes;
using nodebench::NowNs;
using nodebench::ParseUnsigned;
using nodebench::Pct;
using nodebench::Rng;
using nodebench::SplitList;

constexpr int kExitOk = 0;
constexpr int kExitSetup = 1;
constexpr int kExitHang = 3;
constexpr int kExitUsage = 64;

constexpr unsigned kMaxThreads = 15; // client ids 1..15; 0 creates
constexpr unsigned kMaxClients = kMaxThreads + 1;
constexpr unsigned kKeyMax = 28;     // bytes of a key in the table
constexpr unsigned kMaxErrors = 10;  // a thread leaves a workload after this many

const char kUsage[] =
	"Usage: kv_index_bench [options]\n"
	"Latency, throughput and round trips of kv/index.h; one JSON line per\n"
	"configuration (transport x nodes x down x threads) on stdout.\n"
	"\n"
	"  --transport T       local | tcp (default local)\n"
	"  --nodes N           memory nodes, 1 or 3 (also 5, 7; default 3)\n"
	"  --down K            nodes unreachable from the start (default 0)\n"
	"  --threads LIST      client threads, 1..15, comma-separated; one\n"
	"                      configuration each, on fresh nodes (default 1)\n"
	"  --keys N            keys loaded before the lookups (default 4096)\n"
	"  --warm MODE         warm-up lookups per thread: full (one per 12-bit\n"
	"                      hash prefix), keys (each key the lookups use),\n"
	"                      off (default full)\n"
	"  --absent N          pool of absent keys lookup_miss draws from\n"
	"                      (default 4096)\n"
	"  --duration-ms MS    each workload's limit (default 1000)\n"
	"  --ops N             lookups per lookup workload, all threads (default 200000)\n"
	"  --insert-ops N      inserts of the insert workload, all threads (default 40000)\n"
	"  --workloads LIST    of lookup_hit,lookup_miss,insert (default all; load\n"
	"                      and warm always run)\n"
	"  --seed S            random seed (default 1)\n"
	"  --timeout-ms MS     kv_index_config.timeout_ms (default 5000)\n"
	"  --settle-ms MS      pause after each open, before the load (default 300)\n"
	"  --pin auto|split|none\n"
	"                      split: the nodes' threads on the last CPU, the\n"
	"                      clients on the others; auto: split for tcp (default)\n"
	"  --stall-ms MS       watchdog: one call longer than this is a hang\n"
	"                      (default 3 x timeout)\n"
	"  --region-mb MB      index region per node (default 128)\n"
	"  --pool-dir DIR      pool directory (default /dev/shm)\n"
	"  --label TEXT        copied into the JSON\n"
	"  -h, --help\n"
	"Exit status: 0 done (index errors are in the JSON); 1 setup failed;\n"
	"3 an index call hung; 64 bad usage.\n";

struct Options {
	std::string transport = "local";
	unsigned nodes = 3;
	unsigned down = 0;
	std::vector<unsigned> threads = { 1 };
	unsigned keys = 4096;
	std::string warm = "full";
	unsigned absent = 4096;
	unsigned duration_ms = 1000;
	unsigned ops = 200000;
	unsigned insert_ops = 40000;
	std::vector<std::string> workloads = { "lookup_hit", "lookup_miss", "insert" };
	uint64_t seed = 1;
	unsigned timeout_ms = 5000;
	unsigned settle_ms = 300;
	std::string pin = "auto";
	unsigned stall_ms = 0; // 0: 3 x timeout_ms
	unsigned region_mb = 128;
	std::string pool_dir = "/dev/shm";
	std::string label;
};

// The key of id @id: "kvb-" and 16 hex digits of a mix of the id and the
// seed (20 bytes). Ids: loaded keys 0..keys-1; new keys bit 61 set;
// absent keys bit 62 set (never inserted).
constexpr uint64_t kNewBit = 1ull << 61;
constexpr uint64_t kAbsentBit = 1ull << 62;

size_t KeyOf(uint64_t id, uint64_t seed, char *out)
{
	return static_cast<size_t>(snprintf(out, kKeyMax, "kvb-%016llx",
		static_cast<unsigned long long>(Mix(id ^ Mix(seed)))));
}

// The key table key_at answers from: one slot per location. Location
// 1 + t * per_thread + j is thread t's j-th (0 is never used).
struct KeySlot {
	std::atomic<uint32_t> len{ 0 }; // 0: no key here yet
	char key[kKeyMax];
};
static_assert(sizeof(KeySlot) == 32, "one slot");

class KeyTable {
public:
	KeyTable(unsigned threads, uint64_t per_thread)
		: per_thread_(per_thread), n_(threads * per_thread + 1),
		  slots_(new KeySlot[n_])
	{
	}
	uint64_t Loc(unsigned t, uint64_t j) const { return 1 + t * per_thread_ + j; }
	uint64_t per_thread() const { return per_thread_; }

	// Thread owning @loc only, once per location, before the insert.
	void Put(uint64_t loc, const char *key, size_t len)
	{
		KeySlot &s = slots_[loc];

		memcpy(s.key, key, len);
		// release: the key bytes before the length; pairs with the
		// acquire load in KeyAt()
		s.len.store(static_cast<uint32_t>(len), std::memory_order_release);
	}

	// kv_index_key_fn; @ctx is the KeyTable.
	static int KeyAt(void *ctx, uint64_t loc, void *buf, size_t cap, size_t *len)
	{
		KeyTable *t = static_cast<KeyTable *>(ctx);

		if (loc == 0 || loc >= t->n_)
			return -ENOENT;
		const KeySlot &s = t->slots_[loc];
		// acquire: pairs with the release store in Put(), so the
		// bytes read below are the whole key
		uint32_t n = s.len.load(std::memory_order_acquire);
		if (n == 0)
			return -ENOENT;
		if (n > cap)
			return -ENOBUFS;
		memcpy(buf, s.key, n);
		*len = n;
		return 0;
	}

private:
	uint64_t per_thread_;
	uint64_t n_;
	std::unique_ptr<KeySlot[]> slots_;
};

// One operation's measurements.
struct Sample {
	uint64_t ns;
	uint32_t rounds;
};

// What one thread did in one workload.
struct Part {
	std::vector<Sample> samples;
	kv_index_stats st{};   // difference over the workload
	uint64_t start_ns = 0, end_ns = 0;
	uint64_t wrong = 0;    // answers that contradict what was inserted
	std::map<int, uint64_t> errors; // by code
	std::string first_error;
	std::string first_wrong; // what the first wrong answer was
};

// What the watchdog sees of a thread.
struct Watch {
	std::atomic<uint64_t> op_start{ 0 }; // CLOCK_MONOTONIC ns of the call in progress; 0 none
	std::atomic<int> phase{ -1 };        // index into kPhases, -1 none
	std::atomic<uint64_t> done{ 0 };     // calls finished in the phase
};

const char *const kPhases[] = { "open", "load", "warm", "lookup_hit", "lookup_miss", "insert",
	"check" };
enum Phase { kOpen, kLoad, kWarm, kLookupHit, kLookupMiss, kInsert, kCheck, kNPhases };

// Ids of keys never inserted whose hashes (as the index computes them)
// cover every value of the low @bits bits.
std::vector<uint64_t> PrefixIds(uint64_t seed, unsigned bits)
{
	const uint64_t n = 1ull << bits;
	std::vector<uint64_t> ids(n, 0);
	uint64_t left = n;
	char key[kKeyMax];

	for (uint64_t i = 0; left > 0; i++) {
		const uint64_t id = kAbsentBit | 1ull << 60 | i;
		size_t len = KeyOf(id, seed, key);
		uint64_t p = XXH3_64bits(key, len) & (n - 1);
		if (ids[p] == 0) {
			ids[p] = id;
			left--;
		}
	}
	return ids;
}

// The id of the @i-th key of the absent pool.
uint64_t AbsentId(uint64_t i)
{
	return kAbsentBit | i;
}

struct Config {
	const Options *o;
	unsigned threads;
	std::vector<std::string> uris;
	std::vector<const char *> uri_ptrs;
	KeyTable *table;
	std::vector<uint64_t> warm_ids; // the warm-up's key ids (--warm)
	// Per loaded id: 1 if its insert failed (KV_E_UNAVAILABLE: it may or
	// may not have taken effect), so a lookup may find it or not. Written
	// by the loading thread before the barrier after the load, read after.
	std::vector<uint8_t> uncertain;
};

// One configuration's shared state.
struct Run {
	Config c;
	Barrier barrier;
	std::vector<Watch> watch;
	// parts[phase][thread]
	std::vector<std::vector<Part>> parts;
	std::vector<std::string> open_error;
	std::vector<uint64_t> open_ns;
	explicit Run(unsigned threads)
		: barrier(threads), watch(threads), parts(kNPhases, std::vector<Part>(threads)),
		  open_error(threads), open_ns(threads)
	{
	}
};

std::atomic<bool> g_stop_watchdog{ false };

std::string ErrName(int code)
{
	switch (code) {
	case -ENOENT:
		return "ENOENT";
	case -EINVAL:
		return "EINVAL";
	case -ENOSPC:
		return "ENOSPC";
	case -ENOMEM:
		return "ENOMEM";
	case KV_E_UNAVAILABLE:
		return "KV_E_UNAVAILABLE";
	case KV_E_EXISTS:
		return "KV_E_EXISTS";
	case KV_E_GROUP:
		return "KV_E_GROUP";
	default:
		return std::to_string(code) + " " + pm_strerror(code);
	}
}

// Counts a wrong answer: @rc and @got for the key of id @id, expected
// @want (0: absent).
void RecordWrong(Part *p, const char *what, uint64_t opno, uint64_t id, int rc, uint64_t got,
	uint64_t want)
{
	p->wrong++;
	if (p->first_wrong.empty()) {
		char b[256];
		snprintf(b, sizeof(b), "%s #%llu: key id %#llx: returned %s, location %llu; expected %s %llu",
			what, static_cast<unsigned long long>(opno), static_cast<unsigned long long>(id),
			rc == 0 ? "0" : ErrName(rc).c_str(), static_cast<unsigned long long>(got),
			want == 0 ? "absent" : "location", static_cast<unsigned long long>(want));
		p->first_wrong = b;
	}
}

void RecordError(Part *p, int code, const char *what, uint64_t opno)
{
	p->errors[code]++;
	if (p->first_error.empty())
		p->first_error = std::string(what) + " #" + std::to_string(opno) + ": " +
			ErrName(code) + ": " + pm_errormsg();
}

// One workload of thread @t on handle @ix. @fn(i, &rng) does op i and
// returns true if the thread should go on.
template <class Fn>
void Workload(Run *r, unsigned t, kv_index *ix, Phase ph, uint64_t cap, bool timed, Fn fn)
{
	const Options &o = *r->c.o;
	Part &p = r->parts[ph][t];
	Watch &w = r->watch[t];
	kv_index_stats before, after, s0, s1;
	Rng rng{ Mix(o.seed * 1000003u + static_cast<uint64_t>(ph) * 131u + t) };

	p.samples.reserve(std::min<uint64_t>(cap, 1u << 20));
	r->barrier.Wait();
	w.done.store(0, std::memory_order_relaxed);
	w.phase.store(ph, std::memory_order_relaxed);
	kv_index_stats_read(ix, &before);
	p.start_ns = NowNs();
	const uint64_t stop = p.start_ns + static_cast<uint64_t>(o.duration_ms) * 1000000u;
	for (uint64_t i = 0; i < cap; i++) {
		kv_index_stats_read(ix, &s0);
		const uint64_t t0 = NowNs();
		// relaxed: the watchdog only reads a timestamp
		w.op_start.store(t0, std::memory_order_relaxed);
		bool go_on = fn(i, &rng, &p);
		const uint64_t t1 = NowNs();
		w.op_start.store(0, std::memory_order_relaxed);
		w.done.fetch_add(1, std::memory_order_relaxed);
		kv_index_stats_read(ix, &s1);
		p.samples.push_back({ t1 - t0, static_cast<uint32_t>(s1.rounds - s0.rounds) });
		uint64_t nerr = 0;
		for (const auto &e : p.errors)
			nerr += e.second;
		if (!go_on || nerr >= kMaxErrors || (timed && t1 >= stop))
			break;
	}
	p.end_ns = NowNs();
	kv_index_stats_read(ix, &after);
	p.st.ops = after.ops - before.ops;
	p.st.rounds = after.rounds - before.rounds;
	p.st.fast = after.fast - before.fast;
	p.st.fast_won = after.fast_won - before.fast_won;
	p.st.resolves = after.resolves - before.resolves;
	p.st.splits = after.splits - before.splits;
	p.st.key_reads = after.key_reads - before.key_reads;
	p.st.forwards = after.forwards - before.forwards;
	p.st.unavailable = after.unavailable - before.unavailable;
	p.st.bad_words = after.bad_words - before.bad_words;
	w.phase.store(-1, std::memory_order_relaxed);
}

bool Wants(const Options &o, const char *w)
{
	return std::find(o.workloads.begin(), o.workloads.end(), w) != o.workloads.end();
}

void Worker(Run *r, unsigned t)
{
	const Options &o = *r->c.o;
	const unsigned T = r->c.threads;
	KeyTable &table = *r->c.table;
	Watch &w = r->watch[t];
	kv_index *ix = nullptr;
	char key[kKeyMax];

	kv_index_config cfg;
	kv_index_config_init(&cfg);
	cfg.nodes = r->c.uri_ptrs.data();
	cfg.nnodes = static_cast<unsigned>(r->c.uri_ptrs.size());
	cfg.client_id = 1 + t;
	cfg.timeout_ms = o.timeout_ms;
	cfg.key_at = KeyTable::KeyAt;
	cfg.key_ctx = &table;

	w.phase.store(kOpen, std::memory_order_relaxed);
	const uint64_t t0 = NowNs();
	w.op_start.store(t0, std::memory_order_relaxed);
	int ret = kv_index_open(&ix, &cfg);
	w.op_start.store(0, std::memory_order_relaxed);
	r->open_ns[t] = NowNs() - t0;
	if (ret != 0)
		r->open_error[t] = ErrName(ret) + ": " + pm_errormsg();
	if (o.settle_ms > 0) {
		struct timespec ts = { static_cast<time_t>(o.settle_ms / 1000),
			static_cast<long>(o.settle_ms % 1000) * 1000000 };
		nanosleep(&ts, nullptr);
	}

	// Without a handle the thread still meets every barrier.
	auto run = [&](Phase ph, uint64_t cap, bool timed, auto fn) {
		if (ix == nullptr) {
			r->barrier.Wait();
			return;
		}
		Workload(r, t, ix, ph, cap, timed, fn);
	};

	// load: ids t, t + T, ... below keys, at locations j = id / T
	const uint64_t mine = o.keys / T + (t < o.keys % T ? 1 : 0);
	run(kLoad, mine, false, [&](uint64_t i, Rng *, Part *p) {
		const uint64_t id = i * T + t, loc = table.Loc(t, i);
		size_t len = KeyOf(id, o.seed, key);
		table.Put(loc, key, len);
		uint64_t existing = 0;
		int rc = kv_index_insert(ix, key, len, loc, &existing);
		if (rc == KV_E_EXISTS)
			RecordWrong(p, "load insert", i, id, rc, existing, 0);
		else if (rc != 0)
			RecordError(p, rc, "load insert", i);
		if (rc != 0)
			r->c.uncertain[id] = 1;
		return true;
	});
	// the location a loaded id was inserted at
	auto loaded_loc = [&](uint64_t id) { return table.Loc(static_cast<unsigned>(id % T), id / T); };
	auto lookup_hit = [&](uint64_t i, Rng *rng, Part *p) {
		const uint64_t id = rng->Below(o.keys);
		size_t len = KeyOf(id, o.seed, key);
		uint64_t loc = 0;
		int rc = kv_index_lookup(ix, key, len, &loc);
		if ((rc == 0 && loc != loaded_loc(id)) || (rc == -ENOENT && !r->c.uncertain[id]))
			RecordWrong(p, "lookup of a loaded key", i, id, rc, loc, loaded_loc(id));
		else if (rc != 0 && rc != -ENOENT)
			RecordError(p, rc, "lookup of a loaded key", i);
		return true;
	};
	// warm: the warm-up ids in an order of the thread's own
	std::vector<uint64_t> wids = r->c.warm_ids;
	Rng shuffle{ Mix(o.seed ^ (0x5151ull + t)) };
	for (size_t i = wids.size(); i > 1; i--)
		std::swap(wids[i - 1], wids[shuffle.Below(i)]);
	run(kWarm, wids.size(), false, [&](uint64_t i, Rng *, Part *p) {
		const uint64_t id = wids[i];
		size_t len = KeyOf(id, o.seed, key);
		uint64_t loc = 0;
		int rc = kv_index_lookup(ix, key, len, &loc);
		const bool present = id < o.keys;
		if ((rc == 0 && (!present || loc != loaded_loc(id))) ||
			(rc == -ENOENT && present && !r->c.uncertain[id]))
			RecordWrong(p, "warm-up lookup", i, id, rc, loc, present ? loaded_loc(id) : 0);
		else if (rc != 0 && rc != -ENOENT)
			RecordError(p, rc, "warm-up lookup", i);
		return true;
	});
	if (Wants(o, "lookup_hit"))
		run(kLookupHit, o.keys > 0 ? std::max(1u, o.ops / T) : 0, true, lookup_hit);
	if (Wants(o, "lookup_miss"))
		run(kLookupMiss, std::max(1u, o.ops / T), true, [&](uint64_t i, Rng *rng, Part *p) {
			const uint64_t id = AbsentId(rng->Below(o.absent));
			size_t len = KeyOf(id, o.seed, key);
			uint64_t loc = 0;
			int rc = kv_index_lookup(ix, key, len, &loc);
			if (rc == 0)
				RecordWrong(p, "lookup of an absent key", i, id, rc, loc, 0);
			else if (rc != -ENOENT)
				RecordError(p, rc, "lookup of an absent key", i);
			return true;
		});
	uint64_t inserted = 0;
	std::vector<uint8_t> ins_uncertain; // per insert: it failed (see Config::uncertain)
	if (Wants(o, "insert"))
		run(kInsert, std::max(1u, o.insert_ops / T), true, [&](uint64_t i, Rng *, Part *p) {
			const uint64_t id = kNewBit | static_cast<uint64_t>(t) << 40 | i;
			const uint64_t loc = table.Loc(t, mine + i);
			size_t len = KeyOf(id, o.seed, key);
			table.Put(loc, key, len);
			uint64_t existing = 0;
			int rc = kv_index_insert(ix, key, len, loc, &existing);
			inserted = i + 1;
			ins_uncertain.push_back(rc != 0);
			if (rc == KV_E_EXISTS)
				RecordWrong(p, "insert of a new key", i, id, rc, existing, 0);
			else if (rc != 0)
				RecordError(p, rc, "insert of a new key", i);
			return true;
		});
	// check: the last (up to) 64 keys this thread inserted are there
	const uint64_t from = inserted > 64 ? inserted - 64 : 0;
	run(kCheck, inserted - from, false, [&](uint64_t i, Rng *, Part *p) {
		const uint64_t id = kNewBit | static_cast<uint64_t>(t) << 40 | (from + i);
		size_t len = KeyOf(id, o.seed, key);
		uint64_t loc = 0;
		int rc = kv_index_lookup(ix, key, len, &loc);
		if ((rc == 0 && loc != table.Loc(t, mine + from + i)) ||
			(rc == -ENOENT && !ins_uncertain[from + i]))
			RecordWrong(p, "check lookup", i, id, rc, loc, table.Loc(t, mine + from + i));
		else if (rc != 0 && rc != -ENOENT)
			RecordError(p, rc, "check lookup", i);
		return true;
	});
	w.phase.store(-1, std::memory_order_relaxed);
	kv_index_close(&ix);
}

// The watchdog: a call running longer than @stall_ns is a hang. Prints a
// JSON line and ends the process.
void Watchdog(Run *r, const std::string &config_json, uint64_t stall_ns)
{
	while (!g_stop_watchdog.load(std::memory_order_relaxed)) {
		struct timespec ts = { 0, 100 * 1000000 };
		nanosleep(&ts, nullptr);
		for (size_t t = 0; t < r->watch.size(); t++) {
			uint64_t s = r->watch[t].op_start.load(std::memory_order_relaxed);
			const uint64_t now = NowNs(); // after s: a call started later is not older
			if (s == 0 || now < s || now - s < stall_ns)
				continue;
			std::ostringstream j;
			j << "{" << config_json << ",\"hang\":{\"thread\":" << t << ",\"phase\":\"";
			int ph = r->watch[t].phase.load(std::memory_order_relaxed);
			j << (ph >= 0 && ph < kNPhases ? kPhases[ph] : "?") << "\",\"call_ms\":"
			  << (now - s) / 1000000 << ",\"calls_done_in_phase\":"
			  << r->watch[t].done.load(std::memory_order_relaxed) << "},\"ok\":false}";
			std::printf("%s\n", j.str().c_str());
			std::fflush(stdout);
			std::fprintf(stderr, "kv_index_bench: HANG: thread %zu in %s, one call running for %llu ms\n",
				t, ph >= 0 && ph < kNPhases ? kPhases[ph] : "?",
				static_cast<unsigned long long>((now - s) / 1000000));
			_exit(kExitHang);
		}
	}
}

// The JSON object of phase @ph over every thread; adds its errors and
// wrong answers to *@bad.
std::string PhaseJson(const Run &r, Phase ph, uint64_t *bad)
{
	std::vector<uint64_t> lat, rounds;
	kv_index_stats st{};
	uint64_t start = UINT64_MAX, end = 0, wrong = 0;
	std::map<int, uint64_t> errors;
	std::string first, first_wrong;

	for (const Part &p : r.parts[ph]) {
		for (const Sample &s : p.samples) {
			lat.push_back(s.ns);
			rounds.push_back(s.rounds);
		}
		if (!p.samples.empty()) {
			start = std::min(start, p.start_ns);
			end = std::max(end, p.end_ns);
		}
		st.ops += p.st.ops;
		st.rounds += p.st.rounds;
		st.fast += p.st.fast;
		st.fast_won += p.st.fast_won;
		st.resolves += p.st.resolves;
		st.splits += p.st.splits;
		st.key_reads += p.st.key_reads;
		st.forwards += p.st.forwards;
		st.unavailable += p.st.unavailable;
		st.bad_words += p.st.bad_words;
		wrong += p.wrong;
		for (const auto &e : p.errors)
			errors[e.first] += e.second;
		if (first.empty())
			first = p.first_error;
		if (first_wrong.empty())
			first_wrong = p.first_wrong;
	}
	const uint64_t n = lat.size();
	std::sort(lat.begin(), lat.end());
	std::sort(rounds.begin(), rounds.end());
	const double secs = n > 0 ? static_cast<double>(end - start) / 1e9 : 0;
	const double dn = n > 0 ? static_cast<double>(n) : 1;
	double lat_sum = 0, rt_sum = 0;
	for (uint64_t x : lat)
		lat_sum += static_cast<double>(x);
	for (uint64_t x : rounds)
		rt_sum += static_cast<double>(x);
	std::map<uint64_t, uint64_t> hist;
	for (uint64_t x : rounds)
		hist[x]++;

	std::ostringstream j;
	j.precision(6);
	j << "{\"ops\":" << n << ",\"secs\":" << secs
	  << ",\"ops_per_s\":" << (secs > 0 ? static_cast<double>(n) / secs : 0)
	  << ",\"lat_ns\":{\"p50\":" << Pct(lat, 0.50) << ",\"p90\":" << Pct(lat, 0.90)
	  << ",\"p99\":" << Pct(lat, 0.99) << ",\"max\":" << (n ? lat.back() : 0)
	  << ",\"mean\":" << lat_sum / dn << "}"
	  << ",\"rounds\":{\"p50\":" << Pct(rounds, 0.50) << ",\"p90\":" << Pct(rounds, 0.90)
	  << ",\"p99\":" << Pct(rounds, 0.99) << ",\"max\":" << (n ? rounds.back() : 0)
	  << ",\"mean\":" << rt_sum / dn << ",\"hist\":{";
	bool comma = false;
	for (const auto &h : hist) {
		j << (comma ? "," : "") << "\"" << h.first << "\":" << h.second;
		comma = true;
	}
	j << "}}";
	j << ",\"per_op\":{\"fast\":" << st.fast / dn << ",\"fast_won\":" << st.fast_won / dn
	  << ",\"resolves\":" << st.resolves / dn << ",\"splits\":" << st.splits / dn
	  << ",\"key_reads\":" << st.key_reads / dn << ",\"forwards\":" << st.forwards / dn
	  << "}";
	j << ",\"totals\":{\"index_ops\":" << st.ops << ",\"rounds\":" << st.rounds
	  << ",\"fast\":" << st.fast << ",\"fast_won\":" << st.fast_won
	  << ",\"resolves\":" << st.resolves << ",\"splits\":" << st.splits
	  << ",\"unavailable\":" << st.unavailable << ",\"bad_words\":" << st.bad_words << "}";
	j << ",\"wrong\":" << wrong << ",\"errors\":{";
	comma = false;
	uint64_t nerr = 0;
	for (const auto &e : errors) {
		j << (comma ? "," : "") << JsonStr(ErrName(e.first)) << ":" << e.second;
		comma = true;
		nerr += e.second;
	}
	j << "}";
	if (!first.empty())
		j << ",\"first_error\":" << JsonStr(first);
	if (!first_wrong.empty())
		j << ",\"first_wrong\":" << JsonStr(first_wrong);
	j << "}";
	*bad += nerr + wrong + st.bad_words;
	return j.str();
}

// One configuration with @threads threads; prints its JSON line. Returns
// false if the setup failed.
bool RunConfig(const Options &o, unsigned threads, unsigned seq)
{
	std::ostringstream cj;
	cj << "\"bench\":\"kv_index\",\"transport\":" << JsonStr(o.transport)
	   << ",\"nodes\":" << o.nodes << ",\"down\":" << o.down << ",\"threads\":" << threads
	   << ",\"keys\":" << o.keys << ",\"warm\":" << JsonStr(o.warm) << ",\"absent\":" << o.absent
	   << ",\"duration_ms\":" << o.duration_ms << ",\"ops\":" << o.ops
	   << ",\"insert_ops\":" << o.insert_ops << ",\"seed\":" << o.seed
	   << ",\"timeout_ms\":" << o.timeout_ms << ",\"settle_ms\":" << o.settle_ms
	   << ",\"region_mb\":" << o.region_mb;
	if (!o.label.empty())
		cj << ",\"label\":" << JsonStr(o.label);
	const std::string config_json = cj.str();

	std::fprintf(stderr, "kv_index_bench: %s nodes=%u down=%u threads=%u\n",
		o.transport.c_str(), o.nodes, o.down, threads);
	const uint64_t setup0 = NowNs();
	CpuSplit cpus;
	if (CpuSplit::Wanted(o.pin, o.transport))
		cpus.Split();
	Nodes nodes;
	std::string err = nodes.Open(o.transport, o.nodes, o.pool_dir, "kv_index_bench", seq,
		{ static_cast<uint64_t>(o.region_mb) << 20 });
	cpus.Clients();
	kv_index *creator = nullptr;
	std::vector<const char *> ptrs = nodes.UriPtrs();
	if (err.empty()) {
		kv_index_config cfg;
		kv_index_config_init(&cfg);
		cfg.nodes = ptrs.data();
		cfg.nnodes = static_cast<unsigned>(ptrs.size());
		cfg.client_id = 0;
		cfg.timeout_ms = std::max(o.timeout_ms, 5000u); // creation is not measured
		cfg.max_clients = kMaxClients;
		cfg.key_at = KeyTable::KeyAt;
		cfg.key_ctx = nullptr; // answers nothing: the index is empty
		int ret = kv_index_create(&creator, &cfg);
		if (ret != 0)
			err = "kv_index_create: " + ErrName(ret) + ": " + pm_errormsg();
		kv_index_close(&creator);
	}
	if (!err.empty()) {
		cpus.Restore();
		std::printf("{%s,\"setup_error\":%s,\"ok\":false}\n", config_json.c_str(),
			JsonStr(err).c_str());
		std::fflush(stdout);
		std::fprintf(stderr, "kv_index_bench: %s\n", err.c_str());
		return false;
	}
	for (unsigned i = o.nodes - o.down; i < o.nodes; i++)
		nodes.Down(i);

	const uint64_t per_thread = o.keys / threads + 1 + std::max(1u, o.insert_ops / threads);
	KeyTable table(threads, per_thread);
	Run r(threads);
	r.c.o = &o;
	r.c.threads = threads;
	r.c.uris = nodes.uris();
	for (const auto &u : r.c.uris)
		r.c.uri_ptrs.push_back(u.c_str());
	r.c.table = &table;
	r.c.uncertain.assign(o.keys, 0);
	if (o.warm == "full") {
		r.c.warm_ids = PrefixIds(o.seed, 12);
	} else if (o.warm == "keys") {
		for (uint64_t id = 0; id < o.keys; id++)
			r.c.warm_ids.push_back(id);
		for (uint64_t i = 0; i < o.absent; i++)
			r.c.warm_ids.push_back(AbsentId(i));
	}
	const uint64_t setup_ns = NowNs() - setup0;

	const uint64_t stall_ns = static_cast<uint64_t>(o.stall_ms ? o.stall_ms : 3 * o.timeout_ms) *
		1000000u;
	g_stop_watchdog.store(false);
	std::thread dog(Watchdog, &r, config_json, stall_ns);
	std::vector<std::thread> ws;
	for (unsigned t = 0; t < threads; t++)
		ws.emplace_back(Worker, &r, t);
	for (auto &w : ws)
		w.join();
	g_stop_watchdog.store(true);
	dog.join();
	cpus.Restore();

	uint64_t bad = 0;
	std::ostringstream j;
	j.precision(6);
	j << "{" << config_json << ",\"uris\":[";
	for (size_t i = 0; i < r.c.uris.size(); i++)
		j << (i ? "," : "") << JsonStr(r.c.uris[i]);
	j << "],\"pin\":" << JsonStr(cpus.desc()) << ",\"setup_ms\":" << setup_ns / 1e6 << ",\"open_ms_max\":"
	  << *std::max_element(r.open_ns.begin(), r.open_ns.end()) / 1e6;
	std::string open_err;
	for (unsigned t = 0; t < threads; t++)
		if (!r.open_error[t].empty() && open_err.empty())
			open_err = "thread " + std::to_string(t) + ": " + r.open_error[t];
	if (!open_err.empty())
		j << ",\"open_error\":" << JsonStr(open_err);
	j << ",\"workloads\":{";
	bool comma = false;
	for (int ph = kLoad; ph < kNPhases; ph++) {
		if (ph >= kLookupHit && ph <= kInsert && !Wants(o, kPhases[ph]))
			continue;
		j << (comma ? "," : "") << "\"" << kPhases[ph] << "\":" << PhaseJson(r, static_cast<Phase>(ph), &bad);
		comma = true;
	}
	j << "},\"ok\":" << (bad == 0 && open_err.empty() ? "true" : "false") << "}";
	std::printf("%s\n", j.str().c_str());
	std::fflush(stdout);
	return true;
}

int Usage(const char *msg)
{
	std::fprintf(stderr, "kv_index_bench: %s\n%s", msg, kUsage);
	return kExitUsage;
}

} // namespace

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "transport", required_argument, nullptr, 't' },
		{ "nodes", required_argument, nullptr, 'n' },
		{ "down", required_argument, nullptr, 'd' },
		{ "threads", required_argument, nullptr, 'T' },
		{ "keys", required_argument, nullptr, 'k' },
		{ "warm", required_argument, nullptr, 'w' },
		{ "absent", required_argument, nullptr, 'a' },
		{ "settle-ms", required_argument, nullptr, 'e' },
		{ "pin", required_argument, nullptr, 'P' },
		{ "duration-ms", required_argument, nullptr, 'D' },
		{ "ops", required_argument, nullptr, 'o' },
		{ "insert-ops", required_argument, nullptr, 'i' },
		{ "workloads", required_argument, nullptr, 'W' },
		{ "seed", required_argument, nullptr, 's' },
		{ "timeout-ms", required_argument, nullptr, 'O' },
		{ "stall-ms", required_argument, nullptr, 'S' },
		{ "region-mb", required_argument, nullptr, 'r' },
		{ "pool-dir", required_argument, nullptr, 'p' },
		{ "label", required_argument, nullptr, 'l' },
		{ "help", no_argument, nullptr, 'h' },
		{ nullptr, 0, nullptr, 0 },
	};
	Options o;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, nullptr)) != -1) {
		bool ok = true;
		switch (c) {
		case 't':
			o.transport = optarg;
			ok = o.transport == "local" || o.transport == "tcp";
			break;
		case 'n':
			ok = ParseUnsigned(optarg, &o.nodes, 1, KV_INDEX_MAX_NODES) && o.nodes % 2 == 1;
			break;
		case 'd':
			ok = ParseUnsigned(optarg, &o.down, 0, KV_INDEX_MAX_NODES);
			break;
		case 'T':
			o.threads.clear();
			for (const auto &s : SplitList(optarg)) {
				unsigned v;
				ok = ok && ParseUnsigned(s.c_str(), &v, 1, kMaxThreads);
				o.threads.push_back(v);
			}
			ok = ok && !o.threads.empty();
			break;
		case 'k':
			ok = ParseUnsigned(optarg, &o.keys, 0, 1u << 24);
			break;
		case 'w':
			o.warm = optarg;
			ok = o.warm == "full" || o.warm == "keys" || o.warm == "off";
			break;
		case 'a':
			ok = ParseUnsigned(optarg, &o.absent, 1, 1u << 24);
			break;
		case 'e':
			ok = ParseUnsigned(optarg, &o.settle_ms, 0, 600000);
			break;
		case 'P':
			o.pin = optarg;
			ok = o.pin == "auto" || o.pin == "split" || o.pin == "none";
			break;
		case 'D':
			ok = ParseUnsigned(optarg, &o.duration_ms, 1, 3600000);
			break;
		case 'o':
			ok = ParseUnsigned(optarg, &o.ops, 1, 1u << 26);
			break;
		case 'i':
			ok = ParseUnsigned(optarg, &o.insert_ops, 1, 1u << 24);
			break;
		case 'W':
			o.workloads = SplitList(optarg);
			for (const auto &w : o.workloads)
				ok = ok && (w == "lookup_hit" || w == "lookup_miss" || w == "insert");
			break;
		case 's': {
			char *end;
			o.seed = std::strtoull(optarg, &end, 10);
			ok = *optarg != '\0' && *end == '\0';
			break;
		}
		case 'O':
			ok = ParseUnsigned(optarg, &o.timeout_ms, 1, 600000);
			break;
		case 'S':
			ok = ParseUnsigned(optarg, &o.stall_ms, 1, 3600000);
			break;
		case 'r':
			ok = ParseUnsigned(optarg, &o.region_mb, 1, 1u << 16);
			break;
		case 'p':
			o.pool_dir = optarg;
			break;
		case 'l':
			o.label = optarg;
			break;
		case 'h':
			std::fputs(kUsage, stdout);
			return kExitOk;
		default:
			return Usage("bad option");
		}
		if (!ok)
			return Usage(BadValue(longopts, c).c_str());
	}
	if (optind != argc)
		return Usage("unexpected argument");
	if (o.down > o.nodes)
		return Usage("--down is above --nodes");

	// Real cache-line flushes on the RAM file system, as the other
	// benchmarks (an explicit setting wins).
	setenv("PMEM_IS_PMEM_FORCE", "1", 0);

	unsigned seq = 0;
	for (unsigned threads : o.threads)
		if (!RunConfig(o, threads, seq++))
			return kExitSetup;
	return kExitOk;
}
