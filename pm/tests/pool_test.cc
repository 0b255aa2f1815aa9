// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/pool_test.cc -- pool lifecycle and every kind of bad pool file.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <libpmemobj.h>

#include <pm/error.h>
#include <pm/pool.h>
#include <pm/ptr.h>

#include "pm/tests/test_util.h"

namespace {

struct Root {
	uint64_t counter;
	uint64_t values[15];
};

pm_pool_config Config(const std::string &path)
{
	return pmtest::PoolConfig(path, "pool-test", sizeof(Root));
}

std::string MakePool(const std::string &name)
{
	std::string path = pmtest::TempPath(name);
	pm_pool_config cfg = Config(path);
	pm_pool *pool = nullptr;
	EXPECT_EQ(pm_pool_create(&pool, &cfg), 0) << pm_errormsg();
	PM_POOL_ROOT(pool, Root)->counter = 42;
	pm_persist(PM_POOL_ROOT(pool, Root), sizeof(Root));
	EXPECT_EQ(pm_pool_close(&pool), 0);
	return path;
}

void WriteBytes(const std::string &path, off_t at, const std::vector<uint8_t> &bytes)
{
	int fd = open(path.c_str(), O_WRONLY | O_CREAT, 0600);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), at), (ssize_t)bytes.size());
	close(fd);
}

std::vector<uint8_t> RandomBytes(size_t n, unsigned seed)
{
	std::mt19937 gen(seed);
	std::vector<uint8_t> v(n);
	for (auto &b : v)
		b = static_cast<uint8_t>(gen());
	return v;
}

int OpenResult(const pm_pool_config &cfg)
{
	pm_pool *pool = nullptr;
	int ret = pm_pool_open(&pool, &cfg);
	if (ret == 0)
		EXPECT_EQ(pm_pool_close(&pool), 0);
	else
		EXPECT_EQ(pool, nullptr);
	return ret;
}

TEST(Pool, CreateReopenKeepsRootData)
{
	std::string path = MakePool("reopen.pool");
	pm_pool_config cfg = Config(path);
	pm_pool *pool = nullptr;
	ASSERT_EQ(pm_pool_open(&pool, &cfg), 0) << pm_errormsg();
	EXPECT_EQ(PM_POOL_ROOT(pool, Root)->counter, 42u);
	EXPECT_EQ(pm_pool_root_size(pool), sizeof(Root));
	EXPECT_EQ(pm_pool_version(pool), 1u);
	EXPECT_EQ(reinterpret_cast<uintptr_t>(pm_pool_root(pool)) % 64, 0u);
	// Not pmem here and not forced: AUTO resolves to msync.
	EXPECT_EQ(pm_pool_durability(pool), PM_DURABILITY_MSYNC);
	EXPECT_EQ(pm_region_durability(pm_pool_root(pool)), PM_DURABILITY_MSYNC);
	EXPECT_EQ(pm_pool_close(&pool), 0);
	EXPECT_EQ(pool, nullptr);
	EXPECT_EQ(pm_pool_close(&pool), 0); // NULL accepted
	EXPECT_EQ(pm_pool_check(&cfg), 0);
}

TEST(Pool, CreateRefusesExistingFileAndBadConfig)
{
	std::string path = MakePool("exists.pool");
	pm_pool_config cfg = Config(path);
	pm_pool *pool = nullptr;
	EXPECT_EQ(pm_pool_create(&pool, &cfg), -EEXIST);
	EXPECT_EQ(OpenResult(cfg), 0); // the existing pool is untouched

	std::string other = pmtest::TempPath("badcfg.pool");
	cfg = Config(other);
	cfg.layout = nullptr;
	EXPECT_EQ(pm_pool_create(&pool, &cfg), -EINVAL);
	cfg.layout = "";
	EXPECT_EQ(pm_pool_create(&pool, &cfg), -EINVAL);
	std::string long_layout(PM_POOL_LAYOUT_MAX + 1, 'x');
	cfg.layout = long_layout.c_str();
	EXPECT_EQ(pm_pool_create(&pool, &cfg), -EINVAL);
	cfg = Config(other);
	cfg.pool_size = PM_POOL_MIN_SIZE - 1;
	EXPECT_EQ(pm_pool_create(&pool, &cfg), -EINVAL);
	cfg = Config(other);
	cfg.root_size = PM_POOL_MIN_SIZE * 4; // cannot fit
	EXPECT_EQ(pm_pool_create(&pool, &cfg), -ENOMEM);
	EXPECT_NE(access(other.c_str(), F_OK), 0) << "failed create left a file";
	cfg = Config(other);
	cfg.durability = PM_DURABILITY_PMEM; // not pmem and not forced
	EXPECT_EQ(pm_pool_create(&pool, &cfg), PM_E_NOT_PMEM);
	EXPECT_NE(access(other.c_str(), F_OK), 0);
	cfg.path = nullptr;
	EXPECT_EQ(pm_pool_create(&pool, &cfg), -EINVAL);
}

