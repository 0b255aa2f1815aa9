/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/objects.c -- the reuse of the objects of deleted keys
 * (issue 18; kv/DESIGN.md, "Reuse of objects").
 *
 * An object holds one key incarnation and lies in a chunk of the client
 * id that allocated it. Once the incarnation is over -- its tombstone is
 * on f+1 nodes and the index no longer maps it, or its insert lost and it
 * was never mapped -- the object goes back to its allocator: the client
 * holding that id, which learns it from its own operations (a delete, a
 * get or insert that unmaps a tombstone, an insert that lost) or from a
 * sweep of its chunks, and reuses it for a later insert of the same size:
 *  1. after a grace G = 3L + L/4 (L the lease): every location a client
 *     may still use was looked up at most L before it begins an operation
 *     (locate() drops cached locations older than that), the operation
 *     posts within its timeout (at most L), and each batch lands within a
 *     timeout of its post or never; 3L bounds those, L/4 covers clocks
 *     whose rates are within 3 % of real time;
 *  2. it zeroes the object on *every* node, in a batch that also reads the
 *     node's superblock (a node that is not admitted -- being rebuilt --
 *     fails the attempt): a node that misses the new incarnation's insert
 *     must hold the empty register there, not the old tombstone. The
 *     zeroing leaves a free header (layout.h) where the header was;
 *  3. once every batch it had posted by then has settled (kv__ix_settled:
 *     no late zeroing, no late write of its own, lands after the reuse),
 *     the insert takes it.
 * Until step 2 the object keeps its header and tombstone, and after it the
 * free header, so the id's next life finds it again by the sweep if this
 * one ends before the insert that takes it has created anything there.
 * Spin: kv/spin/m13.pml.
 *
 * Thread-safety: a client's lists belong to its thread.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include <pm/error.h>

#include "kv/src/store/store_internal.h"

/* Fresh allocations between two sweep windows. */
#define KV_OBJ_SWEEP_EVERY 16u

/* Dead objects looked at per take (the oldest ones whose grace is over). */
#define KV_OBJ_TAKE_LOOK 64u

static uint64_t
obj_grace_ns(const struct kv_client *c)
{
#ifdef KV_ST_TESTING
	if (c->test_no_grace)
		return 0;
#endif
	return 3 * c->lease_ns + c->lease_ns / 4;
}

static uint64_t
obj_chunk(const struct kv_client *c, uint64_t off)
{
	return (off - c->sb.obj_off) / c->sb.chunk_bytes;
}

/* The dead-unit bitmap of the chunk of @off, NULL if not this id's. */
static uint64_t *
obj_bits(const struct kv_client *c, uint64_t off)
{
	if (c->o_chunks == NULL || off < c->sb.obj_off || obj_chunk(c, off) >= c->sb.nchunks)
		return NULL;
	return c->o_chunks[obj_chunk(c, off)];
}

static bool
obj_queued(const struct kv_client *c, uint64_t off)
{
	const uint64_t *bits = obj_bits(c, off);
	uint64_t u = (off - c->sb.obj_off) % c->sb.chunk_bytes / KV_ST_UNIT;

	return bits != NULL && (bits[u / 64] >> (u % 64) & 1);
}

static void
obj_mark(struct kv_client *c, uint64_t off, bool queued)
{
	uint64_t *bits = obj_bits(c, off);
	uint64_t u = (off - c->sb.obj_off) % c->sb.chunk_bytes / KV_ST_UNIT;

	if (queued)
		bits[u / 64] |= UINT64_C(1) << (u % 64);
	else
		bits[u / 64] &= ~(UINT64_C(1) << (u % 64));
}

/* Bytes of a chunk's bitmap. */
static size_t
obj_bits_bytes(const struct kv_client *c)
{
	return (c->sb.chunk_bytes / KV_ST_UNIT + 63) / 64 * 8;
}

int
kv__st_obj_chunk_spare(struct kv_client *c)
{
	if (c->o_spare == NULL)
		c->o_spare = calloc(1, obj_bits_bytes(c));
	return c->o_spare != NULL ? 0 : -ENOMEM;
}

