// SPDX-License-Identifier: BSD-3-Clause
// kv/tests/kv_config_test.cc -- cluster config files (kv_config_load): a
// full file, defaults, every error with its line, comments, CRLF, sizes,
// node lists, and random bytes that must get 0 or an error, never a crash.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <kv/kv.h>

namespace {

class KvConfigTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		const char *tmp = std::getenv("TEST_TMPDIR");
		std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/kvcfgXXXXXX";
		ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
		dir_ = tmpl;
		path_ = dir_ + "/cluster.ini";
		kv_config_init(&cfg_);
	}
	void TearDown() override
	{
		EXPECT_EQ(kv_config_file_delete(&file_), 0);
		EXPECT_EQ(file_, nullptr);
		unlink(path_.c_str());
		rmdir(dir_.c_str());
	}
	void Write(const std::string &text)
	{
		FILE *f = std::fopen(path_.c_str(), "wb");
		ASSERT_NE(f, nullptr);
		ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
		ASSERT_EQ(std::fclose(f), 0);
	}
	int Load(const std::string &text)
	{
		Write(text);
		EXPECT_EQ(kv_config_file_delete(&file_), 0);
		int ret = kv_config_load(&file_, &cfg_, path_.c_str());
		if (ret != 0) {
			EXPECT_EQ(file_, nullptr);
		}
		return ret;
	}
	// Loads @text, expects KV_E_CONFIG and returns the message with the
	// "kv_config_load: PATH:" prefix checked and cut off ("LINE: what").
	std::string LoadError(const std::string &text)
	{
		kv_config saved = cfg_;
		EXPECT_EQ(Load(text), KV_E_CONFIG);
		// a failed load leaves the config alone
		EXPECT_EQ(cfg_.nodes, saved.nodes);
		EXPECT_EQ(cfg_.nnodes, saved.nnodes);
		EXPECT_EQ(cfg_.timeout_ms, saved.timeout_ms);
		std::string msg = pm_errormsg();
		std::string prefix = "kv_config_load: " + path_ + ":";
		EXPECT_EQ(msg.compare(0, prefix.size(), prefix), 0) << msg;
		return msg.size() >= prefix.size() ? msg.substr(prefix.size()) : msg;
	}

	std::string dir_, path_;
	kv_config cfg_;
	kv_config_file *file_ = nullptr;
};

const char kThree[] = "[cluster]\nnodes = a, b, c\n";

TEST_F(KvConfigTest, FullFile)
{
	ASSERT_EQ(Load("# comment\n"
		       "[cluster]\n"
		       "nodes = local:/dev/shm/n0.pool, local:/dev/shm/n1.pool, "
		       "local:/dev/shm/n2.pool   ; three\n"
		       "f = 1\n"
		       "token = secret\n"
		       "timeout_ms = 7000\n"
		       "connect_timeout_ms = 1000        ; -> cfg->conn.timeout_ms\n"
		       "cache_entries = 1024\n"
		       "index_region = 2\n"
		       "store_region = 3\n"
		       "[create]\n"
		       "max_clients = 32\n"
		       "log_bytes = 32M\n"
		       "chunk_bytes = 2M\n"
		       "tick_ns = 20000\n"
		       "repl = abd\n"),
		0) << pm_errormsg();
	ASSERT_NE(file_, nullptr);
	ASSERT_EQ(cfg_.nnodes, 3u);
	EXPECT_STREQ(cfg_.nodes[0], "local:/dev/shm/n0.pool");
	EXPECT_STREQ(cfg_.nodes[1], "local:/dev/shm/n1.pool");
	EXPECT_STREQ(cfg_.nodes[2], "local:/dev/shm/n2.pool");
	EXPECT_STREQ(cfg_.conn.token, "secret");
	EXPECT_EQ(cfg_.timeout_ms, 7000u);
	EXPECT_EQ(cfg_.conn.timeout_ms, 1000u);
	EXPECT_EQ(cfg_.cache_entries, 1024u);
	EXPECT_EQ(cfg_.index_region, 2u);
	EXPECT_EQ(cfg_.store_region, 3u);
	EXPECT_EQ(cfg_.max_clients, 32u);
	EXPECT_EQ(cfg_.log_bytes, 32u << 20);
	EXPECT_EQ(cfg_.chunk_bytes, 2u << 20);
	EXPECT_EQ(cfg_.tick_ns, 20000u);
	EXPECT_EQ(cfg_.repl, KV_REPL_ABD);
	EXPECT_STREQ(pm_errormsg(), "");
}

