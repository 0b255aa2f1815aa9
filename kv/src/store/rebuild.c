/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/rebuild.c -- kv_rebuild: restore the store region of a
 * memory node whose pool was lost, from the other nodes, while clients
 * keep operating (kv/DESIGN.md, "Rebuilding a lost node"; the Spin model
 * kv/spin/m12.pml).
 *
 * The lost node has every word back at zero, which breaks both the
 * majority register of each value (a value on f+1 nodes, one of them the
 * lost one, is on f) and timestamp-lock exclusion; so it counts for
 * nothing until it is rebuilt: clients admit a node's value connection
 * only once its store superblock is there (kv__st_admit), and the rebuild
 * writes it last. Meanwhile every decision is made on f+1 of the others.
 *
 * What the rebuilt node gets, word by word, is what a member that missed
 * some batches could hold: for a word that only grows (a writer's
 * metadata word, its timestamp lock, the marks) the largest value among
 * the others, which restores "a value on f+1" for everything decided
 * before the loss (it was on one of the others at least) and is a value
 * some member holds; a first delete word (set once) is copied from the
 * others (when they differ, from the lower one: by then no delete that
 * could count it is still running, below). Claim and hazard words start
 * at zero, as after a watcher's zeroing. Value buffers are copied before
 * the metadata words that name them, from a node holding that word (a
 * word and its buffer land in one ordered batch, so a node with the word
 * has the buffer).
 *
 * Before it reads the others the rebuild waits the suspicion time D =
 * (L + T) + (L + T)/16, T the cluster's operation timeout, and before it
 * writes the superblock one more T (below, rb_run). Then every operation begun before the loss has ended
 * (a round that counted the lost node's answer and lands on the others
 * later would otherwise be missed by the copy: the index's rebuild waits
 * for the same reason, Spin m5_grace), every batch it posted has landed or
 * never will (the in-flight bound the recycling assumes), and every lease
 * whose renewal counted the lost node has run out -- so zero claim and
 * hazard words are safe, and a delete still splitting over first delete
 * words does not exist. The reuse of objects counts on the first wait
 * too: a zeroing that reached the lost node before its loss and the
 * others after it must have landed before they are read, or the copy
 * would bring the old tombstone back under the object's next key (Spin
 * m13_wipe_spec; objects.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pm/error.h>
#include <xxhash.h>

#include "kv/src/store/store_internal.h"

/* Bytes per READ or WRITE of a copy: a member's scratch holds one. */
#define RB_PIECE (RDMA_BATCH_MAX_BYTES < KV_ST_SCRATCH ? RDMA_BATCH_MAX_BYTES : KV_ST_SCRATCH)

/* A value buffer to copy: writer @w's, holding write @meta of the object
 * at @loc, read from member @from. */
struct rb_buf {
	unsigned from, w;
	uint64_t meta, loc;
};

struct rb {
	struct kv_client *c;   /* the rebuilder's group and the superblock */
	unsigned node;         /* the member rebuilt */
	unsigned others;       /* the mask of the other members */
	struct kv_rebuild_report *rep;
	unsigned char *src[KV_MAX_NODES]; /* a chunk as each other member holds it */
	unsigned char *img;    /* the chunk as the rebuilt member gets it */
	uint64_t *chunk_words; /* the chunk claim words it gets */
	struct rb_buf *bufs[KV_MAX_NODES]; /* a chunk's buffers to copy, by source */
	unsigned nbufs[KV_MAX_NODES], capbufs[KV_MAX_NODES];
};

static void
rb_deadline(struct rb *r)
{
	r->c->deadline = kv__ix_now_ns() + (uint64_t)r->c->timeout_ms * 1000000u;
}

/* Read [@off, @off + @len) of every other member into its src buffer (at
 * @off - @base). Every other member must answer. */
static int
rb_read(struct rb *r, uint64_t base, uint64_t off, uint64_t len)
{
	struct kv_ix_group *g = &r->c->g;

	for (uint64_t done = 0; done < len; done += RB_PIECE) {
		uint32_t piece = (uint32_t)(len - done < RB_PIECE ? len - done : RB_PIECE);
		unsigned mask, ok;

		rb_deadline(r);
		mask = kv__ix_round_begin(g) & r->others;
		for (unsigned i = 0; i < g->n; i++)
			if ((mask >> i & 1) &&
				rdma_batch_read(&g->m[i].batch, r->c->region, off + done, g->m[i].buf,
					piece) != 0)
				mask &= ~(1u << i);
		ok = kv__ix_round_run(g, mask, (unsigned)__builtin_popcount(r->others),
			r->c->deadline);
		if (ok != r->others)
			return pm_error_set(KV_E_UNAVAILABLE,
				"kv_rebuild: every other node must answer (members 0x%x did)", ok);
		for (unsigned i = 0; i < g->n; i++)
			if (r->others >> i & 1)
				memcpy(r->src[i] + (off - base) + done, g->m[i].buf, piece);
	}
	return 0;
}

