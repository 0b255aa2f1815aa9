/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/index.c -- the index's client: create, open, lookup, insert,
 * remove (kv/index.h; kv/DESIGN.md "Index"; the FCP design study sections
 * 4.5.2 "lookup", 4.5.3 "insert", 4.5.5 "remove").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <xxhash.h>

#include <pm/error.h>

#include "kv/src/index/index_internal.h"

#define KV_IX_DEPTH_MASK ((uint64_t)sizeof(((struct kv_index *)0)->depth) - 1)

void
kv_index_config_init(struct kv_index_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->timeout_ms = 5000;
	rdma_conn_config_init(&cfg->conn);
	cfg->conn.timeout_ms = 1000;
	cfg->cache_entries = 4096;
	cfg->max_clients = 64;
	cfg->recs_per_client = 4096;
}

uint64_t
kv__ix_hash(const void *key, size_t len)
{
	return XXH3_64bits(key, len);
}

int
kv__ix_key_hash(struct kv_index *ix, uint64_t loc, uint64_t *hash)
{
	char buf[KV_INDEX_KEY_MAX];
	size_t len = 0;
	int ret;

	ix->st.key_reads++;
	ret = ix->key_at(ix->key_ctx, loc, buf, sizeof(buf), &len);
	if (ret != 0)
		return ret;
	if (len == 0 || len > sizeof(buf))
		return pm_error_set(PM_E_CORRUPT, "kv_index: key_at gave a %zu-byte key", len);
	*hash = kv__ix_hash(buf, len);
	return 0;
}

/* Whether the key stored at @loc is @key: 1 yes, 0 no, or an error. */
static int
ix_key_is(struct kv_index *ix, uint64_t loc, const void *key, size_t len)
{
	char buf[KV_INDEX_KEY_MAX];
	size_t got = 0;
	int ret;

	ix->st.key_reads++;
	ret = ix->key_at(ix->key_ctx, loc, buf, sizeof(buf), &got);
	if (ret == -ENOENT)
		return 0;
	if (ret != 0)
		return ret;
	return got == len && memcmp(buf, key, len) == 0;
}

static int
ix_check_cfg(const struct kv_index_config *cfg, bool create)
{
	if (cfg == NULL || cfg->nodes == NULL || cfg->key_at == NULL || cfg->timeout_ms == 0)
		return pm_error_set(-EINVAL, "kv_index: config needs nodes, key_at and a timeout");
	if (cfg->nnodes == 0 || cfg->nnodes % 2 == 0 || cfg->nnodes > KV_INDEX_MAX_NODES)
		return pm_error_set(-EINVAL, "kv_index: %u nodes; the group needs 1, 3, 5 or 7",
			cfg->nnodes);
	if (cfg->client_id >= (1u << KV_IXW_CID_BITS))
		return pm_error_set(-EINVAL, "kv_index: client id %u above %u", cfg->client_id,
			(1u << KV_IXW_CID_BITS) - 1);
	if (create && (cfg->max_clients == 0 || cfg->max_clients > (1u << KV_IXW_CID_BITS) ||
		cfg->recs_per_client < KV_IX_REC_CHUNK ||
		(uint64_t)cfg->max_clients * cfg->recs_per_client > (UINT64_C(1) << KV_IXW_REC_BITS)))
		return pm_error_set(-EINVAL, "kv_index: max_clients 1..1024 and recs_per_client >= %u"
			" (at most 2^28 records in all)", KV_IX_REC_CHUNK);
	return 0;
}

static int
ix_check_key(const void *key, size_t len)
{
	if (key == NULL || len == 0 || len > KV_INDEX_KEY_MAX)
		return pm_error_set(-EINVAL, "kv_index: keys are 1..%d bytes (got %zu)",
			KV_INDEX_KEY_MAX, key == NULL ? 0 : len);
	return 0;
}

static void
ix_op_begin(struct kv_index *ix)
{
	pm_error_clear();
	ix->st.ops++;
	ix->deadline = kv__ix_now_ns() + (uint64_t)ix->timeout_ms * 1000000u;
	ix->offer = 0;
	ix->offered = false;
}

/* Buckets visited per operation while a member catches up. */
#define KV_IX_CATCH_UP_STEPS 4

/*
 * A member that came back (restarted from its pool, or reconnected after
 * a partition) lacks the buckets created while it was away, and until it
 * has them those buckets need every other member: one more fault would
 * stop them. So after each revival (kv_ix_group.revivals) the handle walks
 * the tree, a few buckets after each operation that ended normally, and
 * repairs what it finds, as kv_index_scrub does (kv/DESIGN.md "Repair").
 */
static void
ix_catch_up(struct kv_index *ix)
{
	unsigned r = __atomic_load_n(&ix->g.revivals, __ATOMIC_ACQUIRE);

	if (r != ix->revivals_seen) {
		ix->revivals_seen = r;
		kv__ix_scrub_start(&ix->catch_up, 1, false);
	}
	if (ix->catch_up.top > 0)
		(void)kv__ix_scrub_run(ix, &ix->catch_up, KV_IX_CATCH_UP_STEPS);
}

static int
ix_op_end(struct kv_index *ix, int ret)
{
	ix->st.unavailable += ret == KV_E_UNAVAILABLE;
	/* Not after an error: a failed step's message would replace it. */
	if (ret == 0 || ret == -ENOENT || ret == KV_E_EXISTS)
		ix_catch_up(ix);
	return ret;
}

/* Read the record marks of f+1 members: this client's records start above
 * every mark it ever reserved (paxos.h: records are never rewritten). */
static int
ix_marks_load(struct kv_index *ix)
{
	uint64_t max;
	int ret = kv__ix_word_load(&ix->g, ix->g.region,
		ix->g.super.mark_off + (uint64_t)ix->cid * 8, ix->deadline, &max);

	if (ret != 0)
		return ret;
	ix->rec_next = ix->rec_mark = max;
	return 0;
}

