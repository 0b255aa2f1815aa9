/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/recycle.c -- reuse of a client's out-of-place buffers:
 * the table of what each buffer holds, the retired list, the free lists,
 * and the reclaim round that reads the hazard words (recycle.h; the
 * argument is in kv/DESIGN.md, "Recycling", and Spin's kv/spin/m9.pml).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <pm/error.h>

#include "kv/src/store/recycle.h"
#include "kv/src/store/store_internal.h"

#define RC_NONE UINT32_MAX

int
kv__rc_init(struct kv_recycle *rc, uint32_t nunits, uint32_t max_units)
{
	memset(rc, 0, sizeof(*rc));
	rc->live_cap = 1024;
	rc->live = calloc(rc->live_cap, sizeof(*rc->live));
	rc->ncls = max_units + 1;
	rc->nunits = nunits;
	rc->head = malloc(rc->ncls * sizeof(*rc->head));
	rc->next = malloc((size_t)nunits * sizeof(*rc->next));
	rc->hz = malloc((size_t)KV_IX_MAX_N * KV_ST_HZ * KV_MAX_CLIENTS * sizeof(*rc->hz));
	if (rc->live == NULL || rc->head == NULL || rc->next == NULL || rc->hz == NULL) {
		kv__rc_fini(rc);
		return -ENOMEM;
	}
	for (uint32_t u = 0; u < rc->ncls; u++)
		rc->head[u] = RC_NONE;
	return 0;
}

void
kv__rc_fini(struct kv_recycle *rc)
{
	free(rc->head);
	free(rc->next);
	free(rc->hz);
	free(rc->live);
	free(rc->retired);
	memset(rc, 0, sizeof(*rc));
}

static size_t
live_home(const struct kv_recycle *rc, uint64_t loc)
{
	return (size_t)((loc * UINT64_C(0x9e3779b97f4a7c15)) >> 20) & (rc->live_cap - 1);
}

static void
live_put(struct kv_recycle *rc, const struct kv_rc_buf *b)
{
	size_t i = live_home(rc, b->loc);

	while (rc->live[i].loc != 0)
		i = (i + 1) & (rc->live_cap - 1);
	rc->live[i] = *b;
	rc->live_n++;
}

/* Remove live[@i], shifting the rest of its cluster back (linear probing
 * without tombstones). */
static void
live_del(struct kv_recycle *rc, size_t i)
{
	size_t mask = rc->live_cap - 1, j = i;

	for (;;) {
		size_t h;

		j = (j + 1) & mask;
		if (rc->live[j].loc == 0)
			break;
		h = live_home(rc, rc->live[j].loc);
		/* live[j] may fill the hole at i unless its home lies
		 * cyclically in (i, j]. */
		if (i <= j ? (h <= i || h > j) : (h <= i && h > j)) {
			rc->live[i] = rc->live[j];
			i = j;
		}
	}
	rc->live[i].loc = 0;
	rc->live_n--;
}

int
kv__rc_reserve(struct kv_recycle *rc, uint64_t loc)
{
	size_t need = rc->retired_n + 1;

	if (2 * (rc->live_n + 1) > rc->live_cap) {
		struct kv_rc_buf *old = rc->live;
		size_t n = rc->live_cap;

		rc->live = calloc(2 * n, sizeof(*rc->live));
		if (rc->live == NULL) {
			rc->live = old;
			return -ENOMEM;
		}
		rc->live_cap = 2 * n;
		rc->live_n = 0;
		for (size_t i = 0; i < n; i++)
			if (old[i].loc != 0)
				live_put(rc, &old[i]);
		free(old);
	}
	for (size_t i = live_home(rc, loc); rc->live[i].loc != 0; i = (i + 1) & (rc->live_cap - 1))
		need += rc->live[i].loc == loc;
	if (need > rc->retired_cap) {
		size_t cap = rc->retired_cap ? rc->retired_cap : 256;
		struct kv_rc_buf *r;

		while (cap < need)
			cap *= 2;
		r = realloc(rc->retired, cap * sizeof(*r));
		if (r == NULL)
			return -ENOMEM;
		rc->retired = r;
		rc->retired_cap = cap;
	}
	return 0;
}

void
kv__rc_hold(struct kv_recycle *rc, uint64_t loc, uint64_t ord, uint32_t ptr, uint32_t units)
{
	struct kv_rc_buf b = { loc, ord, ptr, units };

	live_put(rc, &b);
}

void
kv__rc_superseded(struct kv_recycle *rc, uint64_t loc, uint64_t ord)
{
	size_t i = live_home(rc, loc);

	while (rc->live[i].loc != 0 && rc->retired_n < rc->retired_cap) {
		struct kv_rc_buf *b = &rc->live[i];

		if (b->loc != loc || b->ord >= ord) {
			i = (i + 1) & (rc->live_cap - 1);
			continue;
		}
		rc->retired[rc->retired_n++] = *b;
		live_del(rc, i); /* live[i] is now the next candidate */
	}
}

void
kv__rc_freed(struct kv_recycle *rc, uint32_t ptr, uint32_t units)
{
	rc->next[ptr] = rc->head[units];
	rc->head[units] = ptr;
	rc->free_units += units;
}

int
kv__rc_take(struct kv_recycle *rc, uint32_t units, uint32_t *ptr)
{
	if (units == 0 || units >= rc->ncls || rc->free_units < units)
		return -ENOENT;
	for (uint32_t u = units; u < rc->ncls; u++) {
		if (rc->head[u] == RC_NONE)
			continue;
		*ptr = rc->head[u];
		rc->head[u] = rc->next[*ptr];
		rc->free_units -= u;
		if (u > units) /* the tail of a larger buffer stays free */
			kv__rc_freed(rc, *ptr + units, u - units);
		return 0;
	}
	return -ENOENT;
}

/*
 * Read the hazard words of every client from f+1 members into @hz, one
 * member's KV_ST_HZ * C words after the other (a hazard on any of them
 * counts), and their number into *@n.
 */
static int
reclaim_hazards(struct kv_client *c, uint64_t *hz, size_t *n)
{
	uint32_t len = 8u * KV_ST_HZ * c->C;
	unsigned got = 0;

	*n = 0;
	for (;;) {
		unsigned mask = kv__ix_round_begin(&c->g) & ~got, ok;
		int ret;

		for (unsigned i = 0; i < c->g.n; i++)
			if ((mask >> i & 1) &&
				rdma_batch_read(&c->g.m[i].batch, c->region, c->sb.hz_off,
					c->g.m[i].buf, len) != 0)
				mask &= ~(1u << i);
		ok = kv__ix_round_run(&c->g, mask, c->g.f + 1 - (unsigned)__builtin_popcount(got),
			c->deadline);
		c->st.rounds++;
		for (unsigned i = 0; i < c->g.n; i++) {
			if (!(ok >> i & 1))
				continue;
			memcpy(hz + *n, c->g.m[i].buf, len);
			*n += len / 8;
		}
		got |= ok;
		if ((unsigned)__builtin_popcount(got) >= c->g.f + 1)
			return 0;
		ret = kv__st_retry(c, ok == 0);
		if (ret != 0)
			return ret;
	}
}

/* Whether a hazard word of @hz names @word (kv_st_hz(); the high half
 * is the publisher's sequence number, swarm.c sw_hz_publish). */
static bool
hazard_names(const uint64_t *hz, size_t n, uint64_t word)
{
	for (size_t i = 0; i < n; i++)
		if ((hz[i] & UINT32_MAX) == word)
			return true;
	return false;
}

int
kv__st_reclaim(struct kv_client *c, bool wait)
{
	struct kv_recycle *rc = &c->rc;
	uint64_t *hz;
	size_t nhz, kept = 0;
	int ret;

	if (rc->sealed == 0) {
		/* Seal what is retired now: it may be freed once the batches
		 * posted so far have settled. */
		kv__ix_posted(&c->g, &rc->posted);
		rc->sealed = rc->retired_n;
		if (rc->sealed == 0 || !wait)
			return 0;
	}
	(void)kv__ix_round_begin(&c->g); /* drain what completed */
	while (!kv__ix_settled(&c->g, &rc->posted)) {
		if (!wait)
			return 0;
		if (kv__ix_now_ns() >= c->deadline)
			return pm_error_set(KV_E_UNAVAILABLE,
				"kv: client %u's log is full and its retired buffers are not settled",
				c->cid);
		kv__ix_sleep(&c->g, 50000);
		(void)kv__ix_round_begin(&c->g);
	}
	hz = rc->hz;
	ret = reclaim_hazards(c, hz, &nhz);
	if (ret != 0)
		return ret;
	c->st.reclaims++;
	for (size_t i = 0; i < rc->retired_n; i++) {
		struct kv_rc_buf *b = &rc->retired[i];

		if (i < rc->sealed && !hazard_names(hz, nhz, kv_st_hz(c->cid, b->ptr))) {
			kv__rc_freed(rc, b->ptr, b->units);
			c->st.recycled++;
			continue;
		}
		rc->retired[kept++] = *b; /* named, or retired after the seal */
	}
	rc->retired_n = kept;
	kv__ix_posted(&c->g, &rc->posted);
	rc->sealed = kept;
	return 0;
}
