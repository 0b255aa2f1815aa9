/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/node_word.h -- relaxed atomic access to the words of the MCAS
 * structures' nodes (dll, bztree), outside MCAS.
 *
 * Why atomic: AOPT detaches finalized descriptors lazily, so a stale detach
 * (or a reader of a frozen copy) may load a word of a node that its owner is
 * writing, reusing or building (mcas/mcas.h, type-stable memory). Why
 * relaxed: a node's words are written before the MCAS that publishes the
 * node, which orders them, and read after the acquire in the mcas_read()
 * that found the node; checks and recovery read them with nothing running
 * concurrently.
 */
#ifndef DS_NODE_WORD_H
#define DS_NODE_WORD_H

#include <stdatomic.h>
#include <stdint.h>

/* ds__word_load -- relaxed load of node word @p */
static inline uint64_t
ds__word_load(const uint64_t *p)
{
	return atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)p, memory_order_relaxed);
}

/* ds__word_store -- relaxed store of @v into node word @p */
static inline void
ds__word_store(uint64_t *p, uint64_t v)
{
	atomic_store_explicit((_Atomic uint64_t *)(uintptr_t)p, v, memory_order_relaxed);
}

#endif /* DS_NODE_WORD_H */
