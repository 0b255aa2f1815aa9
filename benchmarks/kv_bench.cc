// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/kv_bench.cc -- YCSB A and B on the store (kv/kv.h): SWARM
// against its two baselines in the same code, DM-ABD (2 round trips per
// get and update) and RAW (one unreplicated in-place copy: the latency
// floor), side by side, on three memory nodes, 1..8 client threads with
// 1..64 operations in flight each.
//
// One configuration = transport x workload x value size x threads x
// operations in flight per thread (--inflight). For
// each, every system of --systems runs in turn (default swarm, abd, raw),
// each on a fresh cluster of --nodes nodes made in this process
// (node_bench.h: pools in --pool-dir, default /dev/shm, PMEM durability
// with PMEM_IS_PMEM_FORCE=1, so persists are real clwb + sfence, or with
// --durability msync an msync per persist, for pools on a disk file
// system; local: or ofi+tcp served from the process), with two regions per
// node: region 0 the key index (--index-mb), region 1 the values
// (--store-mb; 0 sizes it from the key count, value size and log). Then,
// for each system:
//   create  kv_create with kv_config.repl = the system, --max-clients,
//           --log-mb (per client per node; see "Logs" below),
//           --cache-entries (8 x keys: the location
//           cache is 4-way set associative by key hash; a miss costs an
//           index lookup);
//   load    --loaders threads, each its own client, insert the --keys
//           keys (key id i to thread i mod loaders), then close (with
//           --load-local, create and load go through local: even on tcp:
//           the pools are the same, and on a core shared by three nodes'
//           progress threads a tcp load of 100000 keys takes most of an
//           hour; with --load-durability pmem and --durability msync the
//           load persists with cache-line flushes, then every pool is
//           written back and its node reopened with msync: on a disk file
//           system a load with an msync per persist takes about 6 ms per
//           key);
//   open    every measuring thread opens its own client (kv_open), or
//           with --inflight N > 1 an asynchronous handle of N clients
//           (kv_async_open: each its own id and cache);
//   warm    each client gets every key once (untimed; fills its location
//           and metadata cache: --warm all; every client of a handle
//           gets each key), or the N most popular ones
//           (--warm N: key ids 0..N-1, the Zipfian's first ranks; for tcp,
//           where a get of every key costs minutes), or none (off);
//   run     for --duration-ms, each thread keeps its operations in flight
//           (one: synchronous calls; more: the closed loop of
//           kv/tools/dmkv/pump.h, dmkv bench's): a get with probability
//           read% (A 50, B 95), else an update, of a key drawn Zipfian
//           (theta 0.99, benchmarks/zipf.h) over the keys.
// Per operation: CLOCK_MONOTONIC latency (submit to completion), and with
// one in flight the difference of kv_stats (rounds + index_rounds: round
// trips) read before and after it. Per op type: ops, ops/s over the run's
// span, latency p50/p90/p99/p99.9/max/mean, round trips
// p50/p99/p99.9/max/mean and a histogram (with more in flight only the
// mean over all types, from the counters' totals). Per system: the
// kv_stats deltas over the run summed over threads (slow_writes,
// write_backs, oop_reads, ...), errors by code and wrong values (a get
// must return --value-size bytes that start with the key's id).
//
// Logs: every update (SWARM: two on a slow write; DM-ABD: one; RAW: none)
// and every insert take a buffer of (40 + value) bytes rounded up to 128
// from the client's log on each node, reused once superseded. Without that
// reuse (swarm-noreuse) a client id's log use grows and survives kv_close,
// so a thread of that system stops its run early once it has used
// --max-updates buffers (0: as many as its log holds, assuming its id
// loaded keys/loaders keys); the JSON says how many threads stopped so
// ("capped"). Threads of the other systems stop only at --max-updates.
//
// Output: one JSON line per configuration and system on stdout (progress
// on stderr). Exit status: 0 done (the store's errors are in the JSON,
// "ok": false); 1 setup failed; 64 bad usage.
#include <getopt.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <kv/kv.h>
#include <pm/error.h>
#include <pm/persist.h>

#include "benchmarks/node_bench.h"
#include "benchmarks/ycsb.h"
#include "benchmarks/zipf.h"
#include "kv/tools/dmkv/pump.h"

