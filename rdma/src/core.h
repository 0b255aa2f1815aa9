/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/core.h -- what the connection layer (conn.c) and the client
 * backends (local.c, ofi.c, verbs.c) share. Not installed.
 *
 * conn.c owns everything backend-independent: URI parsing, the region table,
 * validation of a batch before it is posted, fault injection (testing.h,
 * in //rdma:rdma_testing only), the in-flight
 * state machine, timeouts, and the per-thread counters. A backend only
 * connects, executes a validated batch, and reports completion.
 */
#ifndef RDMA_SRC_CORE_H
#define RDMA_SRC_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/rdma.h>

#ifdef RDMA_TESTING
#include "rdma/src/testing.h"
#endif

struct rdma_conn;

/* Operations a client backend provides. Each returns 0 or a negative code. */
struct rdma__backend {
	const char *name; /* as rdma_conn_backend() reports it */
	/*
	 * Connect to @target (the URI after the scheme: a path or "host:port")
	 * and fill c->regions / c->nregions (ids are 0..nregions-1). Stores
	 * backend state in c->be. On failure leaves c->be NULL.
	 */
	int (*open)(struct rdma_conn *c, const char *target);
	/* Release c->be (a batch in flight is abandoned). */
	void (*close)(struct rdma_conn *c);
	/*
	 * Start batch @b, already validated against the region table. May
	 * complete it at once (then return 0 and let poll report it).
	 * Must add the costs it pays to the thread's counters with
	 * rdma__stats_add (wire_messages, provider_ops, shipped).
	 */
	int (*post)(struct rdma_conn *c, struct rdma_batch *b);
	/* 0 once the posted batch completed, -EINPROGRESS, or an error. */
	int (*poll)(struct rdma_conn *c);
};

extern const struct rdma__backend rdma__backend_local;
extern const struct rdma__backend rdma__backend_ofi_tcp;
extern const struct rdma__backend rdma__backend_ofi_shm;
extern const struct rdma__backend rdma__backend_ofi_verbs;
extern const struct rdma__backend rdma__backend_verbs;

enum rdma__conn_state {
	RDMA__IDLE,      /* no batch in flight */
	RDMA__INFLIGHT,  /* handed to the backend */
	RDMA__BROKEN,    /* failed in flight; reconnect needed */
#ifdef RDMA_TESTING
	RDMA__DEFERRED,  /* posted under RDMA_FAULT_DELAY, not yet handed over */
	RDMA__LOST,      /* posted under RDMA_FAULT_PARTITION or _DROP_REPLY:
	                  * never completes */
	RDMA__SPLIT,     /* posted under RDMA_FAULT_SPLIT: its first part
	                  * handed over, the rest not yet */
#endif
};

/* Most regions any node exposes (RDMA_NODE_MAX_REGIONS). */
#define RDMA__MAX_REGIONS 16

struct rdma_conn {
	const struct rdma__backend *backend;
	void *be;                     /* backend state */
	char *uri;                    /* as given to rdma_conn_open */
	char token[RDMA_TOKEN_MAX + 1];
	unsigned timeout_ms;
	unsigned max_provider_ops;    /* rdma_conn_config's; 0 = the default */
	unsigned nregions;
	struct rdma_region_info regions[RDMA__MAX_REGIONS];
	enum rdma__conn_state state;
	struct rdma_batch *batch;     /* in flight */
	uint64_t post_ns;             /* when it was posted (monotonic) */
#ifdef RDMA_TESTING
	enum rdma_fault fault;        /* testing.h */
	uint32_t delay_us;
	struct rdma_batch *split;     /* RDMA_FAULT_SPLIT: the two parts of the
	                               * batch in flight ([0], [1]) */
	unsigned split_polls;         /* polls since the first part completed */
#endif
};

/**
 * rdma__batch_check -- validate every operation of @b against @regions
 * (ids 0..@nregions-1): region exists, [offset, offset + len) inside it
 * without overflow, CAS/FAA 8 bytes and 8-aligned, len > 0, n and byte
 * totals within limits. Used by clients before posting and by the node
 * before executing a shipped batch (it trusts no client).
 * Return: 0, -EINVAL, RDMA_E_NO_REGION or RDMA_E_BOUNDS.
 */
int rdma__batch_check(const struct rdma_batch *b,
	const struct rdma_region_info *regions, unsigned nregions);

/* Thread-local counters (conn.c); backends add what they pay. */
extern __thread struct rdma_stats rdma__stats;

/* Busy-wait hint for polling loops. */
static inline void
rdma__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Monotonic clock in nanoseconds. */
uint64_t rdma__now_ns(void);

#endif /* RDMA_SRC_CORE_H */
