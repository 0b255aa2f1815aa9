// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/node_test.cc -- the memory node in process (rdma/node.h): the
// pool and its region table across reopen, the node file against the bytes
// of the pool file, damaged pools and bad configs, and the control port:
// status, token and backend refusals, malformed messages, slow and excess
// clients, and concurrent status queries.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>
#include <rdma/node.h>
#include <rdma/rdma.h>

extern "C" {
#include "rdma/src/control.h"
#include "rdma/src/nodefile.h"
#include "rdma/src/wire.h"
}

namespace {

constexpr unsigned kTimeoutMs = 10000;
// The root magic node.c writes ("DNOD0DE1" little-endian); tests find the
// root in the pool file by it.
constexpr char kRootMagic[] = "DNOD0DE1";

std::string TempPath(const std::string &name)
{
	const char *dir = std::getenv("TEST_TMPDIR");
	std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
	unlink(path.c_str());
	unlink((path + ".node").c_str());
	return path;
}

std::string ReadAll(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

bool Exists(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0;
}

void SleepMs(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, nullptr);
}

// Log lines a node produced (its threads log concurrently).
struct LogSink {
	std::mutex mu;
	std::vector<std::string> lines;

	static void Fn(void *arg, enum rdma_node_log_level, const char *msg)
	{
		auto *s = static_cast<LogSink *>(arg);
		std::lock_guard<std::mutex> g(s->mu);
		s->lines.emplace_back(msg);
	}
	bool Has(const std::string &needle)
	{
		std::lock_guard<std::mutex> g(mu);
		for (const std::string &l : lines)
			if (l.find(needle) != std::string::npos)
				return true;
		return false;
	}
	std::string All()
	{
		std::lock_guard<std::mutex> g(mu);
		std::string s;
		for (const std::string &l : lines)
			s += l + "\n";
		return s;
	}
};

// A node config on @path with small regions, so tests stay quick.
struct NodeConfig {
	std::string path;
	std::string token;
	rdma_node_config cfg;
	LogSink log;

