// SPDX-License-Identifier: BSD-3-Clause
// tests/lincheck/index_model_test.cc -- IndexModel (kv/'s key index as its
// clients see it) on histories that must pass or fail, each failing one a
// bug a replicated index can have; the record files of records.h,
// written by threads and by client processes that die mid-op; random
// sequential runs with one result corrupted.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <map>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/lincheck_test_util.h"
#include "tests/lincheck/models.h"
#include "tests/lincheck/records.h"

namespace {

using lincheck::IndexModel;
using lincheck::IndexOp;
using lincheck::RecordStatus;
using lincheck::IndexRecordWriter;
using lincheck::kPending;
using lincheck::Operation;
using lincheck_test::At;
using lincheck_test::BruteForce;
using lincheck_test::FreshPath;
using lincheck_test::Spread;

using History = std::vector<Operation<IndexOp>>;

constexpr uint64_t kKey = 1;
// Locations: what fresh value blocks of three inserts would be.
constexpr uint64_t kLocA = 100, kLocB = 200, kLocC = 300;

bool Ok(const IndexModel &model, const History &h)
{
	lincheck::Result r = lincheck::check(model, h);
	EXPECT_FALSE(r.timed_out_or_limit) << r.explanation;
	return r.ok;
}

bool Ok(const History &h)
{
	return Ok(IndexModel(), h);
}

// The explanation of a history that must fail; it must name @op.
std::string Failure(const History &h, const std::string &op)
{
	lincheck::Result r = lincheck::check(IndexModel(), h);
	EXPECT_FALSE(r.ok);
	EXPECT_FALSE(r.timed_out_or_limit);
	EXPECT_NE(r.explanation.find(op), std::string::npos) << r.explanation;
	return r.explanation;
}

// ---- the model on hand-written histories ----

TEST(Index, SequentialHistoryPasses)
{
	EXPECT_TRUE(Ok(History{}));
	History h = {
		At(IndexOp::lookup_absent(kKey), 0, 1),
		At(IndexOp::remove_absent(kKey, kLocA), 2, 3),
		At(IndexOp::insert_ok(kKey, kLocA), 4, 5),
		At(IndexOp::lookup_found(kKey, kLocA), 6, 7),
		At(IndexOp::insert_exists(kKey, kLocB, kLocA), 8, 9),
		At(IndexOp::insert_exists(kKey, kLocA, kLocA), 10, 11),  // not idempotent
		At(IndexOp::remove_absent(kKey, kLocB), 12, 13),         // another location
		At(IndexOp::lookup_found(kKey, kLocA), 14, 15),
		At(IndexOp::remove_ok(kKey, kLocA), 16, 17),
		At(IndexOp::lookup_absent(kKey), 18, 19),
		At(IndexOp::insert_ok(kKey, kLocB), 20, 21),
		At(IndexOp::insert_ok(kKey + 1, kLocC), 22, 23),
		At(IndexOp::lookup_found(kKey, kLocB), 24, 25),
	};
	EXPECT_TRUE(Ok(h));
	EXPECT_TRUE(Ok(IndexModel({{kKey, kLocA}, {kKey, kLocB}}),
		History{At(IndexOp::lookup_found(kKey, kLocB), 0, 1)}));
}

TEST(Index, ConcurrentHistoriesPass)
{
	// Two clients insert one key at once; one wins, the other learns where.
	History race = {
		At(IndexOp::insert_ok(kKey, kLocA), 0, 10),
		At(IndexOp::insert_exists(kKey, kLocB, kLocA), 1, 11, 1),
		At(IndexOp::lookup_found(kKey, kLocA), 12, 13, 2),
	};
	EXPECT_TRUE(Ok(race));
	race[0].op = IndexOp::insert_exists(kKey, kLocA, kLocB);  // the later one won
	race[1].op = IndexOp::insert_ok(kKey, kLocB);
	race[2].op = IndexOp::lookup_found(kKey, kLocB);
	EXPECT_TRUE(Ok(race));

	// A lookup overlapping an insert and a remove may see any of the three states.
	for (const IndexOp &seen : {IndexOp::lookup_absent(kKey), IndexOp::lookup_found(kKey, kLocA)}) {
		History h = {
			At(IndexOp::insert_ok(kKey, kLocA), 0, 3),
			At(IndexOp::remove_ok(kKey, kLocA), 4, 7),
			At(seen, 1, 6, 1),
		};
		EXPECT_TRUE(Ok(h)) << IndexModel().describe(seen);
	}

	// insert A, remove A, insert B, all overlapping: both inserts are OK only in that order.
	History reuse = {
		At(IndexOp::insert_ok(kKey, kLocB), 0, 10),
		At(IndexOp::remove_ok(kKey, kLocA), 1, 11, 1),
		At(IndexOp::insert_ok(kKey, kLocA), 2, 12, 2),
		At(IndexOp::lookup_found(kKey, kLocB), 13, 14),
	};
	EXPECT_TRUE(Ok(reuse));
	reuse[3].op = IndexOp::lookup_found(kKey, kLocA);  // B's insert cannot precede A's remove
	EXPECT_FALSE(Ok(reuse));
}

// A lost write: an insert returned OK, then a lookup that started later
// misses it, as when a node whose pool was wiped answers as a member
// together with a node that lagged.
TEST(Index, LookupMissingCompletedInsertFails)
{
	History h = {
		At(IndexOp::insert_ok(kKey, kLocA), 0, 1),
		At(IndexOp::lookup_absent(kKey), 2, 3, 1),
	};
	Failure(h, "lookup(1) -> ABSENT");
	h[1].call = 1;  // closed intervals: invoked as the insert returns, it may go first
	EXPECT_TRUE(Ok(h));

	// The same loss seen after the mapping was read once: it cannot flicker.
	History flicker = {
		At(IndexOp::insert_ok(kKey, kLocA), 0, 10),
		At(IndexOp::lookup_found(kKey, kLocA), 1, 2, 1),
		At(IndexOp::lookup_absent(kKey), 3, 4, 1),
	};
	Failure(flicker, "lookup(1) -> ABSENT");
	flicker.push_back(At(IndexOp::remove_ok(kKey, kLocA), 2, 3, 2));  // a remove explains it
	EXPECT_TRUE(Ok(flicker));
}

// Two inserts of one key both OK (two slots took the key, or two values were
// chosen for one slot) with no remove between them.
TEST(Index, TwoInsertsOfOneKeyBothOkFail)
{
	History h = {
		At(IndexOp::insert_ok(kKey, kLocA), 0, 10),
		At(IndexOp::insert_ok(kKey, kLocB), 1, 11, 1),  // even overlapping
	};
	Failure(h, "-> OK");
	h[1] = At(IndexOp::insert_ok(kKey, kLocB), 12, 13, 1);
	Failure(h, "insert(1, 200) -> OK");
	h[1].op = IndexOp::insert_ok(kKey, kLocA);  // the same location twice is no better
	Failure(h, "insert(1, 100) -> OK");

	h[1].op = IndexOp::insert_ok(kKey, kLocB);
	h.push_back(At(IndexOp::remove_ok(kKey, kLocA), 5, 11, 2));
	EXPECT_TRUE(Ok(h));
}

// A remove that unmapped a location the key never mapped to (a remover that
// proposed DEAD for the wrong entry, or matched only the fingerprint).
TEST(Index, RemoveOkOfNeverMappedLocationFails)
{
	History h = {
		At(IndexOp::insert_ok(kKey, kLocA), 0, 1),
		At(IndexOp::remove_ok(kKey, kLocB), 2, 3, 1),
	};
	Failure(h, "remove(1, 200) -> OK");
	h[1].call = 0;  // concurrent with the insert changes nothing
	Failure(h, "remove(1, 200) -> OK");
	EXPECT_FALSE(Ok(History{At(IndexOp::remove_ok(kKey, kLocA), 0, 1)}));

	h[1].op = IndexOp::remove_absent(kKey, kLocB);
	h.push_back(At(IndexOp::lookup_found(kKey, kLocA), 4, 5));
	EXPECT_TRUE(Ok(h));
}

// A stale lookup: it returned a mapping whose remove had completed before
// it started (it read only members that had not seen the remove and
// counted their old words as decided).
TEST(Index, StaleLookupAfterRemoveFails)
{
	History h = {
		At(IndexOp::insert_ok(kKey, kLocA), 0, 1),
		At(IndexOp::remove_ok(kKey, kLocA), 2, 3),
		At(IndexOp::lookup_found(kKey, kLocA), 4, 5, 1),
	};
	Failure(h, "lookup(1) -> FOUND(100)");
	h[2].call = 2;  // overlapping the remove: it may read first
	EXPECT_TRUE(Ok(h));
}

// EXISTS naming a location no insert ever gave (a fingerprint match taken
// for the key, or a torn word read as a location).
TEST(Index, ExistsNamingNeverInsertedLocationFails)
{
	History h = {
		At(IndexOp::insert_ok(kKey, kLocA), 0, 1),
		At(IndexOp::insert_exists(kKey, kLocB, kLocC), 2, 3, 1),
	};
	Failure(h, "insert(1, 200) -> EXISTS(300)");
	h[1].call = 0;  // even concurrent with everything
	Failure(h, "insert(1, 200) -> EXISTS(300)");
	// EXISTS with the inserter's own location, which it never got mapped.
	h[1].op = IndexOp::insert_exists(kKey, kLocB, kLocB);
	Failure(h, "insert(1, 200) -> EXISTS(200)");
	h[1].op = IndexOp::insert_exists(kKey, kLocB, kLocA);
	EXPECT_TRUE(Ok(h));
	EXPECT_FALSE(Ok(History{At(IndexOp::insert_exists(kKey, kLocB, kLocA), 0, 1)}));
}

// A pending op (its client crashed, or timed out and stopped waiting) may
// have taken effect or not, and may take effect long after it was invoked.
TEST(Index, PendingOpsMayOrMayNotTakeEffect)
{
	auto insert = At(IndexOp::insert(kKey, kLocA), 0, kPending, 1);
	EXPECT_TRUE(Ok(History{insert, At(IndexOp::lookup_absent(kKey), 1, 2)}));
	EXPECT_TRUE(Ok(History{insert, At(IndexOp::lookup_found(kKey, kLocA), 1, 2)}));
	// Another client's recovery finished the crashed client's proposal...
	EXPECT_TRUE(Ok(History{insert, At(IndexOp::lookup_absent(kKey), 1, 2),
		At(IndexOp::insert_exists(kKey, kLocB, kLocA), 3, 4)}));
	// ... or chose its own value instead.
	EXPECT_TRUE(Ok(History{insert, At(IndexOp::insert_ok(kKey, kLocB), 1, 2)}));
	// But not both, and an effect once seen is not undone.
	EXPECT_FALSE(Ok(History{insert, At(IndexOp::insert_ok(kKey, kLocB), 1, 2),
		At(IndexOp::lookup_found(kKey, kLocA), 3, 4)}));
	EXPECT_FALSE(Ok(History{insert, At(IndexOp::lookup_found(kKey, kLocA), 1, 2),
		At(IndexOp::lookup_absent(kKey), 3, 4)}));
	// It cannot explain a location it did not give.
	EXPECT_FALSE(Ok(History{insert, At(IndexOp::lookup_found(kKey, kLocB), 1, 2)}));

	IndexModel mapped({{kKey, kLocA}});
	auto remove = At(IndexOp::remove(kKey, kLocA), 0, kPending, 1);
	EXPECT_TRUE(Ok(mapped, History{remove, At(IndexOp::lookup_found(kKey, kLocA), 1, 2)}));
	EXPECT_TRUE(Ok(mapped, History{remove, At(IndexOp::lookup_absent(kKey), 1, 2)}));
	EXPECT_FALSE(Ok(mapped, History{remove, At(IndexOp::lookup_absent(kKey), 1, 2),
		At(IndexOp::lookup_found(kKey, kLocA), 3, 4)}));
	// A pending remove of another location cannot unmap this one.
	EXPECT_FALSE(Ok(mapped, History{At(IndexOp::remove(kKey, kLocB), 0, kPending, 1),
		At(IndexOp::lookup_absent(kKey), 1, 2)}));
	EXPECT_TRUE(Ok(History{At(IndexOp::lookup(kKey), 0, kPending)}));
}

TEST(Index, PartitionChecksEachKeyAlone)
{
	History h;
	for (uint64_t k = 0; k < 50; k++) {
		h.push_back(At(IndexOp::insert_ok(k, k + 1000), 4 * k, 4 * k + 10, 0));
		h.push_back(At(IndexOp::lookup_found(k, k + 1000), 4 * k + 11, 4 * k + 12, 1));
	}
	EXPECT_TRUE(Ok(h));
	h.push_back(At(IndexOp::lookup_found(77, 1), 0, 1, 2));  // never inserted
	std::string why = Failure(h, "lookup(77) -> FOUND(1)");
	EXPECT_NE(why.find("sub-history 50 of 51"), std::string::npos) << why;
}

// ---- record files ----

// Record @invoked by @w as @thread and end it as @ended: complete() with it
// when it has outputs, else unavailable().
void Record(IndexRecordWriter &w, uint32_t thread, const IndexOp &invoked, const IndexOp &ended)
{
	IndexRecordWriter::Ticket t;
	ASSERT_EQ(w.invoke(thread, invoked, &t), 0);
	ASSERT_EQ(ended.returned ? w.complete(t, ended) : w.unavailable(t), 0);
}

lincheck::IndexHistory Read(const std::vector<std::string> &paths)
{
	lincheck::IndexHistory h;
	std::string why;
	EXPECT_EQ(lincheck::read_history(paths, &h, &why), 0) << why;
	EXPECT_EQ(h.ops.size(), h.records.size());
	return h;
}

// Two writers (as two client processes would) record interleaved ops, one
// ending UNAVAILABLE and one never ending; read back, every field survives,
// UNAVAILABLE and pending come back pending, and the history checks.
TEST(IndexRecords, RoundTripFromTwoWriters)
{
	std::string p1 = FreshPath("round_trip.1"), p2 = FreshPath("round_trip.2");
	IndexRecordWriter w1, w2;
	ASSERT_EQ(w1.open(p1, 11), 0);
	ASSERT_EQ(w2.open(p2, 22), 0);
	IndexRecordWriter::Ticket a, b, crashed;
	ASSERT_EQ(w1.invoke(0, IndexOp::insert(kKey, kLocA), &a), 0);
	ASSERT_EQ(w2.invoke(3, IndexOp::insert(kKey, kLocB), &b), 0);
	ASSERT_EQ(w2.complete(b, IndexOp::insert_exists(kKey, kLocB, kLocA)), 0);
	ASSERT_EQ(w1.complete(a, IndexOp::insert_ok(kKey, kLocA)), 0);
	Record(w2, 4, IndexOp::lookup(kKey), IndexOp::lookup_found(kKey, kLocA));
	Record(w1, 1, IndexOp::remove(kKey, kLocA), IndexOp::remove(kKey, kLocA));  // UNAVAILABLE
	Record(w2, 3, IndexOp::lookup(kKey), IndexOp::lookup_absent(kKey));  // it took effect after all
	ASSERT_EQ(w1.invoke(0, IndexOp::insert(kKey + 1, kLocC), &crashed), 0);  // never ends
	ASSERT_EQ(w1.close(), 0);
	ASSERT_EQ(w2.close(), 0);

	lincheck::IndexHistory h = Read({p1, p2});
	ASSERT_EQ(h.ops.size(), 6u);
	IndexModel model;
	const char *const expect[] = {
		"insert(1, 100) -> OK", "insert(1, 200) -> EXISTS(100)", "lookup(1) -> FOUND(100)",
		"remove(1, 100) -> ?", "lookup(1) -> ABSENT", "insert(2, 300) -> ?",
	};
	const uint32_t process[] = {11, 22, 22, 11, 22, 11}, thread[] = {0, 3, 4, 1, 3, 0};
	for (size_t i = 0; i < h.ops.size(); i++) {
		EXPECT_EQ(model.describe(h.ops[i].op), expect[i]) << i;
		EXPECT_EQ(h.records[i].process, process[i]) << i;
		EXPECT_EQ(h.records[i].thread, thread[i]) << i;
		EXPECT_EQ(h.ops[i].thread, static_cast<int>(thread[i])) << i;
		EXPECT_EQ(h.ops[i].call, h.records[i].call) << i;
		EXPECT_TRUE(i == 0 || h.ops[i - 1].call < h.ops[i].call) << i;
	}
	EXPECT_LT(h.ops[1].ret, h.ops[0].ret);  // completed in the other order
	EXPECT_EQ(h.ops[3].ret, kPending);
	EXPECT_EQ(h.records[3].status, static_cast<uint8_t>(RecordStatus::kUnavailable));
	EXPECT_LT(h.records[3].ret, h.ops[4].call);
	EXPECT_EQ(h.ops[5].ret, kPending);
	EXPECT_EQ(h.records[5].status, static_cast<uint8_t>(RecordStatus::kInvoked));
	EXPECT_EQ(h.records[5].ret, UINT64_MAX);

	lincheck::Result r = lincheck::check(model, h.ops);
	EXPECT_TRUE(r.ok) << r.explanation;
}

// UNAVAILABLE: "an unavailable error, never a wrong answer". The op may
// take effect or not, even after it returned; it excuses no other answer.
TEST(IndexRecords, UnavailableIsCheckedAsPending)
{
	// @after are returned ops recorded after an insert(1, A) that reported
	// UNAVAILABLE, all sequential; is the history linearizable?
	int n = 0;
	auto check = [&](const std::vector<IndexOp> &after) {
		std::string path = FreshPath("unavailable." + std::to_string(n++));
		IndexRecordWriter w;
		EXPECT_EQ(w.open(path, 1), 0);
		Record(w, 0, IndexOp::insert(kKey, kLocA), IndexOp::insert(kKey, kLocA));
		for (const IndexOp &op : after) {
			IndexOp invoked = op;
			invoked.returned = false;
			Record(w, 1, invoked, op);
		}
		EXPECT_EQ(w.close(), 0);
		return Ok(Read({path}).ops);
	};
	EXPECT_TRUE(check({IndexOp::lookup_absent(kKey)}));
	EXPECT_TRUE(check({IndexOp::lookup_found(kKey, kLocA)}));
	// Took effect after it returned: another client's recovery finished it.
	EXPECT_TRUE(check({IndexOp::lookup_absent(kKey), IndexOp::lookup_found(kKey, kLocA)}));
	// A retry finds its own first attempt.
	EXPECT_TRUE(check({IndexOp::insert_exists(kKey, kLocA, kLocA)}));
	EXPECT_TRUE(check({IndexOp::insert_ok(kKey, kLocB), IndexOp::lookup_found(kKey, kLocB)}));
	EXPECT_FALSE(check({IndexOp::lookup_found(kKey, kLocA), IndexOp::lookup_absent(kKey)}));
	EXPECT_FALSE(check({IndexOp::lookup_found(kKey, kLocB)}));
	EXPECT_FALSE(check({IndexOp::insert_ok(kKey, kLocB), IndexOp::lookup_found(kKey, kLocA)}));
}

TEST(IndexRecords, DamagedFilesAreRejectedAndHolesSkipped)
{
	std::string path = FreshPath("damaged");
	IndexRecordWriter w;
	ASSERT_EQ(w.open(path, 1), 0);
	Record(w, 0, IndexOp::insert(kKey, kLocA), IndexOp::insert_ok(kKey, kLocA));
	Record(w, 0, IndexOp::lookup(kKey), IndexOp::lookup_found(kKey, kLocA));
	ASSERT_EQ(w.close(), 0);
	IndexRecordWriter again;
	EXPECT_EQ(again.open(path, 2), -EEXIST);  // one file, one writer

	lincheck::IndexHistory h;
	std::string why;
	EXPECT_EQ(lincheck::read_history({FreshPath("missing")}, &h, &why), -ENOENT);

	// A thread that died between taking slot 0 and writing it leaves zeros.
	int fd = open(path.c_str(), O_RDWR);
	ASSERT_GE(fd, 0);
	lincheck::Record zeros{};
	ASSERT_EQ(pwrite(fd, &zeros, sizeof(zeros), 0), static_cast<ssize_t>(sizeof(zeros)));
	h = Read({path});
	ASSERT_EQ(h.ops.size(), 1u);
	EXPECT_EQ(IndexModel().describe(h.ops[0].op), "lookup(1) -> FOUND(100)");

	char byte = 0x7f;  // in record 1's found field
	ASSERT_EQ(pwrite(fd, &byte, 1, 64 + 48), 1);
	EXPECT_EQ(lincheck::read_history({path}, &h, &why), -EBADMSG);
	EXPECT_NE(why.find("record 1: bad checksum"), std::string::npos) << why;

	ASSERT_EQ(ftruncate(fd, 64 + 32), 0);
	EXPECT_EQ(lincheck::read_history({path}, &h, &why), -EBADMSG);
	EXPECT_NE(why.find("ends inside record 1"), std::string::npos) << why;
	close(fd);
}

// ---- client processes ----

constexpr uint64_t kKeys = 4;
constexpr uint64_t kLostKey = kKeys;  // only client 1 touches it, once every op before is done

// The index the client processes share: a map under one process-shared
// mutex, in MAP_SHARED memory, so linearizable by construction -- unless
// lose_insert is set: then the insert of kLostKey returns OK without
// mapping it, as an index whose only copy of that mapping was on a node
// whose pool was wiped.
struct SharedIndex {
	pthread_mutex_t mu;          // protects loc; taken by no other lock's holder
	uint64_t loc[kKeys + 1];     // 0: unmapped (clients never use location 0)
	bool lose_insert;            // read-only after fork
	std::atomic<int> started;    // clients that have begun; each waits for both, so they overlap

