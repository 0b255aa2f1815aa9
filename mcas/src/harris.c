/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcas/src/harris.c -- the MCAS of Harris, Fraser and Pratt, "A practical
 * multi-word compare-and-swap operation" (DISC'02), volatile only: the
 * 3k+1-CAS baseline. Function names refer to the paper's figures: RDCSS,
 * RDCSSRead and Complete (fig. 2, restricted double-compare single-swap),
 * CASN and CASNRead (fig. 3).
 *
 * Word format (value_mask 3). A target word holds one of
 *   - a value (low two bits clear);
 *   - an MCAS reference mcas__ref(m, d, 1): record d acquired the word in
 *     phase 1 and has not released it in phase 2;
 *   - an RDCSS reference mcas__ref(m, w, 2) | tag << 48: an acquisition in
 *     progress. Word entry w of record d is the RDCSS descriptor: a1 =
 *     &d->status, o1 = UNDECIDED (MCAS_ST_ACTIVE), a2 = the target, o2 =
 *     w->old, n2 = the MCAS reference to d. The tag names the installing
 *     invocation (see "Why the tag").
 *
 * CASN. Phase 1 acquires the targets in address order (the core sorted
 * them): RDCSS installs the RDCSS reference (CAS old -> rdcss), then
 * Complete replaces it by the MCAS reference if the status is still
 * UNDECIDED, by the old value if not (CAS rdcss -> mcas or old). A word
 * holding another operation's reference is helped first. One CAS on the
 * status decides; phase 2 replaces each MCAS reference by the new value
 * (succeeded) or the old one (failed). Uncontended: 2k + 1 + k CASes.
 *
 * Why RDCSS and not CAS old -> mcas (thesis app. D.1). A helper delayed
 * before its acquiring CAS can resume after the operation was decided and
 * released and the word went back to its old value (ABA). A plain CAS
 * would then acquire the word for a finished operation, and the helper's
 * phase 2 would write the new value over a later operation's. Complete
 * re-reads the status after the CAS and undoes such an acquisition.
 *
 * Why the tag. The paper's RDCSS takes a fresh descriptor per call (and
 * relies on garbage collection). With the record's word entry as the
 * descriptor, every RDCSS on one (operation, word) installs the same
 * reference -- PMwCAS's shortcut -- and Complete, a read of a1 followed by
 * a CAS on a2, is not atomic: a thread that loaded the reference of the
 * acquiring installation and read UNDECIDED can be delayed until the
 * operation succeeded, released the word, a later operation wrote the old
 * value back and a delayed helper installed the same reference again. Its
 * CAS rdcss -> mcas then succeeds on the new installation and phase 2
 * writes the new value over the later operation's (harris_test,
 * StaleCompleteFailsOnLaterInstall). So the reference carries the
 * installer's thread slot and CASN nesting depth. Only one installation on
 * an (operation, word) can begin while the status is UNDECIDED (once it is
 * completed the word holds the MCAS reference until phase 2), and only a
 * Complete that loaded that one can read UNDECIDED. A later installation
 * with the same tag would be by the same thread at the same depth, hence
 * in a later CASN invocation (one invocation installs at most once per
 * word); invocations end after the decision, so that later invocation
 * checks the status before it installs and sees it decided. Depths wrap
 * modulo 64: the argument needs fewer than 64 nested helps on one stack.
 *
 * Reads (RDCSSRead + CASNRead). A value is one load, no store. An RDCSS
 * reference is completed; an MCAS reference of an UNDECIDED operation is
 * helped (whole CASN); one of a decided operation stands for its new or
 * old value, returned without writing (phase 2 cleans the word).
 *
 * Reclamation. Phase 2 removes every MCAS reference before the owner
 * returns, and an MCAS reference is never installed after the decision
 * (see above). But a helper that checked UNDECIDED before the decision can
 * still install, and at once undo, an RDCSS reference after the owner
 * retired the record, and a reader that entered its epoch after the core's
 * snapshot can load that reference. Such helpers were inside their epochs
 * before the record was retired, so after one grace period none is left,
 * and after a second no reader holds a reference: the core's pipeline
 * (retired -> grace -> detach -> grace -> free) gives both, and detach
 * itself has nothing left to do.
 *
 * Every CAS on a target or a status goes through mcas__cas (counted).
 * Orders: those CASes are sequentially consistent; word and status loads
 * are acquire, so a reference's record contents and a decided status are
 * visible to whoever loads them.
 */
#include "mcas_internal.h"

#define HARRIS_MCAS 1ull  /* reference to a record (CASN descriptor) */
#define HARRIS_RDCSS 2ull /* tagged reference to a word entry (RDCSS) */
#define HARRIS_MARK 3ull

/* RDCSS tag: installer's slot and nesting depth in the top 16 bits, which
 * user-space addresses leave clear (checked per instance: harris_tagged). */
