/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/node.c -- the memory node (rdma/node.h): the pool and its region
 * table, the node file for local clients, the TCP control listener, and the
 * fabric servers it starts.
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
 *
 * Control listener. One thread polls the listening socket, an eventfd that
 * rdma_node_close() uses to stop it, and up to max_clients client sockets,
 * all non-blocking. Each client has its own receive buffer, so a message
 * may arrive in any number of pieces without holding up anyone else, and
 * two deadlines bound what one client can cost (see NODE_MSG_TIMEOUT_MS and
 * NODE_IDLE_TIMEOUT_MS). Answers are a few KiB at most and always fit in a
 * fresh socket's send buffer; a client that lets its buffer fill up (by
 * pipelining requests without reading answers) is disconnected instead of
 * being waited for. Admitted clients keep their connection: they notice the
 * node's death by its closing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>
#include <rdma/node.h>

#include "control.h"
#include "core.h"
#include "exec.h"
#include "nodefile.h"
#include "server.h"
#include "wire.h"

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
/* Longest host name for serving. */
#define NODE_HOST_MAX 255
#define NODE_DEFAULT_MAX_CLIENTS 64
/* More control connections than this would not fit the descriptor limit
 * of any ordinary process anyway. */
#define NODE_MAX_CLIENTS_LIMIT 65536
/* The largest control message body a client may send: a HELLO with the
 * longest token and fabric address. Anything longer is malformed here even
 * though the wire format allows longer bodies for batches. */
#define NODE_CTL_BODY_MAX (6 + RDMA_TOKEN_MAX + RDMA_WIRE_ADDR_MAX)
/* A message whose first byte arrived must be complete within this time, so
 * a client sending a few bytes at a time cannot keep its slot for long. */
#define NODE_MSG_TIMEOUT_MS 5000
/* A connection that was not admitted (status clients, strangers) is closed
 * when it sends no complete message for this long: idle sockets must not
 * use up max_clients. Admitted clients may stay idle for ever. */
#define NODE_IDLE_TIMEOUT_MS 30000
/* After accept fails for lack of resources, wait this long before trying
 * again. */
#define NODE_ACCEPT_PAUSE_MS 100
/* At most this many messages of one client per poll round, so one client
 * streaming requests cannot starve the others. */
#define NODE_MSGS_PER_ROUND 4

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

/* One fabric server the node may run. */
struct node_server {
	const struct rdma__server *srv;
	void *state;
	bool started;
	struct rdma__server_env env; /* must outlive the server: it keeps it */
};

enum { NODE_NSERVERS = 4 };

/* One control connection. */
struct node_client {
	int fd;                 /* -1: slot free */
	bool admitted;          /* WELCOME sent: no idle timeout */
	size_t have;            /* bytes of the current message in buf */
	uint64_t msg_deadline;  /* ms; valid while have > 0 */
	uint64_t idle_deadline; /* ms; valid while !admitted */
	struct rdma_wire_header hdr; /* decoded once have >= header size */
	char peer[64];
	uint8_t buf[RDMA_WIRE_HEADER_SIZE + NODE_CTL_BODY_MAX];
};

struct rdma_node {
	struct pm_pool *pool;
	struct node_root *root;
	char *pool_path;            /* realpath of the pool */
	char *file_path;            /* "<pool_path as given>.node" */
	char token[RDMA_TOKEN_MAX + 1];
	size_t token_len;
	rdma_node_log_fn log;
	void *log_arg;
	enum pm_durability durability;
	uint64_t incarnation;
	uint64_t open_ns;
	unsigned nregions;
	struct rdma_region_info info[RDMA_NODE_MAX_REGIONS];
	struct rdma__exec_region regions[RDMA_NODE_MAX_REGIONS];

	/* Serving. Written by rdma_node_serve/close; the counters are updated
	 * with relaxed atomics by the listener and the servers and read the
	 * same way by rdma_node_get_status, which needs no ordering among them. */
	bool serving;
	uint16_t port;
	unsigned backends;          /* RDMA_NODE_SERVE_* actually serving */
	char host[NODE_HOST_MAX + 1];
	struct rdma__server_counters counters;
	uint64_t clients_admitted;
	uint64_t clients_refused;
	unsigned clients_connected;
	struct node_server servers[NODE_NSERVERS];
	int listen_fd;
	int stop_fd;
	pthread_t thread;
	unsigned max_clients;
	struct node_client *clients; /* max_clients slots; listener thread only */
	uint64_t accept_pause_until; /* ms; listener thread only */
	struct pollfd *pfd;          /* max_clients + 2; listener thread only */
	unsigned *pfd_slot;          /* client slot of each pfd entry */
};

/* node_log -- format a line and hand it to the configured log function */
static void __attribute__((format(printf, 3, 4)))
node_log(const struct rdma_node *n, enum rdma_node_log_level level, const char *fmt, ...)
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

