// SPDX-License-Identifier: BSD-3-Clause
// tests/lincheck/kv_model_test.cc -- KvModel (kv/kv.h's store as its clients
// see it) on histories that must pass or fail, kv_delete's leniency for
// overlapping deletes, pending ops; the store's record files of records.h
// written by a client process that dies mid-op; small random histories
// against brute force.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/lincheck_test_util.h"
#include "tests/lincheck/models.h"
#include "tests/lincheck/records.h"

namespace {

using lincheck::KvModel;
using lincheck::KvOp;
using lincheck::KvRecordWriter;
using lincheck::kPending;
using lincheck::Operation;
using lincheck::RecordStatus;
using lincheck_test::At;
using lincheck_test::BruteForce;
using lincheck_test::FreshPath;
using lincheck_test::Spread;

using History = std::vector<Operation<KvOp>>;

constexpr uint64_t kKey = 1;
constexpr uint64_t kValA = 10, kValB = 20, kValC = 30;

bool Ok(const KvModel &model, const History &h)
{
	lincheck::Result r = lincheck::check(model, h);
	EXPECT_FALSE(r.timed_out_or_limit) << r.explanation;
	return r.ok;
}

bool Ok(const History &h)
{
	return Ok(KvModel(), h);
}

// The explanation of a history that must fail; it must name @op.
std::string Failure(const History &h, const std::string &op)
{
	lincheck::Result r = lincheck::check(KvModel(), h);
	EXPECT_FALSE(r.ok);
	EXPECT_FALSE(r.timed_out_or_limit);
	EXPECT_NE(r.explanation.find(op), std::string::npos) << r.explanation;
	return r.explanation;
}

// @ops one after the other, without overlap.
History Sequential(const std::vector<KvOp> &ops)
{
	History h;
	for (size_t i = 0; i < ops.size(); i++)
		h.push_back(At(ops[i], 2 * i, 2 * i + 1));
	return h;
}

// ---- the model on hand-written histories ----

TEST(Kv, SequentialHistoryPasses)
{
	EXPECT_TRUE(Ok(History{}));
	EXPECT_TRUE(Ok(Sequential({
		KvOp::get_absent(kKey),
		KvOp::update_absent(kKey, kValA),
		KvOp::del_absent(kKey),
		KvOp::insert_ok(kKey, kValA),
		KvOp::get_found(kKey, kValA),
		KvOp::insert_exists(kKey, kValB),
		KvOp::insert_exists(kKey, kValA),  // not idempotent
		KvOp::update_ok(kKey, kValB),
		KvOp::get_found(kKey, kValB),
		KvOp::put_ok(kKey, kValC),         // present: replaces
		KvOp::get_found(kKey, kValC),
		KvOp::del_ok(kKey),
		KvOp::get_absent(kKey),
		KvOp::put_ok(kKey, kValA),         // absent: inserts
		KvOp::get_found(kKey, kValA),
		KvOp::put_ok(kKey + 1, kValB),
		KvOp::get_found(kKey + 1, kValB),
		KvOp::get_found(kKey, kValA),
	})));
	EXPECT_TRUE(Ok(KvModel({{kKey, kValA}, {kKey, kValB}}), Sequential({KvOp::get_found(kKey, kValB)})));
}

// Each kind with an answer the state does not allow.
TEST(Kv, IllegalSequentialAnswersFail)
{
	// insert: OK on a present key, EXISTS on an absent one.
	Failure(Sequential({KvOp::insert_ok(kKey, kValA), KvOp::insert_ok(kKey, kValB)}), "insert(1, 20) -> OK");
	Failure(Sequential({KvOp::insert_exists(kKey, kValA)}), "insert(1, 10) -> EXISTS");
	// update: OK on an absent key, ABSENT on a present one.
	Failure(Sequential({KvOp::update_ok(kKey, kValA)}), "update(1, 10) -> OK");
	Failure(Sequential({KvOp::put_ok(kKey, kValA), KvOp::update_absent(kKey, kValB)}),
		"update(1, 20) -> ABSENT");
	// put: always OK, but what it stored must be what is read.
	Failure(Sequential({KvOp::put_ok(kKey, kValA), KvOp::put_ok(kKey, kValB), KvOp::get_found(kKey, kValA)}),
		"get(1) -> FOUND(10)");
	// get: ABSENT on a present key, FOUND on an absent one.
	Failure(Sequential({KvOp::insert_ok(kKey, kValA), KvOp::get_absent(kKey)}), "get(1) -> ABSENT");
	Failure(Sequential({KvOp::insert_ok(kKey, kValA), KvOp::del_ok(kKey), KvOp::get_found(kKey, kValA)}),
		"get(1) -> FOUND(10)");
	// delete: ABSENT on a present key.
	Failure(Sequential({KvOp::insert_ok(kKey, kValA), KvOp::del_absent(kKey)}), "delete(1) -> ABSENT");
	// An update after a delete finds nothing.
	Failure(Sequential({KvOp::insert_ok(kKey, kValA), KvOp::del_ok(kKey), KvOp::update_ok(kKey, kValB)}),
		"update(1, 20) -> OK");
}

TEST(Kv, ConcurrentHistoriesPass)
{
	// Two clients insert one key at once: exactly one wins.
	History race = {
		At(KvOp::insert_ok(kKey, kValA), 0, 10),
		At(KvOp::insert_exists(kKey, kValB), 1, 11, 1),
		At(KvOp::get_found(kKey, kValA), 12, 13, 2),
	};
	EXPECT_TRUE(Ok(race));
	race[0].op = KvOp::insert_exists(kKey, kValA);  // the later one won
	race[1].op = KvOp::insert_ok(kKey, kValB);
	race[2].op = KvOp::get_found(kKey, kValB);
	EXPECT_TRUE(Ok(race));
	race[0].op = KvOp::insert_ok(kKey, kValA);  // both won
	Failure(race, "-> OK");
	race[0].op = KvOp::insert_exists(kKey, kValA);  // neither won
	race[1].op = KvOp::insert_exists(kKey, kValB);
	race[2].op = KvOp::get_absent(kKey);
	Failure(race, "-> EXISTS");

	// A get overlapping a put and an update may see any of the three states.
	for (const KvOp &seen : {KvOp::get_absent(kKey), KvOp::get_found(kKey, kValA), KvOp::get_found(kKey, kValB)}) {
		History h = {
			At(KvOp::put_ok(kKey, kValA), 0, 3),
			At(KvOp::update_ok(kKey, kValB), 4, 7),
			At(seen, 1, 6, 1),
		};
		EXPECT_TRUE(Ok(h)) << KvModel().describe(seen);
	}
	// Overlapping puts: the last read fixes their order.
	History puts = {
		At(KvOp::put_ok(kKey, kValA), 0, 10),
		At(KvOp::put_ok(kKey, kValB), 1, 11, 1),
		At(KvOp::get_found(kKey, kValA), 12, 13),
		At(KvOp::get_found(kKey, kValA), 14, 15, 1),
	};
	EXPECT_TRUE(Ok(puts));
	puts[3].op = KvOp::get_found(kKey, kValB);  // it cannot flip back
	Failure(puts, "get(1) -> FOUND(20)");
}

// kv_delete: "two overlapping deletes may both return 0".
TEST(Kv, OverlappingDeletesMayBothReturnOk)
{
	History h = {
		At(KvOp::insert_ok(kKey, kValA), 0, 1),
		At(KvOp::del_ok(kKey), 2, 10),
		At(KvOp::del_ok(kKey), 3, 11, 1),
		At(KvOp::get_absent(kKey), 12, 13),
	};
	EXPECT_TRUE(Ok(h));
	h[2].op = KvOp::del_absent(kKey);  // the strict answer too
	EXPECT_TRUE(Ok(h));
	h.push_back(At(KvOp::del_ok(kKey), 4, 9, 2));  // a third, OK as well
	EXPECT_TRUE(Ok(h));

	// Never present: no delete OK explains anything.
	Failure(Sequential({KvOp::del_ok(kKey)}), "delete(1) -> OK");
	Failure(History{At(KvOp::del_ok(kKey), 0, 10), At(KvOp::del_ok(kKey), 1, 11, 1)}, "delete(1) -> OK");
	// An update that found nothing leaves no delete OK to share.
	Failure(Sequential({KvOp::update_absent(kKey, kValA), KvOp::del_ok(kKey)}), "delete(1) -> OK");
	// A successful write ends the leniency: the key is present again, so
	// a delete must say OK and one after it ABSENT or (lenient) OK; a get
	// must miss.
	Failure(Sequential({KvOp::insert_ok(kKey, kValA), KvOp::del_ok(kKey), KvOp::put_ok(kKey, kValB),
		KvOp::del_absent(kKey)}), "delete(1) -> ABSENT");
	Failure(Sequential({KvOp::insert_ok(kKey, kValA), KvOp::del_ok(kKey), KvOp::del_ok(kKey),
		KvOp::get_found(kKey, kValA)}), "get(1) -> FOUND(10)");

	// The documented gap: a sequential model cannot tell overlap, so a
	// second delete OK that began after the first returned passes too.
	EXPECT_TRUE(Ok(Sequential({KvOp::insert_ok(kKey, kValA), KvOp::del_ok(kKey), KvOp::del_ok(kKey)})));
}

// A pending op (its client crashed, or it reported UNAVAILABLE) may have
// taken effect or not, at any time after it was invoked.
TEST(Kv, PendingOpsMayOrMayNotTakeEffect)
{
	auto insert = At(KvOp::insert(kKey, kValA), 0, kPending, 1);
	EXPECT_TRUE(Ok(History{insert, At(KvOp::get_absent(kKey), 1, 2)}));
	EXPECT_TRUE(Ok(History{insert, At(KvOp::get_found(kKey, kValA), 1, 2)}));
	EXPECT_TRUE(Ok(History{insert, At(KvOp::get_absent(kKey), 1, 2), At(KvOp::insert_exists(kKey, kValB), 3, 4)}));
	EXPECT_TRUE(Ok(History{insert, At(KvOp::insert_ok(kKey, kValB), 1, 2)}));
	// An effect once seen is not undone, and it cannot explain another value.
	EXPECT_FALSE(Ok(History{insert, At(KvOp::get_found(kKey, kValA), 1, 2), At(KvOp::get_absent(kKey), 3, 4)}));
	EXPECT_FALSE(Ok(History{insert, At(KvOp::get_found(kKey, kValB), 1, 2)}));

	KvModel stored({{kKey, kValA}});
	auto update = At(KvOp::update(kKey, kValB), 0, kPending, 1);
	EXPECT_TRUE(Ok(stored, History{update, At(KvOp::get_found(kKey, kValA), 1, 2)}));
	EXPECT_TRUE(Ok(stored, History{update, At(KvOp::get_found(kKey, kValB), 1, 2)}));
	EXPECT_FALSE(Ok(stored, History{update, At(KvOp::get_found(kKey, kValB), 1, 2),
		At(KvOp::get_found(kKey, kValA), 3, 4)}));
	// A pending update of an absent key stores nothing.
	EXPECT_FALSE(Ok(History{update, At(KvOp::get_found(kKey, kValB), 1, 2)}));
	EXPECT_TRUE(Ok(History{At(KvOp::put(kKey, kValB), 0, kPending), At(KvOp::get_found(kKey, kValB), 1, 2)}));

	auto del = At(KvOp::del(kKey), 0, kPending, 1);
	EXPECT_TRUE(Ok(stored, History{del, At(KvOp::get_found(kKey, kValA), 1, 2)}));
	EXPECT_TRUE(Ok(stored, History{del, At(KvOp::get_absent(kKey), 1, 2)}));
	EXPECT_TRUE(Ok(stored, History{del, At(KvOp::del_absent(kKey), 1, 2)}));
	// It emptied the key, so a delete OK overlapping it is lenient too.
	EXPECT_TRUE(Ok(stored, History{del, At(KvOp::del_ok(kKey), 1, 2), At(KvOp::get_absent(kKey), 3, 4)}));
	EXPECT_FALSE(Ok(stored, History{del, At(KvOp::get_absent(kKey), 1, 2), At(KvOp::get_found(kKey, kValA), 3, 4)}));
	EXPECT_TRUE(Ok(History{At(KvOp::get(kKey), 0, kPending)}));
	EXPECT_TRUE(Ok(History{At(KvOp::del(kKey), 0, kPending), At(KvOp::get_absent(kKey), 1, 2)}));
}

// A get returning a value no op ever wrote (a torn or misplaced value read
// as the key's, or another key's value).
TEST(Kv, GetOfValueNeverWrittenFails)
{
	History h = {
		At(KvOp::insert_ok(kKey, kValA), 0, 1),
		At(KvOp::get_found(kKey, kValC), 2, 3, 1),
	};
	Failure(h, "get(1) -> FOUND(30)");
	h[1].call = 0;  // even concurrent with the insert
	Failure(h, "get(1) -> FOUND(30)");
	h.push_back(At(KvOp::put_ok(kKey + 1, kValC), 0, 1, 2));  // another key's value
	Failure(h, "get(1) -> FOUND(30)");
	h.push_back(At(KvOp::update_ok(kKey, kValC), 0, 3, 3));  // now it was written
	EXPECT_TRUE(Ok(h));
}

// A stale get: it returned a value whose update had completed before it
// started (it read a replica that had not seen the update).
TEST(Kv, StaleGetAfterCompletedUpdateFails)
{
	History h = {
		At(KvOp::insert_ok(kKey, kValA), 0, 1),
		At(KvOp::update_ok(kKey, kValB), 2, 3),
		At(KvOp::get_found(kKey, kValA), 4, 5, 1),
	};
	Failure(h, "get(1) -> FOUND(10)");
	h[2].call = 3;  // closed intervals: invoked as the update returns, it may go first
	EXPECT_TRUE(Ok(h));
}

TEST(Kv, DescribeAndPartition)
{
	KvModel model;
	EXPECT_EQ(model.describe(KvOp::insert_exists(1, 2)), "insert(1, 2) -> EXISTS");
	EXPECT_EQ(model.describe(KvOp::update(1, 2)), "update(1, 2) -> ?");
	EXPECT_EQ(model.describe(KvOp::put_ok(1, 2)), "put(1, 2) -> OK");
	EXPECT_EQ(model.describe(KvOp::get_found(1, 2)), "get(1) -> FOUND(2)");
	EXPECT_EQ(model.describe(KvOp::del_absent(1)), "delete(1) -> ABSENT");
	KvModel::State s;
	ASSERT_TRUE(model.step(KvModel({{1, 5}, {2, 6}}).init(), KvOp::del_ok(2), &s));
	EXPECT_EQ(model.describe_state(s), "{1: 5, 2: deleted}");
	KvModel::State again;
	ASSERT_TRUE(model.step(s, KvOp::del_ok(2), &again));  // lenient, unchanged
	EXPECT_EQ(again, s);
	ASSERT_TRUE(model.step(s, KvOp::insert_ok(2, 7), &again));
	EXPECT_EQ(model.describe_state(again), "{1: 5, 2: 7}");
	EXPECT_NE(model.hash(s), model.hash(again));

	History h;
	for (uint64_t k = 0; k < 50; k++) {
		h.push_back(At(KvOp::put_ok(k, k + 1000), 4 * k, 4 * k + 10, 0));
		h.push_back(At(KvOp::get_found(k, k + 1000), 4 * k + 11, 4 * k + 12, 1));
	}
	EXPECT_TRUE(Ok(h));
	h.push_back(At(KvOp::get_found(77, 1), 0, 1, 2));  // never written
	std::string why = Failure(h, "get(77) -> FOUND(1)");
	EXPECT_NE(why.find("sub-history 50 of 51"), std::string::npos) << why;
}

// ---- record files ----

// The ops the child of RoundTripFromClientKilledMidOp records, in order, as
// (thread, returned form or, for UNAVAILABLE, the invoked form).
struct Step {
	uint32_t thread;
	KvOp op;
};
const std::vector<Step> kSteps = {
	{0, KvOp::insert_ok(kKey, kValA)},
	{1, KvOp::put_ok(kKey + 1, kValB)},
	{0, KvOp::get_found(kKey, kValA)},
	{1, KvOp::update(kKey, kValC)},  // UNAVAILABLE
	{0, KvOp::get_found(kKey, kValC)},  // it took effect after all
	{2, KvOp::del_ok(kKey + 1)},
	{2, KvOp::get_absent(kKey + 1)},
};

// Child: record kSteps into @path as process 7, then invoke an insert and
// die by SIGKILL before it ends. Exits 1 if recording failed first.
[[noreturn]] void RecordingChild(const std::string &path)
{
	KvRecordWriter w;
	if (w.open(path, 7) != 0)
		_exit(1);
	for (const Step &s : kSteps) {
		KvOp invoked = s.op;
		invoked.returned = false;
		KvRecordWriter::Ticket t;
		if (w.invoke(s.thread, invoked, &t) != 0 ||
			(s.op.returned ? w.complete(t, s.op) : w.unavailable(t)) != 0)
			_exit(1);
	}
	KvRecordWriter::Ticket t;
	if (w.invoke(3, KvOp::insert(kKey + 2, kValA), &t) != 0)
		_exit(1);
	raise(SIGKILL);
	_exit(1);
}

// A client process records store ops and is killed mid-op; read back, every
// field survives, UNAVAILABLE and the op it died in come back pending, and
// the history checks. The file is no index history.
TEST(KvRecords, RoundTripFromClientKilledMidOp)
{
	std::string path = FreshPath("kv_round_trip");
	pid_t pid = fork();
	if (pid == 0)
		RecordingChild(path);
	ASSERT_GT(pid, 0);
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child exited " << status;

	lincheck::KvHistory h;
	std::string why;
	ASSERT_EQ(lincheck::read_history({path}, &h, &why), 0) << why;
	ASSERT_EQ(h.ops.size(), kSteps.size() + 1);
	ASSERT_EQ(h.records.size(), h.ops.size());
	KvModel model;
	const char *const expect[] = {
		"insert(1, 10) -> OK", "put(2, 20) -> OK", "get(1) -> FOUND(10)", "update(1, 30) -> ?",
		"get(1) -> FOUND(30)", "delete(2) -> OK", "get(2) -> ABSENT", "insert(3, 10) -> ?",
	};
	for (size_t i = 0; i < h.ops.size(); i++) {
		uint32_t thread = i < kSteps.size() ? kSteps[i].thread : 3;
		EXPECT_EQ(model.describe(h.ops[i].op), expect[i]) << i;
		EXPECT_EQ(h.records[i].magic, 0x31564b4cu) << i;  // "LKV1"
		EXPECT_EQ(h.records[i].process, 7u) << i;
		EXPECT_EQ(h.records[i].thread, thread) << i;
		EXPECT_EQ(h.ops[i].thread, static_cast<int>(thread)) << i;
		EXPECT_EQ(h.ops[i].call, h.records[i].call) << i;
		EXPECT_TRUE(i == 0 || h.records[i - 1].ret <= h.records[i].call) << i;  // one after the other
	}
	EXPECT_EQ(h.records[3].status, static_cast<uint8_t>(RecordStatus::kUnavailable));
	EXPECT_EQ(h.ops[3].ret, kPending);
	EXPECT_NE(h.records[3].ret, UINT64_MAX);
	EXPECT_EQ(h.records[3].arg, kValC);
	EXPECT_EQ(h.records[2].status, static_cast<uint8_t>(RecordStatus::kFound));
	EXPECT_EQ(h.records[2].out, kValA);
	EXPECT_EQ(h.records[7].status, static_cast<uint8_t>(RecordStatus::kInvoked));
	EXPECT_EQ(h.records[7].ret, UINT64_MAX);
	EXPECT_EQ(h.ops[7].ret, kPending);

	lincheck::Result r = lincheck::check(model, h.ops);
	EXPECT_TRUE(r.ok) << r.explanation;
	h.ops[4].op = KvOp::get_found(kKey, kValB);  // a value never written to key 1
	r = lincheck::check(model, h.ops);
	EXPECT_FALSE(r.ok);

	lincheck::IndexHistory ix;
	EXPECT_EQ(lincheck::read_history({path}, &ix, &why), -EBADMSG);
	EXPECT_NE(why.find("record 0: bad magic (not index records"), std::string::npos) << why;
}

// A record whose status its kind cannot return (a put that says ABSENT) is
// rejected, checksum and all.
TEST(KvRecords, ImpossibleStatusIsRejected)
{
	std::string path = FreshPath("kv_impossible");
	KvRecordWriter w;
	ASSERT_EQ(w.open(path, 1), 0);
	KvRecordWriter::Ticket t;
	ASSERT_EQ(w.invoke(0, KvOp::put(kKey, kValA), &t), 0);
	KvOp absent = KvOp::put_ok(kKey, kValA);
	absent.status = KvOp::Status::kAbsent;
	ASSERT_EQ(w.complete(t, absent), 0);
	ASSERT_EQ(w.close(), 0);
	lincheck::KvHistory h;
	std::string why;
	EXPECT_EQ(lincheck::read_history({path}, &h, &why), -EBADMSG);
	EXPECT_NE(why.find("record 0: status 3 impossible for kind 2"), std::string::npos) << why;
}

// ---- random histories ----

// A random sequential run of @ops ops on @keys keys, computed on a std::map
// (strict deletes); values come from a small range so reads often could
// have come from another write.
std::vector<KvOp> RandomRun(std::mt19937_64 &rng, size_t ops, uint64_t keys)
{
	std::map<uint64_t, uint64_t> m;
	std::vector<KvOp> run;
	for (size_t k = 0; k < ops; k++) {
		uint64_t key = rng() % keys, val = 1 + rng() % 4;
		auto it = m.find(key);
		bool present = it != m.end();
		switch (rng() % 5) {
		case 0:
			run.push_back(present ? KvOp::insert_exists(key, val) : KvOp::insert_ok(key, val));
			if (!present)
				m[key] = val;
			break;
		case 1:
			run.push_back(present ? KvOp::update_ok(key, val) : KvOp::update_absent(key, val));
			if (present)
				it->second = val;
			break;
		case 2:
			run.push_back(KvOp::put_ok(key, val));
			m[key] = val;
			break;
		case 3:
			run.push_back(present ? KvOp::get_found(key, it->second) : KvOp::get_absent(key));
			break;
		default:
			run.push_back(present ? KvOp::del_ok(key) : KvOp::del_absent(key));
			if (present)
				m.erase(it);
		}
	}
	return run;
}

// Corrupt -- give returned @op another output its kind can return (put has
// none: it becomes a get of a value).
void Corrupt(std::mt19937_64 &rng, KvOp *op)
{
	using Status = KvOp::Status;
	switch (op->kind) {
	case KvOp::Kind::kInsert:
		op->status = op->status == Status::kOk ? Status::kExists : Status::kOk;
		break;
	case KvOp::Kind::kUpdate:
	case KvOp::Kind::kDelete:
		op->status = op->status == Status::kOk ? Status::kAbsent : Status::kOk;
		break;
	case KvOp::Kind::kPut:
		*op = KvOp::get_found(op->key, op->value);
		break;
	case KvOp::Kind::kGet:
		if (op->status == Status::kFound && rng() % 2)
			*op = KvOp::get_absent(op->key);
		else
			*op = KvOp::get_found(op->key, op->found + 1 + rng() % 3);
		break;
	}
}

// Small overlapping histories, some ops pending, each then with one output
// corrupted: the search agrees with brute force.
TEST(Random, SmallOverlappingHistoriesAgreeWithBruteForce)
{
	std::mt19937_64 rng(71);
	KvModel model;
	int detected = 0;
	for (int iter = 0; iter < 300; iter++) {
		std::vector<KvOp> run = RandomRun(rng, 8, 2);
		History h;
		for (size_t k = 0; k < run.size(); k++)
			Spread(rng, &h, run[k], k, 2);
		ASSERT_TRUE(BruteForce(model, h)) << iter;
		ASSERT_TRUE(Ok(model, h)) << iter;
		KvOp &op = h[rng() % h.size()].op;
		op.returned = true;
		Corrupt(rng, &op);
		bool truth = BruteForce(model, h);
		ASSERT_EQ(Ok(model, h), truth) << iter;
		detected += !truth;
	}
	EXPECT_GT(detected, 100);
}

}  // namespace
