// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_fault_test.cc -- allocation failures (//pm:fault_alloc) under
// the store (kv/kv.h) and the index (kv/index.h) on in-process local memory
// nodes (node_group.h; three, one for the constructors): every allocation
// point of the calling thread's is made to fail in turn in kv_config_load,
// kv_create, kv_open, kv_async_open, kv_index_create and kv_index_open, and
// in the operations.
// A failed call returns -ENOMEM (or -EAGAIN where starting a group's
// connection thread failed) with nothing changed: no handle, the config as
// it was, every client id free after an open, the map as the model says
// after an operation. The connections themselves are opened by each group's
// connection thread, which the injection (per thread) does not reach;
// rdma_fault_test covers rdma_conn_open.
// A create that fails after it formatted the nodes must leave none of them
// formatted, or a retry would fail with -EEXIST.
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kv/index.h>
#include <kv/kv.h>
#include <pm/error.h>

#include "kv/tests/index_env.h"
#include "kv/tests/node_group.h"
#include "pm/tests/fault_alloc.h"
#include "rdma/tests/node_proc.h"

namespace {

using kvtest::IndexConfig;
using kvtest::KeyStore;
using kvtest::LocalGroup;

constexpr unsigned kKeys = 40; // enough for the index's root bucket to split

// The sweep's check for a call that only allocates: -ENOMEM exactly when an
// allocation failed, success otherwise.
void EnomemIffFired(int r, bool fired)
{
	EXPECT_EQ(r, fired ? -ENOMEM : 0) << pm_strerror(r) << ": " << pm_errormsg();
}

// The same for a call that opens a group of connections: pthread_create()
// fails with EAGAIN when it cannot allocate the new thread's TLS, and
// kv/index.h documents -EAGAIN for the group's connection thread.
void EnomemOrEagainIffFired(int r, bool fired)
{
	if (fired && r == -EAGAIN)
		return;
	EnomemIffFired(r, fired);
}

// Logs the allocation points a sweep of @what exercised, and returns them.
unsigned Points(const std::string &what, unsigned n)
{
	std::printf("%s: %u allocation points\n", what.c_str(), n);
	return n;
}

std::string Key(unsigned i)
{
	return "key-" + std::to_string(i);
}

// A small store on three fresh local nodes (@nodes), sized by
// kv_region_sizes().
class KvFault : public ::testing::Test {
protected:
	explicit KvFault(unsigned nodes = 3) : nodes_(nodes) {}

	void SetUp() override
	{
		kv_config_init(&cfg_);
		cfg_.nnodes = nodes_;
		cfg_.max_clients = 4;
		cfg_.log_bytes = 1u << 20;
		cfg_.chunk_bytes = 64u << 10;
		cfg_.timeout_ms = 3000;
		cfg_.cache_entries = 64;
		uint64_t index_bytes = 0, store_bytes = 0;
		ASSERT_EQ(kv_region_sizes(&cfg_, 4 * kKeys, 16, 64, &index_bytes, &store_bytes), 0);
		group_ = std::make_unique<LocalGroup>(nodes_, "kvfault", index_bytes, store_bytes);
		uris_ = group_->Uris();
		for (const auto &u : uris_)
			ptrs_.push_back(u.c_str());
		cfg_.nodes = ptrs_.data();
	}

	// The nodes that hold an index (formatted or not), as a mask.
	unsigned Formatted()
	{
		unsigned mask = 0;
		for (unsigned i = 0; i < nodes_; i++) {
			kv_node_status st;
			(void)kv_node_status_read(&cfg_, i, &st);
			EXPECT_TRUE(st.reachable) << "node " << i;
			mask |= (st.formatted || st.index_buckets > 0 ? 1u : 0u) << i;
		}
		return mask;
	}

	// Sweeps kv_create: a failed run must leave no node formatted.
	unsigned SweepCreate()
	{
		return pmtest::SweepAllocFailures([&] { return kv_create(&cfg_); },
			[&](int r, bool fired) {
				EnomemOrEagainIffFired(r, fired);
				EXPECT_TRUE(r == 0 || Formatted() == 0)
					<< "a failed kv_create left nodes formatted";
			});
	}