#define HARRIS_TAG_SHIFT 48
#define HARRIS_ADDR_MASK ((1ull << HARRIS_TAG_SHIFT) - 1)
#define HARRIS_SLOT_BITS 10 /* max_threads <= 1024 (mcas.c) */
#define HARRIS_DEPTH_MASK ((1u << (64 - HARRIS_TAG_SHIFT - HARRIS_SLOT_BITS)) - 1)

_Static_assert(sizeof(void *) == 8, "references are 64-bit addresses");
_Static_assert(MCAS_DESC_HEAD % 4 == 0 && sizeof(struct mcas_word) % 4 == 0,
	"word entries leave the two mark bits clear");

static bool harris_casn(struct mcas_thread *t, struct mcas_rec *d, unsigned depth);

static inline uint64_t
harris_status(const struct mcas_rec *d)
{
	/* Acquire: pairs with the status CAS, so whoever sees a decided
	 * status also sees the acquisitions the decider saw. */
	return atomic_load_explicit(&((struct mcas_rec *)d)->status, memory_order_acquire);
}

static inline uint64_t
harris_load(_Atomic uint64_t *a)
{
	/* Seq_cst (a plain mov on x86): it pairs with the CAS that stored a
	 * reference, so the record is visible before it is dereferenced, and
	 * after mcas__protect() it cannot be satisfied before the epoch store
	 * is visible to a scanner. */
	return atomic_load_explicit(a, memory_order_seq_cst);
}

/* harris_tagged -- whether @m's records lie below 2^48, leaving the top
 * bits of an RDCSS reference to the tag (always on Linux x86-64/arm64 user
 * space; otherwise references go untagged, the shortcut described above) */
static inline bool
harris_tagged(const struct mcas *m)
{
	const struct mcas_rec *end = m->descs + (size_t)m->max_threads * m->descs_per_thread;

	return (pm_off_from_addr(m->base, end) >> HARRIS_TAG_SHIFT) == 0;
}

/* harris_rdcss_ref -- the RDCSS reference @t installs for word entry @w at
 * CASN nesting @depth */
static inline uint64_t
harris_rdcss_ref(const struct mcas_thread *t, const struct mcas_word *w, unsigned depth)
{
	uint64_t r = mcas__ref(t->m, w, HARRIS_RDCSS);
	uint64_t tag = t->slot | (uint64_t)(depth & HARRIS_DEPTH_MASK) << HARRIS_SLOT_BITS;

	return harris_tagged(t->m) ? r | tag << HARRIS_TAG_SHIFT : r;
}

/* harris_rdcss_word -- the word entry (RDCSS descriptor) of reference @c */
static inline const struct mcas_word *
harris_rdcss_word(const struct mcas *m, uint64_t c)
{
	return mcas__deref(m, harris_tagged(m) ? c & HARRIS_ADDR_MASK : c);
}

/* harris_final -- the value word @w stands for once its record is decided */
static inline uint64_t
harris_final(const struct mcas_word *w, uint64_t status)
{
	return status == MCAS_ST_SUCCEEDED ? w->new_ : w->old;
}

/*
 * harris_complete -- fig. 2 Complete: finish the RDCSS whose reference @c
 * was loaded from its target. Caller is inside an epoch. If the status is
 * UNDECIDED the acquisition stands (n2, the MCAS reference), else it is
 * undone (o2). A CAS that fails means someone else finished it.
 */
static void
harris_complete(struct mcas_thread *t, uint64_t c)
{
	struct mcas *m = t->m;
	const struct mcas_word *w = harris_rdcss_word(m, c);
	struct mcas_rec *d = mcas__parent(m, w);
	_Atomic uint64_t *a2 = mcas__target(m, w);

	if (harris_status(d) == MCAS_ST_ACTIVE)
		mcas__cas(a2, c, mcas__ref(m, d, HARRIS_MCAS));
	else
		mcas__cas(a2, c, w->old);
}

/*
 * harris_rdcss -- fig. 2 RDCSS for word entry @w with reference @ref:
 * install @ref if the target holds w->old, completing any RDCSS found
 * there first, then Complete our own. Returns what the target held: w->old
 * if installed (whatever Complete then decided), else a value or an MCAS
 * reference for the caller to judge. The paper's CAS1 returns the value
 * it found; mcas__cas does not, so the word is loaded first (which also
 * spares the CAS when the word plainly differs).
 */
static uint64_t
harris_rdcss(struct mcas_thread *t, const struct mcas_word *w, uint64_t ref)
{
	_Atomic uint64_t *a2 = mcas__target(t->m, w);

	for (;;) {
		uint64_t c = harris_load(a2);

		if ((c & HARRIS_MARK) == HARRIS_RDCSS) {
			if (mcas__protect(t))
				continue;
			harris_complete(t, c);
			continue;
		}
		if (c != w->old)
			return c;
		if (mcas__cas(a2, c, ref)) {
			harris_complete(t, ref);
			return c;
		}
	}
}