static int
ix_new(struct kv_index **out, const struct kv_index_config *cfg, bool require_super,
	unsigned blank)
{
	struct kv_index *ix = calloc(1, sizeof(*ix));
	struct kv_ix_group_opts opts = { require_super, blank, KV_IX_SCRATCH, NULL, NULL,
		cfg->yield, cfg->yield_arg };
	int ret;

	if (ix == NULL)
		return pm_error_set(-ENOMEM, "kv_index: out of memory");
	ix->key_at = cfg->key_at;
	ix->publish = cfg->publish;
	ix->key_ctx = cfg->key_ctx;
	ix->cid = cfg->client_id;
	ix->timeout_ms = cfg->timeout_ms;
	ix->rng = kv__ix_now_ns() | 1;
	if (cfg->cache_entries > 0) {
		ix->nhints = 1;
		while (ix->nhints < cfg->cache_entries)
			ix->nhints *= 2;
		ix->hints = calloc(ix->nhints, sizeof(*ix->hints));
		if (ix->hints == NULL) {
			free(ix);
			return pm_error_set(-ENOMEM, "kv_index: out of memory");
		}
	}
	ret = kv__ix_group_open(&ix->g, cfg->nodes, cfg->nnodes, cfg->region, &cfg->conn,
		cfg->timeout_ms, &opts);
	if (ret != 0) {
		free(ix->hints);
		free(ix);
		return ret;
	}
	*out = ix;
	return 0;
}

static int
ix_open(struct kv_index **out, const struct kv_index_config *cfg, unsigned blank)
{
	struct kv_index *ix;
	int ret;

	pm_error_clear();
	ret = ix_check_cfg(cfg, false);
	if (ret != 0)
		return ret;
	ret = ix_new(&ix, cfg, true, blank);
	if (ret != 0)
		return ret;
	if (cfg->client_id >= ix->g.super.max_clients) {
		kv_index_close(&ix);
		return pm_error_set(-EINVAL, "kv_index: client id %u is not below the index's"
			" max_clients", cfg->client_id);
	}
	ix->deadline = kv__ix_now_ns() + (uint64_t)ix->timeout_ms * 1000000u;
	/* Members that connect during the open need no catch-up. */
	ix->revivals_seen = __atomic_load_n(&ix->g.revivals, __ATOMIC_ACQUIRE);
	ret = ix_marks_load(ix);
	if (ret == 0)
		ret = kv__ix_rec_reserve(ix, KV_IX_REC_CHUNK / 2);
	if (ret != 0) {
		kv_index_close(&ix);
		return ret;
	}
	*out = ix;
	return 0;
}

int
kv_index_open(struct kv_index **out, const struct kv_index_config *cfg)
{
	return ix_open(out, cfg, 0);
}

int
kv__ix_open_rebuilder(struct kv_index **out, const struct kv_index_config *cfg, unsigned node)
{
	return ix_open(out, cfg, 1u << node);
}

/* Format member @i of a new group: the root bucket, then the superblock
 * (last, so a node whose format did not finish never opens). */
static int
ix_format_member(struct kv_index *ix, unsigned i, const uint8_t uuid[16],
	const struct kv_index_config *cfg)
{
	struct kv_ix_member *m = &ix->g.m[i];
	struct kv_ix_super s, old;
	struct rdma_region_info info;
	uint64_t root[KV_IXB_WORDS];
	struct rdma_batch b;
	uint64_t len = 0;
	int ret;

	for (unsigned k = 0; rdma_conn_region(m->conn, k, &info) == 0; k++)
		if (info.id == ix->g.region)
			len = info.length;
	ret = kv__ix_super_make(&s, len, uuid, ix->g.n, i, cfg->max_clients, cfg->recs_per_client);
	if (ret != 0)
		return pm_error_set(ret, "kv_index_create: region %u of node %u (%llu bytes) is too"
			" small", ix->g.region, i, (unsigned long long)len);
	rdma_batch_init(&b);
	rdma_batch_read(&b, ix->g.region, 0, &old, sizeof(old));
	ret = rdma_execute(m->conn, &b);
	if (ret != 0)
		return ret;
	if (old.area.magic != 0)
		return pm_error_set(-EEXIST, "kv_index_create: node %u already holds an index", i);
	for (unsigned w = 0; w < KV_IXB_WORDS; w++)
		root[w] = KV_IX_EMPTY_WORD;
	root[KV_IXB_H0] = kv_ixb_h0(1, 0);
	rdma_batch_init(&b);
	rdma_batch_write(&b, ix->g.region, kv_ixb_off(&s, 1, 0), root, sizeof(root));
	rdma_batch_persist(&b, ix->g.region, kv_ixb_off(&s, 1, 0), sizeof(root));
	rdma_batch_write(&b, ix->g.region, 0, &s, sizeof(s));
	rdma_batch_persist(&b, ix->g.region, 0, sizeof(s));
	ret = rdma_execute(m->conn, &b);
	if (ret != 0)
		return ret;
	if (i == 0)
		ix->g.super = s;
	return 0;
}

int
kv_index_create(struct kv_index **out, const struct kv_index_config *cfg)
{
	struct kv_index *ix;
	unsigned formatted = 0;
	uint8_t uuid[16];
	int ret;

	pm_error_clear();
	ret = ix_check_cfg(cfg, true);
	if (ret != 0)
		return ret;
	if (cfg->client_id >= cfg->max_clients)
		return pm_error_set(-EINVAL, "kv_index_create: client id above max_clients");
	if (getrandom(uuid, sizeof(uuid), 0) != (ssize_t)sizeof(uuid))
		return pm_error_set(-errno, "kv_index_create: getrandom failed");
	ret = ix_new(&ix, cfg, false, 0);
	if (ret != 0)
		return ret;
	/* Every node is connected and idle here (kv__ix_group_open waited for
	 * all of them), and this thread owns the connections. */
	for (unsigned i = 0; i < ix->g.n && ret == 0; i++) {
		ret = ix_format_member(ix, i, uuid, cfg);
		if (ret == 0)
			formatted |= 1u << i;
	}
	/* A create that fails leaves no node it formatted holding an index,
	 * so it can run again (one crashed part-way does not: kv/DESIGN.md,
	 * "Failures"). */
	if (ret != 0)
		kv__ix_group_unformat(&ix->g, ix->g.region, formatted);
	kv_index_close(&ix);
	if (ret != 0)
		return ret;
	ret = kv_index_open(out, cfg);
	if (ret != 0)
		kv__ix_unformat(cfg, formatted);
	return ret;
}