	// The client ids taken on node 0, as its store region says.
	unsigned ClientsTaken()
	{
		kv_node_status st;
		EXPECT_EQ(kv_node_status_read(&cfg_, 0, &st), 0) << pm_errormsg();
		return st.clients;
	}

	const unsigned nodes_;
	std::unique_ptr<LocalGroup> group_;
	std::vector<std::string> uris_;
	std::vector<const char *> ptrs_;
	kv_config cfg_;
};

// The constructors on one node: what a group allocates it allocates per
// member, so one member has every allocation point, and each of the many
// runs connects a third as often (connecting is what takes these tests'
// time).
class KvOpenFault : public KvFault {
protected:
	KvOpenFault() : KvFault(1) {}
};

TEST_F(KvFault, ConfigLoadFailsCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	const std::string path = rdmatest::TempDir() + "/kv_fault_cluster.ini";
	std::ofstream(path, std::ios::trunc) << "[cluster]\nnodes = " << uris_[0] << ", " << uris_[1]
					      << "\nnode = " << uris_[2] << "\ntoken = t\ntimeout_ms = 1234\n"
					      << "[create]\nmax_clients = 3\n";
	kv_config cfg, before;
	kv_config_init(&cfg);
	EXPECT_GT(Points("kv_config_load", pmtest::SweepConstructor<kv_config_file>(
			  [&](kv_config_file **f) {
				  kv_config_init(&cfg);
				  before = cfg;
				  return kv_config_load(f, &cfg, path.c_str());
			  },
			  [](kv_config_file **f) { EXPECT_EQ(kv_config_file_delete(f), 0); },
			  [&](int r, bool fired) {
				  EnomemIffFired(r, fired);
				  if (r != 0) {
					  EXPECT_EQ(memcmp(&cfg, &before, sizeof(cfg)), 0)
						  << "the config changed";
				  } else {
					  EXPECT_EQ(cfg.nnodes, 3u);
					  EXPECT_EQ(cfg.timeout_ms, 1234u);
				  }
			  })),
		0u);
	unlink(path.c_str());
}

TEST_F(KvOpenFault, CreateFailsCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	EXPECT_GT(Points("kv_create", SweepCreate()), 0u);
}


TEST_F(KvOpenFault, OpenAndAsyncOpenFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	ASSERT_EQ(kv_create(&cfg_), 0) << pm_errormsg();
	// An open that fails gives its client id back.
	EXPECT_GT(Points("kv_open", pmtest::SweepConstructor<kv_client>(
			  [&](kv_client **c) { return kv_open(c, &cfg_); },
			  [](kv_client **c) { EXPECT_EQ(kv_close(c), 0); },
			  [&](int r, bool fired) {
				  EnomemOrEagainIffFired(r, fired);
				  EXPECT_EQ(ClientsTaken(), 0u);
			  })),
		0u);
	EXPECT_GT(Points("kv_async_open", pmtest::SweepConstructor<kv_async>(
			  [&](kv_async **a) { return kv_async_open(a, &cfg_, 2); },
			  [](kv_async **a) { EXPECT_EQ(kv_async_close(a), 0); },
			  [&](int r, bool fired) {
				  EnomemOrEagainIffFired(r, fired);
				  EXPECT_EQ(ClientsTaken(), 0u);
			  })),
		0u);
	kv_client *c = nullptr;
	ASSERT_EQ(kv_open(&c, &cfg_), 0) << pm_errormsg();
	ASSERT_EQ(kv_put(c, "k", 1, "v", 1), 0) << pm_errormsg();
	EXPECT_EQ(kv_close(&c), 0);
}

// Every allocation of each operation fails in turn; the store holds what
// the model says after every run: a failed insert left the key absent, a
// failed update, put or delete left the old value readable.
TEST_F(KvFault, OperationsFailWithTheStoreUnchanged)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	ASSERT_EQ(kv_create(&cfg_), 0) << pm_errormsg();
	kv_client *c = nullptr;
	ASSERT_EQ(kv_open(&c, &cfg_), 0) << pm_errormsg();
	std::map<std::string, std::string> model;
	auto get = [&](const std::string &k, std::string *v) {
		char buf[64];
		size_t len = 0;
		int r = kv_get(c, k.data(), k.size(), buf, sizeof(buf), &len);
		if (r == 0)
			v->assign(buf, len);
		return r;
	};
	auto expect_model = [&](const std::string &k) {
		std::string v;
		int r = get(k, &v);
		auto it = model.find(k);
		if (it == model.end()) {
			EXPECT_EQ(r, -ENOENT) << k << ": " << pm_strerror(r);
		} else {
			EXPECT_EQ(r, 0) << k << ": " << pm_strerror(r);
			EXPECT_EQ(v, it->second) << k;
		}
	};
	// Each op: the call, and what its success does to the model.
	auto sweep = [&](const char *what, const std::string &k, auto call, auto apply) {
		return pmtest::SweepAllocFailures(call, [&](int r, bool fired) {
			if (fired && r == -ENOMEM) {
				expect_model(k); // unchanged
				return;
			}
			EXPECT_FALSE(fired) << what << " " << k << " absorbed a failed allocation";
			apply(r);
			expect_model(k);
		});
	};
	unsigned points[5] = {};
	for (unsigned i = 0; i < kKeys; i++) {
		const std::string k = Key(i), v = "v" + std::to_string(i);
		points[0] += sweep("kv_insert", k,
			[&] { return kv_insert(c, k.data(), k.size(), v.data(), v.size()); },
			[&](int r) {
				EXPECT_EQ(r, model.count(k) ? KV_E_EXISTS : 0) << pm_strerror(r);
				model.emplace(k, v);
			});
	}
	for (unsigned i = 0; i < kKeys; i++) {
		const std::string k = Key(i), v = "u" + std::to_string(i);
		std::string got;
		points[1] += pmtest::SweepAllocFailures([&] { return get(k, &got); },
			[&](int r, bool fired) {
				EXPECT_EQ(r, fired ? -ENOMEM : 0) << pm_strerror(r);
				if (r == 0) {
					EXPECT_EQ(got, model[k]);
				}
			});
		points[2] += sweep("kv_update", k,
			[&] { return kv_update(c, k.data(), k.size(), v.data(), v.size()); },
			[&](int r) {
				EXPECT_EQ(r, 0) << pm_strerror(r);
				model[k] = v;
			});
	}
	for (unsigned i = 0; i < kKeys + 4; i++) {
		const std::string k = Key(i), v = "p" + std::to_string(i);
		points[3] += sweep("kv_put", k,
			[&] { return kv_put(c, k.data(), k.size(), v.data(), v.size()); },
			[&](int r) {
				EXPECT_EQ(r, 0) << pm_strerror(r);
				model[k] = v;
			});
	}
	for (unsigned i = 0; i < kKeys + 4; i += 2) {
		const std::string k = Key(i);
		points[4] += sweep("kv_delete", k, [&] { return kv_delete(c, k.data(), k.size()); },
			[&](int r) {
				EXPECT_EQ(r, model.count(k) ? 0 : -ENOENT) << pm_strerror(r);
				model.erase(k);
			});
	}
	Points("kv_insert", points[0]);
	Points("kv_get", points[1]);
	Points("kv_update", points[2]);
	Points("kv_put", points[3]);
	Points("kv_delete", points[4]);
	for (unsigned i = 0; i < kKeys + 4; i++)
		expect_model(Key(i));
	// Afterwards: a reopened client sees the same map.
	ASSERT_EQ(kv_close(&c), 0);
	ASSERT_EQ(kv_open(&c, &cfg_), 0) << pm_errormsg();
	for (unsigned i = 0; i < kKeys + 4; i++)
		expect_model(Key(i));
	EXPECT_EQ(kv_close(&c), 0);
}

