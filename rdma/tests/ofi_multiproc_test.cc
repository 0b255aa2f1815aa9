// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/ofi_multiproc_test.cc -- the ofi backends against the dmkv-node
// daemon, with clients in other processes:
//   - the ordering property under load: a writer publishes versions with
//     "write the buffer, CAS the metadata" batches while readers in other
//     processes read "metadata, buffer" and must never see metadata ahead of
//     the buffer, over tcp and shm;
//   - a node SIGKILLed after a persist was acknowledged comes back from its
//     pool with the data, and the client reconnects;
//   - a node in one network namespace and a client in another, joined by a
//     veth pair (skipped where namespaces cannot be made).
//
// Child processes are this binary run again (/proc/self/exe --child ROLE),
// so each starts with a fresh libfabric; the parent waits for each with a
// bound and kills it on overrun. Every loop is bounded in count.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <rdma/rdma.h>

#include "rdma/tests/node_proc.h"

// See ofi_test.cc: libfabric is not instrumented, and its shm queues and
// its exit-time destructor confuse ThreadSanitizer.
extern "C" const char *__tsan_default_suppressions()
{
	return "called_from_lib:libfabric.so.1\n"
	       "mutex:_dl_call_fini\n";
}

namespace {

constexpr const char *kToken = "mp-token";
constexpr uint64_t kMetaOff = 0;       // metadata word
constexpr uint64_t kBufOff = 4096;     // the 4 KiB buffer
constexpr uint32_t kBufLen = 4096;
constexpr unsigned kWords = kBufLen / 8;

// Exit codes of the children.
enum ChildExit {
	kChildOk = 0,
	kChildViolation = 1,  // the checked property broke
	kChildConnect = 2,    // could not connect
	kChildBatch = 3,      // a batch failed
	kChildUsage = 4,
};

void SleepMs(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

std::string SelfExe()
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return "";
	buf[n] = '\0';
	return buf;
}

// fork + exec @argv, output appended to @log. Returns the pid or -1.
pid_t Spawn(const std::vector<std::string> &argv, const std::string &log)
{
	std::vector<char *> cargv;
	for (const std::string &a : argv)
		cargv.push_back(const_cast<char *>(a.c_str()));
	cargv.push_back(nullptr);
	int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(cargv[0], cargv.data());
		_exit(127);
	}
	close(fd);
	return pid;
}

