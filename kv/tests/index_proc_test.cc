// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/index_proc_test.cc -- the replicated index with its clients as
// separate processes, over real transports, with processes killed:
//   - local: pools (the CXL shared-memory model; //kv:index_proc_test):
//     four clients on 48 hot keys (the root bucket fills and splits, fast
//     rounds collide, clients help each other's splits); three with node 0's
//     connection failing; node 0 cut off from two clients of four; one of
//     four SIGKILLed inside a random op; a writer SIGKILLed inside an insert
//     (half the time inside its split) six times, a fresh client finishing
//     after each; fresh clients' lookups while a writer cut off from node 0
//     has a classic freeze under way;
//   - ofi+tcp to three dmkv-node daemons: one SIGKILLed and restarted from
//     its pool, one SIGSTOPped and continued (//kv:index_proc_ofi_test);
//     two SIGKILLed (f + 1: KV_E_UNAVAILABLE, never an answer, then success
//     once they are back), all three SIGKILLed and restarted
//     (//kv:index_proc_outage_test).
// Every client writes its ops to its own record file
// (tests/lincheck/records.h); the parent reads them all into one
// history and checks it against lincheck::IndexModel. Each scenario ends
// with a fresh client's lookup of every key, recorded in the same history,
// so what survived the faults is checked by the same linearizability check.
//
// Clients are fork()ed from the test process, without exec: the workload is
// a function of this file and the child _exit()s with its result. The
// parent therefore never uses libfabric itself (the ofi scenarios create the
// index from a child too): a child forked from a process with libfabric
// state would inherit half of it. Parent and children share one anonymous
// MAP_SHARED mapping (Board) for a start gate, progress counters and
// flags, so faults are injected at points of the clients' progress rather
// than at wall-clock guesses, which on two busy cores mean little.
//
// UncommittedFastValueCanStillBeRemovedAndSplit makes one index bug found
// here deterministic (fixed in kv__ix_resolve);
// LookupsDuringClassicFreezeFindEveryKey reproduces a second every run
// (fixed by e8a009f): a classic round hiding a key's mapping from readers,
// which made LocalClientsWithOneMemberFailing answer ABSENT, once, for a key
// whose insert had returned 2 ms before (not linearizable). Seen now and
// then besides, on two busy cores: ops that hang for the whole op timeout
// with every node up, over ofi+tcp after a node was stopped, killed or
// restarted (some keys then stay unavailable for every client).
//
// KV_IXPROC_SEED=<n> replays a run's random choices (kill points, keys,
// ops); each test prints the seed it used. The interleavings are the
// scheduler's, so a replay is likely, not certain, to fail the same way.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kv/index.h>

#include "kv/src/index/testing.h"
#include "kv/tests/index_env.h"
#include "kv/tests/proc_util.h"
#include "rdma/tests/node_proc.h"
#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"
#include "tests/lincheck/records.h"

extern "C" {
#include "kv/src/index/word.h"
}

namespace {

using kvtest::Daemon;
using kvtest::ExitCode;
using kvtest::Fork;
using kvtest::NowNs;
using kvtest::SleepUs;
using kvtest::WaitChild;
using kvtest::WaitFor;
using kvtest::IndexConfig;
using kvtest::KeyStore;
using kvtest::LocalGroup;
using lincheck::IndexOp;
using lincheck::RecordStatus;

constexpr unsigned kMaxClients = 16; // IndexConfig's max_clients

// Exit codes of a client process.
enum ClientExit {
	kExitOk = 0,
	kExitOpen = 2,       // kv_index_open or kv_index_create failed
	kExitRecord = 3,     // the record file could not be written
	kExitWrong = 4,      // a result the API does not allow for the op
	kExitKeys = 5,       // the key store lost a key block we need
	kExitGate = 6,       // the start gate never opened
	// kvtest::kExitException (7): the client threw
};

// ---------------------------------------------------------------------------
// Shared between the parent and its forked clients.

// One anonymous MAP_SHARED page: inherited by every fork, so parent and
// clients see the same atomics (lock-free, hence address-free).
struct Board {
	std::atomic<unsigned> ready{0}; // clients waiting at the gate
	std::atomic<unsigned> go{0};    // the gate is open
	struct Client {
		std::atomic<unsigned> done{0};        // ops returned (any result)
		std::atomic<unsigned> unavailable{0}; // ... of them KV_E_UNAVAILABLE
		std::atomic<unsigned> paused{0};      // stopped at Workload::pause_at
		std::atomic<unsigned> resume{0};      // the parent lets it go on
		std::atomic<unsigned> finished{0};    // its workload ended (any way)
		std::atomic<unsigned> in_op{0};       // inside a kv_index_* call
		kv_index_stats stats;                 // written once, before exit
	} client[kMaxClients];
};
static_assert(std::atomic<unsigned>::is_always_lock_free, "address-free atomics");

// Key bytes of key id @id: every process derives the same ones.
std::string Key(uint64_t id)
{
	return "key-" + std::to_string(id);
}

// ---------------------------------------------------------------------------
// The workload: one function for every client process of every scenario.

enum class Mix {
	kMixed,  // random insert / remove / lookup on keys [key0, key0 + keys)
	kInsert, // insert keys key0 .. key0 + ops - 1 once each, in order
	kLookup, // look up keys key0 .. key0 + ops - 1 once each, in order
};

struct Workload {
	Mix mix = Mix::kMixed;
	unsigned cid = 1;       // client id; also the history's thread
	unsigned ops = 300;
	uint64_t key0 = 0;
	unsigned keys = 48;     // kMixed's hot key set
	unsigned fill = 0;      // kMixed: first insert this many keys of the
	                        // client's own, past the hot set (see below)
	uint64_t seed = 1;
	bool gate = false;      // wait at the board's gate after opening
	unsigned pause_at = 0;  // if not 0: stop after this many ops until resumed,
	                        // then stop for the parent's looks (KillInside)
	unsigned hold_at = 0;   // if not 0: after this many ops, wait for the
	                        // board's go >= 2 (the parent's fault first)
	int fail_member = -1;   // if >= 0: this member's connection fails (test hook)
	unsigned fail_after = 0; // ... from this op on
	bool may_be_unavailable = false; // faults beyond f are expected
	unsigned timeout_ms = 5000;      // kv_index_config.timeout_ms
	unsigned conn_timeout_ms = 1000; // kv_index_config.conn.timeout_ms
	std::string record;     // this client's record file
};

// The client's side of KillInside: after its pause, a timer stops the
// client (its signal is SIGSTOP) a random 20-300 us after it resumes, each
// time, so the parent looks at it at random moments; and stopped, it cannot
// run ahead of a parent slow to get a core. (Child state: one client per
// process.)
timer_t g_look_timer;
uint64_t g_look_rng;

void ArmLook()
{
	g_look_rng = g_look_rng * 6364136223846793005u + 1442695040888963407u;
	struct itimerspec its = {};
	its.it_value.tv_nsec = 20000 + static_cast<long>((g_look_rng >> 33) % 280000);
	timer_settime(g_look_timer, 0, &its, nullptr);
}

void OnContinue(int)
{
	int saved = errno;
	ArmLook();
	errno = saved;
}

bool StartLooks(uint64_t seed)
{
	struct sigevent ev = {};
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGSTOP;
	if (timer_create(CLOCK_MONOTONIC, &ev, &g_look_timer) != 0)
		return false;
	struct sigaction sa = {};
	sa.sa_handler = OnContinue;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCONT, &sa, nullptr) != 0)
		return false;
	g_look_rng = seed;
	ArmLook();
	return true;
}

