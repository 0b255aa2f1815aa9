/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/swarm.c -- one key's value as a SWARM register over the 2f+1
 * nodes of the group, made durable (store_internal.h).
 *
 * The listings are those reconstructed in the team's digest of seed 000
 * (SWARM, notes/swarm.md); labels S*, R*, T*, I*, M* and "App. A" are its
 * line labels. Per object and node there is one metadata word per writer
 * (the contention-relief array of sect. 4.4 with one word per client, as the
 * paper recommends in sect. 7.9) and one timestamp-lock word per writer.
 * A reliable max register (App. A) is the array on every node: its value on
 * a node is the largest word of the array in the order kv_st_order().
 *
 * Durability (kv/DESIGN.md, "Store: durability"): every batch that changes
 * a word persists it before the batch completes, and every batch that reads
 * words a client will count persists the range it read after reading it.
 * Words only grow, so persisting after the read makes durable a value at
 * least as large as the one read; a node that counted towards a majority
 * never goes back below it when it restarts from its pool.
 */
#include <errno.h>
#include <string.h>

/* XXH3_state_t (streaming hash of header and value) */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <pm/error.h>

#include "kv/src/store/store_internal.h"

/* What one round of reads or installs saw on each member. */
struct sw_view {
	unsigned ok;                               /* members that answered */
	uint64_t meta[KV_MAX_NODES][KV_MAX_CLIENTS]; /* their metadata arrays */
	uint64_t top;                              /* the largest word seen ... */
	unsigned top_w;                            /* ... and its writer */
	int ip_member;                             /* member whose in-place copy is in its buf, or -1 */
};

static unsigned
sw_primary(const struct kv_client *c, const struct kv_st_geo *geo)
{
	return (unsigned)((geo->loc >> 4) % c->g.n);
}

/* Post the batches of @mask and wait for all of them (or the deadline):
 * one round trip. Return: the members that answered. */
static unsigned
sw_run(struct kv_client *c, unsigned mask)
{
	c->st.rounds++;
	return kv__ix_round_run(&c->g, mask, (unsigned)__builtin_popcount(mask), c->deadline);
}

/* The members a round goes to: first the majority starting at the
 * object's primary (SWARM-KV sect. 6, departure 1), widened to every usable
 * member when one of them cannot be used. */
static unsigned
sw_targets(struct kv_client *c, const struct kv_st_geo *geo, unsigned usable, bool widen)
{
	unsigned p = sw_primary(c, geo), set = 0;

	if (widen)
		return usable;
	for (unsigned k = 0; k <= c->g.f; k++)
		set |= 1u << ((p + k) % c->g.n);
	if ((set & usable) != set) {
		c->st.fallbacks++;
		return usable;
	}
	return set;
}

void
kv__sw_vhdr(struct kv_st_vhdr *h, uint64_t meta, unsigned writer, uint64_t loc,
	const void *val, uint32_t vlen)
{
	XXH3_state_t st;
	XXH128_hash_t d;

	h->meta = meta & ~KV_ST_VERIFIED;
	h->loc = loc;
	h->writer = writer;
	h->vlen = vlen;
	XXH3_128bits_reset(&st);
	XXH3_128bits_update(&st, h, offsetof(struct kv_st_vhdr, hash));
	XXH3_128bits_update(&st, val, vlen);
	d = XXH3_128bits_digest(&st);
	h->hash[0] = d.low64;
	h->hash[1] = d.high64;
}

bool
kv__sw_vhdr_ok(const struct kv_st_vhdr *h, const void *val, uint64_t meta, unsigned writer,
	uint64_t loc)
{
	struct kv_st_vhdr want;

	if (h->meta != (meta & ~KV_ST_VERIFIED) || h->writer != writer || h->loc != loc ||
		h->vlen > KV_VALUE_MAX)
		return false;
	kv__sw_vhdr(&want, meta, writer, loc, val, h->vlen);
	return want.hash[0] == h->hash[0] && want.hash[1] == h->hash[1];
}

static uint64_t
sw_meta_off(const struct kv_st_geo *geo, unsigned w)
{
	return geo->off + 8u * w;
}

static uint64_t
sw_tsl_off(const struct kv_st_geo *geo, unsigned w)
{
	return geo->off + geo->tsl_off + 8u * w;
}

/*
 * Make @v empty: no member answered, no top. Its arrays are left as they
 * are: a member's row is read only once its bit is in @v->ok (zeroing all
 * of them, 7 KiB, was a tenth of a local read's instructions and most of
 * L1 each time).
 */
static void
sw_view_reset(struct sw_view *v)
{
	v->ok = 0;
	v->top = 0;
	v->top_w = 0;
	v->ip_member = -1;
}

/* Record member @i's metadata array (at @src) in @v and raise its top. */
static void
sw_view_take(struct kv_client *c, struct sw_view *v, unsigned i, const unsigned char *src)
{
	memcpy(v->meta[i], src, 8u * c->C);
	v->ok |= 1u << i;
	for (unsigned w = 0; w < c->C; w++) {
		uint64_t o = kv_st_order(v->meta[i][w], w);

		if (o > kv_st_order(v->top, v->top_w)) {
			v->top = v->meta[i][w];
			v->top_w = w;
		}
	}
}

/* The members of @v whose slot @w holds @meta or more. */
static unsigned
sw_holders(const struct kv_client *c, const struct sw_view *v, unsigned w, uint64_t meta)
{
	unsigned h = 0;

	for (unsigned i = 0; i < c->g.n; i++)
		if ((v->ok >> i & 1) && v->meta[i][w] >= (meta & ~KV_ST_VERIFIED))
			h |= 1u << i;
	return h;
}

static unsigned
popcount(unsigned x)
{
	return (unsigned)__builtin_popcount(x);
}

/*
 * M.READ's read phase (App. A "read-for-start" .. "cache-max"): read every
 * target member's metadata array, persisted after the read, until f+1
 * answered; the primary's read also covers the key and the in-place copy
 * (I12). Fills @v.
 */
static int
sw_read_round(struct kv_client *c, const struct kv_st_geo *geo, struct sw_view *v)
{
	unsigned p = sw_primary(c, geo);
	bool widen = false;

	sw_view_reset(v);
	for (;;) {
		unsigned mask = sw_targets(c, geo, kv__ix_round_begin(&c->g), widen) & ~v->ok, ok;
		int ret;

		for (unsigned i = 0; i < c->g.n; i++) {
			struct kv_ix_member *m = &c->g.m[i];
			uint32_t len = i == p ? geo->tsl_off : 8u * c->C;

			if ((mask >> i & 1) &&
				(rdma_batch_read(&m->batch, c->region, geo->off, m->buf, len) != 0 ||
					rdma_batch_persist(&m->batch, c->region, geo->off, 8u * c->C) != 0))
				mask &= ~(1u << i);
		}
		ok = sw_run(c, mask);
		for (unsigned i = 0; i < c->g.n; i++) {
			if (!(ok >> i & 1))
				continue;
			sw_view_take(c, v, i, c->g.m[i].buf);
			if (i == p)
				v->ip_member = (int)i;
		}
		if (popcount(v->ok) >= c->g.f + 1)
			return 0;
		widen = true;
		ret = kv__st_retry(c, ok == 0);
		if (ret != 0)
			return ret;
	}
}

