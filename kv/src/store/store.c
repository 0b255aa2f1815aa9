/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/store.c -- the store's API (kv/kv.h): cluster creation,
 * client ids, allocation of objects and log space, the location cache, and
 * the operations of SWARM-KV (seed 000 sect. 5.3) over the index
 * (kv/index.h) and the replicated registers of swarm.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <xxhash.h>

#include <pm/error.h>

#include "kv/src/store/store_internal.h"

/* The location cache is 4-way set associative: a direct-mapped one lost
 * 1-2 % of the hot keys of a Zipfian workload to conflicts, each costing
 * an index lookup (benchmarks/results/kv_report.md). */
#define KV_ST_CACHE_WAYS 4u

static const struct pm_area_type kv_st_super_type = {
	"kv store superblock", KV_ST_SUPER_MAGIC, KV_ST_SUPER_VERSION,
	sizeof(struct kv_st_super)
};

void
kv_config_init(struct kv_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->index_region = 0;
	cfg->store_region = 1;
	cfg->timeout_ms = 5000;
	rdma_conn_config_init(&cfg->conn);
	cfg->cache_entries = 65536;
	cfg->recycle = 1;
	cfg->max_clients = 16;
	cfg->log_bytes = 16u << 20;
	cfg->chunk_bytes = 1u << 20;
	cfg->tick_ns = 10000;
	cfg->lease_ms = 10000;
}

static int
cfg_error(const char *fmt, const char *what)
{
	return pm_error_set(KV_E_CONFIG, fmt, what);
}

/* Check what every client needs; @create adds the creation fields. */
int
kv__st_cfg_check(const struct kv_config *cfg, bool create)
{
	if (cfg == NULL || cfg->nodes == NULL)
		return cfg_error("kv: %s", "no node list");
	if (cfg->nnodes == 0 || cfg->nnodes % 2 == 0 || cfg->nnodes > KV_MAX_NODES)
		return pm_error_set(KV_E_CONFIG,
			"kv: %u nodes; a cluster has 2f+1 nodes, 1 to %u", cfg->nnodes, KV_MAX_NODES);
	for (unsigned i = 0; i < cfg->nnodes; i++) {
		if (cfg->nodes[i] == NULL || cfg->nodes[i][0] == '\0')
			return pm_error_set(KV_E_CONFIG, "kv: node %u has no URI", i);
		for (unsigned j = 0; j < i; j++)
			if (strcmp(cfg->nodes[i], cfg->nodes[j]) == 0)
				return pm_error_set(KV_E_CONFIG, "kv: node %s is listed twice",
					cfg->nodes[i]);
	}
	if (cfg->index_region == cfg->store_region)
		return cfg_error("kv: %s", "index_region and store_region are the same region");
	if (cfg->timeout_ms == 0)
		return cfg_error("kv: %s", "timeout_ms is 0");
	if (!create)
		return 0;
	if (cfg->max_clients == 0 || cfg->max_clients > KV_MAX_CLIENTS)
		return pm_error_set(KV_E_CONFIG, "kv: max_clients %u is not in 1..%u",
			cfg->max_clients, KV_MAX_CLIENTS);
	if (cfg->log_bytes < (1u << 20) || cfg->log_bytes > KV_ST_LOG_MAX ||
		cfg->log_bytes % (1u << 20) != 0)
		return pm_error_set(KV_E_CONFIG,
			"kv: log_bytes must be a multiple of 1 MiB, at most %llu MiB",
			(unsigned long long)(KV_ST_LOG_MAX >> 20));
	if (cfg->chunk_bytes < 4096 || cfg->chunk_bytes % 4096 != 0 ||
		cfg->chunk_bytes > (UINT64_C(1) << 32))
		return cfg_error("kv: %s", "chunk_bytes must be a multiple of 4 KiB, 4 KiB..4 GiB");
	if (cfg->tick_ns == 0)
		return cfg_error("kv: %s", "tick_ns is 0");
	if (cfg->lease_ms == 0 || cfg->lease_ms > UINT32_MAX / 4)
		return cfg_error("kv: %s", "lease_ms must be in 1..2^30");
	if (cfg->timeout_ms > cfg->lease_ms)
		return cfg_error("kv: %s", "timeout_ms is above lease_ms (kv_config.lease_ms)");
	if (cfg->repl != KV_REPL_SWARM && cfg->repl != KV_REPL_ABD && cfg->repl != KV_REPL_RAW)
		return cfg_error("kv: %s", "repl is not a kv_replication");
	return 0;
}

static uint64_t
now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int
kv__st_retry(struct kv_client *c, bool idle)
{
	if (kv__ix_now_ns() >= c->deadline)
		return pm_error_set(KV_E_UNAVAILABLE,
			"kv: fewer than %u of %u nodes answered within %u ms", c->g.f + 1, c->g.n,
			c->timeout_ms);
	if (idle)
		kv__ix_sleep(&c->g, 100000);
	return 0;
}

/* The region length of @id on member @m's node, 0 if none. */
uint64_t
kv__st_region_len(const struct kv_ix_member *m, uint32_t id)
{
	struct rdma_region_info info;

	for (unsigned k = 0; rdma_conn_region(m->conn, k, &info) == 0; k++)
		if (info.id == id)
			return info.length;
	return 0;
}

static uint64_t
align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/* The superblock of member @member for a region of @len bytes. */
static int
super_make(struct kv_st_super *s, uint64_t len, const struct kv_config *cfg,
	const uint8_t uuid[16], unsigned member, uint64_t epoch_ns)
{
	uint64_t C = cfg->max_clients, fixed, nchunks;

	memset(s, 0, sizeof(*s));
	memcpy(s->uuid, uuid, 16);
	s->n = cfg->nnodes;
	s->member = member;
	s->max_clients = cfg->max_clients;
	s->tick_ns = cfg->tick_ns;
	s->epoch_ns = epoch_ns;
	s->id_off = KV_ST_SUPER_SIZE;
	s->omark_off = s->id_off + 8 * C;
	s->lmark_off = s->omark_off + 8 * C;
	s->hz_off = s->lmark_off + 8 * C;
	s->chunk_off = s->hz_off + 8 * KV_ST_HZ * C;
	s->chunk_bytes = cfg->chunk_bytes;
	s->log_bytes = cfg->log_bytes;
	s->repl = cfg->repl;
	s->lease_ms = cfg->lease_ms;
	s->timeout_ms = cfg->timeout_ms;
	fixed = s->chunk_off + 8 * KV_ST_INS_RECORDS * C + 2 * 4096 + C * cfg->log_bytes;
	if (len <= fixed)
		return -ENOSPC;
	nchunks = (len - fixed) / (cfg->chunk_bytes + 8);
	if (nchunks == 0)
		return -ENOSPC;
	s->nchunks = nchunks;
	s->ins_off = s->chunk_off + 8 * nchunks;
	s->obj_off = align_up(s->ins_off + 8 * KV_ST_INS_RECORDS * C, 4096);
	s->log_off = s->obj_off + nchunks * cfg->chunk_bytes;
	/* Object locations are 31-bit numbers of 64-byte units. */
	if (s->log_off / KV_ST_UNIT >= (UINT64_C(1) << 31))
		return -EFBIG;
	s->area.magic = KV_ST_SUPER_MAGIC;
	s->area.version = KV_ST_SUPER_VERSION;
	s->area.hdr_size = sizeof(*s);
	s->area.area_size = s->log_off + C * cfg->log_bytes;
	s->area.checksum = pm_area_sum(&s->area);
	return 0;
}

/* Whether @s is a valid superblock of the @n-node group @uuid for a region
 * of @len. */
