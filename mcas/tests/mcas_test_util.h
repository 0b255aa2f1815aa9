// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/mcas_test_util.h -- a persistent MCAS instance in a real pool
// for the mcas tests: the pool's root holds an array of target words
// followed by the MCAS area, so one contiguous range covers all persistent
// state (what the crash simulator tracks).
#ifndef MCAS_TESTS_MCAS_TEST_UTIL_H
#define MCAS_TESTS_MCAS_TEST_UTIL_H

#include <array>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <mcas/mcas.h>
#include <pm/cost.h>
#include <pm/pool.h>
#include <reclaim/reclaim.h>

#include "pm/tests/test_util.h"

namespace mcastest {

// Number of target words before the MCAS area in the root.
constexpr size_t kWords = 64;

struct PmemInstance {
	std::string path;
	pm_pool *pool = nullptr;
	mcas *m = nullptr;
	mcas_config cfg;
	// Target words before the area; set before Create() for more than
	// kWords (the freeze tests want whole pages of them).
	size_t nwords = kWords;
	uint64_t *words = nullptr; // nwords target words, zeroed at creation
	uint64_t area_off = 0;
	size_t area_size = 0;

	// Create a pool named @name and format an instance with @c in it.
	// Returns 0 or the failing call's code.
	int Create(const std::string &name, const mcas_config &c,
		pm_durability durability = PM_DURABILITY_NONE)
	{
		cfg = c;
		path = pmtest::TempPath(name);
		area_size = mcas_pmem_area_size(&cfg);
		if (area_size == 0)
			return -22;
		pm_pool_config pc = PoolConfig(durability);
		int ret = pm_pool_create(&pool, &pc);
		if (ret != 0)
			return ret;
		words = static_cast<uint64_t *>(pm_pool_root(pool));
		area_off = pm_pool_off(pool, words + nwords);
		return mcas_pmem_create(&m, pool, area_off, &cfg);
	}

	// Create(@name, @c), then register the calling thread as *@t. Returns
	// 0 or the failing call's code.
	int CreateAndRegister(const std::string &name, const mcas_config &c, mcas_thread **t)
	{
		int ret = Create(name, c);
		return ret != 0 ? ret : mcas_thread_register(m, t);
	}

	// The config of the pool at path, for creating or opening it.
	pm_pool_config PoolConfig(pm_durability durability) const
	{
		pm_pool_config pc = pmtest::PoolConfig(path, "mcas-test",
			nwords * sizeof(uint64_t) + area_size);
		pc.durability = durability;
		return pc;
	}

	// Close everything, reopen the pool and recover the instance.
	int Reopen()
	{
		int ret = mcas_close(&m);
		if (ret == 0)
			ret = pmtest::ReopenPool(&pool, PoolConfig(PM_DURABILITY_NONE));
		if (ret != 0)
			return ret;
		words = static_cast<uint64_t *>(pm_pool_root(pool));
		return mcas_pmem_open(&m, pool, area_off, nullptr);
	}

	~PmemInstance()
	{
		mcas_close(&m);
		pm_pool_close(&pool);
	}
};

// The config a crash check opens a post-crash image with: @c on an epoch
// flavour of its own, made now. The check's process is a copy of the
// crashed one, so the flavour the crashed instance ran on (the default one,
// usually) still holds the crashed threads' epoch words, some odd (inside
// an operation), and the checking thread may be a crashed one still
// registered there: a recovered instance on that flavour would wait for
// grace periods that never end, which after a real crash, with no thread
// left, cannot happen. The flavour is never released (the check's process
// ends with the check); on failure the default flavour is used.
inline mcas_config AfterCrash(const mcas_config &c)
{
	mcas_config after = c;
	after.epochs = nullptr;
	(void)reclaim_epochs_new(&after.epochs, c.max_threads);
	return after;
}

// The algorithms that have a volatile / a persistent instance; tests are
// instantiated over exactly these, so no combination is skipped.
inline std::vector<mcas_algorithm> VolatileAlgorithms()
{
	return {MCAS_ALG_AOPT, MCAS_ALG_HARRIS};
}
inline std::vector<mcas_algorithm> PersistentAlgorithms()
{
	return {MCAS_ALG_AOPT, MCAS_ALG_PMWCAS};
}

// Names parametrised tests after the algorithm.
struct AlgorithmName {
	std::string operator()(const ::testing::TestParamInfo<mcas_algorithm> &i) const
	{
		return mcas_algorithm_name(i.param);
	}
};

// The pool file of test @name on algorithm @alg.
inline std::string PoolName(const std::string &name, mcas_algorithm alg)
{
	return name + "-" + mcas_algorithm_name(alg) + ".pool";
}

// Runs @body(m) on a volatile instance m created with @c, then destroys it.
template <class F> void OnVolatile(const mcas_config &c, F body)
{
	mcas *m = nullptr;
	ASSERT_EQ(mcas_new(&m, &c), 0);
	body(m);
	ASSERT_EQ(mcas_close(&m), 0);
}

// A small instance for @threads threads.
inline mcas_config TestConfig(mcas_algorithm alg, unsigned threads, unsigned descs,
	unsigned read_detach_one_in)
{
	mcas_config c;
	mcas_config_init(&c);
	c.algorithm = alg;
	c.max_threads = threads;
	c.descs_per_thread = descs;
	c.read_detach_one_in = read_detach_one_in;
	return c;
}

// The calling thread's cost counters now.
inline pm_cost CostNow()
{
	pm_cost c;
	pm_cost_read_thread(&c);
	return c;
}

// How much counter @which of the calling thread grew since @before.
inline uint64_t CostSince(const pm_cost &before, pm_cost_counter which)
{
	pm_cost now = CostNow(), d;
	pm_cost_diff(&now, &before, &d);
	return d.n[which];
}

// Runs one MCAS over (addr, old, new) triples; returns execute's result or
// the first error.
inline int Mcas(mcas_thread *t, std::initializer_list<std::array<uint64_t, 3>> triples)
{
	mcas_desc *d;
	int ret = mcas_desc_begin(t, &d);
	if (ret != 0)
		return ret;
	for (const auto &tr : triples) {
		ret = mcas_desc_add(d, reinterpret_cast<uint64_t *>(tr[0]), tr[1], tr[2]);
		if (ret != 0) {
			mcas_desc_abandon(d);
			return ret;
		}
	}
	return mcas_desc_execute(d);
}

inline uint64_t A(uint64_t *p)
{
	return reinterpret_cast<uint64_t>(p);
}

} // namespace mcastest

#endif
