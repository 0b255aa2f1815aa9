// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_crash_test.cc -- the crash simulator (pm/crashsim.h) over
// every crash point of short single-client sequences of the store
// (kv/kv.h) on three local nodes: inserts, updates in place and out of
// place, a delete and a re-insert of the same key, a put of an absent key,
// gets; inserts and updates under the ABD and RAW baselines; and object
// chunk claims that a client with another id must find after the crash,
// a delete that a client outliving the crash must see, a value that
// client read between the writer's CASes and their persists (and the
// READ lock that read took on the writer's timestamp), the id a
// client outliving the crash claimed, and a buffer that another client's
// reclaim freed on the strength of a word not yet persisted.
// Every node crashes at once: the index and store regions of all three are
// one crash image. At each image a fresh client, given the
// crashed client's id, must read for every key the state of the last
// completed operation on it -- or, for the key of the operation in flight,
// the state before or after it; then it must write the key in flight and
// read every key back (the crashed client's log and objects are reused).
// At sampled points that client's writes are crashed in turn, and a third
// client checks what they left (CrashTakeOverWriteCrashAgain); or a third
// life follows, each later life freeing and taking again buffers of the
// lives before it, and a fourth client checks (ThreeLivesReuseBuffers).
//
// The regions are the workload client's own mappings of the pool files
// (the local backend shares one mapping per file in a process, and the
// check's client finds it again); the in-process nodes are closed before
// the run, so those are the only mappings.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <sys/mman.h>

#include <gtest/gtest.h>

#include <kv/index.h>
#include <kv/kv.h>
#include <pm/crashsim.h>
#include <pm/persist.h>

#include "kv/src/store/layout.h"
#include "kv/src/store/testing.h"
#include "kv/tests/mapped_region.h"
#include "kv/tests/node_group.h"
#include "pm/tests/test_util.h"