// Wait at most @timeout_ms for @pid; its exit code, 128 + signal, or -1 if
// it overran (it is then killed).
int WaitChild(pid_t pid, int timeout_ms)
{
	int status = 0;
	for (int waited = 0;; waited += 10) {
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
		SleepMs(10);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

std::string ReadFile(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

// Run this binary as a child with role @args; returns its pid.
pid_t SpawnChild(const std::vector<std::string> &args, const std::string &log,
	const std::vector<std::string> &prefix = {})
{
	std::vector<std::string> argv = prefix;
	argv.push_back(SelfExe());
	argv.push_back("--child");
	argv.insert(argv.end(), args.begin(), args.end());
	return Spawn(argv, log);
}

// Children let the provider's granted order alone choose the path
// (max_provider_ops = RDMA_BATCH_MAX_OPS), so that "write, CAS" goes as
// provider operations where the order allows it (shm) and the ordering
// check covers that path too; by default it would be shipped.
rdma_conn *ChildConnect(const std::string &uri, unsigned timeout_ms = 10000)
{
	rdma_conn_config cfg;
	rdma_conn_config_init(&cfg);
	cfg.token = kToken;
	cfg.timeout_ms = timeout_ms;
	cfg.max_provider_ops = RDMA_BATCH_MAX_OPS;
	rdma_conn *c = nullptr;
	int ret = rdma_conn_open(&c, uri.c_str(), &cfg);
	if (ret != 0) {
		std::fprintf(stderr, "child: connect %s: %s\n", uri.c_str(), pm_strerror(ret));
		return nullptr;
	}
	return c;
}

// --child writer URI VERSIONS: publish versions 1..VERSIONS, each with one
// batch "buffer := v everywhere; CAS meta v-1 -> v".
int ChildWriter(const std::string &uri, unsigned versions)
{
	rdma_conn *c = ChildConnect(uri);
	if (c == nullptr)
		return kChildConnect;
	std::vector<uint64_t> buf(kWords);
	rdma_stats before, after;
	rdma_stats_read_thread(&before);
	for (uint64_t v = 1; v <= versions; v++) {
		for (auto &w : buf)
			w = v;
		uint64_t old = ~0ull;
		rdma_batch b;
		rdma_batch_init(&b);
		rdma_batch_write(&b, 0, kBufOff, buf.data(), kBufLen);
		rdma_batch_cas(&b, 0, kMetaOff, v - 1, v, &old);
		int ret = rdma_execute(c, &b);
		if (ret != 0) {
			std::fprintf(stderr, "writer: version %" PRIu64 ": %s\n", v, pm_strerror(ret));
			return kChildBatch;
		}
		if (old != v - 1) {
			std::fprintf(stderr, "writer: CAS saw %" PRIu64 ", expected %" PRIu64 "\n", old, v - 1);
			return kChildViolation;
		}
		// On 2 cores the readers, the writer and the node's progress
		// thread take turns; yielding makes the turns short, so readers
		// meet many versions rather than a few.
		sched_yield();
	}
	rdma_stats_read_thread(&after);
	std::printf("writer: %u versions, shipped %" PRIu64 ", provider ops %" PRIu64 "\n", versions,
		after.shipped - before.shipped, after.provider_ops - before.provider_ops);
	rdma_conn_close(&c);
	return kChildOk;
}

// --child reader URI FINAL MAX: read "meta, buffer" until the metadata
// reaches version FINAL (then a few more times), at most MAX times; every
// word of the buffer must be at least the metadata version read before it.
// Prints "ready" once connected, so the writer starts only then.
int ChildReader(const std::string &uri, uint64_t final_version, unsigned max_reads)
{
	rdma_conn *c = ChildConnect(uri);
	if (c == nullptr)
		return kChildConnect;
	std::printf("ready\n");
	std::fflush(stdout);
	std::vector<uint64_t> buf(kWords);
	uint64_t last_meta = 0, distinct = 0, violations = 0;
	unsigned iters = 0, after_final = 0;
	rdma_stats before, after;
	rdma_stats_read_thread(&before);
	for (unsigned i = 0; i < max_reads && after_final < 100; i++, iters++) {
		uint64_t meta = 0;
		rdma_batch b;
		rdma_batch_init(&b);
		rdma_batch_read(&b, 0, kMetaOff, &meta, 8);
		rdma_batch_read(&b, 0, kBufOff, buf.data(), kBufLen);
		int ret = rdma_execute(c, &b);
		if (ret != 0) {
			std::fprintf(stderr, "reader: batch %u: %s\n", i, pm_strerror(ret));
			return kChildBatch;
		}
		if (meta != last_meta) {
			distinct++;
			last_meta = meta;
		}
		if (meta == final_version)
			after_final++;
		sched_yield();
		for (unsigned w = 0; w < kWords; w++) {
			if (buf[w] < meta) {
				if (violations++ < 5)
					std::fprintf(stderr,
						"reader: meta %" PRIu64 " but word %u holds %" PRIu64 "\n",
						meta, w, buf[w]);
				break;
			}
		}
	}
	rdma_stats_read_thread(&after);
	std::printf("reader: %u batches, %" PRIu64 " metadata versions seen, last %" PRIu64
		", %" PRIu64 " violations, shipped %" PRIu64 ", provider ops %" PRIu64 "\n",
		iters, distinct, last_meta, violations, after.shipped - before.shipped,
		after.provider_ops - before.provider_ops);
	rdma_conn_close(&c);
	if (violations != 0)
		return kChildViolation;
	if (last_meta != final_version) {
		std::fprintf(stderr, "reader: never saw version %" PRIu64 "\n", final_version);
		return kChildViolation;
	}
	return kChildOk;
}

// --child netclient URI: every operation kind once, checked.
int ChildNetClient(const std::string &uri)
{
	rdma_conn *c = ChildConnect(uri);
	if (c == nullptr)
		return kChildConnect;
	std::vector<uint8_t> src(kBufLen), dst(kBufLen);
	for (size_t i = 0; i < src.size(); i++)
		src[i] = (uint8_t)(i * 13 + 7);
	uint64_t cas_old = 1, faa_old = 1, meta = 0;
	rdma_batch b;
	rdma_batch_init(&b);
	rdma_batch_write(&b, 0, kBufOff, src.data(), kBufLen);
	rdma_batch_persist(&b, 0, kBufOff, kBufLen);
	rdma_batch_cas(&b, 0, kMetaOff, 0, 40, &cas_old);
	rdma_batch_persist(&b, 0, kMetaOff, 8);
	int ret = rdma_execute(c, &b);
	if (ret != 0) {
		std::fprintf(stderr, "netclient: durable batch: %s\n", pm_strerror(ret));
		return kChildBatch;
	}
	rdma_batch_init(&b);
	rdma_batch_faa(&b, 0, kMetaOff, 2, &faa_old);
	if ((ret = rdma_execute(c, &b)) != 0) {
		std::fprintf(stderr, "netclient: faa: %s\n", pm_strerror(ret));
		return kChildBatch;
	}
	rdma_batch_init(&b);
	rdma_batch_read(&b, 0, kMetaOff, &meta, 8);
	rdma_batch_read(&b, 0, kBufOff, dst.data(), kBufLen);
	if ((ret = rdma_execute(c, &b)) != 0) {
		std::fprintf(stderr, "netclient: read: %s\n", pm_strerror(ret));
		return kChildBatch;
	}
	rdma_conn_close(&c);
	if (cas_old != 0 || faa_old != 40 || meta != 42 || src != dst) {
		std::fprintf(stderr, "netclient: cas_old %" PRIu64 " faa_old %" PRIu64
			" meta %" PRIu64 " buffer %s\n", cas_old, faa_old, meta,
			src == dst ? "ok" : "differs");
		return kChildViolation;
	}
	std::printf("netclient: ok over %s\n", uri.c_str());
	return kChildOk;
}

int ChildMain(int argc, char **argv)
{
	std::vector<std::string> a(argv, argv + argc);
	if (a.size() == 3 && a[0] == "writer")
		return ChildWriter(a[1], (unsigned)std::stoul(a[2]));
	if (a.size() == 4 && a[0] == "reader")
		return ChildReader(a[1], std::stoull(a[2]), (unsigned)std::stoul(a[3]));
	if (a.size() == 2 && a[0] == "netclient")
		return ChildNetClient(a[1]);
	std::fprintf(stderr, "child: bad arguments\n");
	return kChildUsage;
}

rdmatest::NodeOptions DaemonOptions(const std::string &name)
{
	rdmatest::NodeOptions o;
	o.name = name;
	o.regions = {"1M"};
	o.token = kToken;
	o.extra = {"--durability", "msync"};
	return o;
}

class OfiMultiProcTest : public ::testing::TestWithParam<std::string> {
protected:
	std::string Uri(int port) const
	{
		return "ofi+" + GetParam() + "://127.0.0.1:" + std::to_string(port);
	}
	std::string Name(const std::string &what) const { return what + "_" + GetParam(); }
};

// The ordering property under load (rdma/rdma.h "Ordering"): a reader that
// sees metadata version v sees a buffer of version >= v, never older. The
// writer's batch runs as provider operations where the provider orders
// write-then-CAS (shm) and is shipped where it does not (tcp).
TEST_P(OfiMultiProcTest, ReadersNeverSeeMetadataAheadOfBuffer)
{
	rdmatest::NodeProcess node(DaemonOptions(Name("mp_order")));
	std::string err;
	ASSERT_TRUE(node.Start(&err)) << err;
	const std::string uri = Uri(node.Port());
	constexpr unsigned kReaders = 2, kVersions = 3000, kMaxReads = 1000000;

	std::vector<pid_t> readers;
	std::vector<std::string> logs;
	for (unsigned i = 0; i < kReaders; i++) {
		logs.push_back(rdmatest::FreshPath(Name("mp_reader" + std::to_string(i)) + ".log"));
		pid_t pid = SpawnChild({"reader", uri, std::to_string(kVersions),
			std::to_string(kMaxReads)}, logs.back());
		ASSERT_GT(pid, 0);
		readers.push_back(pid);
	}
	// The writer starts once every reader is connected, so they overlap.
	for (unsigned i = 0; i < kReaders; i++) {
		for (int waited = 0; waited < 60000; waited += 10) {
			if (ReadFile(logs[i]).find("ready\n") != std::string::npos)
				break;
			SleepMs(10);
		}
	}
	std::string wlog = rdmatest::FreshPath(Name("mp_writer") + ".log");
	pid_t writer = SpawnChild({"writer", uri, std::to_string(kVersions)}, wlog);
	ASSERT_GT(writer, 0);

	int wret = WaitChild(writer, 240000);
	EXPECT_EQ(wret, kChildOk) << ReadFile(wlog);
	std::printf("%s", ReadFile(wlog).c_str());
	for (unsigned i = 0; i < kReaders; i++) {
		int rret = WaitChild(readers[i], 240000);
		EXPECT_EQ(rret, kChildOk) << ReadFile(logs[i]);
		std::printf("%s", ReadFile(logs[i]).c_str());
	}
	EXPECT_EQ(node.Terminate(), 0) << node.StderrTail();
}

// A persist acknowledged before the node is SIGKILLed survives: the node
// restarts from its pool on the same port, the client reconnects and reads
// the data back. The old connection's next batch fails, bounded.
// The shm regions in /dev/shm that name process @pid as their owner.
unsigned ShmRegionsOf(pid_t pid)
{
	// dmem-NS-PID-START-N (rdma/src/ofi_common.c)
	const std::string mid = "-" + std::to_string(pid) + "-";
	unsigned n = 0;
	DIR *d = opendir("/dev/shm");

	if (d == nullptr)
		return 0;
	while (struct dirent *e = readdir(d)) {
		if (strncmp(e->d_name, "dmem-", 5) != 0)
			continue;
		const char *ns_end = strchr(e->d_name + 5, '-');
		n += ns_end != nullptr && strncmp(ns_end, mid.c_str(), mid.size()) == 0;
	}
	closedir(d);
	return n;
}

// Also: a SIGKILLed shm daemon's region does not outlive it for long (the
// next shm endpoint opened sweeps it), and a region left by a dead process
// can never block a later process that gets the same pid.
TEST_P(OfiMultiProcTest, KilledNodeRestartsWithPersistedData)
{
	rdmatest::NodeProcess first(DaemonOptions(Name("mp_kill")));
	std::string err;
	ASSERT_TRUE(first.Start(&err)) << err;
	const int port = first.Port();
	const std::string uri = Uri(port);

	rdma_conn_config cfg;
	rdma_conn_config_init(&cfg);
	cfg.token = kToken;
	cfg.timeout_ms = 3000;
	rdma_conn *c = nullptr;
	ASSERT_EQ(rdma_conn_open(&c, uri.c_str(), &cfg), 0);

	std::vector<uint64_t> buf(kWords);
	for (unsigned i = 0; i < kWords; i++)
		buf[i] = 0xabc000 + i;
	uint64_t old = 1;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_write(&b, 0, kBufOff, buf.data(), kBufLen), 0);
	ASSERT_EQ(rdma_batch_persist(&b, 0, kBufOff, kBufLen), 0);
	ASSERT_EQ(rdma_batch_cas(&b, 0, kMetaOff, 0, 77, &old), 0);
	ASSERT_EQ(rdma_batch_persist(&b, 0, kMetaOff, 8), 0);
	ASSERT_EQ(rdma_execute(c, &b), 0);
	EXPECT_EQ(old, 0u);

	const pid_t first_pid = first.Pid();
	EXPECT_EQ(first.Kill(SIGKILL), 128 + SIGKILL);
	// The shm endpoint of the killed daemon left its region behind.
	if (GetParam() == "shm") {
		EXPECT_GT(ShmRegionsOf(first_pid), 0u);
	}

	uint64_t meta = 0;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_read(&b, 0, kMetaOff, &meta, 8), 0);
	int ret = rdma_execute(c, &b);
	EXPECT_TRUE(ret == RDMA_E_CONN || ret == -ETIMEDOUT) << pm_strerror(ret);

	// Same pool, same port (the last --port wins).
	rdmatest::NodeOptions o = DaemonOptions(Name("mp_kill"));
	o.extra.push_back("--port");
	o.extra.push_back(std::to_string(port));
	rdmatest::NodeProcess second(o);
	bool started = false;
	for (int i = 0; i < 20 && !started; i++) {
		started = second.Start(&err);
		if (!started)
			SleepMs(250);  // the port may linger briefly
	}
	ASSERT_TRUE(started) << err;
	ASSERT_EQ(second.Port(), port);
	// ... which the next shm endpoint opened on this host removed.
	EXPECT_EQ(ShmRegionsOf(first_pid), 0u);

	ASSERT_EQ(rdma_conn_reconnect(c), 0);
	std::vector<uint64_t> back(kWords);
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_read(&b, 0, kMetaOff, &meta, 8), 0);
	ASSERT_EQ(rdma_batch_read(&b, 0, kBufOff, back.data(), kBufLen), 0);
	ASSERT_EQ(rdma_execute(c, &b), 0);
	EXPECT_EQ(meta, 77u);
	EXPECT_EQ(back, buf);
	rdma_conn_close(&c);
	EXPECT_EQ(second.Terminate(), 0) << second.StderrTail();
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiMultiProcTest, ::testing::Values("tcp", "shm"),
	[](const ::testing::TestParamInfo<std::string> &p) { return p.param; });