int
kv__st_super_check(const struct kv_st_super *s, uint64_t len, unsigned n, const uint8_t uuid[16])
{
	int ret = pm_area_check(&s->area, &kv_st_super_type, "kv");

	if (ret != 0)
		return ret;
	if (s->n != n || memcmp(s->uuid, uuid, 16) != 0)
		return pm_error_set(KV_E_GROUP, "kv: the store region belongs to another cluster");
	if (s->area.area_size > len || s->max_clients == 0 || s->max_clients > KV_MAX_CLIENTS ||
		s->tick_ns == 0 || s->lease_ms == 0 || s->timeout_ms == 0 ||
		s->timeout_ms > s->lease_ms || s->repl > KV_REPL_RAW || s->log_bytes == 0 || s->log_bytes > KV_ST_LOG_MAX ||
		s->chunk_bytes < 4096 || s->nchunks == 0 ||
		s->omark_off != s->id_off + 8u * s->max_clients ||
		s->lmark_off != s->omark_off + 8u * s->max_clients ||
		s->hz_off != s->lmark_off + 8u * s->max_clients ||
		s->chunk_off != s->hz_off + 8u * KV_ST_HZ * s->max_clients ||
		s->ins_off != s->chunk_off + 8 * s->nchunks ||
		s->obj_off < s->ins_off + 8u * KV_ST_INS_RECORDS * s->max_clients ||
		s->log_off != s->obj_off + s->nchunks * s->chunk_bytes ||
		s->area.area_size != s->log_off + s->max_clients * s->log_bytes)
		return pm_error_set(KV_E_GROUP, "kv: store superblock geometry is inconsistent");
	return 0;
}

/* The index's key_at: the key stored in the object at @loc. */
static int
st_key_at(void *ctx, uint64_t loc, void *buf, size_t cap, size_t *len)
{
	return kv__sw_key_read(ctx, loc, buf, cap, len);
}

/* The index's publish: the object an insert maps is on f+1 members. */
static int
st_publish(void *ctx, uint64_t loc)
{
	(void)loc;
	return kv__sw_create_finish(ctx);
}

void
kv__st_index_cfg(struct kv_index_config *icfg, const struct kv_config *cfg, struct kv_client *ctx,
	unsigned cid)
{
	kv_index_config_init(icfg);
	icfg->nodes = cfg->nodes;
	icfg->nnodes = cfg->nnodes;
	icfg->region = cfg->index_region;
	icfg->client_id = cid;
	icfg->timeout_ms = cfg->timeout_ms;
	icfg->conn = cfg->conn;
	icfg->key_at = st_key_at;
	icfg->publish = st_publish;
	icfg->key_ctx = ctx;
	icfg->cache_entries = 0; /* the store caches locations itself */
	if (ctx != NULL) {
		icfg->yield = ctx->g.yield;
		icfg->yield_arg = ctx->g.yield_arg;
	}
	if (cfg->max_clients != 0)
		icfg->max_clients = cfg->max_clients;
}

/* The group's admission test (kv_ix_admit_fn): the node's store region
 * holds this cluster's superblock. A node whose pool was lost and whose
 * index was rebuilt has none, so its value words -- which went back to
 * zero -- never count towards a majority (kv/DESIGN.md, "Store:
 * durability"). */
bool
kv__st_admit(void *ctx, struct kv_ix_group *g, unsigned i)
{
	struct kv_client *c = ctx;
	struct kv_ix_member *m = &g->m[i];
	struct kv_st_super s;
	struct rdma_batch b;

	rdma_batch_init(&b);
	if (rdma_batch_read(&b, c->region, 0, &s, sizeof(s)) != 0 ||
		rdma_execute(m->conn, &b) != 0)
		return false;
	if (kv__st_super_check(&s, kv__st_region_len(m, c->region), g->n, g->uuid) != 0)
		return false;
	if (s.member != i)
		pm_error_set(KV_E_GROUP, "kv: the store region is member %u's, not %u's", s.member, i);
	return s.member == i;
}

/* Open the value connections; @create: the store regions are not
 * formatted yet (kv_create), so admit on the index superblock alone. */
static int
group_open(struct kv_client *c, const struct kv_config *cfg, bool create,
	void (*yield)(void *), void *yield_arg)
{
	struct kv_ix_group_opts opts = { true, 0, KV_ST_SCRATCH, create ? NULL : kv__st_admit, c,
		yield, yield_arg };

	c->region = cfg->store_region;
	c->timeout_ms = cfg->timeout_ms;
	return kv__ix_group_open(&c->g, cfg->nodes, cfg->nnodes, cfg->index_region, &cfg->conn,
		cfg->timeout_ms, &opts);
}

/* Zero [@from, @to) of member @m's store region, durably, 64 KiB a batch.
 * A piece already zero (a new pool) is only read: no write, no persist. */
static int
region_zero(struct kv_ix_member *m, uint32_t region, uint64_t from, uint64_t to)
{
	static const char zeros[64u << 10];
	int ret = 0;

	for (uint64_t off = from; off < to && ret == 0; off += sizeof(zeros)) {
		size_t n = to - off < sizeof(zeros) ? (size_t)(to - off) : sizeof(zeros);

		rdma_batch_init(&m->batch);
		ret = rdma_batch_read(&m->batch, region, off, m->buf, n);
		if (ret == 0)
			ret = rdma_execute(m->conn, &m->batch);
		if (ret != 0 || memcmp(m->buf, zeros, n) == 0)
			continue;
		rdma_batch_init(&m->batch);
		ret = rdma_batch_write(&m->batch, region, off, zeros, n);
		if (ret == 0)
			ret = rdma_batch_persist(&m->batch, region, off, n);
		if (ret == 0)
			ret = rdma_execute(m->conn, &m->batch);
	}
	return ret;
}

int
kv_create(const struct kv_config *cfg)
{
	struct kv_index_config icfg;
	struct kv_index *ix = NULL;
	struct kv_client *c;
	uint64_t epoch = now_ns(CLOCK_REALTIME);
	unsigned mask, stored = 0;
	int ret;

	pm_error_clear();
	ret = kv__st_cfg_check(cfg, true);
	if (ret != 0)
		return ret;
	kv__st_index_cfg(&icfg, cfg, NULL, 0);
	ret = kv_index_create(&ix, &icfg);
	if (ret != 0)
		return ret;
	kv_index_close(&ix);
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		ret = pm_error_set(-ENOMEM, "kv_create: out of memory");
		goto undo;
	}
	ret = group_open(c, cfg, true, NULL, NULL);
	if (ret != 0) {
		free(c);
		goto undo;
	}
	mask = kv__ix_round_begin(&c->g);
	if (mask != (1u << c->g.n) - 1)
		ret = pm_error_set(KV_E_UNAVAILABLE, "kv_create: every node must be reachable");
	for (unsigned i = 0; i < c->g.n && ret == 0; i++) {
		struct kv_ix_member *m = &c->g.m[i];
		struct kv_st_super s, old;
		uint64_t len = kv__st_region_len(m, c->region);

		ret = super_make(&s, len, cfg, c->g.uuid, i, epoch);
		if (ret != 0) {
			ret = pm_error_set(ret == -EFBIG ? KV_E_CONFIG : -ENOSPC,
				"kv_create: store region %u of node %u (%llu bytes) %s", c->region, i,
				(unsigned long long)len,
				ret == -EFBIG ? "is larger than 128 GiB" : "is too small");
			break;
		}
		rdma_batch_init(&m->batch);
		rdma_batch_read(&m->batch, c->region, 0, &old, sizeof(old));
		ret = rdma_execute(m->conn, &m->batch);
		if (ret == 0 && old.area.magic != 0)
			ret = pm_error_set(-EEXIST, "kv_create: node %u already holds a store", i);
		if (ret != 0)
			break;
		/* The words the layout starts with must be zero. A region
		 * used before and wiped to create again (its superblocks
		 * only: all that kv_create and kv_index_create look at)
		 * still holds the old store's id claims, marks, hazards,
		 * chunk claims, insert records and objects, whose metadata
		 * words would outrank the new store's and name old buffers
		 * (KvCrash.CreateOverAUsedStore): zero everything below the
		 * logs, durably, before the superblock, which goes last. The
		 * logs need not be: a buffer is read only through a metadata
		 * word, and a log mark, zero now, bounds what the id's next
		 * life walks. */
		ret = region_zero(m, c->region, s.id_off, s.log_off);
		if (ret != 0)
			break;
		rdma_batch_init(&m->batch);
		rdma_batch_write(&m->batch, c->region, 0, &s, sizeof(s));
		rdma_batch_persist(&m->batch, c->region, 0, sizeof(s));
		ret = rdma_execute(m->conn, &m->batch);
		if (ret == 0)
			stored |= 1u << i;
	}
	/* A create that fails leaves no node it formatted holding a store or
	 * an index, so it can run again (kv__ix_group_unformat). */
	if (ret != 0)
		kv__ix_group_unformat(&c->g, c->region, stored);
	kv__ix_group_close(&c->g);
	free(c);