/* node_now_ms -- monotonic milliseconds */
static uint64_t
node_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* node_count -- relaxed add to a counter rdma_node_get_status reads */
static inline void
node_count(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
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
		node_log(n, RDMA_NODE_LOG_ERROR, "no pool path configured");
		return -EINVAL;
	}
	if (strnlen(token, RDMA_TOKEN_MAX + 1) > RDMA_TOKEN_MAX) {
		node_log(n, RDMA_NODE_LOG_ERROR, "token longer than %d bytes", RDMA_TOKEN_MAX);
		return -EINVAL;
	}
	if (cfg->nregions > RDMA_NODE_MAX_REGIONS) {
		node_log(n, RDMA_NODE_LOG_ERROR, "%u regions configured, at most %d",
			cfg->nregions, RDMA_NODE_MAX_REGIONS);
		return -EINVAL;
	}
	if (cfg->durability > PM_DURABILITY_NONE) {
		node_log(n, RDMA_NODE_LOG_ERROR, "unknown durability mode %d", cfg->durability);
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
			node_log(n, RDMA_NODE_LOG_ERROR,
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
		node_log(n, RDMA_NODE_LOG_ERROR,
			"%s: no node magic: the pool is damaged or its creation did not complete",
			path);
		return PM_E_CORRUPT;
	}
	if (r->nregions == 0 || r->nregions > RDMA_NODE_MAX_REGIONS) {
		node_log(n, RDMA_NODE_LOG_ERROR, "%s: %u regions in the table", path,
			r->nregions);
		return PM_E_CORRUPT;
	}
	for (unsigned i = 0; i < r->nregions; i++) {
		uint64_t off = r->regions[i].offset, len = r->regions[i].length;

		if (len == 0 || off % NODE_ALIGN != 0 || len % NODE_ALIGN != 0 ||
		    off > pool_size || len > pool_size - off) {
			node_log(n, RDMA_NODE_LOG_ERROR,
				"%s: region %u (offset %" PRIu64 ", length %" PRIu64
				") does not fit the pool (%zu bytes)", path, i, off, len,
				pool_size);
			return PM_E_CORRUPT;
		}
		for (unsigned j = 0; j < i; j++) {
			uint64_t o2 = r->regions[j].offset, l2 = r->regions[j].length;

			if (off < o2 + l2 && o2 < off + len) {
				node_log(n, RDMA_NODE_LOG_ERROR, "%s: regions %u and %u overlap",
					path, j, i);
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

/* node_create -- create the pool and its region table; on failure no file
 * is left behind */
static int
node_create(struct rdma_node *n, const struct rdma_node_config *cfg, unsigned nregions,
	const uint64_t sizes[RDMA_NODE_MAX_REGIONS])
{
	struct pm_pool_config pc;
	struct node_root *r;
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
			node_log(n, RDMA_NODE_LOG_ERROR,
				"pool size %zu cannot hold the regions (%" PRIu64
				" bytes; pools are at least %zu)", cfg->pool_size, sum,
				PM_POOL_MIN_SIZE);
			return -EINVAL;
		}
	}
	if (pool_size > SIZE_MAX)
		return -EINVAL;
	node_pool_config(cfg, &pc);
	pc.pool_size = (size_t)pool_size;
	ret = pm_pool_create(&n->pool, &pc);
	if (ret != 0) {
		node_log(n, RDMA_NODE_LOG_ERROR, "cannot create pool %s: %s", cfg->pool_path,
			pm_errormsg());
		return ret;
	}
	r = PM_POOL_ROOT(n->pool, struct node_root);
	for (unsigned i = 0; i < nregions; i++) {
		uint64_t off;

		/* pm_pool_alloc hands out zeroed, durable memory: the regions
		 * need no zeroing of their own. */
		ret = pm_pool_alloc(n->pool, sizes[i] + NODE_ALIGN, 1, &off);
		if (ret != 0) {
			node_log(n, RDMA_NODE_LOG_ERROR,
				"region %u (%" PRIu64 " bytes) does not fit in a pool of %" PRIu64
				" bytes: %s", i, sizes[i], pool_size, pm_errormsg());
			ret = ret == -ENOMEM ? -EINVAL : ret;
			goto fail;
		}
		r->regions[i].offset = node_round(off);
		r->regions[i].length = sizes[i];
	}
	r->nregions = nregions;
	r->incarnation = 0;
	pm_persist(r, sizeof(*r));
	/* The magic last: a crash before this line leaves no usable node. */
	r->magic = NODE_ROOT_MAGIC;
	pm_persist(&r->magic, sizeof(r->magic));
	node_log(n, RDMA_NODE_LOG_INFO, "created pool %s (%" PRIu64 " bytes, %u regions)",
		cfg->pool_path, pool_size, nregions);
	return 0;
fail:
	pm_pool_close(&n->pool);
	unlink(cfg->pool_path);
	return ret;
}

/* node_locked_elsewhere -- whether some other open file description holds
 * PMDK's lock on the pool file (libpmemobj takes flock(LOCK_EX) on open) */
static bool
node_locked_elsewhere(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool busy = false;

	if (fd < 0)
		return false;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0)
		busy = errno == EWOULDBLOCK;
	else
		flock(fd, LOCK_UN);
	close(fd);
	return busy;
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
	/* A pool open in another process fails PMDK's flock; make sure that
	 * reads as busy whatever pm made of it. */
	if (ret != -ENOENT && ret != -EBUSY && node_locked_elsewhere(cfg->pool_path))
		ret = -EBUSY;
	if (ret == -EBUSY)
		node_log(n, RDMA_NODE_LOG_ERROR, "pool %s is open in another process",
			cfg->pool_path);
	else if (ret != -ENOENT)
		node_log(n, RDMA_NODE_LOG_ERROR, "cannot open pool %s: %s", cfg->pool_path,
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
		node_log(n, RDMA_NODE_LOG_ERROR, "cannot hash the token for the node file: %s",
			strerror(-ret));
		return ret;
	}
	nf.nregions = n->nregions;
	for (unsigned i = 0; i < n->nregions; i++) {
		nf.regions[i].offset = n->root->regions[i].offset;
		nf.regions[i].length = n->root->regions[i].length;
	}
	ret = rdma__nodefile_write(n->file_path, &nf);
	if (ret != 0)
		node_log(n, RDMA_NODE_LOG_ERROR, "cannot write node file %s: %s", n->file_path,
			strerror(-ret));
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
			node_log(n, RDMA_NODE_LOG_ERROR, "pool %s does not exist", cfg->pool_path);
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
		n->regions[i].base = (char *)pm_pool_base(n->pool) + n->root->regions[i].offset;
		n->regions[i].length = n->root->regions[i].length;
	}
	node_log(n, RDMA_NODE_LOG_INFO,
		"opened pool %s (%zu bytes, %u regions) incarnation %" PRIu64,
		n->pool_path, pm_pool_size(n->pool), n->nregions, n->incarnation);
	node_log(n, RDMA_NODE_LOG_INFO, "durability %s", pm_durability_name(n->durability));
	for (unsigned i = 0; i < n->nregions; i++)
		node_log(n, RDMA_NODE_LOG_INFO, "region %u: offset %" PRIu64 " length %" PRIu64,
			i, n->root->regions[i].offset, n->root->regions[i].length);
	ret = node_publish(n);
	if (ret != 0)
		goto fail_pool;
	node_log(n, RDMA_NODE_LOG_INFO, "node file %s", n->file_path);
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

/* rdma_node_port -- the bound control port while serving */
uint16_t
rdma_node_port(const struct rdma_node *n)
{
	return n->serving ? n->port : 0;
}

/* rdma_node_serve_config_init -- documented defaults */
void
rdma_node_serve_config_init(struct rdma_node_serve_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->host = "127.0.0.1";
	cfg->port = RDMA_NODE_DEFAULT_PORT;
	cfg->backends = RDMA_NODE_SERVE_TCP | RDMA_NODE_SERVE_SHM;
	cfg->max_clients = NODE_DEFAULT_MAX_CLIENTS;
}

/* ---- control listener ---- */

/* node_token_ok -- compare a presented token with the node's in time that
 * depends only on the lengths, so the bytes of the token do not leak */
static bool
node_token_ok(const struct rdma_node *n, const char *token, size_t len)
{
	unsigned diff = len != n->token_len;

	for (size_t i = 0; i < RDMA_TOKEN_MAX; i++) {
		unsigned char a = i < len ? (unsigned char)token[i] : 0;
		unsigned char b = i < n->token_len ? (unsigned char)n->token[i] : 0;

		diff |= (unsigned)(a ^ b);
	}
	return diff == 0;
}

/* node_client_next -- the slot is ready for the next message */
static void
node_client_next(struct node_client *c, uint64_t now)
{
	c->have = 0;
	c->idle_deadline = now + NODE_IDLE_TIMEOUT_MS;
}

/* node_client_close -- close a connection and free its slot */
static void
node_client_close(struct rdma_node *n, struct node_client *c, const char *why)
{
	node_log(n, RDMA_NODE_LOG_DEBUG, "client %s: closed (%s)", c->peer, why);
	close(c->fd);
	c->fd = -1;
	__atomic_fetch_sub(&n->clients_connected, 1, __ATOMIC_RELAXED);
}

/* node_send -- send a whole answer without blocking; false if the socket
 * cannot take it now (the caller then drops the client, see the top) */
static bool
node_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t k = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		len -= (size_t)k;
	}
	return true;
}

