/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/qsbr.c -- quiescent-state-based reclamation (thesis sect.
 * 6.3.1): RECLAIM_QSBR, and the quiescent state that QSense's fast path
 * runs (qsense.c).
 *
 * An online thread's epoch word is always ACTIVE: everything between two of
 * its quiescent states is one critical section. A quiescent state, declared
 * by reclaim_op_end() every Q operations, adopts the global epoch or, if the
 * thread already has it, tries to advance it; then frees what the thread
 * retired two epochs ago (epoch.c has the argument).
 *
 * Offline threads (and unregistered ones) have an inactive word and hold up
 * no grace period. Coming online (and registering, which publishes the slot
 * ACTIVE first: domain.c) stores the current global epoch and then fences,
 * before the thread's first load of a shared node. An advancer that still
 * saw the word inactive (or the slot not ACTIVE) read it before that fence;
 * it read G before that, so every node it lets be freed was retired (tagged
 * <= G - 1 at the time) before the thread came online and cannot be reached
 * by it. If G moves between our read and our store, our stale epoch merely
 * holds up the next advance.
 */
#include "reclaim_internal.h"

/* reclaim__qsbr_quiesce -- a quiescent state (sect. 6.3.1) */
void
reclaim__qsbr_quiesce(struct reclaim__slot *s)
{
	struct reclaim_domain *d = s->d;

	reclaim__stat_add(&s->st.quiescent_states, 1);
	reclaim__adopt_orphans(s);
	/* Acquire: pairs with the advancing CAS (epoch.c), which followed
	 * the advancer's acquire loads of every epoch word. */
	uint64_t g = atomic_load_explicit(&d->epoch, memory_order_acquire);
	uint64_t w = atomic_load_explicit(&s->epoch, memory_order_relaxed);

	/* An offline thread may drain: it frees and helps the epoch along
	 * but must not come back online by announcing an epoch. */
	if (!s->offline && (w >> 1) != g) {
		/* "If e_p differs from e_G, p updates e_p to e_G". Release:
		 * this thread's reads before the quiescent state happen
		 * before the frees of the advance that sees this store. */
		atomic_store_explicit(&s->epoch, (g << 1) | RECLAIM__EPOCH_ACTIVE,
			memory_order_release);
	} else {
		/* "Else, if all processes have their local epoch equal to
		 * e_G, p increments e_G". */
		g = reclaim__epoch_try_advance(s);
	}
	reclaim__epoch_free(s, g);
}

/* reclaim__qsbr_offline -- an extended quiescent state */
void
reclaim__qsbr_offline(struct reclaim__slot *s)
{
	/* Release: an extended quiescent state, with the same ordering as
	 * the quiescent state above. */
	atomic_store_explicit(&s->epoch, 0, memory_order_release);
}

/* reclaim__qsbr_online -- leave the extended quiescent state */
void
reclaim__qsbr_online(struct reclaim__slot *s)
{
	reclaim__epoch_announce(s);
}

/* reclaim_qsbr_drain -- a quiescent state now */
static size_t
reclaim_qsbr_drain(struct reclaim__slot *s)
{
	reclaim__qsbr_quiesce(s);
	return reclaim__ret_len(s);
}

const struct reclaim__scheme reclaim__qsbr_scheme = {
	.hp_mode = RECLAIM__HP_OFF,
	.uses_epoch = true,
	.evictable = true,
	.join = reclaim__qsbr_online,
	.leave = reclaim__qsbr_offline,
	.offline = reclaim__qsbr_offline,
	.online = reclaim__qsbr_online,
	.op_end = reclaim__qsbr_quiesce,
	.drain = reclaim_qsbr_drain,
};