undo:
	if (ret != 0)
		kv__ix_unformat(&icfg, (1u << cfg->nnodes) - 1);
	return ret;
}

/* Read the superblock from f+1 members and keep a valid one. */
static int
super_load(struct kv_client *c)
{
	for (;;) {
		unsigned mask = kv__ix_round_begin(&c->g), ok;
		int ret, bad = 0;

		for (unsigned i = 0; i < c->g.n; i++)
			if ((mask >> i & 1) && rdma_batch_read(&c->g.m[i].batch, c->region, 0,
				c->g.m[i].buf, sizeof(struct kv_st_super)) != 0)
				mask &= ~(1u << i);
		ok = kv__ix_round_run(&c->g, mask, c->g.f + 1, c->deadline);
		for (unsigned i = 0; i < c->g.n; i++) {
			struct kv_st_super s;

			if (!(ok >> i & 1))
				continue;
			memcpy(&s, c->g.m[i].buf, sizeof(s));
			ret = kv__st_super_check(&s, kv__st_region_len(&c->g.m[i], c->region), c->g.n, c->g.uuid);
			if (ret == 0) {
				c->sb = s;
				c->C = s.max_clients;
				return 0;
			}
			bad = ret;
		}
		if (bad != 0)
			return bad;
		ret = kv__st_retry(c, ok == 0);
		if (ret != 0)
			return ret;
	}
}

/* An empty table of this client's value log (recycle.h). */
static int
st_rc_init(struct kv_client *c)
{
	return kv__rc_init(&c->rc, (uint32_t)(c->sb.log_bytes / KV_ST_BUF_UNIT),
		(uint32_t)((sizeof(struct kv_st_vhdr) + KV_VALUE_MAX + KV_ST_BUF_UNIT - 1) /
			KV_ST_BUF_UNIT));
}

/* Load this client id's marks: allocation resumes above them. */
static int
marks_load(struct kv_client *c)
{
	uint64_t omark, lmark;
	int ret;

	ret = kv__ix_word_load(&c->g, c->region, c->sb.omark_off + 8u * c->cid, c->deadline,
		&omark);
	if (ret == 0)
		ret = kv__ix_word_load(&c->g, c->region, c->sb.lmark_off + 8u * c->cid, c->deadline,
			&lmark);
	if (ret != 0)
		return ret;
	c->chunk_seq = omark >> 32; /* its chunk: kv__st_obj_chunks_load */
	c->obj_used = c->obj_mark = omark & UINT32_MAX;
	c->log_used = c->log_mark = c->log_mark_open = lmark;
	return 0;
}

/*
 * What an earlier life of this client id may have left in flight: on the
 * local backend nothing (a batch runs inside rdma_post), so its log is
 * recovered now; over a network, batches it abandoned may land for the
 * cluster's timeout T, so the recovery waits that long (done at the end of
 * a later operation), and a hazard slot it left up (f+1 members read) stays
 * taken until then. The hazard words' sequence numbers start at random,
 * so that a late clear of the earlier life matches none of this one's.
 */
static void
st_earlier_life(struct kv_client *c)
{
	bool local = true;
	/* The earlier life's batches are bounded by the cluster's timeout T,
	 * not by this life's own (which may be shorter). */
	uint64_t later = kv__ix_now_ns() + c->inflight_ns;

	for (unsigned i = 0; i < c->g.n; i++)
		local &= strncmp(c->g.m[i].uri, "local:", 6) == 0;
	if (getrandom(&c->hz_seq, sizeof(c->hz_seq), 0) != (ssize_t)sizeof(c->hz_seq))
		c->hz_seq = (uint64_t)later;
	c->hz_seq &= UINT32_MAX;
	if (!c->recycle)
		return;
	if (local) {
		(void)kv__st_log_recover(c);
		return;
	}
	c->recover_at = later;
	for (unsigned s = 0; s < KV_ST_HZ; s++) {
		uint64_t hz = 1; /* unknown: taken */

		(void)kv__ix_word_load(&c->g, c->region,
			c->sb.hz_off + 8u * ((uint64_t)c->cid * KV_ST_HZ + s), c->deadline, &hz);
		if (hz != 0)
			c->hz_free_at[s] = later;
	}
}

/*
 * Take a client id and what goes with it: the lease, the marks, the
 * earlier lives' log and hazard slots, and the index handle (whose records
 * and marks are per id), fenced by the lease like the value connections.
 */
static int
st_register(struct kv_client *c, const struct kv_config *cfg)
{
	struct kv_index_config icfg;
	int ret = kv__st_lease_claim(c);

	if (ret != 0)
		return ret;
	ret = marks_load(c);
	if (ret == 0)
		ret = kv__st_obj_chunks_load(c);
	if (ret == 0 && c->recycle && c->sb.repl != KV_REPL_RAW)
		ret = kv__st_obj_unsure_load(c);
	if (ret == 0) {
		st_earlier_life(c);
		kv__st_index_cfg(&icfg, cfg, c, c->cid);
		ret = kv_index_open(&c->ix, &icfg);
	}
	if (ret != 0) {
		/* Give the id back (best effort: else the others free it),
		 * with time of its own: the open may have failed at its
		 * deadline (kv_client_crash_test saw ids left claimed). */
		c->deadline = kv__ix_now_ns() + (uint64_t)c->timeout_ms * 1000000u;
		(void)kv__st_lease_release(c);
		c->id_tag = 0;
		return ret;
	}
	kv__ix_fence(&c->g, c->ix, &c->lease_end);
	if (c->g.crash_left != NULL) /* a new index handle */
		kv__ix_crash_after(&c->g, c->ix, c->g.crash_left);
	return 0;
}

/*
 * The client was taken for dead and its id given up (kv__st_lease_keep
 * returned -EOWNERDEAD): nothing it posts reaches a node any more. Drop
 * what belonged to that id -- the cached slot words, the table of its
 * log, its hazard slots, its marks, the index handle -- and register
 * again under a new id, on the connections it has. What it wrote stays
 * where it is: the next holder of the old id recovers that log.
 */
static int
st_reregister(struct kv_client *c)
{
	const char *uris[KV_MAX_NODES];
	struct kv_config cfg;
	int ret;

	kv_config_init(&cfg);
	for (unsigned i = 0; i < c->g.n; i++)
		uris[i] = c->g.m[i].uri;
	cfg.nodes = uris;
	cfg.nnodes = c->g.n;
	cfg.index_region = c->g.region;
	cfg.store_region = c->region;
	cfg.timeout_ms = c->timeout_ms;
	cfg.conn = c->g.conn_cfg;
	kv_index_close(&c->ix);
	kv__rc_fini(&c->rc);
	kv__st_obj_forget(c);
	memset(&c->rc, 0, sizeof(c->rc));
	memset(c->hz, 0, sizeof(c->hz));
	memset(c->hz_free_at, 0, sizeof(c->hz_free_at));
	c->recover_at = 0;
	if (c->cache != NULL)
		memset(c->cache, 0, (size_t)c->ncache * sizeof(*c->cache));
	c->st.reregistrations++;
	ret = st_rc_init(c);
	return ret != 0 ? ret : st_register(c, &cfg);
}

int
kv_open(struct kv_client **out, const struct kv_config *cfg)
{
	return kv__st_open(out, cfg, NULL, NULL);
}

