// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/node_proc.cc -- dmkv-node child processes for tests.
#include "rdma/tests/node_proc.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <glob.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rdmatest {

namespace {

// Polling period of the bounded waits.
constexpr int kPollMs = 10;

void SleepMs(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

std::string ReadFile(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

// fork + exec @argv with stdout and stderr appended to @out / @err (paths).
// Returns the pid, or -1 with errno.
pid_t Spawn(const std::vector<std::string> &argv, const std::string &out,
	const std::string &err)
{
	std::vector<char *> cargv;
	for (const std::string &a : argv)
		cargv.push_back(const_cast<char *>(a.c_str()));
	cargv.push_back(nullptr);
	int ofd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	int efd = open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (ofd < 0 || efd < 0) {
		int e = errno;
		if (ofd >= 0)
			close(ofd);
		if (efd >= 0)
			close(efd);
		errno = e;
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		// Only async-signal-safe calls from here on.
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, nullptr);
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(ofd, 1);
		dup2(efd, 2);
		execv(cargv[0], cargv.data());
		static const char msg[] = "node_proc: exec of dmkv-node failed\n";
		(void)!write(2, msg, sizeof(msg) - 1);
		_exit(127);
	}
	int e = errno;
	close(ofd);
	close(efd);
	errno = e;
	return pid;
}

// waitpid for @pid at most @timeout_ms; true with *@status if it ended.
bool WaitBounded(pid_t pid, int *status, int timeout_ms)
{
	for (int waited = 0;; waited += kPollMs) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
		if (waited >= timeout_ms)
			return false;
		SleepMs(kPollMs);
	}
}

int ExitCode(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

} // namespace

std::string TempDir()
{
	const char *dir = std::getenv("TEST_TMPDIR");
	return dir != nullptr ? dir : "/tmp";
}

std::string FreshPath(const std::string &name)
{
	std::string path = TempDir() + "/" + name;
	unlink(path.c_str());
	return path;
}

std::string NodeBinary()
{
	const char *srcdir = std::getenv("TEST_SRCDIR");
	const char *ws = std::getenv("TEST_WORKSPACE");
	std::string path = std::string(srcdir != nullptr ? srcdir : ".") + "/" +
		(ws != nullptr ? ws : "dmem") + "/rdma/dmkv-node";
	return path;
}

RunResult RunNode(const std::vector<std::string> &args, int timeout_ms)
{
	static std::atomic<unsigned> seq{0};
	RunResult r;
	std::string base = TempDir() + "/run." + std::to_string(getpid()) + "." +
		std::to_string(seq++);
	std::string out = base + ".out", err = base + ".err";
	std::vector<std::string> argv = {NodeBinary()};
	argv.insert(argv.end(), args.begin(), args.end());

	pid_t pid = Spawn(argv, out, err);
	if (pid < 0) {
		r.err = std::string("spawn failed: ") + std::strerror(errno);
		return r;
	}
	int status = 0;
	if (!WaitBounded(pid, &status, timeout_ms)) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		r.timed_out = true;
	} else if (WIFEXITED(status)) {
		r.exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		r.signal = WTERMSIG(status);
	}
	r.out = ReadFile(out);
	r.err = ReadFile(err);
	unlink(out.c_str());
	unlink(err.c_str());
	return r;
}

NodeProcess::NodeProcess(NodeOptions opts) : opts_(std::move(opts))
{
	pool_ = TempDir() + "/" + opts_.name + ".pool";
	ready_ = TempDir() + "/" + opts_.name + ".ready";
	log_ = TempDir() + "/" + opts_.name + ".stderr";
}

NodeProcess::~NodeProcess()
{
	if (pid_ > 0) {
		kill(pid_, SIGKILL);
		int status;
		while (waitpid(pid_, &status, 0) < 0 && errno == EINTR)
			;
	}
}

std::vector<std::string> NodeProcess::Args() const
{
	std::vector<std::string> a = {NodeBinary(), "--pool", pool_, "--port", "0",
		"--ready-file", ready_};
	if (opts_.create) {
		a.push_back("--create");
		for (const std::string &r : opts_.regions) {
			a.push_back("--region");
			a.push_back(r);
		}
	}
	if (!opts_.backends.empty()) {
		a.push_back("--backends");
		a.push_back(opts_.backends);
	}
	if (!opts_.token.empty()) {
		a.push_back("--token");
		a.push_back(opts_.token);
	}
	a.insert(a.end(), opts_.extra.begin(), opts_.extra.end());
	return a;
}