namespace {

using nodebench::BadValue;
using nodebench::Barrier;
using nodebench::CpuSplit;
using nodebench::JsonStr;
using nodebench::LatencyJson;
using nodebench::Nodes;
using nodebench::NowNs;
using nodebench::ParseUnsigned;
using nodebench::Pct;
using nodebench::SplitList;
using ycsb::CheckValue;
using ycsb::KeyOf;
using ycsb::kKeyMax;
using ycsb::kZipfTheta;
using ycsb::ReadPct;
using ycsb::ValueOf;

constexpr int kExitOk = 0;
constexpr int kExitSetup = 1;
constexpr int kExitUsage = 64;

constexpr unsigned kMaxThreads = 64;
constexpr unsigned kMaxInflight = 64; // kv_async_open's largest depth
constexpr unsigned kMaxErrors = 10; // a thread leaves a phase after this many
// A log buffer: the value header and the value, in 128-byte units
// (kv/src/store/layout.h, KV_ST_BUF_UNIT).
constexpr uint64_t kBufHeader = 40, kBufUnit = 128;

const char kUsage[] =
	"Usage: kv_bench [options]\n"
	"YCSB A/B on kv/kv.h, SWARM vs DM-ABD vs RAW side by side; one JSON line\n"
	"per configuration (transport x workload x value size x threads) and system.\n"
	"\n"
	"  --transport T       local | tcp (default local)\n"
	"  --workloads LIST    of A (50% get / 50% update), B (95/5) (default A,B)\n"
	"  --value-sizes LIST  value bytes, 1..KV_VALUE_MAX (default 64,1024)\n"
	"  --threads LIST      client threads, 1..64 (default 1)\n"
	"  --inflight LIST     operations in flight per thread, 1..64 (default 1;\n"
	"                      above 1 a thread runs a kv_async handle of that many\n"
	"                      clients: threads x in flight <= --max-clients)\n"
	"  --systems LIST      of swarm, abd, raw, swarm-noreuse (SWARM without the reuse\n"
	"                      of value buffers), in run order (default swarm,abd,raw)\n"
	"  --keys N            keys loaded and drawn from (default 100000)\n"
	"  --nodes N           memory nodes, 1, 3, 5 or 7 (default 3)\n"
	"  --duration-ms MS    the measured run (default 3000)\n"
	"  --warm MODE         all (each client gets every key once) | N (the N most\n"
	"                      popular keys) | off (default all)\n"
	"  --loaders N         threads (clients) that load the keys (default 8)\n"
	"  --max-updates N     updates per thread before it stops (default 0: what\n"
	"                      its log holds)\n"
	"  --max-clients N     kv_config.max_clients (default 16)\n"
	"  --cache-entries N   kv_config.cache_entries (default 0: 8 x keys, at\n"
	"                      least 65536; 4-way set associative by key hash)\n"
	"  --log-mb MB         kv_config.log_bytes in MiB (default 0: 32, 96 for\n"
	"                      values above 256 bytes)\n"
	"  --index-mb MB       index region per node (default 0: from --keys, 64 MiB\n"
	"                      per 100000 keys, at least 16)\n"
	"  --store-mb MB       value region per node (default 0: from keys, values, log)\n"
	"  --seed S            random seed (default 1)\n"
	"  --timeout-ms MS     kv_config.timeout_ms (default 5000)\n"
	"  --pin auto|split|none  as kv_index_bench (default auto: split for tcp)\n"
	"  --node-poll P       adaptive | busy: how the tcp nodes' progress threads\n"
	"                      wait (rdma/node.h; default adaptive, as dmkv-node's)\n"
	"  --pool-dir DIR      pool directory (default /dev/shm)\n"
	"  --durability D      pmem (real cache-line flushes; with PMEM_IS_PMEM_FORCE=1\n"
	"                      on a RAM file system) | msync (any file system) (default pmem)\n"
	"  --load-durability D pmem | msync: persists of the create and load, then\n"
	"                      every pool is written back (fsync) and reopened with\n"
	"                      --durability (default: --durability, no reopen)\n"
	"  --load-local        with tcp: create and load through local: (same pools)\n"
	"  --label TEXT        copied into the JSON\n"
	"  -h, --help\n"
	"Exit status: 0 done (store errors are in the JSON); 1 setup failed; 64 bad usage.\n";

struct Options {
	std::string transport = "local";
	std::vector<std::string> workloads = { "A", "B" };
	std::vector<unsigned> value_sizes = { 64, 1024 };
	std::vector<unsigned> threads = { 1 };
	std::vector<unsigned> inflight = { 1 };
	std::vector<std::string> systems = { "swarm", "abd", "raw" };
	unsigned keys = 100000;
	unsigned nodes = 3;
	unsigned duration_ms = 3000;
	std::string warm = "all";
	unsigned warm_keys = 0; // from warm and keys
	unsigned loaders = 8;
	unsigned max_updates = 0;
	unsigned max_clients = 16;
	unsigned cache_entries = 0;
	unsigned log_mb = 0;
	unsigned index_mb = 0;
	unsigned store_mb = 0;
	uint64_t seed = 1;
	unsigned timeout_ms = 5000;
	std::string pin = "auto";
	std::string node_poll = "adaptive";
	std::string pool_dir = "/dev/shm";
	pm_durability durability = PM_DURABILITY_PMEM;
	pm_durability load_durability = PM_DURABILITY_PMEM; // = durability unless given
	bool load_durability_set = false;
	bool load_local = false;
	std::string label;
};

kv_replication ReplOf(const std::string &s)
{
	return s == "abd" ? KV_REPL_ABD : s == "raw" ? KV_REPL_RAW : KV_REPL_SWARM;
}

// swarm-noreuse: SWARM with kv_config.recycle = 0, the store before value
// buffers were reused (the baseline of recycling's cost).
bool Reuses(const std::string &s)
{
	return s != "swarm-noreuse";
}

uint64_t BufBytes(unsigned vsize)
{
	return (kBufHeader + vsize + kBufUnit - 1) / kBufUnit * kBufUnit;
}

std::string ErrName(int code)
{
	switch (code) {
	case -ENOENT:
		return "ENOENT";
	case -ENOSPC:
		return "ENOSPC";
	case -E2BIG:
		return "E2BIG";
	case -EINVAL:
		return "EINVAL";
	case KV_E_UNAVAILABLE:
		return "KV_E_UNAVAILABLE";
	case KV_E_EXISTS:
		return "KV_E_EXISTS";
	default:
		return std::to_string(code) + " " + pm_strerror(code);
	}
}

// One operation's measurements.
struct Sample {
	uint32_t ns_lo; // latency in ns, saturated at 2^32-1 (4.3 s)
	uint16_t rounds;
	uint8_t type; // 0 get, 1 update
};

enum OpType { kGet, kUpdate, kNTypes };
const char *const kTypeName[] = { "get", "update" };

// What one thread did in one phase.
struct Part {
	std::vector<Sample> samples;
	kv_stats st{}; // difference over the phase
	uint64_t start_ns = 0, end_ns = 0;
	uint64_t wrong = 0;
	bool capped = false;
	bool per_op_rounds = true; // samples' rounds are each operation's
	std::map<int, uint64_t> errors;
	std::string first_error, first_wrong;

