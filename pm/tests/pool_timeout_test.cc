// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/pool_timeout_test.cc -- the isolated check's time limit is
// enforced by the opening process: a hanging check ends in PM_E_CORRUPT
// with the child killed and reaped, whatever the caller's SIGALRM mask and
// disposition or SIGCHLD handling. Linked against //pm:pool_testing, whose
// seam makes the check child hang.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include <pm/error.h>
#include <pm/pool.h>

#include "pm/src/pool_testing.h"

namespace {

// Reaps every child it is told about, as some callers' handlers do.
void ReapAll(int)
{
	int saved = errno;
	while (waitpid(-1, nullptr, WNOHANG) > 0) {
	}
	errno = saved;
}

class PoolTimeout : public ::testing::Test {
protected:
	void SetUp() override
	{
		const char *dir = std::getenv("TEST_TMPDIR");
		path_ = std::string(dir != nullptr ? dir : "/tmp") + "/timeout.pool";
		unlink(path_.c_str());
		pm_pool_config_init(&cfg_);
		cfg_.path = path_.c_str();
		cfg_.layout = "timeout-test";
		cfg_.pool_size = PM_POOL_MIN_SIZE;
		cfg_.check_timeout_s = 1;
		pm_pool *pool = nullptr;
		ASSERT_EQ(pm_pool_create(&pool, &cfg_), 0) << pm_errormsg();
		ASSERT_EQ(pm_pool_close(&pool), 0);
		ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &mask_), 0);
		ASSERT_EQ(sigaction(SIGALRM, nullptr, &alrm_), 0);
		ASSERT_EQ(sigaction(SIGCHLD, nullptr, &chld_), 0);
	}

	void TearDown() override
	{
		pm_pool__testing_hang_check = 0;
		pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
		sigaction(SIGALRM, &alrm_, nullptr);
		sigaction(SIGCHLD, &chld_, nullptr);
		unlink(path_.c_str());
	}

	int Open()
	{
		pm_pool *pool = nullptr;
		int ret = pm_pool_open(&pool, &cfg_);
		if (ret == 0)
			EXPECT_EQ(pm_pool_close(&pool), 0);
		else
			EXPECT_EQ(pool, nullptr);
		return ret;
	}

	// A hanging check gives PM_E_CORRUPT with today's message and leaves
	// no child behind, and the pool opens once the check no longer hangs.
	void ExpectHangBoundedThenOpen()
	{
		pm_pool__testing_hang_check = 1;
		EXPECT_EQ(Open(), PM_E_CORRUPT);
		EXPECT_NE(std::string(pm_errormsg()).find("did not finish checking the pool within 1 s"),
			std::string::npos) << pm_errormsg();
		errno = 0;
		EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1) << "a check child is left over";
		EXPECT_EQ(errno, ECHILD);
		pm_pool__testing_hang_check = 0;
		EXPECT_EQ(Open(), 0) << pm_errormsg();
	}

	std::string path_;
	pm_pool_config cfg_;
	sigset_t mask_;
	struct sigaction alrm_, chld_;
};

TEST_F(PoolTimeout, SigalrmBlockedInTheCaller)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &set, nullptr), 0);
	ExpectHangBoundedThenOpen();
}

TEST_F(PoolTimeout, SigalrmIgnoredByTheCaller)
{
	ASSERT_NE(signal(SIGALRM, SIG_IGN), SIG_ERR);
	ExpectHangBoundedThenOpen();
}

// The kernel reaps the child itself, so the check's own waitpid finds none.
TEST_F(PoolTimeout, SigchldIgnoredByTheCaller)
{
	ASSERT_NE(signal(SIGCHLD, SIG_IGN), SIG_ERR);
	EXPECT_EQ(Open(), 0) << pm_errormsg();
	ExpectHangBoundedThenOpen();
}

// The caller's handler may collect the check child before pm_pool_open does.
TEST_F(PoolTimeout, CallerSigchldHandlerReapsAnyChild)
{
	struct sigaction sa = {};
	sa.sa_handler = ReapAll;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(sigaction(SIGCHLD, &sa, nullptr), 0);
	for (int i = 0; i < 20; i++)
		ASSERT_EQ(Open(), 0) << "open " << i << ": " << pm_errormsg();
	ExpectHangBoundedThenOpen();
}

// check_timeout_s = 0 means no limit: a check that finishes still opens.
TEST_F(PoolTimeout, NoLimitStillOpens)
{
	cfg_.check_timeout_s = 0;
	EXPECT_EQ(Open(), 0) << pm_errormsg();
}

} // namespace