namespace {

using kvtest::LocalGroup;

// Small regions keep each crash point's comparison of working and durable
// memory short: 2 clients x 1 MiB of log and ~30 chunks of 64 KiB fit.
constexpr uint64_t kIndexRegion = 1u << 20;
constexpr uint64_t kStoreRegion = 4u << 20;
// ChunkClaimsHoldForAnotherId: 2 clients x 1 MiB of log and three object
// chunks of 4 KiB (their claim words at 4144, 4152 and 4160: the third
// alone on its cache line, away from the marks).
constexpr uint64_t kSmallChunk = 4096;
constexpr uint64_t kThreeChunkRegion = (2u << 20) + (28u << 10);

// kReclaim frees the client's dead buffers at once (kv__st_test_reclaim,
// what a client does at its thresholds), so a later life's next writes
// take buffers an earlier life used; it changes no key.
enum class Kind { kInsert, kUpdate, kPut, kDelete, kGet, kReclaim };

struct Op {
	Kind kind;
	std::string key;
	std::string val; // the value written, or the one a get must return
	bool survivor = false; // run by Run::survivor, not the workload client
	bool absent = false; // a get that must find the key absent
};

using State = std::optional<std::string>; // nullopt: the key is absent

// The state of a key after @op, from @before.
State After(const Op &op, const State &before)
{
	switch (op.kind) {
	case Kind::kInsert:
		return before ? before : State(op.val);
	case Kind::kUpdate:
		return before ? State(op.val) : before;
	case Kind::kPut:
		return op.val;
	case Kind::kDelete:
		return std::nullopt;
	case Kind::kGet:
	case Kind::kReclaim:
		break;
	}
	return before;
}

std::string Show(const State &s)
{
	if (!s)
		return "<absent>";
	if (s->size() > 24)
		return "'" + s->substr(0, 16) + "...' (" + std::to_string(s->size()) + " bytes)";
	return "'" + *s + "'";
}

// A life after the first, run under a nested simulator at each image of
// the life before (CrashTakeOverWriteCrashAgain, ThreeLivesReuseBuffers):
// a client takes the crashed id, finds the state that life left, resolves
// its operation in flight from what it reads (start), and runs ops without
// closing, crashed in turn at one point in one_in; started is set once ops
// start.
struct Life {
	std::vector<Op> ops;
	unsigned one_in = 1;
	// The life's ops must write buffers over units of the id's log that
	// earlier lives wrote (NextLife counts them; CrashSequence requires
	// that some runs of the life did).
	bool must_reuse = false;
	std::map<std::string, State> start;
	size_t done = 0;
	bool started = false;
	uint64_t reused = 0; // buffers of earlier lives its writes took
	std::string err; // why the life itself failed
};

// What the nested lives of a run did, summed over every process they ran
// in (anonymous shared memory: the checks run in forked children).
struct LifeStats {
	uint64_t points[4], images[4]; // per life after the first (at most 4)
	uint64_t runs[4]; // runs of that life that completed their ops
	uint64_t reusing[4]; // those whose writes took a buffer of an earlier life
	uint64_t reused[4]; // buffers of earlier lives those runs took
};

struct Run {
	std::vector<void *> regions;
	std::vector<const char *> uris;
	kv_client *c = nullptr;
	std::vector<Op> ops;
	size_t done = 0; // operations that returned (read by the checks)
	unsigned id = 0; // the workload client's id, which every image hands over
	// The lives after the first: lives[n - 1] is life n (the first is 0),
	// run under a nested simulator at each checked image of life n - 1;
	// life is the one running in this process (0 outside every nesting).
	std::vector<Life> lives;
	size_t life = 0;
	LifeStats *life_stats = nullptr; // shared, or null
	// The workload runs kv_create and kv_open first (CreateThenWrite):
	// created is set once kv_create returned.
	bool create = false;
	bool created = true;
	// The state the workload starts from: with CrashCreate over a used
	// store, the old store's keys, each absent in the new one.
	std::map<std::string, State> from;
	// Check also writes a multi-slot value where the recovered log
	// resumes (off inside a second life's check of the first life, which
	// CheckKeys alone covers there, to keep the nested runs short).
	bool overwrite_log = true;
	// The replication the store is created with (the baselines' own
	// persists run only under theirs).
	kv_replication repl = KV_REPL_SWARM;
	uint64_t index_region = kIndexRegion;
	uint64_t store_region = kStoreRegion;
	uint64_t chunk_bytes = 64u << 10;
	// Check opens a client with another id, which fills the object
	// chunks, instead of handing the crashed id over
	// (ChunkClaimsHoldForAnotherId).
	bool other_id = false;
	// kv_config.max_clients; IdClaimHoldsForALiveClient takes 8, which
	// puts the claim words alone on their cache line.
	unsigned max_clients = 2;
	// Check first requires the id that the workload's kv_open claimed
	// (once it returned) on f+1 nodes: the client lives on past the crash
	// of every node (IdClaimHoldsForALiveClient).
	bool claim_lives = false;
	// A second client, opened before the run, that outlives the crash of
	// every node: Check reads through it, cache and all
	// (DeleteSeenByASurvivingReader).
	kv_client *survivor = nullptr;
	// With Variant::interleave: the index of the operation in flight
	// whose value the survivor read in the workload client's wait (its
	// yield hook), between the batches' first parts and their persists
	// (RDMA_FAULT_SPLIT); SIZE_MAX if none.
	size_t saw = SIZE_MAX;
	unsigned saw_count = 0; // writes seen so
	// With Variant::interleave, the timestamp-lock words of the key the
	// writes go to: each get of a write in flight took the READ lock on
	// the writer's GUESSED timestamp (R15-R18), which must be durable on
	// f+1 nodes once the get returned (kv/MUTATION.md, swarm.c's
	// sw_trylock). tsl_off: the writer's lock word in a store region (0:
	// none); locked_ts: the timestamps the survivor's gets locked so far.
	std::string lock_key;
	uint64_t tsl_off = 0;
	uint64_t meta_off = 0; // the writer's metadata word
	uint64_t locked_ts[8] = {};
	unsigned locked = 0;
	unsigned locking_gets = 0; // gets of a write in flight that called TRYLOCK
};

// How a CrashSequence store differs from the default one.
struct Variant {
	kv_replication repl = KV_REPL_SWARM;
	bool other_id = false; // three 4 KiB chunks; Check as Run::other_id
	bool survivor = false; // a second client, Run::survivor
	// The workload client's store batches split before their last
	// persist (RDMA_FAULT_SPLIT), the survivor reading the key of each
	// write in flight in between (Run::saw); implies survivor.
	bool interleave = false;
	// The workload client reuses a dead object at once, without the
	// grace its cached locations need (kv__st_test_no_grace).
	bool no_grace = false;
	// Sixteen ids, the workload's in 0-7 and the survivor's in 8-15: their
	// metadata words in an object lie on different cache lines, and the
	// survivor's on a line of other writers' words only.
	bool slots_apart = false;
};

kv_config Config(const Run &r)
{
	kv_config cfg;
	kv_config_init(&cfg);
	cfg.nodes = r.uris.data();
	cfg.nnodes = static_cast<unsigned>(r.uris.size());
	cfg.max_clients = r.max_clients;
	cfg.log_bytes = 1u << 20;
	cfg.chunk_bytes = r.chunk_bytes;
	// Every node is reachable in an image, so a check waits only for a
	// busy machine (2 s was too short at load 13: a client's connections
	// each run a yescrypt token check) or for a value that is not there,
	// which shows as KV_E_UNAVAILABLE after this long.
	cfg.timeout_ms = 10000;
	// The workloads' opens take timeouts of an hour (below), which a
	// lease must cover; twice that keeps renewals out of the simulation.
	cfg.lease_ms = 7200u * 1000u;
	cfg.cache_entries = 64;
	cfg.repl = r.repl;
	return cfg;
}

// The key's value through @c, or nullopt for -ENOENT; other errors in *@ret.
State Read(kv_client *c, const std::string &k, int *ret)
{
	std::string v(KV_VALUE_MAX, '\0');
	size_t len = 0;
	*ret = kv_get(c, k.data(), k.size(), v.data(), v.size(), &len);
	if (*ret == -ENOENT) {
		*ret = 0;
		return std::nullopt;
	}
	v.resize(len);
	return v;
}

// Runs @ops from *@done on through @c (or @survivor, for its ops), counting
// each that returned in *@done (read by the checks); 0 or the first error.
int RunOps(kv_client *c, const std::vector<Op> &ops, size_t *done,
	kv_client *survivor = nullptr)
{
	for (size_t i = *done; i < ops.size(); i++) {
		const Op &op = ops[i];
		kv_client *on = op.survivor ? survivor : c;
		const std::string &k = op.key;
		int ret = 0;
		switch (op.kind) {
		case Kind::kInsert:
			ret = kv_insert(on, k.data(), k.size(), op.val.data(), op.val.size());
			break;
		case Kind::kUpdate:
			ret = kv_update(on, k.data(), k.size(), op.val.data(), op.val.size());
			break;
		case Kind::kPut:
			ret = kv_put(on, k.data(), k.size(), op.val.data(), op.val.size());
			break;
		case Kind::kDelete:
			ret = kv_delete(on, k.data(), k.size());
			break;
		case Kind::kGet: {
			State s = Read(on, k, &ret);
			if (ret == 0 && s != (op.absent ? State() : State(op.val)))
				ret = -EIO; // the workload itself read a wrong value
			break;
		}
		case Kind::kReclaim:
			ret = kv__st_test_reclaim(on);
			break;
		}
		if (ret != 0)
			return ret;
		++*done;
	}
	return 0;
}

// The claim words of a member's store region (its id table, layout.h).
uint64_t *IdWords(void *store)
{
	auto *sb = static_cast<const kv_st_super *>(store);
	return reinterpret_cast<uint64_t *>(static_cast<char *>(store) + sb->id_off);
}

// The id the store's only client claimed, from a member's store region
// (node 0's as anyone's), or ~0u.
unsigned ClaimedId(void *store)
{
	auto *sb = static_cast<const kv_st_super *>(store);
	const uint64_t *ids = IdWords(store);
	for (unsigned id = 0; id < sb->max_clients; id++)
		if (ids[id] != 0)
			return id;
	return ~0u;
}

// Open a client on @cfg into *@c; the id it claimed (the claim word of
// @store, a member's store region, that was 0 and is not now), or ~0u.
unsigned OpenNotingId(kv_client **c, const kv_config &cfg, void *store)
{
	const std::vector<uint64_t> before(IdWords(store), IdWords(store) + cfg.max_clients);
	if (kv_open(c, &cfg) != 0)
		return ~0u;
	for (unsigned id = 0; id < cfg.max_clients; id++)
		if (before[id] == 0 && IdWords(store)[id] != 0)
			return id;
	return ~0u;
}

int Workload(void *arg)
{
	auto *r = static_cast<Run *>(arg);
	if (r->create) {
		kv_config cfg = Config(*r);
		// Its deadlines run on the wall clock while crash points are
		// checked; the cluster's timeout (kv_create's) must allow them.
		cfg.timeout_ms = 3600u * 1000u;
		int ret = kv_create(&cfg);
		if (ret != 0)
			return ret;
		r->created = true;
		ret = kv_open(&r->c, &cfg);
		if (ret != 0)
			return ret;
		r->id = ClaimedId(r->regions[1]);
	}
	return RunOps(r->c, r->ops, &r->done, r->survivor);
}

// Give the crashed client's id (r.id) to the next client that opens:
// release its claim word on every node and take every other id with a
// claim nobody owns (kDeadClaim); idempotent, since a second life that
// crashed inside it is handed over again.
// Other clients do this for a dead client once its lease ran out
// (kv/src/store/lease.c); here, at once, it makes the check's client resume the crashed client's log and
// object chunk from the marks the image holds, so a mark counted before it
// was durable shows as a value overwritten.
constexpr uint64_t kDeadClaim = UINT64_C(0xdead0001);

void HandOverCrashedId(const Run &r)
{
	// No client had its id yet (a crash inside create or the first open):
	// the ids are as create and that open left them.
	if (r.id == ~0u)
		return;
	for (size_t i = 1; i < r.regions.size(); i += 2) {
		auto *sb = static_cast<const kv_st_super *>(r.regions[i]);
		uint64_t *ids = IdWords(r.regions[i]);
		for (unsigned id = 0; id < sb->max_clients; id++)
			ids[id] = id == r.id ? 0 : kDeadClaim;
		// Durable, as a repair's would be: a second life's image must
		// not lose the hand-over it started from.
		pm_persist(ids, sb->max_clients * sizeof(*ids));
	}
}

// Every key's value through @c against @model, the op in flight @flying
// allowed to have taken effect or not. 0, or 1 with the reason in @msg.
int CheckKeys(kv_client *c, const std::map<std::string, State> &model, const Op *flying,
	const char *when, char *msg, size_t len)
{
	for (const auto &[k, want] : model) {
		int ret;
		State got = Read(c, k, &ret);
		if (ret != 0) {
			snprintf(msg, len, "get %s %s: %s (%s)", k.c_str(), when, pm_strerror(ret),
				pm_errormsg());
			return 1;
		}
		if (got == want)
			continue;
		bool maybe = flying != nullptr && flying->key == k;
		if (maybe && got == After(*flying, want))
			continue;
		snprintf(msg, len, "%s holds %s %s; expected %s%s%s", k.c_str(), Show(got).c_str(),
			when, Show(want).c_str(), maybe ? " or " : "",
			maybe ? Show(After(*flying, want)).c_str() : "");
		return 1;
	}
	return 0;
}

// The state of every key of @ops (and of @from's keys) after the first
// @done of @ops, from @from.
std::map<std::string, State> ModelAfter(std::map<std::string, State> from,
	const std::vector<Op> &ops, size_t done)
{
	for (const Op &op : ops)
		if (op.kind != Kind::kReclaim)
			from.emplace(op.key, std::nullopt);
	for (size_t i = 0; i < done; i++)
		if (ops[i].kind != Kind::kReclaim)
			from[ops[i].key] = After(ops[i], from[ops[i].key]);
	return from;
}

// A client opened on the image with @cfg, or null with the reason in @msg.
kv_client *OpenChecker(const kv_config &cfg, const char *when, char *msg, size_t len)
{
	kv_client *c = nullptr;
	int ret = kv_open(&c, &cfg);
	if (ret != 0)
		snprintf(msg, len, "kv_open %s: %s (%s)", when, pm_strerror(ret), pm_errormsg());
	return c;
}

// A client holding the crashed client's id, opened on the image, or null
// with the reason in @msg.
kv_client *OpenOnImage(const Run &r, unsigned timeout_ms, const char *when, char *msg,
	size_t len)
{
	HandOverCrashedId(r);
	kv_config cfg = Config(r);
	cfg.timeout_ms = timeout_ms;
	return OpenChecker(cfg, when, msg, len);
}

int Check(void *arg, char *msg, size_t len);

pmtest::CrashRun Simulate(Run *r, const char *name, unsigned one_in, unsigned max_images,
	pm_crashsim_run_fn run, pm_crashsim_check_fn check);

// "second" for life 1 (the first is life 0).
const char *Ordinal(size_t n)
{
	static const char *const names[] = { "first", "second", "third", "fourth", "fifth" };
	return n < std::size(names) ? names[n] : "later";
}

// The state of every key after life @n's completed operations (life 0:
// the workload's), its operation in flight in *@flying (null if none).
std::map<std::string, State> LifeModel(const Run &r, size_t n, const Op **flying)
{
	const std::vector<Op> &ops = n == 0 ? r.ops : r.lives[n - 1].ops;
	const size_t done = n == 0 ? r.done : r.lives[n - 1].done;
	*flying = done < ops.size() ? &ops[done] : nullptr;
	return ModelAfter(n == 0 ? r.from : r.lives[n - 1].start, ops, done);
}

// The word at the start of every 128-byte unit of the crashed id's log on
// node 0: where a write's buffer begins, its header's meta (a write's word
// without the flag, never 0), else whatever bytes a value left there (0
// where nothing was ever written).
std::vector<uint64_t> LogHeads(const Run &r)
{
	auto *sb = static_cast<const kv_st_super *>(r.regions[1]);
	const char *log = static_cast<const char *>(r.regions[1]) + sb->log_off +
		r.id * sb->log_bytes;
	std::vector<uint64_t> heads(sb->log_bytes / KV_ST_BUF_UNIT);
	for (size_t u = 0; u < heads.size(); u++)
		heads[u] = reinterpret_cast<const kv_st_vhdr *>(log + u * KV_ST_BUF_UNIT)->meta;
	return heads;
}

// Life n > 0, run under a nested simulator at each image of life n - 1:
// a client takes the crashed id, finds life n - 1's state (as Check does),
// resolves the operation in flight from what it reads, and runs the life's
// ops without closing (it is crashed in turn). With must_reuse, the units
// of the id's log its writes began a buffer on that held an earlier
// life's bytes are counted in reused: those were freed and taken again.
int NextLife(void *arg)
{
	auto *r = static_cast<Run *>(arg);
	const size_t n = r->life;
	Life &l = r->lives[n - 1];
	const Op *flying;
	std::map<std::string, State> model = LifeModel(*r, n - 1, &flying);
	char when[64], msg[256];
	snprintf(when, sizeof(when), "(%s life)", Ordinal(n));
	// Its deadlines run on the wall clock while its crash points are checked.
	kv_client *c = OpenOnImage(*r, 3600u * 1000u, when, msg, sizeof(msg));
	if (c == nullptr || CheckKeys(c, model, flying, when, msg, sizeof(msg)) != 0) {
		l.err = msg;
		return 1;
	}
	if (flying != nullptr && flying->kind != Kind::kReclaim) {
		int ret;
		model[flying->key] = Read(c, flying->key, &ret);
		if (ret != 0) {
			l.err = "get " + flying->key + ": " + pm_strerror(ret);
			return 1;
		}
	}
	l.start = model;
	l.started = true;
	// Everything in the log now is earlier lives' (the recovery writes
	// no buffer).
	const std::vector<uint64_t> before = l.must_reuse ? LogHeads(*r) : std::vector<uint64_t>();
	int ret = RunOps(c, l.ops, &l.done);
	if (ret != 0) {
		l.err = "op " + std::to_string(l.done) + " of the " + Ordinal(n) + " life: " +
			pm_strerror(ret) + " (" + pm_errormsg() + ")";
		return ret;
	}
	if (!l.must_reuse)
		return 0;
	const std::vector<uint64_t> after = LogHeads(*r);
	for (size_t u = 0; u < after.size(); u++)
		l.reused += before[u] != 0 && after[u] != before[u] && after[u] != 0;
	if (r->life_stats != nullptr) {
		__atomic_fetch_add(&r->life_stats->runs[n - 1], 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&r->life_stats->reusing[n - 1], l.reused > 0, __ATOMIC_RELAXED);
		__atomic_fetch_add(&r->life_stats->reused[n - 1], l.reused, __ATOMIC_RELAXED);
	}
	return 0;
}

// An image of life @n > 0 (or of the first life, through Check): a fresh
// client with the crashed id must find the life's state, the operation
// in flight before or after.
int CheckLife(Run *r, size_t n, char *msg, size_t len)
{
	const Op *flying;
	std::map<std::string, State> model = LifeModel(*r, n, &flying);
	char when[96];
	snprintf(when, sizeof(when), "after %zu ops of the %s life",
		r->lives[n - 1].done, Ordinal(n));
	kv_client *c = OpenOnImage(*r, Config(*r).timeout_ms, when, msg, len);
	if (c == nullptr)
		return 1;
	int bad = CheckKeys(c, model, flying, when, msg, len);
	int ret = kv_close(&c);
	if (bad == 0 && ret != 0)
		snprintf(msg, len, "kv_close: %s (%s)", pm_strerror(ret), pm_errormsg());
	return bad != 0 || ret != 0;
}

int CheckNextLife(void *arg, char *msg, size_t len);

// For a check of an image of life @n - 1: life @n run on it under a nested
// simulator, crashed at one point in its one_in, two images each (every
// word durable, every word newest). 0, or 1 with the reason in @msg.
int CrashLife(Run *r, size_t n, char *msg, size_t len)
{
	r->life = n;
	const Life &l = r->lives[n - 1];
	const std::string name = std::string("kv-crash-") + Ordinal(n) + "-life";
	pmtest::CrashRun cr = Simulate(r, name.c_str(), l.one_in, 2, NextLife, CheckNextLife);
	if (r->life_stats != nullptr && n <= std::size(r->life_stats->points)) {
		__atomic_fetch_add(&r->life_stats->points[n - 1], cr.st.points, __ATOMIC_RELAXED);
		__atomic_fetch_add(&r->life_stats->images[n - 1], cr.st.images, __ATOMIC_RELAXED);
	}
	if (cr.ret != 0)
		snprintf(msg, len, "%s crash: %s%s", Ordinal(n), l.err.c_str(),
			cr.report.c_str());
	return cr.ret != 0;
}

// An image of life n > 0: before its ops started (a crash in the take-over
// or its recovery), life n - 1's state; after, the state its completed ops
// left -- or, with a life after it, that life run on the image.
int CheckNextLife(void *arg, char *msg, size_t len)
{
	auto *r = static_cast<Run *>(arg);
	const size_t n = r->life;
	if (!r->lives[n - 1].started) {
		if (n > 1)
			return CheckLife(r, n - 1, msg, len);
		Run first = *r;
		first.lives.clear();
		first.life = 0;
		first.overwrite_log = false;
		return Check(&first, msg, len);
	}
	if (n < r->lives.size())
		return CrashLife(r, n + 1, msg, len);
	return CheckLife(r, n, msg, len);
}

// Runs @run(@r) under a simulator named @name over every region of @r,
// checking with @check: at one point in @one_in (every point if 1), with at
// most @max_images images each. The report names the thread's last
// message too.
pmtest::CrashRun Simulate(Run *r, const char *name, unsigned one_in, unsigned max_images,
	pm_crashsim_run_fn run, pm_crashsim_check_fn check)
{
	std::vector<pmtest::Region> regions;
	for (size_t i = 0; i < r->regions.size(); i++)
		regions.push_back({ r->regions[i], i % 2 == 0 ? r->index_region : r->store_region });
	pm_crashsim_config cfg = pmtest::SimConfig(name, one_in, max_images);
	// An image whose check crashes two or more lives in turn runs nested
	// simulations of minutes, not the default's one.
	if (r->life + 1 < r->lives.size())
		cfg.image_timeout_s = 600;
	pmtest::CrashRun cr = pmtest::RunCrashSim(cfg, regions, run, check, r);
	if (cr.ret != 0)
		cr.report += std::string(" ") + pm_errormsg();
	return cr;
}

// Write a new key whose value takes several log slots: written where the
// recovered client's log resumes, it overwrites every buffer the crashed
// client wrote after its last durable mark, so a mark counted before it was
// durable shows as a lost value in the CheckKeys that follows. 0, or 1 with
// the reason in @msg.
int PutOverLog(kv_client *c, std::map<std::string, State> *model, size_t done,
	const std::string &k, char *msg, size_t len)
{
	const std::string z = "zz", zv(4000, 'z');
	char when[96];
	int ret = kv_put(c, z.data(), z.size(), zv.data(), zv.size());
	if (ret != 0) {
		snprintf(msg, len, "put %s on the image after %zu ops and a put of %s: %s (%s)",
			z.c_str(), done, k.c_str(), pm_strerror(ret), pm_errormsg());
		return 1;
	}
	(*model)[z] = zv;
	snprintf(when, sizeof(when), "after %zu ops and puts of %s and %s", done, k.c_str(),
		z.c_str());
	return CheckKeys(c, *model, nullptr, when, msg, len);
}

// An image of ChunkClaimsHoldForAnotherId: a client with another id than
// the crashed one (which keeps its claim) finds every key, then inserts
// values of 1000 bytes (about three to a chunk) until the chunks run out.
// It starts at chunk 0 and must never win the chunk the crashed client
// claimed (chunk 2) once an insert there returned: it would write its
// objects over the crashed client's. 0, or 1 with the reason in @msg.
int CheckOtherId(Run *r, char *msg, size_t len)
{
	std::map<std::string, State> model = ModelAfter({}, r->ops, r->done);
	const Op *flying = r->done < r->ops.size() ? &r->ops[r->done] : nullptr;
	char when[64];
	snprintf(when, sizeof(when), "after %zu ops", r->done);
	kv_client *c = OpenChecker(Config(*r), when, msg, len);
	if (c == nullptr)
		return 1;
	int ret = 0;
	int bad = CheckKeys(c, model, flying, when, msg, len);
	if (bad == 0 && flying != nullptr) {
		model[flying->key] = Read(c, flying->key, &ret); // as it is now
		if (ret != 0) {
			snprintf(msg, len, "get %s %s: %s", flying->key.c_str(), when,
				pm_strerror(ret));
			bad = 1;
		}
	}
	const std::string v(1000, 'y');
	unsigned inserted = 0;
	for (; bad == 0 && ret == 0 && inserted < 16; inserted++) {
		std::string k = "y" + std::to_string(inserted);
		ret = kv_insert(c, k.data(), k.size(), v.data(), v.size());
		if (ret == 0)
			model[k] = v;
	}
	if (bad == 0 && ret != 0 && ret != -ENOSPC) {
		snprintf(msg, len, "insert %u by another id %s: %s (%s)", inserted, when,
			pm_strerror(ret), pm_errormsg());
		bad = 1;
	}
	if (bad == 0) {
		snprintf(when, sizeof(when), "after %zu ops and another id's inserts", r->done);
		bad = CheckKeys(c, model, nullptr, when, msg, len);
	}
	kv_close(&c);
	return bad;
}

int Check(void *arg, char *msg, size_t len)
{
	auto *r = static_cast<Run *>(arg);
	if (!r->lives.empty())
		return CrashLife(r, 1, msg, len);
	// Before kv_create returned there may be no store: nothing to check
	// (an open would wait its whole timeout for a majority).
	if (!r->created)
		return 0;
	if (r->claim_lives && r->id != ~0u) {
		const unsigned majority = static_cast<unsigned>(r->uris.size()) / 2 + 1;
		unsigned held = 0;
		for (size_t i = 1; i < r->regions.size(); i += 2)
			held += IdWords(r->regions[i])[r->id] != 0;
		if (held < majority) {
			snprintf(msg, len, "id %u, claimed by a kv_open that returned, is held "
				"on %u nodes after the crash (another client may take it)", r->id,
				held);
			return 1;
		}
	}
	if (r->other_id)
		return CheckOtherId(r, msg, len);
	// A get that returned a write in flight locked its timestamp (READ):
	// the lock must be durable on f+1 nodes, or the writer, were its guess
	// stale, could still lock it (WRITE) and write the value again under a
	// later timestamp after the crash of a node (SWARM, R15-R18, S10).
	// Read before any check's get, whose own locks would hide it.
	for (unsigned l = 0; l < r->locked; l++) {
		const unsigned majority = static_cast<unsigned>(r->uris.size()) / 2 + 1;
		unsigned held = 0;
		for (size_t i = 1; i < r->regions.size(); i += 2) {
			uint64_t tsl = *reinterpret_cast<const uint64_t *>(
				static_cast<const char *>(r->regions[i]) + r->tsl_off);
			held += (tsl >> 1) >= r->locked_ts[l];
		}
		if (held < majority) {
			snprintf(msg, len, "after %zu ops: the lock on ts %llu of %s, taken by a get "
				"that returned, is held on %u nodes after the crash", r->done,
				(unsigned long long)r->locked_ts[l], r->lock_key.c_str(), held);
			return 1;
		}
	}
	// A write the survivor saw in flight has taken effect: it must hold.
	const size_t done = r->saw == r->done ? r->done + 1 : r->done;
	std::map<std::string, State> model = ModelAfter(r->from, r->ops, done);
	const Op *flying = done < r->ops.size() ? &r->ops[done] : nullptr;
	char when[96];
	snprintf(when, sizeof(when), "after %zu ops%s", r->done,
		done > r->done ? " and a get of the next one's value" : "");
	if (r->survivor != nullptr) // its connections still reach the image
		return CheckKeys(r->survivor, model, flying, when, msg, len);

	// One client does all of it: each kv_open costs six connections'
	// token checks (yescrypt, ~20 ms each here), which is most of an
	// image's time.
	kv_client *c = OpenOnImage(*r, Config(*r).timeout_ms, when, msg, len);
	if (c == nullptr)
		return 1;
	// RAW's one copy of the key in flight may be torn by the crash, and
	// RAW has no other: a read retries until its timeout. Its state is
	// not checked; the put below must still replace it.
	// A get in flight tears nothing.
	bool torn = r->repl == KV_REPL_RAW && flying != nullptr && flying->kind != Kind::kGet;
	std::map<std::string, State> durable = model;
	if (torn)
		durable.erase(flying->key);
	if (CheckKeys(c, durable, torn ? nullptr : flying, when, msg, len) != 0) {
		kv_close(&c);
		return 1;
	}

	// Recovery reuse: a write with the crashed client's id, on the key
	// whose operation was cut short (so its leftovers are met), must
	// succeed and leave every other key as it was.
	const std::string k = flying != nullptr ? flying->key : r->ops.front().key;
	const std::string v = "after-crash";
	int ret = kv_put(c, k.data(), k.size(), v.data(), v.size());
	if (ret != 0) {
		snprintf(msg, len, "put %s on the image %s: %s (%s)", k.c_str(), when,
			pm_strerror(ret), pm_errormsg());
		kv_close(&c);
		return 1;
	}
	model[k] = v;
	snprintf(when, sizeof(when), "after %zu ops and a put of %s", r->done, k.c_str());
	if (CheckKeys(c, model, nullptr, when, msg, len) != 0) {
		kv_close(&c);
		return 1;
	}
	if (r->overwrite_log && PutOverLog(c, &model, r->done, k, msg, len) != 0) {
		kv_close(&c);
		return 1;
	}
	ret = kv_close(&c);
	if (ret != 0) {
		snprintf(msg, len, "kv_close: %s (%s)", pm_strerror(ret), pm_errormsg());
		return 1;
	}
	return 0;
}

// Run @ops on a new store made as @variant says, the first @from of them
// before the simulator starts (their result is the durable starting state)
// and the rest under it, checking one point in @one_in (every point if 1)
// -- with @lives, at each image the next life (Life), whose images run the
// one after it, and so on.
void CrashSequence(const std::string &name, const std::vector<Op> &ops, size_t from,
	const std::vector<Life> &lives = {}, unsigned one_in = 1, const Variant &variant = {});

// The workload client's yield hook (Variant::interleave): the survivor
// reads the key of the write in flight, and notes when it sees its value.
void InterleaveYield(void *arg)
{
	auto *r = static_cast<Run *>(arg);
	if (r->survivor == nullptr || r->done >= r->ops.size() || r->saw == r->done)
		return;
	const Op &op = r->ops[r->done];
	if (op.kind == Kind::kGet || op.kind == Kind::kDelete || op.survivor)
		return;
	int ret;
	kv_stats before, after;
	kv_stats_read(r->survivor, &before);
	State got = Read(r->survivor, op.key, &ret);
	kv_stats_read(r->survivor, &after);
	if (got != State(op.val) || ret != 0)
		return;
	r->saw = r->done;
	r->saw_count++;
	r->locking_gets += after.lock_calls > before.lock_calls;
	if (r->tsl_off == 0 || op.key != r->lock_key || r->locked == std::size(r->locked_ts))
		return;
	// The writer's word in flight, GUESSED (or VERIFIED by this get) on
	// the members its CAS reached: the timestamp the get locked.
	uint64_t word = 0;
	for (size_t i = 1; i < r->regions.size(); i += 2)
		word = std::max(word, *reinterpret_cast<const uint64_t *>(
			static_cast<const char *>(r->regions[i]) + r->meta_off));
	r->locked_ts[r->locked++] = kv_st_ts(word);
}

// A run of @ops on the nodes at @uris (which must outlive it).
Run NewRun(const std::vector<std::string> &uris, const std::vector<Op> &ops)
{
	Run r;
	for (const auto &u : uris)
		r.uris.push_back(u.c_str());
	r.ops = ops;
	return r;
}

// kv_create and kv_open inside the crash run, on regions that were zero,
// then @ops: once create returned, what it wrote is durable on every image
// and a client opens and finds every completed operation.
// With @claim_lives, the client that opened lives on past the crash:
// its id must be durable (Run::claim_lives). With @used, the regions held
// a store first that @used's operations ran on (UsedStore), wiped as an
// operator would to create again: only the two superblocks, since that is
// all kv_create and kv_index_create look at.
void UseStore(const kv_config &cfg, const std::vector<Op> &old, Run *r);

void CrashCreate(const std::string &name, const std::vector<Op> &ops, bool claim_lives = false,
	const std::vector<Op> &used = {})
{
	// Eight ids take 6 MiB more of log, and more index records.
	const uint64_t index_region = claim_lives ? 4 * kIndexRegion : kIndexRegion;
	const uint64_t store_region = claim_lives ? kStoreRegion + (6u << 20) : kStoreRegion;
	LocalGroup group(3, name, index_region, store_region);
	std::vector<std::string> uris = group.Uris();
	Run r = NewRun(uris, ops);
	r.claim_lives = claim_lives;
	if (claim_lives)
		r.max_clients = 8;
	r.index_region = index_region;
	r.store_region = store_region;
	r.create = true;
	r.created = false;
	r.id = ~0u;
	if (!used.empty()) {
		kv_config cfg = Config(r);
		cfg.timeout_ms = 3600u * 1000u;
		UseStore(cfg, used, &r);
		if (::testing::Test::HasFatalFailure())
			return;
	}
	for (unsigned i = 0; i < 3; i++)
		group.Close(i);
	std::vector<std::string> paths = { group.Path(0), group.Path(1), group.Path(2) };
	std::vector<rdma_conn *> conns;
	std::string why;
	ASSERT_TRUE(kvtest::EmptyRegions(uris, paths, 2, &r.regions, &conns, &why)) << why;
	pmtest::CrashRun cr = Simulate(&r, name.c_str(), 1, 3, Workload, Check);
	EXPECT_EQ(cr.ret, 0) << cr.report;
	EXPECT_TRUE(r.created);
	EXPECT_EQ(r.done, ops.size());
	EXPECT_EQ(cr.st.points, cr.st.events + 1) << "every crash point";
	printf("%s: %llu crash points, %llu images\n", name.c_str(),
		(unsigned long long)cr.st.points, (unsigned long long)cr.st.images);
	EXPECT_EQ(kv_close(&r.c), 0);
	for (rdma_conn *&c : conns)
		rdma_conn_close(&c);
}

// A store used before a create over its regions: a client runs @old and
// closes (its marks lowered to what it used, its log and objects left as
// they are), another inserts and updates a key and dies without closing
// (its id claim, marks and insert records left up); every key either
// wrote is absent in the new store (r->from).
void UseStore(const kv_config &cfg, const std::vector<Op> &old, Run *r)
{
	ASSERT_EQ(kv_create(&cfg), 0) << pm_errormsg();
	kv_client *c = nullptr;
	ASSERT_EQ(kv_open(&c, &cfg), 0) << pm_errormsg();
	size_t done = 0;
	ASSERT_EQ(RunOps(c, old, &done), 0) << pm_errormsg();
	ASSERT_EQ(kv_close(&c), 0) << pm_errormsg();
	const std::string big(300, 'Y');
	const std::vector<Op> dies = {
		{ Kind::kInsert, "y", "y-old" },
		{ Kind::kUpdate, "y", big },
	};
	ASSERT_EQ(kv_open(&c, &cfg), 0) << pm_errormsg();
	done = 0;
	ASSERT_EQ(RunOps(c, dies, &done), 0) << pm_errormsg();
	kv__st_test_abandon(&c);
	r->from = ModelAfter({}, old, 0);
	for (const Op &op : dies)
		r->from.emplace(op.key, std::nullopt);
}

void CrashSequence(const std::string &name, const std::vector<Op> &ops, size_t from,
	const std::vector<Life> &lives, unsigned one_in, const Variant &variant)
{
	// Sixteen ids take 14 MiB more of log, and more index records.
	const uint64_t index_region = variant.slots_apart ? 8 * kIndexRegion : kIndexRegion;
	const uint64_t store_region = variant.other_id ? kThreeChunkRegion :
		variant.slots_apart ? kStoreRegion + (14u << 20) : kStoreRegion;
	LocalGroup group(3, name, index_region, store_region);
	std::vector<std::string> uris = group.Uris();
	Run r = NewRun(uris, ops);
	r.repl = variant.repl;
	r.index_region = index_region;
	if (variant.slots_apart)
		r.max_clients = 16;
	// RAW keeps values in place only: no 4000-byte put over the log.
	r.overwrite_log = variant.repl != KV_REPL_RAW;
	r.store_region = store_region;
	r.other_id = variant.other_id;
	if (variant.other_id)
		r.chunk_bytes = kSmallChunk;
	kv_config cfg = Config(r);
	// The workload's deadlines run on the wall clock while its crash
	// points are checked, which takes minutes; the cluster's timeout
	// (kv_create's) must allow them.
	cfg.timeout_ms = 3600u * 1000u;
	ASSERT_EQ(kv_create(&cfg), 0) << pm_errormsg();
	if (variant.slots_apart) {
		// A client starts its claims at a random id: open (and close)
		// until one gets an id in 0-7 and another one in 8-15.
		void *store = kvtest::MappedRegion(group.Path(0), "DMKVSTO1");
		ASSERT_NE(store, nullptr);
		for (unsigned tries = 0; r.c == nullptr || r.survivor == nullptr; tries++) {
			ASSERT_LT(tries, 64u) << "no two clients got ids on different lines";
			kv_client *c = nullptr;
			const unsigned id = OpenNotingId(&c, cfg, store);
			ASSERT_LT(id, 16u) << pm_errormsg();
			kv_client **slot = id < 8 ? &r.c : &r.survivor;
			if (*slot == nullptr)
				*slot = c;
			else
				ASSERT_EQ(kv_close(&c), 0);
		}
	} else if (variant.interleave) {
		ASSERT_EQ(kv__st_test_open(&r.c, &cfg, InterleaveYield, &r), 0) << pm_errormsg();
	} else {
		ASSERT_EQ(kv_open(&r.c, &cfg), 0) << pm_errormsg();
	}
	// With another id checking, the workload must hold id 1, whose first
	// chunk is 7919 % 3 = 2 (id 0's is chunk 0, on the marks' line). A
	// client starts its claims at a random id: open until it gets 1.
	for (unsigned tries = 0; variant.other_id; tries++) {
		ASSERT_LT(tries, 64u) << "no client got id 1";
		void *store = kvtest::MappedRegion(group.Path(0), "DMKVSTO1");
		ASSERT_NE(store, nullptr);
		if (ClaimedId(store) == 1)
			break;
		kv_client *second = nullptr; // takes id 1; the first lets 0 go
		ASSERT_EQ(kv_open(&second, &cfg), 0) << pm_errormsg();
		ASSERT_EQ(kv_close(&r.c), 0);
		r.c = second;
	}
	if ((variant.survivor || variant.interleave) && r.survivor == nullptr) {
		ASSERT_EQ(kv_open(&r.survivor, &cfg), 0) << pm_errormsg();
	}
	if (variant.no_grace)
		kv__st_test_no_grace(r.c, true);
	ASSERT_LE(from, ops.size());
	r.ops.resize(from);
	ASSERT_EQ(Workload(&r), 0) << pm_errormsg();
	r.ops = ops;
	r.saw = SIZE_MAX;
	if (variant.interleave && from < ops.size() && from > 0) {
		// The object of the key written in flight (inserted before the
		// run): where its writer's metadata and lock words are.
		r.lock_key = ops[from].key;
		uint64_t loc = 0;
		ASSERT_EQ(kv_index_lookup(kv__st_test_index(r.c), r.lock_key.data(), r.lock_key.size(),
				  &loc), 0);
		const kv_st_geo geo = kv_st_geo_make(loc, static_cast<uint32_t>(r.lock_key.size()),
			cfg.max_clients);
		unsigned writer = ~0u; // the one slot its insert wrote
		for (unsigned w = 0; w < cfg.max_clients; w++) {
			uint64_t word = 0;
			for (unsigned i = 0; i < 3; i++) {
				void *store = kvtest::MappedRegion(group.Path(i), "DMKVSTO1");
				ASSERT_NE(store, nullptr);
				word |= *reinterpret_cast<const uint64_t *>(
					static_cast<char *>(store) + geo.off + 8 * w);
			}
			if (word == 0)
				continue;
			ASSERT_EQ(writer, ~0u) << "two writers of " << r.lock_key;
			writer = w;
		}
		ASSERT_NE(writer, ~0u) << r.lock_key << " has no writer";
		r.meta_off = geo.off + 8 * writer;
		r.tsl_off = geo.off + geo.tsl_off + 8 * writer;
	}
	for (unsigned i = 0; i < 3 && variant.interleave; i++)
		ASSERT_EQ(kv__st_test_inject(r.c, i, RDMA_FAULT_SPLIT, 0), 0);
	for (unsigned i = 0; i < 3; i++)
		group.Close(i);
	r.id = ~0u;
	for (unsigned i = 0; i < 3; i++) {
		// The index region starts with the index superblock, the store
		// region with the store's (kv/src/store/layout.h).
		r.regions.push_back(kvtest::MappedRegion(group.Path(i), "DMKVIDX1"));
		ASSERT_NE(r.regions.back(), nullptr) << group.Path(i);
		r.regions.push_back(kvtest::MappedRegion(group.Path(i), "DMKVSTO1"));
		ASSERT_NE(r.regions.back(), nullptr) << group.Path(i);
	}
	r.id = ClaimedId(r.regions[1]);
	ASSERT_NE(r.id, ~0u) << "no client id claimed";
	if (variant.other_id) {
		auto *sb = static_cast<const kv_st_super *>(r.regions[1]);
		ASSERT_EQ(r.id, 1u);
		ASSERT_EQ(sb->nchunks, 3u);
		ASSERT_EQ((sb->chunk_off + 8 * 2) % 64, 0u) << "chunk 2's word shares a line";
	}

	r.lives = lives;
	// What the nested lives did, summed in the children that ran them.
	void *shared = MAP_FAILED;
	if (!lives.empty()) {
		ASSERT_LE(lives.size(), std::size(LifeStats{}.points));
		shared = mmap(nullptr, sizeof(LifeStats), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(shared, MAP_FAILED);
		r.life_stats = new (shared) LifeStats{};
	}
	// Every durable value, every newest one and one mix per point: each
	// image costs a client's six token checks, and a fourth image per
	// point would add a third to the run. A second life per image costs a
	// nested simulation: two images per point.
	pmtest::CrashRun cr = Simulate(&r, name.c_str(), one_in, r.lives.empty() ? 3 : 2, Workload,
		Check);
	const pm_crashsim_stats &st = cr.st;
	EXPECT_EQ(cr.ret, 0) << cr.report;
	EXPECT_EQ(r.done, ops.size());
	if (one_in == 1) {
		EXPECT_EQ(st.points, st.events + 1) << "every crash point";
	}
	EXPECT_GT(st.images, st.points);
	::testing::Test::RecordProperty("crash_points", std::to_string(st.points));
	::testing::Test::RecordProperty("images", std::to_string(st.images));
	printf("%s: %llu crash points, %llu images\n", name.c_str(), (unsigned long long)st.points,
		(unsigned long long)st.images);
	for (size_t n = 1; n <= lives.size(); n++) {
		const LifeStats &ls = *r.life_stats;
		printf("%s: %s life: %llu crash points, %llu images\n", name.c_str(), Ordinal(n),
			(unsigned long long)ls.points[n - 1], (unsigned long long)ls.images[n - 1]);
		if (lives[n - 1].must_reuse)
			printf("%s: %s life: %llu of %llu runs took %llu buffers of earlier lives\n",
				name.c_str(), Ordinal(n), (unsigned long long)ls.reusing[n - 1],
				(unsigned long long)ls.runs[n - 1], (unsigned long long)ls.reused[n - 1]);
		EXPECT_GT(ls.images[n - 1], 0u) << "the " << Ordinal(n) << " life was never crashed";
		if (lives[n - 1].must_reuse) {
			// Reuse did happen. Not in every run: a life's reclaim
			// frees only what it found superseded then, and its next
			// writes may still take fresh units (half of the second
			// lives' runs did, in one run of the test).
			EXPECT_GT(ls.runs[n - 1], 0u) << "no " << Ordinal(n) << " life ran its ops";
			EXPECT_GT(ls.reusing[n - 1], 0u)
				<< "no run of the " << Ordinal(n) << " life took a buffer of an "
				"earlier life";
		}
	}
	if (shared != MAP_FAILED)
		munmap(shared, sizeof(LifeStats));
	if (variant.interleave) {
		EXPECT_EQ(r.saw_count, ops.size() - from) << "a write the survivor never saw in flight";
		// Each such get locked: the lock check above did not pass for
		// want of a lock.
		EXPECT_EQ(r.locking_gets, r.saw_count) << "a get of a write in flight took no lock";
		EXPECT_EQ(r.locked, r.saw_count);
	}
	if (variant.no_grace) {
		kv_stats cs;
		kv_stats_read(r.c, &cs);
		EXPECT_GT(cs.objects_reused, 0u) << "no dead object was reused";
	}
	EXPECT_EQ(kv_close(&r.c), 0);
	EXPECT_EQ(kv_close(&r.survivor), 0);
}

// Inserts, updates (one key twice), a delete and a re-insert of the key, a
// put of an absent key, an update too large for the in-place copy and
// longer than a buffer's first read, then a get of each key.
std::vector<Op> Sequence()
{
	const std::string big(5000, 'A'); // > the 64-byte in-place copy and 4 KiB
	return {
		{ Kind::kInsert, "a", "a1" },
		{ Kind::kInsert, "b", "b1" },
		{ Kind::kInsert, "c", "c1" },
		{ Kind::kUpdate, "a", "a2" },
		{ Kind::kUpdate, "b", "b2" },
		{ Kind::kUpdate, "b", "b3" },
		{ Kind::kDelete, "c", "" },
		{ Kind::kInsert, "c", "c2" },
		{ Kind::kPut, "d", "d1" },
		{ Kind::kUpdate, "a", big },
		{ Kind::kGet, "a", big },
		{ Kind::kGet, "b", "b3" },
		{ Kind::kGet, "c", "c2" },
		{ Kind::kGet, "d", "d1" },
	};
}

// The sequence is checked in two halves, one per test (and shard), each
// about 145 crash points: every crash image costs a fresh client (~0.15 s
// of token checks and rounds here), and the whole sequence in one run
// took over three minutes on two busy cores. The second half starts from
// the durable state the first half ends in.
constexpr size_t kHalf = 5;

TEST(KvCrash, InsertsAndUpdates)
{
	std::vector<Op> ops = Sequence();
	ops.resize(kHalf);
	CrashSequence("kv-crash-1", ops, 0);
}

TEST(KvCrash, UpdateDeleteReinsertPutGets)
{
	CrashSequence("kv-crash-2", Sequence(), kHalf);
}

TEST(KvCrash, CreateThenWrite)
{
	std::vector<Op> ops = Sequence();
	ops.resize(2);
	CrashCreate("kv-crash-create", ops);
}

// A create over regions a store used (issue 20): keys inserted, updated
// out of place, deleted, one client closed and one abandoned, then the
// two superblocks wiped (EmptyRegions) and every crash point of kv_create
// and of the new store's first writes, which reuse the old keys' names.
// Once create returned, an image must hold exactly the new store's
// completed operations: no old key, value, id claim, mark, insert record
// or log buffer may show through in the new store.
TEST(KvCrash, CreateOverAUsedStore)
{
	const std::string big(300, 'O'); // out of place: above the in-place copy
	const std::vector<Op> old = {
		{ Kind::kInsert, "a", "a-old" },
		{ Kind::kInsert, "b", "b-old" },
		{ Kind::kUpdate, "b", big },
		{ Kind::kDelete, "a", "" },
		{ Kind::kInsert, "c", "c-old" },
	};
	const std::vector<Op> ops = {
		{ Kind::kInsert, "b", "b-new" },
		{ Kind::kPut, "y", "y-new" },
	};
	CrashCreate("kv-crash-create-used", ops, false, old);
}

// A client outlives the crash of every node: the id its kv_open claimed
// must still be held on f+1 nodes, or another client could take it and
// both would write one metadata slot and one log (kv/MUTATION.md,
// group.c's id claims). With 8 ids the claim words fill a cache line of
// their own, which no later persist of the marks writes back.
TEST(KvCrash, IdClaimHoldsForALiveClient)
{
	std::vector<Op> ops = Sequence();
	ops.resize(1);
	CrashCreate("kv-crash-claim", ops, true);
}

// A 40-byte key (its object's header and key span two cache lines) and a
// value too large for an in-place copy (only the out-of-place buffer holds
// it), inserted and read back, crashed at one point in 10.
TEST(KvCrash, LongKeyAndBufferOnlyValue)
{
	const std::string key(40, 'K'), big(KV_ST_IP_MAX + 1000, 'V');
	std::vector<Op> ops = {
		{ Kind::kInsert, key, "v" },
		{ Kind::kInsert, "big", big },
		{ Kind::kInsert, "b", "b1" },
		{ Kind::kGet, key, "v" },
		{ Kind::kGet, "big", big },
	};
	CrashSequence("kv-crash-long", ops, 0, {}, 10);
}

// Two inserts and two updates with values that fit RAW's in-place copy,
// read back: the sequence of the baselines' crash tests.
std::vector<Op> BaselineSequence()
{
	return {
		{ Kind::kInsert, "a", "a1" },
		{ Kind::kInsert, "b", "b1" },
		{ Kind::kUpdate, "a", "a2" },
		{ Kind::kUpdate, "b", "b2" },
		{ Kind::kGet, "a", "a2" },
		{ Kind::kGet, "b", "b2" },
	};
}

// The DM-ABD baseline (kv_config.repl = KV_REPL_ABD) writes each value out
// of place and persists the metadata word it installs on a majority
// (swarm.c, sw_install without a read): the only persist of its writes,
// which no SWARM sequence runs. Once an update returned, every image must
// read the new value (kv/MUTATION.md, swarm.c:251).
TEST(KvCrash, AbdInsertsAndUpdates)
{
	CrashSequence("kv-crash-abd", BaselineSequence(), 0, {}, 1, { KV_REPL_ABD });
}

// The RAW baseline (KV_REPL_RAW) keeps one in-place copy on node 0 and
// persists it in the write's one batch (swarm.c, raw_round): once an
// update returned, every image must read it (kv/MUTATION.md, swarm.c:558).
// The key in flight is not checked: a crash can tear RAW's single copy.
TEST(KvCrash, RawInsertsAndUpdates)
{
	CrashSequence("kv-crash-raw", BaselineSequence(), 0, {}, 1, { KV_REPL_RAW });
}

// A client's claim of an object chunk must be durable before it writes
// objects there: a client with another id, after the crash, claims chunks
// by their claim words alone (the crashed client's marks name its chunk,
// but only its own id reads them). The workload (id 1) inserts three keys
// into chunk 2, whose claim word is alone on its cache line; each image's
// check fills chunks 0 and 1 with another id and must then find chunk 2
// taken (kv/MUTATION.md, group.c:669).
TEST(KvCrash, ChunkClaimsHoldForAnotherId)
{
	std::vector<Op> ops = {
		{ Kind::kInsert, "a", "a1" },
		{ Kind::kInsert, "b", "b1" },
		{ Kind::kInsert, "c", "c1" },
		{ Kind::kGet, "a", "a1" },
	};
	CrashSequence("kv-crash-chunks", ops, 0, {}, 1, { KV_REPL_SWARM, true });
}

// A client that outlives the crash of every node keeps what it cached: a
// key it read before another client deleted it must read as absent once
// the delete returned. The index removal is durable, but the survivor's
// cache still maps the key to its object, so the delete's tombstone must
// be durable too (kv/MUTATION.md, swarm.c:830). Each image's check reads
// every key through the survivor.
TEST(KvCrash, DeleteSeenByASurvivingReader)
{
	std::vector<Op> ops = {
		{ Kind::kInsert, "c", "c1" },
		{ Kind::kGet, "c", "c1", true },
		{ Kind::kDelete, "c", "" },
		{ Kind::kInsert, "d", "d1" },
	};
	Variant v;
	v.survivor = true;
	CrashSequence("kv-crash-survivor", ops, 0, {}, 1, v);
}

// A dead object goes back to its allocator, which zeroes it on every node
// before an insert of the same size takes it (objects.c `obj_zero`): the
// insert writes only its header, key, in-place copy and its own slot. The
// workload (X) inserts p; another client (the survivor, Y) deletes it,
// which leaves Y's tombstone in p's object; X's get meets the tombstone
// and queues the object dead, and X's insert of q takes it at once
// (Variant::no_grace). Once that insert returned, every image must read q
// and find p absent: Y's tombstone, which outranks every word, must not
// come back under q (kv/MUTATION.md, objects.c:212). With 16 ids, X's in
// 0-7 and Y's in 8-15 (Variant::slots_apart): with two, every slot shares
// q's first line, which the insert's persist of its own slot writes back
// whole, and a zeroing never made durable would not show.
TEST(KvCrash, ReusedObjectHidesNoOldTombstone)
{
	std::vector<Op> ops = {
		{ Kind::kInsert, "p", "p1" },
		{ Kind::kDelete, "p", "", true },
		{ Kind::kGet, "p", "", false, true },
		{ Kind::kInsert, "q", "q1" },
		{ Kind::kGet, "q", "q1", true },
	};
	Variant v;
	v.survivor = true;
	v.no_grace = true;
	v.slots_apart = true;
	CrashSequence("kv-crash-reuse-object", ops, 2, {}, 1, v);
}

// A get between an update's CASes and their persists, as it may run over
// RDMA, where a batch is not atomic: the workload client's store batches
// split before their last persist (RDMA_FAULT_SPLIT), and in its waits
// the survivor reads the key being written. Once the survivor has read the
// new value, every image must hold it, the update in flight or not: the
// get counted the writer's words, so it must have persisted them
// (swarm.c `sw_read_round`; kv/MUTATION.md, swarm.c:177, class B). The
// survivor finds the writer's word GUESSED twice and locks its timestamp
// (READ, R15-R18) before it returns the value: from then on, every image
// must hold that lock on f+1 nodes, or the writer could still lock the
// timestamp WRITE and write the value again under a later one (swarm.c
// `sw_trylock`'s persist; kv/MUTATION.md, class B).
TEST(KvCrash, GetBetweenCasAndPersist)
{
	std::vector<Op> ops = {
		{ Kind::kInsert, "a", "a1" },
		{ Kind::kUpdate, "a", "a2" },
		{ Kind::kPut, "a", std::string(300, 'P') }, // out of place
	};
	Variant v;
	v.interleave = true;
	CrashSequence("kv-crash-interleave", ops, 1, {}, 1, v);
}

// ReclaimSeesAWriteInFlight: a client (Y2) takes the id of an abandoned
// one (Y1) in the middle of another client's (Z's) update of key k, between
// Z's CAS and its persist (RDMA_FAULT_SPLIT, Z's yield hook). Y2's recovery
// finds Y1's buffer B of k's value; its reclaim reads k's metadata, counts
// Z's word above B on f+1 nodes, frees B, and Y2 puts key j with a value
// that takes B. The reclaim must persist what it counted: were Z's word
// lost in the crash, k's newest durable word would still name B, which
// holds j's value now (kv/MUTATION.md, recycle.c `reclaim_round`).
struct RecycleRun : Run {
	kv_config late_cfg; // Y2's
	kv_client *late = nullptr;
	bool late_started = false, late_put = false, reused = false;
	std::string late_err;
	uint64_t z_meta_off = 0; // Z's metadata word of k (0 until its CAS)
	uint64_t b_off = 0, b_meta = 0; // B in a store region, and its write
	std::string vb, vj;
	unsigned free_id = 0; // the id a check's client takes
	kv_stats late_st{};
};

constexpr uint64_t kMetaMask = ~KV_ST_VERIFIED;

// The hook's and the checks' argument (a Run, as Simulate passes it).
void *AsRun(RecycleRun *r)
{
	return static_cast<Run *>(r);
}

// Z's yield hook: once Z's word of k shows (its CAS landed, not yet
// persisted), Y2 opens with Y1's id, reclaims, and puts j.
void RecycleYield(void *arg)
{
	auto *r = static_cast<RecycleRun *>(static_cast<Run *>(arg));
	if (r->late_started)
		return;
	bool landed = false;
	for (size_t i = 1; i < r->regions.size(); i += 2)
		landed |= *reinterpret_cast<const uint64_t *>(
			static_cast<const char *>(r->regions[i]) + r->z_meta_off) != 0;
	if (!landed)
		return;
	r->late_started = true;
	int ret = kv_open(&r->late, &r->late_cfg);
	if (ret != 0) {
		r->late_err = std::string("kv_open: ") + pm_strerror(ret) + " (" + pm_errormsg() + ")";
		return;
	}
	for (unsigned tries = 0;; tries++) {
		kv_stats_read(r->late, &r->late_st);
		if (r->late_st.recycled > 0 && tries > 0)
			break;
		if (tries == 4) {
			r->late_err = "no buffer recycled";
			return;
		}
		ret = kv__st_test_reclaim(r->late);
		if (ret != 0) {
			r->late_err = std::string("reclaim: ") + pm_strerror(ret);
			return;
		}
	}
	ret = kv_put(r->late, "j", 1, r->vj.data(), r->vj.size());
	if (ret != 0) {
		r->late_err = std::string("put j: ") + pm_strerror(ret) + " (" + pm_errormsg() + ")";
		return;
	}
	r->late_put = true;
	kv_stats_read(r->late, &r->late_st);
	// j's value went into B: no node holds B's write there any more.
	r->reused = true;
	for (size_t i = 1; i < r->regions.size(); i += 2)
		r->reused &= reinterpret_cast<const kv_st_vhdr *>(
			static_cast<const char *>(r->regions[i]) + r->b_off)->meta !=
			(r->b_meta & kMetaMask);
}

// An image of ReclaimSeesAWriteInFlight: k holds B's value or Z's, x its
// value, j its value once Y2's put returned (before, absent or its value).
int CheckRecycle(void *arg, char *msg, size_t len)
{
	auto *r = static_cast<RecycleRun *>(static_cast<Run *>(arg));
	for (size_t i = 1; i < r->regions.size(); i += 2) {
		IdWords(r->regions[i])[r->free_id] = 0;
		pm_persist(&IdWords(r->regions[i])[r->free_id], 8);
	}
	char when[96];
	snprintf(when, sizeof(when), "after %zu ops%s%s", r->done,
		r->late_started ? ", Y2 at work" : "", r->late_put ? " and its put of j returned" : "");
	kv_client *c = OpenChecker(Config(*r), when, msg, len);
	if (c == nullptr)
		return 1;
	int ret = 0;
	std::map<std::string, State> model = ModelAfter({ { "k", r->vb }, { "x", "x1" } }, r->ops,
		r->done);
	const Op *flying = r->done < r->ops.size() ? &r->ops[r->done] : nullptr;
	if (r->late_put)
		model["j"] = r->vj;
	int bad = CheckKeys(c, model, flying, when, msg, len);
	if (bad == 0 && !r->late_put) {
		State j = Read(c, "j", &ret);
		if (ret != 0 || (j && *j != r->vj)) {
			snprintf(msg, len, "get j %s: %s, %s", when, pm_strerror(ret), Show(j).c_str());
			bad = 1;
		}
	}
	kv_close(&c);
	return bad;
}

// Y1's writes and Z's opening before the run, Z's update of k under it,
// Y2's open, reclaim and put of j inside that update (RecycleRun).
TEST(KvCrash, ReclaimSeesAWriteInFlight)
{
	const char *name = "kv-crash-reclaim";
	const uint64_t store_region = kStoreRegion + (1u << 20); // a third log
	LocalGroup group(3, name, kIndexRegion, store_region);
	std::vector<std::string> uris = group.Uris();
	RecycleRun r;
	for (const auto &u : uris)
		r.uris.push_back(u.c_str());
	r.store_region = store_region;
	r.max_clients = 3;
	r.vb = std::string(300, 'B'); // out of place: above k's in-place copy
	r.vj = std::string(300, 'J'); // the same units: it takes B
	kv_config cfg = Config(r);
	cfg.timeout_ms = 3600u * 1000u; // deadlines run while points are checked
	r.late_cfg = cfg;
	ASSERT_EQ(kv_create(&cfg), 0) << pm_errormsg();
	std::vector<void *> stores;
	for (unsigned i = 0; i < 3; i++) {
		stores.push_back(kvtest::MappedRegion(group.Path(i), "DMKVSTO1"));
		ASSERT_NE(stores.back(), nullptr);
	}
	auto claimed = [&](unsigned id) { return IdWords(stores[0])[id] != 0; };

	kv_client *y1 = nullptr;
	ASSERT_EQ(kv_open(&y1, &cfg), 0) << pm_errormsg();
	const unsigned yid = ClaimedId(stores[0]);
	ASSERT_LT(yid, 3u);
	ASSERT_EQ(kv_insert(y1, "k", 1, "a", 1), 0) << pm_errormsg();
	ASSERT_EQ(kv_update(y1, "k", 1, r.vb.data(), r.vb.size()), 0) << pm_errormsg();
	// The last insert is another key's: settling it at Y2's open reads
	// nothing of k.
	ASSERT_EQ(kv_insert(y1, "x", 1, "x1", 2), 0) << pm_errormsg();
	ASSERT_EQ(kv__st_test_open(&r.c, &cfg, RecycleYield, AsRun(&r)), 0)
		<< pm_errormsg();
	unsigned zid = ~0u;
	for (unsigned id = 0; id < 3; id++)
		if (id != yid && claimed(id))
			zid = id;
	ASSERT_LT(zid, 3u);
	r.free_id = 3 - yid - zid;
	// Y1 dies; its id is released (as once its lease ran out), and the
	// third id is held, so Y2 takes Y1's.
	kv__st_test_abandon(&y1);
	for (void *st : stores) {
		IdWords(st)[yid] = 0;
		IdWords(st)[r.free_id] = kDeadClaim;
		pm_persist(IdWords(st), 3 * sizeof(uint64_t));
	}
	uint64_t loc = 0;
	ASSERT_EQ(kv_index_lookup(kv__st_test_index(r.c), "k", 1, &loc), 0);
	const kv_st_geo geo = kv_st_geo_make(loc, 1, 3);
	ASSERT_LT(geo.ip_cap, r.vb.size()) << "k's value in place";
	for (void *st : stores)
		r.b_meta = std::max(r.b_meta,
			*reinterpret_cast<const uint64_t *>(static_cast<char *>(st) + geo.off + 8 * yid));
	ASSERT_NE(r.b_meta, 0u);
	ASSERT_EQ(*reinterpret_cast<const uint64_t *>(static_cast<char *>(stores[0]) + geo.off +
			  8 * zid), 0u);
	auto *sb = static_cast<const kv_st_super *>(stores[0]);
	r.b_off = sb->log_off + yid * sb->log_bytes + kv_st_ptr(r.b_meta) * KV_ST_BUF_UNIT;
	unsigned b_held = 0;
	for (void *st : stores)
		b_held += reinterpret_cast<const kv_st_vhdr *>(static_cast<char *>(st) + r.b_off)->meta ==
			(r.b_meta & kMetaMask);
	ASSERT_GE(b_held, 2u) << "B is not where k's word says";
	r.z_meta_off = geo.off + 8 * zid;
	for (unsigned i = 0; i < 3; i++)
		ASSERT_EQ(kv__st_test_inject(r.c, i, RDMA_FAULT_SPLIT, 0), 0);
	for (unsigned i = 0; i < 3; i++)
		group.Close(i);
	// The clients' mappings now (the nodes' went with them).
	for (unsigned i = 0; i < 3; i++) {
		r.regions.push_back(kvtest::MappedRegion(group.Path(i), "DMKVIDX1"));
		ASSERT_NE(r.regions.back(), nullptr);
		r.regions.push_back(kvtest::MappedRegion(group.Path(i), "DMKVSTO1"));
		ASSERT_NE(r.regions.back(), nullptr);
	}
	r.ops = { { Kind::kUpdate, "k", "z" } };
	pmtest::CrashRun cr = Simulate(&r, name, 1, 3, Workload, CheckRecycle);
	EXPECT_EQ(cr.ret, 0) << cr.report;
	EXPECT_EQ(r.done, r.ops.size());
	EXPECT_EQ(cr.st.points, cr.st.events + 1) << "every crash point";
	printf("%s: %llu crash points, %llu images\n", name, (unsigned long long)cr.st.points,
		(unsigned long long)cr.st.images);
	// The case did happen: Y2 recovered Y1's buffers, recycled, and
	// j's value went into B while Z's write was in flight.
	EXPECT_EQ(r.late_err, "");
	EXPECT_TRUE(r.late_put);
	EXPECT_GT(r.late_st.recovered, 0u);
	EXPECT_GT(r.late_st.recycled, 0u);
	EXPECT_TRUE(r.reused) << "j's value did not take B";
	EXPECT_EQ(kv_close(&r.late), 0);
	EXPECT_EQ(kv_close(&r.c), 0);
}

// Crash, take the crashed id, write, crash again (issue 20): at sampled
// points of the first half, a client with the crashed id resumes from the
// marks the image holds and writes every key again (in place, out of
// place, a put, delete and re-insert, a new key), and is crashed at sampled
// points in turn; a third client must find the second life's state. A
// mark, claim or object the first life counted before it was durable shows
// here as a second-life write that overwrites or loses a value.
TEST(KvCrash, CrashTakeOverWriteCrashAgain)
{
	std::vector<Op> ops = Sequence();
	ops.resize(kHalf);
	const std::string big(300, 'B'); // out of place: above the in-place copy
	// Each succeeds from any state the first life can leave.
	std::vector<Op> ops2 = {
		{ Kind::kPut, "a", "a-second" },
		{ Kind::kPut, "b", big },
		{ Kind::kPut, "c", "c-x" },
		{ Kind::kDelete, "c", "" },
		{ Kind::kInsert, "c", "c-second" },
		{ Kind::kPut, "e", "e1" },
		{ Kind::kGet, "b", big },
	};
	CrashSequence("kv-crash-again", ops, 0, { { ops2, 10 } }, 20);
}

// Crash, recover, run until reuse, crash again, over three lives (issue
// 20): at sampled points of the first life's updates, a client takes the
// crashed id and recovers its log; its second life overwrites every key,
// frees the dead buffers (Kind::kReclaim, as a client does at its
// thresholds) and writes into them, deletes and re-inserts a key, and is
// crashed at sampled points; at each image a third life does the same over
// what the first two left, crashed in turn, and a fourth client checks.
// Each later life's runs count the units of the id's log where their
// writes began a buffer over bytes an earlier life left (NextLife), and
// some run of each must have, so the test cannot stop covering reuse: a
// log mark, recovered buffer or retirement that a life counted before it
// was durable shows here as a value overwritten by a later life.
TEST(KvCrash, ThreeLivesReuseBuffers)
{
	std::vector<Op> ops = Sequence();
	ops.resize(kHalf); // inserts of a, b, c (before the run), updates of a and b
	const std::string b2(300, 'B'), b3(300, 'C'); // out of place: above the in-place copy
	// Each succeeds from any state the life before can leave.
	std::vector<Op> ops2 = {
		{ Kind::kPut, "a", "a-second" },
		{ Kind::kPut, "b", b2 },
		{ Kind::kReclaim, "", "" },
		{ Kind::kPut, "c", "c-second" },
		{ Kind::kDelete, "a", "" },
		{ Kind::kInsert, "a", "a-again" },
		{ Kind::kGet, "b", b2 },
	};
	std::vector<Op> ops3 = {
		{ Kind::kPut, "b", b3 },
		{ Kind::kPut, "a", "a-third" },
		{ Kind::kReclaim, "", "" },
		{ Kind::kPut, "c", "c-third" },
		{ Kind::kPut, "e", "e-third" },
		{ Kind::kGet, "b", b3 },
	};
	// About 100 s on two cores: every image of the second life runs a
	// third life (each a client's open and recovery and six writes).
	CrashSequence("kv-crash-lives", ops, 3, { { ops2, 40, true }, { ops3, 120, true } }, 6);
}

} // namespace
