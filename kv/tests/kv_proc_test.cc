// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_proc_test.cc -- the store (kv/kv.h) with its clients as
// separate processes, whose histories are checked for linearizability
// (lincheck::KvModel over the record files of tests/lincheck/records.h):
//   - local pools (//kv:kv_proc_test): clients with skewed clocks (stale
//     guesses: the timestamp lock and the slow path run), one SIGKILLed
//     in the middle of its ops; with a 2 s client lease, one client
//     SIGSTOPped past it (taken for dead, it registers again) and one
//     SIGKILLed (its id freed);
//   - ofi+tcp to three dmkv-node daemons (//kv:kv_proc_ofi_test): one
//     daemon SIGKILLed and restarted from its pool, one SIGSTOPped and
//     continued, a client SIGKILLed, then every daemon SIGKILLed and
//     restarted: a fresh client reads every key, in the same history, so
//     an acknowledged write lost by the crashes fails the check; then two
//     daemons down (beyond f): operations report unavailable, never a
//     wrong value, and succeed once the daemons are back; chaos with a 2 s
//     lease: a client stopped past it, one killed and replaced, a daemon
//     killed and restarted, with the counts printed.
// The parent prints the acknowledged writes and what the final reads found.
//
// KV_PROC_SEED=<n> replays a run's random choices.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kv/kv.h>

#include "kv/tests/node_group.h"
#include "kv/tests/proc_util.h"
#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"
#include "tests/lincheck/records.h"