// DoOp -- one op, recorded: invoke() before it, complete() or unavailable()
// after; *@in_op is 1 while the index has it. Returns the index's result;
// *@legal says whether the API allows it for the op (an illegal result
// stays pending in the record: it may have taken effect) and *@rec_err
// whether a record could not be written.
int DoOp(kv_index *ix, lincheck::IndexRecordWriter &rec, unsigned cid, const IndexOp &op,
	std::atomic<unsigned> *in_op, bool *legal, bool *rec_err)
{
	const std::string k = Key(op.key);
	lincheck::IndexRecordWriter::Ticket t;
	*legal = false;
	*rec_err = rec.invoke(cid, op, &t) != 0;
	if (*rec_err)
		return 0; // not in the history: do not run it
	uint64_t got = 0;
	int ret = 0;
	IndexOp done;
	in_op->store(1);
	switch (op.kind) {
	case IndexOp::Kind::kInsert:
		ret = kv_index_insert(ix, k.data(), k.size(), op.loc, &got);
		*legal = ret == 0 || ret == KV_E_EXISTS;
		done = ret == 0 ? IndexOp::insert_ok(op.key, op.loc) :
			IndexOp::insert_exists(op.key, op.loc, got);
		break;
	case IndexOp::Kind::kRemove:
		ret = kv_index_remove(ix, k.data(), k.size(), op.loc);
		*legal = ret == 0 || ret == -ENOENT;
		done = ret == 0 ? IndexOp::remove_ok(op.key, op.loc) :
			IndexOp::remove_absent(op.key, op.loc);
		break;
	case IndexOp::Kind::kLookup:
		ret = kv_index_lookup(ix, k.data(), k.size(), &got);
		*legal = ret == 0 || ret == -ENOENT;
		done = ret == 0 ? IndexOp::lookup_found(op.key, got) : IndexOp::lookup_absent(op.key);
		break;
	}
	in_op->store(0);
	if (*legal)
		*rec_err = rec.complete(t, done) != 0;
	else if (ret == KV_E_UNAVAILABLE)
		*rec_err = rec.unavailable(t) != 0;
	return ret;
}

// RunClient -- the body of a client process: open the index as client
// @w.cid with its own key store, run @w, report on @board. Returns a
// ClientExit.
int RunClient(const std::vector<std::string> &uris, const Workload &w, Board *board)
{
	KeyStore ks(uris);
	IndexConfig cfg(uris, &ks, w.cid);
	cfg.cfg.timeout_ms = w.timeout_ms;
	cfg.cfg.conn.timeout_ms = w.conn_timeout_ms;
	lincheck::IndexRecordWriter rec;
	int ret = rec.open(w.record, w.cid);
	if (ret != 0) {
		fprintf(stderr, "[client %u] record file %s: %s\n", w.cid, w.record.c_str(), strerror(-ret));
		return kExitRecord;
	}
	kv_index *ix = nullptr;
	ret = kv_index_open(&ix, &cfg.cfg);
	if (ret != 0) {
		fprintf(stderr, "[client %u] open: %s: %s\n", w.cid, pm_strerror(ret), pm_errormsg());
		return kExitOpen;
	}
	Board::Client &me = board->client[w.cid];
	if (w.gate) {
		// All clients start together, so their ops really overlap.
		board->ready.fetch_add(1);
		if (!WaitFor([&] { return board->go.load() != 0; }, 60000))
			return kExitGate;
	}

	std::mt19937_64 rng(w.seed);
	std::vector<std::pair<uint64_t, uint64_t>> mine; // (key, loc) this client inserted
	uint64_t next_loc = 0; // KeyStore::Loc(cid, n): never used by another client
	int exit = kExitOk;
	for (unsigned i = 0; i < w.ops && exit == kExitOk; i++) {
		if (w.fail_member >= 0 && i == w.fail_after)
			kv__ix_test_inject(ix, static_cast<unsigned>(w.fail_member), RDMA_FAULT_FAIL, 0);
		IndexOp op;
		if (w.mix == Mix::kLookup) {
			op = IndexOp::lookup(w.key0 + i);
		} else if (w.mix == Mix::kInsert) {
			op = IndexOp::insert(w.key0 + i, KeyStore::Loc(w.cid, next_loc++));
		} else if (i < w.fill) {
			// Keys no other client uses, all live together: more
			// than a bucket holds is a split in every interleaving.
			op = IndexOp::insert(w.key0 + w.keys + (w.cid - 1) * w.fill + i,
				KeyStore::Loc(w.cid, next_loc++));
		} else {
			uint64_t key = w.key0 + rng() % w.keys;
			unsigned kind = static_cast<unsigned>(rng() % 3);
			if (kind == 0) {
				op = IndexOp::insert(key, KeyStore::Loc(w.cid, next_loc++));
			} else if (kind == 1 && !mine.empty()) {
				// Only the inserter removes a mapping, and at most
				// once (also after UNAVAILABLE, which may still take
				// effect): two overlapping removes of one mapping
				// may both return 0 (kv_index_remove).
				size_t at = rng() % mine.size();
				op = IndexOp::remove(mine[at].first, mine[at].second);
				mine.erase(mine.begin() + static_cast<long>(at));
			} else {
				op = IndexOp::lookup(key);
			}
		}
		// The key first, at a location never used before (key_at must
		// answer it on f+1 nodes before the index can point at it).
		if (op.kind == IndexOp::Kind::kInsert && !ks.Put(op.loc, Key(op.key))) {
			if (!w.may_be_unavailable) {
				fprintf(stderr, "[client %u] key store: put at %" PRIu64 " failed\n", w.cid, op.loc);
				exit = kExitKeys;
				break;
			}
			op = IndexOp::lookup(op.key); // too few nodes: no insert
		}
		bool legal, rec_err;
		kv_index_stats before, after;
		kv_index_stats_read(ix, &before);
		ret = DoOp(ix, rec, w.cid, op, &me.in_op, &legal, &rec_err);
		kv_index_stats_read(ix, &after);
		// An insert whose outcome a compaction of its bucket hid answers
		// KV_E_UNAVAILABLE with every node up (kv_index_stats.unsure):
		// allowed by the API, recorded as of unknown outcome.
		bool hidden = ret == KV_E_UNAVAILABLE && after.unsure > before.unsure;
		if (rec_err) {
			exit = kExitRecord;
		} else if (legal) {
			if (op.kind == IndexOp::Kind::kInsert && ret == 0)
				mine.emplace_back(op.key, op.loc);
		} else if (ret == KV_E_UNAVAILABLE && (w.may_be_unavailable || hidden)) {
			me.unavailable.fetch_add(1);
		} else {
			fprintf(stderr, "[client %u] op %u (%s key %" PRIu64 " loc %" PRIu64 "): %s: %s\n",
				w.cid, i, op.kind == IndexOp::Kind::kInsert ? "insert" :
				op.kind == IndexOp::Kind::kRemove ? "remove" : "lookup",
				op.key, op.loc, pm_strerror(ret), pm_errormsg());
			if (ret == KV_E_UNAVAILABLE)
				me.unavailable.fetch_add(1);
			exit = kExitWrong;
		}
		me.done.fetch_add(1);
		if (i + 1 == w.hold_at && !WaitFor([&] { return board->go.load() >= 2; }, 120000))
			exit = kExitGate;
		if (i + 1 == w.pause_at && exit == kExitOk) {
			// Wait for the parent to get ready to kill us
			// (KillInside): on busy cores a parent that merely
			// watched our progress would often act only after we had
			// finished.
			me.paused.store(1);
			if (!WaitFor([&] { return me.resume.load() != 0; }, 60000) || !StartLooks(rng()))
				exit = kExitGate;
		}
	}
	kv_index_stats_read(ix, &me.stats);
	me.finished.store(1);
	kv_index_close(&ix);
	if (rec.close() != 0 && exit == kExitOk)
		exit = kExitRecord;
	return exit;
}

