// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/node_bench.h -- what the command-line benchmarks on memory
// nodes (kv_index_bench, kv_bench) share: the clock, a splitmix generator,
// a barrier, in-process memory nodes reached as local: or over ofi+tcp,
// the CPU split between the nodes' threads and the clients, nearest-rank
// percentiles and latency summaries, JSON strings and option parsing
// (kv_compare_bench, which has no nodes, uses all but the nodes). Not Google Benchmark:
// these binaries print one JSON line per configuration.
#ifndef BENCHMARKS_NODE_BENCH_H
#define BENCHMARKS_NODE_BENCH_H

#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <pm/error.h>
#include <pm/persist.h>
#include <rdma/node.h>
#include <rdma/rdma.h>

namespace nodebench {

inline uint64_t NowNs()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// splitmix64: key ids to key bytes, and the per-thread generators.
inline uint64_t Mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

struct Rng {
	uint64_t s;
	uint64_t Next() { return Mix(s++); }
	uint64_t Below(uint64_t n) { return Next() % n; }
};

// A reusable barrier for a fixed number of threads.
class Barrier {
public:
	explicit Barrier(unsigned n) : n_(n) {}
	void Wait()
	{
		std::unique_lock<std::mutex> lk(mu_);
		uint64_t gen = gen_;

		if (++arrived_ == n_) {
			arrived_ = 0;
			gen_++;
			cv_.notify_all();
			return;
		}
		cv_.wait(lk, [&] { return gen_ != gen; });
	}

private:
	std::mutex mu_; // protects arrived_, gen_
	std::condition_variable cv_;
	unsigned n_, arrived_ = 0;
	uint64_t gen_ = 0;
};

// The memory nodes of one configuration, in this process (rdma/node.h):
// pool files in a directory (a RAM file system by default) with PMEM
// durability by default (with PMEM_IS_PMEM_FORCE=1 persists are real
// clwb + sfence), or MSYNC for pools on a disk file system (a persist is an
// msync of the range). Transport "local": clients reach them as
// local:<pool> (the client thread does every load, CAS and flush itself);
// "tcp": each node also serves ofi+tcp on 127.0.0.1 (TCP backend only, one
// progress thread per node, in this process -- not daemons; by default
// the node's adaptive poll mode, as dmkv-node's: it polls while requests
// come and sleeps on the provider's wait fd when none do; set_poll() gives
// RDMA_NODE_POLL_BUSY, a thread that never sleeps and yields to any
// runnable thread after each empty poll).
class Nodes {
public:
	~Nodes() { Close(); }

	// How the tcp progress threads of the nodes made after this wait.
	void set_poll(rdma_node_poll poll) { poll_ = poll; }

	// Creates @n nodes named <@pool_dir>/<@name>.<pid>.<@seq>.<i>.pool,
	// each with the regions of @region_bytes (at most RDMA_MAX_REGIONS),
	// persisting with @durability. Returns "" or what failed.
	std::string Open(const std::string &transport, unsigned n, const std::string &pool_dir,
		const std::string &name, unsigned seq, const std::vector<uint64_t> &region_bytes,
		pm_durability durability = PM_DURABILITY_PMEM)
	{
		tcp_ = transport == "tcp";
		for (unsigned i = 0; i < n; i++) {
			std::string path = pool_dir + "/" + name + "." + std::to_string(getpid()) + "." +
				std::to_string(seq) + "." + std::to_string(i) + ".pool";
			unlink(path.c_str());
			unlink((path + ".node").c_str());
			paths_.push_back(path);
			nodes_.push_back(nullptr);
			uris_.emplace_back();
			local_uris_.push_back("local:" + path);
			std::string err = OpenNode(i, RDMA_NODE_CREATE, region_bytes, durability);
			if (!err.empty())
				return err;
		}
		return "";
	}

	// Closes every node, writes its whole pool file back (fsync), and
	// opens it again persisting with @durability (tcp: on new ports, so
	// URIs taken before are stale). For a load made with cheap persists on
	// a disk file system: the measured part then starts with every page
	// clean and nothing left for the kernel to write back under it. No
	// client may be open. Returns "" or what failed.
	std::string Reopen(pm_durability durability)
	{
		for (unsigned i = 0; i < nodes_.size(); i++) {
			rdma_node_close(&nodes_[i]);
			int fd = open(paths_[i].c_str(), O_RDWR | O_CLOEXEC);
			if (fd < 0 || fsync(fd) != 0) {
				const std::string err = "fsync(" + paths_[i] + "): " + strerror(errno);
				if (fd >= 0)
					close(fd);
				return err;
			}
			close(fd);
			// trusted: this process made the pool, so skip PMDK's check of
			// the whole file in a child
			std::string err = OpenNode(i, RDMA_NODE_TRUSTED, {}, durability);
			if (!err.empty())
				return err;
		}
		return "";
	}