int
kv__st_open(struct kv_client **out, const struct kv_config *cfg, void (*yield)(void *),
	void *yield_arg)
{
	struct kv_client *c;
	int ret;

	pm_error_clear();
	*out = NULL;
	ret = kv__st_cfg_check(cfg, false);
	if (ret != 0)
		return ret;
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->val = malloc(KV_VALUE_MAX);
	if (cfg->cache_entries != 0) {
		unsigned n = KV_ST_CACHE_WAYS;

		while (n < cfg->cache_entries && n < (1u << 30))
			n <<= 1;
		c->cache = calloc(n, sizeof(*c->cache));
		c->ncache = n;
	}
	if (c->val == NULL || (cfg->cache_entries != 0 && c->cache == NULL)) {
		free(c->val);
		free(c->cache);
		free(c);
		return -ENOMEM;
	}
	ret = group_open(c, cfg, false, yield, yield_arg);
	if (ret != 0) {
		free(c->val);
		free(c->cache);
		free(c);
		return ret;
	}
	c->deadline = kv__ix_now_ns() + (uint64_t)cfg->timeout_ms * 1000000u;
	ret = super_load(c);
	if (ret == 0)
		ret = st_rc_init(c);
	if (ret == 0)
		ret = kv__st_obj_init(c);
	if (ret == 0 && cfg->timeout_ms > c->sb.timeout_ms)
		ret = pm_error_set(KV_E_CONFIG,
			"kv_open: timeout_ms %u is above the cluster's %u (kv_config.timeout_ms at kv_create)",
			cfg->timeout_ms, c->sb.timeout_ms);
	if (ret != 0)
		goto fail;
	c->lease_ns = (uint64_t)c->sb.lease_ms * 1000000u;
	c->inflight_ns = (uint64_t)c->sb.timeout_ms * 1000000u;
	c->recycle = cfg->recycle != 0;
	c->skew_ticks = cfg->clock_skew_us * 1000 / (int64_t)c->sb.tick_ns;
	ret = st_register(c, cfg);
	if (ret != 0)
		goto fail;
	*out = c;
	return 0;

fail: {
	/* kv_close's own calls clear the message: keep this failure's */
	char why[256];

	snprintf(why, sizeof(why), "%s", pm_errormsg());
	kv_close(&c);
	return pm_error_set(ret, "%s", why);
}
}

int
kv_close(struct kv_client **cp)
{
	struct kv_client *c;
	int ret = 0;

	if (cp == NULL || *cp == NULL)
		return 0;
	c = *cp;
	kv_index_close(&c->ix);
	c->deadline = kv__ix_now_ns() + (uint64_t)c->timeout_ms * 1000000u;
	/* The lease must cover what follows, or the id may be another's. */
	if (c->id_tag != 0 && kv__st_lease_keep(c) != 0)
		c->id_tag = 0;
	if (c->id_tag != 0) {
		/* Settle the marks at what was used, so the next client with
		 * this id wastes nothing (best effort: a higher mark only
		 * wastes). */
		(void)kv__ix_word_store(&c->g, c->region, c->sb.lmark_off + 8u * c->cid,
			c->log_used, c->deadline);
		(void)kv__ix_word_store(&c->g, c->region, c->sb.omark_off + 8u * c->cid,
			c->chunk_seq << 32 | c->obj_used, c->deadline);
		/* Hazards left up (a write-back whose batches had not settled)
		 * would keep other clients' buffers from reuse: clear each once
		 * its batches settled; one that does not settle in time stays. */
		for (unsigned s = 0; s < KV_ST_HZ; s++) {
			if (c->hz[s] == 0)
				continue;
			while (!kv__ix_settled(&c->g, &c->hz_from[s], &c->hz_to[s]) &&
				kv__ix_now_ns() < c->deadline) {
				kv__ix_sleep(&c->g, 50000);
				(void)kv__ix_round_begin(&c->g);
			}
			if (kv__ix_settled(&c->g, &c->hz_from[s], &c->hz_to[s]))
				(void)kv__ix_word_store(&c->g, c->region,
					c->sb.hz_off + 8u * ((uint64_t)c->cid * KV_ST_HZ + s), 0,
					c->deadline);
		}
		ret = kv__st_lease_release(c);
	}
	kv__ix_group_close(&c->g);
	kv__rc_fini(&c->rc);
	kv__st_obj_fini(c);
	free(c->val);
	free(c->cache);
	free(c);
	*cp = NULL;
	return ret;
}

void
kv_stats_read(const struct kv_client *c, struct kv_stats *out)
{
	*out = c->st;
	out->log_used = c->log_used;
	out->fenced_posts = c->g.fenced_posts + kv__ix_fenced_posts(c->ix);
}

#ifdef KV_ST_TESTING
#include "kv/src/index/testing.h"
#include "kv/src/store/testing.h"

void
kv__st_test_no_verify(struct kv_client *c, bool on)
{
	c->test_no_verify = on;
}

void
kv__st_test_write_back_hook(struct kv_client *c, void (*hook)(void *), void *arg, bool unsafe)
{
	c->test_wb_hook = hook;
	c->test_wb_arg = arg;
	c->test_wb_unsafe = unsafe;
}

int
kv__st_test_reclaim(struct kv_client *c)
{
	int ret;

	c->deadline = kv__ix_now_ns() + (uint64_t)c->timeout_ms * 1000000u;
	ret = kv__st_reclaim(c, true);
	return ret != 0 ? ret : kv__st_reclaim(c, true);
}

int
kv__st_test_inject_once(struct kv_client *c, unsigned member, enum rdma_fault fault,
	uint32_t delay_us)
{
	return kv__ix_fault_request(&c->g, member, fault, delay_us, KV_IX_FAULT_ONCE);
}

int
kv__st_test_inject(struct kv_client *c, unsigned member, enum rdma_fault fault, uint32_t delay_us)
{
	return kv__ix_fault_request(&c->g, member, fault, delay_us, 0);
}

int
kv__st_test_open(struct kv_client **out, const struct kv_config *cfg, void (*yield)(void *),
	void *arg)
{
	return kv__st_open(out, cfg, yield, arg);
}

void
kv__st_test_abandon(struct kv_client **cp)
{
	(*cp)->id_tag = 0;
	kv_close(cp);
}

void
kv__st_test_skip_renewal(struct kv_client *c, bool on)
{
	c->test_skip_renewal = on;
}

void
kv__st_test_cache_forever(struct kv_client *c, bool on)
{
	c->test_cache_forever = on;
}

void
kv__st_test_crash_after(struct kv_client *c, uint64_t posts)
{
	c->test_crash_left = posts;
	kv__ix_crash_after(&c->g, c->ix, &c->test_crash_left);
}

void
kv__st_test_hold_unsure(struct kv_client *c, bool on)
{
	c->test_hold_unsure = on;
}

void
kv__st_test_no_grace(struct kv_client *c, bool on)
{
	c->test_no_grace = on;
}

void
kv__st_test_crash_at(struct kv_client *c, enum kv_st_test_point at)
{
	kv__st_test_crash_after(c, UINT64_MAX);
	c->test_crash_at = at;
}

uint64_t
kv__st_test_posts_left(const struct kv_client *c)
{
	return c->test_crash_left;
}

struct kv_index *
kv__st_test_index(struct kv_client *c)
{
	return c->ix;
}

void
kv__st_test_set_timeout(struct kv_client *c, unsigned timeout_ms)
{
	c->timeout_ms = timeout_ms;
	kv__ix_test_set_timeout(c->ix, timeout_ms);
}
#endif

/* The clock, in ticks since the store's epoch, with this client's skew
 * (may be below 1 for a clock set far back). */
static int64_t
clock_ticks(const struct kv_client *c)
{
	return (int64_t)((now_ns(CLOCK_REALTIME) - c->sb.epoch_ns) / c->sb.tick_ns) +
		c->skew_ticks;
}

uint64_t
kv__st_ts_guess(struct kv_client *c, uint64_t above)
{
	int64_t t = clock_ticks(c);
	uint64_t ts = t > 1 ? (uint64_t)t : 1;

	/* Assumption 1 of App. C: every timestamp a client uses is above all
	 * its previous ones. */
	if (ts <= c->last_ts)
		ts = c->last_ts + 1;
	if (ts <= above)
		ts = above + 1;
	c->last_ts = ts;
	return ts;
}

void
kv__st_ts_resync(struct kv_client *c, uint64_t seen_ts)
{
	int64_t now = clock_ticks(c);

	if (seen_ts >= KV_ST_TS_MAX || (int64_t)seen_ts < now)
		return;
	c->skew_ticks += (int64_t)seen_ts - now + 1;
}

uint64_t
kv__st_log_off(const struct kv_client *c, unsigned w, uint64_t ptr)
{
	return c->sb.log_off + (uint64_t)w * c->sb.log_bytes + ptr * KV_ST_BUF_UNIT;
}