	explicit NodeConfig(const std::string &p, std::vector<uint64_t> regions = {1 << 20},
		unsigned flags = RDMA_NODE_CREATE)
		: path(p)
	{
		rdma_node_config_init(&cfg);
		cfg.pool_path = path.c_str();
		cfg.flags = flags;
		cfg.nregions = static_cast<unsigned>(regions.size());
		for (size_t i = 0; i < regions.size() && i < RDMA_NODE_MAX_REGIONS; i++)
			cfg.region_size[i] = regions[i];
		cfg.log = LogSink::Fn;
		cfg.log_arg = &log;
	}
	void SetToken(const std::string &t)
	{
		token = t;
		cfg.token = token.c_str();
	}
};

uint64_t NodeFileIncarnation(const std::string &pool)
{
	rdma__nodefile nf;
	EXPECT_EQ(rdma__nodefile_read((pool + ".node").c_str(), &nf), 0);
	return nf.incarnation;
}

// Offset of the node root's magic in the pool file (-1 if absent).
long FindRoot(const std::string &pool)
{
	std::string bytes = ReadAll(pool);
	size_t at = bytes.find(std::string(kRootMagic, 8));
	return at == std::string::npos ? -1 : static_cast<long>(at);
}

void PatchFile(const std::string &path, long off, const void *data, size_t len)
{
	int fd = open(path.c_str(), O_WRONLY);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(pwrite(fd, data, len, off), static_cast<ssize_t>(len));
	close(fd);
}

TEST(NodeOpen, CreateReopenKeepsRegionsBytesAndBumpsIncarnation)
{
	NodeConfig nc(TempPath("reopen.pool"), {1 << 20, 65536 + 1});
	rdma_node *n = nullptr;

	ASSERT_EQ(rdma_node_open(&n, &nc.cfg), 0) << nc.log.All();
	EXPECT_TRUE(nc.log.Has("created pool"));
	ASSERT_EQ(rdma_node_region_count(n), 2u);
	rdma_region_info info[2];
	void *addr[2];
	for (unsigned i = 0; i < 2; i++)
		ASSERT_EQ(rdma_node_region(n, i, &info[i], &addr[i]), 0);
	EXPECT_EQ(info[0].id, 0u);
	EXPECT_EQ(info[0].length, 1u << 20);
	EXPECT_EQ(info[1].id, 1u);
	EXPECT_EQ(info[1].length, 69632u) << "rounded up to 4 KiB";
	EXPECT_EQ(rdma_node_region(n, 2, &info[0], nullptr), -EINVAL);
	EXPECT_EQ(std::string(rdma_node_file_path(n)), nc.path + ".node");
	EXPECT_EQ(rdma_node_port(n), 0) << "not serving";

	// Regions start zeroed; write a pattern and persist it.
	auto *r0 = static_cast<uint8_t *>(addr[0]);
	auto *r1 = static_cast<uint8_t *>(addr[1]);
	for (size_t i = 0; i < info[0].length; i += 4096)
		ASSERT_EQ(r0[i], 0);
	for (size_t i = 0; i < info[0].length; i++)
		r0[i] = static_cast<uint8_t>(i * 7 + 1);
	std::memset(r1 + info[1].length - 100, 0xab, 100);
	pm_persist(r0, info[0].length);
	pm_persist(r1 + info[1].length - 100, 100);
	EXPECT_EQ(NodeFileIncarnation(nc.path), 1u);
	ASSERT_EQ(rdma_node_close(&n), 0);
	EXPECT_EQ(n, nullptr);
	EXPECT_TRUE(Exists(nc.path + ".node")) << "the node file stays";

	// Reopen without CREATE: the table and the bytes are what they were.
	nc.cfg.flags = 0;
	nc.cfg.nregions = 0; // create-only fields are ignored
	ASSERT_EQ(rdma_node_open(&n, &nc.cfg), 0) << nc.log.All();
	EXPECT_TRUE(nc.log.Has("incarnation 2")) << nc.log.All();
	ASSERT_EQ(rdma_node_region_count(n), 2u);
	for (unsigned i = 0; i < 2; i++) {
		rdma_region_info again;
		ASSERT_EQ(rdma_node_region(n, i, &again, &addr[i]), 0);
		EXPECT_EQ(again.length, info[i].length);
	}
	r0 = static_cast<uint8_t *>(addr[0]);
	r1 = static_cast<uint8_t *>(addr[1]);
	for (size_t i = 0; i < info[0].length; i++)
		ASSERT_EQ(r0[i], static_cast<uint8_t>(i * 7 + 1)) << "byte " << i;
	for (size_t i = 0; i < 100; i++)
		ASSERT_EQ(r1[info[1].length - 100 + i], 0xab);
	EXPECT_EQ(NodeFileIncarnation(nc.path), 2u);
	ASSERT_EQ(rdma_node_close(&n), 0);
	ASSERT_EQ(rdma_node_open(&n, &nc.cfg), 0);
	EXPECT_EQ(NodeFileIncarnation(nc.path), 3u);
	ASSERT_EQ(rdma_node_close(&n), 0);
}

// rdma__token_check remembers pairs that matched, so a reopen skips the
// hash: a remembered pair must never make another token or another hash
// match, before or after the cache (8 entries) has wrapped.
TEST(NodeFile, TokenCheckAcceptsOnlyTheMatchingPair)
{
	char h1[RDMA__TOKEN_HASH_SIZE], h1b[RDMA__TOKEN_HASH_SIZE], h2[RDMA__TOKEN_HASH_SIZE];
	ASSERT_EQ(rdma__token_hash("tok", h1), 0);
	ASSERT_EQ(rdma__token_hash("tok", h1b), 0); // another salt
	ASSERT_EQ(rdma__token_hash("other", h2), 0);
	ASSERT_STRNE(h1, h1b);
	for (int round = 0; round < 2; round++) {
		EXPECT_EQ(rdma__token_check("tok", h1), 0);
		EXPECT_EQ(rdma__token_check("tok", h1), 0); // remembered now
		EXPECT_EQ(rdma__token_check("to", h1), RDMA_E_AUTH);
		EXPECT_EQ(rdma__token_check("tokk", h1), RDMA_E_AUTH);
		EXPECT_EQ(rdma__token_check("other", h1), RDMA_E_AUTH);
		EXPECT_EQ(rdma__token_check("tok", h2), RDMA_E_AUTH);
		EXPECT_EQ(rdma__token_check("other", h2), 0);
		EXPECT_EQ(rdma__token_check("tok", h1b), 0);
		EXPECT_EQ(rdma__token_check("tok", "$y$"), RDMA_E_PROTO);
		const std::string long_token(RDMA_TOKEN_MAX + 1, 't');
		EXPECT_EQ(rdma__token_check(long_token.c_str(), h1), RDMA_E_AUTH);
		// Eight more matching pairs push every earlier one out.
		for (int i = 0; i < 8; i++) {
			const std::string t = "t" + std::to_string(i);
			char h[RDMA__TOKEN_HASH_SIZE];
			ASSERT_EQ(rdma__token_hash(t.c_str(), h), 0);
			EXPECT_EQ(rdma__token_check(t.c_str(), h), 0);
			EXPECT_EQ(rdma__token_check("tok", h), RDMA_E_AUTH);
		}
	}
}

// The node file names the pool and region offsets that are file offsets: a
// separate mapping of the pool file shows the bytes written through the
// node's own addresses.
TEST(NodeOpen, NodeFileOffsetsAreFileOffsets)
{
	NodeConfig nc(TempPath("nodefile.pool"), {1 << 20, 8192, 4096});
	nc.SetToken("tok");
	rdma_node *n = nullptr;
	ASSERT_EQ(rdma_node_open(&n, &nc.cfg), 0) << nc.log.All();

	rdma__nodefile nf;
	ASSERT_EQ(rdma__nodefile_read((nc.path + ".node").c_str(), &nf), 0);
	char real[PATH_MAX];
	ASSERT_NE(realpath(nc.path.c_str(), real), nullptr);
	EXPECT_STREQ(nf.pool, real);
	EXPECT_NE(nf.durability, PM_DURABILITY_AUTO);
	EXPECT_EQ(rdma__token_check("tok", nf.token_hash), 0);
	EXPECT_EQ(rdma__token_check("", nf.token_hash), RDMA_E_AUTH);
	ASSERT_EQ(nf.nregions, 3u);

	for (unsigned i = 0; i < 3; i++) {
		rdma_region_info info;
		void *addr;
		ASSERT_EQ(rdma_node_region(n, i, &info, &addr), 0);
		EXPECT_EQ(nf.regions[i].length, info.length);
		EXPECT_EQ(nf.regions[i].offset % 4096, 0u) << "regions are page-aligned";
		auto *p = static_cast<uint8_t *>(addr);
		for (size_t j = 0; j < info.length; j++)
			p[j] = static_cast<uint8_t>(0x10 * (i + 1) + j % 13);
		pm_persist(p, info.length);
	}

	int fd = open(nc.path.c_str(), O_RDONLY);
	ASSERT_GE(fd, 0);
	struct stat st;
	ASSERT_EQ(fstat(fd, &st), 0);
	void *map = mmap(nullptr, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	ASSERT_NE(map, MAP_FAILED);
	for (unsigned i = 0; i < 3; i++) {
		ASSERT_LE(nf.regions[i].offset + nf.regions[i].length,
			static_cast<uint64_t>(st.st_size));
		const auto *p = static_cast<const uint8_t *>(map) + nf.regions[i].offset;
		for (size_t j = 0; j < nf.regions[i].length; j++)
			ASSERT_EQ(p[j], static_cast<uint8_t>(0x10 * (i + 1) + j % 13))
				<< "region " << i << " byte " << j;
	}
	munmap(map, st.st_size);
	ASSERT_EQ(rdma_node_close(&n), 0);
}

TEST(NodeOpen, MissingPoolWithoutCreate)
{
	NodeConfig nc(TempPath("missing.pool"), {1 << 20}, 0);
	rdma_node *n = nullptr;
	EXPECT_EQ(rdma_node_open(&n, &nc.cfg), -ENOENT);
	EXPECT_EQ(n, nullptr);
	EXPECT_FALSE(Exists(nc.path));
	EXPECT_FALSE(Exists(nc.path + ".node"));
}

TEST(NodeOpen, GarbageFileIsCorruptAndUntouched)
{
	std::string path = TempPath("garbage.pool");
	std::string junk(9 << 20, '\0');
	std::mt19937_64 rng(42);
	for (char &c : junk)
		c = static_cast<char>(rng());
	{
		std::ofstream f(path, std::ios::binary);
		f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
	}
	for (unsigned flags : {0u, static_cast<unsigned>(RDMA_NODE_CREATE)}) {
		NodeConfig nc(path, {1 << 20}, flags);
		rdma_node *n = nullptr;
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), PM_E_CORRUPT) << nc.log.All();
		EXPECT_EQ(n, nullptr);
		EXPECT_TRUE(ReadAll(path) == junk) << "the file was modified";
		EXPECT_FALSE(Exists(path + ".node"));
	}
}

