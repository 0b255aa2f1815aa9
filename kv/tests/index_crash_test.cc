// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/index_crash_test.cc -- the crash simulator (pm/crashsim.h) over
// every crash point of small single-client sequences on three local nodes:
// inserts that fill the root and split it, removes, and inserts again after
// removes (records and slots reused); a lookup by a second handle between
// an insert's CASes and their persists; and kv_index_create itself followed by
// inserts, on regions that were zero (nothing durable but what create
// persists); and a second life (a new handle with the crashed client's
// id) that continues on sampled images and is crashed in turn. Every node
// crashes at once (the whole
// index memory is one crash image); at each image, what a client reading
// all three nodes would conclude must hold every completed operation, at
// most one slot per mapping, and nothing but the operation in flight may be
// undecided.
//
// The index regions are the client's own mappings of the pool files (the
// local backend shares one mapping per file in a process); the in-process
// nodes are closed before the run, so those are the only mappings.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kv/index.h>
#include <pm/crashsim.h>
#include <rdma/rdma.h>

extern "C" { // the private header has no C++ guard
#include "kv/src/index/layout.h"
}
#include "kv/src/index/testing.h"
#include "kv/tests/index_env.h"
#include "kv/tests/mapped_region.h"
#include "pm/tests/test_util.h"