void
kv__st_obj_chunk_mine(struct kv_client *c, uint64_t idx)
{
	if (c->o_chunks[idx] != NULL || c->o_spare == NULL)
		return;
	c->o_chunks[idx] = c->o_spare;
	c->o_spare = NULL;
	c->o_nchunks++;
}

int
kv__st_obj_reserve(struct kv_client *c)
{
	struct kv_st_objs *l = &c->o_dead;
	struct kv_st_obj *v;
	size_t cap;

	if (l->head > 0 && l->n == l->cap) { /* make room at the front first */
		memmove(l->v, l->v + l->head, (l->n - l->head) * sizeof(*l->v));
		l->n -= l->head;
		l->head = 0;
	}
	if (l->cap - l->n >= KV_OBJ_RESERVE)
		return 0;
	cap = l->cap != 0 ? 2 * l->cap : 64;
	v = realloc(l->v, cap * sizeof(*v));
	if (v == NULL)
		return pm_error_set(-ENOMEM, "kv: out of memory");
	l->v = v;
	l->cap = cap;
	return 0;
}

/* Queue the dead object at @off (@units long) for reuse after the grace,
 * unless it is queued (or zeroed and waiting to be taken) already.
 * Return: whether it was queued now. */
static bool
obj_queue(struct kv_client *c, uint64_t off, uint64_t units)
{
	struct kv_st_objs *l = &c->o_dead;

	if (!c->recycle || c->sb.repl == KV_REPL_RAW || obj_bits(c, off) == NULL ||
		obj_queued(c, off))
		return false;
	if (l->n == l->cap)
		return false; /* no room reserved: a later sweep finds it */
	l->v[l->n++] = (struct kv_st_obj){ off, units, kv__ix_now_ns() };
	obj_mark(c, off, true);
	c->st.objects_dead++;
	return true;
}

void
kv__st_obj_dead(struct kv_client *c, uint64_t loc, uint32_t klen)
{
	struct kv_st_geo geo = kv_st_geo_make(loc, klen, c->C);

	(void)obj_queue(c, geo.off, geo.size / KV_ST_UNIT);
}

/* The free header of a zeroed object at @off, @units long, into *@oh. */
static void
obj_free_make(uint64_t off, uint64_t units, struct kv_st_ohdr *oh)
{
	*oh = (struct kv_st_ohdr){ KV_ST_FREE_MAGIC, 0, (uint32_t)units, off / KV_ST_UNIT << 4, 0 };
	oh->sum = XXH3_64bits(oh, offsetof(struct kv_st_ohdr, sum));
}

/* Whether @p (@rest bytes readable) holds the intact free header of an
 * object at @off; its length in units into *@units. */
static bool
obj_free_check(const unsigned char *p, uint64_t rest, uint64_t off, uint64_t *units)
{
	struct kv_st_ohdr oh;

	if (rest < sizeof(oh))
		return false;
	memcpy(&oh, p, sizeof(oh));
	if (oh.magic != KV_ST_FREE_MAGIC || oh.klen != 0 || oh.ip_cap == 0 ||
		oh.loc != off / KV_ST_UNIT << 4 ||
		oh.sum != XXH3_64bits(&oh, offsetof(struct kv_st_ohdr, sum)))
		return false;
	*units = oh.ip_cap;
	return true;
}

/* Zero @o on every node, each answering as an admitted member, and leave
 * its free header: one round trip. Return: whether it did. */