TEST(NodeOpen, ForeignPoolIsLayoutError)
{
	std::string path = TempPath("foreign.pool");
	pm_pool_config pc;
	pm_pool_config_init(&pc);
	pc.path = path.c_str();
	pc.layout = "someone-else";
	pc.pool_size = PM_POOL_MIN_SIZE;
	pm_pool *pool = nullptr;
	ASSERT_EQ(pm_pool_create(&pool, &pc), 0);
	ASSERT_EQ(pm_pool_close(&pool), 0);

	NodeConfig nc(path, {1 << 20}, 0);
	rdma_node *n = nullptr;
	EXPECT_EQ(rdma_node_open(&n, &nc.cfg), PM_E_LAYOUT);
}

// A damaged root (magic, region count, a region outside the pool or over
// its header) is PM_E_CORRUPT, and the open writes nothing: the
// incarnation is unchanged.
TEST(NodeOpen, DamagedRootIsCorruptAndNotWritten)
{
	NodeConfig nc(TempPath("damaged.pool"));
	rdma_node *n = nullptr;
	ASSERT_EQ(rdma_node_open(&n, &nc.cfg), 0);
	ASSERT_EQ(rdma_node_close(&n), 0);
	long root = FindRoot(nc.path);
	ASSERT_GT(root, 0);
	nc.cfg.flags = 0;

	// Root layout: magic u64 | nregions u32 | u32 | incarnation u64 | 40
	// reserved bytes | regions {offset u64, length u64} x 16.
	struct Damage {
		const char *what;
		long at;
		uint64_t value;
		size_t len;
	};
	uint64_t huge = 1ull << 50;
	const Damage damage[] = {
		{"no magic", 0, 0, 8},
		{"17 regions", 8, 17, 4},
		{"0 regions", 8, 0, 4},
		{"region past the end", 64, huge, 8},
		{"region at the pool's header", 64, 0, 8},
		{"unaligned region", 64 + 8, 4097, 8},
	};
	for (const Damage &d : damage) {
		SCOPED_TRACE(d.what);
		std::string before = ReadAll(nc.path);
		std::string saved = before.substr(root + d.at, d.len);
		PatchFile(nc.path, root + d.at, &d.value, d.len);
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), PM_E_CORRUPT) << nc.log.All();
		EXPECT_EQ(n, nullptr);
		uint64_t inc;
		std::memcpy(&inc, ReadAll(nc.path).data() + root + 16, 8);
		EXPECT_EQ(inc, 1u) << "incarnation written on a damaged pool";
		PatchFile(nc.path, root + d.at, saved.data(), d.len);
	}
	ASSERT_EQ(rdma_node_open(&n, &nc.cfg), 0) << "repaired";
	ASSERT_EQ(rdma_node_close(&n), 0);
}

TEST(NodeOpen, BadConfigs)
{
	rdma_node *n = nullptr;
	{
		NodeConfig nc(TempPath("bad17.pool"));
		nc.cfg.nregions = 17;
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), -EINVAL);
		EXPECT_FALSE(Exists(nc.path));
	}
	{
		NodeConfig nc(TempPath("badsize.pool"), {16 << 20});
		nc.cfg.pool_size = 8 << 20;
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), -EINVAL);
		EXPECT_FALSE(Exists(nc.path));
	}
	{
		// Regions that fit the raw size but not PMDK's usable space.
		NodeConfig nc(TempPath("tight.pool"), {8 << 20});
		nc.cfg.pool_size = (8 << 20) + 8192;
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), -EINVAL) << nc.log.All();
		EXPECT_FALSE(Exists(nc.path)) << "a failed create leaves no file";
	}
	{
		NodeConfig nc(TempPath("small.pool"), {4096});
		nc.cfg.pool_size = 1 << 20;
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), -EINVAL) << "below PM_POOL_MIN_SIZE";
	}
	{
		NodeConfig nc(TempPath("zero.pool"), {4096, 0});
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), -EINVAL);
	}
	{
		NodeConfig nc(TempPath("token.pool"));
		nc.SetToken(std::string(RDMA_TOKEN_MAX + 1, 't'));
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), -EINVAL);
		EXPECT_FALSE(Exists(nc.path));
	}
	{
		NodeConfig nc(TempPath("nopath.pool"));
		nc.cfg.pool_path = nullptr;
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), -EINVAL);
		nc.cfg.pool_path = "";
		EXPECT_EQ(rdma_node_open(&n, &nc.cfg), -EINVAL);
	}
	EXPECT_EQ(n, nullptr);
	EXPECT_EQ(rdma_node_close(&n), 0) << "NULL is a no-op";
}