/* Write @len bytes of @p at @off of the rebuilt member, persisted. */
static int
rb_write(struct rb *r, uint64_t off, const void *p, uint64_t len)
{
	struct kv_ix_group *g = &r->c->g;
	struct kv_ix_member *m = &g->m[r->node];

	for (uint64_t done = 0; done < len; done += RB_PIECE) {
		uint32_t piece = (uint32_t)(len - done < RB_PIECE ? len - done : RB_PIECE);
		unsigned mask;

		rb_deadline(r);
		mask = kv__ix_round_begin(g) & (1u << r->node);
		memcpy(m->buf, (const unsigned char *)p + done, piece);
		if (mask == 0 ||
			rdma_batch_write(&m->batch, r->c->region, off + done, m->buf, piece) != 0 ||
			rdma_batch_persist(&m->batch, r->c->region, off + done, piece) != 0 ||
			kv__ix_round_run(g, mask, 1, r->c->deadline) != mask)
			return pm_error_set(KV_E_UNAVAILABLE, "kv_rebuild: node %u went away",
				r->node);
		r->rep->bytes += piece;
	}
	return 0;
}

static uint64_t
rb_word(const unsigned char *p, uint64_t off)
{
	uint64_t w;

	memcpy(&w, p + off, 8);
	return w;
}

static void
rb_set(unsigned char *p, uint64_t off, uint64_t w)
{
	memcpy(p + off, &w, 8);
}

/* The largest of the others' words at @off of their src buffers. */
static uint64_t
rb_max(const struct rb *r, uint64_t off)
{
	uint64_t best = 0;

	for (unsigned i = 0; i < r->c->g.n; i++)
		if ((r->others >> i & 1) && rb_word(r->src[i], off) > best)
			best = rb_word(r->src[i], off);
	return best;
}

/* A word set once (a first delete word, a chunk's claim): the others'
 * non-zero one, the lowest member's if they differ. */
static uint64_t
rb_once(const struct rb *r, uint64_t off)
{
	for (unsigned i = 0; i < r->c->g.n; i++)
		if ((r->others >> i & 1) && rb_word(r->src[i], off) != 0)
			return rb_word(r->src[i], off);
	return 0;
}

/*
 * The per-client tables and the chunk claim words, [id_off, obj_off), and
 * the repair counters: marks and counters as their maximum, claim and
 * hazard words zero, chunk words as set-once words.
 */
static int
rb_tables(struct rb *r)
{
	const struct kv_st_super *sb = &r->c->sb;
	uint64_t len = sb->obj_off - sb->id_off, C = sb->max_clients;
	int ret = rb_read(r, KV_ST_COUNT_OFF, KV_ST_COUNT_OFF, 64);

	if (ret != 0)
		return ret;
	for (unsigned w = 0; w < 8; w++)
		rb_set(r->img, 8 * w, rb_max(r, 8 * w));
	ret = rb_write(r, KV_ST_COUNT_OFF, r->img, 64);
	if (ret == 0)
		ret = rb_read(r, sb->id_off, sb->id_off, len);
	if (ret != 0)
		return ret;
	memset(r->img, 0, len);
	for (uint64_t w = 0; w < 2 * C; w++) /* object and log marks */
		rb_set(r->img, sb->omark_off - sb->id_off + 8 * w,
			rb_max(r, sb->omark_off - sb->id_off + 8 * w));
	for (uint64_t k = 0; k < sb->nchunks; k++) {
		r->chunk_words[k] = rb_once(r, sb->chunk_off - sb->id_off + 8 * k);
		rb_set(r->img, sb->chunk_off - sb->id_off + 8 * k, r->chunk_words[k]);
	}
	return rb_write(r, sb->id_off, r->img, len);
}

/* The object header at @p, for an object at @off of the region, if intact
 * (rest: bytes from @p to the end of the chunk). */