// CreateIndex -- format a new index on @uris (client 0) and close it.
int CreateIndex(const std::vector<std::string> &uris)
{
	KeyStore ks(uris);
	IndexConfig cfg(uris, &ks, 0);
	kv_index *ix = nullptr;
	int ret = kv_index_create(&ix, &cfg.cfg);
	if (ret != 0) {
		fprintf(stderr, "[create] %s: %s\n", pm_strerror(ret), pm_errormsg());
		return kExitOpen;
	}
	kv_index_close(&ix);
	return kExitOk;
}

// ---------------------------------------------------------------------------
// The parent's side.

class IndexProcTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		const char *s = getenv("KV_IXPROC_SEED");
		seed_ = s != nullptr ? strtoull(s, nullptr, 0) : std::random_device{}();
		rng_.seed(seed_);
		const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
		printf("seed %" PRIu64 " (KV_IXPROC_SEED to replay)\n", seed_);
		// Records and daemon pools on tmpfs: a persist is an msync,
		// free there and a disk write elsewhere (as in LocalGroup).
		std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : rdmatest::TempDir();
		dir_ = base + "/kvixproc-" + std::to_string(getpid()) + "-" + info->name();
		ASSERT_EQ(mkdir(dir_.c_str(), 0700), 0) << dir_ << ": " << strerror(errno);
		void *p = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(p, MAP_FAILED);
		board_ = new (p) Board();
	}

	void TearDown() override
	{
		KillClients();
		if (board_ != nullptr)
			munmap(board_, sizeof(Board));
		if (HasFailure()) {
			printf("kept the record files (and daemon pools and logs) in %s\n", dir_.c_str());
		} else if (!dir_.empty()) {
			std::string cmd = "rm -rf '" + dir_ + "'";
			if (system(cmd.c_str()) != 0)
				printf("could not remove %s\n", dir_.c_str());
		}
	}

	// SIGKILL and reap the clients still running (after a failure).
	void KillClients()
	{
		for (pid_t pid : running_) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
		running_.clear();
	}

	// Start a client process running @w on @uris; its record file is
	// <dir>/<name>.rec, and part of the history.
	pid_t StartClient(const std::vector<std::string> &uris, Workload w, const std::string &name)
	{
		w.record = dir_ + "/" + name + ".rec";
		records_.push_back(w.record);
		pid_t pid = Fork([&] { return RunClient(uris, w, board_); });
		if (pid > 0)
			running_.push_back(pid);
		return pid;
	}

	// Reap @pid (at most @timeout_ms); its exit code as WaitChild.
	int Reap(pid_t pid, int timeout_ms = 100000)
	{
		int code = WaitChild(pid, timeout_ms);
		for (size_t i = 0; i < running_.size(); i++)
			if (running_[i] == pid)
				running_.erase(running_.begin() + static_cast<long>(i));
		return code;
	}

	// Start @n clients (ids @cid0 ..) with @w, open the gate once all have
	// opened the index, and return their pids. Client @pause_cid pauses
	// after @pause_at ops (KillInside).
	std::vector<pid_t> StartClients(const std::vector<std::string> &uris, unsigned cid0,
		unsigned n, Workload w, unsigned pause_cid = 0, unsigned pause_at = 0)
	{
		std::vector<pid_t> pids;
		board_->ready = 0;
		board_->go = 0;
		w.gate = true;
		for (unsigned i = 0; i < n; i++) {
			w.cid = cid0 + i;
			w.seed = rng_();
			w.pause_at = w.cid == pause_cid ? pause_at : 0;
			pids.push_back(StartClient(uris, w, "client" + std::to_string(w.cid)));
		}
		EXPECT_TRUE(WaitFor([&] { return board_->ready.load() == n; }, 60000))
			<< board_->ready.load() << " of " << n << " clients opened the index";
		board_->go = 1;
		return pids;
	}

	// Reap every pid of @pids and expect a clean exit of each.
	void ReapAll(const std::vector<pid_t> &pids)
	{
		for (pid_t pid : pids)
			EXPECT_EQ(Reap(pid), kExitOk) << "client pid " << pid;
	}

	// A fresh client (@cid) that looks up keys [0, @keys), recorded.
	void FinalLookups(const std::vector<std::string> &uris, unsigned cid, unsigned keys,
		const Workload &base)
	{
		Workload w = base;
		w.mix = Mix::kLookup;
		w.cid = cid;
		w.key0 = 0;
		w.ops = keys;
		w.gate = false;
		w.may_be_unavailable = false;
		EXPECT_EQ(Reap(StartClient(uris, w, "final" + std::to_string(cid))), kExitOk);
	}

	// Every record file read into one history (asserts it reads).
	lincheck::IndexHistory History()
	{
		lincheck::IndexHistory h;
		std::string why;
		int ret = lincheck::read_history(records_, &h, &why);
		EXPECT_EQ(ret, 0) << why;
		return h;
	}

	// The history must be linearizable; prints its shape and the clients'
	// counters.
	void ExpectLinearizable(const lincheck::IndexHistory &h)
	{
		unsigned pending = 0, unavailable = 0;
		for (const auto &r : h.records) {
			pending += r.status == static_cast<uint8_t>(RecordStatus::kInvoked);
			unavailable += r.status == static_cast<uint8_t>(RecordStatus::kUnavailable);
		}
		kv_index_stats sum{};
		for (const auto &c : board_->client) {
			sum.splits += c.stats.splits;
			sum.resolves += c.stats.resolves;
			sum.forwards += c.stats.forwards;
			sum.fast += c.stats.fast;
			sum.fast_won += c.stats.fast_won;
		}
		lincheck::Options opt;
		opt.timeout = std::chrono::seconds(60);
		auto t0 = NowNs();
		auto result = lincheck::check(lincheck::IndexModel(), h.ops, opt);
		printf("history: %zu ops, %u pending, %u unavailable; clients: splits %" PRIu64
		       ", classic rounds %" PRIu64 ", forwards %" PRIu64 ", fast won %" PRIu64
		       " of %" PRIu64 "; check %.1f ms\n",
			h.ops.size(), pending, unavailable, sum.splits, sum.resolves, sum.forwards,
			sum.fast_won, sum.fast, (NowNs() - t0) / 1e6);
		EXPECT_TRUE(result.ok) << result.explanation;
	}

	// The number of ops in @h of process @cid with a status in @statuses
	// invoked at or after @from and returned (or marked unavailable)
	// before @to.
	static unsigned Count(const lincheck::IndexHistory &h, unsigned cid,
		std::initializer_list<RecordStatus> statuses, uint64_t from, uint64_t to)
	{
		unsigned n = 0;
		for (const auto &r : h.records)
			for (RecordStatus st : statuses)
				n += r.process == cid && r.status == static_cast<uint8_t>(st) &&
					r.call >= from && r.ret < to;
		return n;
	}

	// The statuses of an op that returned an answer.
	static constexpr std::initializer_list<RecordStatus> kAnswered = {
		RecordStatus::kOk, RecordStatus::kExists, RecordStatus::kAbsent, RecordStatus::kFound};

	unsigned Done(unsigned cid) const { return board_->client[cid].done.load(); }

	// Print @what with the seconds since the test started (where the time
	// goes, on busy cores).
	void Log(const std::string &what) const
	{
		printf("%7.2f s  %s\n", (NowNs() - start_ns_) / 1e9, what.c_str());
		fflush(stdout);
	}

	// KillInside -- resume client @cid (process @pid) from its pause
	// (Workload::pause_at); from then on it stops itself at random moments
	// (StartLooks). Look at it each time, while it cannot move: at the
	// first moment @inside() holds, SIGKILL it there, else SIGCONT it.
	// Returns whether it was killed so (not if it finished first); *@code
	// is its exit code.
	bool KillInside(pid_t pid, unsigned cid, const std::function<bool()> &inside, int *code)
	{
		Board::Client &c = board_->client[cid];
		EXPECT_TRUE(WaitFor([&] { return c.paused.load() != 0; }, 60000)) << "client " << cid;
		c.resume.store(1);
		uint64_t until = NowNs() + 60000000000u;
		unsigned looks = 0;
		for (;;) {
			int st = 0;
			pid_t r = waitpid(pid, &st, WUNTRACED | WNOHANG);
			if (r == 0 && NowNs() < until) {
				SleepUs(50);
				continue;
			}
			if (r != pid || !WIFSTOPPED(st)) { // ended by itself (and reaped), or hung
				if (r == pid)
					running_.erase(std::find(running_.begin(), running_.end(), pid));
				*code = r == pid ? ExitCode(st) : Reap(pid, 0);
				printf("client %u: %u looks, none inside\n", cid, looks);
				return false;
			}
			looks++;
			if (inside()) {
				kill(pid, SIGKILL);
				*code = Reap(pid);
				return true;
			}
			kill(pid, SIGCONT);
		}
	}

	uint64_t start_ns_ = NowNs();
	uint64_t seed_ = 0;
	std::mt19937_64 rng_;
	std::string dir_;
	Board *board_ = nullptr;
	std::vector<std::string> records_;
	std::vector<pid_t> running_;
};

