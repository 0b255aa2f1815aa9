// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/mapped_region.h -- where this process maps a region of a pool
// file, for the crash tests (pm/crashsim.h tracks memory by address).
//
// A region is found by its superblock's magic in the pool file's mapping
// (/proc/self/maps), so the tests need not know the node file's region
// table; the local backend maps each pool file once per process, so there
// is one such mapping while the in-process nodes are closed.
#ifndef KV_TESTS_MAPPED_REGION_H
#define KV_TESTS_MAPPED_REGION_H

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace kvtest

#endif  // KV_TESTS_MAPPED_REGION_H
