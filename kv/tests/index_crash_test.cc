// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/index_crash_test.cc -- the crash simulator (pm/crashsim.h) over
// every crash point of small single-client sequences on three local nodes:
// inserts that fill the root and split it, removes, and inserts again after
// removes (records and slots reused); and kv_index_create itself followed by
// inserts, on regions that were zero (nothing durable but what create
// persists). Every node crashes at once (the whole
// index memory is one crash image); at each image, what a client reading
// all three nodes would conclude must hold every completed operation, at
// most one slot per mapping, and nothing but the operation in flight may be
// undecided.
//
// The index regions are the client's own mappings of the pool files (the
// local backend shares one mapping per file in a process); the in-process
// nodes are closed before the run, so those are the only mappings.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kv/index.h>
#include <pm/crashsim.h>
#include <rdma/rdma.h>

#include "kv/src/index/testing.h"
#include "kv/tests/index_env.h"
#include "kv/tests/mapped_region.h"
#include "pm/tests/test_util.h"

namespace {

using kvtest::IndexConfig;
using kvtest::KeyStore;
using kvtest::LocalGroup;

constexpr uint64_t kRegion = 1u << 20;

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
};

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
	for (const Op &op : r->ops) {
		std::string k = Key(op.key);
		int ret = op.insert ? kv_index_insert(r->ix, k.data(), k.size(), op.loc, nullptr) :
			kv_index_remove(r->ix, k.data(), k.size(), op.loc);
		if (ret != 0)
			return ret;
		r->done++;
	}
	return 0;
}

int Check(void *arg, char *msg, size_t len)
{
	auto *r = static_cast<Run *>(arg);
	std::map<unsigned, uint64_t> model;
	std::map<std::pair<unsigned, uint64_t>, bool> seen; // every (key, loc) used
	for (size_t i = 0; i < r->ops.size(); i++) {
		const Op &op = r->ops[i];
		seen[{op.key, op.loc}] = true;
		if (i >= r->done)
			continue;
		if (op.insert)
			model[op.key] = op.loc;
		else
			model.erase(op.key);
	}
	const Op *flying = r->done < r->ops.size() ? &r->ops[r->done] : nullptr;
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
		bool in_flight = flying != nullptr && flying->key == key && flying->loc == loc;
		if (present > 1) {
			snprintf(msg, len, "%s -> %llu in %u slots", k.c_str(), (unsigned long long)loc, present);
			return 1;
		}
		if (mapped && present == 0 && !(in_flight && maybe > 0) && !in_flight) {
			snprintf(msg, len, "completed insert of %s -> %llu lost (after %zu ops)", k.c_str(),
				(unsigned long long)loc, r->done);
			return 1;
		}
		if (!mapped && present == 1 && !in_flight) {
			snprintf(msg, len, "%s -> %llu present, but %s (after %zu ops)", k.c_str(),
				(unsigned long long)loc, model.count(key) ? "remapped" : "removed", r->done);
			return 1;
		}
		if (maybe > 0 && !in_flight && flying == nullptr) {
			snprintf(msg, len, "%s undecided after every operation returned", k.c_str());
			return 1;
		}
	}
	return 0;
}

// @create: kv_index_create runs inside the crash run, on zeroed regions.
// @no_commit: the workload posts no commits (kv__ix_test_no_commit).
// @down: a member failed (rdma_local_fail) for the whole run, or -1.
void CrashSequence(const std::string &name, const std::vector<Op> &ops, bool create = false,
	bool no_commit = false, int down = -1)
{
	LocalGroup group(3, name, kRegion);
	KeyStore keys(group.Uris());
	IndexConfig cfg(group.Uris(), &keys, 1);
	kv_index *ix = nullptr;
	if (!create) {
		ASSERT_EQ(kv_index_create(&ix, &cfg.cfg), 0) << pm_errormsg();
	}
	for (const Op &op : ops)
		ASSERT_TRUE(keys.Put(op.loc, Key(op.key)));
	for (unsigned i = 0; i < 3; i++)
		group.Close(i);
	Run r;
	r.ix = ix;
	r.keys = &keys;
	r.ops = ops;
	r.no_commit = no_commit;
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
	std::vector<pmtest::Region> regions;
	for (void *region : r.regions)
		regions.push_back({ region, kRegion });
	pmtest::CrashRun cr = pmtest::RunCrashSim(pmtest::SimConfig(name.c_str(), 1, 4), regions,
		Workload, Check, &r);
	const pm_crashsim_stats &st = cr.st;
	EXPECT_EQ(cr.ret, 0) << cr.report << " " << pm_errormsg();
	EXPECT_EQ(r.done, ops.size());
	EXPECT_TRUE(r.created);
	EXPECT_EQ(st.points, st.events + 1) << "every crash point";
	EXPECT_GT(st.images, st.points);
	::testing::Test::RecordProperty("crash_points", std::to_string(st.points));
	printf("%s: %llu crash points, %llu images\n", name.c_str(), (unsigned long long)st.points,
		(unsigned long long)st.images);
	kv_index_close(&r.ix);
	for (rdma_conn *&c : conns)
		rdma_conn_close(&c);
	if (down >= 0) {
		EXPECT_EQ(rdma_local_fail(group.Path(down).c_str(), 0), 0);
	}
}

// Inserts that fill the root and split it, then removes and re-inserts.
TEST(IndexCrash, InsertSplitRemoveReinsert)
{
	std::vector<Op> ops;
	uint64_t next = 0;
	for (unsigned k = 0; k < 18; k++)
		ops.push_back({ true, k, KeyStore::Loc(1, next++) });
	for (unsigned k = 0; k < 18; k += 5)
		ops.push_back({ false, k, ops[k].loc });
	for (unsigned k = 0; k < 18; k += 5)
		ops.push_back({ true, k, KeyStore::Loc(1, next++) });
	CrashSequence("ix-split", ops);
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

} // namespace
