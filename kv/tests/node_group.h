// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/node_group.h -- n in-process memory nodes (rdma/node.h) on pool
// files in /dev/shm (or the test's temporary directory), each with two
// regions: the index (region 0) and data (region 1: the index tests' key
// blocks, the store's values). Clients reach them as "local:<pool>", or
// over ofi+tcp after ServeTcp().
#ifndef KV_TESTS_NODE_GROUP_H
#define KV_TESTS_NODE_GROUP_H

#include <cstdint>
#include <string>
#include <vector>

#include <unistd.h>

#include <rdma/node.h>
#include <rdma/rdma.h>

#include "rdma/tests/node_proc.h"

namespace kvtest {

constexpr uint64_t kIndexRegion = 8u << 20;
constexpr uint64_t kKeyRegion = 8u << 20;

// In-process nodes on pool files.
class LocalGroup {
public:
	explicit LocalGroup(unsigned n, const std::string &name = "ix",
		uint64_t index_region = kIndexRegion, uint64_t data_region = kKeyRegion)
		: index_region_(index_region), data_region_(data_region)
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
			data_region_, "");
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
	uint64_t index_region_, data_region_;
	std::vector<std::string> paths_;
	std::vector<rdma_node *> nodes_;
};

}  // namespace kvtest

#endif  // KV_TESTS_NODE_GROUP_H
