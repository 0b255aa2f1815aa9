/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/qsense.c -- QSense (thesis sect. 6.5.2, Alg. 6.5 and 6.6):
 * QSBR (qsbr.c) while every thread is active, the Cadence scan (hazard.c)
 * while one is not, switched by the shared fallback flag d->mode.
 *
 * Both protocols are kept in both modes: hazard pointers are published and
 * every retired node carries a timestamp and an epoch tag. A node leaves a
 * retired list in one of two ways, each sufficient on its own:
 *   - a QSBR free: its tag is two epochs behind, so every thread that could
 *     hold it has passed a quiescent state since (epoch.c);
 *   - a Cadence scan: it is old enough and no hazard pointer names it
 *     (hazard.c, Prop. 6.6.1).
 * Both remove the entry from the same array in the same sweep, so no node
 * is freed twice, and the union of two safe rules is safe (Prop. 6.6.4).
 * The mode only decides which rule runs. In particular, after a switch back
 * to the fast path a thread that is still lagging holds up the global epoch
 * as before (its word is still ACTIVE with an old epoch): the presence flags
 * are a liveness heuristic and never license a free. The fast path does not
 * skip quiescent states of threads that are not present, it only skips
 * epochs of threads that are offline, unregistered or evicted.
 *
 * Deviation from Alg. 6.6 line 52: free_node_later() there declares a
 * quiescent state when it sees that another thread switched back to the fast
 * path. reclaim_retire() may run inside an operation, where the thread
 * still holds references, so we only make the next reclaim_op_end() declare
 * it.
 */
#include "reclaim_internal.h"

/* reclaim__qsense_reset_presence -- clear every presence flag (roosters) */
void
reclaim__qsense_reset_presence(struct reclaim_domain *d)
{
	unsigned hwm = atomic_load_explicit(&d->hwm, memory_order_acquire);

	for (unsigned i = 0; i < hwm; i++)
		atomic_store_explicit(&d->slots[i].present, 0, memory_order_relaxed);
}

/* reclaim_all_present -- Alg. 6.5 line 27: every online slot has set its
 * presence flag since the roosters last reset them (dead ones are evicted
 * on the way, reclaim__lagging()) */
static bool
reclaim_all_present(struct reclaim__slot *me)
{
	struct reclaim_domain *d = me->d;
	unsigned hwm = atomic_load_explicit(&d->hwm, memory_order_acquire);

	for (unsigned i = 0; i < hwm; i++) {
		struct reclaim__slot *s = &d->slots[i];

		if (RECLAIM__SW_STATE(atomic_load_explicit(&s->sw,
				memory_order_acquire)) != RECLAIM__ACTIVE)
			continue;
		if (!(atomic_load_explicit(&s->epoch, memory_order_relaxed) &
				RECLAIM__EPOCH_ACTIVE))
			continue; /* offline */
		if (!atomic_load_explicit(&s->present, memory_order_relaxed) &&
				!reclaim__lagging(me, i))
			return false;
	}
	reclaim__lag_clear(me);
	return true;
}

/* reclaim_qsense_manage -- manage_qsense_state(), Alg. 6.5 lines 12-34, run
 * every Q operations */
static void
reclaim_qsense_manage(struct reclaim__slot *s)
{
	struct reclaim_domain *d = s->d;

	/* Line 19. Written only when it changes: the line is read by every
	 * presence check. The flags and the fallback flag are read and
	 * written relaxed: they only choose which of two safe rules runs
	 * (top of this file). */
	if (!atomic_load_explicit(&s->present, memory_order_relaxed))
		atomic_store_explicit(&s->present, 1, memory_order_relaxed);
	unsigned seen = atomic_load_explicit(&d->mode, memory_order_relaxed);

	if (seen == RECLAIM_MODE_FAST) {
		/* Lines 21-24. */
		reclaim__qsbr_quiesce(s);
		s->prev_mode = RECLAIM_MODE_FAST;
	} else if (reclaim_all_present(s)) {
		/* Lines 27-31. */
		unsigned expect = RECLAIM_MODE_FALLBACK;

		if (atomic_compare_exchange_strong_explicit(&d->mode, &expect,
				RECLAIM_MODE_FAST, memory_order_relaxed,
				memory_order_relaxed))
			reclaim__stat_add(&s->st.to_fast, 1);
		s->prev_mode = RECLAIM_MODE_FAST;
		reclaim__qsbr_quiesce(s);
	} else {
		s->prev_mode = RECLAIM_MODE_FALLBACK;
	}
}

/* reclaim_qsense_retired -- free_node_later(), Alg. 6.6 lines 41-60, after
 * lines 36-40 (the timestamped, tagged entry) were done by reclaim_retire() */
static void
reclaim_qsense_retired(struct reclaim__slot *s)
{
	struct reclaim_domain *d = s->d;
	unsigned seen = atomic_load_explicit(&d->mode, memory_order_relaxed);

	if (seen == RECLAIM_MODE_FALLBACK &&
			++s->retires >= reclaim__scan_threshold(d)) {
		/* Lines 42-48: all three limbo lists are one array. */
		s->retires = 0;
		reclaim__hazard_scan(s, true);
		s->prev_mode = RECLAIM_MODE_FALLBACK;
	} else if (s->prev_mode == RECLAIM_MODE_FALLBACK &&
			seen == RECLAIM_MODE_FAST) {
		/* Lines 49-53, with the quiescent state deferred to the
		 * next op_end (see the top of this file). */
		s->pub.reclaim__ops_left = 1;
		s->prev_mode = RECLAIM_MODE_FAST;
	} else if (reclaim__ret_len(s) >= reclaim__fallback_threshold(d) &&
			s->prev_mode == RECLAIM_MODE_FAST) {
		/* Lines 54-60. */
		unsigned expect = RECLAIM_MODE_FAST;

		if (atomic_compare_exchange_strong_explicit(&d->mode, &expect,
				RECLAIM_MODE_FALLBACK, memory_order_relaxed,
				memory_order_relaxed))
			reclaim__stat_add(&s->st.to_fallback, 1);
		s->prev_mode = RECLAIM_MODE_FALLBACK;
		s->retires = 0;
		reclaim__hazard_scan(s, true);
	}
}

/* reclaim_qsense_drain -- a quiescent state and a Cadence scan now */
static size_t
reclaim_qsense_drain(struct reclaim__slot *s)
{
	/* Between operations: a quiescent state is safe in either mode. */
	reclaim__qsbr_quiesce(s);
	reclaim__hazard_scan(s, true);
	return reclaim__ret_len(s);
}

const struct reclaim__scheme reclaim__qsense_scheme = {
	.hp_mode = RECLAIM__HP_PUBLISH,
	.uses_epoch = true,
	.uses_clock = true,
	.uses_roosters = true,
	.evictable = true,
	.join = reclaim__qsbr_online,
	.leave = reclaim__qsbr_offline,
	.offline = reclaim__qsbr_offline,
	.online = reclaim__qsbr_online,
	.op_end = reclaim_qsense_manage,
	.retired = reclaim_qsense_retired,
	.drain = reclaim_qsense_drain,
};