// Where the buckets' words are in a node's index region: bucket b's word w
// at base + b * stride + w * 8 (heap-numbered buckets, kv/src/index/layout.h),
// learnt from a handle's kv__ix_test_word_off().
struct BucketWords {
	uint64_t base = 0, stride = 0;

	// Learn them with a short-lived handle (closed again: the parent forks
	// clients, and a handle runs a reconnect thread).
	bool Learn(const std::vector<std::string> &uris)
	{
		KeyStore ks(uris);
		IndexConfig cfg(uris, &ks, kMaxClients - 1);
		kv_index *ix = nullptr;
		if (kv_index_open(&ix, &cfg.cfg) != 0)
			return false;
		base = kv__ix_test_word_off(ix, 0, 0);
		stride = kv__ix_test_word_off(ix, 1, 0) - base;
		kv_index_close(&ix);
		return stride == 16 * 8;
	}

	static uint64_t Load(const uint8_t *region, uint64_t off)
	{
		return __atomic_load_n(reinterpret_cast<const uint64_t *>(region + off), __ATOMIC_RELAXED);
	}

	// The buckets node memory @region shows split under way: a bucket
	// with a frozen slot word whose forward word (h1) is not yet decided
	// FWD (split.c: freeze every slot, install the children, decide FWD,
	// make the children live). Walks the tree from the root through
	// decided forward words, so it reads only buckets that exist.
	std::set<uint64_t> Splitting(const uint8_t *region) const
	{
		std::set<uint64_t> found;
		// Every word of the index has one gen: the root's h1 has it.
		unsigned gen = kv_ixw_gen(Load(region, base + stride + 8));
		std::vector<uint64_t> todo = {1};
		while (!todo.empty()) {
			uint64_t b = todo.back();
			todo.pop_back();
			uint64_t h1 = Load(region, base + b * stride + 8);
			if (!kv_ixw_valid(h1, gen))
				continue; // not installed on this node (yet)
			if (kv_ixw_tag(h1) == KV_IXW_C && kv_ixw_stage(h1) >= 1) {
				todo.push_back(2 * b); // forwarded: split done
				todo.push_back(2 * b + 1);
				continue;
			}
			for (unsigned w = 2; w < 16; w++) {
				uint64_t word = Load(region, base + b * stride + w * 8);
				if (kv_ixw_valid(word, gen) && kv_ixw_tag(word) != KV_IXW_P &&
					kv_ixw_frz(word)) {
					found.insert(b);
					break;
				}
			}
		}
		return found;
	}

	// Whether nodes @regions show a classic round under way at stage 2 or
	// above (a freeze, or a removal) of some slot: P words on nodes 1 and 2
	// both. Walks the tree as node 1 shows it.
	bool Classic(const std::vector<const uint8_t *> &regions) const
	{
		unsigned gen = kv_ixw_gen(Load(regions[1], base + stride + 8));
		std::vector<uint64_t> todo = {1};
		while (!todo.empty()) {
			uint64_t b = todo.back();
			todo.pop_back();
			uint64_t h1 = Load(regions[1], base + b * stride + 8);
			if (!kv_ixw_valid(h1, gen))
				continue;
			if (kv_ixw_stage(h1) >= 1) {
				todo.push_back(2 * b);
				todo.push_back(2 * b + 1);
			}
			for (unsigned w = 2; w < 16; w++) {
				uint64_t x1 = Load(regions[1], base + b * stride + w * 8);
				uint64_t x2 = Load(regions[2], base + b * stride + w * 8);
				if (kv_ixw_valid(x1, gen) && kv_ixw_valid(x2, gen) &&
					kv_ixw_tag(x1) == KV_IXW_P && kv_ixw_tag(x2) == KV_IXW_P &&
					kv_ixw_stage(x1) >= 2 && kv_ixw_stage(x2) >= 2)
					return true;
			}
		}
		return false;
	}

