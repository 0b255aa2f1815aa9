/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/stats.c -- per-thread transport counters and the clock.
 */
#include <time.h>

#include "core.h"

__thread struct rdma_stats rdma__stats;

void
rdma_stats_read_thread(struct rdma_stats *out)
{
	*out = rdma__stats;
}

void
rdma_stats_diff(const struct rdma_stats *after, const struct rdma_stats *before,
	struct rdma_stats *out)
{
	/* The struct is all uint64_t, so diff it as an array; the static
	 * assert keeps that true when fields are added. */
	_Static_assert(sizeof(struct rdma_stats) % sizeof(uint64_t) == 0,
		"rdma_stats must hold only uint64_t fields");
	const uint64_t *a = (const uint64_t *)after;
	const uint64_t *b = (const uint64_t *)before;
	uint64_t *o = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = a[i] - b[i];
}

uint64_t
rdma__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
