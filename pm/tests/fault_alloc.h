/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/tests/fault_alloc.h -- allocation fault injection for tests
 * (//pm:fault_alloc, testonly; never linked into a library).
 *
 * A test binary that links //pm:fault_alloc gets its own malloc, calloc,
 * realloc, aligned_alloc, posix_memalign and memalign, which forward to
 * glibc's allocator and can be told to fail the n-th allocation the calling
 * thread makes from now on (errno ENOMEM, as glibc does). Sweeping n from 1
 * upwards until a call no longer hits the failure runs every allocation
 * point of that call, which is how the -ENOMEM contracts of the libraries
 * are tested (PMDK's test_alloc_cfg_enomem does the same by hand).
 *
 * The sanitizers replace the allocator themselves, so under --config=asan
 * or tsan nothing is interposed and fault_alloc_available() is false.
 */
#ifndef PM_TESTS_FAULT_ALLOC_H
#define PM_TESTS_FAULT_ALLOC_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fault_alloc_available -- whether this build interposes the allocator. */
bool fault_alloc_available(void);

/* fault_alloc_arm -- make the @n-th allocation of the calling thread from
 * now on fail (n >= 1); 0 disarms. Other threads are not affected. */
void fault_alloc_arm(unsigned n);

/* fault_alloc_fired -- whether the armed failure happened (it disarms). */
bool fault_alloc_fired(void);

#ifdef __cplusplus
}

// The C++ part needs <gtest/gtest.h> included first.

// FAULT_ALLOC_SKIP_IF_UNAVAILABLE -- at the top of a GoogleTest body: skip,
// saying why, where this build has no fault injection.
#define FAULT_ALLOC_SKIP_IF_UNAVAILABLE()                                              \
	do {                                                                          \
		if (!fault_alloc_available())                                         \
			GTEST_SKIP() << "allocation fault injection needs the plain build: " \
				"the sanitizers own malloc";                          \
	} while (0)

namespace pmtest {

// SweepAllocFailures -- run @call with the n-th allocation of this thread
// failing, for n = 1, 2, ..., handing each result and whether the failure
// fired to @check, until a run in which no allocation failed (also handed to
// @check). Returns the number of runs in which an allocation failed: the
// allocation points of @call that were exercised. At most @max_points runs.
template <class Call, class Check>
unsigned SweepAllocFailures(Call call, Check check, unsigned max_points = 10000)
{
	for (unsigned n = 1; n <= max_points; n++) {
		fault_alloc_arm(n);
		auto ret = call();
		bool fired = fault_alloc_fired();
		check(ret, fired);
		if (!fired)
			return n - 1;
	}
	return max_points;
}

// SweepConstructor -- SweepAllocFailures for a call that makes an object:
// @make(&obj) returns 0 with obj set, or an error with obj left NULL (checked
// on every run); @release(&obj) frees what it made. @check as above.
template <class T, class Make, class Release, class Check>
unsigned SweepConstructor(Make make, Release release, Check check)
{
	return SweepAllocFailures(
		[&] {
			T *obj = nullptr;
			int r = make(&obj);
			EXPECT_EQ(r == 0, obj != nullptr) << r;
			release(&obj);
			return r;
		},
		check);
}

} // namespace pmtest
#endif

#endif /* PM_TESTS_FAULT_ALLOC_H */
