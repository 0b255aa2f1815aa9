/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/src/persist_internal.h -- how the crash simulator observes persistence
 * events (pm module only).
 *
 * persist.c sits below crashsim.c, so instead of calling it, it calls the
 * hooks the simulator installs while it runs a workload. With no hooks
 * installed (the normal case) the cost is one relaxed load per event.
 */
#ifndef PM_PERSIST_INTERNAL_H
#define PM_PERSIST_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pm_persist__hooks {
	/* Called before the flush of [addr, addr + len) takes effect. */
	void (*flush)(const void *addr, size_t len);
	/* Called when the calling thread fences. */
	void (*fence)(void);
	/* Performs the CAS itself, so it is atomic with the simulator's
	 * bookkeeping; returns what pm_cas returns. */
	bool (*cas)(uint64_t *word, uint64_t *expected, uint64_t desired);
};

/* The plain CAS behind pm_cas: sequentially consistent on success and failure. */
static inline bool
pm__cas_seq_cst(uint64_t *word, uint64_t *expected, uint64_t desired)
{
	return __atomic_compare_exchange_n(word, expected, desired, false,
		__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* Installs @hooks (NULL removes them). The caller guarantees that no
 * persistence event is in flight while hooks are swapped. */
void pm_persist__set_hooks(const struct pm_persist__hooks *hooks);

#endif