TEST_F(KvConfigTest, AbsentKeysKeepTheirValues)
{
	kv_config def;
	kv_config_init(&def);
	cfg_.clock_skew_us = 42; // not a file key: untouched
	cfg_.max_clients = 9;    // set by the caller before loading: kept
	ASSERT_EQ(Load("[cluster]\nnode = only\n"), 0) << pm_errormsg();
	ASSERT_EQ(cfg_.nnodes, 1u);
	EXPECT_STREQ(cfg_.nodes[0], "only");
	EXPECT_EQ(cfg_.index_region, def.index_region);
	EXPECT_EQ(cfg_.store_region, def.store_region);
	EXPECT_EQ(cfg_.timeout_ms, def.timeout_ms);
	EXPECT_EQ(cfg_.conn.timeout_ms, def.conn.timeout_ms);
	EXPECT_STREQ(cfg_.conn.token, def.conn.token);
	EXPECT_EQ(cfg_.cache_entries, def.cache_entries);
	EXPECT_EQ(cfg_.clock_skew_us, 42);
	EXPECT_EQ(cfg_.max_clients, 9u);
	EXPECT_EQ(cfg_.log_bytes, def.log_bytes);
	EXPECT_EQ(cfg_.chunk_bytes, def.chunk_bytes);
	EXPECT_EQ(cfg_.tick_ns, def.tick_ns);
}

TEST_F(KvConfigTest, NodeListsAndRepeatedNodeLines)
{
	ASSERT_EQ(Load("[cluster]\nnode = n0\nnode = n1\nnode=n2\nnode = n3 , n4\n"), 0)
		<< pm_errormsg();
	ASSERT_EQ(cfg_.nnodes, 5u);
	for (unsigned i = 0; i < 5; i++)
		EXPECT_EQ(std::string(cfg_.nodes[i]), "n" + std::to_string(i));
	// a list, then more lines, in file order
	ASSERT_EQ(Load("[cluster]\nnodes = x,y,z\nnode = w\nnode = v\n"), 0) << pm_errormsg();
	ASSERT_EQ(cfg_.nnodes, 5u);
	EXPECT_STREQ(cfg_.nodes[0], "x");
	EXPECT_STREQ(cfg_.nodes[3], "w");
	EXPECT_STREQ(cfg_.nodes[4], "v");
	// seven, the most
	ASSERT_EQ(Load("[cluster]\nnodes = 1,2,3,4,5,6,7\nf = 3\n"), 0) << pm_errormsg();
	EXPECT_EQ(cfg_.nnodes, 7u);
	// ofi URIs keep their colons and slashes
	ASSERT_EQ(Load("[cluster]\nnode = ofi+tcp://10.0.0.1:7470\n"), 0) << pm_errormsg();
	EXPECT_STREQ(cfg_.nodes[0], "ofi+tcp://10.0.0.1:7470");
}

TEST_F(KvConfigTest, CommentsAndWhitespace)
{
	ASSERT_EQ(Load("\n   \n; semicolon comment\n\t# hash comment\n"
		       "  [ cluster ]   # section comment\n"
		       "\t nodes\t=\ta ,\tb,c   \n"
		       "   token =  x#y;z   ; '#' and ';' inside a value stay\n"
		       "   timeout_ms=9\t\n"
		       "\n"),
		0) << pm_errormsg();
	ASSERT_EQ(cfg_.nnodes, 3u);
	EXPECT_STREQ(cfg_.nodes[0], "a");
	EXPECT_STREQ(cfg_.nodes[1], "b");
	EXPECT_STREQ(cfg_.nodes[2], "c");
	EXPECT_STREQ(cfg_.conn.token, "x#y;z");
	EXPECT_EQ(cfg_.timeout_ms, 9u);
	// empty token, '=' inside a value, no newline at the end
	ASSERT_EQ(Load("[cluster]\nnode = a\ntoken =\n[cluster]\ntimeout_ms = 3"), 0)
		<< pm_errormsg();
	EXPECT_STREQ(cfg_.conn.token, "");
	EXPECT_EQ(cfg_.timeout_ms, 3u);
	ASSERT_EQ(Load("[cluster]\nnode = a\ntoken = YWJj==\n"), 0) << pm_errormsg();
	EXPECT_STREQ(cfg_.conn.token, "YWJj==");
	// a UTF-8 byte order mark
	ASSERT_EQ(Load("\xef\xbb\xbf[cluster]\nnode = a\n"), 0) << pm_errormsg();
}