	// Whether client @cid has a round of its own unfinished at the top of
	// a slot of nodes @regions: a word of the slot's highest stage that is
	// its fast-round word (F, not frozen, of one of its locations) or its
	// ballot's (P), with no committed word of that stage on any node. A
	// client killed there may leave a value chosen but never committed
	// (see UncommittedFastValueCanStillBeRemovedAndSplit below).
	bool Unfinished(const std::vector<const uint8_t *> &regions, unsigned cid) const
	{
		unsigned gen = kv_ixw_gen(Load(regions[0], base + stride + 8));
		uint64_t lo = KeyStore::Loc(cid, 0), hi = KeyStore::Loc(cid + 1, 0);
		std::vector<uint64_t> todo = {1};
		while (!todo.empty()) {
			uint64_t b = todo.back();
			todo.pop_back();
			bool forwarded = false;
			for (unsigned w = 1; w < 16; w++) {
				uint64_t x[3];
				unsigned top = 0;
				for (unsigned n = 0; n < 3; n++) {
					x[n] = Load(regions[n], base + b * stride + w * 8);
					if (kv_ixw_valid(x[n], gen) && kv_ixw_stage(x[n]) > top)
						top = kv_ixw_stage(x[n]);
				}
				bool committed = false, mine = false;
				for (unsigned n = 0; n < 3; n++) {
					if (!kv_ixw_valid(x[n], gen) || kv_ixw_stage(x[n]) != top)
						continue;
					committed |= kv_ixw_tag(x[n]) == KV_IXW_C;
					mine |= kv_ixw_tag(x[n]) == KV_IXW_F && !kv_ixw_frz(x[n]) &&
						kv_ixw_loc(x[n]) >= lo && kv_ixw_loc(x[n]) < hi;
					mine |= kv_ixw_tag(x[n]) == KV_IXW_P && kv_ixw_cid(x[n]) == cid;
				}
				if (mine && !committed)
					return true;
				forwarded |= w == 1 && top >= 1;
			}
			if (forwarded) {
				todo.push_back(2 * b);
				todo.push_back(2 * b + 1);
			}
		}
		return false;
	}
};

// Whether the kill tests spare a client's unfinished rounds
// (BucketWords::Unfinished); false since kv__ix_resolve takes an uncommitted
// fast-round value further (UncommittedFastValueCanStillBeRemovedAndSplit).
constexpr bool kSpareUnfinishedRounds = false;

// The regions of @group's three nodes' indexes.
std::vector<const uint8_t *> Regions(LocalGroup &group)
{
	return {group.IndexRegion(0), group.IndexRegion(1), group.IndexRegion(2)};
}

// --- Local pools ------------------------------------------------------------

constexpr unsigned kLocalClients = 4, kLocalOps = 300, kHotKeys = 48;

// Four client processes on 48 hot keys: the root bucket (14 slots) fills
// and splits while others operate, fast rounds collide and go classic. The
// history, with a fresh client's lookup of every key, is linearizable.
// Each client first inserts 15 keys of its own: whether the hot keys alone
// overflow a bucket depends on the interleaving (one CI run on a loaded
// machine never split), 15 live keys do not.
TEST_F(IndexProcTest, LocalClientsAreLinearizable)
{
	LocalGroup group(3, "mixed");
	ASSERT_EQ(CreateIndex(group.Uris()), kExitOk);

	Workload w;
	w.ops = kLocalOps;
	w.keys = kHotKeys;
	w.fill = 15;
	ReapAll(StartClients(group.Uris(), 1, kLocalClients, w));
	FinalLookups(group.Uris(), 1 + kLocalClients, kHotKeys, w);
	ExpectLinearizable(History());
	uint64_t splits = 0;
	for (const auto &c : board_->client)
		splits += c.stats.splits;
	EXPECT_GT(splits, 0u) << "the hot keys never split a bucket";
}

// Three clients on hot keys, with member 0's connection failing (the test
// hook, in every client) from their 37th op on: with f = 1 down, ops run
// classic rounds and splits without node 0, and all complete.
TEST_F(IndexProcTest, LocalClientsWithOneMemberFailing)
{
	LocalGroup group(3, "fail");
	ASSERT_EQ(CreateIndex(group.Uris()), kExitOk);
	Workload w;
	w.ops = 150;
	w.keys = 32;
	w.timeout_ms = 10000;
	w.conn_timeout_ms = 300;
	w.fail_member = 0;
	w.fail_after = 37;
	ReapAll(StartClients(group.Uris(), 1, 3, w));
	FinalLookups(group.Uris(), 4, w.keys, w);
	ExpectLinearizable(History());
}

// Node 0 cut off from some clients only: two clients whose connection to
// node 0 fails from their first op and two that reach every node, at once
// on hot keys. The ones cut off decide and split on nodes 1 and 2 alone;
// the others read node 0's stale words next to the new ones.
TEST_F(IndexProcTest, LocalNodeCutOffFromSomeClients)
{
	LocalGroup group(3, "cutoff");
	ASSERT_EQ(CreateIndex(group.Uris()), kExitOk);
	Workload w;
	w.ops = 300;
	w.keys = kHotKeys;
	w.timeout_ms = 10000;
	w.conn_timeout_ms = 300;
	w.fail_member = 0;
	w.fail_after = 0;
	std::vector<pid_t> pids = StartClients(group.Uris(), 1, 2, w);
	w.fail_member = -1;
	std::vector<pid_t> more = StartClients(group.Uris(), 3, 2, w);
	ReapAll(pids);
	ReapAll(more);
	FinalLookups(group.Uris(), 5, w.keys, w);
	ExpectLinearizable(History());
}

