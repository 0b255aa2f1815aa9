// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/index_env.h -- a group of memory nodes for the index's tests and
// the key store the index asks for keys (key_at).
//
// LocalGroup opens n in-process nodes (rdma/node.h) on pool files in the
// test's temporary directory, each with two regions: the index (region 0)
// and key blocks (region 1); clients reach them as "local:<pool>". The
// DaemonGroup variant runs n dmkv-node daemons (ofi+tcp).
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

#include "rdma/tests/node_proc.h"

namespace kvtest {

constexpr uint64_t kIndexRegion = 8u << 20;
constexpr uint64_t kKeyRegion = 8u << 20;
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

// In-process nodes on pool files.
class LocalGroup {
public:
	explicit LocalGroup(unsigned n, const std::string &name = "ix",
		uint64_t index_region = kIndexRegion)
		: index_region_(index_region)
	{
		// tmpfs where there is one: a persist is an msync of the page,
		// free on /dev/shm and a disk write elsewhere.
		std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm/" : rdmatest::TempDir() + "/";
		for (unsigned i = 0; i < n; i++) {
			paths_.push_back(dir + "kvix-" + std::to_string(getpid()) + "-" + name +
				std::to_string(i) + ".pool");
			unlink(paths_.back().c_str());
			unlink((paths_.back() + ".node").c_str());
		}
		nodes_.resize(n, nullptr);
		for (unsigned i = 0; i < n; i++)
			Open(i);
	}
	~LocalGroup()
	{
		for (auto &n : nodes_)
			rdma_node_close(&n);
		for (const auto &p : paths_) {
			unlink(p.c_str());
			unlink((p + ".node").c_str());
		}
	}
	int Open(unsigned i)
	{
		rdma_node_config cfg = rdmatest::TwoRegionNodeConfig(paths_[i], index_region_,
			kKeyRegion, "");
		return rdma_node_open(&nodes_[i], &cfg);
	}
	void Close(unsigned i) { rdma_node_close(&nodes_[i]); }
	// Lose node @i's pool: a new, empty pool at the same path.
	int Wipe(unsigned i)
	{
		Close(i);
		unlink(paths_[i].c_str());
		unlink((paths_[i] + ".node").c_str());
		return Open(i);
	}
	const std::string &Path(unsigned i) const { return paths_[i]; }
	std::vector<std::string> Uris() const
	{
		std::vector<std::string> u;
		for (const auto &p : paths_)
			u.push_back("local:" + p);
		return u;
	}
	// Serve every node over ofi+tcp on 127.0.0.1; TcpUris() then names them.
	int ServeTcp()
	{
		for (auto *n : nodes_) {
			rdma_node_serve_config sc = rdmatest::ServeConfig("127.0.0.1", RDMA_NODE_SERVE_TCP);
			int ret = rdma_node_serve(n, &sc);
			if (ret != 0)
				return ret;
		}
		return 0;
	}
	std::vector<std::string> TcpUris() const
	{
		std::vector<std::string> u;
		for (auto *n : nodes_)
			u.push_back("ofi+tcp://127.0.0.1:" + std::to_string(rdma_node_port(n)));
		return u;
	}
	// The address of node @i's index region in this process.
	uint8_t *IndexRegion(unsigned i)
	{
		rdma_region_info info;
		void *addr = nullptr;
		rdma_node_region(nodes_[i], 0, &info, &addr);
		return static_cast<uint8_t *>(addr);
	}
	unsigned Size() const { return static_cast<unsigned>(paths_.size()); }

private:
	uint64_t index_region_;
	std::vector<std::string> paths_;
	std::vector<rdma_node *> nodes_;
};

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
