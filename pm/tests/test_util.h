// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/test_util.h -- helpers shared by the pm tests.
#ifndef PM_TESTS_TEST_UTIL_H
#define PM_TESTS_TEST_UTIL_H

#include <unistd.h>

#include <cstdlib>
#include <string>

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

} // namespace pmtest

#endif