// The same through the asynchronous API, one op in flight at a time so that
// the sweep knows whose allocation failed.
TEST_F(KvFault, AsyncOperationsFailWithTheStoreUnchanged)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	ASSERT_EQ(kv_create(&cfg_), 0) << pm_errormsg();
	kv_async *a = nullptr;
	ASSERT_EQ(kv_async_open(&a, &cfg_, 2), 0) << pm_errormsg();
	std::map<std::string, std::string> model;
	char buf[64];
	auto run = [&](kv_op *op) {
		int r = kv_async_submit(a, op);
		if (r != 0)
			return r;
		kv_op *done[2];
		unsigned n = 0;
		r = kv_async_wait(a, done, 2, &n);
		if (r == 0) {
			EXPECT_EQ(n, 1u);
			EXPECT_EQ(done[0], op);
		}
		return r != 0 ? r : op->ret;
	};
	auto expect_model = [&](const std::string &k) {
		kv_op op{};
		op.kind = KV_OP_GET;
		op.key = k.data();
		op.klen = k.size();
		op.buf = buf;
		op.cap = sizeof(buf);
		int r = run(&op);
		auto it = model.find(k);
		if (it == model.end()) {
			EXPECT_EQ(r, -ENOENT) << k << ": " << pm_strerror(r);
		} else {
			EXPECT_EQ(r, 0) << k << ": " << pm_strerror(r);
			EXPECT_EQ(std::string(buf, op.len), it->second) << k;
		}
	};
	unsigned points = 0;
	for (unsigned i = 0; i < kKeys / 2; i++) {
		const std::string k = Key(i), v = "a" + std::to_string(i);
		for (kv_op_kind kind : { KV_OP_PUT, KV_OP_GET, KV_OP_DELETE, KV_OP_INSERT }) {
			kv_op op{};
			op.kind = kind;
			op.key = k.data();
			op.klen = k.size();
			op.val = v.data();
			op.vlen = v.size();
			op.buf = buf;
			op.cap = sizeof(buf);
			points += pmtest::SweepAllocFailures([&] { return run(&op); },
				[&](int r, bool fired) {
					if (fired && r == -ENOMEM) {
						expect_model(k);
						return;
					}
					EXPECT_FALSE(fired) << "op " << kind << " absorbed a failed allocation";
					if (kind == KV_OP_PUT || kind == KV_OP_INSERT) {
						EXPECT_EQ(r, 0) << pm_strerror(r);
						model[k] = v;
					} else if (kind == KV_OP_DELETE) {
						EXPECT_EQ(r, 0) << pm_strerror(r);
						model.erase(k);
					} else {
						EXPECT_EQ(r, 0) << pm_strerror(r);
					}
					expect_model(k);
				});
		}
	}
	Points("kv_async_submit + kv_async_wait", points);
	EXPECT_EQ(kv_async_close(&a), 0);
	EXPECT_EQ(ClientsTaken(), 0u);
}

