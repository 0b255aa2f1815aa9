// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_test_util.h -- helpers shared by the reclaim tests:
// configurations, nodes that detect use after free, free callbacks that
// count, and bounded waits.
#ifndef RECLAIM_TEST_UTIL_H
#define RECLAIM_TEST_UTIL_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <reclaim/reclaim.h>

// liburcu is not built with ThreadSanitizer: its call_rcu thread frees
// memory that urcu_qsbr_barrier() allocated, synchronised by atomics TSan
// cannot see. Ignore what the library itself does; reclaim's code, and the
// happens-before it declares for liburcu's grace periods, stay checked.
// Weak, so that a test binary may include this header from several files.
extern "C" __attribute__((weak, used)) const char *__tsan_default_suppressions()
{
	return "called_from_lib:liburcu-qsbr.so.8\n";
}

namespace reclaimtest {

inline const std::vector<reclaim_scheme> &AllSchemes()
{
	static const std::vector<reclaim_scheme> all = {
		RECLAIM_NONE, RECLAIM_QSBR, RECLAIM_EBR, RECLAIM_HP,
		RECLAIM_CADENCE, RECLAIM_QSENSE, RECLAIM_URCU_QSBR,
	};
	return all;
}

// For gtest parameter names.
inline std::string SchemeName(const testing::TestParamInfo<reclaim_scheme> &info)
{
	std::string s = reclaim_scheme_name(info.param);
	for (char &c : s)
		if (c == '-')
			c = '_';
	return s;
}

// Defaults with a fast rooster (T = 1 ms, epsilon = 1 ms) and a short
// liveness check, so that the tests run in seconds.
inline reclaim_config TestConfig(reclaim_scheme scheme)
{
	reclaim_config cfg;
	reclaim_config_init(&cfg, scheme);
	cfg.max_threads = 32;
	cfg.hazards_per_thread = 4;
	cfg.quiescence_threshold = 8;
	cfg.rooster_interval_us = 1000;
	cfg.epsilon_us = 1000;
	cfg.liveness_check_ms = 50;
	return cfg;
}

// Polls @pred every millisecond until it holds or @seconds pass (a hang
// guard only: callers fail with a message when it returns false).
inline bool WaitFor(const std::function<bool()> &pred, double seconds = 20.0)
{
	auto until = std::chrono::steady_clock::now() +
		std::chrono::duration<double>(seconds);
	while (!pred()) {
		if (std::chrono::steady_clock::now() > until)
			return false;
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	return true;
}

inline reclaim_stats Stats(const reclaim_domain *d)
{
	reclaim_stats st;
	reclaim_domain_stats(d, &st);
	return st;
}

// Counts free callbacks per node id, to check "exactly once".
struct FreeLog {
	explicit FreeLog(size_t n) : count(n) {}
	std::vector<std::atomic<uint32_t>> count;
	std::atomic<uint64_t> total{0};

	bool AllOnce(size_t n) const
	{
		for (size_t i = 0; i < n; i++)
			if (count[i].load() != 1)
				return false;
		return true;
	}
};

struct IdNode {
	size_t id;
	FreeLog *log;
};

// reclaim_free_fn for IdNode: logs the id, then frees.
inline void FreeIdNode(void *p, void *ctx)
{
	IdNode *n = static_cast<IdNode *>(p);
	FreeLog *log = static_cast<FreeLog *>(ctx);
	log->count[n->id].fetch_add(1);
	log->total.fetch_add(1);
	std::free(n);
}

inline IdNode *NewIdNode(size_t id, FreeLog *log)
{
	IdNode *n = static_cast<IdNode *>(std::malloc(sizeof(IdNode)));
	n->id = id;
	n->log = log;
	return n;
}

// A node whose reader can tell whether it was freed under it: the free
// callback overwrites it with 0xdd bytes before freeing (ASan reports the
// access itself; the poison catches it in plain builds too).
constexpr uint64_t kMagic = 0x5eedfacecafef00dull;

struct Node {
	uint64_t magic;
	const Node *self;
	uint64_t payload[6];
};

inline Node *NewNode(uint64_t v)
{
	Node *n = static_cast<Node *>(std::malloc(sizeof(Node)));
	n->magic = kMagic;
	n->self = n;
	for (uint64_t &p : n->payload)
		p = v;
	return n;
}

inline bool NodeIntact(const Node *n)
{
	if (n->magic != kMagic || n->self != n)
		return false;
	for (uint64_t p : n->payload)
		if (p != n->payload[0])
			return false;
	return true;
}

// Counts the nodes freed through it (ctx: a std::atomic<uint64_t>).
inline void PoisonFree(void *p, void *ctx)
{
	std::memset(p, 0xdd, sizeof(Node));
	std::free(p);
	static_cast<std::atomic<uint64_t> *>(ctx)->fetch_add(1);
}

// A registered thread that stalls on request without going offline (it
// holds up every grace period) until resumed, then runs operations until
// stopped.
class StalledThread {
public:
	explicit StalledThread(reclaim_domain *d) : d_(d)
	{
		th_ = std::thread([this] { Run(); });
		std::unique_lock<std::mutex> lk(mu_);
		cv_.wait(lk, [this] { return registered_; });
	}
	~StalledThread() { Stop(); }

	void Resume()
	{
		std::lock_guard<std::mutex> lk(mu_);
		resumed_ = true;
		cv_.notify_all();
	}
	void Stop()
	{
		{
			std::lock_guard<std::mutex> lk(mu_);
			resumed_ = true;
			stop_ = true;
			cv_.notify_all();
		}
		if (th_.joinable())
			th_.join();
	}
	int register_ret() const { return ret_; }

private:
	void Run()
	{
		reclaim_thread *t = nullptr;
		int ret = reclaim_thread_register(d_, &t);
		std::unique_lock<std::mutex> lk(mu_);
		ret_ = ret;
		registered_ = true;
		cv_.notify_all();
		if (ret != 0)
			return;
		cv_.wait(lk, [this] { return resumed_; });
		while (!stop_) {
			lk.unlock();
			for (int i = 0; i < 64; i++) {
				reclaim_op_begin(t);
				reclaim_op_end(t);
			}
			std::this_thread::sleep_for(std::chrono::microseconds(100));
			lk.lock();
		}
		lk.unlock();
		reclaim_thread_unregister(&t);
	}

	reclaim_domain *d_;
	std::thread th_;
	std::mutex mu_;
	std::condition_variable cv_;
	bool registered_ = false;
	bool resumed_ = false;
	bool stop_ = false;
	int ret_ = 0;
};

} // namespace reclaimtest

#endif // RECLAIM_TEST_UTIL_H