static bool
obj_zero(struct kv_client *c, const struct kv_st_obj *o)
{
	const unsigned all = (1u << c->g.n) - 1;
	const uint64_t hoff = o->off + kv_st_ohdr_off(c->C);
	unsigned ok;

	if (kv__ix_round_begin(&c->g) != all)
		return false;
	obj_free_make(o->off, o->units, &c->o_free);
	for (unsigned i = 0; i < c->g.n; i++) {
		struct rdma_batch *b = &c->g.m[i].batch;

		rdma_batch_read(b, c->region, 0, c->g.m[i].buf, sizeof(struct kv_st_super));
		rdma_batch_write(b, c->region, o->off, c->zeros, (uint32_t)(o->units * KV_ST_UNIT));
		rdma_batch_write(b, c->region, hoff, &c->o_free, sizeof(c->o_free));
		rdma_batch_persist(b, c->region, o->off, (uint32_t)(o->units * KV_ST_UNIT));
		/* dmkv status counts them (an attempt that fails counts too) */
		rdma_batch_faa(b, c->region, KV_ST_COUNT_OFF + 8u * KV_ST_COUNT_OBJECTS, 1, NULL);
		rdma_batch_persist(b, c->region, KV_ST_COUNT_OFF + 8u * KV_ST_COUNT_OBJECTS, 8);
	}
	ok = kv__ix_round_run(&c->g, all, c->g.n, c->deadline);
	c->st.rounds++;
	for (unsigned i = 0; i < c->g.n; i++) {
		struct kv_ix_member *m = &c->g.m[i];
		struct kv_st_super s;

		if (!(ok >> i & 1))
			return false;
		memcpy(&s, m->buf, sizeof(s));
		if (kv__st_super_check(&s, kv__st_region_len(m, c->region), c->g.n, c->g.uuid) != 0 ||
			s.member != i)
			return false;
	}
	return true;
}

int
kv__st_obj_take(struct kv_client *c, uint64_t units, uint64_t *off)
{
	struct kv_st_objs *l = &c->o_dead;
	uint64_t now = kv__ix_now_ns();
	struct kv_ix_posted p;
	size_t look = 0;

	/* Zeroed before, waiting for its batches to settle. */
	if (c->o_sealed.n != 0 && kv__ix_settled(&c->g, NULL, &c->o_posted)) {
		for (size_t j = 0; j < c->o_sealed.n; j++)
			if (c->o_sealed.v[j].units == units) {
				*off = c->o_sealed.v[j].off;
				obj_mark(c, *off, false);
				c->o_sealed.v[j] = c->o_sealed.v[--c->o_sealed.n];
				c->st.objects_reused++;
				return 1;
			}
	}
	/* Room to seal one, before anything changes. */
	if (c->o_sealed.n == c->o_sealed.cap) {
		size_t cap = c->o_sealed.cap != 0 ? 2 * c->o_sealed.cap : 16;
		struct kv_st_obj *v = realloc(c->o_sealed.v, cap * sizeof(*v));

		if (v == NULL)
			return pm_error_set(-ENOMEM, "kv: out of memory");
		c->o_sealed.v = v;
		c->o_sealed.cap = cap;
	}
	for (size_t j = l->head; j < l->n && look < KV_OBJ_TAKE_LOOK; j++, look++) {
		struct kv_st_obj o = l->v[j];

		if (o.at + obj_grace_ns(c) > now)
			break; /* the rest died later */
		if (o.units != units)
			continue;
		if (!obj_zero(c, &o)) {
			c->st.objects_zero_failed++;
			return 0; /* a node is away: later */
		}
		kv__st_test_point(c, KV_ST_TEST_AT_ZERO);
		/* Out of the list (the oldest takes its place: the prefix
		 * whose grace is over stays one). */
		l->v[j] = l->v[l->head++];
		kv__ix_posted(&c->g, &p);
		if (kv__ix_settled(&c->g, NULL, &p)) {
			obj_mark(c, o.off, false);
			*off = o.off;
			c->st.objects_reused++;
			return 1;
		}
		/* A batch of this client may still land: the object waits,
		 * still marked, so the sweep does not queue it again by its
		 * free header. */
		c->o_sealed.v[c->o_sealed.n++] = o;
		c->o_posted = p;
		return 0;
	}
	return 0;
}

/* Whether f+1 of the members in @answered hold the free header of one
 * object at @off, @at bytes into their scratch (@len bytes read); its
 * length in units into *@units. A zeroing leaves it on every node, and
 * the creation that reuses the object replaces it with a header on f+1
 * before the index can map it, so on f+1 it means nobody maps the object
 * or can: a creation that landed on fewer, by a life since ended, never
 * counted. */