/*
 * Add to @b the claim of the first delete word (layout.h) for @del, its old
 * value into *@old, persisted before the slot CAS that follows it: a
 * durable tombstone in a slot implies a durable first delete word, even
 * when a node crashes mid-batch.
 */
static int
sw_del_claim(struct kv_client *c, const struct kv_st_geo *geo, struct rdma_batch *b,
	uint64_t del, uint64_t *old)
{
	uint64_t off = geo->off + geo->del_off;

	return rdma_batch_cas(b, c->region, off, 0, del, old) |
		rdma_batch_persist(b, c->region, off, 8);
}

/*
 * Install @word in slot @w on f+1 members (M.WRITE / inner_write, App. A,
 * with MAX by CAS, M1-M7): one ordered batch per member writes the value
 * copy @h + @val at writer @w's buffer (when @h is not NULL; In-n-Out I5),
 * persists it, CASes the slot from the expected value (@e->mine for this
 * client's own slot, the value @v read for another's; I6), persists it, and
 * with @read also reads and persists the whole array into @v (S6: the read
 * runs in the same batch as the write). A CAS that meets a smaller word
 * retries from it (M7); one that meets a word at least as large counts.
 * @v->ok on entry: members already known to hold @word are skipped.
 */
static int
sw_install(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	unsigned w, uint64_t word, const struct kv_st_vhdr *h, const void *val, bool read,
	struct sw_view *v, unsigned known)
{
	uint64_t exp[KV_MAX_NODES];
	uint32_t blen = h != NULL ? (uint32_t)(sizeof(*h) + h->vlen) : 0;
	uint64_t boff = h != NULL ? kv__st_log_off(c, w, kv_st_ptr(word)) : 0;
	unsigned held = known;
	bool widen = false;

	for (unsigned i = 0; i < c->g.n; i++)
		exp[i] = w == c->cid ? e->mine[i] : ((v->ok >> i & 1) ? v->meta[i][w] : 0);
	if (read)
		sw_view_reset(v);
	for (;;) {
		unsigned mask = sw_targets(c, geo, kv__ix_round_begin(&c->g), widen) & ~held, ok;
		uint32_t moff = (blen + 63u) & ~63u;
		int ret;

		for (unsigned i = 0; i < c->g.n; i++) {
			struct kv_ix_member *m = &c->g.m[i];
			struct rdma_batch *b = &m->batch;
			int r = 0;

			if (!(mask >> i & 1))
				continue;
			if (h != NULL) {
				memcpy(m->buf, h, sizeof(*h));
				memcpy(m->buf + sizeof(*h), val, h->vlen);
				r |= rdma_batch_write(b, c->region, boff, m->buf, blen);
				r |= rdma_batch_persist(b, c->region, boff, blen);
			}
			/* A tombstone written back claims the first delete
			 * word for its delete where no tombstone came first,
			 * as the delete's own batch does (sw_del_claim). */
			if (kv_st_is_tomb(word))
				r |= sw_del_claim(c, geo, b, kv_st_del(word, w), &m->old[1]);
			r |= rdma_batch_cas(b, c->region, sw_meta_off(geo, w), exp[i], word, &m->old[0]);
			/* With @read, the persist of the array after the read
			 * covers the slot too, and nothing is counted before the
			 * batch completes. */
			if (read) {
				r |= rdma_batch_read(b, c->region, geo->off, m->buf + moff, 8u * c->C);
				r |= rdma_batch_persist(b, c->region, geo->off, 8u * c->C);
			} else {
				r |= rdma_batch_persist(b, c->region, sw_meta_off(geo, w), 8);
			}
			if (r != 0)
				mask &= ~(1u << i);
		}
		ok = sw_run(c, mask);
		for (unsigned i = 0; i < c->g.n; i++) {
			uint64_t old = c->g.m[i].old[0];

			if (!(ok >> i & 1))
				continue;
			if (old == exp[i] || old >= word) {
				held |= 1u << i;
				exp[i] = old == exp[i] ? word : old;
			} else {
				exp[i] = old; /* M7: retry from the larger word */
			}
			/* The latest read of a member: after a retried CAS it
			 * shows the word, so the VERIFY reaches that member too
			 * (words only grow, so the top only rises). */
			if (read)
				sw_view_take(c, v, i, c->g.m[i].buf + moff);
		}
		if (w == c->cid)
			for (unsigned i = 0; i < c->g.n; i++)
				e->mine[i] = exp[i];
		if (popcount(held) >= c->g.f + 1)
			return 0;
		widen = true;
		ret = kv__st_retry(c, ok == 0);
		if (ret != 0)
			return ret;
	}
}

/* Post "CAS slot @w from @from to @to" to every member of @mask in the
 * background, and with @h the in-place copy (@h, @val) to the primary
 * (I7: the in-place copy is written lazily, once VERIFIED; SWARM-KV sect. 6
 * departure 2). The members stay busy until a later round drains them. */
static void
sw_verify_post(struct kv_client *c, const struct kv_st_geo *geo, unsigned w, uint64_t from,
	uint64_t to, unsigned mask, const struct kv_st_vhdr *h, const void *val)
{
	unsigned p = sw_primary(c, geo);
	unsigned usable = kv__ix_round_begin(&c->g);

	mask &= usable;
	for (unsigned i = 0; i < c->g.n; i++) {
		struct kv_ix_member *m = &c->g.m[i];

		if (!(mask >> i & 1))
			continue;
		if (rdma_batch_cas(&m->batch, c->region, sw_meta_off(geo, w), from, to,
			&m->old[0]) != 0) {
			mask &= ~(1u << i);
			continue;
		}
		if (i == p && h != NULL && h->vlen <= geo->ip_cap) {
			uint32_t len = (uint32_t)(sizeof(*h) + h->vlen);

			memcpy(m->buf, h, sizeof(*h));
			memcpy(m->buf + sizeof(*h), val, h->vlen);
			(void)rdma_batch_write(&m->batch, c->region, geo->off + geo->ip_off, m->buf, len);
		}
	}
	kv__ix_round_post(&c->g, mask);
}

/*
 * The value of tuple @meta by writer @w into @out: from the in-place copy
 * the view holds if it is intact and belongs to that write (I13-I14), else
 * from the write's out-of-place buffer on a member that holds it (I15).
 * Return: 0; -ESTALE if the buffer holds a later write of @w (reused);
 * KV_E_UNAVAILABLE.
 */