// The index on its own, on three fresh local nodes (@nodes): its
// constructors and operations, with the test key store of index_env.h.
class IndexFault : public ::testing::Test {
protected:
	explicit IndexFault(unsigned nodes = 3) : nodes_(nodes) {}

	void SetUp() override
	{
		group_ = std::make_unique<LocalGroup>(nodes_, "ixfault");
		keys_ = std::make_unique<KeyStore>(group_->Uris());
		cfg_ = std::make_unique<IndexConfig>(group_->Uris(), keys_.get(), 1);
		cfg_->cfg.cache_entries = 16;
	}

	// The nodes that hold an index, as a mask: the first word of their
	// superblock is set.
	unsigned Formatted()
	{
		unsigned mask = 0;
		for (unsigned i = 0; i < nodes_; i++) {
			uint64_t magic;
			memcpy(&magic, group_->IndexRegion(i), sizeof(magic));
			mask |= (magic != 0 ? 1u : 0u) << i;
		}
		return mask;
	}

	// Sweeps kv_index_create, as KvFault::SweepCreate() does kv_create.
	unsigned SweepCreate()
	{
		return pmtest::SweepConstructor<kv_index>(
			[&](kv_index **ix) { return kv_index_create(ix, &cfg_->cfg); },
			[](kv_index **ix) { EXPECT_EQ(kv_index_close(ix), 0); },
			[&](int r, bool fired) {
				EnomemOrEagainIffFired(r, fired);
				EXPECT_TRUE(r == 0 || Formatted() == 0)
					<< "a failed kv_index_create left nodes formatted";
			});
	}

	const unsigned nodes_;
	std::unique_ptr<LocalGroup> group_;
	std::unique_ptr<KeyStore> keys_;
	std::unique_ptr<IndexConfig> cfg_;
};

