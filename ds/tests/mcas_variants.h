// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/mcas_variants.h -- the MCAS algorithm x mode combinations the
// MCAS-based ds tests (dll, bztree) run on, their names, and a small MCAS
// config.
#ifndef DS_TESTS_MCAS_VARIANTS_H
#define DS_TESTS_MCAS_VARIANTS_H

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <mcas/mcas.h>

namespace dstest {

// One MCAS algorithm in one mode. HARRIS is volatile only and PMWCAS
// persistent only (mcas.h), so these four are every valid combination.
struct Variant {
	mcas_algorithm alg;
	bool persistent;
};

inline const std::vector<Variant> &AllVariants()
{
	static const std::vector<Variant> v = {
		{ MCAS_ALG_AOPT, false },
		{ MCAS_ALG_AOPT, true },
		{ MCAS_ALG_HARRIS, false },
		{ MCAS_ALG_PMWCAS, true },
	};
	return v;
}

// The persistent ones of AllVariants().
inline std::vector<Variant> PmemVariants()
{
	std::vector<Variant> v;
	for (const Variant &x : AllVariants())
		if (x.persistent)
			v.push_back(x);
	return v;
}

// The volatile ones of AllVariants().
inline std::vector<Variant> VolatileVariants()
{
	std::vector<Variant> v;
	for (const Variant &x : AllVariants())
		if (!x.persistent)
			v.push_back(x);
	return v;
}

inline std::string VariantName(const Variant &v)
{
	return std::string(mcas_algorithm_name(v.alg)) + (v.persistent ? "_pmem" : "_volatile");
}

// For INSTANTIATE_TEST_SUITE_P.
struct VariantNamer {
	template <class P> std::string operator()(const testing::TestParamInfo<P> &info) const
	{
		return VariantName(info.param);
	}
};

// A small MCAS config: few threads and descriptors keep the persistent area
// (and so the crash simulator's tracked memory) small.
inline mcas_config SmallConfig(mcas_algorithm alg, unsigned threads = 16, unsigned descs = 64)
{
	mcas_config c;
	mcas_config_init(&c);
	c.algorithm = alg;
	c.max_threads = threads;
	c.descs_per_thread = descs;
	return c;
}

} // namespace dstest

#endif