/*
 * Take @need more of what *@used counts (bytes of the log, 64-byte units of
 * the object chunk), raising the mark word at @mark_off (which holds @tag |
 * mark) first when it would pass *@mark: ahead by @step, at most @cap. A
 * client that restarts resumes above the mark, never below what it used.
 */
static int
mark_take(struct kv_client *c, uint64_t mark_off, uint64_t tag, uint64_t *used, uint64_t *mark,
	uint64_t need, uint64_t step, uint64_t cap, uint64_t *start)
{
	if (*used + need > *mark) {
		uint64_t m = *used + need + step < cap ? *used + need + step : cap;
		int ret = kv__ix_word_store(&c->g, c->region, mark_off, tag | m, c->deadline);

		c->st.rounds++;
		if (ret != 0)
			return ret;
		*mark = m;
	}
	*start = *used;
	*used += need;
	return 0;
}

int
kv__st_log_alloc(struct kv_client *c, uint64_t loc, uint64_t ts, uint32_t bytes, uint64_t *ptr,
	uint64_t *off)
{
	uint32_t units = bytes / KV_ST_BUF_UNIT, p;
	uint64_t start;
	int ret;

	if (clock_ticks(c) >= (int64_t)KV_ST_TS_MAX - 2 || c->last_ts >= KV_ST_TS_MAX - 2)
		return pm_error_set(-EOVERFLOW, "kv: the store's timestamps are used up");
	/* Room to track the buffer, before anything takes effect. */
	if (kv__rc_reserve(&c->rc, loc) != 0)
		return pm_error_set(-ENOMEM, "kv: out of memory for the buffer table");
	if (kv__rc_take(&c->rc, units, &p) == 0) {
		start = (uint64_t)p * KV_ST_BUF_UNIT;
	} else if (c->log_used + bytes <= c->sb.log_bytes) {
		ret = mark_take(c, c->sb.lmark_off + 8u * c->cid, 0, &c->log_used, &c->log_mark,
			bytes, KV_ST_LOG_STEP, c->sb.log_bytes, &start);
		if (ret != 0)
			return ret;
	} else {
		/* Full: wait for what is retired to become free, sweeping the
		 * table for writes others superseded; every live buffer
		 * checked once and nothing freed: full of live values. */
		size_t rounds = c->rc.live_n / KV_RC_VERIFY + 3;

		while (kv__rc_take(&c->rc, units, &p) != 0) {
			if (rounds-- == 0 || !c->recycle)
				return pm_error_set(-ENOSPC,
					"kv: client %u's log (%llu bytes) is full of live values",
					c->cid, (unsigned long long)c->sb.log_bytes);
			ret = kv__st_reclaim(c, true);
			if (ret != 0)
				return ret;
		}
		start = (uint64_t)p * KV_ST_BUF_UNIT;
	}
	*ptr = start / KV_ST_BUF_UNIT;
	*off = kv__st_log_off(c, c->cid, *ptr);
	kv__rc_hold(&c->rc, loc, kv_st_order(kv_st_meta(ts, *ptr, 1), c->cid), (uint32_t)*ptr,
		units);
	return 0;
}

/* At the end of an operation: a round trip once a reclaim is due
 * (kv__rc_due; the first call only seals what is retired, the next
 * frees it), one per 16 operations while recovered buffers
 * remain unverified or the log is pressed (the sweep), and the recovery
 * of an earlier life's log once its batches have had time to land. */
static void
st_recycle_tick(struct kv_client *c)
{
	if (c->recover_at != 0 && kv__ix_now_ns() >= c->recover_at) {
		c->recover_at = 0;
		(void)kv__st_log_recover(c);
	}
	if (kv__rc_due(&c->rc) ||
		((c->rc.unverified_n > 0 || kv__st_log_pressed(c)) && c->st.ops % 16 == 0))
		(void)kv__st_reclaim(c, false);
}

void
kv__st_unmapped(struct kv_client *c, uint64_t loc)
{
	if (!c->recycle)
		return;
	kv__rc_superseded(&c->rc, loc, UINT64_MAX);
	st_recycle_tick(c);
}

void
kv__st_superseded(struct kv_client *c, uint64_t loc, uint64_t top, unsigned w)
{
	if (!c->recycle)
		return;
	kv__rc_superseded(&c->rc, loc, kv_st_order(top, w));
	st_recycle_tick(c);
}

/* A new object of @units 64-byte units: its offset into *@off. Chunks are
 * claimed on a majority (kv__ix_claim), the use of the current one is
 * reserved ahead in this client's object mark. */
static int
obj_alloc(struct kv_client *c, uint64_t units, uint64_t *off)
{
	uint64_t chunk_units = c->sb.chunk_bytes / KV_ST_UNIT, start;
	int ret;

	if (units > chunk_units)
		return pm_error_set(-E2BIG, "kv: an object of %llu bytes exceeds a chunk",
			(unsigned long long)(units * KV_ST_UNIT));
	kv__st_obj_settle(c);
	ret = kv__st_obj_take(c, units, off);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	kv__st_obj_sweep(c);
	if (c->chunk == 0 || c->obj_used + units > chunk_units) {
		uint64_t first = c->chunk != 0 ? c->chunk : (uint64_t)c->cid * 7919u;
		bool won = false;

		ret = kv__st_obj_chunk_spare(c);
		if (ret != 0)
			return ret;
		for (uint64_t k = 0; k < c->sb.nchunks && !won; k++) {
			uint64_t idx = (first + k) % c->sb.nchunks;
			uint64_t woff = c->sb.chunk_off + 8u * idx, seq = c->seq_next++, owner;

			/* A new number per claim, above every one this id
			 * used: a chunk it filled before holds an older one,
			 * so claiming it again does not "win" it (kv__ix_claim
			 * counts a word that already holds the owner as won),
			 * and the id's next life knows a chunk won after the
			 * last mark (kv__st_obj_chunks_load). Low byte: the
			 * client id + 1. */
			if (seq > UINT32_MAX)
				return pm_error_set(-ENOSPC, "kv: client id %u made 2^32 chunk claims",
					c->cid);
			owner = seq << 8 | (c->cid + 1u);
			ret = kv__ix_claim(&c->g, c->region, woff, owner, c->deadline, &won);
			c->st.rounds++;
			if (ret != 0)
				return ret;
			if (won) {
				kv__st_test_point(c, KV_ST_TEST_AT_CLAIM);
				c->chunk = idx + 1;
				c->chunk_seq = seq;
				c->obj_used = c->obj_mark = 0;
				kv__st_obj_chunk_mine(c, idx);
			} else {
				ret = kv__ix_unclaim(&c->g, c->region, woff, owner, c->deadline);
				if (ret != 0)
					return ret;
			}
		}
		if (!won)
			return pm_error_set(-ENOSPC, "kv: every object chunk is taken");
	}
	ret = mark_take(c, c->sb.omark_off + 8u * c->cid, c->chunk_seq << 32, &c->obj_used,
		&c->obj_mark, units, KV_ST_OBJ_STEP, chunk_units, &start);
	if (ret != 0)
		return ret;
	*off = c->sb.obj_off + (c->chunk - 1) * c->sb.chunk_bytes + start * KV_ST_UNIT;
	return 0;
}

static uint64_t
key_hash(const void *key, size_t klen)
{
	uint64_t h = XXH3_64bits(key, klen);

	return h != 0 ? h : 1;
}

/* The set of @h: KV_ST_CACHE_WAYS entries, or NULL without a cache. */
static struct kv_st_cent *
cache_set(struct kv_client *c, uint64_t h)
{
	if (c->ncache == 0)
		return NULL;
	return &c->cache[(h & (c->ncache / KV_ST_CACHE_WAYS - 1)) * KV_ST_CACHE_WAYS];
}

/* The entry of @h, or NULL. */
static struct kv_st_cent *
cache_find(struct kv_client *c, uint64_t h)
{
	struct kv_st_cent *set = cache_set(c, h);

	for (unsigned w = 0; set != NULL && w < KV_ST_CACHE_WAYS; w++)
		if (set[w].hash == h)
			return &set[w];
	return NULL;
}

