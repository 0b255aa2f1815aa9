/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/node.c -- the memory node (rdma/node.h): the pool and its region
 * table, the node file for local clients, open and close. The TCP control
 * listener and the fabric servers it starts are in node_control.c.
 *
 * Pool layout. A pm/ pool with layout "dmkv-node" version 1 whose root is
 * struct node_root: a magic, the region table and an incarnation counter.
 * Regions are PMDK allocations made once, at creation, and never freed. The
 * table is persisted before the magic, and the magic last, so a creation
 * that was interrupted leaves a pool that opens as PM_E_CORRUPT rather than
 * one with half a table. Region offsets are pool-relative, and since
 * libpmemobj maps a single-file pool from file offset 0 they are file
 * offsets too: that is what the node file publishes and what local clients
 * (local.c) add to their own mapping of the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>
#include <pm/ptr.h>
#include <rdma/node.h>

#include "core.h"
#include "node_internal.h"
#include "nodefile.h"

#define NODE_LAYOUT "dmkv-node"
#define NODE_LAYOUT_VERSION 1
#define NODE_ROOT_MAGIC 0x31454430444f4e44ull /* "DNOD0DE1" */
/* Region sizes and file offsets are multiples of this: page-aligned regions
 * can be mapped or registered on their own. */
#define NODE_ALIGN ((uint64_t)4096)
/* Default pool size: the regions plus this much for PMDK's metadata. */
#define NODE_POOL_SLACK ((uint64_t)16 << 20)
/* Largest region accepted (PMDK cannot allocate much more than 16 GiB in one
 * piece anyway); keeps every size sum far from overflow. */
#define NODE_REGION_MAX ((uint64_t)1 << 44)

struct node_root_region {
	uint64_t offset; /* pool-relative = file offset, NODE_ALIGN-aligned */
	uint64_t length; /* NODE_ALIGN multiple, > 0 */
};

/* The pool's root object (after pm's own header). */
struct node_root {
	uint64_t magic;        /* NODE_ROOT_MAGIC once the table is durable */
	uint32_t nregions;     /* 1..RDMA_NODE_MAX_REGIONS */
	uint32_t reserved0;
	uint64_t incarnation;  /* incremented and persisted at every open */
	uint64_t reserved[5];
	struct node_root_region regions[RDMA_NODE_MAX_REGIONS];
};
_Static_assert(sizeof(struct node_root) % 64 == 0, "root is whole cache lines");
_Static_assert(RDMA_NODE_MAX_REGIONS == RDMA__MAX_REGIONS, "one region limit");
_Static_assert(RDMA_NODE_MAX_REGIONS <= RDMA_WIRE_MAX_REGIONS, "WELCOME holds every region");

/* rdma__node_log -- format a line and hand it to the configured log function */
void
rdma__node_log(const struct rdma_node *n, enum rdma_node_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	if (n->log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n->log(n->log_arg, level, line);
}

/* rdma_node_config_init -- documented defaults */
void
rdma_node_config_init(struct rdma_node_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->durability = PM_DURABILITY_AUTO;
	cfg->token = "";
}

/* node_round -- @v rounded up to NODE_ALIGN (v <= NODE_REGION_MAX) */
static uint64_t
node_round(uint64_t v)
{
	return (v + NODE_ALIGN - 1) & ~(NODE_ALIGN - 1);
}

/* node_config_check -- what can be checked without touching the file;
 * fills the rounded region sizes to create with */
static int
node_config_check(const struct rdma_node *n, const struct rdma_node_config *cfg,
	unsigned *nregions, uint64_t sizes[RDMA_NODE_MAX_REGIONS])
{
	const char *token = cfg->token != NULL ? cfg->token : "";

	if (cfg->pool_path == NULL || cfg->pool_path[0] == '\0') {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR, "no pool path configured");
		return -EINVAL;
	}
	if (strnlen(token, RDMA_TOKEN_MAX + 1) > RDMA_TOKEN_MAX) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR,
			"token longer than %d bytes", RDMA_TOKEN_MAX);
		return -EINVAL;
	}
	if (cfg->nregions > RDMA_NODE_MAX_REGIONS) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR, "%u regions configured, at most %d",
			cfg->nregions, RDMA_NODE_MAX_REGIONS);
		return -EINVAL;
	}
	if (cfg->durability > PM_DURABILITY_NONE) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR,
			"unknown durability mode %d", cfg->durability);
		return -EINVAL;
	}
	if (cfg->nregions == 0) {
		*nregions = 1;
		sizes[0] = RDMA_NODE_DEFAULT_REGION_SIZE;
		return 0;
	}
	*nregions = cfg->nregions;
	for (unsigned i = 0; i < cfg->nregions; i++) {
		if (cfg->region_size[i] == 0 || cfg->region_size[i] > NODE_REGION_MAX) {
			rdma__node_log(n, RDMA_NODE_LOG_ERROR,
				"region %u: size %" PRIu64 " is not in 1..%" PRIu64, i,
				cfg->region_size[i], NODE_REGION_MAX);
			return -EINVAL;
		}
		sizes[i] = node_round(cfg->region_size[i]);
	}
	return 0;
}

