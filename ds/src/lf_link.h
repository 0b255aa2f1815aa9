/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/lf_link.h -- what the three sets on reclaim/ (hmlist.c, skiplist.c,
 * nmbst.c) share: whether a domain gives each thread the hazard slots a
 * set needs, loading and CASing a link word (a node address with mark, flag
 * or tag bits in its low bits), and formatting a check() violation.
 * Not installed.
 */
#ifndef DS_SRC_LF_LINK_H
#define DS_SRC_LF_LINK_H

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <reclaim/reclaim.h>

/*
 * ds__retire -- retire @node, unlinked by this thread. When reclaim_retire()
 * refuses it (out of memory, or an evicted handle) the node is leaked: it
 * may still be read, so it can be neither freed nor reused, and the sets
 * keep no per-thread list to retire it again later.
 */
static inline void
ds__retire(struct reclaim_thread *t, void *node, reclaim_free_fn fn, void *ctx)
{
	(void)reclaim_retire(t, node, fn, ctx);
}

/*
 * ds__domain_has_hazards -- whether @d gives each thread at least @k hazard
 * slots, where its scheme uses hazard pointers at all (HP, Cadence, QSense).
 */
static inline bool
ds__domain_has_hazards(struct reclaim_domain *d, unsigned k)
{
	struct reclaim_config cfg;

	reclaim_domain_config(d, &cfg);
	switch (cfg.scheme) {
	case RECLAIM_HP:
	case RECLAIM_CADENCE:
	case RECLAIM_QSENSE:
		return cfg.hazards_per_thread >= k;
	default:
		return true;
	}
}

/*
 * ds__link_load -- a link word. Acquire pairs with the release CAS (or
 * fetch_or) that installed it, so the fields of a node published by a link
 * are visible to whoever loads the link. A new node's own link words are
 * relaxed stores, not releases: they are ordered by the CAS that links the
 * node, which the reader acquired on its way to the node.
 */
static inline uintptr_t
ds__link_load(_Atomic uintptr_t *p)
{
	return atomic_load_explicit(p, memory_order_acquire);
}

/*
 * ds__link_cas -- CAS a link word from @expected to @desired. Release
 * publishes a new node's fields to acquiring readers; acquire orders a
 * success before what follows it (retirement of what it cut off).
 */
static inline bool
ds__link_cas(_Atomic uintptr_t *p, uintptr_t expected, uintptr_t desired)
{
	return atomic_compare_exchange_strong_explicit(p, &expected, desired,
		memory_order_acq_rel, memory_order_acquire);
}

/*
 * ds__check_fail -- format a check() violation into @buf (if any) and
 * return -EUCLEAN, the code every set's check() reports a violation with.
 */
static inline int __attribute__((format(printf, 3, 4)))
ds__check_fail(char *buf, size_t buflen, const char *fmt, ...)
{
	if (buf != NULL && buflen > 0) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(buf, buflen, fmt, ap);
		va_end(ap);
	}
	return -EUCLEAN;
}

#endif /* DS_SRC_LF_LINK_H */