/* node_refuse -- send REFUSE(@code, @reason); false if it could not be sent */
static bool
node_refuse(struct node_client *c, uint32_t seq, int32_t code, const char *reason)
{
	uint8_t msg[RDMA_WIRE_HEADER_SIZE + 8 + RDMA_WIRE_REASON_MAX];
	int len = rdma_wire_refuse_encode(msg, sizeof(msg), seq, code, reason);

	return len > 0 && node_send(c->fd, msg, (size_t)len);
}

/* node_bad -- count a malformed message, tell the client if possible, and
 * drop it */
static void
node_bad(struct rdma_node *n, struct node_client *c, uint32_t seq, const char *what)
{
	uint8_t sink[4096];

	node_count(&n->counters.bad_messages);
	node_log(n, RDMA_NODE_LOG_WARN, "client %s: malformed message (%s)", c->peer, what);
	(void)node_refuse(c, seq, RDMA_E_PROTO, what);
	/* Closing with unread input sends a reset, which may overtake the
	 * REFUSE at the client; discard what already arrived (a bounded
	 * amount: a client still sending gets its reset). */
	for (int i = 0; i < 16 && recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
		;
	node_client_close(n, c, "malformed message");
}

/* node_backend_names -- "ofi+tcp,ofi+shm" or "none" */
static void
node_backend_names(const struct rdma_node *n, char *buf, size_t cap)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < NODE_NSERVERS; i++) {
		if (!n->servers[i].started)
			continue;
		used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "," : "",
			n->servers[i].srv->name);
		if (used >= cap)
			return;
	}
	if (used == 0)
		snprintf(buf, cap, "none");
}

