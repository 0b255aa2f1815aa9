// SPDX-License-Identifier: BSD-3-Clause
// benchmarks/rdma_bench.cc -- latency and throughput of the transport
// (rdma/rdma.h) per backend, operation type and batch size, next to the
// floors DESIGN.md sect. 9 asks for, measured in the same run:
//   floor/tcp_echo/bytes:N   a plain TCP request/response of N bytes over
//                            loopback, both sides busy-polling (the floor of
//                            the ofi+tcp path);
//   floor/cacheline/...      one access to a random cache line of a mapped
//                            pool file (the floor of the local path).
// One in-process memory node (rdma/node.h) serves every backend: a pool on
// /dev/shm (PMEM durability with PMEM_IS_PMEM_FORCE=1, so persists are real
// clwb + sfence), reached as local:, ofi+tcp:// and ofi+shm://. Its progress
// threads poll as $RDMA_BENCH_POLL says: "busy" (the default here: they
// never sleep, as the client does, so on these 2-core machines the client
// and the node each have a core, the dedicated-machine case) or "adaptive"
// (the node's default: the tcp thread sleeps whenever it is idle).
//
// Names: rdma/<backend>/<op>/batch:<n>, where <backend> "ofi+tcp:rma" and
// "ofi+shm:rma" are connections with max_provider_ops lifted (rdma.h); one
// iteration is one batch (n
// operations of that type on random 64-byte-aligned addresses, or for
// op "kv" the store's update "write 1 KiB, persist, CAS, persist").
// Counters per batch from rdma_stats: round trips, messages, provider
// operations and shipped batches, so the cost of a batch is visible, not
// only its time. benchmarks/rdma_report.py turns the JSON into ratios to
// the floors.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <pm/error.h>
#include <rdma/node.h>
#include <rdma/rdma.h>

#include "benchmarks/echo_server.h"

namespace {

constexpr uint64_t kRegionSize = 64 << 20;
constexpr uint32_t kKvValue = 1024;

// xorshift64*, per benchmark run.
struct Rng {
	uint64_t s;
	uint64_t Next()
	{
		s ^= s >> 12;
		s ^= s << 25;
		s ^= s >> 27;
		return s * 0x2545F4914F6CDD1Dull;
	}
	// A random 64-byte-aligned offset with room for @len bytes.
	uint64_t Line(uint64_t len) { return (Next() % ((kRegionSize - len) / 64)) * 64; }
};

std::string PoolDir()
{
	const char *d = std::getenv("RDMA_BENCH_POOL_DIR");
	return d != nullptr && *d != '\0' ? d : "/dev/shm";
}

// The node's poll mode ($RDMA_BENCH_POLL, default busy).
rdma_node_poll PollMode()
{
	const char *p = std::getenv("RDMA_BENCH_POLL");
	return p != nullptr && std::string(p) == "adaptive" ? RDMA_NODE_POLL_ADAPTIVE
							   : RDMA_NODE_POLL_BUSY;
}

// The memory node every rdma benchmark talks to, made on first use.
class Node {
 public:
	static Node &Get()
	{
		static Node n;
		return n;
	}
	const std::string &error() const { return error_; }
	std::string Uri(const std::string &backend) const
	{
		if (backend == "local")
			return "local:" + path_;
		return backend + "://127.0.0.1:" + std::to_string(rdma_node_port(node_));
	}
	~Node()
	{
		rdma_node_close(&node_);
		unlink(path_.c_str());
		unlink((path_ + ".node").c_str());
	}