static bool
rb_header(const struct rb *r, const unsigned char *p, uint64_t off, uint64_t rest,
	struct kv_st_ohdr *oh)
{
	uint32_t at = kv_st_ohdr_off(r->c->C);

	return rest > at && kv__st_ohdr_check(p + at, rest - at, off, oh);
}

/* Buffers read or written per round: each is one READ (or a WRITE and a
 * persist) in the batch. */
#define RB_BATCH (RDMA_BATCH_MAX_OPS / 2)

/* One round on member @i alone (its batch is filled). */
static int
rb_round(struct rb *r, unsigned i)
{
	struct kv_ix_group *g = &r->c->g;

	if (kv__ix_round_run(g, 1u << i, 1, r->c->deadline) != 1u << i)
		return pm_error_set(KV_E_UNAVAILABLE, "kv_rebuild: node %u went away", i);
	return 0;
}

/*
 * Copy the buffers @b[0..@n) (all from one member) to the rebuilt member,
 * RB_BATCH at a time: a round of header READs, one of the values (those
 * whose header still names the write: else the buffer was reused, the
 * write is superseded and no read returns it), one of WRITEs and persists.
 */
static int
rb_buffers(struct rb *r, const struct rb_buf *b, unsigned n)
{
	struct kv_ix_group *g = &r->c->g;
	const uint32_t hsz = (uint32_t)sizeof(struct kv_st_vhdr);

	for (unsigned at = 0; at < n;) {
		struct kv_ix_member *src = &g->m[b[at].from], *dst = &g->m[r->node];
		uint32_t len[RB_BATCH], pos[RB_BATCH], used = 0;
		unsigned k, take = n - at < RB_BATCH ? n - at : RB_BATCH;
		int ret;

		/* Headers, 64 bytes apart in the source's scratch. */
		rb_deadline(r);
		if (!(kv__ix_round_begin(g) >> b[at].from & 1))
			return pm_error_set(KV_E_UNAVAILABLE, "kv_rebuild: node %u went away",
				b[at].from);
		for (k = 0; k < take; k++)
			rdma_batch_read(&src->batch, r->c->region,
				kv__st_log_off(r->c, b[at + k].w, b[at + k].meta >> 1 & KV_ST_PTR_MAX),
				src->buf + 64u * k, hsz);
		if ((ret = rb_round(r, b[at].from)) != 0)
			return ret;
		for (k = 0; k < take; k++) {
			struct kv_st_vhdr h;

			memcpy(&h, src->buf + 64u * k, sizeof(h));
			len[k] = h.meta == (b[at + k].meta & ~KV_ST_VERIFIED) && h.writer == b[at + k].w &&
					h.loc == b[at + k].loc && h.vlen <= KV_VALUE_MAX ?
				hsz + h.vlen : 0;
			if (len[k] != 0 && used + len[k] > RB_PIECE)
				break; /* the rest in the next batch */
			pos[k] = used;
			used += len[k];
		}
		take = k;
		/* The values, one after another in the scratch. */
		(void)kv__ix_round_begin(g);
		for (k = 0; k < take; k++)
			if (len[k] != 0)
				rdma_batch_read(&src->batch, r->c->region,
					kv__st_log_off(r->c, b[at + k].w,
						b[at + k].meta >> 1 & KV_ST_PTR_MAX),
					src->buf + pos[k], len[k]);
		if (used != 0 && (ret = rb_round(r, b[at].from)) != 0)
			return ret;
		/* ... and onto the rebuilt member. */
		if (used != 0) {
			if (!(kv__ix_round_begin(g) >> r->node & 1))
				return pm_error_set(KV_E_UNAVAILABLE, "kv_rebuild: node %u went away",
					r->node);
			memcpy(dst->buf, src->buf, used);
			for (k = 0; k < take; k++) {
				uint64_t off = kv__st_log_off(r->c, b[at + k].w,
					b[at + k].meta >> 1 & KV_ST_PTR_MAX);

				if (len[k] == 0)
					continue;
				rdma_batch_write(&dst->batch, r->c->region, off, dst->buf + pos[k], len[k]);
				rdma_batch_persist(&dst->batch, r->c->region, off, len[k]);
				r->rep->buffers++;
			}
			if ((ret = rb_round(r, r->node)) != 0)
				return ret;
			r->rep->bytes += used;
		}
		at += take;
	}
	return 0;
}

