// SPDX-License-Identifier: BSD-3-Clause
// tests/lincheck/lincheck_threads_test.cc -- Recorder on real threads: lock-based
// objects must pass, a deliberately torn MCAS must fail.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace {

using lincheck::McasEntry;
using lincheck::Recorder;
using lincheck::SetOp;
using lincheck::WordArrayModel;
using lincheck::WordOp;

// A word array whose every operation holds one mutex: linearizable by construction.
class LockedArray {
public:
	explicit LockedArray(size_t n) : words_(n, 0) {}

	uint64_t read(size_t i)
	{
		std::lock_guard<std::mutex> g(mu_);
		return words_[i];
	}

	void write(size_t i, uint64_t v)
	{
		std::lock_guard<std::mutex> g(mu_);
		words_[i] = v;
	}

	bool mcas(const std::vector<McasEntry> &e)
	{
		std::lock_guard<std::mutex> g(mu_);
		for (const McasEntry &x : e)
			if (words_[x.index] != x.expected)
				return false;
		for (const McasEntry &x : e)
			words_[x.index] = x.desired;
		return true;
	}

private:
	std::mutex mu_;  // protects words_; a leaf lock
	std::vector<uint64_t> words_;
};

// @threads threads each run @ops random reads, writes and MCASes (expected
// values from what the thread last saw, so many succeed) through @rec; then
// every thread invokes one more MCAS, applies it or not, and stops without
// completing it, as a crashed thread would.
void RunWords(LockedArray *a, Recorder<WordOp> *rec, size_t threads, size_t ops, size_t words)
{
	std::vector<std::thread> ts;
	for (size_t t = 0; t < threads; t++) {
		ts.emplace_back([=] {
			std::mt19937_64 rng(t + 1);
			std::vector<uint64_t> seen(words, 0);
			auto &h = rec->handle(t);
			auto random_mcas = [&] {
				std::vector<McasEntry> e;
				for (size_t i = rng() % words, n = 1 + rng() % 3; e.size() < n && e.size() < words;
				     i = (i + 1 + rng() % 2) % words) {
					if (std::none_of(e.begin(), e.end(), [&](const McasEntry &x) { return x.index == i; }))
						e.push_back({i, seen[i], rng() % 8});
				}
				return e;
			};
			for (size_t k = 0; k < ops; k++) {
				size_t i = rng() % words;
				switch (rng() % 3) {
				case 0: {
					auto tk = h.invoke(WordOp::read(i));
					seen[i] = a->read(i);
					h.complete(tk, WordOp::read(i, seen[i]));
					break;
				}
				case 1: {
					uint64_t v = rng() % 8;
					auto tk = h.invoke(WordOp::write(i, v));
					a->write(i, v);
					h.complete(tk);
					seen[i] = v;
					break;
				}
				default: {
					auto e = random_mcas();
					auto tk = h.invoke(WordOp::mcas(e));
					bool ok = a->mcas(e);
					h.complete(tk, WordOp::mcas(e, ok));
					if (ok)
						for (const McasEntry &x : e)
							seen[x.index] = x.desired;
				}
				}
			}
			auto e = random_mcas();
			h.invoke(WordOp::mcas(e));
			if (t % 2)
				a->mcas(e);
		});
	}
	for (auto &t : ts)
		t.join();
}

TEST(Threads, RecorderOnLockedArrayPasses)
{
	const size_t kThreads = 4, kOps = 200, kWords = 4;
	LockedArray a(kWords);
	Recorder<WordOp> rec(kThreads, kOps + 1);
	RunWords(&a, &rec, kThreads, kOps, kWords);
	auto h = rec.history();
	ASSERT_EQ(h.size(), kThreads * (kOps + 1));
	size_t pending = 0;
	for (const auto &op : h)
		pending += op.ret == lincheck::kPending;
	EXPECT_EQ(pending, kThreads);
	auto r = lincheck::check(WordArrayModel(std::vector<uint64_t>(kWords, 0)), h);
	EXPECT_TRUE(r.ok) << r.explanation;
}

