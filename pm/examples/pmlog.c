/* SPDX-License-Identifier: BSD-3-Clause */
/* pm/examples/pmlog.c -- the planted-bug workload (see pmlog.h). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <pm/error.h>
#include <pm/persist.h>

#include "pmlog.h"

#define PMLOG_LAYOUT "pmlog-example"

static const char *const pmlog_names[PMLOG_NVARIANTS] = {
	[PMLOG_CORRECT] = "correct",
	[PMLOG_BUG_VALID_BEFORE_DATA] = "valid-before-data",
	[PMLOG_BUG_MISSING_FENCE] = "missing-fence",
	[PMLOG_BUG_TORN_PAIR] = "torn-pair",
};

const char *
pmlog_variant_name(enum pmlog_bug bug)
{
	return (unsigned)bug < PMLOG_NVARIANTS ? pmlog_names[bug] : "unknown";
}

/* pmlog_value -- the value appended under key k by thread t */
static uint64_t
pmlog_value(unsigned t, uint64_t k)
{
	return (k + 1) * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)t << 56);
}

/* pmlog_checksum -- binds a record's two fields together */
static uint64_t
pmlog_checksum(uint64_t key, uint64_t value)
{
	return (key ^ 0x5bd1e995ULL) * 0xff51afd7ed558ccdULL + value;
}

/* pmlog_append -- append record (k, value) and commit it by the count */
static void
pmlog_append(struct pmlog *log, unsigned t, enum pmlog_bug bug)
{
	uint64_t k = log->count;
	struct pmlog_record *r = &log->rec[k];

	r->key = k;
	r->value = pmlog_value(t, k);
	r->checksum = pmlog_checksum(r->key, r->value);
	switch (bug) {
	case PMLOG_BUG_VALID_BEFORE_DATA:
		log->count = k + 1;
		pm_persist(&log->count, sizeof(log->count));
		pm_persist(r, sizeof(*r));
		break;
	case PMLOG_BUG_MISSING_FENCE:
		pm_flush(r, sizeof(*r));
		log->count = k + 1;
		pm_flush(&log->count, sizeof(log->count));
		pm_fence();
		break;
	default:
		/* The record is durable before the count that exposes it. */
		pm_persist(r, sizeof(*r));
		log->count = k + 1;
		pm_persist(&log->count, sizeof(log->count));
		break;
	}
}

/* pmlog_pair_set -- make {x, ~x} the register's value */
static void
pmlog_pair_set(struct pmlog *log, uint64_t x, enum pmlog_bug bug)
{
	uint64_t cur = log->current;

	if (bug == PMLOG_BUG_TORN_PAIR) {
		log->pair[cur].x = x;
		log->pair[cur].y = ~x;
		pm_persist(&log->pair[cur], sizeof(log->pair[cur]));
		return;
	}
	/* Write the other copy, persist it, then switch with one 8-byte store. */
	log->pair[1 - cur].x = x;
	log->pair[1 - cur].y = ~x;
	pm_persist(&log->pair[1 - cur], sizeof(log->pair[1 - cur]));
	log->current = 1 - cur;
	pm_persist(&log->current, sizeof(log->current));
}

/* pmlog_ticket -- shared counter: CAS increment, then persist */
static void
pmlog_ticket(struct pmlog_root *root)
{
	uint64_t old = __atomic_load_n(&root->ticket, __ATOMIC_RELAXED);

	while (!pm_cas(&root->ticket, &old, old + 1))
		;
	pm_persist(&root->ticket, sizeof(root->ticket));
}

struct pmlog_thread_arg {
	struct pmlog_run *run;
	unsigned t;
};