static bool
obj_free_on_quorum(const struct kv_client *c, unsigned answered, uint64_t at, uint64_t len,
	uint64_t off, uint64_t *units)
{
	const uint32_t hoff = kv_st_ohdr_off(c->C);
	unsigned frees = 0;

	*units = 0;
	for (unsigned i = 0; i < c->g.n; i++) {
		uint64_t u;

		/* Larger than the largest object (a window holds one): not a
		 * header obj_zero wrote, and the sweep would stall on it. */
		if (!(answered >> i & 1) || len - at <= hoff ||
			!obj_free_check(c->g.m[i].buf + at + hoff, len - at - hoff, off, &u) ||
			u * KV_ST_UNIT > c->o_window)
			continue;
		if (*units != 0 && u != *units)
			return false; /* two sizes at one offset: trust neither */
		*units = u;
		frees++;
	}
	return frees >= c->g.f + 1;
}

/* Walk the window @p (@len bytes, read from member @from; the other
 * members' copies in their scratch, those in @answered) of the chunk at
 * @base from @u: note each object whose tombstone is on f+1 members as a
 * candidate, and queue each one an earlier life zeroed and did not take.
 * Return: where the next window starts. */
static uint64_t
obj_window(struct kv_client *c, unsigned answered, uint64_t base, uint64_t u, uint64_t len,
	uint64_t end)
{
	const uint32_t hoff = kv_st_ohdr_off(c->C);
	uint64_t at = 0;

	while (at + KV_ST_UNIT <= len && u + at < end) {
		const uint64_t off = base + u + at;
		struct kv_st_ohdr oh;
		unsigned from = KV_MAX_NODES, tombs = 0;
		struct kv_st_geo geo;
		uint64_t units;

		if (obj_free_on_quorum(c, answered, at, len, off, &units)) {
			if (at + units * KV_ST_UNIT > len)
				break; /* the next window starts with it */
			if (obj_queue(c, off, units))
				c->st.objects_free_found++;
			at += units * KV_ST_UNIT;
			continue;
		}
		for (unsigned i = 0; i < c->g.n && from == KV_MAX_NODES; i++)
			if ((answered >> i & 1) && len - at > hoff &&
				kv__st_ohdr_check(c->g.m[i].buf + at + hoff, len - at - hoff, off, &oh))
				from = i;
		if (from == KV_MAX_NODES) {
			at += KV_ST_UNIT; /* a gap: zeroed, or a creation that never landed */
			continue;
		}
		geo = kv_st_geo_make(oh.loc, oh.klen, c->C);
		if (at + geo.size > len)
			break; /* the next window starts with it */
		for (unsigned i = 0; i < c->g.n; i++) {
			const unsigned char *p = c->g.m[i].buf + at;
			bool tomb = false;

			for (unsigned w = 0; (answered >> i & 1) && w < c->C && !tomb; w++) {
				uint64_t meta;

				memcpy(&meta, p + 8u * w, 8);
				tomb = kv_st_is_tomb(meta);
			}
			tombs += tomb;
		}
		if (tombs >= c->g.f + 1 && !obj_queued(c, off)) {
			if (c->o_cand_n == KV_OBJ_CANDS)
				break; /* the next window starts with it */
			c->o_cand[c->o_cand_n].loc = oh.loc;
			c->o_cand[c->o_cand_n].klen = oh.klen;
			memcpy(c->o_cand[c->o_cand_n].key, c->g.m[from].buf + at + hoff + sizeof(oh),
				oh.klen);
			c->o_cand_n++;
		}
		at += geo.size;
	}
	return u + at;
}

