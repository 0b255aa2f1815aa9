/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/hazard.c -- the hazard-pointer scan (thesis Alg. 6.3 lines
 * 14-33) and the two schemes built on it alone: Michael's hazard pointers
 * (RECLAIM_HP, sect. 6.3.2) and Cadence (RECLAIM_CADENCE, sect. 6.5.1).
 * QSense's fallback path calls the same scan (qsense.c).
 *
 * HP. reclaim_protect() publishes and then fences (seq_cst); the scan
 * starts with a seq_cst fence. Between a reader's publication and its
 * validation, and between the retirer's unlinks (all before the scan) and
 * its hazard reads, there is thus a full fence on each side (Dekker): either
 * the reader's validation sees the node unlinked, or the scan sees the
 * hazard pointer. That is C11's fence-fence rule, whatever the order of the
 * unlink and of the validation load. Under GCC's ThreadSanitizer, which
 * rejects fences, both fences are seq_cst RMWs instead (an xchg and a lock
 * xadd on x86-64: the same full barriers).
 *
 * Cadence. Publication is a plain release store, which the reader's CPU may
 * hold in its store buffer past the validation. What makes it visible is a
 * context switch (a full barrier for the thread switched out, assumption 2
 * of sect. 6.5.1), which every CPU's rooster forces at least every T. A node
 * retired at t0 is "old enough" (our version of Alg. 6.3 lines 35-39) iff
 * every rooster recorded a wake-up later than t0 + epsilon. Then on every CPU
 * the thread that ran there at t0 has been switched out since (the rooster
 * either ran there at t0 itself or was switched in after t0), so every
 * hazard pointer published before t0 reached memory before the rooster
 * stored its wake time. Condition 6.3.1 places the publication of any
 * hazard pointer that protects the node before its unlink, hence before t0.
 * epsilon absorbs the difference between the clocks of two CPUs. Unlike the
 * thesis's "age >= T + epsilon", this does not assume that roosters never
 * oversleep by more than epsilon; an oversleeping rooster only delays
 * reclamation.
 *
 * The order inside a scan matters: the rooster wake times are read first
 * (acquire), the hazard pointers after, so that a wake-up that makes a node
 * old enough is ordered before the hazard reads that must see its
 * protectors.
 *
 * What Cadence relies on is x86-64's, not C11's (reclaim_internal.h): a
 * hazard pointer store, once out of the store buffer, is visible to every
 * CPU at once; a context switch drains the store buffer of the thread
 * switched out; loads are not reordered with older loads. On a weaker
 * machine a context switch need not publish another thread's stores to the
 * scanning CPU, and the "old enough" test would prove nothing.
 */
#include <stdlib.h>

#include "reclaim_internal.h"

/* reclaim__clear_hazards -- NULL every hazard pointer of @s */
void
reclaim__clear_hazards(struct reclaim__slot *s)
{
	void **hp = s->pub.reclaim__hp;

	if (hp == NULL)
		return;
	for (unsigned k = 0; k < s->d->cfg.hazards_per_thread; k++)
		__atomic_store_n(&hp[k], NULL, __ATOMIC_RELEASE);
}

/* reclaim_ptr_cmp -- qsort/bsearch order of pointers */
static int
reclaim_ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a;
	uintptr_t y = (uintptr_t)*(void *const *)b;

	return (x > y) - (x < y);
}

struct reclaim_scan {
	void **hp;          /* sorted protected pointers */
	size_t nhp;
	bool cadence;
	uint64_t min_wake;  /* the earliest of the roosters' last wake-ups */
	uint64_t eps;
};

/* reclaim_scan_keep -- Alg. 6.3 lines 26-29: keep what is protected or, for
 * Cadence, not old enough */
static bool
reclaim_scan_keep(const struct reclaim__entry *e, void *arg)
{
	const struct reclaim_scan *sc = arg;

	if (sc->cadence && e->stamp + sc->eps >= sc->min_wake)
		return true;
	return bsearch(&e->node, sc->hp, sc->nhp, sizeof(void *),
		reclaim_ptr_cmp) != NULL;
}

/* reclaim__hazard_scan -- Alg. 6.3 lines 14-33 over the whole retired list */
void
reclaim__hazard_scan(struct reclaim__slot *s, bool cadence)
{
	struct reclaim_domain *d = s->d;
	struct reclaim_scan sc = {
		.hp = s->scratch,
		.cadence = cadence,
		.eps = d->eps_ns,
	};

	reclaim__adopt_orphans(s);
	if (reclaim__ret_len(s) == 0)
		return;
	if (cadence) {
		sc.min_wake = reclaim__roosters_min_wake(d);
		reclaim__stat_add(&s->st.scans, 1);
	} else {
		/* The store-load fence between this thread's unlinks and its
		 * hazard reads (pairs with the fence in reclaim_protect()).
		 * Under GCC's TSan, which rejects fences, a seq_cst RMW. */
#if defined(__SANITIZE_THREAD__)
		atomic_fetch_add_explicit(&s->st.scans, 1, memory_order_seq_cst);
#else
		reclaim__stat_add(&s->st.scans, 1);
		atomic_thread_fence(memory_order_seq_cst);
#endif
	}

	/* Alg. 6.3 line 16: every non-NULL hazard pointer of every slot
	 * that was ever claimed (free slots hold NULLs). seq_cst, after the
	 * fence: a slot claimed (seq_cst CAS of hwm) before a protect whose
	 * fence this scan must respect is below the hwm read here. */
	unsigned hwm = atomic_load_explicit(&d->hwm, memory_order_seq_cst);
	unsigned k = d->cfg.hazards_per_thread;
	for (unsigned i = 0; i < hwm; i++) {
		void **hp = &d->hazards[(size_t)i * d->hp_stride];

		for (unsigned j = 0; j < k; j++) {
			/* seq_cst (a plain load on x86-64): the load side
			 * of HP's Dekker pattern with reclaim_protect().
			 * Acquire in any case, pairing with the release
			 * store there, so that a reader's accesses before it
			 * moved its hazard pointer on happen before the
			 * free. */
			void *p = __atomic_load_n(&hp[j], __ATOMIC_SEQ_CST);

			if (p != NULL)
				sc.hp[sc.nhp++] = p;
		}
	}
	qsort(sc.hp, sc.nhp, sizeof(void *), reclaim_ptr_cmp);
	reclaim__sweep(s, reclaim_scan_keep, &sc);
}

/* reclaim_hp_retired -- a scan every R retires (sect. 6.3.2) */
static void
reclaim_hp_retired(struct reclaim__slot *s)
{
	if (++s->retires < reclaim__scan_threshold(s->d))
		return;
	s->retires = 0;
	reclaim__hazard_scan(s, s->d->cfg.scheme == RECLAIM_CADENCE);
}

/* reclaim_hp_drain -- a scan now */
static size_t
reclaim_hp_drain(struct reclaim__slot *s)
{
	s->retires = 0;
	reclaim__hazard_scan(s, s->d->cfg.scheme == RECLAIM_CADENCE);
	return reclaim__ret_len(s);
}

const struct reclaim__scheme reclaim__hp_scheme = {
	.hp_mode = RECLAIM__HP_FENCED,
	.evictable = true,
	.retired = reclaim_hp_retired,
	.drain = reclaim_hp_drain,
};

const struct reclaim__scheme reclaim__cadence_scheme = {
	.hp_mode = RECLAIM__HP_PUBLISH,
	.uses_clock = true,
	.uses_roosters = true,
	.evictable = true,
	.retired = reclaim_hp_retired,
	.drain = reclaim_hp_drain,
};