// Runs `ip ARGS`; true if it exited 0. Output goes to @log.
bool Ip(const std::vector<std::string> &args, const std::string &log)
{
	std::vector<std::string> argv = {"ip"};
	argv.insert(argv.end(), args.begin(), args.end());
	pid_t pid = Spawn(argv, log);
	return pid > 0 && WaitChild(pid, 20000) == 0;
}

// Two namespaces joined by a veth pair, removed on destruction.
class NetnsPair {
public:
	explicit NetnsPair(const std::string &log) : log_(log)
	{
		std::string id = std::to_string(getpid() % 100000);
		ns_[0] = "dmemofi" + id + "a";
		ns_[1] = "dmemofi" + id + "b";
		veth_[0] = "dmv" + id + "a";
		veth_[1] = "dmv" + id + "b";
		// a /24 of its own per test process, so parallel runs don't meet
		unsigned net = (unsigned)getpid() % 250 + 1;
		addr_[0] = "10.213." + std::to_string(net) + ".1";
		addr_[1] = "10.213." + std::to_string(net) + ".2";
	}
	~NetnsPair()
	{
		// deleting a namespace deletes the veth end inside it
		for (int i = 0; i < 2; i++)
			if (made_[i])
				Ip({"netns", "del", ns_[i]}, log_);
	}

