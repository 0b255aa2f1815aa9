// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/test_util.h -- helpers shared by the pm tests.
#ifndef PM_TESTS_TEST_UTIL_H
#define PM_TESTS_TEST_UTIL_H

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <pm/crashsim.h>
#include <pm/pool.h>

namespace pmtest {

// A fresh path under Bazel's per-test temporary directory (or /tmp), removed
// first so tests can create files there.
inline std::string TempPath(const std::string &name)
{
	const char *dir = std::getenv("TEST_TMPDIR");
	std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
	unlink(path.c_str());
	return path;
}

// A config for a smallest-size pool at @path (which must outlive the config).
inline pm_pool_config PoolConfig(const std::string &path, const char *layout, size_t root_size)
{
	pm_pool_config cfg;
	pm_pool_config_init(&cfg);
	cfg.path = path.c_str();
	cfg.layout = layout;
	cfg.root_size = root_size;
	cfg.pool_size = PM_POOL_MIN_SIZE;
	return cfg;
}

// Closes *@pool and opens its file again with @cfg. Returns 0 or the failing
// call's code.
inline int ReopenPool(pm_pool **pool, const pm_pool_config &cfg)
{
	int ret = pm_pool_close(pool);
	return ret != 0 ? ret : pm_pool_open(pool, &cfg);
}

// What one crash-simulator run found.
struct CrashRun {
	int ret = 0;                 // pm_crashsim_run()'s value, or the failing setup call's
	pm_crashsim_stats st = {};
	std::string report;          // the first failure, with its replay command
};

// A range of memory a simulator tracks.
struct Region {
	void *addr;
	size_t len;
};

// A simulator config named @name (which must outlive it): every crash point
// if @one_in is 1, else one in @one_in; at most @max_images images each.
inline pm_crashsim_config SimConfig(const char *name, unsigned one_in, unsigned max_images)
{
	pm_crashsim_config cfg;
	pm_crashsim_config_init(&cfg);
	cfg.name = name;
	cfg.mode = one_in > 1 ? PM_CRASHSIM_SAMPLE : PM_CRASHSIM_EVERY;
	if (one_in > 1)
		cfg.sample_one_in = one_in;
	cfg.max_images = max_images;
	return cfg;
}

// Run @run under a simulator configured by @cfg that tracks @regions,
// checking crash points with @check.
inline CrashRun RunCrashSim(const pm_crashsim_config &cfg, const std::vector<Region> &regions,
	pm_crashsim_run_fn run, pm_crashsim_check_fn check, void *arg)
{
	CrashRun r;
	pm_crashsim *sim = nullptr;
	r.ret = pm_crashsim_new(&sim, &cfg);
	for (size_t i = 0; r.ret == 0 && i < regions.size(); i++)
		r.ret = pm_crashsim_track(sim, regions[i].addr, regions[i].len);
	if (r.ret == 0)
		r.ret = pm_crashsim_run(sim, run, check, arg);
	if (sim != nullptr) {
		pm_crashsim_get_stats(sim, &r.st);
		r.report = pm_crashsim_report(sim);
	} else {
		r.report = "no simulator";
	}
	pm_crashsim_delete(&sim);
	return r;
}

// RunCrashSim over the one range [@addr, @addr + @len).
inline CrashRun RunCrashSim(const pm_crashsim_config &cfg, void *addr, size_t len,
	pm_crashsim_run_fn run, pm_crashsim_check_fn check, void *arg)
{
	return RunCrashSim(cfg, std::vector<Region>{ { addr, len } }, run, check, arg);
}

// For a check function: crash @recover(@arg) (the recovery of the image
// being checked) at every point and check each result with @check;
// non-zero with the report in @msg if something failed.
inline int CrashRecovery(const char *name, void *addr, size_t len, pm_crashsim_run_fn recover,
	pm_crashsim_check_fn check, void *arg, char *msg, size_t msg_len)
{
	CrashRun r = RunCrashSim(SimConfig(name, 1, 8), addr, len, recover, check, arg);
	if (r.ret != 0)
		std::snprintf(msg, msg_len, "%s", r.report.c_str());
	return r.ret;
}

// For a check function: a second life crashed in turn. @second_life(@arg)
// recovers the image being checked and runs on; it is crashed at one point
// in @one_in (every point if 1), two images each (every word durable, every
// word newest), and each result is checked with @check; non-zero with the
// report in @msg if something failed.
inline int CrashAgain(const char *name, unsigned one_in, void *addr, size_t len,
	pm_crashsim_run_fn second_life, pm_crashsim_check_fn check, void *arg, char *msg,
	size_t msg_len)
{
	CrashRun r = RunCrashSim(SimConfig(name, one_in, 2), addr, len, second_life, check, arg);
	if (r.ret != 0)
		std::snprintf(msg, msg_len, "%s", r.report.c_str());
	return r.ret;
}

} // namespace pmtest

#endif
