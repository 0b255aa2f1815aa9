/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/ebr.c -- epoch-based reclamation (Fraser; the baseline of
 * thesis sect. 6.3.1's epoch technique): a thread announces the global epoch
 * at op_begin with a store and a full fence (counted in stats.fences)
 * and leaves it at op_end; between operations its word is inactive and holds
 * up nothing. Every Q operations and every R retires the thread tries to
 * advance the global epoch and frees what was retired two epochs ago
 * (epoch.c).
 *
 * An announcement may be stale (G moved between the read and the store);
 * that only holds up the next advance until the operation ends.
 */
#include "reclaim_internal.h"

/* reclaim_ebr_attempt -- try to advance, then free what has expired */
static void
reclaim_ebr_attempt(struct reclaim__slot *s)
{
	reclaim__adopt_orphans(s);
	reclaim__epoch_free(s, reclaim__epoch_try_advance(s));
}

/* reclaim_ebr_op_begin -- announce the global epoch, a full fence */
static void
reclaim_ebr_op_begin(struct reclaim__slot *s)
{
	reclaim__epoch_announce(s);
	reclaim__stat_add(&s->st.fences, 1);
}

/* reclaim_ebr_op_end -- leave the epoch; every Q operations an attempt */
static void
reclaim_ebr_op_end(struct reclaim__slot *s)
{
	uint64_t w = atomic_load_explicit(&s->epoch, memory_order_relaxed);

	/* Release: the operation's reads happen before any free enabled by
	 * an advance that sees the word inactive. */
	atomic_store_explicit(&s->epoch, w & ~(uint64_t)RECLAIM__EPOCH_ACTIVE,
		memory_order_release);
	if (--s->pub.reclaim__ops_left != 0)
		return;
	s->pub.reclaim__ops_left = s->d->cfg.quiescence_threshold;
	reclaim_ebr_attempt(s);
}

/* reclaim_ebr_retired -- an attempt every R retires */
static void
reclaim_ebr_retired(struct reclaim__slot *s)
{
	if (++s->retires < reclaim__scan_threshold(s->d))
		return;
	s->retires = 0;
	reclaim_ebr_attempt(s);
}

/* reclaim_ebr_drain -- an attempt now */
static size_t
reclaim_ebr_drain(struct reclaim__slot *s)
{
	reclaim_ebr_attempt(s);
	return reclaim__ret_len(s);
}

const struct reclaim__scheme reclaim__ebr_scheme = {
	.hp_mode = RECLAIM__HP_OFF,
	.on_begin = true,
	.on_end = true,
	.uses_epoch = true,
	.evictable = true,
	.op_begin = reclaim_ebr_op_begin,
	.op_end = reclaim_ebr_op_end,
	.retired = reclaim_ebr_retired,
	.drain = reclaim_ebr_drain,
};