	uint64_t NErrors() const
	{
		uint64_t n = 0;
		for (const auto &e : errors)
			n += e.second;
		return n;
	}
	void Error(int code, const char *what, uint64_t opno)
	{
		errors[code]++;
		if (first_error.empty())
			first_error = std::string(what) + " #" + std::to_string(opno) + ": " +
				ErrName(code) + ": " + pm_errormsg();
	}
	void Wrong(const std::string &what)
	{
		if (wrong++ == 0)
			first_wrong = what;
	}
};

enum Phase { kLoad, kWarm, kRun, kNPhases };
const char *const kPhaseName[] = { "load", "warm", "run" };

// One system's run in one configuration.
struct Run {
	const Options *o;
	std::string workload;
	unsigned vsize = 0, threads = 0, loaders = 0;
	unsigned inflight = 1; // per measuring thread
	kv_config cfg{};      // the measuring clients'
	kv_config load_cfg{}; // create and load: cfg, or local: with --load-local
	std::unique_ptr<bench::Zipf> zipf;
	uint64_t update_cap = 0;
	Barrier barrier;
	// parts[phase][thread] (load: per loader)
	std::vector<std::vector<Part>> parts;
	std::vector<std::string> open_error;
	Run(unsigned nthreads, unsigned nloaders)
		: barrier(nthreads), parts(kNPhases), open_error(std::max(nthreads, nloaders))
	{
		parts[kLoad].resize(nloaders);
		parts[kWarm].resize(nthreads);
		parts[kRun].resize(nthreads);
	}
};

kv_stats StatsOf(kv_client *c)
{
	kv_stats s;
	kv_stats_read(c, &s);
	return s;
}

// Every field of kv_stats is a uint64_t (kv/kv.h): counts, and log_used, a
// level whose difference is the log's growth.
constexpr size_t kStatsWords = sizeof(kv_stats) / sizeof(uint64_t);

kv_stats Diff(const kv_stats &a, const kv_stats &b)
{
	kv_stats d;
	uint64_t w[kStatsWords], x[kStatsWords], y[kStatsWords];
	std::memcpy(x, &a, sizeof(a));
	std::memcpy(y, &b, sizeof(b));
	for (size_t i = 0; i < kStatsWords; i++)
		w[i] = x[i] - y[i];
	std::memcpy(&d, w, sizeof(d));
	return d;
}

void Add(kv_stats *a, const kv_stats &b)
{
	uint64_t x[kStatsWords], y[kStatsWords];
	std::memcpy(x, a, sizeof(*a));
	std::memcpy(y, &b, sizeof(b));
	for (size_t i = 0; i < kStatsWords; i++)
		x[i] += y[i];
	std::memcpy(a, x, sizeof(*a));
}

// Does @fn(i, type) for i = 0.. until @n ops, the deadline @stop_ns (0:
// none), an error limit, or @fn returns false; records samples into @p.
template <class Fn>
void Loop(kv_client *c, Part *p, uint64_t n, uint64_t stop_ns, Fn fn)
{
	const kv_stats before = StatsOf(c);
	p->start_ns = NowNs();
	for (uint64_t i = 0; i < n; i++) {
		const kv_stats s0 = StatsOf(c);
		const uint64_t t0 = NowNs();
		int type = fn(i);
		const uint64_t t1 = NowNs();
		if (type < 0)
			break;
		const kv_stats s1 = StatsOf(c);
		const uint64_t rt = (s1.rounds - s0.rounds) + (s1.index_rounds - s0.index_rounds);
		p->samples.push_back({ static_cast<uint32_t>(std::min<uint64_t>(t1 - t0, UINT32_MAX)),
			static_cast<uint16_t>(std::min<uint64_t>(rt, UINT16_MAX)),
			static_cast<uint8_t>(type) });
		if (p->NErrors() >= kMaxErrors || (stop_ns != 0 && t1 >= stop_ns))
			break;
	}
	p->end_ns = NowNs();
	p->st = Diff(StatsOf(c), before);
}

void Loader(Run *r, unsigned l)
{
	const Options &o = *r->o;
	Part &p = r->parts[kLoad][l];
	kv_client *c = nullptr;
	char key[kKeyMax];
	std::vector<char> val(r->vsize + 1);

	int ret = kv_open(&c, &r->load_cfg);
	if (ret != 0) {
		r->open_error[l] = "loader " + std::to_string(l) + ": kv_open: " + ErrName(ret) +
			": " + pm_errormsg();
		return;
	}
	const uint64_t mine = o.keys / r->loaders + (l < o.keys % r->loaders ? 1 : 0);
	Loop(c, &p, mine, 0, [&](uint64_t i) {
		const uint64_t id = i * r->loaders + l;
		size_t klen = KeyOf(id, o.seed, key);
		ValueOf(id, 0, r->vsize, val.data());
		int rc = kv_insert(c, key, klen, val.data(), r->vsize);
		if (rc != 0)
			p.Error(rc, "insert", i);
		return kUpdate;
	});
	kv_close(&c);
}

// A measuring thread's operation and its buffers.
struct Lane {
	kv_op op{};
	uint64_t id = 0, opno = 0, t0 = 0;
	int type = kGet;
	char key[kKeyMax];
	std::vector<char> val, buf;
};

// A measuring thread's clients: one kv_client (--inflight 1: synchronous
// calls, round trips per operation from its counters around each call),
// or a kv_async handle of --inflight clients kept full by dmkv_pump_run
// (round trips only in the phase's totals: the handle's counters sum its
// clients').
struct Clients {
	kv_client *c = nullptr;
	kv_async *a = nullptr;