TEST_F(KvConfigTest, CrlfLineEnds)
{
	ASSERT_EQ(Load("# c\r\n[cluster]\r\nnodes = a, b, c\r\ntoken = t\r\n"
		       "[create]\r\nlog_bytes = 8M\r\n"),
		0) << pm_errormsg();
	ASSERT_EQ(cfg_.nnodes, 3u);
	EXPECT_STREQ(cfg_.nodes[2], "c");
	EXPECT_STREQ(cfg_.conn.token, "t");
	EXPECT_EQ(cfg_.log_bytes, 8u << 20);
	// line numbers count CRLF lines too
	EXPECT_EQ(LoadError("[cluster]\r\nnode = a\r\nbogus = 1\r\n"),
		"3: unknown key 'bogus' in [cluster]");
}

TEST_F(KvConfigTest, SizesWithSuffixes)
{
	ASSERT_EQ(Load(std::string(kThree) + "[create]\nlog_bytes = 1024K\nchunk_bytes = 4k\n"),
		0) << pm_errormsg();
	EXPECT_EQ(cfg_.log_bytes, 1u << 20);
	EXPECT_EQ(cfg_.chunk_bytes, 4096u);
	ASSERT_EQ(Load(std::string(kThree) + "[create]\nlog_bytes = 256m\nchunk_bytes = 4G\n"),
		0) << pm_errormsg();
	EXPECT_EQ(cfg_.log_bytes, 256u << 20);
	EXPECT_EQ(cfg_.chunk_bytes, uint64_t(4) << 30);
	ASSERT_EQ(Load(std::string(kThree) + "[create]\nchunk_bytes = 8192\n"), 0)
		<< pm_errormsg();
	EXPECT_EQ(cfg_.chunk_bytes, 8192u);
	EXPECT_EQ(LoadError(std::string(kThree) + "[create]\nlog_bytes = 16 M\n"),
		"4: log_bytes: bad number '16 M' (decimal, optionally with K, M or G)");
	EXPECT_EQ(LoadError(std::string(kThree) + "[create]\nlog_bytes = 16T\n"),
		"4: log_bytes: bad number '16T' (decimal, optionally with K, M or G)");
	EXPECT_EQ(LoadError(std::string(kThree) + "[create]\nlog_bytes = 16MB\n"),
		"4: log_bytes: bad number '16MB' (decimal, optionally with K, M or G)");
	EXPECT_EQ(LoadError(std::string(kThree) + "[create]\nchunk_bytes = 5G\n"),
		"4: chunk_bytes: number '5G' out of range (4096..4294967296)");
	// a suffix that overflows 64 bits
	EXPECT_EQ(LoadError(std::string(kThree) + "[create]\nchunk_bytes = 17179869184G\n"),
		"4: chunk_bytes: number '17179869184G' out of range (4096..4294967296)");
	// suffixes are for sizes only
	EXPECT_EQ(LoadError(std::string(kThree) + "[create]\ntick_ns = 1K\n"),
		"4: tick_ns: bad number '1K' (decimal)");
}

TEST_F(KvConfigTest, UnknownSection)
{
	EXPECT_EQ(LoadError("# x\n[clusters]\n"),
		"2: unknown section [clusters] (expected [cluster] or [create])");
	EXPECT_EQ(LoadError("[]\n"), "1: unknown section [] (expected [cluster] or [create])");
	EXPECT_EQ(LoadError("[cluster\n"),
		"1: malformed section header (expected [cluster] or [create])");
}

TEST_F(KvConfigTest, UnknownKey)
{
	EXPECT_EQ(LoadError("[cluster]\nnode = a\ntimeout = 5\n"),
		"3: unknown key 'timeout' in [cluster]");
	// keys belong to their section
	EXPECT_EQ(LoadError("[create]\ntoken = a\n"), "2: unknown key 'token' in [create]");
	EXPECT_EQ(LoadError("[cluster]\nmax_clients = 4\n"),
		"2: unknown key 'max_clients' in [cluster]");
	EXPECT_EQ(LoadError("node = a\n[cluster]\n"),
		"1: key 'node' before any section ([cluster] or [create])");
	EXPECT_EQ(LoadError("[cluster]\n= a\n"), "2: missing key before '='");
}