	// Takes node @i away: closed, and for local its files removed. Its URI
	// stays in the group and names nothing that answers.
	void Down(unsigned i)
	{
		rdma_node_close(&nodes_[i]);
		if (uris_[i].compare(0, 6, "local:") == 0) {
			unlink(paths_[i].c_str());
			unlink((paths_[i] + ".node").c_str());
		}
	}

	void Close()
	{
		for (auto &n : nodes_)
			rdma_node_close(&n);
		for (const auto &p : paths_) {
			unlink(p.c_str());
			unlink((p + ".node").c_str());
		}
		nodes_.clear();
		paths_.clear();
		uris_.clear();
		local_uris_.clear();
	}

	const std::vector<std::string> &uris() const { return uris_; }
	// The URIs as the C string array a config takes (valid while open);
	// @local: the local:<pool> ones even when the nodes serve tcp (they
	// are in this process, so a client may reach the same pools either way).
	std::vector<const char *> UriPtrs(bool local = false) const
	{
		std::vector<const char *> p;
		for (const auto &u : local ? local_uris_ : uris_)
			p.push_back(u.c_str());
		return p;
	}

private:
	// Opens node @i (its path set) with @flags; with RDMA_NODE_CREATE its
	// regions are @region_bytes. Serves it over tcp if the nodes do; sets
	// its URI.
	std::string OpenNode(unsigned i, unsigned flags, const std::vector<uint64_t> &region_bytes,
		pm_durability durability)
	{
		rdma_node_config cfg;
		rdma_node_config_init(&cfg);
		cfg.pool_path = paths_[i].c_str();
		cfg.flags = flags;
		cfg.nregions = static_cast<unsigned>(region_bytes.size());
		for (size_t r = 0; r < region_bytes.size(); r++)
			cfg.region_size[r] = region_bytes[r];
		cfg.durability = durability;
		int ret = rdma_node_open(&nodes_[i], &cfg);
		if (ret != 0)
			return "rdma_node_open(" + paths_[i] + "): " + pm_strerror(ret) + ": " +
				pm_errormsg() + (ret == PM_E_NOT_PMEM ? " (set PMEM_IS_PMEM_FORCE=1)" : "");
		if (!tcp_) {
			uris_[i] = local_uris_[i];
			return "";
		}
		rdma_node_serve_config sc;
		rdma_node_serve_config_init(&sc);
		sc.host = "127.0.0.1";
		sc.port = 0;
		sc.backends = RDMA_NODE_SERVE_TCP;
		sc.poll = poll_;
		ret = rdma_node_serve(nodes_[i], &sc);
		if (ret != 0)
			return std::string("rdma_node_serve: ") + pm_strerror(ret) + ": " + pm_errormsg();
		uris_[i] = "ofi+tcp://127.0.0.1:" + std::to_string(rdma_node_port(nodes_[i]));
		return "";
	}

	bool tcp_ = false;
	rdma_node_poll poll_ = RDMA_NODE_POLL_ADAPTIVE;
	std::vector<std::string> paths_;
	std::vector<rdma_node *> nodes_;
	std::vector<std::string> uris_, local_uris_;
};

// CPUs (--pin): with tcp, every node's progress thread polls while it is
// busy, and every client spins while it waits for a round; on a 2-core
// machine a node thread that shares a core with a spinning client can wait
// for the scheduler tick (4 ms) on a round. Split: the nodes' threads (created inside
// rdma_node_serve, which inherit the creating thread's CPU mask) on the
// last CPU, the clients on the others. Use: Split() (if wanted) before the
// nodes are made, Clients() after (this thread and the clients it starts
// go to the other CPUs), Restore() at the end.
class CpuSplit {
public:
	CpuSplit() { pthread_getaffinity_np(pthread_self(), sizeof(all_), &all_); }
	~CpuSplit() { Restore(); }