namespace {

using kvtest::Daemon;
using kvtest::Fork;
using kvtest::NowNs;
using kvtest::SleepUs;
using kvtest::WaitChild;
using kvtest::WaitFor;
using lincheck::KvOp;
using lincheck::RecordStatus;

constexpr unsigned kMaxProcs = 16;

enum ClientExit {
	kExitOk = 0,
	kExitOpen = 2,   // kv_open or kv_create failed
	kExitRecord = 3, // the record file could not be written
	kExitWrong = 4,  // a result the API does not allow for the op
};

// Shared with the forked clients (one anonymous MAP_SHARED mapping).
struct Board {
	std::atomic<unsigned> go{0};
	struct Client {
		std::atomic<unsigned> done{0};
		std::atomic<unsigned> finished{0};
		kv_stats stats;
	} client[kMaxProcs];
};

std::string Key(uint64_t id)
{
	return "key-" + std::to_string(id);
}

// Value bytes of value id @v: every process reads them back into the id.
std::string Value(uint64_t v)
{
	return "value-" + std::to_string(v) + std::string(v % 97, '.');
}

bool ParseValue(const std::string &s, uint64_t *v)
{
	if (s.compare(0, 6, "value-") != 0)
		return false;
	char *end = nullptr;
	*v = strtoull(s.c_str() + 6, &end, 10);
	return end != s.c_str() + 6 && s == Value(*v);
}

struct Workload {
	unsigned id = 1;            // the history's process id
	unsigned ops = 200;
	unsigned keys = 8;
	uint64_t seed = 1;
	int64_t skew_us = 0;        // kv_config.clock_skew_us
	unsigned timeout_ms = 3000;
	unsigned conn_timeout_ms = 1000;
	bool read_all = false;      // instead: one get of every key
	unsigned pace_us = 0;       // a pause after each op (a run that lasts)
	// After holds[j] ops, wait for go >= j + 2: the parent injects each
	// fault as it releases the clients, so it lands while they run.
	std::vector<unsigned> holds;
	std::string record;
};

// One op, recorded; false if the store answered something kv.h does not
// allow (the op then stays pending in the record).
int DoOp(kv_client *c, lincheck::KvRecordWriter &rec, unsigned id, const KvOp &op,
	bool *wrong)
{
	const std::string k = Key(op.key), v = Value(op.value);
	lincheck::KvRecordWriter::Ticket t;
	if (rec.invoke(id, op, &t) != 0)
		return kExitRecord;
	KvOp done;
	bool legal = false;
	int ret = 0;
	switch (op.kind) {
	case KvOp::Kind::kInsert:
		ret = kv_insert(c, k.data(), k.size(), v.data(), v.size());
		legal = ret == 0 || ret == KV_E_EXISTS;
		done = ret == 0 ? KvOp::insert_ok(op.key, op.value) : KvOp::insert_exists(op.key, op.value);
		break;
	case KvOp::Kind::kUpdate:
		ret = kv_update(c, k.data(), k.size(), v.data(), v.size());
		legal = ret == 0 || ret == -ENOENT;
		done = ret == 0 ? KvOp::update_ok(op.key, op.value) : KvOp::update_absent(op.key, op.value);
		break;
	case KvOp::Kind::kPut:
		ret = kv_put(c, k.data(), k.size(), v.data(), v.size());
		legal = ret == 0;
		done = KvOp::put_ok(op.key, op.value);
		break;
	case KvOp::Kind::kGet: {
		std::string buf(4096, '\0');
		size_t len = 0;
		uint64_t got = 0;
		ret = kv_get(c, k.data(), k.size(), buf.data(), buf.size(), &len);
		if (ret == 0) {
			buf.resize(len);
			legal = ParseValue(buf, &got);
		} else {
			legal = ret == -ENOENT;
		}
		done = ret == 0 ? KvOp::get_found(op.key, got) : KvOp::get_absent(op.key);
		break;
	}
	case KvOp::Kind::kDelete:
		ret = kv_delete(c, k.data(), k.size());
		legal = ret == 0 || ret == -ENOENT;
		done = ret == 0 ? KvOp::del_ok(op.key) : KvOp::del_absent(op.key);
		break;
	}
	if (legal)
		return rec.complete(t, done) != 0 ? kExitRecord : kExitOk;
	if (ret == KV_E_UNAVAILABLE) {
		// Why, for the log: the report groups these by the fault before.
		fprintf(stderr, "[client %u] op %d on key %" PRIu64 " at %.3f s: %s\n", id,
			static_cast<int>(op.kind), op.key, NowNs() / 1e9, pm_errormsg());
		return rec.unavailable(t) != 0 ? kExitRecord : kExitOk;
	}
	fprintf(stderr, "[client %u] op %d on key %" PRIu64 ": %s (%s)\n", id,
		static_cast<int>(op.kind), op.key, pm_strerror(ret), pm_errormsg());
	*wrong = true;
	return kExitOk;
}

int RunClient(const std::vector<std::string> &uris, const Workload &w, Board *board)
{
	std::vector<const char *> nodes;
	for (const auto &u : uris)
		nodes.push_back(u.c_str());
	kv_config cfg;
	kv_config_init(&cfg);
	cfg.nodes = nodes.data();
	cfg.nnodes = static_cast<unsigned>(nodes.size());
	cfg.timeout_ms = w.timeout_ms;
	cfg.conn.timeout_ms = w.conn_timeout_ms;
	cfg.clock_skew_us = w.skew_us;
	lincheck::KvRecordWriter rec;
	if (rec.open(w.record, w.id) != 0)
		return kExitRecord;
	kv_client *c = nullptr;
	const uint64_t t0 = NowNs();
	int ret = kv_open(&c, &cfg);
	// Short timeouts (a short lease bounds them) may not cover the
	// connections of several clients opening at once (each one's token
	// check takes a daemon's CPU): try again, as a user would.
	for (unsigned k = 0; k < 5 && ret == KV_E_UNAVAILABLE; k++)
		ret = kv_open(&c, &cfg);
	if (ret != 0) {
		fprintf(stderr, "[client %u] kv_open after %.0f ms: %s\n", w.id,
			(NowNs() - t0) / 1e6, pm_errormsg());
		board->client[w.id].finished = 1; /* nothing more to wait for */
		return kExitOpen;
	}
	WaitFor([&] { return board->go.load() != 0; }, 60000);
	std::mt19937_64 rng(w.seed);
	bool wrong = false;
	unsigned n = w.read_all ? w.keys : w.ops;
	for (unsigned i = 0; i < n && ret == kExitOk; i++) {
		for (size_t j = 0; j < w.holds.size(); j++)
			if (i == w.holds[j])
				WaitFor([&] { return board->go.load() >= j + 2; }, 60000);
		uint64_t key = w.read_all ? i : rng() % w.keys;
		uint64_t val = static_cast<uint64_t>(w.id) << 32 | i;
		unsigned dice = static_cast<unsigned>(rng() % 100);
		KvOp op = w.read_all ? KvOp::get(key) :
			dice < 15 ? KvOp::insert(key, val) :
			dice < 35 ? KvOp::update(key, val) :
			dice < 55 ? KvOp::put(key, val) :
			dice < 90 ? KvOp::get(key) : KvOp::del(key);
		ret = DoOp(c, rec, w.id, op, &wrong);
		board->client[w.id].done++;
		if (w.pace_us != 0)
			usleep(w.pace_us);
	}
	kv_stats_read(c, &board->client[w.id].stats);
	board->client[w.id].finished = 1;
	kv_close(&c);
	if (ret != kExitOk)
		return ret;
	return wrong ? kExitWrong : kExitOk;
}

// The harness's own calls (create, scrub) get this config of the cluster;
// kv_create takes @lease_ms (the operations' timeout is at most that).
kv_config AdminConfig(const std::vector<const char *> &nodes, unsigned lease_ms = 40000)
{
	kv_config cfg;
	kv_config_init(&cfg);
	cfg.nodes = nodes.data();
	cfg.nnodes = static_cast<unsigned>(nodes.size());
	cfg.max_clients = 8;
	cfg.log_bytes = 2u << 20;
	cfg.chunk_bytes = 256u << 10;
	cfg.timeout_ms = lease_ms < 20000 ? lease_ms : 20000;
	cfg.lease_ms = lease_ms;
	return cfg;
}

std::vector<const char *> NodePtrs(const std::vector<std::string> &uris)
{
	std::vector<const char *> nodes;
	for (const auto &u : uris)
		nodes.push_back(u.c_str());
	return nodes;
}

int CreateStore(const std::vector<std::string> &uris, unsigned lease_ms = 40000)
{
	const std::vector<const char *> nodes = NodePtrs(uris);
	kv_config cfg = AdminConfig(nodes, lease_ms);
	int ret = kv_create(&cfg);
	if (ret != 0)
		fprintf(stderr, "kv_create: %s\n", pm_errormsg());
	return ret == 0 ? kExitOk : kExitOpen;
}

// kv_scrub, as an operator runs it after restarting a node.
int ScrubStore(const std::vector<std::string> &uris)
{
	const std::vector<const char *> nodes = NodePtrs(uris);
	kv_config cfg = AdminConfig(nodes);
	kv_client *c = nullptr;
	int ret = kv_open(&c, &cfg);
	if (ret == 0)
		ret = kv_scrub(c);
	if (ret != 0)
		fprintf(stderr, "kv_scrub: %s\n", pm_errormsg());
	kv_close(&c);
	return ret == 0 ? kExitOk : kExitOpen;
}

// kv_rebuild of node @node, as an operator runs `dmkv node rebuild`.
int RebuildStore(const std::vector<std::string> &uris, unsigned node, unsigned lease_ms)
{
	const std::vector<const char *> nodes = NodePtrs(uris);
	kv_config cfg = AdminConfig(nodes, lease_ms);
	kv_rebuild_report rep;
	int ret = kv_rebuild(&cfg, node, &rep);
	if (ret != 0) {
		fprintf(stderr, "kv_rebuild: %s\n", pm_errormsg());
		return kExitOpen;
	}
	printf("rebuilt node %u: waited %" PRIu64 " ms, %" PRIu64 " chunks, %" PRIu64
	       " objects, %" PRIu64 " buffers, %" PRIu64 " bytes\n", node, rep.grace_ms, rep.chunks,
		rep.objects, rep.buffers, rep.bytes);
	fflush(stdout);
	return rep.index_rebuilt && rep.objects > 0 ? kExitOk : kExitWrong;
}

class KvProcTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		const char *s = getenv("KV_PROC_SEED");
		seed_ = s != nullptr ? strtoull(s, nullptr, 10) : static_cast<uint64_t>(NowNs());
		printf("KV_PROC_SEED=%" PRIu64 "\n", seed_);
		rng_.seed(seed_);
		dir_ = (access("/dev/shm", W_OK) == 0 ? std::string("/dev/shm") : rdmatest::TempDir()) +
			"/kvproc-" + std::to_string(getpid());
		ASSERT_EQ(system(("rm -rf " + dir_ + " && mkdir -p " + dir_).c_str()), 0);
		void *p = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			-1, 0);
		ASSERT_NE(p, MAP_FAILED);
		board_ = new (p) Board();
	}
	void TearDown() override
	{
		for (pid_t pid : clients_) {
			if (pid > 0) {
				kill(pid, SIGKILL);
				waitpid(pid, nullptr, 0);
			}
		}
		munmap(board_, sizeof(Board));
		(void)!system(("rm -rf " + dir_).c_str());
	}

	pid_t Start(const std::vector<std::string> &uris, Workload w)
	{
		w.record = dir_ + "/client" + std::to_string(w.id) + ".rec";
		records_.push_back(w.record);
		pid_t pid = Fork([&] { return RunClient(uris, w, board_); });
		clients_.push_back(pid);
		return pid;
	}
	int Reap(pid_t pid, int timeout_ms = 120000)
	{
		int code = WaitChild(pid, timeout_ms);
		for (auto &p : clients_)
			if (p == pid)
				p = -1;
		return code;
	}
	unsigned Done(unsigned id) const { return board_->client[id].done.load(); }

	// Check every record file; return the history.
	lincheck::KvHistory Check()
	{
		lincheck::KvHistory h;
		std::string why;
		EXPECT_EQ(lincheck::read_history(records_, &h, &why), 0) << why;
		unsigned pending = 0, unavailable = 0, acked = 0;
		for (const auto &r : h.records) {
			pending += r.status == static_cast<uint8_t>(RecordStatus::kInvoked);
			unavailable += r.status == static_cast<uint8_t>(RecordStatus::kUnavailable);
			acked += r.status == static_cast<uint8_t>(RecordStatus::kOk) &&
				r.kind != static_cast<uint8_t>(KvOp::Kind::kGet);
		}
		kv_stats sum{};
		for (const auto &c : board_->client) {
			sum.slow_writes += c.stats.slow_writes;
			sum.lock_calls += c.stats.lock_calls;
			sum.write_backs += c.stats.write_backs;
			sum.read_iters += c.stats.read_iters;
			sum.oop_reads += c.stats.oop_reads;
			sum.fallbacks += c.stats.fallbacks;
		}
		lincheck::Options opt;
		opt.timeout = std::chrono::seconds(60);
		uint64_t t0 = NowNs();
		auto result = lincheck::check(lincheck::KvModel(), h.ops, opt);
		printf("history: %zu ops, %u acknowledged writes, %u pending, %u unavailable; "
		       "slow writes %" PRIu64 ", locks %" PRIu64 ", write-backs %" PRIu64
		       ", read iterations %" PRIu64 ", out-of-place reads %" PRIu64
		       ", widened rounds %" PRIu64 "; check %.1f ms: %s\n",
			h.ops.size(), acked, pending, unavailable, sum.slow_writes, sum.lock_calls,
			sum.write_backs, sum.read_iters, sum.oop_reads, sum.fallbacks,
			(NowNs() - t0) / 1e6, result.ok ? "linearizable" : "NOT linearizable");
		EXPECT_TRUE(result.ok) << result.explanation;
		// Unavailable operations by the last fault before them.
		std::map<std::string, unsigned> by_event;
		for (const auto &r : h.records) {
			if (r.status != static_cast<uint8_t>(RecordStatus::kUnavailable))
				continue;
			std::string after = "start";
			for (const auto &[t, what] : events_)
				if (t <= r.call)
					after = what;
			by_event[after]++;
		}
		for (const auto &[what, n] : by_event)
			printf("unavailable after \"%s\": %u\n", what.c_str(), n);
		return h;
	}

	// Acknowledged writes the final reads (of process @reader) do not
	// show. A key is checked when its last write is certain: an
	// acknowledged write w that changed the state (status OK) such that
	// every other such write of the key returned before w began, and no
	// write of the key is pending or unavailable (either may take effect
	// at any time after its call). Writes that changed nothing (insert
	// EXISTS, update or delete ABSENT) are ignored. The final read must
	// show w. Prints and returns the losses (the linearizability check
	// implies 0; this counts them in the terms the issue asks for).
	unsigned Losses(const lincheck::KvHistory &h, unsigned reader)
	{
		std::map<uint64_t, std::vector<const lincheck::Record *>> writes;
		std::map<uint64_t, const lincheck::Record *> final_read;
		std::map<uint64_t, bool> uncertain;
		auto is = [](const lincheck::Record &r, KvOp::Kind k) {
			return r.kind == static_cast<uint8_t>(k);
		};
		auto status = [](const lincheck::Record &r, RecordStatus st) {
			return r.status == static_cast<uint8_t>(st);
		};
		unsigned checked = 0, lost = 0;
		for (const auto &r : h.records) {
			if (r.process == reader) {
				if (is(r, KvOp::Kind::kGet))
					final_read[r.key] = &r;
				continue;
			}
			if (is(r, KvOp::Kind::kGet))
				continue;
			if (status(r, RecordStatus::kInvoked) || status(r, RecordStatus::kUnavailable))
				uncertain[r.key] = true;
			else if (status(r, RecordStatus::kOk))
				writes[r.key].push_back(&r);
		}
		for (const auto &[key, ws] : writes) {
			if (uncertain[key] || final_read.count(key) == 0)
				continue;
			const lincheck::Record *w = ws[0];
			for (const auto *r : ws)
				if (r->call > w->call)
					w = r;
			bool certain = true;
			for (const auto *r : ws)
				certain &= r == w || r->ret < w->call;
			if (!certain)
				continue;
			const lincheck::Record *g = final_read[key];
			bool want_absent = is(*w, KvOp::Kind::kDelete);
			bool found = status(*g, RecordStatus::kFound);
			checked++;
			if (want_absent ? found : !(found && g->out == w->arg)) {
				lost++;
				printf("key %" PRIu64 ": the last write (process %u, op of kind %u) "
				       "is not what the final read found\n", key, w->process,
					static_cast<unsigned>(w->kind));
			}
		}
		printf("acknowledged last writes checked against the final reads: %u, lost: %u\n",
			checked, lost);
		return lost;
	}

	// kExitOk if no node of @uris has a client id registered, printing
	// each node's counts (from a child: the parent never touches
	// libfabric).
	static int NoIdRegistered(const std::vector<std::string> &uris, unsigned lease_ms)
	{
		return WaitChild(Fork([&] {
			const std::vector<const char *> nodes = NodePtrs(uris);
			kv_config cfg = AdminConfig(nodes, lease_ms);
			unsigned left = 0;
			for (unsigned i = 0; i < nodes.size(); i++) {
				kv_node_status ns;
				if (kv_node_status_read(&cfg, i, &ns) != 0)
					return kExitOpen;
				left += ns.clients;
				printf("node %u: %u ids registered, %" PRIu64 " freed, %" PRIu64
				       " hazard words cleared\n", i, ns.clients, ns.ids_freed,
					ns.hazards_cleared);
			}
			return left == 0 ? kExitOk : kExitWrong;
		}), 60000);
	}

	// A fault injected now, for the report of unavailable operations.
	void Event(const std::string &what)
	{
		events_.emplace_back(NowNs(), what);
		printf("at %.3f s: %s\n", NowNs() / 1e9, what.c_str());
		fflush(stdout);
	}

	uint64_t seed_ = 0;
	std::vector<std::pair<uint64_t, std::string>> events_;
	std::mt19937_64 rng_;
	std::string dir_;
	Board *board_ = nullptr;
	std::vector<pid_t> clients_;
	std::vector<std::string> records_;
};