void
kv__ix_unformat(const struct kv_index_config *cfg, unsigned mask)
{
	/* Opening the group may overwrite the message of the failure. */
	char *why = strdup(pm_errormsg());
	struct kv_index *ix;

	if (ix_new(&ix, cfg, false, 0) == 0) {
		kv__ix_group_unformat(&ix->g, ix->g.region, mask);
		kv_index_close(&ix);
	}
	if (why != NULL)
		pm_error_set(0, "%s", why);
	free(why);
}

int
kv_index_close(struct kv_index **ixp)
{
	struct kv_index *ix;

	if (ixp == NULL || *ixp == NULL)
		return 0;
	ix = *ixp;
	kv__ix_group_close(&ix->g);
	free(ix->hints);
	free(ix);
	*ixp = NULL;
	return 0;
}

void
kv_index_stats_read(const struct kv_index *ix, struct kv_index_stats *out)
{
	*out = ix->st;
}

uint64_t
kv__ix_fenced_posts(const struct kv_index *ix)
{
	return ix != NULL ? ix->g.fenced_posts : 0;
}

void
kv__ix_fence(struct kv_ix_group *g, struct kv_index *ix, const uint64_t *until)
{
	g->fence = until;
	if (ix != NULL)
		ix->g.fence = until;
}

void
kv__ix_crash_after(struct kv_ix_group *g, struct kv_index *ix, uint64_t *left)
{
	g->crash_left = left;
	if (ix != NULL)
		ix->g.crash_left = left;
}

/* The hint cache: direct-mapped on the key's hash. */
static struct kv_ix_hint *
ix_hint_slot(struct kv_index *ix, uint64_t h)
{
	return ix->nhints == 0 ? NULL : &ix->hints[(h >> 20) & (ix->nhints - 1)];
}

static void
ix_hint_set(struct kv_index *ix, uint64_t h, uint64_t loc)
{
	struct kv_ix_hint *e = ix_hint_slot(ix, h);

	if (e != NULL) {
		e->hash = h;
		e->loc = loc;
	}
}

static void
ix_hint_drop(struct kv_index *ix, uint64_t h)
{
	struct kv_ix_hint *e = ix_hint_slot(ix, h);

	if (e != NULL && e->hash == h)
		e->hash = 0;
}

int
kv_index_hint(struct kv_index *ix, const void *key, size_t len, uint64_t *loc)
{
	struct kv_ix_hint *e;
	uint64_t h;

	if (ix_check_key(key, len) != 0)
		return -EINVAL;
	h = kv__ix_hash(key, len);
	e = ix_hint_slot(ix, h);
	if (e == NULL || e->hash != h || h == 0)
		return -ENOENT;
	*loc = e->loc;
	return 0;
}

/* Remember that @h's bucket is at depth @d: for every hint entry whose
 * hash bits lead to it (all of them when d <= 12, so the hints are a
 * directory of the top of the tree). */
static void
ix_depth_learn(struct kv_index *ix, uint64_t h, unsigned d)
{
	const unsigned bits = 12;
	uint64_t low = h & ((UINT64_C(1) << (d < bits ? d : bits)) - 1);

	ix->last_depth = d;
	if (d >= bits) {
		ix->depth[h & KV_IX_DEPTH_MASK] = (uint8_t)(d + 1);
		return;
	}
	for (uint64_t x = 0; x < (UINT64_C(1) << (bits - d)); x++)
		ix->depth[x << d | low] = (uint8_t)(d + 1);
}

/* A lookup's first read goes to f+1 members without persists (view_read).
 * Before anything is helped, repaired or concluded from fast-round words,
 * the bucket is read again from every member, persisted. Return: whether
 * that read is still to come (@quorum was set; it is cleared). */
static bool
ix_widen(bool *quorum)
{
	bool was = *quorum;

	*quorum = false;
	return was;
}

/*
 * Find the bucket that holds @h's entries now: start at the hinted depth,
 * go up while the bucket does not exist (or is not live yet), and down
 * through decided forward words (helping a split whose forward is
 * undecided). *@v is the bucket as read; a bucket whose forward is not
 * chosen is returned even if frozen (its frozen content is current).
 * @quorum: read f+1 members where that suffices (lookups).
 */
static int
ix_locate(struct kv_index *ix, uint64_t h, struct kv_ix_view *v, bool quorum)
{
	const struct kv_ix_group *g = &ix->g;
	/* 0 = no hint for these hash bits: start where the last bucket was
	 * found (with uniform hashing most buckets are at most one level
	 * apart), then go up or down. */
	unsigned d = ix->depth[h & KV_IX_DEPTH_MASK] != 0 ? ix->depth[h & KV_IX_DEPTH_MASK] - 1u :
		ix->last_depth;
	bool via_fwd = false; /* reached through the parent's decided forward */

	for (;;) {
		uint64_t idx = kv_ixb_for(h, d);
		struct kv_ix_slot fw;
		bool converting;
		int ret;

		ret = kv__ix_deadline_check(ix);
		if (ret != 0)
			return ret;
		if (idx >= g->super.nbuckets) {
			d--;
			continue;
		}
		ret = quorum ? kv__ix_view_read_quorum(ix, idx, v) : kv__ix_view_read(ix, idx, v);
		if (ret != 0)
			return ret;
		if ((unsigned)__builtin_popcount(v->got) < g->f + 1) {
			/* From f+1 members, "not there" may only mean that one
			 * of them lacks it: ask everyone from now on. */
			if (ix_widen(&quorum))
				continue;
			if (v->got != 0 && v->behind != 0) {
				/* A compaction is installing the next
				 * incarnation: finish it on the others. */
				ret = kv__ix_repair(ix, v, v->lack);
				if (ret != 0)
					return ret;
				continue;
			}
			if (via_fwd) {
				/* The forward is chosen: make the children
				 * live (a splitter may have stopped before). */
				ret = kv__ix_flip(ix, idx / 2);
				if (ret != 0)
					return ret;
				via_fwd = false;
				continue;
			}
			/* Not created, or its parent's split is not
			 * finished: the parent answers. */
			if (d > 0)
				d--;
			continue;
		}
		via_fwd = false;
		converting = kv__ix_converting(v);
		if ((converting || v->lack != 0) && ix_widen(&quorum))
			continue;
		if (converting) {
			ret = kv__ix_split(ix, idx, v->epoch);
			if (ret != 0)
				return ret;
			continue;
		}
		if (v->lack != 0) {
			/* A member that answered lacks this live bucket (it
			 * was down when the bucket was created): give it the
			 * decided words now, while f+1 others can. */
			ret = kv__ix_repair(ix, v, v->lack);
			if (ret != 0)
				return ret;
		}
		ret = kv__ix_slot(ix, v, KV_IXB_H1, &fw);
		if (ret != 0)
			return ret;
		if (fw.a.verdict == KV_IX_TOO_FEW) {
			(void)ix_widen(&quorum);
			continue;
		}
		if ((fw.a.verdict == KV_IX_DECIDED && fw.a.stage == 0) ||
			(fw.a.verdict == KV_IX_NOT_CHOSEN && fw.a.stage == 1)) {
			/* No forward, or one proposed but not chosen at the
			 * read: the children are not live and this bucket's
			 * (possibly frozen) content is current. */
			ix_depth_learn(ix, h, d);
			return 0;
		}
		if (!(fw.a.verdict == KV_IX_DECIDED && fw.a.stage == 1)) {
			if (ix_widen(&quorum))
				continue;
			ret = kv__ix_forward_help(ix, idx, v);
			if (ret != 0)
				return ret;
		}
		ix->st.forwards++;
		via_fwd = true;
		d++;
	}
}