/* pmlog_thread -- one thread's operations */
static void *
pmlog_thread(void *p)
{
	struct pmlog_thread_arg *a = p;
	struct pmlog_run *run = a->run;
	struct pmlog *log = &run->root->logs[a->t];

	for (unsigned i = 0; i < run->ops; i++) {
		pmlog_append(log, a->t, run->bug);
		pmlog_pair_set(log, i + 1, run->bug);
		/* Completed only now: the check demands everything up to here. */
		__atomic_store_n(&run->completed[a->t], i + 1, __ATOMIC_RELEASE);
		if (run->threads > 1) {
			pmlog_ticket(run->root);
			__atomic_fetch_add(&run->tickets_done, 1, __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

int
pmlog_run_workload(void *arg)
{
	struct pmlog_run *run = arg;
	struct pmlog_thread_arg args[PMLOG_MAX_THREADS];
	pthread_t tids[PMLOG_MAX_THREADS];
	unsigned started = 0;

	if (run->threads == 0 || run->threads > PMLOG_MAX_THREADS ||
			run->ops > PMLOG_CAPACITY)
		return -1;
	for (unsigned t = 0; t < run->threads; t++) {
		args[t].run = run;
		args[t].t = t;
	}
	if (run->threads == 1) {
		pmlog_thread(&args[0]);
		return 0;
	}
	for (; started < run->threads; started++)
		if (pthread_create(&tids[started], NULL, pmlog_thread, &args[started]) != 0)
			break;
	for (unsigned t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	return started == run->threads ? 0 : -1;
}

int
pmlog_check(void *arg, char *msg, size_t msg_len)
{
	struct pmlog_run *run = arg;
	uint64_t tickets_done = __atomic_load_n(&run->tickets_done, __ATOMIC_ACQUIRE);

	for (unsigned t = 0; t < run->threads; t++) {
		const struct pmlog *log = &run->root->logs[t];
		uint64_t done = __atomic_load_n(&run->completed[t], __ATOMIC_ACQUIRE);
		uint64_t x;

		if (log->count > PMLOG_CAPACITY) {
			snprintf(msg, msg_len, "thread %u: count %llu exceeds capacity", t,
				(unsigned long long)log->count);
			return 1;
		}
		if (log->count < done) {
			snprintf(msg, msg_len, "thread %u: %llu appends returned but count is %llu",
				t, (unsigned long long)done, (unsigned long long)log->count);
			return 1;
		}
		for (uint64_t i = 0; i < log->count; i++) {
			const struct pmlog_record *r = &log->rec[i];

			if (r->key != i || r->value != pmlog_value(t, i) ||
					r->checksum != pmlog_checksum(r->key, r->value)) {
				snprintf(msg, msg_len,
					"thread %u: record %llu below count %llu is not intact "
					"(key %llu value %#llx)", t, (unsigned long long)i,
					(unsigned long long)log->count, (unsigned long long)r->key,
					(unsigned long long)r->value);
				return 1;
			}
		}
		if (log->current > 1) {
			snprintf(msg, msg_len, "thread %u: register index %llu", t,
				(unsigned long long)log->current);
			return 1;
		}
		x = log->pair[log->current].x;
		if (log->pair[log->current].y != ~x) {
			snprintf(msg, msg_len, "thread %u: register torn: x %#llx y %#llx", t,
				(unsigned long long)x,
				(unsigned long long)log->pair[log->current].y);
			return 1;
		}
		if (x < done || x > done + 1) {
			snprintf(msg, msg_len, "thread %u: register holds %llu after %llu updates",
				t, (unsigned long long)x, (unsigned long long)done);
			return 1;
		}
	}
	if (run->root->ticket < tickets_done) {
		snprintf(msg, msg_len, "ticket %llu but %llu increments returned",
			(unsigned long long)run->root->ticket, (unsigned long long)tickets_done);
		return 1;
	}
	return 0;
}

int
pmlog_simulate(const char *pool_path, struct pmlog_run *run,
	const struct pm_crashsim_config *cfg, struct pm_crashsim_stats *stats,
	char *report, size_t report_len)
{
	struct pm_pool_config pcfg;
	struct pm_crashsim *sim = NULL;
	struct pm_pool *pool = NULL;
	int ret;

	pm_pool_config_init(&pcfg);
	pcfg.path = pool_path;
	pcfg.layout = PMLOG_LAYOUT;
	pcfg.root_size = sizeof(struct pmlog_root);
	pcfg.pool_size = PM_POOL_MIN_SIZE;
	ret = pm_pool_create(&pool, &pcfg);
	if (ret != 0) {
		snprintf(report, report_len, "pool: %s", pm_errormsg());
		return ret;
	}
	run->root = PM_POOL_ROOT(pool, struct pmlog_root);
	/* Initial state, durable before the simulator takes its image. */
	for (unsigned t = 0; t < PMLOG_MAX_THREADS; t++)
		run->root->logs[t].pair[0].y = ~(uint64_t)0;
	pm_persist(run->root, sizeof(*run->root));
	memset(run->completed, 0, sizeof(run->completed));
	run->tickets_done = 0;
	ret = pm_crashsim_new(&sim, cfg);
	if (ret == 0)
		ret = pm_crashsim_track(sim, run->root, sizeof(*run->root));
	if (ret == 0)
		ret = pm_crashsim_run(sim, pmlog_run_workload, pmlog_check, run);
	if (sim != NULL) {
		pm_crashsim_get_stats(sim, stats);
		snprintf(report, report_len, "%s", ret == PM_E_CHECK_FAILED ?
			pm_crashsim_report(sim) : ret != 0 ? pm_errormsg() : "");
	}
	pm_crashsim_delete(&sim);
	pm_pool_close(&pool);
	unlink(pool_path);
	return ret;
}