// The node file keeps the token only as a yescrypt crypt(3) string, salted
// afresh at every open; the token itself is nowhere in the file.
TEST(NodeOpen, NodeFileStoresTokenAsYescryptHash)
{
	const std::string token = "plain-Cluster-Token-7731";
	NodeConfig nc(TempPath("tokenhash.pool"));
	nc.SetToken(token);
	std::string hashes[2];
	for (std::string &hash : hashes) {
		rdma_node *n = nullptr;
		ASSERT_EQ(rdma_node_open(&n, &nc.cfg), 0) << nc.log.All();
		std::ifstream in(nc.path + ".node");
		std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		EXPECT_EQ(text.find(token), std::string::npos) << text;
		rdma__nodefile nf;
		ASSERT_EQ(rdma__nodefile_read((nc.path + ".node").c_str(), &nf), 0);
		hash = nf.token_hash;
		EXPECT_EQ(hash.rfind("$y$", 0), 0u) << hash;
		EXPECT_NE(text.find("token_hash = " + hash + "\n"), std::string::npos) << text;
		EXPECT_EQ(rdma__token_check(token.c_str(), hash.c_str()), 0);
		EXPECT_EQ(rdma__token_check((token + "x").c_str(), hash.c_str()), RDMA_E_AUTH);
		EXPECT_EQ(rdma__token_check(token.substr(1).c_str(), hash.c_str()), RDMA_E_AUTH);
		ASSERT_EQ(rdma_node_close(&n), 0);
	}
	EXPECT_NE(hashes[0], hashes[1]) << "a fresh salt at every open";
}

TEST(NodeOpen, DefaultRegionAndPoolSize)
{
	NodeConfig nc(TempPath("default.pool"), {});
	rdma_node *n = nullptr;
	ASSERT_EQ(rdma_node_open(&n, &nc.cfg), 0);
	rdma_region_info info;
	ASSERT_EQ(rdma_node_region_count(n), 1u);
	ASSERT_EQ(rdma_node_region(n, 0, &info, nullptr), 0);
	EXPECT_EQ(info.length, RDMA_NODE_DEFAULT_REGION_SIZE);
	struct stat st;
	ASSERT_EQ(stat(nc.path.c_str(), &st), 0);
	EXPECT_EQ(static_cast<uint64_t>(st.st_size),
		RDMA_NODE_DEFAULT_REGION_SIZE + 4096 + (16 << 20));
	ASSERT_EQ(rdma_node_close(&n), 0);
}

TEST(NodeOpen, OpenTwiceIsBusy)
{
	NodeConfig nc(TempPath("busy.pool"));
	rdma_node *n = nullptr, *n2 = nullptr;
	ASSERT_EQ(rdma_node_open(&n, &nc.cfg), 0);
	EXPECT_EQ(rdma_node_open(&n2, &nc.cfg), -EBUSY) << nc.log.All();
	EXPECT_EQ(n2, nullptr);
	ASSERT_EQ(rdma_node_close(&n), 0);
	ASSERT_EQ(rdma_node_open(&n2, &nc.cfg), 0) << "free again after close";
	ASSERT_EQ(rdma_node_close(&n2), 0);
}

// ---- serving ----

// A node created and serving the control port only (no fabric server).
class NodeServe : public ::testing::Test {
protected:
	void SetUp() override
	{
		nc_.reset(new NodeConfig(TempPath(std::string(::testing::UnitTest::GetInstance()
			->current_test_info()->name()) + ".pool")));
		nc_->SetToken("s3cret");
		ASSERT_EQ(rdma_node_open(&node_, &nc_->cfg), 0) << nc_->log.All();
	}
	void TearDown() override { EXPECT_EQ(rdma_node_close(&node_), 0); }

	int Serve(unsigned backends = 0, unsigned max_clients = 0)
	{
		rdma_node_serve_config sc;
		rdma_node_serve_config_init(&sc);
		sc.port = 0;
		sc.backends = backends;
		if (max_clients != 0)
			sc.max_clients = max_clients;
		int ret = rdma_node_serve(node_, &sc);
		port_ = rdma_node_port(node_);
		return ret;
	}

	// A client of the served node over libfabric tcp (the right token by
	// default).
	int OpenTcp(rdma_conn **c, const char *token = "s3cret")
	{
		rdma_conn_config cc;
		rdma_conn_config_init(&cc);
		cc.token = token;
		cc.timeout_ms = kTimeoutMs;
		std::string uri = "ofi+tcp://127.0.0.1:" + std::to_string(port_);
		return rdma_conn_open(c, uri.c_str(), &cc);
	}

	int Status(std::string *text, const char *token = "s3cret")
	{
		char buf[RDMA_WIRE_STATUS_MAX + 1];
		int ret = rdma_node_status_query("127.0.0.1", port_, token, kTimeoutMs, buf,
			sizeof(buf));
		if (text != nullptr)
			*text = ret == 0 ? buf : "";
		return ret;
	}

	struct rdma_node_status NodeStatus()
	{
		struct rdma_node_status st;
		rdma_node_get_status(node_, &st);
		return st;
	}

	// Bounded wait for a counter to reach @want; fails only on a hang.
	template <typename F> bool WaitFor(F cond)
	{
		for (int i = 0; i < 2000; i++) {
			if (cond())
				return true;
			SleepMs(5);
		}
		return cond();
	}

	int Connect()
	{
		return rdma__control_connect("127.0.0.1", port_, kTimeoutMs);
	}

	std::unique_ptr<NodeConfig> nc_;
	rdma_node *node_ = nullptr;
	uint16_t port_ = 0;
};

// What the node answers on a raw connection after @msg: the REFUSE code
// (0 if none came) and whether the connection was then closed.
struct Answer {
	int refuse_code = 0;
	bool closed = false;
};