/* node_status_text -- the STATUS body; never longer than @cap - 1 */
static size_t
node_status_text(const struct rdma_node *n, char *buf, size_t cap)
{
	struct rdma_node_status st;
	char backends[64];
	size_t used = 0;

#define NODE_APPEND(...)                                                              \
	do {                                                                          \
		if (used < cap)                                                       \
			used += (size_t)snprintf(buf + used, cap - used, __VA_ARGS__); \
	} while (0)

	rdma_node_get_status(n, &st);
	node_backend_names(n, backends, sizeof(backends));
	/* The path is cut so that every other line always fits. */
	NODE_APPEND("pool %.1024s\n", n->pool_path);
	NODE_APPEND("size %zu\n", pm_pool_size(n->pool));
	NODE_APPEND("durability %s\n", pm_durability_name(n->durability));
	NODE_APPEND("incarnation %" PRIu64 "\n", n->incarnation);
	NODE_APPEND("regions %u\n", n->nregions);
	for (unsigned i = 0; i < n->nregions; i++)
		NODE_APPEND("region.%u length %" PRIu64 "\n", i, n->info[i].length);
	NODE_APPEND("backends %s\n", backends);
	NODE_APPEND("port %u\n", (unsigned)n->port);
	NODE_APPEND("clients_connected %u\n", st.clients_connected);
	NODE_APPEND("clients_admitted %" PRIu64 "\n", st.clients_admitted);
	NODE_APPEND("clients_refused %" PRIu64 "\n", st.clients_refused);
	NODE_APPEND("bad_messages %" PRIu64 "\n", st.bad_messages);
	NODE_APPEND("batches_shipped %" PRIu64 "\n", st.batches_shipped);
	NODE_APPEND("batches_rejected %" PRIu64 "\n", st.batches_rejected);
	NODE_APPEND("persists %" PRIu64 "\n", st.persists);
	NODE_APPEND("uptime_s %" PRIu64 "\n", (rdma__now_ns() - n->open_ns) / 1000000000u);
#undef NODE_APPEND
	return used < cap ? used : cap - 1;
}

/* node_on_status_req -- answer STATUS_REQ; false if the client was dropped */
static bool
node_on_status_req(struct rdma_node *n, struct node_client *c, const uint8_t *body)
{
	uint8_t msg[RDMA_WIRE_HEADER_SIZE + RDMA_WIRE_STATUS_MAX];
	char text[RDMA_WIRE_STATUS_MAX + 1];
	const char *token;
	uint16_t token_len;
	size_t len;
	int mlen;

	if (rdma_wire_status_req_decode(body, c->hdr.length, &token, &token_len) != 0) {
		node_bad(n, c, c->hdr.seq, "bad STATUS_REQ");
		return false;
	}
	if (!node_token_ok(n, token, token_len)) {
		node_log(n, RDMA_NODE_LOG_WARN, "client %s: status refused: wrong token", c->peer);
		(void)node_refuse(c, c->hdr.seq, RDMA_E_AUTH, "wrong token");
		node_client_close(n, c, "wrong token");
		return false;
	}
	len = node_status_text(n, text, sizeof(text));
	mlen = rdma_wire_status_encode(msg, sizeof(msg), c->hdr.seq, text, len);
	if (mlen < 0 || !node_send(c->fd, msg, (size_t)mlen)) {
		node_client_close(n, c, "cannot send STATUS");
		return false;
	}
	node_log(n, RDMA_NODE_LOG_DEBUG, "client %s: status sent", c->peer);
	return true;
}