	// Apply -- @op (invoked form) as the index does it; its returned form.
	IndexOp Apply(const IndexOp &op)
	{
		pthread_mutex_lock(&mu);
		uint64_t &cur = loc[op.key];
		IndexOp out;
		switch (op.kind) {
		case IndexOp::Kind::kInsert:
			out = cur ? IndexOp::insert_exists(op.key, op.loc, cur) : IndexOp::insert_ok(op.key, op.loc);
			if (!cur && !(lose_insert && op.key == kLostKey))
				cur = op.loc;
			break;
		case IndexOp::Kind::kRemove:
			out = cur == op.loc ? IndexOp::remove_ok(op.key, op.loc) : IndexOp::remove_absent(op.key, op.loc);
			if (cur == op.loc)
				cur = 0;
			break;
		case IndexOp::Kind::kLookup:
			out = cur ? IndexOp::lookup_found(op.key, cur) : IndexOp::lookup_absent(op.key);
			break;
		}
		pthread_mutex_unlock(&mu);
		return out;
	}
};

// One thread of client @id: 150 random ops on keys 0..kKeys-1, removes
// naming the location it last saw for the key; about one op in 30 times
// out, taking effect or not at random, and is recorded UNAVAILABLE.
// Returns false if recording failed.
bool ClientThread(SharedIndex *ix, IndexRecordWriter *w, uint32_t id, uint32_t thread)
{
	std::mt19937_64 rng(id * 100 + thread);
	uint64_t seen[kKeys] = {};
	uint64_t next_loc = (uint64_t{id} << 40) | (uint64_t{thread} << 32);
	for (int i = 0; i < 150; i++) {
		uint64_t key = rng() % kKeys;
		IndexOp op;
		switch (rng() % 3) {
		case 0:
			op = IndexOp::insert(key, ++next_loc);
			break;
		case 1:
			op = IndexOp::remove(key, seen[key] ? seen[key] : ++next_loc);
			break;
		default:
			op = IndexOp::lookup(key);
		}
		IndexRecordWriter::Ticket t;
		if (w->invoke(thread, op, &t) != 0)
			return false;
		bool timeout = rng() % 30 == 0;
		if (timeout && rng() % 2) {
			if (w->unavailable(t) != 0)
				return false;
			continue;  // gave up before the op landed
		}
		IndexOp out = ix->Apply(op);
		if (timeout) {  // landed, but the client had stopped waiting
			if (w->unavailable(t) != 0)
				return false;
			continue;
		}
		if (w->complete(t, out) != 0)
			return false;
		if (out.status == IndexOp::Status::kFound || out.status == IndexOp::Status::kExists)
			seen[key] = out.found;
		else if (out.kind == IndexOp::Kind::kInsert)
			seen[key] = op.loc;
	}
	return true;
}

// Client process @id (1 or 2): two threads of ClientThread() recording into
// @path; then client 1 inserts kLostKey and looks it up. Finally it dies by
// SIGKILL in the middle of an op: client 1's insert has taken effect,
// client 2's remove has not. Exits 1 if anything failed first.
[[noreturn]] void Client(SharedIndex *ix, uint32_t id, const std::string &path)
{
	IndexRecordWriter w;
	if (w.open(path, id) != 0)
		_exit(1);
	ix->started.fetch_add(1, std::memory_order_relaxed);  // a start signal: orders no data
	while (ix->started.load(std::memory_order_relaxed) < 2)
		sched_yield();
	bool ok[2] = {false, false};
	std::thread t0([&] { ok[0] = ClientThread(ix, &w, id, 0); });
	std::thread t1([&] { ok[1] = ClientThread(ix, &w, id, 1); });
	t0.join();
	t1.join();
	if (!ok[0] || !ok[1])
		_exit(1);
	IndexRecordWriter::Ticket t;
	if (id == 1) {
		IndexOp insert = IndexOp::insert(kLostKey, 7);
		if (w.invoke(0, insert, &t) != 0 || w.complete(t, ix->Apply(insert)) != 0)
			_exit(1);
		IndexOp lookup = IndexOp::lookup(kLostKey);
		if (w.invoke(0, lookup, &t) != 0 || w.complete(t, ix->Apply(lookup)) != 0)
			_exit(1);
		if (w.invoke(0, IndexOp::insert(0, 8), &t) != 0)
			_exit(1);
		ix->Apply(IndexOp::insert(0, 8));
	} else if (w.invoke(1, IndexOp::remove(1, 9), &t) != 0) {
		_exit(1);
	}
	raise(SIGKILL);
	_exit(1);
}

// Across processes only if it needs no lock.
static_assert(std::atomic<int>::is_always_lock_free, "SharedIndex::started");

// Forks clients 1 and 2 on a fresh SharedIndex, waits for both to die by
// SIGKILL, and reads their records.
lincheck::IndexHistory RunClients(const std::string &name, bool lose_insert)
{
	void *mem = mmap(nullptr, sizeof(SharedIndex), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	EXPECT_NE(mem, MAP_FAILED);
	auto *ix = new (mem) SharedIndex{};
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&ix->mu, &attr);
	pthread_mutexattr_destroy(&attr);
	ix->lose_insert = lose_insert;

	std::vector<std::string> paths;
	std::vector<pid_t> pids;
	for (uint32_t id = 1; id <= 2; id++) {
		paths.push_back(FreshPath(name + "." + std::to_string(id)));
		pid_t pid = fork();
		if (pid == 0)
			Client(ix, id, paths.back());
		EXPECT_GT(pid, 0);
		pids.push_back(pid);
	}
	for (pid_t pid : pids) {
		int status = 0;
		EXPECT_EQ(waitpid(pid, &status, 0), pid);
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "client exited " << status;
	}
	pthread_mutex_destroy(&ix->mu);
	munmap(mem, sizeof(SharedIndex));
	return Read(paths);
}

TEST(IndexRecords, ClientProcessesThatDieMidOpPass)
{
	lincheck::IndexHistory h = RunClients("clients", false);
	size_t pending = 0, unavailable = 0;
	for (size_t i = 0; i < h.ops.size(); i++) {
		pending += h.records[i].status == static_cast<uint8_t>(RecordStatus::kInvoked);
		unavailable += h.records[i].status == static_cast<uint8_t>(RecordStatus::kUnavailable);
	}
	EXPECT_EQ(h.ops.size(), 2u * 2u * 150u + 4u);
	EXPECT_EQ(pending, 2u);
	EXPECT_GT(unavailable, 0u);
	lincheck::Result r = lincheck::check(IndexModel(), h.ops);
	EXPECT_TRUE(r.ok) << r.explanation;
}

TEST(IndexRecords, LostWriteAcrossClientProcessesFails)
{
	lincheck::IndexHistory h = RunClients("lost", true);
	lincheck::Result r = lincheck::check(IndexModel(), h.ops);
	EXPECT_FALSE(r.ok);
	EXPECT_FALSE(r.timed_out_or_limit);
	EXPECT_NE(r.explanation.find("lookup(" + std::to_string(kLostKey) + ") -> ABSENT"), std::string::npos)
		<< r.explanation;
}

// ---- random histories ----

// A random sequential run of @ops ops on @keys keys, computed on a std::map;
// locations come from a small range so removes and inserts often name a
// location the key had before, or another key's.
std::vector<IndexOp> RandomRun(std::mt19937_64 &rng, size_t ops, uint64_t keys)
{
	std::map<uint64_t, uint64_t> m;
	std::vector<IndexOp> run;
	for (size_t k = 0; k < ops; k++) {
		uint64_t key = rng() % keys, loc = 1 + rng() % 6;
		auto it = m.find(key);
		switch (rng() % 3) {
		case 0:
			if (it != m.end()) {
				run.push_back(IndexOp::insert_exists(key, loc, it->second));
			} else {
				run.push_back(IndexOp::insert_ok(key, loc));
				m[key] = loc;
			}
			break;
		case 1:
			if (it != m.end() && rng() % 2)
				loc = it->second;
			if (it != m.end() && it->second == loc) {
				run.push_back(IndexOp::remove_ok(key, loc));
				m.erase(it);
			} else {
				run.push_back(IndexOp::remove_absent(key, loc));
			}
			break;
		default:
			run.push_back(it != m.end() ? IndexOp::lookup_found(key, it->second)
				: IndexOp::lookup_absent(key));
		}
	}
	return run;
}

// Corrupt -- give returned @op another output its kind can return.
void Corrupt(std::mt19937_64 &rng, IndexOp *op)
{
	bool names_loc = op->status == IndexOp::Status::kExists || op->status == IndexOp::Status::kFound;
	if (names_loc && rng() % 2) {
		op->found += 1 + rng() % 3;  // another location
		return;
	}
	switch (op->kind) {
	case IndexOp::Kind::kInsert:
		*op = names_loc ? IndexOp::insert_ok(op->key, op->loc)
			: IndexOp::insert_exists(op->key, op->loc, 1 + rng() % 6);
		break;
	case IndexOp::Kind::kRemove:
		*op = op->status == IndexOp::Status::kOk ? IndexOp::remove_absent(op->key, op->loc)
			: IndexOp::remove_ok(op->key, op->loc);
		break;
	case IndexOp::Kind::kLookup:
		*op = names_loc ? IndexOp::lookup_absent(op->key) : IndexOp::lookup_found(op->key, 1 + rng() % 6);
		break;
	}
}

// Random sequential runs spread over four threads without overlap pass; with
// one result corrupted they fail (the order is forced, so any other output
// is wrong), and the explanation names the corrupted op.
TEST(Random, SequentialRunsPassAndOneCorruptedResultFails)
{
	std::mt19937_64 rng(61);
	IndexModel model;
	for (int iter = 0; iter < 100; iter++) {
		std::vector<IndexOp> run = RandomRun(rng, 300, 1 + iter % 8);
		History h;
		for (size_t k = 0; k < run.size(); k++)
			h.push_back(At(run[k], 10 * k + rng() % 4, 10 * k + 5 + rng() % 4, static_cast<int>(rng() % 4)));
		lincheck::Result r = lincheck::check(model, h);
		ASSERT_TRUE(r.ok) << iter << ": " << r.explanation;

		size_t victim = rng() % h.size();
		Corrupt(rng, &h[victim].op);
		r = lincheck::check(model, h);
		ASSERT_FALSE(r.ok) << iter << ": " << model.describe(h[victim].op);
		ASSERT_FALSE(r.timed_out_or_limit) << r.explanation;
		EXPECT_NE(r.explanation.find(model.describe(h[victim].op)), std::string::npos) << r.explanation;
	}
}

// Small overlapping histories, some ops pending, and each with one output
// corrupted: the search agrees with brute force.
TEST(Random, SmallOverlappingHistoriesAgreeWithBruteForce)
{
	std::mt19937_64 rng(62);
	IndexModel model;
	int detected = 0;
	for (int iter = 0; iter < 300; iter++) {
		std::vector<IndexOp> run = RandomRun(rng, 8, 2);
		History h;
		for (size_t k = 0; k < run.size(); k++)
			Spread(rng, &h, run[k], k, 2);
		ASSERT_TRUE(BruteForce(model, h)) << iter;
		ASSERT_TRUE(Ok(model, h)) << iter;
		IndexOp &op = h[rng() % h.size()].op;
		op.returned = true;
		Corrupt(rng, &op);
		bool truth = BruteForce(model, h);
		ASSERT_EQ(Ok(model, h), truth) << iter;
		detected += !truth;
	}
	EXPECT_GT(detected, 100);
}

}  // namespace