	// Make both namespaces and the link; false (with *@why) if not allowed.
	bool Make(std::string *why)
	{
		for (int i = 0; i < 2; i++) {
			if (!Ip({"netns", "add", ns_[i]}, log_)) {
				*why = "ip netns add " + ns_[i] + " failed";
				return false;
			}
			made_[i] = true;
		}
		const std::vector<std::vector<std::string>> steps = {
			{"link", "add", veth_[0], "netns", ns_[0], "type", "veth", "peer", "name",
				veth_[1], "netns", ns_[1]},
			{"-n", ns_[0], "addr", "add", addr_[0] + "/24", "dev", veth_[0]},
			{"-n", ns_[1], "addr", "add", addr_[1] + "/24", "dev", veth_[1]},
			{"-n", ns_[0], "link", "set", veth_[0], "up"},
			{"-n", ns_[1], "link", "set", veth_[1], "up"},
			{"-n", ns_[0], "link", "set", "lo", "up"},
			{"-n", ns_[1], "link", "set", "lo", "up"},
		};
		for (const auto &s : steps) {
			if (!Ip(s, log_)) {
				*why = "ip";
				for (const auto &w : s)
					*why += " " + w;
				*why += " failed";
				return false;
			}
		}
		return true;
	}

	const std::string &Ns(int i) const { return ns_[i]; }
	const std::string &Addr(int i) const { return addr_[i]; }

private:
	std::string log_;
	std::string ns_[2], veth_[2], addr_[2];
	bool made_[2] = {false, false};
};