	kv_stats Stats() const
	{
		kv_stats s;
		if (a != nullptr)
			kv_async_stats_read(a, &s);
		else
			kv_stats_read(c, &s);
		return s;
	}
};

// What a measuring thread runs in one phase: Next() fills a lane with the
// phase's next operation (the warm-up's gets of key ids off.., or the
// run's YCSB stream until its deadline), Finish() checks the result and
// records the sample. The synchronous loop and the asynchronous one both
// drive it.
class Feed {
public:
	Feed(Run *r, unsigned t, Part *p, const Clients *cl) : r_(r), t_(t), p_(p), cl_(cl) {}

	void Warm(uint64_t off, uint64_t n)
	{
		off_ = off;
		left_ = n;
	}
	void Measure(ycsb::Stream *ops, uint64_t stop_ns)
	{
		ops_ = ops;
		stop_ns_ = stop_ns;
		slow0_ = cl_->Stats().slow_writes;
	}

	// The next operation into @l; false: the phase is over.
	bool Next(Lane *l)
	{
		if (p_->NErrors() >= kMaxErrors)
			return false;
		if (ops_ == nullptr) {
			if (left_ == 0)
				return false;
			left_--;
			Get(l, off_++ % r_->o->warm_keys);
			return true;
		}
		if (NowNs() >= stop_ns_)
			return false;
		bool get;
		const uint64_t id = ops_->Next(&get);
		if (get) {
			Get(l, id);
			return true;
		}
		// a SWARM slow write took a second log buffer
		if (r_->update_cap != UINT64_MAX &&
			updates_ + (cl_->Stats().slow_writes - slow0_) >= r_->update_cap) {
			p_->capped = true;
			return false;
		}
		Start(l, id, kUpdate);
		ValueOf(id, static_cast<uint64_t>(t_ + 1) << 40 | ++updates_, r_->vsize, l->val.data());
		l->op.kind = KV_OP_UPDATE;
		l->op.val = l->val.data();
		l->op.vlen = r_->vsize;
		return true;
	}

	// A get of key @id into @l (every key is loaded before and never
	// deleted: it must answer 0 and a value of the run's size starting
	// with the id).
	void Get(Lane *l, uint64_t id)
	{
		Start(l, id, kGet);
		l->op.kind = KV_OP_GET;
		l->op.buf = l->buf.data();
		l->op.cap = l->buf.size();
	}

	// @l's operation completed at @t1 after @rounds round trips.
	void Finish(Lane *l, uint64_t t1, uint64_t rounds)
	{
		const kv_op &op = l->op;
		if (op.ret != 0) {
			p_->Error(op.ret, kTypeName[l->type], l->opno);
		} else if (l->type == kGet) {
			const std::string wrong = CheckValue(l->buf.data(), op.len, r_->vsize, l->id);
			if (!wrong.empty())
				p_->Wrong("get #" + std::to_string(l->opno) + " of key id " +
					std::to_string(l->id) + ": " + wrong);
		}
		p_->samples.push_back({ static_cast<uint32_t>(std::min<uint64_t>(t1 - l->t0, UINT32_MAX)),
			static_cast<uint16_t>(std::min<uint64_t>(rounds, UINT16_MAX)),
			static_cast<uint8_t>(l->type) });
	}

private:
	void Start(Lane *l, uint64_t id, int type)
	{
		void *user = l->op.user;
		l->op = kv_op{};
		l->op.user = user;
		l->op.key = l->key;
		l->op.klen = KeyOf(id, r_->o->seed, l->key);
		l->id = id;
		l->type = type;
		l->opno = opno_++;
		l->t0 = NowNs();
	}