/*
 * Settle @word's undetermined stage (another client's unfinished change):
 * resolve it, proposing @mine if it is of that stage, else what was
 * observed. Return: 0 with *@decided (re-read the bucket); 1 if nothing
 * was learnt (nothing safe to propose, or kv__ix_resolve's 1); an error.
 */
static int
ix_settle(struct kv_index *ix, struct kv_ix_view *v, unsigned word, const struct kv_ix_slot *sl,
	uint64_t mine, uint64_t *decided)
{
	unsigned s = sl->a.stage;
	uint64_t prev = 0, dflt;

	if (s == 0)
		return 1;
	if (!kv__ix_prev(v, word, s, &prev) && kv_ixw_stage(mine) != s)
		return 1; /* nothing safe to propose; re-read */
	dflt = kv_ixw_stage(mine) == s ? mine : kv__ix_observed(v, word, s, prev);
	return kv__ix_resolve(ix, v, word, s, dflt, decided);
}

/* Whether any slot of @v is frozen or being frozen. */
static bool
ix_frozen(const struct kv_ix_view *v)
{
	for (unsigned i = 0; i < KV_IX_MAX_N; i++) {
		if (!(v->got >> i & 1))
			continue;
		for (unsigned w = KV_IXB_SLOT0; w < KV_IXB_WORDS; w++) {
			uint64_t x = v->w[i][w];

			if (!kv_ixw_valid(x, v->gen))
				continue;
			if (kv_ixw_tag(x) != KV_IXW_P && kv_ixw_frz(x))
				return true;
			if (kv_ixw_tag(x) == KV_IXW_P && v->rec_known[i][w] &&
				v->rep[i][w].acc != KV_IX_ACC_NONE && kv_ixw_frz(v->rep[i][w].acc_body))
				return true;
		}
	}
	return false;
}

int
kv_index_lookup(struct kv_index *ix, const void *key, size_t len, uint64_t *loc)
{
	return kv_index_lookup_known(ix, key, len, NULL, loc);
}

int
kv_index_lookup_known(struct kv_index *ix, const void *key, size_t len, const uint64_t *known,
	uint64_t *loc)
{
	uint64_t h, cand[KV_IXB_SLOTS];
	unsigned fp;
	int ret;

	ret = ix_check_key(key, len);
	if (ret != 0)
		return ret;
	ix_op_begin(ix);
	h = kv__ix_hash(key, len);
	fp = (unsigned)(h >> 48);
	/* f+1 members answer a lookup unless a slot that matters is
	 * mid-change there; then all of them, before resolving anything. */
	bool quorum = true;
	for (;;) {
		struct kv_ix_view v;
		unsigned nc = 0;
		bool again = false;

		ret = ix_locate(ix, h, &v, quorum);
		if (ret != 0)
			return ix_op_end(ix, ret);
		for (unsigned j = 0; j < KV_IXB_SLOTS && !again; j++) {
			unsigned word = KV_IXB_SLOT0 + j;
			struct kv_ix_slot sl;
			uint64_t dec;

			ret = kv__ix_slot(ix, &v, word, &sl);
			if (ret != 0)
				return ix_op_end(ix, ret);
			if (sl.a.verdict == KV_IX_TOO_FEW) {
				again = true;
				(void)ix_widen(&quorum);
			} else if (sl.a.verdict != KV_IX_DECIDED && sl.a.verdict != KV_IX_NOT_CHOSEN) {
				/* A slot mid-change matters only if the key's
				 * fingerprint is in it: had it been chosen, the
				 * replies would show it. */
				if (!kv__ix_word_carries_fp(&v, word, fp))
					continue;
				again = true;
				if (ix_widen(&quorum))
					continue;
				ret = ix_settle(ix, &v, word, &sl, 0, &dec);
				if (ret < 0)
					return ix_op_end(ix, ret);
				again = true;
			} else {
				kv__ix_commit_decided(ix, &v, word, &sl);
				if (kv_ix_body_maps(sl.cur) && kv_ixw_fp(sl.cur) == fp)
					cand[nc++] = kv_ixw_loc(sl.cur);
			}
		}
		if (again) {
			ret = kv__ix_deadline_check(ix);
			if (ret != 0)
				return ix_op_end(ix, ret);
			continue;
		}
		for (unsigned c = 0; c < nc; c++) {
			/* The slot maps *@known, which holds @key (the caller
			 * says): no other key can be mapped to it. */
			ret = known != NULL && cand[c] == *known ? 1 : ix_key_is(ix, cand[c], key, len);
			if (ret < 0)
				return ix_op_end(ix, ret);
			if (ret == 1) {
				*loc = cand[c];
				ix_hint_set(ix, h, cand[c]);
				return ix_op_end(ix, 0);
			}
		}
		ix_hint_drop(ix, h);
		return ix_op_end(ix, -ENOENT);
	}
}