/* harris_help -- run the CASN of @d, met in a word by @t, one level deeper */
static void
harris_help(struct mcas_thread *t, struct mcas_rec *d, unsigned depth)
{
	if (harris_status(d) == MCAS_ST_ACTIVE)
		mcas__stat_add(t, helps, 1);
	harris_casn(t, d, depth);
}

/*
 * harris_casn -- fig. 3 CASN, run by the owner (@depth 0) or a helper.
 * Caller is inside an epoch. Returns whether @d succeeded.
 */
static bool
harris_casn(struct mcas_thread *t, struct mcas_rec *d, unsigned depth)
{
	struct mcas *m = t->m;
	uint64_t self = mcas__ref(m, d, HARRIS_MCAS);
	uint64_t st = MCAS_ST_SUCCEEDED;
	bool ok;

	/* Phase 1: acquire every target in address order (the global order
	 * makes helping chains finite). */
	for (uint32_t i = 0; i < d->n && st == MCAS_ST_SUCCEEDED; i++) {
		const struct mcas_word *w = &d->w[i];
		uint64_t ref = harris_rdcss_ref(t, w, depth);

		for (;;) {
			uint64_t c;

			/* The paper checks once before phase 1; checking per word
			 * also stops a late helper from installing, and undoing,
			 * RDCSS references once someone decided. Correctness
			 * still rests on Complete's check. */
			if (harris_status(d) != MCAS_ST_ACTIVE)
				goto decided;
			c = harris_rdcss(t, w, ref);
			if (c == w->old || c == self)
				break; /* acquired, by us or by a helper */
			if ((c & HARRIS_MARK) == HARRIS_MCAS) {
				if (mcas__protect(t))
					continue;
				/* Another operation owns the word: help it
				 * finish (or release, if decided), then retry. */
				harris_help(t, mcas__deref(m, c), depth + 1);
				continue;
			}
			st = MCAS_ST_FAILED; /* a value other than old */
			break;
		}
	}
	if (harris_status(d) == MCAS_ST_ACTIVE)
		mcas__cas(&d->status, MCAS_ST_ACTIVE, st);
decided:
	/* Phase 2: release. Only words holding the MCAS reference need a
	 * CAS: it is never installed again once decided (see "Why the
	 * tag"), and every installer gets here after its installation ended,
	 * so no reference outlives all the invocations. */
	st = harris_status(d);
	ok = st == MCAS_ST_SUCCEEDED;
	for (uint32_t i = 0; i < d->n; i++) {
		const struct mcas_word *w = &d->w[i];
		_Atomic uint64_t *a = mcas__target(m, w);

		if (harris_load(a) == self)
			mcas__cas(a, self, harris_final(w, st));
	}
	return ok;
}

static bool
harris_execute(struct mcas_thread *t, struct mcas_rec *d)
{
	return harris_casn(t, d, 0);
}

/*
 * harris_read -- fig. 3 CASNRead over fig. 2 RDCSSRead, without writes for
 * a decided operation: a reference of one stands for its final value from
 * the status CAS on, which lies inside this read.
 */
static uint64_t
harris_read(struct mcas_thread *t, const uint64_t *addr)
{
	struct mcas *m = t->m;
	_Atomic uint64_t *a = (_Atomic uint64_t *)(uintptr_t)addr;
	uint64_t off = pm_off_from_addr(m->base, addr);

	for (;;) {
		uint64_t c = harris_load(a), st;
		struct mcas_rec *d;

		if ((c & HARRIS_MARK) == 0 || (c & HARRIS_MARK) == HARRIS_MARK)
			return c; /* a value (mark 3 is never stored here) */
		/* A reference: announce before dereferencing, then look
		 * again (the record may have been reused meanwhile). */
		if (mcas__protect(t))
			continue;
		if ((c & HARRIS_MARK) == HARRIS_RDCSS) { /* RDCSSRead */
			harris_complete(t, c);
			continue;
		}
		d = mcas__deref(m, c);
		st = harris_status(d);
		if (st == MCAS_ST_ACTIVE) { /* CASNRead: help, read again */
			mcas__stat_add(t, helps, 1);
			harris_casn(t, d, 0);
			continue;
		}
		for (uint32_t i = 0; i < d->n; i++)
			if (d->w[i].addr == off)
				return harris_final(&d->w[i], st);
		return c; /* not a target of d: a foreign value, not ours */
	}
}

/* harris_detach -- nothing to clean (phase 2 did); exists so the core
 * waits a second grace period before reusing the record (see
 * "Reclamation" above) */
static void
harris_detach(struct mcas_thread *t, struct mcas_rec *d)
{
	(void)t;
	(void)d;
}

const struct mcas_algo_ops mcas__harris_ops = {
	.name = "harris",
	.value_mask = HARRIS_MARK,
	.volatile_ok = true,
	.persistent_ok = false,
	.execute = harris_execute,
	.read = harris_read,
	.detach = harris_detach,
	.recover = NULL, /* volatile only: never asked to recover a persistent instance */
};