/* node_on_hello -- admit or refuse; false if the client was dropped */
static bool
node_on_hello(struct rdma_node *n, struct node_client *c, const uint8_t *body)
{
	uint8_t msg[RDMA_WIRE_HEADER_SIZE + 16 + RDMA_WIRE_MAX_REGIONS * 24 +
		RDMA_WIRE_ADDR_MAX];
	struct rdma_wire_welcome welcome;
	struct rdma_wire_hello hello;
	struct node_server *s = NULL;
	int ret, mlen;

	if (rdma_wire_hello_decode(body, c->hdr.length, &hello) != 0) {
		node_bad(n, c, c->hdr.seq, "bad HELLO");
		return false;
	}
	if (!node_token_ok(n, hello.token, hello.token_len)) {
		node_count(&n->clients_refused);
		node_log(n, RDMA_NODE_LOG_WARN, "client %s: refused: wrong token", c->peer);
		(void)node_refuse(c, c->hdr.seq, RDMA_E_AUTH, "wrong token");
		node_client_close(n, c, "refused");
		return false;
	}
	for (unsigned i = 0; i < NODE_NSERVERS; i++)
		if (n->servers[i].started && n->servers[i].srv->wire_backend == hello.backend)
			s = &n->servers[i];
	if (s == NULL) {
		node_count(&n->clients_refused);
		node_log(n, RDMA_NODE_LOG_WARN,
			"client %s: refused: backend %u is not served here", c->peer,
			(unsigned)hello.backend);
		(void)node_refuse(c, c->hdr.seq, RDMA_E_NO_DEVICE,
			"backend not served by this node");
		node_client_close(n, c, "refused");
		return false;
	}
	memset(&welcome, 0, sizeof(welcome));
	welcome.incarnation = n->incarnation;
	welcome.nregions = n->nregions;
	for (unsigned i = 0; i < n->nregions; i++)
		welcome.regions[i].length = n->info[i].length;
	ret = s->srv->admit(s->state, &hello, &welcome);
	if (ret != 0) {
		node_count(&n->clients_refused);
		node_log(n, RDMA_NODE_LOG_WARN, "client %s: refused by %s: %s", c->peer,
			s->srv->name, pm_strerror(ret));
		(void)node_refuse(c, c->hdr.seq, ret, "backend could not admit the client");
		node_client_close(n, c, "refused");
		return false;
	}
	mlen = rdma_wire_welcome_encode(msg, sizeof(msg), c->hdr.seq, &welcome);
	if (mlen < 0) {
		node_log(n, RDMA_NODE_LOG_ERROR, "client %s: cannot encode WELCOME: %s", c->peer,
			pm_strerror(mlen));
		(void)node_refuse(c, c->hdr.seq, mlen, "cannot encode WELCOME");
		node_client_close(n, c, "cannot encode WELCOME");
		return false;
	}
	/* Counted before it is sent, so a client that has its WELCOME finds
	 * itself counted in the status. */
	node_count(&n->clients_admitted);
	if (!node_send(c->fd, msg, (size_t)mlen)) {
		node_log(n, RDMA_NODE_LOG_WARN, "client %s: cannot send WELCOME", c->peer);
		node_client_close(n, c, "cannot send WELCOME");
		return false;
	}
	c->admitted = true;
	node_log(n, RDMA_NODE_LOG_INFO, "client %s: admitted on %s", c->peer, s->srv->name);
	return true;
}

/* node_client_read -- read what @c sent and handle each complete message */
static void
node_client_read(struct rdma_node *n, struct node_client *c, uint64_t now)
{
	for (unsigned msgs = 0; msgs < NODE_MSGS_PER_ROUND;) {
		size_t need = c->have < RDMA_WIRE_HEADER_SIZE ? RDMA_WIRE_HEADER_SIZE :
			RDMA_WIRE_HEADER_SIZE + c->hdr.length;
		ssize_t k;
		bool ok;

		/* Read only up to the end of the current message: the next one
		 * starts in a fresh buffer. */
		k = recv(c->fd, c->buf + c->have, need - c->have, MSG_DONTWAIT);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k <= 0) {
			if (c->have > 0) {
				node_count(&n->counters.bad_messages);
				node_log(n, RDMA_NODE_LOG_WARN,
					"client %s: connection closed inside a message", c->peer);
			}
			node_client_close(n, c, k == 0 ? "closed by the client" : strerror(errno));
			return;
		}
		if (c->have == 0)
			c->msg_deadline = now + NODE_MSG_TIMEOUT_MS;
		c->have += (size_t)k;
		if (c->have < need)
			continue;
		if (c->have == RDMA_WIRE_HEADER_SIZE) {
			if (rdma_wire_header_decode(c->buf, c->have, &c->hdr) != 0) {
				node_bad(n, c, 0, "bad header");
				return;
			}
			if (c->hdr.type != RDMA_WIRE_HELLO && c->hdr.type != RDMA_WIRE_STATUS_REQ) {
				node_bad(n, c, c->hdr.seq, "unexpected message type");
				return;
			}
			if (c->hdr.length > NODE_CTL_BODY_MAX) {
				node_bad(n, c, c->hdr.seq, "control message too long");
				return;
			}
			if (c->hdr.length > 0)
				continue;
		}
		msgs++;
		if (c->hdr.type == RDMA_WIRE_HELLO)
			ok = node_on_hello(n, c, c->buf + RDMA_WIRE_HEADER_SIZE);
		else
			ok = node_on_status_req(n, c, c->buf + RDMA_WIRE_HEADER_SIZE);
		if (!ok)
			return;
		node_client_next(c, now);
	}
}

