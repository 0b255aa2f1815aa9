// SPDX-License-Identifier: BSD-3-Clause
/*
 * tests/lincheck/lincheck_test_util.h -- what the checker's own tests share:
 * building history entries, random linearizable intervals, the brute-force
 * oracle, and scratch paths for record files.
 */
#ifndef TESTS_LINCHECK_LINCHECK_TEST_UTIL_H
#define TESTS_LINCHECK_LINCHECK_TEST_UTIL_H

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/lincheck/lincheck.h"

namespace lincheck_test {

/* At -- @op invoked at @call and returned at @ret (or lincheck::kPending)
 * by @thread. */
template <class Op>
lincheck::Operation<Op> At(Op op, uint64_t call, uint64_t ret, int thread = 0)
{
	return lincheck::Operation<Op>{std::move(op), call, ret, thread};
}

/*
 * Spread -- append @op as op @k of a sequential run: it is linearized at
 * 10k + 5 and its interval reaches up to 10 * @spread either side, so
 * neighbours overlap; thread k % 4. Unless @all_return, about one op in ten
 * never returns (and loses its outputs). A history of such ops is
 * linearizable by construction. (A pending op stays a candidate to the end,
 * doubling the configurations a search may visit; real histories have at
 * most one per thread.)
 */
template <class Op>
void Spread(std::mt19937_64 &rng, std::vector<lincheck::Operation<Op>> *h, const Op &op, size_t k,
	uint64_t spread, bool all_return = false)
{
	uint64_t p = 10 * k + 5;
	uint64_t call = p - std::min<uint64_t>(p, rng() % (10 * spread + 1));
	uint64_t ret = p + rng() % (10 * spread + 1);
	Op o = op;
	if (!all_return && rng() % 10 == 0) {
		o.returned = false;
		ret = lincheck::kPending;
	}
	h->push_back(At(o, call, ret, static_cast<int>(k % 4)));
}

/* BruteForce -- whether @h is linearizable, trying every order of its ops
 * that respects real time one by one: the definition of linearizability,
 * with no cleverness to get wrong. */
template <class Model>
bool BruteForce(const Model &model, const std::vector<lincheck::Operation<typename Model::Op>> &h)
{
	std::vector<char> done(h.size(), 0);
	std::function<bool(const typename Model::State &)> dfs = [&](const typename Model::State &s) {
		bool finished = true;
		for (size_t i = 0; i < h.size(); i++)
			finished = finished && (done[i] || h[i].ret == lincheck::kPending);
		if (finished)
			return true;
		for (size_t i = 0; i < h.size(); i++) {
			if (done[i])
				continue;
			bool first = true;  // nothing left returned before i was invoked
			for (size_t j = 0; j < h.size(); j++)
				first = first && (done[j] || j == i || h[j].ret >= h[i].call);
			typename Model::State next;
			if (!first || !model.step(s, h[i].op, &next))
				continue;
			done[i] = 1;
			if (dfs(next))
				return true;
			done[i] = 0;
		}
		return false;
	};
	return dfs(model.init());
}

/* FreshPath -- a path in the test's scratch directory with nothing at it */
inline std::string FreshPath(const std::string &name)
{
	std::string path = testing::TempDir() + "/" + name;
	unlink(path.c_str());
	return path;
}

}  // namespace lincheck_test

#endif  // TESTS_LINCHECK_LINCHECK_TEST_UTIL_H