static int
sw_fetch(struct kv_client *c, const struct kv_st_geo *geo, const struct sw_view *v,
	uint64_t meta, unsigned w, struct kv_st_val *out)
{
	uint64_t off = kv__st_log_off(c, w, kv_st_ptr(meta));
	uint64_t end = c->sb.log_off + (uint64_t)c->C * c->sb.log_bytes;
	uint32_t want = (uint32_t)sizeof(struct kv_st_vhdr) + 4096u;
	unsigned tried = 0;

	out->meta = meta;
	out->writer = w;
	if (v->ip_member >= 0 && geo->ip_cap > 0) {
		const unsigned char *ip = c->g.m[v->ip_member].buf + geo->ip_off;
		struct kv_st_vhdr h;

		memcpy(&h, ip, sizeof(h));
		if (h.vlen <= geo->ip_cap && kv__sw_vhdr_ok(&h, ip + sizeof(h), meta, w, geo->loc)) {
			out->vlen = h.vlen;
			memcpy(out->buf, ip + sizeof(h), h.vlen < out->cap ? h.vlen : out->cap);
			return 0;
		}
	}
	c->st.oop_reads++;
	for (;;) {
		unsigned hold = sw_holders(c, v, w, meta), usable = kv__ix_round_begin(&c->g), ok;
		unsigned mask = hold & usable & ~tried;
		int ret;

		if (mask == 0)
			mask = usable & ~tried;
		if (mask == 0) {
			tried = 0;
			mask = usable;
		}
		if (off + want > end)
			want = (uint32_t)(end - off);
		/* One member is enough: the buffer is immutable once published. */
		mask &= ~(mask - 1);
		tried |= mask;
		if (mask != 0) {
			unsigned i = (unsigned)__builtin_ctz(mask);
			struct kv_ix_member *m = &c->g.m[i];

			if (rdma_batch_read(&m->batch, c->region, off, m->buf, want) != 0)
				mask = 0;
		}
		ok = sw_run(c, mask);
		if (ok != 0) {
			struct kv_ix_member *m = &c->g.m[__builtin_ctz(ok)];
			struct kv_st_vhdr h;

			memcpy(&h, m->buf, sizeof(h));
			if (h.meta == (meta & ~KV_ST_VERIFIED) && h.vlen <= KV_VALUE_MAX &&
				sizeof(h) + h.vlen > want) {
				/* A long value: read the rest. */
				want = (uint32_t)sizeof(h) + h.vlen;
				continue;
			}
			if (kv__sw_vhdr_ok(&h, m->buf + sizeof(h), meta, w, geo->loc)) {
				out->vlen = h.vlen;
				memcpy(out->buf, m->buf + sizeof(h), h.vlen < out->cap ? h.vlen : out->cap);
				return 0;
			}
			/* A later write of the same writer, even a torn copy
			 * of it: the buffer was reused, so the tuple was
			 * superseded on f+1 members (recycle.h). The caller
			 * reads the metadata again. */
			if (h.writer == w && kv_st_ts(h.meta) > kv_st_ts(meta) &&
				!kv_st_is_tomb(h.meta)) {
				c->st.stale_fetches++;
				return -ESTALE;
			}
			/* Not there (a member that lacks the write): try
			 * another. */
		}
		ret = kv__st_retry(c, ok == 0);
		if (ret != 0)
			return ret;
	}
}

/* The hazard word of this client's slot @s on every node. */
static uint64_t
sw_hz_off(const struct kv_client *c, unsigned s)
{
	return c->sb.hz_off + 8u * ((uint64_t)c->cid * KV_ST_HZ + s);
}

/*
 * Publish the hazard word naming writer @w's buffer @ptr on f+1 members
 * (persisted) in a free slot of this client, into *@slot. A slot is free
 * once every batch of the write-back that used it has settled
 * (kv__ix_settled): one still in flight could land in a buffer the hazard
 * no longer protects. Return: 0; KV_E_UNAVAILABLE.
 */
static int
sw_hz_publish(struct kv_client *c, unsigned w, uint64_t ptr, unsigned *slot)
{
	*slot = KV_ST_HZ; /* none yet */
	for (;;) {
		(void)kv__ix_round_begin(&c->g); /* drain what completed */
		for (unsigned s = 0; s < KV_ST_HZ; s++) {
			if ((c->hz[s] != 0 &&
				!kv__ix_settled(&c->g, &c->hz_from[s], &c->hz_to[s])) ||
				kv__ix_now_ns() < c->hz_free_at[s])
				continue;
			/* Only this write-back's own batches matter to it. */
			kv__ix_posted(&c->g, &c->hz_from[s]);
			/* A sequence number in the high half, so that the
			 * clear of an earlier use (a CAS from that word) can
			 * never erase this one. */
			c->hz[s] = ++c->hz_seq << 32 | kv_st_hz(w, ptr);
			*slot = s;
			c->st.rounds++;
			return kv__ix_word_store(&c->g, c->region, sw_hz_off(c, s), c->hz[s],
				c->deadline);
		}
		if (kv__ix_now_ns() >= c->deadline)
			return pm_error_set(KV_E_UNAVAILABLE,
				"kv: write-backs of client %u still in flight", c->cid);
		kv__ix_sleep(&c->g, 50000);
	}
}

/*
 * The write-back that used hazard slot @s (KV_ST_HZ: none) is over: once
 * every batch it posted has settled, clear the word (a CAS from it, in the
 * background), else leave it until the slot is taken again.
 */
static void
sw_hz_release(struct kv_client *c, unsigned s)
{
	unsigned mask;

	if (s >= KV_ST_HZ)
		return;
	kv__ix_posted(&c->g, &c->hz_to[s]);
	mask = kv__ix_round_begin(&c->g);
	if (!kv__ix_settled(&c->g, &c->hz_from[s], &c->hz_to[s]))
		return;
	for (unsigned i = 0; i < c->g.n; i++)
		if ((mask >> i & 1) && rdma_batch_cas(&c->g.m[i].batch, c->region,
			sw_hz_off(c, s), c->hz[s], 0, &c->g.m[i].old[0]) != 0)
			mask &= ~(1u << i);
	kv__ix_round_post(&c->g, mask);
	c->hz[s] = 0;
}

/*
 * inner_write(v) of a read (App. A "invoke-inner-write"): if fewer than f+1
 * answered members hold the top word @v->top, copy it -- value and word --
 * into its writer's slot and buffer on the others (SWARM-KV's write-back
 * into the original writer's slot, digest sect. 4), until f+1 hold it.
 *
 * The copy is an unconditional WRITE into a buffer that its owner reuses
 * once the word is superseded on f+1 members (recycle.h); landing late, it
 * would overwrite a newer value on a member that counts for it. So the
 * reader first publishes a hazard naming the buffer on f+1 members, then
 * reads the metadata again: if the word is still the largest, no write
 * above it had completed when the hazard was up, so its owner, who reads
 * the hazard words only after such a write completed, sees the hazard and
 * keeps the buffer; if a larger word shows, the reader takes the new view
 * and starts over (Spin, kv/spin/m9.pml). The hazard comes down only once
 * the write-back's batches have settled (sw_hz_release; m9's
 * MUT_NOWBDRAIN). On return 0, @v is the view the write-back ended with
 * and its top is on f+1 members.
 */
