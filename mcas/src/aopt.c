/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcas/src/aopt.c -- the k+1-CAS MCAS of Guerraoui, Kogan, Marathe and
 * Zablotchi (thesis ch. 5): volatile as algorithms 5.2/5.3, persistent as
 * 5.4/5.5, lazy detaching (sect. 5.6), efficient reads (5.6.2) and
 * recovery (5.5). Line numbers below refer to those listings.
 *
 * A target word refers to a descriptor through one of its word records
 * (WordDescriptor), marked with AOPT_MARK; the record's parent offset leads
 * to the status. A finalized descriptor stays installed until the next
 * operation on the word replaces it or its owner detaches it.
 */
#include <pm/persist.h>

#include "mcas_internal.h"

#define AOPT_MARK 1ull

static bool aopt_mcas(struct mcas_thread *t, struct mcas_rec *d);

static inline uint64_t
aopt_status(const struct mcas_rec *d)
{
	return atomic_load_explicit(&((struct mcas_rec *)d)->status, memory_order_acquire);
}

/* aopt_final -- the value a word referring to @w holds, given @d's
 * finalized status */
static inline uint64_t
aopt_final(const struct mcas_word *w, uint64_t status)
{
	return (status & MCAS_ST_MASK) == MCAS_ST_SUCCEEDED ? w->new_ : w->old;
}

/* aopt_persist_status -- make @d's finalized status durable and clear its
 * dirty flag (alg. 5.5 lines 46-48, with the erratum fixed: the flag is
 * cleared on desc->status; alg. 5.4 lines 10-14 for helpers). A plain store
 * suffices: a finalized status is never CASed successfully again. */
static void
aopt_persist_status(struct mcas_rec *d)
{
	uint64_t st;

	pm_flush(&d->status, sizeof(d->status));
	pm_fence();
	st = aopt_status(d);
	if (st & MCAS_ST_DIRTY)
		atomic_store_explicit(&d->status, st & ~(uint64_t)MCAS_ST_DIRTY,
			memory_order_release);
}

/*
 * aopt_settled -- whether @c, a reference to a descriptor, stands for a
 * final value: its descriptor is not @self, finalized (alg. 5.2 lines 7-9
 * do not apply) and its status durable (alg. 5.4 lines 10-14 do not
 * apply); then *@value is that value (lines 6, 11-12). The caller is
 * inside an epoch and loaded @c after entering it.
 */
static inline bool
aopt_settled(const struct mcas *m, uint64_t c, const struct mcas_rec *self, uint64_t *value)
{
	const struct mcas_word *w = mcas__deref(m, c);
	const struct mcas_rec *parent = mcas__parent(m, w);
	uint64_t st;

	if (parent == self)
		return false;
	st = aopt_status(parent);
	if (st == MCAS_ST_ACTIVE || (st & MCAS_ST_DIRTY) != 0)
		return false;
	*value = aopt_final(w, st);
	return true;
}

/*
 * aopt_read_slow -- alg. 5.2 (5.4 when persistent) whole: what
 * aopt_read_internal() leaves, the announcement, helping and a dirty
 * status. Out of line: it may recurse through helping.
 */
static __attribute__((noinline)) uint64_t
aopt_read_slow(struct mcas_thread *t, _Atomic uint64_t *addr, struct mcas_rec *self,
	uint64_t *value)
{
	struct mcas *m = t->m;

	for (;;) {
		/* line 3; seq_cst: after mcas__protect() this load must not be
		 * satisfied before the epoch store is visible (Dekker with the
		 * scanner's seq_cst CAS-then-load); a plain mov on x86 */
		uint64_t c = atomic_load_explicit(addr, memory_order_seq_cst);
		struct mcas_rec *parent;
		uint64_t st;

		if ((c & AOPT_MARK) == 0) { /* line 4 */
			*value = c;
			return c;
		}
		/* A descriptor: announce before dereferencing it, then look
		 * again (it may have been detached and recycled meanwhile). */
		if (mcas__protect(t))
			continue;
		if (aopt_settled(m, c, self, value))
			return c;
		parent = mcas__parent(m, mcas__deref(m, c)); /* line 6 */
		if (parent == self) {
			*value = c;
			return c;
		}
		st = aopt_status(parent);
		if (st == MCAS_ST_ACTIVE) { /* lines 7-9 */
			mcas__stat_add(t, helps, 1);
			aopt_mcas(t, parent);
		} else if (st & MCAS_ST_DIRTY) { /* alg. 5.4 lines 10-14 */
			aopt_persist_status(parent);
		} /* else finalized since aopt_settled() looked: settled next time */
	}
}

/*
 * aopt_read_internal -- alg. 5.2 (5.4 when persistent). Returns the content
 * of @addr and stores in *@value the value it stands for. If the content
 * refers to @self, *@value is meaningless (line 12's disregarded value).
 * Inline for the two common cases -- a plain value, and a finalized
 * descriptor with a durable status met inside an epoch (an operation's
 * acquisitions, reads in a guard) -- the rest in aopt_read_slow().
 */
static inline uint64_t
aopt_read_internal(struct mcas_thread *t, _Atomic uint64_t *addr,
	struct mcas_rec *self, uint64_t *value)
{
	/* line 3, seq_cst as in aopt_read_slow() */
	uint64_t c = atomic_load_explicit(addr, memory_order_seq_cst);

	if ((c & AOPT_MARK) == 0) { /* line 4 */
		*value = c;
		return c;
	}
	if (reclaim_epochs_inside(t->et) && aopt_settled(t->m, c, self, value))
		return c;
	return aopt_read_slow(t, addr, self, value);
}