// Four clients on eight keys, clocks skewed by 0, +1 ms, -1 ms and -30 ms
// (the last guesses stale timestamps), one SIGKILLed mid-run; a fresh
// client reads every key at the end.
TEST_F(KvProcTest, LocalClientsWithSkewedClocksAreLinearizable)
{
	kvtest::LocalGroup group(3, "kvproc", 8u << 20, 32u << 20);
	std::vector<std::string> uris = group.Uris();
	ASSERT_EQ(WaitChild(Fork([&] { return CreateStore(uris); }), 60000), kExitOk);
	const int64_t skew[] = { 0, 1000, -1000, -30000 };
	std::vector<pid_t> pids;
	for (unsigned i = 0; i < 4; i++) {
		Workload w;
		w.id = i + 1;
		w.seed = seed_ + i;
		w.skew_us = skew[i];
		pids.push_back(Start(uris, w));
	}
	board_->go = 1;
	unsigned victim = 1 + static_cast<unsigned>(rng_() % 4);
	unsigned at = 20 + static_cast<unsigned>(rng_() % 100);
	ASSERT_TRUE(WaitFor([&] { return Done(victim) >= at || board_->client[victim].finished; },
		60000));
	kill(pids[victim - 1], SIGKILL);
	for (unsigned i = 0; i < 4; i++) {
		int code = Reap(pids[i]);
		if (i + 1 != victim) {
			EXPECT_EQ(code, kExitOk) << "client " << i + 1;
		}
	}
	Workload reader;
	reader.id = 9;
	reader.read_all = true;
	EXPECT_EQ(Reap(Start(uris, reader)), kExitOk);
	EXPECT_EQ(Losses(Check(), 9), 0u);
}