/* Note buffer @b for the chunk's copy. */
static int
rb_want(struct rb *r, struct rb_buf b)
{
	if (r->nbufs[b.from] == r->capbufs[b.from]) {
		unsigned cap = r->capbufs[b.from] != 0 ? 2 * r->capbufs[b.from] : 256;
		struct rb_buf *p = realloc(r->bufs[b.from], cap * sizeof(*p));

		if (p == NULL)
			return pm_error_set(-ENOMEM, "kv_rebuild: out of memory");
		r->bufs[b.from] = p;
		r->capbufs[b.from] = cap;
	}
	r->bufs[b.from][r->nbufs[b.from]++] = b;
	return 0;
}

/*
 * Chunk @k: merge the others' copies object by object into the image,
 * copy the buffers the merged metadata words name, then write the image.
 * A unit where no member has an intact header is skipped: objects are
 * carved one after another, but one whose creation never landed leaves a
 * gap before the next.
 */
static int
rb_chunk(struct rb *r, uint64_t k)
{
	const struct kv_st_super *sb = &r->c->sb;
	const unsigned C = r->c->C;
	uint64_t base = sb->obj_off + k * sb->chunk_bytes;
	int ret = rb_read(r, base, base, sb->chunk_bytes);

	if (ret != 0)
		return ret;
	memset(r->img, 0, sb->chunk_bytes);
	for (uint64_t u = 0; u + KV_ST_UNIT <= sb->chunk_bytes;) {
		struct kv_st_ohdr oh;
		struct kv_st_geo geo;
		unsigned from = KV_MAX_NODES, ipfrom = 0;
		uint64_t top = 0;

		for (unsigned i = 0; i < r->c->g.n && from == KV_MAX_NODES; i++)
			if ((r->others >> i & 1) &&
				rb_header(r, r->src[i] + u, base + u, sb->chunk_bytes - u, &oh))
				from = i;
		if (from == KV_MAX_NODES) {
			u += KV_ST_UNIT;
			continue;
		}
		geo = kv_st_geo_make(oh.loc, oh.klen, C);
		if (u + geo.size > sb->chunk_bytes) {
			u += KV_ST_UNIT;
			continue;
		}
		r->rep->objects++;
		memcpy(r->img + u + geo.ohdr_off, r->src[from] + u + geo.ohdr_off,
			geo.ip_off - geo.ohdr_off);
		rb_set(r->img, u + geo.del_off, rb_once(r, u + geo.del_off));
		for (unsigned w = 0; w < C; w++) {
			uint64_t meta = rb_max(r, u + 8u * w);

			rb_set(r->img, u + 8u * w, meta);
			rb_set(r->img, u + geo.tsl_off + 8u * w, rb_max(r, u + geo.tsl_off + 8u * w));
			if (meta == 0)
				continue;
			/* the in-place copy of the member holding the top */
			for (unsigned i = 0; i < r->c->g.n; i++)
				if ((r->others >> i & 1) && rb_word(r->src[i], u + 8u * w) == meta &&
					kv_st_order(meta, w) > top) {
					top = kv_st_order(meta, w);
					ipfrom = i;
				}
			if (kv_st_is_tomb(meta))
				continue;
			for (unsigned i = 0; i < r->c->g.n; i++)
				if ((r->others >> i & 1) && rb_word(r->src[i], u + 8u * w) == meta) {
					ret = rb_want(r, (struct rb_buf){ i, w, meta, oh.loc });
					break;
				}
			if (ret != 0)
				return ret;
		}
		if (top != 0)
			memcpy(r->img + u + geo.ip_off, r->src[ipfrom] + u + geo.ip_off,
				geo.tsl_off - geo.ip_off);
		u += geo.size;
	}
	r->rep->chunks++;
	/* The words that name the buffers after the buffers (one ordered
	 * connection). */
	for (unsigned i = 0; i < r->c->g.n && ret == 0; i++) {
		ret = rb_buffers(r, r->bufs[i], r->nbufs[i]);
		r->nbufs[i] = 0;
	}
	return ret != 0 ? ret : rb_write(r, base, r->img, sb->chunk_bytes);
}

/* The superblock, from the others: every other member must hold one. */
static int
rb_super(struct rb *r)
{
	struct kv_ix_group *g = &r->c->g;
	int ret = rb_read(r, 0, 0, sizeof(struct kv_st_super));

	if (ret != 0)
		return ret;
	for (unsigned i = 0; i < g->n; i++) {
		if (!(r->others >> i & 1))
			continue;
		memcpy(&r->c->sb, r->src[i], sizeof(r->c->sb));
		ret = kv__st_super_check(&r->c->sb, kv__st_region_len(&g->m[i], r->c->region), g->n,
			g->uuid);
		if (ret != 0)
			return ret;
	}
	r->c->C = r->c->sb.max_clients;
	return 0;
}

