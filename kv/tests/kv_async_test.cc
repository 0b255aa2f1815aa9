// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_async_test.cc -- the asynchronous API of kv/kv.h: several
// operations in flight on one thread, over local nodes and over ofi+tcp
// (in-process nodes served on loopback), checked against a synchronous
// client. Not under TSan: the lanes switch stacks with swapcontext, which
// TSan does not follow.
#include <algorithm>
#include <cerrno>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kv/kv.h>

#include "kv/tests/node_group.h"
#include "kv/tools/dmkv/pump.h"

namespace {

class KvAsyncTest : public ::testing::TestWithParam<bool> {
protected:
	KvAsyncTest() : group_(3, GetParam() ? "kvatcp" : "kvaloc", kvtest::kIndexRegion, 64u << 20) {}

	void SetUp() override
	{
		if (GetParam()) {
			ASSERT_EQ(group_.ServeTcp(), 0);
		}
		uris_ = GetParam() ? group_.TcpUris() : group_.Uris();
		for (const auto &u : uris_)
			ptrs_.push_back(u.c_str());
		kv_config_init(&cfg_);
		cfg_.nodes = ptrs_.data();
		cfg_.nnodes = 3;
		cfg_.max_clients = 12;
		cfg_.log_bytes = 2u << 20;
		cfg_.timeout_ms = 10000;
		ASSERT_EQ(kv_create(&cfg_), 0) << pm_errormsg();
		ASSERT_EQ(kv_open(&sync_, &cfg_), 0) << pm_errormsg();
	}
	void TearDown() override { kv_close(&sync_); }

	std::string Get(const std::string &k)
	{
		std::string v(4096, '\0');
		size_t len = 0;
		int ret = kv_get(sync_, k.data(), k.size(), v.data(), v.size(), &len);
		if (ret != 0)
			return "<" + std::to_string(ret) + ">";
		v.resize(len);
		return v;
	}