// The lease of the liveness tests: 2 s (with T = L, (L + T) + (L + T)/16
// = 4.25 s of silence frees an id; watchers renew every L - timeout = 1 s); a stop lasts past
// both. Shorter leases left opens on a loaded machine no time to connect.
constexpr unsigned kLeaseMs = 2000;
constexpr useconds_t kStopUs = 8000 * 1000;

// Client liveness with a 2 s lease (kv/DESIGN.md, "Client liveness"): of
// four paced clients, one is SIGSTOPped between two operations for longer
// than the suspicion time (4.25 s) and continued, one SIGKILLed. The others
// free both ids; the stopped one finds its id gone at its next operation
// and takes a new one. The whole history is linearizable, a fresh client
// reads every acknowledged write, and once every client left no id is
// still registered.
TEST_F(KvProcTest, StoppedAndKilledClientsAreTakenForDead)
{
	kvtest::LocalGroup group(3, "kvlease", 8u << 20, 32u << 20);
	std::vector<std::string> uris = group.Uris();
	ASSERT_EQ(WaitChild(Fork([&] { return CreateStore(uris, kLeaseMs); }), 60000), kExitOk);
	constexpr unsigned kStopped = 1, kKilled = 2, kOps = 600;
	std::vector<pid_t> pids;
	for (unsigned i = 0; i < 4; i++) {
		Workload w;
		w.id = i + 1;
		w.seed = seed_ + i;
		w.ops = kOps;
		w.timeout_ms = kLeaseMs / 2;
		w.pace_us = 20000; // 600 ops: over 12 s
		if (w.id == kStopped)
			w.holds = { 40 };
		pids.push_back(Start(uris, w));
	}
	board_->go = 1;
	// Stopped while it waits at its hold, not inside a batch: on local
	// pools a client applies its own batches, and one stopped half way
	// through would land the rest after its lease (kv/DESIGN.md).
	ASSERT_TRUE(WaitFor([&] { return Done(kStopped) >= 40; }, 60000));
	kill(pids[kStopped - 1], SIGSTOP);
	Event("client 1 stopped");
	board_->go = 2;
	ASSERT_TRUE(WaitFor([&] { return Done(kKilled) >= 60; }, 60000));
	kill(pids[kKilled - 1], SIGKILL);
	Event("client 2 killed");
	// Past the suspicion time and a renewal period of the watchers.
	usleep(kStopUs);
	kill(pids[kStopped - 1], SIGCONT);
	Event("client 1 continued");
	for (unsigned i = 0; i < 4; i++) {
		int code = Reap(pids[i]);
		if (i + 1 != kKilled) {
			EXPECT_EQ(code, kExitOk) << "client " << i + 1;
		}
	}
	uint64_t freed = 0;
	for (const auto &c : board_->client)
		freed += c.stats.ids_freed;
	printf("ids freed %" PRIu64 ", client 1 registered again %" PRIu64 " times\n", freed,
		board_->client[kStopped].stats.reregistrations);
	EXPECT_GE(freed, 2u);
	EXPECT_EQ(board_->client[kStopped].stats.reregistrations, 1u);
	Workload reader;
	reader.id = 9;
	reader.read_all = true;
	reader.timeout_ms = kLeaseMs / 2;
	EXPECT_EQ(Reap(Start(uris, reader)), kExitOk);
	EXPECT_EQ(Losses(Check(), 9), 0u);
	// Every client closed or was freed: no id stays registered.
	EXPECT_EQ(NoIdRegistered(uris, kLeaseMs), kExitOk);
}