/* Refuse a member that still holds a store superblock (it was not lost). */
static int
rb_target_blank(struct rb *r)
{
	struct kv_ix_group *g = &r->c->g;
	struct kv_ix_member *m = &g->m[r->node];
	struct kv_st_super s;
	unsigned mask;

	rb_deadline(r);
	mask = kv__ix_round_begin(g) & (1u << r->node);
	if (mask == 0 || rdma_batch_read(&m->batch, r->c->region, 0, m->buf, sizeof(s)) != 0 ||
		kv__ix_round_run(g, mask, 1, r->c->deadline) != mask)
		return pm_error_set(KV_E_UNAVAILABLE, "kv_rebuild: node %u does not answer", r->node);
	memcpy(&s, m->buf, sizeof(s));
	if (s.area.magic != 0)
		return pm_error_set(-EEXIST, "kv_rebuild: node %u holds a store superblock; only a"
			" node whose pool was lost (a new, empty pool) is rebuilt", r->node);
	return 0;
}

/* Whether the rebuilt member's region holds the cluster's layout. */
static int
rb_target_fits(struct rb *r)
{
	const struct kv_ix_member *m = &r->c->g.m[r->node];

	if (kv__st_region_len(m, r->c->region) < r->c->sb.area.area_size)
		return pm_error_set(-ENOSPC, "kv_rebuild: node %u's store region (%llu bytes) is"
			" smaller than the cluster's (%llu)", r->node,
			(unsigned long long)kv__st_region_len(m, r->c->region),
			(unsigned long long)r->c->sb.area.area_size);
	return 0;
}

#ifdef KV_ST_TESTING
#include "kv/src/store/testing.h"

static bool rb_test_no_values;

void
kv__st_test_rebuild_no_values(bool on)
{
	rb_test_no_values = on;
}
#else
static const bool rb_test_no_values;
#endif

static int
rb_run(struct rb *r)
{
	const struct kv_st_super *sb = &r->c->sb;
	struct kv_st_super s;
	struct timespec grace;
	uint64_t grace_ns;
	int ret;

	/* The suspicion time D = (L + T) + (L + T)/16, not L + T: a lease is
	 * timed by its holder's clock, which may run slower than this one
	 * ("Client liveness"). */
	grace_ns = kv__st_suspect_ns(r->c);
	r->rep->grace_ms += (grace_ns + 999999u) / 1000000u;
	grace.tv_sec = (time_t)(grace_ns / 1000000000u);
	grace.tv_nsec = (long)(grace_ns % 1000000000u);
	nanosleep(&grace, NULL);
	ret = rb_test_no_values ? 0 : rb_tables(r);
	/* The chunks claimed when the tables were read: one claimed later
	 * was claimed on the others, with the rebuilt member out, and holds
	 * only objects decided on them. */
	for (uint64_t k = 0; ret == 0 && k < sb->nchunks; k++)
		if (r->chunk_words[k] != 0)
			ret = rb_chunk(r, k);
	if (ret != 0)
		return ret;
	/*
	 * Another operation timeout before the superblock: an operation
	 * begun after the loss may be deciding on a set-once word (a first
	 * delete word, a lock, a chunk claim) whose copy it would count on
	 * the rebuilt member once admitted -- its own word, copied from the
	 * one other member it reached -- against a decision the lost member
	 * made with the third (Spin m12_spec: two deletes won; m12_spec_lock:
	 * a READ and a WRITE lock). Once every operation that began before
	 * the copy has ended, none can (m12 passes with this wait). Any
	 * client's timeout, not this one's: the cluster's (kv_create's) is
	 * the longest a client may use.
	 */
	grace.tv_sec = (time_t)(sb->timeout_ms / 1000);
	grace.tv_nsec = (long)(sb->timeout_ms % 1000) * 1000000;
	nanosleep(&grace, NULL);
	r->rep->grace_ms += sb->timeout_ms;
	/* The superblock last: from then on clients count the member. */
	s = *sb;
	s.member = r->node;
	s.area.checksum = pm_area_sum(&s.area);
	return rb_write(r, 0, &s, sizeof(s));
}