// A classic round at stage 2 (the freeze of a split, a removal) replaces
// the committed stage-1 words (LIVE: the key's fingerprint and location) of
// the members it promises on with P words. Before e8a009f ("a promise record
// without an acceptance carries the value of the stage below, and readers
// take it") those P words did not carry that value and the promise records
// held only the stage-2 acceptance (none). If the other members lag below
// stage 1 (the key was inserted without them: cut off, or down and
// restarted from an older pool), nothing a reader saw showed the key's
// mapping until the round's accept. A lookup of the key then either retried
// until its deadline (KV_E_UNAVAILABLE with every node up) or, where the
// records showed no acceptance, skipped the slot: ABSENT for a mapped key
// (not linearizable; seen in LocalClientsWithOneMemberFailing and
// LocalNodeCutOffFromSomeClients now and then). This reproduces it: a writer
// cut off from node 0 (so node 0 never gets its keys and its rounds are
// classic) inserts keys into a growing index; whenever it is stopped with a
// classic round at stage 2 under way on nodes 1 and 2, a fresh client that
// reaches every node looks up every key inserted so far, with a 1 s limit.
// A freeze keeps the keys mapped: each must be found. Failed every run
// before e8a009f (lookups timing out, often one answering ABSENT).
TEST_F(IndexProcTest, LookupsDuringClassicFreezeFindEveryKey)
{
	LocalGroup group(3, "freeze");
	ASSERT_EQ(CreateIndex(group.Uris()), kExitOk);
	BucketWords words;
	ASSERT_TRUE(words.Learn(group.Uris()));
	Workload w;
	w.mix = Mix::kInsert;
	w.cid = 1;
	w.ops = 300;
	w.timeout_ms = 10000;
	w.conn_timeout_ms = 300;
	w.fail_member = 0;
	w.pause_at = 1;
	pid_t writer = StartClient(group.Uris(), w, "writer");
	Board::Client &c = board_->client[1];
	ASSERT_TRUE(WaitFor([&] { return c.paused.load() != 0; }, 60000));
	c.resume.store(1);
	// The readers reach every node and never pause.
	Workload rw = w;
	rw.timeout_ms = 1000;
	rw.fail_member = -1;
	rw.pause_at = 0;
	unsigned readers = 0, looks = 0, last = ~0u;
	for (;;) {
		int st = 0;
		pid_t r = waitpid(writer, &st, WUNTRACED);
		if (r != writer || !WIFSTOPPED(st)) {
			running_.erase(std::find(running_.begin(), running_.end(), writer));
			EXPECT_EQ(r == writer ? ExitCode(st) : -1, kExitOk);
			break;
		}
		looks++;
		// One reader per writer op: the writer's op has 10 s.
		if (readers < 8 && c.in_op.load() != 0 && Done(1) != last &&
			words.Classic(Regions(group))) {
			last = Done(1);
			FinalLookups(group.Uris(), 2 + readers++, Done(1), rw);
		}
		kill(writer, SIGCONT);
	}
	printf("%u looks, %u readers during classic rounds\n", looks, readers);
	EXPECT_GT(readers, 0u);
	ExpectLinearizable(History());
}

// The same with one client SIGKILLed at a random moment inside one of its
// ops (after a random number of them): it leaves a pending op and perhaps
// a half-done change, which the survivors and the final reader must finish
// or undo; the history stays linearizable.
TEST_F(IndexProcTest, LocalClientKilledMidRun)
{
	LocalGroup group(3, "kill");
	ASSERT_EQ(CreateIndex(group.Uris()), kExitOk);

	Workload w;
	w.ops = kLocalOps;
	w.keys = kHotKeys;
	unsigned victim = 1 + static_cast<unsigned>(rng_() % kLocalClients);
	unsigned after = 20 + static_cast<unsigned>(rng_() % (kLocalOps / 2));
	BucketWords words;
	ASSERT_TRUE(words.Learn(group.Uris()));
	std::vector<pid_t> pids = StartClients(group.Uris(), 1, kLocalClients, w, victim, after);
	int code;
	EXPECT_TRUE(KillInside(pids[victim - 1], victim, [&] {
		return board_->client[victim].in_op.load() != 0 &&
			!(kSpareUnfinishedRounds && words.Unfinished(Regions(group), victim));
	}, &code));
	EXPECT_EQ(code, 128 + SIGKILL) << "the victim ended before the kill";
	printf("killed client %u inside its op %u\n", victim, Done(victim) + 1);
	pids.erase(pids.begin() + (victim - 1));
	ReapAll(pids);
	FinalLookups(group.Uris(), 1 + kLocalClients, kHotKeys, w);
	ExpectLinearizable(History());
}

// --- Local pools: a writer killed mid-insert ---------------------------------

constexpr unsigned kWriterRounds = 6, kWriterKeys = 400;

// A writer inserts up to 400 new keys, in order, into a growing index (a
// split every few inserts) and is SIGKILLed inside an insert, six times
// over: after a random number of inserts, at a random moment inside one
// (even rounds) or at a moment node 0 shows the writer's split under way
// (odd rounds). After each kill a fresh client inserts the keys the writer
// got to again: a key the writer saw inserted must answer EXISTS with the
// writer's location (and the dead writer's half-done insert or split is
// finished or undone on the way). A last client looks every key up; the
// whole history is linearizable.
TEST_F(IndexProcTest, WriterKilledMidInsert)
{
	LocalGroup group(3, "writer");
	ASSERT_EQ(CreateIndex(group.Uris()), kExitOk);
	BucketWords words;
	ASSERT_TRUE(words.Learn(group.Uris()));
	const uint8_t *node0 = group.IndexRegion(0);

	for (unsigned round = 0; round < kWriterRounds; round++) {
		Workload w;
		w.mix = Mix::kInsert;
		w.cid = 1 + round;
		w.key0 = round * kWriterKeys;
		w.ops = kWriterKeys;
		w.pause_at = 5 + static_cast<unsigned>(rng_() % 120);
		pid_t writer = StartClient(group.Uris(), w, "writer" + std::to_string(round));
		ASSERT_TRUE(WaitFor([&] { return board_->client[w.cid].paused.load() != 0; }, 60000));
		// A split a killed writer left behind is not this writer's.
		std::set<uint64_t> before = words.Splitting(node0);
		std::atomic<unsigned> &in_op = board_->client[w.cid].in_op;
		bool mid_split = round % 2 == 1;
		int code;
		bool killed = KillInside(writer, w.cid, [&] {
			if (in_op.load() == 0 ||
				(kSpareUnfinishedRounds && words.Unfinished(Regions(group), w.cid)))
				return false;
			if (!mid_split)
				return true;
			for (uint64_t b : words.Splitting(node0))
				if (before.count(b) == 0)
					return true;
			return false;
		}, &code);
		EXPECT_TRUE(killed) << round << ": no kill inside an insert" << (mid_split ? " during a split" : "");
		EXPECT_EQ(code, 128 + SIGKILL) << round << ": the writer ended before the kill";

		// What the writer saw complete, and how far it got, from its
		// record file.
		lincheck::IndexHistory mine;
		std::string why;
		ASSERT_EQ(lincheck::read_history({records_.back()}, &mine, &why), 0) << why;
		std::map<uint64_t, uint64_t> inserted; // key -> loc
		for (const auto &r : mine.records)
			if (r.status == static_cast<uint8_t>(RecordStatus::kOk))
				inserted[r.key] = r.arg;
		printf("round %u: writer killed after %zu inserts, inside the next%s\n", round,
			inserted.size(), mid_split ? ", during its split" : "");

		Workload f = w;
		f.cid = 1 + kWriterRounds + round;
		f.ops = static_cast<unsigned>(mine.records.size());
		f.pause_at = 0;
		ASSERT_EQ(Reap(StartClient(group.Uris(), f, "finisher" + std::to_string(round))), kExitOk)
			<< round;
		lincheck::IndexHistory fin;
		ASSERT_EQ(lincheck::read_history({records_.back()}, &fin, &why), 0) << why;
		unsigned found = 0;
		for (const auto &r : fin.records) {
			auto it = inserted.find(r.key);
			if (it == inserted.end())
				continue;
			EXPECT_EQ(r.status, static_cast<uint8_t>(RecordStatus::kExists))
				<< "round " << round << ": key " << r.key << " inserted by the writer";
			EXPECT_EQ(r.out, it->second) << "round " << round << ": key " << r.key;
			found++;
		}
		EXPECT_EQ(found, inserted.size()) << round;
	}
	FinalLookups(group.Uris(), 1 + 2 * kWriterRounds, kWriterRounds * kWriterKeys, Workload());
	ExpectLinearizable(History());
}