bool NodeProcess::Start(std::string *error, int timeout_ms)
{
	auto fail = [&](const std::string &why) {
		if (error != nullptr)
			*error = why + "\n--- dmkv-node stderr (tail) ---\n" + StderrTail();
		return false;
	};
	if (!Launch(error))
		return false;
	for (int waited = 0;; waited += kPollMs) {
		int status;
		pid_t r = waitpid(pid_, &status, WNOHANG);
		if (r == pid_) {
			pid_ = -1;
			return fail("dmkv-node exited during start-up with code " +
				std::to_string(ExitCode(status)));
		}
		std::string text = ReadFile(ready_);
		// The daemon writes the file atomically, so a complete line is
		// the whole port.
		if (!text.empty() && text.back() == '\n') {
			port_ = std::atoi(text.c_str());
			if (port_ > 0)
				return true;
			return fail("ready file holds '" + text + "'");
		}
		if (waited >= timeout_ms) {
			kill(pid_, SIGKILL);
			waitpid(pid_, &status, 0);
			pid_ = -1;
			return fail("dmkv-node not ready after " + std::to_string(timeout_ms) + " ms");
		}
		SleepMs(kPollMs);
	}
}

bool NodeProcess::Launch(std::string *error)
{
	if (pid_ > 0) {
		if (error != nullptr)
			*error = "already running";
		return false;
	}
	unlink(ready_.c_str());
	port_ = 0;
	{
		std::ofstream mark(log_, std::ios::app);
		mark << "=== node_proc: starting dmkv-node ===\n";
	}
	pid_ = Spawn(Args(), log_, log_);
	if (pid_ < 0) {
		if (error != nullptr)
			*error = std::string("spawn failed: ") + std::strerror(errno);
		return false;
	}
	return true;
}

bool NodeProcess::Restart(std::string *error, int timeout_ms)
{
	if (pid_ > 0)
		Terminate(timeout_ms);
	return Start(error, timeout_ms);
}

std::string NodeProcess::ControlAddress() const
{
	return "127.0.0.1:" + std::to_string(port_);
}

bool NodeProcess::Running()
{
	if (pid_ <= 0)
		return false;
	int status;
	if (waitpid(pid_, &status, WNOHANG) == pid_) {
		pid_ = -1;
		return false;
	}
	return true;
}

int NodeProcess::Kill(int sig)
{
	if (pid_ <= 0)
		return -1;
	if (kill(pid_, sig) != 0)
		return -1;
	if (sig == SIGKILL)
		return Wait();
	return 0;
}

int NodeProcess::Wait(int timeout_ms)
{
	if (pid_ <= 0)
		return -1;
	int status;
	if (!WaitBounded(pid_, &status, timeout_ms)) {
		kill(pid_, SIGKILL);
		waitpid(pid_, &status, 0);
		pid_ = -1;
		return -1;
	}
	pid_ = -1;
	return ExitCode(status);
}

int NodeProcess::Terminate(int timeout_ms)
{
	if (pid_ <= 0)
		return -1;
	kill(pid_, SIGTERM);
	return Wait(timeout_ms);
}

std::string NodeProcess::Stderr() const
{
	return ReadFile(log_);
}

std::string NodeProcess::StderrTail(size_t n) const
{
	std::string s = ReadFile(log_);
	return s.size() > n ? s.substr(s.size() - n) : s;
}

namespace {

// The IPv4 address of the netdev behind the first RDMA port that has one
// (RoCE and Soft-RoCE list it in sysfs), or "" if there is none.
std::string RdmaNetdevAddress()
{
	glob_t g;
	std::string found;

	if (glob("/sys/class/infiniband/*/ports/*/gid_attrs/ndevs/0", 0, nullptr, &g) != 0)
		return found;
	ifaddrs *ifs = nullptr;
	if (getifaddrs(&ifs) != 0) {
		globfree(&g);
		return found;
	}
	for (size_t i = 0; i < g.gl_pathc && found.empty(); i++) {
		std::ifstream f(g.gl_pathv[i]);
		std::string netdev;
		if (!std::getline(f, netdev) || netdev.empty())
			continue;
		for (ifaddrs *a = ifs; a != nullptr; a = a->ifa_next) {
			if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET ||
			    netdev != a->ifa_name)
				continue;
			char buf[INET_ADDRSTRLEN];
			auto *sin = reinterpret_cast<sockaddr_in *>(a->ifa_addr);
			if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)) != nullptr) {
				found = buf;
				break;
			}
		}
	}
	freeifaddrs(ifs);
	globfree(&g);
	return found;
}

} // namespace

const char *RdmaTestHost()
{
	static const std::string host = [] {
		const char *h = getenv("RDMA_VERBS_TEST_HOST");
		if (h != nullptr && h[0] != '\0')
			return std::string(h);
		std::string a = RdmaNetdevAddress();
		return a.empty() ? std::string("127.0.0.1") : a;
	}();
	return host.c_str();
}

} // namespace rdmatest