TEST_F(KvConfigTest, DuplicateKey)
{
	EXPECT_EQ(LoadError("[cluster]\nnode = a\ntoken = x\n\ntoken = y\n"),
		"5: duplicate key 'token' (first on line 3)");
	EXPECT_EQ(LoadError("[cluster]\nnodes = a\nnodes = b, c\n"),
		"3: duplicate key 'nodes' (first on line 2)");
	// also across a repeated section
	EXPECT_EQ(LoadError("[create]\ntick_ns = 1\n[cluster]\nnode = a\n[create]\ntick_ns = 2\n"),
		"6: duplicate key 'tick_ns' (first on line 2)");
}

TEST_F(KvConfigTest, BadNumber)
{
	EXPECT_EQ(LoadError("[cluster]\nnode = a\ntimeout_ms = 5s\n"),
		"3: timeout_ms: bad number '5s' (decimal)");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\ntimeout_ms = -5\n"),
		"3: timeout_ms: bad number '-5' (decimal)");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\ntimeout_ms =\n"),
		"3: timeout_ms: bad number '' (decimal)");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\nindex_region = 0x1\n"),
		"3: index_region: bad number '0x1' (decimal)");
}

TEST_F(KvConfigTest, NumberOutOfRange)
{
	EXPECT_EQ(LoadError("[cluster]\nnode = a\ntimeout_ms = 0\n"),
		"3: timeout_ms: number '0' out of range (1..4294967295)");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\ntimeout_ms = 4294967296\n"),
		"3: timeout_ms: number '4294967296' out of range (1..4294967295)");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\ncache_entries = 99999999999999999999999\n"),
		"3: cache_entries: number '99999999999999999999999' out of range (0..4294967295)");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\n[create]\nmax_clients = 128\n"),
		"4: max_clients: number '128' out of range (1..127)");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\nf = 4\n"), "3: f: number '4' out of range (0..3)");
}

TEST_F(KvConfigTest, MissingEquals)
{
	EXPECT_EQ(LoadError("[cluster]\nnode = a\n\ntoken secret\n"),
		"4: missing '=' (expected key = value, a [section] or a comment)");
}

TEST_F(KvConfigTest, NoNodes)
{
	EXPECT_EQ(LoadError("[cluster]\ntoken = x\n"),
		"2: no nodes (give nodes = URI, ... or node = URI lines in [cluster])");
	EXPECT_EQ(LoadError(""),
		"1: no nodes (give nodes = URI, ... or node = URI lines in [cluster])");
	EXPECT_EQ(LoadError("[cluster]\nnodes = a,,c\n"), "2: nodes: empty node URI");
	EXPECT_EQ(LoadError("[cluster]\nnode =\n"), "2: node: empty node URI");
}

TEST_F(KvConfigTest, FInconsistentWithNodes)
{
	EXPECT_EQ(LoadError("[cluster]\nf = 1\nnodes = a, b, c, d, e\n"),
		"2: f = 1 needs 2f+1 = 3 nodes, but 5 are listed");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\nf = 2\nnode = b\n"),
		"3: f = 2 needs 2f+1 = 5 nodes, but 2 are listed");
	ASSERT_EQ(Load("[cluster]\nf = 0\nnode = a\n"), 0) << pm_errormsg();
	// without f, the count must still be odd
	EXPECT_EQ(LoadError("[cluster]\nnode = a\nnode = b\n"),
		"3: 2 nodes; a cluster has 2f+1 (1, 3, 5 or 7)");
}

TEST_F(KvConfigTest, DuplicateNodes)
{
	EXPECT_EQ(LoadError("[cluster]\nnodes = a, b, a\n"),
		"2: duplicate node URI 'a' (first on line 2)");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\nnode = b\nnode = a\n"),
		"4: duplicate node URI 'a' (first on line 2)");
}

TEST_F(KvConfigTest, TooManyNodes)
{
	EXPECT_EQ(LoadError("[cluster]\nnodes = 1,2,3,4,5,6,7,8,9\n"),
		"2: too many nodes (at most KV_MAX_NODES = 7)");
	EXPECT_EQ(LoadError("[cluster]\nnodes = 1,2,3,4,5,6,7\nnode = 8\n"),
		"3: too many nodes (at most KV_MAX_NODES = 7)");
}

