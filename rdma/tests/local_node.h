// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/local_node.h -- a memory node for the local: backend made by
// hand, for the tests of the client: a zeroed pool file and its node file
// with two regions, written directly, so that no node or pool library is
// needed; and a connection to it.
#ifndef RDMA_TESTS_LOCAL_NODE_H
#define RDMA_TESTS_LOCAL_NODE_H

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include <rdma/rdma.h>

#include "pm/tests/test_util.h"

extern "C" {
#include "rdma/src/nodefile.h"
}

namespace rdmatest {

constexpr uint64_t kFileSize = 1 << 20;
constexpr uint64_t kRegion0Off = 4096, kRegion0Len = 64 << 10;
constexpr uint64_t kRegion1Off = 128 << 10, kRegion1Len = 4096;

// A "node" made by hand: a zeroed file and its node file with two regions.
class LocalNode {
public:
	explicit LocalNode(const std::string &name, const char *token = "secret")
	    : path_(pmtest::TempPath(name))
	{
		unlink((path_ + ".node").c_str());
		int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
		EXPECT_GE(fd, 0);
		EXPECT_EQ(ftruncate(fd, kFileSize), 0);
		close(fd);
		nf_ = {};
		snprintf(nf_.pool, sizeof(nf_.pool), "%s", path_.c_str());
		nf_.durability = PM_DURABILITY_NONE;
		nf_.incarnation = 1;
		EXPECT_EQ(rdma__token_hash(token, nf_.token_hash), 0);
		nf_.nregions = 2;
		nf_.regions[0].offset = kRegion0Off;
		nf_.regions[0].length = kRegion0Len;
		nf_.regions[1].offset = kRegion1Off;
		nf_.regions[1].length = kRegion1Len;
		Publish();
	}
	void Publish() { EXPECT_EQ(rdma__nodefile_write(NodeFile().c_str(), &nf_), 0); }
	std::string Uri() const { return "local:" + path_; }
	std::string NodeFile() const { return path_ + ".node"; }
	const std::string &Path() const { return path_; }
	rdma__nodefile &Nf() { return nf_; }

	// The file's bytes, read through the file system (not the mapping).
	std::string Bytes(uint64_t off, size_t len) const
	{
		std::string s(len, '\0');
		int fd = open(path_.c_str(), O_RDONLY);
		EXPECT_EQ(pread(fd, &s[0], len, off), (ssize_t)len);
		close(fd);
		return s;
	}

private:
	std::string path_;
	rdma__nodefile nf_;
};

// A connection to @node with @token and @timeout_ms (nullptr, with a test
// failure, if it does not open).
inline rdma_conn *Open(const LocalNode &node, const char *token = "secret",
	unsigned timeout_ms = 5000)
{
	rdma_conn_config cfg;
	rdma_conn_config_init(&cfg);
	cfg.token = token;
	cfg.timeout_ms = timeout_ms;
	rdma_conn *c = nullptr;
	EXPECT_EQ(rdma_conn_open(&c, node.Uri().c_str(), &cfg), 0);
	return c;
}

} // namespace rdmatest

#endif // RDMA_TESTS_LOCAL_NODE_H
