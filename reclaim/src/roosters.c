/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/roosters.c -- rooster threads (thesis sect. 6.5.1): one per
 * CPU in the creating thread's affinity mask, pinned there from birth. Each
 * sleeps T, wakes, and records its wake time; being scheduled on its CPU
 * switches out whatever ran there, and the context switch drains that
 * thread's store buffer (hazard.c explains how the scan uses the times).
 * The first rooster also resets QSense's presence flags every round (the
 * thesis's code does the same from its sleeper on core 0).
 *
 * The sleep is a pthread_cond_timedwait() on CLOCK_MONOTONIC, a real sleep
 * in the kernel, which destroy can cut short: stopping takes one broadcast,
 * not T per rooster. Whatever ends the wait, the rooster was off its CPU and
 * is back on it, so every return counts as a wake-up.
 *
 * Assumptions (the thesis's, stated here because the code relies on them):
 * workers run only on CPUs that were in the mask at domain create, and a
 * context switch is a full barrier for the thread switched out. A CPU taken
 * offline stops its rooster, which stops Cadence reclamation (never safety).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reclaim_internal.h"

/* reclaim_rooster_main -- sleep T, record the wake time, repeat */
static void *
reclaim_rooster_main(void *arg)
{
	struct reclaim__rooster *r = arg;
	struct reclaim_domain *d = r->d;
	uint64_t t_ns = (uint64_t)d->cfg.rooster_interval_us * 1000;

	pthread_mutex_lock(&d->rooster_lock);
	while (!d->rooster_stop) {
		uint64_t until = reclaim__now() + t_ns;
		struct timespec ts = {
			.tv_sec = (time_t)(until / 1000000000u),
			.tv_nsec = (long)(until % 1000000000u),
		};

		(void)pthread_cond_timedwait(&d->rooster_cond, &d->rooster_lock, &ts);
		if (d->rooster_stop)
			break;
		/* Release: pairs with the acquire in
		 * reclaim__roosters_min_wake(); the context switch that
		 * preceded this store already made the switched-out
		 * thread's stores visible. */
		atomic_store_explicit(&r->wake, reclaim__now(), memory_order_release);
		reclaim__stat_add(&r->wakeups, 1);
		if (r->resets_presence)
			reclaim__qsense_reset_presence(d);
	}
	pthread_mutex_unlock(&d->rooster_lock);
	return NULL;
}

/* reclaim_roosters_join -- stop and join the first @n roosters */
static void
reclaim_roosters_join(struct reclaim_domain *d, unsigned n)
{
	pthread_mutex_lock(&d->rooster_lock);
	d->rooster_stop = true;
	pthread_cond_broadcast(&d->rooster_cond);
	pthread_mutex_unlock(&d->rooster_lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(d->roosters[i].thread, NULL);
}

/* reclaim_rooster_spawn -- start rooster @r pinned to its CPU; 0 or a
 * pthread error number */
static int
reclaim_rooster_spawn(struct reclaim__rooster *r)
{
	pthread_attr_t attr;
	cpu_set_t one;
	int ret = pthread_attr_init(&attr);

	if (ret != 0)
		return ret;
	CPU_ZERO(&one);
	CPU_SET(r->cpu, &one);
	/* Pinned before it first runs, so its first wake-up already counts
	 * for its CPU. */
	ret = pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
	if (ret == 0)
		ret = pthread_create(&r->thread, &attr, reclaim_rooster_main, r);
	pthread_attr_destroy(&attr);
	return ret;
}

/* reclaim__roosters_start -- one pinned rooster per CPU of the affinity mask */
int
reclaim__roosters_start(struct reclaim_domain *d)
{
	cpu_set_t set;
	pthread_condattr_t ca;
	int ret; /* a positive error number below */

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -errno;
	unsigned n = (unsigned)CPU_COUNT(&set);
	d->roosters = aligned_alloc(RECLAIM__CACHELINE, n * sizeof(*d->roosters));
	if (d->roosters == NULL)
		return -ENOMEM;
	memset(d->roosters, 0, n * sizeof(*d->roosters));

	ret = pthread_condattr_init(&ca);
	if (ret == 0)
		ret = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (ret == 0)
		ret = pthread_cond_init(&d->rooster_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (ret != 0)
		goto err_free;
	ret = pthread_mutex_init(&d->rooster_lock, NULL);
	if (ret != 0)
		goto err_cond;

	unsigned started = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE && started < n; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		struct reclaim__rooster *r = &d->roosters[started];

		r->d = d;
		r->cpu = cpu;
		r->resets_presence = started == 0;
		ret = reclaim_rooster_spawn(r);
		if (ret != 0) {
			reclaim_roosters_join(d, started);
			goto err_mutex;
		}
		started++;
	}
	d->nroosters = started;
	return 0;

err_mutex:
	pthread_mutex_destroy(&d->rooster_lock);
err_cond:
	pthread_cond_destroy(&d->rooster_cond);
err_free:
	free(d->roosters);
	d->roosters = NULL;
	return -ret;
}

/* reclaim__roosters_stop -- wake and join every rooster */
void
reclaim__roosters_stop(struct reclaim_domain *d)
{
	reclaim_roosters_join(d, d->nroosters);
	pthread_mutex_destroy(&d->rooster_lock);
	pthread_cond_destroy(&d->rooster_cond);
	free(d->roosters);
	d->roosters = NULL;
	d->nroosters = 0;
}

/* reclaim__roosters_min_wake -- the earliest of the roosters' last wake times
 */
uint64_t
reclaim__roosters_min_wake(const struct reclaim_domain *d)
{
	uint64_t min = UINT64_MAX;

	for (unsigned i = 0; i < d->nroosters; i++) {
		/* Acquire: pairs with the rooster's release store. */
		uint64_t w = atomic_load_explicit(&d->roosters[i].wake,
			memory_order_acquire);

		if (w < min)
			min = w;
	}
	return min;
}