// Performance sanity, not a timed assertion: a 4 x 250 history over 8 words
// from a lock-based array is checked without hitting the state limit.
TEST(Threads, FourByTwoHundredFiftyWordHistoryChecksWithinLimit)
{
	const size_t kThreads = 4, kOps = 250, kWords = 8;
	LockedArray a(kWords);
	Recorder<WordOp> rec(kThreads, kOps + 1);
	RunWords(&a, &rec, kThreads, kOps, kWords);
	auto r = lincheck::check(WordArrayModel(std::vector<uint64_t>(kWords, 0)), rec.history());
	EXPECT_TRUE(r.ok) << r.explanation;
	EXPECT_FALSE(r.timed_out_or_limit);
	RecordProperty("states_explored", std::to_string(r.states_explored));
}

TEST(Threads, RecorderOnLockedSetPasses)
{
	const size_t kThreads = 4, kOps = 500;
	std::mutex mu;  // protects set
	std::set<uint64_t> set;
	Recorder<SetOp> rec(kThreads, kOps);
	std::vector<std::thread> ts;
	for (size_t t = 0; t < kThreads; t++) {
		ts.emplace_back([&, t] {
			std::mt19937_64 rng(100 + t);
			auto &h = rec.handle(t);
			for (size_t k = 0; k < kOps; k++) {
				uint64_t key = rng() % 16;
				int kind = static_cast<int>(rng() % 3);
				auto tk = h.invoke(kind == 0 ? SetOp::insert(key)
					: kind == 1 ? SetOp::remove(key) : SetOp::contains(key));
				std::lock_guard<std::mutex> g(mu);
				if (kind == 0)
					h.complete(tk, SetOp::insert(key, set.insert(key).second));
				else if (kind == 1)
					h.complete(tk, SetOp::remove(key, set.erase(key) == 1));
				else
					h.complete(tk, SetOp::contains(key, set.count(key) == 1));
			}
		});
	}
	for (auto &t : ts)
		t.join();
	auto r = lincheck::check(lincheck::SetModel(), rec.history());
	EXPECT_TRUE(r.ok) << r.explanation;
}

// An MCAS that writes its two words under separate lock holds, while another
// thread reads both in between: the recorded history must be rejected. The
// interleaving is forced by a handshake, so the test is deterministic.
TEST(Threads, TornMcasIsCaught)
{
	LockedArray a(2);
	Recorder<WordOp> rec(2);
	std::atomic<int> phase{0};
	std::thread writer([&] {
		auto &h = rec.handle(0);
		std::vector<McasEntry> e = {{0, 0, 1}, {1, 0, 1}};
		auto tk = h.invoke(WordOp::mcas(e));
		a.write(0, 1);
		phase.store(1);  // seq_cst: the reader's load of 1 sees word 0 written
		while (phase.load() != 2)
			std::this_thread::yield();
		a.write(1, 1);
		h.complete(tk, WordOp::mcas(e, true));
	});
	std::thread reader([&] {
		auto &h = rec.handle(1);
		while (phase.load() != 1)
			std::this_thread::yield();
		auto tk = h.invoke(WordOp::read(0));
		h.complete(tk, WordOp::read(0, a.read(0)));
		tk = h.invoke(WordOp::read(1));
		h.complete(tk, WordOp::read(1, a.read(1)));
		phase.store(2);  // seq_cst: the writer resumes after both reads
	});
	writer.join();
	reader.join();
	auto r = lincheck::check(WordArrayModel({0, 0}), rec.history());
	EXPECT_FALSE(r.ok);
	EXPECT_FALSE(r.timed_out_or_limit);
	EXPECT_NE(r.explanation.find("read(1) -> 0"), std::string::npos) << r.explanation;
}

}  // namespace
