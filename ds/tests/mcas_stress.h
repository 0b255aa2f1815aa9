// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/mcas_stress.h -- the update-stress skeleton of the MCAS
// structures (dll_stress_test, bztree_stress_test): worker threads that
// start together and count their successful adds and removes per key, and
// the replay that must give the final contents: for every key, the initial
// presence plus the adds minus the removes is 0 or 1 (no update was lost
// or duplicated).
#ifndef DS_TESTS_MCAS_STRESS_H
#define DS_TESTS_MCAS_STRESS_H

#include <atomic>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace dstest {

// One worker's successful updates per key, or what went wrong.
struct StressResult {
	std::vector<int64_t> added, removed;
	std::string error;
};

// Runs @threads workers at once on structure @s, with @keys key slots
// each. A worker registers a handle (@reg(s, &h)), waits for the others,
// so that the threads overlap from the first operation, runs @ops times
// @op(h, worker id, rng, result) -- stopping at the first error -- and
// unregisters (@unreg(&h)). Sets *@out to the workers' results; returns ""
// or the first worker's error.
template <class T, class H, class Op>
std::string RunStress(std::vector<StressResult> *out, T *s, int (*reg)(T *, H **),
	int (*unreg)(H **), unsigned threads, uint64_t keys, unsigned ops, Op op)
{
	std::atomic<unsigned> ready{0};
	std::vector<StressResult> &res = *out;
	std::vector<std::thread> th;
	res.assign(threads, {});
	for (unsigned id = 0; id < threads; id++)
		th.emplace_back([&, id] {
			StressResult *r = &res[id];
			H *h = nullptr;
			r->added.assign(keys, 0);
			r->removed.assign(keys, 0);
			int ret = reg(s, &h);
			ready.fetch_add(1);
			if (ret != 0) {
				r->error = "register: " + std::to_string(ret);
				return;
			}
			while (ready.load() < threads)
				std::this_thread::yield();
			std::mt19937_64 rng(1000 + id);
			for (unsigned i = 0; i < ops && r->error.empty(); i++)
				op(h, id, rng, r);
			ret = unreg(&h);
			if (ret != 0 && r->error.empty())
				r->error = "unregister: " + std::to_string(ret);
		});
	for (auto &x : th)
		x.join();
	for (unsigned id = 0; id < threads; id++)
		if (!res[id].error.empty())
			return "thread " + std::to_string(id) + ": " + res[id].error;
	return "";
}

// The keys present after the workers of @res ran on the contents
// @present (per key slot, 0 or 1), ascending, in *@expect, and the number
// of successful updates in *@updates. Returns "" or the first key whose
// count is not 0 or 1.
inline std::string StressReplay(const std::vector<int64_t> &present,
	const std::vector<StressResult> &res, std::vector<uint64_t> *expect, uint64_t *updates)
{
	*updates = 0;
	for (uint64_t k = 0; k < present.size(); k++) {
		int64_t n = present[k];
		for (const StressResult &r : res) {
			n += r.added[k] - r.removed[k];
			*updates += r.added[k] + r.removed[k];
		}
		if (n != 0 && n != 1)
			return "key " + std::to_string(k) + ": initial " + std::to_string(present[k]) +
				" + adds - removes = " + std::to_string(n);
		if (n == 1)
			expect->push_back(k);
	}
	return "";
}

} // namespace dstest

#endif
