// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/mcas_variants.h -- the MCAS algorithm x mode combinations the
// MCAS-based ds tests (dll, bztree) run on, their names, a small MCAS
// config, and the counted costs of an operation (pm/cost.h, mcas_stats)
// with what one uncontended MCAS must cost on each variant.
#ifndef DS_TESTS_MCAS_VARIANTS_H
#define DS_TESTS_MCAS_VARIANTS_H

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <mcas/mcas.h>
#include <pm/cost.h>

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

// Expected CASes and persistent fences of one uncontended k-word MCAS, as
// mcas.h documents them (thesis Table 5.1).
inline unsigned CasPerMcas(mcas_algorithm alg, unsigned k)
{
	switch (alg) {
	case MCAS_ALG_AOPT: return k + 1;
	case MCAS_ALG_HARRIS: return 3 * k + 1;
	case MCAS_ALG_PMWCAS: return 5 * k + 1;
	}
	return 0;
}

inline unsigned FencesPerMcas(mcas_algorithm alg, bool persistent, unsigned k)
{
	if (!persistent)
		return 0;
	return alg == MCAS_ALG_PMWCAS ? 2 * k + 1 : 2;
}

// The calling thread's cost counters and @t's MCAS statistics at one point.
struct Cost {
	pm_cost c;
	mcas_stats s;
};

inline Cost Snap(mcas_thread *t)
{
	Cost x;
	pm_cost_read_thread(&x.c);
	mcas_thread_stats(t, &x.s);
	return x;
}

struct Diff {
	uint64_t cas, fence, flush, mcas, succeeded, detach_cas, read_detaches, helps;
};

// What the calling thread (owning @t) spent since @b.
inline Diff Since(mcas_thread *t, const Cost &b)
{
	Cost a = Snap(t);
	pm_cost d;
	pm_cost_diff(&a.c, &b.c, &d);
	return { d.n[PM_COST_CAS], d.n[PM_COST_FENCE], d.n[PM_COST_FLUSH], a.s.mcas - b.s.mcas,
		a.s.succeeded - b.s.succeeded, a.s.detach_cas - b.s.detach_cas,
		a.s.read_detaches - b.s.read_detaches, a.s.helps - b.s.helps };
}

// Runs @update (an update through the handle owning @t that must return 1)
// and checks it cost successful uncontended MCASes of @ks words each, with
// the CASes and fences of variant @v and no detaching; prints its costs and
// returns them.
template <class F>
Diff ExpectMcases(mcas_thread *t, const Variant &v, const char *what,
	std::initializer_list<unsigned> ks, F update)
{
	Cost b = Snap(t);
	EXPECT_EQ(update(), 1) << what;
	Diff d = Since(t, b);
	std::printf("%-16s %s: %" PRIu64 " MCAS, %" PRIu64 " CAS, %" PRIu64 " flushed lines, %"
		PRIu64 " fences\n", VariantName(v).c_str(), what, d.mcas, d.cas, d.flush, d.fence);
	uint64_t cas = 0, fence = 0;
	for (unsigned k : ks) {
		cas += CasPerMcas(v.alg, k);
		fence += FencesPerMcas(v.alg, v.persistent, k);
	}
	EXPECT_EQ(d.mcas, ks.size()) << what;
	EXPECT_EQ(d.succeeded, ks.size()) << what;
	EXPECT_EQ(d.detach_cas, 0u) << what;
	EXPECT_EQ(d.cas, cas) << what;
	EXPECT_EQ(d.fence, fence) << what;
	return d;
}

} // namespace dstest

#endif