TEST_F(KvConfigTest, TokenTooLong)
{
	std::string ok(RDMA_TOKEN_MAX, 't');
	ASSERT_EQ(Load("[cluster]\nnode = a\ntoken = " + ok + "\n"), 0) << pm_errormsg();
	EXPECT_EQ(std::string(cfg_.conn.token), ok);
	EXPECT_EQ(LoadError("[cluster]\nnode = a\ntoken = " + ok + "x\n"),
		"3: token of 257 bytes, longer than RDMA_TOKEN_MAX (256)");
}

TEST_F(KvConfigTest, ControlCharacters)
{
	EXPECT_EQ(LoadError(std::string("[cluster]\nnode = a\0b\n", 21)),
		"2: control character 0x00");
	EXPECT_EQ(LoadError("[cluster]\nnode = a\x1b[0m\n"), "2: control character 0x1b");
	// a lone CR inside a line is not a line end
	EXPECT_EQ(LoadError("[cluster]\rnode = a\n"), "1: control character 0x0d");
}

TEST_F(KvConfigTest, FileErrors)
{
	kv_config_file *f = nullptr;
	std::string missing = dir_ + "/none.ini";
	EXPECT_EQ(kv_config_load(&f, &cfg_, missing.c_str()), -ENOENT);
	EXPECT_EQ(f, nullptr);
	std::string msg = pm_errormsg();
	EXPECT_NE(msg.find(missing), std::string::npos) << msg;
	EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
	// a directory opens but cannot be read
	EXPECT_EQ(kv_config_load(&f, &cfg_, dir_.c_str()), -EISDIR);
	EXPECT_EQ(f, nullptr);
	if (geteuid() != 0) { // root reads any file
		Write(kThree);
		ASSERT_EQ(chmod(path_.c_str(), 0), 0);
		EXPECT_EQ(kv_config_load(&f, &cfg_, path_.c_str()), -EACCES);
		EXPECT_EQ(f, nullptr);
	}
	// too large
	EXPECT_EQ(Load(std::string(kThree) + std::string((1u << 20), '#')), KV_E_CONFIG);
	EXPECT_NE(std::string(pm_errormsg()).find("larger than"), std::string::npos);
	EXPECT_EQ(kv_config_load(&f, nullptr, path_.c_str()), -EINVAL);
	EXPECT_EQ(kv_config_load(&f, &cfg_, nullptr), -EINVAL);
	EXPECT_EQ(kv_config_load(nullptr, &cfg_, path_.c_str()), -EINVAL);
	EXPECT_EQ(kv_config_file_delete(nullptr), 0);
	EXPECT_EQ(kv_config_file_delete(&f), 0);
}

// Random bytes, and valid files with random bytes changed: 0 or an error,
// never a crash (ASan: bazel test --config=asan //kv:kv_config_test).
TEST_F(KvConfigTest, RandomBytesNeverCrash)
{
	std::mt19937 rng(20240601);
	const std::string valid = "# c\n[cluster]\nnodes = a, b, c\nf = 1\ntoken = t\r\n"
				  "[create]\nlog_bytes = 16M\nchunk_bytes = 1M\n";
	const char alphabet[] = "[]=,;#\r\n \tKMG0123456789abcfnodes";
	unsigned ok = 0;
	for (int i = 0; i < 600; i++) {
		std::string text;
		if (i % 3 == 0) {
			text.resize(rng() % 512);
			for (auto &c : text)
				c = static_cast<char>(rng());
		} else if (i % 3 == 1) {
			text.resize(rng() % 256);
			for (auto &c : text)
				c = alphabet[rng() % (sizeof(alphabet) - 1)];
		} else {
			text = valid;
			for (unsigned k = rng() % 4 + 1; k > 0; k--)
				text[rng() % text.size()] = static_cast<char>(rng());
		}
		int ret = Load(text);
		if (ret == 0) {
			ok++;
			ASSERT_NE(file_, nullptr);
			ASSERT_GE(cfg_.nnodes, 1u);
			ASSERT_LE(cfg_.nnodes, unsigned(KV_MAX_NODES));
			for (unsigned n = 0; n < cfg_.nnodes; n++)
				ASSERT_NE(cfg_.nodes[n][0], '\0');
		} else {
			ASSERT_EQ(ret, KV_E_CONFIG) << i;
			ASSERT_NE(std::string(pm_errormsg()), "");
		}
		kv_config_init(&cfg_);
	}
	// some changed files still load (a byte in a comment or a value)
	EXPECT_GT(ok, 0u);
}

} // namespace
