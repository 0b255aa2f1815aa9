/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/hist.h -- a fixed-size log-linear histogram of uint64
 * values (latencies in ns) for the dmkv benchmark driver (private to the
 * tools and benchmarks; not part of the kv library).
 *
 * Layout (HdrHistogram's idea): values below 2 * DMKV_HIST_SUB are counted
 * exactly, one bucket each; above that every power of two [2^e, 2^(e+1))
 * is cut into DMKV_HIST_SUB equal buckets of width 2^(e-7). A bucket is
 * never wider than 1/DMKV_HIST_SUB of its lower bound, so reporting its
 * upper bound overstates a sample by less than 1/128 of it. Buckets reach
 * DMKV_HIST_LIMIT (2^41 ns, about 36 minutes); larger values are counted
 * in the last bucket, where quantiles report the exact max. count, min,
 * max and sum are exact for every value (sum wraps modulo 2^64, which 1 ns
 * samples reach after 584 years of total latency).
 *
 * The struct is plain data (about 35 KiB), allocated by the caller; no
 * call allocates, fails or prints. Merging adds counts, so histograms of
 * threads, op types and intervals combine without loss.
 *
 * Thread-safety: a histogram has one writer at a time (dmkv_hist_add, or
 * the dst of dmkv_hist_merge) and no reader while it is written; readers
 * (dmkv_hist_quantile, dmkv_hist_mean, the src of dmkv_hist_merge) may run
 * concurrently with each other. The caller provides that exclusion, e.g.
 * a per-thread histogram merged after the thread is joined, or swapped
 * under a lock every interval.
 */
#ifndef KV_TOOLS_DMKV_HIST_H
#define KV_TOOLS_DMKV_HIST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Linear sub-buckets per power of two: the relative error is 1/DMKV_HIST_SUB. */
#define DMKV_HIST_SUB 128u
/* log2(DMKV_HIST_SUB) */
#define DMKV_HIST_SUB_BITS 7u
/* Values below this have buckets of their own width; others share the last. */
#define DMKV_HIST_LIMIT (UINT64_C(1) << 41)
/* 2 * SUB exact buckets for [0, 256), then SUB for each of 2^8 .. 2^40. */
#define DMKV_HIST_BUCKETS ((41u - DMKV_HIST_SUB_BITS + 1u) * DMKV_HIST_SUB)

struct dmkv_hist {
	uint64_t count;  /* values added */
	uint64_t min;    /* smallest value added; 0 while empty */
	uint64_t max;    /* largest value added; 0 while empty */
	uint64_t sum;    /* sum of the values, modulo 2^64 */
	uint64_t bucket[DMKV_HIST_BUCKETS];
};

/**
 * dmkv_hist_init -- make @h empty.
 * Thread-safety: @h's writer.
 */
void dmkv_hist_init(struct dmkv_hist *h);

/**
 * dmkv_hist_add -- count the value @v in @h: O(1), no allocation. Values
 * of DMKV_HIST_LIMIT and above go to the last bucket; min, max and sum
 * stay exact.
 * Thread-safety: @h's one writer (see above).
 */
void dmkv_hist_add(struct dmkv_hist *h, uint64_t v);

/**
 * dmkv_hist_merge -- add every value counted in @src to @dst, as if each
 * had been passed to dmkv_hist_add(@dst): afterwards @dst is exactly that
 * histogram. @src is unchanged; @src == @dst doubles every count.
 * Thread-safety: @dst's writer; no writer of @src meanwhile (the caller's
 * exclusion).
 */
void dmkv_hist_merge(struct dmkv_hist *dst, const struct dmkv_hist *src);

/**
 * dmkv_hist_quantile -- the value at quantile @q (0 <= q <= 1; outside,
 * clamped) by nearest rank: the sample at rank ceil(q * count) (at least
 * 1) of the sorted values. q = 0 gives min and q = 1 max, exactly; other
 * ranks give the upper bound of the sample's bucket clamped to
 * [min, max], which is at least the sample and less than 1/128 above it
 * (ranks in the last bucket, at DMKV_HIST_LIMIT or above, give max).
 * O(DMKV_HIST_BUCKETS).
 * Return: that value; 0 when @h is empty.
 * Thread-safety: a reader of @h.
 */
uint64_t dmkv_hist_quantile(const struct dmkv_hist *h, double q);

/**
 * dmkv_hist_mean -- the mean value, sum / count.
 * Return: the mean; 0 when @h is empty.
 * Thread-safety: a reader of @h.
 */
double dmkv_hist_mean(const struct dmkv_hist *h);

#ifdef __cplusplus
}
#endif

#endif