void
kv__st_obj_sweep(struct kv_client *c)
{
	uint64_t base, end, len;
	unsigned mask, ok, answered = 0;

	if (!c->recycle || c->sb.repl == KV_REPL_RAW || ++c->o_carved % KV_OBJ_SWEEP_EVERY != 0 ||
		c->o_nchunks == 0)
		return;
	/* The next chunk of this id from the cursor. */
	for (uint64_t k = 0; k < c->sb.nchunks && c->o_chunks[c->o_sweep_chunk] == NULL; k++) {
		c->o_sweep_chunk = (c->o_sweep_chunk + 1) % c->sb.nchunks;
		c->o_sweep_at = 0;
	}
	base = c->sb.obj_off + c->o_sweep_chunk * c->sb.chunk_bytes;
	/* In the current chunk, only what was carved so far. */
	end = c->o_sweep_chunk + 1 == c->chunk ? c->obj_used * KV_ST_UNIT : c->sb.chunk_bytes;
	len = end - c->o_sweep_at < c->o_window ? end - c->o_sweep_at : c->o_window;
	if (len >= KV_ST_UNIT) {
		mask = kv__ix_round_begin(&c->g);
		for (unsigned i = 0; i < c->g.n; i++)
			if ((mask >> i & 1) && rdma_batch_read(&c->g.m[i].batch, c->region,
				base + c->o_sweep_at, c->g.m[i].buf, (uint32_t)len) != 0)
				mask &= ~(1u << i);
		ok = kv__ix_round_run(&c->g, mask, c->g.f + 1, c->deadline);
		c->st.rounds++;
		answered = ok;
		if ((unsigned)__builtin_popcount(answered) < c->g.f + 1)
			return; /* later */
		c->o_sweep_at = obj_window(c, answered, base, c->o_sweep_at, len, end);
	}
	if (len < c->o_window) { /* the chunk's end: the next one */
		c->o_sweep_chunk = (c->o_sweep_chunk + 1) % c->sb.nchunks;
		c->o_sweep_at = 0;
	}
	c->st.objects_swept++;
	/* A candidate the index still maps is unmapped first, as a get that
	 * met its tombstone would (SWARM-KV sect. 5.3.3). */
	for (unsigned j = 0; j < c->o_cand_n; j++) {
		struct kv_st_ocand *k = &c->o_cand[j];

		if (kv__st_unmapped_check(c, k->key, k->klen, k->loc) == 0)
			kv__st_obj_dead(c, k->loc, k->klen);
	}
	c->o_cand_n = 0;
}

/*
 * Inserts of unknown outcome. An insert that returned without a verdict
 * (KV_E_UNAVAILABLE, a timeout) or whose client died left an object that
 * the index may or may not map: a slot may still choose its location when
 * some client meets the proposal. kv_index_abandon settles that for good
 * (the key's bucket moved on past every such proposal), so the object is
 * either a live key's or dead like a lost insert's. A live client keeps
 * its own in memory; for a client that died, its id's insert records
 * (KV_ST_INS_RECORDS words per id, one written in each creation batch)
 * name its last insert and those it had not settled yet: a creation
 * writes the record of the one before, unless that insert is still
 * unsettled, and then a record no unsettled insert holds. The id's next
 * life reads them at registration. Settling calls
 * kv_index_abandon with the key the object's header holds; it is safe for
 * any object of an insert that has stopped, so a record that names an
 * older, decided insert, or an object reused since for another key of
 * this id, costs a lookup (or a compaction, if it was deleted) and decides
 * nothing wrong.
 */
void
kv__st_obj_unsure(struct kv_client *c, uint64_t loc, unsigned rec)
{
	if (!c->recycle || c->sb.repl == KV_REPL_RAW)
		return;
	/* Already kept: its first record, held since, still names it. */
	for (unsigned j = 0; j < c->o_unsure_n; j++)
		if (c->o_unsure[j] == loc)
			return;
	if (c->o_unsure_n == KV_OBJ_UNSURE) {
		c->st.objects_unsure_dropped++;
		return;
	}
	c->o_unsure_rec[c->o_unsure_n] = (uint8_t)rec;
	c->o_unsure[c->o_unsure_n++] = loc;
}

unsigned
kv__st_obj_record(struct kv_client *c)
{
	unsigned held = 0;

	for (unsigned j = 0; j < c->o_unsure_n; j++)
		if (c->o_unsure_rec[j] < KV_ST_INS_RECORDS)
			held |= 1u << c->o_unsure_rec[j];
	for (unsigned k = 0; k < KV_ST_INS_RECORDS && (held >> c->o_rec & 1); k++)
		c->o_rec = (c->o_rec + 1) % KV_ST_INS_RECORDS;
	/* Every record held (as many unsettled inserts): the one written
	 * now replaces that insert's, which this life still keeps. */
	for (unsigned j = 0; j < c->o_unsure_n; j++)
		if (c->o_unsure_rec[j] == c->o_rec)
			c->o_unsure_rec[j] = KV_ST_INS_RECORDS;
	return c->o_rec;
}