Answer SendRaw(int fd, const void *msg, size_t len, bool close_after_send = false)
{
	Answer a;
	EXPECT_EQ(rdma__control_send(fd, msg, len, kTimeoutMs), 0);
	if (close_after_send) {
		close(fd);
		return a;
	}
	rdma_wire_header h;
	uint8_t body[RDMA_WIRE_STATUS_MAX + 64];
	int ret = rdma__control_recv(fd, &h, body, sizeof(body), kTimeoutMs);
	if (ret == 0 && h.type == RDMA_WIRE_REFUSE) {
		rdma_wire_refuse r;
		EXPECT_EQ(rdma_wire_refuse_decode(body, h.length, &r), 0);
		a.refuse_code = r.code;
		ret = rdma__control_recv(fd, &h, body, sizeof(body), kTimeoutMs);
	}
	a.closed = ret == RDMA_E_CONN;
	close(fd);
	return a;
}

TEST_F(NodeServe, StatusQueryReportsPoolAndCounters)
{
	ASSERT_EQ(Serve(), 0) << nc_->log.All();
	ASSERT_NE(port_, 0);
	EXPECT_EQ(Serve(), -EALREADY);
	std::string text;
	ASSERT_EQ(Status(&text), 0);
	char real[PATH_MAX];
	ASSERT_NE(realpath(nc_->path.c_str(), real), nullptr);
	for (const std::string &line :
		{"pool " + std::string(real), std::string("durability "), std::string("incarnation 1"),
			std::string("regions 1"), std::string("region.0 length 1048576"),
			std::string("backends none"), std::string("clients_connected 1"),
			std::string("clients_admitted 0"), std::string("clients_refused 0"),
			std::string("bad_messages 0"), std::string("batches_shipped 0"),
			std::string("batches_rejected 0"), std::string("persists 0"),
			std::string("uptime_s "), "port " + std::to_string(port_),
			std::string("size ")})
		EXPECT_NE(text.find(line), std::string::npos)
			<< "missing '" << line << "' in\n" << text;
	EXPECT_EQ(text.back(), '\n');

	// Small buffers get a truncated, terminated text.
	char small[16];
	ASSERT_EQ(rdma_node_status_query("127.0.0.1", port_, "s3cret", kTimeoutMs, small,
			  sizeof(small)), 0);
	EXPECT_EQ(std::strlen(small), sizeof(small) - 1);
	EXPECT_EQ(rdma_node_status_query(nullptr, port_, "", kTimeoutMs, small, sizeof(small)),
		-EINVAL);

	EXPECT_EQ(Status(&text, "wrong"), RDMA_E_AUTH);
	EXPECT_EQ(Status(&text, ""), RDMA_E_AUTH);
	EXPECT_EQ(Status(&text, nullptr), RDMA_E_AUTH);
	// Status refusals are not HELLO refusals.
	EXPECT_EQ(NodeStatus().clients_refused, 0u);
	EXPECT_EQ(NodeStatus().backends, 0u);
	EXPECT_TRUE(nc_->log.Has("status refused: wrong token"));
}

TEST_F(NodeServe, StatusQueryWithNothingListening)
{
	ASSERT_EQ(Serve(), 0);
	uint16_t port = port_;
	ASSERT_EQ(rdma_node_close(&node_), 0);
	char buf[256];
	EXPECT_EQ(rdma_node_status_query("127.0.0.1", port, "s3cret", kTimeoutMs, buf,
			  sizeof(buf)), RDMA_E_CONN);
	// TearDown closes nothing; reopen so it has a node.
	ASSERT_EQ(rdma_node_open(&node_, &nc_->cfg), 0);
}

TEST_F(NodeServe, HelloRefusals)
{
	ASSERT_EQ(Serve(), 0);
	rdma_wire_hello hello;
	std::memset(&hello, 0, sizeof(hello));
	hello.backend = RDMA_WIRE_BACKEND_OFI_TCP;
	rdma_wire_welcome welcome;
	int fd = -1;

	std::memcpy(hello.token, "bad", 3);
	hello.token_len = 3;
	EXPECT_EQ(rdma__control_hello("127.0.0.1", port_, kTimeoutMs, &hello, &welcome, &fd),
		RDMA_E_AUTH);
	EXPECT_EQ(fd, -1);

	std::memcpy(hello.token, "s3cret", 6);
	hello.token_len = 6;
	for (uint8_t backend : {RDMA_WIRE_BACKEND_OFI_TCP, RDMA_WIRE_BACKEND_OFI_SHM,
		     RDMA_WIRE_BACKEND_VERBS, RDMA_WIRE_BACKEND_OFI_VERBS}) {
		hello.backend = backend;
		EXPECT_EQ(rdma__control_hello("127.0.0.1", port_, kTimeoutMs, &hello, &welcome,
				  &fd), RDMA_E_NO_DEVICE) << "backend " << int(backend);
	}
	// A token that is a prefix of the right one is still wrong.
	hello.token_len = 5;
	EXPECT_EQ(rdma__control_hello("127.0.0.1", port_, kTimeoutMs, &hello, &welcome, &fd),
		RDMA_E_AUTH);

	struct rdma_node_status st = NodeStatus();
	EXPECT_EQ(st.clients_refused, 6u);
	EXPECT_EQ(st.clients_admitted, 0u);
	EXPECT_EQ(st.bad_messages, 0u);
	std::string text;
	ASSERT_EQ(Status(&text), 0);
	EXPECT_NE(text.find("clients_refused 6\n"), std::string::npos) << text;
	EXPECT_TRUE(nc_->log.Has("refused: wrong token"));
	EXPECT_TRUE(nc_->log.Has("is not served here"));
}