static int
key_check(const void *key, size_t klen)
{
	if (key == NULL || klen == 0)
		return pm_error_set(-EINVAL, "kv: empty key");
	if (klen > KV_KEY_MAX)
		return pm_error_set(-E2BIG, "kv: key of %zu bytes (at most %u)", klen, KV_KEY_MAX);
	return 0;
}

static int
val_check(const void *val, size_t vlen)
{
	if (val == NULL && vlen != 0)
		return pm_error_set(-EINVAL, "kv: NULL value");
	if (vlen > KV_VALUE_MAX)
		return pm_error_set(-E2BIG, "kv: value of %zu bytes (at most %u)", vlen,
			KV_VALUE_MAX);
	return 0;
}

static int
kv_args_check(const void *key, size_t klen, const void *val, size_t vlen)
{
	int ret = key_check(key, klen);

	return ret != 0 ? ret : val_check(val, vlen);
}

/* The start of an operation: its deadline, and a lease that covers it
 * (a client whose id was given up meanwhile takes a new one first). */
static int
op_begin(struct kv_client *c)
{
	int ret;

	pm_error_clear();
	c->st.ops++;
	c->deadline = kv__ix_now_ns() + (uint64_t)c->timeout_ms * 1000000u;
#ifdef KV_ST_TESTING
	if (c->test_skip_renewal)
		return 0;
#endif
	/* No id: an earlier registration failed half way. */
	ret = c->id_tag == 0 ? -EOWNERDEAD : kv__st_lease_keep(c);
	if (ret == -EOWNERDEAD)
		ret = st_reregister(c);
	return ret;
}

static int
op_end(struct kv_client *c, int ret)
{
	c->st.unavailable += ret == KV_E_UNAVAILABLE;
	return ret;
}

/* An index call, with its round trips counted apart. */
static void
index_rounds(struct kv_client *c, const struct kv_index_stats *before)
{
	struct kv_index_stats after;

	kv_index_stats_read(c->ix, &after);
	c->st.index_rounds += after.rounds - before->rounds;
}

static bool cache_forever(const struct kv_client *c);

/*
 * Where @key lives: the cache entry @e, filled from the cache if it holds
 * the key (*@cached) or from the index. With @fresh the location always
 * comes from the index (a delete's: kv/DESIGN.md, "Delete"), which skips
 * reading the key back when its slot maps the location a still-used
 * entry names, and what the cache knows of the key's words is kept then
 * (the same object: no reuse within L). Return: 0; -ENOENT; errors.
 */
static int
locate(struct kv_client *c, const void *key, size_t klen, uint64_t h, bool fresh,
	struct kv_st_cent *e, bool *cached)
{
	struct kv_st_cent *slot = cache_find(c, h);
	struct kv_index_stats before;
	uint64_t loc;
	int ret;

	uint64_t now = kv__ix_now_ns();
	/* A location looked up more than L ago is looked up again: the grace
	 * before an object is reused counts on it (objects.c). */
	bool usable = slot != NULL && slot->klen == klen &&
		(now < slot->until || cache_forever(c));

	if (usable && !fresh) {
		*e = *slot;
		*cached = true;
		return 0;
	}
	*cached = false;
	if (!fresh)
		c->st.cache_misses++;
	kv_index_stats_read(c->ix, &before);
	/* A usable entry's object holds the key until it expires (no reuse
	 * within L): the index need not read the key back from it. */
	ret = kv_index_lookup_known(c->ix, key, klen, usable ? &slot->loc : NULL, &loc);
	index_rounds(c, &before);
	if (ret != 0)
		return ret;
	if (usable && slot->loc == loc) {
		*e = *slot;
	} else {
		memset(e, 0, sizeof(*e));
		e->hash = h;
		e->loc = loc;
		e->klen = (uint32_t)klen;
	}
	e->until = now + c->lease_ns;
	return 0;
}

#ifdef KV_ST_TESTING
static bool
cache_forever(const struct kv_client *c)
{
	return c->test_cache_forever;
}
#else
static bool
cache_forever(const struct kv_client *c)
{
	(void)c;
	return false;
}
#endif

static void
cache_put(struct kv_client *c, const struct kv_st_cent *e)
{
	struct kv_st_cent *set = cache_set(c, e->hash), *slot = cache_find(c, e->hash);

	if (set == NULL)
		return;
	for (unsigned w = 0; slot == NULL && w < KV_ST_CACHE_WAYS; w++)
		if (set[w].hash == 0)
			slot = &set[w];
	if (slot == NULL)
		slot = &set[c->cache_victim++ % KV_ST_CACHE_WAYS];
	*slot = *e;
}

static void
cache_drop(struct kv_client *c, uint64_t h)
{
	struct kv_st_cent *slot = cache_find(c, h);

	if (slot != NULL)
		slot->hash = 0;
}

/* Unmap a deleted object from the index (SWARM-KV sect. 5.3.2-5.3.3: the
 * deleter unmaps; a client that finds a tombstone still mapped does it for
 * a deleter that crashed first). */
static int
unmap(struct kv_client *c, const void *key, size_t klen, uint64_t loc)
{
	struct kv_index_stats before;
	int ret;

	kv_index_stats_read(c->ix, &before);
	ret = kv_index_remove(c->ix, key, klen, loc);
	index_rounds(c, &before);
	return ret == -ENOENT ? 0 : ret;
}

int
kv__st_unmapped_check(struct kv_client *c, const void *key, size_t klen, uint64_t loc)
{
	struct kv_index_stats before;
	uint64_t at;
	int ret;

	kv_index_stats_read(c->ix, &before);
	ret = kv_index_lookup(c->ix, key, klen, &at);
	index_rounds(c, &before);
	if (ret == -ENOENT || (ret == 0 && at != loc))
		return 0;
	return ret != 0 ? ret : unmap(c, key, klen, loc);
}

bool
kv__st_ohdr_check(const unsigned char *p, uint64_t rest, uint64_t off, struct kv_st_ohdr *oh)
{
	if (rest < sizeof(*oh))
		return false;
	memcpy(oh, p, sizeof(*oh));
	return oh->magic == KV_ST_OBJ_MAGIC && (oh->loc >> 4) * KV_ST_UNIT == off &&
		oh->klen != 0 && oh->klen <= KV_KEY_MAX && sizeof(*oh) + oh->klen <= rest &&
		oh->sum == XXH3_64bits_withSeed(p + sizeof(*oh), oh->klen,
			XXH3_64bits(oh, offsetof(struct kv_st_ohdr, sum)));
}

/* The in-place class for a first value of @vlen bytes. */
static unsigned
ip_class(size_t vlen)
{
	if (vlen > KV_ST_IP_MAX)
		return 0;
	for (unsigned cls = 1; cls < KV_ST_IP_CLASSES; cls++)
		if (kv_st_ip_cap(cls) >= vlen)
			return cls;
	return 0;
}

int
kv_region_sizes(const struct kv_config *cfg, uint64_t keys, size_t key_bytes,
	size_t value_bytes, uint64_t *index_bytes, uint64_t *store_bytes)
{
	const uint64_t mib = UINT64_C(1) << 20;
	struct kv_st_geo geo;
	uint64_t C, ix, st;

	pm_error_clear();
	if (cfg == NULL || index_bytes == NULL || store_bytes == NULL || key_bytes == 0)
		return pm_error_set(-EINVAL, "kv_region_sizes: %s", "NULL argument or empty key");
	if (key_bytes > KV_KEY_MAX || value_bytes > KV_VALUE_MAX)
		return pm_error_set(-E2BIG, "kv_region_sizes: %s", "key or value too large");
	if (keys > (UINT64_C(1) << 32))
		return pm_error_set(-EINVAL, "kv_region_sizes: %s", "more than 2^32 keys");
	C = cfg->max_clients;
	geo = kv_st_geo_make(ip_class(value_bytes), (uint32_t)key_bytes, (unsigned)C);
	/* The index: buckets half full after a split, slots of 16 bytes plus
	 * the split records: 64 bytes a key (measured by kv_index_bench). */
	ix = 16 * mib + keys * 64;
	/* The values: each object, a chunk per client left partly used, each
	 * client's log, and the superblock and mark tables. */
	st = 16 * mib + keys * geo.size + C * (cfg->chunk_bytes + 8) + C * cfg->log_bytes;
	*index_bytes = (ix + mib - 1) & ~(mib - 1);
	*store_bytes = (st + mib - 1) & ~(mib - 1);
	return 0;
}