static int
sw_write_back(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	struct sw_view *v)
{
	struct kv_st_val val = { .buf = c->val, .cap = KV_VALUE_MAX };
	struct kv_st_vhdr h;
	int ret;

	for (;;) {
		unsigned w = v->top_w, slot;
		uint64_t top = v->top;
		struct sw_view now;

		if (top == 0 || popcount(sw_holders(c, v, w, top)) >= c->g.f + 1)
			return 0;
		c->st.write_backs++;
		if (kv_st_is_tomb(top)) {
			/* A CAS only: nothing unconditional to protect. */
			return sw_install(c, geo, e, w, top, NULL, NULL, false, v,
				sw_holders(c, v, w, top));
		}
#ifdef KV_ST_TESTING
		if (c->test_wb_unsafe) {
			slot = KV_ST_HZ;
			now = *v;
			goto copy;
		}
#endif
		ret = sw_hz_publish(c, w, kv_st_ptr(top), &slot);
		if (ret == 0)
			ret = sw_read_round(c, geo, &now);
		if (ret != 0) {
			sw_hz_release(c, slot);
			return ret;
		}
		if (kv_st_order(now.top, now.top_w) >> 1 > kv_st_order(top, w) >> 1) {
			/* Superseded meanwhile: write back the new top. */
			c->st.write_back_restarts++;
			sw_hz_release(c, slot);
			*v = now;
			continue;
		}
		/* Still the largest (or both members read lack it: no write
		 * above it completed before the hazard was up): copy it to
		 * the members of the fresh view that lack it. */
		if (kv_st_order(now.top, now.top_w) < kv_st_order(top, w)) {
			now.top = top;
			now.top_w = w;
		}
#ifdef KV_ST_TESTING
copy:
#endif
		*v = now;
		top = v->top;
		if (popcount(sw_holders(c, v, w, top)) >= c->g.f + 1) {
			sw_hz_release(c, slot);
			return 0;
		}
		ret = sw_fetch(c, geo, v, top, w, &val);
#ifdef KV_ST_TESTING
		if (ret == 0 && c->test_wb_hook != NULL)
			c->test_wb_hook(c->test_wb_arg);
#endif
		if (ret == 0) {
			kv__sw_vhdr(&h, top, w, geo->loc, val.buf, (uint32_t)val.vlen);
			ret = sw_install(c, geo, e, w, top, &h, val.buf, false, v,
				sw_holders(c, v, w, top));
		}
		sw_hz_release(c, slot);
		if (ret != -ESTALE)
			return ret;
		c->st.write_back_restarts++;
		ret = kv__st_retry(c, false);
		if (ret == 0)
			ret = sw_read_round(c, geo, v);
		if (ret != 0)
			return ret;
	}
}

/*
 * TRYLOCK(ts, mode) on writer @w's timestamp lock (T3-T12): per member,
 * CAS the lock word up to (ts, mode) while it holds bottom or a smaller ts
 * (T6-T8), each CAS persisted in its batch, until f+1 members left their
 * loops (T9); fail if any member showed a larger ts (T10) or this ts in
 * the other mode (T11).
 */
static int
sw_trylock(struct kv_client *c, const struct kv_st_geo *geo, unsigned w, uint64_t ts,
	uint64_t mode, bool *locked)
{
	uint64_t want = ts << 1 | mode, seen[KV_MAX_NODES] = { 0 };
	unsigned done = 0;

	c->st.lock_calls++;
	while (popcount(done) < c->g.f + 1) {
		unsigned mask = kv__ix_round_begin(&c->g) & ~done, ok;
		int ret;

		for (unsigned i = 0; i < c->g.n; i++)
			if ((mask >> i & 1) &&
				(rdma_batch_cas(&c->g.m[i].batch, c->region, sw_tsl_off(geo, w), seen[i],
					want, &c->g.m[i].old[0]) != 0 ||
					rdma_batch_persist(&c->g.m[i].batch, c->region, sw_tsl_off(geo, w),
						8) != 0))
				mask &= ~(1u << i);
		ok = sw_run(c, mask);
		for (unsigned i = 0; i < c->g.n; i++) {
			uint64_t old = c->g.m[i].old[0];

			if (!(ok >> i & 1))
				continue;
			seen[i] = old == seen[i] ? want : old;
			/* T6: the loop ends once the word holds ts or more. */
			if ((seen[i] >> 1) >= ts)
				done |= 1u << i;
		}
		if (popcount(done) >= c->g.f + 1)
			break;
		ret = kv__st_retry(c, ok == 0);
		if (ret != 0)
			return ret;
	}
	*locked = true;
	for (unsigned i = 0; i < c->g.n; i++) {
		if ((seen[i] >> 1) > ts)
			*locked = false;                  /* T10 */
		if ((seen[i] >> 1) == ts && seen[i] != want)
			*locked = false;                  /* T11 */
	}
	return 0;
}

/*
 * DM-ABD, the baseline of SWARM's evaluation (sect. 7): ABD with
 * out-of-place values over the same majority and the same words, written
 * VERIFIED only (no guess, no lock). A write reads the metadata of a
 * majority for a timestamp above every completed write (1 round trip),
 * then installs its buffer and word (1); a read reads the metadata (1),
 * writes the largest word back if fewer than f+1 hold it, and reads the
 * value through the pointer (1): there is no in-place copy.
 */
static int
abd_write(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	const void *val, uint32_t vlen, enum kv_sw_result *res)
{
	uint32_t blen = ((uint32_t)sizeof(struct kv_st_vhdr) + vlen + KV_ST_BUF_UNIT - 1) &
		~(KV_ST_BUF_UNIT - 1);
	struct kv_st_vhdr h;
	struct sw_view v;
	uint64_t ptr, off, word, ts;
	int ret;

	ret = sw_read_round(c, geo, &v);
	if (ret != 0)
		return ret;
	*res = kv_st_is_tomb(v.top) ? KV_SW_DELETED : KV_SW_DONE;
	/* Deleted, or being deleted by a client that may have crashed: the
	 * tombstone goes to f+1 members first, so no later read returns a
	 * value this write reports deleted. */
	if (*res == KV_SW_DELETED) {
		ret = sw_write_back(c, geo, e, &v);
		if (ret == 0)
			kv__st_superseded(c, geo->loc, v.top, v.top_w);
		return ret;
	}
	ts = kv__st_ts_guess(c, kv_st_ts(v.top));
	ret = kv__st_log_alloc(c, geo->loc, ts, blen, &ptr, &off);
	if (ret != 0)
		return ret;
	word = kv_st_meta(ts, ptr, 1);
	kv__sw_vhdr(&h, word, c->cid, geo->loc, val, vlen);
	ret = sw_install(c, geo, e, c->cid, word, &h, val, false, &v, 0);
	if (ret == 0)
		kv__st_superseded(c, geo->loc, word, c->cid);
	return ret;
}

