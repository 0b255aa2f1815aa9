/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcas/src/pmwcas.c -- persistent multi-word CAS of Wang, Levandoski and
 * Larson, "Easy lock-free indexing in non-volatile memory" (ICDE'18): the
 * MCAS of Harris, Fraser and Pratt (DISC'02) made durable with dirty flags.
 * Persistent instances only; a baseline for the thesis's algorithm (aopt.c).
 *
 * Word format (value_mask 7). A target word holds
 *   v | PMW_DIRTY           a value (low 3 bits clear) that may not be durable
 *   rec | PMW_MWCAS [| PMW_DIRTY]
 *                           a reference to an operation record (the paper's
 *                           "MwCAS descriptor pointer"), maybe not durable
 *   entry | tag | PMW_RDCSS a reference to word entry w[i] of a record: an
 *                           RDCSS (Harris et al.'s conditional CAS) in flight,
 *                           never dirty (see "Durability" below)
 * References are pool offsets (mcas__ref), so they survive remapping.
 *
 * One operation (pmw_mcas; owner and helpers run the same code):
 *   phase 1  for each target in address order, RDCSS(a1 = &status,
 *            o1 = ACTIVE, a2 = target, o2 = old, n2 = rec | MWCAS | DIRTY):
 *            install the entry reference (CAS 1), then replace it with the
 *            record reference if the status is still ACTIVE (CAS 2). If every
 *            target got the record, persist each one: flush, fence, clear the
 *            dirty bit (CAS 3; the paper's "persistent CAS").
 *   status   CAS ACTIVE -> SUCCEEDED|FAILED with MCAS_ST_DIRTY (the "+1"),
 *            flush, fence, clear the flag with a store.
 *   phase 2  for each target, replace the record reference by the final
 *            value marked dirty (CAS 4), flush, fence, clear (CAS 5).
 * Uncontended that is 5k+1 CAS and 2k+1 fences per k-word MCAS, the paper's
 * cost (thesis, competitor table). The record itself is flushed by the core
 * and ordered by the first install CAS (pm_cas), as in the paper, where it
 * is persisted before it becomes visible.
 *
 * Reads (the paper's persistent read): a clean value is returned after one
 * load; a dirty value is flushed, fenced and cleaned first, so every value
 * returned is durable; a reference is helped (RDCSS completed, or the
 * operation run) and the word loaded again.
 *
 * Why real RDCSS descriptors, and why each RDCSS reference carries a tag.
 * Installing the record with a plain CAS after checking the status lets a
 * delayed helper install it after the operation finished and the word came
 * back to its old value (ABA; thesis app. D.1, and the comment on CondCAS in
 * microsoft/pmwcas). RDCSS closes that window: the record goes in only if
 * the status is ACTIVE when the entry reference is completed. But the entry
 * w[i] is shared by every helper of the operation, so the same reference can
 * be installed twice: once while ACTIVE, and again "late" by a helper whose
 * status check is stale, after the word returned to old. A completer that
 * read ACTIVE for the first instance and stalled could then complete the
 * late one into a record reference, resurrecting a finished operation (its
 * new value would overwrite a later operation's). Harris et al. avoid this
 * with a fresh descriptor per RDCSS; here each install carries a unique tag
 * in the reference's high bits (above the largest pool offset), which gives
 * every install its own identity without allocating: a stale completion CAS
 * can only hit the instance it read. Consequences, used below:
 *   (I1) a record reference is placed in word i at most once per operation,
 *        by completing the single instance installed while ACTIVE;
 *   (I2) every other instance is completed back to old;
 *   (I3) once a phase-2 pass leaves word i, no record reference can appear
 *        there again (the only instance that could produce one was either
 *        seen and resolved by that pass, or already gone).
 *
 * Durability. Invariant: a clean value in a target is durable or maps, in
 * recovery, to itself; a record reference maps to new if the record's durable
 * status says SUCCEEDED (dirty or not: it is written only after every target
 * reference was persisted), else to old; an RDCSS reference always maps to
 * old (it stands for the word's value before the RDCSS, and by I1/I2 an
 * instance still present when SUCCEEDED is durable is a late one). So an
 * RDCSS reference needs no flushing, and restoring old over one is durable
 * as soon as it is written -- provided the record is not reused meanwhile.
 *
 * Reclamation: two grace periods, so ops->detach is set. Phase 2 removes the
 * operation's record references before the owner returns (I3), but a late
 * RDCSS instance can be installed after that by a helper still inside its
 * epoch, and a thread that entered its epoch after the owner retired the
 * record can load it and read the record through it. With one grace period
 * (detach NULL) that record could already be reused under such a reader. The
 * core's pipeline (retire -> grace -> detach -> grace -> free) covers it:
 * every late instance is created and removed by threads inside their epoch
 * at the first grace period, so when detach runs no target refers to the
 * record, and every thread that loaded a late instance is waited for by the
 * second. detach then only flushes the targets (the core fences once per
 * batch): a reference or dirty value that reached memory before it was
 * replaced is overwritten durably before the record can be reused, which
 * keeps recovery exact (below).
 *
 * Recovery (pmw_recover, per record): a target referring to the record gets
 * the value it maps to; a target holding this record's final value with the
 * dirty bit gets the clean value. Words covered by no record cannot hold a
 * reference or a dirty value: the last dirty write a word received came from
 * phase 2 of some operation, and that operation's record is reused only after
 * detach flushed the word (after the dirty bit was cleared) and the core
 * fenced; so a dirty value still durable belongs to a record that is still
 * intact and names that word. (A dirty plain value would be harmless anyway:
 * the dirty bit only says "not known durable", and the first read would
 * clean it.)
 *
 * Departures from the paper's code (microsoft/pmwcas), each for a reason
 * given above or here: tagged RDCSS references; an RDCSS reference recovers
 * to old whatever the status (the code asserts none is left with SUCCEEDED,
 * which a late install can violate); a dirty value equal to the expected one
 * is persisted and then used (the code takes it for a mismatch and fails the
 * MCAS spuriously); a reader or helper meeting a decided operation runs its
 * phase 2 instead of waiting for the owner (lock-freedom); two grace periods.
 * None of these costs anything in the uncontended case.
 */
#include <assert.h>

#include <pm/persist.h>

#include "mcas_internal.h"

#define PMW_DIRTY 1ull /* the word's content may not be durable yet */
#define PMW_MWCAS 2ull /* a reference to an operation record */
#define PMW_RDCSS 4ull /* a reference to one word entry: RDCSS in flight */
#define PMW_REF (PMW_MWCAS | PMW_RDCSS)
#define PMW_MARKS (PMW_DIRTY | PMW_REF)

/* Tags are handed out to threads in blocks, so taking one costs no shared
 * write; one fetch-and-add per block. */
#define PMW_TAG_BLOCK 4096u

static bool pmw_mcas(struct mcas_thread *t, struct mcas_rec *d);

static _Atomic uint64_t pmw_tag_blocks;
static _Thread_local uint64_t pmw_tag_next, pmw_tag_left;

/* pmw_tag_shift -- lowest bit of the tag in an RDCSS reference: above every
 * pool offset. Pools fit in the 57-bit address space, so at least 7 tag
 * bits remain; a 1 GiB pool leaves 34. */
static inline unsigned
pmw_tag_shift(const struct mcas *m)
{
	unsigned s = 64u - (unsigned)__builtin_clzll((uint64_t)m->size | 64u);

	return s > 57u ? 57u : s;
}

/* pmw_new_tag -- a tag no other install of this process has used, modulo
 * 2^(64 - shift): an ABA needs that many installs while one completer
 * stalls between two instructions. */
static uint64_t
pmw_new_tag(void)
{
	if (pmw_tag_left == 0) {
		/* Relaxed: only distinctness matters, not ordering. */
		pmw_tag_next = atomic_fetch_add_explicit(&pmw_tag_blocks, 1,
			memory_order_relaxed) * PMW_TAG_BLOCK;
		pmw_tag_left = PMW_TAG_BLOCK;
	}
	pmw_tag_left--;
	return pmw_tag_next++;
}

/* pmw_rdcss_ref -- a fresh RDCSS reference to word entry @w */
static inline uint64_t
pmw_rdcss_ref(const struct mcas *m, const struct mcas_word *w)
{
	unsigned s = pmw_tag_shift(m);

	return mcas__ref(m, w, PMW_RDCSS) | (pmw_new_tag() << s);
}

/* pmw_rdcss_off -- the pool offset of the word entry an RDCSS reference @c
 * names (tag and marks removed) */
static inline uint64_t
pmw_rdcss_off(const struct mcas *m, uint64_t c)
{
	return c & (((uint64_t)1 << pmw_tag_shift(m)) - 1) & ~(uint64_t)PMW_MARKS;
}

static inline bool
pmw_is_rdcss(uint64_t c)
{
	return (c & PMW_REF) == PMW_RDCSS;
}

/* pmw_is_rdcss_of -- whether @c is an RDCSS reference to entry @w */
static inline bool
pmw_is_rdcss_of(const struct mcas *m, uint64_t c, const struct mcas_word *w)
{
	return pmw_is_rdcss(c) && pmw_rdcss_off(m, c) == pm_off_from_addr(m->base, w);
}

/* pmw_load -- a target or status word; a plain mov on x86. Seq_cst: after
 * mcas__protect() the reload must not be satisfied before the epoch store is
 * visible (Dekker with the scanner's seq_cst CAS-then-epoch-load, as in
 * aopt.c). It is also an acquire: a reference read here is dereferenced, and
 * every write to a target is a CAS, so a chain of read-modify-writes orders
 * whatever happened before the write that was read (pmw_rdcss_complete). */
static inline uint64_t
pmw_load(_Atomic uint64_t *a)
{
	return atomic_load_explicit(a, memory_order_seq_cst);
}

static inline uint64_t
pmw_final(const struct mcas_word *w, uint64_t status)
{
	return (status & MCAS_ST_MASK) == MCAS_ST_SUCCEEDED ? w->new_ : w->old;
}

/* pmw_persist_word -- the paper's persistent CAS, reader side: make @c,
 * which @a held, durable and clear its dirty bit. The clearing CAS fails
 * harmlessly if someone else cleared it or the word moved on; the flush
 * covered whatever the word held then, which is @c or something newer. */
static void
pmw_persist_word(_Atomic uint64_t *a, uint64_t c)
{
	pm_flush(a, sizeof(*a));
	pm_fence();
	mcas__cas(a, c, c & ~PMW_DIRTY);
}

/* pmw_status -- @d's status, durable: a dirty (decided, maybe not durable)
 * status is flushed, fenced and cleaned first, so nobody acts on a decision
 * a crash could undo (the paper's persistent read of the status). A store
 * clears the flag: a decided status is never CASed successfully again. */
static uint64_t
pmw_status(struct mcas_rec *d)
{
	uint64_t st = pmw_load(&d->status);

	if (st & MCAS_ST_DIRTY) {
		pm_flush(&d->status, sizeof(d->status));
		pm_fence();
		/* Release: pairs with pmw_load's acquire of the status. */
		atomic_store_explicit(&d->status, st & ~(uint64_t)MCAS_ST_DIRTY,
			memory_order_release);
	}
	return st & ~(uint64_t)MCAS_ST_DIRTY;
}

/*
 * pmw_rdcss_complete -- finish the RDCSS whose reference @c was loaded from
 * @a (Harris et al.'s Complete): the record reference if the operation is
 * still ACTIVE, else the old value back. The caller is inside its epoch.
 *
 * The status load follows the load of @c; every write to @a is a CAS, so if
 * @c was installed after the operation was decided, the decision happens
 * before this load and ACTIVE cannot be read (I2). Restoring old makes the
 * word durable-equivalent at once, but it is flushed and fenced here too
 * (rare: late or failed installs only), so no durable copy of @c survives
 * past this thread's epoch.
 */
static void
pmw_rdcss_complete(struct mcas *m, _Atomic uint64_t *a, uint64_t c)
{
	struct mcas_word *w = pm_off_to_addr(m->base, pmw_rdcss_off(m, c));
	struct mcas_rec *d = mcas__parent(m, w);

	if (pmw_load(&d->status) == MCAS_ST_ACTIVE) {
		mcas__cas(a, c, mcas__ref(m, d, PMW_MWCAS | PMW_DIRTY));
	} else if (mcas__cas(a, c, w->old)) {
		pm_flush(a, sizeof(*a));
		pm_fence();
	}
}

/* pmw_help -- run another thread's operation @o met in a target word */
static void
pmw_help(struct mcas_thread *t, struct mcas_rec *o)
{
	if (pmw_load(&o->status) == MCAS_ST_ACTIVE)
		mcas__stat_add(t, helps, 1);
	pmw_mcas(t, o);
}

/*
 * pmw_install -- phase 1 for word entry @i of @d: make the target refer to
 * @d (RDCSS). Returns 1 once it does (dirty or not), 0 if it holds another
 * value (the MCAS fails), -1 if @d was decided meanwhile.
 */
static int
pmw_install(struct mcas_thread *t, struct mcas_rec *d, uint32_t i)
{
	struct mcas *m = t->m;
	struct mcas_word *w = &d->w[i];
	_Atomic uint64_t *a = mcas__target(m, w);
	uint64_t mine = mcas__ref(m, d, PMW_MWCAS);

	for (;;) {
		uint64_t c = pmw_load(a), inst;

		if ((c & ~PMW_DIRTY) == mine)
			return 1;
		if (pmw_is_rdcss(c)) {
			/* Ours (installed by a helper) or another operation's:
			 * either way it must finish before the word has a value. */
			pmw_rdcss_complete(m, a, c);
			continue;
		}
		if (c & PMW_DIRTY) {
			/* A dirty value or another operation's dirty reference:
			 * persisted before use, as the paper's helpers do. */
			pmw_persist_word(a, c);
			continue;
		}
		if (c & PMW_MWCAS) {
			pmw_help(t, mcas__deref(m, c));
			continue;
		}
		if (c != w->old)
			return 0;
		/* Not a correctness check (RDCSS is): just no pointless install
		 * for an operation already decided. */
		if (pmw_load(&d->status) != MCAS_ST_ACTIVE)
			return -1;
		inst = pmw_rdcss_ref(m, w);
		if (mcas__cas(a, c, inst))
			pmw_rdcss_complete(m, a, inst);
	}
}

/*
 * pmw_phase2 -- replace every reference to decided @d (status @st, durable)
 * by its final value, persistently (the paper's phase 2). A word this thread
 * wrote is flushed, fenced and cleaned; words others wrote are theirs to
 * persist. RDCSS instances of @d still in a target are completed (back to
 * old) so that no record reference can appear after this pass (I3).
 */
static void
pmw_phase2(struct mcas *m, struct mcas_rec *d, uint64_t st)
{
	uint64_t mine = mcas__ref(m, d, PMW_MWCAS);

	for (uint32_t i = 0; i < d->n; i++) {
		struct mcas_word *w = &d->w[i];
		_Atomic uint64_t *a = mcas__target(m, w);
		uint64_t fin = pmw_final(w, st) | PMW_DIRTY;
		bool wrote = false;

		for (;;) {
			uint64_t c = pmw_load(a);

			if ((c & ~PMW_DIRTY) == mine) {
				if (mcas__cas(a, c, fin)) {
					wrote = true;
					break;
				}
				continue;
			}
			if (pmw_is_rdcss_of(m, c, w)) {
				pmw_rdcss_complete(m, a, c);
				continue;
			}
			break;
		}
		if (wrote)
			pmw_persist_word(a, fin);
	}
}

/* pmw_mcas -- run @d to the end, as its owner or as a helper; true if it
 * succeeded. Inside the caller's epoch. */
static bool
pmw_mcas(struct mcas_thread *t, struct mcas_rec *d)
{
	struct mcas *m = t->m;
	uint64_t st;

	if (pmw_load(&d->status) == MCAS_ST_ACTIVE) {
		uint64_t mine = mcas__ref(m, d, PMW_MWCAS);
		uint64_t outcome = MCAS_ST_SUCCEEDED;
		int r = 1;

		for (uint32_t i = 0; i < d->n && r > 0; i++)
			r = pmw_install(t, d, i);
		if (r == 0)
			outcome = MCAS_ST_FAILED;
		if (r > 0) {
			/* Every reference durable before the status can say
			 * SUCCEEDED: recovery rolls a word forward only through a
			 * reference it finds. A clean reference was flushed and
			 * fenced by whoever cleaned it. */
			for (uint32_t i = 0; i < d->n; i++) {
				_Atomic uint64_t *a = mcas__target(m, &d->w[i]);

				if (pmw_load(a) == (mine | PMW_DIRTY))
					pmw_persist_word(a, mine | PMW_DIRTY);
			}
		}
		if (pmw_load(&d->status) == MCAS_ST_ACTIVE)
			mcas__cas(&d->status, MCAS_ST_ACTIVE, outcome | MCAS_ST_DIRTY);
	}
	st = pmw_status(d);
	pmw_phase2(m, d, st);
	return (st & MCAS_ST_MASK) == MCAS_ST_SUCCEEDED;
}

static bool
pmw_execute(struct mcas_thread *t, struct mcas_rec *d)
{
	return pmw_mcas(t, d);
}

/* pmw_read -- the paper's persistent read: one load for a clean value */
static uint64_t
pmw_read(struct mcas_thread *t, const uint64_t *addr)
{
	struct mcas *m = t->m;
	_Atomic uint64_t *a = (_Atomic uint64_t *)(uintptr_t)addr;

	for (;;) {
		uint64_t c = pmw_load(a);

		if ((c & PMW_REF) == 0) {
			if (c & PMW_DIRTY)
				pmw_persist_word(a, c);
			return c & ~PMW_DIRTY;
		}
		/* A reference: announce before dereferencing it, then look
		 * again (the record may have been recycled meanwhile). */
		if (mcas__protect(t))
			continue;
		if (pmw_is_rdcss(c))
			pmw_rdcss_complete(m, a, c);
		else if (c & PMW_DIRTY)
			pmw_persist_word(a, c);
		else
			pmw_help(t, mcas__deref(m, c));
	}
}

/* pmw_detach -- one grace period after @d was retired: no target refers to
 * it any more (see "Reclamation" above); flush every target so that nothing
 * written while @d was in use stays durable only in a stale form once @d is
 * reused (the core fences once per batch). */
static void
pmw_detach(struct mcas_thread *t, struct mcas_rec *d)
{
	struct mcas *m = t->m;

	for (uint32_t i = 0; i < d->n; i++) {
		_Atomic uint64_t *a = mcas__target(m, &d->w[i]);

		assert((atomic_load_explicit(a, memory_order_relaxed) & ~PMW_DIRTY) !=
			mcas__ref(m, d, PMW_MWCAS));
		assert(!pmw_is_rdcss_of(m, atomic_load_explicit(a, memory_order_relaxed),
			&d->w[i]));
		pm_flush(a, sizeof(*a));
	}
}

/*
 * pmw_recover -- a target referring to @d gets what it maps to (see
 * "Durability"): an RDCSS reference to @d's entry for it -> old; a record
 * reference -> new if @d's durable status says SUCCEEDED, else old. A
 * target holding one of @d's values with the dirty bit is cleaned. Stored
 * and flushed (the core fences once). Idempotent: the record is only read.
 * A record no word refers to may hold anything: statuses and targets are
 * checked, and cleaning a dirty value never changes what an MCAS word means.
 */
static void
pmw_recover(struct mcas *m, struct mcas_rec *d)
{
	uint64_t st = atomic_load_explicit(&d->status, memory_order_relaxed);
	uint32_t n = d->n < MCAS_MAX_WORDS ? d->n : MCAS_MAX_WORDS;
	uint64_t mine = mcas__ref(m, d, PMW_MWCAS);

	/* The area itself is never a target: a stale target there could make a
	 * status of 1 (SUCCEEDED) look like a dirty 0. */
	uint64_t area_lo = pm_off_from_addr(m->base, m->hdr);
	uint64_t area_hi = pm_off_from_addr(m->base,
		m->descs + (size_t)m->max_threads * m->descs_per_thread);

	if ((st & ~(uint64_t)(MCAS_ST_MASK | MCAS_ST_DIRTY)) != 0 || (st & MCAS_ST_MASK) == 3)
		st = MCAS_ST_ACTIVE; /* garbage: roll back */
	for (uint32_t i = 0; i < n; i++) {
		struct mcas_word *w = &d->w[i];
		_Atomic uint64_t *a;
		uint64_t c, v;

		if (w->addr % 8 != 0 || w->addr < 8 || w->addr > m->size - 8 ||
				(w->addr >= area_lo && w->addr < area_hi))
			continue;
		a = mcas__target(m, w);
		c = atomic_load_explicit(a, memory_order_relaxed);
		if ((c & ~PMW_DIRTY) == mine)
			v = pmw_final(w, st);
		else if (pmw_is_rdcss_of(m, c, w))
			v = w->old;
		else if ((c & PMW_MARKS) == PMW_DIRTY &&
				((c & ~PMW_DIRTY) == w->old || (c & ~PMW_DIRTY) == w->new_))
			v = c & ~PMW_DIRTY;
		else
			continue;
		atomic_store_explicit(a, v, memory_order_relaxed);
		pm_flush(a, sizeof(*a));
	}
}

const struct mcas_algo_ops mcas__pmwcas_ops = {
	.name = "pmwcas",
	.value_mask = PMW_MARKS,
	.volatile_ok = false,
	.persistent_ok = true,
	.execute = pmw_execute,
	.read = pmw_read,
	.detach = pmw_detach,
	.recover = pmw_recover,
};