/* node_peer_name -- "host:port" of a connected socket, for the log */
static void
node_peer_name(int fd, char *buf, size_t cap)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[NI_MAXHOST], serv[NI_MAXSERV];

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0 ||
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv, sizeof(serv),
		    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(buf, cap, "fd%d", fd);
		return;
	}
	snprintf(buf, cap, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

/* node_accept -- take every pending connection */
static void
node_accept(struct rdma_node *n, uint64_t now)
{
	for (;;) {
		struct node_client *c = NULL;
		int one = 1;
		int fd = accept4(n->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* Out of descriptors or memory: the connection waits in
			 * the backlog. The listening socket stays readable, so
			 * stop polling it for a while instead of spinning. */
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				node_log(n, RDMA_NODE_LOG_WARN, "accept: %s", strerror(errno));
				n->accept_pause_until = now + NODE_ACCEPT_PAUSE_MS;
			}
			return;
		}
		for (unsigned i = 0; i < n->max_clients && c == NULL; i++)
			if (n->clients[i].fd < 0)
				c = &n->clients[i];
		if (c == NULL) {
			/* Refused before its request is read, so with seq 0:
			 * the connection, not a request, is refused. */
			uint8_t msg[RDMA_WIRE_HEADER_SIZE + 64];
			int len = rdma_wire_refuse_encode(msg, sizeof(msg), 0, -EBUSY,
				"too many clients");

			node_log(n, RDMA_NODE_LOG_WARN, "refused a connection: %u clients already",
				n->max_clients);
			if (len > 0)
				(void)node_send(fd, msg, (size_t)len);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->admitted = false;
		node_client_next(c, now);
		node_peer_name(fd, c->peer, sizeof(c->peer));
		__atomic_fetch_add(&n->clients_connected, 1, __ATOMIC_RELAXED);
		node_log(n, RDMA_NODE_LOG_DEBUG, "client %s: connected", c->peer);
	}
}

/* node_expire -- drop clients past a deadline; returns the nearest deadline
 * left (UINT64_MAX: none) */
static uint64_t
node_expire(struct rdma_node *n, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (unsigned i = 0; i < n->max_clients; i++) {
		struct node_client *c = &n->clients[i];

		if (c->fd < 0)
			continue;
		if (c->have > 0 && now >= c->msg_deadline) {
			node_count(&n->counters.bad_messages);
			node_log(n, RDMA_NODE_LOG_WARN,
				"client %s: message incomplete after %d ms", c->peer,
				NODE_MSG_TIMEOUT_MS);
			node_client_close(n, c, "message timeout");
			continue;
		}
		if (!c->admitted && c->have == 0 && now >= c->idle_deadline) {
			node_client_close(n, c, "idle");
			continue;
		}
		if (c->have > 0 && c->msg_deadline < next)
			next = c->msg_deadline;
		if (!c->admitted && c->have == 0 && c->idle_deadline < next)
			next = c->idle_deadline;
	}
	return next;
}

/* node_listener -- the control thread (see the top of the file) */
static void *
node_listener(void *arg)
{
	struct rdma_node *n = arg;
	struct pollfd *pfd = n->pfd;
	unsigned *slot = n->pfd_slot;

	for (;;) {
		uint64_t now = node_now_ms(), next = node_expire(n, now);
		bool paused = now < n->accept_pause_until;
		nfds_t nfd = 2;
		int timeout, k;

		if (paused && n->accept_pause_until < next)
			next = n->accept_pause_until;
		timeout = next == UINT64_MAX ? -1 :
			(int)(next - now < INT_MAX ? next - now : INT_MAX);
		pfd[0] = (struct pollfd){ .fd = n->stop_fd, .events = POLLIN };
		/* poll ignores a negative fd: no accepting while paused. */
		pfd[1] = (struct pollfd){ .fd = paused ? -1 : n->listen_fd, .events = POLLIN };
		for (unsigned i = 0; i < n->max_clients; i++) {
			if (n->clients[i].fd < 0)
				continue;
			pfd[nfd] = (struct pollfd){ .fd = n->clients[i].fd, .events = POLLIN };
			slot[nfd++] = i;
		}
		k = poll(pfd, nfd, timeout);
		if (k < 0 && errno == ENOMEM) {
			/* Transient: the next round tries again. */
			n->accept_pause_until = node_now_ms() + NODE_ACCEPT_PAUSE_MS;
			poll(NULL, 0, NODE_ACCEPT_PAUSE_MS);
			continue;
		}
		if (k < 0 && errno != EINTR) {
			/* EFAULT or EINVAL: a bug; give up serving, loudly. */
			node_log(n, RDMA_NODE_LOG_ERROR, "control listener stopped: poll: %s",
				strerror(errno));
			break;
		}
		if (k <= 0)
			continue;
		if (pfd[0].revents != 0)
			break;
		now = node_now_ms();
		for (nfds_t i = 2; i < nfd; i++)
			if (pfd[i].revents != 0 && n->clients[slot[i]].fd >= 0)
				node_client_read(n, &n->clients[slot[i]], now);
		if (pfd[1].revents != 0)
			node_accept(n, now);
	}
	return NULL;
}

/* node_bind -- the listening socket for @host:@port; -EADDRINUSE,
 * -EADDRNOTAVAIL or another -errno */
static int
node_bind(struct rdma_node *n, const char *host, uint16_t port, int *out)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res, *ai;
	char serv[8];
	int ret = -EADDRNOTAVAIL;

	snprintf(serv, sizeof(serv), "%u", (unsigned)port);
	if (getaddrinfo(host, serv, &hints, &res) != 0) {
		node_log(n, RDMA_NODE_LOG_ERROR, "cannot resolve listen address %s", host);
		return -EADDRNOTAVAIL;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		int one = 1;
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			ai->ai_protocol);

		if (fd < 0) {
			ret = -errno;
			continue;
		}
		/* A restarted node must not wait for the TIME_WAIT of its
		 * predecessor's connections. */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* listen() too can find the port taken: SO_REUSEADDR lets two
		 * sockets bind it as long as neither listens. */
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0) {
			*out = fd;
			freeaddrinfo(res);
			return 0;
		}
		ret = -errno;
		close(fd);
		if (ret == -EADDRINUSE)
			break;
	}
	freeaddrinfo(res);
	node_log(n, RDMA_NODE_LOG_ERROR, "cannot listen on %s:%u: %s", host, (unsigned)port,
		strerror(-ret));
	return ret == -EADDRINUSE || ret == -EADDRNOTAVAIL ? ret :
		(ret == -EINVAL || ret == -EAFNOSUPPORT ? -EADDRNOTAVAIL : ret);
}