static int
abd_read(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	struct kv_st_val *out)
{
	struct sw_view v;
	int ret;

	do {
		ret = sw_read_round(c, geo, &v);
		if (ret == 0)
			ret = sw_write_back(c, geo, e, &v);
		if (ret != 0)
			return ret;
		out->meta = v.top;
		out->vlen = 0;
		v.ip_member = -1;
		if (v.top != 0 && !kv_st_is_tomb(v.top))
			ret = sw_fetch(c, geo, &v, v.top, v.top_w, out);
		/* superseded: read again, until the deadline */
	} while (ret == -ESTALE && (ret = kv__st_retry(c, false)) == 0);
	if (ret == 0)
		kv__st_superseded(c, geo->loc, v.top, v.top_w);
	return ret;
}

/*
 * RAW, the latency floor of SWARM's evaluation: one copy, the in-place one
 * on node 0, written and read with one batch and no concurrency control;
 * the copy's own header and hash detect a torn read, which is retried.
 * Two writes that overlap can interleave their bytes (local: the clients'
 * copies land byte by byte) into a copy no reader accepts, and readers
 * would retry until the next write, or their timeout if none comes
 * (kv_bench, two threads updating a hot key until both were reading it).
 * So a write reads the copy back in its own batch: whichever overlapping
 * write finishes last sees a torn copy and writes again.
 */

/* Offset in a member's scratch of a write's read-back: after the
 * written bytes (KV_ST_SCRATCH holds both). */
#define RAW_BACK_OFF (KV_ST_IP_MAX + 64u)
_Static_assert(RAW_BACK_OFF + sizeof(struct kv_st_vhdr) + KV_ST_IP_MAX <= KV_ST_SCRATCH,
	"a member's scratch holds a RAW write and its read-back");

static int
raw_round(struct kv_client *c, const struct kv_st_geo *geo, const struct kv_st_vhdr *h,
	const void *val)
{
	for (;;) {
		unsigned mask = kv__ix_round_begin(&c->g) & 1u, ok;
		struct kv_ix_member *m = &c->g.m[0];
		uint64_t off = geo->off + geo->ip_off;
		uint32_t len = (uint32_t)sizeof(*h) + (h != NULL ? h->vlen : geo->ip_cap);
		int ret;

		if (mask != 0) {
			int r = 0;

			if (h != NULL) {
				memcpy(m->buf, h, sizeof(*h));
				memcpy(m->buf + sizeof(*h), val, h->vlen);
				r |= rdma_batch_write(&m->batch, c->region, off, m->buf, len);
				r |= rdma_batch_persist(&m->batch, c->region, off, len);
				r |= rdma_batch_read(&m->batch, c->region, off, m->buf + RAW_BACK_OFF,
					len);
			} else {
				r |= rdma_batch_read(&m->batch, c->region, off, m->buf, len);
			}
			if (r != 0)
				mask = 0;
		}
		ok = sw_run(c, mask);
		if (ok != 0)
			return 0;
		ret = kv__st_retry(c, true);
		if (ret != 0)
			return ret;
	}
}

/* The copy RAW's round read into @p is whole: its header (into *@h) and
 * its hash agree. */
static bool
raw_whole(const struct kv_st_geo *geo, const unsigned char *p, struct kv_st_vhdr *h)
{
	memcpy(h, p, sizeof(*h));
	return h->vlen <= geo->ip_cap &&
		kv__sw_vhdr_ok(h, p + sizeof(*h), h->meta, h->writer, geo->loc);
}

static int
raw_write(struct kv_client *c, const struct kv_st_geo *geo, uint64_t word, const void *val,
	uint32_t vlen)
{
	struct kv_st_vhdr h, back;

	if (vlen > geo->ip_cap)
		return pm_error_set(-E2BIG, "kv: RAW keeps values in place: %u bytes, room for %u",
			vlen, geo->ip_cap);
	kv__sw_vhdr(&h, word, c->cid, geo->loc, val, vlen);
	for (;;) {
		int ret = raw_round(c, geo, &h, val);

		if (ret != 0 || raw_whole(geo, c->g.m[0].buf + RAW_BACK_OFF, &back))
			return ret;
		ret = kv__st_retry(c, false); /* torn by an overlapping write */
		if (ret != 0)
			return ret;
	}
}

static int
raw_read(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_val *out)
{
	for (;;) {
		const unsigned char *p = c->g.m[0].buf;
		struct kv_st_vhdr h;
		int ret = raw_round(c, geo, NULL, NULL);

		if (ret != 0)
			return ret;
		if (raw_whole(geo, p, &h)) {
			out->meta = h.meta | KV_ST_VERIFIED;
			out->writer = h.writer;
			out->vlen = h.vlen;
			memcpy(out->buf, p + sizeof(h), h.vlen < out->cap ? h.vlen : out->cap);
			return 0;
		}
		ret = kv__st_retry(c, false); /* torn by a concurrent write */
		if (ret != 0)
			return ret;
	}
}

/*
 * S6 of the write of GUESSED word (@ts) read a tombstone: the object is
 * deleted, or being deleted. The word is in this client's slot on f+1
 * members, and a reader whose majority missed the tombstone may have
 * taken it (R15-R18), so the write cannot simply report the delete. The
 * tombstone goes to f+1 members first (for a deleter that may be slow or
 * dead): from then on no reader sees the word. Then lock readers out of
 * @ts (S10's lock): if that succeeds no reader has taken the word or will:
 * KV_SW_DELETED. If a reader holds @ts in READ mode it took the word
 * while the delete was not complete: the write is ordered before the
 * delete (ts order) and took effect: KV_SW_DONE. (kv_test
 * ConcurrentClientsWithOneRoundFaultsAreLinearizable found an update
 * reporting -ENOENT whose value a get had returned.) The write-back comes
 * before the lock, as on the S9 path: locked first, a writer that died
 * with the tombstone on one member left readers whose majority missed it
 * unable to lock or pass its word for ever (Spin, kv/spin/m11.pml,
 * m11_tomb_spec).
 */
static int
sw_write_deleted(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	struct sw_view *v, uint64_t ts, enum kv_sw_result *res)
{
	bool locked = false;
	int ret = sw_write_back(c, geo, e, v);

	if (ret == 0)
		ret = sw_trylock(c, geo, c->cid, ts, KV_ST_TSL_WRITE, &locked);
	if (ret != 0)
		return ret;
	if (!locked) {
		kv__st_superseded(c, geo->loc, kv_st_meta(ts, 0, 0), c->cid);
		return 0;
	}
	*res = KV_SW_DELETED;
	kv__st_superseded(c, geo->loc, v->top, v->top_w);
	return 0;
}

