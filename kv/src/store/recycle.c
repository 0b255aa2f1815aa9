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
	rc->unverified_cap = KV_RC_VERIFY;
	rc->unverified = malloc(rc->unverified_cap * sizeof(*rc->unverified));
	if (rc->live == NULL || rc->head == NULL || rc->next == NULL || rc->hz == NULL ||
		rc->unverified == NULL) {
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
	free(rc->unverified);
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
		rc->retired_units += b->units;
		live_del(rc, i); /* live[i] is now the next candidate */
	}
}

void
kv__rc_sweep(struct kv_recycle *rc)
{
	for (size_t seen = 0; seen < rc->live_cap && rc->unverified_n < KV_RC_VERIFY; seen++) {
		const struct kv_rc_buf *b = &rc->live[rc->sweep];

		rc->sweep = (rc->sweep + 1) & (rc->live_cap - 1);
		if (b->loc != 0)
			rc->unverified[rc->unverified_n++] = *b;
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
 * One round to f+1 members or more: with @hazards, every client's hazard
 * words, the non-zero ones of each member's KV_ST_HZ * C words into rc->hz
 * (a hazard on any of them counts), their number into *@nhz; and the
 * metadata words of the objects of the last @nv unverified buffers, read
 * and persisted, *@above[k] counting the members that hold a word above
 * buffer k. Return: 0; KV_E_UNAVAILABLE.
 */
static int
reclaim_round(struct kv_client *c, bool hazards, size_t nv, unsigned *above, size_t *nhz)
{
	struct kv_recycle *rc = &c->rc;
	const struct kv_rc_buf *v = rc->unverified + rc->unverified_n - nv;
	uint32_t hlen = hazards ? 8u * KV_ST_HZ * c->C : 0, mlen = 8u * c->C;
	unsigned got = 0;

	*nhz = 0;
	memset(above, 0, nv * sizeof(*above));
	for (;;) {
		unsigned mask = kv__ix_round_begin(&c->g) & ~got, ok;
		int ret;

		for (unsigned i = 0; i < c->g.n; i++) {
			struct kv_ix_member *m = &c->g.m[i];
			int r = 0;

			if (!(mask >> i & 1))
				continue;
			if (hazards)
				r |= rdma_batch_read(&m->batch, c->region, c->sb.hz_off, m->buf, hlen);
			for (size_t k = 0; k < nv; k++) {
				uint64_t off = (v[k].loc >> 4) * KV_ST_UNIT;

				r |= rdma_batch_read(&m->batch, c->region, off, m->buf + hlen + k * mlen,
					mlen);
				r |= rdma_batch_persist(&m->batch, c->region, off, mlen);
			}
			if (r != 0)
				mask &= ~(1u << i);
		}
		ok = kv__ix_round_run(&c->g, mask, c->g.f + 1 - (unsigned)__builtin_popcount(got),
			c->deadline);
		c->st.rounds++;
		for (unsigned i = 0; i < c->g.n; i++) {
			const unsigned char *buf = c->g.m[i].buf;

			if (!(ok >> i & 1))
				continue;
			/* Only the words in use: hazard_names() scans them for
			 * every retired buffer (all of them, zeros included,
			 * were most of an update's instructions). */
			for (uint32_t w = 0; w < hlen / 8; w++) {
				uint64_t hz;

				memcpy(&hz, buf + 8u * w, 8);
				if (hz != 0)
					rc->hz[(*nhz)++] = hz;
			}
			for (size_t k = 0; k < nv; k++) {
				const uint64_t *meta = (const uint64_t *)(buf + hlen + k * mlen);

				for (unsigned w = 0; w < c->C; w++) {
					if (kv_st_order(meta[w], w) > v[k].ord) {
						above[k]++;
						break;
					}
				}
			}
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

bool
kv__st_log_pressed(const struct kv_client *c)
{
	uint64_t units = c->sb.log_bytes / KV_ST_BUF_UNIT;

	return c->log_used > c->sb.log_bytes / 2 && c->rc.free_units < units / 8;
}

int
kv__st_reclaim(struct kv_client *c, bool wait)
{
	struct kv_recycle *rc = &c->rc;
	unsigned above[KV_RC_VERIFY];
	size_t nhz, nv, kept = 0;
	bool settled;
	int ret;

	if (rc->unverified_n == 0 && kv__st_log_pressed(c))
		kv__rc_sweep(rc);

	if (rc->sealed == 0 && rc->retired_n > 0) {
		/* Seal what is retired now: it may be freed once the batches
		 * posted so far have settled. */
		kv__ix_posted(&c->g, &rc->posted);
		rc->sealed = rc->retired_n;
		if (!wait && rc->unverified_n == 0)
			return 0;
	}
	(void)kv__ix_round_begin(&c->g); /* drain what completed */
	settled = rc->sealed > 0 && kv__ix_settled(&c->g, NULL, &rc->posted);
	while (wait && rc->sealed > 0 && !settled) {
		if (kv__ix_now_ns() >= c->deadline)
			return pm_error_set(KV_E_UNAVAILABLE,
				"kv: client %u's log is full and its retired buffers are not settled",
				c->cid);
		kv__ix_sleep(&c->g, 50000);
		(void)kv__ix_round_begin(&c->g);
		settled = kv__ix_settled(&c->g, NULL, &rc->posted);
	}
	nv = rc->unverified_n < KV_RC_VERIFY ? rc->unverified_n : KV_RC_VERIFY;
	if (!settled && nv == 0)
		return 0;
	ret = reclaim_round(c, settled, nv, above, &nhz);
	if (ret != 0)
		return ret;
	/* Buffers found superseded (recovered, or swept): retired with the
	 * older ones of their objects, freed by a later reclaim. */
	for (size_t k = 0; k < nv; k++) {
		const struct kv_rc_buf *b = &rc->unverified[rc->unverified_n - nv + k];

		if (above[k] >= c->g.f + 1)
			kv__rc_superseded(rc, b->loc, b->ord + 1);
	}
	rc->unverified_n -= nv;
	if (!settled)
		return 0;
	c->st.reclaims++;
	for (size_t i = 0; i < rc->retired_n; i++) {
		struct kv_rc_buf *b = &rc->retired[i];

		if (i < rc->sealed && !hazard_names(rc->hz, nhz, kv_st_hz(c->cid, b->ptr))) {
			kv__rc_freed(rc, b->ptr, b->units);
			rc->retired_units -= b->units;
			c->st.recycled++;
			continue;
		}
		rc->retired[kept++] = *b; /* named, or retired after the seal */
	}
	rc->retired_n = kept;
	rc->kept_units = rc->retired_units;
	rc->kept_n = kept;
	kv__ix_posted(&c->g, &rc->posted);
	rc->sealed = kept;
	return 0;
}

/* A buffer found by kv__st_log_recover() and its write's timestamp. */
struct rc_found {
	struct kv_rc_buf b;
	uint64_t ts;
};

static int
found_newest_first(const void *x, const void *y)
{
	const struct rc_found *a = x, *b = y;

	return a->ts < b->ts ? 1 : a->ts > b->ts ? -1 : 0;
}

/*
 * Walk member @i's copy of this client's log up to @nunits units and add
 * every intact copy of one of the client's writes to @f (*@nf entries,
 * room for @cap; fewer found is no error: a copy on another member will
 * do). Return: 0; -EAGAIN if the member could not be read; -ENOMEM.
 */
static int
recover_walk(struct kv_client *c, unsigned i, uint32_t nunits, struct rc_found **f,
	size_t *nf, size_t *cap)
{
	uint32_t win = (uint32_t)(c->g.scratch < RDMA_BATCH_MAX_BYTES ? c->g.scratch :
		RDMA_BATCH_MAX_BYTES) & ~(KV_ST_BUF_UNIT - 1);
	struct kv_ix_member *m = &c->g.m[i];

	/* The window holds the largest copy (header and KV_VALUE_MAX), so a
	 * copy that starts in it but does not fit is read again from its
	 * start by the next window. */
	for (uint32_t u0 = 0; u0 < nunits;) {
		uint32_t len = (nunits - u0) * KV_ST_BUF_UNIT < win ?
			(nunits - u0) * KV_ST_BUF_UNIT : win;
		bool last = u0 + len / KV_ST_BUF_UNIT == nunits;
		uint32_t stop = u0 + len / KV_ST_BUF_UNIT;
		uint32_t u = u0;
		unsigned mask = kv__ix_round_begin(&c->g);

		if (!(mask >> i & 1) ||
			rdma_batch_read(&m->batch, c->region, kv__st_log_off(c, c->cid, u0), m->buf,
				len) != 0 ||
			kv__ix_round_run(&c->g, 1u << i, 1, c->deadline) != 1u << i)
			return -EAGAIN;
		c->st.rounds++;
		while (u < stop) {
			const unsigned char *at = m->buf + (size_t)(u - u0) * KV_ST_BUF_UNIT;
			struct kv_st_vhdr h;
			uint32_t units;

			memcpy(&h, at, sizeof(h));
			units = (uint32_t)((sizeof(h) + h.vlen + KV_ST_BUF_UNIT - 1) / KV_ST_BUF_UNIT);
			if (h.writer == c->cid && h.vlen <= KV_VALUE_MAX && !last && u > u0 &&
				(u - u0 + units) * KV_ST_BUF_UNIT > len)
				break; /* read it whole in the next window */
			if (h.writer != c->cid || h.vlen > KV_VALUE_MAX || h.meta == 0 ||
				kv_st_is_tomb(h.meta) || (u - u0 + units) * KV_ST_BUF_UNIT > len ||
				!kv__sw_vhdr_ok(&h, at + sizeof(h), h.meta, c->cid, h.loc)) {
				u++;
				continue;
			}
			if (*nf == *cap) {
				size_t ncap = *cap ? 2 * *cap : 1024;
				struct rc_found *g = realloc(*f, ncap * sizeof(*g));

				if (g == NULL)
					return -ENOMEM;
				*f = g;
				*cap = ncap;
			}
			(*f)[(*nf)++] = (struct rc_found){
				{ h.loc, kv_st_order(h.meta | KV_ST_VERIFIED, c->cid), u, units },
				kv_st_ts(h.meta) };
			u += units;
		}
		u0 = u;
	}
	return 0;
}

void
kv__st_log_recover(struct kv_client *c)
{
	struct kv_recycle *rc = &c->rc;
	/* The earlier lives' part only: what this life allocated above the
	 * mark (before a deferred recovery) is in its table already. */
	uint32_t nunits = (uint32_t)(c->log_mark_open / KV_ST_BUF_UNIT);
	struct rc_found *f = NULL;
	size_t nf = 0, cap = 0, kept = 0;
	uint8_t *taken = NULL;
	int ret = 0;

	if (nunits == 0)
		return;
	/* Every member: a copy on any one of them may be the value a reader
	 * will return (a write that reached one node), so a member not read
	 * leaves the earlier life's log as it is. */
	for (unsigned i = 0; i < c->g.n && ret == 0; i++)
		ret = recover_walk(c, i, nunits, &f, &nf, &cap);
	if (ret == 0)
		taken = calloc(nunits, 1);
	if (ret != 0 || taken == NULL) {
		free(f);
		return;
	}
	/* This life's timestamps go above the earlier ones' (whose clock may
	 * have run ahead, resynchronised), so that the rule below holds for
	 * the next life's recovery too. */
	for (size_t k = 0; k < nf; k++)
		if (f[k].ts > c->last_ts)
			c->last_ts = f[k].ts;
	/* A unit is one buffer's: where copies of different writes overlap,
	 * the newest is the one allocated last (a client's timestamps rise,
	 * across its lives too: above), so the older ones were superseded
	 * before their units were reused. */
	qsort(f, nf, sizeof(*f), found_newest_first);
	for (size_t k = 0; k < nf; k++) {
		const struct kv_rc_buf *b = &f[k].b;
		bool free_run = true;

		for (uint32_t u = b->ptr; u < b->ptr + b->units; u++)
			free_run &= !taken[u];
		if (!free_run)
			continue;
		memset(taken + b->ptr, 1, b->units);
		f[kept++] = f[k];
	}
	/* Each stays live until superseded; whether it was already, while
	 * the client was away, reclaims find out a few at a time (the
	 * unverified list), so opening costs only the walk. */
	if (kept > rc->unverified_cap) {
		struct kv_rc_buf *u = realloc(rc->unverified, kept * sizeof(*u));

		if (u == NULL) {
			ret = -ENOMEM;
		} else {
			rc->unverified = u;
			rc->unverified_cap = kept;
		}
	}
	for (size_t k = 0; k < kept && ret == 0; k++) {
		const struct kv_rc_buf *b = &f[k].b;

		ret = kv__rc_reserve(rc, b->loc);
		if (ret == 0) {
			kv__rc_hold(rc, b->loc, b->ord, b->ptr, b->units);
			rc->unverified[rc->unverified_n++] = *b;
		}
	}
	free(f);
	/* The rest is retired: it is reused once the earlier life's batches
	 * have settled and no reader's hazard names it (recycle.h). */
	for (uint32_t u = 0; u < nunits && ret == 0;) {
		uint32_t n = 0;

		while (u + n < nunits && !taken[u + n] && n < rc->ncls - 1)
			n++;
		if (n == 0) {
			u++;
			continue;
		}
		if (rc->retired_n == rc->retired_cap) {
			size_t ncap = rc->retired_cap ? 2 * rc->retired_cap : 256;
			struct kv_rc_buf *r = realloc(rc->retired, ncap * sizeof(*r));

			if (r == NULL) {
				ret = -ENOMEM;
				break;
			}
			rc->retired = r;
			rc->retired_cap = ncap;
		}
		rc->retired[rc->retired_n++] = (struct kv_rc_buf){ 0, 0, u, n };
		rc->retired_units += n;
		u += n;
	}
	free(taken);
	/* Room to retire every recovered buffer without allocating. */
	if (ret == 0 && rc->retired_cap < rc->retired_n + rc->live_n) {
		struct kv_rc_buf *r = realloc(rc->retired,
			(rc->retired_n + rc->live_n) * sizeof(*r));

		if (r == NULL) {
			ret = -ENOMEM;
		} else {
			rc->retired = r;
			rc->retired_cap = rc->retired_n + rc->live_n;
		}
	}
	c->st.recovered = rc->live_n;
	/* Sealed now: the first operation that ends frees them. An error
	 * leaves a part of the earlier log unused, never a unit in use
	 * retired (the retiring comes after every copy is held). */
	if (ret == 0)
		(void)kv__st_reclaim(c, false);
}