// --- ofi+tcp to dmkv-node daemons ------------------------------------------

class KvOfiTest : public KvProcTest {
protected:
	void SetUp() override
	{
		KvProcTest::SetUp();
		if (HasFatalFailure())
			return;
		// NodeProcess keeps pools and logs in TempDir(): this test's
		// directory on tmpfs.
		const char *old = getenv("TEST_TMPDIR");
		if (old != nullptr)
			old_tmpdir_ = old;
		setenv("TEST_TMPDIR", dir_.c_str(), 1);
		for (unsigned i = 0; i < 3; i++) {
			daemons_.push_back(std::make_unique<Daemon>("node" + std::to_string(i),
				std::vector<std::string>{"8M", "32M"}));
			std::string err;
			ASSERT_TRUE(daemons_[i]->Start(&err)) << err;
			uris_.push_back(daemons_[i]->Uri());
		}
		// From a child: the parent never touches libfabric (proc_util.h).
		ASSERT_EQ(WaitChild(Fork([&] { return CreateStore(uris_, LeaseMs()); }), 60000),
			kExitOk);
	}
	void TearDown() override
	{
		daemons_.clear();
		KvProcTest::TearDown();
		if (old_tmpdir_.empty())
			unsetenv("TEST_TMPDIR");
		else
			setenv("TEST_TMPDIR", old_tmpdir_.c_str(), 1);
	}
	// The cluster's kv_config.lease_ms.
	virtual unsigned LeaseMs() const { return 40000; }
	void Restart(unsigned i)
	{
		std::string err;
		ASSERT_TRUE(daemons_[i]->Restart(&err)) << err;
	}
	bool AllDone(unsigned from, unsigned to, unsigned n)
	{
		return WaitFor([&] {
			for (unsigned c = from; c <= to; c++)
				if (Done(c) < n && board_->client[c].finished.load() == 0)
					return false;
			return true;
		}, 120000);
	}
	Workload Base(unsigned id)
	{
		Workload w;
		w.id = id;
		w.ops = 150;
		w.keys = 16;
		w.seed = seed_ + id;
		w.skew_us = (static_cast<int64_t>(id) - 2) * 500;
		w.timeout_ms = 4000;
		w.conn_timeout_ms = 300;
		return w;
	}

