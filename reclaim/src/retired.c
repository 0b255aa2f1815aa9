/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/retired.c -- retired lists ("piles") and the domain's orphan
 * piles: appending, sweeping (the one loop every scheme frees through),
 * handing a list over and adopting orphans.
 *
 * A pile is owned by exactly one party at a time: a slot's owner, the orphan
 * stack (under orphan_lock), or liburcu's callback queue (urcu.c). Ownership
 * moves with the pointer, so an entry can neither be lost nor freed twice.
 */
#include <stdlib.h>
#include <string.h>

#include "reclaim_internal.h"

#define RECLAIM_PILE_MIN 64

/* reclaim_pile_grow -- s's list with room for @extra more entries */
static struct reclaim__pile *
reclaim_pile_grow(struct reclaim__slot *s, size_t extra)
{
	struct reclaim__pile *p = atomic_load_explicit(&s->ret, memory_order_relaxed);
	size_t len = p ? atomic_load_explicit(&p->len, memory_order_relaxed) : 0;

	if (p && len + extra <= p->cap)
		return p;
	size_t cap = p ? p->cap : RECLAIM_PILE_MIN;
	while (cap < len + extra)
		cap *= 2;
	struct reclaim__pile *np = realloc(p, sizeof(*np) + cap * sizeof(np->e[0]));
	if (np == NULL)
		return NULL;
	if (p == NULL) {
		np->next = NULL;
		atomic_init(&np->len, 0);
		np->min_tag = UINT64_MAX;
	}
	np->cap = cap;
	/* Release: pairs with an evictor's acquire in reclaim__hand_over(). */
	atomic_store_explicit(&s->ret, np, memory_order_release);
	return np;
}

/* reclaim__pile_append -- add one entry, growing the list */
bool
reclaim__pile_append(struct reclaim__slot *s, const struct reclaim__entry *e)
{
	struct reclaim__pile *p = reclaim_pile_grow(s, 1);

	if (p == NULL)
		return false;
	size_t len = atomic_load_explicit(&p->len, memory_order_relaxed);
	p->e[len] = *e;
	if (e->tag < p->min_tag)
		p->min_tag = e->tag;
	/* Release: the entry before the length (reclaim__hand_over()). */
	atomic_store_explicit(&p->len, len + 1, memory_order_release);
	return true;
}

/* reclaim__free_entry -- call the node's free function */
void
reclaim__free_entry(const struct reclaim__entry *e)
{
	if (e->fn)
		e->fn(e->node, e->ctx);
	else
		free(e->node);
}

/*
 * reclaim__sweep -- free what @keep rejects, compact the rest.
 *
 * The list is settled before any free function runs: the kept entries are
 * moved to the front (in order), the rejected ones to the back, and len
 * drops to the kept count. Only then are the rejected entries handed out.
 * A free function that ends its thread (pthread_exit(), a cancellation
 * point) thus leaves a list that no longer holds any entry already handed
 * out, and the evictor that later takes the dead thread's list cannot free
 * one twice; the rejected entries not yet reached are leaked, which is
 * safe.
 */
size_t
reclaim__sweep(struct reclaim__slot *s,
	bool (*keep)(const struct reclaim__entry *e, void *arg), void *arg)
{
	struct reclaim__pile *p = atomic_load_explicit(&s->ret, memory_order_relaxed);

	if (p == NULL)
		return 0;
	size_t len = atomic_load_explicit(&p->len, memory_order_relaxed);
	size_t kept = 0;
	uint64_t min_tag = UINT64_MAX;

	for (size_t i = 0; i < len; i++) {
		if (!keep(&p->e[i], arg))
			continue;
		if (i != kept) {
			struct reclaim__entry e = p->e[kept];

			p->e[kept] = p->e[i];
			p->e[i] = e;
		}
		if (p->e[kept].tag < min_tag)
			min_tag = p->e[kept].tag;
		kept++;
	}
	p->min_tag = min_tag;
	/* Release: pairs with reclaim__hand_over()'s acquire. */
	atomic_store_explicit(&p->len, kept, memory_order_release);
	for (size_t i = kept; i < len; i++) {
		/* Counted before the call, which may not return. The
		 * entry lies beyond len, where nothing reads it but this
		 * loop (free functions must not call into the domain). */
		reclaim__stat_add(&s->st.freed, 1);
		reclaim__free_entry(&p->e[i]);
	}
	return len - kept;
}

/* reclaim__pile_free -- free every node of a pile, and the pile */
uint64_t
reclaim__pile_free(struct reclaim__pile *p)
{
	if (p == NULL)
		return 0;
	uint64_t n = atomic_load_explicit(&p->len, memory_order_relaxed);

	for (size_t i = 0; i < n; i++)
		reclaim__free_entry(&p->e[i]);
	free(p);
	return n;
}

/* reclaim__hand_over -- push a non-empty retired list onto the orphans */
void
reclaim__hand_over(struct reclaim__slot *s)
{
	struct reclaim_domain *d = s->d;
	/* Acquire: an evictor takes the list of a thread that died; pairs
	 * with the owner's release stores of ret and len. */
	struct reclaim__pile *p = atomic_load_explicit(&s->ret, memory_order_acquire);

	if (p == NULL || atomic_load_explicit(&p->len, memory_order_acquire) == 0)
		return;
	atomic_store_explicit(&s->ret, NULL, memory_order_relaxed);
	pthread_mutex_lock(&d->orphan_lock);
	p->next = d->orphans;
	d->orphans = p;
	atomic_fetch_add_explicit(&d->norphans,
		atomic_load_explicit(&p->len, memory_order_relaxed),
		memory_order_relaxed);
	pthread_mutex_unlock(&d->orphan_lock);
}

/* reclaim__adopt_orphans -- merge the orphan piles into @s's list */
void
reclaim__adopt_orphans(struct reclaim__slot *s)
{
	struct reclaim_domain *d = s->d;

	if (atomic_load_explicit(&d->norphans, memory_order_relaxed) == 0)
		return;
	pthread_mutex_lock(&d->orphan_lock);
	while (d->orphans != NULL) {
		struct reclaim__pile *o = d->orphans;
		size_t n = atomic_load_explicit(&o->len, memory_order_relaxed);
		struct reclaim__pile *p = atomic_load_explicit(&s->ret,
			memory_order_relaxed);

		if (p == NULL || atomic_load_explicit(&p->len,
				memory_order_relaxed) == 0) {
			/* Take the orphan pile whole. */
			d->orphans = o->next;
			o->next = NULL;
			free(p);
			/* Release: as in reclaim_pile_grow(). */
			atomic_store_explicit(&s->ret, o, memory_order_release);
		} else {
			p = reclaim_pile_grow(s, n);
			if (p == NULL)
				break;
			size_t len = atomic_load_explicit(&p->len,
				memory_order_relaxed);
			memcpy(&p->e[len], o->e, n * sizeof(o->e[0]));
			if (o->min_tag < p->min_tag)
				p->min_tag = o->min_tag;
			/* Release: as in reclaim__pile_append(). */
			atomic_store_explicit(&p->len, len + n,
				memory_order_release);
			d->orphans = o->next;
			free(o);
		}
		atomic_fetch_sub_explicit(&d->norphans, n, memory_order_relaxed);
	}
	pthread_mutex_unlock(&d->orphan_lock);
}