TEST(Pool, WrongLayoutVersionOrRootSize)
{
	std::string path = MakePool("mismatch.pool");
	pm_pool_config cfg = Config(path);
	cfg.layout = "another-layout";
	EXPECT_EQ(OpenResult(cfg), PM_E_LAYOUT);
	EXPECT_NE(std::string(pm_errormsg()).find("layout"), std::string::npos);
	cfg = Config(path);
	cfg.version = 2;
	EXPECT_EQ(OpenResult(cfg), PM_E_VERSION);
	cfg = Config(path);
	cfg.root_size = sizeof(Root) + 8;
	EXPECT_EQ(OpenResult(cfg), PM_E_LAYOUT);
	EXPECT_EQ(OpenResult(Config(path)), 0); // nothing was damaged
}

TEST(Pool, MissingEmptyTinyAndForeignFiles)
{
	EXPECT_EQ(OpenResult(Config(pmtest::TempPath("missing.pool"))), -ENOENT);

	std::string empty = pmtest::TempPath("empty.pool");
	close(open(empty.c_str(), O_CREAT | O_WRONLY, 0600));
	EXPECT_EQ(OpenResult(Config(empty)), PM_E_CORRUPT); // PMDK itself dies of SIGBUS here

	std::string tiny = pmtest::TempPath("tiny.pool");
	close(open(tiny.c_str(), O_CREAT | O_WRONLY, 0600));
	WriteBytes(tiny, 0, RandomBytes(4096, 1));
	EXPECT_EQ(OpenResult(Config(tiny)), PM_E_CORRUPT);

	std::string zeros = pmtest::TempPath("zeros.pool");
	ASSERT_EQ(truncate(zeros.c_str(), 0), -1);
	close(open(zeros.c_str(), O_CREAT | O_WRONLY, 0600));
	ASSERT_EQ(truncate(zeros.c_str(), PM_POOL_MIN_SIZE), 0);
	EXPECT_EQ(OpenResult(Config(zeros)), PM_E_CORRUPT);

	EXPECT_EQ(OpenResult(Config(pmtest::TempPath(""))), PM_E_CORRUPT); // a directory
}

TEST(Pool, TruncatedPool)
{
	std::string path = MakePool("truncated.pool");
	ASSERT_EQ(truncate(path.c_str(), PM_POOL_MIN_SIZE - 4096), 0);
	EXPECT_EQ(OpenResult(Config(path)), PM_E_CORRUPT);
}

// Damage at several places, including spots where PMDK's own check and open
// crash with SIGSEGV: the caller only ever sees PM_E_CORRUPT.
TEST(Pool, DamagedPoolsNeverCrashTheCaller)
{
	const off_t spots[] = {0, 100, 4096, 8192, 1 << 20, 3 << 20};
	unsigned seed = 7;
	for (off_t at : spots) {
		std::string path = MakePool("damaged.pool");
		WriteBytes(path, at, RandomBytes(at >= 8192 ? 65536 : 64, seed++));
		int ret = OpenResult(Config(path));
		// Damage PMDK cannot notice (user data) may open; anything else is
		// reported as corrupt, never as a crash.
		EXPECT_TRUE(ret == PM_E_CORRUPT || ret == 0)
			<< "offset " << at << ": " << ret << " " << pm_errormsg();
		if (at < 8192) {
			EXPECT_EQ(ret, PM_E_CORRUPT) << "header damage at " << at;
		}
	}
}

TEST(Pool, InterruptedCreationIsCorrupt)
{
	std::string path = MakePool("interrupted.pool");
	pm_pool_config cfg = Config(path);
	pm_pool *pool = nullptr;
	ASSERT_EQ(pm_pool_open(&pool, &cfg), 0);
	// As if the header had been lost (before creation became atomic, also
	// what a create interrupted before the header left at the path).
	char *hdr = static_cast<char *>(pmemobj_direct(pmemobj_root(pm_pool_pmemobj(pool), 0)));
	std::memset(hdr, 0, 8);
	pm_persist(hdr, 8);
	ASSERT_EQ(pm_pool_close(&pool), 0);
	EXPECT_EQ(OpenResult(cfg), PM_E_CORRUPT);
	EXPECT_NE(std::string(pm_errormsg()).find("creation did not finish"), std::string::npos)
		<< pm_errormsg();
}

