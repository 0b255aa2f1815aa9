// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/zipf.h -- Zipfian record numbers for the YCSB-like workloads
// of bztree_bench and kv_bench.
#ifndef BENCHMARKS_ZIPF_H
#define BENCHMARKS_ZIPF_H

#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace bench {

// Zipfian record numbers in [0, n) with parameter theta (Gray et al.,
// "Quickly generating billion-record synthetic databases", SIGMOD'94; the
// method of YCSB's ZipfianGenerator): record 0 is the most popular. zeta(n)
// is computed once per (n, theta) and process. Next() takes any generator
// whose Next() returns 64 uniform bits, and is const: one Zipf may be
// shared by threads with generators of their own.
class Zipf {
 public:
	Zipf(uint64_t n, double theta) : n_(n)
	{
		const double zeta2 = 1.0 + std::pow(0.5, theta);
		zetan_ = Zeta(n, theta);
		alpha_ = 1.0 / (1.0 - theta);
		eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) /
			(1.0 - zeta2 / zetan_);
		half_pow_ = 1.0 + std::pow(0.5, theta);
	}
	template <class Gen>
	uint64_t Next(Gen &rng) const
	{
		const double u = static_cast<double>(rng.Next() >> 11) * 0x1.0p-53;
		const double uz = u * zetan_;
		if (uz < 1.0)
			return 0;
		if (uz < half_pow_)
			return 1;
		uint64_t r = static_cast<uint64_t>(static_cast<double>(n_) *
			std::pow(eta_ * u - eta_ + 1.0, alpha_));
		return r < n_ ? r : n_ - 1;
	}

 private:
	static double Zeta(uint64_t n, double theta)
	{
		static std::mutex mu;
		static std::map<std::pair<uint64_t, double>, double> cache;
		std::lock_guard<std::mutex> lk(mu);
		auto it = cache.find({ n, theta });
		if (it != cache.end())
			return it->second;
		double s = 0;
		for (uint64_t i = 1; i <= n; i++)
			s += 1.0 / std::pow(static_cast<double>(i), theta);
		cache[{ n, theta }] = s;
		return s;
	}

	uint64_t n_;
	double zetan_, alpha_, eta_, half_pow_;
};

} // namespace bench

#endif