/* Read @len bytes at @off of region @region into @buf, in batches. */
static int
status_read(struct rdma_conn *conn, uint32_t region, uint64_t off, void *buf, uint64_t len)
{
	while (len > 0) {
		uint64_t n = len < RDMA_BATCH_MAX_BYTES ? len : RDMA_BATCH_MAX_BYTES;
		struct rdma_batch b;
		int ret;

		rdma_batch_init(&b);
		ret = rdma_batch_read(&b, region, off, buf, (uint32_t)n);
		if (ret == 0)
			ret = rdma_execute(conn, &b);
		if (ret != 0)
			return ret;
		off += n;
		buf = (char *)buf + n;
		len -= n;
	}
	return 0;
}

/* Whether @h0 is a live header of bucket @idx (any incarnation). */
static bool
ix_bucket_live(uint64_t h0, uint64_t idx)
{
	uint32_t epoch;
	bool pending;

	return kv_ixb_h0_parse(h0, idx, &epoch, &pending) && !pending;
}

/* The index part of kv_node_status: its superblock and bucket headers. */
static int
status_index(struct rdma_conn *conn, const struct kv_config *cfg, unsigned node,
	struct kv_ix_super *ix, struct kv_node_status *out)
{
	struct rdma_region_info ri;
	uint64_t *chunk;
	int ret;

	if ((ret = rdma_conn_region(conn, cfg->index_region, &ri)) != 0)
		return pm_error_set(ret, "kv_node_status_read: node %u has no region %u", node,
			cfg->index_region);
	out->index_bytes = ri.length;
	if (ri.length < sizeof(*ix))
		return pm_error_set(PM_E_CORRUPT, "kv_node_status_read: node %u: index region too small",
			node);
	if ((ret = status_read(conn, cfg->index_region, 0, ix, sizeof(*ix))) != 0 ||
		(ret = kv__ix_super_check(ix, ri.length, cfg->nnodes, node)) != 0)
		return ret;
	chunk = malloc(RDMA_BATCH_MAX_BYTES);
	if (chunk == NULL)
		return -ENOMEM;
	/* A bucket exists on a node once its header word is installed; the
	 * buckets of depth d are 2^d .. 2^(d+1)-1 (heap order). */
	for (uint64_t idx = 1; idx < ix->nbuckets && ret == 0;) {
		uint64_t per = RDMA_BATCH_MAX_BYTES / KV_IXB_SIZE, n = ix->nbuckets - idx;

		n = n < per ? n : per;
		ret = status_read(conn, cfg->index_region, kv_ixb_off(ix, idx, 0), chunk,
			n * KV_IXB_SIZE);
		for (uint64_t k = 0; ret == 0 && k < n; k++, idx++)
			if (ix_bucket_live(chunk[k * KV_IXB_WORDS], idx)) {
				out->index_buckets++;
				if (kv_ixb_depth(idx) > out->index_depth)
					out->index_depth = kv_ixb_depth(idx);
			}
	}
	free(chunk);
	return ret;
}