// A slot whose value was chosen in a fast round that was never committed --
// F words on every member, no C word -- must move to its next stage. Until
// kv__ix_resolve learnt the value below from the decision rule, it could
// not. That is the state a client
// leaves when it dies (or closes, or loses a connection to a reconnect)
// after winning the fast round and before its background commit lands.
// Readers decide the value (rule 4), so lookups work; but removing the key
// (stage 2, DEAD) or freezing the slot for a split (stage 2, FROZEN-LIVE)
// runs kv__ix_resolve for stage 2, which learns the stage-1 value only from
// a C word of stage 1 or from a stage-2 word, finds neither, skips every
// member in its promise phase and retries until the deadline:
// KV_E_UNAVAILABLE, every time, with every node up. The bucket can then
// never split either, so every insert that needs its split fails too.
// LocalClientKilledMidRun and WriterKilledMidInsert met this in about one
// run in three, a client killed in that window (they could spare it:
// kSpareUnfinishedRounds); over ofi+tcp, commits abandoned by a reconnect
// may leave the same state. Here it is made directly: insert a key, then
// turn its committed word back into the fast-round word it replaced, on
// every node.
TEST_F(IndexProcTest, UncommittedFastValueCanStillBeRemovedAndSplit)
{
	LocalGroup group(3, "uncommitted");
	ASSERT_EQ(CreateIndex(group.Uris()), kExitOk);
	BucketWords words;
	ASSERT_TRUE(words.Learn(group.Uris()));
	Workload w;
	w.mix = Mix::kInsert;
	w.cid = 1;
	w.ops = 1; // key 0 into the empty root bucket
	ASSERT_EQ(Reap(StartClient(group.Uris(), w, "insert")), kExitOk);

	// The root's committed live slots (key 0's only, here), on every node:
	// C(stage 1, v) -> F(stage 1, v). Returns the words changed.
	auto uncommit = [&] {
		unsigned changed = 0;
		for (unsigned n = 0; n < 3; n++) {
			uint8_t *region = group.IndexRegion(n);
			for (unsigned s = 2; s < 16; s++) {
				auto *word = reinterpret_cast<uint64_t *>(region + words.base +
					words.stride + s * 8);
				if (kv_ixw_tag(*word) == KV_IXW_C && kv_ixw_stage(*word) == 1) {
					*word = kv_ixw_make(KV_IXW_F, kv_ixw_gen(*word),
						*word & KV_IXW_BODY_MASK);
					changed++;
				}
			}
		}
		return changed;
	};
	ASSERT_EQ(uncommit(), 3u);

	// A fresh client: the lookup finds key 0, the remove must succeed.
	pid_t pid = Fork([&]() -> int {
		KeyStore ks(group.Uris());
		IndexConfig cfg(group.Uris(), &ks, 2);
		cfg.cfg.timeout_ms = 1000;
		kv_index *ix = nullptr;
		if (kv_index_open(&ix, &cfg.cfg) != 0)
			return kExitOpen;
		const std::string k = Key(0);
		uint64_t loc = 0;
		int ret = kv_index_lookup(ix, k.data(), k.size(), &loc);
		printf("lookup: %s, loc %" PRIu64 "\n", pm_strerror(ret), loc);
		if (ret != 0 || loc != KeyStore::Loc(1, 0))
			return 10;
		for (int attempt = 0; attempt < 2; attempt++) { // not a passing state
			uint64_t t0 = NowNs();
			ret = kv_index_remove(ix, k.data(), k.size(), loc);
			printf("remove: %s after %.0f ms (%s)\n", pm_strerror(ret),
				(NowNs() - t0) / 1e6, ret == 0 ? "" : pm_errormsg());
			if (ret == 0)
				break;
		}
		kv_index_close(&ix);
		return ret == 0 ? kExitOk : 11;
	});
	EXPECT_EQ(Reap(pid), kExitOk) << "the key of an uncommitted fast round cannot be removed";

	// Same state again (key 1, not removed): filling the root bucket
	// makes it split, which must freeze that slot.
	w.key0 = 1;
	ASSERT_EQ(Reap(StartClient(group.Uris(), w, "insert1")), kExitOk);
	ASSERT_EQ(uncommit(), 3u);
	Workload more;
	more.mix = Mix::kInsert;
	more.cid = 3;
	more.key0 = 100;
	more.ops = 30; // more than the root's 14 slots
	more.timeout_ms = 1000;
	EXPECT_EQ(Reap(StartClient(group.Uris(), more, "fill")), kExitOk)
		<< "the bucket of an uncommitted fast round cannot split";
}

// --- ofi+tcp to dmkv-node daemons --------------------------------------------

constexpr unsigned kOfiClients = 3, kOfiOps = 120, kOfiKeys = 32;

class IndexOfiTest : public IndexProcTest {
protected:
	void SetUp() override
	{
		IndexProcTest::SetUp();
		if (HasFatalFailure())
			return;
		// NodeProcess puts pools and logs in TempDir(): make that this
		// test's directory on tmpfs (see IndexProcTest::SetUp).
		const char *old = getenv("TEST_TMPDIR");
		had_tmpdir_ = old != nullptr;
		if (had_tmpdir_)
			old_tmpdir_ = old;
		setenv("TEST_TMPDIR", dir_.c_str(), 1);
		for (unsigned i = 0; i < 3; i++) {
			daemons_.push_back(std::make_unique<Daemon>("node" + std::to_string(i)));
			std::string err;
			ASSERT_TRUE(daemons_[i]->Start(&err)) << err;
			uris_.push_back(daemons_[i]->Uri());
		}
		// Not from this process: see the top of the file.
		pid_t creator = Fork([&] { return CreateIndex(uris_); });
		ASSERT_EQ(WaitChild(creator, 60000), kExitOk);
		Log("daemons up, index created");
		base_.ops = kOfiOps;
		base_.keys = kOfiKeys;
		base_.timeout_ms = 2000;
		base_.conn_timeout_ms = 300;
	}

	void TearDown() override
	{
		KillClients();
		daemons_.clear(); // SIGKILLs them: the pools are not needed any more
		IndexProcTest::TearDown();
		if (had_tmpdir_)
			setenv("TEST_TMPDIR", old_tmpdir_.c_str(), 1);
		else
			unsetenv("TEST_TMPDIR");
	}

	// Wait until every client (ids 1 ..) has done @n ops or ended.
	bool WaitProgress(unsigned n)
	{
		bool ok = WaitFor([&] {
			for (unsigned c = 1; c <= kOfiClients; c++)
				if (Done(c) < n && board_->client[c].finished.load() == 0)
					return false;
			return true;
		}, 90000);
		Log("clients at " + std::to_string(n) + " ops");
		return ok;
	}

	void Restart(unsigned i)
	{
		std::string err;
		ASSERT_TRUE(daemons_[i]->Restart(&err)) << err;
	}

