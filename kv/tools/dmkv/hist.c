/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/hist.c -- the log-linear histogram (hist.h).
 *
 * Bucket of a value v (SUB = 128, SUB_BITS = 7):
 *   v < 2 * SUB:  bucket v (exact);
 *   otherwise:    with e = floor(log2 v) >= 8 and s = e - SUB_BITS, the
 *                 top 8 bits of v, v >> s, lie in [SUB, 2 * SUB); bucket
 *                 s * SUB + (v >> s).
 * Consecutive powers of two thus get consecutive runs of SUB buckets with
 * no gap (v = 256 -> 1 * 128 + 128 = 256), and bucket i >= 2 * SUB holds
 * [(i mod SUB + SUB) << s, (i mod SUB + SUB + 1) << s) with s = i / SUB - 1:
 * a width of 2^s over a lower bound of at least SUB * 2^s.
 */
#include "kv/tools/dmkv/hist.h"

#include <string.h>

_Static_assert(DMKV_HIST_SUB == 1u << DMKV_HIST_SUB_BITS, "SUB is 2^SUB_BITS");
/* The last bucket ends at DMKV_HIST_LIMIT: (2 * SUB) << s, s = BUCKETS / SUB - 2. */
_Static_assert(((uint64_t)2 * DMKV_HIST_SUB << (DMKV_HIST_BUCKETS / DMKV_HIST_SUB - 2)) ==
		DMKV_HIST_LIMIT,
	"the buckets end at DMKV_HIST_LIMIT");
/* Several histograms per thread, op type and timeline interval exist. */
_Static_assert(sizeof(struct dmkv_hist) < 64 * 1024, "a histogram stays below 64 KiB");

/* dmkv_hist_index -- the bucket counting @v */
static unsigned
dmkv_hist_index(uint64_t v)
{
	unsigned s;

	if (v < 2 * DMKV_HIST_SUB)
		return (unsigned)v;
	if (v >= DMKV_HIST_LIMIT)
		return DMKV_HIST_BUCKETS - 1;
	s = 63u - (unsigned)__builtin_clzll(v) - DMKV_HIST_SUB_BITS;
	return s * DMKV_HIST_SUB + (unsigned)(v >> s);
}

/* dmkv_hist_upper -- the largest value bucket @i counts (below the last) */
static uint64_t
dmkv_hist_upper(unsigned i)
{
	unsigned s;

	if (i < 2 * DMKV_HIST_SUB)
		return i;
	s = i / DMKV_HIST_SUB - 1;
	return (((uint64_t)(i % DMKV_HIST_SUB + DMKV_HIST_SUB) + 1) << s) - 1;
}

void
dmkv_hist_init(struct dmkv_hist *h)
{
	memset(h, 0, sizeof(*h));
}

void
dmkv_hist_add(struct dmkv_hist *h, uint64_t v)
{
	if (h->count == 0 || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
	h->bucket[dmkv_hist_index(v)]++;
}

void
dmkv_hist_merge(struct dmkv_hist *dst, const struct dmkv_hist *src)
{
	if (src->count == 0)
		return;
	if (dst->count == 0 || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
	for (unsigned i = 0; i < DMKV_HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
}

uint64_t
dmkv_hist_quantile(const struct dmkv_hist *h, double q)
{
	uint64_t rank, seen = 0;
	double r;

	if (h->count == 0)
		return 0;
	/* !(q > 0) also takes NaN to the minimum. */
	if (!(q > 0))
		return h->min;
	r = q * (double)h->count;
	/* Compared as doubles: (uint64_t)r is undefined where r rounds up to
	 * 2^64. */
	if (r >= (double)h->count)
		return h->max;
	rank = (uint64_t)r;
	if ((double)rank < r)
		rank++;
	if (rank <= 1)
		return h->min;
	if (rank >= h->count)
		return h->max;
	for (unsigned i = 0; i < DMKV_HIST_BUCKETS - 1; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t up = dmkv_hist_upper(i);

			return up < h->min ? h->min : up > h->max ? h->max : up;
		}
	}
	/* The last bucket may hold values far above its range: only max is
	 * known there. */
	return h->max;
}

double
dmkv_hist_mean(const struct dmkv_hist *h)
{
	return h->count == 0 ? 0.0 : (double)h->sum / (double)h->count;
}