bool Exists(const std::string &path)
{
	return access(path.c_str(), F_OK) == 0;
}

// What a format callback saw, so the test can check it after the create.
struct FormatSeen {
	std::string path;
	bool path_existed = true;
	bool creating_existed = false;
	int fail = 0;
};

int FormatRoot(pm_pool *pool, void *ctx)
{
	auto *seen = static_cast<FormatSeen *>(ctx);
	seen->path_existed = Exists(seen->path);
	seen->creating_existed = Exists(seen->path + PM_POOL_CREATING_SUFFIX);
	if (seen->fail != 0)
		return pm_error_set(seen->fail, "format refused on purpose");
	PM_POOL_ROOT(pool, Root)->counter = 7;
	pm_persist(PM_POOL_ROOT(pool, Root), sizeof(Root));
	return 0;
}

// The caller's format runs on the pool while it is still PATH.creating; the
// pool appears at PATH only afterwards, with what format wrote.
TEST(Pool, CreateFormatsBeforeThePathAppears)
{
	FormatSeen seen;
	seen.path = pmtest::TempPath("format.pool");
	pm_pool_config cfg = Config(seen.path);
	cfg.format = FormatRoot;
	cfg.format_ctx = &seen;
	pm_pool *pool = nullptr;
	ASSERT_EQ(pm_pool_create(&pool, &cfg), 0) << pm_errormsg();
	EXPECT_FALSE(seen.path_existed);
	EXPECT_TRUE(seen.creating_existed);
	EXPECT_FALSE(Exists(seen.path + PM_POOL_CREATING_SUFFIX));
	ASSERT_EQ(pm_pool_close(&pool), 0);
	cfg.format = nullptr;
	ASSERT_EQ(pm_pool_open(&pool, &cfg), 0) << pm_errormsg();
	EXPECT_EQ(PM_POOL_ROOT(pool, Root)->counter, 7u);
	EXPECT_EQ(pm_pool_close(&pool), 0);
}

TEST(Pool, CreateFormatFailureLeavesNoFileAndKeepsItsMessage)
{
	FormatSeen seen;
	seen.path = pmtest::TempPath("format_fails.pool");
	seen.fail = -EIO;
	pm_pool_config cfg = Config(seen.path);
	cfg.format = FormatRoot;
	cfg.format_ctx = &seen;
	pm_pool *pool = nullptr;
	EXPECT_EQ(pm_pool_create(&pool, &cfg), -EIO);
	EXPECT_EQ(pool, nullptr);
	EXPECT_NE(std::string(pm_errormsg()).find("format refused on purpose"),
		std::string::npos) << pm_errormsg();
	EXPECT_FALSE(Exists(seen.path));
	EXPECT_FALSE(Exists(seen.path + PM_POOL_CREATING_SUFFIX));
}

// A PATH.creating nobody holds is what a killed create left: the next
// create removes it. One that is locked belongs to a live create.
TEST(Pool, CreateRemovesAnInterruptedCreatesLeftoverButNotALiveOne)
{
	std::string path = pmtest::TempPath("leftover.pool");
	std::string creating = path + PM_POOL_CREATING_SUFFIX;
	WriteBytes(creating, 0, RandomBytes(1 << 20, 5));
	pm_pool_config cfg = Config(path);
	pm_pool *pool = nullptr;
	ASSERT_EQ(pm_pool_create(&pool, &cfg), 0) << pm_errormsg();
	EXPECT_FALSE(Exists(creating));
	ASSERT_EQ(pm_pool_close(&pool), 0);

	std::string busy = pmtest::TempPath("live_create.pool");
	std::string busy_creating = busy + PM_POOL_CREATING_SUFFIX;
	WriteBytes(busy_creating, 0, RandomBytes(4096, 6));
	// A live create holds an OFD write lock on it (pool.c, pm_pool_claim).
	int fd = open(busy_creating.c_str(), O_RDWR);
	ASSERT_GE(fd, 0);
	struct flock fl = {};
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	ASSERT_EQ(fcntl(fd, F_OFD_SETLK, &fl), 0);
	cfg = Config(busy);
	EXPECT_EQ(pm_pool_create(&pool, &cfg), -EBUSY);
	EXPECT_NE(std::string(pm_errormsg()).find("another process is creating"),
		std::string::npos) << pm_errormsg();
	EXPECT_TRUE(Exists(busy_creating));
	EXPECT_FALSE(Exists(busy));
	close(fd);
	unlink(busy_creating.c_str());
}