namespace {

using kvtest::IndexConfig;
using kvtest::KeyStore;
using kvtest::LocalGroup;

constexpr uint64_t kRegion = 1u << 20;

// The simulator's view of the nodes' index regions.
std::vector<pmtest::Region> Tracked(const std::vector<void *> &regions)
{
	std::vector<pmtest::Region> tracked;
	for (void *region : regions)
		tracked.push_back({ region, kRegion });
	return tracked;
}

struct Op {
	bool insert;
	unsigned key;
	uint64_t loc;
};

std::string Key(unsigned k)
{
	return "crash-" + std::to_string(k);
}

struct Run {
	std::vector<void *> regions;
	kv_index *ix = nullptr;
	KeyStore *keys = nullptr;
	std::vector<Op> ops;
	size_t done = 0; // operations that returned (read by the checks)
	const kv_index_config *create = nullptr; // the workload creates the index first
	bool created = true; // kv_index_create returned (read by the checks)
	bool no_commit = false; // kv__ix_test_no_commit for the workload's handle
	// A second life (CrashContinueCrashAgain): at one image in
	// life2_one_in, a handle with the crashed client's id opens on the
	// image (cfg) and runs ops2, crashed in turn at one point in
	// life2_one_in; life2 is set once it opened, done2 counts its returns.
	const kv_index_config *cfg = nullptr;
	std::vector<Op> ops2;
	unsigned life2_one_in = 1;
	bool life2 = false;
	size_t done2 = 0;
	std::string err2; // why the second life itself failed
};

// Runs @ops through @ix, counting the returned ones in *@done.
int RunOps(kv_index *ix, const std::vector<Op> &ops, size_t *done)
{
	for (const Op &op : ops) {
		std::string k = Key(op.key);
		int ret = op.insert ? kv_index_insert(ix, k.data(), k.size(), op.loc, nullptr) :
			kv_index_remove(ix, k.data(), k.size(), op.loc);
		if (ret != 0)
			return ret;
		(*done)++;
	}
	return 0;
}

int Workload(void *arg)
{
	auto *r = static_cast<Run *>(arg);
	if (r->create != nullptr) {
		int ret = kv_index_create(&r->ix, r->create);
		if (ret != 0)
			return ret;
		r->created = true;
	}
	kv__ix_test_no_commit(r->ix, r->no_commit);
	return RunOps(r->ix, r->ops, &r->done);
}

// What an offline reader of every node of @r must find after the first
// @done of @ops returned: every mapping they left, nothing they removed or
// replaced, at most one slot per mapping, and only the ops of @flying
// (those in flight at a crash) possibly taken effect or undecided.
int CheckImage(Run *r, const std::vector<Op> &ops, size_t done,
	const std::vector<const Op *> &flying, char *msg, size_t len)
{
	std::map<unsigned, uint64_t> model;
	std::map<std::pair<unsigned, uint64_t>, bool> seen; // every (key, loc) used
	for (size_t i = 0; i < ops.size(); i++) {
		const Op &op = ops[i];
		seen[{op.key, op.loc}] = true;
		if (i >= done)
			continue;
		if (op.insert)
			model[op.key] = op.loc;
		else
			model.erase(op.key);
	}
	for (const auto &[kl, unused] : seen) {
		(void)unused;
		auto [key, loc] = kl;
		std::string k = Key(key);
		unsigned present = 0, maybe = 0;
		int ret = kv__ix_test_offline(r->regions.data(), 3, k.data(), k.size(), loc, &present,
			&maybe);
		// Before create returned there may be no index yet; whatever
		// there is must not map a key no insert has started on.
		if (ret != 0 && !r->created)
			return 0;
		if (ret != 0) {
			snprintf(msg, len, "offline read failed%s: %d",
				r->create != nullptr ? " after kv_index_create returned" : "", ret);
			return 1;
		}
		bool mapped = model.count(key) != 0 && model[key] == loc;
		bool in_flight = false;
		for (const Op *f : flying)
			in_flight |= f->key == key && f->loc == loc;
		if (present > 1) {
			snprintf(msg, len, "%s -> %llu in %u slots", k.c_str(), (unsigned long long)loc, present);
			return 1;
		}
		if (mapped && present == 0 && !in_flight) {
			snprintf(msg, len, "completed insert of %s -> %llu lost (after %zu ops)", k.c_str(),
				(unsigned long long)loc, done);
			return 1;
		}
		if (!mapped && present == 1 && !in_flight) {
			snprintf(msg, len, "%s -> %llu present, but %s (after %zu ops)", k.c_str(),
				(unsigned long long)loc, model.count(key) ? "remapped" : "removed", done);
			return 1;
		}
		if (maybe > 0 && !in_flight && flying.empty()) {
			snprintf(msg, len, "%s undecided after every operation returned", k.c_str());
			return 1;
		}
	}
	return 0;
}

// The second life: a new handle with the crashed client's id opens on
// the image and runs ops2 without closing (it is crashed in turn).
int SecondLife(void *arg)
{
	auto *r = static_cast<Run *>(arg);
	kv_index *ix = nullptr;
	int ret = kv_index_open(&ix, r->cfg);
	if (ret != 0) {
		r->err2 = std::string("kv_index_open: ") + pm_strerror(ret) + " (" + pm_errormsg() + ")";
		return ret;
	}
	r->life2 = true;
	ret = RunOps(ix, r->ops2, &r->done2);
	if (ret != 0)
		r->err2 = "op " + std::to_string(r->done2) + " of the second life: " +
			pm_strerror(ret) + " (" + pm_errormsg() + ")";
	return ret;
}

// An image of the second life: the first life's completed ops, then the
// second's; the op each life had in flight may or may not have taken
// effect (the second life need not meet the first's abandoned one), and
// those neither life started must not have.
int CheckSecondLife(void *arg, char *msg, size_t len)
{
	auto *r = static_cast<Run *>(arg);
	size_t done2 = r->life2 ? r->done2 : 0;
	std::vector<Op> ops(r->ops.begin(), r->ops.begin() + long(r->done));
	ops.insert(ops.end(), r->ops2.begin(), r->ops2.begin() + long(done2));
	size_t done = ops.size();
	std::vector<const Op *> flying;
	if (r->done < r->ops.size())
		flying.push_back(&r->ops[r->done]);
	if (r->life2 && done2 < r->ops2.size())
		flying.push_back(&r->ops2[done2]);
	ops.insert(ops.end(), r->ops.begin() + long(r->done), r->ops.end());
	ops.insert(ops.end(), r->ops2.begin() + long(done2), r->ops2.end());
	return CheckImage(r, ops, done, flying, msg, len);
}

int Check(void *arg, char *msg, size_t len)
{
	auto *r = static_cast<Run *>(arg);
	std::vector<const Op *> flying;
	if (r->done < r->ops.size())
		flying.push_back(&r->ops[r->done]);
	int bad = CheckImage(r, r->ops, r->done, flying, msg, len);
	if (bad != 0 || r->ops2.empty())
		return bad;
	pmtest::CrashRun cr = pmtest::RunCrashSim(pmtest::SimConfig("ix-second-life",
		r->life2_one_in, 2), Tracked(r->regions), SecondLife, CheckSecondLife, r);
	if (cr.ret != 0)
		snprintf(msg, len, "second crash (first life after %zu ops): %s %s", r->done,
			r->err2.c_str(), cr.report.c_str());
	return cr.ret != 0;
}

// Runs @run(@arg) under the simulator over @regions (index regions), checking
// every crash point (or one in @one_in) with @check, at most @max_images
// images each: expects every point checked and passed, prints the counts.
pm_crashsim_stats RunEveryPoint(const char *name, const std::vector<void *> &regions,
	pm_crashsim_run_fn run, pm_crashsim_check_fn check, void *arg, unsigned one_in = 1,
	unsigned max_images = 4)
{
	pmtest::CrashRun cr = pmtest::RunCrashSim(pmtest::SimConfig(name, one_in, max_images),
		Tracked(regions), run, check, arg);
	EXPECT_EQ(cr.ret, 0) << cr.report << " " << pm_errormsg();
	if (one_in == 1) {
		EXPECT_EQ(cr.st.points, cr.st.events + 1) << "every crash point";
	}
	printf("%s: %llu crash points, %llu images\n", name, (unsigned long long)cr.st.points,
		(unsigned long long)cr.st.images);
	return cr.st;
}

// @create: kv_index_create runs inside the crash run, on zeroed regions.
// @no_commit: the workload posts no commits (kv__ix_test_no_commit).
// @down: a member failed (rdma_local_fail) for the whole run, or -1.
// @ops2: a second life at one image and point in @one_in (Run::ops2).
void CrashSequence(const std::string &name, const std::vector<Op> &ops, bool create = false,
	bool no_commit = false, int down = -1, const std::vector<Op> &ops2 = {},
	unsigned one_in = 1)
{
	LocalGroup group(3, name, kRegion);
	KeyStore keys(group.Uris());
	IndexConfig cfg(group.Uris(), &keys, 1);
	// The checks run at every crash point inside the operations (a split
	// with a member down has hundreds): its deadline must outlast them.
	cfg.cfg.timeout_ms = 3600u * 1000u;
	kv_index *ix = nullptr;
	if (!create) {
		ASSERT_EQ(kv_index_create(&ix, &cfg.cfg), 0) << pm_errormsg();
	}
	for (const Op &op : ops)
		ASSERT_TRUE(keys.Put(op.loc, Key(op.key)));
	for (const Op &op : ops2)
		ASSERT_TRUE(keys.Put(op.loc, Key(op.key)));
	for (unsigned i = 0; i < 3; i++)
		group.Close(i);
	Run r;
	r.ix = ix;
	r.keys = &keys;
	r.ops = ops;
	r.no_commit = no_commit;
	r.cfg = &cfg.cfg;
	r.ops2 = ops2;
	r.life2_one_in = one_in;
	std::vector<rdma_conn *> conns;
	if (create) {
		r.create = &cfg.cfg;
		r.created = false;
		std::vector<std::string> paths = { group.Path(0), group.Path(1), group.Path(2) };
		std::string why;
		ASSERT_TRUE(kvtest::EmptyRegions(group.Uris(), paths, 1, &r.regions, &conns, &why))
			<< why;
	} else {
		for (unsigned i = 0; i < 3; i++) {
			// The index region starts with the index superblock's magic.
			r.regions.push_back(kvtest::MappedRegion(group.Path(i), "DMKVIDX1"));
			ASSERT_NE(r.regions.back(), nullptr) << group.Path(i);
		}
	}

	// The failed member's region stays in the image as the failure left
	// it: the checks read all three, as a client would once it is back.
	if (down >= 0) {
		ASSERT_EQ(rdma_local_fail(group.Path(down).c_str(), 1), 0);
	}
	pm_crashsim_stats st = RunEveryPoint(name.c_str(), r.regions, Workload, Check, &r,
		one_in, ops2.empty() ? 4 : 2);
	EXPECT_EQ(r.done, ops.size());
	EXPECT_TRUE(r.created);
	EXPECT_GT(st.images, st.points);
	::testing::Test::RecordProperty("crash_points", std::to_string(st.points));
	kv_index_close(&r.ix);
	for (rdma_conn *&c : conns)
		rdma_conn_close(&c);
	if (down >= 0) {
		EXPECT_EQ(rdma_local_fail(group.Path(down).c_str(), 0), 0);
	}
}

// Inserts that fill the root and split it, then removes and re-inserts.
std::vector<Op> SplitOps()
{
	std::vector<Op> ops;
	uint64_t next = 0;
	for (unsigned k = 0; k < 18; k++)
		ops.push_back({ true, k, KeyStore::Loc(1, next++) });
	for (unsigned k = 0; k < 18; k += 5)
		ops.push_back({ false, k, ops[k].loc });
	for (unsigned k = 0; k < 18; k += 5)
		ops.push_back({ true, k, KeyStore::Loc(1, next++) });
	return ops;
}

TEST(IndexCrash, InsertSplitRemoveReinsert)
{
	CrashSequence("ix-split", SplitOps());
}

// The same with member 2 failed: the split's freeze decides the committed
// slots by classic rounds carried together (kv__ix_freeze_classic), and
// every returned operation rests on the records and P words of members 0
// and 1.
TEST(IndexCrash, InsertSplitOneMemberDown)
{
	CrashSequence("ix-split-down", SplitOps(), false, false, 2);
}

// Crash, continue, crash again: at one image in five a handle with the
// crashed client's id opens on it, inserts and removes keys of its own in
// the same bucket (it meets the first life's abandoned operation and
// finishes or undoes it) and is crashed in turn at one point in five:
// both lives' completed operations must hold. (With a member down and
// the smallest record range, the second life's classic rounds would
// overwrite the records of the first life's abandoned P words at once:
// kv/DESIGN.md, "Open risks".)
TEST(IndexCrash, CrashContinueCrashAgain)
{
	std::vector<Op> ops, ops2;
	for (unsigned k = 0; k < 4; k++)
		ops.push_back({ true, k, KeyStore::Loc(1, k) });
	ops.push_back({ false, 1, ops[1].loc });
	ops.push_back({ true, 1, KeyStore::Loc(1, 4) });
	for (unsigned k = 0; k < 3; k++)
		ops2.push_back({ true, 100 + k, KeyStore::Loc(2, k) });
	ops2.push_back({ false, 101, ops2[1].loc });
	ops2.push_back({ true, 101, KeyStore::Loc(2, 3) });
	CrashSequence("ix-again", ops, false, false, -1, ops2, 5);
}

// The root filled, five of its keys removed, then inserts that find it
// full: it is compacted in place (its removed entries' slots emptied in its
// next incarnation, kv/DESIGN.md "Compaction"), and the new keys, a remove
// and a re-insert land in the freed slots. At every crash point, also
// between the install's words and its header on some members.
TEST(IndexCrash, CompactRemovedThenInsert)
{
	std::vector<Op> ops;
	uint64_t next = 0;
	for (unsigned k = 0; k < 14; k++)
		ops.push_back({ true, k, KeyStore::Loc(1, next++) });
	for (unsigned k = 0; k < 14; k += 3)
		ops.push_back({ false, k, ops[k].loc });
	for (unsigned k = 20; k < 23; k++)
		ops.push_back({ true, k, KeyStore::Loc(1, next++) });
	ops.push_back({ false, 20, ops[ops.size() - 3].loc });
	ops.push_back({ true, 3, KeyStore::Loc(1, next++) });
	CrashSequence("ix-compact", ops);
}

// kv_index_create on zeroed regions, then a few inserts: once create has
// returned, the superblocks and the root it wrote are durable on every
// image (nothing of them was durable before the run).
TEST(IndexCrash, CreateThenInsert)
{
	std::vector<Op> ops;
	for (unsigned k = 0; k < 3; k++)
		ops.push_back({ true, k, KeyStore::Loc(1, k) });
	CrashSequence("ix-create", ops, true);
}

// Operations whose commits never land (kv__ix_test_no_commit), as over
// RDMA when the crash comes before them: inserts, a remove and a
// re-insert of the same key, all in the root. Each returned operation must
// be durable by its own rounds: the fast round's persisted F words on
// every member (slot.c, kv__ix_fast), and where a stage found F words
// instead of a committed word, the classic rounds' records and P words
// (ix_batch_publish). kv/MUTATION.md, slot.c:373, :428, :430.
TEST(IndexCrash, CommitsLost)
{
	std::vector<Op> ops;
	for (unsigned k = 0; k < 4; k++)
		ops.push_back({ true, k, KeyStore::Loc(1, k) });
	ops.push_back({ false, 1, ops[1].loc });
	ops.push_back({ true, 1, KeyStore::Loc(1, 4) });
	CrashSequence("ix-nocommit", ops, false, true);
}

// As CommitsLost with member 2 failed: the fast round needs every member,
// so each stage is decided by classic rounds on members 0 and 1, and a
// returned operation rests on their persisted records and P words alone
// (ix_batch_publish; kv/MUTATION.md, slot.c:428, :430).
TEST(IndexCrash, CommitsLostOneMemberDown)
{
	std::vector<Op> ops;
	for (unsigned k = 0; k < 3; k++)
		ops.push_back({ true, k, KeyStore::Loc(1, k) });
	ops.push_back({ false, 1, ops[1].loc });
	CrashSequence("ix-nocommit-down", ops, false, true, 2);
}

// kv_index_scrub after the root split while member 2 was down: at every
// image all three members map every key (a repair changes no mapping), and
// once scrub returned, what it repaired is durable, so members 1 and 2
// alone (member 0 blank) map every key too (kv/MUTATION.md, repair.c:114).
struct ScrubRun {
	std::vector<void *> regions;
	kv_index *ix = nullptr;
	std::vector<Op> ops; // the inserts before the run
	bool scrubbed = false;
};

int ScrubWorkload(void *arg)
{
	auto *r = static_cast<ScrubRun *>(arg);
	int ret = kv_index_scrub(r->ix);
	if (ret == 0)
		r->scrubbed = true;
	return ret;
}

// Whether every key of @r maps to its location in exactly one slot of the
// index at @regions; 1 with the reason in @msg if not.
int ScrubMapsAll(const ScrubRun *r, void *const *regions, const char *who, char *msg,
	size_t len)
{
	for (const Op &op : r->ops) {
		std::string k = Key(op.key);
		unsigned present = 0, maybe = 0;
		int ret = kv__ix_test_offline(regions, 3, k.data(), k.size(), op.loc, &present, &maybe);
		if (ret != 0 || present != 1) {
			snprintf(msg, len, "%s map %s -> %llu in %u slots (%u undecided; offline read "
				"%d)", who, k.c_str(), (unsigned long long)op.loc, present, maybe, ret);
			return 1;
		}
	}
	return 0;
}

int ScrubCheck(void *arg, char *msg, size_t len)
{
	auto *r = static_cast<ScrubRun *>(arg);
	if (ScrubMapsAll(r, r->regions.data(), "all three members", msg, len) != 0)
		return 1;
	if (!r->scrubbed)
		return 0;
	std::vector<unsigned char> blank(kRegion);
	kv__ix_test_format_blank(blank.data(), r->regions[1], 0);
	void *regions[3] = { blank.data(), r->regions[1], r->regions[2] };
	return ScrubMapsAll(r, regions, "after scrub returned, members 1 and 2 alone", msg, len);
}

TEST(IndexCrash, ScrubAfterMissedSplit)
{
	LocalGroup group(3, "ix-scrub", kRegion);
	KeyStore keys(group.Uris());
	IndexConfig cfg(group.Uris(), &keys, 1);
	ScrubRun r;
	ASSERT_EQ(kv_index_create(&r.ix, &cfg.cfg), 0) << pm_errormsg();
	for (unsigned k = 0; k < 18; k++)
		r.ops.push_back({ true, k, KeyStore::Loc(1, k) });
	for (const Op &op : r.ops)
		ASSERT_TRUE(keys.Put(op.loc, Key(op.key)));
	// The root fills and splits while member 2 is down: the children
	// and the root's new words are on members 0 and 1 only.
	ASSERT_EQ(rdma_local_fail(group.Path(2).c_str(), 1), 0);
	for (const Op &op : r.ops) {
		std::string k = Key(op.key);
		ASSERT_EQ(kv_index_insert(r.ix, k.data(), k.size(), op.loc, nullptr), 0)
			<< pm_errormsg();
	}
	ASSERT_EQ(rdma_local_fail(group.Path(2).c_str(), 0), 0);
	// A new handle: member 2 connected, and no catch-up walk has run. Its
	// deadlines run on the wall clock while crash points are checked.
	cfg.cfg.timeout_ms = 3600u * 1000u;
	ASSERT_EQ(kv_index_close(&r.ix), 0);
	ASSERT_EQ(kv_index_open(&r.ix, &cfg.cfg), 0) << pm_errormsg();
	for (unsigned i = 0; i < 3; i++)
		group.Close(i);
	for (unsigned i = 0; i < 3; i++) {
		r.regions.push_back(kvtest::MappedRegion(group.Path(i), "DMKVIDX1"));
		ASSERT_NE(r.regions.back(), nullptr) << group.Path(i);
	}
	// Before the scrub, members 1 and 2 alone lose mappings: the check
	// can fail.
	r.scrubbed = true;
	char msg[256];
	EXPECT_EQ(ScrubCheck(&r, msg, sizeof(msg)), 1) << "member 2 missed nothing";
	r.scrubbed = false;

	RunEveryPoint("ix-scrub", r.regions, ScrubWorkload, ScrubCheck, &r);
	EXPECT_TRUE(r.scrubbed);
	kv_index_close(&r.ix);
}

// A lookup that runs between an insert's CASes and their persists, as it
// may over RDMA, where a batch is not atomic: the writer's connections
// split every batch before its last persist (RDMA_FAULT_SPLIT), and in
// the writer's wait (its yield hook) a second handle looks the key up.
// The reader's commits never land (kv__ix_test_no_commit), as over RDMA
// when the crash comes before its background batch. Once that lookup has
// returned the location, every crash image must map the key to it, the
// insert in flight or not: the lookup counted the F words, so it must have
// persisted them (rule iv, slot.c `view_read`; kv/MUTATION.md, slot.c:153,
// class B: no single-client test can see a word that is visible and not
// yet durable). Without that persist: crash point 0, "crash-7 -> 8192 in 0
// slots after a lookup returned it".
struct InterleaveRun {
	std::vector<void *> regions;
	kv_index *writer = nullptr, *reader = nullptr;
	unsigned key = 7;
	uint64_t loc = 0;
	bool inserted = false; // the writer's insert returned
	bool seen = false;     // the reader's lookup returned loc
	unsigned lookups = 0;  // the reader's lookups
};

void InterleaveYield(void *arg)
{
	auto *r = static_cast<InterleaveRun *>(arg);
	if (r->reader == nullptr || r->seen)
		return;
	std::string k = Key(r->key);
	uint64_t got = 0;
	r->lookups++;
	if (kv_index_lookup(r->reader, k.data(), k.size(), &got) == 0 && got == r->loc)
		r->seen = true;
}

int InterleaveWorkload(void *arg)
{
	auto *r = static_cast<InterleaveRun *>(arg);
	std::string k = Key(r->key);
	int ret = kv_index_insert(r->writer, k.data(), k.size(), r->loc, nullptr);
	if (ret == 0)
		r->inserted = true;
	return ret;
}

int InterleaveCheck(void *arg, char *msg, size_t len)
{
	auto *r = static_cast<InterleaveRun *>(arg);
	std::string k = Key(r->key);
	unsigned present = 0, maybe = 0;
	int ret = kv__ix_test_offline(r->regions.data(), 3, k.data(), k.size(), r->loc, &present,
		&maybe);
	if (ret != 0) {
		snprintf(msg, len, "offline read failed: %d", ret);
		return 1;
	}
	if ((r->seen || r->inserted) && present != 1) {
		snprintf(msg, len, "%s -> %llu in %u slots (%u undecided) after %s returned it",
			k.c_str(), (unsigned long long)r->loc, present, maybe,
			r->inserted ? "the insert" : "a lookup");
		return 1;
	}
	return present > 1;
}

TEST(IndexCrash, LookupBetweenCasAndPersist)
{
	LocalGroup group(3, "ix-interleave", kRegion);
	KeyStore keys(group.Uris());
	InterleaveRun r;
	IndexConfig wcfg(group.Uris(), &keys, 1), rcfg(group.Uris(), &keys, 2);
	wcfg.cfg.yield = InterleaveYield;
	wcfg.cfg.yield_arg = &r;
	// Deadlines run on the wall clock while crash points are checked.
	wcfg.cfg.timeout_ms = rcfg.cfg.timeout_ms = 3600u * 1000u;
	r.loc = KeyStore::Loc(1, 0);
	ASSERT_TRUE(keys.Put(r.loc, Key(r.key)));
	ASSERT_EQ(kv_index_create(&r.writer, &wcfg.cfg), 0) << pm_errormsg();
	ASSERT_EQ(kv_index_open(&r.reader, &rcfg.cfg), 0) << pm_errormsg();
	// The reader's commits never land, as over RDMA when the crash
	// comes before its background batch: its answer rests on its read.
	kv__ix_test_no_commit(r.reader, true);
	for (unsigned i = 0; i < 3; i++)
		group.Close(i);
	for (unsigned i = 0; i < 3; i++) {
		r.regions.push_back(kvtest::MappedRegion(group.Path(i), "DMKVIDX1"));
		ASSERT_NE(r.regions.back(), nullptr) << group.Path(i);
		ASSERT_EQ(kv__ix_test_inject(r.writer, i, RDMA_FAULT_SPLIT, 0), 0);
	}
	RunEveryPoint("ix-interleave", r.regions, InterleaveWorkload, InterleaveCheck, &r);
	EXPECT_TRUE(r.inserted);
	EXPECT_TRUE(r.seen) << "the reader never ran between the CASes and their persists ("
			    << r.lookups << " lookups)";
	kv_index_close(&r.reader);
	kv_index_close(&r.writer);
}

// kv_index_rebuild of node 2 after its region was lost (zeroed): the
// rebuilt node's superblock, written last in the same ordered batch as
// the record marks it copies, is what makes clients count the node. Once
// the superblock is durable the marks must be too, at least the highest
// any other member holds, or a restarted client that reads the rebuilt
// node and one other could reuse records live P words name (repair.c:287);
// once rebuild returned, the superblock must be durable (repair.c:292).
struct RebuildRun {
	std::vector<void *> regions;
	const kv_index_config *cfg = nullptr;
	bool rebuilt = false;
};

int RebuildWorkload(void *arg)
{
	auto *r = static_cast<RebuildRun *>(arg);
	int ret = kv_index_rebuild(r->cfg, 2);
	if (ret == 0)
		r->rebuilt = true;
	return ret;
}

int RebuildCheck(void *arg, char *msg, size_t len)
{
	auto *r = static_cast<RebuildRun *>(arg);
	auto *sb = static_cast<const kv_ix_super *>(r->regions[2]);
	// What makes clients count the node (a torn superblock does not).
	bool valid = kv__ix_super_check(sb, kRegion, 3, 2) == 0;
	if (!valid) {
		if (r->rebuilt)
			snprintf(msg, len, "rebuild returned, but node 2's superblock is not durable");
		return r->rebuilt;
	}
	for (uint32_t id = 0; id < sb->max_clients; id++) {
		uint64_t mine, most = 0;
		for (unsigned i = 0; i < 3; i++) {
			auto *s = static_cast<const kv_ix_super *>(r->regions[i]);
			uint64_t m;
			memcpy(&m, static_cast<const char *>(r->regions[i]) + s->mark_off + 8 * id, 8);
			if (i == 2)
				mine = m;
			else if (m > most)
				most = m;
		}
		if (mine < most) {
			snprintf(msg, len, "node 2 counts (valid superblock) with client %u's record "
				"mark at %llu, below %llu on another member", id,
				(unsigned long long)mine, (unsigned long long)most);
			return 1;
		}
	}
	return 0;
}

TEST(IndexCrash, Rebuild)
{
	LocalGroup group(3, "ix-rebuild", kRegion);
	KeyStore keys(group.Uris());
	// The inserts' client: the highest id, whose record mark is not on the
	// superblock's cache lines (their persist would make it durable too),
	// and not the rebuild's own id (it raises its own mark as it works).
	constexpr unsigned kClient = 15;
	IndexConfig cfg(group.Uris(), &keys, kClient);
	IndexConfig rebuild_cfg(group.Uris(), &keys, 1);
	kv_index *ix = nullptr;
	ASSERT_EQ(kv_index_create(&ix, &cfg.cfg), 0) << pm_errormsg();
	for (unsigned k = 0; k < 6; k++) {
		std::string key = Key(k);
		ASSERT_TRUE(keys.Put(KeyStore::Loc(kClient, k), key));
		ASSERT_EQ(kv_index_insert(ix, key.data(), key.size(), KeyStore::Loc(kClient, k),
			nullptr), 0) << pm_errormsg();
	}
	ASSERT_EQ(kv_index_close(&ix), 0);
	for (unsigned i = 0; i < 3; i++)
		group.Close(i);
	RebuildRun r;
	for (unsigned i = 0; i < 3; i++) {
		r.regions.push_back(kvtest::MappedRegion(group.Path(i), "DMKVIDX1"));
		ASSERT_NE(r.regions.back(), nullptr) << group.Path(i);
	}
	auto *sb = static_cast<const kv_ix_super *>(r.regions[0]);
	ASSERT_EQ(kClient + 1, sb->max_clients);
	ASSERT_GE(sb->mark_off + 8 * kClient, (sizeof(*sb) + 63) / 64 * 64);
	uint64_t mark;
	memcpy(&mark, static_cast<const char *>(r.regions[0]) + sb->mark_off + 8 * kClient, 8);
	ASSERT_GT(mark, 0u) << "the client's inserts raised no record mark";
	memset(r.regions[2], 0, kRegion); // node 2's pool was lost
	// The rebuild first sleeps one timeout (rounds in flight end), and
	// each bucket's deadline runs on the wall clock while its crash points
	// are checked: long enough for those, short enough to sleep.
	rebuild_cfg.cfg.timeout_ms = 5000;
	r.cfg = &rebuild_cfg.cfg;

	RunEveryPoint("ix-rebuild", r.regions, RebuildWorkload, RebuildCheck, &r);
	EXPECT_TRUE(r.rebuilt);
}

} // namespace