/*
 * An insert that stopped left at most undecided proposals of @loc in the
 * incarnation of the key's bucket that was live when it ran; a slot
 * decided otherwise never chooses @loc, and its client posts nothing more
 * (a late CAS of it expects a word of that incarnation). So once the live
 * incarnation is over -- frozen slot by slot, every slot decided, then
 * compacted or split, as any helper would finish a full bucket -- @loc is
 * mapped only if a slot chose it before the freeze, which the lookup after
 * shows (the new words come from the decided content alone).
 */
int
kv_index_abandon(struct kv_index *ix, const void *key, size_t len, uint64_t loc)
{
	struct kv_ix_view v;
	uint64_t cur;
	int ret;

	ret = kv_index_lookup(ix, key, len, &cur);
	if (ret == 0 && cur == loc)
		return 0;
	if (ret != 0 && ret != -ENOENT)
		return ret;
	ix_op_begin(ix);
	ret = ix_locate(ix, kv__ix_hash(key, len), &v, false);
	if (ret == 0)
		ret = kv__ix_split(ix, v.idx, v.epoch);
	ret = ix_op_end(ix, ret);
	if (ret != 0)
		return ret;
	ix->st.abandoned++;
	ret = kv_index_lookup(ix, key, len, &cur);
	if (ret == 0)
		return cur == loc ? 0 : -ENOENT;
	return ret;
}

/* Check an entry's key and location and start an operation on it; *@h is
 * the key's hash. */
static int
ix_entry_begin(struct kv_index *ix, const void *key, size_t len, uint64_t loc, const char *who,
	uint64_t *h)
{
	int ret = ix_check_key(key, len);

	if (ret != 0)
		return ret;
	if (loc > KV_INDEX_LOC_MAX)
		return pm_error_set(-EINVAL, "%s: location above 2^35 - 1", who);
	ix_op_begin(ix);
	*h = kv__ix_hash(key, len);
	return 0;
}

/* Propose @body at its stage of @word: the fast round, else (or after
 * losing it) a classic round with @body as the default. *@ours: @body is
 * what was chosen. Return: 0; 1 if what was chosen was not learnt (a later
 * stage, or the bucket compacted: re-read); an error. */
static int
ix_propose(struct kv_index *ix, struct kv_ix_view *v, unsigned word, uint64_t body, bool *ours)
{
	uint64_t dec = 0;
	int ret = kv__ix_fast(ix, v, word, body, ours);

	if (ret != 0 || *ours)
		return ret;
	ret = kv__ix_resolve(ix, v, word, kv_ixw_stage(body), body, &dec);
	*ours = ret == 0 && dec == body;
	return ret;
}

/* What slot @word of @v, the incarnation after the one an insert of @body
 * proposed there in, says of that proposal: 1 chosen (and removed before
 * the compaction, which kept its fingerprint and location in the EMPTY,
 * word.h), 0 not chosen, -1 nothing. Only the compaction's own C words of
 * stage 0 tell: one with @body's entry, or with another entry, or the same
 * on every member (an EMPTY without an entry, on a member brought up while
 * the slot was being taken, is no evidence). */
static int
ix_unsure_outcome(struct kv_index *ix, const struct kv_ix_view *v, unsigned word, uint64_t body)
{
	const uint64_t entry = body & KV_IXW_MASK(KV_IXW_FRZ_SHIFT);
	uint64_t first = 0;
	bool other = false, differ = false;

	for (unsigned i = 0; i < ix->g.n; i++) {
		uint64_t w = v->w[i][word], was;

		if (!(v->got >> i & 1))
			continue;
		if (!kv_ixw_valid(w, v->gen) || kv_ixw_tag(w) != KV_IXW_C || kv_ixw_stage(w) != 0) {
			differ = true; /* being taken, or taken since */
			continue;
		}
		was = w & KV_IXW_MASK(KV_IXW_FRZ_SHIFT);
		if (was == entry)
			return 1;
		other |= was != 0;
		differ |= first != 0 && w != first;
		first = w;
	}
	return other || (first != 0 && !differ) ? 0 : -1;
}

/* Before @loc can be proposed: let the caller finish storing its key
 * (kv_index_config.publish), once per insert. */
static int
ix_publish(struct kv_index *ix, uint64_t loc, bool *published)
{
	int ret = 0;

	if (!*published && ix->publish != NULL)
		ret = ix->publish(ix->key_ctx, loc);
	*published = ret == 0;
	return ret;
}