/* node_root_check -- validate the root of an opened pool before using any of
 * it; PM_E_CORRUPT for anything a node never writes */
static int
node_root_check(const struct rdma_node *n, const char *path, const struct node_root *r,
	size_t pool_size)
{
	if (r->magic != NODE_ROOT_MAGIC) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR,
			"%s: no node magic: the pool is damaged or its creation did not complete",
			path);
		return PM_E_CORRUPT;
	}
	if (r->nregions == 0 || r->nregions > RDMA_NODE_MAX_REGIONS) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR, "%s: %u regions in the table", path,
			r->nregions);
		return PM_E_CORRUPT;
	}
	for (unsigned i = 0; i < r->nregions; i++) {
		uint64_t off = r->regions[i].offset, len = r->regions[i].length;

		/* Offset 0 is the pool's own header (PM_OFF_NULL), never a
		 * region: clients could write the header through it. */
		if (len == 0 || off == PM_OFF_NULL || off % NODE_ALIGN != 0 ||
		    len % NODE_ALIGN != 0 || off > pool_size || len > pool_size - off) {
			rdma__node_log(n, RDMA_NODE_LOG_ERROR,
				"%s: region %u (offset %" PRIu64 ", length %" PRIu64
				") does not fit the pool (%zu bytes)", path, i, off, len,
				pool_size);
			return PM_E_CORRUPT;
		}
		for (unsigned j = 0; j < i; j++) {
			uint64_t o2 = r->regions[j].offset, l2 = r->regions[j].length;

			if (off < o2 + l2 && o2 < off + len) {
				rdma__node_log(n, RDMA_NODE_LOG_ERROR,
					"%s: regions %u and %u overlap", path, j, i);
				return PM_E_CORRUPT;
			}
		}
	}
	return 0;
}

/* node_pool_config -- the pm/ config for the node pool */
static void
node_pool_config(const struct rdma_node_config *cfg, struct pm_pool_config *pc)
{
	pm_pool_config_init(pc);
	pc->path = cfg->pool_path;
	pc->layout = NODE_LAYOUT;
	pc->version = NODE_LAYOUT_VERSION;
	pc->root_size = sizeof(struct node_root);
	pc->durability = cfg->durability;
	if (cfg->flags & RDMA_NODE_TRUSTED)
		pc->flags |= PM_POOL_TRUSTED;
}

/* What node_format lays out in a new pool. */
struct node_format_args {
	unsigned nregions;
	const uint64_t *sizes;
	uint64_t pool_size;
};

/* node_format -- the region table of a new pool, before pm_pool_create
 * gives it its name (pm/pool.h, "Creation is atomic") */
static int
node_format(struct pm_pool *pool, void *ctx)
{
	const struct node_format_args *a = ctx;
	struct node_root *r = PM_POOL_ROOT(pool, struct node_root);
	int ret;

	for (unsigned i = 0; i < a->nregions; i++) {
		uint64_t off;

		/* pm_pool_alloc hands out zeroed, durable memory: the regions
		 * need no zeroing of their own. */
		ret = pm_pool_alloc(pool, a->sizes[i] + NODE_ALIGN, 1, &off);
		if (ret != 0)
			return pm_error_set(ret == -ENOMEM ? -EINVAL : ret,
				"region %u (%" PRIu64 " bytes) does not fit in a pool of %" PRIu64
				" bytes: %s", i, a->sizes[i], a->pool_size, pm_errormsg());
		r->regions[i].offset = node_round(off);
		r->regions[i].length = a->sizes[i];
	}
	r->nregions = a->nregions;
	r->incarnation = 0;
	pm_persist(r, sizeof(*r));
	/* The magic last: a pool that lost it is not mistaken for a node. */
	r->magic = NODE_ROOT_MAGIC;
	pm_persist(&r->magic, sizeof(r->magic));
	return 0;
}

/* node_create -- create the pool and its region table; whenever it fails or
 * is interrupted, no file is left at the pool's path */