TEST_F(NodeServe, MalformedMessagesAreCountedAndTheNodeKeepsServing)
{
	ASSERT_EQ(Serve(), 0);
	uint64_t bad = 0;
	auto expect_bad = [&](const char *what, const void *msg, size_t len, bool refused) {
		SCOPED_TRACE(what);
		int fd = Connect();
		ASSERT_GE(fd, 0);
		Answer a = SendRaw(fd, msg, len);
		if (refused) {
			EXPECT_EQ(a.refuse_code, RDMA_E_PROTO);
		}
		EXPECT_TRUE(a.closed);
		bad++;
		EXPECT_TRUE(WaitFor([&] { return NodeStatus().bad_messages == bad; }))
			<< NodeStatus().bad_messages;
		std::string text;
		EXPECT_EQ(Status(&text), 0) << "the node stopped answering";
	};

	uint8_t garbage[64];
	std::mt19937 rng(7);
	for (uint8_t &b : garbage)
		b = static_cast<uint8_t>(rng());
	expect_bad("garbage", garbage, sizeof(garbage), true);

	uint8_t msg[RDMA_WIRE_HEADER_SIZE + 600];
	rdma_wire_header h = {RDMA_WIRE_MAGIC, RDMA_WIRE_VERSION, RDMA_WIRE_STATUS_REQ, 0, 9};
	rdma_wire_header_encode(msg, &h);
	msg[0] ^= 1;
	expect_bad("bad magic", msg, RDMA_WIRE_HEADER_SIZE, true);

	h.version = RDMA_WIRE_VERSION + 1;
	rdma_wire_header_encode(msg, &h);
	expect_bad("bad version", msg, RDMA_WIRE_HEADER_SIZE, true);

	h = {RDMA_WIRE_MAGIC, RDMA_WIRE_VERSION, RDMA_WIRE_HELLO, 100000, 9};
	rdma_wire_header_encode(msg, &h);
	expect_bad("oversize length", msg, RDMA_WIRE_HEADER_SIZE, true);

	h = {RDMA_WIRE_MAGIC, RDMA_WIRE_VERSION, RDMA_WIRE_HELLO, 2048, 9};
	rdma_wire_header_encode(msg, &h);
	expect_bad("longer than any control message", msg, RDMA_WIRE_HEADER_SIZE, true);

	h = {RDMA_WIRE_MAGIC, RDMA_WIRE_VERSION, RDMA_WIRE_WELCOME, 0, 9};
	rdma_wire_header_encode(msg, &h);
	expect_bad("unexpected type", msg, RDMA_WIRE_HEADER_SIZE, true);

	h = {RDMA_WIRE_MAGIC, RDMA_WIRE_VERSION, RDMA_WIRE_BATCH_REQ, 8, 9};
	rdma_wire_header_encode(msg, &h);
	std::memset(msg + RDMA_WIRE_HEADER_SIZE, 0, 8);
	expect_bad("batch on the control port", msg, RDMA_WIRE_HEADER_SIZE + 8, true);

	// A HELLO whose token length runs past its body.
	h = {RDMA_WIRE_MAGIC, RDMA_WIRE_VERSION, RDMA_WIRE_HELLO, 8, 9};
	rdma_wire_header_encode(msg, &h);
	uint8_t hello_body[8] = {RDMA_WIRE_BACKEND_OFI_TCP, 0, 200, 0, 0, 0, 'a', 'b'};
	std::memcpy(msg + RDMA_WIRE_HEADER_SIZE, hello_body, sizeof(hello_body));
	expect_bad("bad HELLO body", msg, RDMA_WIRE_HEADER_SIZE + 8, true);

	// A STATUS_REQ with a short body.
	h = {RDMA_WIRE_MAGIC, RDMA_WIRE_VERSION, RDMA_WIRE_STATUS_REQ, 2, 9};
	rdma_wire_header_encode(msg, &h);
	expect_bad("bad STATUS_REQ body", msg, RDMA_WIRE_HEADER_SIZE + 2, true);

	// Truncated: half a header, or a header and part of its body, then
	// the client hangs up.
	for (size_t cut : {size_t(5), size_t(RDMA_WIRE_HEADER_SIZE + 3)}) {
		SCOPED_TRACE("truncated at " + std::to_string(cut));
		int len = rdma_wire_status_req_encode(msg, sizeof(msg), 3, "s3cret", 6);
		ASSERT_GT(len, static_cast<int>(cut));
		int fd = Connect();
		ASSERT_GE(fd, 0);
		SendRaw(fd, msg, cut, true);
		bad++;
		EXPECT_TRUE(WaitFor([&] { return NodeStatus().bad_messages == bad; }));
	}
	std::string text;
	ASSERT_EQ(Status(&text), 0);
	EXPECT_NE(text.find("bad_messages " + std::to_string(bad) + "\n"), std::string::npos)
		<< text;
	EXPECT_TRUE(WaitFor([&] { return NodeStatus().clients_connected == 0; }));
}

// A client that sends part of a message and stalls holds up nobody: others
// are answered at once, while its own connection stays until it completes
// the message or its deadline passes.
TEST_F(NodeServe, SlowClientDoesNotStallOthers)
{
	ASSERT_EQ(Serve(), 0);
	uint8_t msg[RDMA_WIRE_HEADER_SIZE + 64];
	int len = rdma_wire_status_req_encode(msg, sizeof(msg), 5, "s3cret", 6);
	ASSERT_GT(len, 20);
	int slow = Connect();
	ASSERT_GE(slow, 0);
	ASSERT_EQ(rdma__control_send(slow, msg, 7, kTimeoutMs), 0);
	for (int i = 0; i < 5; i++) {
		std::string text;
		EXPECT_EQ(Status(&text), 0);
	}
	// Piece by piece, the slow client's request completes and is answered.
	ASSERT_EQ(rdma__control_send(slow, msg + 7, 10, kTimeoutMs), 0);
	ASSERT_EQ(rdma__control_send(slow, msg + 17, static_cast<size_t>(len) - 17, kTimeoutMs),
		0);
	rdma_wire_header h;
	uint8_t body[RDMA_WIRE_STATUS_MAX];
	ASSERT_EQ(rdma__control_recv(slow, &h, body, sizeof(body), kTimeoutMs), 0);
	EXPECT_EQ(h.type, RDMA_WIRE_STATUS);
	EXPECT_EQ(h.seq, 5u);
	// The connection stays usable for another request.
	ASSERT_EQ(rdma__control_send(slow, msg, static_cast<size_t>(len), kTimeoutMs), 0);
	ASSERT_EQ(rdma__control_recv(slow, &h, body, sizeof(body), kTimeoutMs), 0);
	EXPECT_EQ(h.type, RDMA_WIRE_STATUS);
	close(slow);
	EXPECT_EQ(NodeStatus().bad_messages, 0u);
}