int
kv__st_obj_unsure_load(struct kv_client *c)
{
	const uint64_t off = c->sb.ins_off + 8u * KV_ST_INS_RECORDS * c->cid;
	unsigned mask = kv__ix_round_begin(&c->g), ok;

	for (unsigned i = 0; i < c->g.n; i++)
		if ((mask >> i & 1) && rdma_batch_read(&c->g.m[i].batch, c->region, off,
				c->g.m[i].buf, 8u * KV_ST_INS_RECORDS) != 0)
			mask &= ~(1u << i);
	ok = kv__ix_round_run(&c->g, mask, c->g.f + 1, c->deadline);
	c->st.rounds++;
	if ((unsigned)__builtin_popcount(ok) < c->g.f + 1)
		return KV_E_UNAVAILABLE;
	/* A creation batch cut short leaves the new record on some members
	 * and the one before on others: every value read is a candidate,
	 * and its record is kept until it is settled. */
	for (unsigned i = 0; i < c->g.n; i++)
		for (unsigned k = 0; k < KV_ST_INS_RECORDS; k++) {
			uint64_t loc;

			memcpy(&loc, c->g.m[i].buf + 8u * k, 8);
			if ((ok >> i & 1) && loc != 0)
				kv__st_obj_unsure(c, loc, k);
		}
	return 0;
}

void
kv__st_obj_settle(struct kv_client *c)
{
	unsigned char key[KV_KEY_MAX];
	size_t klen = 0;
	uint64_t loc;
	int ret;

	if (c->o_unsure_n == 0 || kv__st_obj_reserve(c) != 0)
		return;
#ifdef KV_ST_TESTING
	if (c->test_hold_unsure)
		return;
#endif
	loc = c->o_unsure[0];
	ret = kv__sw_key_read(c, loc, key, sizeof(key), &klen);
	if (ret == 0)
		ret = kv_index_abandon(c->ix, key, klen, loc);
	if (ret == 0) {
		c->st.inserts_settled++;
	} else if (ret == -ENOENT && klen != 0) {
		kv__st_unmapped(c, loc);
		kv__st_obj_dead(c, loc, (uint32_t)klen);
		c->st.objects_abandoned++;
	} else if (ret == -ENOENT) {
		/* No intact header on f+1 members: the index cannot have
		 * learnt the location (an insert proposes only once its
		 * object is on f+1), and without its key length the object's
		 * extent is unknown; it stays unused. */
		c->st.objects_unsure_dropped++;
	} else if (ret == KV_E_UNAVAILABLE || ret == -ETIMEDOUT) {
		return; /* later */
	} else {
		c->st.objects_unsure_dropped++; /* -ENOSPC: the bucket cannot move on */
	}
	c->o_unsure_n--;
	c->o_unsure[0] = c->o_unsure[c->o_unsure_n];
	c->o_unsure_rec[0] = c->o_unsure_rec[c->o_unsure_n];
}

int
kv__st_obj_init(struct kv_client *c)
{
	struct kv_st_geo big = kv_st_geo_make(KV_ST_IP_CLASSES - 1, KV_KEY_MAX, c->C);

	/* A window holds the largest object whole. */
	c->o_window = (big.size + 4095) / 4096 * 4096;
	if (c->o_window < (16u << 10))
		c->o_window = 16u << 10;
	c->zeros = calloc(1, big.size);
	c->o_chunks = calloc(c->sb.nchunks, sizeof(*c->o_chunks));
	return c->zeros != NULL && c->o_chunks != NULL ? 0 : -ENOMEM;
}