	std::vector<std::unique_ptr<Daemon>> daemons_;
	std::vector<std::string> uris_;
	Workload base_;
	bool had_tmpdir_ = false;
	std::string old_tmpdir_;
};

// (a) Node 0 (first in every client's list) SIGKILLed while three clients
// run, restarted from its pool while they still run. With f = 1 down every
// op completes: no KV_E_UNAVAILABLE. "Completes" is the property, so the
// limits are of the defaults' order rather than the outage tests' short
// ones: on two busy cores (load 10-15, clients and daemons all
// busy-polling) a split that three clients help along over TCP has taken
// 1.5-2 s with every node up, and with a 300 ms connection timeout live
// but starved nodes were dropped as silent, reconnected (a new libfabric
// endpoint each, tens of ms of CPU) and dropped again, until ops ran out
// of time.
TEST_F(IndexOfiTest, DaemonKilledAndRestarted)
{
	base_.timeout_ms = 10000;
	base_.conn_timeout_ms = 1000;
	std::vector<pid_t> pids = StartClients(uris_, 1, kOfiClients, base_);
	ASSERT_TRUE(WaitProgress(kOfiOps / 4));
	EXPECT_EQ(daemons_[0]->Kill(SIGKILL), 128 + SIGKILL);
	Log("node 0 killed");
	ASSERT_TRUE(WaitProgress(kOfiOps / 2));
	Restart(0);
	Log("node 0 restarted");
	ReapAll(pids);
	Log("clients done");
	FinalLookups(uris_, 1 + kOfiClients, kOfiKeys, base_);
	ExpectLinearizable(History());
}

// (b) Node 2 SIGSTOPped while clients run (its connections stay open but
// silent: rounds must give up on it after the connection timeout), for at
// least 2 s and some ops of every client, then SIGCONTed. As (a): no
// KV_E_UNAVAILABLE.
TEST_F(IndexOfiTest, DaemonStoppedAndContinued)
{
	base_.timeout_ms = 10000;
	base_.conn_timeout_ms = 1000;
	std::vector<pid_t> pids = StartClients(uris_, 1, kOfiClients, base_);
	ASSERT_TRUE(WaitProgress(kOfiOps / 4));
	EXPECT_EQ(daemons_[2]->Kill(SIGSTOP), 0);
	Log("node 2 stopped");
	uint64_t until = NowNs() + 2000000000u;
	unsigned before[kOfiClients + 1];
	for (unsigned c = 1; c <= kOfiClients; c++)
		before[c] = Done(c);
	// (Slow: every key store put waits out the stopped node, 2 s.)
	EXPECT_TRUE(WaitFor([&] {
		for (unsigned c = 1; c <= kOfiClients; c++)
			if (Done(c) < before[c] + 5 && board_->client[c].finished.load() == 0)
				return false;
		return NowNs() >= until;
	}, 60000));
	EXPECT_EQ(daemons_[2]->Kill(SIGCONT), 0);
	Log("node 2 continued");
	ReapAll(pids);
	Log("clients done");
	FinalLookups(uris_, 1 + kOfiClients, kOfiKeys, base_);
	ExpectLinearizable(History());
}

// (c) Nodes 0 and 1 SIGKILLed (f + 1): every client gets KV_E_UNAVAILABLE,
// and no op that ran wholly inside the outage returned an answer (with one
// node of three, any answer could be wrong); nothing answered is wrong
// either (the history check: an unavailable op is pending). After both are
// restarted from their pools, ops succeed again.
TEST_F(IndexOfiTest, FPlusOneKilledThenRestarted)
{
	base_.may_be_unavailable = true;
	// Every client holds after a third of its ops until the kill: a fast
	// one would otherwise finish before it (CI saw that) and see no
	// outage and no restart.
	base_.hold_at = kOfiOps / 3;
	std::vector<pid_t> pids = StartClients(uris_, 1, kOfiClients, base_);
	ASSERT_TRUE(WaitProgress(kOfiOps / 3));
	EXPECT_EQ(daemons_[0]->Kill(SIGKILL), 128 + SIGKILL);
	EXPECT_EQ(daemons_[1]->Kill(SIGKILL), 128 + SIGKILL);
	uint64_t down = NowNs(); // both reaped: only node 2 can answer now
	Log("nodes 0 and 1 killed");
	board_->go = 2;
	EXPECT_TRUE(WaitFor([&] {
		for (unsigned c = 1; c <= kOfiClients; c++)
			if (board_->client[c].unavailable.load() < 2 &&
				board_->client[c].finished.load() == 0)
				return false;
		return true;
	}, 60000)) << "clients did not see the outage";
	uint64_t up = NowNs();
	Restart(0);
	Restart(1);
	Log("nodes 0 and 1 restarted");
	ReapAll(pids);
	Log("clients done");
	FinalLookups(uris_, 1 + kOfiClients, kOfiKeys, base_);
	lincheck::IndexHistory h = History();
	for (unsigned c = 1; c <= kOfiClients; c++) {
		EXPECT_GT(Count(h, c, {RecordStatus::kUnavailable}, down, up), 0u) << "client " << c;
		EXPECT_EQ(Count(h, c, kAnswered, down, up), 0u) << "client " << c << " answered in the outage";
		EXPECT_GT(Count(h, c, kAnswered, up, UINT64_MAX), 0u)
			<< "client " << c << ": nothing succeeded after the restart";
	}
	ExpectLinearizable(h);
}

// (d) All three nodes SIGKILLed while clients run, then restarted from
// their pools: the clients' ops in between are unavailable, and a fresh
// client's lookups (in the history) find every mapping whose insert
// completed and none whose remove did.
TEST_F(IndexOfiTest, AllKilledThenRestarted)
{
	base_.may_be_unavailable = true;
	std::vector<pid_t> pids = StartClients(uris_, 1, kOfiClients, base_);
	ASSERT_TRUE(WaitProgress(kOfiOps / 2));
	for (auto &d : daemons_)
		EXPECT_EQ(d->Kill(SIGKILL), 128 + SIGKILL);
	uint64_t down = NowNs();
	Log("all nodes killed");
	EXPECT_TRUE(WaitFor([&] {
		for (unsigned c = 1; c <= kOfiClients; c++)
			if (board_->client[c].unavailable.load() < 1 &&
				board_->client[c].finished.load() == 0)
				return false;
		return true;
	}, 60000));
	uint64_t up = NowNs();
	for (unsigned i = 0; i < 3; i++)
		Restart(i);
	Log("all nodes restarted");
	ReapAll(pids);
	Log("clients done");
	FinalLookups(uris_, 1 + kOfiClients, kOfiKeys, base_);
	lincheck::IndexHistory h = History();
	for (unsigned c = 1; c <= kOfiClients; c++)
		EXPECT_EQ(Count(h, c, kAnswered, down, up), 0u) << "client " << c << " answered in the outage";
	// Not vacuous: the fresh client found mappings that outlived the
	// restart (the history check says they are the right ones).
	EXPECT_GT(Count(h, 1 + kOfiClients, {RecordStatus::kFound}, 0, UINT64_MAX), 0u);
	ExpectLinearizable(h);
}

} // namespace