int
kv_index_insert(struct kv_index *ix, const void *key, size_t len, uint64_t loc,
	uint64_t *existing)
{
	uint64_t h = 0, mine; /* set by ix_entry_begin (gcc -O2 cannot tell) */
	unsigned fp;
	bool published = false, unsure = false;
	uint32_t unsure_epoch = 0;
	unsigned unsure_word = 0; /* where the undecided proposal was */
	int ret;

	ret = ix_entry_begin(ix, key, len, loc, "kv_index_insert", &h);
	if (ret != 0)
		return ret;
	fp = (unsigned)(h >> 48);
	mine = kv_ixw_body(1, false, fp, loc);
	ix->offer = mine;
	for (;;) {
		struct kv_ix_view v;
		struct kv_ix_slot target_sl = { 0 };
		uint64_t present_loc = 0;
		int target = -1;
		bool again = false, present = false;

		ret = ix_locate(ix, h, &v, false);
		if (ret != 0)
			return ix_op_end(ix, ret);
		if (ix_frozen(&v)) {
			ret = kv__ix_split(ix, v.idx, v.epoch);
			if (ret != 0)
				return ix_op_end(ix, ret);
			continue;
		}
		/* Scan order(k). The target is the first slot whose stage 1
		 * is not decided: EMPTY, or mid-change (the no-skip rule that
		 * keeps one key in one slot: a slot is passed only once its
		 * value is decided). Every slot is checked for the key before
		 * anything is proposed: a compaction keeps entries where they
		 * were, so a slot it emptied may come before the key's entry
		 * in order(k). A change in progress that may carry the key is
		 * settled first, wherever it is. */
		for (unsigned k = 0; k < KV_IXB_SLOTS && !again; k++) {
			unsigned word = KV_IXB_SLOT0 + (fp + k) % KV_IXB_SLOTS;
			struct kv_ix_slot sl;
			uint64_t dec = 0;

			ret = kv__ix_slot(ix, &v, word, &sl);
			if (ret != 0)
				return ix_op_end(ix, ret);
			if (sl.a.verdict == KV_IX_TOO_FEW) {
				again = true;
				break;
			}
			if ((sl.a.verdict != KV_IX_DECIDED && sl.a.verdict != KV_IX_NOT_CHOSEN) ||
				(sl.a.verdict == KV_IX_NOT_CHOSEN &&
					(kv_ix_body_empty(sl.cur) ||
						(kv_ix_body_live(sl.cur) && kv_ixw_fp(sl.cur) == fp)))) {
				if (!kv__ix_word_carries_fp(&v, word, fp)) {
					if (target < 0) {
						target = (int)word;
						target_sl = sl;
					}
					continue;
				}
				ret = ix_settle(ix, &v, word, &sl, 0, &dec);
				if (ret < 0)
					return ix_op_end(ix, ret);
				if (ret == 0 && dec == mine) { /* an earlier attempt's */
					ix_hint_set(ix, h, loc);
					return ix_op_end(ix, 0);
				}
				again = true;
				break;
			}
			kv__ix_commit_decided(ix, &v, word, &sl);
			if (kv_ixw_fp(sl.cur) == fp && kv_ixw_loc(sl.cur) == loc &&
				(loc != 0 || !kv_ix_body_empty(sl.cur))) {
				/* Ours (the location is this insert's): chosen
				 * by an attempt of this call, and maybe removed
				 * since (even emptied by a compaction), or
				 * frozen. */
				ix_hint_set(ix, h, loc);
				return ix_op_end(ix, 0);
			}
			if (kv_ixw_frz(sl.cur)) {
				again = true; /* frozen since: help the split */
				break;
			}
			if (kv_ix_body_empty(sl.cur)) {
				if (target < 0) {
					target = (int)word;
					target_sl = sl;
				}
				continue;
			}
			if (kv_ix_body_live(sl.cur) && kv_ixw_fp(sl.cur) == fp && !present) {
				ret = ix_key_is(ix, kv_ixw_loc(sl.cur), key, len);
				if (ret < 0)
					return ix_op_end(ix, ret);
				if (ret == 1) {
					/* Answered once the scan is over: a
					 * slot further on may hold this insert's
					 * own entry, chosen and removed since. */
					present = true;
					present_loc = kv_ixw_loc(sl.cur);
				}
			}
		}
		if (again) {
			ret = kv__ix_deadline_check(ix);
			if (ret != 0)
				return ix_op_end(ix, ret);
			continue;
		}
		if (unsure && v.epoch != unsure_epoch) {
			/* A proposal of ours was left undecided when the
			 * bucket was compacted (an entry it chose would have
			 * stayed in its slot, unless removed). */
			int chosen = v.epoch == ((unsure_epoch + 1) & (uint32_t)KV_IXB_H0_EPOCH_MASK) ?
				ix_unsure_outcome(ix, &v, unsure_word, mine) : -1;

			if (chosen == 1) {
				ix_hint_set(ix, h, loc);
				return ix_op_end(ix, 0);
			}
			if (chosen < 0) {
				/* Its slot has been taken since: it may have
				 * been chosen and removed, and proposing again
				 * could bring a removed mapping back. */
				ix->st.unsure++;
				return ix_op_end(ix, pm_error_set(KV_E_UNAVAILABLE,
					"kv_index_insert: the bucket was compacted while the insert"
					" was undecided; it may have taken effect"));
			}
		}
		if (present) {
			if (existing != NULL)
				*existing = present_loc;
			ix_hint_set(ix, h, present_loc);
			return ix_op_end(ix, KV_E_EXISTS);
		}
		/* The scan (or, across one compaction, the slot's EMPTY)
		 * showed the stage decided, and not ours: what was accepted
		 * of our proposal can no longer be chosen. */
		unsure = false;
		ix->offered = false;
		if (target < 0) {
			ret = kv__ix_split(ix, v.idx, v.epoch);
			if (ret != 0)
				return ix_op_end(ix, ret);
			continue;
		}
		if (target_sl.a.verdict != KV_IX_DECIDED && target_sl.a.verdict != KV_IX_NOT_CHOSEN) {
			/* Undetermined: settle it, offering ours if its stage
			 * is 1, then scan again. */
			uint64_t dec = 0;

			ret = ix_publish(ix, loc, &published);
			if (ret == 0)
				ret = ix_settle(ix, &v, (unsigned)target, &target_sl, mine, &dec);
			if (ret < 0)
				return ix_op_end(ix, ret);
			if (ret == 0 && dec == mine) {
				ix_hint_set(ix, h, loc);
				return ix_op_end(ix, 0);
			}
			if (ret == 1 && ix->offered) {
				unsure = true; /* mine may have been chosen */
				unsure_epoch = v.epoch;
				unsure_word = (unsigned)target;
			}
			ret = kv__ix_deadline_check(ix);
			if (ret != 0)
				return ix_op_end(ix, ret);
			continue;
		}
		{
			bool ours;

			ret = ix_publish(ix, loc, &published);
			if (ret != 0)
				return ix_op_end(ix, ret);
			ret = ix_propose(ix, &v, (unsigned)target, mine, &ours);
			if (ret < 0)
				return ix_op_end(ix, ret);
			if (ours) {
				ix_hint_set(ix, h, loc);
				return ix_op_end(ix, 0);
			}
			if (ret == 1 && ix->offered) {
				unsure = true;
				unsure_epoch = v.epoch;
				unsure_word = (unsigned)target;
			}
		}
	}
}