/* node_bound_port -- the port a listening socket got */
static uint16_t
node_bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/* node_stop_servers -- stop every started server */
static void
node_stop_servers(struct rdma_node *n)
{
	for (unsigned i = 0; i < NODE_NSERVERS; i++) {
		struct node_server *s = &n->servers[i];

		if (!s->started)
			continue;
		s->srv->stop(s->state);
		s->started = false;
		s->state = NULL;
		node_log(n, RDMA_NODE_LOG_INFO, "stopped %s", s->srv->name);
	}
	n->backends = 0;
}

/* node_start_servers -- start a server per requested backend; 0 if at least
 * one started or none was requested */
static int
node_start_servers(struct rdma_node *n, unsigned backends)
{
	const struct rdma__server *all[NODE_NSERVERS] = {
		&rdma__server_ofi_tcp, &rdma__server_ofi_shm, &rdma__server_verbs,
		&rdma__server_ofi_verbs,
	};
	int first_err = 0;

	for (unsigned i = 0; i < NODE_NSERVERS; i++) {
		struct node_server *s = &n->servers[i];
		int ret;

		s->srv = all[i];
		if (!(backends & all[i]->serve_flag))
			continue;
		s->env = (struct rdma__server_env){
			.nregions = n->nregions,
			.regions = n->regions,
			.info = n->info,
			.host = n->host,
			.counters = &n->counters,
			.log = n->log,
			.log_arg = n->log_arg,
		};
		ret = all[i]->start(&s->state, &s->env);
		if (ret == 0) {
			s->started = true;
			n->backends |= all[i]->serve_flag;
			node_log(n, RDMA_NODE_LOG_INFO, "serving %s on %s", all[i]->name, n->host);
			continue;
		}
		s->state = NULL;
		if (ret == RDMA_E_NO_DEVICE) {
			node_log(n, RDMA_NODE_LOG_WARN, "not serving %s: %s", all[i]->name,
				pm_strerror(ret));
		} else {
			node_log(n, RDMA_NODE_LOG_ERROR, "cannot serve %s: %s", all[i]->name,
				pm_strerror(ret));
			if (first_err == 0)
				first_err = ret;
		}
	}
	if (backends == 0 || n->backends != 0)
		return 0;
	return first_err != 0 ? first_err : RDMA_E_NO_DEVICE;
}

/* node_free_clients -- release the listener's tables */
static void
node_free_clients(struct rdma_node *n)
{
	free(n->clients);
	free(n->pfd);
	free(n->pfd_slot);
	n->clients = NULL;
	n->pfd = NULL;
	n->pfd_slot = NULL;
}

/* rdma_node_serve -- bind, start the servers, then the control thread */
int
rdma_node_serve(struct rdma_node *n, const struct rdma_node_serve_config *cfg)
{
	struct rdma_node_serve_config def;
	const char *host;
	int ret;

	if (n == NULL)
		return -EINVAL;
	if (n->serving)
		return -EALREADY;
	if (cfg == NULL) {
		rdma_node_serve_config_init(&def);
		cfg = &def;
	}
	host = cfg->host != NULL && cfg->host[0] != '\0' ? cfg->host : "127.0.0.1";
	if (strlen(host) > NODE_HOST_MAX ||
	    (cfg->backends & ~(unsigned)(RDMA_NODE_SERVE_TCP | RDMA_NODE_SERVE_SHM |
		RDMA_NODE_SERVE_VERBS | RDMA_NODE_SERVE_OFI_VERBS)) != 0)
		return -EINVAL;
	if (cfg->max_clients > NODE_MAX_CLIENTS_LIMIT)
		return -EINVAL;
	strcpy(n->host, host);
	n->max_clients = cfg->max_clients != 0 ? cfg->max_clients : NODE_DEFAULT_MAX_CLIENTS;
	n->clients = calloc(n->max_clients, sizeof(*n->clients));
	n->pfd = calloc((size_t)n->max_clients + 2, sizeof(*n->pfd));
	n->pfd_slot = calloc((size_t)n->max_clients + 2, sizeof(*n->pfd_slot));
	n->accept_pause_until = 0;
	if (n->clients == NULL || n->pfd == NULL || n->pfd_slot == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < n->max_clients; i++)
		n->clients[i].fd = -1;
	memset(&n->counters, 0, sizeof(n->counters));
	n->clients_admitted = n->clients_refused = 0;
	n->clients_connected = 0;

	/* Bind first so a taken port is reported here, synchronously, before
	 * anything else starts. */
	ret = node_bind(n, host, cfg->port, &n->listen_fd);
	if (ret != 0)
		goto fail;
	n->port = node_bound_port(n->listen_fd);
	n->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (n->stop_fd < 0) {
		ret = -errno;
		goto fail;
	}
	ret = node_start_servers(n, cfg->backends);
	if (ret != 0) {
		node_log(n, RDMA_NODE_LOG_ERROR, "no requested backend could start");
		goto fail;
	}
	ret = -pthread_create(&n->thread, NULL, node_listener, n);
	if (ret != 0) {
		node_stop_servers(n);
		goto fail;
	}
	n->serving = true;
	node_log(n, RDMA_NODE_LOG_INFO, "control port listening on %s:%u", host,
		(unsigned)n->port);
	return 0;
fail:
	if (n->stop_fd >= 0)
		close(n->stop_fd);
	if (n->listen_fd >= 0)
		close(n->listen_fd);
	n->stop_fd = n->listen_fd = -1;
	node_free_clients(n);
	return ret;
}

