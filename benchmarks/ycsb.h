// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/ycsb.h -- the YCSB A/B operation stream that kv_bench (our
// store) and kv_compare_bench (Redis, memcached and the floors) share, so
// every system sees the same keys, values and sequence of gets and
// updates: the key and value of a key id, the read share of a workload,
// and each thread's stream of (get or update, key id) drawn Zipfian over
// the key ids with the thread's own generator.
#ifndef BENCHMARKS_YCSB_H
#define BENCHMARKS_YCSB_H

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "benchmarks/node_bench.h"
#include "benchmarks/zipf.h"

namespace ycsb {

constexpr unsigned kKeyMax = 32; // bytes of a key, NUL included
constexpr double kZipfTheta = 0.99;

// The share of gets in percent: A 50 (the rest updates), B 95.
inline unsigned ReadPct(const std::string &workload)
{
	return workload == "A" ? 50 : 95;
}

// The key of id @id: "user" and 16 hex digits of a mix of the id and the
// seed (20 bytes, YCSB-like). Returns its length.
inline size_t KeyOf(uint64_t id, uint64_t seed, char *out)
{
	return static_cast<size_t>(snprintf(out, kKeyMax, "user%016llx",
		static_cast<unsigned long long>(nodebench::Mix(id ^ nodebench::Mix(seed)))));
}

// A value of @n bytes for key @id: the id, a version, then filler. The id
// leads so that a get can check it got its own key's value.
inline void ValueOf(uint64_t id, uint64_t version, unsigned n, char *out)
{
	char head[16];
	memcpy(head, &id, 8);
	memcpy(head + 8, &version, 8);
	memcpy(out, head, std::min<unsigned>(n, 16));
	for (unsigned i = 16; i < n; i++)
		out[i] = static_cast<char>('a' + (id + i) % 26);
}

// "" if the @len bytes at @v are a value of key @id of @vsize bytes
// (ValueOf of any version), else what they are instead.
inline std::string CheckValue(const char *v, size_t len, unsigned vsize, uint64_t id)
{
	uint64_t got = 0;
	if (len >= 8)
		memcpy(&got, v, 8);
	if (len == vsize && (vsize < 8 || got == id))
		return "";
	return std::to_string(len) + " bytes, id " + std::to_string(got) + "; expected " +
		std::to_string(vsize) + " bytes of id " + std::to_string(id);
}

// One thread's operations: Next() draws the key id (Zipfian, id 0 the
// most popular), then whether it is a get (read% of the time).
class Stream {
public:
	// @zipf over the key ids, shared by the threads; @seed the run's seed,
	// @thread this thread's number, @vsize the value size (part of the
	// seed, as kv_bench has always drawn it).
	Stream(const bench::Zipf &zipf, uint64_t seed, unsigned thread, unsigned vsize,
		const std::string &workload)
		: zipf_(zipf), rng_{ nodebench::Mix(seed * 1000003u + 7919u * thread + vsize) },
		  read_pct_(ReadPct(workload))
	{
	}
	// The next operation's key id; *@get says whether it is a get.
	uint64_t Next(bool *get)
	{
		const uint64_t id = zipf_.Next(rng_);
		*get = rng_.Below(100) < read_pct_;
		return id;
	}

private:
	const bench::Zipf &zipf_;
	nodebench::Rng rng_;
	unsigned read_pct_;
};

} // namespace ycsb

#endif
