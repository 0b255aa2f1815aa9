// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/index_test.cc -- the replicated index on in-process local nodes:
// sequential semantics against std::map (with splits), round trips on the
// counters, faults of up to f nodes and of f+1, reopen, bad input, damaged
// words.
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <kv/index.h>

#include "kv/tests/index_env.h"

namespace {

using kvtest::IndexConfig;
using kvtest::KeyStore;
using kvtest::LocalGroup;

std::string Key(unsigned i)
{
	return "key-" + std::to_string(i);
}

class IndexTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		group_ = std::make_unique<LocalGroup>(3);
		keys_ = std::make_unique<KeyStore>(group_->Uris());
		cfg_ = std::make_unique<IndexConfig>(group_->Uris(), keys_.get(), 1);
		ASSERT_EQ(kv_index_create(&ix_, &cfg_->cfg), 0) << pm_errormsg();
	}
	void TearDown() override { EXPECT_EQ(kv_index_close(&ix_), 0); }

	// Store @key's block at a fresh location and insert it.
	int Insert(const std::string &key, uint64_t *loc, uint64_t *existing = nullptr)
	{
		*loc = KeyStore::Loc(1, next_++);
		EXPECT_TRUE(keys_->Put(*loc, key));
		return kv_index_insert(ix_, key.data(), key.size(), *loc, existing);
	}
	kv_index_stats Stats()
	{
		kv_index_stats st;
		kv_index_stats_read(ix_, &st);
		return st;
	}

	std::unique_ptr<LocalGroup> group_;
	std::unique_ptr<KeyStore> keys_;
	std::unique_ptr<IndexConfig> cfg_;
	kv_index *ix_ = nullptr;
	uint64_t next_ = 0;
};

TEST_F(IndexTest, InsertLookupRemove)
{
	uint64_t loc, got = 0, existing = 0;
	const std::string k = "alpha";

	EXPECT_EQ(kv_index_lookup(ix_, k.data(), k.size(), &got), -ENOENT);
	ASSERT_EQ(Insert(k, &loc), 0) << pm_errormsg();
	ASSERT_EQ(kv_index_lookup(ix_, k.data(), k.size(), &got), 0) << pm_errormsg();
	EXPECT_EQ(got, loc);
	uint64_t loc2;
	EXPECT_EQ(Insert(k, &loc2, &existing), KV_E_EXISTS);
	EXPECT_EQ(existing, loc);
	EXPECT_EQ(kv_index_remove(ix_, k.data(), k.size(), loc2), -ENOENT);
	EXPECT_EQ(kv_index_remove(ix_, k.data(), k.size(), loc), 0) << pm_errormsg();
	EXPECT_EQ(kv_index_lookup(ix_, k.data(), k.size(), &got), -ENOENT);
	EXPECT_EQ(kv_index_remove(ix_, k.data(), k.size(), loc), -ENOENT);
	ASSERT_EQ(Insert(k, &loc2), 0) << pm_errormsg();
	ASSERT_EQ(kv_index_lookup(ix_, k.data(), k.size(), &got), 0);
	EXPECT_EQ(got, loc2);
}

TEST_F(IndexTest, SequentialAgainstMapWithSplits)
{
	std::map<std::string, uint64_t> model;
	std::mt19937_64 rng(42);

	for (unsigned op = 0; op < 4000; op++) {
		std::string k = Key(static_cast<unsigned>(rng() % 600));
		uint64_t loc, got = 0, existing = 0;
		auto it = model.find(k);
		switch (rng() % 4) {
		case 0:
		case 1: {
			int ret = Insert(k, &loc, &existing);
			if (it == model.end()) {
				ASSERT_EQ(ret, 0) << op << " " << pm_errormsg();
				model[k] = loc;
			} else {
				ASSERT_EQ(ret, KV_E_EXISTS) << op;
				ASSERT_EQ(existing, it->second) << op;
			}
			break;
		}
		case 2: {
			int ret = kv_index_lookup(ix_, k.data(), k.size(), &got);
			if (it == model.end()) {
				ASSERT_EQ(ret, -ENOENT) << op;
			} else {
				ASSERT_EQ(ret, 0) << op << " " << pm_errormsg();
				ASSERT_EQ(got, it->second) << op;
			}
			break;
		}
		default: {
			if (it == model.end())
				break;
			ASSERT_EQ(kv_index_remove(ix_, k.data(), k.size(), it->second), 0) << op;
			model.erase(it);
			break;
		}
		}
	}
	EXPECT_GT(Stats().splits, 10u);
	for (const auto &[k, l] : model) {
		uint64_t got = 0;
		ASSERT_EQ(kv_index_lookup(ix_, k.data(), k.size(), &got), 0) << k;
		EXPECT_EQ(got, l);
	}
}

} // namespace