	std::vector<std::unique_ptr<Daemon>> daemons_;
	std::vector<std::string> uris_;
	std::string old_tmpdir_;
};

// f = 1 faults under load, then every daemon SIGKILLed and restarted from
// its pool: the fresh client's reads, checked in the same history, find
// every acknowledged write. The clients hold at op 30, 60, 80 and 110 and
// each fault is injected as they are released, so it meets operations in
// flight however fast the store runs (a daemon killed, restarted, a client
// SIGKILLed a few ops later, a daemon stopped, continued).
TEST_F(KvOfiTest, DaemonsKilledStoppedAndRestartedLoseNothing)
{
	const std::vector<unsigned> holds = {30, 60, 80, 110};
	std::vector<pid_t> pids;
	for (unsigned id = 1; id <= 3; id++) {
		Workload w = Base(id);
		w.holds = holds;
		pids.push_back(Start(uris_, w));
	}
	unsigned victim = 1 + static_cast<unsigned>(rng_() % 3);
	board_->go = 1;
	ASSERT_TRUE(AllDone(1, 3, holds[0]));
	board_->go = 2;
	Event("daemon 1 killed");
	ASSERT_EQ(daemons_[1]->Kill(SIGKILL), 128 + SIGKILL);
	ASSERT_TRUE(AllDone(1, 3, holds[1]));
	board_->go = 3;
	Event("daemon 1 restarting");
	Restart(1);
	Event("daemon 1 restarted");
	ASSERT_TRUE(AllDone(1, 3, holds[2]));
	// The next fault stops another daemon. Buckets of the index split
	// while daemon 1 was down are on daemons 0 and 2 only until daemon 1
	// gets them (kv/DESIGN.md, "Repair, scrub, rebuild"): scrub first, as
	// the README tells operators to, so at most f are ever out.
	ASSERT_EQ(WaitChild(Fork([&] { return ScrubStore(uris_); }), 60000), kExitOk);
	Event("scrubbed");
	board_->go = 4;
	Event("client run 4");
	ASSERT_TRUE(WaitFor([&] { return Done(victim) >= holds[2] + 3; }, 60000));
	kill(pids[victim - 1], SIGKILL);
	board_->client[victim].finished = 1; /* for AllDone() */
	Event("client killed, daemon 2 stopped");
	daemons_[2]->Kill(SIGSTOP);
	ASSERT_TRUE(AllDone(1, 3, holds[3]));
	board_->go = 5;
	daemons_[2]->Kill(SIGCONT);
	Event("daemon 2 continued");
	for (unsigned i = 0; i < 3; i++) {
		int code = Reap(pids[i]);
		if (i + 1 != victim) {
			EXPECT_EQ(code, kExitOk) << "client " << i + 1;
		}
	}
	Event("all daemons killed");
	for (unsigned i = 0; i < 3; i++)
		daemons_[i]->Kill(SIGKILL);
	for (unsigned i = 0; i < 3; i++)
		Restart(i);
	Event("all daemons restarted");
	Workload reader = Base(9);
	reader.read_all = true;
	reader.timeout_ms = 10000;
	EXPECT_EQ(Reap(Start(uris_, reader)), kExitOk);
	EXPECT_EQ(Losses(Check(), 9), 0u);
}