int
kv_node_status_read(const struct kv_config *cfg, unsigned node, struct kv_node_status *out)
{
	struct rdma_region_info ri;
	struct rdma_conn *conn = NULL;
	struct kv_ix_super ix;
	struct kv_st_super sb;
	uint64_t *words = NULL;
	int ret;

	pm_error_clear();
	if (cfg == NULL || out == NULL || node >= cfg->nnodes || node >= KV_MAX_NODES)
		return pm_error_set(-EINVAL, "kv_node_status_read: %s", "bad argument");
	memset(out, 0, sizeof(*out));
	ret = rdma_conn_open(&conn, cfg->nodes[node], &cfg->conn);
	if (ret != 0)
		return ret;
	out->reachable = true;
	if ((ret = status_index(conn, cfg, node, &ix, out)) != 0)
		goto out;
	if ((ret = rdma_conn_region(conn, cfg->store_region, &ri)) != 0) {
		ret = pm_error_set(ret, "kv_node_status_read: node %u has no region %u", node,
			cfg->store_region);
		goto out;
	}
	out->store_bytes = ri.length;
	if (ri.length < sizeof(sb)) {
		ret = pm_error_set(PM_E_CORRUPT, "kv_node_status_read: store region too small");
		goto out;
	}
	if ((ret = status_read(conn, cfg->store_region, 0, &sb, sizeof(sb))) != 0 ||
		(ret = kv__st_super_check(&sb, ri.length, ix.n, ix.uuid)) != 0)
		goto out;
	out->formatted = true;
	out->repl = (enum kv_replication)sb.repl;
	out->lease_ms = sb.lease_ms;
	out->timeout_ms = sb.timeout_ms;
	out->max_clients = sb.max_clients;
	out->chunks = sb.nchunks;
	out->chunk_bytes = sb.chunk_bytes;
	out->log_bytes = sb.log_bytes;
	/* The id table, the two mark tables and the chunk table are one
	 * run of words (store superblock layout). */
	words = malloc(sb.obj_off - sb.id_off);
	if (words == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	if ((ret = status_read(conn, cfg->store_region, sb.id_off, words,
		sb.chunk_off + 8 * sb.nchunks - sb.id_off)) != 0)
		goto out;
	{
		uint64_t count[3];

		if ((ret = status_read(conn, cfg->store_region, KV_ST_COUNT_OFF, count,
			sizeof(count))) != 0)
			goto out;
		out->ids_freed = count[KV_ST_COUNT_IDS_FREED];
		out->hazards_cleared = count[KV_ST_COUNT_HAZARDS];
		out->objects_zeroed = count[KV_ST_COUNT_OBJECTS];
	}
	for (unsigned w = 0; w < sb.max_clients; w++) {
		out->clients += words[(sb.id_off - sb.id_off) / 8 + w] != 0;
		out->log_used += words[(sb.lmark_off - sb.id_off) / 8 + w];
	}
	for (uint64_t k = 0; k < sb.nchunks; k++)
		out->chunks_used += words[(sb.chunk_off - sb.id_off) / 8 + k] != 0;
out:
	free(words);
	rdma_conn_close(&conn);
	return ret;
}

/* Insert a new object for @key; KV_E_EXISTS with the mapped location in
 * *@existing when @key is present. */
static int
do_insert(struct kv_client *c, const void *key, size_t klen, uint64_t h, const void *val,
	size_t vlen, uint64_t *existing)
{
	struct kv_index_stats before;
	struct kv_st_cent e;
	struct kv_st_geo geo;
	uint64_t off = 0; /* set by obj_alloc on success; gcc -O2 cannot tell (-Werror=maybe-uninitialized) */
	unsigned cls = ip_class(vlen);
	int ret;

	/* The insert finds the location, as a lookup would (cache until). */
	const uint64_t found = kv__ix_now_ns();

	geo = kv_st_geo_make(0 | cls, (uint32_t)klen, c->C);
	ret = kv__st_obj_reserve(c);
	if (ret == 0)
		ret = obj_alloc(c, geo.size / KV_ST_UNIT, &off);
	if (ret != 0)
		return ret;
	geo = kv_st_geo_make((off / KV_ST_UNIT) << 4 | cls, (uint32_t)klen, c->C);
	memset(&e, 0, sizeof(e));
	e.hash = h;
	e.loc = geo.loc;
	e.until = found + c->lease_ns;
	e.klen = (uint32_t)klen;
	/* SWARM-KV's insert (sect. 5.3.1): write the value and map the key in
	 * parallel. The object's batches fly beside the index's first round;
	 * the index waits for them (st_publish) before anyone can learn the
	 * location, since key_at() must then find the key there. */
	ret = kv__sw_create_start(c, &geo, &e, key, val, (uint32_t)vlen);
	if (ret != 0) {
		kv__st_obj_dead(c, geo.loc, (uint32_t)klen); /* nothing was written */
		return ret;
	}
	for (;;) {
		struct kv_st_cent old;
		char none;
		struct kv_st_val v = { .buf = &none, .cap = 0 };
		struct kv_st_geo og;

		kv_index_stats_read(c->ix, &before);
		ret = kv_index_insert(c->ix, key, klen, geo.loc, existing);
		index_rounds(c, &before);
		if (kv__sw_create_finish(c) != 0 && ret == 0)
			ret = KV_E_UNAVAILABLE; /* cannot happen: published first */
		if (ret == 0) {
			cache_put(c, &e);
			return 0;
		}
		if (ret != KV_E_EXISTS) {
			kv__st_obj_unsure(c, geo.loc, c->cr.ins_slot); /* may have taken effect */
			return ret;
		}
		/* A mapping to a deleted object is overwritten (sect. 5.3.1):
		 * unmap it and try again. */
		memset(&old, 0, sizeof(old));
		old.loc = *existing;
		og = kv_st_geo_make(*existing, (uint32_t)klen, c->C);
		ret = kv__sw_read(c, &og, &old, &v);
		if (ret != 0)
			return ret;
		if (!kv_st_is_tomb(v.meta) && v.meta != 0) {
			/* The new object is never mapped (the index decided
			 * every slot this insert proposed it for): its buffer
			 * is no value of anyone's. */
			kv__st_unmapped(c, geo.loc);
			kv__st_obj_dead(c, geo.loc, (uint32_t)klen);
			return KV_E_EXISTS;
		}
		ret = unmap(c, key, klen, *existing);
		if (ret != 0)
			return ret;
		kv__st_obj_dead(c, *existing, (uint32_t)klen);
	}
}

int
kv_scrub(struct kv_client *c)
{
	struct kv_index_stats before;
	int ret;

	ret = op_begin(c);
	if (ret != 0)
		return op_end(c, ret);
	kv_index_stats_read(c->ix, &before);
	ret = kv_index_scrub(c->ix);
	index_rounds(c, &before);
	return op_end(c, ret);
}

int
kv_insert(struct kv_client *c, const void *key, size_t klen, const void *val, size_t vlen)
{
	uint64_t existing;
	int ret;

	ret = op_begin(c);
	if (ret != 0)
		return op_end(c, ret);
	ret = kv_args_check(key, klen, val, vlen);
	if (ret == 0)
		ret = do_insert(c, key, klen, key_hash(key, klen), val, vlen, &existing);
	return op_end(c, ret);
}

/* Update @key if present: -ENOENT if absent or deleted. */
static int
do_update(struct kv_client *c, const void *key, size_t klen, uint64_t h, const void *val,
	size_t vlen)
{
	for (;;) {
		struct kv_st_cent e;
		struct kv_st_geo geo;
		enum kv_sw_result res;
		bool cached;
		int ret = locate(c, key, klen, h, false, &e, &cached);

		if (ret != 0)
			return ret;
		geo = kv_st_geo_make(e.loc, (uint32_t)klen, c->C);
		ret = kv__sw_write(c, &geo, &e, val, (uint32_t)vlen, &res);
		if (ret != 0)
			return ret;
		if (res == KV_SW_DONE) {
			cache_put(c, &e);
			return 0;
		}
		/* Deleted (sect. 5.3.3): drop the cached location, unmap for a
		 * deleter that may have crashed, and look again. */
		cache_drop(c, h);
		ret = unmap(c, key, klen, e.loc);
		if (ret != 0)
			return ret;
		if (!cached)
			return -ENOENT;
	}
}

int
kv_update(struct kv_client *c, const void *key, size_t klen, const void *val, size_t vlen)
{
	int ret;

	ret = op_begin(c);
	if (ret != 0)
		return op_end(c, ret);
	ret = kv_args_check(key, klen, val, vlen);
	if (ret == 0)
		ret = do_update(c, key, klen, key_hash(key, klen), val, vlen);
	return op_end(c, ret);
}

int
kv_put(struct kv_client *c, const void *key, size_t klen, const void *val, size_t vlen)
{
	uint64_t h = key_hash(key, klen), existing;
	int ret;

	ret = op_begin(c);
	if (ret != 0)
		return op_end(c, ret);
	ret = kv_args_check(key, klen, val, vlen);
	while (ret == 0) {
		ret = do_update(c, key, klen, h, val, vlen);
		if (ret != -ENOENT)
			break;
		ret = do_insert(c, key, klen, h, val, vlen, &existing);
		if (ret != KV_E_EXISTS)
			break;
		ret = 0; /* inserted meanwhile: update it */
	}
	return op_end(c, ret);
}

int
kv_get(struct kv_client *c, const void *key, size_t klen, void *buf, size_t cap, size_t *vlen)
{
	uint64_t h = key_hash(key, klen);
	int ret;

	ret = op_begin(c);
	if (ret != 0)
		return op_end(c, ret);
	ret = key_check(key, klen);
	if (ret == 0 && (vlen == NULL || (buf == NULL && cap != 0)))
		ret = pm_error_set(-EINVAL, "kv_get: no place for the value");
	if (ret == 0)
		ret = kv__st_obj_reserve(c);
	while (ret == 0) {
		struct kv_st_val v = { .buf = buf, .cap = cap };
		struct kv_st_cent e;
		struct kv_st_geo geo;
		bool cached;

		ret = locate(c, key, klen, h, false, &e, &cached);
		if (ret != 0)
			break;
		geo = kv_st_geo_make(e.loc, (uint32_t)klen, c->C);
		ret = kv__sw_read(c, &geo, &e, &v);
		if (ret != 0)
			break;
		if (v.meta != 0 && !kv_st_is_tomb(v.meta)) {
			*vlen = v.vlen;
			cache_put(c, &e);
			break;
		}
		/* Deleted (sect. 5.3.4), or a crashed insert's empty object:
		 * if the location was cached, the key may live elsewhere now. */
		cache_drop(c, h);
		if (kv_st_is_tomb(v.meta)) {
			ret = unmap(c, key, klen, e.loc);
			if (ret != 0)
				break;
			kv__st_obj_dead(c, e.loc, (uint32_t)klen);
		}
		ret = cached ? 0 : -ENOENT;
	}
	return op_end(c, ret);
}

int
kv_delete(struct kv_client *c, const void *key, size_t klen)
{
	uint64_t h = key_hash(key, klen);
	/* One number per call: a round retried after lost replies meets
	 * its own tombstone and first delete words as its own. */
	const uint64_t tomb = kv_st_tomb(++c->tomb_nonce);
	struct kv_st_cent e;
	struct kv_st_geo geo;
	struct kv_sw_gone gone;
	bool cached;
	int ret;

	ret = op_begin(c);
	if (ret != 0)
		return op_end(c, ret);
	ret = key_check(key, klen);
	if (ret == 0)
		ret = kv__st_obj_reserve(c);
	/* The location comes from the index, never from the cache: it is
	 * then the key's at some point of this call, and whatever this
	 * delete decides is about that incarnation only. A cached location
	 * may be a dead incarnation; a delete that went on from one to the
	 * key's new incarnation when its own answer was unsure (the first
	 * delete words split, a node down) could delete a re-inserted value
	 * that a get had already reported absent for it (kv/DESIGN.md,
	 * "Delete"; Spin m8_mut_cached_down). */
	if (ret == 0)
		ret = locate(c, key, klen, h, true, &e, &cached);
	if (ret != 0)
		return op_end(c, ret);
	geo = kv_st_geo_make(e.loc, (uint32_t)klen, c->C);
	ret = kv__sw_delete(c, &geo, &e, tomb, &gone);
	if (ret != 0)
		return op_end(c, ret);
	/* The tombstone is on f+1 members: every write of this client to
	 * the object is superseded. */
	kv__st_superseded(c, geo.loc, tomb, c->cid);
	cache_drop(c, h);
	/* SWARM-KV unmaps in the background (sect. 5.3.2); this version
	 * unmaps before returning (kv_stats.index_rounds). */
	ret = unmap(c, key, klen, e.loc);
	if (ret != 0)
		return op_end(c, ret);
	/* The incarnation's tombstone is on f+1 and the index no longer
	 * maps it: its object can go back to its allocator. */
	kv__st_obj_dead(c, e.loc, (uint32_t)klen);
	return op_end(c, gone.gone ? -ENOENT : 0);
}