	// @pin "split", "none", or "auto" (split when @transport is tcp).
	static bool Wanted(const std::string &pin, const std::string &transport)
	{
		return pin == "split" || (pin == "auto" && transport == "tcp");
	}
	// Moves this thread to the last CPU, for the nodes' threads it makes.
	void Split()
	{
		const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		if (ncpu < 2)
			return;
		CPU_ZERO(&nodes_);
		CPU_ZERO(&clients_);
		CPU_SET(static_cast<int>(ncpu - 1), &nodes_);
		for (long cpu = 0; cpu < ncpu - 1; cpu++)
			CPU_SET(static_cast<int>(cpu), &clients_);
		pthread_setaffinity_np(pthread_self(), sizeof(nodes_), &nodes_);
		desc_ = "nodes on cpu " + std::to_string(ncpu - 1) + ", clients on cpu 0" +
			(ncpu > 2 ? "-" + std::to_string(ncpu - 2) : "");
		split_ = true;
	}
	// Moves this thread to the clients' CPUs (after Split() only).
	void Clients()
	{
		if (split_)
			pthread_setaffinity_np(pthread_self(), sizeof(clients_), &clients_);
	}
	void Restore() { pthread_setaffinity_np(pthread_self(), sizeof(all_), &all_); }
	// "none" or where the threads run.
	const std::string &desc() const { return desc_; }

private:
	cpu_set_t all_, nodes_, clients_;
	bool split_ = false;
	std::string desc_ = "none";
};

// The nearest-rank @q quantile of @sorted (0 if empty).
inline uint64_t Pct(const std::vector<uint64_t> &sorted, double q)
{
	if (sorted.empty())
		return 0;
	size_t k = static_cast<size_t>(q * static_cast<double>(sorted.size()) + 0.999999);
	k = std::min(std::max<size_t>(k, 1), sorted.size());
	return sorted[k - 1];
}

// The latencies @sorted (ns, ascending) as a JSON object: nearest-rank
// p50/p90/p99/p99.9, max and mean.
inline std::string LatencyJson(const std::vector<uint64_t> &sorted)
{
	double sum = 0;
	for (uint64_t x : sorted)
		sum += static_cast<double>(x);
	std::ostringstream j;
	j.precision(6);
	j << "{\"p50\":" << Pct(sorted, 0.50) << ",\"p90\":" << Pct(sorted, 0.90)
	  << ",\"p99\":" << Pct(sorted, 0.99) << ",\"p999\":" << Pct(sorted, 0.999)
	  << ",\"max\":" << (sorted.empty() ? 0 : sorted.back())
	  << ",\"mean\":" << sum / static_cast<double>(std::max<size_t>(sorted.size(), 1)) << "}";
	return j.str();
}

// @s as a JSON string literal.
inline std::string JsonStr(const std::string &s)
{
	std::string out = "\"";
	for (char ch : s) {
		if (ch == '"' || ch == '\\') {
			out += '\\';
			out += ch;
		} else if (static_cast<unsigned char>(ch) < 0x20) {
			char b[8];
			snprintf(b, sizeof(b), "\\u%04x", ch);
			out += b;
		} else {
			out += ch;
		}
	}
	return out + "\"";
}

// A decimal in [@lo, @hi] into *@out; false if @s is not one.
// The message for a bad value of option @c (its long name from @longopts).
inline std::string BadValue(const struct option *longopts, int c)
{
	const char *name = "?";
	for (const struct option *lo = longopts; lo->name != nullptr; lo++)
		if (lo->val == c)
			name = lo->name;
	return std::string("bad value for --") + name;
}

inline bool ParseUnsigned(const char *s, unsigned *out, unsigned lo, unsigned hi)
{
	char *end;
	errno = 0;
	unsigned long v = std::strtoul(s, &end, 10);
	if (errno != 0 || *s == '\0' || *end != '\0' || v < lo || v > hi)
		return false;
	*out = static_cast<unsigned>(v);
	return true;
}

// The non-empty items of a comma-separated list.
inline std::vector<std::string> SplitList(const std::string &s)
{
	std::vector<std::string> out;
	std::string cur;
	for (char ch : s + ",") {
		if (ch == ',') {
			if (!cur.empty())
				out.push_back(cur);
			cur.clear();
		} else {
			cur += ch;
		}
	}
	return out;
}

} // namespace nodebench

#endif