int
kv_rebuild(const struct kv_config *cfg, unsigned node, struct kv_rebuild_report *out)
{
	struct kv_rebuild_report dummy;
	struct kv_index_config icfg;
	struct kv_ix_group_opts opts = { true, 0, KV_ST_SCRATCH, kv__st_admit, NULL, NULL, NULL };
	struct rb r = { .node = node, .rep = out != NULL ? out : &dummy };
	int ret;

	pm_error_clear();
	memset(r.rep, 0, sizeof(*r.rep));
	ret = kv__st_cfg_check(cfg, false);
	if (ret != 0)
		return ret;
	if (node >= cfg->nnodes || cfg->nnodes < 3)
		return pm_error_set(-EINVAL, "kv_rebuild: node %u of %u (a cluster of 3 or more)",
			node, cfg->nnodes);
	r.c = calloc(1, sizeof(*r.c));
	if (r.c == NULL)
		return pm_error_set(-ENOMEM, "kv_rebuild: out of memory");
	r.c->region = cfg->store_region;
	r.c->timeout_ms = cfg->timeout_ms;
	opts.admit_ctx = r.c;
	opts.blank = 1u << node;
	ret = kv__ix_group_open(&r.c->g, cfg->nodes, cfg->nnodes, cfg->index_region, &cfg->conn,
		cfg->timeout_ms, &opts);
	if (ret != 0) {
		free(r.c);
		return ret;
	}
	r.others = ((1u << cfg->nnodes) - 1) & ~(1u << node);
	for (unsigned i = 0; i < cfg->nnodes && ret == 0; i++)
		if ((r.others >> i & 1) && (r.src[i] = malloc(RB_PIECE)) == NULL)
			ret = -ENOMEM;
	if (ret == 0)
		ret = rb_target_blank(&r);
	if (ret == 0)
		ret = rb_super(&r);
	if (ret == 0)
		ret = rb_target_fits(&r);
	if (ret == 0 && cfg->timeout_ms > r.c->sb.timeout_ms)
		ret = pm_error_set(KV_E_CONFIG, "kv_rebuild: timeout_ms %u is above the cluster's %u"
			" (kv_config.timeout_ms at kv_create)", cfg->timeout_ms, r.c->sb.timeout_ms);
	/*
	 * The index first, waiting the cluster's timeout T (the longest any
	 * client's round may take), not the rebuilder's own: read from the
	 * store superblock above.
	 */
	if (ret == 0) {
		r.c->lease_ns = (uint64_t)r.c->sb.lease_ms * 1000000u;
		r.c->inflight_ns = (uint64_t)r.c->sb.timeout_ms * 1000000u;
		kv__st_index_cfg(&icfg, cfg, NULL, 0);
		icfg.timeout_ms = r.c->sb.timeout_ms;
		ret = kv_index_rebuild(&icfg, node);
		r.rep->index_rebuilt = ret == 0;
		if (ret == 0)
			r.rep->grace_ms = r.c->sb.timeout_ms;
		if (ret == -EEXIST) {
			ret = 0;
			pm_error_clear();
		}
	}
	/* Chunks, the tables and a buffer fit in one chunk-sized buffer
	 * each (and a piece, for the superblock). */
	for (unsigned i = 0; i < cfg->nnodes && ret == 0; i++) {
		uint64_t need = r.c->sb.chunk_bytes;

		if (r.c->sb.obj_off - r.c->sb.id_off > need)
			need = r.c->sb.obj_off - r.c->sb.id_off;
		if (need < RB_PIECE)
			need = RB_PIECE;
		if (r.others >> i & 1) {
			unsigned char *p = realloc(r.src[i], need);

			if (p == NULL)
				ret = -ENOMEM;
			else
				r.src[i] = p;
		} else if ((r.img = malloc(need)) == NULL) {
			ret = -ENOMEM;
		}
	}
	if (ret == 0 && (r.chunk_words = calloc(r.c->sb.nchunks, 8)) == NULL)
		ret = -ENOMEM;
	if (ret == -ENOMEM)
		pm_error_set(ret, "kv_rebuild: out of memory");
	if (ret == 0)
		ret = rb_run(&r);
	for (unsigned i = 0; i < cfg->nnodes; i++)
		free(r.src[i]);
	free(r.img);
	free(r.chunk_words);
	for (unsigned i = 0; i < KV_MAX_NODES; i++)
		free(r.bufs[i]);
	kv__ix_group_close(&r.c->g);
	free(r.c);
	return ret;
}