// A cluster with a client lease of 4 s (the connections of several
// clients opening at once over tcp took 2 s): ids are freed after 8.5 s of
// silence, watchers renew every 2 s.
constexpr unsigned kOfiLeaseMs = 4000;
constexpr useconds_t kOfiStopUs = 14000 * 1000;
class KvOfiLeaseTest : public KvOfiTest {
protected:
	unsigned LeaseMs() const override { return kOfiLeaseMs; }
};

// Chaos with accounting over three daemons and client processes with a
// 4 s lease: a client SIGSTOPped past its lease (false suspicion: its id
// is freed, it registers again when continued), one SIGKILLed and replaced
// by a new process, a daemon SIGKILLed and restarted from its pool while
// the others run. The history is linearizable, a fresh client reads every
// acknowledged write, the dead ids were freed, and once every client left
// no id is registered. (Clients are stopped at a hold, between two
// operations; kv/DESIGN.md, "Client liveness", says why not inside one.)
TEST_F(KvOfiLeaseTest, ClientsStoppedKilledAndADaemonRestartedLoseNothing)
{
	constexpr unsigned kStopped = 1, kKilled = 2, kReplacement = 5;
	std::vector<pid_t> pids;
	for (unsigned id = 1; id <= 4; id++) {
		Workload w = Base(id);
		w.ops = 1100; // over 22 s
		w.timeout_ms = kOfiLeaseMs / 2;
		w.pace_us = 20000;
		if (id == kStopped)
			w.holds = { 40 };
		pids.push_back(Start(uris_, w));
	}
	board_->go = 1;
	ASSERT_TRUE(WaitFor([&] { return Done(kStopped) >= 40; }, 60000));
	kill(pids[kStopped - 1], SIGSTOP);
	const uint64_t stopped_at = NowNs();
	Event("client 1 stopped");
	board_->go = 2;
	ASSERT_TRUE(WaitFor([&] { return Done(kKilled) >= 60; }, 60000));
	kill(pids[kKilled - 1], SIGKILL);
	board_->client[kKilled].finished = 1;
	Event("client 2 killed");
	Workload r = Base(kReplacement);
	r.ops = 700;
	r.timeout_ms = kOfiLeaseMs / 2;
	r.pace_us = 20000;
	pids.push_back(Start(uris_, r));
	Event("client 5 started");
	ASSERT_TRUE(WaitFor([&] { return Done(3) >= 200; }, 60000));
	ASSERT_EQ(daemons_[0]->Kill(SIGKILL), 128 + SIGKILL);
	Event("daemon 0 killed");
	usleep(800 * 1000);
	Restart(0);
	Event("daemon 0 restarted");
	// The stop lasts past the suspicion time and a watcher's renewal
	// period, while clients 3-5 still run.
	const uint64_t until = stopped_at + UINT64_C(1000) * kOfiStopUs;
	if (NowNs() < until)
		usleep(static_cast<useconds_t>((until - NowNs()) / 1000));
	kill(pids[kStopped - 1], SIGCONT);
	Event("client 1 continued");
	for (size_t i = 0; i < pids.size(); i++) {
		int code = Reap(pids[i]);
		if (i + 1 != kKilled) {
			EXPECT_EQ(code, kExitOk) << "client " << i + 1;
		}
	}
	uint64_t freed = 0, renewals = 0, acked = 0;
	for (const auto &c : board_->client) {
		freed += c.stats.ids_freed;
		renewals += c.stats.lease_renewals;
	}
	Workload reader = Base(9);
	reader.read_all = true;
	reader.timeout_ms = kOfiLeaseMs / 2;
	EXPECT_EQ(Reap(Start(uris_, reader)), kExitOk);
	lincheck::KvHistory h = Check();
	for (const auto &rec : h.records)
		acked += rec.status == static_cast<uint8_t>(RecordStatus::kOk) &&
			rec.kind != static_cast<uint8_t>(KvOp::Kind::kGet);
	unsigned lost = Losses(h, 9);
	printf("chaos: 1 client stopped past its lease, 1 killed, 1 daemon killed and restarted; "
	       "ids freed %" PRIu64 ", client 1 registered again %" PRIu64 " times, lease renewals "
	       "%" PRIu64 ", acknowledged writes %" PRIu64 ", lost %u\n", freed,
		board_->client[kStopped].stats.reregistrations, renewals, acked, lost);
	EXPECT_EQ(lost, 0u);
	EXPECT_GE(freed, 2u);
	EXPECT_EQ(board_->client[kStopped].stats.reregistrations, 1u);
	EXPECT_EQ(NoIdRegistered(uris_, LeaseMs()), kExitOk);
}