	Run *r_;
	unsigned t_;
	Part *p_;
	const Clients *cl_;
	ycsb::Stream *ops_ = nullptr;
	uint64_t off_ = 0, left_ = 0, stop_ns_ = 0, slow0_ = 0, updates_ = 0, opno_ = 0;
};

// One phase of @feed on @cl's lanes, into @p.
void RunPhase(const Clients &cl, std::vector<Lane> &lanes, Feed *feed, Part *p)
{
	const kv_stats before = cl.Stats();
	p->start_ns = NowNs();
	if (cl.a == nullptr) {
		Lane &l = lanes[0];
		while (feed->Next(&l)) {
			const kv_stats s0 = cl.Stats();
			kv_op_run(cl.c, &l.op);
			const uint64_t t1 = NowNs();
			const kv_stats s1 = cl.Stats();
			feed->Finish(&l, t1, (s1.rounds - s0.rounds) + (s1.index_rounds - s0.index_rounds));
		}
	} else {
		auto next = [](void *ctx, kv_op *op) {
			return static_cast<Feed *>(ctx)->Next(static_cast<Lane *>(op->user));
		};
		auto done = [](void *ctx, kv_op *op) {
			static_cast<Feed *>(ctx)->Finish(static_cast<Lane *>(op->user), NowNs(), 0);
			return false;
		};
		const dmkv_pump pump = { next, done, feed };
		std::vector<kv_op *> ops;
		for (Lane &l : lanes)
			ops.push_back(&l.op);
		(void)dmkv_pump_run(cl.a, ops.data(), static_cast<unsigned>(ops.size()), &pump);
		p->per_op_rounds = false;
	}
	p->end_ns = NowNs();
	p->st = Diff(cl.Stats(), before);
}

// The warm-up of an asynchronous thread: each of @feed's gets on every
// lane, since each lane is a client with its own location cache
// (kv_async_submit takes the first idle lane, and all are idle when a
// key's gets start).
void WarmLanes(const Clients &cl, std::vector<Lane> &lanes, Feed *feed, Part *p)
{
	const kv_stats before = cl.Stats();
	kv_op *done[kMaxInflight];
	p->start_ns = NowNs();
	while (feed->Next(&lanes[0])) {
		unsigned inflight = 0, got;
		for (Lane &l : lanes) {
			if (&l != &lanes[0])
				feed->Get(&l, lanes[0].id);
			if (kv_async_submit(cl.a, &l.op) == 0)
				inflight++;
		}
		for (; inflight > 0; inflight -= got) {
			kv_async_wait(cl.a, done, kMaxInflight, &got);
			for (unsigned j = 0; j < got; j++)
				feed->Finish(static_cast<Lane *>(done[j]->user), NowNs(), 0);
		}
	}
	p->per_op_rounds = false;
	p->end_ns = NowNs();
	p->st = Diff(cl.Stats(), before);
}

void Worker(Run *r, unsigned t)
{
	const Options &o = *r->o;
	Clients cl;
	std::vector<Lane> lanes(r->inflight);
	for (Lane &l : lanes) {
		l.op.user = &l;
		l.val.resize(r->vsize + 1);
		l.buf.resize(r->vsize + 64);
	}

	int ret = r->inflight > 1 ? kv_async_open(&cl.a, &r->cfg, r->inflight) :
		kv_open(&cl.c, &r->cfg);
	const bool open = ret == 0;
	if (!open)
		r->open_error[t] = "thread " + std::to_string(t) + ": " +
			(r->inflight > 1 ? "kv_async_open: " : "kv_open: ") + ErrName(ret) + ": " +
			pm_errormsg();
	// Without a client the thread still meets every barrier.
	r->barrier.Wait();
	if (open && o.warm_keys > 0) {
		// Each thread starts at its own offset, so the first gets do
		// not all queue on the same keys.
		Part &p = r->parts[kWarm][t];
		Feed feed(r, t, &p, &cl);
		feed.Warm(static_cast<uint64_t>(t) * o.warm_keys / r->threads, o.warm_keys);
		p.samples.reserve(static_cast<size_t>(o.warm_keys) * r->inflight);
		if (cl.a != nullptr)
			WarmLanes(cl, lanes, &feed, &p);
		else
			RunPhase(cl, lanes, &feed, &p);
	}
	r->barrier.Wait();
	if (open) {
		Part &p = r->parts[kRun][t];
		ycsb::Stream ops(*r->zipf, o.seed, t, r->vsize, r->workload);
		Feed feed(r, t, &p, &cl);
		p.samples.reserve(1u << 20);
		feed.Measure(&ops, NowNs() + static_cast<uint64_t>(o.duration_ms) * 1000000u);
		RunPhase(cl, lanes, &feed, &p);
	}
	r->barrier.Wait(); // every thread's run is over before any closes
	if (cl.a != nullptr)
		kv_async_close(&cl.a);
	kv_close(&cl.c);
}

std::string StatsJson(const kv_stats &s)
{
	std::ostringstream j;
	j << "{\"ops\":" << s.ops << ",\"rounds\":" << s.rounds << ",\"index_rounds\":" << s.index_rounds
	  << ",\"slow_writes\":" << s.slow_writes << ",\"lock_calls\":" << s.lock_calls
	  << ",\"write_backs\":" << s.write_backs << ",\"read_iters\":" << s.read_iters
	  << ",\"oop_reads\":" << s.oop_reads << ",\"fallbacks\":" << s.fallbacks
	  << ",\"cache_misses\":" << s.cache_misses << ",\"unavailable\":" << s.unavailable
	  << ",\"write_back_restarts\":" << s.write_back_restarts
	  << ",\"stale_fetches\":" << s.stale_fetches << ",\"reclaims\":" << s.reclaims
	  << ",\"recycled\":" << s.recycled << ",\"log_growth\":" << s.log_used << "}";
	return j.str();
}

// Latency and round trips of the samples of @parts with type @type (-1:
// all), over the span @secs. Asynchronous phases have no per-operation
// round trips: their mean comes from the counters' totals (all types),
// and a type's is null.
std::string OpJson(const std::vector<Part> &parts, int type, double secs)
{
	std::vector<uint64_t> lat, rt;
	bool per_op = true;
	uint64_t total_rounds = 0;
	for (const Part &p : parts) {
		per_op = per_op && p.per_op_rounds;
		total_rounds += p.st.rounds + p.st.index_rounds;
		for (const Sample &s : p.samples)
			if (type < 0 || s.type == type) {
				lat.push_back(s.ns_lo);
				rt.push_back(s.rounds);
			}
	}
	std::sort(lat.begin(), lat.end());
	std::sort(rt.begin(), rt.end());
	const uint64_t n = lat.size();
	const double dn = n > 0 ? static_cast<double>(n) : 1;
	std::ostringstream j;
	j.precision(6);
	j << "{\"ops\":" << n << ",\"ops_per_s\":" << (secs > 0 ? static_cast<double>(n) / secs : 0)
	  << ",\"lat_ns\":" << LatencyJson(lat) << ",\"rounds\":";
	if (!per_op) {
		if (type < 0)
			j << "{\"mean\":" << static_cast<double>(total_rounds) / dn << ",\"per_op\":false}}";
		else
			j << "null}";
		return j.str();
	}
	double rsum = 0;
	std::map<uint64_t, uint64_t> hist;
	for (uint64_t x : rt) {
		rsum += static_cast<double>(x);
		hist[x]++;
	}
	j << "{\"p50\":" << Pct(rt, 0.50) << ",\"p99\":" << Pct(rt, 0.99)
	  << ",\"p999\":" << Pct(rt, 0.999) << ",\"max\":" << (n ? rt.back() : 0)
	  << ",\"mean\":" << rsum / dn << ",\"hist\":{";
	bool comma = false;
	for (const auto &h : hist) {
		j << (comma ? "," : "") << "\"" << h.first << "\":" << h.second;
		comma = true;
	}
	j << "}}}";
	return j.str();
}

// A phase's JSON over every thread; adds its errors and wrong values to *@bad.
std::string PhaseJson(const std::vector<Part> &parts, bool by_type, uint64_t *bad)
{
	uint64_t start = UINT64_MAX, end = 0, wrong = 0, capped = 0;
	kv_stats st{};
	std::map<int, uint64_t> errors;
	std::string first, first_wrong;
	for (const Part &p : parts) {
		if (p.end_ns != 0) {
			start = std::min(start, p.start_ns);
			end = std::max(end, p.end_ns);
		}
		Add(&st, p.st);
		wrong += p.wrong;
		capped += p.capped;
		for (const auto &e : p.errors)
			errors[e.first] += e.second;
		if (first.empty())
			first = p.first_error;
		if (first_wrong.empty())
			first_wrong = p.first_wrong;
	}
	const double secs = end > start ? static_cast<double>(end - start) / 1e9 : 0;
	std::ostringstream j;
	j.precision(6);
	j << "{\"secs\":" << secs << ",\"all\":" << OpJson(parts, -1, secs);
	if (by_type)
		for (int ty = 0; ty < kNTypes; ty++)
			j << ",\"" << kTypeName[ty] << "\":" << OpJson(parts, ty, secs);
	j << ",\"totals\":" << StatsJson(st) << ",\"capped\":" << capped << ",\"wrong\":" << wrong
	  << ",\"errors\":{";
	bool comma = false;
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
	*bad += nerr + wrong + st.unavailable;
	return j.str();
}

// One system in one configuration; prints its JSON line. Returns false if
// the setup failed.
bool RunSystem(const Options &o, const std::string &workload, unsigned vsize, unsigned threads,
	unsigned inflight, const std::string &system, unsigned seq)
{
	const uint64_t buf = BufBytes(vsize);
	const unsigned log_mb = o.log_mb ? o.log_mb : (vsize > 256 ? 96 : 32);
	const unsigned cache_entries = o.cache_entries ? o.cache_entries :
		std::max(65536u, std::min(8 * o.keys, 1u << 30));
	const unsigned index_mb = o.index_mb ? o.index_mb :
		std::max(16u, static_cast<unsigned>((static_cast<uint64_t>(o.keys) * 64 + 99999) / 100000));
	// Objects: header, key, in-place copy, meta and lock words: allow
	// 256 + 2 x value + 16 words per client per key, chunk slack per client.
	const uint64_t obj = 256 + 2ull * vsize + 16ull * o.max_clients;
	const uint64_t store_bytes = o.store_mb ? static_cast<uint64_t>(o.store_mb) << 20 :
		(16ull << 20) + o.keys * obj + o.max_clients * (2ull << 20) +
			static_cast<uint64_t>(o.max_clients) * (static_cast<uint64_t>(log_mb) << 20);
	const unsigned loaders = std::max(1u, std::min(o.loaders, o.max_clients));

	std::ostringstream cj;
	cj << "\"bench\":\"kv\",\"transport\":" << JsonStr(o.transport) << ",\"workload\":"
	   << JsonStr(workload) << ",\"read_pct\":" << ReadPct(workload) << ",\"value_size\":" << vsize
	   << ",\"threads\":" << threads << ",\"system\":" << JsonStr(system)
	   << ",\"inflight\":" << inflight << ",\"keys\":" << o.keys << ",\"nodes\":" << o.nodes
	   << ",\"zipf_theta\":" << kZipfTheta << ",\"duration_ms\":" << o.duration_ms
	   << ",\"warm\":" << JsonStr(o.warm) << ",\"loaders\":" << loaders
	   << ",\"max_clients\":" << o.max_clients << ",\"cache_entries\":" << cache_entries
	   << ",\"log_mb\":" << log_mb
	   << ",\"index_mb\":" << index_mb << ",\"store_mb\":" << (store_bytes >> 20)
	   << ",\"seed\":" << o.seed << ",\"timeout_ms\":" << o.timeout_ms
	   << ",\"durability\":" << JsonStr(pm_durability_name(o.durability))
	   << ",\"load_durability\":" << JsonStr(pm_durability_name(o.load_durability))
	   << ",\"node_poll\":" << JsonStr(o.transport == "tcp" ? o.node_poll : "none")
	   << ",\"pool_dir\":" << JsonStr(o.pool_dir) << ",\"load_via\":"
	   << JsonStr(o.load_local ? "local" : o.transport);
	if (!o.label.empty())
		cj << ",\"label\":" << JsonStr(o.label);
	const std::string config_json = cj.str();

	std::fprintf(stderr, "kv_bench: %s %s %uB threads=%u inflight=%u %s\n", o.transport.c_str(),
		workload.c_str(), vsize, threads, inflight, system.c_str());
	const uint64_t setup0 = NowNs();
	CpuSplit cpus;
	if (CpuSplit::Wanted(o.pin, o.transport))
		cpus.Split();
	Nodes nodes;
	nodes.set_poll(o.node_poll == "busy" ? RDMA_NODE_POLL_BUSY : RDMA_NODE_POLL_ADAPTIVE);
	const bool reopen = o.load_durability != o.durability;
	std::string err = nodes.Open(o.transport, o.nodes, o.pool_dir, "kv_bench", seq,
		{ static_cast<uint64_t>(index_mb) << 20, (store_bytes + 0xFFFFF) & ~0xFFFFFull },
		o.load_durability);
	cpus.Clients();
	std::vector<const char *> ptrs = nodes.UriPtrs();
	const std::vector<const char *> load_ptrs = nodes.UriPtrs(o.load_local);

	Run r(threads, loaders);
	r.o = &o;
	r.workload = workload;
	r.vsize = vsize;
	r.threads = threads;
	r.inflight = inflight;
	r.loaders = loaders;
	kv_config_init(&r.cfg);
	r.cfg.nodes = ptrs.data();
	r.cfg.nnodes = static_cast<unsigned>(ptrs.size());
	r.cfg.index_region = 0;
	r.cfg.store_region = 1;
	r.cfg.timeout_ms = o.timeout_ms;
	r.cfg.cache_entries = cache_entries;
	r.cfg.max_clients = o.max_clients;
	r.cfg.log_bytes = static_cast<uint64_t>(log_mb) << 20;
	r.cfg.repl = ReplOf(system);
	r.cfg.recycle = Reuses(system) ? 1 : 0;
	r.load_cfg = r.cfg;
	r.load_cfg.nodes = load_ptrs.data();
	const uint64_t load_use = (o.keys + loaders - 1) / loaders * buf;
	const uint64_t log_room = r.cfg.log_bytes > load_use + 64 * buf ?
		(r.cfg.log_bytes - load_use) / buf - 64 : 0;
	// The cap counts buffers: SWARM's slow write takes a second one. RAW
	// updates in place, without a log buffer.
	if (r.cfg.repl == KV_REPL_RAW || r.cfg.recycle)
		r.update_cap = o.max_updates ? o.max_updates : UINT64_MAX;
	else
		r.update_cap = o.max_updates ? std::min<uint64_t>(o.max_updates, log_room) : log_room;
	r.zipf = std::make_unique<bench::Zipf>(std::max(1u, o.keys), kZipfTheta);
	if (err.empty()) {
		int ret = kv_create(&r.load_cfg);
		if (ret != 0)
			err = "kv_create: " + ErrName(ret) + ": " + pm_errormsg();
	}
	if (!err.empty()) {
		cpus.Restore();
		std::printf("{%s,\"setup_error\":%s,\"ok\":false}\n", config_json.c_str(),
			JsonStr(err).c_str());
		std::fflush(stdout);
		std::fprintf(stderr, "kv_bench: %s\n", err.c_str());
		return false;
	}
	const uint64_t setup_ns = NowNs() - setup0;

	std::vector<std::thread> ls;
	for (unsigned l = 0; l < loaders; l++)
		ls.emplace_back(Loader, &r, l);
	for (auto &l : ls)
		l.join();
	std::string open_err;
	for (const auto &e : r.open_error)
		if (!e.empty() && open_err.empty())
			open_err = e;
	uint64_t bad = 0;
	const std::string load_json = PhaseJson(r.parts[kLoad], false, &bad);
	uint64_t reopen_ns = 0;
	if (reopen && open_err.empty() && bad == 0) {
		const uint64_t t0 = NowNs();
		if (CpuSplit::Wanted(o.pin, o.transport))
			cpus.Split(); // the nodes' new progress threads
		const std::string e = nodes.Reopen(o.durability);
		cpus.Clients();
		if (!e.empty())
			open_err = "reopen: " + e;
		ptrs = nodes.UriPtrs(); // tcp: new ports
		r.cfg.nodes = ptrs.data();
		reopen_ns = NowNs() - t0;
	}
	if (open_err.empty() && bad == 0) {
		std::vector<std::thread> ws;
		for (unsigned t = 0; t < threads; t++)
			ws.emplace_back(Worker, &r, t);
		for (auto &w : ws)
			w.join();
		for (const auto &e : r.open_error)
			if (!e.empty() && open_err.empty())
				open_err = e;
	}
	cpus.Restore();

	std::ostringstream j;
	j.precision(6);
	j << "{" << config_json << ",\"uris\":[";
	for (size_t i = 0; i < nodes.uris().size(); i++)
		j << (i ? "," : "") << JsonStr(nodes.uris()[i]);
	j << "],\"pin\":" << JsonStr(cpus.desc()) << ",\"setup_ms\":" << setup_ns / 1e6
	  << ",\"update_cap\":" << r.update_cap;
	if (reopen)
		j << ",\"reopen_ms\":" << reopen_ns / 1e6;
	if (!open_err.empty())
		j << ",\"open_error\":" << JsonStr(open_err);
	j << ",\"phases\":{\"load\":" << load_json;
	if (!r.parts[kRun][0].samples.empty() || open_err.empty()) {
		j << ",\"warm\":" << PhaseJson(r.parts[kWarm], false, &bad);
		j << ",\"run\":" << PhaseJson(r.parts[kRun], true, &bad);
	}
	j << "},\"ok\":" << (bad == 0 && open_err.empty() ? "true" : "false") << "}";
	std::printf("%s\n", j.str().c_str());
	std::fflush(stdout);
	return true;
}

int Usage(const char *msg)
{
	std::fprintf(stderr, "kv_bench: %s\n%s", msg, kUsage);
	return kExitUsage;
}

} // namespace

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "transport", required_argument, nullptr, 't' },
		{ "workloads", required_argument, nullptr, 'W' },
		{ "value-sizes", required_argument, nullptr, 'v' },
		{ "threads", required_argument, nullptr, 'T' },
		{ "inflight", required_argument, nullptr, 'F' },
		{ "systems", required_argument, nullptr, 'y' },
		{ "keys", required_argument, nullptr, 'k' },
		{ "nodes", required_argument, nullptr, 'n' },
		{ "duration-ms", required_argument, nullptr, 'D' },
		{ "warm", required_argument, nullptr, 'w' },
		{ "loaders", required_argument, nullptr, 'L' },
		{ "max-updates", required_argument, nullptr, 'u' },
		{ "max-clients", required_argument, nullptr, 'c' },
		{ "cache-entries", required_argument, nullptr, 'C' },
		{ "log-mb", required_argument, nullptr, 'g' },
		{ "index-mb", required_argument, nullptr, 'i' },
		{ "store-mb", required_argument, nullptr, 'r' },
		{ "seed", required_argument, nullptr, 's' },
		{ "timeout-ms", required_argument, nullptr, 'O' },
		{ "pin", required_argument, nullptr, 'P' },
		{ "node-poll", required_argument, nullptr, 'N' },
		{ "pool-dir", required_argument, nullptr, 'p' },
		{ "durability", required_argument, nullptr, 'd' },
		{ "load-local", no_argument, nullptr, 'o' },
		{ "load-durability", required_argument, nullptr, 'e' },
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
		case 'W':
			o.workloads = SplitList(optarg);
			for (const auto &w : o.workloads)
				ok = ok && (w == "A" || w == "B");
			ok = ok && !o.workloads.empty();
			break;
		case 'v':
		case 'T':
		case 'F': {
			std::vector<unsigned> &v = c == 'v' ? o.value_sizes : c == 'T' ? o.threads : o.inflight;
			v.clear();
			for (const auto &s : SplitList(optarg)) {
				unsigned x;
				ok = ok && ParseUnsigned(s.c_str(), &x, 1, c == 'v' ? KV_VALUE_MAX :
					c == 'T' ? kMaxThreads : kMaxInflight);
				v.push_back(x);
			}
			ok = ok && !v.empty();
			break;
		}
		case 'y':
			o.systems = SplitList(optarg);
			for (const auto &s : o.systems)
				ok = ok && (s == "swarm" || s == "abd" || s == "raw" ||
					s == "swarm-noreuse");
			ok = ok && !o.systems.empty();
			break;
		case 'k':
			ok = ParseUnsigned(optarg, &o.keys, 1, 1u << 24);
			break;
		case 'n':
			ok = ParseUnsigned(optarg, &o.nodes, 1, KV_MAX_NODES) && o.nodes % 2 == 1;
			break;
		case 'D':
			ok = ParseUnsigned(optarg, &o.duration_ms, 1, 3600000);
			break;
		case 'w':
			o.warm = optarg;
			ok = o.warm == "all" || o.warm == "off" ||
				ParseUnsigned(optarg, &o.warm_keys, 1, 1u << 24);
			break;
		case 'L':
			ok = ParseUnsigned(optarg, &o.loaders, 1, KV_MAX_CLIENTS);
			break;
		case 'u':
			ok = ParseUnsigned(optarg, &o.max_updates, 0, 1u << 30);
			break;
		case 'c':
			ok = ParseUnsigned(optarg, &o.max_clients, 1, KV_MAX_CLIENTS);
			break;
		case 'C':
			ok = ParseUnsigned(optarg, &o.cache_entries, 1, 1u << 30);
			break;
		case 'g':
			ok = ParseUnsigned(optarg, &o.log_mb, 1, 256);
			break;
		case 'i':
			ok = ParseUnsigned(optarg, &o.index_mb, 1, 1u << 16);
			break;
		case 'r':
			ok = ParseUnsigned(optarg, &o.store_mb, 1, 1u << 20);
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
		case 'P':
			o.pin = optarg;
			ok = o.pin == "auto" || o.pin == "split" || o.pin == "none";
			break;
		case 'N':
			o.node_poll = optarg;
			ok = o.node_poll == "adaptive" || o.node_poll == "busy";
			break;
		case 'p':
			o.pool_dir = optarg;
			break;
		case 'd':
		case 'e': {
			pm_durability &d = c == 'd' ? o.durability : o.load_durability;
			ok = pm_durability_parse(optarg, &d) == 0 &&
				(d == PM_DURABILITY_PMEM || d == PM_DURABILITY_MSYNC);
			o.load_durability_set |= c == 'e';
			break;
		}
		case 'o':
			o.load_local = true;
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
	if (!o.load_durability_set)
		o.load_durability = o.durability;
	o.warm_keys = o.warm == "all" ? o.keys : o.warm == "off" ? 0 : std::min(o.warm_keys, o.keys);
	for (unsigned t : o.threads)
		for (unsigned f : o.inflight)
			if (t * f > o.max_clients)
				return Usage("threads x in flight above --max-clients");

	// Real cache-line flushes on the RAM file system, as the other
	// benchmarks (an explicit setting wins).
	setenv("PMEM_IS_PMEM_FORCE", "1", 0);

	unsigned seq = 0;
	for (const auto &w : o.workloads)
		for (unsigned v : o.value_sizes)
			for (unsigned t : o.threads)
				for (unsigned f : o.inflight)
					for (const auto &s : o.systems)
						if (!RunSystem(o, w, v, t, f, s, seq++))
							return kExitSetup;
	return kExitOk;
}