static int
node_create(struct rdma_node *n, const struct rdma_node_config *cfg, unsigned nregions,
	const uint64_t sizes[RDMA_NODE_MAX_REGIONS])
{
	struct node_format_args args = { nregions, sizes, 0 };
	struct pm_pool_config pc;
	uint64_t sum = 0, pool_size;
	int ret;

	/* Each allocation gets NODE_ALIGN more than the region so the region can
	 * start at an aligned offset inside it (PMDK aligns less). */
	for (unsigned i = 0; i < nregions; i++)
		sum += sizes[i] + NODE_ALIGN;
	if (cfg->pool_size == 0) {
		pool_size = sum + NODE_POOL_SLACK;
		if (pool_size < PM_POOL_MIN_SIZE)
			pool_size = PM_POOL_MIN_SIZE;
	} else {
		pool_size = node_round(cfg->pool_size);
		if (pool_size < PM_POOL_MIN_SIZE || pool_size < sum) {
			rdma__node_log(n, RDMA_NODE_LOG_ERROR,
				"pool size %zu cannot hold the regions (%" PRIu64
				" bytes; pools are at least %zu)", cfg->pool_size, sum,
				PM_POOL_MIN_SIZE);
			return -EINVAL;
		}
	}
	if (pool_size > SIZE_MAX)
		return -EINVAL;
	args.pool_size = pool_size;
	node_pool_config(cfg, &pc);
	pc.pool_size = (size_t)pool_size;
	pc.format = node_format;
	pc.format_ctx = &args;
	ret = pm_pool_create(&n->pool, &pc);
	if (ret != 0) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR, "cannot create pool %s: %s", cfg->pool_path,
			pm_errormsg());
		return ret;
	}
	rdma__node_log(n, RDMA_NODE_LOG_INFO, "created pool %s (%" PRIu64 " bytes, %u regions)",
		cfg->pool_path, pool_size, nregions);
	return 0;
}

/* node_open_pool -- open an existing pool and validate its root */
static int
node_open_pool(struct rdma_node *n, const struct rdma_node_config *cfg)
{
	struct pm_pool_config pc;
	int ret;

	node_pool_config(cfg, &pc);
	ret = pm_pool_open(&n->pool, &pc);
	if (ret == 0)
		ret = node_root_check(n, cfg->pool_path, PM_POOL_ROOT(n->pool, struct node_root),
			pm_pool_size(n->pool));
	if (ret == 0)
		return 0;
	if (n->pool != NULL) {
		/* A bad root: close without writing anything. */
		pm_pool_close(&n->pool);
		return ret;
	}
	if (ret == -EBUSY)
		rdma__node_log(n, RDMA_NODE_LOG_ERROR, "pool %s is open in another process",
			cfg->pool_path);
	else if (ret != -ENOENT)
		rdma__node_log(n, RDMA_NODE_LOG_ERROR, "cannot open pool %s: %s", cfg->pool_path,
			pm_errormsg());
	return ret;
}

/* node_publish -- write the node file local clients read */
static int
node_publish(struct rdma_node *n)
{
	struct rdma__nodefile nf;
	int ret;

	memset(&nf, 0, sizeof(nf));
	if (strlen(n->pool_path) >= sizeof(nf.pool))
		return -ENAMETOOLONG;
	strcpy(nf.pool, n->pool_path);
	nf.durability = n->durability;
	nf.incarnation = n->incarnation;
	/* n->token is NUL-terminated: rdma_node_open copied it into zeroed memory. */
	ret = rdma__token_hash(n->token, nf.token_hash);
	if (ret != 0) {
		rdma__node_log(n, RDMA_NODE_LOG_ERROR,
			"cannot hash the token for the node file: %s", strerror(-ret));
		return ret;
	}
	nf.nregions = n->nregions;
	for (unsigned i = 0; i < n->nregions; i++) {
		nf.regions[i].offset = n->root->regions[i].offset;
		nf.regions[i].length = n->root->regions[i].length;
	}
	ret = rdma__nodefile_write(n->file_path, &nf);
	if (ret != 0)
		rdma__node_log(n, RDMA_NODE_LOG_ERROR,
			"cannot write node file %s: %s", n->file_path, strerror(-ret));
	return ret;
}

/* node_free -- release what rdma_node_open allocated (pool already closed) */
static void
node_free(struct rdma_node *n)
{
	free(n->pool_path);
	free(n->file_path);
	free(n);
}