 private:
	Node()
	{
		path_ = PoolDir() + "/rdma_bench." + std::to_string(getpid()) + ".pool";
		unlink(path_.c_str());
		rdma_node_config cfg;
		rdma_node_config_init(&cfg);
		cfg.pool_path = path_.c_str();
		cfg.flags = RDMA_NODE_CREATE;
		cfg.nregions = 1;
		cfg.region_size[0] = kRegionSize;
		cfg.durability = PM_DURABILITY_PMEM;
		int ret = rdma_node_open(&node_, &cfg);
		if (ret != 0) {
			error_ = std::string("rdma_node_open(") + path_ + "): " + pm_strerror(ret) +
				(ret == PM_E_NOT_PMEM ? " (set PMEM_IS_PMEM_FORCE=1)" : "");
			return;
		}
		rdma_node_serve_config sc;
		rdma_node_serve_config_init(&sc);
		sc.port = 0;
		sc.backends = RDMA_NODE_SERVE_TCP | RDMA_NODE_SERVE_SHM;
		sc.poll = PollMode();
		ret = rdma_node_serve(node_, &sc);
		if (ret != 0)
			error_ = std::string("rdma_node_serve: ") + pm_strerror(ret);
	}
	std::string path_;
	std::string error_;
	rdma_node *node_ = nullptr;
};

// Adds @n operations of type @op (or the kv update) to @b.
void FillBatch(rdma_batch *b, const std::string &op, int n, Rng *rng, char *buf, uint64_t *olds)
{
	rdma_batch_init(b);
	if (op == "kv") {
		uint64_t val = rng->Line(kKvValue), meta = rng->Line(8);
		rdma_batch_write(b, 0, val, buf, kKvValue);
		rdma_batch_persist(b, 0, val, kKvValue);
		rdma_batch_cas(b, 0, meta, 0, 0, &olds[0]);
		rdma_batch_persist(b, 0, meta, 8);
		return;
	}
	for (int i = 0; i < n; i++) {
		if (op == "read8")
			rdma_batch_read(b, 0, rng->Line(8), buf + 8 * i, 8);
		else if (op == "read4k")
			rdma_batch_read(b, 0, rng->Line(4096), buf + 4096 * (i % 8), 4096);
		else if (op == "write8")
			rdma_batch_write(b, 0, rng->Line(8), buf, 8);
		else if (op == "write4k")
			rdma_batch_write(b, 0, rng->Line(4096), buf, 4096);
		else if (op == "cas")
			rdma_batch_cas(b, 0, rng->Line(8), 0, 0, &olds[i]);
		else if (op == "faa")
			rdma_batch_faa(b, 0, rng->Line(8), 1, &olds[i]);
		else if (op == "persist64")
			rdma_batch_persist(b, 0, rng->Line(64), 64);
	}
}

void BM_Rdma(benchmark::State &state, std::string backend, std::string op, int n)
{
	Node &node = Node::Get();
	if (!node.error().empty()) {
		state.SkipWithError(node.error().c_str());
		return;
	}
	// "<backend>:rma" lifts the batch-length limit of the ofi backends
	// (max_provider_ops), so a batch the provider can order goes out as
	// provider operations: the path the default avoids past one operation
	rdma_conn_config cfg;
	rdma_conn_config_init(&cfg);
	std::string base = backend;
	size_t colon = backend.find(':');
	if (colon != std::string::npos) {
		base = backend.substr(0, colon);
		cfg.max_provider_ops = RDMA_BATCH_MAX_OPS;
	}
	rdma_conn *c = nullptr;
	int ret = rdma_conn_open(&c, node.Uri(base).c_str(), &cfg);
	if (ret != 0) {
		state.SkipWithError((backend + ": " + pm_strerror(ret)).c_str());
		return;
	}
	std::vector<char> buf(RDMA_BATCH_MAX_BYTES, 'x');
	uint64_t olds[RDMA_BATCH_MAX_OPS];
	Rng rng{ 0x1234567 + (uint64_t)n };
	rdma_batch b;
	rdma_stats s0, s1, d;
	rdma_stats_read_thread(&s0);
	for (auto _ : state) {
		FillBatch(&b, op, n, &rng, buf.data(), olds);
		ret = rdma_execute(c, &b);
		if (ret != 0) {
			state.SkipWithError((backend + " batch: " + pm_strerror(ret)).c_str());
			break;
		}
	}
	rdma_stats_read_thread(&s1);
	rdma_stats_diff(&s1, &s0, &d);
	rdma_conn_close(&c);
	const double batches = d.batches > 0 ? (double)d.batches : 1;
	uint64_t ops = 0;
	for (uint64_t x : d.ops)
		ops += x;
	state.SetItemsProcessed((int64_t)ops);
	state.counters["rt_per_batch"] = d.round_trips / batches;
	state.counters["msgs_per_batch"] = d.wire_messages / batches;
	state.counters["provider_ops_per_batch"] = d.provider_ops / batches;
	state.counters["shipped_per_batch"] = d.shipped / batches;
	state.counters["ops_per_batch"] = ops / batches;
	state.counters["bytes_per_batch"] = (d.bytes_read + d.bytes_written) / batches;
}

void BM_TcpEcho(benchmark::State &state, size_t msg)
{
	bench::EchoServer server(msg);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(server.port());
	if (server.port() == 0 || connect(fd, (sockaddr *)&a, sizeof(a)) != 0) {
		state.SkipWithError("loopback echo server");
		close(fd);
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	std::vector<char> buf(msg, 'x');
	for (auto _ : state) {
		if (send(fd, buf.data(), msg, MSG_NOSIGNAL) != (ssize_t)msg) {
			state.SkipWithError("send");
			break;
		}
		size_t got = 0;
		while (got < msg) {
			ssize_t r = recv(fd, buf.data() + got, msg - got, MSG_DONTWAIT);
			if (r == 0) {
				state.SkipWithError("echo server closed");
				break;
			}
			if (r > 0)
				got += (size_t)r;
		}
	}
	close(fd);
	state.counters["rt_per_batch"] = 1;
}

// One access to a random cache line of a mapped pool-sized file: what a
// local read, CAS or persist costs at the least.
void BM_CacheLine(benchmark::State &state, std::string op)
{
	std::string path = PoolDir() + "/rdma_bench_floor." + std::to_string(getpid());
	int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	void *p = MAP_FAILED;
	if (fd >= 0 && ftruncate(fd, kRegionSize) == 0)
		p = mmap(nullptr, kRegionSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	unlink(path.c_str());
	if (p == MAP_FAILED) {
		state.SkipWithError("mapping the floor file");
		return;
	}
	memset(p, 0, kRegionSize); // no page faults in the timed loop
	char *base = static_cast<char *>(p);
	Rng rng{ 0x1234567 };
	for (auto _ : state) {
		uint64_t *w = reinterpret_cast<uint64_t *>(base + rng.Line(8));
		if (op == "read8") {
			benchmark::DoNotOptimize(__atomic_load_n(w, __ATOMIC_ACQUIRE));
		} else {
			uint64_t expected = 0;
			__atomic_compare_exchange_n(w, &expected, 0, false, __ATOMIC_SEQ_CST,
				__ATOMIC_SEQ_CST);
		}
	}
	munmap(p, kRegionSize);
	state.SetItemsProcessed(state.iterations());
	state.counters["rt_per_batch"] = 0;
}

void RegisterAll()
{
	const char *backends[] = { "local", "ofi+tcp", "ofi+shm" };
	const char *ops[] = { "read8", "read4k", "write8", "write4k", "cas", "faa", "persist64" };
	for (const char *be : backends) {
		for (const char *op : ops)
			for (int n : { 1, 8 })
				benchmark::RegisterBenchmark(
					(std::string("rdma/") + be + "/" + op + "/batch:" + std::to_string(n)).c_str(),
					BM_Rdma, std::string(be), std::string(op), n)
					->UseRealTime();
		benchmark::RegisterBenchmark((std::string("rdma/") + be + "/kv/batch:4").c_str(), BM_Rdma,
			std::string(be), std::string("kv"), 4)
			->UseRealTime();
	}
	// Batches of 8 the provider could run as RMA and atomics, run that way.
	for (const char *be : { "ofi+tcp:rma", "ofi+shm:rma" })
		for (const char *op : { "read8", "write8", "cas", "faa" })
			benchmark::RegisterBenchmark(
				(std::string("rdma/") + be + "/" + op + "/batch:8").c_str(), BM_Rdma,
				std::string(be), std::string(op), 8)
				->UseRealTime();
	for (size_t msg : { 64, 4096 })
		benchmark::RegisterBenchmark(("floor/tcp_echo/bytes:" + std::to_string(msg)).c_str(),
			BM_TcpEcho, msg)
			->UseRealTime();
	for (const char *op : { "read8", "cas" })
		benchmark::RegisterBenchmark((std::string("floor/cacheline/") + op).c_str(), BM_CacheLine,
			std::string(op))
			->UseRealTime();
}

} // namespace

int main(int argc, char **argv)
{
	// Real cache-line flushes on /dev/shm (DESIGN.md sect. 4), as in the
	// other benchmarks.
	setenv("PMEM_IS_PMEM_FORCE", "1", 0);
	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 2;
	RegisterAll();
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}