// A node in one namespace, a client in another, over tcp on a veth link:
// the fabric address the node announces and the one the client binds to
// must be the ones on that link, not loopback.
TEST(OfiNetnsTest, NodeAndClientInTwoNamespaces)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "network namespaces need root (ip netns add)";
	std::string log = rdmatest::FreshPath("netns_ip.log");
	NetnsPair net(log);
	std::string why;
	if (!net.Make(&why))
		GTEST_SKIP() << "cannot create network namespaces here: " << why << "\n" << ReadFile(log);

	std::string pool = rdmatest::FreshPath("netns_node.pool");
	unlink((pool + ".node").c_str());
	std::string ready = rdmatest::FreshPath("netns_node.ready");
	std::string nlog = rdmatest::FreshPath("netns_node.log");
	pid_t node = Spawn({"ip", "netns", "exec", net.Ns(0), rdmatest::NodeBinary(), "--pool", pool,
			       "--create", "--region", "1M", "--listen", net.Addr(0), "--port", "0",
			       "--backends", "tcp", "--token", kToken, "--durability", "msync",
			       "--ready-file", ready},
		nlog);
	ASSERT_GT(node, 0);
	int port = 0;
	for (int waited = 0; waited < 30000 && port == 0; waited += 20) {
		std::string text = ReadFile(ready);
		if (!text.empty() && text.back() == '\n')
			port = std::atoi(text.c_str());
		else
			SleepMs(20);
		int status;
		if (waitpid(node, &status, WNOHANG) == node) {
			node = -1;
			break;
		}
	}
	if (port == 0) {
		if (node > 0) {
			kill(node, SIGKILL);
			waitpid(node, nullptr, 0);
		}
		FAIL() << "node did not start in namespace " << net.Ns(0) << ":\n" << ReadFile(nlog);
	}

	std::string clog = rdmatest::FreshPath("netns_client.log");
	pid_t client = SpawnChild({"netclient", "ofi+tcp://" + net.Addr(0) + ":" + std::to_string(port)},
		clog, {"ip", "netns", "exec", net.Ns(1)});
	ASSERT_GT(client, 0);
	int cret = WaitChild(client, 120000);
	EXPECT_EQ(cret, kChildOk) << ReadFile(clog) << "\n--- node ---\n" << ReadFile(nlog);
	std::printf("%s", ReadFile(clog).c_str());

	kill(node, SIGTERM);
	EXPECT_EQ(WaitChild(node, 30000), 0) << ReadFile(nlog);
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc >= 2 && std::strcmp(argv[1], "--child") == 0)
		return ChildMain(argc - 2, argv + 2);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