	kvtest::LocalGroup group_;
	std::vector<std::string> uris_;
	std::vector<const char *> ptrs_;
	kv_config cfg_;
	kv_client *sync_ = nullptr;
};

// Keep four operations in flight over 40 keys (puts, then gets, updates,
// deletes and inserts); every result is the one the synchronous API gives.
TEST_P(KvAsyncTest, ManyOperationsInFlightGiveTheSynchronousResults)
{
	constexpr unsigned kDepth = 4, kKeys = 40;
	kv_async *a = nullptr;
	ASSERT_EQ(kv_async_open(&a, &cfg_, kDepth), 0) << pm_errormsg();
	std::vector<std::string> keys, vals;
	for (unsigned i = 0; i < kKeys; i++) {
		keys.push_back("ak" + std::to_string(i));
		vals.push_back("av" + std::to_string(i) + std::string(i * 7, 'x'));
	}
	std::vector<kv_op> ops(kKeys);
	std::vector<std::string> bufs(kKeys, std::string(512, '\0'));
	auto run = [&](kv_op_kind kind, const std::vector<unsigned> &which) {
		size_t next = 0;
		unsigned inflight = 0, completed = 0;
		while (completed < which.size()) {
			while (next < which.size() && inflight < kDepth) {
				unsigned i = which[next++];
				ops[i] = kv_op{};
				ops[i].kind = kind;
				ops[i].key = keys[i].data();
				ops[i].klen = keys[i].size();
				ops[i].val = vals[i].data();
				ops[i].vlen = vals[i].size();
				ops[i].buf = bufs[i].data();
				ops[i].cap = bufs[i].size();
				ops[i].ret = 1;
				ASSERT_EQ(kv_async_submit(a, &ops[i]), 0);
				inflight++;
			}
			kv_op *done[kDepth];
			unsigned n = 0;
			ASSERT_EQ(kv_async_wait(a, done, kDepth, &n), 0);
			ASSERT_GT(n, 0u);
			inflight -= n;
			completed += n;
		}
	};
	std::vector<unsigned> all, even;
	for (unsigned i = 0; i < kKeys; i++) {
		all.push_back(i);
		if (i % 2 == 0)
			even.push_back(i);
	}
	run(KV_OP_PUT, all);
	for (unsigned i : all)
		ASSERT_EQ(ops[i].ret, 0) << keys[i] << " " << pm_errormsg();
	run(KV_OP_GET, all);
	for (unsigned i : all) {
		ASSERT_EQ(ops[i].ret, 0);
		EXPECT_EQ(std::string(bufs[i].data(), ops[i].len), vals[i]);
	}
	for (unsigned i : even)
		vals[i] = "updated" + std::to_string(i);
	run(KV_OP_UPDATE, even);
	run(KV_OP_DELETE, std::vector<unsigned>(all.begin() + 30, all.end()));
	for (unsigned i = 30; i < kKeys; i++)
		EXPECT_EQ(ops[i].ret, 0);
	run(KV_OP_INSERT, std::vector<unsigned>(all.begin() + 28, all.end()));
	EXPECT_EQ(ops[28].ret, KV_E_EXISTS);
	EXPECT_EQ(ops[29].ret, KV_E_EXISTS);
	for (unsigned i = 30; i < kKeys; i++)
		EXPECT_EQ(ops[i].ret, 0);
	for (unsigned i : all)
		EXPECT_EQ(Get(keys[i]), vals[i]);
	kv_stats st;
	kv_async_stats_read(a, &st);
	EXPECT_EQ(st.ops, 2u * kKeys + kKeys / 2 + 10u + 12u);
	EXPECT_EQ(kv_async_close(&a), 0);
}

TEST_P(KvAsyncTest, FullHandleAndBadOps)
{
	kv_async *a = nullptr;
	EXPECT_EQ(kv_async_open(&a, &cfg_, 0), -EINVAL);
	ASSERT_EQ(kv_async_open(&a, &cfg_, 2), 0);
	std::string k = "k", big(KV_VALUE_MAX + 1, 'b');
	kv_op ops[3] = {};
	ops[0].kind = KV_OP_PUT;
	ops[0].key = k.data();
	ops[0].klen = 0;  // empty key: rejected at once
	ops[1].kind = KV_OP_PUT;
	ops[1].key = k.data();
	ops[1].klen = k.size();
	ops[1].val = big.data();
	ops[1].vlen = big.size();
	ops[2] = ops[1];
	ASSERT_EQ(kv_async_submit(a, &ops[0]), 0);
	ASSERT_EQ(kv_async_submit(a, &ops[1]), 0);
	EXPECT_EQ(kv_async_submit(a, &ops[2]), -EBUSY) << "two of two in flight or unclaimed";
	kv_op *done[2];
	unsigned n = 0, got = 0;
	while (got < 2) {
		ASSERT_EQ(kv_async_wait(a, done, 2, &n), 0);
		got += n;
	}
	EXPECT_EQ(ops[0].ret, -EINVAL);
	EXPECT_EQ(ops[1].ret, -E2BIG);
	ASSERT_EQ(kv_async_wait(a, done, 2, &n), 0);
	EXPECT_EQ(n, 0u) << "nothing in flight";
	EXPECT_EQ(kv_async_close(&a), 0);
}

// kv_op_run runs an op as its synchronous call would, and rejects an
// unknown kind.
TEST_P(KvAsyncTest, OpRunIsTheSynchronousCall)
{
	std::string k = "run-k", v = "run-v", buf(64, '\0');
	kv_op op{};
	op.kind = KV_OP_INSERT;
	op.key = k.data();
	op.klen = k.size();
	op.val = v.data();
	op.vlen = v.size();
	EXPECT_EQ(kv_op_run(sync_, &op), 0) << pm_errormsg();
	EXPECT_EQ(kv_op_run(sync_, &op), KV_E_EXISTS);
	EXPECT_EQ(op.ret, KV_E_EXISTS);
	op.kind = KV_OP_GET;
	op.buf = buf.data();
	op.cap = buf.size();
	ASSERT_EQ(kv_op_run(sync_, &op), 0);
	EXPECT_EQ(std::string(buf.data(), op.len), v);
	op.kind = static_cast<kv_op_kind>(99);
	EXPECT_EQ(kv_op_run(sync_, &op), -EINVAL);
	EXPECT_EQ(op.ret, -EINVAL);
}

// The benchmark drivers' closed loop (kv/tools/dmkv/pump.h) over four
// lanes: each of 30 keys is put, then read back by the same lane as the
// put's second stage; every op completes once per stage, at most four are
// in flight, and the lanes are never idle while the feed has more.
TEST_P(KvAsyncTest, PumpKeepsTheLanesFullUntilTheFeedEnds)
{
	constexpr unsigned kDepth = 4, kKeys = 30;
	struct Lane {
		kv_op op{};
		std::string key, val, buf = std::string(64, '\0');
	};
	struct Feed {
		unsigned next = 0, puts = 0, gets = 0, wrong = 0, inflight = 0, max_inflight = 0;
		bool starved = false; // a lane asked while keys were left, and got none
	} feed;
	std::vector<Lane> lanes(kDepth);
	std::vector<kv_op *> ops;
	for (Lane &l : lanes) {
		l.op.user = &l;
		ops.push_back(&l.op);
	}
	auto next = [](void *ctx, kv_op *op) {
		auto *f = static_cast<Feed *>(ctx);
		auto *l = static_cast<Lane *>(op->user);
		if (f->next == kKeys)
			return false;
		l->key = "pump" + std::to_string(f->next);
		l->val = "value" + std::to_string(f->next++);
		*op = kv_op{};
		op->user = l;
		op->kind = KV_OP_PUT;
		op->key = l->key.data();
		op->klen = l->key.size();
		op->val = l->val.data();
		op->vlen = l->val.size();
		f->max_inflight = std::max(f->max_inflight, ++f->inflight);
		return true;
	};
	auto done = [](void *ctx, kv_op *op) {
		auto *f = static_cast<Feed *>(ctx);
		auto *l = static_cast<Lane *>(op->user);
		if (op->kind == KV_OP_PUT) {
			f->puts++;
			f->wrong += op->ret != 0;
			op->kind = KV_OP_GET; // the second stage, on the same lane
			op->buf = l->buf.data();
			op->cap = l->buf.size();
			return true;
		}
		f->gets++;
		f->wrong += op->ret != 0 || std::string(l->buf.data(), op->len) != l->val;
		f->inflight--;
		return false;
	};
	const dmkv_pump pump = { next, done, &feed };
	kv_async *a = nullptr;
	ASSERT_EQ(kv_async_open(&a, &cfg_, kDepth), 0) << pm_errormsg();
	EXPECT_EQ(dmkv_pump_run(a, ops.data(), kDepth, &pump), 0);
	EXPECT_EQ(feed.puts, kKeys);
	EXPECT_EQ(feed.gets, kKeys);
	EXPECT_EQ(feed.wrong, 0u);
	EXPECT_EQ(feed.inflight, 0u);
	EXPECT_EQ(feed.max_inflight, kDepth);
	for (unsigned i = 0; i < kKeys; i++)
		EXPECT_EQ(Get("pump" + std::to_string(i)), "value" + std::to_string(i));
	// More lanes than the handle runs at once: the ones it took complete.
	Feed more;
	std::vector<Lane> five(kDepth + 1);
	std::vector<kv_op *> ops5;
	for (Lane &l : five) {
		l.op.user = &l;
		ops5.push_back(&l.op);
	}
	const dmkv_pump pump5 = { next, done, &more };
	EXPECT_EQ(dmkv_pump_run(a, ops5.data(), kDepth + 1, &pump5), -EINVAL);
	EXPECT_EQ(more.inflight, 1u) << "the lane refused was filled, never run";
	EXPECT_EQ(more.gets, kDepth);
	EXPECT_EQ(dmkv_pump_run(a, ops.data(), 0, &pump), -EINVAL);
	EXPECT_EQ(kv_async_close(&a), 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, KvAsyncTest, ::testing::Values(false, true),
	[](const ::testing::TestParamInfo<bool> &p) { return p.param ? "OfiTcp" : "Local"; });

}  // namespace
