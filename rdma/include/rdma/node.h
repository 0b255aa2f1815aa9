/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/node.h -- the memory node: a persistent pool whose regions clients
 * reach through rdma/rdma.h.
 *
 * A node is a PMDK pool (pm/pool.h) at a path -- a DAX file on NVDIMM or CXL
 * hosts, an ordinary file elsewhere, /dev/shm in tests -- holding a table of
 * regions carved from it at creation. Opening the node publishes a node file
 * "<pool path>.node" that local clients (URI "local:<pool path>") read to map
 * the regions themselves: the CXL model needs no server at all. Serving
 * starts the control listener and the fabric servers that remote clients
 * ("ofi+tcp://", "ofi+shm://", "ofi+verbs://", "verbs://") use.
 *
 * The daemon dmkv-node (rdma/node_main.c) is a command-line front end to this
 * header; programs may embed a node instead (the KV store's embedded default
 * does).
 *
 * Persistence: region bytes are persistent exactly when a client's persist
 * operation (or the node's own pm/ flushes) made them so; the region table
 * is durable before rdma_node_open() returns. Reopening the same pool keeps
 * every persisted byte and the same region ids, offsets and lengths.
 */
#ifndef RDMA_NODE_H
#define RDMA_NODE_H

#include <stddef.h>
#include <stdint.h>

#include <pm/persist.h>
#include <rdma/rdma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most regions per node. */
#define RDMA_NODE_MAX_REGIONS 16
/* Region size when none is configured: one region of 64 MiB. */
#define RDMA_NODE_DEFAULT_REGION_SIZE ((uint64_t)64 << 20)
/* Default control port. */
#define RDMA_NODE_DEFAULT_PORT 7470

/* rdma_node_config.flags */
#define RDMA_NODE_CREATE (1u << 0)    /* create the pool if the path is missing */
#define RDMA_NODE_TRUSTED (1u << 1)   /* skip the isolated pool check (PM_POOL_TRUSTED) */

/* Remote backends a node serves (rdma_node_serve_config.backends). */
#define RDMA_NODE_SERVE_TCP (1u << 0)   /* libfabric tcp;ofi_rxm */
#define RDMA_NODE_SERVE_SHM (1u << 1)   /* libfabric shm (same host) */
#define RDMA_NODE_SERVE_VERBS (1u << 2) /* rdma-core RC, where a device exists */
#define RDMA_NODE_SERVE_OFI_VERBS (1u << 3) /* libfabric verbs;ofi_rxm, where a device exists */

enum rdma_node_log_level {
	RDMA_NODE_LOG_ERROR,
	RDMA_NODE_LOG_WARN,
	RDMA_NODE_LOG_INFO,
	RDMA_NODE_LOG_DEBUG,
};

/* Receives the node's log lines (no trailing newline); may be called from
 * the node's threads concurrently. The library itself never prints. */
typedef void (*rdma_node_log_fn)(void *arg, enum rdma_node_log_level level,
	const char *msg);

struct rdma_node_config {
	const char *pool_path;   /* required */
	unsigned flags;          /* RDMA_NODE_* */
	/* create only: pool size (0 = regions + 16 MiB, at least
	 * PM_POOL_MIN_SIZE) and region sizes (0 regions = one default region);
	 * sizes are rounded up to 4 KiB */
	size_t pool_size;
	unsigned nregions;
	uint64_t region_size[RDMA_NODE_MAX_REGIONS];
	enum pm_durability durability; /* default PM_DURABILITY_AUTO */
	const char *token;       /* cluster token clients must present; "" = none */
	rdma_node_log_fn log;    /* NULL: no log */
	void *log_arg;
};

/**
 * rdma_node_config_init -- fill @cfg with the defaults documented above.
 * Thread-safety: any thread; writes only @cfg.
 */
void rdma_node_config_init(struct rdma_node_config *cfg);

struct rdma_node;

/**
 * rdma_node_open -- open (or with RDMA_NODE_CREATE, create) the node pool
 * at @cfg->pool_path and publish its node file for local clients.
 * @out: receives the node; owned by the caller, rdma_node_close().
 *
 * Return: 0; -EINVAL for a bad config (too many regions, regions larger
 * than the pool, token too long); -ENOENT if the pool is missing and
 * RDMA_NODE_CREATE is not set; PM_E_CORRUPT, PM_E_LAYOUT or PM_E_VERSION for
 * an unusable pool (nothing is written to it); -EBUSY if another process
 * holds the pool open; other -errno from the file system.
 * Thread-safety: any thread.
 */
int rdma_node_open(struct rdma_node **out, const struct rdma_node_config *cfg);

/**
 * rdma_node_close -- stop serving (if started), close the pool and set *@n
 * to NULL. The node file stays: local clients keep working on the pool file.
 * Return: 0; -EIO if an msync of the pool failed while it was open.
 * Thread-safety: one caller; no other call on the node may run.
 */
int rdma_node_close(struct rdma_node **n);

/**
 * rdma_node_region_count -- number of regions.
 * Return: the count.
 * Thread-safety: any thread, while @n is open.
 */
unsigned rdma_node_region_count(const struct rdma_node *n);

/**
 * rdma_node_region -- the @index-th region: its info, and (if @addr is not
 * NULL) its address in this process. Return: 0; -EINVAL if out of range.
 * Direct stores through @addr bypass the transport: persist them with
 * pm_persist() like any pool memory.
 * Thread-safety: any thread, while @n is open.
 */
int rdma_node_region(const struct rdma_node *n, unsigned index,
	struct rdma_region_info *out, void **addr);

/**
 * rdma_node_file_path -- the node file local clients read
 * ("<pool path>.node"). Owned by the node.
 * Return: the path.
 * Thread-safety: any thread, while @n is open.
 */
const char *rdma_node_file_path(const struct rdma_node *n);

/*
 * How the progress thread of a libfabric backend waits for work
 * (rdma_node_serve_config.poll). Neither provider here moves data without
 * the node's thread polling, and a client's RMA or atomic access needs it
 * too, so the choice is between latency and leaving the CPU to others.
 */
enum rdma_node_poll {
	/* Poll while there is work; as soon as a poll finds none, sleep in
	 * the kernel on the provider's wait object until bytes arrive
	 * (requests, RMA and atomics, new connections). An idle node uses no
	 * CPU, and co-located threads -- clients, other nodes, more threads
	 * than cores -- get the cores when they need them; a request that
	 * finds the node asleep pays a wake-up (a few microseconds). A
	 * provider without a wait object (shm) is served as with BUSY. The
	 * default. */
	RDMA_NODE_POLL_ADAPTIVE,
	/* Poll without sleeping: yield to runnable threads after every empty
	 * poll, nap between polls only after 30 s without traffic. The
	 * lowest latency where the progress threads have cores of their own,
	 * or share cores only among themselves; where they share cores with
	 * clients that spin, every round trip waits for the scheduler. */
	RDMA_NODE_POLL_BUSY,
};

struct rdma_node_serve_config {
	const char *host;    /* control and data address; default "127.0.0.1" */
	uint16_t port;       /* control port; default RDMA_NODE_DEFAULT_PORT; 0 = any */
	unsigned backends;   /* RDMA_NODE_SERVE_*; default TCP | SHM */
	unsigned max_clients;/* admitted clients at once; default 256, at most 65536 */
	enum rdma_node_poll poll; /* default RDMA_NODE_POLL_ADAPTIVE */
};

/**
 * rdma_node_serve_config_init -- fill @cfg with the defaults documented above.
 * Thread-safety: any thread; writes only @cfg.
 */
void rdma_node_serve_config_init(struct rdma_node_serve_config *cfg);

/**
 * rdma_node_serve -- start serving remote clients: a control listener on
 * host:port (HELLO with token, region table, status) and a fabric server per
 * backend, each with its own progress thread (polling as cfg->poll says).
 *
 * A backend that cannot start here (no RDMA device for VERBS) is logged and
 * skipped; clients asking for it are refused with RDMA_E_NO_DEVICE.
 * Return: 0; -EADDRINUSE if the port is taken; -EADDRNOTAVAIL for a bad
 * host; -EINVAL for an unknown backend or poll mode, or too many clients;
 * -EALREADY if already serving; RDMA_E_NO_DEVICE if no requested backend
 * could start.
 * Thread-safety: one caller per node.
 */
int rdma_node_serve(struct rdma_node *n, const struct rdma_node_serve_config *cfg);

/**
 * rdma_node_port -- the control port actually bound (useful with port 0);
 * 0 if not serving.
 * Return: the port, or 0.
 * Thread-safety: any thread, while @n is open.
 */
uint16_t rdma_node_port(const struct rdma_node *n);

/* A snapshot of what the node has done. */
struct rdma_node_status {
	uint64_t clients_admitted;  /* HELLOs accepted */
	uint64_t clients_refused;   /* HELLOs refused (token, backend) */
	uint64_t bad_messages;      /* malformed control or batch messages */
	uint64_t batches_shipped;   /* batches executed by the node */
	uint64_t batches_rejected;  /* shipped batches refused (bounds, region) */
	uint64_t persists;          /* persist operations done by the node */
	unsigned clients_connected; /* control connections open now */
	unsigned backends;          /* RDMA_NODE_SERVE_* actually serving */
};

/**
 * rdma_node_get_status -- fill *@out. Thread-safety: any thread, while serving.
 */
void rdma_node_get_status(const struct rdma_node *n, struct rdma_node_status *out);

/**
 * rdma_node_status_query -- ask the node serving at control address
 * @host:@port for its status over the network (what `dmkv-node status`
 * prints). @text receives "key value" lines, NUL-terminated, at most @cap
 * bytes. Return: 0; RDMA_E_AUTH; RDMA_E_CONN; -ETIMEDOUT; RDMA_E_PROTO.
 * Thread-safety: any thread.
 */
int rdma_node_status_query(const char *host, uint16_t port, const char *token,
	unsigned timeout_ms, char *text, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_NODE_H */