int
kv_index_remove(struct kv_index *ix, const void *key, size_t len, uint64_t loc)
{
	uint64_t h = 0, live, dead; /* h: as in kv_index_insert */
	unsigned fp;
	int ret;

	ret = ix_entry_begin(ix, key, len, loc, "kv_index_remove", &h);
	if (ret != 0)
		return ret;
	fp = (unsigned)(h >> 48);
	live = kv_ixw_body(1, false, fp, loc);
	dead = kv_ixw_body(2, false, fp, loc);
	ix_hint_drop(ix, h);
	bool proposed = false; /* DEAD proposed where the mapping was LIVE */
	for (;;) {
		struct kv_ix_view v;
		int target = -1;
		bool again = false, split = false;

		ret = ix_locate(ix, h, &v, false);
		if (ret != 0)
			return ix_op_end(ix, ret);
		for (unsigned j = 0; j < KV_IXB_SLOTS && !again; j++) {
			unsigned word = KV_IXB_SLOT0 + j;
			struct kv_ix_slot sl;
			uint64_t dec, prev;

			ret = kv__ix_slot(ix, &v, word, &sl);
			if (ret != 0)
				return ix_op_end(ix, ret);
			if (sl.a.verdict == KV_IX_TOO_FEW) {
				again = true;
				break;
			}
			if (sl.a.verdict != KV_IX_DECIDED && sl.a.verdict != KV_IX_NOT_CHOSEN) {
				/* Mid-change: it matters if it carries this
				 * entry (our insert's stage 1, or its removal
				 * or freeze at stage 2). */
				if (!kv__ix_word_carries_fp(&v, word, fp))
					continue;
				if (sl.a.stage == 2 && kv__ix_prev(&v, word, 2, &prev) && prev == live) {
					ret = kv__ix_resolve(ix, &v, word, 2, dead, &dec);
					if (ret < 0)
						return ix_op_end(ix, ret);
					if (ret == 0 && dec == dead)
						return ix_op_end(ix, 0);
				} else {
					ret = ix_settle(ix, &v, word, &sl, 0, &dec);
					if (ret < 0)
						return ix_op_end(ix, ret);
				}
				again = true;
				break;
			}
			kv__ix_commit_decided(ix, &v, word, &sl);
			if (kv_ixw_loc(sl.cur) != loc || kv_ixw_fp(sl.cur) != fp)
				continue;
			if (sl.cur == live) {
				target = (int)word;
				break;
			}
			if (kv_ix_body_maps(sl.cur)) { /* FROZEN-LIVE: remove in the child */
				split = true;
				break;
			}
		}
		if (again || split) {
			if (split) {
				ret = kv__ix_split(ix, v.idx, v.epoch);
				if (ret != 0)
					return ix_op_end(ix, ret);
			}
			ret = kv__ix_deadline_check(ix);
			if (ret != 0)
				return ix_op_end(ix, ret);
			continue;
		}
		/* Gone after this call proposed DEAD over it: its DEAD (or
		 * that of another remover of the mapping, the same word) was
		 * chosen, and a compaction has emptied the slot since. */
		if (target < 0)
			return ix_op_end(ix, proposed ? 0 : -ENOENT);
		{
			bool ours;

			proposed = true;
			ret = ix_propose(ix, &v, (unsigned)target, dead, &ours);
			if (ret < 0)
				return ix_op_end(ix, ret);
			if (ours)
				return ix_op_end(ix, 0);
			/* Frozen first: the split or compaction moves the
			 * entry; retry. */
		}
	}
}

#ifdef KV_IX_TESTING
#include "kv/src/index/testing.h"

int
kv__ix_test_inject(struct kv_index *ix, unsigned member, enum rdma_fault fault,
	uint32_t delay_us)
{
	return kv__ix_fault_request(&ix->g, member, fault, delay_us, 0);
}

int
kv__ix_test_inject_once(struct kv_index *ix, unsigned member, enum rdma_fault fault,
	uint32_t delay_us)
{
	return kv__ix_fault_request(&ix->g, member, fault, delay_us, KV_IX_FAULT_ONCE);
}

void
kv__ix_test_no_compaction(struct kv_index *ix, bool on)
{
	ix->test_no_compaction = on;
}

void
kv__ix_test_stop_in_fast(struct kv_index *ix, unsigned members)
{
	ix->test_stop_fast = members;
}

void
kv__ix_test_before_resolve(struct kv_index *ix, void (*fn)(void *arg), void *arg)
{
	ix->test_before_resolve = fn;
	ix->test_before_resolve_arg = arg;
}

void
kv__ix_test_no_commit(struct kv_index *ix, bool on)
{
	ix->test_no_commit = on;
}

bool
kv__ix_test_caught_up(const struct kv_index *ix)
{
	return ix->revivals_seen != 0 && ix->catch_up.top == 0 &&
		ix->revivals_seen == __atomic_load_n(&ix->g.revivals, __ATOMIC_ACQUIRE);
}

int
kv__ix_test_format_blank(void *region, const void *other, unsigned member)
{
	struct kv_ix_super sb;
	uint64_t *root;

	memcpy(&sb, other, sizeof(sb));
	sb.member = member;
	sb.area.checksum = pm_area_sum(&sb.area);
	root = (uint64_t *)((uint8_t *)region + kv_ixb_off(&sb, 1, 0));
	for (unsigned w = 0; w < KV_IXB_WORDS; w++)
		root[w] = KV_IX_EMPTY_WORD;
	root[KV_IXB_H0] = kv_ixb_h0(1, 0);
	memcpy(region, &sb, sizeof(sb));
	return 0;
}

/* The view of bucket @idx from raw regions, records included. */
static void
offline_view(void *const *regions, unsigned n, const struct kv_ix_super *sb, uint64_t idx,
	struct kv_ix_view *v)
{
	kv__ix_view_reset(v, idx, n);
	v->persisted = true; /* the regions are what the nodes hold durably */
	v->answered = (1u << n) - 1;
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *r = regions[i];

