// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/test_util.h -- helpers shared by the pm tests.
#ifndef PM_TESTS_TEST_UTIL_H
#define PM_TESTS_TEST_UTIL_H

#include <unistd.h>

#include <cstdlib>
#include <string>

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

} // namespace pmtest

#endif