void
kv__st_obj_forget(struct kv_client *c)
{
	for (uint64_t k = 0; c->o_chunks != NULL && k < c->sb.nchunks; k++) {
		free(c->o_chunks[k]);
		c->o_chunks[k] = NULL;
	}
	c->o_nchunks = 0;
	c->o_dead.head = c->o_dead.n = 0;
	c->o_sealed.n = 0;
	c->o_sweep_chunk = c->o_sweep_at = 0;
	c->o_cand_n = 0;
	c->o_unsure_n = 0; /* the id's insert records name them */
	c->o_rec = 0;
}

void
kv__st_obj_fini(struct kv_client *c)
{
	kv__st_obj_forget(c);
	free(c->o_chunks);
	free(c->o_spare);
	free(c->o_dead.v);
	free(c->o_sealed.v);
	free(c->zeros);
	c->o_chunks = NULL;
	c->o_spare = NULL;
	c->zeros = NULL;
	memset(&c->o_dead, 0, sizeof(c->o_dead));
	memset(&c->o_sealed, 0, sizeof(c->o_sealed));
}

int
kv__st_obj_chunks_load(struct kv_client *c)
{
	const uint64_t per = RDMA_BATCH_MAX_BYTES / 8;
	uint64_t seen = 0, top = 0, top_idx = 0;
	bool marked = false;
	int ret = 0;

	/* A chunk is the id's when f+1 nodes hold one claim word naming it
	 * (obj_alloc's owner: the claim's number << 8 | id + 1). */
	for (uint64_t first = 0; first < c->sb.nchunks && ret == 0; first += per) {
		uint64_t n = c->sb.nchunks - first < per ? c->sb.nchunks - first : per;
		unsigned mask = kv__ix_round_begin(&c->g), ok;

		for (unsigned i = 0; i < c->g.n; i++)
			if ((mask >> i & 1) && rdma_batch_read(&c->g.m[i].batch, c->region,
				c->sb.chunk_off + 8 * first, c->g.m[i].buf, (uint32_t)(8 * n)) != 0)
				mask &= ~(1u << i);
		ok = kv__ix_round_run(&c->g, mask, (unsigned)__builtin_popcount(mask), c->deadline);
		c->st.rounds++;
		if ((unsigned)__builtin_popcount(ok) < c->g.f + 1)
			return KV_E_UNAVAILABLE;
		for (uint64_t k = 0; k < n && ret == 0; k++) {
			for (unsigned i = 0; i < c->g.n; i++) {
				uint64_t w;
				unsigned same = 0;

				if (!(ok >> i & 1))
					continue;
				memcpy(&w, c->g.m[i].buf + 8 * k, 8);
				if (w == 0 || (w & 0xff) != c->cid + 1u)
					continue;
				/* Every number this id used, won or not. */
				seen = w >> 8 > seen ? w >> 8 : seen;
				for (unsigned j = 0; j < c->g.n; j++) {
					uint64_t v;

					memcpy(&v, c->g.m[j].buf + 8 * k, 8);
					same += (ok >> j & 1) && v == w;
				}
				if (same < c->g.f + 1)
					continue;
				ret = kv__st_obj_chunk_spare(c);
				kv__st_obj_chunk_mine(c, first + k);
				if (w >> 8 == c->chunk_seq) {
					c->chunk = first + k + 1;
					marked = true;
				}
				if (w >> 8 > top) {
					top = w >> 8;
					top_idx = first + k;
				}
				break;
			}
		}
	}
	if (ret != 0)
		return ret;
	c->seq_next = seen + 1;
	if (!marked) { /* no chunk yet (or its claim word damaged: claim anew) */
		c->chunk = c->chunk_seq = 0;
		c->obj_used = c->obj_mark = 0;
	}
	/* Claims are numbered in the order made and the mark is raised on f+1
	 * before anything is carved in a new chunk, so a chunk won with a
	 * number above the mark's was never carved in: the earlier life died
	 * between the claim and the mark. It is the current chunk now. */
	if (top > c->chunk_seq) {
		c->chunk = top_idx + 1;
		c->chunk_seq = top;
		c->obj_used = c->obj_mark = 0;
		c->st.chunks_taken_unmarked++;
	}
	return 0;
}