		memcpy(v->w[i], r + kv_ixb_off(sb, idx, 0), KV_IXB_SIZE);
	}
	(void)kv__ix_view_classify(v, n, n / 2);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *r = regions[i];

		for (unsigned w = KV_IXB_H1; w < KV_IXB_WORDS; w++) {
			uint64_t p = v->w[i][w];
			struct kv_ix_rec rec;

			if (kv_ixw_tag(p) != KV_IXW_P || !kv_ixw_valid(p, v->gen) ||
				(uint64_t)kv_ixw_rec(p) >= (uint64_t)sb->max_clients * sb->recs_per_client)
				continue;
			memcpy(&rec, r + kv_ix_rec_off(sb, kv_ixw_rec(p)), sizeof(rec));
			if (kv__ix_rec_reply(&rec, kv_ixb_off(sb, idx, w), p, &v->rep[i][w]))
				v->rec_known[i][w] = true;
			else
				v->w[i][w] = 0;
		}
	}
}

/* Whether body @b maps the key of fingerprint @fp to @loc. */
static bool
offline_maps(uint64_t b, unsigned fp, uint64_t loc)
{
	return kv_ix_body_maps(b) && kv_ixw_fp(b) == fp && kv_ixw_loc(b) == loc;
}

/* Whether every value accepted at @stage of @word in @v (fast words,
 * records of classic acceptances) maps @fp to @loc. */
static bool
offline_accepted_map(const struct kv_ix_view *v, unsigned word, unsigned stage, unsigned fp,
	uint64_t loc)
{
	for (unsigned m = v->got; m != 0; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctz(m);
		uint64_t x = v->w[i][word];

		if (!kv_ixw_valid(x, v->gen) || kv_ixw_stage(x) != stage)
			continue;
		if (kv_ixw_tag(x) == KV_IXW_F && !offline_maps(x & KV_IXW_BODY_MASK, fp, loc))
			return false;
		if (kv_ixw_tag(x) == KV_IXW_P && (!v->rec_known[i][word] ||
			(v->rep[i][word].acc != KV_IX_ACC_NONE &&
				!offline_maps(v->rep[i][word].acc_body, fp, loc))))
			return false;
	}
	return true;
}

int
kv__ix_test_offline(void *const *regions, unsigned n, const void *key, size_t len,
	uint64_t loc, unsigned *present, unsigned *maybe)
{
	struct kv_index *ix = calloc(1, sizeof(*ix));
	struct kv_ix_view *v = malloc(sizeof(*v)), *child = malloc(sizeof(*child));
	uint64_t h = kv__ix_hash(key, len), idx = 1;
	unsigned fp = (unsigned)(h >> 48);
	int ret = 0;

	*present = *maybe = 0;
	if (ix == NULL || v == NULL || child == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	ix->g.n = n;
	ix->g.f = n / 2;
	memcpy(&ix->g.super, regions[0], sizeof(ix->g.super));
	if (kv__ix_super_check(&ix->g.super, ix->g.super.area.area_size, n, 0) != 0) {
		ret = PM_E_CORRUPT;
		goto out;
	}
	offline_view(regions, n, &ix->g.super, idx, v);
	if ((unsigned)__builtin_popcount(v->got) < ix->g.f + 1 &&
		!(v->got != 0 && v->behind != 0)) {
		ret = PM_E_CORRUPT;
		goto out;
	}
	for (;;) {
		struct kv_ix_slot fw;
		uint64_t c;

		ret = kv__ix_slot(ix, v, KV_IXB_H1, &fw);
		if (ret != 0)
			goto out;
		if (fw.a.verdict != KV_IX_DECIDED || fw.a.stage != 1)
			break;
		/* Chosen FWD: the child answers once live; until then (no
		 * flip yet) nothing changed there and the frozen parent holds
		 * the same entries. */
		c = 2 * idx + (h >> kv_ixb_depth(idx) & 1);
		offline_view(regions, n, &ix->g.super, c, child);
		if ((unsigned)__builtin_popcount(child->got) < ix->g.f + 1)
			break;
		idx = c;
		memcpy(v, child, sizeof(*v));
	}
	for (unsigned w = KV_IXB_SLOT0; w < KV_IXB_WORDS; w++) {
		struct kv_ix_slot sl;
		uint64_t prev = 0, c;

		/* A compaction halfway installed, or its incarnation on fewer
		 * than f+1 members: a client finishes it from these words
		 * (kv__ix_split, kv__ix_repair), all decided. */
		if (kv__ix_converted(v, w, &c) ||
			((unsigned)__builtin_popcount(v->got) < ix->g.f + 1 &&
				kv__ix_decided_single(v, w, &c) == 0)) {
			*present += kv_ix_body_maps(c) && kv_ixw_fp(c) == fp && kv_ixw_loc(c) == loc;
			continue;
		}
		ret = kv__ix_slot(ix, v, w, &sl);
		if (ret != 0)
			goto out;
		if (sl.a.verdict == KV_IX_DECIDED || sl.a.verdict == KV_IX_NOT_CHOSEN) {
			*present += kv_ix_body_maps(sl.cur) && kv_ixw_fp(sl.cur) == fp &&
				kv_ixw_loc(sl.cur) == loc;
			continue;
		}
		/* Undecided: the stage ends at the value before it or at one
		 * accepted at it (a resolver proposes nothing else unless its
		 * own operation on the key is in flight). The mapping is
		 * certain if all of them carry it (a freeze of it, decided by
		 * classic rounds on some members only), possible if one does. */
		bool prev_maps = kv__ix_prev(v, w, sl.a.stage, &prev) &&
			offline_maps(prev, fp, loc);

		if (prev_maps && offline_accepted_map(v, w, sl.a.stage, fp, loc))
			(*present)++;
		else if (prev_maps || kv__ix_word_carries_fp(v, w, fp))
			(*maybe)++;
	}
out:
	free(child);
	free(v);
	free(ix);
	return ret;
}

void
kv__ix_test_set_timeout(struct kv_index *ix, unsigned timeout_ms)
{
	ix->timeout_ms = timeout_ms;
}

uint64_t
kv__ix_test_word_off(const struct kv_index *ix, uint64_t bucket, unsigned word)
{
	return kv_ixb_off(&ix->g.super, bucket, word);
}
#endif
