// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/mcas_lin.h -- one recorded operation of the set histories that
// dll_lin_test and bztree_lin_test check for linearizability.
#ifndef DS_TESTS_MCAS_LIN_H
#define DS_TESTS_MCAS_LIN_H

#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include "tests/lincheck/lincheck.h"
#include "tests/lincheck/models.h"

namespace dstest {

// Picks insert, remove or contains of @k with @rng, runs it through @ins,
// @rem or @has (each returns 1 or 0 for the outcome, or a negative code,
// which fails the test) and records it in @rec.
template <class I, class R, class C>
void SetStep(lincheck::Recorder<lincheck::SetOp>::Handle *rec, std::mt19937 &rng, uint64_t k,
	I ins, R rem, C has)
{
	unsigned kind = rng() % 3;
	if (kind == 0) {
		auto tk = rec->invoke(lincheck::SetOp::insert(k));
		int r = ins(k);
		ASSERT_GE(r, 0);
		rec->complete(tk, lincheck::SetOp::insert(k, r == 1));
	} else if (kind == 1) {
		auto tk = rec->invoke(lincheck::SetOp::remove(k));
		int r = rem(k);
		ASSERT_GE(r, 0);
		rec->complete(tk, lincheck::SetOp::remove(k, r == 1));
	} else {
		auto tk = rec->invoke(lincheck::SetOp::contains(k));
		int r = has(k);
		ASSERT_GE(r, 0);
		rec->complete(tk, lincheck::SetOp::contains(k, r == 1));
	}
}

} // namespace dstest

#endif