/* node_stop_serving -- stop the listener, drop the clients, stop the servers */
static void
node_stop_serving(struct rdma_node *n)
{
	uint64_t one = 1;

	if (!n->serving)
		return;
	while (write(n->stop_fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	pthread_join(n->thread, NULL);
	/* Closing the control connections is how clients learn the node is
	 * gone. */
	for (unsigned i = 0; i < n->max_clients; i++)
		if (n->clients[i].fd >= 0)
			node_client_close(n, &n->clients[i], "node stopping");
	close(n->listen_fd);
	close(n->stop_fd);
	n->listen_fd = n->stop_fd = -1;
	node_free_clients(n);
	node_log(n, RDMA_NODE_LOG_INFO, "control port %u closed", (unsigned)n->port);
	node_stop_servers(n);
	n->serving = false;
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
	node_stop_serving(n);
	ret = pm_pool_close(&n->pool);
	if (ret != 0)
		node_log(n, RDMA_NODE_LOG_ERROR, "closing pool %s: %s", n->pool_path,
			pm_strerror(ret));
	else
		node_log(n, RDMA_NODE_LOG_INFO, "closed pool %s", n->pool_path);
	node_free(n);
	*np = NULL;
	return ret;
}

/* rdma_node_get_status -- relaxed snapshot of the counters */
void
rdma_node_get_status(const struct rdma_node *n, struct rdma_node_status *out)
{
	memset(out, 0, sizeof(*out));
	out->clients_admitted = __atomic_load_n(&n->clients_admitted, __ATOMIC_RELAXED);
	out->clients_refused = __atomic_load_n(&n->clients_refused, __ATOMIC_RELAXED);
	out->bad_messages = __atomic_load_n(&n->counters.bad_messages, __ATOMIC_RELAXED);
	out->batches_shipped = __atomic_load_n(&n->counters.batches_shipped, __ATOMIC_RELAXED);
	out->batches_rejected = __atomic_load_n(&n->counters.batches_rejected,
		__ATOMIC_RELAXED);
	out->persists = __atomic_load_n(&n->counters.persists, __ATOMIC_RELAXED);
	out->clients_connected = __atomic_load_n(&n->clients_connected, __ATOMIC_RELAXED);
	out->backends = n->backends;
}

/* node_left_ms -- time left until @deadline (at least 1 ms, so a step
 * that finds its deadline passed still fails by timing out) */
static unsigned
node_left_ms(uint64_t deadline)
{
	uint64_t now = node_now_ms();

	return now < deadline ? (unsigned)(deadline - now) : 1u;
}

/* rdma_node_status_query -- STATUS_REQ over the control port */
int
rdma_node_status_query(const char *host, uint16_t port, const char *token,
	unsigned timeout_ms, char *text, size_t cap)
{
	uint8_t msg[RDMA_WIRE_HEADER_SIZE + 4 + RDMA_TOKEN_MAX];
	uint8_t body[RDMA_WIRE_STATUS_MAX + RDMA_WIRE_REASON_MAX];
	char buf[RDMA_WIRE_STATUS_MAX + 1];
	struct rdma_wire_header h;
	struct rdma_wire_refuse refuse;
	size_t token_len;
	uint64_t deadline;
	int fd, len, ret;

	if (host == NULL || text == NULL || cap == 0)
		return -EINVAL;
	token = token != NULL ? token : "";
	token_len = strnlen(token, RDMA_TOKEN_MAX + 1);
	if (token_len > RDMA_TOKEN_MAX)
		return -EINVAL;
	text[0] = '\0';
	len = rdma_wire_status_req_encode(msg, sizeof(msg), 1, token, (uint16_t)token_len);
	if (len < 0)
		return len;
	/* One limit for the whole exchange, not one per step. */
	deadline = node_now_ms() + timeout_ms;
	fd = rdma__control_connect(host, port, timeout_ms);
	if (fd < 0)
		return fd;
	ret = rdma__control_send(fd, msg, (size_t)len, node_left_ms(deadline));
	if (ret == 0)
		ret = rdma__control_recv(fd, &h, body, sizeof(body), node_left_ms(deadline));
	close(fd);
	if (ret != 0)
		return ret;
	/* A REFUSE with seq 0 refuses the connection itself, sent before the
	 * request was read (the node is full). */
	if (h.seq != 1 && !(h.type == RDMA_WIRE_REFUSE && h.seq == 0))
		return RDMA_E_PROTO;
	if (h.type == RDMA_WIRE_REFUSE) {
		if (rdma_wire_refuse_decode(body, h.length, &refuse) != 0 || refuse.code >= 0)
			return RDMA_E_PROTO;
		return refuse.code;
	}
	if (h.type != RDMA_WIRE_STATUS ||
	    rdma_wire_status_decode(body, h.length, buf, sizeof(buf)) != 0)
		return RDMA_E_PROTO;
	snprintf(text, cap, "%s", buf);
	return 0;
}
