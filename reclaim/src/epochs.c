/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/epochs.c -- the epoch flavour (reclaim/reclaim.h, "The epoch
 * flavour"): a registry of per-thread epoch words and non-blocking grace
 * periods over it, for callers that keep their own retire lists (mcas/'s
 * two-grace descriptor pipeline, thesis sect. 5.6).
 *
 * Each word sits alone on a cache line next to its slot's in_use flag:
 * the owner stores to it twice per section, scanners only load it.
 *
 * A thread registers once per flavour: its handles form a short list in
 * thread-local storage, and a second registration finds the first there.
 * The list is read and written only by its own thread, so it needs no
 * synchronization; only the slots are shared.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <pm/error.h>
#include <reclaim/reclaim.h>

#define RECLAIM_EPOCHS_MAX_THREADS 65536u

struct reclaim_epochs_slot {
	uint64_t word;       /* the owner's epoch word (__atomic builtins:
	                      * the inline sections in reclaim.h use them) */
	_Atomic int in_use;
	char pad[64 - sizeof(uint64_t) - sizeof(int)];
};
_Static_assert(sizeof(struct reclaim_epochs_slot) == 64, "one slot per cache line");

struct reclaim_epochs {
	struct reclaim_epochs_slot *slots; /* max_threads, 64-byte aligned */
	unsigned max_threads;
	_Atomic unsigned hwm;              /* slots ever used: scans stop here */
	_Atomic unsigned nregistered;
};

/* The calling thread's handles, one per flavour it is registered in. */
static __thread struct reclaim_epochs_thread *reclaim_epochs_mine;

int
reclaim_epochs_new(struct reclaim_epochs **out, unsigned max_threads)
{
	struct reclaim_epochs *e;

	pm_error_clear();
	if (max_threads == 0 || max_threads > RECLAIM_EPOCHS_MAX_THREADS)
		return pm_error_set(-EINVAL, "reclaim_epochs_new: max_threads %u not in 1..%u",
			max_threads, RECLAIM_EPOCHS_MAX_THREADS);
	e = calloc(1, sizeof(*e));
	if (e != NULL)
		e->slots = aligned_alloc(64, sizeof(*e->slots) * max_threads);
	if (e == NULL || e->slots == NULL) {
		free(e);
		return pm_error_set(-ENOMEM, "reclaim_epochs_new: out of memory");
	}
	memset(e->slots, 0, sizeof(*e->slots) * max_threads);
	e->max_threads = max_threads;
	*out = e;
	return 0;
}

int
reclaim_epochs_delete(struct reclaim_epochs **ep)
{
	struct reclaim_epochs *e = ep ? *ep : NULL;
	unsigned n;

	pm_error_clear();
	if (e == NULL)
		return 0;
	n = atomic_load(&e->nregistered);
	if (n != 0)
		return pm_error_set(-EBUSY, "reclaim_epochs_delete: %u threads are still "
			"registered", n);
	free(e->slots);
	free(e);
	*ep = NULL;
	return 0;
}

/* reclaim_epochs_claim -- claim a free slot of @e; max_threads if none */
static unsigned
reclaim_epochs_claim(struct reclaim_epochs *e)
{
	unsigned slot, hwm;

	/* A load before the CAS: a CAS on a taken slot would pull its
	 * owner's epoch word, on the same line, away from it. */
	for (slot = 0; slot < e->max_threads; slot++) {
		int expected = 0;

		if (atomic_load_explicit(&e->slots[slot].in_use, memory_order_relaxed) == 0 &&
				atomic_compare_exchange_strong(&e->slots[slot].in_use, &expected, 1))
			break;
	}
	if (slot == e->max_threads)
		return slot;
	hwm = atomic_load(&e->hwm);
	while (hwm < slot + 1 && !atomic_compare_exchange_weak(&e->hwm, &hwm, slot + 1))
		;
	return slot;
}

int
reclaim_epochs_thread_register(struct reclaim_epochs *e, struct reclaim_epochs_thread **out)
{
	struct reclaim_epochs_thread *t;
	unsigned slot;

	pm_error_clear();
	for (t = reclaim_epochs_mine; t != NULL; t = t->reclaim__next) {
		if (t->reclaim__e == e) {
			t->reclaim__refs++;
			*out = t;
			return 0;
		}
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return pm_error_set(-ENOMEM, "reclaim_epochs_thread_register: out of memory");
	slot = reclaim_epochs_claim(e);
	if (slot == e->max_threads) {
		free(t);
		return pm_error_set(-EAGAIN, "reclaim_epochs_thread_register: all %u thread slots "
			"in use", e->max_threads);
	}
	/* The word is even: its previous owner left it outside a section. */
	t->reclaim__word = &e->slots[slot].word;
	t->reclaim__slot = slot;
	t->reclaim__refs = 1;
	t->reclaim__e = e;
	t->reclaim__next = reclaim_epochs_mine;
	reclaim_epochs_mine = t;
	atomic_fetch_add(&e->nregistered, 1);
	*out = t;
	return 0;
}

int
reclaim_epochs_thread_unregister(struct reclaim_epochs_thread **tp)
{
	struct reclaim_epochs_thread *t = tp ? *tp : NULL;
	struct reclaim_epochs_thread **link;
	struct reclaim_epochs *e;

	pm_error_clear();
	if (t == NULL)
		return 0;
	for (link = &reclaim_epochs_mine; *link != NULL && *link != t;
			link = &(*link)->reclaim__next)
		;
	if (*link == NULL)
		return pm_error_set(-EPERM, "reclaim_epochs_thread_unregister: the handle is not "
			"the calling thread's");
	/* Dropping one of several registrations leaves the word as it is. */
	if (t->reclaim__refs == 1 && t->reclaim__nest != 0)
		return pm_error_set(-EBUSY, "reclaim_epochs_thread_unregister: inside a section");
	*tp = NULL;
	if (--t->reclaim__refs != 0)
		return 0;
	*link = t->reclaim__next;
	e = t->reclaim__e;
	atomic_store(&e->slots[t->reclaim__slot].in_use, 0);
	atomic_fetch_sub(&e->nregistered, 1);
	free(t);
	return 0;
}

int
reclaim_epochs_grace_init(struct reclaim_epochs_grace *g, const struct reclaim_epochs *e)
{
	pm_error_clear();
	memset(g, 0, sizeof(*g));
	g->reclaim__snap = malloc(sizeof(*g->reclaim__snap) * e->max_threads);
	if (g->reclaim__snap == NULL)
		return pm_error_set(-ENOMEM, "reclaim_epochs_grace_init: out of memory");
	g->reclaim__cap = e->max_threads;
	return 0;
}

void
reclaim_epochs_grace_fini(struct reclaim_epochs_grace *g)
{
	free(g->reclaim__snap);
	memset(g, 0, sizeof(*g));
}

/* reclaim_epochs_word -- the epoch word of slot @i, loaded seq_cst */
static uint64_t
reclaim_epochs_word(const struct reclaim_epochs *e, unsigned i)
{
	return __atomic_load_n(&e->slots[i].word, __ATOMIC_SEQ_CST);
}

void
reclaim_epochs_grace_start(struct reclaim_epochs_grace *g, const struct reclaim_epochs_thread *t)
{
	const struct reclaim_epochs *e = t->reclaim__e;
	unsigned hwm = atomic_load(&e->hwm);

	/* Never past the snapshot's room (a grace made for a smaller
	 * flavour than @t's: a misuse the header rules out). */
	if (hwm > g->reclaim__cap)
		hwm = g->reclaim__cap;
	for (unsigned i = 0; i < hwm; i++)
		g->reclaim__snap[i] = reclaim_epochs_word(e, i);
	g->reclaim__n = hwm;
	g->reclaim__started = true;
}

bool
reclaim_epochs_grace_elapsed(const struct reclaim_epochs_grace *g,
	const struct reclaim_epochs_thread *t)
{
	const struct reclaim_epochs *e = t->reclaim__e;

	/* Compare with the words seen at the start instead of waiting for
	 * them to change (sect. 5.6): an odd word that differs now was left
	 * at least once since. A slot registered after the start is not
	 * looked at: its owner entered after the caller's earlier work. */
	for (unsigned i = 0; i < g->reclaim__n; i++) {
		if (i == t->reclaim__slot || (g->reclaim__snap[i] & 1) == 0)
			continue;
		if (reclaim_epochs_word(e, i) == g->reclaim__snap[i])
			return false;
	}
	return true;
}

bool
reclaim_epochs_others_outside(const struct reclaim_epochs_thread *t)
{
	const struct reclaim_epochs *e = t->reclaim__e;
	unsigned hwm = atomic_load(&e->hwm);

	/* One pass, no waiting: a thread inside may be preempted or in a long
	 * section, and mcas/ gives up only an optimization when this says
	 * false (waiting made its list traversals several times slower with
	 * more threads than cores). */
	for (unsigned i = 0; i < hwm; i++)
		if (i != t->reclaim__slot && (reclaim_epochs_word(e, i) & 1) != 0)
			return false;
	return true;
}

unsigned
reclaim_epochs_registered(const struct reclaim_epochs *e)
{
	return atomic_load_explicit(&e->nregistered, memory_order_relaxed);
}