TEST(Pool, SecondOpenIsBusy)
{
	std::string path = MakePool("busy.pool");
	pm_pool_config cfg = Config(path);
	pm_pool *pool = nullptr;
	ASSERT_EQ(pm_pool_open(&pool, &cfg), 0);
	EXPECT_EQ(OpenResult(cfg), -EBUSY);
	cfg.flags = PM_POOL_TRUSTED; // PMDK's own lock, without the isolated check
	EXPECT_EQ(OpenResult(cfg), -EBUSY);
	EXPECT_EQ(pm_pool_close(&pool), 0);
}

TEST(Pool, OffsetsAndAllocation)
{
	std::string path = MakePool("offsets.pool");
	pm_pool_config cfg = Config(path);
	pm_pool *pool = nullptr;
	ASSERT_EQ(pm_pool_open(&pool, &cfg), 0);
	Root *root = PM_POOL_ROOT(pool, Root);
	uint64_t off = pm_pool_off(pool, root);
	void *p = nullptr;
	ASSERT_EQ(pm_pool_ptr(pool, off, sizeof(Root), &p), 0);
	EXPECT_EQ(p, root);
	EXPECT_EQ(pm_pool_off(pool, nullptr), PM_OFF_NULL);
	EXPECT_EQ(pm_pool_ptr(pool, PM_OFF_NULL, 8, &p), -ERANGE);
	EXPECT_EQ(pm_pool_ptr(pool, pm_pool_size(pool) - 8, 16, &p), -ERANGE);
	EXPECT_EQ(pm_pool_ptr(pool, UINT64_MAX, 16, &p), -ERANGE);

	uint64_t obj = 0;
	ASSERT_EQ(pm_pool_alloc(pool, 4096, 7, &obj), 0);
	ASSERT_EQ(pm_pool_ptr(pool, obj, 4096, &p), 0);
	EXPECT_EQ(static_cast<uint64_t *>(p)[511], 0u);
	root->values[0] = obj; // link it, so it is found after reopening
	pm_persist(&root->values[0], 8);
	EXPECT_EQ(pm_pool_alloc(pool, 0, 7, &obj), -EINVAL);
	ASSERT_EQ(pm_pool_close(&pool), 0);

	ASSERT_EQ(pm_pool_open(&pool, &cfg), 0);
	root = PM_POOL_ROOT(pool, Root);
	EXPECT_EQ(pm_pool_ptr(pool, root->values[0], 4096, &p), 0);
	EXPECT_EQ(pm_pool_free(pool, root->values[0]), 0);
	EXPECT_EQ(pm_pool_free(pool, pm_pool_size(pool)), -ERANGE);
	EXPECT_EQ(pm_pool_close(&pool), 0);
}

TEST(Ptr, OffsetsAndMarks)
{
	char base[64] = {};
	EXPECT_EQ(pm_off_from_ptr(base, base + 24), 24u);
	EXPECT_EQ(pm_off_to_ptr(base, 24), base + 24);
	EXPECT_EQ(pm_off_to_ptr(base, PM_OFF_NULL), nullptr);
	uintptr_t b = reinterpret_cast<uintptr_t>(base);
	EXPECT_EQ(pm_off_from_addr(b, base + 24), 24u);
	EXPECT_EQ(pm_off_to_addr(b, 24), base + 24);
	EXPECT_EQ(pm_off_to_addr(b, 0), base); // no NULL mapping
	EXPECT_EQ(pm_off_to_addr(0, b + 8), base + 8); // base 0: raw addresses
	EXPECT_TRUE(pm_off_in_range(0, 64, 64));
	EXPECT_TRUE(pm_off_in_range(64, 0, 64));
	EXPECT_FALSE(pm_off_in_range(57, 8, 64));
	EXPECT_FALSE(pm_off_in_range(65, 0, 64));
	EXPECT_FALSE(pm_off_in_range(pm_off_from_addr(b + 8, base), 8, 64)); // below the base
	EXPECT_FALSE(pm_off_in_range(8, SIZE_MAX, 64)); // no overflow
	uint64_t w = 0x1000;
	EXPECT_TRUE(pm_word_is_markable(w));
	EXPECT_FALSE(pm_word_is_markable(w | 1));
	EXPECT_EQ(pm_word_marks(pm_word_mark(w, 1)), 1u);
	EXPECT_EQ(pm_word_mark(w, 0xff), w | PM_MARK_MASK); // only mark bits are set
	EXPECT_EQ(pm_word_unmark(pm_word_mark(w, 5)), w);
}

} // namespace