int
kv__sw_write(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	const void *val, uint32_t vlen, enum kv_sw_result *res)
{
	uint32_t blen = ((uint32_t)sizeof(struct kv_st_vhdr) + vlen + KV_ST_BUF_UNIT - 1) &
		~(KV_ST_BUF_UNIT - 1);
	struct kv_st_vhdr h;
	struct sw_view v;
	uint64_t ptr, off, ts, word;
	bool locked;
	int ret;

	if (c->sb.repl == KV_REPL_ABD)
		return abd_write(c, geo, e, val, vlen, res);
	*res = KV_SW_DONE;
	if (c->sb.repl == KV_REPL_RAW)
		return raw_write(c, geo, kv_st_meta(kv__st_ts_guess(c, 0), 0, 1), val, vlen);
	/* S5: guess a timestamp; the buffer is this write's own (I3). Above
	 * the key's last timestamp this client saw: a writer that just read
	 * another's write in the same clock tick would otherwise guess an
	 * equal ts, stale if its id is the smaller. */
	ts = kv__st_ts_guess(c, e->top_ts);
	ret = kv__st_log_alloc(c, geo->loc, ts, blen, &ptr, &off);
	if (ret != 0)
		return ret;
	word = kv_st_meta(ts, ptr, 0);
	kv__sw_vhdr(&h, word, c->cid, geo->loc, val, vlen);
	/* S6: M.WRITE(w) and M.READ in one batch per member. */
	v.ok = 0;
	ret = sw_install(c, geo, e, c->cid, word, &h, val, true, &v, 0);
	if (ret != 0)
		return ret;
	*res = KV_SW_DONE;
	if (kv_st_is_tomb(v.top))
		return sw_write_deleted(c, geo, e, &v, ts, res);
	e->top_ts = kv_st_ts(v.top);
	/* S7-S8: the guess was fresh; VERIFY in the background (digest
	 * sect. 2.4: "m <= w | VERIFIED" also accepts a reader's VERIFY). */
	if (kv_st_order(v.top, v.top_w) <= kv_st_order(word | KV_ST_VERIFIED, c->cid)) {
		unsigned hold = sw_holders(c, &v, c->cid, word);

#ifdef KV_ST_TESTING
		if (c->test_no_verify)
			return 0; /* as if the writer crashed here */
#endif

		sw_verify_post(c, geo, c->cid, word, word | KV_ST_VERIFIED, hold, &h, val);
		for (unsigned i = 0; i < c->g.n; i++)
			if (hold >> i & 1)
				e->mine[i] = word | KV_ST_VERIFIED;
		kv__st_superseded(c, geo->loc, word, c->cid);
		return 0;
	}
	/* S9-S11: m > w; write m back to a majority first (the read half of
	 * S6 is a full M.READ), then lock readers out of w.ts. */
	c->st.slow_writes++;
	kv__st_ts_resync(c, kv_st_ts(v.top));
	ret = sw_write_back(c, geo, e, &v);
	if (ret != 0)
		return ret;
	/* The write-back may have met a larger word, a tombstone among them:
	 * a delete overlapping this write, as when S6 reads one. (Taken as a
	 * timestamp, the tombstone's maximal ts exhausted the client's
	 * clock: every later write failed with -EOVERFLOW; kv_test's fault
	 * test, 1 run in a CI rehearsal.) */
	if (kv_st_is_tomb(v.top))
		return sw_write_deleted(c, geo, e, &v, ts, res);
	ret = sw_trylock(c, geo, c->cid, ts, KV_ST_TSL_WRITE, &locked);
	if (ret != 0)
		return ret;
	if (!locked) {
		/* A reader locked w.ts in READ mode: w stands. */
		kv__st_superseded(c, geo->loc, word, c->cid);
		return 0;
	}
	/* S11: re-execute with a fresh timestamp, VERIFIED. */
	ts = kv__st_ts_guess(c, kv_st_ts(v.top));
	ret = kv__st_log_alloc(c, geo->loc, ts, blen, &ptr, &off);
	if (ret != 0)
		return ret;
	word = kv_st_meta(ts, ptr, 1);
	kv__sw_vhdr(&h, word, c->cid, geo->loc, val, vlen);
	v.ok = 0;
	ret = sw_install(c, geo, e, c->cid, word, &h, val, true, &v, 0);
	if (ret != 0)
		return ret;
	/* A tombstone now is a delete that had not completed when S6 read a
	 * majority without one: this write is ordered before it (ts order,
	 * the tombstone's is maximal) and took effect. */
	if (!kv_st_is_tomb(v.top))
		sw_verify_post(c, geo, c->cid, word, word, 1u << sw_primary(c, geo), &h, val);
	kv__st_superseded(c, geo->loc, word, c->cid);
	return 0;
}

/* Safe-Guess READ (R11-R21), the view it ended with in @v (its top on
 * f+1 members). Return: as kv__sw_read(), or -ESTALE when a buffer it
 * fetched was reused (the tuple was superseded): the caller reads again. */
static int
sw_read(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	struct kv_st_val *out, struct sw_view *v)
{
	uint64_t seen[KV_MAX_CLIENTS]; /* R11; writers w < C only */
	int ret;

	memset(seen, 0, 8u * c->C);
	for (unsigned iter = 0;; iter++) {
		uint64_t m;
		unsigned w;

		c->st.read_iters += iter > 0;
		/* R13: m := M.READ() -- the read phase, then inner_write(m). */
		ret = sw_read_round(c, geo, v);
		if (ret == 0)
			ret = sw_write_back(c, geo, e, v);
		if (ret != 0)
			return ret;
		m = v->top;
		w = v->top_w;
		if (!kv_st_is_tomb(m))
			e->top_ts = kv_st_ts(m);
		/* R14 */
		if (m == 0 || kv_st_is_tomb(m)) {
			out->meta = m;
			out->vlen = 0;
			return 0;
		}
		if (m & KV_ST_VERIFIED)
			return sw_fetch(c, geo, v, m, w, out);
		if (seen[w] == m) {
			bool locked;

			/* R15-R18: read twice in sequence: w's ts was fresh. */
			ret = sw_trylock(c, geo, w, kv_st_ts(m), 0, &locked);
			if (ret != 0)
				return ret;
			if (locked) {
				unsigned hold = sw_holders(c, v, w, m);

				ret = sw_fetch(c, geo, v, m, w, out);
				if (ret != 0)
					return ret;
				sw_verify_post(c, geo, w, m, m | KV_ST_VERIFIED, hold, NULL, NULL);
				for (unsigned i = 0; w == c->cid && i < c->g.n; i++)
					if (hold >> i & 1)
						e->mine[i] = m | KV_ST_VERIFIED;
				return 0;
			}
		} else if (seen[w] != 0) {
			/* R19-R20: w began a second write, so its first one
			 * completed: return that one. */
			return sw_fetch(c, geo, v, seen[w], w, out);
		}
		seen[w] = m; /* R21 */
		ret = kv__st_retry(c, false);
		if (ret != 0)
			return ret;
	}
}

int
kv__sw_read(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	struct kv_st_val *out)
{
	struct sw_view v;
	int ret;

	if (c->sb.repl == KV_REPL_ABD)
		return abd_read(c, geo, e, out);
	if (c->sb.repl == KV_REPL_RAW)
		return raw_read(c, geo, out);
	/* A reused buffer: the tuple was superseded; read again, until the
	 * deadline (a buffer reused wrongly must not make reads spin). */
	while ((ret = sw_read(c, geo, e, out, &v)) == -ESTALE) {
		ret = kv__st_retry(c, false);
		if (ret != 0)
			return ret;
	}
	if (ret == 0 && v.top != 0)
		kv__st_superseded(c, geo->loc, v.top, v.top_w);
	return ret;
}

