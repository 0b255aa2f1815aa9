// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/index_env.h -- the key store the index's tests give the index
// (key_at), over the nodes of node_group.h (LocalGroup).
//
// KeyStore keeps keys in region 1 of every node, replicated like values
// would be: put() writes a block to every node it reaches and needs f+1;
// get() returns the first intact copy. A location is a block number; each
// client uses its own range (KeyStore::Loc), so processes never collide.
#ifndef KV_TESTS_INDEX_ENV_H
#define KV_TESTS_INDEX_ENV_H

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <xxhash.h>

#include <kv/index.h>
#include <rdma/node.h>
#include <rdma/rdma.h>

#include "kv/tests/node_group.h"
#include "rdma/tests/node_proc.h"

namespace kvtest {

constexpr unsigned kKeyBlock = 64;                  // bytes per key block
constexpr unsigned kKeyMax = kKeyBlock - 16;        // longest test key
constexpr uint64_t kBlocksPerClient = 1u << 13;

// One key block: magic and length, checksum, key bytes.
struct KeyBlock {
	uint32_t magic;
	uint32_t len;
	uint64_t sum;
	char key[kKeyMax];
};
static_assert(sizeof(KeyBlock) == kKeyBlock, "one block");
constexpr uint32_t kKeyMagic = 0x4b45594bu;

inline uint64_t KeySum(const KeyBlock &b)
{
	return XXH3_64bits_withSeed(b.key, b.len, b.len);
}

// Keys in region 1 of every node.
class KeyStore {
public:
	explicit KeyStore(const std::vector<std::string> &uris)
	{
		rdma_conn_config cfg;
		rdma_conn_config_init(&cfg);
		cfg.timeout_ms = 1000;
		for (const auto &u : uris) {
			rdma_conn *c = nullptr;
			(void)rdma_conn_open(&c, u.c_str(), &cfg); // a dead node stays null
			conns_.push_back(c);
			uris_.push_back(u);
		}
	}
	~KeyStore()
	{
		for (auto &c : conns_)
			rdma_conn_close(&c);
	}
	KeyStore(const KeyStore &) = delete;
	KeyStore &operator=(const KeyStore &) = delete;

	static uint64_t Loc(unsigned client, uint64_t n) { return client * kBlocksPerClient + n; }

	// Store @key at @loc on every reachable node; true if f+1 have it.
	bool Put(uint64_t loc, const std::string &key)
	{
		KeyBlock b{};
		b.magic = kKeyMagic;
		b.len = static_cast<uint32_t>(key.size());
		memcpy(b.key, key.data(), key.size());
		b.sum = KeySum(b);
		unsigned ok = 0;
		for (auto &c : conns_) {
			rdma_batch bt;
			rdma_batch_init(&bt);
			rdma_batch_write(&bt, 1, loc * kKeyBlock, &b, sizeof(b));
			rdma_batch_persist(&bt, 1, loc * kKeyBlock, sizeof(b));
			ok += Exec(c, &bt);
		}
		return ok >= conns_.size() / 2 + 1;
	}

	// key_at for kv_index_config (ctx: a KeyStore).
	static int KeyAt(void *ctx, uint64_t loc, void *buf, size_t cap, size_t *len)
	{
		auto *ks = static_cast<KeyStore *>(ctx);
		bool reached = false;
		for (auto &c : ks->conns_) {
			KeyBlock b{};
			rdma_batch bt;
			rdma_batch_init(&bt);
			rdma_batch_read(&bt, 1, loc * kKeyBlock, &b, sizeof(b));
			if (!ks->Exec(c, &bt))
				continue;
			reached = true;
			if (b.magic != kKeyMagic || b.len == 0 || b.len > kKeyMax || KeySum(b) != b.sum)
				continue; // not written on this node (it was down), or damaged
			if (b.len > cap)
				return -ENOBUFS;
			memcpy(buf, b.key, b.len);
			*len = b.len;
			return 0;
		}
		return reached ? -ENOENT : KV_E_UNAVAILABLE;
	}

private:
	bool Exec(rdma_conn *&c, rdma_batch *b)
	{
		if (c == nullptr) {
			return false;
		}
		int ret = rdma_execute(c, b);
		if (ret == RDMA_E_CONN || ret == -ETIMEDOUT) {
			if (rdma_conn_reconnect(c) != 0)
				return false;
			ret = rdma_execute(c, b);
		}
		return ret == 0;
	}

	std::vector<rdma_conn *> conns_;
	std::vector<std::string> uris_;
};

// A kv_index_config for @uris with key store @ks, client @cid.
struct IndexConfig {
	IndexConfig(const std::vector<std::string> &uris, KeyStore *ks, unsigned cid)
		: uris_(uris)
	{
		for (const auto &u : uris_)
			ptrs_.push_back(u.c_str());
		kv_index_config_init(&cfg);
		cfg.nodes = ptrs_.data();
		cfg.nnodes = static_cast<unsigned>(ptrs_.size());
		cfg.client_id = cid;
		cfg.key_at = KeyStore::KeyAt;
		cfg.key_ctx = ks;
		cfg.max_clients = 16;
		cfg.recs_per_client = 1024;
	}
	IndexConfig(const IndexConfig &) = delete;
	kv_index_config cfg;

private:
	std::vector<std::string> uris_;
	std::vector<const char *> ptrs_;
};

} // namespace kvtest

#endif
