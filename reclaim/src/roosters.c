/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/roosters.c -- rooster threads (thesis sect. 6.5.1): one per
 * CPU of the system, pinned there from birth. Each sleeps T, wakes, and
 * records its wake time; being scheduled on its CPU switches out whatever
 * ran there, and the context switch drains that thread's store buffer
 * (hazard.c explains how the scan uses the times). The first rooster also
 * resets QSense's presence flags every round (the thesis's code does the
 * same from its sleeper on core 0).
 *
 * Which CPUs: every CPU in /sys/devices/system/cpu/online, whatever the
 * affinity of the creating thread (sched_getaffinity() would give only the
 * creator's own mask, and a worker may run wherever its mask allows). A CPU
 * whose pinning fails with EINVAL is not available to the process (it went
 * offline since, or lies outside the process's cpuset), so no worker can
 * run there either and it gets no rooster. Any other failure fails
 * reclaim_domain_new(): a CPU that workers may use but that has no rooster
 * would let Cadence free a node whose hazard pointer still sits in that
 * CPU's store buffer. Without /sys the CPUs cannot be known, and
 * reclaim_domain_new() fails too.
 *
 * The sleep is a pthread_cond_timedwait() on CLOCK_MONOTONIC, a real sleep
 * in the kernel, which delete can cut short: stopping takes one broadcast,
 * not T per rooster. Whatever ends the wait, the rooster was off its CPU and
 * is back on it, so every return counts as a wake-up -- if it is back on
 * *its* CPU: when a CPU goes offline the kernel moves its rooster elsewhere,
 * where a wake-up says nothing about the CPU it stands for. Such a rooster
 * records nothing (Cadence stops freeing: liveness, never safety) and tries
 * to pin itself back every round, which succeeds once the CPU is online
 * again.
 *
 * Assumptions (the thesis's, stated here because the code relies on them):
 * the set of CPUs available to the process does not grow while the domain
 * exists (a CPU brought online or added to the cpuset later has no rooster),
 * and a context switch is a full barrier for the thread switched out (x86-64:
 * the kernel's switch path executes serializing and locked instructions).
 * Roosters run with every signal blocked, so that a process-directed signal
 * goes to an application thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reclaim_internal.h"
#include "reclaim_testing.h"

/* Highest CPU number accepted from /sys (the kernel's limit is 8192). */
#define RECLAIM_MAX_CPU 65536

/* reclaim_pin -- pin @attr or, if NULL, the calling thread to @cpu; 0 or
 * a positive error number */
static int
reclaim_pin(pthread_attr_t *attr, int cpu)
{
	cpu_set_t *one = CPU_ALLOC((size_t)cpu + 1);
	size_t size = CPU_ALLOC_SIZE((size_t)cpu + 1);
	int ret;

	if (one == NULL)
		return ENOMEM;
	CPU_ZERO_S(size, one);
	CPU_SET_S((size_t)cpu, size, one);
	if (attr != NULL)
		ret = pthread_attr_setaffinity_np(attr, size, one);
	else
		ret = pthread_setaffinity_np(pthread_self(), size, one);
	CPU_FREE(one);
	return ret;
}

/* reclaim_rooster_main -- sleep T, record the wake time, repeat */
static void *
reclaim_rooster_main(void *arg)
{
	struct reclaim__rooster *r = arg;
	struct reclaim_domain *d = r->d;
	uint64_t t_ns = (uint64_t)d->cfg.rooster_interval_us * 1000;

	/* For ps -L, top -H and the tests. */
	(void)pthread_setname_np(pthread_self(), "reclaim-rooster");
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
#ifdef RECLAIM_TESTING
		if (d->rooster_hold) {
			d->rooster_parked++;
			pthread_cond_broadcast(&d->rooster_cond);
			while (d->rooster_hold && !d->rooster_stop)
				pthread_cond_wait(&d->rooster_cond, &d->rooster_lock);
			d->rooster_parked--;
			continue;
		}
#endif
		if (r->resets_presence)
			reclaim__qsense_reset_presence(d);
		if (sched_getcpu() != r->cpu) {
			/* Moved off an offline CPU (top of this file). */
			(void)reclaim_pin(NULL, r->cpu);
			continue;
		}
		/* Release: pairs with the acquire in
		 * reclaim__roosters_min_wake(); the context switch that
		 * preceded this store already made the switched-out
		 * thread's stores visible. */
		atomic_store_explicit(&r->wake, reclaim__now(), memory_order_release);
		reclaim__stat_add(&r->wakeups, 1);
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
	int ret = pthread_attr_init(&attr);

	if (ret != 0)
		return ret;
	/* Pinned before it first runs, so its first wake-up already counts
	 * for its CPU. */
	ret = reclaim_pin(&attr, r->cpu);
	if (ret == 0)
		ret = pthread_create(&r->thread, &attr, reclaim_rooster_main, r);
	pthread_attr_destroy(&attr);
	return ret;
}

/*
 * reclaim_online_cpus -- the CPUs listed in /sys/devices/system/cpu/online
 * ("0-3,6,8-9"), in a malloc'd array; returns how many, or -errno.
 */
static int
reclaim_online_cpus(int **out)
{
	char buf[4096];
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ssize_t len = read(fd, buf, sizeof(buf) - 1);
	int err = len < 0 ? -errno : 0;
	close(fd);
	if (err != 0)
		return err;
	buf[len] = '\0';

	int *cpus = NULL;
	int n = 0;
	char *p = buf;
	for (;;) {
		char *end;
		unsigned long lo = strtoul(p, &end, 10);
		unsigned long hi = lo;

		if (end == p)
			goto einval;
		p = end;
		if (*p == '-') {
			hi = strtoul(p + 1, &end, 10);
			if (end == p + 1)
				goto einval;
			p = end;
		}
		if (hi < lo || hi >= RECLAIM_MAX_CPU)
			goto einval;
		int *grown = realloc(cpus, ((size_t)n + (hi - lo + 1)) * sizeof(*cpus));
		if (grown == NULL) {
			free(cpus);
			return -ENOMEM;
		}
		cpus = grown;
		for (unsigned long c = lo; c <= hi; c++)
			cpus[n++] = (int)c;
		if (*p != ',')
			break;
		p++;
	}
	if (*p != '\n' && *p != '\0')
		goto einval;
	*out = cpus;
	return n;

einval:
	free(cpus);
	return -EINVAL;
}

/* reclaim__roosters_start -- one pinned rooster per online CPU */
int
reclaim__roosters_start(struct reclaim_domain *d)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int *cpus;
	int ret; /* a positive error number below */
	int n = reclaim_online_cpus(&cpus);

	if (n < 0)
		return n;
	d->roosters = aligned_alloc(RECLAIM__CACHELINE, (size_t)n * sizeof(*d->roosters));
	if (d->roosters == NULL) {
		free(cpus);
		return -ENOMEM;
	}
	memset(d->roosters, 0, (size_t)n * sizeof(*d->roosters));

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

	/* A new thread starts with its creator's signal mask: block every
	 * signal around the creations, so that no rooster ever takes one. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	unsigned started = 0;
	for (int i = 0; i < n; i++) {
		struct reclaim__rooster *r = &d->roosters[started];

		r->d = d;
		r->cpu = cpus[i];
		r->resets_presence = started == 0;
		ret = reclaim_rooster_spawn(r);
		if (ret == EINVAL)
			continue; /* not available to the process (top of file) */
		if (ret != 0)
			break;
		started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret != 0 && ret != EINVAL) {
		reclaim_roosters_join(d, started);
		goto err_mutex;
	}
	d->nroosters = started;
	free(cpus);
	return 0;

err_mutex:
	pthread_mutex_destroy(&d->rooster_lock);
err_cond:
	pthread_cond_destroy(&d->rooster_cond);
err_free:
	free(d->roosters);
	d->roosters = NULL;
	free(cpus);
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

/* reclaim__roosters_min_wake -- the earliest of the roosters' last wake
 * times; 0 (nothing is old enough) if there are none */
uint64_t
reclaim__roosters_min_wake(const struct reclaim_domain *d)
{
	/* No rooster vouches for any CPU: never let Cadence free. */
	uint64_t min = d->nroosters != 0 ? UINT64_MAX : 0;

	for (unsigned i = 0; i < d->nroosters; i++) {
		/* Acquire: pairs with the rooster's release store. */
		uint64_t w = atomic_load_explicit(&d->roosters[i].wake,
			memory_order_acquire);

		if (w < min)
			min = w;
	}
	return min;
}

#ifdef RECLAIM_TESTING
/* reclaim__test_hold_roosters -- park every rooster, or let them go */
int
reclaim__test_hold_roosters(struct reclaim_domain *d, bool hold)
{
	if (d->nroosters == 0)
		return -EINVAL;
	pthread_mutex_lock(&d->rooster_lock);
	d->rooster_hold = hold;
	/* Every rooster leaves its sleep now: to park, or to go on. */
	pthread_cond_broadcast(&d->rooster_cond);
	while (hold && d->rooster_parked < d->nroosters && !d->rooster_stop)
		pthread_cond_wait(&d->rooster_cond, &d->rooster_lock);
	pthread_mutex_unlock(&d->rooster_lock);
	return 0;
}

uint64_t
reclaim__test_min_wake(const struct reclaim_domain *d)
{
	return reclaim__roosters_min_wake(d);
}

uint64_t
reclaim__test_now(void)
{
	return reclaim__now();
}
#endif
