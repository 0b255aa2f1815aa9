/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/epoch.c -- the global epoch that QSBR, QSense and EBR share:
 * advancing it (sect. 6.3.1) and freeing what was retired two epochs ago.
 *
 * Each slot has an epoch word (epoch << 1) | ACTIVE (reclaim_internal.h).
 * The global epoch G moves from e to e + 1 only when no ACTIVE slot holds an
 * epoch other than e. A retired node is tagged with G as read *after* its
 * unlink and is freed once G >= tag + 2:
 *
 *   Let n be unlinked, then tagged g (so G == g at that moment), and let
 *   thread q hold a reference to n. q obtained it before the unlink, inside
 *   a critical section (QSBR: since its last quiescent state; EBR: since
 *   op_begin) whose epoch word it published earlier still, when G <= g.
 *   G reaches g + 2 only after an advance from g + 1, which needs q's word
 *   to be inactive or to read g + 1. q can only write g + 1 after G became
 *   g + 1, which is after the unlink: by then q has ended that critical
 *   section (a quiescent state, op_end, going offline), and with it the
 *   reference. So at G >= g + 2 nobody holds n.
 *
 * (Tagging with the retirer's own epoch instead, as sect. 6.3.1's limbo lists
 * do, would need three epochs rather than two: G may already be one ahead of
 * the retirer's word.) The tags of live nodes span at most three values,
 * which are the thesis's three limbo lists; we keep them in one array.
 *
 * Who frees does not matter, nor whether it is inside an operation: the
 * argument covers the freeing thread's own references too.
 *
 * Ordering relied on: a word is published with a fence before the thread's
 * next node loads (reclaim__epoch_announce()), and the advancer reads G,
 * every sw and every word with seq_cst loads; the tag is read after the
 * unlink with the unlink acting as a full barrier (reclaim_retire() says why
 * the tag is therefore never stale).
 */
#include "reclaim_internal.h"

/* reclaim__epoch_try_advance -- advance G if no active slot lags; returns G */
uint64_t
reclaim__epoch_try_advance(struct reclaim__slot *me)
{
	struct reclaim_domain *d = me->d;
	uint64_t g = atomic_load_explicit(&d->epoch, memory_order_seq_cst);
	unsigned hwm = atomic_load_explicit(&d->hwm, memory_order_seq_cst);

	for (unsigned i = 0; i < hwm; i++) {
		struct reclaim__slot *s = &d->slots[i];

		/* seq_cst: a slot read here as not ACTIVE was read before
		 * its newcomer's ACTIVE store and fence, hence before the
		 * newcomer read any node (domain.c, top). */
		if (RECLAIM__SW_STATE(atomic_load_explicit(&s->sw,
				memory_order_seq_cst)) != RECLAIM__ACTIVE)
			continue;
		/* seq_cst: the load side of the store-load pattern with
		 * reclaim__epoch_announce() (EBR's op_begin, coming
		 * online); for QSBR's release stores it is an acquire, so
		 * that what q read before its quiescent state happens
		 * before any free this advance enables. */
		uint64_t w = atomic_load_explicit(&s->epoch, memory_order_seq_cst);

		if ((w & RECLAIM__EPOCH_ACTIVE) && (w >> 1) != g &&
				!reclaim__lagging(me, i))
			return g;
	}
	reclaim__lag_clear(me);
	if (atomic_compare_exchange_strong_explicit(&d->epoch, &g, g + 1,
			memory_order_seq_cst, memory_order_seq_cst)) {
		reclaim__stat_add(&me->st.epochs, 1);
		return g + 1;
	}
	return g; /* another thread advanced it; g holds the new value */
}

/* reclaim_epoch_keep -- keep what was retired less than two epochs ago */
static bool
reclaim_epoch_keep(const struct reclaim__entry *e, void *arg)
{
	return e->tag > *(const uint64_t *)arg - 2;
}

/* reclaim__epoch_free -- free what was retired two epochs before @global */
size_t
reclaim__epoch_free(struct reclaim__slot *me, uint64_t global)
{
	struct reclaim__pile *p = atomic_load_explicit(&me->ret, memory_order_relaxed);

	/* The global epoch starts at 2, so global - 2 cannot wrap; an
	 * empty list has min_tag UINT64_MAX. */
	if (p == NULL || p->min_tag > global - 2)
		return 0;
	return reclaim__sweep(me, reclaim_epoch_keep, &global);
}

/* reclaim__epoch_announce -- publish the current global epoch as active */
void
reclaim__epoch_announce(struct reclaim__slot *s)
{
	uint64_t g = atomic_load_explicit(&s->d->epoch, memory_order_seq_cst);

	/* Then a full fence, before the thread's next loads of shared nodes:
	 * an advancer either sees this word, or read its slot (and G) before
	 * the fence, before any of those loads (the online argument in
	 * qsbr.c, and EBR's op_begin). */
	reclaim__store_fenced(&s->epoch, (g << 1) | RECLAIM__EPOCH_ACTIVE);
}
