// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/mapped_region.h -- where this process maps a region of a pool
// file, for the crash tests (pm/crashsim.h tracks memory by address).
//
// A region is found by its superblock's magic in the pool file's mapping
// (/proc/self/maps), so the tests need not know the node file's region
// table; the local backend maps each pool file once per process, so there
// is one such mapping while the in-process nodes are closed. A region with
// nothing in it yet (a test that crashes kv_create itself) is found by a
// marker written through a connection and then wiped (EmptyRegions).
//
// The includer links the transport (//rdma or //rdma:rdma_testing, through
// the kv library it tests); this header names no library, so it never
// brings in the other one.
#ifndef KV_TESTS_MAPPED_REGION_H
#define KV_TESTS_MAPPED_REGION_H

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <rdma/rdma.h>

namespace kvtest {

// The first 4 KiB page of this process's mapping of @pool that starts with
// the 8 bytes of @magic (a superblock: regions are page-aligned), or null.
inline void *MappedRegion(const std::string &pool, const char magic[8])
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	while (std::getline(maps, line)) {
		if (line.size() < pool.size() || line.compare(line.size() - pool.size(), pool.size(), pool) != 0)
			continue;
		std::istringstream in(line);
		uintptr_t lo, hi;
		char dash;
		in >> std::hex >> lo >> dash >> hi;
		for (uintptr_t a = lo; a + 8 <= hi; a += 4096)
			if (memcmp(reinterpret_cast<void *>(a), magic, 8) == 0)
				return reinterpret_cast<void *>(a);
	}
	return nullptr;
}

// Where this process maps regions 0..@nregions-1 of each local: node in
// @uris (pool files @paths), which must hold nothing yet: a marker written
// at each region's start through a connection finds the mapping, then the
// marker is wiped. Appends the addresses, node by node, to *@out and the
// connections to *@conns: the caller keeps them open while it uses the
// addresses (the local backend unmaps a pool file with its last
// connection) and closes them with rdma_conn_close. False on a failure,
// with *@why saying which.
inline bool EmptyRegions(const std::vector<std::string> &uris,
	const std::vector<std::string> &paths, unsigned nregions, std::vector<void *> *out,
	std::vector<rdma_conn *> *conns, std::string *why)
{
	static const char marker[8] = { 'K', 'V', 'E', 'M', 'P', 'T', 'Y', '0' };
	for (size_t i = 0; i < uris.size(); i++) {
		rdma_conn *c = nullptr;
		if (rdma_conn_open(&c, uris[i].c_str(), nullptr) != 0) {
			*why = "cannot connect to " + uris[i];
			return false;
		}
		conns->push_back(c);
		for (unsigned region = 0; region < nregions; region++) {
			rdma_batch b;
			rdma_batch_init(&b);
			if (rdma_batch_write(&b, region, 0, marker, sizeof(marker)) != 0 ||
				rdma_execute(c, &b) != 0) {
				*why = "cannot write region " + std::to_string(region) + " of " + uris[i];
				return false;
			}
			void *at = MappedRegion(paths[i], marker);
			if (at == nullptr) {
				*why = "no mapping of " + paths[i] + " holds the marker";
				return false;
			}
			memset(at, 0, sizeof(marker));
			out->push_back(at);
		}
	}
	return true;
}

}  // namespace kvtest

#endif  // KV_TESTS_MAPPED_REGION_H