// The constructors on one node, as KvOpenFault.
class IndexOpenFault : public IndexFault {
protected:
	IndexOpenFault() : IndexFault(1) {}
};

TEST_F(IndexOpenFault, CreateAndOpenFailCleanly)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	EXPECT_GT(Points("kv_index_create", SweepCreate()), 0u);
	EXPECT_GT(Points("kv_index_open", pmtest::SweepConstructor<kv_index>(
			  [&](kv_index **ix) { return kv_index_open(ix, &cfg_->cfg); },
			  [](kv_index **ix) { EXPECT_EQ(kv_index_close(ix), 0); },
			  EnomemOrEagainIffFired)),
		0u);
}


TEST_F(IndexFault, OperationsFailWithTheMapUnchanged)
{
	FAULT_ALLOC_SKIP_IF_UNAVAILABLE();
	kv_index *ix = nullptr;
	ASSERT_EQ(kv_index_create(&ix, &cfg_->cfg), 0) << pm_errormsg();
	std::map<std::string, uint64_t> model;
	auto expect_model = [&](const std::string &k) {
		uint64_t loc = 0;
		int r = kv_index_lookup(ix, k.data(), k.size(), &loc);
		auto it = model.find(k);
		if (it == model.end()) {
			EXPECT_EQ(r, -ENOENT) << k << ": " << pm_strerror(r);
		} else {
			EXPECT_EQ(r, 0) << k << ": " << pm_strerror(r);
			EXPECT_EQ(loc, it->second) << k;
		}
	};
	unsigned points[3] = {};
	for (unsigned i = 0; i < kKeys; i++) {
		const std::string k = Key(i);
		const uint64_t loc = KeyStore::Loc(1, i);
		ASSERT_TRUE(keys_->Put(loc, k));
		points[0] += pmtest::SweepAllocFailures(
			[&] { return kv_index_insert(ix, k.data(), k.size(), loc, nullptr); },
			[&](int r, bool fired) {
				if (fired && r == -ENOMEM) {
					expect_model(k);
					return;
				}
				EXPECT_FALSE(fired) << "insert " << k << " absorbed a failed allocation";
				EXPECT_EQ(r, model.count(k) ? KV_E_EXISTS : 0) << pm_strerror(r);
				model.emplace(k, loc);
				expect_model(k);
			});
	}
	for (unsigned i = 0; i < kKeys; i++) {
		const std::string k = Key(i);
		uint64_t loc = 0;
		points[1] += pmtest::SweepAllocFailures(
			[&] { return kv_index_lookup(ix, k.data(), k.size(), &loc); },
			[&](int r, bool fired) {
				EXPECT_EQ(r, fired ? -ENOMEM : 0) << pm_strerror(r);
				if (r == 0) {
					EXPECT_EQ(loc, model[k]);
				}
			});
	}
	for (unsigned i = 0; i < kKeys; i += 2) {
		const std::string k = Key(i);
		const uint64_t loc = KeyStore::Loc(1, i);
		points[2] += pmtest::SweepAllocFailures(
			[&] { return kv_index_remove(ix, k.data(), k.size(), loc); },
			[&](int r, bool fired) {
				if (fired && r == -ENOMEM) {
					expect_model(k);
					return;
				}
				EXPECT_FALSE(fired) << "remove " << k << " absorbed a failed allocation";
				// 0 also when the mapping is gone already (kv/index.h).
				EXPECT_EQ(r, 0) << pm_strerror(r);
				model.erase(k);
				expect_model(k);
			});
	}
	Points("kv_index_insert", points[0]);
	Points("kv_index_lookup", points[1]);
	Points("kv_index_remove", points[2]);
	kv_index_stats st;
	kv_index_stats_read(ix, &st);
	EXPECT_GT(st.splits, 0u) << "no bucket split: use more keys";
	// Afterwards: a reopened handle sees the same map.
	ASSERT_EQ(kv_index_close(&ix), 0);
	ASSERT_EQ(kv_index_open(&ix, &cfg_->cfg), 0) << pm_errormsg();
	for (unsigned i = 0; i < kKeys; i++)
		expect_model(Key(i));
	EXPECT_EQ(kv_index_close(&ix), 0);
}

} // namespace