/* How many members of @answered hold @del in @first. */
static unsigned
sw_first_count(const struct kv_client *c, const uint64_t *first, unsigned answered, uint64_t del)
{
	unsigned k = 0;

	for (unsigned i = 0; i < c->g.n; i++)
		k += (answered >> i & 1) && first[i] == del;
	return k;
}

/* The decision of a delete (claim @del) from the first delete words @first
 * of the members @answered: f+1 members first with one delete's tombstone
 * decide it -- that delete removed the incarnation (majorities intersect,
 * so no other delete is first on f+1). */
static void
sw_delete_decide(const struct kv_client *c, const uint64_t *first, unsigned answered,
	uint64_t del, struct kv_sw_gone *gone)
{
	unsigned best = 0;

	for (unsigned i = 0; i < c->g.n; i++)
		if ((answered >> i & 1) && first[i] != del) {
			unsigned k = sw_first_count(c, first, answered, first[i]);

			best = k > best ? k : best;
		}
	gone->won = sw_first_count(c, first, answered, del) >= c->g.f + 1;
	gone->gone = best >= c->g.f + 1;
}

int
kv__sw_delete(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	uint64_t tomb, struct kv_sw_gone *gone)
{
	const uint64_t del = kv_st_del(tomb, c->cid);
	uint64_t first[KV_MAX_NODES] = { 0 };
	unsigned held = 0, answered = 0;
	bool widen = false;

	if (c->sb.repl == KV_REPL_RAW) {
		struct kv_st_val v = { .buf = c->val, .cap = KV_VALUE_MAX };
		int ret = raw_read(c, geo, &v);

		gone->gone = kv_st_is_tomb(v.meta);
		gone->won = !gone->gone;
		return ret != 0 ? ret : raw_write(c, geo, tomb, "", 0);
	}

	/* The tombstone is a write of the maximal tuple (SWARM-KV sect. 5.3.2):
	 * no timestamp to guess, nothing can outrank it. Each batch first
	 * claims the member's first delete word (layout.h), so the delete
	 * learns whose tombstone came first there -- the same answer after a
	 * lost reply, when its own tombstone and later ones are already in
	 * the slots and the order is no longer visible in them. (Reading the
	 * slots instead made a delete whose replies were lost count a
	 * tombstone that landed after its own: kv_test
	 * ConcurrentClientsWithOneRoundFaultsAreLinearizable, 1 run in 24.) */
	for (;;) {
		unsigned usable = kv__ix_round_begin(&c->g);
		unsigned mask, ok;
		int ret;

		if (popcount(held) >= c->g.f + 1) {
			unsigned rest = ((1u << c->g.n) - 1) & ~answered;

			sw_delete_decide(c, first, answered, del, gone);
			if (gone->won || gone->gone || rest == 0)
				return 0;
			/* Split between deletes on the members answered: ask
			 * every other member, retrying lost replies and
			 * waiting for one that is down (reconnecting after a
			 * lost reply, restarting) until the operation's
			 * deadline (contention only). A member that landed
			 * this delete's claim and lost the reply may make it
			 * the winner, which the other delete then learns
			 * (Spin, kv/spin/m8.pml, m8_lost; kv_test's fault
			 * test met it with the member reconnecting). A member
			 * down for longer leaves the split, and the delete
			 * returns 0 (kv.h: two overlapping deletes may both
			 * return 0; kv/DESIGN.md, "Delete"). */
			mask = usable & rest;
			if (mask == 0) {
				if (kv__ix_now_ns() >= c->deadline)
					return 0;
				kv__ix_sleep(&c->g, 100000);
				continue;
			}
		} else {
			mask = sw_targets(c, geo, usable, widen) & ~held;
		}

		for (unsigned i = 0; i < c->g.n; i++) {
			struct kv_ix_member *m = &c->g.m[i];
			int r = 0;

			if (!(mask >> i & 1))
				continue;
			r |= sw_del_claim(c, geo, &m->batch, del, &m->old[1]);
			r |= rdma_batch_cas(&m->batch, c->region, sw_meta_off(geo, c->cid), e->mine[i],
				tomb, &m->old[0]);
			r |= rdma_batch_persist(&m->batch, c->region, sw_meta_off(geo, c->cid), 8);
			if (r != 0)
				mask &= ~(1u << i);
		}
		ok = sw_run(c, mask);
		for (unsigned i = 0; i < c->g.n; i++) {
			uint64_t old = c->g.m[i].old[0];

			if (!(ok >> i & 1))
				continue;
			answered |= 1u << i;
			first[i] = c->g.m[i].old[1] == 0 ? del : c->g.m[i].old[1];
			/* Any tombstone in the slot counts: the delete's own
			 * (a lost reply) or an earlier one's. */
			if (old == e->mine[i] || kv_st_is_tomb(old)) {
				held |= 1u << i;
				e->mine[i] = old == e->mine[i] ? tomb : old;
			} else {
				e->mine[i] = old;
			}
		}
		if (popcount(held) >= c->g.f + 1)
			continue; /* decided above, or the split's wait */
		widen = true;
		ret = kv__st_retry(c, ok == 0);
		if (ret != 0)
			return ret;
	}
}

/* Post the creation batch of c->cr to every member of @mask: header, key
 * and in-place copy, the buffer, each persisted, then the word and the
 * insert record. */
static void
sw_create_post(struct kv_client *c, unsigned mask)
{
	struct kv_st_create *cr = &c->cr;
	const struct kv_st_geo *geo = &cr->geo;
	uint32_t olen = geo->tsl_off - geo->ohdr_off;
	const uint64_t rec = c->sb.ins_off + 8u * (KV_ST_INS_RECORDS * c->cid + cr->ins_slot);

	for (unsigned i = 0; i < c->g.n; i++) {
		struct kv_ix_member *m = &c->g.m[i];
		struct rdma_batch *b = &m->batch;
		unsigned char *o = m->buf, *bb = m->buf + ((olen + 63u) & ~63u);
		int r = 0;

		if (!(mask >> i & 1))
			continue;
		memset(o, 0, olen);
		memcpy(o, &cr->oh, sizeof(cr->oh));
		memcpy(o + sizeof(cr->oh), cr->key, geo->klen);
		if (cr->h.vlen <= geo->ip_cap) {
			memcpy(o + (geo->ip_off - geo->ohdr_off), &cr->h, sizeof(cr->h));
			memcpy(o + (geo->ip_off - geo->ohdr_off) + sizeof(cr->h), cr->val, cr->h.vlen);
		}
		memcpy(bb, &cr->h, sizeof(cr->h));
		memcpy(bb + sizeof(cr->h), cr->val, cr->h.vlen);
		r |= rdma_batch_write(b, c->region, geo->off + geo->ohdr_off, o, olen);
		r |= rdma_batch_persist(b, c->region, geo->off + geo->ohdr_off, olen);
		r |= rdma_batch_write(b, c->region, cr->boff, bb, (uint32_t)sizeof(cr->h) + cr->h.vlen);
		r |= rdma_batch_persist(b, c->region, cr->boff, (uint32_t)sizeof(cr->h) + cr->h.vlen);
		r |= rdma_batch_cas(b, c->region, sw_meta_off(geo, c->cid), 0, cr->word, &m->old[0]);
		r |= rdma_batch_persist(b, c->region, sw_meta_off(geo, c->cid), 8);
		/* The insert record: which object an insert of this id may
		 * have left undecided, for its next life (objects.c). */
		r |= rdma_batch_write(b, c->region, rec, &cr->ins, 8);
		r |= rdma_batch_persist(b, c->region, rec, 8);
		if (r != 0)
			mask &= ~(1u << i);
	}
	kv__ix_round_start(&c->g, mask, &cr->round);
}

