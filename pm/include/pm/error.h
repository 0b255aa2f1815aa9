/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/error.h -- the error codes and per-thread error message of the whole
 * suite (pm, mcas, reclaim, onll, ds, rdma, kv).
 *
 * Every function of the suite that can fail returns 0 (or a documented
 * non-negative value) on success and a negative code on failure: either
 * -errno (for example -ENOENT, -EINVAL) or a suite code below. Each module
 * owns a range of suite codes, declared here so that no two collide and one
 * pm_strerror() describes them all; every range lies below -10000, far from
 * any errno. A failing call also leaves a human-readable message, read on
 * the same thread with pm_errormsg(); calls that can fail clear it on entry,
 * except the per-operation calls of lock-free paths (README, Conventions).
 */
#ifndef PM_ERROR_H
#define PM_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* First code of the pm range; codes count down from here. */
#define PM_E_BASE (-10000)

/* The file is not a pool, or its PMDK or pm metadata is damaged. */
#define PM_E_CORRUPT (PM_E_BASE - 1)
/* The pool was created with another layout name or root object size. */
#define PM_E_LAYOUT (PM_E_BASE - 2)
/* The pool's layout version is not the one the caller understands. */
#define PM_E_VERSION (PM_E_BASE - 3)
/* PM_DURABILITY_PMEM was requested but the mapping is not persistent memory. */
#define PM_E_NOT_PMEM (PM_E_BASE - 4)
/* A crash-simulator check failed; pm_crashsim_report() says where. */
#define PM_E_CHECK_FAILED (PM_E_BASE - 5)
/* Lowest code of the pm range (for range tests). */
#define PM_E_LAST PM_E_CHECK_FAILED

/* First code of the rdma range (rdma/rdma.h); codes count down from here. */
#define RDMA_E_BASE (-11000)
/* The access lies (partly) outside its region. */
#define RDMA_E_BOUNDS (RDMA_E_BASE - 1)
/* No region with that id on this node. */
#define RDMA_E_NO_REGION (RDMA_E_BASE - 2)
/* The node refused the cluster token. */
#define RDMA_E_AUTH (RDMA_E_BASE - 3)
/* A malformed or unexpected message was received. */
#define RDMA_E_PROTO (RDMA_E_BASE - 4)
/* The connection is lost or the node is dead; reconnect. */
#define RDMA_E_CONN (RDMA_E_BASE - 5)
/* Fault injection (rdma_conn_inject, //rdma:rdma_testing builds only) made
 * the operation fail. */
#define RDMA_E_INJECTED (RDMA_E_BASE - 6)
/* The backend needs hardware or a provider this machine lacks. */
#define RDMA_E_NO_DEVICE (RDMA_E_BASE - 7)
/* Lowest code of the rdma range. */
#define RDMA_E_LAST RDMA_E_NO_DEVICE

/* First code of the KV store's range (kv/); codes count down from here. */
#define KV_E_BASE (-12000)
/* Too few members of the group answered within the operation's timeout:
 * the operation may or may not have taken effect; nothing wrong was
 * returned. Retry when a majority of the memory nodes is back. */
#define KV_E_UNAVAILABLE (KV_E_BASE - 1)
/* The key is already present (insert-if-absent). */
#define KV_E_EXISTS (KV_E_BASE - 2)
/* The nodes do not form the configured group: another group's or an
 * unformatted superblock, another group size or position. */
#define KV_E_GROUP (KV_E_BASE - 3)
/* A cluster config is malformed or inconsistent (pm_errormsg() names the
 * field): unknown keys, f too large for the node list, duplicate nodes,
 * sizes out of range. */
#define KV_E_CONFIG (KV_E_BASE - 4)
/* Lowest code of the kv range. */
#define KV_E_LAST KV_E_CONFIG

/* First code of the onll range (onll/onll.h); codes count down from here. */
#define ONLL_E_BASE (-13000)
/* The update took effect (ordered, durable, linearized) but its result is
 * lost: apply() on the thread's view failed. Do not retry it. */
#define ONLL_E_RESULT_LOST (ONLL_E_BASE - 1)
/* Lowest code of the onll range. */
#define ONLL_E_LAST ONLL_E_RESULT_LOST

/**
 * pm_strerror -- a static description of an error code.
 * @code: 0, a negative errno, or a suite code (PM_E_*, RDMA_E_*, KV_E_*,
 *        ONLL_E_*).
 *
 * Return: a string with static storage duration; never NULL (unknown codes
 * get a generic text).
 * Thread-safety: may be called from any thread at any time.
 */
const char *pm_strerror(int code);

/**
 * pm_errormsg -- the message left by the last failing call of the suite on
 * this thread (it names the function and the reason).
 *
 * Return: a NUL-terminated string owned by the library, valid until the next
 * call of the suite on this thread; "" if the last call that clears it
 * succeeded.
 * Thread-safety: the message is per thread.
 */
const char *pm_errormsg(void);

/**
 * pm_error_set -- set this thread's message, for the suite's modules;
 * applications need not call it.
 * @code: the code the caller is about to return.
 * @fmt:  printf format of the message; by convention "function: reason".
 *
 * The message is truncated to 511 bytes.
 * Return: @code, so that a module writes "return pm_error_set(-EINVAL, ...)".
 * Thread-safety: writes only the calling thread's message.
 */
int pm_error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * pm_error_clear -- make this thread's message "", for the suite's modules
 * (on entry to a call that can fail); applications need not call it.
 * Return: nothing (void).
 * Thread-safety: writes only the calling thread's message.
 */
void pm_error_clear(void);

#ifdef __cplusplus
}
#endif

#endif /* PM_ERROR_H */
