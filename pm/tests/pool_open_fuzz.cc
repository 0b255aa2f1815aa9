// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/pool_open_fuzz.cc -- fuzz target for opening damaged pools.
//
// Input: 4 bytes of offset (little endian, modulo the pool size), then the
// bytes written over a valid pool at that offset. pm_pool_open must return 0
// or one of its documented error codes; anything else (a crash included)
// is a bug. Built as a libFuzzer binary with --config=fuzz, and as a seeded
// regression test (pool_open_fuzz_main.cc) otherwise.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <pm/error.h>
#include <pm/pool.h>

#include "pm/tests/test_util.h"

namespace {

struct Template {
	std::string dir, path;
	std::vector<uint8_t> image;
};

pm_pool_config Config(const std::string &path)
{
	pm_pool_config cfg = pmtest::PoolConfig(path, "fuzz", 4096);
	cfg.check_timeout_s = 5; // healthy 8 MiB pools check in milliseconds
	return cfg;
}

// The valid pool every input damages, made once per process.
const Template &GetTemplate()
{
	static Template *t = [] {
		auto *tp = new Template;
		const char *tmp = std::getenv("TEST_TMPDIR");
		char dir[4096];
		std::snprintf(dir, sizeof(dir), "%s/pm-fuzz-XXXXXX", tmp ? tmp : "/tmp");
		if (mkdtemp(dir) == nullptr)
			std::abort();
		tp->dir = dir;
		tp->path = tp->dir + "/pool";
		std::string tpl = tp->dir + "/template";
		pm_pool_config cfg = Config(tpl);
		pm_pool *pool = nullptr;
		if (pm_pool_create(&pool, &cfg) != 0)
			std::abort();
		std::memset(pm_pool_root(pool), 0xab, 4096);
		pm_persist(pm_pool_root(pool), 4096);
		pm_pool_close(&pool);
		int fd = open(tpl.c_str(), O_RDONLY);
		tp->image.resize(PM_POOL_MIN_SIZE);
		if (fd < 0 || pread(fd, tp->image.data(), tp->image.size(), 0) !=
				(ssize_t)tp->image.size())
			std::abort();
		close(fd);
		unlink(tpl.c_str());
		return tp;
	}();
	return *t;
}

bool Documented(int ret)
{
	return ret == 0 || ret == PM_E_CORRUPT || ret == PM_E_LAYOUT || ret == PM_E_VERSION ||
		ret == -EBUSY || ret == -ENOMEM;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const Template &t = GetTemplate();
	if (size < 4)
		return 0;
	uint32_t off;
	std::memcpy(&off, data, 4);
	off %= t.image.size();
	size_t n = std::min(size - 4, t.image.size() - off);

	int fd = open(t.path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
	if (fd < 0 || write(fd, t.image.data(), t.image.size()) != (ssize_t)t.image.size() ||
			pwrite(fd, data + 4, n, off) != (ssize_t)n)
		std::abort();
	close(fd);

	pm_pool_config cfg = Config(t.path);
	pm_pool *pool = nullptr;
	int ret = pm_pool_open(&pool, &cfg);
	if (!Documented(ret))
		std::abort(); // an undocumented outcome is a bug
	if (ret == 0) {
		volatile uint8_t sum = 0;
		const uint8_t *root = static_cast<const uint8_t *>(pm_pool_root(pool));
		// Reading the whole root lets ASan prove it is mapped.
		for (size_t i = 0; i < 4096; i++)
			sum += root[i];
		(void)sum;
		if (pm_pool_close(&pool) != 0)
			std::abort();
	}
	return 0;
}