/* aopt_mcas -- alg. 5.3 lines 20-39 (5.5 lines 25-52 when persistent), run
 * by the owner or a helper */
static bool
aopt_mcas(struct mcas_thread *t, struct mcas_rec *d)
{
	struct mcas *m = t->m;
	bool success = true;
	uint64_t st;

	for (uint32_t i = 0; i < d->n; i++) { /* line 23 */
		struct mcas_word *w = &d->w[i];
		_Atomic uint64_t *addr = mcas__target(m, w);
		uint64_t mine = mcas__ref(m, w, AOPT_MARK);

		for (;;) {
			uint64_t value, c = aopt_read_internal(t, addr, d, &value); /* line 25 */

			if (c == mine) /* line 27 */
				break;
			if (value != w->old) { /* line 29 */
				success = false;
				goto finalize;
			}
			/* line 30: no re-acquisition once finalized (Lemma 5.4.8) */
			if (aopt_status(d) != MCAS_ST_ACTIVE)
				goto finalize;
			if (mcas__cas(addr, c, mine)) /* line 32 */
				break;
		}
	}
finalize:
	if (m->persistent) {
		/* 5.5 lines 40-41: every acquisition durable before the status
		 * can be finalized. */
		for (uint32_t i = 0; i < d->n; i++)
			pm_flush(mcas__target(m, &d->w[i]), sizeof(uint64_t));
		pm_fence();
	}
	st = success ? MCAS_ST_SUCCEEDED : MCAS_ST_FAILED; /* line 34 (5.5 line 43) */
	if (m->persistent)
		st |= MCAS_ST_DIRTY;
	mcas__cas(&d->status, MCAS_ST_ACTIVE, st);
	if (m->persistent)
		aopt_persist_status(d); /* 5.5 lines 46-48 */
	return (aopt_status(d) & MCAS_ST_MASK) == MCAS_ST_SUCCEEDED; /* line 37 */
}

static bool
aopt_execute(struct mcas_thread *t, struct mcas_rec *d)
{
	return aopt_mcas(t, d);
}

/* aopt_read -- alg. 5.3 lines 14-18, with the efficient-read detaching of
 * sect. 5.6.2 */
static uint64_t
aopt_read(struct mcas_thread *t, const uint64_t *addr)
{
	struct mcas *m = t->m;
	_Atomic uint64_t *a = (_Atomic uint64_t *)(uintptr_t)addr;
	uint64_t value, c = aopt_read_internal(t, a, NULL, &value);

	if ((c & AOPT_MARK) != 0 && m->read_detach_one_in != 0 &&
			mcas__random_one_in(t, m->read_detach_one_in) &&
			mcas__others_outside_epochs(t)) {
		/* Every thread that could still be helping the (finalized)
		 * operation has left its epoch, so nobody re-acquires the word
		 * for it after this CAS; the owner's later detach finds the word
		 * already clean and, when persistent, flushes it. */
		if (mcas__cas(a, c, value))
			mcas__stat_add(t, read_detaches, 1);
	}
	return value;
}

/* aopt_detach -- sect. 5.6: replace references to finalized @d by final
 * values. When persistent, every target is flushed even if another thread
 * cleaned it (an efficient read or a newer operation's acquisition): that
 * store must be durable before @d is reused. */
static void
aopt_detach(struct mcas_thread *t, struct mcas_rec *d)
{
	struct mcas *m = t->m;
	uint64_t st = aopt_status(d);

	for (uint32_t i = 0; i < d->n; i++) {
		struct mcas_word *w = &d->w[i];
		_Atomic uint64_t *addr = mcas__target(m, w);
		uint64_t mine = mcas__ref(m, w, AOPT_MARK);

		if (atomic_load_explicit(addr, memory_order_relaxed) == mine) {
			mcas__stat_add(t, detach_cas, 1);
			mcas__cas(addr, mine, aopt_final(w, st));
		}
		if (m->persistent)
			pm_flush(addr, sizeof(uint64_t));
	}
}

/* aopt_recover -- sect. 5.5: a word still referring to @d gets @d's new
 * value if the durable status says it succeeded (dirty or not: it reached
 * the persistence domain, and everything it depends on did first), else its
 * old value. A record no word refers to is skipped whatever it holds. */
static void
aopt_recover(struct mcas *m, struct mcas_rec *d)
{
	uint64_t st = atomic_load_explicit(&d->status, memory_order_relaxed);
	uint32_t n = d->n < MCAS_MAX_WORDS ? d->n : MCAS_MAX_WORDS;

	if ((st & ~(uint64_t)(MCAS_ST_MASK | MCAS_ST_DIRTY)) != 0 || (st & MCAS_ST_MASK) == 3)
		st = MCAS_ST_ACTIVE; /* garbage: roll back */
	for (uint32_t i = 0; i < n; i++) {
		struct mcas_word *w = &d->w[i];
		_Atomic uint64_t *addr;

		if (w->addr % 8 != 0 || w->addr < 8 || w->addr > m->size - 8)
			continue;
		addr = mcas__target(m, w);
		if (atomic_load_explicit(addr, memory_order_relaxed) !=
				mcas__ref(m, w, AOPT_MARK))
			continue;
		atomic_store_explicit(addr, aopt_final(w, st), memory_order_relaxed);
		pm_flush(addr, sizeof(uint64_t));
	}
}

const struct mcas_algo_ops mcas__aopt_ops = {
	.name = "aopt",
	.value_mask = AOPT_MARK,
	.volatile_ok = true,
	.persistent_ok = true,
	.execute = aopt_execute,
	.read = aopt_read,
	.detach = aopt_detach,
	.recover = aopt_recover,
};