// Connections that have not said HELLO give their slots to new ones, the
// oldest first: two silent connections fill a two-slot node, and a status
// query still gets in (the oldest silent connection is closed for it).
TEST_F(NodeServe, SilentConnectionsGiveWayToNewOnes)
{
	ASSERT_EQ(Serve(0, 2), 0);
	int a = Connect();
	ASSERT_GE(a, 0);
	ASSERT_TRUE(WaitFor([&] { return NodeStatus().clients_connected == 1; }));
	int b = Connect();
	ASSERT_GE(b, 0);
	ASSERT_TRUE(WaitFor([&] { return NodeStatus().clients_connected == 2; }));
	std::string text;
	EXPECT_EQ(Status(&text), 0) << nc_->log.All();
	char byte;
	EXPECT_EQ(recv(a, &byte, 1, 0), 0) << "the oldest silent connection is closed";
	EXPECT_TRUE(nc_->log.Has("its slot given to a new connection")) << nc_->log.All();
	close(a);
	close(b);
}

// Beyond max_clients admitted clients, a new connection is refused with
// -EBUSY (nothing is taken from an admitted client), and gets in again once
// one of them leaves.
TEST_F(NodeServe, ExcessAdmittedClientsAreRefused)
{
	int ret = Serve(RDMA_NODE_SERVE_TCP, 2);
	if (ret == RDMA_E_NO_DEVICE)
		GTEST_SKIP() << "no libfabric tcp provider here";
	ASSERT_EQ(ret, 0) << nc_->log.All();
	rdma_conn *c1 = nullptr, *c2 = nullptr;
	ASSERT_EQ(OpenTcp(&c1), 0) << nc_->log.All();
	ASSERT_EQ(OpenTcp(&c2), 0) << nc_->log.All();
	ASSERT_TRUE(WaitFor([&] { return NodeStatus().clients_admitted == 2; }));
	int c = Connect();
	ASSERT_GE(c, 0);
	rdma_wire_header h;
	uint8_t body[256];
	ASSERT_EQ(rdma__control_recv(c, &h, body, sizeof(body), kTimeoutMs), 0);
	ASSERT_EQ(h.type, RDMA_WIRE_REFUSE);
	rdma_wire_refuse r;
	ASSERT_EQ(rdma_wire_refuse_decode(body, h.length, &r), 0);
	EXPECT_EQ(r.code, -EBUSY);
	close(c);
	std::string text;
	EXPECT_EQ(Status(&text), -EBUSY) << "still full";
	rdma_conn_close(&c1);
	ASSERT_TRUE(WaitFor([&] { return NodeStatus().clients_connected == 1; }));
	EXPECT_EQ(Status(&text), 0);
	rdma_conn_close(&c2);
}

// Clients notice the node going away by their control connection closing.
TEST_F(NodeServe, CloseDisconnectsClients)
{
	ASSERT_EQ(Serve(), 0);
	int fd = Connect();
	ASSERT_GE(fd, 0);
	ASSERT_TRUE(WaitFor([&] { return NodeStatus().clients_connected == 1; }));
	EXPECT_EQ(rdma__control_alive(fd), 0);
	ASSERT_EQ(rdma_node_close(&node_), 0);
	char c;
	EXPECT_EQ(recv(fd, &c, 1, 0), 0) << "expected EOF";
	EXPECT_EQ(rdma__control_alive(fd), RDMA_E_CONN);
	close(fd);
	ASSERT_EQ(rdma_node_open(&node_, &nc_->cfg), 0);
}

TEST_F(NodeServe, PortInUse)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_GE(s, 0);
	sockaddr_in sa = {};
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(bind(s, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)), 0);
	ASSERT_EQ(listen(s, 1), 0);
	socklen_t sl = sizeof(sa);
	ASSERT_EQ(getsockname(s, reinterpret_cast<sockaddr *>(&sa), &sl), 0);

	rdma_node_serve_config sc;
	rdma_node_serve_config_init(&sc);
	sc.port = ntohs(sa.sin_port);
	sc.backends = 0;
	EXPECT_EQ(rdma_node_serve(node_, &sc), -EADDRINUSE);
	EXPECT_EQ(rdma_node_port(node_), 0);
	close(s);

	sc.host = "192.0.2.1"; // TEST-NET-1: no interface has it
	EXPECT_EQ(rdma_node_serve(node_, &sc), -EADDRNOTAVAIL);
	sc.host = "no-such-host.invalid";
	EXPECT_EQ(rdma_node_serve(node_, &sc), -EADDRNOTAVAIL);
	sc.host = "127.0.0.1";
	sc.backends = 1u << 7;
	EXPECT_EQ(rdma_node_serve(node_, &sc), -EINVAL);
	sc.backends = 0;
	sc.poll = static_cast<rdma_node_poll>(7);
	EXPECT_EQ(rdma_node_serve(node_, &sc), -EINVAL);
	sc.poll = RDMA_NODE_POLL_BUSY;
	// After all that, serving works.
	sc.port = 0;
	EXPECT_EQ(rdma_node_serve(node_, &sc), 0);
}

