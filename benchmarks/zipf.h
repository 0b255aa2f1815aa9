// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/zipf.h -- Zipfian record numbers for the YCSB-like workloads
// of bztree_bench and kv_bench.
#ifndef BENCHMARKS_ZIPF_H
#define BENCHMARKS_ZIPF_H

#include <cstdlib>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "kv/tools/dmkv/ycsb.h"

namespace bench {

// Zipfian record numbers in [0, n) with parameter theta: record 0 is the
// most popular. The distribution is dmkv's (kv/tools/dmkv/ycsb.h,
// dmkv_ycsb_zipf: Gray et al., "Quickly generating billion-record synthetic
// databases", SIGMOD'94, the method of YCSB's ZipfianGenerator), so the
// benchmarks and `dmkv bench` draw the same skew. zeta(n) is computed once
// per (n, theta) and process. Next() takes any generator whose Next()
// returns 64 uniform bits, and is const: one Zipf may be shared by threads
// with generators of their own.
class Zipf {
 public:
	Zipf(uint64_t n, double theta) : ks_(Keyspace(n, theta)) {}
	template <class Gen>
	uint64_t Next(Gen &rng) const
	{
		return dmkv_ycsb_zipf(ks_, static_cast<double>(rng.Next() >> 11) * 0x1.0p-53);
	}

 private:
	// The constants of (n, theta), made once per process and kept.
	static const dmkv_ycsb_keyspace *Keyspace(uint64_t n, double theta)
	{
		static std::mutex mu;
		static std::map<std::pair<uint64_t, double>, std::unique_ptr<dmkv_ycsb_keyspace>> cache;
		std::lock_guard<std::mutex> lk(mu);
		auto &ks = cache[{ n, theta }];
		if (!ks) {
			ks.reset(new dmkv_ycsb_keyspace);
			if (dmkv_ycsb_keyspace_init(ks.get(), n, theta) != 0)
				std::abort(); // the benchmarks pass n >= 1, 0 < theta < 1
		}
		return ks.get();
	}

	const dmkv_ycsb_keyspace *ks_;
};

} // namespace bench

#endif
