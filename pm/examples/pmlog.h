/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/examples/pmlog.h -- a small persistent structure with switchable,
 * deliberately planted persistence bugs, used to show that the crash
 * simulator finds real bugs (tests and the crashsim_demo program).
 *
 * The structure lives in a pm pool: an append-only log of records committed
 * by a count, and a two-word register {x, ~x} updated by copy-and-switch.
 * Invariants after any crash and recovery:
 *   - every record below the durable count is intact (key i, its value and
 *     checksum), and every append that returned is below the count;
 *   - the current register copy has y == ~x, and x is the value of the last
 *     register update that returned or of the one in flight.
 * The bugs break exactly one protocol each:
 *   PMLOG_BUG_VALID_BEFORE_DATA  the count is persisted before the record;
 *   PMLOG_BUG_MISSING_FENCE      no fence between record and count flushes;
 *   PMLOG_BUG_TORN_PAIR          the register is updated in place, two words
 *                                under one persist.
 */
#ifndef PMLOG_H
#define PMLOG_H

#include <stdint.h>

#include <pm/crashsim.h>
#include <pm/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PMLOG_CAPACITY 64
#define PMLOG_MAX_THREADS 8

enum pmlog_bug {
	PMLOG_CORRECT,
	PMLOG_BUG_VALID_BEFORE_DATA,
	PMLOG_BUG_MISSING_FENCE,
	PMLOG_BUG_TORN_PAIR,
	PMLOG_NVARIANTS
};

struct pmlog_record {
	uint64_t key, value, checksum;
};

/* One thread's log and register; cache-line aligned so threads do not share lines. */
struct pmlog {
	uint64_t count;
	uint64_t current; /* index of the current register copy */
	uint64_t pad[6];
	struct pmlog_record rec[PMLOG_CAPACITY];
	struct {
		uint64_t x, y;
	} pair[2];
} __attribute__((aligned(64)));

/* The pool's root object: one log per thread plus a shared CAS counter. */
struct pmlog_root {
	uint64_t ticket; /* incremented with pm_cas by every thread, then persisted */
	uint64_t pad[7];
	struct pmlog logs[PMLOG_MAX_THREADS];
};

/* Volatile description of one run, read by the check after a crash. */
struct pmlog_run {
	struct pmlog_root *root;
	enum pmlog_bug bug;
	unsigned threads; /* 1..PMLOG_MAX_THREADS */
	unsigned ops;     /* appends (and register updates) per thread, <= PMLOG_CAPACITY */
	uint64_t completed[PMLOG_MAX_THREADS]; /* operations returned, per thread (atomic) */
	uint64_t tickets_done; /* ticket increments returned (atomic) */
};

/* pmlog_variant_name -- "correct", "valid-before-data", ... */
const char *pmlog_variant_name(enum pmlog_bug bug);

/* pmlog_run_workload -- pm_crashsim_run_fn: @arg is a struct pmlog_run;
 * starts run->threads threads (the calling thread alone when 1). */
int pmlog_run_workload(void *arg);

/* pmlog_check -- pm_crashsim_check_fn: invariants listed above. */
int pmlog_check(void *arg, char *msg, size_t msg_len);

/**
 * pmlog_simulate -- create a pool at @pool_path, run @run's workload under a
 * crash simulator configured by @cfg, and remove the pool.
 * @stats, @report (@report_len bytes): receive the outcome.
 * Return: what pm_crashsim_run returns, or a pool error.
 */
int pmlog_simulate(const char *pool_path, struct pmlog_run *run,
	const struct pm_crashsim_config *cfg, struct pm_crashsim_stats *stats,
	char *report, size_t report_len);

#ifdef __cplusplus
}
#endif

#endif /* PMLOG_H */