/* rdma_node_open -- open or create the pool, bump the incarnation, publish */
int
rdma_node_open(struct rdma_node **out, const struct rdma_node_config *cfg)
{
	uint64_t sizes[RDMA_NODE_MAX_REGIONS];
	struct rdma_node *n;
	unsigned nregions = 0;
	struct stat st;
	char why[256];
	int ret;

	pm_error_clear();
	if (out == NULL || cfg == NULL)
		return pm_error_set(-EINVAL, "rdma_node_open: no %s", out == NULL ? "output" : "config");
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return pm_error_set(-ENOMEM, "rdma_node_open: out of memory");
	n->log = cfg->log;
	n->log_arg = cfg->log_arg;
	n->listen_fd = -1;
	n->stop_fd = -1;
	ret = node_config_check(n, cfg, &nregions, sizes);
	if (ret != 0)
		goto fail;
	n->token_len = strlen(cfg->token != NULL ? cfg->token : "");
	memcpy(n->token, cfg->token != NULL ? cfg->token : "", n->token_len);
	if (asprintf(&n->file_path, "%s.node", cfg->pool_path) < 0) {
		n->file_path = NULL;
		ret = -ENOMEM;
		goto fail;
	}

	if ((cfg->flags & RDMA_NODE_CREATE) && stat(cfg->pool_path, &st) != 0 &&
	    errno == ENOENT) {
		ret = node_create(n, cfg, nregions, sizes);
		/* Someone else created it in the meantime: open theirs. */
		if (ret == -EEXIST)
			ret = node_open_pool(n, cfg);
	} else {
		ret = node_open_pool(n, cfg);
	}
	if (ret != 0) {
		if (ret == -ENOENT)
			rdma__node_log(n, RDMA_NODE_LOG_ERROR,
				"pool %s does not exist", cfg->pool_path);
		goto fail_pool;
	}
	n->root = PM_POOL_ROOT(n->pool, struct node_root);
	n->pool_path = realpath(cfg->pool_path, NULL);
	if (n->pool_path == NULL) {
		ret = -errno;
		goto fail_pool;
	}
	/* Every start is a new incarnation: clients tell a restarted node from
	 * a node that merely dropped their connection. An aligned 8-byte store
	 * is never torn. */
	n->root->incarnation++;
	pm_persist(&n->root->incarnation, sizeof(n->root->incarnation));
	n->incarnation = n->root->incarnation;
	n->durability = pm_pool_durability(n->pool);
	n->nregions = n->root->nregions;
	for (unsigned i = 0; i < n->nregions; i++) {
		n->info[i].id = i;
		n->info[i].length = n->root->regions[i].length;
		n->regions[i].base = pm_off_to_ptr(pm_pool_base(n->pool),
			n->root->regions[i].offset);
		n->regions[i].length = n->root->regions[i].length;
	}
	rdma__node_log(n, RDMA_NODE_LOG_INFO,
		"opened pool %s (%zu bytes, %u regions) incarnation %" PRIu64,
		n->pool_path, pm_pool_size(n->pool), n->nregions, n->incarnation);
	rdma__node_log(n, RDMA_NODE_LOG_INFO, "durability %s", pm_durability_name(n->durability));
	for (unsigned i = 0; i < n->nregions; i++)
		rdma__node_log(n, RDMA_NODE_LOG_INFO,
			"region %u: offset %" PRIu64 " length %" PRIu64,
			i, n->root->regions[i].offset, n->root->regions[i].length);
	ret = node_publish(n);
	if (ret != 0)
		goto fail_pool;
	rdma__node_log(n, RDMA_NODE_LOG_INFO, "node file %s", n->file_path);
	n->open_ns = rdma__now_ns();
	*out = n;
	return 0;
fail_pool:
	/* The pool's own message says most; closing the pool clears it. */
	snprintf(why, sizeof(why), "%s", pm_errormsg()[0] != '\0' ? pm_errormsg() : pm_strerror(ret));
	pm_pool_close(&n->pool);
	node_free(n);
	return pm_error_set(ret, "rdma_node_open: %s: %s", cfg->pool_path, why);
fail:
	node_free(n);
	return pm_error_set(ret, "rdma_node_open: %s", pm_strerror(ret));
}

/* rdma_node_region_count -- regions in the table */
unsigned
rdma_node_region_count(const struct rdma_node *n)
{
	return n->nregions;
}

/* rdma_node_region -- info and local address of one region */
int
rdma_node_region(const struct rdma_node *n, unsigned index, struct rdma_region_info *out,
	void **addr)
{
	if (index >= n->nregions)
		return -EINVAL;
	if (out != NULL)
		*out = n->info[index];
	if (addr != NULL)
		*addr = n->regions[index].base;
	return 0;
}

/* rdma_node_file_path -- "<pool path>.node" */
const char *
rdma_node_file_path(const struct rdma_node *n)
{
	return n->file_path;
}

/* rdma_node_close -- stop serving, close the pool */
int
rdma_node_close(struct rdma_node **np)
{
	struct rdma_node *n;
	int ret;

	if (np == NULL || *np == NULL)
		return 0;
	n = *np;
	rdma__node_stop_serving(n);
	ret = pm_pool_close(&n->pool);
	if (ret != 0)
		rdma__node_log(n, RDMA_NODE_LOG_ERROR, "closing pool %s: %s", n->pool_path,
			pm_strerror(ret));
	else
		rdma__node_log(n, RDMA_NODE_LOG_INFO, "closed pool %s", n->pool_path);
	node_free(n);
	*np = NULL;
	return ret;
}