// No RDMA device here: a node asked only for verbs (rdma-core, or libfabric
// verbs;ofi_rxm, or both) cannot serve, and leaves nothing behind (the port
// is free again).
TEST_F(NodeServe, NoBackendAvailable)
{
	for (unsigned backends : {RDMA_NODE_SERVE_VERBS, RDMA_NODE_SERVE_OFI_VERBS,
		     RDMA_NODE_SERVE_VERBS | RDMA_NODE_SERVE_OFI_VERBS}) {
		int ret = Serve(backends);
		if (ret == 0)
			GTEST_SKIP() << "this machine has an RDMA device";
		EXPECT_EQ(ret, RDMA_E_NO_DEVICE) << backends;
		EXPECT_EQ(rdma_node_port(node_), 0);
	}
	EXPECT_TRUE(nc_->log.Has("not serving verbs")) << nc_->log.All();
	EXPECT_TRUE(nc_->log.Has("not serving ofi+verbs")) << nc_->log.All();
	EXPECT_EQ(Serve(), 0) << "the node can still serve afterwards";
}

// Serving the fabric backends this machine has (libfabric tcp and shm): the
// status lists them and a HELLO for a verbs backend it lacks is refused.
TEST_F(NodeServe, FabricBackendsListed)
{
	int ret = Serve(RDMA_NODE_SERVE_TCP | RDMA_NODE_SERVE_SHM | RDMA_NODE_SERVE_VERBS |
		RDMA_NODE_SERVE_OFI_VERBS);
	if (ret == RDMA_E_NO_DEVICE)
		GTEST_SKIP() << "no libfabric provider here";
	ASSERT_EQ(ret, 0) << nc_->log.All();
	struct rdma_node_status st = NodeStatus();
	EXPECT_NE(st.backends & (RDMA_NODE_SERVE_TCP | RDMA_NODE_SERVE_SHM), 0u);
	std::string text;
	ASSERT_EQ(Status(&text), 0);
	if (st.backends & RDMA_NODE_SERVE_TCP) {
		EXPECT_NE(text.find("backends ofi+tcp"), std::string::npos) << text;
	}
	const struct {
		unsigned flag;
		uint8_t wire;
		const char *name;
	} rdma_backends[] = {
		{ RDMA_NODE_SERVE_VERBS, RDMA_WIRE_BACKEND_VERBS, "verbs" },
		{ RDMA_NODE_SERVE_OFI_VERBS, RDMA_WIRE_BACKEND_OFI_VERBS, "ofi+verbs" },
	};
	for (const auto &b : rdma_backends) {
		if (st.backends & b.flag)
			continue;
		EXPECT_TRUE(nc_->log.Has(std::string("not serving ") + b.name)) << nc_->log.All();
		rdma_wire_hello hello;
		std::memset(&hello, 0, sizeof(hello));
		hello.backend = b.wire;
		std::memcpy(hello.token, "s3cret", 6);
		hello.token_len = 6;
		rdma_wire_welcome welcome;
		int fd = -1;
		EXPECT_EQ(rdma__control_hello("127.0.0.1", port_, kTimeoutMs, &hello, &welcome,
				  &fd), RDMA_E_NO_DEVICE) << b.name;
	}
}

// A client admitted over libfabric tcp: WELCOME, its control connection
// kept open while it works, batches executed on the node's regions.
TEST_F(NodeServe, AdmittedClientOverTcp)
{
	int ret = Serve(RDMA_NODE_SERVE_TCP);
	if (ret == RDMA_E_NO_DEVICE)
		GTEST_SKIP() << "no libfabric tcp provider here";
	ASSERT_EQ(ret, 0) << nc_->log.All();
	rdma_conn *c = nullptr;
	ASSERT_EQ(OpenTcp(&c), 0) << nc_->log.All();
	EXPECT_EQ(NodeStatus().clients_admitted, 1u);
	EXPECT_TRUE(WaitFor([&] { return NodeStatus().clients_connected == 1; }));
	ASSERT_EQ(rdma_conn_region_count(c), 1u);
	EXPECT_TRUE(WaitFor([&] { return nc_->log.Has("admitted on ofi+tcp"); }))
		<< nc_->log.All();

	uint64_t word = 0xfeedfacecafebeefull, back = 0;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_write(&b, 0, 64, &word, 8), 0);
	ASSERT_EQ(rdma_batch_persist(&b, 0, 64, 8), 0);
	ASSERT_EQ(rdma_batch_read(&b, 0, 64, &back, 8), 0);
	ASSERT_EQ(rdma_execute(c, &b), 0);
	EXPECT_EQ(back, word);
	void *addr;
	ASSERT_EQ(rdma_node_region(node_, 0, nullptr, &addr), 0);
	EXPECT_EQ(__atomic_load_n(reinterpret_cast<uint64_t *>(static_cast<char *>(addr) + 64),
		__ATOMIC_RELAXED), word);
	struct rdma_node_status st = NodeStatus();
	EXPECT_GE(st.batches_shipped, 1u);
	EXPECT_GE(st.persists, 1u);
	rdma_conn_close(&c);
	EXPECT_TRUE(WaitFor([&] { return NodeStatus().clients_connected == 0; }));

	EXPECT_EQ(OpenTcp(&c, "wrong"), RDMA_E_AUTH);
	EXPECT_EQ(NodeStatus().clients_refused, 1u);
}

// Status from several threads at once while the owner reads the counters:
// for ThreadSanitizer.
TEST_F(NodeServe, ConcurrentStatusQueries)
{
	ASSERT_EQ(Serve(), 0);
	std::atomic<int> failures{0};
	std::atomic<bool> done{false};
	std::vector<std::thread> threads;
	for (int t = 0; t < 4; t++)
		threads.emplace_back([&, t] {
			for (int i = 0; i < 15; i++) {
				std::string text;
				if (Status(&text, (t + i) % 5 == 0 ? "wrong" : "s3cret") !=
					((t + i) % 5 == 0 ? RDMA_E_AUTH : 0))
					failures++;
			}
		});
	std::thread reader([&] {
		while (!done.load()) {
			struct rdma_node_status st = NodeStatus();
			(void)st;
			SleepMs(1);
		}
	});
	for (std::thread &t : threads)
		t.join();
	done = true;
	reader.join();
	EXPECT_EQ(failures.load(), 0);
	EXPECT_TRUE(WaitFor([&] { return NodeStatus().clients_connected == 0; }));
}

} // namespace
