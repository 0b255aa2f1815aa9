// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/proc_util.h -- what the multi-process tests of kv/ share: forked
// client processes and their exit codes, bounded waits, and dmkv-node
// daemons that are killed and restarted on the same port.
//
// A client is fork()ed without exec and _exit()s with its result: it never
// returns into gtest nor runs the parent's destructors. The parent never
// uses libfabric itself, since a child forked from a process with libfabric
// state would inherit half of it.
#ifndef KV_TESTS_PROC_UTIL_H
#define KV_TESTS_PROC_UTIL_H

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rdma/tests/node_proc.h"

namespace kvtest {

// A client's exit code when its function threw.
constexpr int kExitException = 7;

inline uint64_t NowNs()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline void SleepUs(unsigned us)
{
	struct timespec ts = {static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

// Fork -- run @fn in a child process; return its pid (or -1). The child ends
// with _exit(fn()): it never returns into gtest and never runs the parent's
// destructors (a LocalGroup would close nodes and unlink their pools, a
// NodeProcess would kill its daemon).
inline pid_t Fork(const std::function<int()> &fn)
{
	fflush(nullptr); // nothing buffered is written twice
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int code = kExitException;  // fn threw
	try {
		code = fn();
	} catch (...) {
	}
	fflush(nullptr);
	_exit(code);
}

// The exit code of a wait status: the code, 128 + signal, or -1.
inline int ExitCode(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

// WaitChild -- wait at most @timeout_ms for @pid: its exit code, 128 +
// signal, or -1 if it overran (it is then SIGKILLed and reaped).
inline int WaitChild(pid_t pid, int timeout_ms)
{
	int status = 0;
	for (int waited = 0;; waited += 5) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return -1;
		if (waited >= timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		SleepUs(5000);
	}
	return ExitCode(status);
}

// Wait (polling, at most @timeout_ms) until @cond() holds; false on timeout.
inline bool WaitFor(const std::function<bool()> &cond, int timeout_ms)
{
	uint64_t until = NowNs() + static_cast<uint64_t>(timeout_ms) * 1000000u;
	while (!cond()) {
		if (NowNs() >= until)
			return false;
		SleepUs(2000);
	}
	return true;
}

// A dmkv-node daemon that can be killed and restarted from its pool on the
// same port: the index's group is a fixed list of URIs.
class Daemon {
public:
	// @regions: the --region values (the index's and the data region).
	explicit Daemon(std::string name, std::vector<std::string> regions = {"8M", "8M"})
		: name_(std::move(name)), regions_(std::move(regions)) {}

	bool Start(std::string *err)
	{
		proc_ = std::make_unique<rdmatest::NodeProcess>(Options(0));
		if (!proc_->Start(err))
			return false;
		port_ = proc_->Port();
		return true;
	}

	// Start again on the pool (after Kill(SIGKILL)), at the same port,
	// which may linger a moment after the old process died.
	bool Restart(std::string *err)
	{
		proc_ = std::make_unique<rdmatest::NodeProcess>(Options(port_));
		for (int i = 0; i < 40; i++) {
			if (proc_->Start(err))
				return true;
			SleepUs(250000);
		}
		return false;
	}

	int Kill(int sig) { return proc_->Kill(sig); }

	// Lose the pool (after Kill(SIGKILL)) and start again on a new, empty
	// one at the same port: a node whose disk was replaced.
	bool RestartEmpty(std::string *err)
	{
		const std::string pool = proc_->PoolPath();
		if (unlink(pool.c_str()) != 0) {
			*err = "unlink " + pool + ": " + strerror(errno);
			return false;
		}
		unlink((pool + ".node").c_str());
		return Restart(err);
	}

	std::string Uri() const { return "ofi+tcp://127.0.0.1:" + std::to_string(port_); }

private:
	rdmatest::NodeOptions Options(int port) const
	{
		rdmatest::NodeOptions o;
		o.name = name_;
		o.regions = regions_;
		o.backends = "tcp";
		o.extra = {"--durability", "msync", "--port", std::to_string(port)};
		// KV_PROC_POLL=busy|adaptive picks the daemons' poll mode.
		if (const char *poll = getenv("KV_PROC_POLL")) {
			o.extra.push_back("--poll");
			o.extra.push_back(poll);
		}
		return o;
	}

	std::string name_;
	std::vector<std::string> regions_;
	int port_ = 0;
	std::unique_ptr<rdmatest::NodeProcess> proc_;
};

}  // namespace kvtest

#endif  // KV_TESTS_PROC_UTIL_H