// A daemon's pool lost under load: SIGKILLed, its pool removed, restarted
// empty, and rebuilt (kv_rebuild, from another process) while three
// clients keep operating; then another daemon SIGKILLed for good. The two
// left, one of them rebuilt, answer everything: the history is
// linearizable and a fresh client reads every acknowledged write.
TEST_F(KvOfiLeaseTest, ADaemonsLostPoolIsRebuiltWhileClientsRun)
{
	const std::vector<unsigned> holds = {40, 100};
	std::vector<pid_t> pids;
	for (unsigned id = 1; id <= 3; id++) {
		Workload w = Base(id);
		w.ops = 160;
		w.holds = holds;
		w.pace_us = 2000;
		pids.push_back(Start(uris_, w));
	}
	board_->go = 1;
	ASSERT_TRUE(AllDone(1, 3, holds[0]));
	ASSERT_EQ(daemons_[2]->Kill(SIGKILL), 128 + SIGKILL);
	std::string err;
	ASSERT_TRUE(daemons_[2]->RestartEmpty(&err)) << err;
	Event("daemon 2 lost its pool, restarted empty");
	board_->go = 2;
	pid_t rebuilder = Fork([&] { return RebuildStore(uris_, 2, LeaseMs()); });
	EXPECT_EQ(WaitChild(rebuilder, 120000), kExitOk);
	Event("daemon 2 rebuilt");
	ASSERT_TRUE(AllDone(1, 3, holds[1]));
	ASSERT_EQ(daemons_[0]->Kill(SIGKILL), 128 + SIGKILL);
	Event("daemon 0 killed for good");
	board_->go = 3;
	for (unsigned i = 0; i < 3; i++)
		EXPECT_EQ(Reap(pids[i]), kExitOk) << "client " << i + 1;
	Workload reader = Base(9);
	reader.read_all = true;
	reader.timeout_ms = kOfiLeaseMs;
	EXPECT_EQ(Reap(Start(uris_, reader)), kExitOk);
	lincheck::KvHistory h = Check();
	uint64_t acked = 0;
	for (const auto &rec : h.records)
		acked += rec.status == static_cast<uint8_t>(RecordStatus::kOk) &&
			rec.kind != static_cast<uint8_t>(KvOp::Kind::kGet);
	unsigned lost = Losses(h, 9);
	printf("rebuild chaos: acknowledged writes %" PRIu64 ", lost %u\n", acked, lost);
	EXPECT_EQ(lost, 0u);
}

// Two daemons of three down: operations report unavailable within their
// timeout, never a wrong value; back up, they succeed again.
TEST_F(KvOfiTest, BeyondFIsUnavailableThenBack)
{
	Workload w = Base(1);
	w.ops = 60;
	// The client holds after 20 ops until both daemons are dead, so ops
	// 21..30 run in the outage however fast the store is.
	w.holds = {20};
	w.timeout_ms = 1000;
	pid_t pid = Start(uris_, w);
	board_->go = 1;
	ASSERT_TRUE(AllDone(1, 1, 20));
	daemons_[0]->Kill(SIGKILL);
	daemons_[2]->Kill(SIGKILL);
	board_->go = 2;
	ASSERT_TRUE(AllDone(1, 1, 30));
	Restart(0);
	Restart(2);
	EXPECT_EQ(Reap(pid), kExitOk);
	Workload reader = Base(9);
	reader.read_all = true;
	reader.timeout_ms = 10000;
	EXPECT_EQ(Reap(Start(uris_, reader)), kExitOk);
	lincheck::KvHistory h = Check();
	unsigned unavailable = 0, after = 0;
	for (const auto &r : h.records) {
		unavailable += r.status == static_cast<uint8_t>(RecordStatus::kUnavailable);
		after += r.process == 9 && r.status != static_cast<uint8_t>(RecordStatus::kUnavailable) &&
			r.status != static_cast<uint8_t>(RecordStatus::kInvoked);
	}
	EXPECT_GT(unavailable, 0u) << "with two of three daemons down, nothing was unavailable";
	EXPECT_EQ(after, 16u) << "every key answered once a majority was back";
}

}  // namespace