/* Count the members of @ok whose CAS installed the creation word (now, or
 * in an earlier round whose reply was lost: the word names this write
 * alone). */
static void
sw_create_take(struct kv_client *c, unsigned ok)
{
	struct kv_st_create *cr = &c->cr;

	for (unsigned i = 0; i < c->g.n; i++)
		if ((ok >> i & 1) && (c->g.m[i].old[0] == 0 || c->g.m[i].old[0] == cr->word)) {
			cr->held |= 1u << i;
			cr->e->mine[i] = cr->word;
		}
}

/* The creation is where it must be: on f+1 members, and for RAW, whose
 * reads and writes go to member 0 alone, on member 0 (one that missed it
 * is never repaired: RAW writes nothing back; kv_bench over tcp met gets
 * that found no copy there until their timeout). */
static bool
sw_create_held(const struct kv_client *c)
{
	const unsigned held = c->cr.held;

	return popcount(held) >= c->g.f + 1 && (c->sb.repl != KV_REPL_RAW || (held & 1u));
}

int
kv__sw_create_start(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	const void *key, const void *val, uint32_t vlen)
{
	struct kv_st_create *cr = &c->cr;
	uint32_t blen = ((uint32_t)sizeof(struct kv_st_vhdr) + vlen + KV_ST_BUF_UNIT - 1) &
		~(KV_ST_BUF_UNIT - 1);
	uint64_t ptr, ts;
	int ret;

	if (c->sb.repl == KV_REPL_RAW && vlen > geo->ip_cap)
		return pm_error_set(-E2BIG, "kv: RAW keeps values in place: at most %u bytes",
			KV_ST_IP_MAX);
	ts = kv__st_ts_guess(c, 0);
	ret = kv__st_log_alloc(c, geo->loc, ts, blen, &ptr, &cr->boff);
	if (ret != 0)
		return ret;
	cr->geo = *geo;
	cr->e = e;
	cr->key = key;
	cr->val = val;
	cr->held = 0;
	cr->ins = geo->loc;
	cr->ins_slot = kv__st_obj_record(c);
	cr->word = kv_st_meta(ts, ptr, 1);
	kv__sw_vhdr(&cr->h, cr->word, c->cid, geo->loc, val, vlen);
	cr->oh = (struct kv_st_ohdr){ KV_ST_OBJ_MAGIC, geo->klen, geo->ip_cap, geo->loc, 0 };
	cr->oh.sum = XXH3_64bits_withSeed(key, geo->klen,
		XXH3_64bits(&cr->oh, offsetof(struct kv_st_ohdr, sum)));
	for (unsigned i = 0; i < c->g.n; i++)
		e->mine[i] = 0;
	/* Nobody can know the object before the index maps it, so its first
	 * value is VERIFIED at once and goes to every member. */
	sw_create_post(c, kv__ix_round_begin(&c->g));
	cr->active = true;
	return 0;
}

int
kv__sw_create_finish(struct kv_client *c)
{
	struct kv_st_create *cr = &c->cr;

	if (!cr->active)
		return 0;
	cr->active = false;
	/* Done by the time it is needed (it ran beside the index's first
	 * round): no round trip of its own. Else wait for it. */
	sw_create_take(c, kv__ix_round_done(&c->g, &cr->round));
	if (sw_create_held(c)) {
		kv__ix_round_wait(&c->g, &cr->round, 0, 0); /* the rest land later */
		return 0;
	}
	c->st.rounds++;
	sw_create_take(c, kv__ix_round_wait(&c->g, &cr->round, c->g.f + 1, c->deadline));
	while (!sw_create_held(c)) {
		unsigned ok;
		int ret = kv__st_retry(c, false);

		if (ret != 0)
			return ret;
		sw_create_post(c, kv__ix_round_begin(&c->g) & ~cr->held);
		ok = kv__ix_round_wait(&c->g, &cr->round, c->g.f + 1, c->deadline);
		c->st.rounds++;
		sw_create_take(c, ok);
		if (ok == 0 && (ret = kv__st_retry(c, true)) != 0)
			return ret;
	}
	return 0;
}

int
kv__sw_key_read(struct kv_client *c, uint64_t loc, void *buf, size_t cap, size_t *len)
{
	uint64_t off = (loc >> 4) * KV_ST_UNIT + kv_st_ohdr_off(c->C);
	uint32_t want = (uint32_t)sizeof(struct kv_st_ohdr) + KV_KEY_MAX;
	unsigned answered = 0;
	int ret = kv__sw_create_finish(c); /* the group is needed */

	if (ret != 0)
		return ret;
	if (off + want > c->sb.log_off)
		want = off < c->sb.log_off ? (uint32_t)(c->sb.log_off - off) : 0;
	if (want < sizeof(struct kv_st_ohdr))
		return -ENOENT;
	/* The header and key are written once, on f+1 members, before the
	 * index can name the object: f+1 replies include an intact one. */
	for (;;) {
		unsigned mask = kv__ix_round_begin(&c->g) & ~answered, ok;

		for (unsigned i = 0; i < c->g.n; i++)
			if ((mask >> i & 1) &&
				rdma_batch_read(&c->g.m[i].batch, c->region, off, c->g.m[i].buf, want) != 0)
				mask &= ~(1u << i);
		ok = kv__ix_round_run(&c->g, mask, c->g.f + 1, c->deadline);
		c->st.index_rounds++;
		for (unsigned i = 0; i < c->g.n; i++) {
			const unsigned char *p = c->g.m[i].buf;
			struct kv_st_ohdr oh;

			if (!(ok >> i & 1))
				continue;
			answered |= 1u << i;
			if (!kv__st_ohdr_check(p, want, (loc >> 4) * KV_ST_UNIT, &oh) || oh.loc != loc)
				continue;
			*len = oh.klen;
			memcpy(buf, p + sizeof(oh), oh.klen < cap ? oh.klen : cap);
			return 0;
		}
		if (popcount(answered) >= c->g.f + 1)
			return -ENOENT;
		ret = kv__st_retry(c, ok == 0);
		if (ret != 0)
			return ret;
	}
}
